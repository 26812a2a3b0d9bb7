/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox port (core/sandbox.c) over a scripted in-test driver: output
 * caps, time bounds, stream cancellation, serve, unsupported operations,
 * errors from drivers, probe clamping. The driver is a test double named as
 * such; the real drivers have their own suites.
 */
#include "config.h"

#include "testutil.h"

#include "context.h"

#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ---- the scripted driver: argv[0] names the behaviour ------------------------ */

typedef struct {
	uint32_t containment;
} scripted_tier;

static int scripted_configure(void *data, const cordon_plugin_config *cfg, void **ret,
			      cordon_plugin_error *err)
{
	scripted_tier *t = g_new0(scripted_tier, 1);
	cfg_node *c = cfg_map_get(cfg->tier->section, "containment");
	t->containment = c ? (uint32_t)atoi(c->scalar) : CORDON_CONTAINMENT_KERNEL;
	*ret = t;
	return 0;
}

static int scripted_probe(void *tier, cordon_plugin_probe *ret)
{
	ret->available = 1;
	ret->containment = ((scripted_tier *)tier)->containment;
	g_strlcpy(ret->reason, "scripted test double", sizeof(ret->reason));
	return 0;
}

/* The limits the last open was given (one route: open_spec.limits). */
static cordon_plugin_limits opened_limits;

static int scripted_open(void *tier, const cordon_plugin_open_spec *spec, void **ret,
			 cordon_plugin_error *err)
{
	opened_limits = spec->limits;
	*ret = tier;
	return 0;
}

/* Waits for cancel_fd up to timeout_ms; sets CANCELLED or TIMED_OUT. */
static void wait_cancel(const cordon_plugin_run_spec *spec, cordon_plugin_run_status *st)
{
	struct pollfd p = { .fd = spec->cancel_fd, .events = POLLIN };
	int r = poll(&p, spec->cancel_fd >= 0 ? 1 : 0, (int)spec->timeout_ms);
	st->flags = r > 0 ? CORDON_PLUGIN_RUNSTATUS_CANCELLED : CORDON_PLUGIN_RUNSTATUS_TIMED_OUT;
	st->flags |= CORDON_PLUGIN_RUNSTATUS_SIGNALED;
	st->signal = 9;
}

static int scripted_run(void *sb, const cordon_plugin_run_spec *spec,
			const cordon_plugin_run_sink *sink, cordon_plugin_run_status *st,
			cordon_plugin_error *err)
{
	const char *cmd = spec->argv[0];
	const char *arg = spec->argv[1];
	st->flags = CORDON_PLUGIN_RUNSTATUS_EXITED;
	if (strcmp(cmd, "echo") == 0) {
		for (size_t i = 1; spec->argv[i]; i++)
			sink->output(sink->ctx, 1, spec->argv[i], strlen(spec->argv[i]));
	} else if (strcmp(cmd, "stderr") == 0) {
		sink->output(sink->ctx, 2, arg, strlen(arg));
	} else if (strcmp(cmd, "flood") == 0) {
		static char chunk[65536];
		memset(chunk, 'x', sizeof(chunk));
		for (long left = atol(arg); left > 0; left -= (long)sizeof(chunk))
			sink->output(sink->ctx, 1, chunk, MIN((size_t)left, sizeof(chunk)));
	} else if (strcmp(cmd, "status") == 0) {
		st->exit_code = atoi(arg);
	} else if (strcmp(cmd, "signal") == 0) {
		st->flags = CORDON_PLUGIN_RUNSTATUS_SIGNALED;
		st->signal = atoi(arg);
	} else if (strcmp(cmd, "env") == 0) {
		for (size_t i = 0; spec->envp[i]; i++) {
			sink->output(sink->ctx, 1, spec->envp[i], strlen(spec->envp[i]));
			sink->output(sink->ctx, 1, "\n", 1);
		}
	} else if (strcmp(cmd, "timeout") == 0) {
		char buf[32];
		g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, spec->timeout_ms);
		sink->output(sink->ctx, 1, buf, strlen(buf));
	} else if (strcmp(cmd, "chatter") == 0) { /* output, then wait to be cancelled */
		sink->output(sink->ctx, 1, "tick", 4);
		wait_cancel(spec, st);
	} else if (strcmp(cmd, "serve") == 0) {
		sink->address(sink->ctx, "127.0.0.1:4242");
		sink->output(sink->ctx, 1, "listening\n", 10);
		wait_cancel(spec, st);
	} else if (strcmp(cmd, "flags") == 0) { /* the run flags the core passed */
		char buf[16];
		g_snprintf(buf, sizeof(buf), "%u", spec->flags);
		sink->output(sink->ctx, 1, buf, strlen(buf));
	} else if (strcmp(cmd, "stdin") == 0) { /* what the core handed over as stdin */
		if (spec->stdin_fd >= 0)
			sink->output(sink->ctx, 2, "fd", 2);
		sink->output(sink->ctx, 1, spec->stdin_data ? spec->stdin_data : "",
			     (size_t)spec->stdin_len);
	} else if (strcmp(cmd, "fail") == 0) {
		return cordon_host_services.error_set(err, EACCES, CORDON_PLUGIN_ERROR_TERMINAL,
						      "exec_failed", "cannot execute %s", arg);
	} else if (strcmp(cmd, "fail-silently") == 0) {
		return -EIO;
	}
	return 0;
}

