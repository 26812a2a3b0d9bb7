/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One table of file and run cases against every tier this host has: the process jail, the
 * kernel tier, podman and docker, each also under gVisor. Every tier must give what the jail
 * gives: the same error codes and classes (and, for file operations, the same messages: one
 * implementation, common/fsops.c, serves them all), the same bytes, the same paths in the
 * same order, the same exit codes and flags. A case that differs prints both answers; the
 * suite fails at the first tier that differs anywhere.
 *
 * The remote tier joins as `e2b`: the e2b plugin against a `cordon server` this test starts
 * on a free loopback port, whose sandboxes run on the kernel tier (E2B's protocol end to
 * end, no mock).
 *
 * Real engines (.ci/engines.sh): as test-containers, it runs under CORDON_REQUIRE=all (CI,
 * where a missing tier is a failure) or CORDON_TEST_CONTAINERS=1, as root, and takes the
 * containers suite's lock (the daemon test there restarts dockerd).
 */
#include "config.h"

#include "testutil.h"
#include "vmguest.h"

#include <check.h>
#include <cordon/cordon.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOCK_PATH "/tmp/cordon-test-containers.lock"

/* The jail first: the reference every other tier is compared with. */
static const char *const tiers[] = { "jail",   "kernel",        "podman", "podman-gvisor",
				     "docker", "docker-gvisor", "vm",     "e2b" };

static char *image_ref;
static vmguest guest; /* the vm tier's (kvm, emulated: accel: tcg) */
/* cordon server for the e2b tier: its directory (keys, policies), pid and port. */
static char *server_dir;
static GPid server_pid;
static unsigned server_port;
static char *plugin_dir;
static char *policy;

/* ---- the table ------------------------------------------------------------------------- */

typedef enum op { READ, WRITE, GLOB, WALK, RUN } op;

typedef struct conf_case {
	const char *name;
	op op;
	const char *arg;     /* the path, pattern or directory; RUN: the shell line */
	const char *data;    /* WRITE: the data; RUN: the stdin (NULL: none) */
	size_t data_len;     /* with NUL bytes: its length; 0: strlen */
	const char *workdir; /* RUN */
	uint64_t timeout_ms; /* RUN; 0: the tier's */
	uint64_t output_cap; /* RUN; 0: the tier's */
} conf_case;

/* Planted before the table, by the work itself (so that every tier holds the same tree,
 * owned by whoever its work runs as): a few files, links that lead out, up, nowhere and
 * inside, a FIFO, and a tree deeper than FSOPS_MAX_DEPTH (64). */
static const char fixture[] =
	"set -e; mkdir -p d/e sub .hidden; printf 'hello' > f.txt; printf 'in d' > d/g.txt;"
	"printf 'e' > d/e/h.txt; printf 'sub' > sub/f; printf 'b' > b.txt; printf '.' > .dot;"
	"printf x > .hidden/x; ln -s /etc abs-link; ln -s ../.. up-link; ln -s sub/f rel-link;"
	"ln -s /nonexistent-cordon dangling; ln -s d dir-link; mkfifo fifo;"
	"p=deep; i=0; while [ $i -lt 70 ]; do p=$p/x; i=$((i+1)); done; mkdir -p $p;"
	"printf deep > $p/f";

