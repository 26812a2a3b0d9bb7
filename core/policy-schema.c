/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy's schema v1: its sections (plugins, tiers, trust, rules, audit)
 * and a driver's section of a tier, read strictly with the typed reads of
 * policy-read.c. docs/policy.md is the contract; every rule here has a line
 * there. */
#include "config.h"

#include "policy-internal.h"
#include "net/egress.h"

#include "units.h"

#include <string.h>
#include <sys/stat.h>

cordon_containment policy_builtin_minimum(cordon_trust t)
{
	switch (t) {
	case CORDON_TRUST_TRUSTED: return CORDON_CONTAINMENT_PROCESS_JAIL;
	case CORDON_TRUST_SEMI_TRUSTED: return CORDON_CONTAINMENT_KERNEL;
	default: return CORDON_CONTAINMENT_MICROVM;
	}
}

/* The plugins cordon ships, whose claims are cordon's own code (docs/policy.md). The
 * version must be this build's as well: a file of the same name from elsewhere is a third
 * party's. */
bool policy_plugin_is_cordons(const char *name, const char *version)
{
	static const char *const own[] = { "docker", "podman", "kvm", "hvf", "hyperv", "e2b", NULL };
	return name && version && g_strv_contains(own, name) &&
	       strcmp(version, PACKAGE_VERSION) == 0;
}

cordon_containment policy_claim_cap(const policy_tier *t, bool third_party, bool *ret_default)
{
	*ret_default = !t->max_containment && third_party;
	return t->max_containment ? t->max_containment
	       : third_party      ? POLICY_PLUGIN_CLAIM_DEFAULT_CAP
				  : 0;
}

/* ---- sections ----------------------------------------------------------------------- */

static void read_plugins(pctx *c, const cfg_node *n)
{
	static const char *const keys[] = { "dir", "load", NULL };
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	const cfg_node *dir = cfg_map_get(n, "dir");
	const char *d = dir ? policy_want_abs_path(c, dir) : NULL;
	if (d)
		c->p->plugin_dir = g_strdup(d);
	const cfg_node *load = cfg_map_get(n, "load");
	if (!load || !policy_want_seq(c, load))
		return;
	for (guint i = 0; i < load->items->len; i++) {
		const cfg_node *item = load->items->pdata[i];
		const char *name = policy_want_name(c, item, "plugin");
		if (!name)
			continue;
		if (g_strv_contains((const char *const *)c->p->plugin_load->pdata, name)) {
			policy_err(c, ERRC(policy_invalid), item, item->path,
				   "plugin '%s' is listed twice", name);
			continue;
		}
		g_ptr_array_insert(c->p->plugin_load, c->p->plugin_load->len - 1, g_strdup(name));
	}
}

void policy_tier_free(gpointer data)
{
	policy_tier *t = data;
	g_free(t->name);
	g_free(t->driver);
	g_strfreev(t->egress_allow);
	g_strfreev(t->egress_deny);
	g_free(t);
}

static const char *const containment_names[] = {
	"process-jail", "kernel", "container", "userspace-kernel", "microvm", "remote", NULL
};

/* The keys of a tier the core reads itself; the rest are its driver's. */
static const char *const tier_core_keys[] = {
	"driver", "limits", "fallback", "max_containment", "egress", "probe_timeout", NULL
};

/* The longest probe_timeout: a probe that boots a guest under emulation on a loaded
 * host takes seconds; one that takes minutes is a hang. */
#define PROBE_TIMEOUT_MAX_MS (300 * 1000)

/* One list of egress rules, each checked by the proxy's own parser (net/egress.h), so
 * that a rule the proxy would refuse is an error here, at its position. */
