/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-containers-cli: the container tiers from the command line, whole process, against
 * the raw engine (issue 16: at most 1.10x):
 *
 *   cordon run --policy P --trust untrusted -- /bin/true
 *   ENGINE [global flags] run --rm --pull never ... IMAGE /bin/true    (the same flags)
 *
 * for podman and docker, each with runc and with gVisor's runsc. The raw command gets the
 * tier's hardened flags from the same function the plugins use (oci_run_argv), cordon's
 * seccomp profile included (from a file: a raw CLI has no fd to inherit), and the engine's
 * global flags the tier configures. The two are launched in alternating order (ABBA), N
 * rounds, so that load on a shared machine hits both alike; each is timed from posix_spawn
 * to wait4, whose rusage gives the CPU time (user + system) of the process and of every
 * descendant it waited for. What the engine's own daemons and monitors spend (dockerd,
 * containerd, conmon, runc, runsc) is in neither figure: both sides start the same
 * container, so that part is alike. Medians and p90; the ratio is cordon's over raw.
 *
 * `cordon run` keeps its tier's probe answer for a minute (the probe cache): the first run
 * of a combination probes (a warm-up run does that), and about one run a minute probes
 * again; that run is measured like any other.
 *
 * usage: bench-containers-cli [-n ROUNDS] [-c CORDON] [--engine podman|docker]
 *                             [--runtime runc|runsc]
 * Run from the build tree after .ci/engines.sh, as root (the container tests' setup).
 */
#include "config.h"

#include "oci/oci.h"
#include "protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *env_min[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
	"HOME=/root", NULL
};
/* cordon's: the same, and a non-static build's library path (make bench-containers-cli) */
static char **env_cordon;

typedef struct combo {
	const char *engine, *runtime;
	char *engine_bin;
	char *dir;     /* private: plugin copy, policy, seccomp profile, stderr log */
	char *policy;  /* file */
	char *profile; /* file */
	char **cordon_argv, **raw_argv;
} combo;

typedef struct sample {
	double wall_ms, cpu_ms;
} sample;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench-containers-cli: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static bool is_podman(const combo *c) { return strcmp(c->engine, "podman") == 0; }

static bool is_gvisor(const combo *c) { return strcmp(c->runtime, "runsc") == 0; }

static double now_ms(void) { return (double)g_get_monotonic_time() / 1000.0; }

/* One whole process, stdout to /dev/null and stderr to log; false when it failed. */
static bool time_process(char *const *argv, char *const *envp, const char *log, sample *ret)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	double t0 = now_ms();
	pid_t pid;
	int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return false;
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			return false;
	ret->wall_ms = now_ms() - t0;
	ret->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
		      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void run_or_die(const combo *c, char *const *argv, sample *ret)
{
	g_autofree char *log = g_build_filename(c->dir, "stderr.log", NULL);
	char *const *envp = argv == c->cordon_argv ? env_cordon : (char *const *)env_min;
	if (!time_process(argv, envp, log, ret)) {
		g_autofree char *text = NULL;
		g_file_get_contents(log, &text, NULL, NULL);
		die("%s %s: %s failed: %s", c->engine, c->runtime, argv[0], text ? text : "?");
	}
}

static const char *const ulimits_runc[] = { "nofile=1024:1024", "nproc=4096:4096", NULL };
static const char *const ulimits_gvisor[] = { "nofile=1024:1024", NULL };
static const char *const podman_extra[] = { "--read-only-tmpfs=false", NULL };
static const char *const gvisor_flags[] = { "network=none", "oci-seccomp", NULL };

/* The tier's policy: what the raw command's flags are made of too. */
static char *policy_text(const combo *c, const char *image, const char *helper)
{
	GString *p = g_string_new(NULL);
	g_string_append_printf(p, "cordon: 1\nplugins: {dir: %s, load: [%s]}\ntiers:\n  box:\n",
			       c->dir, c->engine);
	g_string_append_printf(p, "    driver: %s\n    image: \"%s\"\n    helper: %s\n", c->engine,
			       image, helper);
	g_string_append_printf(p, "    runtime: %s\n    ulimits: [%s]\n", c->runtime,
			       is_gvisor(c) ? "nofile=1024:1024"
					    : "nofile=1024:1024, nproc=4096:4096");
	if (is_podman(c))
		g_string_append(p, "    cgroup_manager: cgroupfs\n");
	if (is_podman(c) && is_gvisor(c))
		g_string_append(p, "    runtime_flags: [network=none, oci-seccomp]\n");
	g_string_append(p, "    limits: {memory: 256MiB, pids: 128}\n");
	g_string_append(p,
			"trust:\n  untrusted: {require: container, relax: true, tiers: [box]}\n");
	return g_string_free(p, FALSE);
}

