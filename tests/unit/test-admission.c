/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Admission: every (trust x containment x availability), select, relax,
 * explicit tiers, each rule effect, unknown trust, empty candidate lists,
 * the probe cache, the JSON, and a seeded property test. Tiers come from an
 * in-process fake driver (tests/fakectx.c): no privileges, no plugins. */
#include "config.h"

#include "testutil.h"
#include "admission.h"
#include "fakectx.h"
#include "imageref.h"
#include "jsoncheck.h"

#include <errno.h>
#include <string.h>

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define PINNED "alpine@sha256:" HEX64

static const char *const trust_names[] = { NULL, "trusted", "semi-trusted", "untrusted" };
static const char *const cont_names[] = { NULL,        "process-jail",     "kernel",
					  "container", "userspace-kernel", "microvm",
					  "remote" };

static cordon_context *open_ctx(const char *policy)
{
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	int r = fakectx_open(policy, &ctx, &err);
	ck_assert_msg(r == 0, "context: %s\n%s", err ? err->message : "?", policy);
	return ctx;
}

/* Decides req; checks the JSON of every decision on the way. */
static cordon_decision *decide(cordon_context *ctx, const cordon_request *req, cordon_error **err)
{
	cordon_decision *d = NULL;
	int r = cordon_decide(ctx, req, &d, err);
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(r == 0, cordon_decision_admitted(d));
	if (r < 0) {
		ck_assert_int_eq(r, *err && strcmp((*err)->code, "audit_failed") == 0 ? r : -EPERM);
		ck_assert_ptr_nonnull(*err);
		ck_assert_str_eq(cordon_error_get_code(*err), cordon_decision_code(d));
	} else {
		ck_assert_ptr_null(cordon_decision_code(d));
	}
	char *json = cordon_decision_to_json(d);
	ck_assert_msg(json_is_valid(json), "invalid JSON: %s", json);
	free(json);
	return d;
}

static void expect_admitted(cordon_context *ctx, const cordon_request *req, const char *tier)
{
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_msg(cordon_decision_admitted(d), "refused: %s", err ? err->message : "?");
	ck_assert_str_eq(cordon_decision_tier(d), tier);
}

/* Refused with code; the message contains `contains`. */
static void expect_refused(cordon_context *ctx, const cordon_request *req, const char *code,
			   const char *contains)
{
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_msg(!cordon_decision_admitted(d), "admitted to %s", cordon_decision_tier(d));
	ck_assert_int_eq(cordon_error_get_class(err), CORDON_ERROR_FORBIDDEN);
	ck_assert_msg(strcmp(cordon_error_get_code(err), code) == 0, "code %s: %s",
		      cordon_error_get_code(err), cordon_error_get_message(err));
	ck_assert_msg(!contains || strstr(cordon_error_get_message(err), contains),
		      "<<%s>> lacks <<%s>>", cordon_error_get_message(err), contains);
	cordon_error_free(err);
}

static char *tier_line(const char *name, int containment, bool available)
{
	return g_strdup_printf("  %s: {driver: tfake, containment: %s, available: %s, "
			       "reason: 'no /dev/kvm on this host'}\n",
			       name, cont_names[containment], available ? "true" : "false");
}

/* ---- the table ---------------------------------------------------------------------- */

START_TEST(test_table)
{
	for (int t = CORDON_TRUST_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++) {
		for (int c = CORDON_CONTAINMENT_PROCESS_JAIL; c <= CORDON_CONTAINMENT_REMOTE; c++) {
			for (int avail = 0; avail <= 1; avail++) {
				g_autofree char *line = tier_line("t1", c, avail);
				g_autofree char *policy = g_strdup_printf(
					"cordon: 1\ntiers:\n%strust:\n  %s: {tiers: [t1]}\n", line,
					trust_names[t]);
				cordon_context *ctx = open_ctx(policy);
				cordon_request *req = cordon_request_new(trust_names[t]);
				cordon_error *err = NULL;
				cordon_decision *d = decide(ctx, req, &err);
				cordon_containment need = policy_builtin_minimum(t);
				bool want = avail && c >= (int)need;
				ck_assert_int_eq(cordon_decision_admitted(d), want);
				ck_assert_int_eq(cordon_decision_requirement(d), need);
				ck_assert_int_eq(cordon_decision_trust(d), t);
				ck_assert_int_eq(cordon_decision_candidate_count(d), 1);
				ck_assert_int_eq(cordon_decision_candidate_available(d, 0), avail);
				ck_assert_int_eq(cordon_decision_candidate_containment(d, 0), c);
				const char *reason = cordon_decision_candidate_reason(d, 0);
				if (want) {
					ck_assert_str_eq(cordon_decision_tier(d), "t1");
					ck_assert_int_eq(cordon_decision_containment(d), c);
					ck_assert(cordon_decision_candidate_chosen(d, 0));
					ck_assert_str_eq(reason, "chosen");
				} else {
					g_autofree char *want_reason =
						avail ? g_strdup_printf("%s < %s", cont_names[c],
									cont_names[need])
						      : g_strdup("unavailable: no /dev/kvm on this "
								 "host");
					ck_assert_str_eq(reason, want_reason);
					ck_assert_str_eq(cordon_error_get_code(err),
							 "containment_insufficient");
					g_autofree char *head = g_strdup_printf(
						"%s work requires %s; t1: %s", trust_names[t],
						cont_names[need], want_reason);
					ck_assert_str_eq(cordon_error_get_message(err), head);
					ck_assert(!cordon_decision_candidate_chosen(d, 0));
				}
				cordon_error_free(err);
				cordon_decision_free(d);
				cordon_request_free(req);
				cordon_context_free(ctx);
			}
		}
	}
}
END_TEST

