/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pure functions: image references, the container guarantees, and the
 * hardened `run` argv. Nothing here touches the host; a spec that fails
 * oci_guarantees_check never reaches an engine.
 */
#include "config.h"

#include "oci.h"
#include "protocol.h"
#include "imageref.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORBID(r, code, ...) \
	oci_refuse((r), EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN, (code), __VA_ARGS__)

/* ---- images --------------------------------------------------------------------- */

/* The predicate is common/imageref.c, shared with the core's policy and the CLI; here each
 * verdict gets the tier's refusal. */
int oci_image_check(const char *ref, oci_refusal *r)
{
	switch (image_ref_check(ref)) {
	case IMAGE_REF_PINNED: return 0;
	case IMAGE_REF_EMPTY:
		return FORBID(r, ERRC(container_image_invalid), "no image is configured");
	case IMAGE_REF_UNPINNED:
		return FORBID(r, ERRC(container_unpinned_image),
			      "image '%.200s' is not pinned by digest: a tag can be moved; use "
			      "NAME@sha256:<64 hex digits> (cordon image pin NAME prints it)",
			      ref);
	case IMAGE_REF_BAD_NAME: {
		size_t len = (size_t)(strchr(ref, '@') - ref);
		return FORBID(r, ERRC(container_image_invalid), "image name '%.*s' is not valid",
			      (int)(len > 200 ? 200 : len), ref);
	}
	case IMAGE_REF_BAD_ALGO:
		return FORBID(r, ERRC(container_unpinned_image),
			      "image '%.200s' must be pinned by a sha256 digest", ref);
	case IMAGE_REF_BAD_DIGEST:
	default:
		return FORBID(r, ERRC(container_image_invalid),
			      "image '%.200s': a sha256 digest is 64 lower-case hex digits", ref);
	}
}

/* ---- guarantees ----------------------------------------------------------------- */

static bool limit_set(const cordon_plugin_limits *l, int which)
{
	return (l->set & (1u << which)) != 0;
}

static bool is_untrusted(uint32_t trust)
{
	/* an unknown trust fails closed */
	return trust != CORDON_PLUGIN_TRUST_TRUSTED && trust != CORDON_PLUGIN_TRUST_SEMI_TRUSTED;
}

