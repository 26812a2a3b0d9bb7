/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `relay SOCKET`: a listener on the sandbox's own loopback whose connections
 * go to a unix socket of the host's, bind-mounted into the sandbox (gVisor:
 * its work talks to the Sentry's network stack, where no socket of the
 * host's kernel is seen; docs/network.md "Governed egress on gVisor"). The
 * agent binds 127.0.0.1:0, answers the port (one DATA frame, decimal, then
 * DONE), and a process of its own (its own session, nothing of the channel
 * open) accepts: each connection is a child that connects to SOCKET and
 * copies bytes both ways unchanged, a half-close passed on. Nothing is
 * parsed: the host's proxy on the other end judges every byte. The relay ends
 * with the container; a host socket that went away refuses its connections.
 */
#include "config.h"

#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RELAY_BUF (64u * 1024)

typedef struct half {
	int from, to;
	bool open; /* from has not reached EOF */
} half;

/* One direction's turn: what from has, written whole to to; false when it ended. */
static bool copy_once(half *h, char *buf)
{
	ssize_t n = read(h->from, buf, RELAY_BUF);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0) {
		h->open = false;
		shutdown(h->to, SHUT_WR);
		return n == 0;
	}
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(h->to, buf + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		off += w;
	}
	return true;
}

static void pump(int a, int b)
{
	static char buf[RELAY_BUF];
	half h[2] = { { a, b, true }, { b, a, true } };
	while (h[0].open || h[1].open) {
		struct pollfd p[2];
		nfds_t n = 0;
		half *which[2];
		for (int i = 0; i < 2; i++)
			if (h[i].open) {
				p[n] = (struct pollfd){ h[i].from, POLLIN, 0 };
				which[n++] = &h[i];
			}
		if (poll(p, n, -1) < 0 && errno != EINTR)
			return;
		for (nfds_t i = 0; i < n; i++)
			if (p[i].revents && !copy_once(which[i], buf))
				return;
	}
}

static int connect_host(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	memcpy(a.sun_path, path, strlen(path) + 1); /* the length was checked */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void serve_connection(int client, const char *path)
{
	int host = connect_host(path);
	if (host >= 0)
		pump(client, host);
	_exit(0);
}

/* The relay's own process: accepts for ever (the container's end ends it). */
static void accept_loop(int lsn, const char *path)
{
	for (;;) {
		int c = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			    errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				continue;
			_exit(1);
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(lsn);
			serve_connection(c, path);
		}
		close(c);
	}
}

/* Our own session, the default signal state (children reaped by the kernel), and only
 * the listener open: nothing of the channel or of the session agent's stays with us. We
 * end with the agent (pid 1 in a container, where everything ends with it anyway; a
 * session agent on a host, as in the tests, leaves no relay behind). */
static void detach(int lsn, pid_t agent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != agent)
		_exit(0); /* the agent ended before the line above */
	setsid();
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGCHLD, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		if (null >= 0)
			dup2(null,
			     fd); /* dup2 clears close-on-exec on the copy: fine, we never exec */
		else
			close(fd);
	for (int fd = 3; fd < 1024; fd++)
		if (fd != lsn)
			close(fd);
}

int agent_relay_start(const char *path, uint16_t *ret_port, pid_t *ret_pid)
{
	if (path[0] != '/' || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -EINVAL;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int lsn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsn < 0)
		return -errno;
	if (bind(lsn, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lsn, SOMAXCONN) < 0 ||
	    getsockname(lsn, (struct sockaddr *)&a, &len) < 0) {
		int e = errno;
		close(lsn);
		return -e;
	}
	pid_t agent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(lsn);
		return -e;
	}
	if (pid == 0) {
		detach(lsn, agent);
		accept_loop(lsn, path);
	}
	close(lsn);
	*ret_port = ntohs(a.sin_port);
	*ret_pid = pid;
	return 0;
}