START_TEST(test_policy_require_above_builtin)
{
	cordon_context *ctx = open_ctx("cordon: 1\ntiers:\n"
				       "  k: {driver: tfake, containment: kernel}\n"
				       "trust: {trusted: {require: container, tiers: [k]}}\n");
	cordon_request *req = cordon_request_new("trusted");
	expect_refused(ctx, req, "containment_insufficient",
		       "trusted work requires container; k: kernel < container");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* ---- select ------------------------------------------------------------------------- */

static const char *select_policy(const char *select)
{
	static char buf[512];
	g_snprintf(buf, sizeof(buf),
		   "cordon: 1\nselect: %s\ntiers:\n"
		   "  a: {driver: tfake, containment: kernel}\n"
		   "  b: {driver: tfake, containment: microvm}\n"
		   "  c: {driver: tfake, containment: container}\n"
		   "  d: {driver: tfake, containment: microvm}\n"
		   "trust: {trusted: {tiers: [a, b, c, d]}}\n",
		   select);
	return buf;
}

START_TEST(test_select)
{
	cordon_context *strong = open_ctx(select_policy("strongest"));
	cordon_context *first = open_ctx(select_policy("first"));
	cordon_request *req = cordon_request_new("trusted");
	/* Strongest; a tie goes to the one listed first. */
	expect_admitted(strong, req, "b");
	expect_admitted(first, req, "a");
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(strong, req, &err);
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "eligible; b chosen (select: strongest)");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 3),
			 "eligible; b chosen (select: strongest)");
	/* The explicit tier wins over select, and the others say why. */
	cordon_request_set_tier(req, "c", NULL);
	expect_admitted(strong, req, "c");
	g_autoptr(cordon_decision) e = decide(strong, req, &err);
	ck_assert_str_eq(cordon_decision_candidate_reason(e, 1),
			 "not requested (tier c was asked for)");
	cordon_request_free(req);
	cordon_context_free(strong);
	cordon_context_free(first);
}
END_TEST

/* ---- relax, unknown trust, empty lists, explicit tiers -------------------------------------- */

START_TEST(test_relax)
{
	const char *base = "cordon: 1\nallow_semi_trusted_on_jail: true\ntiers:\n"
			   "  j: {driver: tfake, containment: process-jail}\n"
			   "  k: {driver: tfake, containment: kernel}\n";
	g_autofree char *relaxed = g_strdup_printf(
		"%strust:\n  semi-trusted: {require: process-jail, relax: true, tiers: [j]}\n"
		"  untrusted: {require: kernel, relax: true, tiers: [j, k]}\n",
		base);
	g_autofree char *strict = g_strdup_printf(
		"%strust:\n  semi-trusted: {require: process-jail, tiers: [j]}\n", base);
	cordon_context *ctx = open_ctx(relaxed);
	cordon_request *semi = cordon_request_new("semi-trusted");
	cordon_request *untr = cordon_request_new("untrusted");
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, semi, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "j");
	ck_assert_int_eq(cordon_decision_requirement(d), CORDON_CONTAINMENT_PROCESS_JAIL);
	ck_assert(d->relaxed);
	g_autofree char *json = cordon_decision_to_json(d);
	ck_assert_ptr_nonnull(strstr(json, "\"relaxed\":true"));
	ck_assert_ptr_nonnull(strstr(json, "\"builtin_minimum\":\"kernel\""));
	/* Relaxed to kernel, untrusted work still never gets less than kernel. */
	expect_admitted(ctx, untr, "k");
	cordon_request_set_tier(untr, "j", NULL);
	expect_refused(ctx, untr, "containment_insufficient",
		       "untrusted work requires kernel (relaxed below the built-in microvm)");
	cordon_context_free(ctx);

	/* Without relax, the lower require is raised to the built-in minimum. */
	ctx = open_ctx(strict);
	expect_refused(ctx, semi, "containment_insufficient",
		       "semi-trusted work requires kernel; j: process-jail < kernel");
	cordon_context_free(ctx);
	cordon_request_free(semi);
	cordon_request_free(untr);
}
END_TEST

