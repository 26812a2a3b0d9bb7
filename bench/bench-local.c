/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-local: the kernel tier against its peers, side by side in one run.
 *
 *  1. Whole process: `cordon run --trust semi-trusted -- /bin/true` against
 *     `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true`
 *     (and, for scale, a bare `/bin/true` and the raw floor's one launch,
 *     `confine_floor -V -n 1`), launched alternately, each timed from
 *     posix_spawn to waitpid. Target: cordon <= 0.8 x bwrap.
 *  2. Per launch in a loop: cordon_sandbox_run of /bin/true through the
 *     library (one context, one sandbox) against `confine_floor -V` (the raw
 *     clone + namespaces + Landlock + seccomp floor, built from
 *     bench/floor/confine_floor.c), rounds alternating. Target <= 1.3 x.
 * Medians throughout; ratios are what to compare across machines.
 *
 * usage: bench-local [-n LAUNCHES] [-r ROUNDS] [-c CORDON] [-f CONFINE_FLOOR] [-b BWRAP]
 */
#include "config.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n ? v[n / 2] : 0;
}

/* One whole process, timed; -1 when it failed. */
static double time_process(char *const *argv, bool quiet)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (quiet) {
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	}
	double t0 = now_us();
	pid_t pid;
	int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -1;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	double dt = now_us() - t0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? dt : -1;
}

/* Runs confine_floor -V -n N and returns its median per launch. */
static double floor_loop(const char *floor_bin, int n)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "'%s' -V -n %d /bin/true 2>&1", floor_bin, n);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[512];
	double med = -1;
	while (fgets(line, sizeof(line), p)) {
		const char *m = strstr(line, "median=");
		if (m)
			med = atof(m + 7);
	}
	return pclose(p) == 0 ? med : -1;
}

/* cordon_sandbox_run of /bin/true, n times; median per launch. */
static double library_loop(cordon_sandbox *sb, int n)
{
	static const char *const argv[] = { "/bin/true", NULL };
	double *v = calloc((size_t)n, sizeof(*v));
	for (int i = 0; i < n; i++) {
		cordon_result *res = NULL;
		cordon_error *err = NULL;
		double t0 = now_us();
		if (cordon_sandbox_run(sb, argv, NULL, &res, &err) < 0 || cordon_result_exit_code(res) != 0) {
			fprintf(stderr, "run failed: %s\n", err ? cordon_error_get_message(err) : "exit status");
			exit(1);
		}
		v[i] = now_us() - t0;
		cordon_result_free(res);
	}
	double m = median(v, n);
	free(v);
	return m;
}

int main(int argc, char **argv)
{
	int n = 100, rounds = 5, c;
	const char *cordon = "./cordon", *floor_bin = "./bench/confine_floor", *bwrap = "/usr/bin/bwrap";
	while ((c = getopt(argc, argv, "n:r:c:f:b:")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'c': cordon = optarg; break;
		case 'f': floor_bin = optarg; break;
		case 'b': bwrap = optarg; break;
		default: return 2;
		}
	}
	if (n < 1 || rounds < 1)
		return 2;

	/* 1. Whole processes, interleaved so that load hits all alike. */
	char *cordon_argv[] = { (char *)cordon, "run", "--trust", "semi-trusted", "--", "/bin/true", NULL };
	char *bwrap_argv[] = { (char *)bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
			       "--proc", "/proc", "/bin/true", NULL };
	char *true_argv[] = { "/bin/true", NULL };
	char *floor_argv[] = { (char *)floor_bin, "-V", "-n", "1", "/bin/true", NULL };
	int total = n * rounds / 4 > 20 ? n * rounds / 4 : 20;
	double *tc = calloc((size_t)total, sizeof(double)), *tb = calloc((size_t)total, sizeof(double)),
	       *tt = calloc((size_t)total, sizeof(double)), *tf = calloc((size_t)total, sizeof(double));
	bool have_bwrap = access(bwrap, X_OK) == 0;
	for (int i = 0; i < total; i++) {
		tt[i] = time_process(true_argv, true);
		tf[i] = time_process(floor_argv, true);
		tc[i] = time_process(cordon_argv, false);
		tb[i] = have_bwrap ? time_process(bwrap_argv, true) : 0;
		if (tc[i] < 0 || tt[i] < 0 || tb[i] < 0 || tf[i] < 0) {
			fprintf(stderr, "a whole-process launch failed (%s)\n",
				tc[i] < 0 ? "cordon run" : tb[i] < 0 ? "bwrap" : tf[i] < 0 ? "confine_floor"
											 : "/bin/true");
			return 1;
		}
	}
	double mc = median(tc, total), mb = median(tb, total), mt = median(tt, total),
	       mfw = median(tf, total);
	printf("whole process, median of %d, interleaved:\n", total);
	printf("  /bin/true                                   %8.0f us\n", mt);
	printf("  confine_floor -V -n 1 /bin/true (raw floor)  %8.0f us\n", mfw);
	printf("  cordon run --trust semi-trusted -- /bin/true %8.0f us\n", mc);
	if (have_bwrap) {
		printf("  bwrap --unshare-all --ro-bind / / ...       %8.0f us\n", mb);
		printf("  ratio cordon / bwrap                        %8.2f   (target <= 0.80)\n", mc / mb);
	} else {
		printf("  bwrap: not installed (%s), no ratio\n", bwrap);
	}

	/* 2. Per launch in a loop: the library against the raw floor. */
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	if (cordon_context_new(NULL, &ctx, &err) < 0) {
		fprintf(stderr, "context: %s\n", cordon_error_get_message(err));
		return 1;
	}
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_sandbox *sb = NULL;
	if (cordon_sandbox_open(ctx, req, &sb, &err) < 0) {
		fprintf(stderr, "open: %s\n", cordon_error_get_message(err));
		return 1;
	}
	double *lf = calloc((size_t)rounds, sizeof(double)), *ll = calloc((size_t)rounds, sizeof(double));
	for (int r = 0; r < rounds; r++) {
		lf[r] = floor_loop(floor_bin, n);
		ll[r] = library_loop(sb, n);
		if (lf[r] < 0) {
			fprintf(stderr, "confine_floor failed (%s)\n", floor_bin);
			return 1;
		}
	}
	double mf = median(lf, rounds), ml = median(ll, rounds);
	printf("per launch in a loop (%d rounds of %d, medians):\n", rounds, n);
	printf("  confine_floor -V (raw namespaces+Landlock+seccomp) %8.0f us\n", mf);
	printf("  cordon_sandbox_run (kernel tier)                   %8.0f us\n", ml);
	printf("  ratio library / floor                              %8.2f   (target <= 1.30)\n", ml / mf);
	printf("containment: %s\n", cordon_containment_to_string(cordon_sandbox_containment(sb)));
	cordon_sandbox_close(sb);
	cordon_request_free(req);
	cordon_context_free(ctx);
	return 0;
}