static char **read_egress_list(pctx *c, const cfg_node *n, const char *which)
{
	GPtrArray *out = g_ptr_array_new();
	if (n && policy_want_seq(c, n)) {
		for (guint i = 0; i < n->items->len; i++) {
			const cfg_node *item = n->items->pdata[i];
			const char *s = policy_want_string(c, item);
			if (!s)
				continue;
			const char *one[] = { s, NULL };
			net_egress *e = NULL;
			char why[256];
			bool allow = strcmp(which, "allow") == 0;
			if (net_egress_new(allow ? one : NULL, allow ? NULL : one, &e, why,
					   sizeof(why)) < 0) {
				policy_err(c, ERRC(policy_invalid), item, item->path, "%s", why);
				continue;
			}
			net_egress_free(e);
			g_ptr_array_add(out, g_strdup(s));
		}
	}
	g_ptr_array_add(out, NULL);
	return (char **)g_ptr_array_free(out, FALSE);
}

/* egress: {allow: [...], deny: [...]} (docs/policy.md, "Egress"). */
static void read_tier_egress(pctx *c, policy_tier *t, const cfg_node *n)
{
	static const char *const keys[] = { "allow", "deny", NULL };
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	t->egress_set = true;
	t->egress_allow = read_egress_list(c, cfg_map_get(n, "allow"), "allow");
	t->egress_deny = read_egress_list(c, cfg_map_get(n, "deny"), "deny");
}

/* probe_timeout: how long admission and `cordon probe` wait for the tier's probe
 * (docs/policy.md, "Tiers"): 1 s to 5 min. */
static void read_probe_timeout(pctx *c, policy_tier *t, const cfg_node *n)
{
	const char *why = NULL;
	uint64_t ms = 0;
	if (policy_read_u64(n, CORDON_PLUGIN_CONFIG_DURATION, &ms, &why) < 0)
		policy_err(c, ERRC(policy_type), n, n->path, "not a duration such as 30s: %s", why);
	else if (ms < 1000 || ms > PROBE_TIMEOUT_MAX_MS)
		policy_err(c, ERRC(policy_invalid), n, n->path, "%s is outside 1s to 5m",
			   n->scalar);
	else
		t->probe_timeout_ms = ms;
}

/* fallback, max_containment, egress and probe_timeout (docs/policy.md, "Tiers"). */
static void read_tier_core(pctx *c, policy_tier *t, const cfg_node *sec)
{
	static const char *const fallbacks[] = { "refuse", "next", NULL };
	const cfg_node *v;
	if ((v = cfg_map_get(sec, "limits")))
		policy_want_limits(c, v, &t->limits);
	if ((v = cfg_map_get(sec, "fallback")))
		t->fallback_next = policy_want_enum(c, v, fallbacks, "fallback") == 1;
	if ((v = cfg_map_get(sec, "max_containment"))) {
		int i = policy_want_enum(c, v, containment_names, "containment");
		if (i >= 0)
			t->max_containment = (cordon_containment)(i + 1);
	}
	if ((v = cfg_map_get(sec, "egress")))
		read_tier_egress(c, t, v);
	if ((v = cfg_map_get(sec, "probe_timeout")))
		read_probe_timeout(c, t, v);
}

static void read_tier(pctx *c, const cfg_node *key, cfg_node *sec)
{
	if (!policy_valid_name(key->scalar, false)) {
		policy_err(c, ERRC(policy_type), key, sec->path,
			   "'%s' is not a valid tier name: 1 to 64 of a-z 0-9 _ -, starting with a "
			   "letter "
			   "or digit",
			   key->scalar);
		return;
	}
	if (!policy_want_map(c, sec))
		return;
	const cfg_node *drv = cfg_map_get(sec, "driver");
	if (!drv) {
		policy_err(c, ERRC(policy_invalid), sec, sec->path,
			   "missing required key 'driver'");
		return;
	}
	const char *driver = policy_want_name(c, drv, "driver");
	if (!driver)
		return;
	policy_tier *t = g_new0(policy_tier, 1);
	t->name = g_strdup(key->scalar);
	t->driver = g_strdup(driver);
	t->section = sec;
	t->at = key;
	read_tier_core(c, t, sec);
	g_ptr_array_add(c->p->tiers, t);
}