static const conf_case cases[] = {
	/* read: escapes by name, through links, and what is not a file */
	{ "read a file", READ, "f.txt" },
	{ "read through a link inside", READ, "rel-link" },
	{ "read a/../b (stays inside)", READ, "sub/../f.txt" },
	{ "read ../ escape", READ, "../etc/passwd" },
	{ "read absolute", READ, "/etc/passwd" },
	{ "read a/../../ escape", READ, "d/../../etc/passwd" },
	{ "read through an absolute link", READ, "abs-link/passwd" },
	{ "read through a link that climbs", READ, "up-link/etc/passwd" },
	{ "read a dangling link", READ, "dangling" },
	{ "read a missing file", READ, "missing" },
	{ "read under a file", READ, "f.txt/x" },
	{ "read a directory", READ, "d" },
	{ "read a FIFO", READ, "fifo" },
	{ "read the root", READ, "." },
	/* write: atomic (read back whole), parents made, links never followed */
	{ "write a new file", WRITE, "new/dir/w.txt", "written\0bytes", 13 },
	{ "read it back", READ, "new/dir/w.txt" },
	{ "write over a file", WRITE, "f.txt", "replaced" },
	{ "read the replaced file", READ, "f.txt" },
	{ "write an empty file", WRITE, "empty", "" },
	{ "read the empty file", READ, "empty" },
	{ "write over a dangling link", WRITE, "dangling", "no target" },
	{ "read what replaced the link", READ, "dangling" },
	{ "write ../ escape", WRITE, "../escaped", "x" },
	{ "write absolute", WRITE, "/tmp/cordon-conformance-escaped", "x" },
	{ "write through an absolute link", WRITE, "abs-link/cordon-escaped", "x" },
	{ "write over a directory", WRITE, "d", "x" },
	{ "write under a file", WRITE, "f.txt/x", "x" },
	{ "write to the root", WRITE, ".", "x" },
	/* glob: one component per level, links by name, dot files only by a dot */
	{ "glob *", GLOB, "*" },
	{ "glob *.txt", GLOB, "*.txt" },
	{ "glob */*", GLOB, "*/*" },
	{ "glob d/*", GLOB, "d/*" },
	{ "glob d/*/*.txt", GLOB, "d/*/*.txt" },
	{ "glob .*", GLOB, ".*" },
	{ "glob [a-d]*", GLOB, "[a-d]*" },
	{ "glob through a link", GLOB, "dir-link/*" },
	{ "glob a literal", GLOB, "sub/f" },
	{ "glob nothing matches", GLOB, "zz*" },
	{ "glob ../ escape", GLOB, "../*" },
	{ "glob absolute", GLOB, "/etc/*" },
	{ "glob too deep", GLOB,
	  "deep/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/"
	  "x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/"
	  "x/x/*" },
	/* walk: regular files only, links neither listed nor followed, bounded in depth */
	{ "walk the root", WALK, "." },
	{ "walk d", WALK, "d" },
	{ "walk too deep", WALK, "deep" },
	{ "walk below the depth limit", WALK, "deep/x/x/x/x/x/x/x/x/x/x" },
	{ "walk a missing directory", WALK, "missing" },
	{ "walk a file", WALK, "f.txt" },
	{ "walk through a link", WALK, "dir-link" },
	{ "walk through an absolute link", WALK, "abs-link" },
	{ "walk ../", WALK, "../" },
	{ "walk absolute", WALK, "/etc" },
	/* runs: exit codes, signals, stdin, output caps, timeouts, workdirs */
	{ "run exit 0", RUN, "true" },
	{ "run exit 3", RUN, "exit 3" },
	{ "run exit 255", RUN, "exit 255" },
	{ "run killed by a signal", RUN, "kill -9 $$" },
	{ "run stdout and stderr", RUN, "printf out; printf err >&2" },
	{ "run binary output", RUN, "printf 'a\\000b\\377c'" },
	{ "run stdin", RUN, "cat", "line one\nline\0two", 17 },
	{ "run empty stdin", RUN, "cat; echo end", "" },
	{ "run no stdin", RUN, "cat; echo end" },
	{ "run output cap", RUN,
	  "i=0; while [ $i -lt 2000 ]; do printf 0123456789; i=$((i+1)); done", NULL, 0, NULL, 0,
	  1000 },
	{ "run timeout", RUN, "sleep 30", NULL, 0, NULL, 1000 },
	{ "run in a workdir", RUN, "cat g.txt", NULL, 0, "d" },
	{ "run in a linked workdir", RUN, "cat g.txt", NULL, 0, "dir-link" },
	{ "run in an escaping workdir", RUN, "true", NULL, 0, "../" },
	{ "run in a missing workdir", RUN, "true", NULL, 0, "missing" },
	{ "run a missing program", RUN, "exec /nonexistent-cordon-program" },
};

/* ---- one tier's answers ------------------------------------------------------------------ */

static void append_bytes(GString *s, const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)data[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			g_string_append_c(s, (char)c);
		else
			g_string_append_printf(s, "\\x%02x", c);
	}
}

