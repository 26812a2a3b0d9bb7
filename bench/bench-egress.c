/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-egress: governed egress's proxy (core/net/proxy.c) against a direct
 * loopback copy of the same bytes, side by side in one run, rounds
 * alternating.
 *
 *  1. Throughput: one plain-HTTP GET whose body is SIZE MiB, from an upstream
 *     thread of this process, read whole by the client: through the proxy,
 *     and through a plain C relay (two threads, blocking recv/send of 64 KiB:
 *     what socat does, socat is not installed here). Target: proxy >= 0.8 x
 *     the relay.
 *  2. Added connection latency: connect, a 1-byte-body GET, read to EOF,
 *     through the proxy (target an IP literal: no resolution; and a name,
 *     "localhost", resolved by the proxy's getaddrinfo worker) vs directly to
 *     the upstream. Target: under 1 ms added.
 * Wall time is the median per operation; CPU is this process's (client,
 * upstream, proxy or relay threads together) per operation, from getrusage.
 * The proxy here serves a listener on the host's loopback; on the kernel
 * tier its listener is inside the sandbox's namespace, the same loopback
 * path (the socket's namespace changes no byte of it).
 *
 * usage: bench-egress [-s MIB] [-n CONNECTIONS] [-r ROUNDS]
 */
#include "config.h"

#include "benchutil.h"

#include "net/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536

static size_t body_size = 256u << 20;

/* Seconds, from the shared microsecond clocks. */
static double now(void) { return bench_now_us() / 1e6; }
static double cpu(void) { return bench_cpu_us() / 1e6; }

static int listen_lo(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) < 0) {
		perror("listen");
		exit(1);
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_lo(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* The upstream: reads a head; "GET /big" answers body_size bytes, else 1. */
static gpointer upstream(gpointer data)
{
	int lsn = GPOINTER_TO_INT(data);
	static char zeros[BUF];
	for (;;) {
		int c = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return NULL;
		char head[4096];
		size_t len = 0;
		ssize_t n;
		while (len < sizeof(head) - 1 &&
		       (n = recv(c, head + len, sizeof(head) - 1 - len, 0)) > 0) {
			len += (size_t)n;
			head[len] = '\0';
			if (strstr(head, "\r\n\r\n"))
				break;
		}
		bool big = strstr(head, " /big ") != NULL;
		size_t body = big ? body_size : 1;
		char h[128];
		int hl = snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
				  body);
		send_all(c, h, (size_t)hl);
		for (size_t left = body; left;) {
			size_t k = left < sizeof(zeros) ? left : sizeof(zeros);
			send_all(c, zeros, k);
			left -= k;
		}
		shutdown(c, SHUT_WR);
		while (recv(c, head, sizeof(head), 0) > 0)
			;
		close(c);
	}
}

/* ---- the relay (the socat stand-in) --------------------------------------------------- */

typedef struct pipe_dir {
	int from, to;
} pipe_dir;

static gpointer copy_dir(gpointer data)
{
	pipe_dir *d = data;
	static __thread char buf[BUF];
	ssize_t n;
	while ((n = recv(d->from, buf, sizeof(buf), 0)) > 0)
		send_all(d->to, buf, (size_t)n);
	shutdown(d->to, SHUT_WR);
	return NULL;
}

typedef struct relay {
	int lsn;
	uint16_t up;
} relay;

static gpointer relay_main(gpointer data)
{
	relay *r = data;
	for (;;) {
		int c = accept4(r->lsn, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return NULL;
		int u = connect_lo(r->up);
		pipe_dir a = { c, u }, b = { u, c };
		GThread *t1 = g_thread_new("relay", copy_dir, &a);
		GThread *t2 = g_thread_new("relay", copy_dir, &b);
		g_thread_join(t1);
		g_thread_join(t2);
		close(c);
		close(u);
	}
}

/* ---- the client ------------------------------------------------------------------------ */

/* One GET through port (a proxy, absolute URI; or direct, origin form);
 * the bytes read. */
static size_t get(uint16_t port, const char *host, uint16_t up, const char *path, bool proxied)
{
	int fd = connect_lo(port);
	char req[256];
	int n = proxied ? snprintf(req, sizeof(req),
				   "GET http://%s:%u%s HTTP/1.1\r\nHost: %s:%u\r\n\r\n", host,
				   (unsigned)up, path, host, (unsigned)up)
			: snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	send_all(fd, req, (size_t)n);
	static __thread char buf[BUF];
	size_t total = 0;
	ssize_t k;
	while ((k = recv(fd, buf, sizeof(buf), 0)) > 0)
		total += (size_t)k;
	close(fd);
	return total;
}

static void on_audit(void *user, const net_proxy_event *ev)
{
	(void)user;
	if (!ev->allowed)
		fprintf(stderr, "bench-egress: refused %s:%u: %s\n", ev->host, (unsigned)ev->port,
			ev->reason);
}

int main(int argc, char **argv)
{
	int conns = 500, rounds = 5;
	for (int o; (o = getopt(argc, argv, "s:n:r:")) != -1;)
		switch (o) {
		case 's': body_size = (size_t)atol(optarg) << 20; break;
		case 'n': conns = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		default:
			fprintf(stderr,
				"usage: bench-egress [-s MIB] [-n CONNECTIONS] [-r ROUNDS]\n");
			return 2;
		}
	signal(SIGPIPE, SIG_IGN);
	uint16_t up;
	int ulsn = listen_lo(&up);
	g_thread_new("upstream", upstream, GINT_TO_POINTER(ulsn));
	relay rl = { .up = up };
	uint16_t rport;
	rl.lsn = listen_lo(&rport);
	g_thread_new("relay", relay_main, &rl);
	uint16_t pport;
	int plsn = listen_lo(&pport);
	char r1[64], r2[64];
	snprintf(r1, sizeof(r1), "127.0.0.1:%u", (unsigned)up);
	snprintf(r2, sizeof(r2), "localhost:%u", (unsigned)up);
	const char *allow[] = { r1, r2, NULL };
	net_egress *rules = NULL;
	net_proxy *p = NULL;
	char why[256];
	if (net_egress_new(allow, NULL, &rules, why, sizeof(why)) < 0 ||
	    net_proxy_start(plsn, rules, on_audit, NULL, NULL, &p, why, sizeof(why)) < 0) {
		fprintf(stderr, "bench-egress: %s\n", why);
		return 1;
	}

	double *tw[2], *tc[2];
	for (int i = 0; i < 2; i++) {
		tw[i] = calloc((size_t)rounds, sizeof(double));
		tc[i] = calloc((size_t)rounds, sizeof(double));
	}
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < 2; i++) {
			double w0 = now(), c0 = cpu();
			size_t got = i == 0 ? get(pport, "127.0.0.1", up, "/big", true)
					    : get(rport, NULL, up, "/big", false);
			tw[i][r] = now() - w0;
			tc[i][r] = cpu() - c0;
			if (got < body_size) {
				fprintf(stderr, "bench-egress: short body (%zu)\n", got);
				return 1;
			}
		}
	double mib = (double)body_size / (1 << 20);
	double pw = bench_median(tw[0], rounds), dw = bench_median(tw[1], rounds);
	double pc = bench_median(tc[0], rounds), dc = bench_median(tc[1], rounds);
	printf("throughput, %.0f MiB GET, median of %d:\n", mib, rounds);
	printf("  proxy  %8.0f MiB/s  (wall %.3f s, CPU %.3f s)\n", mib / pw, pw, pc);
	printf("  relay  %8.0f MiB/s  (wall %.3f s, CPU %.3f s)\n", mib / dw, dw, dc);
	printf("  proxy/relay throughput: %.2fx (target >= 0.8x), CPU per byte %.2fx\n", dw / pw,
	       pc / dc);

	const char *names[3] = { "proxy, IP literal", "proxy, name (resolved)", "direct" };
	double *lw[3], *lc[3];
	for (int i = 0; i < 3; i++) {
		lw[i] = calloc((size_t)conns, sizeof(double));
		lc[i] = calloc((size_t)conns, sizeof(double));
	}
	for (int n = 0; n < conns; n++)
		for (int i = 0; i < 3; i++) {
			double w0 = now(), c0 = cpu();
			if (i == 2)
				get(up, NULL, up, "/", false);
			else
				get(pport, i == 0 ? "127.0.0.1" : "localhost", up, "/", true);
			lw[i][n] = now() - w0;
			lc[i][n] = cpu() - c0;
		}
	printf("connection: connect, 1-byte GET, close; median of %d:\n", conns);
	double base = bench_median(lw[2], conns);
	for (int i = 0; i < 3; i++) {
		double w = bench_median(lw[i], conns), c = bench_median(lc[i], conns);
		printf("  %-24s %7.1f us  (CPU %6.1f us)", names[i], w * 1e6, c * 1e6);
		if (i < 2)
			printf("  added %+.1f us (target < 1000 us)", (w - base) * 1e6);
		printf("\n");
	}
	net_proxy_stop(p);
	return 0;
}
