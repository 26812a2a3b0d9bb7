/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The e2b plugin against a hostile server: a test double (hostile_double below, a few
 * canned byte sequences on a loopback socket, no E2B logic) that answers what a real
 * server never sends: invalid JSON, 500s, a redirect to another host, an endless body,
 * truncated envelopes, a frame header claiming 4 GiB, a wrong content type, a stalled
 * stream, an endless stream. Each must be a clear error (or, for the stall, a timed-out
 * run), with the sandbox killed afterwards and the host's memory bounded. Public API only.
 * The double also records what pause and resume send, from the library and through cordon
 * server (whose pause on the e2b tier is the library's).
 */
#include "config.h"

#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <cordon/cordon.h>
#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SBX_ID "ihostile0000000000000"

/* The most a case may grow the process. Under ASan the check is off: its quarantine keeps
 * what was freed, and the resident size measures that (the plain build checks the bound). */
#ifdef __SANITIZE_ADDRESS__
#define GROWTH_MAX_KIB (1L << 30)
#else
#define GROWTH_MAX_KIB (64L * 1024)
#endif

typedef enum scenario {
	S_NORMAL,
	S_CREATE_BAD_JSON,
	S_CREATE_500,
	S_CREATE_REDIRECT,
	S_CREATE_ENDLESS,
	S_START_TRUNCATED,
	S_START_HUGE_FRAME,
	S_START_WRONG_TYPE,
	S_START_STALL,
	S_START_ENDLESS,
	S_START_NO_TRAILER,
	S_READ_ENDLESS,
	S_KILL_503,
	S_LIST_503,
	S_PAUSE_409,
} scenario;

static int listen_fd = -1;
static unsigned port;
static GMutex lock;
static scenario current;
static GPtrArray *seen; /* "METHOD PATH" of every request */
static char *dir;

/* ---- the hostile double ------------------------------------------------------------------ */

static void send_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void send_str(int fd, const char *s) { send_all(fd, s, strlen(s)); }

/* One chunk of a chunked body. */
static bool chunk(int fd, const void *data, size_t len)
{
	char head[32];
	snprintf(head, sizeof(head), "%zx\r\n", len);
	send_str(fd, head);
	ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
	send_str(fd, "\r\n");
	return n == (ssize_t)len;
}

static bool envelope(int fd, unsigned char flags, const char *json)
{
	size_t n = strlen(json);
	unsigned char *b = g_malloc(5 + n);
	b[0] = flags;
	b[1] = (unsigned char)(n >> 24);
	b[2] = (unsigned char)(n >> 16);
	b[3] = (unsigned char)(n >> 8);
	b[4] = (unsigned char)n;
	memcpy(b + 5, json, n);
	bool ok = chunk(fd, b, 5 + n);
	g_free(b);
	return ok;
}

static void json_reply(int fd, const char *status, const char *body)
{
	char head[256];
	snprintf(head, sizeof(head),
		 "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
		 status, strlen(body));
	send_str(fd, head);
	send_str(fd, body);
}

static const char created[] = "{\"templateID\":\"base\",\"sandboxID\":\"" SBX_ID "\","
			      "\"clientID\":\"6532622b\",\"envdVersion\":\"0.6.13\","
			      "\"envdAccessToken\":\"t0k3n\",\"domain\":null}";

static void endless(int fd)
{
	static char junk[16384];
	memset(junk, '[', sizeof(junk));
	send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 1 << 16 && chunk(fd, junk, sizeof(junk)); i++)
		;
}

static void wait_close(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[256];
	for (int i = 0; i < 300 && poll(&p, 1, 100) >= 0; i++)
		if ((p.revents & POLLIN) && recv(fd, b, sizeof(b), 0) <= 0)
			return;
}