static int scripted_gc(void *tier, cordon_plugin_error *err)
{
	return 3; /* "removed three leftovers" */
}

static const cordon_plugin_config_key scripted_keys[] = {
	{ "containment", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ NULL, 0, 0 },
};

static const cordon_plugin_driver scripted_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "scripted",
	.config_keys = scripted_keys,
	.configure = scripted_configure,
	.unconfigure = g_free,
	.probe = scripted_probe,
	.open = scripted_open,
	.run = scripted_run,
	.gc = scripted_gc,
};

/* A driver whose probe claims a containment beyond the scale. */
static int boastful_probe(void *tier, cordon_plugin_probe *ret)
{
	ret->available = 1;
	ret->containment = 42;
	return 0;
}

static const cordon_plugin_driver boastful_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "boastful",
	.probe = boastful_probe,
};

static const cordon_plugin_driver *const test_drivers[] = { &scripted_driver, &boastful_driver,
							    NULL };

static const char policy_text[] =
	"cordon: 1\n"
	"tiers:\n"
	"  s: {driver: scripted, containment: \"2\", limits: {wall: 5s, output: 1MiB}}\n"
	"  b: {driver: boastful}\n"
	"trust:\n"
	"  trusted: {require: process-jail, tiers: [s]}\n"
	"  semi-trusted: {require: kernel, tiers: [b]}\n";

static cordon_context *ctx;
static cordon_sandbox *sb;

static void setup(void)
{
	cordon_error *err = NULL;
	cordon_options *o = cordon_options_new();
	o->builtin_drivers = test_drivers;
	ck_assert_int_eq(cordon_options_set_policy_text(o, policy_text, strlen(policy_text),
							"test-sandbox", &err),
			 0);
	int r = cordon_context_new(o, &ctx, &err);
	ck_assert_msg(r == 0, "context: %s", cordon_error_get_message(err));
	cordon_options_free(o);
	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_request_grant_env(req, "GRANTED", "yes", &err), 0);
	r = cordon_sandbox_open(ctx, req, &sb, &err);
	ck_assert_msg(r == 0, "open: %s", cordon_error_get_message(err));
	cordon_request_free(req);
}

static void teardown(void)
{
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}

static cordon_result *run_ok(const char *const *argv, const cordon_run_options *o)
{
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_run(sb, argv, o, &res, &err);
	ck_assert_msg(r == 0, "run: %s", cordon_error_get_message(err));
	return res;
}

/* A driver without CORDON_PLUGIN_DRIVER_MOUNTS (a microVM's, a third party's) is passed
 * over for a request with mounts, by explain and open alike, and never sees one. */
START_TEST(test_a_driver_without_mounts_is_passed_over)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("trusted");
	g_autofree char *dir = testutil_tmpdir();
	ck_assert_int_eq(cordon_request_add_mount(req, dir, "/data", 0, &err), 0);
	cordon_decision *d = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "mount_unsupported");
	cordon_decision_free(d);
	cordon_sandbox *other = NULL;
	ck_assert_int_eq(cordon_sandbox_open(ctx, req, &other, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "mount_unsupported");
	ck_assert_ptr_null(other);
	cordon_request_free(req);
	testutil_rmtree(dir);
}
END_TEST

