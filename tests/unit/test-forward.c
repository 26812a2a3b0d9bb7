/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The serve forwarder (core/net/forward.c) on real sockets, without a
 * sandbox: its "inside" sockets are plain ones of this process, the server
 * a thread of this test. Readiness only once the port accepts, bytes and
 * half-closes carried both ways, a server that closes first, a port where
 * nothing listens, the connection cap, and nothing left after a stop with
 * connections open. Every test runs twice: on the kernel path (a sockmap:
 * root; elsewhere the forwarder must fall back to the relay, and under
 * CORDON_REQUIRE=all the tests fail instead) and on the relay
 * (CORDON_SERVE_FORWARD=relay). The kernel path's own: MiBs both ways at
 * once, bytes sent before the pair is joined, resets each way, many
 * connections at once, no pair left in the maps, the maps' descriptors
 * close-on-exec. Also run under ThreadSanitizer and ASan in CI.
 */
#include "config.h"

#include "testutil.h"
#include "net/forward.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

enum mode { ECHO, GREET, HOLD, STREAM };

typedef struct server {
	int lsn;
	uint16_t port;
	enum mode mode;
	GThread *thread;
	GMutex lock;
	GArray *held; /* HOLD: the connections kept open */
	gint second;  /* HOLD: the second one (after the readiness probe's), or -1 */
} server;