static void stream(int fd, scenario s)
{
	if (s == S_START_WRONG_TYPE) {
		send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
			     "6\r\n\r\n<html>");
		return;
	}
	send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/connect+json\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n");
	envelope(fd, 0, "{\"event\":{\"start\":{\"pid\":7}}}");
	if (s == S_START_TRUNCATED) {
		/* a header claiming 100 bytes, 10 of them, then the end */
		const unsigned char part[] = { 0,   0,   0,   0,   100, '{', '"', 'e',
					       'v', 'e', 'n', 't', '"', ':', '{' };
		chunk(fd, part, sizeof(part));
		send_str(fd, "0\r\n\r\n");
	} else if (s == S_START_HUGE_FRAME) {
		const unsigned char huge[] = { 0, 0xff, 0xff, 0xff, 0xff, '{' };
		chunk(fd, huge, sizeof(huge));
		wait_close(fd);
	} else if (s == S_START_STALL) {
		wait_close(fd);
	} else if (s == S_START_ENDLESS) {
		while (envelope(fd, 0,
				"{\"event\":{\"data\":{\"stdout\":\"eHh4eHh4eHh4eHh4eHh4eA==\"}}}"))
			;
	} else if (s == S_START_NO_TRAILER) {
		envelope(fd, 0,
			 "{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}");
		send_str(fd, "0\r\n\r\n");
	}
}

static void answer(int fd, const char *method, const char *path, scenario s)
{
	bool create = strcmp(method, "POST") == 0 && strcmp(path, "/sandboxes") == 0;
	if (create && s == S_CREATE_BAD_JSON)
		json_reply(fd, "201 Created", "{\"sandboxID\": \"i1\", ");
	else if (create && s == S_CREATE_500)
		json_reply(fd, "500 Internal Server Error", "{\"code\":500,\"message\":\"boom\"}");
	else if (create && s == S_CREATE_REDIRECT)
		send_str(fd, "HTTP/1.1 307 Temporary Redirect\r\nLocation: "
			     "http://elsewhere.invalid/sandboxes\r\n"
			     "Content-Length: 0\r\n\r\n");
	else if (create && s == S_CREATE_ENDLESS)
		endless(fd);
	else if (create)
		json_reply(fd, "201 Created", created);
	else if (strcmp(method, "GET") == 0 && strcmp(path, "/sandboxes") == 0 && s == S_LIST_503)
		json_reply(fd, "503 Service Unavailable", "{\"code\":503,\"message\":\"down\"}");
	else if (g_str_has_suffix(path, "/pause"))
		json_reply(fd, s == S_PAUSE_409 ? "409 Conflict" : "204 No Content", "");
	else if (g_str_has_suffix(path, "/connect"))
		json_reply(fd, "201 Created", created);
	else if (strcmp(method, "DELETE") == 0)
		json_reply(fd, s == S_KILL_503 ? "503 Service Unavailable" : "204 No Content", "");
	else if (strcmp(path, "/process.Process/Start") == 0)
		stream(fd, s);
	else if (g_str_has_prefix(path, "/files") && s == S_READ_ENDLESS)
		endless(fd);
	else
		json_reply(fd, "200 OK", "{}");
}

/* Reads one request's head and its Content-Length body; false when there is none. */
static bool read_request(int fd, char *method, char *path)
{
	GString *h = g_string_new(NULL);
	char c;
	while (!strstr(h->str, "\r\n\r\n") && h->len < 65536 && recv(fd, &c, 1, 0) == 1)
		g_string_append_c(h, c);
	bool ok = sscanf(h->str, "%15s %1023s", method, path) == 2;
	const char *cl = strcasestr(h->str, "\r\nContent-Length:");
	size_t body = cl ? strtoul(cl + 17, NULL, 10) : 0;
	for (size_t i = 0; i < body && recv(fd, &c, 1, 0) == 1; i++)
		;
	g_string_free(h, TRUE);
	char *q = strchr(path, '?');
	if (q)
		*q = '\0';
	return ok;
}

static gpointer connection(gpointer data)
{
	int fd = GPOINTER_TO_INT(data);
	char method[16], path[1024];
	if (read_request(fd, method, path)) {
		g_mutex_lock(&lock);
		scenario s = current;
		g_ptr_array_add(seen, g_strdup_printf("%s %s", method, path));
		g_mutex_unlock(&lock);
		answer(fd, method, path, s);
	}
	close(fd);
	return NULL;
}

static gpointer acceptor(gpointer unused)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			g_thread_unref(g_thread_new("conn", connection, GINT_TO_POINTER(fd)));
	}
	return NULL;
}