static void append_error(GString *s, cordon_error *err, bool message)
{
	g_string_append_printf(s, "error %s class %d", err ? cordon_error_get_code(err) : "(none)",
			       err ? (int)cordon_error_get_class(err) : -1);
	if (err && message)
		g_string_append_printf(s, ": %s", cordon_error_get_message(err));
	cordon_error_free(err);
}

static void answer_paths(GString *s, int n, char **paths, cordon_error *err)
{
	if (n < 0) {
		append_error(s, err, true);
		return;
	}
	g_string_append_printf(s, "%d paths:", n);
	for (int i = 0; i < n; i++)
		g_string_append_printf(s, " %s", paths[i]);
	cordon_strv_free(paths);
}

static void answer_run(GString *s, cordon_sandbox *sb, const conf_case *c)
{
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.workdir = c->workdir;
	o.timeout_ms = c->timeout_ms;
	o.output_cap = c->output_cap;
	if (c->data) {
		o.stdin_data = c->data;
		o.stdin_len = c->data_len ? c->data_len : strlen(c->data);
	}
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_exec(sb, c->arg, &o, &r, &err) < 0) {
		/* the refusal's wording names the tier's own view of the path: codes only */
		append_error(s, err, false);
		return;
	}
	g_string_append_printf(s, "exit %d signal %d%s%s%s", cordon_result_exit_code(r),
			       cordon_result_signal(r),
			       cordon_result_timed_out(r) ? " timeout" : "",
			       cordon_result_truncated(r, 1) ? " truncated-out" : "",
			       cordon_result_truncated(r, 2) ? " truncated-err" : "");
	for (int stream = 1; stream <= 2; stream++) {
		size_t len;
		const char *data = cordon_result_output(r, stream, &len);
		/* a missing program's diagnostics are the shell's own (dash, busybox) */
		if (stream == 2 && g_str_has_prefix(c->arg, "exec /nonexistent"))
			data = "", len = 0;
		g_string_append_printf(s, " %s[", stream == 1 ? "out" : "err");
		append_bytes(s, data, len);
		g_string_append_c(s, ']');
	}
	cordon_result_free(r);
}

/* What the tier answers to one case, as one line. */
static char *answer(cordon_sandbox *sb, const conf_case *c)
{
	GString *s = g_string_new(NULL);
	cordon_error *err = NULL;
	char **paths = NULL;
	switch (c->op) {
	case READ: {
		void *data = NULL;
		size_t len = 0;
		if (cordon_sandbox_read_file(sb, c->arg, &data, &len, &err) < 0) {
			append_error(s, err, true);
		} else {
			g_string_append_printf(s, "%zu bytes: ", len);
			append_bytes(s, data, len);
			free(data);
		}
		break;
	}
	case WRITE:
		if (cordon_sandbox_write_file(sb, c->arg, c->data,
					      c->data_len ? c->data_len : strlen(c->data),
					      &err) < 0)
			append_error(s, err, true);
		else
			g_string_append(s, "written");
		break;
	case GLOB: {
		int n = cordon_sandbox_glob(sb, c->arg, &paths, &err);
		answer_paths(s, n, paths, err);
		break;
	}
	case WALK: {
		int n = cordon_sandbox_walk(sb, c->arg, &paths, &err);
		answer_paths(s, n, paths, err);
		break;
	}
	case RUN: answer_run(s, sb, c); break;
	}
	return g_string_free(s, FALSE);
}

static cordon_context *ctx_new(void)
{
	return testutil_context_from_text(policy, "conformance.yaml");
}

/* Every case's answer on one tier, in table order; the fixture planted first. */
static char **answers_of(cordon_context *ctx, const char *tier)
{
	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_request_set_tier(req, tier, NULL), 0);
	cordon_sandbox *sb = testutil_open(ctx, req, tier);
	cordon_error *err = NULL;
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_exec(sb, fixture, NULL, &res, &err), 0);
	ck_assert_msg(cordon_result_exit_code(res) == 0, "%s: the fixture failed: %s", tier,
		      cordon_result_output(res, 2, NULL));
	cordon_result_free(res);
	char **a = g_new0(char *, G_N_ELEMENTS(cases) + 1);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
		a[i] = answer(sb, &cases[i]);
	cordon_sandbox_close(sb);
	return a;
}

