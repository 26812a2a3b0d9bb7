/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stream multiplexer (common/netmux.c) on real sockets: a socketpair is the transport, a
 * guest mux and a host mux each run on a thread of their own, the guest's listeners are TCP
 * on 127.0.0.1, the host's streams connect to servers that are threads of this test. Bytes
 * and half-closes both ways, many streams at once, flow control (a stalled reader stalls
 * only its own stream, and holds no more than the window), resets each way, the host's
 * stream cap, a hostile guest (each malformed frame ends the host mux with -EPROTO, every
 * descriptor it opened closed), the ways a run ends, and listeners passed over the control
 * socket. Also run under ThreadSanitizer and ASan in CI.
 */
#include "config.h"

#include "testutil.h"
#include "netmux.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define WAIT_MS 5000
#define SMALL_BUF 4096 /* socket buffers of the flow control case: the window dominates */

/* ---- sockets ------------------------------------------------------------------------------ */

static void set_bufs(int fd, int size)
{
	if (size > 0) {
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	}
}

/* A bug fails a blocking read or write after ms rather than hanging the test. */
static void set_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* 127.0.0.1:0, listening; accepted sockets inherit its buffer sizes. */
static int tcp_listen(uint16_t *ret_port, int bufsize)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	set_bufs(fd, bufsize);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(fd, 128), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

/* A connected socket, or -errno. */
static int tcp_connect(uint16_t port, int bufsize)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	set_bufs(fd, bufsize);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int client(uint16_t port, int bufsize)
{
	int fd = tcp_connect(port, bufsize);
	ck_assert_msg(fd >= 0, "connect to %u: %s", port, g_strerror(-fd));
	set_timeouts(fd, WAIT_MS);
	return fd;
}

static bool send_all(int fd, const void *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		off += (size_t)w;
	}
	return true;
}

static bool recv_all(int fd, void *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t r = recv(fd, (char *)p + off, n - off, 0);
		if (r <= 0)
			return false;
		off += (size_t)r;
	}
	return true;
}

/* Everything up to EOF into b: 0, or -errno (-EAGAIN: the timeout). */
static int recv_to_eof(int fd, GByteArray *b)
{
	char buf[65536];
	for (;;) {
		ssize_t r = recv(fd, buf, sizeof buf, 0);
		if (r == 0)
			return 0;
		if (r < 0)
			return -errno;
		g_byte_array_append(b, (const guint8 *)buf, (guint)r);
	}
}

/* What a client of a reset or refused stream sees: EOF or ECONNRESET, before the timeout. */
static void assert_cut(int fd)
{
	char c;
	gint64 t0 = g_get_monotonic_time();
	ssize_t r;
	while ((r = recv(fd, &c, 1, 0)) > 0)
		;
	ck_assert_msg(r == 0 || errno == ECONNRESET, "recv: %s", g_strerror(errno));
	ck_assert_int_lt(g_get_monotonic_time() - t0, 3 * G_USEC_PER_SEC);
}

/* A connection the mux cuts at once: the reset may even beat connect's return. */
static void assert_refused(uint16_t port)
{
	int fd = tcp_connect(port, 0);
	if (fd == -ECONNRESET)
		return;
	ck_assert_msg(fd >= 0, "connect to %u: %s", port, g_strerror(-fd));
	set_timeouts(fd, WAIT_MS);
	assert_cut(fd);
	close(fd);
}

static void round_trip(int fd, const char *msg)
{
	char buf[64];
	size_t n = strlen(msg);
	ck_assert(send_all(fd, msg, n));
	ck_assert_msg(recv_all(fd, buf, n), "no echo: %s", g_strerror(errno));
	ck_assert(memcmp(buf, msg, n) == 0);
}

/* Whether fd's peer end (of a unix socketpair) is closed: not merely shut down for writing. */
static bool peer_closed(int fd)
{
	ssize_t r = send(fd, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	return r < 0 && (errno == EPIPE || errno == ECONNRESET);
}

/* Descriptors open in this process: what a case leaves must be what it found. */
static int fd_count(void)
{
	GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

/* ---- servers ------------------------------------------------------------------------------ */

/* ECHO: echoes, and at EOF sends "BYE" (it can still send after the client's half-close).
 * SINK: never reads. SOURCE: sends until stopped or cut. RESET: reads one byte, then
 * closes with SO_LINGER 0. */
enum mode { ECHO, SINK, SOURCE, RESET };

typedef struct server {
	enum mode mode;
	int lsn, stop[2];
	uint16_t port;
	GThread *thread;
	GPtrArray *conns; /* the accept thread's only, joined after it */
	gint sent;        /* SOURCE: bytes sent, all connections */
} server;

typedef struct conn {
	server *srv;
	int fd;
} conn;

/* Whether fd is ready for events before stop fires. */
static bool ready(int fd, short events, int stop)
{
	struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = stop, .events = POLLIN } };
	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			return false;
	return !p[1].revents;
}

static bool send_stoppable(int fd, const void *p, size_t n, int stop, gint *count)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EAGAIN) {
			if (!ready(fd, POLLOUT, stop))
				return false;
			continue;
		}
		if (w <= 0)
			return false;
		off += (size_t)w;
		if (count)
			g_atomic_int_add(count, (gint)w);
	}
	return true;
}

