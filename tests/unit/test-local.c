/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The built-in local driver at the process-jail level, through the public
 * API: run/exec/stream/serve, environment, descriptors, sessions, lifetime
 * (nothing survives a run), output caps, limits, file operations, probes.
 */
#include "config.h"

#include "testutil.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <glib.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static cordon_context *ctx;
static cordon_sandbox *sb;
static char *ws;     /* the workspace (sandbox root) */
static char *helper; /* tests/helpers/jail-helper */

static int64_t now_ms(void) { return g_get_monotonic_time() / 1000; }

static cordon_sandbox *open_sandbox(const char *workspace, const char *const *grants,
				    cordon_limit lim, uint64_t lim_value)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("trusted");
	if (workspace)
		ck_assert_int_eq(cordon_request_set_workspace(req, workspace, &err), 0);
	for (size_t i = 0; grants && grants[i]; i += 2)
		ck_assert_int_eq(cordon_request_grant_env(req, grants[i], grants[i + 1], &err), 0);
	if (lim != CORDON_LIMIT_COUNT_)
		ck_assert_int_eq(cordon_request_set_limit(req, lim, lim_value, &err), 0);
	cordon_sandbox *s = NULL;
	int r = cordon_sandbox_open(ctx, req, &s, &err);
	ck_assert_msg(r == 0, "open: %s", err ? cordon_error_get_message(err) : "?");
	cordon_request_free(req);
	return s;
}

static void setup(void)
{
	cordon_error *err = NULL;
	int r = cordon_context_new(NULL, &ctx, &err);
	ck_assert_msg(r == 0, "context: %s", err ? cordon_error_get_message(err) : "?");
	ws = testutil_tmpdir();
	/* absolute: relative names would resolve in the sandbox's directory */
	g_autofree char *rel = testutil_build_path("tests/helpers/jail-helper");
	helper = g_canonicalize_filename(rel, NULL);
	ck_assert_msg(access(helper, X_OK) == 0, "%s is not built", helper);
	sb = open_sandbox(ws, NULL, CORDON_LIMIT_COUNT_, 0);
}

static void teardown(void)
{
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	testutil_rmtree(ws);
	g_free(ws);
	g_free(helper);
}

/* Runs argv and returns the result (asserting it ran). */
static cordon_result *run_in(cordon_sandbox *s, const char *const *argv,
			     const cordon_run_options *o)
{
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	int r = cordon_sandbox_run(s, argv, o, &res, &err);
	ck_assert_msg(r == 0, "run %s: %s", argv[0], err ? cordon_error_get_message(err) : "?");
	return res;
}

static const char *out_of(const cordon_result *res, int stream)
{
	return cordon_result_output(res, stream, NULL);
}

/* ---- probing and admission ------------------------------------------------------- */

START_TEST(test_probe)
{
	size_t n = cordon_context_tier_count(ctx);
	bool saw_jail = false, saw_kernel = false;
	for (size_t i = 0; i < n; i++) {
		cordon_probe_report *rep = NULL;
		ck_assert_int_eq(cordon_context_probe_tier(ctx, i, &rep, NULL), 0);
		const char *name = cordon_context_tier_name(ctx, i);
		if (strcmp(name, "jail") == 0) {
			saw_jail = true;
			ck_assert(cordon_probe_report_available(rep));
			ck_assert_int_eq(cordon_probe_report_containment(rep),
					 CORDON_CONTAINMENT_PROCESS_JAIL);
			ck_assert_ptr_nonnull(
				strstr(cordon_probe_report_reason(rep), "directory jail"));
		} else if (strcmp(name, "kernel") == 0) {
			/* the kernel tier's own tests judge it; here: it never claims
			 * more than it provides, and says why when it cannot run */
			saw_kernel = true;
			if (cordon_probe_report_available(rep))
				ck_assert_int_eq(cordon_probe_report_containment(rep),
						 CORDON_CONTAINMENT_KERNEL);
			else
				ck_assert_str_ne(cordon_probe_report_reason(rep), "");
		}
		cordon_probe_report_free(rep);
	}
	ck_assert(saw_jail && saw_kernel);
	ck_assert_int_eq(cordon_sandbox_containment(sb), CORDON_CONTAINMENT_PROCESS_JAIL);
}
END_TEST

