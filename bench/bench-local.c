/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-local: the kernel tier against its peers, side by side in one run.
 *
 *  1. Whole process: `cordon run --trust semi-trusted -- /bin/true` against
 *     `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true`
 *     (and, for scale, a bare `/bin/true` and the raw floor's one launch,
 *     `confine_floor -V -n 1`), launched alternately, each timed from
 *     posix_spawn to waitpid, with the CPU time of the whole process tree
 *     beside it (we are a child subreaper, so the sandbox's processes, which
 *     are not the command's children, come back to us and are counted).
 *     Target: cordon <= 0.8 x bwrap. As root, again as nobody (setpriv), for
 *     all four: the unprivileged path (nobody has no runtime directory, so
 *     no probe cache either: each of its runs probes).
 *     Then, as the caller, again with a 50 ms pause before each launch: an
 *     isolated command (see BENCH_SPACED_MS).
 *  2. Per launch in a loop: cordon_sandbox_run of /bin/true through the
 *     library (one context, one sandbox) against `confine_floor -V` (the raw
 *     clone + namespaces + Landlock + seccomp floor, built from
 *     bench/floor/confine_floor.c), rounds alternating. Target <= 1.3 x.
 * Medians throughout; ratios are what to compare across machines.
 *
 * usage: bench-local [-n LAUNCHES] [-r ROUNDS] [-c CORDON] [-f CONFINE_FLOOR] [-b BWRAP]
 */
#include "config.h"

#include "benchutil.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double children_cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

/* One whole process, timed: wall until it exits, CPU of its whole tree
 * (every process reaped, ours or reparented to us); false when it failed. */
static bool time_process(char *const *argv, bool quiet, double *ret_wall, double *ret_cpu)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (quiet) {
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	}
	double c0 = children_cpu_us();
	double t0 = bench_now_us();
	pid_t pid;
	int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return false;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return false;
	*ret_wall = bench_now_us() - t0;
	/* The sandbox's teardown goes on after the command: reap it all. */
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	*ret_cpu = children_cpu_us() - c0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

enum { P_TRUE, P_FLOOR, P_CORDON, P_BWRAP, P_COUNT };

/* The pause before each launch of the spaced pass: longer than a few RCU grace periods. */
#define BENCH_SPACED_MS 50

/* The four whole processes, interleaved so that load hits all alike, under
 * prefix (e.g. setpriv to another user; NULL: none); medians printed. */
static int whole_process(const char *label, const char *const *prefix, const char *cordon,
			 const char *floor_bin, const char *bwrap, int total, int spaced_ms)
{
	static const char *const tails[P_COUNT][12] = {
		[P_TRUE] = { "/bin/true", NULL },
		[P_FLOOR] = { NULL, "-V", "-n", "1", "/bin/true", NULL },
		[P_CORDON] = { NULL, "run", "--trust", "semi-trusted", "--", "/bin/true", NULL },
		[P_BWRAP] = { NULL, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
			      "--proc", "/proc", "/bin/true", NULL },
	};
	static const char *const names[P_COUNT] = {
		"/bin/true",
		"confine_floor -V -n 1 /bin/true (raw floor)",
		"cordon run --trust semi-trusted -- /bin/true",
		"bwrap --unshare-all --ro-bind / / ...",
	};
	const char *bins[P_COUNT] = { "/bin/true", floor_bin, cordon, bwrap };
	bool have_bwrap = access(bwrap, X_OK) == 0;
	char *argvs[P_COUNT][24];
	for (int p = 0; p < P_COUNT; p++) {
		int k = 0;
		for (int i = 0; prefix && prefix[i]; i++)
			argvs[p][k++] = (char *)prefix[i];
		argvs[p][k++] = (char *)bins[p];
		for (int i = 1; tails[p][i]; i++)
			argvs[p][k++] = (char *)tails[p][i];
		argvs[p][k] = NULL;
	}
	double *wall[P_COUNT], *cpu[P_COUNT], mw[P_COUNT], mc[P_COUNT];
	for (int p = 0; p < P_COUNT; p++) {
		wall[p] = calloc((size_t)total, sizeof(double));
		cpu[p] = calloc((size_t)total, sizeof(double));
	}
	for (int i = 0; i < total; i++)
		for (int p = 0; p < P_COUNT; p++) {
			if (p == P_BWRAP && !have_bwrap)
				continue;
			if (spaced_ms > 0) {
				struct timespec gap = { spaced_ms / 1000,
							(spaced_ms % 1000) * 1000000L };
				nanosleep(&gap, NULL);
			}
			if (!time_process(argvs[p], p != P_CORDON, &wall[p][i], &cpu[p][i])) {
				fprintf(stderr, "a whole-process launch failed (%s, %s)\n",
					names[p], label);
				return -1;
			}
		}
	for (int p = 0; p < P_COUNT; p++) {
		mw[p] = bench_median(wall[p], total);
		mc[p] = bench_median(cpu[p], total);
		free(wall[p]);
		free(cpu[p]);
	}
	printf("whole process, %s, median of %d, interleaved", label, total);
	if (spaced_ms > 0)
		printf(", each after a %d ms pause", spaced_ms);
	printf(" (wall, CPU of the whole tree):\n");
	for (int p = 0; p < P_COUNT; p++) {
		if (p == P_BWRAP && !have_bwrap)
			continue;
		printf("  %-46s %8.0f us  cpu %8.0f us\n", names[p], mw[p], mc[p]);
	}
	if (have_bwrap)
		printf("  ratio cordon / bwrap                           %8.2f     cpu %8.2f   "
		       "(target <= 0.80)\n",
		       mw[P_CORDON] / mw[P_BWRAP], mc[P_CORDON] / mc[P_BWRAP]);
	else
		printf("  bwrap: not installed (%s), no ratio\n", bwrap);
	return 0;
}

/* As root, the whole processes again as nobody (setpriv, by number: the
 * names differ between distributions); a host where that cannot work says
 * why instead. */
static int unprivileged_pass(const char *cordon, const char *floor_bin, const char *bwrap,
			     int total)
{
	static const char *const as_nobody[] = {
		"/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", NULL
	};
	char *check[] = { (char *)as_nobody[0], "--reuid",      "65534",   "--regid", "65534",
			  "--clear-groups",     (char *)cordon, "version", NULL };
	double w, cpu;
	if (access(as_nobody[0], X_OK) != 0) {
		printf("whole process, unprivileged: not measured (no %s)\n", as_nobody[0]);
		return 0;
	}
	if (!time_process(check, true, &w, &cpu)) {
		printf("whole process, unprivileged: not measured (nobody cannot run %s: a build "
		       "tree only root may enter?)\n",
		       cordon);
		return 0;
	}
	return whole_process("unprivileged (setpriv to nobody: no probe cache)", as_nobody, cordon,
			     floor_bin, bwrap, total, 0);
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
		double t0 = bench_now_us();
		if (cordon_sandbox_run(sb, argv, NULL, &res, &err) < 0 ||
		    cordon_result_exit_code(res) != 0) {
			fprintf(stderr, "run failed: %s\n",
				err ? cordon_error_get_message(err) : "exit status");
			exit(1);
		}
		v[i] = bench_now_us() - t0;
		cordon_result_free(res);
	}
	double m = bench_median(v, n);
	free(v);
	return m;
}