#define ECHO_CHUNK 65536

static void serve_echo(int fd, int stop)
{
	char *b = g_malloc(ECHO_CHUNK);
	for (;;) {
		if (!ready(fd, POLLIN, stop))
			break;
		ssize_t n = recv(fd, b, ECHO_CHUNK, 0);
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n == 0)
			send_stoppable(fd, "BYE", 3, stop, NULL);
		if (n <= 0 || !send_stoppable(fd, b, (size_t)n, stop, NULL))
			break;
	}
	g_free(b);
}

static gpointer conn_thread(gpointer data)
{
	conn *c = data;
	int stop = c->srv->stop[0];
	if (c->srv->mode == ECHO) {
		serve_echo(c->fd, stop);
	} else if (c->srv->mode == SINK) {
		ready(-1, 0, stop);
	} else if (c->srv->mode == SOURCE) {
		static const char chunk[16384];
		while (send_stoppable(c->fd, chunk, sizeof chunk, stop, &c->srv->sent))
			;
	} else {
		char b;
		if (ready(c->fd, POLLIN, stop) && recv(c->fd, &b, 1, 0) == 1) {
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };
			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		}
	}
	close(c->fd);
	g_free(c);
	return NULL;
}

static gpointer accept_thread(gpointer data)
{
	server *s = data;
	while (ready(s->lsn, POLLIN, s->stop[0])) {
		int fd = accept4(s->lsn, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		conn *c = g_new(conn, 1);
		*c = (conn){ .srv = s, .fd = fd };
		g_ptr_array_add(s->conns, g_thread_new("netmux-conn", conn_thread, c));
	}
	return NULL;
}

static void server_start(server *s, enum mode mode, int bufsize)
{
	*s = (server){ .mode = mode, .conns = g_ptr_array_new() };
	s->lsn = tcp_listen(&s->port, bufsize);
	ck_assert_int_eq(pipe2(s->stop, O_CLOEXEC), 0);
	s->thread = g_thread_new("netmux-server", accept_thread, s);
}

static void server_stop(server *s)
{
	ck_assert_int_eq(write(s->stop[1], "", 1), 1);
	g_thread_join(s->thread);
	for (guint i = 0; i < s->conns->len; i++)
		g_thread_join(s->conns->pdata[i]);
	g_ptr_array_free(s->conns, TRUE);
	close(s->lsn);
	close(s->stop[0]);
	close(s->stop[1]);
}

/* ---- a mux on a thread -------------------------------------------------------------------- */

typedef struct runner {
	netmux *m;
	int rc, done[2];
	GThread *thread;
} runner;

static gpointer run_thread(gpointer data)
{
	runner *r = data;
	r->rc = netmux_run(r->m);
	ssize_t n = write(r->done[1], "", 1);
	(void)n;
	return NULL;
}

static void runner_start(runner *r, netmux *m)
{
	*r = (runner){ .m = m };
	ck_assert_int_eq(pipe2(r->done, O_CLOEXEC), 0);
	r->thread = g_thread_new("netmux-run", run_thread, r);
}

/* netmux_run's result; fails the test if it does not return within ms. */
static int runner_wait(runner *r, int ms)
{
	struct pollfd p = { .fd = r->done[0], .events = POLLIN };
	ck_assert_msg(poll(&p, 1, ms) == 1, "netmux_run did not return within %d ms", ms);
	g_thread_join(r->thread);
	close(r->done[0]);
	close(r->done[1]);
	return r->rc;
}

static void wait_streams(netmux *m, uint32_t n)
{
	gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
	while (netmux_streams(m) != n && g_get_monotonic_time() < end)
		g_usleep(10000);
	ck_assert_uint_eq(netmux_streams(m), n);
}

/* ---- a guest and a host over a socketpair ------------------------------------------------- */

#define REFUSED 99 /* a listener id the host refuses (-ECONNREFUSED) */

typedef struct rig {
	uint16_t ports[8];   /* host: the server of listener id i (set before rig_up) */
	uint16_t gports[8];  /* guest: the port of listener id i */
	uint16_t targets[8]; /* guest: the server a host stream to target i reaches */
	int bufsize;         /* of the host's connections to the servers */
	netmux *guest, *host;
	runner gr, hr;
} rig;

static int rig_open(void *ctx, uint32_t listener)
{
	rig *g = ctx;
	if (listener >= G_N_ELEMENTS(g->ports) || !g->ports[listener])
		return -ECONNREFUSED;
	return tcp_connect(g->ports[listener], g->bufsize);
}

/* The guest's side of a host-opened stream: target i is a connection to targets[i]. */
static int guest_target(void *ctx, uint32_t target)
{
	rig *g = ctx;
	if (target >= G_N_ELEMENTS(g->targets) || !g->targets[target])
		return -ECONNREFUSED;
	return tcp_connect(g->targets[target], 0);
}

static void rig_up(rig *g, uint32_t host_max_streams, uint32_t window)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	g->guest = netmux_new(&(netmux_config){
		.transport = sv[0], .open_stream = guest_target, .ctx = g, .window = window });
	g->host = netmux_new(&(netmux_config){ .transport = sv[1],
					       .host = true,
					       .open_stream = rig_open,
					       .ctx = g,
					       .max_streams = host_max_streams,
					       .window = window });
	ck_assert_ptr_nonnull(g->guest);
	ck_assert_ptr_nonnull(g->host);
	runner_start(&g->gr, g->guest);
	runner_start(&g->hr, g->host);
}