/* Semi-trusted work gets the kernel tier or a refusal, never the jail. */
START_TEST(test_kernel_tier_never_unconfined)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_sandbox *s = NULL;
	int r = cordon_sandbox_open(ctx, req, &s, &err);
	if (r == 0) {
		ck_assert_int_eq(cordon_sandbox_containment(s), CORDON_CONTAINMENT_KERNEL);
		ck_assert_str_eq(cordon_sandbox_tier(s), "kernel");
	} else {
		ck_assert_ptr_null(s);
		ck_assert_int_eq(cordon_error_get_class(err), CORDON_ERROR_FORBIDDEN);
	}
	cordon_sandbox_close(s);
	cordon_error_free(err);
	cordon_request_free(req);
}
END_TEST

static int context_from(const char *yaml, cordon_context **ret, cordon_error **err)
{
	cordon_options *o = cordon_options_new();
	ck_assert_int_eq(cordon_options_set_policy_text(o, yaml, strlen(yaml), "test.yaml", NULL),
			 0);
	int r = cordon_context_new(o, ret, err);
	cordon_options_free(o);
	return r;
}

/* pids and cpus need cgroups: a jail configured with them is unavailable, and
 * a request for them is refused, rather than run without them. */
START_TEST(test_unenforceable_limits)
{
	static const char yaml[] = "cordon: 1\n"
				   "tiers:\n"
				   "  jail: {driver: local, confine: none, limits: {pids: 64}}\n"
				   "trust:\n"
				   "  trusted: {tiers: [jail]}\n";
	cordon_context *c = NULL;
	cordon_error *err = NULL;
	int r = context_from(yaml, &c, &err);
	ck_assert_msg(r == 0, "%s", err ? cordon_error_get_message(err) : "?");
	cordon_probe_report *rep = NULL;
	ck_assert_int_eq(cordon_context_probe_tier(c, 0, &rep, NULL), 0);
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_ptr_nonnull(strstr(cordon_probe_report_reason(rep), "pids"));
	cordon_probe_report_free(rep);
	cordon_context_free(c);

	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_request_set_limit(req, CORDON_LIMIT_CPU_MILLI, 500, NULL), 0);
	cordon_sandbox *s = NULL;
	ck_assert_int_eq(cordon_sandbox_open(ctx, req, &s, &err), -EPERM);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "cpus"));
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "limit_unenforceable");
	cordon_request_free(req);
}
END_TEST

START_TEST(test_confine_key)
{
	static const char *bad[] = {
		"cordon: 1\ntiers:\n  jail: {driver: local}\ntrust:\n  trusted: {tiers: [jail]}\n",
		"cordon: 1\ntiers:\n  jail: {driver: local, confine: maybe}\n"
		"trust:\n  trusted: {tiers: [jail]}\n",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		cordon_context *c = NULL;
		cordon_error *err = NULL;
		ck_assert_int_lt(context_from(bad[i], &c, &err), 0);
		ck_assert_ptr_null(c);
		ck_assert_msg(strstr(cordon_error_get_message(err), "confine"), "%s",
			      cordon_error_get_message(err));
		ck_assert_int_eq(cordon_error_get_class(err), CORDON_ERROR_INVALID);
		cordon_error_free(err);
	}
}
END_TEST

/* ---- results ------------------------------------------------------------------------- */

START_TEST(test_run_output)
{
	const char *argv[] = { helper, "both", NULL };
	cordon_result *res = run_in(sb, argv, NULL);
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	ck_assert_str_eq(out_of(res, 1), "out");
	ck_assert_str_eq(out_of(res, 2), "err");
	ck_assert_str_eq(out_of(res, 0), "outerr");
	ck_assert(!cordon_result_truncated(res, 0));
	ck_assert(!cordon_result_timed_out(res) && !cordon_result_cancelled(res));
	cordon_result_free(res);
	/* the name is found on the sandbox's PATH before the fork */
	const char *echo[] = { "echo", "hi", NULL };
	res = run_in(sb, echo, NULL);
	ck_assert_str_eq(out_of(res, 1), "hi\n");
	cordon_result_free(res);
}
END_TEST

START_TEST(test_exit_status)
{
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_exec(sb, "exit 7", NULL, &res, NULL), 0);
	ck_assert_int_eq(cordon_result_exit_code(res), 7);
	ck_assert_int_eq(cordon_result_signal(res), 0);
	cordon_result_free(res);
	const char *argv[] = { "/bin/sh", "-c", "kill -TERM $$", NULL };
	res = run_in(sb, argv, NULL);
	ck_assert_int_eq(cordon_result_signal(res), SIGTERM);
	ck_assert_int_eq(cordon_result_exit_code(res), 128 + SIGTERM);
	cordon_result_free(res);
}
END_TEST

