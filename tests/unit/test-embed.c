/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The outcome audit (a run line per run, linked to its decision) and the embedding
 * calls (cordon_version, the log handler, the stream handle and its pollable fd, serve
 * readiness), on the real process-jail tier. Public API only. */
#include "config.h"

#include "testutil.h"
#include "jsoncheck.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char *dir;
static char *trail;

static void setup(void)
{
	dir = testutil_tmpdir();
	trail = g_build_filename(dir, "audit.jsonl", NULL);
}

static void teardown(void)
{
	testutil_rmtree(dir);
	g_free(dir);
	g_free(trail);
}

static cordon_context *jail_ctx(const char *audit_extra)
{
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\ntiers: {jail: {driver: local, confine: none}}\n"
		"trust: {trusted: {require: process-jail, tiers: [jail]}}\n"
		"audit: {path: %s%s}\n",
		trail, audit_extra ? audit_extra : "");
	return testutil_context_from_text(policy, "embed.yaml");
}

static cordon_sandbox *open_jail(cordon_context *ctx, const char *caller)
{
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	if (caller)
		ck_assert_int_eq(cordon_request_set_caller(req, caller, &err), 0);
	cordon_sandbox *sb = NULL;
	ck_assert_msg(cordon_sandbox_open(ctx, req, &sb, &err) == 0, "open: %s",
		      err ? cordon_error_get_message(err) : "?");
	cordon_request_free(req);
	return sb;
}

static cordon_result *run(cordon_sandbox *sb, const char *line, const cordon_run_options *o)
{
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_exec(sb, line, o, &res, &err) == 0, "exec: %s",
		      err ? cordon_error_get_message(err) : "?");
	return res;
}

/* The trail's lines whose "event" is event, each checked to be one JSON object. */
static GPtrArray *events(const char *event)
{
	g_autofree char *text = NULL;
	ck_assert(g_file_get_contents(trail, &text, NULL, NULL));
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_autofree char *want = g_strdup_printf("\"event\":\"%s\"", event);
	GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
	for (size_t i = 0; lines[i]; i++) {
		if (!lines[i][0])
			continue;
		ck_assert_msg(json_is_valid(lines[i]), "not JSON: %s", lines[i]);
		if (strstr(lines[i], want))
			g_ptr_array_add(a, g_strdup(lines[i]));
	}
	return a;
}

#define assert_has(line, needle) \
	ck_assert_msg(strstr((const char *)(line), (needle)), "lacks %s: %s", (needle), \
		      (const char *)(line))
#define assert_lacks(line, needle) \
	ck_assert_msg(!strstr((const char *)(line), (needle)), "has %s: %s", (needle), \
		      (const char *)(line))

START_TEST(test_outcome_linked_and_hashed)
{
	cordon_context *ctx = jail_ctx(NULL);
	cordon_sandbox *sb = open_jail(ctx, "agent-7 session 3");
	cordon_result *res = run(sb, "printf hi; printf err >&2; exit 3", NULL);
	ck_assert_int_eq(cordon_result_exit_code(res), 3);
	cordon_result_free(res);

	g_autoptr(GPtrArray) dec = events("decision");
	g_autoptr(GPtrArray) runs = events("run");
	ck_assert_uint_eq(dec->len, 1);
	ck_assert_uint_eq(runs->len, 1);
	const char *d = dec->pdata[0], *r = runs->pdata[0];
	/* the run names the decision that opened its sandbox, and the sandbox */
	const char *idp = strstr(d, "\"id\":\"");
	ck_assert_ptr_nonnull(idp);
	g_autofree char *id = g_strndup(idp + 6, 36);
	g_autofree char *link = g_strdup_printf("\"decision\":\"%s\"", id);
	assert_has(r, link);
	g_autofree char *sbid = g_strdup_printf("\"sandbox\":\"%s\"", cordon_sandbox_id(sb));
	assert_has(r, sbid);
	ck_assert_int_eq(strlen(cordon_sandbox_id(sb)), 36);
	/* the default records the argv's SHA-256 (its words each ended by a NUL), not it */
	static const char words[] = "/bin/sh\0-c\0printf hi; printf err >&2; exit 3";
	g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)words,
							   sizeof(words));
	g_autofree char *hash = g_strdup_printf("\"argv_sha256\":\"%s\"", sum);
	assert_has(r, hash);
	assert_lacks(r, "printf hi");
	assert_lacks(r, "\"argv\":");
	assert_has(r, "\"exit_code\":3,\"signal\":null,\"limits_hit\":[],\"cancelled\":false");
	assert_has(r, "\"bytes_out\":{\"stdout\":2,\"stderr\":3}");
	assert_has(r, "\"kind\":\"run\"");
	assert_has(r, "\"tier\":\"jail\"");
	assert_has(r, "\"error\":null");
	assert_has(r, "\"duration_ms\":");
	g_autofree char *caller = g_strdup_printf(
		"\"caller\":{\"uid\":%u,\"pid\":%u,\"label\":\"agent-7 session 3\"}",
		(unsigned)getuid(), (unsigned)getpid());
	assert_has(r, caller);
	assert_has(d, caller);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_outcome_argv_modes)
{
	cordon_context *ctx = jail_ctx(", record_argv: full");
	cordon_sandbox *sb = open_jail(ctx, NULL);
	cordon_result_free(run(sb, "true", NULL));
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	g_autoptr(GPtrArray) full = events("run");
	ck_assert_uint_eq(full->len, 1);
	assert_has(full->pdata[0], "\"argv\":[\"/bin/sh\",\"-c\",\"true\"]");
	assert_has(full->pdata[0], "\"label\":null");
	assert_lacks(full->pdata[0], "argv_sha256");

	ck_assert_int_eq(unlink(trail), 0);
	ctx = jail_ctx(", record_argv: none");
	sb = open_jail(ctx, NULL);
	cordon_result_free(run(sb, "true", NULL));
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	g_autoptr(GPtrArray) none = events("run");
	ck_assert_uint_eq(none->len, 1);
	assert_lacks(none->pdata[0], "argv");

	/* anything else is a policy error, not a silent default */
	g_autofree char *bad = g_strdup_printf(
		"cordon: 1\ntiers: {jail: {driver: local, confine: none}}\n"
		"trust: {trusted: {tiers: [jail]}}\naudit: {path: %s, record_argv: some}\n",
		trail);
	cordon_options *o = cordon_options_new();
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_options_set_policy_text(o, bad, strlen(bad), "bad.yaml", &err), 0);
	ck_assert_int_lt(cordon_context_new(o, &ctx, &err), 0);
	assert_has(cordon_error_get_message(err), "record_argv");
	cordon_error_free(err);
	cordon_options_free(o);
}
END_TEST

