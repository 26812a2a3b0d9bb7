/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Governed egress on the kernel tier (issue 14, items 3 and 4), real kernel,
 * real sockets: the listener cordon makes inside a sandbox's network
 * namespace (confine_sandbox_listen), reached by the work at 127.0.0.1:PORT
 * inside while a host program on the same port number is never reached.
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
#include <sys/stat.h>
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
	int r = confine_sandbox_new(root, &lim, 0, &tmpfs, &s, why, sizeof(why));
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

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("kernel");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_listener_inside);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run_on_tier("kernel", egress_suite()); }
