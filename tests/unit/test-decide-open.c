/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Explain equals open (issue 15, items 4, 6, 7): cordon_decide and cordon_sandbox_open agree
 * on random requests (limits a tier cannot enforce, tiers that cannot open, rules in every
 * mode); fallback: next, with both decisions audited; capped claims; rule modes. Tiers come
 * from the in-process fake drivers of tests/fakectx.c. */
#include "config.h"

#include "testutil.h"
#include "admission.h"
#include "fakectx.h"
#include "jsoncheck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const char *const cont_names[] = { NULL,        "process-jail",     "kernel",
					  "container", "userspace-kernel", "microvm",
					  "remote" };
static const char *const trust_names[] = { NULL, "trusted", "semi-trusted", "untrusted" };
static const char *const limit_words[] = { "wall", "memory", "pids", "cpus" };
static const char *const mode_names[] = { "enforce", "warn", "audit" };

static cordon_context *open_ctx(const char *policy)
{
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	int r = fakectx_open(policy, &ctx, &err);
	ck_assert_msg(r == 0, "context: %s\n%s", err ? err->message : "?", policy);
	return ctx;
}

/* ---- random requests through both ------------------------------------------------------- */

/* The policy's services: one, its secret from the environment (set in main). */
#define SERVICES \
	"secrets: {K: {env: CORDON_TEST_SERVICE_KEY}}\nservices:\n" \
	"  - {name: api, upstream: \"https://localhost:9/v1\", inject: {header: Authorization, " \
	"value: \"Bearer ${secret:K}\"}}\n"

/* A policy of 1 to 5 tiers: tfake (enforcing a random subset of four limits, or all; whose
 * sandboxes can listen for services or not) or tfake-noop (no open, no listen), random
 * containment and availability, a tier limit sometimes, a label rule in a random mode, and
 * services sometimes. */
static char *random_policy(GRand *rng, int trust)
{
	GString *p = g_string_new("cordon: 1\nallow_untrusted_on_jail: true\n"
				  "allow_semi_trusted_on_jail: true\n");
	g_string_append_printf(p, "select: %s\ntiers:\n",
			       g_rand_boolean(rng) ? "first" : "strongest");
	int n = g_rand_int_range(rng, 1, 6);
	for (int i = 0; i < n; i++) {
		bool noop = g_rand_int_range(rng, 0, 4) == 0;
		g_string_append_printf(p, "  t%d: {driver: %s, containment: %s, available: %s", i,
				       noop ? FAKECTX_NOOP_DRIVER : FAKECTX_DRIVER,
				       cont_names[g_rand_int_range(rng, 1, 7)],
				       g_rand_int_range(rng, 0, 5) ? "true" : "false");
		if (!noop && g_rand_boolean(rng)) {
			g_string_append(p, ", enforces: [");
			for (int k = 0, first = 1; k < 4; k++)
				if (g_rand_boolean(rng)) {
					g_string_append_printf(p, "%s%s", first ? "" : ", ",
							       limit_words[k]);
					first = 0;
				}
			g_string_append(p, "]");
		}
		if (g_rand_int_range(rng, 0, 4) == 0)
			g_string_append(p, ", limits: {pids: 64}");
		if (g_rand_boolean(rng))
			g_string_append(p, ", listens: true");
		g_string_append(p, "}\n");
	}
	g_string_append_printf(p, "trust:\n  %s: {require: process-jail, relax: true, tiers: [",
			       trust_names[trust]);
	for (int i = 0; i < n; i++)
		g_string_append_printf(p, "%st%d", i ? ", " : "", i);
	g_string_append(p, "]}\n");
	if (g_rand_boolean(rng))
		g_string_append_printf(p,
				       "rules:\n  - {name: lab, mode: %s, when: {labels: {k: v}}, "
				       "deny: true}\n",
				       mode_names[g_rand_int_range(rng, 0, 3)]);
	if (g_rand_int_range(rng, 0, 3) == 0)
		g_string_append(p, SERVICES);
	return g_string_free(p, FALSE);
}

static cordon_request *random_request(GRand *rng, int trust, int ntiers)
{
	cordon_request *req = cordon_request_new(trust_names[trust]);
	static const cordon_limit limits[] = { CORDON_LIMIT_WALL_MS, CORDON_LIMIT_MEMORY,
					       CORDON_LIMIT_PIDS, CORDON_LIMIT_CPU_MILLI };
	for (unsigned k = 0; k < G_N_ELEMENTS(limits); k++)
		if (g_rand_int_range(rng, 0, 3) == 0)
			ck_assert_int_eq(cordon_request_set_limit(req, limits[k], 1000, NULL), 0);
	if (g_rand_boolean(rng))
		ck_assert_int_eq(cordon_request_add_label(req, "k", "v", NULL), 0);
	if (g_rand_int_range(rng, 0, 4) == 0) {
		g_autofree char *t = g_strdup_printf("t%d", g_rand_int_range(rng, 0, ntiers + 1));
		ck_assert_int_eq(cordon_request_set_tier(req, t, NULL), 0);
	}
	return req;
}

