/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-sockmap: the prototype behind the serve forwarder's kernel path
 * (issue 14; docs/network.md, "Sockmap"). One run, three ways to reach the
 * same C echo server, rounds interleaved, medians:
 *   direct   the server's listener on the host's loopback;
 *   relay    core/net/forward.c's GLib copy loop (net_forward_* with
 *            CORDON_SERVE_FORWARD=relay) into a network namespace of its
 *            own, as the kernel tier does;
 *   sockmap  the same two sockets joined by core/net/sockmap.c: the kernel
 *            moves the bytes, no thread of ours wakes per request (this
 *            prototype's own accept loop and a watcher thread per pair;
 *            the forwarder's kernel path does the same on its loop).
 * The server runs in a child in a new network namespace (root), which hands
 * out sockets made there over SCM_RIGHTS, as the sandbox's init does.
 *
 * usage: bench-sockmap [-n ROUND_TRIPS] [-r ROUNDS] [-s BYTES] [-t MIB (bulk instead)]
 */
#include "config.h"

#include "benchutil.h"

#include "net/forward.h"
#include "net/sockmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PORT 8000

static size_t msg = 64;
static int sockets_fd = -1; /* to the child: one byte asks for a socket of that family */
static pthread_mutex_t sockets_lock = PTHREAD_MUTEX_INITIALIZER;

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- the server, in its own network namespace ------------------------------------- */

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[65536];
	nodelay(fd);
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = send(fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
			if (w <= 0)
				goto out;
			off += w;
		}
	}
out:
	close(fd);
	return NULL;
}

static void *echo_listener(void *arg)
{
	int l = (int)(intptr_t)arg;
	for (;;) {
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		pthread_t t;
		pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)c);
		pthread_detach(t);
	}
	return NULL;
}

static int listen_on(uint16_t port, uint16_t *ret)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		perror("bench-sockmap: listen");
		exit(1);
	}
	if (ret)
		*ret = ntohs(a.sin_port);
	return fd;
}

static void lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	strcpy(ifr.ifr_name, "lo");
	ioctl(s, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		perror("bench-sockmap: lo up");
		exit(1);
	}
	close(s);
}

static void send_fd(int chan, int fd)
{
	char byte = fd >= 0 ? 1 : 0;
	struct iovec iov = { &byte, 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	sendmsg(chan, &mh, MSG_NOSIGNAL);
}

static pid_t server_start(int host_listener)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		exit(1);
	int ready[2];
	if (pipe(ready) < 0)
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		close(sp[0]);
		if (unshare(CLONE_NEWNET) < 0) {
			perror("bench-sockmap: unshare(CLONE_NEWNET) (root needed)");
			_exit(1);
		}
		lo_up();
		pthread_t t;
		int inside = listen_on(PORT, NULL);
		pthread_create(&t, NULL, echo_listener, (void *)(intptr_t)inside);
		pthread_create(&t, NULL, echo_listener, (void *)(intptr_t)host_listener);
		write(ready[1], "x", 1);
		char fam;
		while (recv(sp[1], &fam, 1, 0) == 1) {
			int fd = socket(fam == 6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
					0);
			send_fd(sp[1], fd);
			if (fd >= 0)
				close(fd);
		}
		_exit(0);
	}
	close(sp[1]);
	char x;
	if (read(ready[0], &x, 1) != 1)
		exit(1);
	sockets_fd = sp[0];
	return pid;
}

/* A socket of the server's namespace (what the sandbox's init hands out). */
static int inside_socket(void *user, int family)
{
	(void)user;
	char fam = family == AF_INET6 ? 6 : 4, byte;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	pthread_mutex_lock(&sockets_lock);
	int fd = -EIO;
	if (send(sockets_fd, &fam, 1, MSG_NOSIGNAL) == 1 &&
	    recvmsg(sockets_fd, &mh, MSG_CMSG_CLOEXEC) == 1 && byte == 1) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	}
	pthread_mutex_unlock(&sockets_lock);
	return fd;
}

/* ---- the relay (today's forwarder) ------------------------------------------------ */

static char relay_address[128];
static volatile int relay_ready;

static void on_ready(void *user, const char *address)
{
	(void)user;
	snprintf(relay_address, sizeof(relay_address), "%s", address);
	__atomic_store_n(&relay_ready, 1, __ATOMIC_RELEASE);
}

/* ---- the sockmap prototype: accept, join, watch for FIN and errors ------------- */

static net_sockmap *sockmap;

