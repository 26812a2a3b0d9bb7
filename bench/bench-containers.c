/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The container tiers against the raw engine, side by side in one run
 * (interleaved, so load on a shared machine hits both alike):
 *
 *   cycle   cordon open + run /bin/true + close   vs  ENGINE run --rm (same flags) /bin/true
 *   exec    cordon run /bin/true in an open sandbox (over its session channel: no
 *           engine call) vs ENGINE exec CONTAINER /bin/true
 *   pool    cordon open with `pool: 2` (a ready container taken)
 *   pooled  cordon open + run /bin/true + close with `pool: 2` vs ENGINE run --rm
 *   files   write_file (4 KiB), read_file, glob, walk in an open sandbox: over its
 *           session channel vs through `engine exec` of the helper (the way every
 *           file operation went before; taken now while a run holds the channel)
 *
 * The raw command gets exactly the hardened flags the tier uses (oci_run_argv
 * from plugins/oci). Needs what .ci/engines.sh sets up; run from the build tree:
 *   bench/bench-containers [-n N] [--engine podman|docker] [--only files]
 */
#include "config.h"

#include "oci/oci.h"
#include "protocol.h"

#include <cordon/cordon.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *engine = "podman";
static char *engine_bin;
static char *image_ref;
static char *helper;
static const char *env_min[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
	"HOME=/root", NULL
};

static bool is_podman(void) { return strcmp(engine, "podman") == 0; }

static double now_ms(void) { return (double)g_get_monotonic_time() / 1000.0; }

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench-containers: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* ENGINE [podman's global flags] args... */
static GPtrArray *engine_cmd(void)
{
	GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(a, g_strdup(engine_bin));
	if (is_podman()) {
		for (const char *const *f =
			     (const char *const[]){ "--runtime", "runc", "--cgroup-manager",
						    "cgroupfs", NULL };
		     *f; f++)
			g_ptr_array_add(a, g_strdup(*f));
	}
	return a;
}

static void run_cmd(GPtrArray *a, char **ret_out)
{
	g_ptr_array_add(a, NULL);
	int status;
	g_autoptr(GError) e = NULL;
	char *out = NULL, *err = NULL;
	if (!g_spawn_sync(NULL, (char **)a->pdata, (char **)env_min, G_SPAWN_DEFAULT, NULL, NULL,
			  &out, &err, &status, &e) ||
	    status != 0)
		die("%s failed: %s", (char *)a->pdata[1], err ? err : (e ? e->message : "?"));
	g_free(err);
	if (ret_out)
		*ret_out = g_strstrip(out);
	else
		g_free(out);
}

/* The spec a session container of the bench tier gets, minus what only a
 * session needs; command NULL: the helper idles. */
static char **hardened_run(const char *const *command, const char *name)
{
	static const char *const ulimits[] = { "nofile=1024:1024", "nproc=4096:4096", NULL };
	static const char *const podman_extra[] = { "--read-only-tmpfs=false", NULL };
	oci_mount m = { helper, AGENT_PATH, true };
	oci_spec s = {
		.image = image_ref,
		.trust = CORDON_PLUGIN_TRUST_UNTRUSTED,
		.egress = CORDON_PLUGIN_EGRESS_DENY,
		.mounts = &m,
		.n_mounts = 1,
		.ulimits = ulimits,
		.root_tmpfs = true,
		.tmpfs_owner = is_podman() ? "U" : "uid=65534,gid=65534",
		.extra = is_podman() ? podman_extra : NULL,
		.name = name,
		.workdir = AGENT_SANDBOX_ROOT,
	};
	s.limits.set = 1u << CORDON_PLUGIN_LIMIT_MEMORY | 1u << CORDON_PLUGIN_LIMIT_PIDS;
	s.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 256ull << 20;
	s.limits.value[CORDON_PLUGIN_LIMIT_PIDS] = 128;
	const char *idle[] = { "idle", NULL };
	if (!command) {
		s.entrypoint = AGENT_PATH;
		s.command = idle;
		s.detach = true;
	} else {
		s.command = command;
	}
	return oci_run_argv(&s);
}

static void raw_cycle(void)
{
	g_autoptr(GPtrArray) a = engine_cmd();
	const char *cmd[] = { "/bin/true", NULL };
	char **args = hardened_run(cmd, NULL);
	for (size_t i = 0; args[i]; i++)
		g_ptr_array_add(a, g_strdup(args[i]));
	xstrv_free(args);
	run_cmd(a, NULL);
}

static char *policy_text(const char *plugin_dir)
{
	GString *p = g_string_new(NULL);
	g_string_append_printf(p, "cordon: 1\nplugins: {dir: %s, load: [%s]}\ntiers:\n", plugin_dir,
			       engine);
	const char *tiers[] = { "box", "pool" };
	for (int i = 0; i < 2; i++) {
		g_string_append_printf(p,
				       "  %s:\n    driver: %s\n    image: \"%s\"\n    helper: %s\n"
				       "    ulimits: [nofile=1024:1024, nproc=4096:4096]\n"
				       "    limits: {memory: 256MiB, pids: 128}\n",
				       tiers[i], engine, image_ref, helper);
		if (is_podman())
			g_string_append(p, "    runtime: runc\n    cgroup_manager: cgroupfs\n");
		if (i == 1)
			g_string_append(p, "    pool: 2\n");
	}
	g_string_append(
		p, "trust:\n  untrusted: {require: container, relax: true, tiers: [box, pool]}\n");
	return g_string_free(p, FALSE);
}

static cordon_sandbox *open_tier(cordon_context *ctx, const char *tier)
{
	cordon_request *req = cordon_request_new("untrusted");
	cordon_request_set_tier(req, tier, NULL);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_open(ctx, req, &sb, &err) < 0)
		die("open %s: %s", tier, cordon_error_get_message(err));
	cordon_request_free(req);
	return sb;
}