static void read_tiers(pctx *c, const cfg_node *n)
{
	if (!policy_want_map(c, n))
		return;
	for (guint i = 0; i < n->keys->len; i++)
		read_tier(c, n->keys->pdata[i], n->items->pdata[i]);
	/* References are checked against an index: policies may be large. */
	c->tier_index = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < c->p->tiers->len; i++) {
		policy_tier *t = c->p->tiers->pdata[i];
		g_hash_table_insert(c->tier_index, t->name, t);
	}
}

const char *const policy_trust_names[] = { "trusted", "semi-trusted", "untrusted", NULL };

/* The names of every tier, NULL-terminated, borrowed from the policy. */
static const char **tier_names(const cordon_policy *p)
{
	const char **v = g_new0(const char *, p->tiers->len + 1);
	for (guint i = 0; i < p->tiers->len; i++)
		v[i] = ((const policy_tier *)p->tiers->pdata[i])->name;
	return v;
}

/* A tier name that must name a tier of the policy. */
static bool want_tier_ref(pctx *c, const cfg_node *n, const char *s)
{
	if (c->tier_index ? g_hash_table_contains(c->tier_index, s)
			  : policy_find_tier(c->p, s) != NULL)
		return true;
	g_autofree const char **names = tier_names(c->p);
	const char *hint = cfg_did_you_mean(s, names);
	if (hint)
		policy_err(c, ERRC(policy_invalid), n, n->path,
			   "unknown tier '%s' (did you mean '%s'?)", s, hint);
	else
		policy_err(c, ERRC(policy_invalid), n, n->path,
			   "unknown tier '%s': it is not under tiers", s);
	return false;
}

/* The top-level key that lets a trust level's work run in the process jail,
 * below its built-in minimum: NULL for trusted work, whose minimum it is. */
const char *policy_jail_key(cordon_trust level)
{
	switch (level) {
	case CORDON_TRUST_TRUSTED: return NULL;
	case CORDON_TRUST_SEMI_TRUSTED: return "allow_semi_trusted_on_jail";
	default: return "allow_untrusted_on_jail";
	}
}

static bool jail_allowed(const cordon_policy *p, cordon_trust level)
{
	switch (level) {
	case CORDON_TRUST_TRUSTED: return true;
	case CORDON_TRUST_SEMI_TRUSTED: return p->allow_semi_trusted_on_jail;
	default: return p->allow_untrusted_on_jail;
	}
}

static void read_trust_level(pctx *c, cordon_trust level, const cfg_node *n)
{
	static const char *const keys[] = { "require", "tiers", "relax", NULL };
	policy_trust *pt = &c->p->trust[level];
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	pt->set = true;
	const cfg_node *req = cfg_map_get(n, "require");
	if (req) {
		int i = policy_want_enum(c, req, containment_names, "containment");
		if (i >= 0)
			pt->declared = (cordon_containment)(i + 1);
	}
	const cfg_node *relax = cfg_map_get(n, "relax");
	if (relax)
		policy_want_bool(c, relax, &pt->relax);
	cordon_containment builtin = policy_builtin_minimum(level);
	pt->require = pt->declared ? pt->declared : builtin;
	if (!pt->relax && pt->require < builtin)
		pt->require = builtin;
	if (pt->relax && pt->require < builtin)
		g_debug("policy %s: trust %s relaxed to %s, below the built-in minimum %s", c->name,
			policy_trust_names[level - 1], cordon_containment_to_string(pt->require),
			cordon_containment_to_string(builtin));
	/* relax: true alone is not enough to run untrusted or semi-trusted work
	 * with the host user's rights (root's, when cordon runs as root). */
	if (pt->require == CORDON_CONTAINMENT_PROCESS_JAIL && !jail_allowed(c->p, level))
		policy_err(c,
			   level == CORDON_TRUST_UNTRUSTED ? ERRC(policy_untrusted_on_jail)
							   : ERRC(policy_semi_trusted_on_jail),
			   req ? req : n, req ? req->path : n->path,
			   "%s work would run in the process jail, with the rights of the user "
			   "running cordon (host root, as root): if that is meant, say so with "
			   "`%s: true` at the top level",
			   policy_trust_names[level - 1], policy_jail_key(level));
	const cfg_node *tiers = cfg_map_get(n, "tiers");
	if (!tiers || !policy_want_seq(c, tiers))
		return;
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < tiers->items->len; i++) {
		const cfg_node *item = tiers->items->pdata[i];
		const char *s = policy_want_string(c, item);
		if (!s || !want_tier_ref(c, item, s))
			continue;
		if (!g_hash_table_add(seen, (gpointer)s)) {
			policy_err(c, ERRC(policy_invalid), item, item->path,
				   "tier '%s' is listed twice", s);
			continue;
		}
		g_ptr_array_add(pt->tiers, g_strdup(s));
	}
}

