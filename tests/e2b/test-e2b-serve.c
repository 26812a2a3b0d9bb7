/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * serve on the remote tier, end to end: the e2b plugin against a real `cordon server` this
 * test starts on a free loopback port (its sandboxes on the kernel tier). An echo server
 * inside the remote sandbox is served; the address cordon_serve_address gives carries
 * connections through cordon server's port tunnel (docs/server.md, "Ports") to it and
 * back, several at once, with half-closes passed on; a stop ends it and its address; a
 * server that ends before its port accepts fails the serve with the reason; a port no
 * process serves is refused by cordon server with E2B's proxy answer (502). gc: a host
 * process killed with a remote sandbox open (this program, re-run as --orphan) leaves it in
 * the server; the tier's gc kills it and keeps a live owner's, another machine's and
 * another tier's.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define KEY "e2b_00000000000000000000000000000000c0bd5e77e"

static char *dir;
static GPid server_pid;
static unsigned server_port;
static char *policy, *plugins;
static cordon_context *ctx; /* made in the first test (testutil asserts) */

/* An echo server on port 8000: each connection's bytes back, until its client's FIN. */
static const char echo_server[] =
	"import socket, threading\n"
	"s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"s.bind(('127.0.0.1', 8000)); s.listen()\n"
	"def serve(a):\n"
	"  while True:\n"
	"    d = a.recv(65536)\n"
	"    if not d: break\n"
	"    a.sendall(d)\n"
	"  a.sendall(b'[end]'); a.close()\n"
	"print('listening', flush=True)\n"
	"while True:\n"
	"  a, _ = s.accept(); threading.Thread(target=serve, args=(a,), daemon=True).start()\n";

static char *start_server(void)
{
	dir = g_dir_make_tmp("cordon-e2b-serve-XXXXXX",
			     NULL); /* not testutil's: no test runs yet */
	if (!dir)
		return g_strdup("cannot make a temporary directory");
	return testutil_server_start(dir, KEY, &server_pid, &server_port);
}