START_TEST(test_unknown_trust)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  j: {driver: tfake, containment: process-jail}\n"
		"  v: {driver: tfake, containment: microvm}\n"
		"trust:\n  trusted: {tiers: [j]}\n  untrusted: {tiers: [v]}\n");
	static const char *const bogus[] = { "root", "Trusted", "", "trusted ", NULL };
	for (int i = 0; bogus[i]; i++) {
		cordon_request *req = cordon_request_new(bogus[i]);
		cordon_error *err = NULL;
		g_autoptr(cordon_decision) d = decide(ctx, req, &err);
		ck_assert_int_eq(cordon_decision_trust(d), CORDON_TRUST_UNTRUSTED);
		ck_assert_int_eq(cordon_decision_requirement(d), CORDON_CONTAINMENT_MICROVM);
		ck_assert_str_eq(cordon_decision_tier(d), "v");
		g_autofree char *json = cordon_decision_to_json(d);
		g_autofree char *asked = g_strdup_printf("\"trust_asked\":\"%s\"", bogus[i]);
		ck_assert_ptr_nonnull(strstr(json, asked));
		cordon_request_free(req);
	}
	cordon_request *null_trust = cordon_request_new(NULL);
	expect_admitted(ctx, null_trust, "v");
	cordon_request_free(null_trust);
	cordon_context_free(ctx);

	ctx = open_ctx("cordon: 1\ntiers: {j: {driver: tfake, containment: remote}}\n"
		       "trust: {trusted: {tiers: [j]}}\n");
	cordon_request *req = cordon_request_new("root");
	expect_refused(ctx, req, "containment_insufficient",
		       "unknown trust 'root' is treated as untrusted; untrusted work requires "
		       "microvm; the policy lists no tier for it");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_empty_candidates)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers: {j: {driver: tfake, containment: remote}}\n"
		"trust: {trusted: {tiers: []}}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_int_eq(cordon_decision_candidate_count(d), 0);
	ck_assert_str_eq(cordon_error_get_message(err),
			 "trusted work requires process-jail; the policy lists no tier for it");
	cordon_error_free(err);
	err = NULL;
	/* A trust level the policy does not mention: the same. */
	cordon_request *semi = cordon_request_new("semi-trusted");
	expect_refused(ctx, semi, "containment_insufficient", "the policy lists no tier for it");
	cordon_request_free(semi);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_explicit_tier)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  a: {driver: tfake, containment: kernel}\n"
		"  b: {driver: tfake, containment: microvm, available: false, reason: gone}\n"
		"  z: {driver: tfake, containment: remote}\n"
		"trust: {trusted: {tiers: [a, b]}}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_tier(req, "z", NULL);
	expect_refused(ctx, req, "sandbox_denied",
		       "tier z is not a candidate for trusted work (candidates: a, b)");
	cordon_request_set_tier(req, "nope", NULL);
	expect_refused(ctx, req, "sandbox_denied", "tier nope is not a candidate");
	cordon_request_set_tier(req, "b", NULL);
	expect_refused(ctx, req, "containment_insufficient",
		       "a: not requested (tier b was asked for); b: unavailable: gone");
	cordon_request_set_tier(req, "a", NULL);
	expect_admitted(ctx, req, "a");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* ---- rules ------------------------------------------------------------------------------- */

static cordon_context *rules_ctx(const char *rules)
{
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\ntiers:\n"
		"  a: {driver: tfake, containment: kernel}\n"
		"  b: {driver: tfake, containment: microvm, egress: {allow: [pypi.org]}}\n"
		"  img: {driver: tfake, containment: container, image: 'alpine:latest'}\n"
		"  pin: {driver: tfake, containment: container, image: '" PINNED "'}\n"
		"trust:\n  trusted: {tiers: [a, b]}\n  semi-trusted: {tiers: [a]}\n"
		"  untrusted: {require: kernel, relax: true, tiers: [img, pin]}\n"
		"rules:\n%s",
		rules);
	return open_ctx(policy);
}