START_TEST(test_streams_are_separate_and_combined)
{
	const char *a1[] = { "echo", "out", NULL };
	cordon_result *res = run_ok(a1, NULL);
	size_t n;
	ck_assert_str_eq(cordon_result_output(res, 1, &n), "out");
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(cordon_result_output(res, 2, NULL), "");
	ck_assert_str_eq(cordon_result_output(res, 0, NULL), "out");
	ck_assert_ptr_null(cordon_result_output(res, 3, &n));
	cordon_result_free(res);
	const char *a2[] = { "stderr", "err", NULL };
	res = run_ok(a2, NULL);
	ck_assert_str_eq(cordon_result_output(res, 2, NULL), "err");
	ck_assert_str_eq(cordon_result_output(res, 0, NULL), "err");
	cordon_result_free(res);
}
END_TEST

START_TEST(test_exit_status_and_signal)
{
	const char *a1[] = { "status", "7", NULL };
	cordon_result *res = run_ok(a1, NULL);
	ck_assert_int_eq(cordon_result_exit_code(res), 7);
	ck_assert_int_eq(cordon_result_signal(res), 0);
	cordon_result_free(res);
	const char *a2[] = { "signal", "15", NULL };
	res = run_ok(a2, NULL);
	ck_assert_int_eq(cordon_result_exit_code(res), 128 + 15);
	ck_assert_int_eq(cordon_result_signal(res), 15);
	cordon_result_free(res);
}
END_TEST

START_TEST(test_output_cap_from_policy)
{
	const char *argv[] = { "flood", "3145728", NULL }; /* 3 MiB against a 1 MiB cap */
	cordon_result *res = run_ok(argv, NULL);
	size_t n;
	cordon_result_output(res, 1, &n);
	ck_assert_uint_eq(n, 1u << 20);
	ck_assert(cordon_result_truncated(res, 1));
	ck_assert(cordon_result_truncated(res, 0));
	ck_assert(!cordon_result_truncated(res, 2));
	cordon_result_free(res);
}
END_TEST

START_TEST(test_output_cap_per_run)
{
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.output_cap = 1000;
	const char *argv[] = { "flood", "5000", NULL };
	cordon_result *res = run_ok(argv, &o);
	size_t n;
	cordon_result_output(res, 1, &n);
	ck_assert_uint_eq(n, 1000);
	ck_assert(cordon_result_truncated(res, 1));
	cordon_result_free(res);
}
END_TEST

START_TEST(test_run_bounds_refused_not_clamped)
{
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 6000; /* above the tier's 5 s wall */
	const char *argv[] = { "status", "0", NULL };
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "limit_exceeded");
	o.timeout_ms = 0;
	o.output_cap = 2u << 20;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "limit_exceeded");
	ck_assert_ptr_null(res);
}
END_TEST

START_TEST(test_timeout_defaults_to_wall_limit)
{
	const char *argv[] = { "timeout", NULL };
	cordon_result *res = run_ok(argv, NULL);
	ck_assert_str_eq(cordon_result_output(res, 1, NULL), "5000");
	cordon_result_free(res);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 250;
	res = run_ok(argv, &o);
	ck_assert_str_eq(cordon_result_output(res, 1, NULL), "250");
	cordon_result_free(res);
}
END_TEST

START_TEST(test_environment_baseline_and_grants)
{
	g_setenv("CORDON_TEST_API_KEY", "sk-do-not-leak", TRUE);
	g_autofree char *home = g_strdup(g_getenv("HOME"));
	g_setenv("HOME", "/home/host-user", TRUE);
	g_setenv("TMPDIR", "/var/host-tmp", TRUE);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	const char *grants[] = { "PER_RUN=1", NULL };
	o.env = grants;
	const char *argv[] = { "env", NULL };
	cordon_result *res = run_ok(argv, &o);
	const char *env = cordon_result_output(res, 1, NULL);
	ck_assert_ptr_null(strstr(env, "CORDON_TEST_API_KEY"));
	ck_assert_ptr_null(strstr(env, "sk-do-not-leak"));
	ck_assert_ptr_nonnull(strstr(env, "GRANTED=yes\n"));
	ck_assert_ptr_nonnull(strstr(env, "PER_RUN=1\n"));
	ck_assert_ptr_nonnull(strstr(env, "PATH="));
	/* The host's home and temporary directory stay on the host. */
	ck_assert_ptr_null(strstr(env, "host-user"));
	ck_assert_ptr_null(strstr(env, "host-tmp"));
	ck_assert_ptr_nonnull(strstr(env, "HOME=/tmp\n"));
	ck_assert_ptr_nonnull(strstr(env, "TMPDIR=/tmp\n"));
	cordon_result_free(res);
	g_unsetenv("CORDON_TEST_API_KEY");
	g_unsetenv("TMPDIR");
	if (home)
		g_setenv("HOME", home, TRUE);
	else
		g_unsetenv("HOME");
}
END_TEST