static void start_double(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof(sa);
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(listen_fd, 64) < 0 || getsockname(listen_fd, (struct sockaddr *)&sa, &n) < 0)
		abort();
	port = ntohs(sa.sin_port);
	seen = g_ptr_array_new_with_free_func(g_free);
	g_thread_unref(g_thread_new("double", acceptor, NULL));
}

/* ---- the cases ----------------------------------------------------------------------------- */

static cordon_context *ctx_for(scenario s)
{
	g_mutex_lock(&lock);
	current = s;
	g_ptr_array_set_size(seen, 0);
	g_mutex_unlock(&lock);
	g_autofree char *plugins = testutil_plugin_dir("e2b", NULL);
	g_autofree char *keyfile = g_build_filename(dir, "key", NULL);
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\nplugins: {dir: %s, load: [e2b]}\ntiers:\n  remote:\n    driver: e2b\n"
		"    api_url: \"http://127.0.0.1:%u\"\n    sandbox_url: \"http://127.0.0.1:%u\"\n"
		"    api_key: {file: %s}\n    request_timeout: 3s\n    limits: {wall: 60s}\n"
		"trust:\n  untrusted: {require: remote, tiers: [remote]}\n",
		plugins, port, port, keyfile);
	cordon_context *ctx = testutil_context_from_text(policy, "hostile.yaml");
	testutil_rmtree(plugins);
	return ctx;
}

static unsigned count_seen(const char *what)
{
	unsigned n = 0;
	g_mutex_lock(&lock);
	for (guint i = 0; i < seen->len; i++)
		n += strcmp(seen->pdata[i], what) == 0;
	g_mutex_unlock(&lock);
	return n;
}

static int open_sb(cordon_context *ctx, cordon_sandbox **sb, cordon_error **err)
{
	cordon_request *req = cordon_request_new("untrusted");
	int r = cordon_sandbox_open(ctx, req, sb, err);
	cordon_request_free(req);
	return r;
}