static void run_true(cordon_sandbox *sb)
{
	const char *argv[] = { "/bin/true", NULL };
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_run(sb, argv, NULL, &r, &err) < 0 || cordon_result_exit_code(r) != 0)
		die("run: %s", err ? cordon_error_get_message(err) : "non-zero exit");
	cordon_result_free(r);
}

static void report(const char *what, const char *peer, double *a, double *b, int n);

/* One file operation of the `files` bench: 0 write, 1 read, 2 glob, 3 walk. */
static void file_op(cordon_sandbox *sb, int op)
{
	static char data[4096];
	cordon_error *err = NULL;
	void *got = NULL;
	size_t len = 0;
	char **paths = NULL;
	int r;
	switch (op) {
	case 0: r = cordon_sandbox_write_file(sb, "d/f.txt", data, sizeof(data), &err); break;
	case 1:
		r = cordon_sandbox_read_file(sb, "d/f.txt", &got, &len, &err);
		free(got);
		r = r < 0 || len != sizeof(data) ? -1 : 0;
		break;
	case 2:
		r = cordon_sandbox_glob(sb, "d/*.txt", &paths, &err);
		cordon_strv_free(paths);
		break;
	default:
		r = cordon_sandbox_walk(sb, "", &paths, &err);
		cordon_strv_free(paths);
		break;
	}
	if (r < 0)
		die("file operation %d: %s", op,
		    err ? cordon_error_get_message(err) : "short read");
}

typedef struct holder {
	cordon_sandbox *sb;
	int cancel_fd;
	int held_fd; /* written once the run printed: it holds the channel */
} holder;

static int on_held(void *user, int stream, const void *data, size_t len)
{
	const holder *h = user;
	uint64_t one = 1;
	if (write(h->held_fd, &one, sizeof(one)) != sizeof(one))
		die("eventfd");
	return 0;
}

/* Holds the session channel with a run until cancel_fd is written. */
static gpointer hold_channel(gpointer data)
{
	holder *h = data;
	const char *argv[] = { "/bin/sh", "-c", "echo held; exec sleep 600", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.cancel_fd = h->cancel_fd;
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_stream(h->sb, argv, &o, on_held, h, &r, &err) == 0)
		cordon_result_free(r);
	else
		cordon_error_free(err);
	return NULL;
}

static const char *const file_op_names[] = { "write_file 4 KiB", "read_file 4 KiB", "glob",
					     "walk" };