/* ENGINE [global flags] run --rm ... IMAGE /bin/true, with the tier's hardened flags. */
static char **raw_argv(const combo *c, const char *image, const char *helper)
{
	GPtrArray *a = g_ptr_array_new();
	g_ptr_array_add(a, g_strdup(c->engine_bin));
	if (is_podman(c)) {
		g_ptr_array_add(a, g_strdup("--runtime"));
		g_ptr_array_add(a, g_strdup(c->runtime));
		for (size_t i = 0; is_gvisor(c) && gvisor_flags[i]; i++) {
			g_ptr_array_add(a, g_strdup("--runtime-flag"));
			g_ptr_array_add(a, g_strdup(gvisor_flags[i]));
		}
		g_ptr_array_add(a, g_strdup("--cgroup-manager"));
		g_ptr_array_add(a, g_strdup("cgroupfs"));
	}
	oci_mount m = { helper, AGENT_PATH, true };
	const char *command[] = { "/bin/true", NULL };
	oci_spec s = {
		.image = image,
		.trust = CORDON_PLUGIN_TRUST_UNTRUSTED,
		.egress = CORDON_PLUGIN_EGRESS_DENY,
		.mounts = &m,
		.n_mounts = 1,
		.runtime = is_podman(c) ? NULL : c->runtime,
		.seccomp = c->profile,
		.ulimits = is_gvisor(c) ? ulimits_gvisor : ulimits_runc,
		.root_tmpfs = true,
		.tmpfs_owner = is_podman(c) ? "U" : "uid=65534,gid=65534",
		.pids_in_sandbox = is_gvisor(c),
		.extra = is_podman(c) ? podman_extra : NULL,
		.workdir = AGENT_SANDBOX_ROOT,
		.command = command,
	};
	s.limits.set = 1u << CORDON_PLUGIN_LIMIT_MEMORY | 1u << CORDON_PLUGIN_LIMIT_PIDS;
	s.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 256ull << 20;
	s.limits.value[CORDON_PLUGIN_LIMIT_PIDS] = 128;
	/* checked as the plugins check it: the helper's mount target is theirs alone */
	oci_refusal r;
	s.n_mounts = 0;
	if (oci_guarantees_check(&s, &r) < 0)
		die("the raw spec: %s", r.message);
	s.n_mounts = 1;
	char **args = oci_run_argv(&s);
	for (size_t i = 0; args[i]; i++)
		g_ptr_array_add(a, g_strdup(args[i]));
	xstrv_free(args);
	g_ptr_array_add(a, NULL);
	return (char **)g_ptr_array_free(a, FALSE);
}

static bool copy_file(const char *src, const char *dst, mode_t mode)
{
	g_autofree char *data = NULL;
	gsize len;
	return g_file_get_contents(src, &data, &len, NULL) &&
	       g_file_set_contents(dst, data, (gssize)len, NULL) && chmod(dst, mode) == 0;
}

static void combo_setup(combo *c, const char *builddir, const char *cordon, const char *image)
{
	c->engine_bin = g_find_program_in_path(c->engine);
	if (!c->engine_bin)
		die("%s is not installed", c->engine);
	/* the loader refuses plugin directories others can write: a private one */
	c->dir = g_dir_make_tmp("cordon-bench-cli-XXXXXX", NULL);
	g_autofree char *so = g_strdup_printf("%s/plugins/%s/.libs/%s.so", builddir, c->engine,
					      c->engine);
	g_autofree char *so_dst = g_strdup_printf("%s/%s.so", c->dir, c->engine);
	if (!c->dir || !copy_file(so, so_dst, 0755))
		die("the %s plugin is not built (run from the build tree)", c->engine);
	g_autofree char *helper = g_canonicalize_filename("agent/cordon-agent", builddir);
	c->profile = g_build_filename(c->dir, "seccomp.json", NULL);
	const char *text = is_gvisor(c) ? oci_seccomp_profile_gvisor : oci_seccomp_profile;
	c->policy = g_build_filename(c->dir, "policy.yaml", NULL);
	g_autofree char *policy = policy_text(c, image, helper);
	if (!g_file_set_contents(c->profile, text, -1, NULL) ||
	    !g_file_set_contents(c->policy, policy, -1, NULL))
		die("cannot write %s", c->dir);
	const char *cargv[] = { cordon,      "run", "--policy",  c->policy, "--trust",
				"untrusted", "--",  "/bin/true", NULL };
	c->cordon_argv = g_strdupv((char **)cargv);
	c->raw_argv = raw_argv(c, image, helper);
}

