/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit trail: one valid JSON line per decision, no interleaving under
 * threads and processes, no secret values, 0600, and fail-closed when the
 * policy requires the trail. */
#include "config.h"

#include "testutil.h"
#include "audit.h"
#include "fakectx.h"
#include "jsoncheck.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define PER_THREAD 1000

static char *policy_with_audit(const char *path, const char *required)
{
	return g_strdup_printf(
		"cordon: 1\ntiers:\n"
		"  a: {driver: tfake, containment: kernel, open_fails: terminal,\n"
		"      egress: {allow: [pypi.org]}}\n"
		"  v: {driver: tfake, containment: microvm, available: false, reason: no kvm}\n"
		"trust:\n  trusted: {tiers: [a]}\n  untrusted: {tiers: [v]}\n"
		"audit: {path: %s%s%s}\n",
		path, required ? ", required: " : "", required ? required : "");
}

static cordon_context *open_ctx(const char *policy)
{
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(fakectx_open(policy, &ctx, &err) == 0, "%s", err ? err->message : "?");
	return ctx;
}

/* Every line of the file, checked to be one JSON object each. */
static GStrv read_lines(const char *path, guint *ret_count)
{
	g_autofree char *text = NULL;
	gsize len = 0;
	ck_assert(g_file_get_contents(path, &text, &len, NULL));
	ck_assert_msg(len == 0 || text[len - 1] == '\n', "the file does not end with a newline");
	if (len)
		text[len - 1] = '\0';
	GStrv lines = len ? g_strsplit(text, "\n", -1) : g_new0(char *, 1);
	guint n = g_strv_length(lines);
	for (guint i = 0; i < n; i++)
		ck_assert_msg(json_is_valid(lines[i]) && lines[i][0] == '{',
			      "line %u is not a JSON object: %s", i + 1, lines[i]);
	*ret_count = n;
	return lines;
}

static cordon_request *busy_request(const char *trust, int i)
{
	cordon_request *req = cordon_request_new(trust);
	g_autofree char *v = g_strdup_printf(
		"%d-%s", i,
		"padding-to-make-the-line-longer-than-a-page-"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	cordon_request_add_label(req, "job", v, NULL);
	cordon_request_add_label(req, "quote", "a \"b\" \\ c", NULL);
	cordon_request_grant_env(req, "API_TOKEN", "s3cr3t-value-never-logged", NULL);
	return req;
}

START_TEST(test_line_content)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *path = g_build_filename(dir, "audit.jsonl", NULL);
	g_autofree char *policy = policy_with_audit(path, NULL);
	cordon_context *ctx = open_ctx(policy);
	cordon_request *req = busy_request("trusted", 1);
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, 1 << 20, NULL);
	/* A directory that exists: the core checks the workspace before the driver. */
	cordon_request_set_workspace(req, dir, NULL);
	cordon_request_set_image(req, "alpine:3", NULL);
	cordon_request_set_egress(req, CORDON_EGRESS_GOVERNED, NULL);
	ck_assert_int_eq(cordon_decide(ctx, req, NULL, NULL), 0);
	cordon_request *untr = busy_request("bogus", 2);
	ck_assert_int_eq(cordon_decide(ctx, untr, NULL, NULL), -EPERM);
	/* An open is audited as a real decision (tier a's open then fails: open_fails). */
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "engine_failed");

	guint n = 0;
	g_auto(GStrv) lines = read_lines(path, &n);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_nonnull(strstr(lines[2], "\"dry_run\":false"));
	static const char *const admitted[] = {
		"\"dry_run\":true",
		"\"policy\":\"test.yaml\"",
		"\"policy_sha256\":\"",
		"\"request\":{\"trust\":\"trusted\",\"tier\":null,\"labels\":{\"job\":\"1-padding",
		"\"quote\":\"a \\\"b\\\" \\\\ c\"",
		"\"limits\":{\"memory\":1048576}",
		"\"egress\":\"governed\"",
		"\"image\":\"alpine:3\"",
		"\"env\":[\"API_TOKEN\"]",
		"\"admitted\":true",
		"\"requirement\":\"process-jail\"",
		"\"tier\":\"a\"",
		"\"containment\":\"kernel\"",
		"\"verdict\":\"chosen\"",
		NULL,
	};
	for (int i = 0; admitted[i]; i++)
		ck_assert_msg(strstr(lines[0], admitted[i]), "line 1 lacks %s: %s", admitted[i],
			      lines[0]);
	g_autofree char *ws = g_strdup_printf("\"workspace\":\"%s\"", dir);
	ck_assert_msg(strstr(lines[0], ws), "line 1 lacks %s: %s", ws, lines[0]);
	ck_assert(g_str_has_prefix(lines[0], "{\"time\":\""));
	/* RFC 3339, UTC: 2026-11-30T00:42:01.123456Z */
	ck_assert_int_eq(lines[0][9 + 10], 'T');
	ck_assert_int_eq(lines[0][9 + 26], 'Z');
	static const char *const refused[] = {
		"\"trust\":\"bogus\"",
		"\"trust\":\"untrusted\"",
		"\"admitted\":false",
		"\"code\":\"containment_insufficient\"",
		"\"requirement\":\"microvm\"",
		"\"reason\":\"unavailable: no kvm\"",
		"\"tier\":null",
		NULL,
	};
	for (int i = 0; refused[i]; i++)
		ck_assert_msg(strstr(lines[1], refused[i]), "line 2 lacks %s: %s", refused[i],
			      lines[1]);

	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	cordon_request_free(req);
	cordon_request_free(untr);
	cordon_context_free(ctx);
	testutil_rmtree(dir);
}
END_TEST

