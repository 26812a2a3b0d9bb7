/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Governed egress on the kernel tier (issue 14, items 3 and 4), real kernel,
 * real sockets: the listener cordon makes inside a sandbox's network
 * namespace (confine_sandbox_listen), reached by the work at 127.0.0.1:PORT
 * inside while a host program on the same port number is never reached;
 * and egress governed end to end through the public API: curl inside the
 * sandbox, pointed at the proxy by the environment cordon sets, reaches a
 * plain HTTP and an HTTPS upstream on the host's loopback (a test
 * certificate made with openssl, verified) that the tier's rules name, and
 * nothing else: a denied name, an IP literal, the metadata address, a direct
 * connection, IPv6, UDP, a raw socket, a resolver query. Each connection is
 * in the audit trail; nothing of the proxy is left after close.
 *
 * A host without the kernel tier skips (and fails under CORDON_REQUIRE=all).
 */
#include "config.h"

#include "testutil.h"
#include "local/confine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"

/* A temporary directory below /var/tmp (the sandbox replaces /tmp), 0755. */
static char *top_dir(void)
{
	char *top = g_strdup("/var/tmp/cordon-egress-XXXXXX");
	ck_assert_ptr_nonnull(g_mkdtemp(top));
	ck_assert_int_eq(chmod(top, 0755), 0);
	return top;
}

/* A host listener on 127.0.0.1:port, or -1 when the port is taken. */
static int host_listen(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The listener inside: the work's connection to its port comes to the host's
 * accept on it, and a host program on the same port number sees nothing. */
START_TEST(test_listener_inside)
{
	ck_assert_msg(g_file_test(PYTHON, G_FILE_TEST_IS_EXECUTABLE), "needs %s", PYTHON);
	g_autofree char *top = top_dir();
	/* As root a workspace must belong to an unprivileged user. */
	if (geteuid() == 0)
		ck_assert_int_eq(chown(top, 65534, 65534), 0);
	int root = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root, 0);
	cordon_plugin_limits lim = { .size = sizeof(lim) };
	confine_sandbox *s = NULL;
	int tmpfs = -1;
	char why[512] = "";
	int r = confine_sandbox_new(root, NULL, &lim, 0, &tmpfs, &s, why, sizeof(why));
	ck_assert_msg(r == 0, "confine_sandbox_new: %s", why);
	uint16_t port = 0;
	int lsn = confine_sandbox_listen(s, &port);
	ck_assert_msg(lsn >= 0, "listen: %s", g_strerror(-lsn));
	ck_assert_uint_gt(port, 0);
	ck_assert(fcntl(lsn, F_GETFD) & FD_CLOEXEC);
	int host = host_listen(port); /* -1 when a host program has it already */

	g_autofree char *prog = g_strdup_printf(
		"import socket\ns=socket.create_connection(('127.0.0.1',%u),5)\n"
		"s.sendall(b'hello from inside')\nprint(s.recv(100).decode())\n",
		(unsigned)port);
	int out[2];
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	const char *argv[] = { PYTHON, "-c", prog, NULL };
	const char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	confine_request req = { .argv = argv,
				.envp = envp,
				.stdin_fd = null,
				.stdout_fd = out[1],
				.stderr_fd = out[1] };
	confine_child c;
	r = confine_spawn(s, &req, &c, why, sizeof(why));
	ck_assert_msg(r == 0, "spawn: %s", why);
	close(out[1]);

	struct pollfd p = { lsn, POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, 20000), 1);
	int conn = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(conn, 0);
	char buf[64] = "";
	ssize_t n = recv(conn, buf, 17, MSG_WAITALL);
	ck_assert_int_eq(n, 17);
	ck_assert_str_eq(buf, "hello from inside");
	ck_assert_int_eq(send(conn, "seen", 4, MSG_NOSIGNAL), 4);
	close(conn);
	confine_child_stop(&c, false);
	cordon_plugin_run_status st = { .size = sizeof(st) };
	bool exec_failed = false;
	ck_assert_int_eq(confine_child_finish(&c, false, &st, &exec_failed, why, sizeof(why)), 0);
	confine_child_release(&c);
	char o[2048] = "";
	n = read(out[0], o, sizeof(o) - 1);
	ck_assert_msg(n >= 0 && strstr(o, "seen"), "the work printed: %s", o);
	ck_assert_uint_eq(st.exit_code, 0);
	if (host >= 0) {
		/* Nothing came to the host's own listener on that port number. */
		ck_assert_int_lt(accept4(host, NULL, NULL, SOCK_CLOEXEC), 0);
		ck_assert_int_eq(errno, EAGAIN);
		close(host);
	}
	close(out[0]);
	close(null);
	close(lsn);
	confine_sandbox_free(s);
	if (tmpfs >= 0)
		close(tmpfs);
	close(root);
	testutil_rmtree(top);
}
END_TEST