START_TEST(test_outcome_limits_and_failures)
{
	cordon_context *ctx = jail_ctx(NULL);
	cordon_sandbox *sb = open_jail(ctx, NULL);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 300;
	cordon_result *res = run(sb, "sleep 5", &o);
	ck_assert(cordon_result_timed_out(res));
	cordon_result_free(res);
	o = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	o.output_cap = 10;
	res = run(sb, "head -c 100 /dev/zero", &o);
	ck_assert(cordon_result_truncated(res, 1));
	cordon_result_free(res);
	cordon_result_free(run(sb, "kill -9 $$", NULL));
	const char *missing[] = { "/no/such/program", NULL };
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_run(sb, missing, NULL, &res, NULL), 0);
	(void)err;
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);

	g_autoptr(GPtrArray) runs = events("run");
	ck_assert_uint_eq(runs->len, 4);
	assert_has(runs->pdata[0], "\"limits_hit\":[\"timeout\"]");
	assert_has(runs->pdata[1], "\"limits_hit\":[\"output\"]");
	/* bytes out are what the work wrote, not what the cap kept */
	assert_has(runs->pdata[1], "\"stdout\":100");
	assert_has(runs->pdata[2], "\"exit_code\":null,\"signal\":9");
	/* the code is recorded even though the host passed no reterr */
	assert_has(runs->pdata[3], "\"error\":\"exec_failed\"");
	assert_has(runs->pdata[3], "\"exit_code\":null");
}
END_TEST

START_TEST(test_caller_label_checked)
{
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_request_set_caller(req, "line\nforged", &err), -EINVAL);
	ck_assert_int_eq(cordon_error_get_class(err), CORDON_ERROR_INVALID);
	cordon_error_free(err);
	char big[300];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(cordon_request_set_caller(req, big, NULL), -EINVAL);
	ck_assert_int_eq(cordon_request_set_caller(req, "", NULL), -EINVAL);
	cordon_request_free(req);
}
END_TEST

/* ---- version, log handler ------------------------------------------------------------ */

START_TEST(test_version)
{
	int ma = -1, mi = -1, mc = -1;
	const char *v = cordon_version(&ma, &mi, &mc);
	ck_assert_str_eq(v, PACKAGE_VERSION);
	g_autofree char *again = g_strdup_printf("%d.%d.%d", ma, mi, mc);
	ck_assert_str_eq(again, PACKAGE_VERSION);
	ck_assert_str_eq(cordon_version(NULL, NULL, NULL), v);
	cordon_free(NULL);
	cordon_free(cordon_decision_to_json(NULL));
}
END_TEST

typedef struct log_seen {
	gint count, debug;
	GMutex lock;
	GString *text;
} log_seen;