START_TEST(test_exec_failure)
{
	const char *const cases[][2] = {
		{ "cordon-no-such-command", "command not found" },
		{ "/nonexistent/cordon/cmd", "No such file" },
		{ "./not-executable", "Permission denied" },
	};
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "not-executable", "#!/bin/sh\n", 10, NULL),
			 0);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		cordon_error *err = NULL;
		cordon_result *res = NULL;
		const char *argv[] = { cases[i][0], NULL };
		int r = cordon_sandbox_run(sb, argv, NULL, &res, &err);
		ck_assert_int_lt(r, 0);
		ck_assert_ptr_null(res);
		ck_assert_ptr_nonnull(err);
		ck_assert_msg(strstr(cordon_error_get_message(err), cases[i][1]), "%s",
			      cordon_error_get_message(err));
		ck_assert_msg(!strstr(cordon_error_get_message(err), ws), "host root in message");
		ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "exec_failed");
	}
}
END_TEST

START_TEST(test_stdin)
{
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	const char *cat[] = { "cat", NULL };
	o.stdin_data = "hello";
	o.stdin_len = 5;
	cordon_result *res = run_in(sb, cat, &o);
	ck_assert_str_eq(out_of(res, 1), "hello");
	cordon_result_free(res);
	/* more than a pipe holds */
	size_t big = 1 << 20;
	char *data = g_malloc(big);
	memset(data, 'z', big);
	o.stdin_data = data;
	o.stdin_len = big;
	res = run_in(sb, cat, &o);
	size_t len;
	cordon_result_output(res, 1, &len);
	ck_assert_uint_eq(len, big);
	cordon_result_free(res);
	/* the work closes its stdin early: no SIGPIPE for us, a normal result */
	const char *head[] = { "head", "-c", "1", NULL };
	res = run_in(sb, head, &o);
	ck_assert_str_eq(out_of(res, 1), "z");
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	cordon_result_free(res);
	g_free(data);
	/* no stdin: /dev/null, so cat ends at once */
	res = run_in(sb, cat, NULL);
	ck_assert_str_eq(out_of(res, 1), "");
	cordon_result_free(res);
}
END_TEST

/* A host that auto-reaps its children loses the status: an error, not a guess. */
START_TEST(test_host_ignores_sigchld)
{
	signal(SIGCHLD, SIG_IGN);
	const char *argv[] = { "/bin/sh", "-c", "exit 7", NULL };
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, NULL, &res, &err), -ECHILD);
	ck_assert_ptr_null(res);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "status_lost");
	signal(SIGCHLD, SIG_DFL);
	res = run_in(sb, argv, NULL);
	ck_assert_int_eq(cordon_result_exit_code(res), 7);
	cordon_result_free(res);
}
END_TEST

/* ---- environment ------------------------------------------------------------------- */

START_TEST(test_env_scrubbed)
{
	g_setenv("CORDON_TEST_API_KEY", "secret-value", TRUE);
	const char *grants[] = { "FOO", "granted-foo", NULL };
	cordon_sandbox *s = open_sandbox(ws, grants, CORDON_LIMIT_COUNT_, 0);
	const char *env[] = { "env", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	const char *run_grants[] = { "BAR=run-bar", NULL };
	o.env = run_grants;
	cordon_result *res = run_in(s, env, &o);
	const char *out = out_of(res, 1);
	ck_assert_ptr_null(strstr(out, "CORDON_TEST_API_KEY"));
	ck_assert_ptr_null(strstr(out, "secret-value"));
	ck_assert_ptr_nonnull(strstr(out, "FOO=granted-foo\n"));
	ck_assert_ptr_nonnull(strstr(out, "BAR=run-bar\n"));
	ck_assert_ptr_nonnull(strstr(out, "PATH="));
	cordon_result_free(res);
	cordon_sandbox_close(s);
	g_unsetenv("CORDON_TEST_API_KEY");
}
END_TEST

START_TEST(test_env_forbidden)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_request_grant_env(req, "LD_PRELOAD", "/tmp/x.so", &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "env_forbidden");
	cordon_request_free(req);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	const char *run_grants[] = { "LD_PRELOAD=/tmp/x.so", NULL };
	o.env = run_grants;
	const char *argv[] = { "env", NULL };
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EPERM);
	ck_assert_ptr_null(res);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "env_forbidden");
}
END_TEST

/* ---- what the child inherits --------------------------------------------------------- */

