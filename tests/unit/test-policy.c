/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy parser: schema v1, and every bad input of the strictness list,
 * each checked for its code, position (file:line:col) and key path. */
#include "config.h"

#include "testutil.h"
#include "policy.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define V1 "cordon: 1\n"

static void expect_err_len(const char *text, size_t len, const char *code, const char *prefix,
			   const char *contains)
{
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	int r = policy_parse(text, len, "t.yaml", &p, &err);
	ck_assert_msg(r < 0, "parsed but should not: <<%s>>", text);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->cls, CORDON_ERROR_INVALID);
	ck_assert_msg(strcmp(err->code, code) == 0, "code %s, wanted %s: %s", err->code, code,
		      err->message);
	ck_assert_msg(g_str_has_prefix(err->message, prefix), "message <<%s>> lacks prefix <<%s>>",
		      err->message, prefix);
	ck_assert_msg(!contains || strstr(err->message, contains), "message <<%s>> lacks <<%s>>",
		      err->message, contains);
	cordon_error_free(err);
}

#define EXPECT(text, code, prefix, contains) \
	expect_err_len(text, strlen(text), code, prefix, contains)

static cordon_policy *parse_ok(const char *text)
{
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	int r = policy_parse(text, strlen(text), "t.yaml", &p, &err);
	ck_assert_msg(r == 0, "policy does not parse: %s", err ? err->message : "?");
	return p;
}

/* ---- the schema ----------------------------------------------------------------- */

START_TEST(test_full_policy)
{
	const char *text = V1
		"plugins: {dir: /usr/lib/cordon/plugins, load: [podman, kvm]}\n"
		"tiers:\n"
		"  jail:   {driver: local, confine: none}\n"
		"  kernel: {driver: local, confine: kernel, limits: {memory: 512MiB, pids: 256, "
		"wall: 60s}}\n"
		"  box:    {driver: podman, limits: {memory: 1GiB, cpus: 1.5, output: 16MiB, "
		"nofile: 64, fsize: 1GiB}}\n"
		"  vm:     {driver: kvm}\n"
		"trust:\n"
		"  trusted:      {require: process-jail, tiers: [jail, kernel]}\n"
		"  semi-trusted: {require: kernel, tiers: [kernel, box]}\n"
		"  untrusted:    {require: microvm, tiers: [vm]}\n"
		"select: first\n"
		"rules:\n"
		"  - {name: untrusted-offline, when: {trust: untrusted}, require: {egress: deny}}\n"
		"  - {name: pinned-images, when: {driver: [docker, podman]}, require: {image: "
		"pinned}}\n"
		"  - name: ml-team\n"
		"    when: {trust: [trusted, semi-trusted], tier: kernel, labels: {team: ml}}\n"
		"    limit: {memory: 2GiB, wall: 10m}\n"
		"  - {name: no-box-for-ci, when: {tier: [box], labels: {ci: 'true'}}, deny: true}\n"
		"  - {name: ro, require: {workspace: read-only}}\n"
		"audit: {path: /var/log/cordon/audit.jsonl, required: false}\n";
	g_autoptr(cordon_policy) p = parse_ok(text);
	ck_assert_str_eq(p->source, "t.yaml");
	ck_assert_int_eq(strlen(p->sha256), 64);
	ck_assert_str_eq(p->plugin_dir, "/usr/lib/cordon/plugins");
	ck_assert_int_eq(p->plugin_load->len, 2);
	ck_assert_str_eq(p->plugin_load->pdata[1], "kvm");
	ck_assert_int_eq(p->tiers->len, 4);
	const policy_tier *k = policy_find_tier(p, "kernel");
	ck_assert_str_eq(k->driver, "local");
	ck_assert_uint_eq(k->limits.value[CORDON_LIMIT_MEMORY], 512u << 20);
	ck_assert_uint_eq(k->limits.value[CORDON_LIMIT_PIDS], 256);
	ck_assert_uint_eq(k->limits.value[CORDON_LIMIT_WALL_MS], 60000);
	ck_assert_uint_eq(k->limits.set, (1u << CORDON_LIMIT_MEMORY) | (1u << CORDON_LIMIT_PIDS) |
						 (1u << CORDON_LIMIT_WALL_MS));
	const policy_tier *box = policy_find_tier(p, "box");
	ck_assert_uint_eq(box->limits.value[CORDON_LIMIT_CPU_MILLI], 1500);
	ck_assert_uint_eq(box->limits.value[CORDON_LIMIT_NOFILE], 64);
	ck_assert_ptr_nonnull(cfg_map_get(k->section, "confine"));
	ck_assert_int_eq(p->trust[CORDON_TRUST_UNTRUSTED].require, CORDON_CONTAINMENT_MICROVM);
	ck_assert_int_eq(p->trust[CORDON_TRUST_SEMI_TRUSTED].tiers->len, 2);
	ck_assert_int_eq(p->select, POLICY_SELECT_FIRST);
	ck_assert_int_eq(p->rules->len, 5);
	const policy_rule *r0 = p->rules->pdata[0];
	ck_assert_str_eq(r0->name, "untrusted-offline");
	ck_assert_uint_eq(r0->when_trust, 1u << CORDON_TRUST_UNTRUSTED);
	ck_assert_int_eq(r0->require_egress, CORDON_EGRESS_DENY);
	const policy_rule *r2 = p->rules->pdata[2];
	ck_assert_uint_eq(r2->when_trust,
			  (1u << CORDON_TRUST_TRUSTED) | (1u << CORDON_TRUST_SEMI_TRUSTED));
	ck_assert_str_eq(r2->when_labels->pdata[0], "team=ml");
	ck_assert_uint_eq(r2->limit.value[CORDON_LIMIT_MEMORY], 2ull << 30);
	ck_assert_uint_eq(r2->limit.value[CORDON_LIMIT_WALL_MS], 600000);
	ck_assert(((const policy_rule *)p->rules->pdata[3])->deny);
	ck_assert(((const policy_rule *)p->rules->pdata[1])->require_image_pinned);
	ck_assert(((const policy_rule *)p->rules->pdata[4])->require_workspace_ro);
	ck_assert_str_eq(p->audit_path, "/var/log/cordon/audit.jsonl");
	ck_assert(!p->audit_required);
}
END_TEST

START_TEST(test_defaults_and_minimums)
{
	g_autoptr(cordon_policy) p = parse_ok(V1 "audit: {path: /a.jsonl}\n");
	ck_assert_int_eq(p->tiers->len, 0);
	ck_assert_int_eq(p->select, POLICY_SELECT_STRONGEST);
	ck_assert(p->audit_required); /* fail closed by default */
	for (int t = CORDON_TRUST_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++) {
		ck_assert(!p->trust[t].set);
		ck_assert_int_eq(p->trust[t].require, policy_builtin_minimum(t));
		ck_assert_int_eq(p->trust[t].tiers->len, 0);
	}
	/* A lower require is raised to the built-in minimum unless relaxed. */
	g_autoptr(cordon_policy) q = parse_ok(
		V1 "allow_semi_trusted_on_jail: true\n"
		   "tiers: {j: {driver: local}}\n"
		   "trust:\n  untrusted: {require: process-jail, tiers: [j]}\n"
		   "  semi-trusted: {require: process-jail, relax: true, tiers: [j]}\n");
	ck_assert_int_eq(q->trust[CORDON_TRUST_UNTRUSTED].require, CORDON_CONTAINMENT_MICROVM);
	ck_assert_int_eq(q->trust[CORDON_TRUST_UNTRUSTED].declared,
			 CORDON_CONTAINMENT_PROCESS_JAIL);
	ck_assert_int_eq(q->trust[CORDON_TRUST_SEMI_TRUSTED].require,
			 CORDON_CONTAINMENT_PROCESS_JAIL);
	ck_assert(q->trust[CORDON_TRUST_SEMI_TRUSTED].relax);
	g_autofree char *summary = policy_describe(q);
	ck_assert_ptr_nonnull(strstr(summary, "raised to the built-in minimum"));
	ck_assert_ptr_nonnull(strstr(summary, "relaxed below the built-in kernel"));
}
END_TEST