START_TEST(test_rule_deny)
{
	cordon_context *ctx = rules_ctx(
		"  - {name: no-b, when: {tier: b}, deny: true}\n"
		"  - {name: semi-none, when: {trust: semi-trusted}, deny: true}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "a"); /* b is stronger, but denied */
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 1), "rule no-b");
	ck_assert_str_eq(cordon_decision_candidate_rule(d, 1), "no-b");
	ck_assert_ptr_null(cordon_decision_candidate_rule(d, 0));
	cordon_request_set_tier(req, "b", NULL);
	expect_refused(ctx, req, "sandbox_denied", "b: rule no-b");
	cordon_request *semi = cordon_request_new("semi-trusted");
	expect_refused(ctx, semi, "sandbox_denied", "a: rule semi-none");
	cordon_request_free(semi);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_rule_when)
{
	cordon_context *ctx = rules_ctx(
		"  - {name: ml-not-b, when: {labels: {team: ml, env: prod}}, deny: true}\n"
		"  - {name: by-driver, when: {driver: [local, podman], trust: trusted}, deny: "
		"true}\n"
		"  - {name: by-tier-and-trust, when: {tier: [a], trust: [semi-trusted]}, deny: "
		"true}\n");
	cordon_request *req = cordon_request_new("trusted");
	expect_admitted(ctx, req, "b"); /* by-driver names other drivers */
	cordon_request_add_label(req, "team", "ml", NULL);
	expect_admitted(ctx, req, "b"); /* every label must match */
	cordon_request_add_label(req, "env", "prod", NULL);
	expect_refused(ctx, req, "sandbox_denied", "a: rule ml-not-b; b: rule ml-not-b");
	cordon_request *web = cordon_request_new("trusted");
	cordon_request_add_label(web, "team", "web", NULL);
	cordon_request_add_label(web, "env", "prod", NULL);
	expect_admitted(ctx, web, "b");
	cordon_request *semi = cordon_request_new("semi-trusted");
	expect_refused(ctx, semi, "sandbox_denied", "a: rule by-tier-and-trust");
	cordon_request_free(semi);
	cordon_request_free(web);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_rule_require_egress)
{
	cordon_context *ctx = rules_ctx(
		"  - {name: offline, when: {trust: trusted, tier: a}, require: {egress: deny}}\n"
		"  - {name: governed, when: {tier: b}, require: {egress: governed}}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_tier(req, "a", NULL);
	expect_admitted(ctx, req, "a"); /* the default egress is deny */
	cordon_request_set_egress(req, CORDON_EGRESS_GOVERNED, NULL);
	expect_refused(ctx, req, "sandbox_denied",
		       "a: rule offline: requires egress deny, the request asks for governed");
	cordon_request_set_tier(req, "b", NULL);
	expect_admitted(ctx, req, "b");
	cordon_request_set_egress(req, CORDON_EGRESS_ALLOW, NULL);
	expect_refused(ctx, req, "sandbox_denied", "b: rule governed: requires egress governed");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* A rule on egress holds only on a tier that enforces the mode asked for:
 * one whose probe declares no enforcement is refused, with the reason. */
START_TEST(test_rule_require_egress_unenforced)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  open: {driver: tfake, containment: kernel, egress_enforced: false}\n"
		"  shut: {driver: tfake, containment: kernel}\n"
		"trust:\n  trusted: {tiers: [open, shut]}\n"
		"rules:\n  - {name: offline, require: {egress: deny}}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "shut");
	ck_assert_str_eq(
		cordon_decision_candidate_reason(d, 0),
		"rule offline: requires egress deny, and tier open does not enforce egress "
		"deny (its probe declares no egress enforcement)");
	ck_assert_str_eq(cordon_decision_candidate_rule(d, 0), "offline");
	cordon_request_set_tier(req, "open", NULL);
	expect_refused(ctx, req, "sandbox_denied",
		       "open: rule offline: requires egress deny, and "
		       "tier open does not enforce egress deny");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* A tier's egress rules are never left unenforced: a governed request refuses a tier
 * with rules whose probe does not declare governed; explain shows how each is enforced. */
START_TEST(test_governed_rules_enforced)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  none: {driver: tfake, containment: kernel, egress_enforced: false,\n"
		"         egress: {allow: [pypi.org]}}\n"
		"  gov: {driver: tfake, containment: kernel, egress: {allow: [pypi.org]}}\n"
		"trust:\n  trusted: {tiers: [none, gov]}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_egress(req, CORDON_EGRESS_GOVERNED, NULL);
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "gov");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "cannot enforce the tier's egress rules (its probe declares no egress "
			 "enforcement)");
	const char *chosen = cordon_decision_candidate_reason(d, 1);
	ck_assert_msg(strstr(chosen, "egress governed by cordon's proxy") &&
			      strstr(chosen, "allow pypi.org: a CONNECT or http:// request naming "
					     "exactly that host, ports 80 and 443"),
		      "%s", chosen);
	cordon_request_set_tier(req, "none", NULL);
	expect_refused(ctx, req, "sandbox_denied", "none: cannot enforce the tier's egress rules");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* A governed request never runs where nothing is enforced (the process jail's host
 * network), rules or not: refused with the reason, as open would. */
START_TEST(test_governed_needs_enforcement)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  open: {driver: tfake, containment: kernel, egress_enforced: "
		"false}\n"
		"trust:\n  trusted: {tiers: [open]}\n");
	cordon_request *req = cordon_request_new("trusted");
	expect_admitted(ctx, req, "open"); /* deny asked: the tier's own business, as before */
	cordon_request_set_egress(req, CORDON_EGRESS_GOVERNED, NULL);
	expect_refused(ctx, req, "sandbox_denied",
		       "open: cannot govern egress (its probe declares no egress enforcement: the "
		       "work would have the host's network)");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* The process jail's work shares the host's network: `require: {egress:
 * deny}` refuses it (the real local driver, through policy and admission). */
START_TEST(test_jail_egress_unenforced)
{
	cordon_context *ctx = testutil_context_from_text(
		"cordon: 1\ntiers:\n  jail: {driver: local, confine: none}\n"
		"trust:\n  trusted: {tiers: [jail]}\n"
		"rules:\n  - {name: offline, require: {egress: deny}}\n",
		"jail-egress");
	cordon_request *req = cordon_request_new("trusted");
	expect_refused(ctx, req, "sandbox_denied",
		       "jail: rule offline: requires egress deny, and tier jail does not enforce "
		       "egress deny (its probe declares no egress enforcement)");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_rule_require_image)
{
	cordon_context *ctx = rules_ctx(
		"  - {name: pinned, when: {trust: untrusted}, require: {image: pinned}}\n");
	cordon_request *req = cordon_request_new("untrusted");
	/* The tier's own image decides when the request names none. */
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "pin");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "rule pinned: requires a pinned image (name@sha256:<64 hex>), "
			 "'alpine:latest' is not");
	cordon_request_set_image(req, "alpine:latest", NULL);
	expect_refused(ctx, req, "sandbox_denied", "pin: rule pinned: requires a pinned image");
	cordon_request_set_image(req, "alpine@sha256:0123", NULL);
	expect_refused(ctx, req, "sandbox_denied", "'alpine@sha256:0123' is not");
	/* a digest behind a name no engine takes (the policy used to find "@sha256:" anywhere) */
	cordon_request_set_image(req, "--privileged@sha256:" HEX64, NULL);
	expect_refused(ctx, req, "sandbox_denied", "requires a pinned image");
	cordon_request_set_image(req, "Alpine@sha256:" HEX64, NULL);
	expect_refused(ctx, req, "sandbox_denied", "requires a pinned image");
	cordon_request_set_image(req, PINNED, NULL);
	expect_admitted(ctx, req, "img"); /* the request's image replaces the tier's */
	ck_assert(image_ref_is_pinned(PINNED));
	ck_assert(!image_ref_is_pinned(
		"@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
	ck_assert(!image_ref_is_pinned(
		"a@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
	ck_assert(!image_ref_is_pinned(NULL));
	cordon_request_free(req);
	cordon_context_free(ctx);
	/* A tier without any image satisfies the rule: nothing unpinned runs. */
	ctx = rules_ctx("  - {name: pinned, require: {image: pinned}}\n");
	cordon_request *t = cordon_request_new("trusted");
	expect_admitted(ctx, t, "b");
	cordon_request_free(t);
	cordon_context_free(ctx);
}
END_TEST

/* The image is the key the driver declares as its image, whatever its name;
 * a string key merely called "image" is not. */
START_TEST(test_rule_require_image_declared_key)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  t: {driver: tfake-template, containment: microvm, template: 'base:latest',"
		" image: '" PINNED "'}\n"
		"trust:\n  untrusted: {tiers: [t]}\n"
		"rules:\n  - {name: pinned, require: {image: pinned}}\n");
	cordon_request *req = cordon_request_new("untrusted");
	expect_refused(ctx, req, "sandbox_denied",
		       "t: rule pinned: requires a pinned image (name@sha256:<64 hex>), "
		       "'base:latest' is not");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_rule_require_workspace)
{
	cordon_context *ctx = rules_ctx(
		"  - {name: ro, when: {tier: b}, require: {workspace: read-only}}\n");
	cordon_request *req = cordon_request_new("trusted");
	expect_admitted(ctx, req, "b");
	cordon_request_set_workspace(req, "/srv/work", NULL);
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "a");
	ck_assert(g_str_has_prefix(cordon_decision_candidate_reason(d, 1),
				   "rule ro: requires a read-only workspace"));
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* A driver that gives a workspace read-only (ABI 1.5) is admitted under the rule, and told;
 * one that cannot is still refused, by name. */
START_TEST(test_rule_require_workspace_ro_driver)
{
	cordon_context *ctx = open_ctx("cordon: 1\ntiers:\n"
				       "  plain: {driver: tfake, containment: microvm}\n"
				       "  ro: {driver: tfake-template, containment: microvm}\n"
				       "trust:\n  trusted: {tiers: [plain, ro]}\n"
				       "rules:\n  - {name: ro, require: {workspace: read-only}}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_workspace(req, "/srv/work", NULL);
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "ro");
	ck_assert(d->workspace_ro);
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 0),
			 "rule ro: requires a read-only workspace, and tier plain cannot give a "
			 "host workspace read-only");
	cordon_request_free(req);
	/* without a workspace nothing is read-only to tell */
	req = cordon_request_new("trusted");
	g_autoptr(cordon_decision) d2 = decide(ctx, req, &err);
	ck_assert(!d2->workspace_ro);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_rule_limit)
{
	cordon_context *ctx = rules_ctx(
		"  - {name: cap, limit: {memory: 2GiB, wall: 10m}}\n"
		"  - {name: cap-b, when: {tier: b}, limit: {memory: 1GiB, pids: 64}}\n");
	cordon_request *req = cordon_request_new("trusted");
	uint64_t v = 0;
	/* No value asked: the smallest cap is the limit. */
	cordon_error *err = NULL;
	cordon_decision *d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "b");
	ck_assert(cordon_decision_limit(d, CORDON_LIMIT_MEMORY, &v));
	ck_assert_uint_eq(v, 1ull << 30);
	ck_assert(cordon_decision_limit(d, CORDON_LIMIT_WALL_MS, &v));
	ck_assert_uint_eq(v, 600000);
	ck_assert(cordon_decision_limit(d, CORDON_LIMIT_PIDS, &v));
	ck_assert_uint_eq(v, 64);
	ck_assert(!cordon_decision_limit(d, CORDON_LIMIT_NOFILE, &v));
	ck_assert_uint_eq(d->limits.value[CORDON_LIMIT_MEMORY],
			  1ull << 30); /* what open enforces */
	cordon_decision_free(d);
	/* Above b's cap, within a's: b is passed over, never clamped. */
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, 3ull << 29, NULL);
	d = decide(ctx, req, &err);
	ck_assert_str_eq(cordon_decision_tier(d), "a");
	ck_assert_str_eq(cordon_decision_candidate_reason(d, 1),
			 "rule cap-b: memory 1536MiB > 1GiB");
	ck_assert(cordon_decision_limit(d, CORDON_LIMIT_MEMORY, &v));
	ck_assert_uint_eq(v, 3ull << 29);
	cordon_decision_free(d);
	/* Above every cap: refused, naming the rule. */
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, 4ull << 30, NULL);
	expect_refused(ctx, req, "sandbox_denied",
		       "a: rule cap: memory 4GiB > 2GiB; b: rule cap: memory 4GiB > 2GiB");
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, 1ull << 20, NULL);
	cordon_request_set_limit(req, CORDON_LIMIT_WALL_MS, 3600000, NULL);
	expect_refused(ctx, req, "sandbox_denied", "rule cap: wall 1h > 10m");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_tier_limits)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  a: {driver: tfake, containment: kernel, limits: {memory: 512MiB, cpus: 0.5}}\n"
		"trust: {trusted: {tiers: [a]}}\n"
		"rules: [{name: cap, limit: {memory: 2GiB}}]\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_uint_eq(d->limits.value[CORDON_LIMIT_MEMORY], 512u << 20);
	ck_assert_uint_eq(d->limits.value[CORDON_LIMIT_CPU_MILLI], 500);
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, 1ull << 30, NULL);
	expect_refused(ctx, req, "sandbox_denied", "a: tier limit: memory 1GiB > 512MiB");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* ---- probes, JSON --------------------------------------------------------------------------- */