static bool has_bad_chars(const char *s)
{
	for (; *s; s++)
		if (*s == ',' || *s == '=' || (unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool has_dotdot(const char *p)
{
	size_t n = strlen(p);
	for (const char *c = strstr(p, ".."); c; c = strstr(c + 1, ".."))
		if ((c == p || c[-1] == '/') && (c + 2 == p + n || c[2] == '/'))
			return true;
	return false;
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Host paths no untrusted container may see: the host's root, kernel
 * interfaces, and runtime directories holding engine sockets (a docker.sock
 * mount is root on the host). */
static bool source_forbidden(const char *src)
{
	static const char *const dirs[] = { "/proc",
					    "/sys",
					    "/dev",
					    "/run",
					    "/var/run",
					    "/boot",
					    "/var/lib/docker",
					    "/var/lib/containers",
					    NULL };
	if (strcmp(src, "/") == 0)
		return true;
	for (size_t i = 0; dirs[i]; i++)
		if (path_under(src, dirs[i]))
			return true;
	size_t n = strlen(src);
	return n >= 5 && strcmp(src + n - 5, ".sock") == 0;
}

static bool target_forbidden(const char *dst)
{
	static const char *const dirs[] = { "/proc", "/sys", "/dev", AGENT_PATH, NULL };
	if (strcmp(dst, "/") == 0)
		return true;
	for (size_t i = 0; dirs[i]; i++)
		if (path_under(dst, dirs[i]))
			return true;
	return false;
}

static int check_mount(const oci_spec *s, const oci_mount *m, oci_refusal *r)
{
	const char *paths[2] = { m->source, m->target };
	for (int i = 0; i < 2; i++) {
		const char *p = paths[i];
		if (!p || p[0] != '/' || strlen(p) >= 4096 || has_bad_chars(p) || has_dotdot(p))
			return FORBID(
				r, ERRC(container_mount_path_invalid),
				"mount path '%.200s' must be absolute, without '..', ',', '=' "
				"or control characters",
				p ? p : "");
	}
	if (source_forbidden(m->source))
		return FORBID(r, ERRC(container_mount_forbidden),
			      "host path '%.200s' may not be mounted into a container", m->source);
	if (target_forbidden(m->target))
		return FORBID(r, ERRC(container_mount_forbidden),
			      "container path '%.200s' may not be a mount target", m->target);
	if (!m->readonly && is_untrusted(s->trust))
		return FORBID(r, ERRC(container_mount_writable),
			      "untrusted work gets host mounts read-only only ('%.200s')",
			      m->target);
	return 0;
}

static bool name_ok(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return true;
}

static bool network_reserved(const char *net)
{
	static const char *const names[] = { "none",    "host",        "bridge", "default",
					     "private", "slirp4netns", "pasta",  NULL };
	for (size_t i = 0; names[i]; i++)
		if (strcmp(net, names[i]) == 0)
			return true;
	return strchr(net, ':') != NULL; /* container:ID, ns:PATH, slirp4netns:opts */
}

static int check_network(const oci_spec *s, oci_refusal *r)
{
	const char *net = s->network;
	bool none = !net || strcmp(net, "none") == 0;
	if (!none && (network_reserved(net) || !name_ok(net, 64)))
		return FORBID(r, ERRC(container_network_forbidden),
			      "network '%.64s' is not allowed: only none, or a named network that "
			      "governs egress",
			      net);
	switch (s->egress) {
	case CORDON_PLUGIN_EGRESS_DENY:
		if (!none)
			return FORBID(r, ERRC(container_network_forbidden),
				      "egress is denied: the container runs with --network none");
		break;
	case CORDON_PLUGIN_EGRESS_GOVERNED:
		if (s->egress_proxied && !none)
			return FORBID(r, ERRC(container_network_forbidden),
				      "egress governed by cordon's rules runs with --network none: "
				      "a named network would be a second route out");
		if (none && !s->egress_proxied)
			return FORBID(r, ERRC(container_network_forbidden),
				      "governed egress needs the tier's egress: rules (cordon's "
				      "proxy) or "
				      "a named network configured for the tier (network:)");
		break;
	default:
		return FORBID(r, ERRC(container_network_forbidden),
			      "the container tier never runs with open egress");
	}
	if (s->publish_port && none)
		return FORBID(r, ERRC(container_publish_invalid),
			      "publishing port %u needs a governed named network; egress is denied",
			      s->publish_port);
	return 0;
}

/* One id of "uid:gid": decimal digits only, below 2^32 - 1 (an id past 32 bits could wrap
 * to 0 in whatever truncates it; 2^32 - 1 is "no id"). */
static bool id_ok(const char *s, size_t n)
{
	if (n == 0 || n > 10)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return v < UINT32_MAX;
}

/* "uid:gid", both numeric: a name would be resolved by the image's own
 * /etc/passwd, which an untrusted image can make say anything (root). */
static bool user_ok(const char *user)
{
	const char *colon = strchr(user, ':');
	return colon && id_ok(user, (size_t)(colon - user)) && id_ok(colon + 1, strlen(colon + 1));
}

static bool user_is_root(const char *user)
{
	/* any all-zero id, user or group, is root's */
	bool uzero = true, gzero = true;
	const char *c = user;
	for (; *c && *c != ':'; c++)
		uzero = uzero && *c == '0';
	for (c = *c ? c + 1 : c; *c; c++)
		gzero = gzero && *c == '0';
	return uzero || gzero;
}

static bool digits(const char *s, size_t n)
{
	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool ulimit_ok(const char *u)
{
	static const char *const names[] = { "nofile",   "nproc", "core",   "fsize",      "stack",
					     "memlock",  "cpu",   "data",   "as",         "locks",
					     "msgqueue", "nice",  "rtprio", "sigpending", NULL };
	const char *eq = strchr(u, '=');
	if (!eq)
		return false;
	bool known = false;
	for (size_t i = 0; names[i] && !known; i++)
		known = strlen(names[i]) == (size_t)(eq - u) && strncmp(u, names[i], eq - u) == 0;
	if (!known)
		return false;
	const char *soft = eq + 1, *colon = strchr(soft, ':');
	size_t slen = colon ? (size_t)(colon - soft) : strlen(soft);
	if (!digits(soft, slen))
		return false;
	if (!colon)
		return true;
	if (!digits(colon + 1, strlen(colon + 1)))
		return false;
	return strtoull(soft, NULL, 10) <= strtoull(colon + 1, NULL, 10);
}

static bool env_ok(const char *kv)
{
	const char *eq = kv ? strchr(kv, '=') : NULL;
	if (!eq || eq == kv)
		return false;
	for (const char *c = kv; c < eq; c++) {
		bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_';
		if (!alpha && !(c > kv && *c >= '0' && *c <= '9'))
			return false;
	}
	return strchr(eq, '\n') == NULL;
}

static bool runtime_ok(const char *rt)
{
	if (rt[0] == '/')
		return strlen(rt) < 4096 && !has_bad_chars(rt) && !has_dotdot(rt);
	return name_ok(rt, 64);
}

static bool label_ok(const char *l)
{
	const char *eq = strchr(l, '=');
	if (!eq || eq == l)
		return false;
	for (const char *c = l; c < eq; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '.' ||
		      *c == '-'))
			return false;
	for (const char *c = eq + 1; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == ',')
			return false;
	return true;
}

/* The limits that become an --ulimit of the same name. */
static const struct {
	int limit;
	const char *name;
} limit_ulimits[] = {
	{ CORDON_PLUGIN_LIMIT_NOFILE, "nofile" },
	{ CORDON_PLUGIN_LIMIT_FSIZE, "fsize" },
};

static bool ulimit_named(const char *const *ulimits, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; ulimits && ulimits[i]; i++)
		if (strncmp(ulimits[i], name, n) == 0 && ulimits[i][n] == '=')
			return true;
	return false;
}

/* A limit and a tier's ulimit of the same name: one of them would silently
 * override the other (the engine takes the last --ulimit), so neither is
 * chosen for the admin. */
static int check_ulimit_conflict(const oci_spec *s, oci_refusal *r)
{
	for (size_t i = 0; i < sizeof(limit_ulimits) / sizeof(limit_ulimits[0]); i++)
		if (limit_set(&s->limits, limit_ulimits[i].limit) &&
		    ulimit_named(s->ulimits, limit_ulimits[i].name))
			return FORBID(r, ERRC(container_ulimit_conflict),
				      "ulimits sets %s and so does limits.%s: give it in one place "
				      "(limits.%s, or the tier's ulimits alone)",
				      limit_ulimits[i].name, limit_ulimits[i].name,
				      limit_ulimits[i].name);
	if (s->pids_in_sandbox && ulimit_named(s->ulimits, "nproc"))
		return FORBID(
			r, ERRC(container_ulimit_conflict),
			"under gVisor the pids limit is the nproc ulimit: ulimits may not set "
			"nproc (use limits.pids)");
	return 0;
}

static int check_limits(const oci_spec *s, oci_refusal *r)
{
	const cordon_plugin_limits *l = &s->limits;
	if (!limit_set(l, CORDON_PLUGIN_LIMIT_MEMORY) || l->value[CORDON_PLUGIN_LIMIT_MEMORY] == 0)
		return FORBID(r, ERRC(container_no_memory_cap),
			      "a container needs a memory cap (limits: {memory: ...})");
	if (l->value[CORDON_PLUGIN_LIMIT_MEMORY] < OCI_MIN_MEMORY)
		return FORBID(r, ERRC(container_limit_invalid),
			      "a memory cap below 6 MiB cannot start a container");
	if (limit_set(l, CORDON_PLUGIN_LIMIT_CPU_MILLI) &&
	    l->value[CORDON_PLUGIN_LIMIT_CPU_MILLI] == 0)
		return FORBID(r, ERRC(container_limit_invalid),
			      "a cpu limit of 0 cannot run anything");
	if (limit_set(l, CORDON_PLUGIN_LIMIT_PIDS) &&
	    (l->value[CORDON_PLUGIN_LIMIT_PIDS] == 0 ||
	     l->value[CORDON_PLUGIN_LIMIT_PIDS] > INT32_MAX))
		return FORBID(r, ERRC(container_limit_invalid), "the pids limit must be 1..2^31-1");
	return 0;
}

int oci_guarantees_check(const oci_spec *s, oci_refusal *r)
{
	int ret = oci_image_check(s->image, r);
	if (ret < 0)
		return ret;
	if ((ret = check_limits(s, r)) < 0)
		return ret;
	if (s->user && (!user_ok(s->user) || user_is_root(s->user)))
		return FORBID(r, ERRC(container_root_user),
			      "user '%.64s' is not allowed: containers run as a numeric, non-root "
			      "uid:gid",
			      s->user);
	for (size_t i = 0; i < s->n_mounts; i++)
		if ((ret = check_mount(s, &s->mounts[i], r)) < 0)
			return ret;
	if ((ret = check_network(s, r)) < 0)
		return ret;
	for (size_t i = 0; s->env && s->env[i]; i++)
		if (!env_ok(s->env[i]))
			return FORBID(r, ERRC(container_env_invalid),
				      "environment entries are NAME=VALUE with a portable name");
	for (size_t i = 0; s->ulimits && s->ulimits[i]; i++)
		if (!ulimit_ok(s->ulimits[i]))
			return FORBID(
				r, ERRC(container_ulimit_invalid),
				"ulimit '%.64s' must be NAME=SOFT[:HARD] with a known name and "
				"SOFT <= HARD",
				s->ulimits[i]);
	if ((ret = check_ulimit_conflict(s, r)) < 0)
		return ret;
	if (s->runtime && !runtime_ok(s->runtime))
		return FORBID(r, ERRC(container_runtime_invalid), "runtime '%.64s' is not valid",
			      s->runtime);
	if (s->name && !name_ok(s->name, 128))
		return FORBID(r, ERRC(container_name_invalid),
			      "container name '%.64s' is not valid", s->name);
	for (size_t i = 0; s->labels && s->labels[i]; i++)
		if (!label_ok(s->labels[i]))
			return FORBID(r, ERRC(container_name_invalid), "label '%.64s' is not valid",
				      s->labels[i]);
	if (s->cidfile && (s->cidfile[0] != '/' || has_bad_chars(s->cidfile) ||
			   has_dotdot(s->cidfile) || strlen(s->cidfile) >= 4096))
		return FORBID(r, ERRC(container_mount_path_invalid),
			      "the container id file '%.64s' must be an absolute host path",
			      s->cidfile);
	const char *abs[2] = { s->entrypoint, s->workdir };
	for (int i = 0; i < 2; i++)
		if (abs[i] && (abs[i][0] != '/' || has_bad_chars(abs[i]) || has_dotdot(abs[i])))
			return FORBID(r, ERRC(container_mount_path_invalid),
				      "'%.64s' must be an absolute container path", abs[i]);
	return 0;
}

/* ---- the hardened argv ---------------------------------------------------------- */

static int env_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t kx = strcspn(x, "="), ky = strcspn(y, "=");
	int c = strncmp(x, y, kx < ky ? kx : ky);
	if (c)
		return c;
	if (kx != ky)
		return kx < ky ? -1 : 1;
	return strcmp(x, y);
}

static uint64_t pids_limit(const oci_spec *s)
{
	return limit_set(&s->limits, CORDON_PLUGIN_LIMIT_PIDS)
		       ? s->limits.value[CORDON_PLUGIN_LIMIT_PIDS]
		       : (uint64_t)OCI_DEFAULT_PIDS;
}

static void add_limits(oci_strv *a, const oci_spec *s)
{
	const cordon_plugin_limits *l = &s->limits;
	uint64_t mem = l->value[CORDON_PLUGIN_LIMIT_MEMORY];
	/* swap equal to memory: no swap beyond the cap */
	oci_strv_add(a, "--memory");
	oci_strv_addf(a, "%" PRIu64, mem);
	oci_strv_add(a, "--memory-swap");
	oci_strv_addf(a, "%" PRIu64, mem);
	if (limit_set(l, CORDON_PLUGIN_LIMIT_CPU_MILLI)) {
		uint64_t m = l->value[CORDON_PLUGIN_LIMIT_CPU_MILLI];
		oci_strv_add(a, "--cpus");
		oci_strv_addf(a, "%" PRIu64 ".%03" PRIu64, m / 1000, m % 1000);
	}
	/* gVisor: the host's pids cgroup counts the sandbox's threads, about ten
	 * per task of the work, so a limit of N there killed the whole sandbox
	 * at about N/12 processes. The work's limit is then RLIMIT_NPROC inside
	 * gVisor's kernel (add_ulimits: the work and the helper share one uid),
	 * which refuses a fork as a pids cgroup would; the host cgroup keeps a
	 * bound that scales with it. */
	uint64_t pids = pids_limit(s);
	oci_strv_add(a, "--pids-limit");
	oci_strv_addf(a, "%" PRIu64,
		      s->pids_in_sandbox
			      ? pids * OCI_GVISOR_PIDS_PER_TASK + OCI_GVISOR_PIDS_OVERHEAD
			      : pids);
}

static void add_ulimits(oci_strv *a, const oci_spec *s)
{
	const cordon_plugin_limits *l = &s->limits;
	for (size_t i = 0; s->ulimits && s->ulimits[i]; i++) {
		oci_strv_add(a, "--ulimit");
		oci_strv_add(a, s->ulimits[i]);
	}
	/* never both for one name: oci_guarantees_check refuses the conflict */
	for (size_t i = 0; i < sizeof(limit_ulimits) / sizeof(limit_ulimits[0]); i++) {
		if (!limit_set(l, limit_ulimits[i].limit))
			continue;
		uint64_t v = l->value[limit_ulimits[i].limit];
		oci_strv_add(a, "--ulimit");
		oci_strv_addf(a, "%s=%" PRIu64 ":%" PRIu64, limit_ulimits[i].name, v, v);
	}
	if (s->pids_in_sandbox) {
		oci_strv_add(a, "--ulimit");
		oci_strv_addf(a, "nproc=%" PRIu64 ":%" PRIu64, pids_limit(s), pids_limit(s));
	}
}

static void add_tmpfs(oci_strv *a, const char *path, uint64_t size, const char *owner)
{
	oci_strv_add(a, "--tmpfs");
	oci_strv_addf(a, "%s:rw,noexec,nosuid,nodev,size=%" PRIu64 ",mode=1777%s%s", path, size,
		      owner ? "," : "", owner ? owner : "");
}

static void add_env(oci_strv *a, const char *const *env)
{
	size_t n = oci_strv_length(env);
	if (!n)
		return;
	const char **sorted = xmalloc0(n * sizeof(char *));
	memcpy(sorted, env, n * sizeof(char *));
	qsort(sorted, n, sizeof(char *), env_cmp);
	for (size_t i = 0; i < n; i++) {
		oci_strv_add(a, "--env");
		oci_strv_add(a, sorted[i]);
	}
	free(sorted);
}

/*
 * The order is fixed (tests compare it exactly):
 *   run [-d|-i] --rm --pull never [--name N] [--label L]... [--cidfile F]
 *   --read-only --cap-drop ALL --security-opt no-new-privileges
 *   [--security-opt seccomp=PROFILE] --user U
 *   --memory M --memory-swap M [--cpus C] --pids-limit P(+overhead) --network none|NAME
 *   [--runtime R] [--ulimit U]... --tmpfs /tmp:... [--tmpfs ROOT:...] (mode 1777 and
 *   owned by the user: an image's own directory there would lend its mode)
 *   [--mount type=bind,...]... [--mount ...relay...] [--env K=V]... (sorted by name)
 *   [--publish 127.0.0.1::PORT] [--workdir W] [--entrypoint E] [engine extras]...
 *   -- IMAGE@sha256:DIGEST [command...]
 * `--` ends the options, so nothing after it is ever read as a flag.
 */
char **oci_run_argv(const oci_spec *s)
{
	oci_strv a = { 0 };
	oci_strv_add(&a, "run");
	if (s->detach)
		oci_strv_add(&a, "-d");
	else if (s->interactive)
		oci_strv_add(&a, "-i");
	oci_strv_add(&a, "--rm");
	/* pulls happen explicitly, by digest, under the tier's pull policy */
	oci_strv_add(&a, "--pull");
	oci_strv_add(&a, "never");
	if (s->name) {
		oci_strv_add(&a, "--name");
		oci_strv_add(&a, s->name);
	}
	for (size_t i = 0; s->labels && s->labels[i]; i++) {
		oci_strv_add(&a, "--label");
		oci_strv_add(&a, s->labels[i]);
	}
	if (s->cidfile) {
		oci_strv_add(&a, "--cidfile");
		oci_strv_add(&a, s->cidfile);
	}
	oci_strv_add(&a, "--read-only");
	oci_strv_add(&a, "--cap-drop");
	oci_strv_add(&a, "ALL");
	oci_strv_add(&a, "--security-opt");
	oci_strv_add(&a, "no-new-privileges");
	if (s->seccomp) {
		oci_strv_add(&a, "--security-opt");
		oci_strv_addf(&a, "seccomp=%s", s->seccomp);
	}
	oci_strv_add(&a, "--user");
	oci_strv_add(&a, s->user ? s->user : "65534:65534");
	add_limits(&a, s);
	oci_strv_add(&a, "--network");
	oci_strv_add(&a, s->network ? s->network : "none");
	if (s->runtime) {
		oci_strv_add(&a, "--runtime");
		oci_strv_add(&a, s->runtime);
	}
	add_ulimits(&a, s);
	uint64_t scratch = s->scratch_size ? s->scratch_size : OCI_DEFAULT_SCRATCH;
	add_tmpfs(&a, AGENT_SCRATCH_PATH, scratch, s->tmpfs_owner);
	if (s->root_tmpfs)
		add_tmpfs(&a, AGENT_SANDBOX_ROOT, scratch, s->tmpfs_owner);
	for (size_t i = 0; i < s->n_mounts; i++) {
		const oci_mount *m = &s->mounts[i];
		oci_strv_add(&a, "--mount");
		oci_strv_addf(&a, "type=bind,source=%s,target=%s%s", m->source, m->target,
			      m->readonly ? ",readonly" : "");
	}
	if (s->relay_dir) {
		oci_strv_add(&a, "--mount");
		oci_strv_addf(&a, "type=bind,source=%s,target=" AGENT_RELAY_DIR ",readonly",
			      s->relay_dir);
	}
	add_env(&a, s->env);
	if (s->publish_port) {
		/* loopback only, an ephemeral host port the engine picks */
		oci_strv_add(&a, "--publish");
		oci_strv_addf(&a, "127.0.0.1::%u", s->publish_port);
	}
	if (s->workdir) {
		oci_strv_add(&a, "--workdir");
		oci_strv_add(&a, s->workdir);
	}
	if (s->entrypoint) {
		oci_strv_add(&a, "--entrypoint");
		oci_strv_add(&a, s->entrypoint);
	}
	for (size_t i = 0; s->extra && s->extra[i]; i++)
		oci_strv_add(&a, s->extra[i]);
	oci_strv_add(&a, "--");
	oci_strv_add(&a, s->image);
	for (size_t i = 0; s->command && s->command[i]; i++)
		oci_strv_add(&a, s->command[i]);
	return oci_strv_steal(&a);
}