static int stop_server(void)
{
	int status = 0;
	kill(server_pid, SIGTERM);
	waitpid(server_pid, &status, 0);
	testutil_rmtree(dir);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static cordon_sandbox *open_remote(void)
{
	if (!ctx) {
		plugins = testutil_plugin_dir("e2b", NULL);
		policy = g_strdup_printf(
			"cordon: 1\nplugins: {dir: %s, load: [e2b]}\ntiers:\n  remote:\n    "
			"driver: e2b\n"
			"    api_url: \"http://127.0.0.1:%u\"\n    sandbox_url: "
			"\"http://127.0.0.1:%u\"\n"
			"    api_key: {file: %s/key}\n    limits: {wall: 60s}\n"
			"trust:\n  untrusted: {require: remote, tiers: [remote]}\n",
			plugins, server_port, server_port, dir);
		ctx = testutil_context_from_text(policy, "e2b-serve.yaml");
	}
	cordon_request *req = cordon_request_new("untrusted");
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_open(ctx, req, &sb, &err);
	cordon_request_free(req);
	ck_assert_msg(r == 0, "open: %s", err ? cordon_error_get_message(err) : "?");
	return sb;
}

static int connect_to(const char *addr)
{
	const char *colon = strrchr(addr, ':');
	ck_assert_ptr_nonnull(colon);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)atoi(colon + 1)) };
	g_autofree char *host = g_strndup(addr, (gsize)(colon - addr));
	ck_assert_int_eq(inet_pton(AF_INET, host, &sa.sin_addr), 1);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	struct timeval tv = { .tv_sec = 20 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Reads exactly n bytes (or to EOF when want_eof), within the socket's timeout. */
static char *read_n(int fd, size_t n, bool want_eof)
{
	GString *s = g_string_new(NULL);
	char b[4096];
	while (want_eof || s->len < n) {
		ssize_t r = recv(fd, b, want_eof ? sizeof(b) : MIN(sizeof(b), n - s->len), 0);
		if (r <= 0)
			break;
		g_string_append_len(s, b, r);
	}
	return g_string_free(s, FALSE);
}

START_TEST(test_serve_echo)
{
	cordon_sandbox *sb = open_remote();
	const char *argv[] = { PYTHON, "-c", echo_server, NULL };
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_serve(sb, argv, 8000, NULL, &sv, &err) == 0, "serve: %s: %s",
		      err ? cordon_error_get_code(err) : "?",
		      err ? cordon_error_get_message(err) : "?");
	g_autofree char *addr = cordon_serve_address(sv);
	ck_assert_ptr_nonnull(addr);
	ck_assert_msg(g_str_has_prefix(addr, "127.0.0.1:"), "address %s", addr);
	/* Two connections at once, each its own tunnel, each its own bytes. */
	int a = connect_to(addr), b = connect_to(addr);
	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(b, 0);
	ck_assert_int_eq(send(a, "first\n", 6, MSG_NOSIGNAL), 6);
	ck_assert_int_eq(send(b, "second\n", 7, MSG_NOSIGNAL), 7);
	g_autofree char *ra = read_n(a, 6, false), *rb = read_n(b, 7, false);
	ck_assert_str_eq(ra, "first\n");
	ck_assert_str_eq(rb, "second\n");
	/* A larger transfer, and the client's FIN passed on: the server's answer to it comes
	 * back before the end. */
	size_t big = 1u << 20;
	char *data = g_malloc(big);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)('a' + i % 26);
	GString *want = g_string_new_len(data, (gssize)big);
	g_string_append(want, "[end]");
	size_t sent = 0;
	GString *got = g_string_new(NULL);
	/* send and read in turns: the echo fills both directions' buffers */
	while (sent < big) {
		ssize_t w = send(a, data + sent, MIN(65536, big - sent), MSG_NOSIGNAL);
		ck_assert_int_gt(w, 0);
		sent += (size_t)w;
		char buf[65536];
		ssize_t r = recv(a, buf, sizeof(buf), MSG_DONTWAIT);
		if (r > 0)
			g_string_append_len(got, buf, r);
	}
	ck_assert_int_eq(shutdown(a, SHUT_WR), 0);
	g_autofree char *rest = read_n(a, 0, true);
	g_string_append(got, rest);
	ck_assert_uint_eq(got->len, want->len);
	ck_assert(memcmp(got->str, want->str, want->len) == 0);
	g_string_free(got, TRUE);
	g_string_free(want, TRUE);
	g_free(data);
	close(a);
	close(b);
	ck_assert(cordon_serve_running(sv));
	/* Stopped: the run ends, and its address no longer accepts. */
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_eq(cordon_serve_stop(sv, &err), 0);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 10 * G_USEC_PER_SEC);
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_serve_wait(sv, 10000, &res, &err), 0);
	ck_assert(cordon_result_cancelled(res));
	cordon_result_free(res);
	ck_assert_int_lt(connect_to(addr), 0);
	cordon_serve_free(sv);
	cordon_sandbox_close(sb);
}
END_TEST

/* A server that ends before its port accepts: the serve fails, with the reason. */
START_TEST(test_serve_not_ready)
{
	cordon_sandbox *sb = open_remote();
	const char *argv[] = { "/bin/sh", "-c", "echo no server here; exit 3", NULL };
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_serve(sb, argv, 8000, NULL, &sv, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), "serve_not_ready");
	ck_assert_msg(strstr(cordon_error_get_message(err), "port 8000"), "%s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	cordon_sandbox_close(sb);
}
END_TEST

/* cordon server's answer for a port nothing serves, and for a plain request to a port. */
static char *raw_request(const char *req)
{
	g_autofree char *addr = g_strdup_printf("127.0.0.1:%u", server_port);
	int fd = connect_to(addr);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	char *ans = read_n(fd, 0, true);
	close(fd);
	return ans;
}

/* A string member of the JSON object that ends an HTTP answer (the test's own sandbox). */
static char *member(const char *ans, const char *name)
{
	g_autofree char *pat = g_strdup_printf("\"%s\":\"", name);
	const char *p = strstr(ans, pat);
	ck_assert_msg(p, "no %s in %s", name, ans);
	p += strlen(pat);
	return g_strndup(p, strcspn(p, "\""));
}

