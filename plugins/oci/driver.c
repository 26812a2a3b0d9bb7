/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OCI driver: configuration, probe, gc and registration. */
#include "config.h"

#include "driver.h"
#include "proc.h"
#include "protocol.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec/cordon"
#endif

#define PROBE_TIMEOUT_MS 10000
#define TRIAL_TIMEOUT_MS 60000
#define DEFAULT_CLI_TIMEOUT_MS 60000
#define MAX_POOL 32

/* ---- configure ---------------------------------------------------------------------- */

static void tier_free(oci_tier *t)
{
	if (!t)
		return;
	oci_pool_destroy(t);
	/* what closed sessions left to the engine's --rm is gone before we are */
	oci_reap_all(t);
	free(t->name);
	free(t->engine_cfg);
	free(t->image);
	free(t->runtime);
	free(t->cgroup_manager);
	xstrv_free(t->runtime_flags);
	free(t->host_url);
	free(t->user);
	xstrv_free(t->ulimits);
	free(t->helper);
	free(t->network);
	free(t->owner);
	free(t->engine);
	if (t->health) {
		pthread_mutex_destroy(&t->health->lock);
		free(t->health);
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static bool is_key(const oci_engine_kind *k, const char *key)
{
	for (const cordon_plugin_config_key *c = k->config_keys; c && c->name; c++)
		if (strcmp(c->name, key) == 0)
			return true;
	return false;
}

static int get_str(const cordon_plugin_config *cfg, const oci_tier *t, const char *key, char **ret)
{
	const char *v = NULL;
	if (!is_key(t->kind, key) || oci_host->config_string(cfg, key, &v) <= 0 || !v)
		return 0;
	*ret = xstrdup(v);
	return 1;
}

static char **get_strv(const cordon_plugin_config *cfg, const oci_tier *t, const char *key)
{
	const char *const *v = NULL;
	if (!is_key(t->kind, key) || oci_host->config_strv(cfg, key, &v) <= 0 || !v)
		return NULL;
	oci_strv s = { 0 };
	for (size_t i = 0; v[i]; i++)
		oci_strv_add(&s, v[i]);
	return oci_strv_steal(&s);
}

/* Which policy key a guarantee refusal points at. */
static const char *key_for_code(const char *code)
{
	if (strstr(code, "image"))
		return "image";
	if (strcmp(code, ERRC(container_root_user)) == 0)
		return "user";
	if (strstr(code, "ulimit"))
		return "ulimits";
	if (strcmp(code, ERRC(container_runtime_invalid)) == 0)
		return "runtime";
	if (strstr(code, "network") || strstr(code, "publish"))
		return "network";
	if (strstr(code, "mount"))
		return "helper";
	return "image";
}

/* The configured values pass the same guarantees a container will: checked
 * once here so that a bad policy fails at load, with its position. */
static int check_config(const cordon_plugin_config *cfg, const oci_tier *t,
			cordon_plugin_error *err)
{
	oci_mount helper = { t->helper, "/helper", true };
	oci_spec s = {
		.image = t->image,
		.trust = CORDON_PLUGIN_TRUST_UNTRUSTED,
		.egress = t->network ? CORDON_PLUGIN_EGRESS_GOVERNED : CORDON_PLUGIN_EGRESS_DENY,
		.network = t->network,
		.mounts = &helper,
		.n_mounts = 1,
		.user = t->user,
		.runtime = t->runtime,
		.ulimits = (const char *const *)t->ulimits,
		.pids_in_sandbox = oci_runtime_is_gvisor(t->runtime),
		.publish_port = t->publish,
	};
	/* the tier's own limits (a conflict with ulimits), any memory cap */
	s.limits = t->limits;
	s.limits.set |= 1u << CORDON_PLUGIN_LIMIT_MEMORY;
	s.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = OCI_MIN_MEMORY;
	oci_refusal r;
	if (oci_guarantees_check(&s, &r) < 0)
		return oci_host->config_error(cfg, key_for_code(r.code), err, "%s", r.message);
	return 0;
}

static bool flag_ok(const char *f)
{
	if (!*f || f[0] == '-')
		return false;
	for (const char *c = f; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' ||
		      *c == '_' || *c == '=' || *c == '.' || *c == '/' || *c == ','))
			return false;
	return true;
}

static int read_scalars(const cordon_plugin_config *cfg, oci_tier *t, cordon_plugin_error *err)
{
	char *pull = NULL;
	int64_t i64;
	uint64_t u64;
	get_str(cfg, t, "image", &t->image);
	get_str(cfg, t, "engine", &t->engine_cfg);
	get_str(cfg, t, "runtime", &t->runtime);
	get_str(cfg, t, "cgroup_manager", &t->cgroup_manager);
	get_str(cfg, t, "host", &t->host_url);
	get_str(cfg, t, "user", &t->user);
	get_str(cfg, t, "helper", &t->helper);
	get_str(cfg, t, "network", &t->network);
	t->runtime_flags = get_strv(cfg, t, "runtime_flags");
	t->ulimits = get_strv(cfg, t, "ulimits");
	if (get_str(cfg, t, "pull", &pull)) {
		bool ok = strcmp(pull, "never") == 0 || strcmp(pull, "missing") == 0;
		t->pull_missing = strcmp(pull, "missing") == 0;
		free(pull);
		if (!ok)
			return oci_host->config_error(cfg, "pull", err, "pull is never or missing");
	}
	if (oci_host->config_int(cfg, "pool", &i64) > 0) {
		if (i64 < 0 || i64 > MAX_POOL)
			return oci_host->config_error(cfg, "pool", err, "pool is 0..%d", MAX_POOL);
		t->pool_size = i64;
	}
	if (oci_host->config_int(cfg, "publish", &i64) > 0) {
		if (i64 < 1 || i64 > 65535)
			return oci_host->config_error(cfg, "publish", err,
						      "publish is a port, 1..65535");
		t->publish = (uint16_t)i64;
	}
	if (oci_host->config_u64(cfg, "scratch", &u64) > 0) {
		if (u64 < (1u << 20))
			return oci_host->config_error(cfg, "scratch", err,
						      "scratch is at least 1MiB");
		t->scratch = u64;
	}
	if (oci_host->config_u64(cfg, "engine_timeout", &u64) > 0) {
		if (u64 < 1000)
			return oci_host->config_error(cfg, "engine_timeout", err,
						      "engine_timeout is at least 1s");
		t->cli_timeout_ms = u64;
	}
	return 0;
}

static int validate(const cordon_plugin_config *cfg, oci_tier *t, cordon_plugin_error *err)
{
	if (!t->image)
		return oci_host->config_error(cfg, "image", err, "a container tier needs an image");
	if (t->engine_cfg && t->engine_cfg[0] != '/')
		return oci_host->config_error(cfg, "engine", err,
					      "engine must be an absolute path");
	if (t->helper[0] != '/')
		return oci_host->config_error(cfg, "helper", err,
					      "helper must be an absolute path");
	if (t->cgroup_manager && strcmp(t->cgroup_manager, "cgroupfs") != 0 &&
	    strcmp(t->cgroup_manager, "systemd") != 0)
		return oci_host->config_error(cfg, "cgroup_manager", err,
					      "cgroup_manager is cgroupfs or systemd");
	for (size_t i = 0; t->runtime_flags && t->runtime_flags[i]; i++)
		if (!flag_ok(t->runtime_flags[i]))
			return oci_host->config_error(
				cfg, "runtime_flags", err,
				"runtime flag '%s' is not valid (NAME[=VALUE], "
				"without the leading dashes)",
				t->runtime_flags[i]);
	if (t->host_url && (strchr(t->host_url, '\n') || t->host_url[0] == '-'))
		return oci_host->config_error(cfg, "host", err, "host is an engine URL");
	if (t->publish && !t->network)
		return oci_host->config_error(
			cfg, "publish", err,
			"a published port needs a governed network (network:)");
	return check_config(cfg, t, err);
}

/* Streaming CLIs run on host->process_spawn, an ABI 1.2 entry: an older table has none. */
static bool host_has_process_spawn(const cordon_host *h)
{
	return h->abi_minor >= 2 &&
	       h->size >= offsetof(cordon_host, process_spawn) + sizeof(h->process_spawn) &&
	       h->process_spawn;
}

/* Probe dependencies are an ABI 1.3 entry: an older core keeps no answers across processes. */
static bool host_has_probe_depends(const cordon_host *h)
{
	return h->abi_minor >= 3 &&
	       h->size >= offsetof(cordon_host, probe_depends) + sizeof(h->probe_depends) &&
	       h->probe_depends;
}

static int oci_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			 cordon_plugin_error *err)
{
	const oci_engine_kind *kind = data;
	if (!oci_host->config_string || !oci_host->config_limits || !oci_host->spawn ||
	    !host_has_process_spawn(oci_host))
		return oci_host->error_set(err, ENOSYS, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(host_incomplete),
					   "the core lacks host services the %s driver needs "
					   "(process_spawn: plugin ABI 1.2)",
					   kind->name);
	oci_tier *t = xmalloc0(sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->health = xmalloc0(sizeof(*t->health));
	pthread_mutex_init(&t->health->lock, NULL);
	t->kind = kind;
	t->name = xstrdup(oci_host->config_tier_name ? oci_host->config_tier_name(cfg)
						     : kind->name);
	t->pull_missing = true;
	t->cli_timeout_ms = DEFAULT_CLI_TIMEOUT_MS;
	int r = read_scalars(cfg, t, err);
	if (!t->helper)
		t->helper = xstrdup(CORDON_LIBEXECDIR "/cordon-agent");
	oci_host->config_limits(cfg, &t->limits);
	if (r == 0)
		r = validate(cfg, t, err);
	if (r < 0) {
		tier_free(t);
		return r;
	}
	/* Without a token, gc of another host could not tell our containers from a dead one's. */
	t->owner = oci_owner_label();
	if (!t->owner) {
		tier_free(t);
		return oci_host->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed),
					   "cannot tell this process's owner token from /proc");
	}
	*ret_tier = t;
	return 0;
}