/* relax: true lets a level go below its built-in minimum, but untrusted or
 * semi-trusted work (the default trust) in the process jail runs with the
 * host user's rights (root's, as root): that takes the admin's words, one key
 * per level, and the summary warns (review of issue 10, finding 7: only
 * untrusted needed them). */
static const struct {
	const char *level, *key, *code, *pos;
} on_jail[] = {
	{ "untrusted", "allow_untrusted_on_jail", "policy_untrusted_on_jail", "t.yaml:3:30: " },
	{ "semi-trusted", "allow_semi_trusted_on_jail", "policy_semi_trusted_on_jail",
	  "t.yaml:3:33: " },
};

START_TEST(test_untrusted_on_jail)
{
	const char *level = on_jail[_i].level, *key = on_jail[_i].key;
	g_autofree char *jail = g_strdup_printf("tiers: {j: {driver: local, confine: none}}\n"
						"trust: {%s: {require: process-jail, relax: true, "
						"tiers: [j]}}\n",
						level);
	g_autofree char *refused = g_strconcat(V1, jail, NULL);
	g_autofree char *where = g_strdup_printf("%strust.%s.require: ", on_jail[_i].pos, level);
	g_autofree char *why = g_strdup_printf("%s work would run in the process jail, with the "
					       "rights of the user running cordon (host root, as "
					       "root): if that is meant, say so with `%s: true` at "
					       "the top level",
					       level, key);
	EXPECT(refused, on_jail[_i].code, where, why);
	/* The other level's words are not these. */
	const char *other = on_jail[1 - _i].key;
	g_autofree char *wrong = g_strdup_printf(V1 "%s: true\n%s", other, jail);
	g_autofree char *wwhere = g_strdup_printf("t.yaml:4:%s", where + strlen("t.yaml:3:"));
	EXPECT(wrong, on_jail[_i].code, wwhere, why);
	g_autofree char *allowed = g_strdup_printf(V1 "%s: true\n%s", key, jail);
	g_autoptr(cordon_policy) p = parse_ok(allowed);
	cordon_trust t = _i == 0 ? CORDON_TRUST_UNTRUSTED : CORDON_TRUST_SEMI_TRUSTED;
	ck_assert_int_eq(p->trust[t].require, CORDON_CONTAINMENT_PROCESS_JAIL);
	g_autofree char *summary = policy_describe(p);
	g_autofree char *warning = g_strdup_printf(
		"WARNING: %s: %s work may run in the process jail", key, level);
	ck_assert_msg(strstr(summary, warning), "%s", summary);
	/* Relaxed to kernel needs no words: the jail is still below it. */
	g_autofree char *kernel = g_strdup_printf(V1 "tiers: {j: {driver: local, confine: none}}\n"
						     "trust: {%s: {require: kernel, relax: true, "
						     "tiers: [j]}}\n",
						  level);
	g_autoptr(cordon_policy) k = parse_ok(kernel);
	g_autofree char *ksummary = policy_describe(k);
	ck_assert_ptr_null(strstr(ksummary, "WARNING"));
	g_autofree char *notbool = g_strdup_printf(V1 "%s: yes\n", key);
	g_autofree char *nbwhere = g_strdup_printf("t.yaml:2:%zu: %s: ", strlen(key) + 3, key);
	EXPECT(notbool, "policy_type", nbwhere, "'yes' is not a boolean here");
}
END_TEST

START_TEST(test_default_policy)
{
	g_autoptr(cordon_policy) p = policy_new_default();
	ck_assert_str_eq(p->source, "<default>");
	ck_assert_str_eq(cordon_policy_default_text(), policy_default_text());
	const policy_tier *jail = policy_find_tier(p, "jail"),
			  *kernel = policy_find_tier(p, "kernel");
	ck_assert_str_eq(jail->driver, "local");
	ck_assert_str_eq(cfg_map_get(jail->section, "confine")->scalar, "none");
	ck_assert_str_eq(cfg_map_get(kernel->section, "confine")->scalar, "kernel");
	ck_assert_str_eq(p->trust[CORDON_TRUST_TRUSTED].tiers->pdata[0], "jail");
	ck_assert_int_eq(p->trust[CORDON_TRUST_TRUSTED].require, CORDON_CONTAINMENT_PROCESS_JAIL);
	ck_assert_str_eq(p->trust[CORDON_TRUST_SEMI_TRUSTED].tiers->pdata[0], "kernel");
	ck_assert_int_eq(p->trust[CORDON_TRUST_SEMI_TRUSTED].require, CORDON_CONTAINMENT_KERNEL);
	ck_assert_int_eq(p->trust[CORDON_TRUST_UNTRUSTED].require, CORDON_CONTAINMENT_MICROVM);
	ck_assert_int_eq(p->trust[CORDON_TRUST_UNTRUSTED].tiers->len, 0);
	ck_assert(!p->audit_path);
}
END_TEST

START_TEST(test_crlf_and_no_final_newline)
{
	g_autoptr(cordon_policy) a = parse_ok("cordon: 1\r\ntiers:\r\n  j: {driver: local}\r\n"
					      "trust: {trusted: {tiers: [j]}}");
	ck_assert_int_eq(a->tiers->len, 1);
	ck_assert_str_eq(a->trust[CORDON_TRUST_TRUSTED].tiers->pdata[0], "j");
	/* A UTF-8 BOM and a %YAML directive are harmless. */
	g_autoptr(cordon_policy) b = parse_ok("\xef\xbb\xbf%YAML 1.2\n---\ncordon: 1\n");
	ck_assert_int_eq(b->tiers->len, 0);
}
END_TEST

/* ---- a tier's egress rules ------------------------------------------------------------ */

START_TEST(test_tier_egress)
{
	g_autoptr(cordon_policy) p = parse_ok(
		V1 "tiers:\n  k:\n    driver: local\n    egress:\n"
		   "      allow: [pypi.org, \"*.githubusercontent.com\", \"10.1.2.3:8080\"]\n"
		   "      deny: [evil.pypi.org]\n"
		   "  j: {driver: local}\n");
	const policy_tier *k = policy_find_tier(p, "k");
	ck_assert(k->egress_set);
	ck_assert_uint_eq(g_strv_length(k->egress_allow), 3);
	ck_assert_str_eq(k->egress_allow[1], "*.githubusercontent.com");
	ck_assert_str_eq(k->egress_deny[0], "evil.pypi.org");
	ck_assert(!policy_find_tier(p, "j")->egress_set);
	/* Each rule is read by the proxy's own parser, the error at its position. */
	EXPECT(V1 "tiers:\n  k: {driver: local, egress: {allow: [pypi.org, \"*\"]}}\n",
	       "policy_invalid", "t.yaml:3:49: tiers.k.egress.allow[1]: ", "is not a host name");
	EXPECT(V1 "tiers:\n  k: {driver: local, egress: {deny: [\"a.b:99999\"]}}\n",
	       "policy_invalid", "t.yaml:3:38: tiers.k.egress.deny[0]: ", "egress deny");
	EXPECT(V1 "tiers:\n  k: {driver: local, egress: {allow: [a.b], permit: [c]}}\n",
	       "policy_unknown_key", "t.yaml:3:", "permit");
	EXPECT(V1 "tiers:\n  k: {driver: local, egress: allow}\n", "policy_type",
	       "t.yaml:3:", NULL);
}
END_TEST

/* ---- Y1 empty ---------------------------------------------------------------------- */

