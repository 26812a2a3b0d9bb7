/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `relay SOCKET`: a listener on the sandbox's own loopback whose connections
 * go to a unix socket of the host's, bind-mounted into the sandbox (gVisor:
 * its work talks to the Sentry's network stack, where no socket of the
 * host's kernel is seen; docs/network.md "Governed egress on gVisor"). The
 * agent binds 127.0.0.1:0, answers the port (one DATA frame, decimal, then
 * DONE), and a process of its own (its own session, nothing of the channel
 * open) accepts: one poll loop that joins each connection to one of its own
 * to SOCKET and copies bytes both ways unchanged, a half-close passed on. Nothing is
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

/* Connections carried at once: past it the listener waits (its backlog holds the next). */
#define RELAY_FLOWS 256
/* Bytes buffered per direction of a connection. */
#define RELAY_BUF (64u * 1024)
/* How long the listener rests after accept ran out of descriptors or memory. */
#define RELAY_REST_MS 100

/* One direction of a connection: bytes read from one socket, not yet written to the other. */
typedef struct relay_dir {
	char *buf;
	size_t off, len; /* pending: buf[off, len) */
	bool eof;        /* its source ended; passed on once the pending bytes are written */
	bool shut;       /* the half-close was passed on */
} relay_dir;

/* A connection: fd[0] the work's, fd[1] the host's; dir[i] carries fd[i] to fd[1 - i]. */
typedef struct relay_flow {
	int fd[2];
	relay_dir dir[2];
} relay_flow;

static void flow_close(relay_flow *f)
{
	for (int i = 0; i < 2; i++) {
		close(f->fd[i]);
		free(f->dir[i].buf);
	}
	memset(f, 0, sizeof(*f));
	f->fd[0] = f->fd[1] = -1;
}

/* Writes what d holds to fd; once written, a source that ended is passed on as a
 * half-close. False when the connection is broken. */
static bool dir_flush(relay_dir *d, int fd)
{
	while (d->off < d->len) {
		ssize_t w = write(fd, d->buf + d->off, d->len - d->off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return true;
		if (w <= 0)
			return false;
		d->off += (size_t)w;
	}
	d->off = d->len = 0;
	if (d->eof && !d->shut) {
		shutdown(fd, SHUT_WR);
		d->shut = true;
	}
	return true;
}

/* One read of fd into d (which holds nothing), written on at once. False when broken. */
static bool dir_fill(relay_dir *d, int from, int to)
{
	ssize_t n = read(from, d->buf, RELAY_BUF);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		d->eof = true;
	d->len = (size_t)n;
	return dir_flush(d, to);
}

/* The poll events fd[i] of f waits for. */
static short flow_events(const relay_flow *f, int i)
{
	short ev = 0;
	if (!f->dir[i].eof && f->dir[i].len == 0)
		ev |= POLLIN;
	if (f->dir[1 - i].len > 0)
		ev |= POLLOUT;
	return ev;
}

/* f's two entries of the poll set. A socket waited on for nothing is left out: a hangup it
 * reported would wake us for ever. */
static void flow_poll(const relay_flow *f, struct pollfd p[2])
{
	for (int i = 0; i < 2; i++) {
		short ev = f->fd[i] >= 0 ? flow_events(f, i) : 0;
		p[i] = (struct pollfd){ .fd = ev ? f->fd[i] : -1, .events = ev };
	}
}

/* A turn of f after poll: false when it is over (both halves closed) or broken. */
static bool flow_step(relay_flow *f, const struct pollfd *p)
{
	for (int i = 0; i < 2; i++) {
		if ((p[i].revents & POLLOUT) && !dir_flush(&f->dir[1 - i], f->fd[i]))
			return false;
		if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) && (p[i].events & POLLIN) &&
		    !dir_fill(&f->dir[i], f->fd[i], f->fd[1 - i]))
			return false;
		/* an error, or a hangup of a socket we only write to: nothing more goes there */
		if ((p[i].revents & (POLLERR | POLLNVAL | POLLHUP)) && !(p[i].events & POLLIN))
			return false;
	}
	return !(f->dir[0].shut && f->dir[1].shut);
}

/* Non-blocking from the start: on Linux a unix connect then succeeds at once or fails
 * (EAGAIN with the host's backlog full). gVisor's gofer connects a host-uds socket with a
 * blocking call whatever we ask, so there a full backlog of the host's proxy stalls the loop
 * until the proxy accepts (cordon's proxy accepts at once, on its own thread). */
static int connect_host(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	memcpy(a.sun_path, path, strlen(path) + 1); /* the length was checked */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A new connection of the work's, joined to one of the host's in a free slot; a host socket
 * that went away (or no memory) refuses it: the work sees it closed. */
static void flow_open(relay_flow *f, int client, const char *path)
{
	int host = connect_host(path);
	char *b0 = host >= 0 ? malloc(RELAY_BUF) : NULL, *b1 = b0 ? malloc(RELAY_BUF) : NULL;
	if (!b1) {
		free(b0);
		free(b1);
		if (host >= 0)
			close(host);
		close(client);
		return;
	}
	*f = (relay_flow){ .fd = { client, host } };
	f->dir[0].buf = b0;
	f->dir[1].buf = b1;
}

/* The relay's own process: one poll loop over the listener and every connection, for ever
 * (the container's end ends it). No process per connection: under gVisor a fork costs more
 * than the connection itself. The poll set holds the open connections only (gVisor's poll
 * pays for every entry). */
static void accept_loop(int lsn, const char *path)
{
	static relay_flow flows[RELAY_FLOWS];
	static struct pollfd p[1 + 2 * RELAY_FLOWS];
	static size_t at[RELAY_FLOWS]; /* at[j]: the flow of p[1 + 2j] and p[2 + 2j] */
	size_t n_open = 0;
	for (size_t k = 0; k < RELAY_FLOWS; k++)
		flows[k].fd[0] = flows[k].fd[1] = -1;
	fcntl(lsn, F_SETFL, O_NONBLOCK); /* a connection gone between poll and accept: no block */
	bool resting = false;
	for (;;) {
		p[0] = (struct pollfd){ n_open < RELAY_FLOWS && !resting ? lsn : -1, POLLIN, 0 };
		size_t n = 0;
		for (size_t k = 0; k < RELAY_FLOWS && n < n_open; k++)
			if (flows[k].fd[0] >= 0) {
				flow_poll(&flows[k], &p[1 + 2 * n]);
				at[n++] = k;
			}
		if (poll(p, 1 + 2 * n, resting ? RELAY_REST_MS : -1) < 0) {
			if (errno != EINTR)
				_exit(1);
			continue;
		}
		resting = false;
		for (size_t j = 0; j < n; j++)
			if ((p[1 + 2 * j].revents || p[2 + 2 * j].revents) &&
			    !flow_step(&flows[at[j]], &p[1 + 2 * j])) {
				flow_close(&flows[at[j]]);
				n_open--;
			}
		if (!(p[0].revents & POLLIN))
			continue;
		int c = accept4(lsn, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				resting = true; /* not a busy loop while descriptors are short */
			else if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
				_exit(1);
			continue;
		}
		size_t k = 0;
		while (flows[k].fd[0] >= 0) /* a slot is free: the listener waits otherwise */
			k++;
		flow_open(&flows[k], c, path);
		n_open += flows[k].fd[0] >= 0;
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