START_TEST(test_probe_cache)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers: {a: {driver: tfake, containment: kernel}}\n"
		"trust: {trusted: {tiers: [a]}}\n");
	cordon_request *req = cordon_request_new("trusted");
	unsigned before = fakectx_probe_count();
	for (int i = 0; i < 10; i++)
		expect_admitted(ctx, req, "a");
	ck_assert_uint_eq(fakectx_probe_count() - before, 1); /* warm: probed once */
	/* A change is seen once the host refreshes (or the cache ages out). */
	fakectx_set_available(ctx, "a", false);
	expect_admitted(ctx, req, "a");
	cordon_probe_report *rep = NULL;
	ck_assert_int_eq(cordon_context_probe_tier(ctx, 0, &rep, NULL), 0);
	ck_assert(!cordon_probe_report_available(rep));
	cordon_probe_report_free(rep);
	expect_refused(ctx, req, "containment_insufficient", "a: unavailable: fake tier");
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_unusable_tier)
{
	cordon_context *ctx = open_ctx("cordon: 1\ntiers:\n  vm: {driver: kvm, kernel: /vmlinuz}\n"
				       "  a: {driver: tfake, containment: kernel}\n"
				       "trust: {untrusted: {tiers: [vm, a]}}\n");
	cordon_request *req = cordon_request_new("untrusted");
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	ck_assert_str_eq(
		cordon_error_get_message(err),
		"untrusted work requires microvm; vm: unavailable: driver kvm is not loaded; "
		"a: kernel < microvm");
	ck_assert(!cordon_decision_candidate_available(d, 0));
	ck_assert_int_eq(cordon_decision_candidate_containment(d, 0), 0); /* never probed */
	cordon_error_free(err);
	char *summary = cordon_context_policy_summary(ctx);
	ck_assert_ptr_nonnull(
		strstr(summary, "note: tier vm is unusable here (driver kvm is not loaded)"));
	free(summary);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_json)
{
	cordon_context *ctx = open_ctx(
		"cordon: 1\ntiers:\n"
		"  a: {driver: tfake, containment: kernel, reason: \"quote \\\" and \\\\\"}\n"
		"  b: {driver: tfake, containment: microvm, available: false, reason: "
		"\"caf\xc3\xa9\"}\n"
		"trust: {trusted: {tiers: [a, b]}}\n");
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, 1024, NULL);
	cordon_error *err = NULL;
	g_autoptr(cordon_decision) d = decide(ctx, req, &err);
	g_autofree char *json = cordon_decision_to_json(d);
	ck_assert_str_eq(
		json,
		"{\"admitted\":true,\"code\":null,\"message\":null,\"trust\":\"trusted\","
		"\"trust_asked\":\"trusted\",\"requirement\":\"process-jail\","
		"\"builtin_minimum\":\"process-jail\",\"relaxed\":false,\"tier\":\"a\","
		"\"driver\":\"tfake\",\"containment\":\"kernel\",\"limits\":{\"memory\":1024},"
		"\"rule_hits\":[],\"warnings\":[],"
		"\"candidates\":[{\"tier\":\"a\",\"driver\":\"tfake\",\"verdict\":\"chosen\","
		"\"chosen\":true,\"available\":true,\"containment\":\"kernel\","
		"\"claimed\":\"kernel\",\"origin\":\"built-in\",\"max_containment\":null,"
		"\"rule\":null,"
		"\"reason\":\"chosen\"},{\"tier\":\"b\",\"driver\":\"tfake\",\"verdict\":"
		"\"unavailable\",\"chosen\":false,\"available\":false,\"containment\":"
		"\"microvm\",\"claimed\":\"microvm\",\"origin\":\"built-in\","
		"\"max_containment\":null,\"rule\":null,\"reason\":\"unavailable: "
		"caf\xc3\xa9\"}]}");
	cordon_request_free(req);
	/* Whatever the host passes as trust, the JSON stays valid. */
	cordon_request *odd = cordon_request_new("we\"ird\n\x01\xff");
	g_autoptr(cordon_decision) e = decide(ctx, odd, &err);
	g_autofree char *j2 = cordon_decision_to_json(e);
	ck_assert_ptr_nonnull(strstr(j2, "\"trust_asked\":\"we\\\"ird\\n\\u0001\\ufffd\""));
	cordon_error_free(err);
	cordon_request_free(odd);
	ck_assert_ptr_null(cordon_decision_to_json(NULL));
	cordon_context_free(ctx);
}
END_TEST