/* A guest listener, added while the guest runs (netmux_add_listener from another thread). */
static void rig_listen(rig *g, uint32_t id, int bufsize)
{
	int fd = tcp_listen(&g->gports[id], bufsize);
	ck_assert_int_eq(netmux_add_listener(g->guest, id, fd), 0);
}

static void rig_down(rig *g)
{
	netmux_stop(g->guest);
	netmux_stop(g->host);
	ck_assert_int_eq(runner_wait(&g->gr, WAIT_MS), 0);
	ck_assert_int_eq(runner_wait(&g->hr, WAIT_MS), 0);
	netmux_free(g->guest);
	netmux_free(g->host);
}

/* ---- 1: bytes both ways, half-close ------------------------------------------------------- */

typedef struct pump {
	int fd;
	const uint8_t *data;
	size_t len;
	bool ok;
} pump;

/* Sends everything, then half-closes. */
static gpointer pump_thread(gpointer data)
{
	pump *p = data;
	p->ok = send_all(p->fd, p->data, p->len) && shutdown(p->fd, SHUT_WR) == 0;
	return NULL;
}

static uint8_t *pattern(size_t n, uint32_t seed)
{
	uint8_t *d = g_malloc(n);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		d[i] = (uint8_t)(seed >> 16);
	}
	return d;
}

/* n bytes echoed back whole, then the server's "BYE" after the client's half-close, then
 * EOF (not a reset). */
static void echo_bulk(uint16_t port, size_t n)
{
	int fd = client(port, 0);
	g_autofree uint8_t *data = pattern(n, (uint32_t)n);
	pump p = { .fd = fd, .data = data, .len = n };
	GThread *t = g_thread_new("netmux-pump", pump_thread, &p);
	g_autoptr(GByteArray) got = g_byte_array_new();
	int r = recv_to_eof(fd, got);
	g_thread_join(t);
	ck_assert_msg(r == 0, "recv: %s after %u bytes", g_strerror(-r), got->len);
	ck_assert(p.ok);
	ck_assert_uint_eq(got->len, n + 3);
	ck_assert(memcmp(got->data, data, n) == 0);
	ck_assert(memcmp(got->data + n, "BYE", 3) == 0);
	close(fd);
}

START_TEST(test_bytes)
{
	server echo;
	server_start(&echo, ECHO, 0);
	rig g = { .ports[1] = echo.port };
	rig_up(&g, 0, 0);
	rig_listen(&g, 1, 0);
	echo_bulk(g.gports[1], 16u << 20);
	/* both FINs and the queues flushed: each side forgot the stream, without a reset */
	wait_streams(g.guest, 0);
	wait_streams(g.host, 0);
	rig_down(&g);
	server_stop(&echo);
}
END_TEST

/* ---- 2: many at once ---------------------------------------------------------------------- */

START_TEST(test_many)
{
	server echo;
	server_start(&echo, ECHO, 0);
	rig g = { .ports[1] = echo.port };
	rig_up(&g, 0, 0);
	rig_listen(&g, 1, 0);
	int fds[64];
	char msg[64][32];
	for (int i = 0; i < 64; i++) {
		fds[i] = client(g.gports[1], 0);
		g_snprintf(msg[i], sizeof msg[i], "hello %d", i);
	}
	for (int i = 0; i < 64; i++)
		ck_assert(send_all(fds[i], msg[i], strlen(msg[i])));
	for (int i = 0; i < 64; i++) {
		char buf[32];
		ck_assert(recv_all(fds[i], buf, strlen(msg[i])));
		ck_assert(memcmp(buf, msg[i], strlen(msg[i])) == 0);
	}
	/* all 64 open at once, on both sides */
	ck_assert_uint_eq(netmux_streams(g.guest), 64);
	ck_assert_uint_eq(netmux_streams(g.host), 64);
	for (int i = 0; i < 64; i++)
		close(fds[i]);
	wait_streams(g.guest, 0);
	wait_streams(g.host, 0);
	rig_down(&g);
	server_stop(&echo);
}
END_TEST

/* ---- 3: flow control ---------------------------------------------------------------------- */

#define FLOW_WINDOW (64u << 10)
#define FLOW_CAP (8u << 20)
/* The stalled bytes a stream may hold: its window plus the kernel's buffers (four sockets of
 * SMALL_BUF, doubled by the kernel, and loopback's slack), far below FLOW_CAP. */
#define FLOW_BOUND (FLOW_WINDOW + (1u << 20))

/* Sends (non-blocking) until nothing more goes for 300 ms; the total, or -errno when the
 * connection broke. */