typedef struct worker {
	cordon_context *ctx;
	int id;
	int failures;
} worker;

static gpointer decide_many(gpointer data)
{
	worker *w = data;
	for (int i = 0; i < PER_THREAD; i++) {
		cordon_request *req = busy_request(i % 2 ? "trusted" : "untrusted",
						   w->id * PER_THREAD + i);
		int r = cordon_decide(w->ctx, req, NULL, NULL);
		if (r != (i % 2 ? 0 : -EPERM))
			w->failures++;
		cordon_request_free(req);
	}
	return NULL;
}

static void check_no_secret(const char *path)
{
	g_autofree char *text = NULL;
	ck_assert(g_file_get_contents(path, &text, NULL, NULL));
	ck_assert_ptr_null(strstr(text, "s3cr3t"));
	ck_assert_ptr_nonnull(strstr(text, "API_TOKEN"));
}

START_TEST(test_threads)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *path = g_build_filename(dir, "audit.jsonl", NULL);
	g_autofree char *policy = policy_with_audit(path, "true");
	cordon_context *ctx = open_ctx(policy);
	worker w[THREADS];
	GThread *t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker){ ctx, i, 0 };
		t[i] = g_thread_new("decide", decide_many, &w[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		g_thread_join(t[i]);
		ck_assert_int_eq(w[i].failures, 0);
	}
	guint n = 0;
	g_auto(GStrv) lines = read_lines(path, &n);
	ck_assert_int_eq(n, THREADS * PER_THREAD);
	/* Every decision is there exactly once. */
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (guint i = 0; i < n; i++) {
		const char *job = strstr(lines[i], "\"job\":\"");
		ck_assert_ptr_nonnull(job);
		g_autofree char *id = g_strndup(job + 7, strcspn(job + 7, "-"));
		ck_assert_msg(g_hash_table_add(seen, g_steal_pointer(&id)),
			      "a decision appears twice");
	}
	ck_assert_int_eq(g_hash_table_size(seen), THREADS * PER_THREAD);
	check_no_secret(path);
	cordon_context_free(ctx);
	testutil_rmtree(dir);
}
END_TEST