START_TEST(test_bad_run_options_refused)
{
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	const char *argv[] = { "status", "0", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	const char *bad_env[] = { "LD_PRELOAD=/x.so", NULL };
	o.env = bad_env;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "env_forbidden");
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.workdir = "../outside";
	ck_assert_int_lt(cordon_sandbox_run(sb, argv, &o, &res, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_path_escape");
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.flags = 0x80;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	o.flags = 0;
	o.size = 8;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	const char *empty[] = { NULL };
	ck_assert_int_eq(cordon_sandbox_run(sb, empty, NULL, &res, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
}
END_TEST

/* A streamed stdin reaches a driver that cannot stream (no CORDON_PLUGIN_DRIVER_STDIN_FD,
 * as this one) whole, as stdin_data; a caller built before stdin_fd (the 0.1 size) is
 * still served, with no stdin; the two stdin fields are exclusive. */
START_TEST(test_stdin_fd_read_whole_for_a_driver_that_cannot_stream)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "piped bytes", 11), 11);
	close(p[1]);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.stdin_fd = p[0];
	const char *argv[] = { "stdin", NULL };
	cordon_result *res = run_ok(argv, &o);
	ck_assert_str_eq(cordon_result_output(res, 1, NULL), "piped bytes");
	ck_assert_str_eq(cordon_result_output(res, 2, NULL), ""); /* no descriptor passed */
	cordon_result_free(res);
	close(p[0]);

	o.size = offsetof(cordon_run_options, stdin_fd);
	o.stdin_fd = 0; /* past the old size: never read */
	res = run_ok(argv, &o);
	ck_assert_str_eq(cordon_result_output(res, 1, NULL), "");
	cordon_result_free(res);

	cordon_error *err = NULL;
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.stdin_fd = 0;
	o.stdin_data = "x";
	o.stdin_len = 1;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
}
END_TEST

/* A terminal is refused by a driver that cannot give one (no CORDON_PLUGIN_DRIVER_TTY, as
 * this one): never a run without it. Servers get none; a terminal takes no stdin_data. */
START_TEST(test_tty_refused_where_the_driver_cannot)
{
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	const char *argv[] = { "echo", "ran", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.flags = CORDON_RUN_TTY;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -ENOTTY);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "unsupported");
	cordon_serve *s = NULL;
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, 0, &o, &s, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	o.stdin_data = "x";
	o.stdin_len = 1;
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, &o, &res, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
}
END_TEST

START_TEST(test_driver_errors)
{
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	const char *a1[] = { "fail", "x", NULL };
	ck_assert_int_eq(cordon_sandbox_run(sb, a1, NULL, &res, &err), -EACCES);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "exec_failed");
	const char *a2[] = { "fail-silently", NULL };
	ck_assert_int_eq(cordon_sandbox_run(sb, a2, NULL, &res, &err), -EIO);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "driver_failed");
	ck_assert_ptr_null(res);
}
END_TEST

START_TEST(test_unsupported_file_ops)
{
	cordon_error *err = NULL;
	void *data = NULL;
	size_t len;
	char **paths = NULL;
	ck_assert_int_eq(cordon_sandbox_read_file(sb, "a", &data, &len, &err), -ENOTSUP);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "unsupported");
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "a", "x", 1, &err), -ENOTSUP);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "unsupported");
	ck_assert_int_eq(cordon_sandbox_glob(sb, "*", &paths, &err), -ENOTSUP);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "unsupported");
	ck_assert_int_eq(cordon_sandbox_walk(sb, ".", &paths, &err), -ENOTSUP);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "unsupported");
	ck_assert_ptr_null(data);
	ck_assert_ptr_null(paths);
}
END_TEST

static int chunks;
static int stop_after_first(void *user, int stream, const void *data, size_t len)
{
	chunks++;
	ck_assert_int_eq(stream, 1);
	ck_assert_mem_eq(data, "tick", 4);
	return 1; /* cancel */
}

