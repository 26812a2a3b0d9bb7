/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Extra host directories (cordon_request_add_mount, issue 15 item 2) on the real kernel
 * tier, as root: a read-only mount reads and refuses writes, :rw writes land on the host,
 * the descriptor taken at open holds when the path is swapped for a link afterwards, and
 * every refusal (a link on the way, a forbidden tree, a bad inside path, :rw for untrusted
 * work or under a read-only rule, the jail) comes with its code before anything runs.
 */
#include "config.h"

#include "testutil.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char policy[] = "cordon: 1\n"
			     "tiers:\n"
			     "  jail: {driver: local, confine: none}\n"
			     "  kernel: {driver: local, confine: kernel}\n"
			     "trust:\n"
			     "  trusted: {require: process-jail, tiers: [jail, kernel]}\n"
			     "  semi-trusted: {require: kernel, tiers: [kernel]}\n"
			     "  untrusted: {require: kernel, relax: true, tiers: [kernel]}\n"
			     "rules:\n"
			     "  - name: read-only-please\n"
			     "    when: {labels: {team: ro}}\n"
			     "    require: {workspace: read-only}\n";

static cordon_context *ctx;
static char *dir; /* private: src/ (read-only mounts), out/ (writable, not root's) */

static void setup(void)
{
	ctx = testutil_context_from_text(policy, "test-mount");
	dir = testutil_tmpdir();
	g_autofree char *src = g_build_filename(dir, "src", NULL);
	g_autofree char *out = g_build_filename(dir, "out", NULL);
	g_autofree char *f = g_build_filename(src, "f", NULL);
	ck_assert_int_eq(mkdir(src, 0755), 0);
	ck_assert_int_eq(mkdir(out, 0755), 0);
	ck_assert(g_file_set_contents(f, "original\n", -1, NULL));
	/* A writable mount of root's is refused (the work's files would be root's). */
	ck_assert_int_eq(chown(out, 65534, 65534), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
}

static void teardown(void)
{
	testutil_rmtree(dir);
	g_free(dir);
	cordon_context_free(ctx);
}

static char *sub(const char *name) { return g_build_filename(dir, name, NULL); }

/* Opens trust's sandbox with one mount and runs sh -c script in it; the exit code,
 * stdout in *ret_out. Fails the test when the open does. */
static int run_in(const char *trust, const char *host, const char *inside, unsigned flags,
		  const char *script, char **ret_out)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new(trust);
	ck_assert_int_eq(cordon_request_add_mount(req, host, inside, flags, &err), 0);
	cordon_sandbox *sb = NULL;
	int r = cordon_sandbox_open(ctx, req, &sb, &err);
	ck_assert_msg(r == 0, "open: %s", cordon_error_get_message(err));
	cordon_request_free(req);
	const char *argv[] = { "sh", "-c", script, NULL };
	cordon_result *res = NULL;
	r = cordon_sandbox_run(sb, argv, NULL, &res, &err);
	ck_assert_msg(r == 0, "run: %s", cordon_error_get_message(err));
	int code = cordon_result_exit_code(res);
	if (ret_out)
		*ret_out = g_strdup(cordon_result_output(res, 1, NULL));
	cordon_result_free(res);
	cordon_sandbox_close(sb);
	return code;
}

/* The open of trust's request with one mount fails with code; nothing ran. */
static void open_refused(const char *trust, const char *label, const char *host, const char *inside,
			 unsigned flags, cordon_error_class cls, const char *code)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new(trust);
	if (label)
		ck_assert_int_eq(cordon_request_add_label(req, "team", label, &err), 0);
	ck_assert_int_eq(cordon_request_add_mount(req, host, inside, flags, &err), 0);
	cordon_sandbox *sb = NULL;
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_ptr_null(sb);
	ck_assert_msg(err && strcmp(cordon_error_get_code(err), code) == 0, "%s: %s",
		      err ? cordon_error_get_code(err) : "-",
		      err ? cordon_error_get_message(err) : "no error");
	ck_assert_cordon_error(err, cls, code);
	cordon_request_free(req);
}

