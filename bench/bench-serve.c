/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-serve: a served port on the kernel tier, reached through cordon's
 * forwarder (core/net/forward.c) on both of its paths, against the same
 * server reached directly on the host's loopback, side by side in one run:
 * the forwarder's default (the kernel's sockmap as root, else the relay;
 * which one it took is read from the library's debug log) and a second
 * serve of the same sandbox forced onto the relay (CORDON_SERVE_FORWARD=relay).
 *
 *  1. Round trip on one open connection: 64 bytes out, 64 bytes back,
 *     rounds alternating between the three. Target: forwarder <= 1.2 x direct.
 *  2. A new connection each time: connect, one round trip, close (the
 *     connection latency the forwarder adds; target under 1 ms added).
 * Wall time is the median per operation; CPU is this process's (the client,
 * and for the relay also its thread; the kernel path's copies run on kernel
 * workers, not counted) per operation, from getrusage.
 * The server is the same Python echo server in all (/usr/bin/python3).
 *
 * usage: bench-serve [-n OPERATIONS] [-r ROUNDS]
 */
#include "config.h"

#include "benchutil.h"

#include <arpa/inet.h>
#include <cordon/cordon.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PYTHON "/usr/bin/python3"
#define MSG 64

static const char server[] =
	"import socket, sys, threading\n"
	"def serve(c):\n"
	"  c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n"
	"  while True:\n"
	"    d = c.recv(4096)\n"
	"    if not d: break\n"
	"    c.sendall(d)\n"
	"  c.close()\n"
	"s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(64)\n"
	"print(s.getsockname()[1], flush=True)\n"
	"while True:\n"
	"  c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()\n";