START_TEST(test_explain_equals_open)
{
	GRand *rng = g_rand_new_with_seed(20261202);
	unsigned admitted = 0, refused = 0, before = fakectx_open_count();
	for (int iter = 0; iter < 400; iter++) {
		int trust = g_rand_int_range(rng, 1, 4);
		g_autofree char *policy = random_policy(rng, trust);
		cordon_context *ctx = open_ctx(policy);
		cordon_request *req = random_request(rng, trust, 5);
		cordon_decision *d = NULL;
		cordon_error *derr = NULL, *oerr = NULL;
		int dr = cordon_decide(ctx, req, &d, &derr);
		cordon_sandbox *sb = NULL;
		int orr = cordon_sandbox_open(ctx, req, &sb, &oerr);
		ck_assert_msg((dr == 0) == (orr == 0),
			      "iteration %d: explain %s, open %s\n%s\nexplain: %s\nopen: %s", iter,
			      dr == 0 ? "admits" : "refuses", orr == 0 ? "opens" : "fails", policy,
			      derr ? derr->message : cordon_decision_tier(d),
			      oerr ? oerr->message : cordon_sandbox_tier(sb));
		if (dr == 0) {
			ck_assert_str_eq(cordon_decision_tier(d), cordon_sandbox_tier(sb));
			ck_assert_int_eq(cordon_decision_containment(d),
					 cordon_sandbox_containment(sb));
			admitted++;
		} else {
			/* Refused alike: the same forbidden code, before any driver opened. */
			ck_assert_str_eq(cordon_error_get_code(derr), cordon_error_get_code(oerr));
			refused++;
		}
		char *json = cordon_decision_to_json(d);
		ck_assert_msg(json_is_valid(json), "invalid JSON: %s", json);
		free(json);
		cordon_sandbox_close(sb);
		cordon_error_free(derr);
		cordon_error_free(oerr);
		cordon_decision_free(d);
		cordon_request_free(req);
		cordon_context_free(ctx);
	}
	/* Both outcomes drawn often enough to mean something, and opens really tried. */
	ck_assert_uint_gt(admitted, 60);
	ck_assert_uint_gt(refused, 60);
	ck_assert_uint_ge(fakectx_open_count() - before, admitted);
	g_rand_free(rng);
}
END_TEST

/* The kernel tier's own judgement of a limit's value (the built-in local driver, not a fake):
 * nofile below its launcher's floor is refused by open, and so by explain (issue 15's
 * residual), on random values around the floor and on tier limits the request lowers. */
START_TEST(test_kernel_nofile_floor)
{
	cordon_context *ctx = open_ctx("cordon: 1\ntiers:\n"
				       "  k: {driver: local, confine: kernel}\n"
				       "trust: {semi-trusted: {require: kernel, tiers: [k]}}\n");
	GRand *rng = g_rand_new_with_seed(20261203);
	unsigned admitted = 0, refused = 0;
	for (int iter = 0; iter < 24; iter++) {
		uint64_t nofile = iter == 0   ? 73
				  : iter == 1 ? 74
					      : (uint64_t)g_rand_int_range(rng, 1, 200);
		cordon_request *req = cordon_request_new("semi-trusted");
		ck_assert_int_eq(cordon_request_set_limit(req, CORDON_LIMIT_NOFILE, nofile, NULL),
				 0);
		cordon_decision *d = NULL;
		cordon_error *derr = NULL, *oerr = NULL;
		int dr = cordon_decide(ctx, req, &d, &derr);
		cordon_sandbox *sb = NULL;
		int orr = cordon_sandbox_open(ctx, req, &sb, &oerr);
		ck_assert_msg((dr == 0) == (orr == 0),
			      "nofile %" PRIu64 ": explain %s, open %s: %s", nofile,
			      dr == 0 ? "admits" : "refuses", orr == 0 ? "opens" : "fails",
			      oerr   ? oerr->message
			      : derr ? derr->message
				     : "");
		ck_assert_int_eq(dr == 0, nofile >= 74);
		if (dr == 0) {
			admitted++;
		} else {
			ck_assert_str_eq(cordon_error_get_code(derr), "limit_unenforceable");
			ck_assert_str_eq(cordon_error_get_code(oerr), "limit_unenforceable");
			ck_assert_ptr_nonnull(
				strstr(cordon_decision_candidate_reason(d, 0), "below 74"));
			refused++;
		}
		cordon_sandbox_close(sb);
		cordon_error_free(derr);
		cordon_error_free(oerr);
		cordon_decision_free(d);
		cordon_request_free(req);
	}
	ck_assert_uint_gt(admitted, 3);
	ck_assert_uint_gt(refused, 3);
	g_rand_free(rng);
	cordon_context_free(ctx);
}
END_TEST