/* ---- governed egress through the public API ---------------------------------------------- */

static GPid spawn_bg(const char *const *argv, const char *cwd)
{
	GPid pid = 0;
	GError *e = NULL;
	ck_assert_msg(g_spawn_async(cwd, (char **)argv, NULL,
				    G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
					    G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
				    NULL, NULL, &pid, &e),
		      "%s: %s", argv[0], e ? e->message : "");
	return pid;
}

static unsigned count_entries(const char *dir, const char *comm)
{
	unsigned n = 0;
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		g_autofree char *p = g_strdup_printf("%s/%s/comm", dir, e->d_name);
		g_autofree char *c = NULL;
		if (!comm || (g_file_get_contents(p, &c, NULL, NULL) && g_str_has_prefix(c, comm)))
			n++;
	}
	closedir(d);
	return n;
}

typedef struct gov {
	char *top, *ws, *audit, *ca;
	uint16_t http, https;
	GPid http_pid, https_pid;
	cordon_context *ctx;
	cordon_sandbox *sb;
} gov;

/* The upstreams on the host's loopback: python's http.server and openssl
 * s_server with a certificate for localhost, which the work gets as its CA. */
static void upstreams_start(gov *g)
{
	g->ws = g_build_filename(g->top, "ws", NULL);
	ck_assert_int_eq(g_mkdir(g->ws, 0755), 0);
	if (geteuid() == 0)
		ck_assert_int_eq(chown(g->ws, 65534, 65534), 0);
	g_autofree char *www = g_build_filename(g->top, "www", NULL);
	ck_assert_int_eq(g_mkdir(www, 0755), 0);
	g_autofree char *page = g_build_filename(www, "index.html", NULL);
	ck_assert(g_file_set_contents(page, "plain upstream page\n", -1, NULL));
	g->ca = g_build_filename(g->ws, "ca.pem", NULL);
	g_autofree char *key = g_build_filename(g->top, "key.pem", NULL);
	const char *gen[] = {
		"openssl",  "req",           "-x509",   "-newkey",
		"rsa:2048", "-nodes",        "-keyout", key,
		"-out",     g->ca,           "-days",   "1",
		"-subj",    "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
		NULL
	};
	gint st = -1;
	ck_assert(g_spawn_sync(NULL, (char **)gen, NULL,
			       G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL |
				       G_SPAWN_STDERR_TO_DEV_NULL,
			       NULL, NULL, NULL, NULL, &st, NULL));
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(chmod(g->ca, 0644), 0);
	g->http = testutil_free_port();
	g->https = testutil_free_port();
	g_autofree char *hp = g_strdup_printf("%u", (unsigned)g->http);
	/* http.server's files, and /redirect: a 302 to a host the rules deny. */
	static const char redirector[] =
		"import http.server,sys\n"
		"class H(http.server.SimpleHTTPRequestHandler):\n"
		"  def do_GET(self):\n"
		"    if self.path!='/redirect': return super().do_GET()\n"
		"    self.send_response(302)\n"
		"    self.send_header('Location','http://blocked.example.com/after-redirect')\n"
		"    self.send_header('Content-Length','0'); self.end_headers()\n"
		"http.server.ThreadingHTTPServer(('127.0.0.1',int(sys.argv[1])),H).serve_forever()"
		"\n";
	const char *http[] = { PYTHON, "-c", redirector, hp, NULL };
	g->http_pid = spawn_bg(http, www);
	g_autofree char *acc = g_strdup_printf("127.0.0.1:%u", (unsigned)g->https);
	const char *https[] = { "openssl", "s_server", "-quiet", "-accept", acc, "-cert",
				g->ca,     "-key",     key,      "-www",    NULL };
	g->https_pid = spawn_bg(https, NULL);
	testutil_wait_port(g->http);
	testutil_wait_port(g->https);
}