static long send_until_stalled(int fd)
{
	static const char chunk[16384];
	long total = 0;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (total < (long)FLOW_CAP) {
		ssize_t w = send(fd, chunk, sizeof chunk, MSG_NOSIGNAL);
		if (w > 0) {
			total += w;
			continue;
		}
		if (w < 0 && errno != EAGAIN)
			return -errno;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, 300) == 0)
			break;
	}
	return total;
}

/* The source's count once it has not moved for 300 ms. */
static gint source_stalled(server *s)
{
	gint last = -1, now = g_atomic_int_get(&s->sent);
	gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
	while (now != last && g_get_monotonic_time() < end) {
		last = now;
		g_usleep(300000);
		now = g_atomic_int_get(&s->sent);
	}
	ck_assert_int_eq(now, last);
	return now;
}

START_TEST(test_flow)
{
	server echo, sink, source;
	server_start(&echo, ECHO, 0);
	server_start(&sink, SINK, SMALL_BUF);
	server_start(&source, SOURCE, SMALL_BUF);
	rig g = { .ports = { [1] = echo.port, [2] = sink.port, [3] = source.port },
		  .bufsize = SMALL_BUF };
	rig_up(&g, 0, FLOW_WINDOW);
	rig_listen(&g, 1, 0);
	rig_listen(&g, 2, SMALL_BUF);
	rig_listen(&g, 3, SMALL_BUF);

	/* guest to host: a server that never reads */
	int a = client(g.gports[2], SMALL_BUF);
	long sent = send_until_stalled(a);
	ck_assert_msg(sent >= (long)FLOW_WINDOW && sent <= (long)FLOW_BOUND,
		      "the stalled stream took %ld bytes (window %u)", sent, FLOW_WINDOW);
	/* host to guest: a client that never reads */
	int c = client(g.gports[3], SMALL_BUF);
	gint pushed = source_stalled(&source);
	ck_assert_msg(pushed >= (gint)FLOW_WINDOW && pushed <= (gint)FLOW_BOUND,
		      "the stalled stream took %d bytes (window %u)", pushed, FLOW_WINDOW);

	/* the others flow, in bounded time */
	gint64 t0 = g_get_monotonic_time();
	echo_bulk(g.gports[1], 4u << 20);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 10 * G_USEC_PER_SEC);
	/* and the stalled ones stay within their bound (TCP's zero-window probes may still
	 * move a few bytes: no more than a bound, not "none") */
	long more = send_until_stalled(a);
	ck_assert_msg(more >= 0 && sent + more <= (long)FLOW_BOUND, "then %ld more", more);
	ck_assert_int_le(source_stalled(&source), (gint)FLOW_BOUND);
	close(a);
	close(c);
	rig_down(&g);
	server_stop(&echo);
	server_stop(&sink);
	server_stop(&source);
}
END_TEST

/* ---- 4: resets ---------------------------------------------------------------------------- */

START_TEST(test_reset)
{
	server rst;
	server_start(&rst, RESET, 0);
	rig g = { .ports[4] = rst.port };
	rig_up(&g, 0, 0);
	rig_listen(&g, 4, 0);
	rig_listen(&g, 3, 0); /* no server for id 3: open_stream refuses it */
	/* the server resets: the reset comes through */
	int fd = client(g.gports[4], 0);
	ck_assert(send_all(fd, "x", 1));
	assert_cut(fd);
	close(fd);
	/* open_stream fails: the guest's client is cut at once */
	assert_refused(g.gports[3]);
	wait_streams(g.guest, 0);
	wait_streams(g.host, 0);
	rig_down(&g);
	server_stop(&rst);
}
END_TEST

/* ---- 5: the host's cap -------------------------------------------------------------------- */

START_TEST(test_max_streams)
{
	server echo;
	server_start(&echo, ECHO, 0);
	rig g = { .ports[1] = echo.port };
	rig_up(&g, 4, 0);
	rig_listen(&g, 1, 0);
	int fds[4];
	for (int i = 0; i < 4; i++) {
		fds[i] = client(g.gports[1], 0);
		round_trip(fds[i], "first");
	}
	/* a fifth is reset by the host (not a violation: the mux goes on) */
	assert_refused(g.gports[1]);
	for (int i = 0; i < 4; i++)
		round_trip(fds[i], "still");
	/* a slot freed is a slot again */
	close(fds[0]);
	wait_streams(g.host, 3);
	fds[0] = client(g.gports[1], 0);
	round_trip(fds[0], "again");
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	wait_streams(g.host, 0);
	rig_down(&g);
	server_stop(&echo);
}
END_TEST

/* ---- 6: a hostile guest ------------------------------------------------------------------- */

#define HOSTILE_WINDOW 4096u

typedef struct hostile {
	pthread_mutex_t lock;
	int kept[8]; /* our ends of the streams' sockets */
	int nkept;
} hostile;

static int hostile_open(void *ctx, uint32_t listener)
{
	hostile *h = ctx;
	int sv[2];
	if (listener == REFUSED)
		return -ECONNREFUSED;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pthread_mutex_lock(&h->lock);
	if (h->nkept < (int)G_N_ELEMENTS(h->kept))
		h->kept[h->nkept++] = sv[1];
	else
		close(sv[1]);
	pthread_mutex_unlock(&h->lock);
	return sv[0];
}

