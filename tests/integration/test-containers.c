/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The docker and podman plugins against the real engines that .ci/engines.sh
 * installs and starts (podman with runc, dockerd, gVisor's runsc under both),
 * through the public API: probes, runs, the red-team expectations, limits,
 * file operations, workspaces, refusals before any engine call, failure paths
 * (daemon stopped mid-session, image missing, digest mismatch, container
 * killed from outside, engine binary missing), pools, gc, and that nothing
 * survives.
 *
 * It takes minutes, so it runs under CORDON_REQUIRE=all (CI) or when
 * CORDON_TEST_CONTAINERS=1 asks for it, and otherwise skips saying so.
 * Without the engines (or the pinned image) the whole program is skipped
 * ("1..0 # SKIP why", TAP's exit 77) and says why; with CORDON_REQUIRE=all
 * that is a failure.
 * Concurrent runs (several build trees) are serialised with a lock file:
 * the daemon test stops and restarts dockerd.
 */
#include "config.h"

#include "netcheck.h"
#include "testutil.h"
#include "context.h"
#include "owner.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/fs.h>
#include <unistd.h>

#define HOST_SECRET "cordon-host-secret-4f1e"
#define GRANT_SECRET NETCHECK_GRANT
#define LOCK_PATH "/tmp/cordon-test-containers.lock"

typedef struct engine_case {
	const char *engine; /* CLI and driver name */
	const char *tier;   /* runc tier */
	const char *gvisor; /* runsc tier */
} engine_case;

static const engine_case engines[] = {
	{ "podman", "podman", "podman-gvisor" },
	{ "docker", "docker", "docker-gvisor" },
};

static char *image_ref;  /* pinned, from .ci/engines.sh */
static char *state_dir;  /* $CORDON_CI_STATE */
static char *plugin_dir; /* a private copy of the built plugins */
static char *policy;     /* the policy text every test uses */
static char *engine_path[2];
static char *wrap_dir; /* engine wrappers that log their calls (the *-logged tiers) */

/* ---- the host side: engine CLI calls of the test itself -------------------------- */

/* Runs argv with a clean environment (the test's own has decoys set) and
 * returns stdout; *ret_status gets the exit status. */
static char *host_cmd(int *ret_status, const char *const *argv)
{
	const char *env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			      "HOME=/root", "LC_ALL=C", NULL };
	char *out = NULL, *err = NULL;
	int status = -1;
	GError *e = NULL;
	if (!g_spawn_sync(NULL, (char **)argv, (char **)env, G_SPAWN_DEFAULT, NULL, NULL, &out,
			  &err, &status, &e)) {
		g_clear_error(&e);
		status = -1;
	}
	g_free(err);
	if (ret_status)
		*ret_status = status;
	return out ? out : g_strdup("");
}

static const char *engine_bin(const char *engine)
{
	return strcmp(engine, "docker") == 0 ? engine_path[1] : engine_path[0];
}

/* Podman needs this host's quirks on every call, as the tier configures them. */
static GPtrArray *engine_argv(const char *engine)
{
	GPtrArray *a = g_ptr_array_new();
	g_ptr_array_add(a, (gpointer)engine_bin(engine));
	if (strcmp(engine, "podman") == 0) {
		g_ptr_array_add(a, (gpointer) "--runtime");
		g_ptr_array_add(a, (gpointer) "runc");
		g_ptr_array_add(a, (gpointer) "--cgroup-manager");
		g_ptr_array_add(a, (gpointer) "cgroupfs");
	}
	return a;
}

static char *engine_run(const char *engine, int *ret_status, ...)
{
	g_autoptr(GPtrArray) a = engine_argv(engine);
	va_list ap;
	va_start(ap, ret_status);
	for (const char *s; (s = va_arg(ap, const char *));)
		g_ptr_array_add(a, (gpointer)s);
	va_end(ap);
	g_ptr_array_add(a, NULL);
	return host_cmd(ret_status, (const char *const *)a->pdata);
}

/* The cordon.owner label the plugins put on this process's containers: its owner token. */
static char *my_owner(void)
{
	char token[OWNER_TOKEN_MAX];
	ck_assert_int_eq(owner_token_self(token), 0);
	return g_strdup(token);
}

/* IDs of the containers this process owns on engine, one per line. */
static char *my_containers(const char *engine)
{
	g_autofree char *owner = my_owner();
	g_autofree char *filter = g_strdup_printf("label=cordon.owner=%s", owner);
	char *out = engine_run(engine, NULL, "ps", "-a", "-q", "--filter", filter, NULL);
	return g_strstrip(out);
}

static void assert_nothing_left(const char *engine)
{
	/* docker removes --rm containers asynchronously after a kill: allow a moment */
	for (int i = 0; i < 50; i++) {
		g_autofree char *ids = my_containers(engine);
		if (!*ids)
			return;
		g_usleep(100 * 1000);
	}
	g_autofree char *ids = my_containers(engine);
	ck_assert_msg(!*ids, "%s containers survived: %s", engine, ids);
}

/* ---- the library side ------------------------------------------------------------------ */

static cordon_context *ctx_new(void)
{
	return testutil_context_from_text(policy, "containers.yaml");
}

static cordon_probe_report *probe(cordon_context *ctx, const char *tier)
{
	cordon_probe_report *rep = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_context_probe_tier(ctx, testutil_tier_index(ctx, tier), &rep, &err),
			 0);
	return rep;
}

typedef struct open_args {
	const char *trust;
	const char *workspace;
	const char *image;
	cordon_egress egress;
	bool grant;
} open_args;

static int try_open(cordon_context *ctx, const char *tier, const open_args *a, cordon_sandbox **ret,
		    cordon_error **err)
{
	cordon_request *req = cordon_request_new(a && a->trust ? a->trust : "untrusted");
	ck_assert_int_eq(cordon_request_set_tier(req, tier, NULL), 0);
	if (a && a->workspace)
		ck_assert_int_eq(cordon_request_set_workspace(req, a->workspace, NULL), 0);
	if (a && a->image)
		ck_assert_int_eq(cordon_request_set_image(req, a->image, NULL), 0);
	if (a && a->egress)
		ck_assert_int_eq(cordon_request_set_egress(req, a->egress, NULL), 0);
	if (a && a->grant)
		ck_assert_int_eq(cordon_request_grant_env(req, "TOKEN", GRANT_SECRET, NULL), 0);
	int r = cordon_sandbox_open(ctx, req, ret, err);
	cordon_request_free(req);
	return r;
}

static cordon_sandbox *open_tier(cordon_context *ctx, const char *tier, const open_args *a)
{
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	int r = try_open(ctx, tier, a, &sb, &err);
	ck_assert_msg(r == 0, "open %s: %s: %s", tier, err ? cordon_error_get_code(err) : "?",
		      err ? cordon_error_get_message(err) : "?");
	return sb;
}

static cordon_result *run_opts(cordon_sandbox *sb, const char *line, const cordon_run_options *o)
{
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_exec(sb, line, o, &res, &err);
	ck_assert_msg(r == 0, "exec '%s': %s: %s", line, err ? cordon_error_get_code(err) : "?",
		      err ? cordon_error_get_message(err) : "?");
	return res;
}

static cordon_result *sh(cordon_sandbox *sb, const char *line) { return run_opts(sb, line, NULL); }

static const char *out(const cordon_result *r, int stream)
{
	return cordon_result_output(r, stream, NULL);
}

/* Runs a line and returns its stdout (asserting exit 0). */
static char *sh_out(cordon_sandbox *sb, const char *line)
{
	cordon_result *r = sh(sb, line);
	ck_assert_msg(cordon_result_exit_code(r) == 0, "'%s' exited %d: %s", line,
		      cordon_result_exit_code(r), out(r, 2));
	char *s = g_strdup(out(r, 1));
	cordon_result_free(r);
	return s;
}

/* ---- probes ------------------------------------------------------------------------ */

START_TEST(test_probe)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_probe_report *rep = probe(ctx, e->tier);
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_CONTAINER);
	ck_assert_ptr_nonnull(strstr(cordon_probe_report_reason(rep), e->engine));
	cordon_probe_report_free(rep);
	rep = probe(ctx, e->gvisor);
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_USERSPACE_KERNEL);
	ck_assert_ptr_nonnull(strstr(cordon_probe_report_reason(rep), "gVisor"));
	cordon_probe_report_free(rep);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- runs ---------------------------------------------------------------------------- */

static void close_and_assert_killed(const char *engine, cordon_sandbox *sb);

START_TEST(test_run_basics)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	open_args a = { .grant = true };
	cordon_sandbox *sb = open_tier(ctx, e->tier, &a);
	ck_assert_int_eq(cordon_sandbox_containment(sb), CORDON_CONTAINMENT_CONTAINER);

	/* exit status, stdout and stderr apart */
	cordon_result *r = sh(sb, "echo out; echo err >&2; exit 3");
	ck_assert_int_eq(cordon_result_exit_code(r), 3);
	ck_assert_str_eq(out(r, 1), "out\n");
	ck_assert_str_eq(out(r, 2), "err\n");
	cordon_result_free(r);

	/* a signal is a result, 128+sig */
	r = sh(sb, "kill -TERM $$");
	ck_assert_int_eq(cordon_result_signal(r), SIGTERM);
	ck_assert_int_eq(cordon_result_exit_code(r), 128 + SIGTERM);
	cordon_result_free(r);

	/* stdin reaches the work, then EOF */
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.stdin_data = "hello stdin";
	o.stdin_len = strlen("hello stdin");
	r = run_opts(sb, "cat; echo .", &o);
	ck_assert_str_eq(out(r, 1), "hello stdin.\n");
	cordon_result_free(r);

	/* the environment: grants arrive, the host's secrets do not */
	g_autofree char *env = sh_out(sb, "env");
	ck_assert_ptr_nonnull(strstr(env, "TOKEN=" GRANT_SECRET));
	ck_assert_ptr_null(strstr(env, HOST_SECRET));
	ck_assert_ptr_null(strstr(env, "CORDON_TEST_HOST_SECRET"));
	const char *run_env[] = { "PER_RUN=1", NULL };
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.env = run_env;
	r = run_opts(sb, "echo $PER_RUN", &o);
	ck_assert_str_eq(out(r, 1), "1\n");
	cordon_result_free(r);

	/* a working directory relative to the sandbox root */
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "sub/x", "", 0, &err), 0);
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.workdir = "sub";
	r = run_opts(sb, "pwd", &o);
	ck_assert_str_eq(out(r, 1), "/work/sub\n");
	cordon_result_free(r);

	/* a program that does not exist: an error, not exit 127 */
	const char *nope[] = { "/bin/does-not-exist", NULL };
	cordon_result *res = NULL;
	ck_assert_int_lt(cordon_sandbox_run(sb, nope, NULL, &res, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "exec_failed");

	close_and_assert_killed(e->engine, sb);
	cordon_context_free(ctx);
	g_autofree char *left = my_containers(e->engine);
	ck_assert_msg(!*left, "containers left after cordon_context_free: %s", left);
}
END_TEST

/* One script reports every red-team expectation as key=value lines. */
static const char *redteam_script =
	"echo uid=$(id -u);"
	"grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status |"
	"  tr -d ' \\t' | sed 's/:/=/';"
	"touch /rootfs-probe 2>/dev/null && echo rootfs=writable || echo rootfs=readonly;"
	"echo helper=$( (echo x > /.cordon-agent) 2>/dev/null && echo writable || echo readonly);"
	"echo net=$(ls /sys/class/net | tr '\\n' ' ');"
	"cp /bin/busybox /tmp/bb 2>/dev/null; /tmp/bb true 2>/dev/null && echo tmpexec=yes ||"
	"  echo tmpexec=no;"
	"mount -t tmpfs none /mnt 2>/dev/null && echo mount=yes || echo mount=no;"
	"env | grep -q " HOST_SECRET " && echo secret=leaked || echo secret=absent;"
	"ps -o comm | grep -q -E 'dockerd|conmon|containerd|podman' && echo hostprocs=visible ||"
	"  echo hostprocs=hidden;"
	"ls /proc/1/fd >/dev/null 2>&1 && echo pid1fds=open || echo pid1fds=closed;"
	"echo kernel=$(uname -r)";

static GHashTable *redteam(cordon_sandbox *sb)
{
	g_autofree char *text = sh_out(sb, redteam_script);
	GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (size_t i = 0; lines[i]; i++) {
		char *eq = strchr(lines[i], '=');
		if (eq)
			g_hash_table_insert(h, g_strndup(lines[i], eq - lines[i]),
					    g_strstrip(g_strdup(eq + 1)));
	}
	return h;
}

static void expect(GHashTable *h, const char *key, const char *want)
{
	const char *got = g_hash_table_lookup(h, key);
	ck_assert_msg(got && strcmp(got, want) == 0, "%s: got '%s', want '%s'", key,
		      got ? got : "(missing)", want);
}