static void bench_files(cordon_context *ctx, int n)
{
	cordon_sandbox *sb = open_tier(ctx, "box");
	double *chan[4], *exec[4];
	for (int op = 0; op < 4; op++) {
		chan[op] = g_new0(double, n);
		exec[op] = g_new0(double, n);
		file_op(sb, op); /* warm-up, and the file the others read */
	}
	for (int i = 0; i < n; i++)
		for (int op = 0; op < 4; op++) {
			double t0 = now_ms();
			file_op(sb, op);
			chan[op][i] = now_ms() - t0;
		}
	holder h = { sb, eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC) };
	GThread *th = g_thread_new("hold", hold_channel, &h);
	uint64_t held;
	if (read(h.held_fd, &held, sizeof(held)) != sizeof(held)) /* it holds the channel now */
		die("eventfd");
	for (int i = 0; i < n; i++)
		for (int op = 0; op < 4; op++) {
			double t0 = now_ms();
			file_op(sb, op);
			exec[op][i] = now_ms() - t0;
		}
	uint64_t one = 1;
	if (write(h.cancel_fd, &one, sizeof(one)) != sizeof(one))
		die("cancel");
	g_thread_join(th);
	close(h.cancel_fd);
	close(h.held_fd);
	for (int op = 0; op < 4; op++) {
		g_autofree char *a = g_strdup_printf("cordon %s over the channel",
						     file_op_names[op]);
		g_autofree char *b = g_strdup_printf("cordon %s through %s exec", file_op_names[op],
						     engine);
		report(a, b, chan[op], exec[op], n);
		g_free(chan[op]);
		g_free(exec[op]);
	}
	cordon_sandbox_close(sb);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

static void report(const char *what, const char *peer, double *a, double *b, int n)
{
	double am = pct(a, n, 0.5), ap = pct(a, n, 0.9);
	if (!b) {
		printf("%-44s median %8.1f ms  p90 %8.1f ms\n", what, am, ap);
		return;
	}
	double bm = pct(b, n, 0.5), bp = pct(b, n, 0.9);
	printf("%-44s median %8.1f ms  p90 %8.1f ms\n", what, am, ap);
	printf("%-44s median %8.1f ms  p90 %8.1f ms\n", peer, bm, bp);
	printf("%-44s %.2fx (overhead %+.0f%%)\n", "  ratio (median)", am / bm,
	       (am / bm - 1) * 100);
}

static bool copy_plugin(const char *builddir, const char *dir)
{
	g_autofree char *src = g_strdup_printf("%s/plugins/%s/.libs/%s.so", builddir, engine,
					       engine);
	g_autofree char *dst = g_strdup_printf("%s/%s.so", dir, engine);
	g_autofree char *data = NULL;
	gsize len;
	return g_file_get_contents(src, &data, &len, NULL) &&
	       g_file_set_contents(dst, data, (gssize)len, NULL) && chmod(dst, 0755) == 0;
}

/* Waits until the pool tier has n ready containers (none is in use here). */
static void wait_pool(int n)
{
	for (int i = 0; i < 600; i++) {
		g_autoptr(GPtrArray) a = engine_cmd();
		for (const char *const *f = (const char *const[]){ "ps", "-q", "--filter",
								   "label=cordon.tier=pool", NULL };
		     *f; f++)
			g_ptr_array_add(a, g_strdup(*f));
		g_autofree char *out = NULL;
		run_cmd(a, &out);
		g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
		if (*out && (int)g_strv_length(lines) >= n)
			return;
		g_usleep(100 * 1000);
	}
	die("the pool did not fill");
}