START_TEST(test_stream_cancelled_by_callback)
{
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	const char *argv[] = { "chatter", NULL };
	chunks = 0;
	gint64 t0 = g_get_monotonic_time();
	int r = cordon_sandbox_stream(sb, argv, NULL, stop_after_first, NULL, &res, &err);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(chunks, 1);
	ck_assert(cordon_result_cancelled(res));
	ck_assert(!cordon_result_timed_out(res));
	ck_assert_int_lt(g_get_monotonic_time() - t0, 2 * G_USEC_PER_SEC);
	cordon_result_free(res);
}
END_TEST

static int keep_going(void *user, int stream, const void *data, size_t len) { return 0; }

START_TEST(test_stream_cancelled_by_host_fd)
{
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	int ev = eventfd(1, EFD_CLOEXEC); /* already readable */
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.cancel_fd = ev;
	const char *argv[] = { "chatter", NULL };
	ck_assert_int_eq(cordon_sandbox_stream(sb, argv, &o, keep_going, NULL, &res, &err), 0);
	ck_assert(cordon_result_cancelled(res));
	cordon_result_free(res);
	close(ev);
}
END_TEST

/* A scripted server, once it reported its address. */
static cordon_serve *serve_listening(void)
{
	cordon_serve *s = NULL;
	const char *argv[] = { "serve", NULL };
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, 8080, NULL, &s, NULL), 0);
	char *addr = NULL;
	for (int i = 0; i < 200 && !(addr = cordon_serve_address(s)); i++)
		g_usleep(5000);
	ck_assert_str_eq(addr, "127.0.0.1:4242");
	free(addr);
	return s;
}

START_TEST(test_serve_lifecycle)
{
	cordon_error *err = NULL;
	cordon_serve *s = serve_listening();
	ck_assert(cordon_serve_running(s));
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_serve_wait(s, 20, &res, &err), -ETIMEDOUT);
	ck_assert_cordon_error(err, CORDON_ERROR_TRANSIENT, "still_running");
	char *out = cordon_serve_output(s);
	ck_assert_str_eq(out, "listening\n");
	free(out);
	ck_assert_int_eq(cordon_serve_stop(s, &err), 0);
	ck_assert_int_eq(cordon_serve_stop(s, &err), 0); /* idempotent */
	ck_assert(!cordon_serve_running(s));
	ck_assert_int_eq(cordon_serve_wait(s, -1, &res, &err), 0);
	ck_assert(cordon_result_cancelled(res));
	cordon_result_free(res);
	cordon_serve_free(s);
}
END_TEST

START_TEST(test_serve_stopped_by_close)
{
	cordon_error *err = NULL;
	cordon_serve *s = NULL;
	const char *argv[] = { "serve", NULL };
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, 0, NULL, &s, &err), 0);
	cordon_sandbox_close(sb); /* must stop the server and not wait 5 s for it */
	sb = NULL;
	ck_assert(!cordon_serve_running(s));
	cordon_serve_free(s); /* still valid after the sandbox is gone */
}
END_TEST

static char *run_flags_seen(uint32_t run_flags)
{
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.flags = run_flags;
	const char *argv[] = { "flags", NULL };
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_run(sb, argv, &o, &res, &err);
	ck_assert_msg(r == 0, "%s", cordon_error_get_message(err));
	char *seen = g_strdup(cordon_result_output(res, 1, NULL));
	cordon_result_free(res);
	return seen;
}

/* A last run reaches the driver as such, and nothing runs after it: run,
 * exec, stream and serve are refused as spent. */
START_TEST(test_last_run_spends_the_sandbox)
{
	g_autofree char *plain = run_flags_seen(0);
	ck_assert_str_eq(plain, "0");
	g_autofree char *last = run_flags_seen(CORDON_RUN_LAST);
	ck_assert_uint_eq(strtoul(last, NULL, 10), CORDON_PLUGIN_RUNREQ_LAST);
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	const char *argv[] = { "status", "0", NULL };
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, NULL, &res, &err), -EPIPE);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "sandbox_spent");
	ck_assert_int_eq(cordon_sandbox_exec(sb, "true", NULL, &res, &err), -EPIPE);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "sandbox_spent");
	ck_assert_int_eq(cordon_sandbox_stream(sb, argv, NULL, keep_going, NULL, &res, &err),
			 -EPIPE);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "sandbox_spent");
	cordon_serve *s = NULL;
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, 0, NULL, &s, &err), 0);
	ck_assert_int_eq(cordon_serve_wait(s, -1, &res, &err), -EPIPE);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "sandbox_spent");
	cordon_serve_free(s);
}
END_TEST