static void oci_unconfigure(void *tier) { tier_free(tier); }

/* ---- probe ---------------------------------------------------------------------------- */

static int unavailable(cordon_plugin_probe *ret, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int unavailable(cordon_plugin_probe *ret, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	/* The reason says what is missing; "unavailable" is the verdict's to say
	 * (admission prints "TIER: unavailable: REASON"). */
	vsnprintf(ret->reason, sizeof(ret->reason), fmt, ap);
	va_end(ap);
	ret->available = 0;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL;
	return 0;
}

/* `engine version`: answers only when the engine (and its daemon) works. */
static int probe_version(oci_tier *t, const char *engine, char *ver, size_t len,
			 cordon_plugin_probe *ret)
{
	const char *args[] = { "version", "--format", t->kind->version_format, NULL };
	oci_cli_result res;
	int r = oci_cli(t, engine, args, NULL, 0, PROBE_TIMEOUT_MS, 64 << 10, &res);
	char line[256];
	oci_first_line(res.err, line, sizeof(line));
	int bad = 0;
	if (r < 0)
		bad = unavailable(ret, "could not run %s: %s", engine, strerror(-r)) - 1;
	else if (res.timed_out)
		bad = unavailable(ret, "the %s engine did not answer `version` within %d s",
				  t->kind->name, PROBE_TIMEOUT_MS / 1000) -
		      1;
	else if (res.exit_code != 0 && t->kind->daemon && oci_output_says_daemon_down(res.err))
		bad = unavailable(ret, "the %s daemon is not running", t->kind->name) - 1;
	else if (res.exit_code != 0 && t->kind->runtime_is_global && strstr(line, "runtime"))
		bad = unavailable(ret, "%s cannot use runtime %s: %s", t->kind->name,
				  t->runtime ? t->runtime : "(default)", line) -
		      1;
	else if (res.exit_code != 0)
		bad = unavailable(ret, "`%s version` failed: %s", t->kind->name, line) - 1;
	else
		oci_first_line(res.out, ver, len);
	oci_cli_result_clear(&res);
	return bad;
}

/* The daemon's `info` lists its runtimes (podman needs no such call: it
 * resolves --runtime on every command, `version` included). A success is
 * remembered for the tier's lifetime: a runtime that goes away later fails
 * `open` with the engine's own message. */
static int probe_runtime(oci_tier *t, const char *engine, cordon_plugin_probe *ret)
{
	if (t->kind->runtime_is_global)
		return 0;
	pthread_mutex_lock(&t->lock);
	bool known = t->runtime_ok;
	pthread_mutex_unlock(&t->lock);
	if (known)
		return 0;
	const char *fmt = t->kind->runtime_is_global ? "{{.Host.OCIRuntime.Name}}"
						     : "{{json .Runtimes}}";
	const char *args[] = { "info", "--format", fmt, NULL };
	oci_cli_result res;
	int r = oci_cli(t, engine, args, NULL, 0, PROBE_TIMEOUT_MS, 256 << 10, &res);
	char line[256];
	oci_first_line(res.err, line, sizeof(line));
	int bad = 0;
	if (r < 0 || res.timed_out)
		bad = unavailable(ret, "`%s info` did not answer", t->kind->name) - 1;
	else if (res.exit_code != 0)
		bad = unavailable(ret, "%s cannot use the configured runtime%s%s: %s",
				  t->kind->name, t->runtime ? " " : "",
				  t->runtime ? t->runtime : "", line) -
		      1;
	else if (t->runtime && !t->kind->runtime_is_global &&
		 !oci_runtimes_json_has(res.out, t->runtime))
		bad = unavailable(ret, "runtime %s is not registered with the %s daemon",
				  t->runtime, t->kind->name) -
		      1;
	bool host_uds = !bad && t->runtime &&
			oci_runtimes_json_arg(res.out, t->runtime, oci_runsc_host_uds_flag);
	oci_cli_result_clear(&res);
	if (!bad) {
		pthread_mutex_lock(&t->lock);
		t->runtime_ok = true;
		__atomic_store_n(&t->runtime_host_uds, host_uds, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&t->lock);
	}
	return bad;
}

static bool is_gvisor(const oci_tier *t) { return oci_runtime_is_gvisor(t->runtime); }

void oci_runtime_learn(oci_tier *t)
{
	if (!is_gvisor(t) || t->kind->runtime_is_global || geteuid() != 0)
		return;
	pthread_mutex_lock(&t->lock);
	bool known = t->runtime_ok;
	pthread_mutex_unlock(&t->lock);
	oci_refusal r;
	char *engine = known ? NULL : oci_tier_engine(t, &r);
	if (!engine)
		return;
	cordon_plugin_probe scratch;
	memset(&scratch, 0, sizeof(scratch));
	probe_runtime(t, engine, &scratch); /* a failure leaves it unknown: no relay */
	free(engine);
}

/* The trial's one-shot `run`, the gVisor profile on its stdin. */
static int trial_run(oci_tier *t, const char *engine, char **args, oci_cli_result *res)
{
	return oci_cli(t, engine, (const char *const *)args, oci_seccomp_profile_gvisor,
		       strlen(oci_seccomp_profile_gvisor), TRIAL_TIMEOUT_MS, 64 << 10, res);
}

/* gVisor is reported only after work actually ran under it here, answered by
 * a kernel that is not the host's. */
static int probe_trial(oci_tier *t, const char *engine, cordon_plugin_probe *ret)
{
	pthread_mutex_lock(&t->lock);
	bool passed = t->trial == 1;
	pthread_mutex_unlock(&t->lock);
	if (passed)
		return 0;
	/* the tier's own limits, as a sandbox of it would get them at least */
	oci_start st = { .image = t->image,
			 .trust = CORDON_PLUGIN_TRUST_UNTRUSTED,
			 .egress = CORDON_PLUGIN_EGRESS_DENY,
			 .limits = t->limits };
	if (!(st.limits.set & (1u << CORDON_PLUGIN_LIMIT_MEMORY))) {
		st.limits.set |= 1u << CORDON_PLUGIN_LIMIT_MEMORY;
		st.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 64ull << 20;
	}
	oci_spec_buf b;
	oci_session_spec(t, &st, NULL, &b);
	b.spec.interactive = false;
	b.spec.name = NULL;
	b.spec.labels = NULL;
	free(b.command[0]);
	b.command[0] = xstrdup("probe");
	/* one-shot, not attached: the CLI reads the profile from its stdin */
	if (b.spec.seccomp)
		b.spec.seccomp = "/dev/stdin";
	char **args = oci_run_argv(&b.spec);
	oci_spec_clear(&b);
	oci_cli_result res;
	int rc = trial_run(t, engine, args, &res);
	/* `run --pull never` says when the image is absent: only then pull, and once more */
	if (rc == 0 && res.exit_code != 0 && oci_output_says_no_image(res.err)) {
		oci_refusal r;
		oci_cli_result_clear(&res);
		if (oci_image_pull(t, engine, t->image, &r) < 0) {
			xstrv_free(args);
			return unavailable(ret, "gVisor trial run: %s", r.message) - 1;
		}
		rc = trial_run(t, engine, args, &res);
	}
	xstrv_free(args);
	char kernel[128] = "";
	const char *k = rc == 0 && res.exit_code == 0 && res.out ? strstr(res.out, "kernel=")
								 : NULL;
	if (k)
		sscanf(k + 7, "%127s", kernel);
	/* the helper met the profile's refusals: runsc applies it (--oci-seccomp) */
	bool filtered = k && strstr(k, " seccomp=1");
	char line[256];
	oci_first_line(res.err, line, sizeof(line));
	oci_cli_result_clear(&res);
	struct utsname u;
	uname(&u);
	if (!k)
		return unavailable(ret, "runtime %s is configured but a trial run failed: %s",
				   t->runtime, line[0] ? line : "no answer from the helper") -
		       1;
	if (!kernel[0] || strcmp(kernel, u.release) == 0)
		return unavailable(ret, "runtime %s answered with the host kernel %s, not gVisor's",
				   t->runtime, u.release) -
		       1;
	pthread_mutex_lock(&t->lock);
	t->trial = 1;
	t->trial_seccomp = filtered;
	snprintf(t->trial_kernel, sizeof(t->trial_kernel), "%s", kernel);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* The socket the CLI reaches: a unix:// host, else the engine's default; NULL for another
 * transport (tcp://, ssh://), which no file stands for. */
static const char *engine_socket(const oci_tier *t)
{
	if (!t->host_url)
		return t->kind->default_socket;
	return strncmp(t->host_url, "unix://", 7) == 0 && t->host_url[7] == '/' ? t->host_url + 7
										: NULL;
}

/* Names to the host what this probe's answer depends on, so that an answer kept across
 * processes (the core's probe cache) is dropped when one of them changes: the CLI, the
 * socket it reaches (a restarted dockerd makes a new one), the CLI's configuration files,
 * the OCI runtime's binary, the helper. What no file stands for (the daemon's own
 * configuration, an image removed since) is caught at open: a kept answer that proves
 * wrong there is forgotten and the open retried once on a fresh probe. */
static void probe_note_deps(const oci_tier *t, const char *engine)
{
	if (!host_has_probe_depends(oci_host))
		return;
	void (*dep)(const char *path) = oci_host->probe_depends;
	dep(engine);
	dep(t->helper);
	if (engine_socket(t))
		dep(engine_socket(t));
	char *home = oci_engine_home();
	for (const char *const *f = t->kind->config_files; f && *f; f++) {
		char *path = strncmp(*f, "~/", 2) == 0 ? xasprintf("%s/%s", home, *f + 2)
						       : xstrdup(*f);
		dep(path);
		free(path);
	}
	free(home);
	/* a runtime named is the one on the minimal PATH (find_program notes it) */
	if (t->runtime && t->runtime[0] == '/')
		dep(t->runtime);
	else if (t->runtime && oci_host->find_program)
		oci_host->free(oci_host->find_program(t->runtime));
}

/* Within OCI_HEALTH_TTL_MS of an engine call that succeeded (a container
 * started, a run completed, a probe), the last full probe still holds: the
 * engine answered moments ago. Any daemon-down answer clears it. */
static bool probe_recent(oci_tier *t, cordon_plugin_probe *ret)
{
	oci_health *h = t->health;
	pthread_mutex_lock(&h->lock);
	bool fresh = h->probed && oci_now_ms() - h->ok_at < OCI_HEALTH_TTL_MS &&
		     access(t->helper, X_OK) == 0;
	if (fresh)
		*ret = h->last;
	pthread_mutex_unlock(&h->lock);
	return fresh;
}

static void probe_remember(oci_tier *t, const cordon_plugin_probe *ret)
{
	oci_health *h = t->health;
	pthread_mutex_lock(&h->lock);
	h->probed = true;
	h->ok_at = oci_now_ms();
	h->last = *ret;
	pthread_mutex_unlock(&h->lock);
}

/* A container tier ranks above the kernel tier only with at least the
 * kernel tier's seccomp deny list applied to its work (cordon's profile):
 * the engines' own profiles let through what that list closes (nested user
 * namespaces, io_uring, keyctl, vsock). Under runc the engine applies the
 * profile or refuses to start; runsc only with --oci-seccomp, which the
 * trial run checks. */
static void rank_by_seccomp(oci_tier *t, cordon_plugin_probe *ret)
{
	pthread_mutex_lock(&t->lock);
	bool filtered = t->trial_seccomp;
	pthread_mutex_unlock(&t->lock);
	const char *missing = !oci_seccomp_profile_rules ? "this build has none (a cross build)"
			      : is_gvisor(t) && !filtered
				      ? "runsc does not apply it (give the runtime --oci-seccomp)"
				      : NULL;
	size_t n = strlen(ret->reason);
	if (missing) {
		ret->containment = CORDON_PLUGIN_CONTAINMENT_KERNEL;
		snprintf(ret->reason + n, sizeof(ret->reason) - n,
			 "; cordon's seccomp profile is not applied: %s, so it ranks with the "
			 "kernel tier, not above it",
			 missing);
	} else {
		snprintf(ret->reason + n, sizeof(ret->reason) - n,
			 "; cordon's seccomp profile (%zu rules)", oci_seccomp_profile_rules);
	}
}

static int oci_probe(void *tier, cordon_plugin_probe *ret)
{
	oci_tier *t = tier;
	oci_refusal r;
	char *engine = oci_tier_engine(t, &r);
	if (!engine)
		return unavailable(ret, "%s", r.message);
	/* named for a reused answer too: the core keeps whatever this returns */
	probe_note_deps(t, engine);
	if (probe_recent(t, ret)) {
		free(engine);
		return 0;
	}
	char ver[128] = "";
	int bad = probe_version(t, engine, ver, sizeof(ver), ret);
	if (!bad)
		bad = probe_runtime(t, engine, ret);
	if (!bad && access(t->helper, X_OK) != 0)
		bad = unavailable(ret, "cordon-agent is missing at %s", t->helper) - 1;
	/* Only `pull: never` makes the tier's availability depend on the image: otherwise
	 * the start itself finds out (`run --pull never` says when it is absent) and pulls
	 * by digest, so no `image inspect` is asked here. */
	if (!bad && !t->pull_missing && !oci_image_present(t, engine, t->image))
		bad = unavailable(ret, "image %s is not present and pull is never", t->image) - 1;
	if (!bad && is_gvisor(t))
		bad = probe_trial(t, engine, ret);
	free(engine);
	if (bad)
		return 0;
	ret->available = 1;
	/* Denied egress is `--network none`, the engine's own. Governed egress is
	 * either cordon's proxy on a listener inside the container (runc as root, a
	 * 1.5 core: enforced, the tier's egress: rules) or, on a tier with
	 * network:, a named network whose governance is the administrator's
	 * (docs/tiers/containers.md): not enforced by this tier. */
	ret->egress_enforced = CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY);
	if (oci_host->abi_minor >= 4 && oci_can_listen(t))
		ret->features |= CORDON_PLUGIN_PROBE_LISTEN;
	if (oci_host->abi_minor >= 5 && oci_can_listen(t) && !t->network)
		ret->egress_enforced |= CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_GOVERNED);
	if (is_gvisor(t)) {
		ret->containment = CORDON_PLUGIN_CONTAINMENT_USERSPACE_KERNEL;
		snprintf(ret->reason, sizeof(ret->reason),
			 "%s %s, runtime %s: a trial run was answered by gVisor's kernel %s",
			 t->kind->name, ver, t->runtime, t->trial_kernel);
	} else {
		ret->containment = CORDON_PLUGIN_CONTAINMENT_CONTAINER;
		snprintf(ret->reason, sizeof(ret->reason), "%s %s, runtime %s, image %s",
			 t->kind->name, ver, t->runtime ? t->runtime : "default",
			 t->pull_missing ? "pulled by digest at a start that finds it absent"
					 : "present");
	}
	/* Extra mounts are staged binds of the core's descriptors, which takes root
	 * (start.c, prepare_mounts); a 1.3 core's probe has no such field. */
	if (oci_host->abi_minor >= 4 && geteuid() == 0)
		ret->features |= CORDON_PLUGIN_PROBE_MOUNTS;
	rank_by_seccomp(t, ret);
	probe_remember(t, ret);
	return 0;
}

/* ---- gc ---------------------------------------------------------------------------------- */

static char *owner_of(oci_tier *t, const char *engine, const char *name)
{
	const char *args[] = { "inspect", "--format", "{{index .Config.Labels \"cordon.owner\"}}",
			       "--",      name,       NULL };
	oci_cli_result res;
	int r = oci_cli(t, engine, args, NULL, 0, 0, 4096, &res);
	char line[256] = "";
	if (r == 0 && res.exit_code == 0)
		oci_first_line(res.out, line, sizeof(line));
	oci_cli_result_clear(&res);
	return xstrdup(line);
}

/* Removes cordon's containers whose owning process is gone (a crashed host), and
 * their relay directories (named by the container's name, not its id); those of live
 * processes, this one's included, are left alone. Returns how many were removed. */
static int oci_gc(void *tier, cordon_plugin_error *err)
{
	oci_tier *t = tier;
	oci_refusal r;
	char *engine = oci_tier_engine(t, &r);
	if (!engine)
		return oci_fail(err, &r);
	const char *args[] = { "ps",         "-a",       "--format",
			       "{{.Names}}", "--filter", "label=cordon.managed=1",
			       NULL };
	oci_cli_result res;
	int rc = oci_cli(t, engine, args, NULL, 0, 0, 1 << 20, &res);
	if (rc < 0 || res.exit_code != 0) {
		if (rc == 0)
			oci_cli_failure(t, "gc", &res, &r);
		else
			oci_refuse(&r, -rc, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed),
				   "could not run %s ps", t->kind->name);
		oci_cli_result_clear(&res);
		free(engine);
		return oci_fail(err, &r);
	}
	int removed = 0;
	char *save = NULL;
	for (char *name = strtok_r(res.out, " \n", &save); name;
	     name = strtok_r(NULL, " \n", &save)) {
		char *owner = owner_of(t, engine, name);
		if (oci_owner_is_dead(owner)) {
			oci_container_remove(t, engine, name);
			removed++;
		}
		free(owner);
	}
	oci_cli_result_clear(&res);
	free(engine);
	return removed;
}