static void write_all(int fd, const void *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static GByteArray *read_all(int fd)
{
	GByteArray *b = g_byte_array_new();
	char buf[65536];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		g_byte_array_append(b, (const guint8 *)buf, (guint)n);
	return b;
}

/* STREAM: each connection echoed as it comes, until EOF, on a thread of its own. */
static gpointer stream_thread(gpointer data)
{
	int c = GPOINTER_TO_INT(data);
	char buf[65536];
	ssize_t n;
	while ((n = recv(c, buf, sizeof(buf), 0)) > 0)
		write_all(c, buf, (size_t)n);
	close(c);
	return NULL;
}

static gpointer server_thread(gpointer data)
{
	server *s = data;
	int c;
	while ((c = accept4(s->lsn, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		if (s->mode == ECHO) {
			g_autoptr(GByteArray) b = read_all(c);
			write_all(c, "echo:", 5);
			write_all(c, b->data, b->len);
			close(c);
		} else if (s->mode == GREET) {
			write_all(c, "hi", 2);
			close(c);
		} else if (s->mode == STREAM) {
			g_thread_unref(
				g_thread_new("test-stream", stream_thread, GINT_TO_POINTER(c)));
		} else {
			g_mutex_lock(&s->lock);
			g_array_append_val(s->held, c);
			if (s->held->len == 2) /* an atomic: TSan does not see GLib's mutex */
				g_atomic_int_set(&s->second, c);
			g_mutex_unlock(&s->lock);
		}
	}
	return NULL;
}

/* A port nobody uses (bound, not listening, until server_listen). */
static void server_init(server *s, enum mode mode)
{
	*s = (server){ .mode = mode, .second = -1 };
	g_mutex_init(&s->lock);
	s->held = g_array_new(FALSE, FALSE, sizeof(int));
	s->lsn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	ck_assert_int_eq(bind(s->lsn, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(s->lsn, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
}

/* The same on [::1] only (IPV6_V6ONLY: 127.0.0.1 refuses that port). */
static void server_init6(server *s, enum mode mode)
{
	*s = (server){ .mode = mode, .second = -1 };
	g_mutex_init(&s->lock);
	s->held = g_array_new(FALSE, FALSE, sizeof(int));
	s->lsn = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->lsn, 0);
	int one = 1;
	ck_assert_int_eq(setsockopt(s->lsn, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)), 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t alen = sizeof(a);
	ck_assert_int_eq(bind(s->lsn, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(s->lsn, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin6_port);
}

static void server_listen(server *s)
{
	ck_assert_int_eq(listen(s->lsn, 512), 0);
	s->thread = g_thread_new("test-server", server_thread, s);
}

static void server_stop(server *s)
{
	shutdown(s->lsn, SHUT_RDWR); /* ends the accept */
	if (s->thread)
		g_thread_join(s->thread);
	close(s->lsn);
	for (guint i = 0; i < s->held->len; i++)
		close(g_array_index(s->held, int, i));
	g_array_free(s->held, TRUE);
	g_mutex_clear(&s->lock);
}

/* The forwarder's "inside": a socket of this process's own network. */
static int plain_socket(void *user, int family)
{
	(void)user;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

typedef struct readiness {
	gint calls;
	char address[32];
} readiness;

static void on_ready(void *user, const char *address)
{
	readiness *r = user;
	g_strlcpy(r->address, address, sizeof(r->address));
	g_atomic_int_inc(&r->calls);
}

/* The same, handed out after 100 ms: what the client sent is queued on the
 * host side before the pair is joined. */
static int slow_socket(void *user, int family)
{
	g_usleep(100000);
	return plain_socket(user, family);
}

static bool kernel_case; /* this test runs on the kernel path (the "kernel" case) */

static void on_kernel_path(void)
{
	kernel_case = true;
	g_unsetenv("CORDON_SERVE_FORWARD");
}

static void on_relay(void)
{
	kernel_case = false;
	g_setenv("CORDON_SERVE_FORWARD", "relay", TRUE);
}

static void no_teardown(void) {}

/* The kernel case takes the kernel path as root; unprivileged it falls
 * back to the relay (what is checked there), and under CORDON_REQUIRE=all
 * that fails: the kernel path went untested. */
static void check_path(net_forward *f)
{
	if (!kernel_case) {
		ck_assert(!net_forward_kernel_path(f));
		return;
	}
	if (geteuid() == 0) {
		ck_assert_msg(net_forward_kernel_path(f), "root, and no sockmap (debug log: why)");
		return;
	}
	ck_assert_msg(g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") != 0,
		      "CORDON_REQUIRE=all: the kernel path (a sockmap) needs root");
	ck_assert(!net_forward_kernel_path(f));
}

static net_forward *start_with(uint16_t port, net_forward_socket_fn fn, readiness *r)
{
	net_forward *f = NULL;
	char why[256] = "";
	ck_assert_msg(net_forward_start(port, false, fn, on_ready, r, &f, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert(g_str_has_prefix(net_forward_address(f), "127.0.0.1:"));
	check_path(f);
	return f;
}

static net_forward *start(uint16_t port, readiness *r) { return start_with(port, plain_socket, r); }

/* The pairs in the maps drop to 0 once the connections end (close takes a
 * socket out). */
static void wait_no_pairs(net_forward *f)
{
	for (int i = 0; i < 500 && net_forward_kernel_pairs(f) != 0; i++)
		g_usleep(10000);
	ck_assert_uint_eq(net_forward_kernel_pairs(f), 0);
}

static int connect_to(const char *address)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 10, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(strchr(address, ':') + 1)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void wait_ready(readiness *r)
{
	for (int i = 0; i < 500 && !g_atomic_int_get(&r->calls); i++)
		g_usleep(10000);
	ck_assert_int_eq(g_atomic_int_get(&r->calls), 1);
}

static unsigned count(const char *dir, const char *comm)
{
	unsigned n = 0;
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		if (!comm) {
			n++;
			continue;
		}
		g_autofree char *p = g_strdup_printf("%s/%s/comm", dir, e->d_name);
		g_autofree char *c = NULL;
		n += g_file_get_contents(p, &c, NULL, NULL) && g_str_has_prefix(c, comm);
	}
	closedir(d);
	return n;
}

START_TEST(test_ready_only_once_listening)
{
	server s;
	server_init(&s, ECHO);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	g_usleep(150000); /* probes meet a port that refuses */
	ck_assert_int_eq(g_atomic_int_get(&r.calls), 0);
	server_listen(&s);
	wait_ready(&r);
	ck_assert_str_eq(r.address, net_forward_address(f));
	g_usleep(50000);
	ck_assert_int_eq(g_atomic_int_get(&r.calls), 1); /* once */
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

START_TEST(test_bytes_and_half_close)
{
	server s;
	server_init(&s, ECHO);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	size_t big = 3u << 20;
	g_autofree char *data = g_malloc(big);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)(i ^ (i >> 9));
	int c = connect_to(r.address);
	write_all(c, data, big);
	ck_assert_int_eq(shutdown(c, SHUT_WR), 0); /* the server answers after our FIN */
	g_autoptr(GByteArray) got = read_all(c);
	close(c);
	ck_assert_uint_eq(got->len, big + 5);
	ck_assert(memcmp(got->data, "echo:", 5) == 0);
	ck_assert(memcmp(got->data + 5, data, big) == 0);
	wait_no_pairs(f);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

static char pattern(size_t i) { return (char)(i * 131 + (i >> 12)); }

typedef struct sender {
	int fd;
	size_t total;
} sender;

static gpointer send_then_shut(gpointer data)
{
	sender *sd = data;
	char buf[65536];
	for (size_t off = 0; off < sd->total;) {
		size_t n = MIN(sd->total - off, sizeof(buf));
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(off + i);
		ssize_t w = send(sd->fd, buf, n, MSG_NOSIGNAL);
		if (w <= 0)
			return GINT_TO_POINTER(1);
		off += (size_t)w;
	}
	shutdown(sd->fd, SHUT_WR);
	return NULL;
}

/* total bytes up while the echo comes down, then a half-close and the rest
 * to EOF: every byte back in order. */
static void echo_both_ways(const char *address, size_t total)
{
	int c = connect_to(address);
	sender sd = { c, total };
	GThread *t = g_thread_new("test-send", send_then_shut, &sd);
	char buf[65536];
	size_t got = 0, wrong = 0;
	ssize_t n;
	while ((n = recv(c, buf, sizeof(buf), 0)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			wrong += buf[i] != pattern(got + (size_t)i);
		got += (size_t)n;
	}
	ck_assert_ptr_null(g_thread_join(t));
	close(c);
	ck_assert_uint_eq(got, total);
	ck_assert_uint_eq(wrong, 0);
}

START_TEST(test_mib_both_ways_at_once)
{
	server s;
	server_init(&s, STREAM);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	echo_both_ways(r.address, 16u << 20);
	wait_no_pairs(f);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

typedef struct client_job {
	const char *address;
	size_t total;
} client_job;

static gpointer client_thread(gpointer data)
{
	client_job *j = data;
	echo_both_ways(j->address, j->total);
	return NULL;
}

START_TEST(test_many_connections_at_once)
{
	server s;
	server_init(&s, STREAM);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	enum { N = 48 };
	GThread *t[N];
	client_job j = { r.address, 256u << 10 };
	for (int i = 0; i < N; i++)
		t[i] = g_thread_new("test-client", client_thread, &j);
	for (int i = 0; i < N; i++)
		g_thread_join(t[i]);
	wait_no_pairs(f);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

START_TEST(test_bytes_before_the_join)
{
	/* The request is on the host side's queue before the inside socket
	 * exists; nothing more comes until the answer: it must still go, and
	 * (kernel path) through the joined pair. No FIN yet: a socket that has
	 * one is no longer established, which the kernel refuses to join (that
	 * connection goes to the relay). */
	server s;
	server_init(&s, STREAM);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start_with(s.port, slow_socket, &r);
	wait_ready(&r);
	int c = connect_to(r.address);
	write_all(c, "early", 5);
	char got[5];
	for (size_t n = 0; n < sizeof(got);) {
		ssize_t k = recv(c, got + n, sizeof(got) - n, 0);
		ck_assert_msg(k > 0, "no answer: %s", k < 0 ? g_strerror(errno) : "EOF");
		n += (size_t)k;
	}
	ck_assert(memcmp(got, "early", 5) == 0);
	ck_assert_uint_eq(net_forward_kernel_pairs(f), net_forward_kernel_path(f) ? 1 : 0);
	ck_assert_int_eq(shutdown(c, SHUT_WR), 0);
	g_autoptr(GByteArray) rest = read_all(c);
	close(c);
	ck_assert_uint_eq(rest->len, 0);
	wait_no_pairs(f);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

static void reset_close(int fd)
{
	struct linger l = { 1, 0 }; /* close sends RST */
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	close(fd);
}

/* The server's side of the one connection held (after the readiness probe's). */
static int held_connection(server *s)
{
	for (int i = 0; i < 500; i++) {
		int fd = g_atomic_int_get(&s->second);
		if (fd >= 0)
			return fd;
		g_usleep(10000);
	}
	ck_abort_msg("the connection never reached the server");
	return -1;
}

/* fd ends (EOF or a reset) within 5 s, having got want bytes before. */
static void ends_within(int fd, size_t want)
{
	size_t got = 0;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	ck_assert_uint_eq(got, want);
}

START_TEST(test_client_resets_mid_stream)
{
	server s;
	server_init(&s, HOLD);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	int c = connect_to(r.address);
	write_all(c, "partial", 7);
	int inside = held_connection(&s);
	reset_close(c);
	ends_within(inside, 7); /* the bytes, then the connection ends */
	wait_no_pairs(f);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

START_TEST(test_server_resets_mid_stream)
{
	server s;
	server_init(&s, HOLD);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	int c = connect_to(r.address);
	int inside = held_connection(&s);
	write_all(inside, "half an answer", 14);
	g_usleep(50000);
	g_mutex_lock(&s.lock);
	g_array_remove_index(s.held, 1);
	g_mutex_unlock(&s.lock);
	reset_close(inside);
	ends_within(c, 14);
	close(c);
	wait_no_pairs(f);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

/* The maps' and the program's descriptors (anon_inode:bpf-*) are this
 * process's alone: close-on-exec. */
static unsigned bpf_fds(void)
{
	unsigned n = 0;
	for (int fd = 0; fd < 4096; fd++) {
		char link[64], target[128] = "";
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0 || !g_str_has_prefix(target, "anon_inode:bpf"))
			continue;
		ck_assert_msg(fcntl(fd, F_GETFD) & FD_CLOEXEC, "%s without close-on-exec", target);
		n++;
	}
	return n;
}

START_TEST(test_ipv6_only_server)
{
	/* A server on ::1 alone: the probe finds it there, and every connection
	 * goes there. */
	server s;
	server_init6(&s, ECHO);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	for (int i = 0; i < 3; i++) {
		int c = connect_to(r.address);
		write_all(c, "v6", 2);
		ck_assert_int_eq(shutdown(c, SHUT_WR), 0);
		g_autoptr(GByteArray) got = read_all(c);
		close(c);
		ck_assert_uint_eq(got->len, 7);
		ck_assert(memcmp(got->data, "echo:v6", 7) == 0);
	}
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

START_TEST(test_server_closes_first)
{
	server s;
	server_init(&s, GREET);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	int c = connect_to(r.address);
	g_autoptr(GByteArray) got = read_all(c); /* "hi", then EOF */
	close(c);
	ck_assert_uint_eq(got->len, 2);
	ck_assert(memcmp(got->data, "hi", 2) == 0);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

START_TEST(test_nothing_listens_inside)
{
	server s;
	server_init(&s, ECHO); /* bound, never listening */
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	int c = connect_to(net_forward_address(f));
	g_autoptr(GByteArray) got = read_all(c); /* closed by the forwarder */
	close(c);
	ck_assert_uint_eq(got->len, 0);
	ck_assert_int_eq(g_atomic_int_get(&r.calls), 0);
	net_forward_stop(f);
	server_stop(&s);
}
END_TEST

/* The cap, and a stop with every connection open: nothing is left. */
START_TEST(test_cap_and_stop_with_connections)
{
	unsigned fds0 = count("/proc/self/fd", NULL);
	server s;
	server_init(&s, HOLD);
	server_listen(&s);
	readiness r = { 0 };
	net_forward *f = start(s.port, &r);
	wait_ready(&r);
	ck_assert_uint_eq(bpf_fds(), net_forward_kernel_path(f) ? 3 : 0); /* 2 maps, 1 program */
	int c[NET_FORWARD_MAX_CONNS + 1];
	for (int i = 0; i < NET_FORWARD_MAX_CONNS; i++)
		c[i] = connect_to(r.address);
	/* Each held one is carried (the server holds it, and on the kernel path its pair is
	 * in the map): wait until all are (30 s: a loaded machine takes seconds for 256). */
	bool all = false;
	for (int i = 0; i < 3000 && !all; i++) {
		g_mutex_lock(&s.lock);
		guint held = s.held->len;
		g_mutex_unlock(&s.lock);
		all = held == NET_FORWARD_MAX_CONNS + 1 && /* + the readiness probe */
		      (!net_forward_kernel_path(f) ||
		       net_forward_kernel_pairs(f) == NET_FORWARD_MAX_CONNS);
		if (!all)
			g_usleep(10000);
	}
	ck_assert_msg(all, "not every connection was carried within 30 s");
	c[NET_FORWARD_MAX_CONNS] = connect_to(r.address);
	/* One more is closed at once: EOF, not a connection held open. */
	struct pollfd op = { c[NET_FORWARD_MAX_CONNS], POLLIN, 0 };
	ck_assert_int_eq(poll(&op, 1, 5000), 1);
	char ob;
	ck_assert_int_eq(recv(c[NET_FORWARD_MAX_CONNS], &ob, 1, 0), 0);
	ck_assert_uint_eq(count("/proc/self/task", "cordon-forward"), 1);
	if (net_forward_kernel_path(f))
		ck_assert_uint_eq(net_forward_kernel_pairs(f), NET_FORWARD_MAX_CONNS);
	net_forward_stop(f);
	/* Joined: the thread is gone, though its /proc entry can outlive the join by a moment
	 * (the kernel wakes the joiner before it releases the task). */
	for (int i = 0; i < 100 && count("/proc/self/task", "cordon-forward") != 0; i++)
		g_usleep(10000);
	ck_assert_uint_eq(count("/proc/self/task", "cordon-forward"), 0);
	for (int i = 0; i < NET_FORWARD_MAX_CONNS; i++) {
		struct pollfd p = { c[i], POLLIN, 0 };
		ck_assert_int_eq(poll(&p, 1, 5000), 1); /* EOF: the stop closed it */
		char b;
		ck_assert_int_le(recv(c[i], &b, 1, 0), 0);
		close(c[i]);
	}
	close(c[NET_FORWARD_MAX_CONNS]);
	server_stop(&s);
	ck_assert_uint_eq(count("/proc/self/fd", NULL), fds0);
	ck_assert_uint_eq(bpf_fds(), 0);
}
END_TEST

static Suite *forward_suite(void)
{
	Suite *s = suite_create("forward");
	const char *names[] = { "kernel", "relay" };
	void (*setups[])(void) = { on_kernel_path, on_relay };
	for (int i = 0; i < 2; i++) {
		TCase *tc = tcase_create(names[i]);
		tcase_set_timeout(tc, 120);
		tcase_add_checked_fixture(tc, setups[i], no_teardown);
		tcase_add_test(tc, test_ready_only_once_listening);
		tcase_add_test(tc, test_bytes_and_half_close);
		tcase_add_test(tc, test_server_closes_first);
		tcase_add_test(tc, test_ipv6_only_server);
		tcase_add_test(tc, test_nothing_listens_inside);
		tcase_add_test(tc, test_cap_and_stop_with_connections);
		tcase_add_test(tc, test_mib_both_ways_at_once);
		tcase_add_test(tc, test_many_connections_at_once);
		tcase_add_test(tc, test_bytes_before_the_join);
		tcase_add_test(tc, test_client_resets_mid_stream);
		tcase_add_test(tc, test_server_resets_mid_stream);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	/* The cap's test holds about 1300 descriptors. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return testutil_run(forward_suite());
}