/* What every container tier shows the work, runc and gVisor alike. */
static void expect_confined(GHashTable *h)
{
	static const char *const want[][2] = {
		{ "uid", "65534" },
		{ "CapEff", "0000000000000000" },
		{ "CapPrm", "0000000000000000" },
		{ "rootfs", "readonly" },
		{ "helper", "readonly" },
		{ "net", "lo" },
		{ "tmpexec", "no" },
		{ "mount", "no" },
		{ "secret", "absent" },
		{ "hostprocs", "hidden" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(want); i++)
		expect(h, want[i][0], want[i][1]);
}

START_TEST(test_redteam)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, e->tier, NULL);
	g_autoptr(GHashTable) h = redteam(sb);
	expect_confined(h);
	static const char *const caps[] = { "CapInh", "CapBnd", "CapAmb" };
	for (size_t i = 0; i < G_N_ELEMENTS(caps); i++)
		expect(h, caps[i], "0000000000000000");
	expect(h, "NoNewPrivs", "1");
	expect(h, "Seccomp", "2"); /* a filter is installed */
	/* pid 1 is the session helper: its channel is out of the work's reach */
	expect(h, "pid1fds", "closed");
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* gVisor: the same expectations, except that gVisor's own kernel answers
 * (the Sentry is the syscall boundary; `runsc exec` processes show no seccomp
 * filter of their own in this runsc version, so Seccomp is not asserted). */
START_TEST(test_redteam_gvisor)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, e->gvisor, NULL);
	ck_assert_int_eq(cordon_sandbox_containment(sb), CORDON_CONTAINMENT_USERSPACE_KERNEL);
	g_autoptr(GHashTable) h = redteam(sb);
	struct utsname u;
	uname(&u);
	const char *k = g_hash_table_lookup(h, "kernel");
	ck_assert_msg(k && strcmp(k, u.release) != 0, "gVisor answered with the host kernel %s", k);
	expect_confined(h);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- the seccomp profile: the kernel tier's deny list, and the rank it earns ------------ */

/* What gVisor (runsc 2022) answers differently, the call refused all the
 * same: EPERM for every refusal (it ignores errnoRet), and the personality
 * query, which gVisor's own kernel refuses with EINVAL. */
static bool gvisor_deviation(const char *line)
{
	return (g_str_has_prefix(line, "FAIL socket-") && g_str_has_suffix(line, ": EPERM")) ||
	       g_str_has_prefix(line, "FAIL personality-query-allowed: ");
}

static char *probe_workspace(void);

/* The red-team probe's seccomp part (cordon-probe surface, the kernel tier's
 * own probe built static for the image) finds every call the kernel tier's
 * list closes closed. Before cordon's profile, podman with runc let the work
 * create user, mount and network namespaces and use keyctl, AF_PACKET and
 * vsock sockets, docker io_uring and vsock. */
static void surface_closed(cordon_context *ctx, const char *tier, bool gvisor)
{
	g_autofree char *ws = probe_workspace();
	open_args a = { .trust = "untrusted", .workspace = ws };
	cordon_sandbox *sb = open_tier(ctx, tier, &a);
	cordon_result *r = sh(sb, "/work/cordon-probe surface");
	g_auto(GStrv) lines = g_strsplit(out(r, 1), "\n", -1);
	int passed = 0;
	for (size_t i = 0; lines[i]; i++) {
		passed += g_str_has_prefix(lines[i], "PASS ");
		ck_assert_msg(!g_str_has_prefix(lines[i], "FAIL ") ||
				      (gvisor && gvisor_deviation(lines[i])),
			      "%s: %s", tier, lines[i]);
	}
	ck_assert_int_gt(passed, 20); /* the probe ran its checks */
	cordon_result_free(r);
	cordon_sandbox_close(sb);
	testutil_rmtree(ws);
}

START_TEST(test_seccomp_profile)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	const char *tiers[] = { e->tier, e->gvisor };
	for (int i = 0; i < 2; i++) {
		cordon_probe_report *rep = probe(ctx, tiers[i]);
		ck_assert_msg(cordon_probe_report_available(rep), "%s",
			      cordon_probe_report_reason(rep));
		ck_assert_msg(strstr(cordon_probe_report_reason(rep), "cordon's seccomp profile ("),
			      "%s", cordon_probe_report_reason(rep));
		ck_assert_int_eq(cordon_probe_report_containment(rep),
				 i ? CORDON_CONTAINMENT_USERSPACE_KERNEL
				   : CORDON_CONTAINMENT_CONTAINER);
		cordon_probe_report_free(rep);
		surface_closed(ctx, tiers[i], i == 1);
	}
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* Review of issue 10 (item 1): no set-id file through the workspace, by any
 * call that takes a mode. openat2's mode is in a struct that a seccomp rule
 * cannot read: under runc (docker and podman) the work made setuid and
 * setgid files in the workspace; gVisor answers openat2 with ENOSYS. */
START_TEST(test_seccomp_setid)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	const char *tiers[] = { e->tier, e->gvisor };
	GString *bad = g_string_new(NULL);
	for (int i = 0; i < 2; i++) {
		g_autofree char *ws = probe_workspace();
		ck_assert_int_eq(chown(ws, 65534, 65534), 0); /* the work's user may write it */
		open_args a = { .trust = "semi-trusted", .workspace = ws }; /* a writable one */
		cordon_sandbox *sb = open_tier(ctx, tiers[i], &a);
		cordon_result *r = sh(sb, "/work/cordon-probe setid /work");
		ck_assert_msg(strstr(out(r, 1), "PASS chmod:"), "%s: the probe did not run: %s%s",
			      tiers[i], out(r, 1), out(r, 2));
		if (cordon_result_exit_code(r) != 0)
			g_string_append_printf(bad, "%s:\n%s", tiers[i], out(r, 1));
		cordon_result_free(r);
		cordon_sandbox_close(sb);
		testutil_rmtree(ws);
	}
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
	ck_assert_msg(bad->len == 0, "set-id files made:\n%s", bad->str);
	g_string_free(bad, TRUE);
}
END_TEST

/* runsc without --oci-seccomp ignores the profile: the trial run sees it,
 * and the tier ranks with the kernel tier, saying why. */
START_TEST(test_seccomp_unapplied_ranks_lower)
{
	cordon_context *ctx = ctx_new();
	cordon_probe_report *rep = probe(ctx, "podman-gvisor-noseccomp");
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_KERNEL);
	ck_assert_msg(strstr(cordon_probe_report_reason(rep), "seccomp profile is not applied"),
		      "%s", cordon_probe_report_reason(rep));
	cordon_probe_report_free(rep);
	cordon_context_free(ctx);
	assert_nothing_left("podman");
}
END_TEST

/* ---- limits: fork bomb, memory hog, output flood, timeouts, cancel ----------------------- */

/* A workspace holding the static red-team probe (the image has no libc). */
static char *probe_workspace(void)
{
	char *ws = testutil_tmpdir();
	ck_assert_int_eq(chmod(ws, 0755), 0);
	g_autofree char *src = testutil_build_path("tests/redteam/cordon-probe-static");
	g_autofree char *dst = g_build_filename(ws, "cordon-probe", NULL);
	g_autofree char *bin = NULL;
	gsize len = 0;
	ck_assert(g_file_get_contents(src, &bin, &len, NULL));
	ck_assert(g_file_set_contents(dst, bin, len, NULL));
	ck_assert_int_eq(chmod(dst, 0755), 0);
	return ws;
}

/* gVisor's limits are the work's, not its own: 60 processes under a pids
 * limit of 64 (the host's pids cgroup counts about ten sandbox threads per
 * task, so the sandbox died at about 26, reported as killed from outside),
 * threads (pthread_create failed: runsc turned clone3's ENOSYS into EPERM),
 * a fork past the limit refused with the session alive, and an OOM kill of
 * the whole sandbox reported as out-of-memory. */
START_TEST(test_limits_gvisor)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	g_autofree char *ws = probe_workspace();
	open_args a = { .workspace = ws };
	cordon_sandbox *sb = open_tier(ctx, e->gvisor, &a);
	g_autofree char *sixty = sh_out(sb,
					"i=0; while [ $i -lt 60 ]; do sleep 60 & i=$((i+1)); done; "
					"echo started; kill $(jobs -p)");
	ck_assert_str_eq(sixty, "started\n");
	g_autofree char *threads = sh_out(sb, "/work/cordon-probe threads 16");
	ck_assert_str_eq(threads, "threads 16 ok\n");
	cordon_result *r = sh(sb, "i=0; while [ $i -lt 100 ]; do sleep 60 & i=$((i+1)); done; "
				  "echo started");
	ck_assert_msg(strstr(out(r, 2), "fork"), "no fork failure reported: %s", out(r, 2));
	cordon_result_free(r);
	g_autofree char *alive = sh_out(sb, "echo alive");
	ck_assert_str_eq(alive, "alive\n");
	r = sh(sb, "dd if=/dev/zero of=/dev/null bs=256M count=1");
	ck_assert_msg(cordon_result_oom_killed(r), "not reported as OOM: exit %d, %s",
		      cordon_result_exit_code(r), out(r, 2));
	ck_assert_int_eq(cordon_result_signal(r), SIGKILL);
	cordon_result_free(r);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	testutil_rmtree(ws);
	assert_nothing_left(e->engine);
}
END_TEST

START_TEST(test_limits)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, e->tier, NULL);

	/* a fork bomb hits pids-limit (64) and is cleaned up with the run */
	cordon_result *r = sh(sb, "i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done; "
				  "echo started");
	ck_assert_msg(strstr(out(r, 2), "fork") || strstr(out(r, 2), "Resource"),
		      "no fork failure reported: %s", out(r, 2));
	cordon_result_free(r);
	g_autofree char *left = sh_out(sb, "ps -o comm | grep -c sleep || true");
	ck_assert_str_eq(g_strstrip(left), "0");

	/* a memory hog (cap 128 MiB) is killed and reported as out-of-memory */
	r = sh(sb, "dd if=/dev/zero of=/dev/null bs=256M count=1");
	ck_assert_msg(cordon_result_oom_killed(r), "not reported as OOM: exit %d, %s",
		      cordon_result_exit_code(r), out(r, 2));
	ck_assert_int_eq(cordon_result_signal(r), SIGKILL);
	cordon_result_free(r);

	/* an output flood is capped and says so */
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.output_cap = 1 << 20;
	gint64 t0 = g_get_monotonic_time();
	r = run_opts(sb, "head -c 50000000 /dev/zero", &o);
	size_t len = 0;
	cordon_result_output(r, 1, &len);
	ck_assert_uint_eq(len, 1 << 20);
	ck_assert(cordon_result_truncated(r, 1));
	ck_assert_int_eq(cordon_result_exit_code(r), 0);
	cordon_result_free(r);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 20 * G_USEC_PER_SEC);

	/* a timeout kills the work and what it daemonised, inside the container */
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 1500;
	t0 = g_get_monotonic_time();
	r = run_opts(sb, "(setsid sleep 100 &); sleep 100", &o);
	ck_assert(cordon_result_timed_out(r));
	cordon_result_free(r);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 10 * G_USEC_PER_SEC);
	g_autofree char *after = sh_out(sb, "ps -o comm | grep -c sleep || true");
	ck_assert_str_eq(g_strstrip(after), "0");

	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

static gpointer cancel_later(gpointer data)
{
	g_usleep(1000 * 1000);
	uint64_t one = 1;
	ck_assert_int_eq(write(GPOINTER_TO_INT(data), &one, sizeof(one)), sizeof(one));
	return NULL;
}

typedef struct stream_log {
	gint64 first_at;
	GString *text;
} stream_log;

static int on_output(void *user, int stream, const void *data, size_t len)
{
	stream_log *l = user;
	if (!l->first_at)
		l->first_at = g_get_monotonic_time();
	g_string_append_len(l->text, data, (gssize)len);
	return 0;
}