static char *port_request(const char *id, const char *token, const char *upgrade)
{
	g_autofree char *up = upgrade ? g_strdup_printf("Upgrade: %s\r\n", upgrade) : g_strdup("");
	g_autofree char *req = g_strdup_printf(
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: %s\r\n%sE2b-Sandbox-Id: %s\r\n"
		"E2b-Sandbox-Port: 8000\r\nX-Access-Token: %s\r\n\r\n",
		upgrade ? "Upgrade, close" : "close", up, id, token);
	return raw_request(req);
}

START_TEST(test_tunnel_refusals)
{
	const char *body = "{\"templateID\":\"base\",\"timeout\":60}";
	g_autofree char *create = g_strdup_printf(
		"POST /sandboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-API-Key: %s\r\n"
		"Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
		KEY, strlen(body), body);
	g_autofree char *made = raw_request(create);
	ck_assert_msg(g_str_has_prefix(made, "HTTP/1.1 201 "), "%s", made);
	g_autofree char *id = member(made, "sandboxID"), *token = member(made, "envdAccessToken");
	g_autofree char *none = port_request(id, token, "cordon-tcp");
	ck_assert_msg(g_str_has_prefix(none, "HTTP/1.1 502 ") &&
			      strstr(none, "no process serves port 8000"),
		      "%s", none);
	g_autofree char *plain = port_request(id, token, NULL);
	ck_assert_msg(g_str_has_prefix(plain, "HTTP/1.1 400 ") &&
			      strstr(plain, "Upgrade: cordon-tcp"),
		      "%s", plain);
	g_autofree char *bad = port_request(id, "0123456789abcdef0123456789abcdef", "cordon-tcp");
	ck_assert_msg(g_str_has_prefix(bad, "HTTP/1.1 401 "), "%s", bad);
	g_autofree char *gone = port_request("i00000000000000000000", token, "cordon-tcp");
	ck_assert_msg(g_str_has_prefix(gone, "HTTP/1.1 502 "), "%s", gone);
	g_autofree char *del = g_strdup_printf("DELETE /sandboxes/%s HTTP/1.1\r\nHost: x\r\n"
					       "Connection: close\r\nX-API-Key: %s\r\n\r\n",
					       id, KEY);
	g_autofree char *killed = raw_request(del);
	ck_assert_msg(g_str_has_prefix(killed, "HTTP/1.1 204 "), "%s", killed);
}
END_TEST

/* Left running, with a connection open through its tunnel: the server's SIGTERM (main)
 * must end the tunnel, the serve and the sandbox, and exit 0 promptly. */
static cordon_sandbox *held_sb;
static cordon_serve *held_sv;
static int held_fd = -1;

START_TEST(test_left_running)
{
	held_sb = open_remote();
	const char *argv[] = { PYTHON, "-c", echo_server, NULL };
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_serve(held_sb, argv, 8000, NULL, &held_sv, &err), 0);
	g_autofree char *addr = cordon_serve_address(held_sv);
	held_fd = connect_to(addr);
	ck_assert_int_ge(held_fd, 0);
	ck_assert_int_eq(send(held_fd, "held\n", 5, MSG_NOSIGNAL), 5);
	g_autofree char *back = read_n(held_fd, 5, false);
	ck_assert_str_eq(back, "held\n");
}
END_TEST

/* ---- gc: what a crashed host left ---------------------------------------------------- */

/* The server's listing as "ID TIER HOST OWNER" lines (python's urllib, so that the test
 * reads the server's own answer, not the plugin's). */
static const char list_script[] =
	"import json, sys, urllib.request\n"
	"q = urllib.request.Request(sys.argv[1] + '/sandboxes', headers={'X-API-Key': "
	"sys.argv[2]})\n"
	"for s in json.load(urllib.request.urlopen(q)):\n"
	"  m = s.get('metadata') or {}\n"
	"  print(s['sandboxID'], *(m.get(k, '-') for k in ('cordon.tier', 'cordon.host', "
	"'cordon.owner')))\n";

/* A sandbox made by hand with the metadata given (JSON); its ID. */
static const char create_script[] =
	"import json, sys, urllib.request\n"
	"q = urllib.request.Request(sys.argv[1] + '/sandboxes', method='POST', headers={"
	"'X-API-Key': sys.argv[2], 'Content-Type': 'application/json'}, data=json.dumps("
	"{'templateID': 'base', 'timeout': 120, 'metadata': json.loads(sys.argv[3])}).encode())\n"
	"print(json.load(urllib.request.urlopen(q))['sandboxID'])\n";