struct pair {
	int fd[2];
};

/* Each side's FIN is passed on once its bytes are out (POLLHUP: both ways
 * shut, so its FIN came too); errors close both. A prototype's: a thread
 * per pair, blocking; the forwarder does the same on its loop. */
static void *pair_watch(void *arg)
{
	struct pair *p = arg;
	bool eof[2] = { false, false };
	while (!(eof[0] && eof[1])) {
		struct pollfd pf[2];
		for (int i = 0; i < 2; i++)
			pf[i] = (struct pollfd){ p->fd[i], eof[i] ? 0 : POLLRDHUP, 0 };
		if (poll(pf, 2, -1) < 0)
			continue;
		if ((pf[0].revents | pf[1].revents) & POLLERR)
			break;
		for (int i = 0; i < 2; i++)
			if (!eof[i] && (pf[i].revents & (POLLRDHUP | POLLHUP))) {
				while (net_sockmap_flushed(p->fd[i], p->fd[1 - i]) == 0)
					usleep(200);
				shutdown(p->fd[1 - i], SHUT_WR);
				eof[i] = true;
			}
	}
	close(p->fd[0]);
	close(p->fd[1]);
	free(p);
	return NULL;
}

static void *sockmap_accept(void *arg)
{
	int l = (int)(intptr_t)arg;
	for (;;) {
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		int in = inside_socket(NULL, AF_INET);
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(PORT),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		nodelay(in);
		int r = -1;
		if (in >= 0 && connect(in, (struct sockaddr *)&a, sizeof(a)) == 0)
			r = net_sockmap_join(sockmap, c, in);
		if (r < 0) {
			fprintf(stderr, "bench-sockmap: join: %s\n", strerror(-r));
			close(c);
			if (in >= 0)
				close(in);
			continue;
		}
		struct pair *p = malloc(sizeof(*p));
		p->fd[0] = c;
		p->fd[1] = in;
		pthread_t t;
		pthread_create(&t, NULL, pair_watch, p);
		pthread_detach(t);
	}
	return NULL;
}

/* ---- the client -------------------------------------------------------------------- */

static int connect_port(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	nodelay(fd);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool round_trip(int fd, char *out, char *in)
{
	if (send(fd, out, msg, MSG_NOSIGNAL) != (ssize_t)msg)
		return false;
	for (size_t got = 0; got < msg;) {
		ssize_t n = recv(fd, in + got, msg - got, 0);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return memcmp(out, in, msg) == 0;
}

static double trips(unsigned port, int n)
{
	double *v = malloc(sizeof(double) * (size_t)n);
	char *out = malloc(msg), *in = malloc(msg);
	for (size_t i = 0; i < msg; i++)
		out[i] = (char)('a' + i % 26);
	int fd = connect_port(port);
	for (int i = 0; i < n; i++) {
		double t = bench_now_us();
		if (fd < 0 || !round_trip(fd, out, in)) {
			fprintf(stderr, "bench-sockmap: a round trip to port %u failed\n", port);
			exit(1);
		}
		v[i] = bench_now_us() - t;
	}
	close(fd);
	double m = bench_median(v, n);
	free(v);
	free(out);
	free(in);
	return m;
}

/* One connection: bytes sent while the echo comes back (both ways at once),
 * then a half-close and the rest read to EOF, every byte checked. MiB/s of
 * one direction, or -1 on a short or wrong answer. */
struct sender {
	int fd;
	size_t total;
};

static char pattern(size_t i) { return (char)(i * 131 + (i >> 12)); }

static void *send_all(void *arg)
{
	struct sender *s = arg;
	char buf[65536];
	for (size_t off = 0; off < s->total;) {
		size_t n = s->total - off < sizeof(buf) ? s->total - off : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(off + i);
		ssize_t w = send(s->fd, buf, n, MSG_NOSIGNAL);
		if (w <= 0)
			return (void *)1;
		off += (size_t)w;
	}
	shutdown(s->fd, SHUT_WR); /* HTTP/1.0 style: then wait for all of the answer */
	return NULL;
}

static double bulk(unsigned port, size_t total)
{
	int fd = connect_port(port);
	struct sender s = { fd, total };
	pthread_t t;
	double t0 = bench_now_us();
	pthread_create(&t, NULL, send_all, &s);
	char buf[65536];
	size_t got = 0;
	bool ok = true;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			if (n < 0)
				fprintf(stderr, "bench-sockmap: bulk recv: %s\n", strerror(errno));
			break;
		}
		for (ssize_t i = 0; i < n && ok; i++)
			ok = buf[i] == pattern(got + (size_t)i);
		got += (size_t)n;
	}
	void *rv;
	pthread_join(t, &rv);
	double dt = bench_now_us() - t0;
	close(fd);
	if (!ok || got != total || rv) {
		fprintf(stderr, "bench-sockmap: bulk to port %u: %zu of %zu bytes back%s\n", port,
			got, total, ok ? "" : ", some wrong");
		return -1;
	}
	return total / dt * 1e6 / (1 << 20);
}