static void read_trust(pctx *c, const cfg_node *n)
{
	if (!policy_want_map(c, n))
		return;
	for (guint i = 0; i < n->keys->len; i++) {
		const cfg_node *k = n->keys->pdata[i];
		int level = -1;
		for (int j = 0; policy_trust_names[j]; j++)
			if (strcmp(k->scalar, policy_trust_names[j]) == 0)
				level = j + 1;
		if (level < 0)
			policy_unknown_key(c, n, i, policy_trust_names, "trust level");
		else
			read_trust_level(c, (cordon_trust)level, n->items->pdata[i]);
	}
}

void policy_rule_free(gpointer data)
{
	policy_rule *r = data;
	g_free(r->name);
	g_ptr_array_unref(r->when_tiers);
	g_ptr_array_unref(r->when_drivers);
	g_ptr_array_unref(r->when_labels);
	g_free(r);
}

static void read_when_labels(pctx *c, policy_rule *rule, const cfg_node *n)
{
	if (!policy_want_map(c, n))
		return;
	for (guint i = 0; i < n->keys->len; i++) {
		const cfg_node *k = n->keys->pdata[i];
		const cfg_node *val = n->items->pdata[i];
		const char *v = policy_want_string(c, val);
		if (strchr(k->scalar, '=') || strchr(k->scalar, '\n')) {
			policy_err(c, ERRC(policy_type), k, val->path,
				   "a label key has no '=' and no newline");
			continue;
		}
		if (v)
			g_ptr_array_add(rule->when_labels, g_strdup_printf("%s=%s", k->scalar, v));
	}
}

static void read_when(pctx *c, policy_rule *rule, const cfg_node *n)
{
	static const char *const keys[] = { "trust", "tier", "driver", "labels", NULL };
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	const cfg_node *v;
	if ((v = cfg_map_get(n, "trust"))) {
		const cfg_node *one[] = { v };
		const cfg_node *const *items = v->kind == CFG_SEQ
						       ? (const cfg_node *const *)v->items->pdata
						       : one;
		guint count = v->kind == CFG_SEQ ? v->items->len : 1;
		for (guint i = 0; i < count; i++) {
			int t = policy_want_enum(c, items[i], policy_trust_names, "trust level");
			if (t >= 0)
				rule->when_trust |= 1u << (t + 1);
		}
	}
	if ((v = cfg_map_get(n, "tier"))) {
		g_autoptr(GPtrArray) names = policy_want_string_list(c, v, true);
		for (guint i = 0; i < names->len; i++) {
			const cfg_node *at = v->kind == CFG_SEQ ? v->items->pdata[i] : v;
			if (want_tier_ref(c, at, names->pdata[i]))
				g_ptr_array_add(rule->when_tiers, g_strdup(names->pdata[i]));
		}
	}
	if ((v = cfg_map_get(n, "driver"))) {
		g_autoptr(GPtrArray) names = policy_want_string_list(c, v, true);
		for (guint i = 0; i < names->len; i++)
			g_ptr_array_add(rule->when_drivers, g_strdup(names->pdata[i]));
	}
	if ((v = cfg_map_get(n, "labels")))
		read_when_labels(c, rule, v);
}