START_TEST(test_stream_and_cancel)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, e->tier, NULL);

	/* output arrives while the work still runs */
	stream_log l = { 0, g_string_new(NULL) };
	const char *argv[] = { "/bin/sh", "-c", "echo first; sleep 3; echo second", NULL };
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_stream(sb, argv, NULL, on_output, &l, &r, &err), 0);
	gint64 end = g_get_monotonic_time();
	ck_assert_str_eq(l.text->str, "first\nsecond\n");
	ck_assert_int_gt(end - l.first_at, 2 * G_USEC_PER_SEC);
	cordon_result_free(r);
	g_string_free(l.text, TRUE);

	/* cancel_fd stops the work inside the container */
	int ev = eventfd(0, EFD_CLOEXEC);
	GThread *th = g_thread_new("cancel", cancel_later, GINT_TO_POINTER(ev));
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.cancel_fd = ev;
	gint64 t0 = g_get_monotonic_time();
	r = run_opts(sb, "echo $PPID; sleep 60", &o);
	g_thread_join(th);
	close(ev);
	ck_assert(cordon_result_cancelled(r));
	ck_assert(!cordon_result_timed_out(r));
	ck_assert_str_eq(out(r, 1), "1\n"); /* it ran over the channel */
	cordon_result_free(r);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 15 * G_USEC_PER_SEC);
	g_autofree char *left = sh_out(sb, "ps -o comm | grep -c sleep || true");
	ck_assert_str_eq(g_strstrip(left), "0");

	/* a timeout on the channel too; the channel serves the next run */
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 500;
	r = run_opts(sb, "echo $PPID; sleep 60", &o);
	ck_assert(cordon_result_timed_out(r));
	ck_assert_str_eq(out(r, 1), "1\n");
	cordon_result_free(r);
	g_autofree char *after = sh_out(sb, "echo $PPID");
	ck_assert_str_eq(after, "1\n");

	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- file operations --------------------------------------------------------------------- */

static void assert_path_escape(cordon_sandbox *sb, const char *path)
{
	cordon_error *err = NULL;
	void *data = NULL;
	size_t len;
	ck_assert_int_lt(cordon_sandbox_read_file(sb, path, &data, &len, &err), 0);
	ck_assert_msg(err && strcmp(cordon_error_get_code(err), "sandbox_path_escape") == 0,
		      "read %s: %s: %s", path, err ? cordon_error_get_code(err) : "no error",
		      err ? cordon_error_get_message(err) : "");
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_path_escape");
	ck_assert_int_lt(cordon_sandbox_write_file(sb, path, "x", 1, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_path_escape");
}

START_TEST(test_files)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, e->tier, NULL);
	cordon_error *err = NULL;

	ck_assert_int_eq(cordon_sandbox_write_file(sb, "a/b/c.txt", "hello", 5, &err), 0);
	void *data = NULL;
	size_t len = 0;
	ck_assert_int_eq(cordon_sandbox_read_file(sb, "a/b/c.txt", &data, &len, &err), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_str_eq(data, "hello");
	free(data);
	g_autofree char *seen = sh_out(sb, "cat /work/a/b/c.txt");
	ck_assert_str_eq(seen, "hello");

	/* binary content, NUL bytes included, round-trips byte for byte */
	size_t n = 300 * 1024;
	g_autofree guint8 *bin = g_malloc(n);
	for (size_t i = 0; i < n; i++)
		bin[i] = (guint8)g_random_int();
	bin[0] = 0;
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "bin/blob", bin, n, &err), 0);
	ck_assert_int_eq(cordon_sandbox_read_file(sb, "bin/blob", &data, &len, &err), 0);
	ck_assert_uint_eq(len, n);
	ck_assert_int_eq(memcmp(data, bin, n), 0);
	free(data);
	/* replacing a file, and an empty one */
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "a/b/c.txt", "", 0, &err), 0);
	ck_assert_int_eq(cordon_sandbox_read_file(sb, "a/b/c.txt", &data, &len, &err), 0);
	ck_assert_uint_eq(len, 0);
	free(data);

	char **paths = NULL;
	ck_assert_int_eq(cordon_sandbox_glob(sb, "a/*/*.txt", &paths, &err), 1);
	ck_assert_str_eq(paths[0], "a/b/c.txt");
	cordon_strv_free(paths);
	ck_assert_int_eq(cordon_sandbox_walk(sb, "", &paths, &err), 2);
	ck_assert_str_eq(paths[0], "a/b/c.txt");
	ck_assert_str_eq(paths[1], "bin/blob");
	cordon_strv_free(paths);
	ck_assert_int_eq(cordon_sandbox_walk(sb, "bin", &paths, &err), 1);
	cordon_strv_free(paths);

	/* nothing leaves the sandbox root: not by name, not through a symlink */
	assert_path_escape(sb, "../etc/passwd");
	assert_path_escape(sb, "/etc/passwd");
	assert_path_escape(sb, "a/../../etc/passwd");
	g_free(sh_out(sb, "ln -s /etc /work/etc-link && ln -s /nonexistent /work/dangling"));
	assert_path_escape(sb, "etc-link/passwd");
	/* writing over a dangling symlink replaces the link; its target never appears */
	cordon_sandbox_write_file(sb, "dangling", "x", 1, &err);
	cordon_error_free(err);
	err = NULL;
	g_autofree char *dangling = sh_out(sb, "ls /nonexistent 2>&1 || true");
	ck_assert_ptr_nonnull(strstr(dangling, "No such file"));
	ck_assert_int_lt(cordon_sandbox_read_file(sb, "missing", &data, &len, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "not_found");

	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* The workspace: read-write for trusted work, read-only for untrusted. */
START_TEST(test_workspace)
{
	const engine_case *e = &engines[_i];
	g_autofree char *ws = testutil_tmpdir();
	ck_assert_int_eq(chmod(ws, 0777), 0); /* the container's user is 65534 */
	g_autofree char *in = g_build_filename(ws, "in.txt", NULL);
	ck_assert(g_file_set_contents(in, "from host", -1, NULL));
	cordon_context *ctx = ctx_new();

	open_args a = { .trust = "trusted", .workspace = ws };
	cordon_sandbox *sb = open_tier(ctx, e->tier, &a);
	g_autofree char *seen = sh_out(sb, "cat in.txt; echo written > out.txt");
	ck_assert_str_eq(seen, "from host");
	cordon_sandbox_close(sb);
	g_autofree char *outp = g_build_filename(ws, "out.txt", NULL);
	g_autofree char *written = NULL;
	ck_assert(g_file_get_contents(outp, &written, NULL, NULL));
	ck_assert_str_eq(written, "written\n");

	a.trust = "untrusted";
	sb = open_tier(ctx, e->tier, &a);
	cordon_result *r = sh(sb, "cat in.txt && echo x > untrusted.txt");
	ck_assert_str_eq(out(r, 1), "from host");
	ck_assert_int_ne(cordon_result_exit_code(r), 0);
	ck_assert_ptr_nonnull(strstr(out(r, 2), "Read-only"));
	cordon_result_free(r);
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_write_file(sb, "untrusted.txt", "x", 1, &err), 0);
	cordon_error_free(err);
	cordon_sandbox_close(sb);
	g_autofree char *bad = g_build_filename(ws, "untrusted.txt", NULL);
	ck_assert(!g_file_test(bad, G_FILE_TEST_EXISTS));

	cordon_context_free(ctx);
	testutil_rmtree(ws);
	assert_nothing_left(e->engine);
}
END_TEST

/* A symlinked workspace is refused, whatever it points at (here the host's
 * root, which the engines used to mount read-write at /work), under runc
 * and gVisor; a workspace passing through a link is too. Nothing is staged
 * or left behind. */
START_TEST(test_workspace_symlink)
{
	const engine_case *e = &engines[_i];
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *root = g_build_filename(dir, "root", NULL);
	ck_assert_int_eq(symlink("/", root), 0);
	g_autofree char *via = g_build_filename(dir, "via", NULL);
	ck_assert_int_eq(symlink(dir, via), 0);
	g_autofree char *ws = g_build_filename(dir, "ws", NULL);
	ck_assert_int_eq(mkdir(ws, 0777), 0);
	g_autofree char *through = g_build_filename(via, "ws", NULL);
	cordon_context *ctx = ctx_new();
	const char *tiers[] = { e->tier, e->gvisor };
	const char *paths[] = { root, through };
	for (size_t t = 0; t < 2; t++) {
		for (size_t i = 0; i < 2; i++) {
			open_args a = { .trust = "trusted", .workspace = paths[i] };
			cordon_sandbox *sb = NULL;
			cordon_error *err = NULL;
			ck_assert_msg(try_open(ctx, tiers[t], &a, &sb, &err) < 0,
				      "%s: %s was opened", tiers[t], paths[i]);
			ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "workspace_symlink");
		}
	}
	cordon_context_free(ctx);
	GDir *staged = g_dir_open("/run/cordon/oci", 0, NULL);
	ck_assert_ptr_null(staged ? g_dir_read_name(staged) : NULL);
	if (staged)
		g_dir_close(staged);
	testutil_rmtree(dir);
	assert_nothing_left(e->engine);
}
END_TEST

typedef struct swapper {
	const char *a, *b;
	volatile bool stop;
	unsigned swaps;
} swapper;

static gpointer swap_loop(gpointer data)
{
	swapper *w = data;
	/* A pause after each exchange, longer with the directory in place: an open
	 * meets the directory most of the time, and the engine's later lookup often
	 * meets the other state. (Even phases left a loaded machine's opens, which
	 * look more than once, refused nearly every time.) */
	while (!w->stop) {
		if (syscall(SYS_renameat2, AT_FDCWD, w->a, AT_FDCWD, w->b, RENAME_EXCHANGE) == 0)
			w->swaps++;
		g_usleep(w->swaps % 2 ? 1000 : 4000);
	}
	return NULL;
}

/* A thread exchanges the workspace with a symlink to another directory
 * (RENAME_EXCHANGE, in a loop) while sandboxes open on it, until 20 got
 * through: every open is refused (it met the link) or mounts the workspace
 * itself, never the other directory. Before the fix, the engine resolved
 * the path after cordon looked at it and mounted the link's target on a
 * good share of runs. */
static void swap_race(cordon_context *ctx, const char *tier, const char *ws, const char *link)
{
	swapper w = { .a = ws, .b = link };
	GThread *th = g_thread_new("swap", swap_loop, &w);
	int opened = 0, refused = 0;
	/* a refusal is quick: the next try waits for the other phase; a time bound,
	 * not a count, as opens are slower on a loaded machine and under ASan */
	gint64 deadline = g_get_monotonic_time() + 100 * G_USEC_PER_SEC;
	while (opened < 20 && g_get_monotonic_time() < deadline) {
		open_args a = { .trust = "trusted", .workspace = ws };
		cordon_sandbox *sb = NULL;
		cordon_error *err = NULL;
		if (try_open(ctx, tier, &a, &sb, &err) < 0) {
			ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "workspace_symlink");
			refused++;
			g_usleep(3000);
			continue;
		}
		g_autofree char *seen = sh_out(sb, "cat /work/marker");
		ck_assert_str_eq(seen, "workspace");
		cordon_sandbox_close(sb);
		opened++;
	}
	w.stop = true;
	g_thread_join(th);
	printf("# %s: %d opened, %d refused, %u exchanges\n", tier, opened, refused, w.swaps);
	ck_assert_uint_gt(w.swaps, 0);
	/* the race was run, not only refused (up to 20 opens; fewer under ASan, slower per open) */
	ck_assert_int_ge(opened, 5);
	/* the exchanges stopped in either phase: put the workspace back */
	struct stat st;
	if (lstat(ws, &st) == 0 && S_ISLNK(st.st_mode))
		ck_assert_int_eq(
			syscall(SYS_renameat2, AT_FDCWD, ws, AT_FDCWD, link, RENAME_EXCHANGE), 0);
}