static void put32(GByteArray *b, uint32_t v)
{
	uint8_t p[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	g_byte_array_append(b, p, 4);
}

/* A frame claiming len bytes of payload, carrying n of them (n <= len, or a lie). */
static void frame(GByteArray *b, char type, uint32_t id, uint32_t len, const void *p, size_t n)
{
	uint8_t t = (uint8_t)type;
	g_byte_array_append(b, &t, 1);
	put32(b, id);
	put32(b, len);
	if (n)
		g_byte_array_append(b, p, (guint)n);
}

static void frame_open(GByteArray *b, uint32_t id, uint32_t listener)
{
	uint8_t p[4] = { 0, 0, 0, (uint8_t)listener };
	frame(b, 'O', id, 4, p, 4);
}

static netmux *hostile_mux(hostile *h, int *ret_peer)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	*h = (hostile){ .nkept = 0 };
	pthread_mutex_init(&h->lock, NULL);
	netmux *m = netmux_new(&(netmux_config){ .transport = sv[1],
						 .host = true,
						 .open_stream = hostile_open,
						 .ctx = h,
						 .window = HOSTILE_WINDOW });
	ck_assert_ptr_nonnull(m);
	*ret_peer = sv[0];
	return m;
}

/* Stream 1 opened well, then bad: the mux ends with -EPROTO at once, stream 1's socket
 * closed (not merely shut down). eof: the peer half-closes after bad. */
static void assert_violation(const char *what, GByteArray *bad, bool eof, int want)
{
	hostile h;
	int peer;
	netmux *m = hostile_mux(&h, &peer);
	runner r;
	runner_start(&r, m);
	g_autoptr(GByteArray) b = g_byte_array_new();
	frame_open(b, 1, 7);
	g_byte_array_append(b, bad->data, bad->len);
	ck_assert(send_all(peer, b->data, b->len));
	if (eof)
		shutdown(peer, SHUT_WR);
	int rc = runner_wait(&r, 3000);
	ck_assert_msg(rc == want, "%s: netmux_run returned %d, not %d", what, rc, want);
	ck_assert_msg(h.nkept == 1, "%s: %d streams opened", what, h.nkept);
	ck_assert_msg(peer_closed(h.kept[0]), "%s: the stream's socket is still open", what);
	close(h.kept[0]);
	netmux_free(m);
	close(peer);
	pthread_mutex_destroy(&h.lock);
}

START_TEST(test_hostile)
{
	static uint8_t big[HOSTILE_WINDOW + 1];
	uint8_t four[4] = { 0, 0, 0, 1 };
	struct {
		const char *what;
		char type;
		uint32_t id, len;
		const void *p;
		size_t n;
	} cases[] = {
		{ "an unknown type", 'X', 1, 0, NULL, 0 },
		{ "a payload over 64 KiB claimed", 'D', 1, NETMUX_FRAME_MAX + 1, NULL, 0 },
		{ "an OPEN of 3 bytes", 'O', 3, 3, four, 3 },
		{ "an OPEN of stream 0", 'O', 0, 4, four, 4 },
		{ "an OPEN of a live stream", 'O', 1, 4, four, 4 },
		{ "DATA beyond the credit", 'D', 1, sizeof big, big, sizeof big },
		{ "CREDIT above the window", 'C', 1, 4, four, 4 },
		{ "a CREDIT of 3 bytes", 'C', 1, 3, four, 3 },
		{ "an empty DATA", 'D', 1, 0, NULL, 0 },
		{ "a FIN with a payload", 'F', 1, 1, four, 1 },
		{ "an RST with a payload", 'R', 1, 1, four, 1 },
		{ "DATA on stream 0", 'D', 0, 1, four, 1 },
		{ "an OPEN of a host's (even) id", 'O', 2, 4, four, 4 },
		{ "an ACCEPT of a stream the host did not open", 'A', 1, 0, NULL, 0 },
		{ "an ACCEPT with a payload", 'A', 3, 1, four, 1 },
	};
	int fds = fd_count();
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GByteArray) bad = g_byte_array_new();
		frame(bad, cases[i].type, cases[i].id, cases[i].len, cases[i].p, cases[i].n);
		assert_violation(cases[i].what, bad, false, -EPROTO);
	}
	g_autoptr(GByteArray) after_fin = g_byte_array_new();
	frame(after_fin, 'F', 1, 0, NULL, 0);
	frame(after_fin, 'D', 1, 1, "x", 1);
	assert_violation("DATA after FIN", after_fin, false, -EPROTO);
	g_autoptr(GByteArray) two_fins = g_byte_array_new();
	frame(two_fins, 'F', 1, 0, NULL, 0);
	frame(two_fins, 'F', 1, 0, NULL, 0);
	assert_violation("a second FIN", two_fins, false, -EPROTO);
	/* a header cut short by EOF: a stream cut short, -EPROTO (a clean EOF is 0) */
	g_autoptr(GByteArray) cut = g_byte_array_new();
	g_byte_array_append(cut, (const guint8 *)"D\0\0\0\1", 5);
	assert_violation("a truncated header", cut, true, -EPROTO);
	g_autoptr(GByteArray) clean = g_byte_array_new();
	assert_violation("a clean EOF", clean, true, 0);
	ck_assert_int_eq(fd_count(), fds); /* nothing leaked */
}
END_TEST

