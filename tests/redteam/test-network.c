/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's network (issue 14), real kernel, real sockets: the
 * sandbox's loopback is its own (bind, listen, connect, across runs of one
 * sandbox) and nothing of the host's is reachable from it; `serve` reaches
 * the host only through the forwarder cordon owns, never through a host
 * port the work chose.
 *
 * Runs as whoever runs `make check`, and again as nobody when that is root
 * (test-network-nobody.sh). A host without the kernel tier skips (and fails
 * under CORDON_REQUIRE=all).
 */
#include "config.h"

#include "testutil.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"

typedef struct nt {
	char *top; /* /var/tmp/cordon-net-XXXXXX: not below /tmp, which the sandbox replaces */
	char *ws;
	cordon_context *ctx;
	cordon_sandbox *sb;
} nt;

static void nt_start(nt *t)
{
	ck_assert_msg(g_file_test(PYTHON, G_FILE_TEST_IS_EXECUTABLE), "these tests need %s",
		      PYTHON);
	t->top = g_strdup("/var/tmp/cordon-net-XXXXXX");
	ck_assert_ptr_nonnull(g_mkdtemp(t->top));
	ck_assert_int_eq(chmod(t->top, 0755), 0);
	t->ws = g_build_filename(t->top, "ws", NULL);
	ck_assert_int_eq(g_mkdir(t->ws, 0700), 0);
	/* As root a workspace must belong to an unprivileged user. */
	if (geteuid() == 0)
		ck_assert_int_eq(chown(t->ws, 65534, 65534), 0);
	cordon_error *err = NULL;
	ck_assert_msg(cordon_context_new(NULL, &t->ctx, &err) == 0, "%s",
		      err ? cordon_error_get_message(err) : "");
	cordon_request *req = cordon_request_new("semi-trusted");
	ck_assert_int_eq(cordon_request_set_tier(req, "kernel", NULL), 0);
	ck_assert_int_eq(cordon_request_set_workspace(req, t->ws, NULL), 0);
	int r = cordon_sandbox_open(t->ctx, req, &t->sb, &err);
	ck_assert_msg(r == 0, "open: %s", err ? cordon_error_get_message(err) : "");
	cordon_request_free(req);
}

static void nt_stop(nt *t)
{
	cordon_sandbox_close(t->sb);
	cordon_context_free(t->ctx);
	testutil_rmtree(t->top);
	g_free(t->top);
	g_free(t->ws);
}