START_TEST(test_workspace_swap_race)
{
	const engine_case *e = &engines[_i];
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *ws = g_build_filename(dir, "ws", NULL);
	g_autofree char *other = g_build_filename(dir, "other", NULL);
	g_autofree char *link = g_build_filename(dir, "link", NULL);
	ck_assert_int_eq(mkdir(ws, 0777), 0);
	ck_assert_int_eq(mkdir(other, 0777), 0);
	ck_assert_int_eq(symlink(other, link), 0);
	g_autofree char *m1 = g_build_filename(ws, "marker", NULL);
	g_autofree char *m2 = g_build_filename(other, "marker", NULL);
	ck_assert(g_file_set_contents(m1, "workspace", -1, NULL));
	ck_assert(g_file_set_contents(m2, "other", -1, NULL));
	cordon_context *ctx = ctx_new();
	swap_race(ctx, e->tier, ws, link);
	swap_race(ctx, e->gvisor, ws, link);
	cordon_context_free(ctx);
	testutil_rmtree(dir);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- refusals: validated before any engine call ------------------------------------------ */

START_TEST(test_refusals)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;

	open_args a = { .image = "localhost:5000/cordon-busybox:ci" };
	ck_assert_int_lt(try_open(ctx, e->tier, &a, &sb, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "container_unpinned_image");

	a = (open_args){ .egress = CORDON_EGRESS_ALLOW };
	ck_assert_int_lt(try_open(ctx, e->tier, &a, &sb, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "container_network_forbidden");

	g_autofree char *nomem = g_strdup_printf("%s-nomem", e->engine);
	ck_assert_int_lt(try_open(ctx, nomem, NULL, &sb, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "container_no_memory_cap");

	/* none of them reached the engine */
	g_autofree char *ids = my_containers(e->engine);
	ck_assert_str_eq(ids, "");
	cordon_context_free(ctx);
}
END_TEST

/* ---- failure paths ---------------------------------------------------------------------------- */

/* A session helper that answers nonsense, or refuses the session, and then
 * goes on reading its stdin: the open fails with the reason at once, and
 * does not wait for a CLI that would never end. */
START_TEST(test_session_refused)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	gint64 t0 = g_get_monotonic_time();
	g_autofree char *bad = g_strdup_printf("%s-badhello", e->engine);
	ck_assert_int_lt(try_open(ctx, bad, NULL, &sb, &err), 0);
	ck_assert_msg(strstr(cordon_error_get_message(err), "malformed"), "%s",
		      cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "engine_failed");
	g_autofree char *refusing = g_strdup_printf("%s-refusing", e->engine);
	ck_assert_int_lt(try_open(ctx, refusing, NULL, &sb, &err), 0);
	ck_assert_msg(strstr(cordon_error_get_message(err), "unknown command session"), "%s",
		      cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	ck_assert_int_lt(g_get_monotonic_time() - t0, 60 * G_USEC_PER_SEC);
	g_autofree char *ids = my_containers(e->engine);
	ck_assert_str_eq(ids, "");
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_engine_missing_and_images)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	g_autofree char *noengine = g_strdup_printf("%s-noengine", e->engine);
	cordon_probe_report *rep = probe(ctx, noengine);
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_ptr_nonnull(strstr(cordon_probe_report_reason(rep), "not installed"));
	cordon_probe_report_free(rep);

	/* pull: never and the image absent: unavailable, said plainly */
	g_autofree char *never = g_strdup_printf("%s-never", e->engine);
	rep = probe(ctx, never);
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_ptr_nonnull(strstr(cordon_probe_report_reason(rep), "not present"));
	cordon_probe_report_free(rep);

	/* pull: missing with a digest the registry does not have (the tag's content
	 * has another digest): the pull by digest fails, nothing is started */
	g_autofree char *missing = g_strdup_printf("%s-missing", e->engine);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(try_open(ctx, missing, NULL, &sb, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "container_image_unavailable");
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

START_TEST(test_killed_from_outside)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, e->tier, NULL);
	g_autofree char *ids = my_containers(e->engine);
	ck_assert_msg(*ids && !strchr(ids, '\n'), "expected one container, got '%s'", ids);
	int st;
	g_free(engine_run(e->engine, &st, "kill", ids, NULL));
	ck_assert_int_eq(st, 0);
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	const char *argv[] = { "/bin/true", NULL };
	ck_assert_int_lt(cordon_sandbox_run(sb, argv, NULL, &r, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "container_gone");
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

static void engines_sh(const char *what)
{
	g_autofree char *script = testutil_src_path(".ci/engines.sh");
	const char *argv[] = { script, what, NULL };
	int st;
	g_free(host_cmd(&st, argv));
	ck_assert_msg(st == 0, "engines.sh %s failed", what);
}

/* The docker daemon: absent from the start, and stopped mid-session. */
START_TEST(test_docker_daemon_stopped)
{
	cordon_context *ctx = ctx_new();
	gint64 t0 = g_get_monotonic_time();
	cordon_probe_report *rep = probe(ctx, "docker-nodaemon");
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_str_eq(cordon_probe_report_reason(rep), "the docker daemon is not running");
	cordon_probe_report_free(rep);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 15 * G_USEC_PER_SEC);

	cordon_sandbox *sb = open_tier(ctx, "docker", NULL);
	engines_sh("stop-dockerd");
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	const char *argv[] = { "/bin/true", NULL };
	int rc = cordon_sandbox_run(sb, argv, NULL, &r, &err);
	engines_sh("start-dockerd");
	ck_assert_int_lt(rc, 0);
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "daemon is not running"));
	ck_assert_cordon_error(err, CORDON_ERROR_TRANSIENT, "engine_unavailable");
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left("docker");
}
END_TEST

/* ---- the session channel ------------------------------------------------------------ */

/* A run in the background, started once its first output arrived: from
 * then on it holds the session channel, if it took it. */
typedef struct bg_run {
	cordon_sandbox *sb;
	const char *line;
	GString *out;
	GMutex lock;
	GCond cond;
	bool started;
	GThread *thread;
} bg_run;

static int bg_output(void *user, int stream, const void *data, size_t len)
{
	bg_run *b = user;
	g_mutex_lock(&b->lock);
	if (stream == 1)
		g_string_append_len(b->out, data, (gssize)len);
	b->started = true;
	g_cond_signal(&b->cond);
	g_mutex_unlock(&b->lock);
	return 0;
}

static gpointer bg_main(gpointer data)
{
	bg_run *b = data;
	const char *argv[] = { "/bin/sh", "-c", b->line, NULL };
	cordon_result *r = NULL;
	ck_assert_int_eq(cordon_sandbox_stream(b->sb, argv, NULL, bg_output, b, &r, NULL), 0);
	ck_assert_int_eq(cordon_result_exit_code(r), 0);
	cordon_result_free(r);
	return NULL;
}

/* Starts line (which prints first) and returns once it printed. */
static void bg_start(bg_run *b, cordon_sandbox *sb, const char *line)
{
	*b = (bg_run){ .sb = sb, .line = line, .out = g_string_new(NULL) };
	g_mutex_init(&b->lock);
	g_cond_init(&b->cond);
	b->thread = g_thread_new("bg", bg_main, b);
	gint64 until = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
	g_mutex_lock(&b->lock);
	while (!b->started && g_cond_wait_until(&b->cond, &b->lock, until))
		;
	bool started = b->started;
	g_mutex_unlock(&b->lock);
	ck_assert_msg(started, "the background run printed nothing in 60 s");
}

/* Waits for it; its stdout (owned by the caller). */
static char *bg_finish(bg_run *b)
{
	g_thread_join(b->thread);
	g_mutex_clear(&b->lock);
	g_cond_clear(&b->cond);
	return g_string_free(b->out, FALSE);
}

static void file_round(cordon_sandbox *sb, const char *name);

/* Feeds len bytes to md5sum; asserts they arrived byte-exactly, and returns
 * whether they went over the channel (the work's parent is pid 1). */
static bool stdin_over_channel(cordon_sandbox *sb, size_t len)
{
	char *data = g_malloc(len);
	for (size_t k = 0; k < len; k++)
		data[k] = (char)(k * 31 + 7);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.stdin_data = data;
	o.stdin_len = len;
	cordon_result *r = run_opts(sb, "md5sum; echo $PPID", &o);
	g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_MD5, (guchar *)data, len);
	g_autofree char *want = g_strdup_printf("%s  -\n", sum);
	const char *got = out(r, 1);
	ck_assert_msg(g_str_has_prefix(got, want), "stdin of %zu bytes: %s", len, got);
	bool channel = strcmp(got + strlen(want), "1\n") == 0;
	cordon_result_free(r);
	g_free(data);
	return channel;
}

/* An unpooled sandbox's runs go to its container's pid 1 (the session helper,
 * over the attached CLI: no engine call), so pid 1 is the work's parent; a run
 * that comes while the channel is busy takes `engine exec` (another parent),
 * and both answer. */
static void session_channel(const engine_case *e, const char *tier)
{
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, tier, NULL);
	g_autofree char *ppid = sh_out(sb, "echo $PPID");
	ck_assert_str_eq(ppid, "1\n");
	bg_run b;
	bg_start(&b, sb, "echo held; sleep 2; echo bg $PPID");
	/* it outlasts the channel run, whose end kills pid 1's descendants only */
	g_autofree char *fg = sh_out(sb, "sleep 3; echo fg $PPID");
	g_autofree char *bg = bg_finish(&b);
	ck_assert_str_eq(bg, "held\nbg 1\n");
	ck_assert_msg(strncmp(fg, "fg ", 3) == 0 && strcmp(fg, "fg 1\n") != 0,
		      "the concurrent run did not go through exec: %s", fg);
	/* the channel again once it is free */
	g_autofree char *again = sh_out(sb, "echo $PPID");
	ck_assert_str_eq(again, "1\n");
	/* file operations over it, and an escape through a planted symlink refused */
	file_round(sb, "channel");
	g_free(sh_out(sb, "ln -s /etc /work/etc-link"));
	assert_path_escape(sb, "etc-link/passwd");
	/* stdin of several frames goes over the channel, byte-exactly; a very
	 * large one (it would wait in the container's memory) streams through exec */
	ck_assert(stdin_over_channel(sb, 200000));
	ck_assert_msg(!stdin_over_channel(sb, 9u << 20), "a 9 MiB stdin went over the channel");
	close_and_assert_killed(e->engine, sb);
	/* "very large" is relative to the container's memory limit (1/8 of it) */
	g_autofree char *small = g_strdup_printf("%s-smallmem", e->engine);
	sb = open_tier(ctx, small, NULL);
	ck_assert(stdin_over_channel(sb, 200000));
	ck_assert_msg(!stdin_over_channel(sb, 5u << 20),
		      "a 5 MiB stdin went over the channel of a 32 MiB container");
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}

/* ---- file operations over the session channel ----------------------------------- */

/* The engine calls a *-logged tier made, one line each (" ARGS...", so that
 * " exec " finds the subcommand first too). */
static char *calls_path(const char *engine)
{
	return g_strdup_printf("%s/%s-calls.log", wrap_dir, engine);
}

static void calls_reset(const char *engine)
{
	g_autofree char *path = calls_path(engine);
	ck_assert(g_file_set_contents(path, "", 0, NULL));
}

static int calls_count(const char *engine, const char *word)
{
	g_autofree char *path = calls_path(engine);
	g_autofree char *log = NULL;
	ck_assert(g_file_get_contents(path, &log, NULL, NULL));
	int n = 0;
	g_auto(GStrv) lines = g_strsplit(log, "\n", 0);
	for (size_t i = 0; lines[i]; i++)
		n += word ? strstr(lines[i], word) != NULL : lines[i][0] != '\0';
	return n;
}

/* write, read, glob and walk, checking what they give. */
static void file_round(cordon_sandbox *sb, const char *name)
{
	cordon_error *err = NULL;
	g_autofree char *path = g_strdup_printf("ops/%s.txt", name);
	int r = cordon_sandbox_write_file(sb, path, name, strlen(name), &err);
	ck_assert_msg(r == 0, "write %s: %s", path, err ? cordon_error_get_message(err) : "?");
	void *data = NULL;
	size_t len = 0;
	r = cordon_sandbox_read_file(sb, path, &data, &len, &err);
	ck_assert_msg(r == 0, "read %s: %s: %s", path, err ? cordon_error_get_code(err) : "?",
		      err ? cordon_error_get_message(err) : "?");
	ck_assert_uint_eq(len, strlen(name));
	ck_assert_int_eq(memcmp(data, name, len), 0);
	free(data);
	char **paths = NULL;
	g_autofree char *pattern = g_strdup_printf("ops/%s.*", name);
	ck_assert_int_eq(cordon_sandbox_glob(sb, pattern, &paths, &err), 1);
	ck_assert_str_eq(paths[0], path);
	cordon_strv_free(paths);
	ck_assert_int_ge(cordon_sandbox_walk(sb, "ops", &paths, &err), 1);
	bool seen = false;
	for (size_t i = 0; paths[i]; i++)
		seen = seen || strcmp(paths[i], path) == 0;
	ck_assert_msg(seen, "walk did not list %s", path);
	cordon_strv_free(paths);
}

/* File operations go to the session helper over the channel: the engine
 * (a wrapper that logs its calls) is not called at all. While a long run
 * holds the channel they take `engine exec` and still work, and a path
 * that escapes through a symlink planted in the container is refused both
 * ways, by the helper inside it. */