static void expect_open_error(scenario s, const char *code, const char *fragment)
{
	cordon_context *ctx = ctx_for(s);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(open_sb(ctx, &sb, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), code);
	ck_assert_msg(strstr(cordon_error_get_message(err), fragment), "message: %s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	cordon_context_free(ctx);
}

START_TEST(test_invalid_json)
{
	expect_open_error(S_CREATE_BAD_JSON, "remote_protocol", "not one JSON object");
}
END_TEST

START_TEST(test_500_not_retried)
{
	expect_open_error(S_CREATE_500, "remote_unavailable", "boom");
	ck_assert_uint_eq(count_seen("POST /sandboxes"), 1); /* a create is never retried */
}
END_TEST

START_TEST(test_redirect_refused)
{
	expect_open_error(S_CREATE_REDIRECT, "remote_protocol", "elsewhere.invalid");
	ck_assert_uint_eq(count_seen("POST /sandboxes"), 1);
}
END_TEST

START_TEST(test_endless_body)
{
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	expect_open_error(S_CREATE_ENDLESS, "remote_protocol", "over its limit");
	getrusage(RUSAGE_SELF, &after);
	ck_assert_msg(after.ru_maxrss - before.ru_maxrss < GROWTH_MAX_KIB, "memory grew by %ld KiB",
		      after.ru_maxrss - before.ru_maxrss);
}
END_TEST

/* A run that must fail with code, the sandbox killed at close. */
static void expect_run_error(scenario s, const char *code, const char *fragment)
{
	cordon_context *ctx = ctx_for(s);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	ck_assert_int_eq(open_sb(ctx, &sb, &err), 0);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 2000;
	ck_assert_int_lt(cordon_sandbox_exec(sb, "true", &o, &res, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), code);
	ck_assert_msg(strstr(cordon_error_get_message(err), fragment), "message: %s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	cordon_sandbox_close(sb);
	ck_assert_uint_eq(count_seen("DELETE /sandboxes/" SBX_ID), 1);
	cordon_context_free(ctx);
}

/* A server that starts a served process as any other (E2B's envd ignores
 * Cordon-Serve-Port): the serve fails, and the process is killed. */
START_TEST(test_serve_needs_cordon_server)
{
	cordon_context *ctx = ctx_for(S_NORMAL);
	cordon_sandbox *sb = NULL;
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(open_sb(ctx, &sb, &err), 0);
	const char *argv[] = { "/bin/sh", "-c", "exec sleep 30", NULL };
	ck_assert_int_lt(cordon_sandbox_serve(sb, argv, 8000, NULL, &sv, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), "unsupported");
	ck_assert_msg(strstr(cordon_error_get_message(err), "serve needs cordon server"), "%s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	ck_assert_uint_eq(count_seen("POST /process.Process/SendSignal"), 1);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_truncated_envelope)
{
	expect_run_error(S_START_TRUNCATED, "remote_protocol", "without its end-of-stream");
}
END_TEST

START_TEST(test_huge_frame)
{
	expect_run_error(S_START_HUGE_FRAME, "remote_protocol", "claims 4294967295 bytes");
}
END_TEST

START_TEST(test_wrong_content_type)
{
	expect_run_error(S_START_WRONG_TYPE, "remote_protocol", "text/html");
}
END_TEST

START_TEST(test_no_trailer)
{
	expect_run_error(S_START_NO_TRAILER, "remote_protocol", "without its end-of-stream");
}
END_TEST

/* A stalled or endless stream is a run past its deadline: timed out, killed, bounded. */
static void expect_timeout(scenario s)
{
	cordon_context *ctx = ctx_for(s);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	struct rusage before, after;
	ck_assert_int_eq(open_sb(ctx, &sb, &err), 0);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 1000;
	getrusage(RUSAGE_SELF, &before);
	gint64 t0 = g_get_monotonic_time();
	int r = cordon_sandbox_exec(sb, "true", &o, &res, &err);
	ck_assert_msg(r == 0, "exec: %d %s", r, err ? cordon_error_get_message(err) : "");
	gint64 took = (g_get_monotonic_time() - t0) / 1000;
	getrusage(RUSAGE_SELF, &after);
	ck_assert(cordon_result_timed_out(res));
	ck_assert_msg(took < 15000, "the run took %" G_GINT64_FORMAT " ms", took);
	ck_assert_msg(after.ru_maxrss - before.ru_maxrss < GROWTH_MAX_KIB, "memory grew by %ld KiB",
		      after.ru_maxrss - before.ru_maxrss);
	cordon_result_free(res);
	ck_assert_uint_eq(count_seen("POST /process.Process/SendSignal"), 1);
	cordon_sandbox_close(sb);
	ck_assert_uint_eq(count_seen("DELETE /sandboxes/" SBX_ID), 1);
	cordon_context_free(ctx);
}

START_TEST(test_stalled_stream) { expect_timeout(S_START_STALL); }
END_TEST

START_TEST(test_endless_stream) { expect_timeout(S_START_ENDLESS); }
END_TEST

START_TEST(test_endless_file)
{
	cordon_context *ctx = ctx_for(S_READ_ENDLESS);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	void *data = NULL;
	size_t len = 0;
	ck_assert_int_eq(open_sb(ctx, &sb, &err), 0);
	ck_assert_int_lt(cordon_sandbox_read_file(sb, "f", &data, &len, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), "limit_exceeded");
	cordon_error_free(err);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_kill_retried)
{
	cordon_context *ctx = ctx_for(S_KILL_503);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(open_sb(ctx, &sb, &err), 0);
	cordon_sandbox_close(sb);
	/* idempotent: retried with backoff, a bounded number of times */
	ck_assert_uint_eq(count_seen("DELETE /sandboxes/" SBX_ID), 3);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_probe_503)
{
	cordon_context *ctx = ctx_for(S_LIST_503);
	cordon_probe_report *rep = NULL;
	ck_assert_int_eq(cordon_context_probe_tier(ctx, 0, &rep, NULL), 0);
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_msg(strstr(cordon_probe_report_reason(rep), "answers 503"), "reason: %s",
		      cordon_probe_report_reason(rep));
	cordon_probe_report_free(rep);
	/* a listing is idempotent: retried with backoff, and still a 503 */
	ck_assert_uint_eq(count_seen("GET /sandboxes"), 3);
	cordon_context_free(ctx);
}
END_TEST

/* Pause and resume are E2B's calls (not a double's hostility, but the double records what
 * is sent): pause is POST .../pause, runs and file operations are refused while paused
 * without reaching the server, resume is POST .../connect; a 409 (already paused) is a
 * pause. */
START_TEST(test_pause_resume)
{
	cordon_context *ctx = ctx_for(S_NORMAL);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(open_sb(ctx, &sb, &err), 0);
	ck_assert_msg(cordon_sandbox_pause(sb, &err) == 0, "pause: %s",
		      err ? cordon_error_get_message(err) : "");
	ck_assert_uint_eq(count_seen("POST /sandboxes/" SBX_ID "/pause"), 1);
	ck_assert_int_eq(cordon_sandbox_pause(sb, &err), 0); /* paused already: nothing sent */
	ck_assert_uint_eq(count_seen("POST /sandboxes/" SBX_ID "/pause"), 1);
	const char *argv[] = { "/bin/true", NULL };
	cordon_result *res = NULL;
	ck_assert_int_lt(cordon_sandbox_run(sb, argv, NULL, &res, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), "sandbox_paused");
	cordon_error_free(err);
	err = NULL;
	void *data = NULL;
	ck_assert_int_lt(cordon_sandbox_read_file(sb, "f", &data, NULL, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), "sandbox_paused");
	cordon_error_free(err);
	err = NULL;
	ck_assert_uint_eq(count_seen("POST /process.Process/Start"), 0);
	ck_assert_int_eq(cordon_sandbox_resume(sb, &err), 0);
	ck_assert_uint_eq(count_seen("POST /sandboxes/" SBX_ID "/connect"), 1);
	cordon_sandbox_run(sb, argv, NULL, &res, &err); /* the double's stream is short */
	cordon_result_free(res);
	cordon_error_free(err);
	err = NULL;
	ck_assert_uint_eq(count_seen("POST /process.Process/Start"), 1);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	ctx = ctx_for(S_PAUSE_409);
	ck_assert_int_eq(open_sb(ctx, &sb, &err), 0);
	ck_assert_int_eq(cordon_sandbox_pause(sb, &err), 0);
	ck_assert_int_lt(cordon_sandbox_run(sb, argv, NULL, &res, &err), 0); /* it is paused */
	cordon_error_free(err);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* cordon server's pause on a tier that can (the e2b tier, here toward the double): the
 * server's pause is the library's, the sandbox's time to live stops while paused (a 2 s
 * sandbox outlives 3 s of pause), a second pause is a 409, connect resumes it (201) and its
 * time counts again. The client is python's urllib: the server's own answers. */
static const char pause_script[] =
	"import json, sys, time, urllib.request, urllib.error\n"
	"base, key = sys.argv[1], sys.argv[2]\n"
	"def call(method, path, body=None):\n"
	"  q = urllib.request.Request(base + path, method=method, headers={'X-API-Key': key, "
	"'Content-Type': 'application/json'}, data=json.dumps(body).encode() if body is not None "
	"else None)\n"
	"  try:\n"
	"    with urllib.request.urlopen(q) as a:\n"
	"      t = a.read(); return a.status, json.loads(t) if t else None\n"
	"  except urllib.error.HTTPError as e:\n"
	"    return e.code, None\n"
	"s, sb = call('POST', '/sandboxes', {'templateID': 'remote', 'timeout': 2})\n"
	"i = '/sandboxes/' + sb['sandboxID']\n"
	"print('create', s)\n"
	"print('pause', call('POST', i + '/pause', {})[0])\n"
	"print('again', call('POST', i + '/pause', {})[0])\n"
	"print('state', call('GET', i)[1]['state'])\n"
	"time.sleep(3)\n"
	"print('kept', call('GET', i)[0])\n"
	"print('connect', call('POST', i + '/connect', {'timeout': 1})[0])\n"
	"print('state', call('GET', i)[1]['state'])\n"
	"time.sleep(3)\n"
	"print('lapsed', call('GET', i)[0])\n";

START_TEST(test_server_pause)
{
	g_autofree char *bin = testutil_build_path("cordon-server");
	ck_assert_msg(access(bin, X_OK) == 0, "%s is not built", bin);
	g_mutex_lock(&lock);
	current = S_NORMAL;
	g_ptr_array_set_size(seen, 0);
	g_mutex_unlock(&lock);
	g_autofree char *plugins = testutil_plugin_dir("e2b", NULL);
	g_autofree char *keys = g_build_filename(dir, "server-keys", NULL);
	g_autofree char *pol = g_build_filename(dir, "server.yaml", NULL);
	const char *client_key = "e2b_11111111111111111111111111111111";
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\nplugins: {dir: %s, load: [e2b]}\ntiers:\n  remote:\n    driver: e2b\n"
		"    api_url: \"http://127.0.0.1:%u\"\n    sandbox_url: \"http://127.0.0.1:%u\"\n"
		"    api_key: {file: %s/key}\n    request_timeout: 3s\n"
		"trust:\n  untrusted: {require: remote, tiers: [remote]}\n"
		"server:\n  templates:\n    remote: {trust: untrusted}\n",
		plugins, port, port, dir);
	ck_assert(g_file_set_contents(keys, client_key, -1, NULL) && chmod(keys, 0600) == 0);
	ck_assert(g_file_set_contents(pol, policy, -1, NULL));
	const char *argv[] = { bin,        "--listen", "127.0.0.1:0", "--api-keys", keys,
			       "--policy", pol,        "--quiet",     NULL };
	GPid pid;
	int out = -1;
	GError *e = NULL;
	ck_assert_msg(g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
					       NULL, NULL, &pid, NULL, &out, NULL, &e),
		      "cordon server: %s", e ? e->message : "?");
	FILE *f = fdopen(out, "r");
	char line[256] = "";
	unsigned sport = 0;
	ck_assert(f && fgets(line, sizeof(line), f) &&
		  sscanf(line, "cordon server: listening on %*s port %u", &sport) == 1);
	g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u", sport);
	const char *py[] = { "/usr/bin/python3", "-c", pause_script, url, client_key, NULL };
	g_autofree char *got = NULL;
	int status = -1;
	ck_assert(g_spawn_sync(NULL, (char **)py, NULL, 0, NULL, NULL, &got, NULL, &status, NULL));
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	fclose(f);
	testutil_rmtree(plugins);
	ck_assert_str_eq(got, "create 201\npause 204\nagain 409\nstate paused\nkept 200\n"
			      "connect 201\nstate running\nlapsed 404\n");
	ck_assert_uint_eq(count_seen("POST /sandboxes/" SBX_ID "/pause"), 1);
	ck_assert_uint_eq(count_seen("POST /sandboxes/" SBX_ID "/connect"), 1);
}
END_TEST

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("e2b-hostile");
	TCase *tc = tcase_create("double");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_invalid_json);
	tcase_add_test(tc, test_500_not_retried);
	tcase_add_test(tc, test_redirect_refused);
	tcase_add_test(tc, test_endless_body);
	tcase_add_test(tc, test_truncated_envelope);
	tcase_add_test(tc, test_serve_needs_cordon_server);
	tcase_add_test(tc, test_huge_frame);
	tcase_add_test(tc, test_wrong_content_type);
	tcase_add_test(tc, test_no_trailer);
	tcase_add_test(tc, test_stalled_stream);
	tcase_add_test(tc, test_endless_stream);
	tcase_add_test(tc, test_endless_file);
	tcase_add_test(tc, test_kill_retried);
	tcase_add_test(tc, test_pause_resume);
	tcase_add_test(tc, test_server_pause);
	tcase_add_test(tc, test_probe_503);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	g_autofree char *so = testutil_build_path("plugins/e2b/.libs/e2b.so");
	if (access(so, R_OK) != 0) {
		const char *why = "the e2b plugin is not built (libcurl, json-c)";
		if (g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") == 0) {
			printf("Bail out! CORDON_REQUIRE=all: %s\n", why);
			return EXIT_FAILURE;
		}
		printf("1..0 # SKIP %s\n", why);
		return 0;
	}
	dir = g_dir_make_tmp("cordon-e2b-hostile-XXXXXX", NULL);
	g_autofree char *key = g_build_filename(dir, "key", NULL);
	if (!dir ||
	    !g_file_set_contents(key, "e2b_0000000000000000000000000000000000000000", -1, NULL) ||
	    chmod(key, 0600) < 0)
		return EXIT_FAILURE;
	start_double();
	/* the double's state is this process's: no fork per test */
	setenv("CK_FORK", "no", 1);
	int r = testutil_run(hostile_suite());
	unlink(key);
	rmdir(dir);
	return r;
}