int main(int argc, char **argv)
{
	int n = 100, rounds = 5, c;
	const char *cordon = "./cordon", *floor_bin = "./bench/confine_floor",
		   *bwrap = "/usr/bin/bwrap";
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

	/* 1. Whole processes: as we are, then (as root) as nobody. */
	int total = n * rounds / 4 > 20 ? n * rounds / 4 : 20;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	const char *self = geteuid() == 0 ? "as root" : "as this user";
	if (whole_process(self, NULL, cordon, floor_bin, bwrap, total, 0) < 0)
		return 1;
	if (geteuid() == 0 && unprivileged_pass(cordon, floor_bin, bwrap, total) < 0)
		return 1;
	/* Back to back, a run's cgroup v1 attach finds the attach lock's RCU grace
	 * period already passed (the previous run's): an isolated command, as a user
	 * types it, waits for one (4-21 ms) unless the host mounts a hierarchy with
	 * favordynmods (docs/tiers/local.md). Spaced launches show what it pays. */
	if (whole_process(self, NULL, cordon, floor_bin, bwrap, total / 5 > 20 ? total / 5 : 20,
			  BENCH_SPACED_MS) < 0)
		return 1;

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
	double *lf = calloc((size_t)rounds, sizeof(double)),
	       *ll = calloc((size_t)rounds, sizeof(double));
	for (int r = 0; r < rounds; r++) {
		lf[r] = floor_loop(floor_bin, n);
		ll[r] = library_loop(sb, n);
		if (lf[r] < 0) {
			fprintf(stderr, "confine_floor failed (%s)\n", floor_bin);
			return 1;
		}
	}
	double mf = bench_median(lf, rounds), ml = bench_median(ll, rounds);
	printf("per launch in a loop (%d rounds of %d, medians):\n", rounds, n);
	printf("  confine_floor -V (raw namespaces+Landlock+seccomp) %8.0f us\n", mf);
	printf("  cordon_sandbox_run (kernel tier)                   %8.0f us\n", ml);
	printf("  ratio library / floor                              %8.2f   (target <= 1.30)\n",
	       ml / mf);
	printf("containment: %s\n", cordon_containment_to_string(cordon_sandbox_containment(sb)));
	cordon_sandbox_close(sb);
	cordon_request_free(req);
	cordon_context_free(ctx);
	return 0;
}