START_TEST(test_no_inherited_fds)
{
	/* a descriptor the host leaked without O_CLOEXEC still does not cross */
	int leak = open("/dev/null", O_RDONLY);
	ck_assert_int_ge(leak, 3);
	const char *argv[] = { helper, "fds", NULL };
	cordon_result *res = run_in(sb, argv, NULL);
	ck_assert_str_eq(out_of(res, 1), "0\n1\n2\n");
	cordon_result_free(res);
	/* and the shell's own view agrees (no pipeline: the shell holds a pipe's
	 * ends until its children start, and ls saw them as fd 3 now and then) */
	const char *ls[] = { "/bin/sh", "-c", "ls /proc/$$/fd", NULL };
	res = run_in(sb, ls, NULL);
	ck_assert_str_eq(out_of(res, 1), "0\n1\n2\n");
	cordon_result_free(res);
	close(leak);
}
END_TEST

START_TEST(test_session_and_signals)
{
	const char *ids[] = { helper, "ids", NULL };
	cordon_result *res = run_in(sb, ids, NULL);
	int pid = 0, pgid = 0, sid = 0;
	ck_assert_int_eq(sscanf(out_of(res, 1), "%d %d %d", &pid, &pgid, &sid), 3);
	ck_assert_int_eq(pgid, pid);
	ck_assert_int_eq(sid, pid);
	ck_assert_int_ne(sid, getsid(0));
	cordon_result_free(res);

	/* the host's blocked and ignored signals are not passed on */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	const char *grep[] = { "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL };
	res = run_in(sb, grep, NULL);
	ck_assert_str_eq(out_of(res, 1), "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
	cordon_result_free(res);

	const char *ds[] = { helper, "deathsig", NULL };
	res = run_in(sb, ds, NULL);
	ck_assert_str_eq(out_of(res, 1), "9\n");
	cordon_result_free(res);
}
END_TEST

START_TEST(test_workdir)
{
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "sub/dir/f.txt", "in-sub", 6, NULL), 0);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.workdir = "sub/dir";
	const char *cat[] = { "cat", "f.txt", NULL };
	cordon_result *res = run_in(sb, cat, &o);
	ck_assert_str_eq(out_of(res, 1), "in-sub");
	cordon_result_free(res);
	/* without one, the root */
	const char *pwd[] = { "/bin/sh", "-c", "pwd -P", NULL };
	res = run_in(sb, pwd, NULL);
	g_autofree char *real = realpath(ws, NULL);
	g_autofree char *expect = g_strdup_printf("%s\n", real);
	ck_assert_str_eq(out_of(res, 1), expect);
	cordon_result_free(res);
	/* a workdir through a link that leads out is refused, naming no host path */
	g_autofree char *link = g_build_filename(ws, "out", NULL);
	ck_assert_int_eq(symlink("/etc", link), 0);
	o.workdir = "out";
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_run(sb, pwd, &o, &res, &err), -EPERM);
	ck_assert_ptr_null(strstr(cordon_error_get_message(err), ws));
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_path_escape");
	o.workdir = "../";
	ck_assert_int_eq(cordon_sandbox_run(sb, pwd, &o, &res, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_path_escape");
}
END_TEST

START_TEST(test_rlimits)
{
	cordon_sandbox *s = open_sandbox(ws, NULL, CORDON_LIMIT_NOFILE, 64);
	const char *sh[] = { "/bin/sh", "-c", "ulimit -n; ulimit -c", NULL };
	cordon_result *res = run_in(s, sh, NULL);
	ck_assert_str_eq(out_of(res, 1), "64\n0\n");
	cordon_result_free(res);
	cordon_sandbox_close(s);

	s = open_sandbox(ws, NULL, CORDON_LIMIT_FSIZE, 1024);
	const char *big[] = { "/bin/sh", "-c", "head -c 4096 /dev/zero > big", NULL };
	res = run_in(s, big, NULL);
	ck_assert_int_ne(cordon_result_exit_code(res), 0);
	cordon_result_free(res);
	struct stat st;
	g_autofree char *p = g_build_filename(ws, "big", NULL);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_le(st.st_size, 1024);
	cordon_sandbox_close(s);

	s = open_sandbox(ws, NULL, CORDON_LIMIT_MEMORY, 256u << 20);
	const char *v[] = { "/bin/sh", "-c", "ulimit -v", NULL };
	res = run_in(s, v, NULL);
	ck_assert_str_eq(out_of(res, 1), "262144\n");
	cordon_result_free(res);
	cordon_sandbox_close(s);
}
END_TEST

/* ---- lifetime ---------------------------------------------------------------------- */

START_TEST(test_timeout)
{
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 300;
	const char *argv[] = { "sleep", "30", NULL };
	int64_t t0 = now_ms();
	cordon_result *res = run_in(sb, argv, &o);
	int64_t took = now_ms() - t0;
	ck_assert(cordon_result_timed_out(res));
	ck_assert_int_eq(cordon_result_signal(res), SIGKILL);
	ck_assert_int_ge(took, 280);
	ck_assert_int_lt(took, 3000);
	cordon_result_free(res);
}
END_TEST

/* True when nobody holds the lock: whoever held it is gone. */
static bool lock_is_free(const char *lock)
{
	int fd = open(lock, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	bool free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return free_now;
}

START_TEST(test_timeout_kills_grandchild)
{
	g_autofree char *lock = g_build_filename(ws, "lock", NULL);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 700;
	const char *argv[] = { helper, "grandchild", "lock", NULL };
	cordon_result *res = run_in(sb, argv, &o);
	/* checked right away: the run returns only once the group is gone */
	bool released = lock_is_free(lock);
	ck_assert_str_eq(out_of(res, 1), "locked\n"); /* the grandchild did hold it */
	ck_assert(cordon_result_timed_out(res));
	ck_assert(released);
	cordon_result_free(res);
}
END_TEST

START_TEST(test_exit_kills_grandchild)
{
	g_autofree char *lock = g_build_filename(ws, "lock", NULL);
	const char *argv[] = { helper, "grandchild-exit", "lock", NULL };
	int64_t t0 = now_ms();
	cordon_result *res = run_in(sb, argv, NULL);
	bool released = lock_is_free(lock);
	/* the grandchild keeps stdout open and sleeps: the run must not wait for it */
	ck_assert_int_lt(now_ms() - t0, 3000);
	ck_assert_str_eq(out_of(res, 1), "locked\n");
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	ck_assert(!cordon_result_timed_out(res));
	ck_assert(released);
	cordon_result_free(res);
	/* the same for a shell's background job */
	cordon_result *r2 = NULL;
	ck_assert_int_eq(cordon_sandbox_exec(sb, "flock lock2 sleep 60 & sleep 0.2; echo started",
					     NULL, &r2, NULL),
			 0);
	g_autofree char *lock2 = g_build_filename(ws, "lock2", NULL);
	ck_assert(lock_is_free(lock2));
	ck_assert_str_eq(out_of(r2, 1), "started\n");
	cordon_result_free(r2);
}
END_TEST

START_TEST(test_output_flood)
{
	const char *argv[] = { helper, "flood", "67108864", NULL }; /* 64 MiB */
	cordon_result *res = run_in(sb, argv, NULL);
	size_t len;
	cordon_result_output(res, 1, &len);
	ck_assert_uint_eq(len, 16u << 20); /* the default cap */
	ck_assert(cordon_result_truncated(res, 1));
	ck_assert(cordon_result_truncated(res, 0));
	ck_assert(!cordon_result_truncated(res, 2));
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	cordon_result_free(res);
	/* a smaller cap per run */
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.output_cap = 1000;
	res = NULL;
	ck_assert_int_eq(cordon_sandbox_exec(sb, "yes | head -c 100000000", &o, &res, NULL), 0);
	cordon_result_output(res, 1, &len);
	ck_assert_uint_eq(len, 1000);
	ck_assert(cordon_result_truncated(res, 1));
	cordon_result_free(res);
}
END_TEST

/* ---- stream and cancel -------------------------------------------------------------- */

typedef struct stream_log {
	int64_t start, first;
	GString *out;
	int cancel_after; /* cancel on this call (1-based); 0: never */
	int calls;
} stream_log;

static int on_output(void *user, int stream, const void *data, size_t len)
{
	stream_log *l = user;
	if (!l->first)
		l->first = now_ms() - l->start;
	g_string_append_len(l->out, data, (gssize)len);
	return ++l->calls == l->cancel_after;
}

START_TEST(test_stream_live)
{
	stream_log l = { .start = now_ms(), .out = g_string_new(NULL) };
	const char *argv[] = { "/bin/sh", "-c", "echo first; sleep 1; echo second", NULL };
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_stream(sb, argv, NULL, on_output, &l, &res, NULL), 0);
	int64_t took = now_ms() - l.start;
	ck_assert_int_ge(took, 900);
	/* Delivered while the work still ran: the first line came well before the run ended, a
	 * second of sleep apart (measured from the end, not the start: a launch slowed by a
	 * loaded machine moves both). */
	ck_assert_msg(l.first + 500 < took,
		      "first output at %lld ms, run ended at %lld ms, %d chunks",
		      (long long)l.first, (long long)took, l.calls);
	ck_assert_str_eq(l.out->str, "first\nsecond\n");
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	cordon_result_free(res);
	g_string_free(l.out, TRUE);
}
END_TEST

START_TEST(test_stream_cancel)
{
	stream_log l = { .start = now_ms(), .out = g_string_new(NULL), .cancel_after = 1 };
	const char *argv[] = { "/bin/sh", "-c", "echo first; sleep 30; echo never", NULL };
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_stream(sb, argv, NULL, on_output, &l, &res, NULL), 0);
	ck_assert_int_lt(now_ms() - l.start, 3000);
	ck_assert(cordon_result_cancelled(res));
	ck_assert_str_eq(l.out->str, "first\n");
	cordon_result_free(res);
	g_string_free(l.out, TRUE);
}
END_TEST