static unsigned port_of(const char *address)
{
	const char *c = strrchr(address, ':');
	return c ? (unsigned)atoi(c + 1) : 0;
}

int main(int argc, char **argv)
{
	int n = 2000, rounds = 7, opt;
	size_t total = 0;
	while ((opt = getopt(argc, argv, "n:r:s:t:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 's')
			msg = (size_t)atol(optarg);
		else if (opt == 't')
			total = (size_t)atol(optarg) << 20;
		else
			return fprintf(stderr,
				       "usage: bench-sockmap [-n N] [-r ROUNDS] [-s BYTES]\n"),
			       64;
	}
	if (rounds > 64)
		rounds = 64;
	uint16_t direct = 0, smport = 0;
	int host_listener = listen_on(0, &direct);
	pid_t child = server_start(host_listener);
	close(host_listener);

	char why[256] = "";
	net_forward *fwd = NULL;
	setenv("CORDON_SERVE_FORWARD", "relay", 1); /* the library's forwarder, its relay path */
	if (net_forward_start(PORT, false, inside_socket, on_ready, NULL, &fwd, why, sizeof(why)) <
	    0)
		return fprintf(stderr, "bench-sockmap: relay: %s\n", why), 1;
	if (net_forward_kernel_path(fwd))
		return fprintf(stderr, "bench-sockmap: the relay took the kernel path\n"), 1;
	while (!__atomic_load_n(&relay_ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	unsigned relay = port_of(relay_address);
	int r = net_sockmap_new(256, &sockmap, why, sizeof(why));
	if (r < 0)
		return fprintf(stderr, "bench-sockmap: sockmap unavailable: %s\n", why), 1;
	int sl = listen_on(0, &smport);
	pthread_t t;
	pthread_create(&t, NULL, sockmap_accept, (void *)(intptr_t)sl);

	double d[64], rl[64], sm[64];
	if (total) {
		for (int i = 0; i < rounds; i++) {
			d[i] = bulk(direct, total);
			rl[i] = bulk(relay, total);
			sm[i] = bulk(smport, total);
			if (d[i] < 0 || rl[i] < 0 || sm[i] < 0)
				return fprintf(stderr, "bench-sockmap: bulk failed (%s)\n",
					       d[i] < 0    ? "direct"
					       : rl[i] < 0 ? "relay"
							   : "sockmap"),
				       1;
		}
		double la[3] = { 0 };
		getloadavg(la, 3);
		printf("bulk, %zu MiB each way at once, then a half-close, %d rounds, medians "
		       "(load %.2f): direct %.0f MiB/s, relay %.0f MiB/s, sockmap %.0f MiB/s\n",
		       total >> 20, rounds, la[0], bench_median(d, rounds),
		       bench_median(rl, rounds), bench_median(sm, rounds));
		net_forward_stop(fwd);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 0;
	}
	for (int i = 0; i < rounds; i++) {
		d[i] = trips(direct, n);
		rl[i] = trips(relay, n);
		sm[i] = trips(smport, n);
	}
	double md = bench_median(d, rounds), mr = bench_median(rl, rounds),
	       ms = bench_median(sm, rounds);
	double la[3] = { 0 };
	getloadavg(la, 3);
	printf("round trip, %zu B each way, %d x %d rounds interleaved, medians "
	       "(load %.2f %.2f %.2f):\n",
	       msg, n, rounds, la[0], la[1], la[2]);
	printf("  direct  %7.1f us\n  relay   %7.1f us  %.2fx\n  sockmap %7.1f us  %.2fx\n", md, mr,
	       mr / md, ms, ms / md);
	printf("  per round (direct/relay/sockmap):");
	for (int i = 0; i < rounds; i++)
		printf(" %.1f/%.1f/%.1f", d[i], rl[i], sm[i]);
	printf("\n");
	net_forward_stop(fwd);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