static int connect_port(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool round_trip(int fd)
{
	char out[MSG], in[MSG];
	memset(out, 'x', sizeof(out));
	if (send(fd, out, sizeof(out), MSG_NOSIGNAL) != (ssize_t)sizeof(out))
		return false;
	size_t got = 0;
	while (got < sizeof(in)) {
		ssize_t n = recv(fd, in + got, sizeof(in) - got, 0);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/* n round trips on one connection: median wall, mean CPU per trip. */
static void bench_trips(unsigned port, int n, double *wall, double *cpu)
{
	double *v = malloc(sizeof(double) * (size_t)n);
	int fd = connect_port(port);
	double c0 = bench_cpu_us();
	for (int i = 0; i < n; i++) {
		double t = bench_now_us();
		if (fd < 0 || !round_trip(fd)) {
			fprintf(stderr, "bench-serve: a round trip to port %u failed\n", port);
			exit(1);
		}
		v[i] = bench_now_us() - t;
	}
	*cpu = (bench_cpu_us() - c0) / n;
	close(fd);
	*wall = bench_median(v, n);
	free(v);
}

/* n connections, each one round trip. */
static void bench_connects(unsigned port, int n, double *wall, double *cpu)
{
	double *v = malloc(sizeof(double) * (size_t)n);
	double c0 = bench_cpu_us();
	for (int i = 0; i < n; i++) {
		double t = bench_now_us();
		int fd = connect_port(port);
		if (fd < 0 || !round_trip(fd)) {
			fprintf(stderr, "bench-serve: a connection to port %u failed\n", port);
			exit(1);
		}
		close(fd);
		v[i] = bench_now_us() - t;
	}
	*cpu = (bench_cpu_us() - c0) / n;
	*wall = bench_median(v, n);
	free(v);
}

/* The same server on the host: its pid, its port in *ret_port. */
static pid_t host_server(unsigned *ret_port)
{
	int p[2];
	if (pipe(p) < 0)
		exit(1);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	char *argv[] = { (char *)PYTHON, (char *)"-c", (char *)server, (char *)"0", NULL };
	pid_t pid;
	if (posix_spawn(&pid, PYTHON, &fa, NULL, argv, environ) != 0)
		exit(1);
	close(p[1]);
	char line[32] = "";
	ssize_t n = read(p[0], line, sizeof(line) - 1);
	/* p[0] stays open (the server's stdout) until it is killed. */
	*ret_port = n > 0 ? (unsigned)atoi(line) : 0;
	return pid;
}

/* The path each serve's forwarder took, from its debug line. */
static char default_path[16] = "?";

static void on_log(void *user, cordon_log_level level, const char *message)
{
	(void)user;
	(void)level;
	if (strstr(message, "serve forwarder: port 8000: connections carried by the kernel"))
		snprintf(default_path, sizeof(default_path), "sockmap");
	else if (strstr(message, "serve forwarder: port 8000: connections carried by the relay"))
		snprintf(default_path, sizeof(default_path), "relay");
}

static unsigned port_of(const char *address)
{
	const char *c = address ? strrchr(address, ':') : NULL;
	return c ? (unsigned)atoi(c + 1) : 0;
}

int main(int argc, char **argv)
{
	int n = 2000, rounds = 5, opt;
	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'r')
			rounds = atoi(optarg);
		else
			return fprintf(stderr, "usage: bench-serve [-n OPERATIONS] [-r ROUNDS]\n"),
			       64;
	}
	cordon_context *ctx = NULL;
	cordon_sandbox *sb = NULL;
	cordon_serve *sv = NULL, *sv_relay = NULL;
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_request_set_tier(req, "kernel", NULL);
	cordon_set_log_handler(on_log, NULL, CORDON_LOG_DEBUG);
	const char *sargv[] = { PYTHON, "-c", server, "8000", NULL };
	const char *rargv[] = { PYTHON, "-c", server, "8001", NULL };
	if (cordon_context_new(NULL, &ctx, &err) < 0 ||
	    cordon_sandbox_open(ctx, req, &sb, &err) < 0 ||
	    cordon_sandbox_serve(sb, sargv, 8000, NULL, &sv, &err) < 0 ||
	    setenv("CORDON_SERVE_FORWARD", "relay", 1) < 0 ||
	    cordon_sandbox_serve(sb, rargv, 8001, NULL, &sv_relay, &err) < 0) {
		fprintf(stderr, "bench-serve: %s\n", cordon_error_get_message(err));
		return 1;
	}
	unsetenv("CORDON_SERVE_FORWARD");
	char *address = cordon_serve_address(sv), *raddress = cordon_serve_address(sv_relay);
	unsigned fwd = port_of(address), relay = port_of(raddress), direct = 0;
	pid_t host = host_server(&direct);
	if (!fwd || !relay || !direct)
		return fprintf(stderr, "bench-serve: no server\n"), 1;

	enum { FWD, RELAY, DIRECT, PATHS };
	double tw[PATHS][64], tc[PATHS][64], cw[PATHS][64], cc[PATHS][64];
	unsigned ports[PATHS] = { fwd, relay, direct };
	if (rounds > 64)
		rounds = 64;
	for (int r = 0; r < rounds; r++)
		for (int p = 0; p < PATHS; p++) {
			bench_trips(ports[p], n, &tw[p][r], &tc[p][r]);
			bench_connects(ports[p], n / 10, &cw[p][r], &cc[p][r]);
		}
	double mtw[PATHS], mtc[PATHS], mcw[PATHS], mcc[PATHS];
	for (int p = 0; p < PATHS; p++) {
		mtw[p] = bench_median(tw[p], rounds);
		mtc[p] = bench_median(tc[p], rounds);
		mcw[p] = bench_median(cw[p], rounds);
		mcc[p] = bench_median(cc[p], rounds);
	}
	double la[3] = { 0 };
	getloadavg(la, 3);
	printf("serve forward (%s, path: %s; relay forced: %s) -> sandbox vs direct "
	       "(127.0.0.1:%u), medians of %d rounds, load average %.2f %.2f %.2f:\n",
	       address, default_path, raddress, direct, rounds, la[0], la[1], la[2]);
	printf("  round trip, one connection (%d x 64 B): %s %6.1f us (cpu %5.1f)  "
	       "relay %6.1f us (cpu %5.1f)  direct %6.1f us (cpu %5.1f)\n",
	       n, default_path, mtw[FWD], mtc[FWD], mtw[RELAY], mtc[RELAY], mtw[DIRECT],
	       mtc[DIRECT]);
	printf("    ratio to direct: %s %.2f, relay %.2f (target <= 1.20)\n", default_path,
	       mtw[FWD] / mtw[DIRECT], mtw[RELAY] / mtw[DIRECT]);
	printf("  connect + round trip + close (%d): %s %6.1f us (cpu %5.1f)  "
	       "relay %6.1f us (cpu %5.1f)  direct %6.1f us (cpu %5.1f)\n",
	       n / 10, default_path, mcw[FWD], mcc[FWD], mcw[RELAY], mcc[RELAY], mcw[DIRECT],
	       mcc[DIRECT]);
	printf("    added to direct: %s %.1f us, relay %.1f us (target < 1000)\n", default_path,
	       mcw[FWD] - mcw[DIRECT], mcw[RELAY] - mcw[DIRECT]);
	free(address);
	free(raddress);
	cordon_serve_free(sv_relay);
	cordon_serve_free(sv);
	cordon_sandbox_close(sb);
	cordon_request_free(req);
	cordon_context_free(ctx);
	kill(host, SIGTERM);
	waitpid(host, NULL, 0);
	return 0;
}