START_TEST(test_processes)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *path = g_build_filename(dir, "audit.jsonl", NULL);
	g_autofree char *policy = policy_with_audit(path, "true");
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	/* Two processes, each with its own context (and its own thread lock):
	 * only the file lock and O_APPEND keep their lines apart. */
	cordon_context *ctx = open_ctx(policy);
	worker w = { ctx, child == 0 ? 1 : 2, 0 };
	decide_many(&w);
	cordon_context_free(ctx);
	if (child == 0) {
		/* _exit skips the cleanup attributes: free first (leak checkers). */
		g_clear_pointer(&policy, g_free);
		g_clear_pointer(&path, g_free);
		g_clear_pointer(&dir, g_free);
		_exit(w.failures ? 1 : 0);
	}
	int status = 0;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(w.failures, 0);
	guint n = 0;
	g_auto(GStrv) lines = read_lines(path, &n);
	ck_assert_int_eq(n, 2 * PER_THREAD);
	check_no_secret(path);
	testutil_rmtree(dir);
}
END_TEST

START_TEST(test_required_fails_closed)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *missing = g_build_filename(dir, "no-such-dir", "audit.jsonl", NULL);
	g_autofree char *policy = policy_with_audit(missing, NULL); /* required by default */
	cordon_context *ctx = open_ctx(policy);
	cordon_request *req = cordon_request_new("trusted");
	cordon_decision *d = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), -ENOENT);
	ck_assert(!cordon_decision_admitted(d));
	ck_assert_ptr_null(cordon_decision_tier(d));
	ck_assert_str_eq(cordon_decision_code(d), "audit_failed");
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "cannot be written"));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "audit_failed");
	cordon_decision_free(d);
	/* sandbox_open goes through the same admission: nothing opens. */
	cordon_sandbox *sb = NULL;
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_ptr_null(sb);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "audit_failed");
	/* A refusal stays the refusal it was. */
	cordon_request *untr = cordon_request_new("untrusted");
	ck_assert_int_eq(cordon_decide(ctx, untr, NULL, &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "containment_insufficient");
	cordon_context_free(ctx);

	/* required: false: the failure is logged at debug and admission proceeds. */
	g_autofree char *lax = policy_with_audit(missing, "false");
	ctx = open_ctx(lax);
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), 0);
	ck_assert_str_eq(cordon_decision_tier(d), "a");
	cordon_decision_free(d);
	cordon_context_free(ctx);
	cordon_request_free(req);
	cordon_request_free(untr);
	testutil_rmtree(dir);
}
END_TEST