/* What a hostile guest may do: frames for unknown streams (reset a moment ago) are dropped,
 * an OPEN the host cannot serve is answered by RST, DATA within the credit is delivered. */
START_TEST(test_hostile_tolerated)
{
	hostile h;
	int peer;
	netmux *m = hostile_mux(&h, &peer);
	set_timeouts(peer, WAIT_MS);
	runner r;
	runner_start(&r, m);
	g_autoptr(GByteArray) b = g_byte_array_new();
	frame_open(b, 1, 7);
	frame(b, 'D', 1, 3, "abc", 3);
	frame(b, 'D', 5, 2, "zz", 2);
	frame(b, 'R', 6, 0, NULL, 0);
	frame(b, 'C', 7, 4, "\0\0\0\1", 4);
	frame(b, 'F', 8, 0, NULL, 0);
	frame_open(b, 3, REFUSED);
	ck_assert(send_all(peer, b->data, b->len));
	/* the RST of stream 3 (after frames of stream 1's, such as its CREDIT) */
	uint8_t hdr[NETMUX_HEADER], payload[4];
	for (;;) {
		ck_assert(recv_all(peer, hdr, sizeof hdr));
		uint32_t len = (uint32_t)hdr[5] << 24 | hdr[6] << 16 | hdr[7] << 8 | hdr[8];
		ck_assert_uint_le(len, sizeof payload);
		ck_assert(recv_all(peer, payload, len));
		if (hdr[0] == 'R' && memcmp(hdr + 1, "\0\0\0\3", 4) == 0)
			break;
		ck_assert(memcmp(hdr + 1, "\0\0\0\1", 4) == 0);
	}
	pthread_mutex_lock(&h.lock);
	ck_assert_int_eq(h.nkept, 1);
	int kept = h.kept[0];
	pthread_mutex_unlock(&h.lock);
	char got[3];
	set_timeouts(kept, WAIT_MS);
	ck_assert(recv_all(kept, got, 3));
	ck_assert(memcmp(got, "abc", 3) == 0);
	ck_assert_uint_eq(netmux_streams(m), 1);
	netmux_stop(m);
	ck_assert_int_eq(runner_wait(&r, WAIT_MS), 0);
	ck_assert(peer_closed(kept));
	close(kept);
	netmux_free(m);
	close(peer);
	pthread_mutex_destroy(&h.lock);
}
END_TEST

/* ---- 6b: streams the host opens (netmux_open) ---------------------------------------------- */

/* A host-opened stream to a guest target: accepted, bytes both ways and the half-close; a
 * target the guest refuses: -ECONNREFUSED, and the local socket closed. */
START_TEST(test_host_open)
{
	server echo;
	server_start(&echo, ECHO, 0);
	rig g = { 0 };
	g.targets[1] = echo.port;
	rig_up(&g, 0, 0);
	int lp[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, lp), 0);
	ck_assert_int_eq(netmux_open(g.host, 1, lp[1], WAIT_MS), 0);
	set_timeouts(lp[0], WAIT_MS);
	round_trip(lp[0], "through a stream the host opened");
	ck_assert_int_eq(shutdown(lp[0], SHUT_WR), 0);
	g_autoptr(GByteArray) rest = g_byte_array_new();
	ck_assert_int_eq(recv_to_eof(lp[0], rest), 0);
	ck_assert(rest->len == 3 && memcmp(rest->data, "BYE", 3) == 0);
	close(lp[0]);
	int rp[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, rp), 0);
	ck_assert_int_eq(netmux_open(g.host, 5, rp[1], WAIT_MS), -ECONNREFUSED);
	ck_assert(peer_closed(rp[0]));
	close(rp[0]);
	wait_streams(g.host, 0);
	rig_down(&g);
	server_stop(&echo);
}
END_TEST

/* A peer that never answers times the open out: the stream is reset, the local socket
 * closed. Nothing of a local socket is read before the peer's ACCEPT (a refused stream
 * loses no byte): an open that does not wait (-1) goes on once the answer comes. */