START_TEST(test_files_channel)
{
	const engine_case *e = &engines[_i];
	g_autofree char *tier = g_strdup_printf("%s-logged", e->engine);
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, tier, NULL);
	g_free(sh_out(sb, "ln -s /etc /work/etc-link && echo k > /work/kept"));

	calls_reset(e->engine);
	file_round(sb, "free");
	assert_path_escape(sb, "etc-link/passwd");
	cordon_error *err = NULL;
	void *data = NULL;
	size_t len = 0;
	ck_assert_int_lt(cordon_sandbox_read_file(sb, "missing", &data, &len, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "not_found");
	ck_assert_msg(calls_count(e->engine, NULL) == 0,
		      "file operations on a free channel called the %s engine", e->engine);

	bg_run b;
	bg_start(&b, sb, "echo held; sleep 4; echo bg");
	file_round(sb, "busy");
	assert_path_escape(sb, "etc-link/passwd");
	ck_assert_int_lt(cordon_sandbox_read_file(sb, "missing", &data, &len, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "not_found");
	int execs = calls_count(e->engine, " exec ");
	g_autofree char *bg = bg_finish(&b);
	ck_assert_str_eq(bg, "held\nbg\n");
	/* write, read, glob, walk, the two escapes and the missing file */
	ck_assert_msg(execs >= 7, "only %d %s exec calls while the channel was busy", execs,
		      e->engine);

	/* the channel again once it is free, and the run's files are there */
	calls_reset(e->engine);
	file_round(sb, "again");
	ck_assert_int_eq(cordon_sandbox_read_file(sb, "kept", &data, &len, &err), 0);
	ck_assert_uint_eq(len, 2);
	free(data);
	ck_assert_int_eq(calls_count(e->engine, NULL), 0);
	close_and_assert_killed(e->engine, sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

START_TEST(test_session_channel) { session_channel(&engines[_i], engines[_i].tier); }
END_TEST

/* gVisor too: its `runsc exec` processes are no children of pid 1 either, so
 * the end of a channel run (which kills pid 1's descendants) spares them. */
START_TEST(test_session_channel_gvisor) { session_channel(&engines[_i], engines[_i].gvisor); }
END_TEST

/* close does not wait for EOF alone: a child the host forked (without exec)
 * holds a copy of the channel's write end, and close still ends the session
 * at once. */
START_TEST(test_close_with_forked_child)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_sandbox *sb = open_tier(ctx, e->tier, NULL);
	g_autofree char *id = sh_out(sb, "hostname");
	g_strstrip(id);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		sleep(60);
		_exit(0);
	}
	gint64 t0 = g_get_monotonic_time();
	cordon_sandbox_close(sb);
	gint64 took = g_get_monotonic_time() - t0;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_msg(took < 5 * G_USEC_PER_SEC, "close took %" G_GINT64_FORMAT " us", took);
	g_autofree char *running = engine_run(e->engine, NULL, "ps", "-q", "--no-trunc", NULL);
	ck_assert_msg(!strstr(running, id), "%s container %s still running after close", e->engine,
		      id);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* A host process that dies without closing anything: its attached CLIs read
 * EOF, the session helpers exit and --rm removes the containers, with no gc. */
START_TEST(test_host_died)
{
	const engine_case *e = &engines[_i];
	int p[2], go[2];
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		close(go[1]);
		cordon_context *ctx = ctx_new();
		cordon_sandbox *sb = open_tier(ctx, e->tier, NULL);
		g_autofree char *id = sh_out(sb, "hostname");
		if (write(p[1], id, strlen(id)) < 0)
			_exit(1);
		close(p[1]);
		char c;
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		raise(SIGKILL);
	}
	close(p[1]);
	close(go[0]);
	char id[128] = "";
	size_t got = 0;
	ssize_t n;
	while ((n = read(p[0], id + got, sizeof(id) - 1 - got)) > 0)
		got += (size_t)n;
	close(p[0]);
	g_strstrip(id);
	ck_assert_msg(*id, "the child opened no sandbox");
	/* the container runs while its host lives (the id is the container's hostname); asked
	 * for a few seconds, since an engine just restarted by an earlier case (the daemon
	 * failure paths) may not answer `ps` at once: one empty answer is not "not running" */
	bool running = false;
	for (int i = 0; i < 50 && !running; i++) {
		int status = -1;
		g_autofree char *ps = engine_run(e->engine, &status, "ps", "-q", "--no-trunc",
						 NULL);
		running = status == 0 && ps && strstr(ps, id);
		if (!running)
			g_usleep(100 * 1000);
	}
	ck_assert_msg(running, "%s container %s is not running", e->engine, id);
	close(go[1]); /* the child dies now, closing nothing itself */
	int st;
	waitpid(pid, &st, 0);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	bool gone = false;
	for (int i = 0; i < 300 && !gone; i++) {
		int status = -1; /* an engine that did not answer says nothing about the container */
		g_autofree char *all = engine_run(e->engine, &status, "ps", "-a", "-q",
						  "--no-trunc", NULL);
		gone = status == 0 && !strstr(all, id);
		if (!gone)
			g_usleep(100 * 1000);
	}
	ck_assert_msg(gone, "%s container %s survived its host", e->engine, id);
}
END_TEST

/* ---- pools ---------------------------------------------------------------------------------- */

static bool wait_for_containers(const char *engine, size_t want, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		g_autofree char *ids = my_containers(engine);
		g_auto(GStrv) lines = g_strsplit(ids, "\n", -1);
		if (*ids && g_strv_length(lines) >= want)
			return true;
		g_usleep(100 * 1000);
	}
	return false;
}

/* close ends every process of the session container before it returns (EOF
 * on the session channel: pid 1 exits and the attached CLI removes the
 * container; or, when the channel failed, a SIGKILL of pid 1 through a pidfd
 * or one engine kill, the engine's --rm removing it); cordon_context_free
 * removes whatever is left (checked by the callers, without waiting). */
static void close_and_assert_killed(const char *engine, cordon_sandbox *sb)
{
	g_autofree char *id = sh_out(sb, "hostname");
	g_strstrip(id);
	cordon_sandbox_close(sb);
	/* no waiting: gone, or stopped with its --rm removal under way */
	int status = 0;
	g_autofree char *state = engine_run(engine, &status, "inspect", "--format",
					    "{{.State.Running}}", id, NULL);
	ck_assert_msg(status != 0 || strncmp(state, "false", 5) == 0,
		      "%s container %s still running after close: %s", engine, id, state);
	g_autofree char *running = engine_run(engine, NULL, "ps", "-q", "--no-trunc", NULL);
	ck_assert_msg(!strstr(running, id), "%s container %s still running after close", engine,
		      id);
}

START_TEST(test_pool)
{
	cordon_context *ctx = ctx_new();
	/* the first open starts the filler */
	cordon_sandbox *first = open_tier(ctx, "podman-pool", NULL);
	ck_assert_msg(wait_for_containers("podman", 3, 60), "the pool did not fill");
	gint64 t0 = g_get_monotonic_time();
	cordon_sandbox *a = open_tier(ctx, "podman-pool", NULL);
	gint64 took = g_get_monotonic_time() - t0;
	/* a pooled open only takes a ready container (the probe may be cached) */
	ck_assert_msg(took < 3 * G_USEC_PER_SEC, "pooled open took %" G_GINT64_FORMAT " us", took);
	cordon_sandbox *b = open_tier(ctx, "podman-pool", NULL);
	g_autofree char *ha = sh_out(a, "hostname");
	g_autofree char *hb = sh_out(b, "hostname");
	ck_assert_str_ne(ha, hb);
	/* a pooled container came with its session channel: runs go to pid 1 */
	g_autofree char *ppid = sh_out(a, "echo $PPID");
	ck_assert_str_eq(ppid, "1\n");
	/* a used container is never handed to another sandbox */
	g_free(sh_out(a, "echo used > /work/marker"));
	cordon_sandbox_close(a);
	cordon_sandbox *c = open_tier(ctx, "podman-pool", NULL);
	g_autofree char *hc = sh_out(c, "hostname; ls /work");
	ck_assert_ptr_null(strstr(hc, "marker"));
	ck_assert_ptr_null(strstr(hc, ha));
	close_and_assert_killed("podman", b);
	cordon_sandbox_close(c);
	cordon_sandbox_close(first);
	/* the ready ones and what --rm has not removed yet go with the context */
	cordon_context_free(ctx);
	g_autofree char *left = my_containers("podman");
	ck_assert_msg(!*left, "containers left after cordon_context_free: %s", left);
}
END_TEST

/* ---- gc ---------------------------------------------------------------------------------- */

static int driver_gc(cordon_context *ctx, const char *tier)
{
	tier_runtime *t = context_find_tier(ctx, tier);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(t->driver->ops.gc);
	struct cordon_plugin_error perr = { 0 };
	int r = t->driver->ops.gc(t->state, &perr);
	ck_assert_msg(r >= 0, "gc: %s", perr.err ? perr.err->message : "?");
	return r;
}

START_TEST(test_gc)
{
	const engine_case *e = &engines[_i];
	/* a container left by a crashed host: cordon's labels, an owner long gone */
	g_autofree char *dead = g_strdup_printf("cordon-test-dead-%d", (int)getpid());
	int st;
	g_free(engine_run(e->engine, &st, "run", "-d", "--rm", "--name", dead, "--network", "none",
			  "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "--label",
			  "cordon.managed=1", "--label", "cordon.owner=gone:1:1", image_ref,
			  "sleep", "600", NULL));
	ck_assert_int_eq(st, 0);
	/* one of a host in another pid namespace sharing the engine: its pid is not ours to
	 * read, so it is not judged (the label used to carry no namespace: our /proc decided) */
	g_autofree char *me = my_owner();
	char boot[40];
	unsigned long ns;
	ck_assert_int_eq(sscanf(me, "%32[0-9a-f]-%lu-", boot, &ns), 2);
	g_autofree char *foreign = g_strdup_printf("cordon-test-foreign-%d", (int)getpid());
	g_autofree char *foreign_label = g_strdup_printf("cordon.owner=%s-%lu-1-1", boot, ns + 1);
	g_free(engine_run(e->engine, &st, "run", "-d", "--rm", "--name", foreign, "--network",
			  "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
			  "--label", "cordon.managed=1", "--label", foreign_label, image_ref,
			  "sleep", "600", NULL));
	ck_assert_int_eq(st, 0);
	/* the relay directory a gVisor container of it would have had (named by the
	 * container's name): it goes with the container, whatever the tier */
	g_autofree char *relay = g_strdup_printf("/run/cordon/oci/%s.relay", dead);
	ck_assert_int_eq(g_mkdir_with_parents(relay, 0700), 0);
	g_autofree char *relay_sock = g_build_filename(relay, "0", NULL);
	ck_assert(g_file_set_contents(relay_sock, "", 0, NULL));
	cordon_context *ctx = ctx_new();
	cordon_sandbox *live = open_tier(ctx, e->tier, NULL);
	ck_assert_int_ge(driver_gc(ctx, e->tier), 1);
	ck_assert_msg(access(relay, F_OK) != 0, "gc left %s", relay);
	g_autofree char *foreign_filter = g_strdup_printf("name=%s", foreign);
	g_autofree char *kept = g_strstrip(
		engine_run(e->engine, NULL, "ps", "-a", "-q", "--filter", foreign_filter, NULL));
	ck_assert_msg(*kept, "gc removed the container of another pid namespace's host");
	g_free(engine_run(e->engine, NULL, "rm", "-f", foreign, NULL));
	g_autofree char *filter = g_strdup_printf("name=%s", dead);
	g_autofree char *still = g_strstrip(
		engine_run(e->engine, NULL, "ps", "-a", "-q", "--filter", filter, NULL));
	ck_assert_str_eq(still, "");
	/* a live sandbox's container is not garbage */
	g_autofree char *mine = my_containers(e->engine);
	ck_assert_str_ne(mine, "");
	g_autofree char *ok = sh_out(live, "echo alive");
	ck_assert_str_eq(ok, "alive\n");
	cordon_sandbox_close(live);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- secrets stay out of engine argv and the engine's environment -------------------------- */

static bool any_cmdline_contains(const char *needle)
{
	GDir *d = g_dir_open("/proc", 0, NULL);
	bool found = false;
	for (const char *n; d && !found && (n = g_dir_read_name(d));) {
		if (!g_ascii_isdigit(n[0]))
			continue;
		g_autofree char *p = g_strdup_printf("/proc/%s/cmdline", n);
		g_autofree char *c = NULL;
		gsize len = 0;
		if (!g_file_get_contents(p, &c, &len, NULL))
			continue;
		for (gsize i = 0; i < len; i++)
			if (c[i] == '\0')
				c[i] = ' ';
		found = strstr(c, needle) != NULL;
	}
	if (d)
		g_dir_close(d);
	return found;
}

START_TEST(test_secrets_not_in_argv)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	open_args a = { .grant = true };
	cordon_sandbox *sb = open_tier(ctx, e->tier, &a);
	const char *argv[] = { "/bin/sh", "-c", "echo $TOKEN; sleep 3", NULL };
	cordon_serve *s = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, 0, NULL, &s, &err), 0);
	bool seen_running = false;
	for (int i = 0; i < 30 && !seen_running; i++) {
		g_usleep(100 * 1000);
		g_autofree char *o = cordon_serve_output(s);
		seen_running = strstr(o, GRANT_SECRET) != NULL;
	}
	ck_assert_msg(seen_running, "the served work did not start");
	/* the grant reached the work, yet no process on the host carries it in argv */
	ck_assert(!any_cmdline_contains(GRANT_SECRET));
	ck_assert(!any_cmdline_contains(HOST_SECRET));
	cordon_serve_free(s);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- serve: a published port on the host's loopback ----------------------------------------- */