/* ---- the comparison ---------------------------------------------------------------------- */

static char **reference;

static char *build_policy(void);

START_TEST(test_tier_conforms)
{
	const char *tier = tiers[_i];
	cordon_context *ctx = ctx_new();
	char **got = answers_of(ctx, tier);
	cordon_context_free(ctx);
	if (_i == 0) {
		g_strfreev(reference);
		reference = got;
		for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
			printf("# %-34s %s\n", cases[i].name, got[i]);
		return;
	}
	ck_assert_msg(reference, "the jail's answers are missing (it runs first)");
	ck_assert_msg(policy, "no policy: the tiers are not available");
	size_t differ = 0;
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		if (strcmp(reference[i], got[i]) == 0)
			continue;
		differ++;
		printf("# %s differs on '%s':\n#   jail: %s\n#   %s: %s\n", tier, cases[i].name,
		       reference[i], tier, got[i]);
	}
	g_strfreev(got);
	ck_assert_msg(differ == 0, "%s differs from the jail in %zu of %zu cases (see the log)",
		      tier, differ, G_N_ELEMENTS(cases));
}
END_TEST

/* ---- setup ------------------------------------------------------------------------------- */

static void add_container_tier(GString *p, const char *name, const char *engine, const char *extra)
{
	g_autofree char *agent = testutil_build_path("agent/cordon-agent");
	g_string_append_printf(p, "  %s:\n    driver: %s\n    helper: %s\n    image: \"%s\"\n",
			       name, engine, agent, image_ref);
	if (strcmp(engine, "podman") == 0)
		g_string_append(p, "    cgroup_manager: cgroupfs\n");
	/* as test-containers: within this host's limits; under gVisor nproc is the pids limit */
	g_string_append_printf(p, "    ulimits: [nofile=1024:1024%s]\n",
			       strstr(extra, "runsc") ? "" : ", nproc=4096:4096");
	g_string_append(p, extra);
	g_string_append(p, "    limits: {memory: 256MiB, pids: 64, wall: 60s}\n");
}

static char *build_policy(void)
{
	GString *p = g_string_new(NULL);
	g_string_append_printf(p,
			       "cordon: 1\nplugins: {dir: %s, load: [docker, podman, kvm, e2b]}\n"
			       "tiers:\n",
			       plugin_dir);
	g_string_append(p, "  jail: {driver: local, confine: none, limits: {wall: 60s}}\n"
			   "  kernel: {driver: local, confine: kernel, limits: {memory: 256MiB, "
			   "pids: 64, wall: 60s}}\n");
	add_container_tier(p, "podman", "podman", "    runtime: runc\n");
	add_container_tier(p, "podman-gvisor", "podman",
			   "    runtime: runsc\n    runtime_flags: [network=none, oci-seccomp]\n");
	add_container_tier(p, "docker", "docker", "");
	add_container_tier(p, "docker-gvisor", "docker", "    runtime: runsc\n");
	g_autofree char *vm = vmguest_tier(&guest, "vm",
					   "    limits: {memory: 256MiB, pids: 64, "
					   "wall: 60s}\n");
	g_string_append(p, vm);
	g_string_append_printf(
		p,
		"  e2b:\n    driver: e2b\n    api_url: \"http://127.0.0.1:%u\"\n"
		"    sandbox_url: \"http://127.0.0.1:%u\"\n    api_key: {file: %s/key}\n"
		"    limits: {wall: 60s}\n",
		server_port, server_port, server_dir);
	g_string_append(p, "trust:\n  trusted: {require: process-jail, tiers: [jail, kernel, "
			   "podman, podman-gvisor, docker, docker-gvisor, vm, e2b]}\n");
	return g_string_free(p, FALSE);
}

/* What must be there for the suite to mean anything; NULL when all is. */
static char *missing_requirements(void)
{
	if (getuid() != 0)
		return g_strdup("the container tiers run as root (dockerd, podman with cgroupfs)");
	const char *state = g_getenv("CORDON_CI_STATE") ? g_getenv("CORDON_CI_STATE")
							: "/var/lib/cordon-ci";
	g_autofree char *ref_file = g_build_filename(state, "image-ref", NULL);
	if (!g_file_get_contents(ref_file, &image_ref, NULL, NULL))
		return g_strdup_printf("no pinned image at %s: run .ci/engines.sh", ref_file);
	g_strstrip(image_ref);
	g_autofree char *agent = testutil_build_path("agent/cordon-agent");
	if (access(agent, X_OK) != 0)
		return g_strdup_printf("%s is not built", agent);
	return vmguest_missing();
}