START_TEST(test_host_open_waits)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	hostile h = { .nkept = 0 };
	pthread_mutex_init(&h.lock, NULL);
	netmux *m = netmux_new(&(netmux_config){
		.transport = sv[1], .host = true, .open_stream = hostile_open, .ctx = &h });
	int peer = sv[0];
	set_timeouts(peer, WAIT_MS);
	runner r;
	runner_start(&r, m);
	int lp[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, lp), 0);
	ck_assert_int_eq(netmux_open(m, 7, lp[1], 200), -ETIMEDOUT);
	uint8_t f[NETMUX_HEADER + 4];
	ck_assert(recv_all(peer, f, sizeof f));
	ck_assert(f[0] == 'O' && (f[4] & 1) == 0 && f[12] == 7); /* the host's ids are even */
	uint8_t rst[NETMUX_HEADER];
	ck_assert(recv_all(peer, rst, sizeof rst));
	ck_assert(rst[0] == 'R' && memcmp(rst + 1, f + 1, 4) == 0);
	ck_assert(peer_closed(lp[0]));
	close(lp[0]);

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, lp), 0);
	ck_assert(send_all(lp[0], "early", 5));
	ck_assert_int_eq(netmux_open(m, 8, lp[1], -1), 0);
	ck_assert(recv_all(peer, f, sizeof f));
	ck_assert(f[0] == 'O' && f[12] == 8);
	set_timeouts(peer, 300);
	uint8_t more;
	ck_assert_int_lt(recv(peer, &more, 1, 0), 0); /* no DATA before the ACCEPT */
	g_autoptr(GByteArray) b = g_byte_array_new();
	frame(b, 'A', (uint32_t)f[1] << 24 | f[2] << 16 | f[3] << 8 | f[4], 0, NULL, 0);
	ck_assert(send_all(peer, b->data, b->len));
	set_timeouts(peer, WAIT_MS);
	uint8_t d[NETMUX_HEADER + 5];
	ck_assert(recv_all(peer, d, sizeof d));
	ck_assert(d[0] == 'D' && memcmp(d + NETMUX_HEADER, "early", 5) == 0);
	netmux_stop(m);
	ck_assert_int_eq(runner_wait(&r, WAIT_MS), 0);
	ck_assert(peer_closed(lp[0]));
	close(lp[0]);
	ck_assert_int_eq(netmux_open(m, 7, dup(peer), WAIT_MS), -ESHUTDOWN);
	netmux_free(m);
	close(peer);
	pthread_mutex_destroy(&h.lock);
}
END_TEST

/* Work that holds every connection it can leaves the host a sixteenth of max_streams for
 * its own streams; the guest's HELLO comes first, and netmux_wait_peer sees it. */
START_TEST(test_host_reserve)
{
	server echo;
	server_start(&echo, ECHO, 0);
	rig g = { 0 };
	g.ports[1] = echo.port;
	g.targets[2] = echo.port;
	rig_up(&g, 32, 0);
	ck_assert_int_eq(netmux_wait_peer(g.host, WAIT_MS), 0);
	uint16_t lport;
	ck_assert_int_eq(netmux_add_listener(g.guest, 1, tcp_listen(&lport, 0)), 0);
	int held[30];
	for (int i = 0; i < 30; i++) {
		held[i] = client(lport, 0);
		set_timeouts(held[i], WAIT_MS);
		round_trip(held[i], "held");
	}
	int over = client(lport, 0); /* the guest's 31st: cut */
	assert_cut(over);
	close(over);
	int lp[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, lp), 0);
	ck_assert_int_eq(netmux_open(g.host, 2, lp[1], WAIT_MS), 0);
	set_timeouts(lp[0], WAIT_MS);
	round_trip(lp[0], "the host's own");
	close(lp[0]);
	for (int i = 0; i < 30; i++)
		close(held[i]);
	wait_streams(g.host, 0);
	rig_down(&g);
	server_stop(&echo);
}
END_TEST

/* ---- 7: how a run ends -------------------------------------------------------------------- */

static netmux *guest_mux(int *ret_peer)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	netmux *m = netmux_new(&(netmux_config){ .transport = sv[0] });
	ck_assert_ptr_nonnull(m);
	*ret_peer = sv[1];
	return m;
}

START_TEST(test_ends)
{
	int fds = fd_count();
	/* netmux_stop from another thread; the listeners are closed by then */
	int peer;
	uint16_t port, port2;
	netmux *m = guest_mux(&peer);
	ck_assert_int_eq(netmux_add_listener(m, 1, tcp_listen(&port, 0)), 0);
	runner r;
	runner_start(&r, m);
	int fd = client(port, 0);
	wait_streams(m, 1);
	netmux_stop(m);
	ck_assert_int_eq(runner_wait(&r, WAIT_MS), 0);
	assert_cut(fd); /* the stream's connection is reset */
	close(fd);
	ck_assert_int_eq(tcp_connect(port, 0), -ECONNREFUSED);
	ck_assert_int_eq(netmux_run(m), -EALREADY);
	int late = tcp_listen(&port2, 0);
	ck_assert_int_eq(netmux_add_listener(m, 2, late), -ESHUTDOWN);
	ck_assert_int_eq(tcp_connect(port2, 0), -ECONNREFUSED); /* closed all the same */
	netmux_free(m);
	close(peer);

	/* a stop before the run: it returns at once */
	m = guest_mux(&peer);
	netmux_stop(m);
	ck_assert_int_eq(netmux_run(m), 0);
	netmux_free(m);
	close(peer);

	/* the transport's EOF, on either side */
	for (int host = 0; host < 2; host++) {
		int sv[2];
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		hostile h = { .nkept = 0 };
		m = netmux_new(&(netmux_config){
			.transport = sv[0], .host = host, .open_stream = hostile_open, .ctx = &h });
		ck_assert_ptr_nonnull(m);
		runner_start(&r, m);
		close(sv[1]);
		ck_assert_int_eq(runner_wait(&r, WAIT_MS), 0);
		netmux_free(m);
	}

	/* never run: netmux_free closes the listeners */
	m = guest_mux(&peer);
	ck_assert_int_eq(netmux_add_listener(m, 1, tcp_listen(&port, 0)), 0);
	fd = tcp_connect(port, 0);
	ck_assert_int_ge(fd, 0); /* it listens (the kernel accepts into the backlog) */
	close(fd);
	netmux_free(m);
	ck_assert_int_eq(tcp_connect(port, 0), -ECONNREFUSED);
	close(peer);

	/* bad configurations */
	errno = 0;
	ck_assert_ptr_null(netmux_new(&(netmux_config){ .transport = -1 }));
	ck_assert_int_eq(errno, EINVAL);
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_ptr_null(netmux_new(&(netmux_config){ .transport = sv[0], .host = true }));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(peer_closed(sv[1])); /* the transport is the mux's even then */
	close(sv[1]);
	ck_assert_int_eq(fd_count(), fds); /* nothing leaked */
}
END_TEST