static void *write_later(void *arg)
{
	g_usleep(200 * 1000);
	int fd = GPOINTER_TO_INT(arg);
	if (write(fd, "x", 1) != 1)
		abort();
	return NULL;
}

START_TEST(test_cancel_fd)
{
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pthread_t t;
	pthread_create(&t, NULL, write_later, GINT_TO_POINTER(p[1]));
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.cancel_fd = p[0];
	const char *argv[] = { "sleep", "30", NULL };
	int64_t t0 = now_ms();
	cordon_result *res = run_in(sb, argv, &o);
	ck_assert_int_lt(now_ms() - t0, 3000);
	ck_assert(cordon_result_cancelled(res));
	ck_assert(!cordon_result_timed_out(res));
	cordon_result_free(res);
	pthread_join(t, NULL);
	/* the driver polls cancel_fd and never reads it */
	char c;
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* ---- serve ---------------------------------------------------------------------------- */

static bool wait_output(cordon_serve *s, const char *needle, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		g_autofree char *tail = cordon_serve_output(s);
		if (tail && strstr(tail, needle))
			return true;
		g_usleep(10 * 1000);
	}
	return false;
}

START_TEST(test_serve)
{
	cordon_serve *s = NULL;
	cordon_error *err = NULL;
	const char *argv[] = { "/bin/sh", "-c", "echo started $$; exec sleep 30", NULL };
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, 8080, NULL, &s, &err), 0);
	ck_assert(wait_output(s, "started", 5000));
	ck_assert(cordon_serve_running(s));
	/* the server's pid is its own $$, a host pid (the jail shares the host's pid
	 * namespace): the process that became sleep */
	g_autofree char *said = cordon_serve_output(s);
	int64_t pid = cordon_serve_pid(s);
	ck_assert_int_eq(pid, atoll(strchr(said, ' ') + 1));
	g_autofree char *comm_path = g_strdup_printf("/proc/%" PRId64 "/comm", pid);
	g_autofree char *comm = NULL;
	ck_assert(g_file_get_contents(comm_path, &comm, NULL, NULL));
	ck_assert_str_eq(comm, "sleep\n");
	g_autofree char *addr = cordon_serve_address(s);
	ck_assert_str_eq(addr, "127.0.0.1:8080");
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_serve_wait(s, 50, &res, &err), -ETIMEDOUT);
	cordon_error_free(err);
	err = NULL;
	int64_t t0 = now_ms();
	ck_assert_int_eq(cordon_serve_stop(s, &err), 0);
	ck_assert_int_lt(now_ms() - t0, 3000);
	ck_assert(!cordon_serve_running(s));
	ck_assert_int_eq(cordon_serve_stop(s, &err), 0); /* idempotent */
	ck_assert_int_eq(cordon_serve_wait(s, -1, &res, &err), 0);
	ck_assert(cordon_result_cancelled(res));
	cordon_result_free(res);
	cordon_serve_free(s);
}
END_TEST