static void read_require(pctx *c, policy_rule *rule, const cfg_node *n)
{
	static const char *const keys[] = { "egress", "image", "workspace", NULL };
	static const char *const egress[] = { "deny", "governed", NULL };
	static const char *const image[] = { "pinned", NULL };
	static const char *const workspace[] = { "read-only", NULL };
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	const cfg_node *v;
	if ((v = cfg_map_get(n, "egress"))) {
		int e = policy_want_enum(c, v, egress, "egress requirement");
		if (e >= 0)
			rule->require_egress = e; /* deny = 0, governed = 1, as cordon_egress */
	}
	if ((v = cfg_map_get(n, "image")) &&
	    policy_want_enum(c, v, image, "image requirement") == 0)
		rule->require_image_pinned = true;
	if ((v = cfg_map_get(n, "workspace")) &&
	    policy_want_enum(c, v, workspace, "workspace requirement") == 0)
		rule->require_workspace_ro = true;
}

static bool rule_has_require(const policy_rule *r)
{
	return r->require_egress >= 0 || r->require_image_pinned || r->require_workspace_ro;
}

static void read_rule(pctx *c, const cfg_node *n)
{
	static const char *const keys[] = {
		"name", "when", "deny", "require", "limit", "mode", NULL
	};
	static const char *const modes[] = { "enforce", "warn", "audit", NULL };
	if (!policy_want_map(c, n))
		return;
	/* A misspelt effect is one error, not also "the rule has no effect". */
	bool keys_ok = policy_check_keys(c, n, keys);
	policy_rule *rule = g_new0(policy_rule, 1);
	rule->require_egress = -1;
	rule->when_tiers = g_ptr_array_new_with_free_func(g_free);
	rule->when_drivers = g_ptr_array_new_with_free_func(g_free);
	rule->when_labels = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(c->p->rules, rule);

	const cfg_node *name = cfg_map_get(n, "name");
	const char *s = name ? policy_want_string(c, name) : NULL;
	if (!name)
		policy_err(c, ERRC(policy_invalid), n, n->path, "missing required key 'name'");
	else if (s && !policy_valid_name(s, true))
		policy_err(c, ERRC(policy_type), name, name->path,
			   "'%s' is not a valid rule name: 1 to 64 of A-Z a-z 0-9 _ . -", s);
	else if (s) {
		rule->name = g_strdup(s);
		if (!g_hash_table_add(c->rule_names, rule->name))
			policy_err(c, ERRC(policy_invalid), name, name->path,
				   "rule name '%s' is used twice", rule->name);
	}

	const cfg_node *v;
	if ((v = cfg_map_get(n, "mode"))) {
		int m = policy_want_enum(c, v, modes, "rule mode");
		rule->mode = m > 0 ? (policy_rule_mode)m : POLICY_RULE_ENFORCE;
	}
	if ((v = cfg_map_get(n, "when")))
		read_when(c, rule, v);
	if ((v = cfg_map_get(n, "deny")))
		policy_want_bool(c, v, &rule->deny);
	if ((v = cfg_map_get(n, "require")))
		read_require(c, rule, v);
	if ((v = cfg_map_get(n, "limit")))
		policy_want_limits(c, v, &rule->limit);
	bool has_other = rule_has_require(rule) || cfg_map_get(n, "require") ||
			 cfg_map_get(n, "limit");
	if (rule->deny && has_other)
		policy_err(
			c, ERRC(policy_invalid), n, n->path,
			"a rule with deny: true takes no require or limit (it refuses outright)");
	else if (!rule->deny && !has_other && keys_ok && !cfg_map_get(n, "deny"))
		policy_err(c, ERRC(policy_invalid), n, n->path,
			   "the rule has no effect: give it deny: true, require or limit");
}