static void gov_start(gov *g)
{
	ck_assert_msg(g_file_test(PYTHON, G_FILE_TEST_IS_EXECUTABLE), "needs %s", PYTHON);
	ck_assert_msg(g_file_test("/usr/bin/curl", G_FILE_TEST_IS_EXECUTABLE), "needs curl");
	g->top = top_dir();
	upstreams_start(g);
	g->audit = g_build_filename(g->top, "audit.jsonl", NULL);
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\naudit: {path: %s}\ntiers:\n"
		"  kernel:\n    driver: local\n    confine: kernel\n"
		"    egress:\n      allow: [\"localhost:%u\", \"localhost:%u\", "
		"\"*.example.com\"]\n"
		"      deny: [blocked.example.com]\n"
		"trust:\n  semi-trusted: {require: kernel, tiers: [kernel]}\n",
		g->audit, (unsigned)g->http, (unsigned)g->https);
	g->ctx = testutil_context_from_text(policy, "egress.yaml");
	cordon_request *req = cordon_request_new("semi-trusted");
	ck_assert_int_eq(cordon_request_set_workspace(req, g->ws, NULL), 0);
	ck_assert_int_eq(cordon_request_set_egress(req, CORDON_EGRESS_GOVERNED, NULL), 0);
	cordon_error *err = NULL;
	int r = cordon_sandbox_open(g->ctx, req, &g->sb, &err);
	ck_assert_msg(r == 0, "open: %s", err ? cordon_error_get_message(err) : "");
	cordon_request_free(req);
}

static void gov_stop(gov *g)
{
	cordon_sandbox_close(g->sb);
	cordon_context_free(g->ctx);
	kill(g->http_pid, SIGTERM);
	kill(g->https_pid, SIGTERM);
	waitpid(g->http_pid, NULL, 0);
	waitpid(g->https_pid, NULL, 0);
	testutil_rmtree(g->top);
	g_free(g->top);
	g_free(g->ws);
	g_free(g->audit);
	g_free(g->ca);
}

/* A shell command in the sandbox: its exit code, its output (owned). */
static char *sh(gov *g, const char *cmd, int *ret_code)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 60000;
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_run(g->sb, argv, &o, &res, &err);
	ck_assert_msg(r == 0, "run: %s", err ? cordon_error_get_message(err) : "");
	*ret_code = cordon_result_exit_code(res);
	char *out = g_strdup_printf("%s%s", cordon_result_output(res, 1, NULL),
				    cordon_result_output(res, 2, NULL));
	cordon_result_free(res);
	return out;
}

/* The egress lines of the audit trail, once one holds needle (a connection
 * is audited when it ends, which may be just after the work saw its end). */
static char *audit_text(gov *g, const char *needle)
{
	g_autofree char *all = NULL;
	for (int i = 0; i < 500; i++) {
		g_free(g_steal_pointer(&all));
		ck_assert(g_file_get_contents(g->audit, &all, NULL, NULL));
		if (strstr(all, needle))
			break;
		g_usleep(10000);
	}
	GString *s = g_string_new(NULL);
	char **lines = g_strsplit(all, "\n", -1);
	for (char **l = lines; *l; l++)
		if (strstr(*l, "\"event\":\"egress\""))
			g_string_append_printf(s, "%s\n", *l);
	g_strfreev(lines);
	return g_string_free(s, FALSE);
}