static char *python_out(const char *script, const char *arg)
{
	g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u", server_port);
	const char *argv[] = { PYTHON, "-c", script, url, KEY, arg, NULL };
	char *out = NULL;
	int status = -1;
	GError *e = NULL;
	ck_assert_msg(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
				   NULL, &out, NULL, &status, &e),
		      "python: %s", e ? e->message : "?");
	ck_assert_msg(g_spawn_check_wait_status(status, NULL), "%s failed: %s", script, out);
	return out;
}

/* The listing's line for a sandbox (its fields), or NULL. */
static char **listed(const char *listing, const char *id)
{
	g_auto(GStrv) lines = g_strsplit(listing, "\n", -1);
	for (char **l = lines; *l; l++) {
		char **f = g_strsplit(*l, " ", 4);
		if (g_strv_length(f) == 4 && strcmp(f[0], id) == 0)
			return f;
		g_strfreev(f);
	}
	return NULL;
}

/* The IDs in after that are not in before. */
static char *new_id(const char *before, const char *after)
{
	g_auto(GStrv) lines = g_strsplit(after, "\n", -1);
	char *found = NULL;
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, " ", 2);
		g_auto(GStrv) old = f[0] && *f[0] ? listed(before, f[0]) : NULL;
		if (f[0] && *f[0] && !old) {
			ck_assert_msg(!found, "more than one new sandbox: %s", after);
			found = g_strdup(f[0]);
		}
	}
	ck_assert_msg(found, "no new sandbox in %s", after);
	return found;
}

/* A host process with a remote sandbox open, killed as a crash kills it: its close never
 * runs, so its sandbox stays in the server until gc. */
static char *crashed_host(void)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *pol = g_build_filename(dir, "orphan.yaml", NULL);
	ck_assert(g_file_set_contents(pol, policy, -1, NULL));
	g_autofree char *before = python_out(list_script, "");
	const char *argv[] = { self, "--orphan", pol, NULL };
	GPid pid;
	int in = -1, out = -1;
	GError *e = NULL;
	ck_assert_msg(g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
					       NULL, NULL, &pid, &in, &out, NULL, &e),
		      "orphan: %s", e ? e->message : "?");
	char line[16] = "";
	ssize_t n = read(out, line, sizeof(line) - 1);
	ck_assert_msg(n == 5 && memcmp(line, "open\n", 5) == 0, "the orphan said %zd", n);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(in);
	close(out);
	g_autofree char *after = python_out(list_script, "");
	return new_id(before, after);
}

START_TEST(test_gc_dead_owner)
{
	cordon_sandbox *live = open_remote(); /* ours: its owner (this process) lives */
	g_autofree char *orphan = crashed_host();
	g_autofree char *listing = python_out(list_script, "");
	g_auto(GStrv) o = listed(listing, orphan);
	ck_assert_msg(o && strcmp(o[1], "remote") == 0 && strlen(o[2]) == 32 &&
			      strcmp(o[3], "-") != 0,
		      "the orphan's metadata: %s", listing);
	/* The same dead owner, on another machine of the same account: not ours to judge;
	 * and the dead owner on another tier: not this tier's gc's. */
	g_autofree char *other_host_meta = g_strdup_printf(
		"{\"cordon.tier\": \"remote\", \"cordon.host\": \"%032x\", \"cordon.owner\": "
		"\"%s\"}",
		0, o[3]);
	g_autofree char *other_tier_meta = g_strdup_printf(
		"{\"cordon.tier\": \"elsewhere\", \"cordon.host\": \"%s\", \"cordon.owner\": "
		"\"%s\"}",
		o[2], o[3]);
	g_autofree char *other_host = python_out(create_script, other_host_meta);
	g_autofree char *other_tier = python_out(create_script, other_tier_meta);
	g_strstrip(other_host);
	g_strstrip(other_tier);
	cordon_error *err = NULL;
	int removed = cordon_context_gc(ctx, &err);
	ck_assert_msg(removed == 1, "gc removed %d: %s", removed,
		      err ? cordon_error_get_message(err) : "");
	g_autofree char *after = python_out(list_script, "");
	g_auto(GStrv) gone = listed(after, orphan);
	g_auto(GStrv) kept_host = listed(after, other_host);
	g_auto(GStrv) kept_tier = listed(after, other_tier);
	ck_assert_msg(!gone, "the crashed host's sandbox is still listed: %s", after);
	ck_assert_msg(kept_host && kept_tier, "gc killed another's sandbox: %s", after);
	/* The live owner's sandbox still runs work. */
	const char *echo[] = { "/bin/echo", "alive", NULL };
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_run(live, echo, NULL, &res, &err), 0);
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	cordon_result_free(res);
	ck_assert_int_eq(cordon_context_gc(ctx, &err), 0);
	cordon_sandbox_close(live);
}
END_TEST