START_TEST(test_serve_exits)
{
	cordon_serve *s = NULL;
	const char *argv[] = { "/bin/sh", "-c", "echo bye; exit 3", NULL };
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, 0, NULL, &s, NULL), 0);
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_serve_wait(s, 5000, &res, NULL), 0);
	ck_assert_int_eq(cordon_result_exit_code(res), 3);
	ck_assert(!cordon_serve_running(s));
	g_autofree char *tail = cordon_serve_output(s);
	ck_assert_str_eq(tail, "bye\n");
	ck_assert_ptr_null(cordon_serve_address(s));
	cordon_result_free(res);
	cordon_serve_free(s);
}
END_TEST

/* ---- concurrency ---------------------------------------------------------------------- */

static void *run_many(void *arg)
{
	int id = GPOINTER_TO_INT(arg);
	for (int i = 0; i < 25; i++) {
		char word[32];
		snprintf(word, sizeof(word), "t%d-%d", id, i);
		const char *argv[] = { "echo", word, NULL };
		cordon_result *res = NULL;
		if (cordon_sandbox_run(sb, argv, NULL, &res, NULL) != 0)
			return GINT_TO_POINTER(1);
		g_autofree char *expect = g_strdup_printf("%s\n", word);
		bool ok = strcmp(out_of(res, 1), expect) == 0;
		cordon_result_free(res);
		if (!ok)
			return GINT_TO_POINTER(1);
	}
	return NULL;
}