/* The two cases of the issue, by name. */
START_TEST(test_unenforceable_and_no_open)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\nselect: first\ntiers:\n"
		"  noop: {driver: tfake-noop, containment: kernel}\n"
		"  nopids: {driver: tfake, containment: kernel, enforces: [memory]}\n"
		"  ok: {driver: tfake, containment: kernel}\n"
		"trust: {trusted: {tiers: [noop, nopids, ok]}}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_limit(req, CORDON_LIMIT_PIDS, 16, NULL);
	cordon_decision *d = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, NULL), 0);
	ck_assert_str_eq(cordon_decision_tier(d), "ok");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "unavailable: driver tfake-noop cannot open sandboxes");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 1),
			 "cannot enforce the pids limit here");
	cordon_decision_free(d);
	/* Only the tier that cannot enforce it: refused, with the limit's own code. */
	cordon_request_set_tier(req, "nopids", NULL);
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), -EPERM);
	ck_assert_str_eq(cordon_error_get_code(err), "limit_unenforceable");
	cordon_error_free(err);
	cordon_decision_free(d);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* Services on a tier whose sandboxes cannot listen (as the process jail) or whose driver has
 * no listen op: passed over by explain as by open, with the reason; refused alike when no
 * other tier is left, with services_unsupported. */
START_TEST(test_services_need_listen)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\nselect: first\ntiers:\n"
		"  jail: {driver: tfake, containment: kernel}\n"
		"  tmpl: {driver: tfake-template, containment: kernel}\n"
		"  net: {driver: tfake, containment: kernel, listens: true}\n"
		"trust: {trusted: {tiers: [jail, tmpl, net]}}\n" SERVICES);
	cordon_request *req = cordon_request_new("trusted");
	cordon_decision *d = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, NULL), 0);
	ck_assert_str_eq(cordon_decision_tier(d), "net");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "cannot carry the policy's services here (its sandboxes have no network "
			 "of their own to listen in)");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 1),
			 "cannot carry the policy's services (driver tfake-template has no "
			 "listener inside a sandbox)");
	cordon_decision_free(d);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_open(ctx, req, &sb, &err) == 0, "%s",
		      err ? err->message : "?");
	ck_assert_str_eq(cordon_sandbox_tier(sb), "net");
	cordon_sandbox_close(sb);
	/* Only the tier that cannot listen: refused by both, before any open, one code. */
	cordon_request_set_tier(req, "jail", NULL);
	unsigned before = fakectx_open_count();
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), -EPERM);
	ck_assert_str_eq(cordon_error_get_code(err), "services_unsupported");
	cordon_error_free(err);
	err = NULL;
	cordon_decision_free(d);
	ck_assert_int_eq(cordon_sandbox_open(ctx, req, &sb, &err), -EPERM);
	ck_assert_str_eq(cordon_error_get_code(err), "services_unsupported");
	ck_assert_uint_eq(fakectx_open_count(), before);
	cordon_error_free(err);
	err = NULL;
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* ---- fallback: next ------------------------------------------------------------------------ */

static char *audit_path(void)
{
	return g_strdup_printf("%s/cordon-fallback-%d.log", g_get_tmp_dir(), (int)getpid());
}

static cordon_context *fallback_ctx(const char *fallback, const char *fails, const char *log)
{
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\nselect: first\naudit: {path: %s}\ntiers:\n"
		"  a: {driver: tfake, containment: kernel, open_fails: %s%s}\n"
		"  b: {driver: tfake, containment: kernel}\n"
		"trust: {trusted: {tiers: [a, b]}}\n",
		log, fails, fallback);
	return open_ctx(policy);
}

static unsigned count_lines(const char *path, char **ret_text)
{
	g_autofree char *text = NULL;
	ck_assert(g_file_get_contents(path, &text, NULL, NULL));
	unsigned n = 0;
	for (const char *s = text; *s; s++)
		n += *s == '\n';
	*ret_text = g_steal_pointer(&text);
	return n;
}