static void combo_clear(combo *c)
{
	const char *files[] = { "seccomp.json", "policy.yaml", "stderr.log", NULL };
	for (size_t i = 0; files[i]; i++) {
		g_autofree char *f = g_build_filename(c->dir, files[i], NULL);
		g_unlink(f);
	}
	g_autofree char *so = g_strdup_printf("%s/%s.so", c->dir, c->engine);
	g_unlink(so);
	g_rmdir(c->dir);
	g_free(c->dir);
	g_free(c->policy);
	g_free(c->profile);
	g_free(c->engine_bin);
	g_strfreev(c->cordon_argv);
	g_strfreev(c->raw_argv);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The p-quantile of field (0 wall, 1 cpu) of n samples. */
static double quantile(const sample *v, int n, int field, double p)
{
	double *x = g_new(double, n);
	for (int i = 0; i < n; i++)
		x[i] = field ? v[i].cpu_ms : v[i].wall_ms;
	qsort(x, (size_t)n, sizeof(double), cmp_double);
	double q = x[(int)(p * (n - 1) + 0.5)];
	g_free(x);
	return q;
}

static void print_row(const char *what, const sample *v, int n)
{
	printf("  %-42s wall median %7.1f ms  p90 %7.1f ms   cpu median %6.1f ms  p90 %6.1f ms\n",
	       what, quantile(v, n, 0, 0.5), quantile(v, n, 0, 0.9), quantile(v, n, 1, 0.5),
	       quantile(v, n, 1, 0.9));
}

static void bench_combo(combo *c, int n)
{
	sample *a = g_new0(sample, n), *b = g_new0(sample, n), warm;
	/* warm-up: the probe (kept from here on), the engine's caches */
	run_or_die(c, c->cordon_argv, &warm);
	run_or_die(c, c->raw_argv, &warm);
	double load[3] = { 0 }, load_end[3] = { 0 };
	getloadavg(load, 3);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++) {
			bool cordon_turn = (i + k) % 2 == 0;
			run_or_die(c, cordon_turn ? c->cordon_argv : c->raw_argv,
				   cordon_turn ? &a[i] : &b[i]);
		}
	getloadavg(load_end, 3);
	printf("# %s, runtime %s: %d rounds, interleaved (ABBA); load average %.1f -> %.1f\n",
	       c->engine, c->runtime, n, load[0], load_end[0]);
	print_row("cordon run -- /bin/true", a, n);
	g_autofree char *raw = g_strdup_printf("raw %s run --rm (same flags) /bin/true", c->engine);
	print_row(raw, b, n);
	double wa = quantile(a, n, 0, 0.5), wb = quantile(b, n, 0, 0.5);
	double ca = quantile(a, n, 1, 0.5), cb = quantile(b, n, 1, 0.5);
	printf("  %-42s wall %.2fx (%+.0f%%)   cpu %.2fx (%+.0f ms)   target wall <= 1.10x\n",
	       "ratio (medians)", wa / wb, (wa / wb - 1) * 100, ca / cb, ca - cb);
	fflush(stdout);
	g_free(a);
	g_free(b);
}

int main(int argc, char **argv)
{
	int n = 15;
	const char *cordon = NULL, *only_engine = NULL, *only_runtime = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			cordon = argv[++i];
		else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
			only_engine = argv[++i];
		else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc)
			only_runtime = argv[++i];
		else
			die("usage: bench-containers-cli [-n ROUNDS] [-c CORDON] "
			    "[--engine podman|docker] [--runtime runc|runsc]");
	}
	if (n < 3)
		n = 3;
	const char *state = g_getenv("CORDON_CI_STATE") ? g_getenv("CORDON_CI_STATE")
							: "/var/lib/cordon-ci";
	g_autofree char *ref_file = g_build_filename(state, "image-ref", NULL);
	g_autofree char *image = NULL;
	if (!g_file_get_contents(ref_file, &image, NULL, NULL))
		die("no %s: run .ci/engines.sh", ref_file);
	g_strstrip(image);
	g_autofree char *cwd = g_get_current_dir();
	const char *builddir = g_getenv("CORDON_TOP_BUILDDIR") ? g_getenv("CORDON_TOP_BUILDDIR")
							       : cwd;
	g_autofree char *cordon_path = cordon ? g_strdup(cordon)
					      : g_build_filename(builddir, "cordon", NULL);
	if (access(cordon_path, X_OK) != 0)
		die("%s is not built", cordon_path);
	env_cordon = g_strdupv((char **)env_min);
	if (g_getenv("LD_LIBRARY_PATH"))
		env_cordon = g_environ_setenv(env_cordon, "LD_LIBRARY_PATH",
					      g_getenv("LD_LIBRARY_PATH"), TRUE);
	printf("# cordon run (whole process) vs the raw engine, %d rounds each; %s\n", n, image);
	const char *engines[] = { "podman", "docker" }, *runtimes[] = { "runc", "runsc" };
	for (int e = 0; e < 2; e++)
		for (int r = 0; r < 2; r++) {
			if ((only_engine && strcmp(only_engine, engines[e]) != 0) ||
			    (only_runtime && strcmp(only_runtime, runtimes[r]) != 0))
				continue;
			combo c = { .engine = engines[e], .runtime = runtimes[r] };
			combo_setup(&c, builddir, cordon_path, image);
			bench_combo(&c, n);
			combo_clear(&c);
		}
	return 0;
}