/* A last run that is not alone (a server runs) is an ordinary run for the
 * driver, which may not spend the sandbox under the server; it still ends
 * runs. */
START_TEST(test_last_run_beside_a_server)
{
	cordon_error *err = NULL;
	cordon_serve *s = serve_listening();
	g_autofree char *last = run_flags_seen(CORDON_RUN_LAST);
	ck_assert_str_eq(last, "0");
	cordon_result *res = NULL;
	const char *argv[] = { "status", "0", NULL };
	ck_assert_int_eq(cordon_sandbox_run(sb, argv, NULL, &res, &err), -EPIPE);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "sandbox_spent");
	ck_assert_int_eq(cordon_serve_stop(s, &err), 0);
	cordon_serve_free(s);
}
END_TEST

START_TEST(test_probe_never_claims_beyond_the_scale)
{
	cordon_error *err = NULL;
	size_t b = 1;
	ck_assert_str_eq(cordon_context_tier_name(ctx, b), "b");
	cordon_probe_report *rep = NULL;
	ck_assert_int_eq(cordon_context_probe_tier(ctx, b, &rep, &err), 0);
	ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_PROCESS_JAIL);
	cordon_probe_report_free(rep);
	/* ... so a level that needs kernel containment refuses it. */
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_decision *d = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "containment_insufficient");
	ck_assert(!cordon_decision_admitted(d));
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0), "process-jail < kernel");
	cordon_decision_free(d);
	cordon_request_free(req);
}
END_TEST