static void read_rules(pctx *c, const cfg_node *n)
{
	if (!policy_want_seq(c, n))
		return;
	for (guint i = 0; i < n->items->len; i++)
		read_rule(c, n->items->pdata[i]);
}

/* Records are appended to a file: a directory there ("/" first) would refuse
 * every run, or with required: false silently lose every record. Anything
 * else that is not a regular file (a symlink, a FIFO, which can appear
 * later) is refused by audit_append at each write. */
static const char *audit_path_problem(const char *s)
{
	struct stat st;
	if (strcmp(s, "/") == 0 || (lstat(s, &st) == 0 && S_ISDIR(st.st_mode)))
		return "is a directory";
	return NULL;
}

/* An argv can carry what the host would not keep (a token on a command line): the
 * default records its SHA-256 only, which still matches a known command. */
static void read_audit_argv(pctx *c, const cfg_node *n)
{
	static const char *const names[] = {
		[AUDIT_ARGV_HASH] = "hash", [AUDIT_ARGV_FULL] = "full", [AUDIT_ARGV_NONE] = "none"
	};
	c->p->audit_argv = AUDIT_ARGV_HASH;
	const char *s = n ? policy_want_string(c, n) : NULL;
	if (!s)
		return;
	for (int i = 0; i < (int)G_N_ELEMENTS(names); i++)
		if (strcmp(s, names[i]) == 0) {
			c->p->audit_argv = i;
			return;
		}
	policy_err(c, ERRC(policy_invalid), n, n->path,
		   "record_argv is 'full', 'hash' or 'none', not '%s'", s);
}

static void read_audit(pctx *c, const cfg_node *n)
{
	static const char *const keys[] = { "path", "required", "record_argv", NULL };
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	const cfg_node *path = cfg_map_get(n, "path");
	if (!path) {
		policy_err(c, ERRC(policy_invalid), n, n->path, "missing required key 'path'");
	} else {
		const char *s = policy_want_abs_path(c, path);
		const char *why = s ? audit_path_problem(s) : NULL;
		if (why)
			policy_err(c, ERRC(policy_path), path, path->path,
				   "audit path '%s' %s: name the file "
				   "records are appended to",
				   s, why);
		else if (s)
			c->p->audit_path = g_strdup(s);
	}
	c->p->audit_required = true; /* fail closed unless the policy says otherwise */
	const cfg_node *req = cfg_map_get(n, "required");
	if (req)
		policy_want_bool(c, req, &c->p->audit_required);
	read_audit_argv(c, cfg_map_get(n, "record_argv"));
}

/* The schema version is read first and alone: a policy for another version
 * is not worth reporting key by key. */
int policy_read_version(pctx *c, const cfg_node *root, cordon_error **reterr)
{
	const cfg_node *v = cfg_map_get(root, "cordon");
	if (!v)
		return cfg_error(reterr, ERRC(policy_version), c->name, root, NULL,
				 "missing the schema version: the policy starts with `cordon: %d`",
				 POLICY_VERSION);
	uint64_t version = 0;
	const char *why;
	if (v->kind != CFG_SCALAR || !v->plain || units_parse_uint(v->scalar, &version, &why) < 0)
		return cfg_error(reterr, ERRC(policy_version), c->name, v, v->path,
				 "the schema version is a whole number (`cordon: %d`), got %s",
				 POLICY_VERSION, policy_node_kind(v));
	if (version != POLICY_VERSION)
		return cfg_error(reterr, ERRC(policy_version), c->name, v, v->path,
				 "unsupported policy version %" G_GUINT64_FORMAT
				 ": this cordon reads "
				 "version %d",
				 version, POLICY_VERSION);
	return 0;
}