START_TEST(test_empty)
{
	EXPECT("", "policy_empty", "t.yaml:1:1: ", "never \"allow everything\"");
	EXPECT("   \n\n  ", "policy_empty", "t.yaml:1:1: ", NULL);
	EXPECT("# only a comment\n", "policy_empty", "t.yaml:1:1: ", NULL);
	EXPECT("---\n", "policy_empty", "t.yaml:1:1: ", NULL);
	EXPECT("~\n", "policy_empty", "t.yaml:1:1: ", NULL);
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(policy_parse(NULL, 0, "n.yaml", &p, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_empty");
}
END_TEST

/* ---- Y2 syntax ---------------------------------------------------------------------- */

START_TEST(test_syntax)
{
	/* A tab used for indentation. */
	EXPECT(V1 "tiers:\n\tjail: {driver: local}\n", "policy_syntax",
	       "t.yaml:3:1: tiers: ", "cannot start any token");
	/* An unclosed flow sequence. */
	EXPECT(V1 "trust:\n  trusted: {tiers: [jail, kernel}\n", "policy_syntax",
	       "t.yaml:3:33: trust.trusted.tiers[2]: ", NULL);
	/* Bad indentation. */
	EXPECT(V1 "tiers:\n  jail: {driver: local}\n kernel: {driver: local}\n", "policy_syntax",
	       "t.yaml:4:2: did not find expected key", NULL);
	/* A key without a value separator in a block map. */
	EXPECT(V1 "select strongest\nrules: []\n", "policy_syntax",
	       "t.yaml:3:1: ", "could not find expected ':'");
}
END_TEST

/* ---- Y3-Y5 anchors, aliases, merge keys ----------------------------------------------- */

static char *billion_laughs(void)
{
	GString *s = g_string_new(
		V1 "a0: &a0 "
		   "[\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
	for (int i = 1; i <= 9; i++) {
		g_string_append_printf(s, "a%d: &a%d [", i, i);
		for (int j = 0; j < 9; j++)
			g_string_append_printf(s, "%s*a%d", j ? "," : "", i - 1);
		g_string_append(s, "]\n");
	}
	return g_string_free(s, FALSE);
}

START_TEST(test_anchor_refused)
{
	EXPECT(V1 "tiers: &t\n  jail: {driver: local}\n", "policy_alias",
	       "t.yaml:2:8: tiers: ", "anchors (&t) are not allowed");
	EXPECT(V1 "tiers:\n  jail: {driver: &d local}\n", "policy_alias",
	       "t.yaml:3:18: tiers.jail.driver: ", "anchors (&d)");
}
END_TEST

START_TEST(test_alias_refused)
{
	/* The anchor is refused first; an alias alone (undefined anchor) is refused too. */
	EXPECT(V1 "tiers:\n  jail: {driver: *d}\n", "policy_alias",
	       "t.yaml:3:18: tiers.jail.driver: ", "aliases (*d) are not allowed");
	/* A self-referential alias: refused at the anchor, never followed. */
	EXPECT(V1 "x: &a [*a]\n", "policy_alias", "t.yaml:2:4: x: ", NULL);
}
END_TEST

START_TEST(test_merge_key_refused)
{
	EXPECT(V1 "tiers:\n  jail:\n    <<: {driver: local}\n", "policy_alias",
	       "t.yaml:4:5: tiers.jail: ", "merge keys (<<) are not allowed");
}
END_TEST

START_TEST(test_billion_laughs)
{
	g_autofree char *doc = billion_laughs();
	gint64 t0 = g_get_monotonic_time();
	for (int i = 0; i < 10; i++)
		EXPECT(doc, "policy_alias", "t.yaml:2:5: a0: ", "anchors (&a0)");
	gint64 us = (g_get_monotonic_time() - t0) / 10;
	ck_assert_msg(us < 100000, "billion laughs took %" G_GINT64_FORMAT " us", us);
}
END_TEST

/* ---- Y6 duplicate keys ------------------------------------------------------------------- */

START_TEST(test_duplicate_keys)
{
	EXPECT(V1 "select: first\nselect: strongest\n", "policy_duplicate_key",
	       "t.yaml:3:1: select: ", "first at line 2, column 1");
	EXPECT(V1 "tiers:\n  jail:\n    driver: local\n    limits: {memory: 1GiB, memory: 2GiB}\n",
	       "policy_duplicate_key",
	       "t.yaml:5:28: tiers.jail.limits.memory: ", "first at line 5, column 14");
	/* Another scalar style is still the same key. */
	EXPECT(V1 "tiers:\n  jail: {driver: local, \"driver\": podman}\n", "policy_duplicate_key",
	       "t.yaml:3:25: tiers.jail.driver: ", "first at line 3, column 10");
	/* In a map large enough for the hashed check. */
	GString *s = g_string_new(V1 "tiers:\n");
	for (int i = 0; i < 20; i++)
		g_string_append_printf(s, "  t%d: {driver: local}\n", i);
	g_string_append(s, "  t7: {driver: local}\n");
	EXPECT(s->str, "policy_duplicate_key",
	       "t.yaml:23:3: tiers.t7: ", "first at line 10, column 3");
	g_string_free(s, TRUE);
}
END_TEST

/* ---- Y10 unknown keys ------------------------------------------------------------------ */

START_TEST(test_unknown_keys)
{
	EXPECT(V1 "tirs: {}\n", "policy_unknown_key",
	       "t.yaml:2:1: tirs: ", "unknown key 'tirs' (did you mean 'tiers'?)");
	EXPECT(V1 "tiers: {j: {driver: local, limits: {memroy: 1GiB}}}\n", "policy_unknown_key",
	       "t.yaml:2:37: tiers.j.limits.memroy: ", "did you mean 'memory'?");
	EXPECT(V1 "trust: {untrusted: {requre: microvm}}\n", "policy_unknown_key",
	       "t.yaml:2:21: trust.untrusted.requre: ", "did you mean 'require'?");
	EXPECT(V1 "trust: {untrustd: {}}\n", "policy_unknown_key", "t.yaml:2:9: trust.untrustd: ",
	       "unknown trust level 'untrustd' (did you mean 'untrusted'?)");
	EXPECT(V1 "rules:\n  - {name: a, deny: true}\n  - {name: b, deny: true}\n"
		  "  - {name: c, limt: {memory: 1GiB}}\n",
	       "policy_unknown_key", "t.yaml:5:15: rules[2].limt: ", "did you mean 'limit'?");
	/* Nothing close: the valid keys are listed. */
	EXPECT(V1 "network: none\n", "policy_unknown_key", "t.yaml:2:1: network: ",
	       "expected one of: cordon, plugins, tiers, trust, select, rules, audit");
}
END_TEST

/* ---- Y7, Y16, Y18 types -------------------------------------------------------------------- */

START_TEST(test_wrong_types)
{
	EXPECT(V1 "tiers: [jail]\n", "policy_type", "t.yaml:2:8: tiers: ", "expected a mapping");
	EXPECT(V1 "tiers: {j: {driver: local}}\ntrust: {trusted: {tiers: j}}\n", "policy_type",
	       "t.yaml:3:26: trust.trusted.tiers: ", "expected a sequence");
	EXPECT(V1 "select:\n", "policy_type", "t.yaml:2:8: select: ", "got null");
	EXPECT(V1 "tiers: {j: {driver: ~}}\n", "policy_type",
	       "t.yaml:2:21: tiers.j.driver: ", "expected a string, got null");
	EXPECT(V1 "tiers: {j: {driver: true}}\n", "policy_type",
	       "t.yaml:2:21: tiers.j.driver: ", "got a boolean");
	EXPECT(V1 "rules:\n  - {name: a, deny: true}\n  - {name: b, deny: true}\n"
		  "  - {name: c, limit: {memory: lots}}\n",
	       "policy_type", "t.yaml:5:31: rules[2].limit.memory: ", "'lots' is not a size");
	EXPECT("- cordon: 1\n", "policy_type", "t.yaml:1:1: ", "the top level must be a mapping");
	EXPECT("cordon\n", "policy_type", "t.yaml:1:1: ", "not a scalar");
	EXPECT(V1 "tiers: {j: {driver: local}}\ntrust: {trusted: {require: Kernel}}\n",
	       "policy_type", "t.yaml:3:28: trust.trusted.require: ",
	       "unknown containment 'Kernel' (did you mean 'kernel'?)");
	EXPECT(V1 "select: fastest\n", "policy_type",
	       "t.yaml:2:9: select: ", "expected one of: strongest, first");
	EXPECT(V1 "tiers: {Jail: {driver: local}}\n", "policy_type",
	       "t.yaml:2:9: tiers.Jail: ", "not a valid tier name");
	EXPECT(V1 "? [a]\n: b\n", "policy_type", "t.yaml:2:3: ", "a key must be a plain string");
}
END_TEST

/* ---- Y8 numbers and units -------------------------------------------------------------------- */

static void expect_pids(const char *value, const char *code, const char *contains)
{
	g_autofree char *text = g_strdup_printf(V1 "tiers:\n  j:\n    driver: local\n"
						   "    limits: {pids: %s}\n",
						value);
	EXPECT(text, code, "t.yaml:5:20: tiers.j.limits.pids: ", contains);
}

START_TEST(test_numbers)
{
	expect_pids("0755", "policy_type", "leading zero is ambiguous");
	expect_pids("0x10", "policy_type", "hexadecimal");
	expect_pids("0o10", "policy_type", "octal");
	expect_pids("1e400", "policy_type", "exponent");
	expect_pids("1e3", "policy_type", "exponent");
	expect_pids(".inf", "policy_type", "infinity");
	expect_pids("-.inf", "policy_type", "infinity");
	expect_pids(".nan", "policy_type", "NaN");
	expect_pids("+5", "policy_type", "leading + is not allowed");
	expect_pids("-1", "policy_type", "negative");
	expect_pids("1_000", "policy_type", "separators");
	expect_pids("1.5", "policy_type", "fraction");
	expect_pids("'5'", "policy_type", "got a quoted string");
	expect_pids("0", "policy_range", "out of range (1 to 4194304)");
	expect_pids("4194305", "policy_range", "out of range");
	expect_pids("18446744073709551616", "policy_range", "too large");
	expect_pids("99999999999999999999999", "policy_range", "too large");
	EXPECT("cordon: 01\n", "policy_version", "t.yaml:1:9: cordon: ", NULL);
}
END_TEST

static void expect_memory(const char *value, const char *code, const char *contains)
{
	g_autofree char *text = g_strdup_printf(V1 "tiers:\n  j:\n    driver: local\n"
						   "    limits: {memory: %s}\n",
						value);
	EXPECT(text, code, "t.yaml:5:22: tiers.j.limits.memory: ", contains);
}

static void expect_wall(const char *value, const char *code, const char *contains)
{
	g_autofree char *text = g_strdup_printf(V1 "rules:\n  - name: r\n"
						   "    limit: {wall: %s}\n",
						value);
	EXPECT(text, code, "t.yaml:4:19: rules[0].limit.wall: ", contains);
}

START_TEST(test_units_in_policy)
{
	expect_memory("512MB", "policy_type", "decimal units");
	expect_memory("512kB", "policy_type", "decimal units");
	expect_memory("512m", "policy_type", "ambiguous unit");
	expect_memory("512Mi", "policy_type", "ambiguous unit");
	expect_memory("512M", "policy_type", "ambiguous unit");
	expect_memory("1.5GiB", "policy_type", "fraction");
	expect_memory("512 MiB", "policy_type", "no space");
	expect_memory("512PiB", "policy_type", "unknown unit");
	expect_memory("0", "policy_range", "greater than 0");
	expect_memory("0MiB", "policy_range", "greater than 0");
	expect_memory("16777216TiB", "policy_range", "too large");
	expect_memory("[1]", "policy_type", "got a sequence");
	expect_wall("30", "policy_type", "needs a unit");
	expect_wall("1h30m", "policy_type", "combinations");
	expect_wall("30sec", "policy_type", "unknown unit");
	expect_wall("30 s", "policy_type", "no space");
	expect_wall("0s", "policy_range", "greater than 0");
	expect_wall("-5s", "policy_type", "negative");
	g_autofree char *cpus = g_strdup(V1 "rules:\n  - name: r\n    limit: {cpus: 0.0001}\n");
	EXPECT(cpus, "policy_type", "t.yaml:4:19: rules[0].limit.cpus: ", "three decimals");
	EXPECT(V1 "rules:\n  - name: r\n    limit: {cpus: 500m}\n", "policy_type",
	       "t.yaml:4:19: rules[0].limit.cpus: ", "millicpu");
	EXPECT(V1 "rules:\n  - name: r\n    limit: {cpus: 5000}\n", "policy_range",
	       "t.yaml:4:19: rules[0].limit.cpus: ", "4096");
}
END_TEST

START_TEST(test_unit_grammar)
{
	static const struct {
		const char *text;
		int r;
		uint64_t v;
	} sizes[] = {
		{ "0", 0, 0 },
		{ "4096", 0, 4096 },
		{ "17B", 0, 17 },
		{ "1KiB", 0, 1024 },
		{ "512MiB", 0, 512ull << 20 },
		{ "2GiB", 0, 2ull << 30 },
		{ "3TiB", 0, 3ull << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "16777216TiB", -ERANGE, 0 },
		{ "16777215TiB", 0, 16777215ull << 40 },
		{ "1MB", -EINVAL, 0 },
		{ "1mib", -EINVAL, 0 },
		{ "01KiB", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "KiB", -EINVAL, 0 },
		{ "1 KiB", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ "1.0KiB", -EINVAL, 0 },
		{ "0x400", -EINVAL, 0 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		uint64_t v = 0;
		const char *why = NULL;
		int r = units_parse_size(sizes[i].text, &v, &why);
		ck_assert_msg(r == sizes[i].r, "size '%s': %d", sizes[i].text, r);
		if (r == 0)
			ck_assert_uint_eq(v, sizes[i].v);
		ck_assert((why == NULL) == (r == 0));
	}
	static const struct {
		const char *text;
		int r;
		uint64_t v;
	} durations[] = {
		{ "500ms", 0, 500 },     { "30s", 0, 30000 },
		{ "10m", 0, 600000 },    { "2h", 0, 7200000 },
		{ "0s", 0, 0 },          { "30", -EINVAL, 0 },
		{ "1h30m", -EINVAL, 0 }, { "1d", -EINVAL, 0 },
		{ "1.5s", -EINVAL, 0 },  { "5124095576030432h", -ERANGE, 0 },
		{ "S", -EINVAL, 0 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(durations); i++) {
		uint64_t v = 0;
		const char *why = NULL;
		int r = units_parse_duration(durations[i].text, &v, &why);
		ck_assert_msg(r == durations[i].r, "duration '%s': %d", durations[i].text, r);
		if (r == 0)
			ck_assert_uint_eq(v, durations[i].v);
		ck_assert((why == NULL) == (r == 0));
	}
	g_autofree char *a = policy_format_size(2ull << 30), *b = policy_format_size(1000);
	g_autofree char *c = policy_format_duration(600000), *d = policy_format_duration(1500);
	g_autofree char *e = policy_format_limit(CORDON_LIMIT_CPU_MILLI, 1500);
	ck_assert_str_eq(a, "2GiB");
	ck_assert_str_eq(b, "1000");
	ck_assert_str_eq(c, "10m");
	ck_assert_str_eq(d, "1500ms");
	ck_assert_str_eq(e, "cpus 1.500");
}
END_TEST

/* ---- Y9 booleans ----------------------------------------------------------------------------- */

START_TEST(test_booleans)
{
	static const char *const bad[] = {
		"yes", "no", "on", "off", "y", "n", "True", "FALSE", NULL
	};
	for (int i = 0; bad[i]; i++) {
		g_autofree char *text = g_strdup_printf(V1 "audit: {path: /a, required: %s}\n",
							bad[i]);
		g_autofree char *want = g_strdup_printf("'%s' is not a boolean here", bad[i]);
		EXPECT(text, "policy_type", "t.yaml:2:29: audit.required: ", want);
	}
	EXPECT(V1 "audit: {path: /a, required: \"true\"}\n", "policy_type",
	       "t.yaml:2:29: audit.required: ", "expected true or false, got a quoted string");
	EXPECT(V1 "audit: {path: /a, required: 1}\n", "policy_type",
	       "t.yaml:2:29: audit.required: ", "got a number");
}
END_TEST

/* ---- Y11 tags, Y12 documents ----------------------------------------------------------------- */

START_TEST(test_tags)
{
	EXPECT(V1 "select: !!str first\n", "policy_tag",
	       "t.yaml:2:9: select: ", "tags (tag:yaml.org,2002:str)");
	EXPECT(V1 "tiers: !custom {}\n", "policy_tag", "t.yaml:2:8: tiers: ", "tags (!custom)");
	EXPECT(V1 "x: !!python/object:os.system {}\n", "policy_tag", "t.yaml:2:4: x: ", NULL);
	EXPECT("%TAG !e! tag:example.com,2000:\n---\ncordon: 1\n", "policy_tag",
	       "t.yaml:1:1: ", "%TAG directives");
}
END_TEST

START_TEST(test_multiple_documents)
{
	EXPECT(V1 "---\ncordon: 1\n", "policy_multidoc",
	       "t.yaml:2:1: ", "exactly one YAML document");
	EXPECT("---\n" V1 "...\n---\n" V1, "policy_multidoc", "t.yaml:4:1: ", NULL);
}
END_TEST

/* ---- Y13 encoding ------------------------------------------------------------------------------ */

START_TEST(test_encoding)
{
	static const char nul[] = "cordon: 1\nselect: fi\0rst\n";
	expect_err_len(nul, sizeof(nul) - 1, "policy_encoding", "t.yaml:2:11: ", "NUL byte");
	EXPECT(V1 "select: \"fi\\0rst\"\n", "policy_encoding",
	       "t.yaml:2:9: select: ", "NUL character");
	EXPECT(V1 "audit: {path: \"/var/log/a\\x01\"}\n", "policy_encoding",
	       "t.yaml:2:15: audit.path: ", "control character 0x01");
	/* A line break or a tab in a value forges lines in messages and records. */
	EXPECT(V1 "tiers: {j: {driver: \"local\\nx\"}}\n", "policy_encoding",
	       "t.yaml:2:21: tiers.j.driver: ", "control character 0x0a in a value is not allowed");
	EXPECT(V1 "rules:\n  - name: |\n      two\n      lines\n", "policy_encoding",
	       "t.yaml:3:11: rules[0].name: ", "control character 0x0a");
	EXPECT(V1 "select: \"first\\t\"\n", "policy_encoding",
	       "t.yaml:2:9: select: ", "control character 0x09");
	EXPECT(V1 "select: caf\xc3\n", "policy_encoding",
	       "t.yaml:2:12: ", "invalid UTF-8 (byte 0xc3)");
	EXPECT(V1 "select: \xc0\xaf\n", "policy_encoding",
	       "t.yaml:2:9: ", "invalid UTF-8"); /* overlong */
	static const char utf16[] = "\xff\xfe"
				    "c\0o\0r\0";
	expect_err_len(utf16, sizeof(utf16) - 1, "policy_encoding", "t.yaml:1:1: ", NULL);
	static const char utf16be[] = "\xfe\xff\0c\0o";
	expect_err_len(utf16be, sizeof(utf16be) - 1, "policy_encoding", "t.yaml:1:1: ", NULL);
	/* A raw C0 control in the text (libyaml's reader refuses it). */
	EXPECT(V1 "select: fi\x01rst\n", "policy_encoding", "t.yaml:2:11: ", NULL);
}
END_TEST

/* ---- Y14, Y15 size and depth ---------------------------------------------------------------- */

START_TEST(test_size_cap)
{
	size_t len = CFG_MAX_BYTES + 1;
	char *big = g_malloc(len);
	memset(big, '#', len);
	memcpy(big, V1, strlen(V1));
	expect_err_len(big, len, "policy_too_large", "t.yaml: the policy is 1048577 bytes",
		       "1 MiB");
	/* Exactly the cap is fine. */
	big[len - 2] = '\n';
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(policy_parse(big, len - 1, "t.yaml", &p, &err), 0);
	policy_free(p);
	g_free(big);
}
END_TEST

START_TEST(test_depth_cap)
{
	GString *s = g_string_new(V1 "x: ");
	for (int i = 0; i < 100000; i++)
		g_string_append_c(s, '[');
	gint64 t0 = g_get_monotonic_time();
	/* The top map is level 1, x's sequence level 2: the 32nd '[' is level 33. */
	EXPECT(s->str, "policy_depth", "t.yaml:2:35: x[0][0][0]", "nested more than 32 levels");
	ck_assert_int_lt(g_get_monotonic_time() - t0, 100000);
	g_string_free(s, TRUE);
	GString *m = g_string_new(V1);
	for (int i = 0; i < 40; i++)
		g_string_append_printf(m, "%*sk%d:\n", 2 * i, "", i);
	/* k0's value is level 2, so the map of k31's value (on k32's line) is level 33. */
	EXPECT(m->str, "policy_depth", "t.yaml:34:65: k0.k1.k2", "k30.k31: nested");
	g_string_free(m, TRUE);
}
END_TEST

START_TEST(test_node_cap)
{
	GString *s = g_string_new(V1 "x: [");
	for (guint i = 0; i < CFG_MAX_NODES; i++)
		g_string_append(s, "1,");
	g_string_append(s, "1]\n");
	ck_assert_int_le(s->len, CFG_MAX_BYTES);
	EXPECT(s->str, "policy_too_large", "t.yaml:2:", "more than 262144 values");
	g_string_free(s, TRUE);
}
END_TEST

/* ---- version, paths, names, cross references ----------------------------------------------- */

START_TEST(test_version)
{
	EXPECT("tiers: {}\n", "policy_version",
	       "t.yaml:1:1: ", "the policy starts with `cordon: 1`");
	EXPECT("cordon: 2\n", "policy_version",
	       "t.yaml:1:9: cordon: ", "unsupported policy version 2: this cordon reads version 1");
	EXPECT("cordon: \"1\"\n", "policy_version", "t.yaml:1:9: cordon: ", "got a quoted string");
	EXPECT("cordon: 1.0\n", "policy_version", "t.yaml:1:9: cordon: ", NULL);
	/* A bad version is the only error reported: the rest may be another schema. */
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(policy_parse("cordon: 2\nbogus: 1\n", 19, "t.yaml", &p, &err), 0);
	ck_assert_ptr_null(strstr(err->message, "bogus"));
	cordon_error_free(err);
}
END_TEST

START_TEST(test_paths)
{
	EXPECT(V1 "audit: {path: audit.jsonl}\n", "policy_path",
	       "t.yaml:2:15: audit.path: ", "must be absolute");
	/* Records go to a file: not the root, nor any directory. */
	EXPECT(V1 "audit: {path: \"/\"}\n", "policy_path", "t.yaml:2:15: audit.path: ",
	       "audit path '/' is a directory: name the file records are appended to");
	EXPECT(V1 "audit: {path: /tmp}\n", "policy_path",
	       "t.yaml:2:15: audit.path: ", "audit path '/tmp' is a directory");
	EXPECT(V1 "audit: {path: ~/audit.jsonl}\n", "policy_path",
	       "t.yaml:2:15: audit.path: ", "nothing is expanded");
	EXPECT(V1 "audit: {path: $HOME/a}\n", "policy_path", "t.yaml:2:15: audit.path: ", NULL);
	EXPECT(V1 "plugins: {dir: /usr/lib/../tmp}\n", "policy_path",
	       "t.yaml:2:16: plugins.dir: ", "normalised");
	EXPECT(V1 "plugins: {dir: /usr//lib}\n", "policy_path", "t.yaml:2:16: plugins.dir: ", NULL);
	EXPECT(V1 "plugins: {dir: /usr/lib/}\n", "policy_path", "t.yaml:2:16: plugins.dir: ", NULL);
	EXPECT(V1 "plugins: {dir: /usr/lib/.}\n", "policy_path",
	       "t.yaml:2:16: plugins.dir: ", NULL);
	EXPECT(V1 "audit: {required: true}\n", "policy_invalid",
	       "t.yaml:2:8: audit: ", "missing required key 'path'");
}
END_TEST

START_TEST(test_references_and_names)
{
	EXPECT(V1 "tiers: {box: {driver: podman}}\ntrust: {trusted: {tiers: [bx]}}\n",
	       "policy_invalid",
	       "t.yaml:3:27: trust.trusted.tiers[0]: ", "unknown tier 'bx' (did you mean 'box'?)");
	EXPECT(V1 "tiers: {box: {driver: podman}}\ntrust: {trusted: {tiers: [box, box]}}\n",
	       "policy_invalid", "t.yaml:3:32: trust.trusted.tiers[1]: ", "listed twice");
	EXPECT(V1 "tiers: {box: {driver: podman}}\nrules: [{name: r, when: {tier: [vm]}, deny: "
		  "true}]\n",
	       "policy_invalid", "t.yaml:3:33: rules[0].when.tier[0]: ", "unknown tier 'vm'");
	EXPECT(V1 "tiers: {box: {limits: {}}}\n", "policy_invalid",
	       "t.yaml:2:14: tiers.box: ", "missing required key 'driver'");
	EXPECT(V1 "tiers: {box: {driver: Podman}}\n", "policy_type",
	       "t.yaml:2:23: tiers.box.driver: ", "not a valid driver name");
	EXPECT(V1 "plugins: {load: [kvm, ../evil]}\n", "policy_type",
	       "t.yaml:2:23: plugins.load[1]: ", "not a valid plugin name");
	EXPECT(V1 "plugins: {load: [kvm, kvm]}\n", "policy_invalid",
	       "t.yaml:2:23: plugins.load[1]: ", "listed twice");
	EXPECT(V1 "rules: [{name: a, deny: true}, {name: a, deny: true}]\n", "policy_invalid",
	       "t.yaml:2:39: rules[1].name: ", "used twice");
	EXPECT(V1 "rules: [{deny: true}]\n", "policy_invalid",
	       "t.yaml:2:9: rules[0]: ", "missing required key 'name'");
	EXPECT(V1 "rules: [{name: a}]\n", "policy_invalid",
	       "t.yaml:2:9: rules[0]: ", "has no effect");
	EXPECT(V1 "rules: [{name: a, deny: true, limit: {pids: 5}}]\n", "policy_invalid",
	       "t.yaml:2:9: rules[0]: ", "takes no require or limit");
	EXPECT(V1 "rules: [{name: a, require: {egress: allow}}]\n", "policy_type",
	       "t.yaml:2:37: rules[0].require.egress: ", "expected one of: deny, governed");
	EXPECT(V1 "rules: [{name: a, require: {image: latest}}]\n", "policy_type",
	       "t.yaml:2:36: rules[0].require.image: ", NULL);
	EXPECT(V1 "rules: [{name: a, when: {trust: [trusted, root]}, deny: true}]\n", "policy_type",
	       "t.yaml:2:43: rules[0].when.trust[1]: ", "unknown trust level 'root'");
	EXPECT(V1 "rules: [{name: 'has space', deny: true}]\n", "policy_type",
	       "t.yaml:2:16: rules[0].name: ", "not a valid rule name");
}
END_TEST

START_TEST(test_every_error_reported)
{
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	const char *text = V1 "tirs: {}\nselect: fastest\naudit: {path: rel}\n";
	ck_assert_int_lt(policy_parse(text, strlen(text), "t.yaml", &p, &err), 0);
	g_auto(GStrv) lines = g_strsplit(err->message, "\n", -1);
	ck_assert_int_eq(g_strv_length(lines), 3);
	ck_assert(g_str_has_prefix(lines[0], "t.yaml:2:1: tirs: "));
	ck_assert(g_str_has_prefix(lines[1], "t.yaml:3:9: select: "));
	ck_assert(g_str_has_prefix(lines[2], "t.yaml:4:15: audit.path: "));
	ck_assert_str_eq(err->code, "policy_unknown_key"); /* the first error's */
	cordon_error_free(err);
	err = NULL;
	/* Very many errors are capped. */
	GString *s = g_string_new(V1 "tiers:\n");
	for (int i = 0; i < 80; i++)
		g_string_append_printf(s, "  t%d: {driver: local, limits: {pids: 0}}\n", i);
	ck_assert_int_lt(policy_parse(s->str, s->len, "t.yaml", &p, &err), 0);
	ck_assert_ptr_nonnull(strstr(err->message, "... and 30 more errors"));
	cordon_error_free(err);
	g_string_free(s, TRUE);
}
END_TEST

/* probe_timeout: a duration from 1 s to 5 min, read by the core for any driver. */
START_TEST(test_probe_timeout)
{
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	const char *ok = V1 "tiers: {a: {driver: local, probe_timeout: 90s}}\n"
			    "trust: {trusted: {tiers: [a]}}\n";
	ck_assert_int_eq(policy_parse(ok, strlen(ok), "t.yaml", &p, &err), 0);
	ck_assert_uint_eq(((policy_tier *)p->tiers->pdata[0])->probe_timeout_ms, 90000);
	policy_free(p);
	p = NULL;
	const char *bad = V1 "tiers:\n  a: {driver: local, probe_timeout: 500ms}\n"
			     "  b: {driver: local, probe_timeout: 6m}\n"
			     "  c: {driver: local, probe_timeout: soon}\n"
			     "trust: {trusted: {tiers: [a, b, c]}}\n";
	ck_assert_int_lt(policy_parse(bad, strlen(bad), "t.yaml", &p, &err), 0);
	g_auto(GStrv) lines = g_strsplit(err->message, "\n", -1);
	ck_assert_int_eq(g_strv_length(lines), 3);
	ck_assert_str_eq(lines[0], "t.yaml:3:37: tiers.a.probe_timeout: 500ms is outside 1s to 5m");
	ck_assert_str_eq(lines[1], "t.yaml:4:37: tiers.b.probe_timeout: 6m is outside 1s to 5m");
	ck_assert_msg(g_str_has_prefix(lines[2], "t.yaml:5:37: tiers.c.probe_timeout: not a "
						 "duration such as 30s: "),
		      "%s", lines[2]);
	cordon_error_free(err);
}
END_TEST

/* Errors come in file order, whatever order the sections are read in (rules and audit
 * before tiers and trust here; the allow_ keys are read first but come last). */
START_TEST(test_errors_in_file_order)
{
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	const char *text = V1 "rules:\n  - {name: r, deny: maybe}\n"
			      "audit: {path: rel}\n"
			      "tiers: {a: {driver: local, fallback: later, max_containment: vm}}\n"
			      "trust: {trusted: {tiers: [b]}}\n"
			      "allow_untrusted_on_jail: yes\n";
	ck_assert_int_lt(policy_parse(text, strlen(text), "t.yaml", &p, &err), 0);
	g_auto(GStrv) lines = g_strsplit(err->message, "\n", -1);
	ck_assert_int_eq(g_strv_length(lines), 6);
	static const char *const want[] = {
		"t.yaml:3:21: rules[0].deny: ",          "t.yaml:4:15: audit.path: ",
		"t.yaml:5:38: tiers.a.fallback: ",       "t.yaml:5:62: tiers.a.max_containment: ",
		"t.yaml:6:27: trust.trusted.tiers[0]: ", "t.yaml:7:26: allow_untrusted_on_jail: "
	};
	for (int i = 0; i < 6; i++)
		ck_assert_msg(g_str_has_prefix(lines[i], want[i]), "line %d: %s", i, lines[i]);
	ck_assert_str_eq(err->code, "policy_type"); /* the first in the file */
	cordon_error_free(err);
}
END_TEST

/* ---- a driver's section ------------------------------------------------------------------------ */

static const cordon_plugin_config_key box_keys[] = {
	{ "image", CORDON_PLUGIN_CONFIG_STRING, 1 },
	{ "rootless", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "shm", CORDON_PLUGIN_CONFIG_SIZE, 0 },
	{ "stop_timeout", CORDON_PLUGIN_CONFIG_DURATION, 0 },
	{ "nice", CORDON_PLUGIN_CONFIG_INT, 0 },
	{ "caps", CORDON_PLUGIN_CONFIG_STRING_LIST, 0 },
	{ "token", CORDON_PLUGIN_CONFIG_SECRET, 0 },
	{ NULL, 0, 0 },
};

static void expect_section(const char *section, const char *code, const char *prefix,
			   const char *contains)
{
	g_autofree char *text = g_strdup_printf(V1 "tiers:\n  box:\n%s", section);
	g_autoptr(cordon_policy) p = parse_ok(text);
	cordon_error *err = NULL;
	int r = policy_check_section(p, (policy_tier *)policy_find_tier(p, "box"), box_keys, NULL,
				     &err);
	if (!code) {
		ck_assert_msg(r == 0, "section refused: %s", err ? err->message : "?");
		return;
	}
	ck_assert_int_lt(r, 0);
	ck_assert_msg(strcmp(err->code, code) == 0, "code %s: %s", err->code, err->message);
	ck_assert_msg(g_str_has_prefix(err->message, prefix), "<<%s>> lacks <<%s>>", err->message,
		      prefix);
	ck_assert_msg(!contains || strstr(err->message, contains), "<<%s>> lacks <<%s>>",
		      err->message, contains);
	cordon_error_free(err);
}

START_TEST(test_driver_section)
{
	expect_section("    driver: podman\n    image: x\n    rootless: true\n    shm: 64MiB\n"
		       "    stop_timeout: 5s\n    nice: -5\n    caps: [net_bind]\n"
		       "    token: {env: BOX_TOKEN}\n    limits: {memory: 1GiB}\n",
		       NULL, NULL, NULL);
	expect_section("    driver: podman\n    image: x\n    imge: y\n", "policy_unknown_key",
		       "t.yaml:6:5: tiers.box.imge: ",
		       "unknown key for driver podman 'imge' (did you mean 'image'?)");
	expect_section("    driver: podman\n", "policy_invalid",
		       "t.yaml:4:5: tiers.box: ", "missing required key 'image' (driver podman)");
	expect_section("    driver: podman\n    image: x\n    rootless: yes\n", "policy_type",
		       "t.yaml:6:15: tiers.box.rootless: ", "write true or false");
	expect_section("    driver: podman\n    image: x\n    shm: 64MB\n", "policy_type",
		       "t.yaml:6:10: tiers.box.shm: ", "decimal units");
	expect_section("    driver: podman\n    image: x\n    stop_timeout: 5\n", "policy_type",
		       "t.yaml:6:19: tiers.box.stop_timeout: ", "needs a unit");
	expect_section("    driver: podman\n    image: x\n    nice: 0x5\n", "policy_type",
		       "t.yaml:6:11: tiers.box.nice: ", "hexadecimal");
	expect_section("    driver: podman\n    image: x\n    nice: 9223372036854775808\n",
		       "policy_range", "t.yaml:6:11: tiers.box.nice: ", "64 bits");
	expect_section("    driver: podman\n    image: x\n    nice: -9223372036854775808\n", NULL,
		       NULL, NULL);
	expect_section("    driver: podman\n    image: x\n    caps: net_bind\n", "policy_type",
		       "t.yaml:6:11: tiers.box.caps: ", "expected a sequence");
	expect_section("    driver: podman\n    image: [x]\n", "policy_type",
		       "t.yaml:5:12: tiers.box.image: ", "expected a string");
	expect_section("    driver: podman\n    image: x\n    token: hunter2\n", "policy_type",
		       "t.yaml:6:12: tiers.box.token: ", "never the value itself");
	expect_section("    driver: podman\n    image: x\n    token: {env: A, file: /b}\n",
		       "policy_type",
		       "t.yaml:6:12: tiers.box.token: ", "exactly one of env or file");
	expect_section("    driver: podman\n    image: x\n    token: {file: rel}\n", "policy_path",
		       "t.yaml:6:19: tiers.box.token.file: ", "absolute");
	expect_section("    driver: podman\n    image: x\n    token: {env: 'A-B'}\n", "policy_type",
		       "t.yaml:6:18: tiers.box.token.env: ", "not an environment variable name");
	/* A driver without declared keys accepts only the core's. */
	g_autoptr(cordon_policy) p = parse_ok(V1 "tiers: {j: {driver: local, confine: none}}\n");
	cordon_error *err = NULL;
	ck_assert_int_lt(
		policy_check_section(p, (policy_tier *)policy_find_tier(p, "j"), NULL, NULL, &err),
		0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_unknown_key");
}
END_TEST

/* ---- files ------------------------------------------------------------------------------------- */

START_TEST(test_load_file)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *good = g_build_filename(dir, "good.yaml", NULL);
	ck_assert(g_file_set_contents(good, V1 "select: first\n", -1, NULL));
	ck_assert_int_eq(chmod(good, 0644), 0);
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(policy_load_file(good, &p, &err), 0);
	ck_assert_str_eq(p->source, good);
	ck_assert_int_eq(p->select, POLICY_SELECT_FIRST);
	policy_free(p);

	/* Errors name the file. */
	g_autofree char *bad = g_build_filename(dir, "bad.yaml", NULL);
	ck_assert(g_file_set_contents(bad, V1 "select: fastest\n", -1, NULL));
	ck_assert_int_lt(policy_load_file(bad, &p, &err), 0);
	g_autofree char *prefix = g_strdup_printf("%s:2:9: select: ", bad);
	ck_assert(g_str_has_prefix(err->message, prefix));
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_type");

	ck_assert_int_eq(chmod(good, 0666), 0);
	ck_assert_int_lt(policy_load_file(good, &p, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_perms");

	ck_assert_int_lt(policy_load_file(dir, &p, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_io");

	g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_lt(policy_load_file(fifo, &p, &err), 0); /* and never blocks */
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_io");

	g_autofree char *missing = g_build_filename(dir, "missing.yaml", NULL);
	ck_assert_int_eq(policy_load_file(missing, &p, &err), -ENOENT);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_io");

	g_autofree char *big = g_build_filename(dir, "big.yaml", NULL);
	char *content = g_malloc(CFG_MAX_BYTES + 10);
	memset(content, '#', CFG_MAX_BYTES + 10);
	ck_assert(g_file_set_contents(big, content, CFG_MAX_BYTES + 10, NULL));
	g_free(content);
	ck_assert_int_lt(policy_load_file(big, &p, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_too_large");

	/* A device that never ends is not a regular file. */
	ck_assert_int_lt(policy_load_file("/dev/zero", &p, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_io");
	testutil_rmtree(dir);
}
END_TEST

/* Whoever could change the policy file, or rename it away, chooses what
 * cordon enforces. Checks one refusal: NULL when policy_load_file refused
 * path with policy_perms and a message containing want (NULL: accepted it),
 * else what went wrong. Plain returns, no ck_assert: this also runs in a
 * child as nobody. */
static char *trust_problem(const char *path, const char *want)
{
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	int r = policy_load_file(path, &p, &err);
	policy_free(p);
	g_autofree char *msg = g_strdup(err ? err->message : "");
	bool perms = err && strcmp(err->code, "policy_perms") == 0;
	cordon_error_free(err);
	if (!want)
		return r == 0 ? NULL : g_strdup_printf("%s refused: %s", path, msg);
	if (r == 0)
		return g_strdup_printf("%s accepted, should be refused (%s)", path, want);
	if (!perms || !strstr(msg, want))
		return g_strdup_printf("%s: <<%s>>, wanted policy_perms and <<%s>>", path, msg,
				       want);
	return NULL;
}

static char *put_policy(const char *dir, const char *name, mode_t mode)
{
	char *path = g_build_filename(dir, name, NULL);
	if (!g_file_set_contents(path, V1, -1, NULL) || chmod(path, mode) < 0)
		g_clear_pointer(&path, g_free);
	return path;
}

#define TRY(expr) \
	do { \
		char *why_ = (expr); \
		if (why_) \
			return why_; \
	} while (0)

static char *policy_trust_problems(void)
{
	g_autofree char *top = g_dir_make_tmp("cordon-trust-XXXXXX", NULL);
	g_autofree char *open_dir = g_build_filename(top, "open", NULL);
	g_autofree char *sticky_dir = g_build_filename(top, "sticky", NULL);
	if (!top || g_mkdir(open_dir, 0755) < 0 || g_mkdir(sticky_dir, 0755) < 0 ||
	    chmod(open_dir, 0777) < 0 || chmod(sticky_dir, 01777) < 0)
		return g_strdup_printf("cannot make directories in %s", top);
	g_autofree char *good = put_policy(top, "good.yaml", 0644);
	g_autofree char *grp = put_policy(top, "group.yaml", 0664);
	g_autofree char *in_open = put_policy(open_dir, "p.yaml", 0644);
	g_autofree char *in_sticky = put_policy(sticky_dir, "p.yaml", 0644);
	g_autofree char *linked = put_policy(top, "linked.yaml", 0644);
	g_autofree char *sym = g_build_filename(top, "sym.yaml", NULL);
	g_autofree char *hard = g_build_filename(top, "hard.yaml", NULL);
	if (!good || !grp || !in_open || !in_sticky || !linked || symlink(good, sym) < 0 ||
	    link(linked, hard) < 0)
		return g_strdup_printf("cannot make files in %s", top);
	TRY(trust_problem(good, NULL));
	TRY(trust_problem(in_sticky, NULL)); /* like /tmp: others cannot rename ours */
	TRY(trust_problem(grp, "group.yaml is group- or world-writable (mode 0664)"));
	g_autofree char *open_why = g_strdup_printf("%s is group- or world-writable without the "
						    "sticky bit (mode 0777)",
						    open_dir);
	TRY(trust_problem(in_open, open_why));
	TRY(trust_problem(sym, "sym.yaml is a symbolic link"));
	TRY(trust_problem(hard, "hard.yaml has 2 hard links"));
	if (geteuid() == 0) {
		g_autofree char *theirs = put_policy(top, "theirs.yaml", 0644);
		if (!theirs || chown(theirs, 4242, 4242) < 0)
			return g_strdup("cannot chown a policy to uid 4242");
		TRY(trust_problem(theirs,
				  "theirs.yaml is owned by uid 4242, not by root or by us"));
	}
	testutil_rmtree(top);
	return NULL;
}

/* As whoever runs the suite and, when that is root, again as nobody. */
START_TEST(test_policy_file_trust)
{
	g_autofree char *why = policy_trust_problems();
	ck_assert_msg(!why, "as uid %u: %s", (unsigned)geteuid(), why);
	if (geteuid() != 0)
		return;
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		char *problem = policy_trust_problems();
		if (problem && write(fds[1], problem, strlen(problem)) < 0)
			_exit(3);
		_exit(problem ? 1 : 0);
	}
	close(fds[1]);
	char buf[1024] = "";
	ssize_t n, got = 0;
	while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "as nobody (status 0x%x): %s",
		      status, buf);
}
END_TEST

/* ---- fixtures and the documentation's examples ----------------------------------------------- */

/* A bad fixture's first line: "# expect: CODE PREFIX-AFTER-FILENAME". */
static void check_bad_fixture(const char *path)
{
	g_autofree char *text = NULL;
	gsize len;
	ck_assert(g_file_get_contents(path, &text, &len, NULL));
	ck_assert_msg(g_str_has_prefix(text, "# expect: "), "%s has no '# expect:' line", path);
	const char *spec = text + strlen("# expect: ");
	const char *eol = strchr(spec, '\n');
	g_autofree char *line = g_strndup(spec, eol ? (gsize)(eol - spec) : strlen(spec));
	g_auto(GStrv) parts = g_strsplit(line, " ", 2);
	ck_assert_msg(parts[0] && parts[1], "%s: '# expect: CODE POSITION-AND-PATH'", path);
	g_autofree char *prefix = g_strdup_printf("t.yaml%s", parts[1]);
	expect_err_len(text, len, parts[0], prefix, NULL);
}

START_TEST(test_fixtures)
{
	static const char *const kinds[] = { "good", "bad" };
	unsigned counts[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		g_autofree char *rel = g_strdup_printf("tests/fixtures/policies/%s", kinds[k]);
		g_autofree char *dir = testutil_src_path(rel);
		GDir *d = g_dir_open(dir, 0, NULL);
		ck_assert_msg(d, "no fixture directory %s", dir);
		const char *name;
		while ((name = g_dir_read_name(d))) {
			g_autofree char *path = g_build_filename(dir, name, NULL);
			if (k == 0) {
				cordon_policy *p = NULL;
				cordon_error *err = NULL;
				ck_assert_msg(policy_load_file(path, &p, &err) == 0, "%s: %s", name,
					      err ? err->message : "?");
				policy_free(p);
			} else {
				check_bad_fixture(path);
			}
			counts[k]++;
		}
		g_dir_close(d);
	}
	ck_assert_uint_ge(counts[0], 3);
	ck_assert_uint_ge(counts[1], 15);
}
END_TEST

START_TEST(test_doc_examples)
{
	g_autofree char *doc = testutil_src_path("docs/policy.md");
	g_autofree char *text = NULL;
	ck_assert_msg(g_file_get_contents(doc, &text, NULL, NULL), "cannot read %s", doc);
	unsigned examples = 0;
	const char *p = text;
	while ((p = strstr(p, "```yaml\n"))) {
		p += strlen("```yaml\n");
		const char *end = strstr(p, "```");
		ck_assert_ptr_nonnull(end);
		g_autofree char *name = g_strdup_printf("docs/policy.md example %u", examples + 1);
		cordon_policy *pol = NULL;
		cordon_error *err = NULL;
		ck_assert_msg(policy_parse(p, (size_t)(end - p), name, &pol, &err) == 0, "%s: %s",
			      name, err ? err->message : "?");
		policy_free(pol);
		examples++;
		p = end + 3;
	}
	ck_assert_uint_ge(examples, 5);
	/* The example files the documentation and the README point to. */
	g_autofree char *dir = testutil_src_path("docs/examples");
	GDir *d = g_dir_open(dir, 0, NULL);
	ck_assert_ptr_nonnull(d);
	unsigned files = 0;
	const char *name;
	while ((name = g_dir_read_name(d))) {
		if (!g_str_has_suffix(name, ".yaml"))
			continue;
		g_autofree char *path = g_build_filename(dir, name, NULL);
		cordon_policy *pol = NULL;
		cordon_error *err = NULL;
		ck_assert_msg(policy_load_file(path, &pol, &err) == 0, "%s: %s", path,
			      err ? err->message : "?");
		policy_free(pol);
		files++;
	}
	g_dir_close(d);
	ck_assert_uint_ge(files, 1);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("schema");
	tcase_add_test(tc, test_full_policy);
	tcase_add_test(tc, test_tier_egress);
	tcase_add_test(tc, test_defaults_and_minimums);
	tcase_add_test(tc, test_default_policy);
	tcase_add_test(tc, test_crlf_and_no_final_newline);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_paths);
	tcase_add_test(tc, test_references_and_names);
	tcase_add_test(tc, test_every_error_reported);
	tcase_add_test(tc, test_errors_in_file_order);
	tcase_add_test(tc, test_probe_timeout);
	tcase_add_test(tc, test_driver_section);
	tcase_add_loop_test(tc, test_untrusted_on_jail, 0, G_N_ELEMENTS(on_jail));
	tcase_add_test(tc, test_load_file);
	tcase_add_test(tc, test_policy_file_trust);
	tcase_add_test(tc, test_fixtures);
	tcase_add_test(tc, test_doc_examples);
	suite_add_tcase(s, tc);
	TCase *bad = tcase_create("strictness");
	tcase_add_test(bad, test_empty);
	tcase_add_test(bad, test_syntax);
	tcase_add_test(bad, test_anchor_refused);
	tcase_add_test(bad, test_alias_refused);
	tcase_add_test(bad, test_merge_key_refused);
	tcase_add_test(bad, test_billion_laughs);
	tcase_add_test(bad, test_duplicate_keys);
	tcase_add_test(bad, test_unknown_keys);
	tcase_add_test(bad, test_wrong_types);
	tcase_add_test(bad, test_numbers);
	tcase_add_test(bad, test_units_in_policy);
	tcase_add_test(bad, test_unit_grammar);
	tcase_add_test(bad, test_booleans);
	tcase_add_test(bad, test_tags);
	tcase_add_test(bad, test_multiple_documents);
	tcase_add_test(bad, test_encoding);
	tcase_add_test(bad, test_size_cap);
	tcase_add_test(bad, test_depth_cap);
	tcase_add_test(bad, test_node_cap);
	suite_add_tcase(s, bad);
	return s;
}

int main(void) { return testutil_run(policy_suite()); }