static void on_log(void *user, cordon_log_level level, const char *message)
{
	log_seen *s = user;
	g_atomic_int_inc(&s->count);
	if (level == CORDON_LOG_DEBUG)
		g_atomic_int_inc(&s->debug);
	g_mutex_lock(&s->lock);
	g_string_append_printf(s->text, "%d %s\n", (int)level, message);
	g_mutex_unlock(&s->lock);
}

/* A decision whose audit line cannot be written, with required: false, logs at debug. */
static gpointer decide_lax(gpointer data)
{
	cordon_context *ctx = data;
	for (int i = 0; i < 50; i++) {
		cordon_request *req = cordon_request_new("trusted");
		ck_assert_int_eq(cordon_decide(ctx, req, NULL, NULL), 0);
		cordon_request_free(req);
	}
	return NULL;
}

START_TEST(test_log_handler)
{
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\ntiers: {jail: {driver: local, confine: none}}\n"
		"trust: {trusted: {tiers: [jail]}}\naudit: {path: %s/no-dir/a.jsonl, required: "
		"false}\n",
		dir);
	cordon_context *ctx = testutil_context_from_text(policy, "lax.yaml");
	log_seen a = { .text = g_string_new(NULL) }, b = { .text = g_string_new(NULL) };
	g_mutex_init(&a.lock);
	g_mutex_init(&b.lock);
	cordon_set_log_handler(on_log, &a, CORDON_LOG_DEBUG);
	GThread *t[4];
	for (int i = 0; i < 4; i++)
		t[i] = g_thread_new("decide", decide_lax, ctx);
	for (int i = 0; i < 4; i++)
		g_thread_join(t[i]);
	ck_assert_int_ge(g_atomic_int_get(&a.debug), 200);
	ck_assert_msg(strstr(a.text->str, "4 audit (not required)"), "%s", a.text->str);
	/* a level below debug: the same messages are not delivered */
	cordon_set_log_handler(on_log, &b, CORDON_LOG_WARNING);
	int before = g_atomic_int_get(&a.count);
	decide_lax(ctx);
	ck_assert_int_eq(g_atomic_int_get(&a.count), before); /* the old handler gets nothing */
	ck_assert_int_eq(g_atomic_int_get(&b.count), 0);
	cordon_set_log_handler(NULL, NULL, CORDON_LOG_DEBUG);
	decide_lax(ctx);
	ck_assert_int_eq(g_atomic_int_get(&b.count), 0);
	cordon_context_free(ctx);
	g_string_free(a.text, TRUE);
	g_string_free(b.text, TRUE);
}
END_TEST

/* ---- the stream handle ------------------------------------------------------------------ */

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Reads everything until the end, by polling the fd; out[1], out[2] get the streams. */
static void drain(cordon_stream *st, GString *out[3])
{
	char buf[4096];
	for (;;) {
		ck_assert_msg(readable(cordon_stream_fd(st), 20000),
			      "the fd never became readable");
		cordon_output_stream which = CORDON_STREAM_COMBINED;
		int n;
		while ((n = cordon_stream_read(st, buf, sizeof(buf), &which, NULL)) > 0) {
			ck_assert(which == CORDON_STREAM_STDOUT || which == CORDON_STREAM_STDERR);
			g_string_append_len(out[which], buf, n);
		}
		if (n == 0)
			return;
		ck_assert_int_eq(n, -EAGAIN);
	}
}

START_TEST(test_stream_handle)
{
	cordon_context *ctx = jail_ctx(NULL);
	cordon_sandbox *sb = open_jail(ctx, NULL);
	const char *argv[] = { "/bin/sh", "-c", "sleep 0.4; echo out; echo err >&2; exit 5", NULL };
	cordon_stream *st = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_stream_start(sb, argv, NULL, &st, &err), 0);
	/* nothing yet: not readable, and a read says so instead of blocking */
	ck_assert(!readable(cordon_stream_fd(st), 0));
	char buf[16];
	ck_assert_int_eq(cordon_stream_read(st, buf, sizeof(buf), NULL, &err), -EAGAIN);
	ck_assert_str_eq(cordon_error_get_code(err), "still_running");
	cordon_error_free(err);
	err = NULL;
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_stream_result(st, &res, NULL), -EAGAIN);
	GString *out[3] = { NULL, g_string_new(NULL), g_string_new(NULL) };
	drain(st, out);
	ck_assert_str_eq(out[1]->str, "out\n");
	ck_assert_str_eq(out[2]->str, "err\n");
	ck_assert_int_eq(cordon_stream_result(st, &res, &err), 0);
	ck_assert_int_eq(cordon_result_exit_code(res), 5);
	cordon_result_free(res);
	cordon_stream_free(st);
	g_autoptr(GPtrArray) runs = events("run");
	ck_assert_uint_eq(runs->len, 1);
	assert_has(runs->pdata[0], "\"kind\":\"stream\"");
	g_string_free(out[1], TRUE);
	g_string_free(out[2], TRUE);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* More than the queue holds, read late: the work waits for the reader, nothing is lost. */