START_TEST(test_fallback_next)
{
	g_autofree char *log = audit_path();
	unlink(log);
	cordon_context *ctx = fallback_ctx(", fallback: next", "terminal", log);
	cordon_request *req = cordon_request_new("trusted");
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_open(ctx, req, &sb, &err) == 0, "%s", err ? err->message : "");
	ck_assert_str_eq(cordon_sandbox_tier(sb), "b");
	cordon_sandbox_close(sb);
	/* Both decisions in the trail: a chosen, then a passed over for its failed open. */
	g_autofree char *text = NULL;
	ck_assert_uint_eq(count_lines(log, &text), 2);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	ck_assert_ptr_nonnull(strstr(lines[0], "\"tier\":\"a\",\"driver\":\"tfake\""));
	ck_assert_ptr_nonnull(strstr(lines[1], "the open failed (fake tier: the engine is down); "
					       "fallback: next"));
	ck_assert_ptr_nonnull(strstr(lines[1], "\"tier\":\"b\""));
	cordon_context_free(ctx);
	unlink(log);

	/* Default (refuse): the open fails, one decision. */
	ctx = fallback_ctx("", "terminal", log);
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_str_eq(cordon_error_get_message(err), "fake tier: the engine is down");
	g_clear_pointer(&err, cordon_error_free);
	g_clear_pointer(&text, g_free);
	ck_assert_uint_eq(count_lines(log, &text), 1);
	cordon_context_free(ctx);
	unlink(log);

	/* A refusal at open is never fallen back from, fallback: next or not. */
	ctx = fallback_ctx(", fallback: next", "forbidden", log);
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_int_eq(cordon_error_get_class(err), CORDON_ERROR_FORBIDDEN);
	g_clear_pointer(&err, cordon_error_free);
	g_clear_pointer(&text, g_free);
	ck_assert_uint_eq(count_lines(log, &text), 1);
	cordon_context_free(ctx);
	unlink(log);
	cordon_request_free(req);
}
END_TEST

/* ---- claims and rule modes ------------------------------------------------------------------ */

START_TEST(test_max_containment)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  vm: {driver: tfake, containment: microvm, max_containment: container}\n"
		"trust: {untrusted: {tiers: [vm]}}\n");
	cordon_request *req = cordon_request_new("untrusted");
	cordon_decision *d = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_decide(ctx, req, &d, &err), -EPERM);
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "container < microvm (cordon claims microvm; capped to container by "
			 "max_containment)");
	ck_assert_int_eq(cordon_decision_candidate_containment(d, 0), CORDON_CONTAINMENT_CONTAINER);
	char *json = cordon_decision_to_json(d);
	ck_assert_ptr_nonnull(strstr(json,
				     "\"containment\":\"container\",\"claimed\":\"microvm\","
				     "\"origin\":\"built-in\",\"max_containment\":\"container\""));
	free(json);
	cordon_error_free(err);
	cordon_decision_free(d);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* cordon's own plugins, of this build, are taken at their word; anything else is capped. */
START_TEST(test_plugin_is_cordons)
{
	ck_assert(policy_plugin_is_cordons("kvm", PACKAGE_VERSION));
	ck_assert(policy_plugin_is_cordons("docker", PACKAGE_VERSION));
	ck_assert(!policy_plugin_is_cordons("kvm", "0.0.0-elsewhere"));
	ck_assert(!policy_plugin_is_cordons("firecracker", PACKAGE_VERSION));
	ck_assert(!policy_plugin_is_cordons("test", PACKAGE_VERSION));
	ck_assert(!policy_plugin_is_cordons(NULL, PACKAGE_VERSION));
	ck_assert(!policy_plugin_is_cordons("kvm", NULL));
}
END_TEST

static cordon_decision *decide_labelled(const char *mode, bool labelled, cordon_error **err)
{
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\ntiers: {a: {driver: tfake, containment: kernel}}\n"
		"trust: {trusted: {tiers: [a]}}\n"
		"rules:\n  - {name: no-ci, mode: %s, when: {labels: {ci: \"1\"}}, deny: true}\n"
		"  - {name: small, mode: %s, limit: {memory: 1GiB}}\n",
		mode, mode);
	cordon_context *ctx = open_ctx(policy);
	cordon_request *req = cordon_request_new("trusted");
	if (labelled)
		cordon_request_add_label(req, "ci", "1", NULL);
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, (uint64_t)2 << 30, NULL);
	cordon_decision *d = NULL;
	cordon_decide(ctx, req, &d, err);
	cordon_request_free(req);
	cordon_context_free(ctx);
	return d;
}