START_TEST(test_concurrent_runs)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, run_many, GINT_TO_POINTER(i));
	for (int i = 0; i < 4; i++) {
		void *bad = NULL;
		pthread_join(t[i], &bad);
		ck_assert_ptr_null(bad);
	}
}
END_TEST

/* ---- files and the private root ------------------------------------------------------- */

START_TEST(test_files)
{
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "dir/a.txt", "A", 1, &err), 0);
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "dir/b.txt", "BB", 2, &err), 0);
	void *data = NULL;
	size_t len = 0;
	ck_assert_int_eq(cordon_sandbox_read_file(sb, "dir/b.txt", &data, &len, &err), 0);
	ck_assert_uint_eq(len, 2);
	ck_assert_str_eq(data, "BB");
	free(data);
	g_autofree char *link = g_build_filename(ws, "dir", "etc", NULL);
	ck_assert_int_eq(symlink("/etc", link), 0);
	char **paths = NULL;
	ck_assert_int_eq(cordon_sandbox_glob(sb, "dir/*.txt", &paths, &err), 2);
	ck_assert_str_eq(paths[0], "dir/a.txt");
	ck_assert_str_eq(paths[1], "dir/b.txt");
	cordon_strv_free(paths);
	ck_assert_int_eq(cordon_sandbox_walk(sb, "", &paths, &err), 2);
	cordon_strv_free(paths);
	/* refusals name the relative path, never the host root */
	const char *bad[] = { "../x", "/etc/passwd", "dir/etc/passwd", "dir/../../x" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		ck_assert_int_eq(cordon_sandbox_read_file(sb, bad[i], &data, &len, &err), -EPERM);
		ck_assert_msg(!strstr(cordon_error_get_message(err), ws), "%s",
			      cordon_error_get_message(err));
		ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), bad[i]));
		ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_path_escape");
		ck_assert_int_eq(cordon_sandbox_write_file(sb, bad[i], "x", 1, &err), -EPERM);
		ck_assert_msg(!strstr(cordon_error_get_message(err), ws), "%s",
			      cordon_error_get_message(err));
		ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_path_escape");
	}
	ck_assert_int_lt(cordon_sandbox_read_file(sb, "missing", &data, &len, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "not_found");
}
END_TEST

START_TEST(test_private_root_removed)
{
	g_autofree char *outside = testutil_tmpdir();
	g_autofree char *sentinel = g_build_filename(outside, "sentinel", NULL);
	ck_assert(g_file_set_contents(sentinel, "S", 1, NULL));
	cordon_sandbox *s = open_sandbox(NULL, NULL, CORDON_LIMIT_COUNT_, 0);
	ck_assert_int_eq(cordon_sandbox_write_file(s, "a/b/c.txt", "c", 1, NULL), 0);
	g_autofree char *line = g_strdup_printf("ln -s '%s' a/out && pwd -P && stat -c %%a .",
						outside);
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_exec(s, line, NULL, &res, NULL), 0);
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	g_auto(GStrv) lines = g_strsplit(out_of(res, 1), "\n", -1);
	cordon_result_free(res);
	ck_assert_str_eq(lines[1], "700");
	ck_assert_int_eq(access(lines[0], F_OK), 0);
	cordon_sandbox_close(s);
	ck_assert_int_eq(access(lines[0], F_OK), -1); /* removed at close */
	ck_assert_int_eq(access(sentinel, F_OK), 0);  /* without following the link */
	testutil_rmtree(outside);
}
END_TEST

/* The private root's path, as the work sees it (the jail's cwd). */
static char *private_root_of(cordon_sandbox *s)
{
	const char *argv[] = { "pwd", "-P", NULL };
	cordon_result *res = run_in(s, argv, NULL);
	char *path = g_strstrip(g_strdup(out_of(res, 1)));
	cordon_result_free(res);
	return path;
}

/* A name gc would take for a dead host's private root: its owner token
 * (common/owner.h: boot id, pid namespace, pid, start time) and a tag. */
static char *leftover_name(const char *tmp, int dead_pid)
{
	struct stat st;
	ck_assert_int_eq(stat("/proc/self/ns/pid", &st), 0);
	g_autofree char *boot = NULL;
	ck_assert(g_file_get_contents("/proc/sys/kernel/random/boot_id", &boot, NULL, NULL));
	g_autoptr(GString) hex = g_string_new(NULL);
	for (const char *p = boot; *p && *p != '\n'; p++)
		if (*p != '-')
			g_string_append_c(hex, *p);
	return g_strdup_printf("%s/cordon-%s-%lu-%d-%llu-%016llx", tmp, hex->str,
			       (unsigned long)st.st_ino, dead_pid, 12345ULL, 0x1234abcdULL);
}