/* A connection to a serve's address, "127.0.0.1:PORT" or "unix:/path"; -1 if refused. */
static int connect_address(const char *address)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	if (g_str_has_prefix(address, "unix:")) {
		struct sockaddr_un *u = (struct sockaddr_un *)&ss;
		u->sun_family = AF_UNIX;
		if (g_strlcpy(u->sun_path, address + 5, sizeof(u->sun_path)) >= sizeof(u->sun_path))
			return -1;
		len = sizeof(*u);
	} else {
		const char *colon = strrchr(address, ':');
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)atoi(colon + 1));
		g_autofree char *host = g_strndup(address, colon - address);
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return -1;
		len = sizeof(*sin);
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 5, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A bare HTTP/1.0 GET to a serve's address (no GIO in the build). */
static char *http_get(const char *address, const char *path)
{
	int fd = connect_address(address);
	if (fd < 0)
		return NULL;
	g_autofree char *req = g_strdup_printf("GET %s HTTP/1.0\r\n\r\n", path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return NULL;
	}
	GString *resp = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		g_string_append_len(resp, buf, n);
	close(fd);
	return g_string_free(resp, FALSE);
}

START_TEST(test_serve_published)
{
	const engine_case *e = &engines[_i];
	g_autofree char *tier = g_strdup_printf("%s-serve", e->engine);
	cordon_context *ctx = ctx_new();
	cordon_error *err = NULL;

	/* egress denied: no network, so nothing can be published; serve itself
	 * fails, at once, with the reason (not a later serve_wait) */
	cordon_sandbox *sb = open_tier(ctx, tier, NULL);
	const char *httpd[] = { "httpd", "-f", "-p", "8080", "-h", "/work", NULL };
	cordon_serve *s = NULL;
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_lt(cordon_sandbox_serve(sb, httpd, 8080, NULL, &s, &err), 0);
	ck_assert_msg(g_get_monotonic_time() - t0 < 10 * G_USEC_PER_SEC, "serve failed late");
	ck_assert_ptr_null(s);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "container_publish_invalid");
	cordon_sandbox_close(sb);

	/* governed egress: the tier's named network, the port on 127.0.0.1 only */
	open_args a = { .egress = CORDON_EGRESS_GOVERNED };
	sb = open_tier(ctx, tier, &a);
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "index.html", "served by cordon", 16, &err),
			 0);
	ck_assert_int_eq(cordon_sandbox_serve(sb, httpd, 8080, NULL, &s, &err), 0);
	/* serve returned once the tier reported the engine's port */
	g_autofree char *addr = cordon_serve_address(s);
	ck_assert_msg(addr, "no address for the published port: %s", cordon_serve_output(s));
	ck_assert_msg(g_str_has_prefix(addr, "127.0.0.1:"), "not loopback: %s", addr);
	g_autofree char *body = NULL;
	for (int i = 0; i < 50 && !(body && strstr(body, "served by cordon")); i++) {
		g_free(body);
		body = http_get(addr, "/index.html");
		if (!body || !strstr(body, "served by cordon"))
			g_usleep(100 * 1000);
	}
	ck_assert_msg(body && strstr(body, "served by cordon"), "GET %s: %s", addr,
		      body ? body : "(no answer)");
	ck_assert(cordon_serve_running(s));
	ck_assert_int_eq(cordon_serve_stop(s, &err), 0);
	ck_assert(!cordon_serve_running(s));
	cordon_serve_free(s);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* serve on a unix socket (issue 14, item 2), runc as root: the core's forwarder, each
 * connection a socket made in the container's network namespace, so no network and no
 * publish are needed and no host port exists; the socket and its 0700 directory go with the
 * server. gVisor's Sentry has its own network stack: refused there, saying why. */
START_TEST(test_serve_unix)
{
	const engine_case *e = &engines[_i];
	cordon_context *ctx = ctx_new();
	cordon_error *err = NULL;
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.flags = CORDON_RUN_SERVE_UNIX;
	const char *httpd[] = { "httpd", "-f", "-p", "8080", "-h", "/work", NULL };
	cordon_serve *s = NULL;

	cordon_sandbox *sb = open_tier(ctx, e->engine, NULL); /* egress denied: no network */
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "index.html", "served on unix", 14, &err),
			 0);
	ck_assert_msg(cordon_sandbox_serve(sb, httpd, 8080, &o, &s, &err) == 0, "serve: %s",
		      err ? cordon_error_get_message(err) : "?");
	g_autofree char *addr = cordon_serve_address(s);
	const char *path = testutil_assert_unix_listener(addr);
	for (int i = 0; i < 3; i++) {
		g_autofree char *body = http_get(addr, "/index.html");
		ck_assert_msg(body && strstr(body, "200 OK") && strstr(body, "served on unix"),
			      "GET %d on %s: %s", i, addr, body ? body : "(no answer)");
	}
	/* beside the server, the sandbox goes on */
	g_autofree char *beside = sh_out(sb, "echo beside");
	ck_assert_str_eq(beside, "beside\n");
	ck_assert_int_eq(cordon_serve_stop(s, &err), 0);
	cordon_serve_free(s);
	s = NULL;
	g_autofree char *dir = g_path_get_dirname(path);
	struct stat st;
	ck_assert_int_lt(lstat(path, &st), 0);
	ck_assert_int_lt(stat(dir, &st), 0);
	cordon_sandbox_close(sb);

	g_autofree char *gvisor = g_strdup_printf("%s-gvisor", e->engine);
	sb = open_tier(ctx, gvisor, NULL);
	ck_assert_int_lt(cordon_sandbox_serve(sb, httpd, 8080, &o, &s, &err), 0);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(cordon_error_get_message(err), "gVisor"), "%s",
		      cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "unsupported");
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- governed egress and services through cordon's proxy (issue 14) ------------------- */

static void add_tier(GString *p, const char *name, const char *engine, const char *extra,
		     bool limits);

/* The relay directories gVisor's containers had (plugins/oci/relay.c): none after close. */
static unsigned count_relay_dirs(void)
{
	unsigned n = 0;
	GDir *d = g_dir_open("/run/cordon/oci", 0, NULL);
	for (const char *name; d && (name = g_dir_read_name(d));)
		n += g_str_has_suffix(name, ".relay");
	if (d)
		g_dir_close(d);
	return n;
}

/* gVisor with host-uds=open: podman's per container, docker's runsc-uds (engines.sh). */
static const char *gvisor_uds_keys(const engine_case *e)
{
	return strcmp(e->engine, "podman") == 0
		       ? "    runtime: runsc\n"
			 "    runtime_flags: [network=none, oci-seccomp, host-uds=open]\n"
		       : "    runtime: runsc-uds\n";
}

static void add_egress_tiers(GString *p, const engine_case *e, const char *rules)
{
	bool podman = strcmp(e->engine, "podman") == 0;
	g_autofree char *runc = g_strdup_printf("%s-egress", e->engine);
	g_autofree char *runsc = g_strdup_printf("%s-gvisor-egress", e->engine);
	g_autofree char *nouds = g_strdup_printf("%s-gvisor-nouds-egress", e->engine);
	g_autofree char *extra = g_strdup_printf("%s%s", podman ? "    runtime: runc\n" : "",
						 rules);
	add_tier(p, runc, e->engine, extra, true);
	g_autofree char *gextra = g_strdup_printf("%s%s", gvisor_uds_keys(e), rules);
	add_tier(p, runsc, e->engine, gextra, true);
	/* and without it: no relay, so neither governed egress nor services */
	g_autofree char *nextra = g_strdup_printf(
		"    runtime: runsc\n%s%s",
		podman ? "    runtime_flags: [network=none, oci-seccomp]\n" : "", rules);
	add_tier(p, nouds, e->engine, nextra, true);
	g_string_append_printf(
		p, "trust:\n  untrusted: {require: container, relax: true, tiers: [%s, %s, %s]}\n",
		runc, runsc, nouds);
}

/* netcheck's open: untrusted, as the other cases. */
static cordon_sandbox *open_for_netcheck(cordon_context *ctx, const char *tier,
					 cordon_egress egress, bool grant)
{
	open_args a = { .egress = egress, .grant = grant };
	return open_tier(ctx, tier, &a);
}

/* The checks of tests/netcheck.c on one tier, and no relay directory left after them. */
static void egress_checks(const netcheck_egress_env *g, cordon_context *ctx, const char *tier)
{
	unsigned relays = count_relay_dirs();
	netcheck_egress(g, ctx, tier, open_for_netcheck);
	ck_assert_uint_eq(count_relay_dirs(), relays);
}

static void services_checks(const netcheck_service_env *sv, cordon_context *ctx, const char *tier)
{
	unsigned relays = count_relay_dirs();
	netcheck_services(sv, ctx, tier, open_for_netcheck);
	ck_assert_uint_eq(count_relay_dirs(), relays);
}

/* Governed egress on runc (docker, rootful podman: a listener made from the host inside the
 * container's network namespace) and on gVisor given host-uds=open (podman's runtime_flags,
 * docker's runsc-uds: the agent's relay inside to a host unix socket). gVisor without it
 * declares no governed egress and is refused. */
START_TEST(test_governed_egress)
{
	const engine_case *e = &engines[_i];
	netcheck_egress_env g = { 0 };
	netcheck_egress_start(&g);
	GString *p = g_string_new(NULL);
	g_string_append_printf(
		p, "cordon: 1\naudit: {path: %s}\nplugins: {dir: %s, load: [%s]}\ntiers:\n",
		g.audit, plugin_dir, e->engine);
	g_autofree char *rules = netcheck_egress_rules(&g);
	add_egress_tiers(p, e, rules);
	g_autofree char *text = g_string_free(p, FALSE);
	cordon_context *ctx = testutil_context_from_text(text, "egress.yaml");
	g_autofree char *tier = g_strdup_printf("%s-egress", e->engine);
	g_autofree char *gtier = g_strdup_printf("%s-gvisor-egress", e->engine);
	g_autofree char *nouds = g_strdup_printf("%s-gvisor-nouds-egress", e->engine);
	egress_checks(&g, ctx, tier);
	egress_checks(&g, ctx, gtier);
	/* gVisor without host-uds has no relay: its rules would go unenforced, so it is
	 * refused */
	open_args a = { .egress = CORDON_EGRESS_GOVERNED };
	cordon_sandbox *gsb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(try_open(ctx, nouds, &a, &gsb, &err), 0);
	ck_assert_msg(
		strstr(cordon_error_get_message(err), "cannot enforce the tier's egress rules"),
		"%s", cordon_error_get_message(err));
	cordon_error_free(err);
	cordon_context_free(ctx);
	netcheck_egress_stop(&g);
	assert_nothing_left(e->engine);
}
END_TEST

/* A policy's services on runc: the work calls its plain-HTTP base URL on its own loopback,
 * cordon-proxy (on the host) adds the credential and verifies the upstream's certificate;
 * the secret is nowhere in the container (its processes' environments and command lines,
 * every file), while a decoy granted into its environment is found by the same search.
 * The same on gVisor given host-uds=open (the agent's relay); without it gVisor cannot
 * carry services and is refused. */