/* ---- registration ------------------------------------------------------------------------ */

int oci_plugin_init(const cordon_host *host, cordon_plugin_registrar *reg, cordon_plugin_error *err,
		    const oci_engine_kind *kind)
{
	oci_host = host;
	static cordon_plugin_driver drv; /* one kind per plugin module */
	drv = (cordon_plugin_driver){
		.size = sizeof(drv),
		/* a 1.2 core knows no flags, and refuses them */
		.flags = (host->abi_minor >= 3
				  ? CORDON_PLUGIN_DRIVER_STDIN_FD | CORDON_PLUGIN_DRIVER_TTY
				  : 0) |
			 (host->abi_minor >= 4 ? CORDON_PLUGIN_DRIVER_MOUNTS : 0) |
			 (host->abi_minor >= 5 ? CORDON_PLUGIN_DRIVER_EGRESS_PROXY : 0) |
			 /* runc as root only: other tiers refuse it at the serve, saying why */
			 (host->abi_minor >= 6 ? CORDON_PLUGIN_DRIVER_SERVE_UNIX : 0),
		.name = kind->name,
		.config_keys = kind->config_keys,
		.data = (void *)kind,
		.configure = oci_configure,
		.unconfigure = oci_unconfigure,
		.probe = oci_probe,
		.open = oci_op_open,
		.run = oci_op_run,
		.read_file = oci_op_read_file,
		.write_file = oci_op_write_file,
		.glob = oci_op_glob,
		.walk = oci_op_walk,
		.close = oci_op_close,
		.gc = oci_gc,
		/* a 1.3 core's driver table ends before listen */
		.listen = host->abi_minor >= 4 ? oci_op_listen : NULL,
	};
	return host->register_driver(reg, &drv);
}