/* The allowed upstreams, through the proxy the environment names. */
START_TEST(test_governed_allowed)
{
	gov g = { 0 };
	gov_start(&g);
	int code;
	g_autofree char *env = sh(&g, "echo \"$HTTPS_PROXY $http_proxy $NO_PROXY\"", &code);
	ck_assert_msg(g_str_has_prefix(env, "http://127.0.0.1:") &&
			      strstr(env, "localhost,127.0.0.1"),
		      "%s", env);
	/* NO_PROXY keeps the work's own localhost direct; --noproxy '' sends these
	 * localhost URLs to the proxy all the same (it is the host's localhost the
	 * rules name). */
	g_autofree char *tls_cmd = g_strdup_printf(
		"curl -sS --max-time 20 --noproxy '' --cacert %s https://localhost:%u/", g.ca,
		(unsigned)g.https);
	g_autofree char *tls = sh(&g, tls_cmd, &code);
	ck_assert_msg(code == 0 && strstr(tls, "s_server"), "https: %d %s", code, tls);
	g_autofree char *plain_cmd = g_strdup_printf(
		"curl -sS --max-time 20 --noproxy '' http://localhost:%u/", (unsigned)g.http);
	g_autofree char *plain = sh(&g, plain_cmd, &code);
	ck_assert_msg(code == 0 && strstr(plain, "plain upstream page"), "http: %d %s", code,
		      plain);
	/* A redirect from an allowed host to a denied one: the second request is the
	 * work's own, judged on its own, refused and audited. */
	g_autofree char *redir_cmd = g_strdup_printf(
		"curl -sS -L --max-time 20 --noproxy '' http://localhost:%u/redirect",
		(unsigned)g.http);
	g_autofree char *redir = sh(&g, redir_cmd, &code);
	ck_assert_msg(strstr(redir, "cordon egress:") && !strstr(redir, "plain upstream"),
		      "redirect: %d %s", code, redir);
	g_autofree char *want_tls = g_strdup_printf("\"method\":\"CONNECT\",\"host\":\"localhost\","
						    "\"port\":%u,\"address\":\"127.0.0.1:%u\","
						    "\"verdict\":\"allowed\"",
						    (unsigned)g.https, (unsigned)g.https);
	g_autofree char *want_plain = g_strdup_printf(
		"\"method\":\"GET\",\"host\":\"localhost\",\"port\":%u", (unsigned)g.http);
	g_autofree char *a = audit_text(&g, "\"host\":\"blocked.example.com\""); /* the last */
	ck_assert_msg(strstr(a, want_tls), "audit: %s", a);
	ck_assert_msg(strstr(a, want_plain), "audit: %s", a);
	ck_assert_msg(strstr(a, cordon_sandbox_id(g.sb)), "audit: %s", a);
	const char *hop = strstr(a, "\"host\":\"blocked.example.com\"");
	ck_assert_msg(hop && strstr(hop, "\"verdict\":\"refused\"") &&
			      strstr(hop, "\"verdict\":\"refused\"") < strchr(hop, '\n'),
		      "the redirect's hop is not audited as refused: %s", a);

	/* At run time: narrowed to the HTTPS upstream, then back to the tier's rules;
	 * a rule outside the tier's gives nothing. */
	g_autofree char *only = g_strdup_printf("localhost:%u", (unsigned)g.https);
	const char *allow[] = { only, "pypi.org", NULL };
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_set_egress(g.sb, allow, NULL, &err), 0);
	g_autofree char *narrowed = sh(&g, plain_cmd, &code);
	ck_assert_msg(strstr(narrowed, "cordon egress:") && !strstr(narrowed, "plain upstream"),
		      "%s", narrowed);
	g_autofree char *tls2 = sh(&g, tls_cmd, &code);
	ck_assert_msg(code == 0 && strstr(tls2, "s_server"), "https: %d %s", code, tls2);
	const char *bad[] = { "*", NULL };
	ck_assert_int_eq(cordon_sandbox_set_egress(g.sb, bad, NULL, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	cordon_error_free(err);
	err = NULL;
	ck_assert_int_eq(cordon_sandbox_set_egress(g.sb, NULL, NULL, &err), 0);
	g_autofree char *back = sh(&g, plain_cmd, &code);
	ck_assert_msg(code == 0 && strstr(back, "plain upstream page"), "%s", back);
	g_free(audit_text(&g, "\"allow\":null,\"deny\":null,\"error\":null"));
	g_autofree char *all = NULL;
	ck_assert(g_file_get_contents(g.audit, &all, NULL, NULL));
	g_autofree char *want_change = g_strdup_printf("\"event\":\"egress_change\",\"decision\":");
	ck_assert_msg(
		strstr(all, want_change) && strstr(all, "\"allow\":[\"localhost:") &&
			strstr(all,
			       "\"allow\":[\"*\"],\"deny\":null,\"error\":\"invalid_argument\"") &&
			strstr(all, "\"allow\":null,\"deny\":null,\"error\":null"),
		"%s", all);
	gov_stop(&g);
}
END_TEST

/* Everything else, refused: through the proxy (audited) and around it. */
START_TEST(test_governed_refused)
{
	/* Counted after one sandbox's life: the first one leaves an eventfd that
	 * GLib makes once per process on first use; a second must leave nothing. */
	gov w = { 0 };
	gov_start(&w);
	gov_stop(&w);
	unsigned fds0 = count_entries("/proc/self/fd", NULL);
	gov g = { 0 };
	gov_start(&g);
	/* The thread names itself once it runs. */
	for (int i = 0; i < 200 && count_entries("/proc/self/task", "cordon-proxy") != 1; i++)
		g_usleep(10000);
	ck_assert_uint_eq(count_entries("/proc/self/task", "cordon-proxy"), 1);
	int code;
	g_autofree char *ip = g_strdup_printf("http://127.0.0.1:%u/", (unsigned)g.http);
	g_autofree char *v6 = g_strdup_printf("http://[::1]:%u/", (unsigned)g.http);
	const char *through[] = {
		"http://blocked.example.com/",    /* a deny rule */
		"http://not-allowed.test/",       /* no rule */
		ip,                               /* an IP literal no address rule covers */
		"http://169.254.169.254/latest/", /* the metadata address */
		v6,                               /* IPv6 */
		NULL,
	};
	for (int i = 0; through[i]; i++) {
		g_autofree char *cmd = g_strdup_printf("curl -sS --max-time 20 --noproxy '' '%s'",
						       through[i]);
		g_autofree char *o = sh(&g, cmd, &code);
		ck_assert_msg(strstr(o, "cordon egress:") && !strstr(o, "plain upstream"),
			      "%s: %d %s", through[i], code, o);
	}
	/* Around the proxy: the namespace has only lo. */
	g_autofree char *py = g_strdup_printf(
		"import socket,errno\n"
		"def t(name,f):\n"
		"  try:\n    f(); print(name,'REACHED')\n"
		"  except OSError as e: print(name,'refused',e.errno)\n"
		"t('tcp', lambda: socket.create_connection(('1.1.1.1',443),3))\n"
		"t('host', lambda: socket.create_connection(('10.0.2.2',%u),3))\n"
		"t('udp', lambda: "
		"socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(b'x',('8.8.8.8',53)))\n"
		"t('v6', lambda: socket.create_connection(('2001:4860:4860::8888',443),3))\n"
		"t('raw', lambda: "
		"socket.socket(socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_ICMP))\n"
		"t('dns', lambda: socket.getaddrinfo('example.com',443))\n",
		(unsigned)g.http);
	g_autofree char *pycmd = g_strdup_printf("%s -c \"$0\"", PYTHON);
	const char *argv[] = { "/bin/sh", "-c", pycmd, py, NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 60000;
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_run(g.sb, argv, &o, &res, NULL), 0);
	const char *out = cordon_result_output(res, 1, NULL);
	ck_assert_msg(!strstr(out, "REACHED"), "%s", out);
	const char *names[] = { "tcp refused", "host refused", "udp refused",
				"v6 refused",  "raw refused",  NULL };
	for (int i = 0; names[i]; i++)
		ck_assert_msg(strstr(out, names[i]), "%s: %s", names[i], out);
	/* The resolver query: getaddrinfo raises gaierror, also an OSError. */
	ck_assert_msg(strstr(out, "dns refused"), "%s", out);
	cordon_result_free(res);
	g_autofree char *a = audit_text(&g, "\"host\":\"::1\"");
	const char *audited[] = { "\"host\":\"blocked.example.com\"",
				  "\"host\":\"not-allowed.test\"",
				  "\"host\":\"127.0.0.1\"",
				  "\"host\":\"169.254.169.254\"",
				  "\"host\":\"::1\"",
				  NULL };
	for (int i = 0; audited[i]; i++) {
		const char *l = strstr(a, audited[i]);
		ck_assert_msg(l, "%s not audited: %s", audited[i], a);
		const char *eol = strchr(l, '\n');
		g_autofree char *line = g_strndup(l, (gsize)(eol - l));
		ck_assert_msg(strstr(line, "\"verdict\":\"refused\""), "%s", line);
	}
	ck_assert(!strstr(a, "\"verdict\":\"allowed\""));
	gov_stop(&g);
	ck_assert_uint_eq(count_entries("/proc/self/task", "cordon-proxy"), 0);
	ck_assert_uint_eq(count_entries("/proc/self/fd", NULL), fds0);
}
END_TEST

/* Without egress rules on the tier, governed is refused, never given less or more. */
START_TEST(test_governed_needs_rules)
{
	g_autofree char *top = top_dir();
	if (geteuid() == 0)
		ck_assert_int_eq(chown(top, 65534, 65534), 0);
	cordon_context *ctx = NULL;
	ck_assert_int_eq(cordon_context_new(NULL, &ctx, NULL), 0);
	cordon_request *req = cordon_request_new("semi-trusted");
	ck_assert_int_eq(cordon_request_set_workspace(req, top, NULL), 0);
	ck_assert_int_eq(cordon_request_set_egress(req, CORDON_EGRESS_GOVERNED, NULL), 0);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_msg(strstr(cordon_error_get_message(err), "egress: rules"), "%s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	err = NULL;
	/* refused by admission, so explain says so too (it used to admit, then open refused) */
	cordon_decision *d = NULL;
	ck_assert_int_lt(cordon_decide(ctx, req, &d, &err), 0);
	ck_assert_str_eq(cordon_error_get_code(err), "sandbox_denied");
	cordon_decision_free(d);
	cordon_error_free(err);
	cordon_request_free(req);
	cordon_context_free(ctx);
	testutil_rmtree(top);
}
END_TEST

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("kernel");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_listener_inside);
	tcase_add_test(tc, test_governed_allowed);
	tcase_add_test(tc, test_governed_refused);
	tcase_add_test(tc, test_governed_needs_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return testutil_run_on_tier("kernel", egress_suite());
}