START_TEST(test_read_only_mount_reads_and_refuses_writes)
{
	g_autofree char *src = sub("src");
	g_autofree char *out = NULL;
	ck_assert_int_eq(run_in("semi-trusted", src, "/tmp/in", 0, "cat /tmp/in/f", &out), 0);
	ck_assert_str_eq(out, "original\n");
	ck_assert_int_ne(run_in("semi-trusted", src, "/tmp/in", 0,
				"echo x > /tmp/in/new || exit 9; exit 0", NULL),
			 0);
	g_autofree char *planted = sub("src/new");
	ck_assert(!g_file_test(planted, G_FILE_TEST_EXISTS));
}
END_TEST

START_TEST(test_writable_mount_writes_land_on_the_host)
{
	g_autofree char *out = sub("out");
	ck_assert_int_eq(run_in("semi-trusted", out, "/tmp/o", CORDON_MOUNT_RW,
				"echo written > /tmp/o/w", NULL),
			 0);
	g_autofree char *w = sub("out/w");
	g_autofree char *text = NULL;
	ck_assert(g_file_get_contents(w, &text, NULL, NULL));
	ck_assert_str_eq(text, "written\n");
}
END_TEST

/* The path is swapped for a link to /etc after the open: the work still sees the
 * directory that was checked, never /etc. */
START_TEST(test_descriptor_holds_after_a_swap)
{
	g_autofree char *src = sub("src");
	g_autofree char *moved = sub("moved");
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("semi-trusted");
	ck_assert_int_eq(cordon_request_add_mount(req, src, "/tmp/in", 0, &err), 0);
	cordon_sandbox *sb = NULL;
	int r = cordon_sandbox_open(ctx, req, &sb, &err);
	ck_assert_msg(r == 0, "open: %s", cordon_error_get_message(err));
	cordon_request_free(req);
	ck_assert_int_eq(rename(src, moved), 0);
	ck_assert_int_eq(symlink("/etc", src), 0);
	const char *argv[] = { "sh", "-c", "cat /tmp/in/f; test ! -e /tmp/in/passwd", NULL };
	cordon_result *res = NULL;
	r = cordon_sandbox_run(sb, argv, NULL, &res, &err);
	ck_assert_msg(r == 0, "run: %s", cordon_error_get_message(err));
	ck_assert_int_eq(cordon_result_exit_code(res), 0);
	ck_assert_str_eq(cordon_result_output(res, 1, NULL), "original\n");
	cordon_result_free(res);
	cordon_sandbox_close(sb);
}
END_TEST

START_TEST(test_links_and_forbidden_trees_are_refused)
{
	g_autofree char *src = sub("src");
	g_autofree char *link = sub("link");
	ck_assert_int_eq(symlink(src, link), 0);
	open_refused("semi-trusted", NULL, link, "/tmp/in", 0, CORDON_ERROR_FORBIDDEN,
		     "mount_forbidden");
	g_autofree char *below = g_build_filename(src, "..", "src", NULL);
	open_refused("semi-trusted", NULL, below, "/tmp/in", 0, CORDON_ERROR_INVALID,
		     "mount_invalid");
	open_refused("semi-trusted", NULL,
		     g_file_test("/etc/ssh", G_FILE_TEST_IS_DIR) ? "/etc/ssh" : "/etc", "/tmp/in",
		     0, CORDON_ERROR_FORBIDDEN, "mount_forbidden");
	/* / holds everything the list protects. */
	open_refused("semi-trusted", NULL, "/", "/tmp/in", 0, CORDON_ERROR_FORBIDDEN,
		     "mount_forbidden");
}
END_TEST