START_TEST(test_rule_modes)
{
	cordon_error *err = NULL;
	/* enforce: refused by the first rule. */
	cordon_decision *d = decide_labelled("enforce", true, &err);
	ck_assert(!cordon_decision_admitted(d));
	ck_assert_str_eq(cordon_decision_candidate_rule(d, 0), "no-ci");
	g_clear_pointer(&err, cordon_error_free);
	cordon_decision_free(d);
	/* warn: admitted, both rules' refusals as warnings, the limit not capped. */
	d = decide_labelled("warn", true, &err);
	ck_assert(cordon_decision_admitted(d));
	ck_assert_uint_eq(cordon_decision_warning_count(d), 2);
	ck_assert_str_eq(cordon_decision_warning(d, 0), "rule no-ci");
	ck_assert_str_eq(cordon_decision_warning(d, 1), "rule small: memory 2GiB > 1GiB");
	ck_assert_ptr_null(cordon_decision_warning(d, 2));
	uint64_t mem = 0;
	ck_assert(cordon_decision_limit(d, CORDON_LIMIT_MEMORY, &mem));
	ck_assert_uint_eq(mem, (uint64_t)2 << 30);
	char *json = cordon_decision_to_json(d);
	ck_assert_ptr_nonnull(strstr(json, "\"rule_hits\":[{\"rule\":\"no-ci\",\"mode\":\"warn\","
					   "\"reason\":\"rule no-ci\"},"));
	ck_assert_ptr_nonnull(
		strstr(json, "\"warnings\":[\"rule no-ci\",\"rule small: memory 2GiB > 1GiB\"]"));
	free(json);
	cordon_decision_free(d);
	/* audit: admitted, no warning; the hits only in the JSON (the audit line's). */
	d = decide_labelled("audit", true, &err);
	ck_assert(cordon_decision_admitted(d));
	ck_assert_uint_eq(cordon_decision_warning_count(d), 0);
	json = cordon_decision_to_json(d);
	ck_assert_ptr_nonnull(strstr(json, "{\"rule\":\"small\",\"mode\":\"audit\","));
	ck_assert_ptr_nonnull(strstr(json, "\"warnings\":[]"));
	free(json);
	cordon_decision_free(d);
	/* A rule that does not match leaves nothing. */
	d = decide_labelled("warn", false, &err);
	ck_assert_uint_eq(cordon_decision_warning_count(d), 1);
	cordon_decision_free(d);
	ck_assert_ptr_null(err);
}
END_TEST

/* Whether the kernel tier can run here (user namespaces, root or not). */
static bool kernel_tier_works(void)
{
	cordon_context *ctx = NULL;
	cordon_probe_report *r = NULL;
	bool ok = fakectx_open("cordon: 1\ntiers: {k: {driver: local, confine: kernel}}\n", &ctx,
			       NULL) == 0 &&
		  cordon_context_probe_tier(ctx, 0, &r, NULL) == 0 &&
		  cordon_probe_report_available(r);
	cordon_probe_report_free(r);
	cordon_context_free(ctx);
	return ok;
}

static Suite *decide_open_suite(void)
{
	Suite *s = suite_create("decide-open");
	TCase *tc = tcase_create("agree");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_explain_equals_open);
	tcase_add_test(tc, test_unenforceable_and_no_open);
	tcase_add_test(tc, test_services_need_listen);
	tcase_add_test(tc, test_fallback_next);
	tcase_add_test(tc, test_max_containment);
	tcase_add_test(tc, test_plugin_is_cordons);
	tcase_add_test(tc, test_rule_modes);
	suite_add_tcase(s, tc);
	/* The kernel tier must work here for its case to mean something (CORDON_REQUIRE). */
	if (kernel_tier_works() || getenv("CORDON_REQUIRE")) {
		TCase *k = tcase_create("kernel");
		tcase_set_timeout(k, 120);
		tcase_add_test(k, test_kernel_nofile_floor);
		suite_add_tcase(s, k);
	} else {
		printf("# the kernel tier cannot open here: its nofile case is not run\n");
	}
	return s;
}

int main(void)
{
	/* the services' secret, and the proxy that an admitted open with services starts */
	g_setenv("CORDON_TEST_SERVICE_KEY", "sk-decide-open-test", TRUE);
	g_autofree char *proxy = testutil_build_path("core/net/cordon-proxy");
	g_autofree char *abs = g_canonicalize_filename(proxy, NULL);
	g_setenv("CORDON_PROXY_HELPER", abs, TRUE);
	return testutil_run(decide_open_suite());
}