/* ---- property: random policies x random probes ------------------------------------------------- */

typedef struct model_tier {
	int containment;
	bool available;
	bool denied;
	uint64_t mem_cap; /* 0: none */
} model_tier;

START_TEST(test_property)
{
	GRand *rng = g_rand_new_with_seed(20261130);
	unsigned admitted = 0, refused = 0;
	for (int iter = 0; iter < 3000; iter++) {
		int ntiers = g_rand_int_range(rng, 0, 7);
		model_tier tiers[7] = { 0 };
		/* Every requirement may be drawn, untrusted and semi-trusted on the jail included. */
		GString *p = g_string_new("cordon: 1\nallow_untrusted_on_jail: true\n"
					  "allow_semi_trusted_on_jail: true\n");
		bool strongest = g_rand_boolean(rng);
		g_string_append_printf(p, "select: %s\ntiers:%s\n",
				       strongest ? "strongest" : "first", ntiers ? "" : " {}");
		for (int i = 0; i < ntiers; i++) {
			tiers[i].containment = g_rand_int_range(rng, 1, 7);
			tiers[i].available = g_rand_int_range(rng, 0, 4) != 0;
			tiers[i].mem_cap = g_rand_boolean(rng)
						   ? (uint64_t)g_rand_int_range(rng, 1, 5) << 30
						   : 0;
			g_string_append_printf(
				p, "  t%d: {driver: tfake, containment: %s, available: %s", i,
				cont_names[tiers[i].containment],
				tiers[i].available ? "true" : "false");
			if (tiers[i].mem_cap)
				g_string_append_printf(
					p, ", limits: {memory: %" G_GUINT64_FORMAT "GiB}",
					tiers[i].mem_cap >> 30);
			g_string_append(p, "}\n");
		}
		int trust = g_rand_int_range(rng, 1, 4);
		int require = g_rand_int_range(rng, 0, 7); /* 0: none */
		bool relax = g_rand_boolean(rng);
		g_string_append_printf(p, "trust:\n  %s: {tiers: [", trust_names[trust]);
		bool listed[7] = { false };
		int nlisted = 0;
		for (int i = 0; i < ntiers; i++) {
			if (g_rand_int_range(rng, 0, 4) == 0)
				continue;
			listed[i] = true;
			g_string_append_printf(p, "%st%d", nlisted++ ? ", " : "", i);
		}
		g_string_append_printf(p, "], relax: %s%s%s}\n", relax ? "true" : "false",
				       require ? ", require: " : "",
				       require ? cont_names[require] : "");
		g_string_append(p,
				"rules:\n  - {name: never, when: {labels: {x: y}}, deny: true}\n");
		for (int i = 0; i < ntiers; i++) {
			if (g_rand_int_range(rng, 0, 5))
				continue;
			tiers[i].denied = true;
			g_string_append_printf(
				p, "  - {name: deny-t%d, when: {tier: t%d}, deny: true}\n", i, i);
		}
		cordon_context *ctx = open_ctx(p->str);
		bool bogus = g_rand_int_range(rng, 0, 10) == 0;
		cordon_request *req = cordon_request_new(bogus ? "bogus" : trust_names[trust]);
		int eff_trust = bogus ? CORDON_TRUST_UNTRUSTED : trust;
		uint64_t mem = g_rand_boolean(rng) ? (uint64_t)g_rand_int_range(rng, 1, 5) << 30
						   : 0;
		if (mem)
			cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, mem, NULL);
		int asked = g_rand_int_range(rng, 0, 5) == 0 && ntiers
				    ? g_rand_int_range(rng, 0, ntiers)
				    : -1;
		if (asked >= 0) {
			g_autofree char *name = g_strdup_printf("t%d", asked);
			cordon_request_set_tier(req, name, NULL);
		}

		/* The model: what the outcome must be. */
		int builtin = policy_builtin_minimum(eff_trust);
		bool level_set = eff_trust == trust;
		int need = !level_set ? builtin : require ? require : builtin;
		if (level_set && !relax && need < builtin)
			need = builtin;
		int want = -1;
		for (int i = 0; level_set && i < ntiers; i++) {
			bool eligible = listed[i] && tiers[i].available &&
					tiers[i].containment >= need && !tiers[i].denied &&
					!(mem && tiers[i].mem_cap && mem > tiers[i].mem_cap) &&
					(asked < 0 || asked == i);
			if (eligible &&
			    (want < 0 ||
			     (strongest && tiers[i].containment > tiers[want].containment)))
				want = i;
		}
		if (asked >= 0 && (!level_set || !listed[asked]))
			want = -1;

		cordon_error *err = NULL;
		cordon_decision *d = decide(ctx, req, &err);
		ck_assert_int_eq(cordon_decision_requirement(d), need);
		ck_assert_msg(cordon_decision_admitted(d) == (want >= 0), "iteration %d:\n%s", iter,
			      p->str);
		if (want >= 0) {
			admitted++;
			g_autofree char *name = g_strdup_printf("t%d", want);
			ck_assert_str_eq(cordon_decision_tier(d), name);
			/* The invariants, independent of the model. */
			ck_assert(tiers[want].available);
			ck_assert_int_ge(cordon_decision_containment(d),
					 cordon_decision_requirement(d));
			ck_assert(cordon_decision_requirement(d) >= (cordon_containment)builtin ||
				  relax);
		} else {
			refused++;
			size_t n = cordon_decision_candidate_count(d);
			ck_assert_int_eq(n, level_set ? (size_t)nlisted : 0);
			for (size_t i = 0; i < n; i++) {
				const char *tier = cordon_decision_candidate_tier(d, i);
				ck_assert(!cordon_decision_candidate_chosen(d, i));
				ck_assert(*cordon_decision_candidate_reason(d, i));
				ck_assert_msg(strstr(cordon_error_get_message(err), tier),
					      "refusal does not name %s: %s", tier,
					      cordon_error_get_message(err));
			}
		}
		cordon_error_free(err);
		cordon_decision_free(d);
		cordon_request_free(req);
		cordon_context_free(ctx);
		g_string_free(p, TRUE);
	}
	/* Both outcomes were exercised, many times. */
	ck_assert_uint_gt(admitted, 300);
	ck_assert_uint_gt(refused, 300);
	g_rand_free(rng);
}
END_TEST