/* ---- 8: listeners over the control socket ------------------------------------------------- */

/* One control message: data (n bytes) with fds attached. */
static void control_send(int ctl, const void *data, size_t n, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = n };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds) {
		memset(&cm, 0, sizeof cm);
		msg.msg_control = cm.b;
		msg.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	ck_assert_int_eq(sendmsg(ctl, &msg, MSG_NOSIGNAL), (ssize_t)n);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

START_TEST(test_control)
{
	server echo;
	server_start(&echo, ECHO, 0);
	rig g = { .ports[1] = echo.port };
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int ctl[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl), 0);
	g.guest = netmux_new(&(netmux_config){ .transport = sv[0] });
	g.host = netmux_new(&(netmux_config){
		.transport = sv[1], .host = true, .open_stream = rig_open, .ctx = &g });
	ck_assert_ptr_nonnull(g.guest);
	ck_assert_ptr_nonnull(g.host);
	/* a byte stream cannot keep ids apart: refused (and closed) */
	int bytes[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, bytes), 0);
	ck_assert_int_eq(netmux_set_control(g.guest, bytes[0]), -EINVAL);
	ck_assert(peer_closed(bytes[1]));
	close(bytes[1]);
	ck_assert_int_eq(netmux_set_control(g.guest, ctl[0]), 0);
	runner_start(&g.gr, g.guest);
	runner_start(&g.hr, g.host);

	/* dropped, their descriptors closed: an id without a listener, a short id with one,
	 * two listeners in one message, a descriptor that is not a listening socket */
	const uint8_t id1[4] = { 0, 0, 0, 1 };
	control_send(ctl[1], id1, 4, NULL, 0);
	uint16_t short_port, two_port[2], good_port;
	int l = tcp_listen(&short_port, 0);
	control_send(ctl[1], id1, 2, &l, 1);
	int two[2] = { tcp_listen(&two_port[0], 0), tcp_listen(&two_port[1], 0) };
	control_send(ctl[1], id1, 4, two, 2);
	int pipefd[2];
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	control_send(ctl[1], id1, 4, &pipefd[0], 1);
	/* one listening socket and its id: served like netmux_add_listener's */
	l = tcp_listen(&good_port, 0);
	control_send(ctl[1], id1, 4, &l, 1);
	int fd = client(good_port, 0);
	round_trip(fd, "over the control socket");
	/* the good one came last: the bad ones were dropped by now */
	ck_assert_int_eq(tcp_connect(short_port, 0), -ECONNREFUSED);
	ck_assert_int_eq(tcp_connect(two_port[0], 0), -ECONNREFUSED);
	ck_assert_int_eq(tcp_connect(two_port[1], 0), -ECONNREFUSED);
	struct pollfd p = { .fd = pipefd[1], .events = 0 };
	ck_assert_int_eq(poll(&p, 1, 0), 1); /* POLLERR: the pipe's reader is gone */
	ck_assert(p.revents & POLLERR);
	close(pipefd[1]);
	/* EOF on the control socket is no error: the mux and its listener go on */
	close(ctl[1]);
	g_usleep(100000);
	round_trip(fd, "after EOF");
	close(fd);
	int fd2 = client(good_port, 0);
	round_trip(fd2, "a new connection");
	close(fd2);
	rig_down(&g);
	server_stop(&echo);
}
END_TEST

static Suite *netmux_suite(void)
{
	Suite *s = suite_create("netmux");
	TCase *tc = tcase_create("core");
	/* each case takes a second or two; ThreadSanitizer is slower */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_bytes);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_flow);
	tcase_add_test(tc, test_reset);
	tcase_add_test(tc, test_max_streams);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_hostile_tolerated);
	tcase_add_test(tc, test_host_open);
	tcase_add_test(tc, test_host_open_waits);
	tcase_add_test(tc, test_host_reserve);
	tcase_add_test(tc, test_ends);
	tcase_add_test(tc, test_control);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(netmux_suite()); }