START_TEST(test_services)
{
	const engine_case *e = &engines[_i];
	netcheck_service_env sv = { 0 };
	netcheck_service_start(&sv);
	GString *p = g_string_new(NULL);
	g_string_append_printf(p, "cordon: 1\nplugins: {dir: %s, load: [%s]}\ntiers:\n", plugin_dir,
			       e->engine);
	add_egress_tiers(p, e, "");
	g_autofree char *svc = netcheck_service_policy(&sv);
	g_string_append(p, svc);
	g_autofree char *text = g_string_free(p, FALSE);
	cordon_context *ctx = testutil_context_from_text(text, "services.yaml");
	g_autofree char *tier = g_strdup_printf("%s-egress", e->engine);
	g_autofree char *gtier = g_strdup_printf("%s-gvisor-egress", e->engine);
	g_autofree char *nouds = g_strdup_printf("%s-gvisor-nouds-egress", e->engine);
	services_checks(&sv, ctx, tier);
	services_checks(&sv, ctx, gtier);
	cordon_sandbox *gsb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(try_open(ctx, nouds, NULL, &gsb, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "services_unsupported");
	cordon_context_free(ctx);
	netcheck_service_stop(&sv);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- the engine calls of `cordon run` (issue 16) -------------------------------------- */

/* Runs the cordon CLI with a clean environment (root's probe cache is /run/cordon/probes)
 * and stdin /dev/null: nothing to stream, so a run takes the session channel (a stdin to
 * stream goes through `engine exec`, session.c). */
static int cordon_cli(const char *const *args)
{
	g_autofree char *cordon = testutil_build_path("cordon");
	g_autoptr(GPtrArray) a = g_ptr_array_new();
	g_ptr_array_add(a, cordon);
	for (size_t i = 0; args[i]; i++)
		g_ptr_array_add(a, (gpointer)args[i]);
	g_ptr_array_add(a, NULL);
	const char *env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			      "HOME=/root", "LC_ALL=C", NULL };
	int st = -1;
	if (!g_spawn_sync(NULL, (char **)a->pdata, (char **)env,
			  G_SPAWN_STDIN_FROM_DEV_NULL | G_SPAWN_STDOUT_TO_DEV_NULL |
				  G_SPAWN_STDERR_TO_DEV_NULL,
			  NULL, NULL, NULL, NULL, &st, NULL))
		return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static bool write_wrapper(const char *engine, const char *real);
static void add_tier(GString *p, const char *name, const char *engine, const char *extra,
		     bool limits);

/* A policy with one tier, "cli-calls", whose engine is the logging wrapper `wrapper`. */
static char *cli_policy(const engine_case *e, const char *wrapper)
{
	GString *p = g_string_new(NULL);
	g_string_append_printf(p, "cordon: 1\nplugins: {dir: %s, load: [%s]}\ntiers:\n", plugin_dir,
			       e->engine);
	g_autofree char *extra = g_strdup_printf(
		"%s    engine: %s/%s\n",
		strcmp(e->engine, "podman") == 0 ? "    runtime: runc\n" : "", wrap_dir, wrapper);
	add_tier(p, "cli-calls", e->engine, extra, true);
	g_string_append(
		p, "trust:\n  untrusted: {require: container, relax: true, tiers: [cli-calls]}\n");
	g_autofree char *text = g_string_free(p, FALSE);
	char *path = g_strdup_printf("%s/%s.yaml", wrap_dir, wrapper);
	ck_assert(g_file_set_contents(path, text, -1, NULL));
	return path;
}

/* `cordon run` makes one engine call, `run`, as the raw command does: the probe's answer is
 * kept across processes (the probe cache), the image is checked by the run itself, and a
 * session its CLI ended cleanly is not swept for (`ps -a`). A changed engine binary (a
 * dependency the probe named) makes the next run probe again. */
START_TEST(test_cli_engine_calls)
{
	const engine_case *e = &engines[_i];
	g_autofree char *wrapper = g_strdup_printf("%s-cli", e->engine);
	ck_assert(write_wrapper(wrapper, engine_bin(e->engine)));
	g_autofree char *pol = cli_policy(e, wrapper);
	const char *run[] = { "run",       "--policy", pol,         "--trust",
			      "untrusted", "--",       "/bin/true", NULL };

	/* a new policy: nothing kept, so this one probes */
	ck_assert_int_eq(cordon_cli(run), 0);
	ck_assert_int_eq(calls_count(wrapper, " version "), 1);
	ck_assert_int_eq(calls_count(wrapper, " run -i "), 1);
	ck_assert_int_eq(calls_count(wrapper, " image inspect "), 0);
	ck_assert_int_eq(calls_count(wrapper, " ps "), 0);

	for (int i = 0; i < 2; i++) {
		calls_reset(wrapper);
		ck_assert_int_eq(cordon_cli(run), 0);
		g_autofree char *log_path = calls_path(wrapper);
		g_autofree char *log = NULL;
		ck_assert(g_file_get_contents(log_path, &log, NULL, NULL));
		ck_assert_msg(calls_count(wrapper, NULL) == 1 &&
				      calls_count(wrapper, " run -i ") == 1,
			      "a second cordon run made other %s calls:\n%s", e->engine, log);
	}

	/* the engine binary changed (a new file): the kept answer no longer holds */
	ck_assert(write_wrapper(wrapper, engine_bin(e->engine)));
	ck_assert_int_eq(cordon_cli(run), 0);
	ck_assert_int_eq(calls_count(wrapper, " version "), 1);
	/* and `probe --fresh` asks the engine whatever is kept */
	calls_reset(wrapper);
	const char *fresh[] = { "probe", "--fresh", "--policy", pol, NULL };
	ck_assert_int_eq(cordon_cli(fresh), 0);
	ck_assert_int_eq(calls_count(wrapper, " version "), 1);

	/* every container those runs started is gone, without a sweep */
	g_autofree char *ids = engine_run(e->engine, NULL, "ps", "-a", "-q", "--filter",
					  "label=cordon.tier=cli-calls", NULL);
	ck_assert_str_eq(g_strstrip(ids), "");
}
END_TEST

/* Governed egress on gVisor from the command line, run after run: a run whose probe is
 * answered from the probe cache (another process's) still knows that docker's runtime
 * gives runsc --host-uds, which the relay needs (the probe learnt it from `info`, and a
 * cached answer runs no probe here), so the second and third runs reach the allowed host
 * as the first did. */
START_TEST(test_cli_governed_gvisor)
{
	const engine_case *e = &engines[_i];
	netcheck_egress_env g = { 0 };
	netcheck_egress_start(&g);
	GString *p = g_string_new(NULL);
	g_string_append_printf(p, "cordon: 1\nplugins: {dir: %s, load: [%s]}\ntiers:\n", plugin_dir,
			       e->engine);
	g_autofree char *rules = netcheck_egress_rules(&g);
	g_autofree char *extra = g_strdup_printf("%s%s", gvisor_uds_keys(e), rules);
	add_tier(p, "cli-gvisor-egress", e->engine, extra, true);
	g_string_append(p, "trust:\n  untrusted: {require: container, relax: true, tiers: "
			   "[cli-gvisor-egress]}\n");
	g_autofree char *text = g_string_free(p, FALSE);
	g_autofree char *pol = g_strdup_printf("%s/gvisor-egress-%s.yaml", wrap_dir, e->engine);
	ck_assert(g_file_set_contents(pol, text, -1, NULL));
	g_autofree char *url = g_strdup_printf("http://localhost:%u/", (unsigned)g.http);
	const char *run[] = { "run",      "--policy",  pol,  "--trust", "untrusted",
			      "--egress", "governed",  "--", "wget",    "-q",
			      "-O",       "/dev/null", url,  NULL };
	for (int i = 0; i < 3; i++)
		ck_assert_msg(cordon_cli(run) == 0, "run %d of 3 did not reach %s", i + 1, url);
	netcheck_egress_stop(&g);
	assert_nothing_left(e->engine);
}
END_TEST

/* `pull: never` and an image the engine lacks: the start itself (`run --pull never`)
 * finds out, and its answer is the same refusal the probe's `image inspect` gave, with no
 * inspect and no pull. */
START_TEST(test_run_says_no_image)
{
	const engine_case *e = &engines[_i];
	g_autofree char *tier = g_strdup_printf("%s-never-logged", e->engine);
	g_autofree char *wrapper = g_strdup_printf("%s-nlog", e->engine);
	cordon_context *ctx = ctx_new();
	cordon_probe_report *rep = probe(ctx, tier);
	ck_assert(cordon_probe_report_available(rep)); /* the tier's own image is there */
	cordon_probe_report_free(rep);
	calls_reset(wrapper);
	g_autofree char *repo = g_strndup(image_ref, strchr(image_ref, '@') - image_ref);
	g_autofree char *absent = g_strdup_printf("%s@sha256:%064d", repo, 0);
	open_args a = { .image = absent };
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(try_open(ctx, tier, &a, &sb, &err), 0);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(cordon_error_get_message(err), "pull: never"), "%s",
		      cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "container_image_missing");
	ck_assert_int_eq(calls_count(wrapper, " run -i "), 1);
	ck_assert_int_eq(calls_count(wrapper, " image inspect "), 0);
	ck_assert_int_eq(calls_count(wrapper, " pull "), 0);
	cordon_context_free(ctx);
	assert_nothing_left(e->engine);
}
END_TEST

/* ---- cordon image pin ------------------------------------------------------------------- */

START_TEST(test_image_pin)
{
	const engine_case *e = &engines[_i];
	g_autofree char *cordon = testutil_build_path("cordon");
	g_autofree char *repo = g_strndup(image_ref, strchr(image_ref, '@') - image_ref);
	/* a tag of our own on the pinned image */
	g_autofree char *tag = g_strdup_printf("%s:pin-test-%d", repo, (int)getpid());
	int st;
	g_free(engine_run(e->engine, &st, "tag", image_ref, tag, NULL));
	ck_assert_int_eq(st, 0);
	/* The engine may know the image by several digests (docker: podman's push and its own;
	 * podman: the pull and the local build's). --all lists them; the registry's is among. */
	const char *by_tag_all[] = { cordon,  "image",    "pin",     tag,
				     "--all", "--engine", e->engine, NULL };
	g_autofree char *pins = host_cmd(&st, by_tag_all);
	int st_one;
	const char *by_tag[] = { cordon, "image", "pin", tag, "--engine", e->engine, NULL };
	g_autofree char *one = host_cmd(&st_one, by_tag);
	/* only that name goes (podman's untag without a name would drop them all) */
	if (strcmp(e->engine, "podman") == 0)
		g_free(engine_run(e->engine, NULL, "untag", tag, tag, NULL));
	else
		g_free(engine_run(e->engine, NULL, "rmi", tag, NULL));
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(st_one, 0);
	g_auto(GStrv) lines = g_strsplit(g_strstrip(pins), "\n", -1);
	bool found = false, one_found = false;
	g_strstrip(one);
	ck_assert_msg(*one && !strchr(one, '\n'), "not one pinned reference: '%s'", one);
	for (size_t i = 0; lines[i]; i++) {
		ck_assert_msg(g_str_has_prefix(lines[i], repo) && strstr(lines[i], "@sha256:"),
			      "not a pinned reference: %s", lines[i]);
		found |= strcmp(lines[i], image_ref) == 0;
		one_found |= strcmp(lines[i], one) == 0;
	}
	ck_assert_msg(found, "the registry's digest is not among '%s'", pins);
	ck_assert_msg(one_found, "'%s' (without --all) is not among '%s'", one, pins);
	const char *pinned[] = { cordon, "image", "pin", image_ref, "--engine", e->engine, NULL };
	g_autofree char *same = host_cmd(&st, pinned);
	ck_assert_int_eq(st, 0);
	ck_assert_str_eq(g_strstrip(same), image_ref);
	const char *absent[] = { cordon,     "image",   "pin", "cordon-no-such-image:1",
				 "--engine", e->engine, NULL };
	g_free(host_cmd(&st, absent));
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 203); /* could not run (cordon(1)) */
}
END_TEST

/* ---- setup --------------------------------------------------------------------------------- */

static void add_tier(GString *p, const char *name, const char *engine, const char *extra,
		     bool limits)
{
	g_autofree char *helper = testutil_build_path("agent/cordon-agent");
	g_string_append_printf(p, "  %s:\n    driver: %s\n    helper: %s\n", name, engine, helper);
	if (strcmp(engine, "podman") == 0)
		g_string_append(p, "    cgroup_manager: cgroupfs\n");
	/* podman here cannot raise nofile/nproc: stay within the host's limits;
	 * under gVisor nproc is the pids limit (the plugin sets it) */
	g_string_append_printf(p, "    ulimits: [nofile=1024:1024%s]\n",
			       strstr(extra, "runsc") ? "" : ", nproc=4096:4096");
	if (!strstr(extra, "image:"))
		g_string_append_printf(p, "    image: \"%s\"\n", image_ref);
	g_string_append(p, extra);
	if (limits)
		g_string_append(p, "    limits: {memory: 128MiB, pids: 64, wall: 60s}\n");
}