static Suite *admission_suite(void)
{
	Suite *s = suite_create("admission");
	TCase *tc = tcase_create("decide");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_policy_require_above_builtin);
	tcase_add_test(tc, test_select);
	tcase_add_test(tc, test_relax);
	tcase_add_test(tc, test_unknown_trust);
	tcase_add_test(tc, test_empty_candidates);
	tcase_add_test(tc, test_explicit_tier);
	tcase_add_test(tc, test_rule_deny);
	tcase_add_test(tc, test_rule_when);
	tcase_add_test(tc, test_rule_require_egress);
	tcase_add_test(tc, test_rule_require_egress_unenforced);
	tcase_add_test(tc, test_governed_rules_enforced);
	tcase_add_test(tc, test_governed_needs_enforcement);
	tcase_add_test(tc, test_jail_egress_unenforced);
	tcase_add_test(tc, test_rule_require_image);
	tcase_add_test(tc, test_rule_require_image_declared_key);
	tcase_add_test(tc, test_rule_require_workspace);
	tcase_add_test(tc, test_rule_require_workspace_ro_driver);
	tcase_add_test(tc, test_rule_limit);
	tcase_add_test(tc, test_tier_limits);
	tcase_add_test(tc, test_probe_cache);
	tcase_add_test(tc, test_unusable_tier);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_property);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(admission_suite()); }