/* Runs a python program in the sandbox; its stdout (owned by the caller). */
static char *py(nt *t, const char *prog, int *ret_code)
{
	const char *argv[] = { PYTHON, "-c", prog, NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 30000;
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_run(t->sb, argv, &o, &res, &err);
	ck_assert_msg(r == 0, "run: %s", err ? cordon_error_get_message(err) : "");
	*ret_code = cordon_result_exit_code(res);
	char *s = g_strdup_printf("%s%s", cordon_result_output(res, 1, NULL),
				  cordon_result_output(res, 2, NULL));
	cordon_result_free(res);
	return s;
}

/* A host listener on 127.0.0.1 (port chosen by the kernel), non-blocking. */
static int host_listener(uint16_t *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

/* ---- loopback inside ------------------------------------------------------------------ */

/* The issue's own reproducer, then a server and a client in one run. */
START_TEST(test_loopback_bind_listen_connect)
{
	nt t = { 0 };
	nt_start(&t);
	int code;
	g_autofree char *o1 = py(&t,
				 "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); "
				 "s.listen(); print('bound', s.getsockname()[1])",
				 &code);
	ck_assert_msg(code == 0 && strstr(o1, "bound "), "bind on the sandbox's loopback: %s", o1);
	g_autofree char *o2 = py(&t,
				 "import socket\n"
				 "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
				 "c=socket.create_connection(s.getsockname()); a,_=s.accept()\n"
				 "c.sendall(b'ping'); print(a.recv(4).decode())\n",
				 &code);
	ck_assert_msg(code == 0 && strstr(o2, "ping"), "a connection on the loopback: %s", o2);
	nt_stop(&t);
}
END_TEST

/* A server started by one run (a serve) answers a client of another run of
 * the same sandbox: the sandbox's loopback is shared by its runs. */
START_TEST(test_loopback_across_runs)
{
	nt t = { 0 };
	nt_start(&t);
	const char *sargv[] = { PYTHON, "-c",
				"import socket, os\n"
				"s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
				"open('port.tmp','w').write(str(s.getsockname()[1])); "
				"os.rename('port.tmp','port')\n"
				"while True:\n"
				"  a,_=s.accept(); a.sendall(b'from-the-first-run'); a.close()\n",
				NULL };
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_serve(t.sb, sargv, 0, NULL, &sv, &err), 0);
	g_autofree char *portfile = g_build_filename(t.ws, "port", NULL);
	for (int i = 0; i < 1000 && !g_file_test(portfile, G_FILE_TEST_EXISTS); i++)
		g_usleep(10000);
	ck_assert_msg(g_file_test(portfile, G_FILE_TEST_EXISTS), "the server did not start: %s",
		      cordon_serve_output(sv));
	int code;
	g_autofree char *o = py(
		&t,
		"import socket\n"
		"c=socket.create_connection(('127.0.0.1', int(open('port').read())))\n"
		"print(c.recv(64).decode())\n",
		&code);
	ck_assert_msg(code == 0 && strstr(o, "from-the-first-run"), "second run: %s", o);
	cordon_serve_free(sv);
	nt_stop(&t);
}
END_TEST

/* cordon_serve_pid on the kernel tier: the server's pid in its run's own pid namespace,
 * what $$ is there (docs/embedding.md), never its host pid; a second server's is its own. */
START_TEST(test_serve_pid)
{
	nt t = { 0 };
	nt_start(&t);
	const char *argv[] = { "/bin/sh", "-c", "echo pid=$$; exec sleep 30", NULL };
	cordon_serve *sv[2] = { NULL, NULL };
	for (int i = 0; i < 2; i++) {
		cordon_error *err = NULL;
		ck_assert_int_eq(cordon_sandbox_serve(t.sb, argv, 0, NULL, &sv[i], &err), 0);
		g_autofree char *said = NULL;
		for (int j = 0; j < 500 && !(said && strchr(said, '\n')); j++) {
			g_free(said);
			said = cordon_serve_output(sv[i]);
			g_usleep(10000);
		}
		ck_assert_msg(said && g_str_has_prefix(said, "pid="), "output: %s", said);
		int64_t inside = g_ascii_strtoll(said + 4, NULL, 10);
		ck_assert_int_gt(inside, 0);
		ck_assert_int_eq(cordon_serve_pid(sv[i]), inside);
		/* not a host pid: no host process of that pid runs the server's sleep */
		g_autofree char *comm_path = g_strdup_printf("/proc/%" PRId64 "/comm", inside);
		g_autofree char *comm = NULL;
		ck_assert(!g_file_get_contents(comm_path, &comm, NULL, NULL) ||
			  strcmp(comm, "sleep\n") != 0);
	}
	cordon_serve_free(sv[0]);
	cordon_serve_free(sv[1]);
	nt_stop(&t);
}
END_TEST

/* The host's loopback is another network: its listener is refused by the
 * namespace (ECONNREFUSED), never reached, on the same port number. */
START_TEST(test_host_loopback_unreachable)
{
	nt t = { 0 };
	nt_start(&t);
	uint16_t port;
	int lsn = host_listener(&port);
	g_autofree char *prog = g_strdup_printf(
		"import socket, errno\n"
		"try:\n"
		"  socket.create_connection(('127.0.0.1', %u), timeout=5)\n"
		"  print('connected')\n"
		"except OSError as e: print('refused', errno.errorcode[e.errno])\n",
		(unsigned)port);
	int code;
	g_autofree char *o = py(&t, prog, &code);
	ck_assert_msg(strstr(o, "refused ECONNREFUSED"), "host listener from inside: %s", o);
	ck_assert_int_lt(accept(lsn, NULL, NULL), 0);
	ck_assert_int_eq(errno, EAGAIN);
	close(lsn);
	nt_stop(&t);
}
END_TEST

/* ---- serve through the forwarder ------------------------------------------------------ */

/* A server that answers each connection, once the client has said all,
 * with "inside:" and what it said. */
static const char echo_server[] =
	"import socketserver, sys\n"
	"class H(socketserver.BaseRequestHandler):\n"
	"  def handle(self):\n"
	"    d = b''\n"
	"    while True:\n"
	"      b = self.request.recv(65536)\n"
	"      if not b: break\n"
	"      d += b\n"
	"    try: self.request.sendall(b'inside:' + d)\n"
	"    except OSError: pass\n"
	"socketserver.ThreadingTCPServer.allow_reuse_address = True\n"
	"socketserver.ThreadingTCPServer.daemon_threads = True\n"
	"s = socketserver.ThreadingTCPServer(('127.0.0.1', int(sys.argv[1])), H)\n"
	"print('listening', flush=True)\n"
	"s.serve_forever()\n";

/* A blocking connection to "127.0.0.1:PORT", or -1. */
static int connect_address(const char *address)
{
	const char *colon = strrchr(address, ':');
	ck_assert_ptr_nonnull(colon);
	ck_assert(strncmp(address, "127.0.0.1:", 10) == 0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct timeval tv = { 20, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(colon + 1)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends data, half-closes, reads the answer to EOF (g_byte_array). */
static GByteArray *exchange(int fd, const void *data, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, (const char *)data + off, len - off, MSG_NOSIGNAL);
		ck_assert_msg(n > 0, "send: %s", g_strerror(errno));
		off += (size_t)n;
	}
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	GByteArray *got = g_byte_array_new();
	char buf[65536];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		g_byte_array_append(got, (const guint8 *)buf, (guint)n);
	ck_assert_msg(n == 0, "recv: %s", g_strerror(errno));
	return got;
}

static unsigned count_fds(void)
{
	unsigned n = 0;
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Threads of this process named name (the forwarder's: "cordon-forward"). */
static unsigned count_threads(const char *name)
{
	unsigned n = 0;
	DIR *d = opendir("/proc/self/task");
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		g_autofree char *p = g_strdup_printf("/proc/self/task/%s/comm", e->d_name);
		g_autofree char *comm = NULL;
		if (g_file_get_contents(p, &comm, NULL, NULL) && g_str_has_prefix(comm, name))
			n++;
	}
	closedir(d);
	return n;
}

/* The forwarder's path, from its debug line: "kernel" (a sockmap), "relay", or "". */
static char forward_path[8];

static void on_log(void *user, cordon_log_level level, const char *message)
{
	(void)user;
	(void)level;
	if (strstr(message, "serve forwarder: port") && strstr(message, "carried by the kernel"))
		g_strlcpy(forward_path, "kernel", sizeof(forward_path));
	else if (strstr(message, "serve forwarder: port") && strstr(message, "by the relay ("))
		g_strlcpy(forward_path, "relay", sizeof(forward_path));
}

/* The bug: serve returned the host's 127.0.0.1:PORT, and with a host
 * program on that port the host reached that program. Now the work's port
 * is reached only through cordon's listener; the host program on the same
 * port number never sees a connection. As root the kernel carries the bytes
 * (a sockmap), as nobody the relay: the same checks hold on both. */
START_TEST(test_serve_through_forwarder)
{
	nt t = { 0 };
	nt_start(&t);
	cordon_set_log_handler(on_log, NULL, CORDON_LOG_DEBUG);
	uint16_t port;
	int host = host_listener(&port); /* an unrelated host program's port */
	unsigned fds_before = count_fds();
	g_autofree char *portarg = g_strdup_printf("%u", (unsigned)port);
	const char *argv[] = { PYTHON, "-c", echo_server, portarg, NULL };
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	gint64 t0 = g_get_monotonic_time();
	int r = cordon_sandbox_serve(t.sb, argv, port, NULL, &sv, &err);
	ck_assert_msg(r == 0, "serve: %s", err ? cordon_error_get_message(err) : "");
	fprintf(stderr, "# serve returned after %.1f ms\n", (g_get_monotonic_time() - t0) / 1000.0);
	/* Returned once the port accepts: the address is there at once. */
	g_autofree char *addr = cordon_serve_address(sv);
	ck_assert_ptr_nonnull(addr);
	g_autofree char *hostaddr = g_strdup_printf("127.0.0.1:%u", (unsigned)port);
	ck_assert_str_ne(addr, hostaddr);

	int c = connect_address(addr);
	ck_assert_int_ge(c, 0);
	g_autoptr(GByteArray) a1 = exchange(c, "hello", 5);
	close(c);
	ck_assert_int_eq(a1->len, 12);
	ck_assert(memcmp(a1->data, "inside:hello", 12) == 0);

	/* Two at once, one of them 4 MiB each way: bytes carried unchanged. */
	size_t big = 4u << 20;
	g_autofree char *data = g_malloc(big);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)(i * 7 + i / 4096);
	int c1 = connect_address(addr), c2 = connect_address(addr);
	ck_assert(c1 >= 0 && c2 >= 0);
	g_autoptr(GByteArray) a2 = exchange(c2, "second", 6);
	g_autoptr(GByteArray) a3 = exchange(c1, data, big);
	close(c1);
	close(c2);
	ck_assert_int_eq(a2->len, 13);
	ck_assert(memcmp(a2->data, "inside:second", 13) == 0);
	ck_assert_uint_eq(a3->len, big + 7);
	ck_assert(memcmp(a3->data + 7, data, big) == 0);

	ck_assert_str_eq(forward_path, geteuid() == 0 ? "kernel" : "relay");
	cordon_set_log_handler(NULL, NULL, CORDON_LOG_DEBUG);

	/* The host program on the same port number was never reached. */
	ck_assert_int_lt(accept(host, NULL, NULL), 0);
	ck_assert_int_eq(errno, EAGAIN);

	/* Nothing left after the server: no listener, no thread, no fd. */
	ck_assert_uint_eq(count_threads("cordon-forward"), 1);
	cordon_serve_free(sv);
	ck_assert_int_lt(connect_address(addr), 0);
	ck_assert_uint_eq(count_threads("cordon-forward"), 0);
	ck_assert_uint_eq(count_fds(), fds_before);
	close(host);
	nt_stop(&t);
}
END_TEST

/* A server listening on ::1 only (issue 14, item 2): reached through the
 * same forwarder, which finds it there when 127.0.0.1 refuses. */
START_TEST(test_serve_ipv6_only)
{
	nt t = { 0 };
	nt_start(&t);
	g_autofree char *v6 = g_strdup(echo_server);
	char *at = strstr(v6, "s = socketserver.ThreadingTCPServer(('127.0.0.1'");
	ck_assert_ptr_nonnull(at);
	g_autofree char *prog = g_strdup_printf(
		"%.*ssocketserver.ThreadingTCPServer.address_family = __import__('socket')."
		"AF_INET6\ns = socketserver.ThreadingTCPServer(('::1', int(sys.argv[1])), H)\n"
		"print('listening', flush=True)\ns.serve_forever()\n",
		(int)(at - v6), v6);
	const char *argv[] = { PYTHON, "-c", prog, "8080", NULL };
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_serve(t.sb, argv, 8080, NULL, &sv, &err);
	ck_assert_msg(r == 0, "serve: %s", err ? cordon_error_get_message(err) : "");
	g_autofree char *addr = cordon_serve_address(sv);
	for (int i = 0; i < 2; i++) {
		int c = connect_address(addr);
		ck_assert_int_ge(c, 0);
		g_autoptr(GByteArray) a = exchange(c, "over v6", 7);
		close(c);
		ck_assert_int_eq(a->len, 14);
		ck_assert(memcmp(a->data, "inside:over v6", 14) == 0);
	}
	cordon_serve_free(sv);
	nt_stop(&t);
}
END_TEST

/* Served on a unix socket on request (issue 14, item 2): "unix:/path" in a
 * directory only we can enter, no TCP listener, both gone at the end. */
START_TEST(test_serve_unix_socket)
{
	nt t = { 0 };
	nt_start(&t);
	const char *argv[] = { PYTHON, "-c", echo_server, "8080", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.flags = CORDON_RUN_SERVE_UNIX;
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_serve(t.sb, argv, 8080, &o, &sv, &err);
	ck_assert_msg(r == 0, "serve: %s", err ? cordon_error_get_message(err) : "");
	g_autofree char *addr = cordon_serve_address(sv);
	const char *path = testutil_assert_unix_listener(addr);
	for (int i = 0; i < 2; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		g_strlcpy(a.sun_path, path, sizeof(a.sun_path));
		ck_assert_int_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
		g_autoptr(GByteArray) got = exchange(c, "by unix", 7);
		close(c);
		ck_assert_int_eq(got->len, 14);
		ck_assert(memcmp(got->data, "inside:by unix", 14) == 0);
	}
	cordon_serve_free(sv);
	g_autofree char *dir = g_path_get_dirname(path);
	struct stat st;
	ck_assert_int_lt(stat(path, &st), 0);
	ck_assert_int_lt(stat(dir, &st), 0); /* removed at the end */
	/* Not for a run: only a serve with a port has a listener. */
	const char *tru[] = { "/bin/true", NULL };
	cordon_result *res = NULL;
	ck_assert_int_lt(cordon_sandbox_run(t.sb, tru, &o, &res, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	nt_stop(&t);
}
END_TEST

/* Closing the sandbox with a server and a connection open: the client sees
 * the end, and no listener, forwarder thread or descriptor is left. */
START_TEST(test_close_ends_the_forwarder)
{
	nt t = { 0 };
	nt_start(&t);
	unsigned fds_before = count_fds();
	const char *argv[] = { PYTHON, "-c", echo_server, "8080", NULL };
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_serve(t.sb, argv, 8080, NULL, &sv, &err), 0);
	g_autofree char *addr = cordon_serve_address(sv);
	int c = connect_address(addr);
	ck_assert_int_ge(c, 0);
	ck_assert_int_eq(send(c, "pending", 7, MSG_NOSIGNAL), 7); /* no FIN: the server waits */
	cordon_sandbox_close(t.sb);
	t.sb = NULL;
	char b;
	errno = 0;
	ck_assert_int_le(recv(c, &b, 1, 0), 0); /* EOF or reset, not a timeout */
	ck_assert_int_ne(errno, EAGAIN);
	close(c);
	ck_assert_int_lt(connect_address(addr), 0);
	ck_assert_uint_eq(count_threads("cordon-forward"), 0);
	cordon_serve_free(sv); /* the caller's handle outlives the sandbox */
	ck_assert_uint_le(count_fds(), fds_before);
	nt_stop(&t);
}
END_TEST

/* serve fails with the reason, at once when the server ends first, and
 * within the bound when its port never accepts; nothing is left. */
START_TEST(test_serve_not_ready)
{
	nt t = { 0 };
	nt_start(&t);
	unsigned fds_before = count_fds();
	cordon_serve *sv = NULL;
	cordon_error *err = NULL;
	const char *gone[] = { "/bin/sh", "-c", "echo bye; exit 3", NULL };
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_lt(cordon_sandbox_serve(t.sb, gone, 8080, NULL, &sv, &err), 0);
	ck_assert_msg(g_get_monotonic_time() - t0 < 5 * G_USEC_PER_SEC, "not at once");
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(
		strstr(cordon_error_get_message(err), "ended (exit status 3) before port 8080"),
		"%s", cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "serve_not_ready");
	ck_assert_ptr_null(sv);
	/* one killed by a signal says so (it read "exit status 0") */
	const char *killed[] = { "/bin/sh", "-c", "kill -KILL $$", NULL };
	ck_assert_int_lt(cordon_sandbox_serve(t.sb, killed, 8080, NULL, &sv, &err), 0);
	ck_assert_msg(strstr(cordon_error_get_message(err),
			     "ended (killed by signal 9) before port 8080"),
		      "%s", cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "serve_not_ready");

	const char *mute[] = { "/bin/sleep", "60", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 1500;
	t0 = g_get_monotonic_time();
	ck_assert_int_lt(cordon_sandbox_serve(t.sb, mute, 8080, &o, &sv, &err), 0);
	gint64 took = g_get_monotonic_time() - t0;
	ck_assert_msg(took >= 1400 * 1000 && took < 10 * G_USEC_PER_SEC,
		      "took %" G_GINT64_FORMAT " us", took);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(cordon_error_get_message(err),
			     "port 8080 did not accept connections within"),
		      "%s", cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "serve_not_ready");
	ck_assert_uint_eq(count_threads("cordon-forward"), 0);
	ck_assert_uint_eq(count_fds(), fds_before);
	/* The sandbox is still usable. */
	int code;
	g_autofree char *o2 = py(&t, "print('still here')", &code);
	ck_assert_msg(code == 0 && strstr(o2, "still here"), "%s", o2);
	nt_stop(&t);
}
END_TEST

/* ---- the suite -------------------------------------------------------------------------- */

static Suite *network_suite(void)
{
	Suite *s = suite_create("network");
	TCase *tc = tcase_create("kernel");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_loopback_bind_listen_connect);
	tcase_add_test(tc, test_loopback_across_runs);
	tcase_add_test(tc, test_serve_pid);
	tcase_add_test(tc, test_host_loopback_unreachable);
	tcase_add_test(tc, test_serve_through_forwarder);
	tcase_add_test(tc, test_serve_ipv6_only);
	tcase_add_test(tc, test_serve_unix_socket);
	tcase_add_test(tc, test_serve_not_ready);
	tcase_add_test(tc, test_close_ends_the_forwarder);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run_on_tier("kernel", network_suite()); }