START_TEST(test_stream_backpressure_and_cancel)
{
	cordon_context *ctx = jail_ctx(NULL);
	cordon_sandbox *sb = open_jail(ctx, NULL);
	const char *big[] = { "/bin/sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x", NULL };
	cordon_stream *st = NULL;
	ck_assert_int_eq(cordon_sandbox_stream_start(sb, big, NULL, &st, NULL), 0);
	g_usleep(500 * 1000);
	GString *out[3] = { NULL, g_string_new(NULL), g_string_new(NULL) };
	drain(st, out);
	ck_assert_uint_eq(out[1]->len, 5000000);
	ck_assert_ptr_null(memchr(out[1]->str, 'y', out[1]->len));
	cordon_stream_free(st);

	const char *slow[] = { "/bin/sleep", "30", NULL };
	ck_assert_int_eq(cordon_sandbox_stream_start(sb, slow, NULL, &st, NULL), 0);
	gint64 t0 = g_get_monotonic_time();
	cordon_stream_cancel(st);
	drain(st, out);
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_stream_result(st, &res, NULL), 0);
	ck_assert(cordon_result_cancelled(res));
	ck_assert_int_lt(g_get_monotonic_time() - t0, 10 * G_TIME_SPAN_SECOND);
	cordon_result_free(res);
	/* taken once */
	ck_assert_int_eq(cordon_stream_result(st, &res, NULL), -EINVAL);
	cordon_stream_free(st);
	/* freeing a running stream cancels it */
	ck_assert_int_eq(cordon_sandbox_stream_start(sb, slow, NULL, &st, NULL), 0);
	t0 = g_get_monotonic_time();
	cordon_stream_free(st);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 10 * G_TIME_SPAN_SECOND);
	g_string_free(out[1], TRUE);
	g_string_free(out[2], TRUE);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* ---- serve readiness ------------------------------------------------------------------ */

static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

START_TEST(test_serve_ready)
{
	cordon_context *ctx = jail_ctx(NULL);
	cordon_sandbox *sb = open_jail(ctx, NULL);
	uint16_t port = free_port();
	g_autofree char *script = g_strdup_printf(
		"import socket,time\ntime.sleep(0.6)\ns=socket.socket()\n"
		"s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
		"s.bind(('127.0.0.1',%u))\ns.listen(1)\ntime.sleep(30)\n",
		port);
	const char *argv[] = { "/usr/bin/python3", "-c", script, NULL };
	cordon_serve *s = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_serve(sb, argv, port, NULL, &s, &err), 0);
	/* listening only after 0.6 s: not ready at first */
	ck_assert_int_eq(cordon_serve_wait_ready(s, 100, &err), -ETIMEDOUT);
	ck_assert_str_eq(cordon_error_get_code(err), "still_starting");
	cordon_error_free(err);
	err = NULL;
	ck_assert_msg(cordon_serve_wait_ready(s, 10000, &err) == 0, "%s",
		      err ? cordon_error_get_message(err) : "?");
	cordon_serve_free(s);

	/* a server that ends is never ready */
	const char *quick[] = { "/bin/sh", "-c", "exit 0", NULL };
	ck_assert_int_eq(cordon_sandbox_serve(sb, quick, free_port(), NULL, &s, NULL), 0);
	ck_assert_int_eq(cordon_serve_wait_ready(s, 10000, &err), -EPIPE);
	ck_assert_str_eq(cordon_error_get_code(err), "serve_ended");
	cordon_error_free(err);
	cordon_serve_free(s);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	g_autoptr(GPtrArray) runs = events("run");
	ck_assert_uint_eq(runs->len, 2);
	assert_has(runs->pdata[0], "\"kind\":\"serve\"");
}
END_TEST

static Suite *embed_suite(void)
{
	Suite *s = suite_create("embed");
	TCase *tc = tcase_create("audit");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_outcome_linked_and_hashed);
	tcase_add_test(tc, test_outcome_argv_modes);
	tcase_add_test(tc, test_outcome_limits_and_failures);
	tcase_add_test(tc, test_caller_label_checked);
	suite_add_tcase(s, tc);
	tc = tcase_create("embedding");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_log_handler);
	tcase_add_test(tc, test_stream_handle);
	tcase_add_test(tc, test_stream_backpressure_and_cancel);
	tcase_add_test(tc, test_serve_ready);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(embed_suite()); }