START_TEST(test_gc_sums_tiers_with_gc)
{
	cordon_error *err = NULL;
	/* Tier s (scripted) removes 3; tier b's driver has no gc and is skipped. */
	ck_assert_int_eq(cordon_context_gc(ctx, &err), 3);
	ck_assert_ptr_null(err);
	ck_assert_int_eq(cordon_context_gc(NULL, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
}
END_TEST

/* ---- one route for limits ------------------------------------------------------------ */

/* The tier's limits, the rules' and the request's are merged once, by admission, and reach
 * the driver in open_spec.limits alone: a tier limit tighter than a rule's wins and is
 * reported once; the request's own value is never widened to the tier's or the rule's. */
static const char limits_policy[] = "cordon: 1\n"
				    "tiers:\n"
				    "  l: {driver: scripted, limits: {memory: 256MiB, pids: 64}}\n"
				    "trust:\n"
				    "  trusted: {require: process-jail, tiers: [l]}\n"
				    "rules:\n"
				    "  - {name: cap, limit: {memory: 512MiB, nofile: 100}}\n";

#define BIT(l) (1u << (l))

static int open_with_memory(cordon_context *c, uint64_t memory, char **ret_json, cordon_error **err)
{
	cordon_request *req = cordon_request_new("trusted");
	if (memory)
		ck_assert_int_eq(cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, memory, NULL),
				 0);
	cordon_decision *d = NULL;
	cordon_error *derr = NULL;
	cordon_decide(c, req, &d, &derr);
	*ret_json = cordon_decision_to_json(d);
	cordon_decision_free(d);
	cordon_error_free(derr);
	memset(&opened_limits, 0xa5, sizeof(opened_limits));
	cordon_sandbox *s = NULL;
	int r = cordon_sandbox_open(c, req, &s, err);
	cordon_sandbox_close(s);
	cordon_request_free(req);
	return r;
}

START_TEST(test_limits_reach_the_driver_once)
{
	cordon_options *o = cordon_options_new();
	o->builtin_drivers = test_drivers;
	ck_assert_int_eq(cordon_options_set_policy_text(o, limits_policy, strlen(limits_policy),
							"limits", NULL),
			 0);
	cordon_context *c = NULL;
	ck_assert_int_eq(cordon_context_new(o, &c, NULL), 0);
	cordon_options_free(o);
	cordon_error *err = NULL;
	char *json = NULL;

	/* nothing asked: the tier's 256MiB (tighter than the rule's 512MiB), its pids, the
	 * rule's nofile; nothing else, and memory once in the decision */
	ck_assert_int_eq(open_with_memory(c, 0, &json, &err), 0);
	ck_assert_uint_eq(opened_limits.set, BIT(CORDON_LIMIT_MEMORY) | BIT(CORDON_LIMIT_PIDS) |
						     BIT(CORDON_LIMIT_NOFILE));
	ck_assert_uint_eq(opened_limits.value[CORDON_LIMIT_MEMORY], 256ull << 20);
	ck_assert_uint_eq(opened_limits.value[CORDON_LIMIT_PIDS], 64);
	ck_assert_uint_eq(opened_limits.value[CORDON_LIMIT_NOFILE], 100);
	ck_assert_uint_eq(opened_limits.size, sizeof(opened_limits));
	ck_assert_msg(strstr(json, "\"limits\":{\"memory\":268435456,\"pids\":64,\"nofile\":100}"),
		      "%s", json);
	ck_assert_ptr_eq(strstr(json, "\"memory\""), g_strrstr(json, "\"memory\""));
	free(json);

	/* 128MiB asked: 128MiB opened, not the tier's 256MiB nor the rule's 512MiB */
	ck_assert_int_eq(open_with_memory(c, 128ull << 20, &json, &err), 0);
	ck_assert_uint_eq(opened_limits.value[CORDON_LIMIT_MEMORY], 128ull << 20);
	ck_assert_uint_eq(opened_limits.set, BIT(CORDON_LIMIT_MEMORY) | BIT(CORDON_LIMIT_PIDS) |
						     BIT(CORDON_LIMIT_NOFILE));
	ck_assert_msg(strstr(json, "\"limits\":{\"memory\":134217728,\"pids\":64,\"nofile\":100}"),
		      "%s", json);
	free(json);

	/* above the tier's cap (within the rule's): refused, never clamped to it */
	ck_assert_int_eq(open_with_memory(c, 300ull << 20, &json, &err), -EPERM);
	ck_assert_msg(strstr(cordon_error_get_message(err), "tier limit: memory 300MiB > 256MiB"),
		      "%s", cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "sandbox_denied");
	ck_assert_uint_eq(opened_limits.set, 0xa5a5a5a5u); /* open never ran */
	free(json);
	cordon_context_free(c);
}
END_TEST

/* ---- a hung engine ---------------------------------------------------------------- */

/* A probe that does not answer until the test lets it (an engine that hangs);
 * it counts how many run at once. */
static GMutex hung_lock;
static GCond hung_cond;
static bool hung_released;
static int hung_running, hung_most;

static int hung_probe(void *tier, cordon_plugin_probe *ret)
{
	g_mutex_lock(&hung_lock);
	hung_running++;
	hung_most = MAX(hung_most, hung_running);
	while (!hung_released)
		g_cond_wait(&hung_cond, &hung_lock);
	hung_running--;
	g_mutex_unlock(&hung_lock);
	ret->available = 1;
	return 0;
}

static const cordon_plugin_driver hung_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "hung",
	.probe = hung_probe,
};

/* Two candidates whose probes hang: probed at once, and admission gives up on
 * both after the 5 s bound in all (h2 after its own probe_timeout, 1 s), not each
 * after its engine's timeout; the context outlives cordon_context_free until the
 * abandoned probes end. */
START_TEST(test_hung_probes_are_bounded)
{
	static const cordon_plugin_driver *const drivers[] = { &hung_driver, NULL };
	static const char text[] = "cordon: 1\ntiers: {h1: {driver: hung}, h2: {driver: hung, "
				   "probe_timeout: 1s}}\n"
				   "trust: {untrusted: {tiers: [h1, h2]}}\n";
	cordon_options *o = cordon_options_new();
	o->builtin_drivers = drivers;
	ck_assert_int_eq(cordon_options_set_policy_text(o, text, strlen(text), "hung", NULL), 0);
	cordon_context *c = NULL;
	ck_assert_int_eq(cordon_context_new(o, &c, NULL), 0);
	cordon_options_free(o);
	cordon_request *req = cordon_request_new("untrusted");
	cordon_decision *d = NULL;
	cordon_error *err = NULL;
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_eq(cordon_decide(c, req, &d, &err), -EPERM);
	gint64 took = g_get_monotonic_time() - t0;
	fprintf(stderr, "# two hung probes: admission answered in %.2f s\n", took / 1e6);
	ck_assert_int_ge(took, 4 * G_USEC_PER_SEC);
	ck_assert_int_lt(took, 8 * G_USEC_PER_SEC);
	g_mutex_lock(&hung_lock);
	int most = hung_most;
	g_mutex_unlock(&hung_lock);
	ck_assert_int_eq(most, 2);
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "unavailable: the probe timed out: no answer within 5 s");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 1),
			 "unavailable: the probe timed out: no answer within 1 s");
	cordon_error_free(err);
	cordon_decision_free(d);
	cordon_request_free(req);
	cordon_context_free(c); /* returns: the probes still hang */
	g_mutex_lock(&hung_lock);
	hung_released = true;
	g_cond_broadcast(&hung_cond);
	g_mutex_unlock(&hung_lock);
}
END_TEST

