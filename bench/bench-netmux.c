/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The microVM network channel's multiplexer (common/netmux.h) on its own, against a direct
 * loopback connection to the same C echo server: what cordon adds to a guest's connection
 * beyond the virtio port (whose cost is QEMU's, and under TCG the emulation's). A guest
 * mux and a host mux on a socket pair, a client connecting to the guest mux's listener
 * (as the work does), the host mux connecting to the echo server (as to cordon's proxy).
 * Rounds interleaved, medians, wall and this process's CPU (both muxes run here).
 *
 *   bench-netmux [-n round trips] [-r rounds] [-m MiB of bulk]
 */
#include "config.h"

#include "benchutil.h"

#include "netmux.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int listen_any(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		abort();
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		abort();
	return fd;
}

/* The echo server: each connection echoed until EOF, on a thread of its own. */
static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static __thread char buf[65536];
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w <= 0)
				goto out;
			off += w;
		}
out:
	close(fd);
	return NULL;
}

static void *echo_accept(void *arg)
{
	int lsn = (int)(intptr_t)arg;
	for (int c; (c = accept(lsn, NULL, NULL)) >= 0;) {
		pthread_t t;
		pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)c);
		pthread_detach(t);
	}
	return NULL;
}

static uint16_t echo_port;

static int host_open(void *ctx, uint32_t listener)
{
	(void)ctx;
	(void)listener;
	return connect_to(echo_port);
}

static void *run_mux(void *m) { return (void *)(intptr_t)netmux_run(m); }

/* Round trips of len bytes on fd: each one's wall time in v[i]. */
static void round_trips(int fd, size_t len, int n, double *v)
{
	char *buf = calloc(1, len);
	for (int i = 0; i < n; i++) {
		double t0 = bench_now_us();
		if (write(fd, buf, len) != (ssize_t)len)
			abort();
		for (size_t got = 0; got < len;) {
			ssize_t r = read(fd, buf + got, len - got);
			if (r <= 0)
				abort();
			got += (size_t)r;
		}
		v[i] = bench_now_us() - t0;
	}
	free(buf);
}

typedef struct bulk_reader {
	int fd;
	size_t want;
} bulk_reader;

static void *drain(void *arg)
{
	bulk_reader *b = arg;
	static char buf[1 << 16];
	for (size_t got = 0; got < b->want;) {
		ssize_t r = read(b->fd, buf, sizeof(buf));
		if (r <= 0)
			abort();
		got += (size_t)r;
	}
	return NULL;
}

/* total bytes through the echo and back, at once: MiB/s and the CPU it took (us/MiB). */
static void bulk(int fd, size_t total, double *ret_mibs, double *ret_cpu)
{
	static char buf[1 << 16];
	bulk_reader b = { fd, total };
	pthread_t t;
	double c0 = bench_cpu_us(), t0 = bench_now_us();
	pthread_create(&t, NULL, drain, &b);
	for (size_t sent = 0; sent < total;) {
		ssize_t w = write(fd, buf, sizeof(buf) < total - sent ? sizeof(buf) : total - sent);
		if (w <= 0)
			abort();
		sent += (size_t)w;
	}
	pthread_join(t, NULL);
	double s = (bench_now_us() - t0) / 1e6, mib = (double)total / (1 << 20);
	*ret_mibs = mib / s;
	*ret_cpu = (bench_cpu_us() - c0) / mib;
}

int main(int argc, char **argv)
{
	int n = 2000, rounds = 5, mib = 64;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-n") == 0)
			n = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-r") == 0)
			rounds = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-m") == 0)
			mib = atoi(argv[i + 1]);
	}
	int elsn = listen_any(&echo_port);
	pthread_t et;
	pthread_create(&et, NULL, echo_accept, (void *)(intptr_t)elsn);
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	netmux *guest = netmux_new(&(netmux_config){ .transport = sv[0] });
	netmux *host = netmux_new(
		&(netmux_config){ .transport = sv[1], .host = true, .open_stream = host_open });
	uint16_t gport;
	netmux_add_listener(guest, 1, listen_any(&gport));
	pthread_t gt, ht;
	pthread_create(&gt, NULL, run_mux, guest);
	pthread_create(&ht, NULL, run_mux, host);

	size_t sizes[] = { 64, 4096, 65536 };
	printf("netmux vs a direct loopback connection to the same echo server, %d rounds\n",
	       rounds);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		double *d = calloc((size_t)n, sizeof(double)),
		       *m = calloc((size_t)n, sizeof(double));
		double dm[16], mm[16], dc[16], mc[16];
		for (int r = 0; r < rounds && r < 16; r++) {
			int direct = connect_to(echo_port), mux = connect_to(gport);
			double c0 = bench_cpu_us();
			round_trips(direct, sizes[k], n, d);
			dc[r] = (bench_cpu_us() - c0) / n;
			c0 = bench_cpu_us();
			round_trips(mux, sizes[k], n, m);
			mc[r] = (bench_cpu_us() - c0) / n;
			dm[r] = bench_median(d, n);
			mm[r] = bench_median(m, n);
			close(direct);
			close(mux);
		}
		int rr = rounds < 16 ? rounds : 16;
		double a = bench_median(dm, rr), b = bench_median(mm, rr),
		       ca = bench_median(dc, rr), cb = bench_median(mc, rr);
		printf("round trip %6zu B: direct %7.1f us, netmux %7.1f us (%.2fx); CPU per "
		       "trip %6.1f / %6.1f us (%.2fx)\n",
		       sizes[k], a, b, b / a, ca, cb, cb / ca);
		free(d);
		free(m);
	}
	double dt[16], mt[16], dcpu[16], mcpu[16];
	int rr = rounds < 16 ? rounds : 16;
	for (int r = 0; r < rr; r++) {
		int direct = connect_to(echo_port), mux = connect_to(gport);
		bulk(direct, (size_t)mib << 20, &dt[r], &dcpu[r]);
		bulk(mux, (size_t)mib << 20, &mt[r], &mcpu[r]);
		close(direct);
		close(mux);
	}
	double a = bench_median(dt, rr), b = bench_median(mt, rr);
	printf("bulk %d MiB through the echo: direct %.0f MiB/s, netmux %.0f MiB/s (%.2fx); CPU "
	       "%.0f / %.0f us per MiB\n",
	       mib, a, b, b / a, bench_median(dcpu, rr), bench_median(mcpu, rr));
	netmux_stop(guest);
	netmux_stop(host);
	pthread_join(gt, NULL);
	pthread_join(ht, NULL);
	netmux_free(guest);
	netmux_free(host);
	return 0;
}