/* cordon server on a free loopback port, its sandboxes on the kernel tier; the port from
 * the line it prints once it listens. NULL when it runs, else why not. */
static char *start_server(void)
{
	server_dir = testutil_tmpdir();
	return testutil_server_start(server_dir, "e2b_00000000000000000000000000000000c0bd0c0bd",
				     &server_pid, &server_port);
}

static void stop_server(void)
{
	int status = 0;
	if (server_pid <= 0)
		return;
	kill(server_pid, SIGTERM);
	waitpid(server_pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "test-conformance: cordon server ended with status %d\n", status);
	testutil_rmtree(server_dir);
}

/* Every tier must be there: one that is not is a failure, not a smaller comparison. */
START_TEST(test_tiers_available)
{
	g_autofree char *why = vmguest_build(NULL, &guest);
	ck_assert_msg(!why, "%s", why);
	g_autofree char *no_server = start_server();
	ck_assert_msg(!no_server, "the e2b tier: %s", no_server);
	plugin_dir = testutil_plugin_dir("docker", "podman", "kvm", "e2b", NULL);
	policy = build_policy();
	cordon_context *ctx = ctx_new();
	for (size_t i = 0; i < G_N_ELEMENTS(tiers); i++) {
		cordon_probe_report *rep = NULL;
		cordon_error *err = NULL;
		/* a guest's trial boot under emulation may outlast the core's probe bound: the
		 * core keeps the answer that came late (and the kvm plugin its trial) */
		for (int tries = 0; tries < 60; tries++) {
			cordon_probe_report_free(rep);
			rep = NULL;
			ck_assert_msg(
				cordon_context_probe_tier(ctx, testutil_tier_index(ctx, tiers[i]),
							  &rep, &err) == 0,
				"tier %s: %s", tiers[i], err ? cordon_error_get_message(err) : "?");
			if (!strstr(cordon_probe_report_reason(rep), "the probe timed out"))
				break;
			g_usleep(G_USEC_PER_SEC);
		}
		ck_assert_msg(cordon_probe_report_available(rep), "tier %s is unavailable: %s",
			      tiers[i], cordon_probe_report_reason(rep));
		cordon_probe_report_free(rep);
	}
	cordon_context_free(ctx);
}
END_TEST

static Suite *conformance_suite(void)
{
	Suite *s = suite_create("conformance");
	TCase *tc = tcase_create("tiers");
	tcase_set_timeout(tc, 600);
	/* in order, in one process: the jail's answers are the reference */
	tcase_add_test(tc, test_tiers_available);
	tcase_add_loop_test(tc, test_tier_conforms, 0, (int)G_N_ELEMENTS(tiers));
	suite_add_tcase(s, tc);
	return s;
}

static int skip_or_fail(bool required, const char *why)
{
	if (required) {
		printf("Bail out! CORDON_REQUIRE=all: %s\n", why);
		return EXIT_FAILURE;
	}
	printf("1..0 # SKIP %s\n", why);
	return 0;
}

int main(void)
{
	bool required = g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") == 0;
	if (!required && g_strcmp0(g_getenv("CORDON_TEST_CONTAINERS"), "1") != 0)
		return skip_or_fail(false, "the conformance suite runs real engines: set "
					   "CORDON_TEST_CONTAINERS=1 (CI runs it with "
					   "CORDON_REQUIRE=all)");
	g_autofree char *why = missing_requirements();
	if (why)
		return skip_or_fail(required, why);
	int lock = open(LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		fprintf(stderr, "test-conformance: cannot lock %s\n", LOCK_PATH);
		return EXIT_FAILURE;
	}
	/* the jail's answers are kept across the loop: one process, in order */
	setenv("CK_FORK", "no", 1);
	int r = testutil_run(conformance_suite());
	testutil_rmtree(plugin_dir);
	vmguest_clear(&guest);
	stop_server();
	return r;
}