void policy_read_sections(pctx *c, const cfg_node *root)
{
	static const char *const keys[] = { "cordon",
					    "plugins",
					    "tiers",
					    "trust",
					    "select",
					    "rules",
					    "audit",
					    "allow_untrusted_on_jail",
					    "allow_semi_trusted_on_jail",
					    "server",
					    "secrets",
					    "services",
					    NULL };
	static const char *const selects[] = { "strongest", "first", NULL };
	policy_check_keys(c, root, keys);
	const cfg_node *v;
	/* Before trust, which it lets reach the process jail. */
	if ((v = cfg_map_get(root, "allow_untrusted_on_jail")))
		policy_want_bool(c, v, &c->p->allow_untrusted_on_jail);
	if ((v = cfg_map_get(root, "allow_semi_trusted_on_jail")))
		policy_want_bool(c, v, &c->p->allow_semi_trusted_on_jail);
	if ((v = cfg_map_get(root, "plugins")))
		read_plugins(c, v);
	if ((v = cfg_map_get(root, "tiers")))
		read_tiers(c, v);
	if ((v = cfg_map_get(root, "trust")))
		read_trust(c, v);
	if ((v = cfg_map_get(root, "select"))) {
		int s = policy_want_enum(c, v, selects, "select");
		if (s >= 0)
			c->p->select = (policy_select)s;
	}
	if ((v = cfg_map_get(root, "rules")))
		read_rules(c, v);
	if ((v = cfg_map_get(root, "audit")))
		read_audit(c, v);
	if (cfg_map_get(root, "secrets") || cfg_map_get(root, "services"))
		policy_read_services(c, cfg_map_get(root, "secrets"),
				     cfg_map_get(root, "services"));
	/* `cordon server`'s own section: it checks the keys (docs/server.md). */
	if ((v = cfg_map_get(root, "server")))
		policy_want_map(c, v);
}