START_TEST(test_writable_refused_for_untrusted_and_read_only_rules)
{
	g_autofree char *out = sub("out");
	open_refused("untrusted", NULL, out, "/tmp/o", CORDON_MOUNT_RW, CORDON_ERROR_FORBIDDEN,
		     "mount_writable");
	open_refused("semi-trusted", "ro", out, "/tmp/o", CORDON_MOUNT_RW, CORDON_ERROR_FORBIDDEN,
		     "mount_writable");
	/* Read-only is fine for both. */
	ck_assert_int_eq(run_in("untrusted", out, "/tmp/o", 0, "true", NULL), 0);
}
END_TEST

/* The jail cannot mount: admission passes over it (explain agrees), and a request for
 * the jail alone is refused mount_unsupported. */
START_TEST(test_the_jail_refuses)
{
	g_autofree char *src = sub("src");
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_request_add_mount(req, src, "/tmp/in", 0, &err), 0);
	cordon_decision *d = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), 0);
	ck_assert_str_eq(cordon_decision_tier(d), "kernel");
	cordon_decision_free(d);
	ck_assert_int_eq(cordon_request_set_tier(req, "jail", &err), 0);
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "mount_unsupported");
	cordon_decision_free(d);
	cordon_sandbox *sb = NULL;
	ck_assert_int_eq(cordon_sandbox_open(ctx, req, &sb, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "mount_unsupported");
	cordon_request_free(req);
}
END_TEST

START_TEST(test_inside_paths_are_checked)
{
	static const char *const bad[] = { "data",    "/a/../etc",  "/a/./b", "/",
					   "/proc",   "/proc/self", "/dev",   "/dev/shm/x",
					   "/sys/fs", "//proc",     "/x:y" };
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_error *err = NULL;
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		ck_assert_msg(cordon_request_add_mount(req, "/srv", bad[i], 0, &err) < 0, "%s",
			      bad[i]);
		ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "mount_invalid");
	}
	ck_assert_int_lt(cordon_request_add_mount(req, "srv", "/data", 0, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "mount_invalid");
	ck_assert_int_lt(cordon_request_add_mount(req, "/srv", "/data", 4, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "mount_invalid");
	ck_assert_int_eq(cordon_request_add_mount(req, "/srv", "/data//x/", 0, &err), 0);
	ck_assert_int_lt(cordon_request_add_mount(req, "/srv", "/data/x", 0, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "mount_invalid");
	for (int i = 1; i < 16; i++) {
		char in[32];
		snprintf(in, sizeof(in), "/m%d", i);
		ck_assert_int_eq(cordon_request_add_mount(req, "/srv", in, 0, &err), 0);
	}
	ck_assert_int_lt(cordon_request_add_mount(req, "/srv", "/one-too-many", 0, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "mount_invalid");
	cordon_request_free(req);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mount");
	TCase *api = tcase_create("api");
	tcase_add_test(api, test_inside_paths_are_checked);
	suite_add_tcase(s, api);
	if (geteuid() != 0) {
		/* The kernel tier binds mounts as root only (docs/policy.md, "Mounts"). */
		printf("1..0 # SKIP the kernel tier gives mounts only as root\n");
		return getenv("CORDON_REQUIRE") ? 1 : 77;
	}
	TCase *k = tcase_create("kernel");
	tcase_add_checked_fixture(k, setup, teardown);
	tcase_set_timeout(k, 60);
	tcase_add_test(k, test_read_only_mount_reads_and_refuses_writes);
	tcase_add_test(k, test_writable_mount_writes_land_on_the_host);
	tcase_add_test(k, test_descriptor_holds_after_a_swap);
	tcase_add_test(k, test_links_and_forbidden_trees_are_refused);
	tcase_add_test(k, test_writable_refused_for_untrusted_and_read_only_rules);
	tcase_add_test(k, test_the_jail_refuses);
	suite_add_tcase(s, k);
	return testutil_run_on_tier("kernel", s);
}