START_TEST(test_refuses_links_and_odd_files)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *target = g_build_filename(dir, "elsewhere", NULL);
	g_autofree char *link = g_build_filename(dir, "audit.jsonl", NULL);
	ck_assert(g_file_set_contents(target, "", 0, NULL));
	ck_assert_int_eq(symlink(target, link), 0);
	g_autofree char *policy = policy_with_audit(link, NULL);
	cordon_context *ctx = open_ctx(policy);
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_decide(ctx, req, NULL, &err), 0);
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "symbolic link"));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "audit_failed");
	cordon_context_free(ctx);

	g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	g_autofree char *fpolicy = policy_with_audit(fifo, NULL);
	ctx = open_ctx(fpolicy);
	ck_assert_int_lt(cordon_decide(ctx, req, NULL, &err), 0); /* and never blocks */
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "audit_failed");
	cordon_context_free(ctx);

	/* A directory is refused with the policy, before any work. */
	g_autofree char *dpolicy = policy_with_audit(dir, NULL);
	ck_assert_int_lt(fakectx_open(dpolicy, &ctx, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_path");

	/* An existing file keeps its mode and gets appended to. */
	g_autofree char *existing = g_build_filename(dir, "existing.jsonl", NULL);
	ck_assert(g_file_set_contents(existing, "{\"earlier\":1}\n", -1, NULL));
	ck_assert_int_eq(chmod(existing, 0640), 0);
	g_autofree char *epolicy = policy_with_audit(existing, NULL);
	ctx = open_ctx(epolicy);
	ck_assert_int_eq(cordon_decide(ctx, req, NULL, NULL), 0);
	guint n = 0;
	g_auto(GStrv) lines = read_lines(existing, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(lines[0], "{\"earlier\":1}");
	struct stat st;
	ck_assert_int_eq(stat(existing, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	cordon_context_free(ctx);
	cordon_request_free(req);
	testutil_rmtree(dir);
}
END_TEST

/* Review of issue 10 (finding 9): a trail someone else owns or could
 * change, or in a directory they could change, is refused like an untrusted
 * policy file (filetrust.c), nothing written; audit.required decides whether
 * admission goes on. As root another user's file and directory; as anyone a
 * world-writable file, a hard-linked one and a world-writable directory. */
static void assert_trail_refused(const char *path, const char *why)
{
	g_autofree char *policy = policy_with_audit(path, NULL);
	cordon_context *ctx = open_ctx(policy);
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_decide(ctx, req, NULL, &err), 0);
	ck_assert_msg(strstr(cordon_error_get_message(err), why), "%s: %s", path,
		      cordon_error_get_message(err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "audit_failed");
	cordon_context_free(ctx);
	g_autofree char *lax = policy_with_audit(path, "false");
	ctx = open_ctx(lax);
	ck_assert_int_eq(cordon_decide(ctx, req, NULL, NULL), 0);
	cordon_context_free(ctx);
	cordon_request_free(req);
	g_autofree char *text = NULL;
	if (g_file_get_contents(path, &text, NULL, NULL))
		ck_assert_msg(!strstr(text, "trusted"), "%s was written to", path);
}

START_TEST(test_refuses_untrusted_trail)
{
	g_autofree char *dir = testutil_tmpdir();
	ck_assert_int_eq(chmod(dir, 0755), 0);
	g_autofree char *open_file = g_build_filename(dir, "open.jsonl", NULL);
	ck_assert(g_file_set_contents(open_file, "", 0, NULL));
	ck_assert_int_eq(chmod(open_file, 0666), 0);
	assert_trail_refused(open_file, "world-writable");

	g_autofree char *linked = g_build_filename(dir, "linked.jsonl", NULL);
	g_autofree char *other = g_build_filename(dir, "other-name", NULL);
	ck_assert(g_file_set_contents(linked, "", 0, NULL));
	ck_assert_int_eq(link(linked, other), 0);
	assert_trail_refused(linked, "hard links");

	g_autofree char *wdir = g_build_filename(dir, "open-dir", NULL);
	ck_assert_int_eq(mkdir(wdir, 0777), 0);
	ck_assert_int_eq(chmod(wdir, 0777), 0);
	g_autofree char *in_wdir = g_build_filename(wdir, "audit.jsonl", NULL);
	assert_trail_refused(in_wdir, "without the sticky bit");
	ck_assert_int_eq(access(in_wdir, F_OK), -1); /* nothing created there */

	if (geteuid() == 0) {
		g_autofree char *theirs = g_build_filename(dir, "theirs.jsonl", NULL);
		ck_assert(g_file_set_contents(theirs, "", 0, NULL));
		ck_assert_int_eq(chmod(theirs, 0600), 0);
		ck_assert_int_eq(chown(theirs, 1000, 1000), 0);
		assert_trail_refused(theirs, "owned by uid 1000");

		g_autofree char *udir = g_build_filename(dir, "user-dir", NULL);
		ck_assert_int_eq(mkdir(udir, 0755), 0);
		ck_assert_int_eq(chown(udir, 1000, 1000), 0);
		g_autofree char *in_udir = g_build_filename(udir, "audit.jsonl", NULL);
		assert_trail_refused(in_udir, "owned by uid 1000");
		ck_assert_int_eq(access(in_udir, F_OK), -1);
	}
	testutil_rmtree(dir);
}
END_TEST

START_TEST(test_no_audit_configured)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers: {a: {driver: tfake, containment: kernel}}\n"
		"trust: {trusted: {tiers: [a]}}\n");
	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_decide(ctx, req, NULL, NULL), 0);
	ck_assert_int_eq(audit_record(ctx, req, NULL, NULL),
			 0); /* nothing to write, nothing read */
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

static Suite *audit_suite(void)
{
	Suite *s = suite_create("audit");
	TCase *tc = tcase_create("trail");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_line_content);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_processes);
	tcase_add_test(tc, test_required_fails_closed);
	tcase_add_test(tc, test_refuses_links_and_odd_files);
	tcase_add_test(tc, test_refuses_untrusted_trail);
	tcase_add_test(tc, test_no_audit_configured);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(audit_suite()); }
