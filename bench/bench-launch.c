/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Launch cost of the process-jail (and, with -t semi-trusted, kernel) tier,
 * measured side by side with its floor in one run, as paired ratios:
 *
 *  1. library loop: cordon_sandbox_run("/bin/true") vs posix_spawn + waitpid;
 *  2. whole process: `cordon run --trust T -- /bin/true` vs `spawn-one
 *     /bin/true` (a minimal C launcher, bench/spawn-one.c): both sides pay for
 *     two process creations, both started by this program;
 *  3. context creation with every plugin in a directory loaded (-P DIR).
 *
 * Rounds alternate the two sides so that drift on a busy machine hits both.
 * Usage: bench-launch [-n N] [-r ROUNDS] [-t TRUST] [-c CORDON_BINARY -s SPAWN_ONE]
 *                     [-P PLUGIN_DIR]
 */
#include "config.h"

#include "benchutil.h"

#include <cordon/cordon.h>
#include <glib.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void spawn_wait(char *const argv[])
{
	pid_t pid;
	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) {
		perror(argv[0]);
		exit(1);
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s failed (status 0x%x)\n", argv[0], st);
		exit(1);
	}
}

/* Per-launch µs of n launches of argv by posix_spawn. */
static double loop_spawn(char *const argv[], int n)
{
	double t0 = bench_now_us();
	for (int i = 0; i < n; i++)
		spawn_wait(argv);
	return (bench_now_us() - t0) / n;
}

static double loop_cordon(cordon_sandbox *sb, int n)
{
	const char *argv[] = { "/bin/true", NULL };
	double t0 = bench_now_us();
	for (int i = 0; i < n; i++) {
		cordon_result *res = NULL;
		cordon_error *err = NULL;
		if (cordon_sandbox_run(sb, argv, NULL, &res, &err) < 0 ||
		    cordon_result_exit_code(res) != 0) {
			fprintf(stderr, "run failed: %s\n",
				err ? cordon_error_get_message(err) : "status");
			exit(1);
		}
		cordon_result_free(res);
	}
	return (bench_now_us() - t0) / n;
}

static void report(const char *what, const char *a, double *va, const char *b, double *vb,
		   int rounds)
{
	double ma = bench_median(va, (int)rounds), mb = bench_median(vb, (int)rounds);
	printf("%-40s %-34s %9.1f us\n", what, a, ma);
	printf("%-40s %-34s %9.1f us\n", "", b, mb);
	printf("%-40s %-34s %9.2fx\n", "", "ratio", ma / mb);
}

/* Child mode (-F DIR): create one context loading every plugin, print µs. */
static int child_context(const char *dir)
{
	cordon_options *o = cordon_options_new();
	cordon_options_set_plugin_dir(o, dir, NULL);
	cordon_options_set_load_all_plugins(o, true);
	cordon_context *c = NULL;
	cordon_error *err = NULL;
	double t0 = bench_now_us();
	if (cordon_context_new(o, &c, &err) < 0) {
		fprintf(stderr, "context: %s\n", cordon_error_get_message(err));
		return 1;
	}
	double t = bench_now_us() - t0;
	size_t loaded = 0;
	for (size_t p = 0; p < cordon_context_plugin_count(c); p++)
		loaded += cordon_context_plugin_loaded(c, p);
	if (loaded == 0) {
		fprintf(stderr, "no plugin loaded from %s\n", dir);
		return 1;
	}
	printf("%.1f %zu\n", t, loaded);
	cordon_context_free(c);
	cordon_options_free(o);
	return 0;
}

static double first_context_us(const char *dir)
{
	g_autofree char *out = NULL;
	g_autoptr(GError) gerr = NULL;
	const char *argv[] = { "/proc/self/exe", "-F", dir, NULL };
	int status;
	if (!g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out, NULL, &status, &gerr) ||
	    status != 0) {
		fprintf(stderr, "context child failed\n");
		exit(1);
	}
	return g_ascii_strtod(out, NULL);
}

int main(int argc, char **argv)
{
	int n = 200, rounds = 5, opt;
	const char *trust = "trusted", *cordon_bin = NULL, *plugin_dir = NULL, *spawn_one = NULL;
	while ((opt = getopt(argc, argv, "n:r:t:c:s:P:F:")) != -1) {
		switch (opt) {
		case 'F': return child_context(optarg);
		case 'n': n = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 't': trust = optarg; break;
		case 'c': cordon_bin = optarg; break;
		case 's': spawn_one = optarg; break;
		case 'P': plugin_dir = optarg; break;
		default:
			fprintf(stderr,
				"usage: %s [-n N] [-r ROUNDS] [-t TRUST] [-c CORDON] [-P DIR]\n",
				argv[0]);
			return 2;
		}
	}
	if (n < 1 || rounds < 1 || rounds > 1000)
		return 2;

	cordon_error *err = NULL;
	cordon_context *ctx = NULL;
	cordon_request *req = cordon_request_new(trust);
	cordon_sandbox *sb = NULL;
	if (cordon_context_new(NULL, &ctx, &err) < 0 ||
	    cordon_sandbox_open(ctx, req, &sb, &err) < 0) {
		fprintf(stderr, "cordon: %s\n", cordon_error_get_message(err));
		return 1;
	}
	printf("tier %s (%s), %d launches x %d rounds, medians of per-launch means\n",
	       cordon_sandbox_tier(sb),
	       cordon_containment_to_string(cordon_sandbox_containment(sb)), n, rounds);

	double *va = calloc(rounds, sizeof(double)), *vb = calloc(rounds, sizeof(double));
	char *true_argv[] = { "/bin/true", NULL };
	for (int r = 0; r < rounds; r++) {
		va[r] = loop_cordon(sb, n);
		vb[r] = loop_spawn(true_argv, n);
	}
	report("library loop", "cordon_sandbox_run /bin/true", va, "posix_spawn+waitpid /bin/true",
	       vb, rounds);
	cordon_sandbox_close(sb);

	if (cordon_bin && spawn_one) {
		char *cargv[] = { (char *)cordon_bin, "run", "--trust", (char *)trust, "--",
				  "/bin/true",        NULL };
		char *sargv[] = { (char *)spawn_one, "/bin/true", NULL };
		int m = n / 4 > 10 ? n / 4 : 10;
		for (int r = 0; r < rounds; r++) {
			va[r] = loop_spawn(cargv, m);
			vb[r] = loop_spawn(sargv, m);
		}
		report("whole process", "cordon run -- /bin/true", va, "spawn-one /bin/true", vb,
		       rounds);
	}

	if (plugin_dir) {
		/* Each creation in a fresh process: modules are resident, so only the
		 * first creation in a process pays for dlopen and relocation. */
		int m = 30;
		double *vc = calloc(m, sizeof(double));
		for (int i = 0; i < m; i++)
			vc[i] = first_context_us(plugin_dir);
		printf("%-40s %-34s %9.1f us\n", "context creation (fresh process)",
		       "cordon_context_new, all plugins", bench_median(vc, (int)m));
		free(vc);
	}
	free(va);
	free(vb);
	cordon_request_free(req);
	cordon_context_free(ctx);
	return 0;
}