static int fake_listen(void *sandbox, uint16_t *ret_port, cordon_plugin_error *err)
{
	return -EOPNOTSUPP;
}

/* CORDON_PLUGIN_DRIVER_EGRESS_PROXY names the listen op the core's proxy serves: a driver
 * declaring it without the op is refused when it registers, never left to fail at open. */
START_TEST(test_egress_proxy_needs_listen)
{
	static const char text[] = "cordon: 1\ntiers: {p: {driver: proxied}}\n"
				   "trust: {untrusted: {tiers: [p]}}\n";
	for (int with_listen = 0; with_listen < 2; with_listen++) {
		const cordon_plugin_driver drv = {
			.size = sizeof(cordon_plugin_driver),
			.flags = CORDON_PLUGIN_DRIVER_EGRESS_PROXY,
			.name = "proxied",
			.probe = scripted_probe,
			.listen = with_listen ? fake_listen : NULL,
		};
		const cordon_plugin_driver *const drivers[] = { &drv, NULL };
		cordon_options *o = cordon_options_new();
		o->builtin_drivers = drivers;
		ck_assert_int_eq(
			cordon_options_set_policy_text(o, text, strlen(text), "proxied", NULL), 0);
		cordon_context *c = NULL;
		cordon_error *err = NULL;
		int r = cordon_context_new(o, &c, &err);
		cordon_options_free(o);
		if (with_listen) {
			ck_assert_msg(r == 0, "%s", err ? cordon_error_get_message(err) : "");
			cordon_context_free(c);
		} else {
			ck_assert_int_lt(r, 0);
			ck_assert_msg(strstr(cordon_error_get_message(err), "unknown driver flags"),
				      "%s", cordon_error_get_message(err));
			cordon_error_free(err);
		}
	}
}
END_TEST

static Suite *sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *tc = tcase_create("port");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_streams_are_separate_and_combined);
	tcase_add_test(tc, test_a_driver_without_mounts_is_passed_over);
	tcase_add_test(tc, test_exit_status_and_signal);
	tcase_add_test(tc, test_output_cap_from_policy);
	tcase_add_test(tc, test_output_cap_per_run);
	tcase_add_test(tc, test_run_bounds_refused_not_clamped);
	tcase_add_test(tc, test_timeout_defaults_to_wall_limit);
	tcase_add_test(tc, test_environment_baseline_and_grants);
	tcase_add_test(tc, test_bad_run_options_refused);
	tcase_add_test(tc, test_stdin_fd_read_whole_for_a_driver_that_cannot_stream);
	tcase_add_test(tc, test_tty_refused_where_the_driver_cannot);
	tcase_add_test(tc, test_driver_errors);
	tcase_add_test(tc, test_unsupported_file_ops);
	tcase_add_test(tc, test_stream_cancelled_by_callback);
	tcase_add_test(tc, test_stream_cancelled_by_host_fd);
	tcase_add_test(tc, test_serve_lifecycle);
	tcase_add_test(tc, test_serve_stopped_by_close);
	tcase_add_test(tc, test_last_run_spends_the_sandbox);
	tcase_add_test(tc, test_last_run_beside_a_server);
	tcase_add_test(tc, test_probe_never_claims_beyond_the_scale);
	tcase_add_test(tc, test_gc_sums_tiers_with_gc);
	tcase_add_test(tc, test_egress_proxy_needs_listen);
	suite_add_tcase(s, tc);
	tc = tcase_create("limits");
	tcase_add_test(tc, test_limits_reach_the_driver_once);
	suite_add_tcase(s, tc);
	tc = tcase_create("probe");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_hung_probes_are_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(sandbox_suite()); }