/* The crashed host of test_gc_dead_owner: opens a sandbox, says so, waits to be killed. */
static int orphan(const char *policy_file)
{
	cordon_options *o = cordon_options_new();
	cordon_context *c = NULL;
	cordon_sandbox *sb = NULL;
	cordon_request *req = cordon_request_new("untrusted");
	if (cordon_options_set_policy_file(o, policy_file, NULL) < 0 ||
	    cordon_context_new(o, &c, NULL) < 0 || cordon_sandbox_open(c, req, &sb, NULL) < 0)
		return EXIT_FAILURE;
	fputs("open\n", stdout);
	fflush(stdout);
	char b;
	while (read(STDIN_FILENO, &b, 1) > 0)
		;
	return EXIT_FAILURE; /* never closes: the parent kills it first */
}

static Suite *serve_suite(void)
{
	Suite *s = suite_create("e2b-serve");
	TCase *tc = tcase_create("server");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_serve_echo);
	tcase_add_test(tc, test_serve_not_ready);
	tcase_add_test(tc, test_tunnel_refusals);
	tcase_add_test(tc, test_gc_dead_owner);
	tcase_add_test(tc, test_left_running);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--orphan") == 0)
		return orphan(argv[2]);
	bool required = g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") == 0;
	g_autofree char *so = testutil_build_path("plugins/e2b/.libs/e2b.so");
	g_autofree char *why = access(so, R_OK) != 0 ? g_strdup("the e2b plugin is not built "
								"(libcurl, json-c)")
			       : access(PYTHON, X_OK) != 0
				       ? g_strdup("the echo server needs " PYTHON)
				       : start_server();
	if (why) {
		printf("%s %s\n", required ? "Bail out! CORDON_REQUIRE=all:" : "1..0 # SKIP", why);
		return required ? EXIT_FAILURE : 0;
	}
	/* one server for every test: no fork per test */
	setenv("CK_FORK", "no", 1);
	int r = testutil_run(serve_suite());
	gint64 t0 = g_get_monotonic_time();
	int st = stop_server();
	gint64 took = (g_get_monotonic_time() - t0) / 1000;
	if (st != 0 || took > 15000) {
		fprintf(stderr,
			"test-e2b-serve: cordon server ended with status %d in %" G_GINT64_FORMAT
			" ms, a tunnel open\n",
			st, took);
		r = EXIT_FAILURE;
	}
	if (held_fd >= 0) {
		char b[64];
		ssize_t n = recv(held_fd, b, sizeof(b),
				 0); /* the tunnel ended: EOF, not a timeout */
		if (n > 0 && (size_t)n == strlen("[end]") && memcmp(b, "[end]", 5) == 0)
			n = recv(held_fd, b, sizeof(b), 0);
		if (n != 0 && !(n < 0 && errno != EAGAIN)) {
			fprintf(stderr, "test-e2b-serve: the held connection did not end (%zd)\n",
				n);
			r = EXIT_FAILURE;
		}
		close(held_fd);
	}
	if (held_sv) {
		cordon_serve_stop(held_sv, NULL);
		cordon_serve_free(held_sv);
	}
	if (held_sb)
		cordon_sandbox_close(held_sb);
	cordon_context_free(ctx);
	g_free(policy);
	if (plugins)
		testutil_rmtree(plugins);
	g_free(plugins);
	return r;
}