/* The tier section named name (the tiers' index is the reading's own). */
const policy_tier *policy_find_tier(const cordon_policy *p, const char *name)
{
	for (guint i = 0; name && i < p->tiers->len; i++) {
		const policy_tier *t = p->tiers->pdata[i];
		if (strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

/* ---- a driver's section ---------------------------------------------------------------- */

void policy_check_secret(pctx *c, const cfg_node *v)
{
	static const char *const keys[] = { "env", "file", NULL };
	if (v->kind != CFG_MAP) {
		policy_err(
			c, ERRC(policy_type), v, v->path,
			"a secret is {env: NAME} or {file: /path}, never the value itself; got %s",
			policy_node_kind(v));
		return;
	}
	if (!policy_check_keys(c, v, keys))
		return;
	const cfg_node *env = cfg_map_get(v, "env"), *file = cfg_map_get(v, "file");
	if ((env != NULL) == (file != NULL)) {
		policy_err(c, ERRC(policy_type), v, v->path,
			   "a secret has exactly one of env or file");
		return;
	}
	if (file) {
		policy_want_abs_path(c, file);
		return;
	}
	const char *name = policy_want_string(c, env);
	bool ok = name && (g_ascii_isalpha(name[0]) || name[0] == '_');
	for (const char *s = name; ok && *s; s++)
		ok = g_ascii_isalnum(*s) || *s == '_';
	if (name && !ok)
		policy_err(c, ERRC(policy_type), env, env->path,
			   "'%s' is not an environment variable name", name);
}

static void check_value(pctx *c, const cfg_node *v, uint32_t type)
{
	bool b;
	int64_t i;
	uint64_t u;
	const char *why = NULL;
	int r;
	switch (type) {
	case CORDON_PLUGIN_CONFIG_STRING:
	case CORDON_PLUGIN_CONFIG_IMAGE: policy_want_string(c, v); return;
	case CORDON_PLUGIN_CONFIG_BOOL: policy_want_bool(c, v, &b); return;
	case CORDON_PLUGIN_CONFIG_INT:
		if (policy_want_number_text(c, v, "a whole number") &&
		    (r = policy_read_int(v, &i, &why)) < 0)
			policy_number_error(c, v, r, why, "a whole number");
		return;
	case CORDON_PLUGIN_CONFIG_SIZE:
	case CORDON_PLUGIN_CONFIG_DURATION: {
		const char *what = type == CORDON_PLUGIN_CONFIG_SIZE ? "a size such as 512MiB"
								     : "a duration such as 30s";
		if (v->kind != CFG_SCALAR || cfg_is_null(v))
			policy_err(c, ERRC(policy_type), v, v->path, "expected %s, got %s", what,
				   policy_node_kind(v));
		else if ((r = policy_read_u64(v, type, &u, &why)) < 0)
			policy_number_error(c, v, r, why, what);
		return;
	}
	case CORDON_PLUGIN_CONFIG_STRING_LIST: {
		g_autoptr(GPtrArray) l = policy_want_string_list(c, v, false);
		return;
	}
	case CORDON_PLUGIN_CONFIG_SECRET: policy_check_secret(c, v); return;
	default:
		policy_err(c, ERRC(policy_invalid), v, v->path,
			   "the driver declares this key with an unknown type %u", type);
	}
}

static const cordon_plugin_config_key *find_key(const cordon_plugin_config_key *keys,
						const char *name)
{
	for (size_t i = 0; keys && keys[i].name; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

bool policy_check_section_into(const cordon_policy *p, policy_tier *t,
			       const cordon_plugin_config_key *keys, const char *image_key,
			       policy_errors *errs)
{
	if (!p || !t || !t->section)
		return true;
	t->image = NULL;
	const cfg_node *sec = t->section;
	pctx c = { .name = p->source, .p = (cordon_policy *)p, .errs = errs };
	guint before = policy_errors_count(errs);
	g_autoptr(GPtrArray) allowed = g_ptr_array_new();
	for (size_t i = 0; tier_core_keys[i]; i++)
		g_ptr_array_add(allowed, (gpointer)tier_core_keys[i]);
	for (size_t i = 0; keys && keys[i].name; i++)
		g_ptr_array_add(allowed, (gpointer)keys[i].name);
	g_ptr_array_add(allowed, NULL);
	for (guint i = 0; i < sec->keys->len; i++) {
		const cfg_node *k = sec->keys->pdata[i];
		if (g_strv_contains(tier_core_keys, k->scalar))
			continue;
		const cordon_plugin_config_key *decl = find_key(keys, k->scalar);
		if (!decl) {
			g_autofree char *what = g_strdup_printf("key for driver %s", t->driver);
			policy_unknown_key(&c, sec, i, (const char *const *)allowed->pdata, what);
			continue;
		}
		check_value(&c, sec->items->pdata[i], decl->type);
	}
	for (size_t i = 0; keys && keys[i].name; i++)
		if (keys[i].required && !cfg_map_get(sec, keys[i].name))
			policy_err(&c, ERRC(policy_invalid), sec, sec->path,
				   "missing required key '%s' (driver %s)", keys[i].name,
				   t->driver);
	if (policy_errors_count(errs) != before)
		return false;
	/* Checked a string above: admission's image rules read it from here. */
	const cfg_node *image = image_key ? cfg_map_get(sec, image_key) : NULL;
	if (image && policy_read_string(image, &t->image) < 0)
		t->image = NULL;
	return true;
}

int policy_check_section(const cordon_policy *p, policy_tier *t,
			 const cordon_plugin_config_key *keys, const char *image_key,
			 cordon_error **reterr)
{
	policy_errors *errs = policy_errors_new(p ? p->source : NULL);
	policy_check_section_into(p, t, keys, image_key, errs);
	return policy_errors_finish(errs, reterr);
}