static char *build_policy(void)
{
	g_autofree char *repo = g_strndup(image_ref, strchr(image_ref, '@') - image_ref);
	g_autofree char *absent = g_strdup_printf("    image: \"%s@sha256:%064d\"\n", repo, 0);
	g_autofree char *absent_never = g_strdup_printf("%s    pull: never\n", absent);
	g_autofree char *absent_missing = g_strdup_printf("%s    pull: missing\n", absent);
	GString *p = g_string_new(NULL);
	g_string_append_printf(p, "cordon: 1\nplugins: {dir: %s, load: [docker, podman]}\ntiers:\n",
			       plugin_dir);
	add_tier(p, "podman", "podman", "    runtime: runc\n", true);
	add_tier(p, "podman-gvisor", "podman",
		 "    runtime: runsc\n    runtime_flags: [network=none, oci-seccomp]\n", true);
	add_tier(p, "podman-gvisor-noseccomp", "podman",
		 "    runtime: runsc\n    runtime_flags: [network=none]\n", true);
	add_tier(p, "podman-pool", "podman", "    runtime: runc\n    pool: 2\n", true);
	add_tier(p, "podman-nomem", "podman", "    runtime: runc\n", false);
	add_tier(p, "podman-never", "podman", absent_never, true);
	add_tier(p, "podman-missing", "podman", absent_missing, true);
	add_tier(p, "podman-noengine", "podman", "    engine: /nonexistent/podman\n", true);
	add_tier(p, "docker", "docker", "", true);
	add_tier(p, "docker-gvisor", "docker", "    runtime: runsc\n", true);
	add_tier(p, "docker-nomem", "docker", "", false);
	add_tier(p, "docker-never", "docker", absent_never, true);
	add_tier(p, "docker-missing", "docker", absent_missing, true);
	add_tier(p, "docker-noengine", "docker", "    engine: /nonexistent/docker\n", true);
	add_tier(p, "docker-nodaemon", "docker", "    host: unix:///nonexistent/docker.sock\n",
		 true);
	add_tier(p, "podman-smallmem", "podman",
		 "    runtime: runc\n    limits: {memory: 32MiB, pids: 64, wall: 60s}\n", false);
	add_tier(p, "docker-smallmem", "docker",
		 "    limits: {memory: 32MiB, pids: 64, wall: 60s}\n", false);
	add_tier(p, "podman-serve", "podman",
		 "    runtime: runc\n    network: cordon-test-net\n    publish: 8080\n", true);
	add_tier(p, "docker-serve", "docker", "    network: cordon-test-net\n    publish: 8080\n",
		 true);
	static const char *const wrapped[] = { "logged", "badhello", "refusing" };
	for (int i = 0; i < 2; i++)
		for (size_t w = 0; w < G_N_ELEMENTS(wrapped); w++) {
			const char *engine = engines[i].engine;
			g_autofree char *name = g_strdup_printf("%s-%s", engine, wrapped[w]);
			g_autofree char *extra = g_strdup_printf(
				"%s    engine: %s/%s%s\n", i == 0 ? "    runtime: runc\n" : "",
				wrap_dir, engine, w ? name + strlen(engine) : "");
			add_tier(p, name, engine, extra, true);
		}
	for (int i = 0; i < 2; i++) {
		const char *engine = engines[i].engine;
		g_autofree char *name = g_strdup_printf("%s-never-logged", engine);
		g_autofree char *extra = g_strdup_printf(
			"%s    pull: never\n    engine: %s/%s-nlog\n",
			i == 0 ? "    runtime: runc\n" : "", wrap_dir, engine);
		add_tier(p, name, engine, extra, true);
	}
	const char *all =
		"[podman, podman-gvisor, podman-pool, podman-nomem, podman-never, "
		"podman-missing, podman-noengine, docker, docker-gvisor, docker-nomem, "
		"docker-never, docker-missing, docker-noengine, docker-nodaemon, "
		"podman-serve, docker-serve, podman-logged, docker-logged, podman-badhello, "
		"docker-badhello, podman-refusing, docker-refusing, podman-smallmem, "
		"docker-smallmem, podman-gvisor-noseccomp, podman-never-logged, "
		"docker-never-logged]";
	g_string_append_printf(p,
			       "trust:\n"
			       "  trusted: {require: process-jail, tiers: %s}\n"
			       "  semi-trusted: {require: kernel, tiers: %s}\n"
			       "  untrusted: {require: container, relax: true, tiers: %s}\n",
			       all, all, all);
	return g_string_free(p, FALSE);
}

/* An engine that logs each call's arguments, then is the real one. */
static bool write_wrapper(const char *engine, const char *real)
{
	g_autofree char *path = g_strdup_printf("%s/%s", wrap_dir, engine);
	g_autofree char *log = calls_path(engine);
	g_autofree char *text = g_strdup_printf("#!/bin/sh\nprintf ' %%s\\n' \"$*\" >> '%s'\n"
						"exec '%s' \"$@\"\n",
						log, real);
	return g_file_set_contents(path, text, -1, NULL) && chmod(path, 0700) == 0 &&
	       g_file_set_contents(log, "", 0, NULL);
}

/* An engine whose session container's helper answers `frame` (printf
 * escapes) and then only reads its stdin: a helper speaking nonsense, or one
 * too old to know the session. Every other call is the real engine's. */
static bool write_impostor(const char *engine, const char *real, const char *kind,
			   const char *frame)
{
	g_autofree char *path = g_strdup_printf("%s/%s-%s", wrap_dir, engine, kind);
	g_autofree char *text = g_strdup_printf("#!/bin/sh\n"
						"case \" $* \" in *' run -i '*)\n"
						"\tprintf '%s'; exec cat >/dev/null;; esac\n"
						"exec '%s' \"$@\"\n",
						frame, real);
	return g_file_set_contents(path, text, -1, NULL) && chmod(path, 0700) == 0;
}

#define IMPOSTOR_REASON "invalid_argument 22 unknown command session"

static bool write_impostors(const char *engine, const char *real)
{
	g_autofree char *refusal = g_strdup_printf(
		"X\\0\\0\\0\\%03o%s", (unsigned)strlen(IMPOSTOR_REASON), IMPOSTOR_REASON);
	return write_impostor(engine, real, "badhello", "\\377\\0\\0\\0\\0") &&
	       write_impostor(engine, real, "refusing", refusal);
}

static bool copy_plugin(const char *name)
{
	g_autofree char *rel = g_strdup_printf("plugins/%s/.libs/%s.so", name, name);
	g_autofree char *src = testutil_build_path(rel);
	g_autofree char *dst = g_strdup_printf("%s/%s.so", plugin_dir, name);
	g_autofree char *data = NULL;
	gsize len;
	if (!g_file_get_contents(src, &data, &len, NULL))
		return false;
	return g_file_set_contents(dst, data, (gssize)len, NULL) && chmod(dst, 0755) == 0;
}

/* What must be there for the suite to mean anything; NULL when all is. */
static char *missing_requirements(void)
{
	if (getuid() != 0)
		return g_strdup("the container tests run as root (dockerd, podman with cgroupfs)");
	g_autofree char *ref_file = g_build_filename(state_dir, "image-ref", NULL);
	if (!g_file_get_contents(ref_file, &image_ref, NULL, NULL))
		return g_strdup_printf("no pinned image at %s: run .ci/engines.sh", ref_file);
	g_strstrip(image_ref);
	engine_path[0] = g_find_program_in_path("podman");
	engine_path[1] = g_find_program_in_path("docker");
	if (!engine_path[0] || !engine_path[1])
		return g_strdup("podman or docker is not installed: run .ci/engines.sh");
	g_autofree char *runsc = g_find_program_in_path("runsc");
	if (!runsc && access("/usr/bin/runsc", X_OK) != 0)
		return g_strdup("gVisor's runsc is not installed: run .ci/engines.sh");
	g_autofree char *pidfile = g_build_filename(state_dir, "dockerd.pid", NULL);
	if (!g_file_test(pidfile, G_FILE_TEST_EXISTS))
		return g_strdup("dockerd is not managed by .ci/engines.sh (the daemon tests stop "
				"and restart it)");
	int st;
	g_autofree char *v = engine_run("docker", &st, "version", "--format", "{{.Server.Version}}",
					NULL);
	if (st != 0)
		return g_strdup("the docker daemon is not running: run .ci/engines.sh");
	g_autofree char *img = engine_run("podman", &st, "image", "exists", image_ref, NULL);
	if (st != 0)
		return g_strdup_printf("podman lacks %s: run .ci/engines.sh", image_ref);
	g_autofree char *helper = testutil_build_path("agent/cordon-agent");
	if (access(helper, X_OK) != 0)
		return g_strdup_printf("%s is not built", helper);
	return NULL;
}

/* One case per test, tagged with its name: CK_INCLUDE_TAGS=files runs one. */
static void add_case(Suite *s, const char *tag, const TTest *fn, int loops)
{
	TCase *tc = tcase_create(tag);
	tcase_set_tags(tc, tag);
	tcase_set_timeout(tc, 300);
	_tcase_add_test(tc, fn, 0, 0, 0, loops ? loops : 1);
	suite_add_tcase(s, tc);
}

static Suite *containers_suite(void)
{
	Suite *s = suite_create("containers");
	add_case(s, "probe", test_probe, 2);
	add_case(s, "basics", test_run_basics, 2);
	add_case(s, "redteam", test_redteam, 2);
	add_case(s, "redteam-gvisor", test_redteam_gvisor, 2);
	add_case(s, "seccomp", test_seccomp_profile, 2);
	add_case(s, "seccomp-setid", test_seccomp_setid, 2);
	add_case(s, "seccomp-unapplied", test_seccomp_unapplied_ranks_lower, 0);
	add_case(s, "limits", test_limits, 2);
	add_case(s, "limits-gvisor", test_limits_gvisor, 2);
	add_case(s, "stream", test_stream_and_cancel, 2);
	add_case(s, "files", test_files, 2);
	add_case(s, "files-channel", test_files_channel, 2);
	add_case(s, "workspace", test_workspace, 2);
	add_case(s, "workspace-symlink", test_workspace_symlink, 2);
	add_case(s, "workspace-race", test_workspace_swap_race, 2);
	add_case(s, "refusals", test_refusals, 2);
	add_case(s, "session-refused", test_session_refused, 2);
	add_case(s, "images", test_engine_missing_and_images, 2);
	add_case(s, "killed", test_killed_from_outside, 2);
	add_case(s, "gc", test_gc, 2);
	add_case(s, "secrets", test_secrets_not_in_argv, 2);
	add_case(s, "pin", test_image_pin, 2);
	add_case(s, "cli-calls", test_cli_engine_calls, 2);
	add_case(s, "run-no-image", test_run_says_no_image, 2);
	add_case(s, "cli-egress-gvisor", test_cli_governed_gvisor, 2);
	add_case(s, "serve", test_serve_published, 2);
	add_case(s, "serve-unix", test_serve_unix, 2);
	add_case(s, "egress", test_governed_egress, 2);
	add_case(s, "services", test_services, 2);
	add_case(s, "channel", test_session_channel, 2);
	add_case(s, "channel-gvisor", test_session_channel_gvisor, 2);
	add_case(s, "host-died", test_host_died, 2);
	add_case(s, "close-forked", test_close_with_forked_child, 2);
	add_case(s, "pool", test_pool, 0);
	add_case(s, "daemon", test_docker_daemon_stopped, 0);
	return s;
}

int main(void)
{
	bool required = g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") == 0;
	/* Minutes of real engines: CI (CORDON_REQUIRE=all) runs them, a developer
	 * asks for them; a plain `make check` on a shared machine says so and skips. */
	if (!required && g_strcmp0(g_getenv("CORDON_TEST_CONTAINERS"), "1") != 0) {
		printf("1..0 # SKIP the real-engine container suite takes minutes: set "
		       "CORDON_TEST_CONTAINERS=1 (CI runs it with CORDON_REQUIRE=all)\n");
		return 0;
	}
	state_dir = g_strdup(g_getenv("CORDON_CI_STATE") ? g_getenv("CORDON_CI_STATE")
							 : "/var/lib/cordon-ci");
	g_autofree char *why = missing_requirements();
	if (why) {
		/* under the TAP driver a skipped program is a "1..0 # SKIP" plan */
		if (required) {
			printf("Bail out! CORDON_REQUIRE=all: %s\n", why);
			return EXIT_FAILURE;
		}
		printf("1..0 # SKIP %s\n", why);
		return 0;
	}
	/* One suite at a time on this host: the daemon test restarts dockerd. */
	int lock = open(LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		fprintf(stderr, "test-containers: cannot lock %s\n", LOCK_PATH);
		return EXIT_FAILURE;
	}
	/* the loader refuses writable directories: a private 0700 one */
	plugin_dir = g_dir_make_tmp("cordon-containers-XXXXXX", NULL);
	if (!plugin_dir || !copy_plugin("docker") || !copy_plugin("podman")) {
		fprintf(stderr, "test-containers: the plugins are not built\n");
		return EXIT_FAILURE;
	}
	wrap_dir = g_dir_make_tmp("cordon-engines-XXXXXX", NULL);
	if (!wrap_dir || !write_wrapper("podman", engine_path[0]) ||
	    !write_wrapper("docker", engine_path[1]) ||
	    !write_wrapper("podman-nlog", engine_path[0]) ||
	    !write_wrapper("docker-nlog", engine_path[1]) ||
	    !write_impostors("podman", engine_path[0]) ||
	    !write_impostors("docker", engine_path[1])) {
		fprintf(stderr, "test-containers: cannot write the engine wrappers\n");
		return EXIT_FAILURE;
	}
	policy = build_policy();
	/* decoys: a host secret, and engine endpoints that would break the CLIs if
	 * the plugins passed this environment on */
	g_setenv("CORDON_TEST_HOST_SECRET", HOST_SECRET, TRUE);
	g_setenv("DOCKER_HOST", "tcp://127.0.0.1:9", TRUE);
	g_setenv("CONTAINER_HOST", "tcp://127.0.0.1:9", TRUE);
	int r = testutil_run(containers_suite());
	testutil_rmtree(plugin_dir);
	testutil_rmtree(wrap_dir);
	return r;
}
