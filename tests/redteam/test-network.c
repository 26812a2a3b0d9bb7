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
#include <glib.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
	ck_assert_msg(g_file_test(PYTHON, G_FILE_TEST_IS_EXECUTABLE), "these tests need %s", PYTHON);
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
	g_autofree char *o1 = py(&t, "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); "
				     "s.listen(); print('bound', s.getsockname()[1])", &code);
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
				"open('port.tmp','w').write(str(s.getsockname()[1])); os.rename('port.tmp','port')\n"
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
	g_autofree char *o = py(&t, "import socket\n"
				    "c=socket.create_connection(('127.0.0.1', int(open('port').read())))\n"
				    "print(c.recv(64).decode())\n",
				&code);
	ck_assert_msg(code == 0 && strstr(o, "from-the-first-run"), "second run: %s", o);
	cordon_serve_free(sv);
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
	g_autofree char *prog = g_strdup_printf("import socket, errno\n"
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

/* ---- the suite -------------------------------------------------------------------------- */

static Suite *network_suite(void)
{
	Suite *s = suite_create("network");
	TCase *tc = tcase_create("kernel");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_loopback_bind_listen_connect);
	tcase_add_test(tc, test_loopback_across_runs);
	tcase_add_test(tc, test_host_loopback_unreachable);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return testutil_run_on_tier("kernel", network_suite());
}