/* cycle, exec, pool and pooled: cordon against the raw engine, interleaved. */
static void bench_sessions(cordon_context *ctx, int n)
{
	double *a = g_new0(double, n), *b = g_new0(double, n);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++) {
			if ((i + k) % 2 == 0) {
				double t0 = now_ms();
				cordon_sandbox *sb = open_tier(ctx, "box");
				run_true(sb);
				cordon_sandbox_close(sb);
				a[i] = now_ms() - t0;
			} else {
				double t0 = now_ms();
				raw_cycle();
				b[i] = now_ms() - t0;
			}
		}
	}
	report("cordon open + run /bin/true + close", "raw run --rm (same flags) /bin/true", a, b,
	       n);

	/* exec in an open session vs a raw exec into an equivalent container */
	cordon_sandbox *sb = open_tier(ctx, "box");
	g_autofree char *raw_name = g_strdup_printf("cordon-bench-raw-%d", (int)getpid());
	{
		g_autoptr(GPtrArray) c = engine_cmd();
		char **args = hardened_run(NULL, raw_name);
		for (size_t i = 0; args[i]; i++)
			g_ptr_array_add(c, g_strdup(args[i]));
		xstrv_free(args);
		run_cmd(c, NULL);
	}
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++) {
			double t0 = now_ms();
			if ((i + k) % 2 == 0) {
				run_true(sb);
				a[i] = now_ms() - t0;
			} else {
				g_autoptr(GPtrArray) c = engine_cmd();
				g_ptr_array_add(c, g_strdup("exec"));
				g_ptr_array_add(c, g_strdup(raw_name));
				g_ptr_array_add(c, g_strdup("/bin/true"));
				run_cmd(c, NULL);
				b[i] = now_ms() - t0;
			}
		}
	}
	report("cordon run /bin/true in an open sandbox", "raw exec /bin/true", a, b, n);
	cordon_sandbox_close(sb);
	{
		g_autoptr(GPtrArray) c = engine_cmd();
		g_ptr_array_add(c, g_strdup("rm"));
		g_ptr_array_add(c, g_strdup("-f"));
		g_ptr_array_add(c, g_strdup(raw_name));
		run_cmd(c, NULL);
	}

	bench_files(ctx, n);

	/* pool: 2 -- the first open starts the filler */
	cordon_sandbox_close(open_tier(ctx, "pool"));
	for (int i = 0; i < n; i++) {
		wait_pool(2);
		double t0 = now_ms();
		cordon_sandbox *p = open_tier(ctx, "pool");
		a[i] = now_ms() - t0;
		cordon_sandbox_close(p);
	}
	report("cordon open with pool: 2", NULL, a, NULL, n);

	/* the whole cycle with the pool, against the raw cycle again; both start
	 * with the pool full, so neither pays for the refill's `run -d` (moved
	 * off the path, not removed: it runs between the measurements) */
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++) {
			wait_pool(2);
			double t0 = now_ms();
			if ((i + k) % 2 == 0) {
				cordon_sandbox *p = open_tier(ctx, "pool");
				run_true(p);
				cordon_sandbox_close(p);
				a[i] = now_ms() - t0;
			} else {
				raw_cycle();
				b[i] = now_ms() - t0;
			}
		}
	}
	report("cordon pool: 2 open + run /bin/true + close", "raw run --rm (same flags) /bin/true",
	       a, b, n);

	g_free(a);
	g_free(b);
}

int main(int argc, char **argv)
{
	int n = 10;
	bool only_files = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
			engine = argv[++i];
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc &&
			 strcmp(argv[i + 1], "files") == 0)
			only_files = ++i > 0;
		else
			die("usage: bench-containers [-n N] [--engine podman|docker] [--only "
			    "files]");
	}
	if (n < 3)
		n = 3;
	const char *state = g_getenv("CORDON_CI_STATE") ? g_getenv("CORDON_CI_STATE")
							: "/var/lib/cordon-ci";
	g_autofree char *ref_file = g_build_filename(state, "image-ref", NULL);
	if (!g_file_get_contents(ref_file, &image_ref, NULL, NULL))
		die("no %s: run .ci/engines.sh", ref_file);
	g_strstrip(image_ref);
	engine_bin = g_find_program_in_path(engine);
	if (!engine_bin)
		die("%s is not installed", engine);
	g_autofree char *cwd = g_get_current_dir();
	const char *builddir = g_getenv("CORDON_TOP_BUILDDIR") ? g_getenv("CORDON_TOP_BUILDDIR")
							       : cwd;
	helper = g_canonicalize_filename("agent/cordon-agent", builddir);
	g_autofree char *pdir = g_dir_make_tmp("cordon-bench-XXXXXX", NULL);
	if (!pdir || !copy_plugin(builddir, pdir))
		die("the %s plugin is not built (run from the build tree)", engine);
	g_autofree char *policy = policy_text(pdir);
	cordon_options *o = cordon_options_new();
	cordon_options_set_policy_text(o, policy, strlen(policy), "bench.yaml", NULL);
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	if (cordon_context_new(o, &ctx, &err) < 0)
		die("context: %s", cordon_error_get_message(err));
	cordon_options_free(o);

	printf("# %s, image %s, %d iterations, interleaved\n", engine, image_ref, n);
	/* warm-up: caches, the probe's one-time checks */
	cordon_sandbox *w = open_tier(ctx, "box");
	run_true(w);
	cordon_sandbox_close(w);
	raw_cycle();

	if (only_files)
		bench_files(ctx, n);
	else
		bench_sessions(ctx, n);
	cordon_context_free(ctx);
	g_autofree char *so = g_strdup_printf("%s/%s.so", pdir, engine);
	g_unlink(so);
	g_rmdir(pdir);
	return 0;
}
