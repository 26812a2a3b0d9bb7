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
 *
 * A microVM guest shares no socket with the host. Its network channel (the second
 * virtio-serial port) is one process of the agent's, started with the identity and at once
 * the work's uid (agent_channel_start), which multiplexes streams onto it
 * (common/netmux.h). `relay channel:N` hands it a listener on 127.0.0.1:0 (over a unix
 * socket pair, the descriptor with its id: netmux_set_control), whose connections become
 * streams of listener N, which the host connects to its listener N (plugins/qemu/net.c).
 * The streams the host opens reach a port of the guest's loopback (a served port) or a
 * session of the agent's own, for a run while another holds the first. The multiplexer is
 * not restarted: once it has ended, relays and those runs fail.
 */
#include "config.h"

#include "relay.h"

#include "netmux.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
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
static void detach(const int *keep, size_t n_keep, pid_t agent)
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
	for (int fd = 3; fd < 1024; fd++) {
		bool kept = false;
		for (size_t i = 0; i < n_keep; i++)
			kept |= keep[i] == fd;
		if (!kept)
			close(fd);
	}
}

/* A listener on 127.0.0.1:0 (close-on-exec) and its port. */
static int loopback_listener(uint16_t *ret_port)
{
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
	*ret_port = ntohs(a.sin_port);
	return lsn;
}

int agent_relay_start(const char *path, uint16_t *ret_port, pid_t *ret_pid)
{
	if (path[0] != '/' || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -EINVAL;
	uint16_t port = 0;
	int lsn = loopback_listener(&port);
	if (lsn < 0)
		return lsn;
	pid_t agent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(lsn);
		return -e;
	}
	if (pid == 0) {
		detach(&lsn, 1, agent);
		accept_loop(lsn, path);
	}
	close(lsn);
	*ret_port = port;
	*ret_pid = pid;
	return 0;
}

/* ---- relay channel:N -------------------------------------------------------------------- */

static int mux_ctl = -1; /* our end of the multiplexer's control socket pair */

/* A stream the host opened: a connection to a port of our loopback, or a session (its
 * own process, the multiplexer's child: start_session never returns). The multiplexer
 * waits for it, so a connect is bounded. */
#define CONNECT_WAIT_MS 1000
static agent_session_fn start_session;
static int (*drop_privileges)(void);

static int connect_loopback(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
	if (r == -EINPROGRESS) {
		struct pollfd p = { fd, POLLOUT, 0 };
		int e = 0;
		socklen_t el = sizeof(e);
		r = poll(&p, 1, CONNECT_WAIT_MS) <= 0                   ? -ETIMEDOUT
		    : getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 ? -errno
									: -e;
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* A socket pair of type and a child: the parent keeps sp[0], the child sp[1] (each closes
 * the other's end here). The child's pid, 0 in the child, or a negative errno. */
static pid_t fork_with_pair(int type, int sp[2])
{
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sp[0]);
		close(sp[1]);
		return -e;
	}
	close(sp[pid == 0 ? 0 : 1]);
	return pid;
}

static int fork_session(void)
{
	int sp[2];
	pid_t pid = fork_with_pair(SOCK_STREAM, sp);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		start_session(sp[1]);
		_exit(1);
	}
	return sp[0];
}

static int open_stream(void *ctx, uint32_t target)
{
	(void)ctx;
	if (target >= 1 && target <= 65535)
		return connect_loopback((uint16_t)target);
	if (target == AGENT_CHANNEL_SESSION && start_session)
		return fork_session();
	return -EINVAL;
}

/* The multiplexer's own process: the channel's streams until the channel ends. */
static int mux_start(int channel, pid_t *ret_pid)
{
	int sp[2];
	pid_t agent = getpid();
	pid_t pid = fork_with_pair(SOCK_SEQPACKET, sp);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		int keep[] = { channel, sp[1] };
		detach(keep, 2, agent);
		if (drop_privileges && drop_privileges() < 0)
			_exit(1); /* never a multiplexer as root */
		netmux_config c = { .transport = channel,
				    .host = false,
				    .open_stream = open_stream };
		netmux *m = netmux_new(&c);
		if (!m || netmux_set_control(m, sp[1]) < 0)
			_exit(1);
		_exit(netmux_run(m) < 0 ? 1 : 0);
	}
	close(channel); /* the multiplexer's alone */
	mux_ctl = sp[0];
	*ret_pid = pid;
	return 0;
}

/* The listener and its id to the multiplexer, in one message. */
static int send_listener(int lsn, uint32_t id)
{
	uint8_t be[4] = { (uint8_t)(id >> 24), (uint8_t)(id >> 16), (uint8_t)(id >> 8),
			  (uint8_t)id };
	struct iovec iov = { be, sizeof(be) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &lsn, sizeof(int));
	return sendmsg(mux_ctl, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(be) ? 0 : -errno;
}

int agent_channel_start(int channel, int (*drop)(void), agent_session_fn session, pid_t *ret_pid)
{
	if (channel < 0)
		return -ENODEV;
	if (mux_ctl >= 0) {
		close(channel);
		return -EALREADY;
	}
	start_session = session;
	drop_privileges = drop;
	int r = mux_start(channel, ret_pid);
	if (r < 0)
		close(channel);
	return r;
}

int agent_relay_channel(const char *target, uint16_t *ret_port)
{
	char *end = NULL;
	const char *num = target + strlen(AGENT_RELAY_CHANNEL);
	unsigned long id = strtoul(num, &end, 10);
	if (num[0] < '1' || num[0] > '9' || !end || *end || id > UINT32_MAX)
		return -EINVAL;
	if (mux_ctl < 0)
		return -ENODEV;
	uint16_t port = 0;
	int lsn = loopback_listener(&port);
	if (lsn < 0)
		return lsn;
	int r = send_listener(lsn, (uint32_t)id);
	close(lsn); /* the multiplexer's copy accepts */
	if (r < 0)
		return r;
	*ret_port = port;
	return 0;
}