/* A host killed with a sandbox open leaves its private root: gc removes
 * it, and only it: not a live host's, not a link, not another user's. */
START_TEST(test_private_root_gc)
{
	int pipefd[2];
	ck_assert_int_eq(pipe(pipefd), 0);
	pid_t host = fork();
	ck_assert_int_ge(host, 0);
	if (host == 0) {
		cordon_sandbox *s = open_sandbox(NULL, NULL, CORDON_LIMIT_COUNT_, 0);
		g_autofree char *path = private_root_of(s);
		if (write(pipefd[1], path, strlen(path)) != (ssize_t)strlen(path))
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	char dead[PATH_MAX] = "";
	ck_assert_int_gt(read(pipefd[0], dead, sizeof(dead) - 1), 0);
	close(pipefd[0]);
	kill(host, SIGKILL);
	waitpid(host, NULL, 0);
	ck_assert_int_eq(access(dead, F_OK), 0); /* SIGKILL left it */

	cordon_sandbox *live = open_sandbox(NULL, NULL, CORDON_LIMIT_COUNT_, 0);
	g_autofree char *alive = private_root_of(live);
	g_autofree char *tmp = g_path_get_dirname(dead);
	g_autofree char *target = testutil_tmpdir();
	g_autofree char *kept = g_build_filename(target, "kept", NULL);
	ck_assert(g_file_set_contents(kept, "k", 1, NULL));
	g_autofree char *link = leftover_name(tmp, host);
	link[strlen(link) - 1] = 'a';
	ck_assert_int_eq(symlink(target, link), 0);
	g_autofree char *theirs = leftover_name(tmp, host);
	ck_assert_int_eq(mkdir(theirs, 0700), 0);
	bool other_user = geteuid() == 0 && chown(theirs, 65534, 65534) == 0;
	/* its pid in use again, by a process that started later: the creator is gone all the
	 * same (kill(pid, 0) used to take the stranger for it and keep the leftover forever) */
	g_autofree char *reused = leftover_name(tmp, (int)getppid());
	ck_assert_int_eq(mkdir(reused, 0700), 0);

	ck_assert_int_ge(cordon_context_gc(ctx, NULL), 1);
	ck_assert_msg(access(reused, F_OK) == -1, "%s (a reused pid) was kept", reused);
	ck_assert_int_eq(access(dead, F_OK), -1);
	ck_assert_int_eq(access(alive, F_OK), 0);
	ck_assert_int_eq(access(kept, F_OK), 0);
	ck_assert_int_eq(unlink(link), 0); /* still there: not followed, not removed */
	ck_assert_int_eq(access(theirs, F_OK), other_user ? 0 : -1);
	rmdir(theirs);
	cordon_sandbox_close(live);
	testutil_rmtree(target);
}
END_TEST

static Suite *local_suite(void)
{
	Suite *s = suite_create("local");
	TCase *tc = tcase_create("process-jail");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_probe);
	tcase_add_test(tc, test_kernel_tier_never_unconfined);
	tcase_add_test(tc, test_unenforceable_limits);
	tcase_add_test(tc, test_confine_key);
	tcase_add_test(tc, test_run_output);
	tcase_add_test(tc, test_exit_status);
	tcase_add_test(tc, test_exec_failure);
	tcase_add_test(tc, test_stdin);
	tcase_add_test(tc, test_host_ignores_sigchld);
	tcase_add_test(tc, test_env_scrubbed);
	tcase_add_test(tc, test_env_forbidden);
	tcase_add_test(tc, test_no_inherited_fds);
	tcase_add_test(tc, test_session_and_signals);
	tcase_add_test(tc, test_workdir);
	tcase_add_test(tc, test_rlimits);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_timeout_kills_grandchild);
	tcase_add_test(tc, test_exit_kills_grandchild);
	tcase_add_test(tc, test_output_flood);
	tcase_add_test(tc, test_stream_live);
	tcase_add_test(tc, test_stream_cancel);
	tcase_add_test(tc, test_cancel_fd);
	tcase_add_test(tc, test_serve);
	tcase_add_test(tc, test_serve_exits);
	tcase_add_test(tc, test_concurrent_runs);
	tcase_add_test(tc, test_files);
	tcase_add_test(tc, test_private_root_removed);
	tcase_add_test(tc, test_private_root_gc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(local_suite()); }
