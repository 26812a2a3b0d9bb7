/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Admission: requirement, candidates, rules, selection, and the explanation
 * of every verdict. Never returns a tier below the requirement; anything it
 * cannot judge is a refusal. */
#include "config.h"

#include "admission.h"
#include "net/egress.h"
#include "audit.h"
#include "imageref.h"

#include <errno.h>
#include <string.h>

/* Probes are cached this long; cordon_context_probe_tier refreshes. */
#define PROBE_MAX_AGE_US (2 * (gint64)G_USEC_PER_SEC)

/* ---- one candidate ------------------------------------------------------------ */

typedef struct judge_ctx {
	cordon_context *ctx;
	const cordon_request *req;
	cordon_trust trust; /* effective */
	cordon_containment need;
	gint64 probe_deadline;   /* monotonic µs: for every candidate's probe together */
	const GPtrArray *failed; /* admission_failure*: tiers whose open failed, or NULL */
} judge_ctx;

static bool verdict(decision_candidate *c, candidate_verdict v, char *reason)
{
	c->verdict = v;
	c->reason = reason;
	return false;
}

static bool strv_has(const GPtrArray *a, const char *s)
{
	for (guint i = 0; i < a->len; i++)
		if (strcmp(a->pdata[i], s) == 0)
			return true;
	return false;
}

static bool rule_matches(const policy_rule *r, cordon_trust trust, const cordon_request *req,
			 const policy_tier *t)
{
	if (r->when_trust && !(r->when_trust & (1u << trust)))
		return false;
	if (r->when_tiers->len && !strv_has(r->when_tiers, t->name))
		return false;
	if (r->when_drivers->len && !strv_has(r->when_drivers, t->driver))
		return false;
	for (guint i = 0; i < r->when_labels->len; i++)
		if (!request_has_label(req, r->when_labels->pdata[i]))
			return false;
	return true;
}

/* Applies caps: a request above a cap is refused (never clamped); a request
 * without a value gets the smallest cap. Returns the limit that failed or -1. */
static int apply_caps(cordon_plugin_limits *eff, const cordon_plugin_limits *asked,
		      const cordon_plugin_limits *cap)
{
	for (unsigned i = 0; i < CORDON_LIMIT_COUNT_; i++) {
		uint32_t bit = 1u << i;
		if (!(cap->set & bit))
			continue;
		if (asked->set & bit) {
			if (asked->value[i] > cap->value[i])
				return (int)i;
		} else if (!(eff->set & bit) || eff->value[i] > cap->value[i]) {
			eff->value[i] = cap->value[i];
			eff->set |= bit;
		}
	}
	return -1;
}

static char *over_cap(unsigned i, uint64_t asked, uint64_t cap)
{
	g_autofree char *a = policy_format_limit(i, asked);
	g_autofree char *c = policy_format_limit(i, cap);
	const char *cv = strchr(c, ' ');
	return g_strdup_printf("%s > %s", a, cv ? cv + 1 : c);
}

/* The image the tier would run: the request's, else the one its driver's
 * image key names (read with the section, policy_check_section). */
static const char *effective_image(const cordon_request *req, const policy_tier *t)
{
	return req->image ? req->image : t->image;
}

/* What a tier's probe declares it enforces of egress, in words; static. */
static const char *egress_declared(uint32_t enforced)
{
	bool deny = enforced & CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY);
	bool governed = enforced & CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_GOVERNED);
	return deny && governed ? "deny and governed"
	       : deny           ? "deny only"
	       : governed       ? "governed only"
				: "no egress enforcement";
}

/* The inside path of the request's first writable mount, or NULL. */
static const char *first_rw_mount(const cordon_request *req)
{
	for (guint i = 0; i < req->mounts->len; i++) {
		const request_mount *m = req->mounts->pdata[i];
		if (m->rw)
			return m->inside;
	}
	return NULL;
}

/* Why rule r refuses the request on tier t, or NULL. egress_enforced: the
 * modes the tier's probe says it enforces (CORDON_PLUGIN_EGRESS_BIT): a rule
 * on egress holds only where the tier enforces the mode asked for. */
/* Whether tier t's driver gives a workspace read-only when asked (ABI 1.5). */
static bool gives_workspace_ro(const tier_runtime *t)
{
	return t && t->driver && (t->driver->ops.flags & CORDON_PLUGIN_DRIVER_WORKSPACE_RO);
}

static char *rule_refusal(const policy_rule *r, const cordon_request *req, const policy_tier *t,
			  uint32_t egress_enforced, bool workspace_ro_ok, cordon_plugin_limits *eff)
{
	static const char *const egress_names[] = { "deny", "governed", "allow" };
	if (r->deny)
		return g_strdup_printf("rule %s", r->name);
	if (r->require_egress >= 0 && (int)req->egress > r->require_egress)
		return g_strdup_printf("rule %s: requires egress %s, the request asks for %s",
				       r->name, egress_names[r->require_egress],
				       egress_names[req->egress]);
	if (r->require_egress >= 0 && !(egress_enforced & CORDON_PLUGIN_EGRESS_BIT(req->egress)))
		return g_strdup_printf("rule %s: requires egress %s, and tier %s does not enforce "
				       "egress %s (its probe declares %s)",
				       r->name, egress_names[r->require_egress], t->name,
				       egress_names[req->egress], egress_declared(egress_enforced));
	const char *image = effective_image(req, t);
	if (r->require_image_pinned && image && !image_ref_is_pinned(image))
		return g_strdup_printf("rule %s: requires a pinned image (name@sha256:<64 hex>), "
				       "'%s' is not",
				       r->name, image);
	if (r->require_workspace_ro && req->workspace && !workspace_ro_ok)
		return g_strdup_printf("rule %s: requires a read-only workspace, and tier %s "
				       "cannot give a host workspace read-only",
				       r->name, t->name);
	const char *rw = r->require_workspace_ro ? first_rw_mount(req) : NULL;
	if (rw)
		return g_strdup_printf("rule %s: requires a read-only workspace, and the mount at "
				       "%s is writable (drop :rw)",
				       r->name, rw);
	int over = apply_caps(eff, &req->limits, &r->limit);
	if (over >= 0) {
		g_autofree char *why = over_cap((unsigned)over, req->limits.value[over],
						r->limit.value[over]);
		return g_strdup_printf("rule %s: %s", r->name, why);
	}
	return NULL;
}

/* A rule in mode warn or audit: what enforcing it would have said is kept with the
 * candidate, and nothing else changes (not even the limits it would cap). */
static void note_rule(judge_ctx *j, const policy_rule *r, const policy_tier *t,
		      uint32_t egress_enforced, decision_candidate *c)
{
	cordon_plugin_limits scratch = c->limits;
	char *why = rule_refusal(r, j->req, t, egress_enforced, gives_workspace_ro(c->runtime),
				 &scratch);
	if (!why && scratch.set == c->limits.set &&
	    memcmp(scratch.value, c->limits.value, sizeof(scratch.value)) == 0)
		return;
	if (!why)
		why = g_strdup_printf("rule %s: would set limits the request does not ask for",
				      r->name);
	decision_rule_hit *h = g_new0(decision_rule_hit, 1);
	h->rule = g_strdup(r->name);
	h->mode = r->mode;
	h->reason = why;
	if (!c->hits)
		c->hits = g_ptr_array_new_with_free_func(decision_rule_hit_free);
	g_ptr_array_add(c->hits, h);
}

static bool judge_rules(judge_ctx *j, const policy_tier *t, uint32_t egress_enforced,
			decision_candidate *c)
{
	c->limits = j->req->limits;
	int over = apply_caps(&c->limits, &j->req->limits, &t->limits);
	if (over >= 0) {
		g_autofree char *why = over_cap((unsigned)over, j->req->limits.value[over],
						t->limits.value[over]);
		return verdict(c, VERDICT_DENIED, g_strdup_printf("tier limit: %s", why));
	}
	const GPtrArray *rules = j->ctx->policy->rules;
	for (guint i = 0; i < rules->len; i++) {
		const policy_rule *r = rules->pdata[i];
		if (!rule_matches(r, j->trust, j->req, t))
			continue;
		if (r->mode != POLICY_RULE_ENFORCE) {
			note_rule(j, r, t, egress_enforced, c);
			continue;
		}
		char *why = rule_refusal(r, j->req, t, egress_enforced,
					 gives_workspace_ro(c->runtime), &c->limits);
		if (why) {
			c->rule = g_strdup(r->name);
			c->writable_mount = r->require_workspace_ro && !j->req->workspace &&
					    first_rw_mount(j->req);
			return verdict(c, VERDICT_DENIED, why);
		}
		if (r->require_workspace_ro && j->req->workspace)
			c->workspace_ro = true; /* admitted so: the driver is told */
	}
	return true;
}

/* The candidates' tiers (NULL: not in the policy), and those judge() will
 * probe probed at once: judged one by one, each waits only for what is left
 * of the probe it began with the others. */
static tier_runtime **start_probes(cordon_context *ctx, const cordon_request *req,
				   const policy_trust *pt)
{
	tier_runtime **tiers = g_new(tier_runtime *, pt->tiers->len ? pt->tiers->len : 1);
	for (guint i = 0; i < pt->tiers->len; i++) {
		const char *name = pt->tiers->pdata[i];
		tier_runtime *t = tiers[i] = context_find_tier(ctx, name);
		if (t && !t->unusable && (!req->tier || strcmp(req->tier, name) == 0))
			context_probe_start(ctx, t, PROBE_MAX_AGE_US);
	}
	return tiers;
}

/* Why t's open failed earlier in this cordon_sandbox_open (fallback: next), or NULL. */
static const char *open_failure(const GPtrArray *failed, const tier_runtime *t)
{
	for (guint i = 0; failed && i < failed->len; i++) {
		const admission_failure *f = failed->pdata[i];
		if (f->tier == t)
			return f->why;
	}
	return NULL;
}

/* The containment a driver claims, capped: by the tier's max_containment, and a
 * third-party driver's by POLICY_PLUGIN_CLAIM_DEFAULT_CAP when the tier sets none
 * (docs/policy.md, "Capping plugin claims"). */
static void take_claim(decision_candidate *c, const tier_runtime *t, cordon_containment claimed)
{
	const plugin_record *plugin = t->driver->plugin;
	c->claimed = claimed;
	c->origin = plugin ? g_strdup(plugin->name) : NULL;
	bool third_party = plugin && !policy_plugin_is_cordons(plugin->name, plugin->version);
	c->cap = policy_claim_cap(t->cfg, third_party, &c->cap_default);
	c->containment = c->cap && claimed > c->cap ? c->cap : claimed;
}

/* Where a claim came from, for a plugin's driver or a capped claim, else "":
 * " (plugin P claims microvm; capped to container by ...)". */
static char *claim_text(const decision_candidate *c)
{
	bool capped = c->claimed > c->containment;
	if (!capped && !c->origin)
		return g_strdup("");
	GString *s = g_string_new(NULL);
	g_string_printf(s, " (%s%s claims %s", c->origin ? "plugin " : "",
			c->origin ? c->origin : "cordon", cordon_containment_to_string(c->claimed));
	if (capped)
		g_string_append_printf(s, "; capped to %s by %s",
				       cordon_containment_to_string(c->cap),
				       c->cap_default ? "default: set max_containment on the tier "
							"to take a plugin's higher claim"
						      : "max_containment");
	else if (c->cap)
		g_string_append_printf(s, "; max_containment %s",
				       cordon_containment_to_string(c->cap));
	g_string_append_c(s, ')');
	return g_string_free(s, FALSE);
}

/* The limits open would enforce (c->limits) against what the tier's driver says it
 * enforces now: a tier that cannot enforce one is passed over, as open would refuse. */
static bool judge_enforceable(const tier_runtime *t, const cordon_plugin_probe *pr,
			      decision_candidate *c)
{
	uint32_t missing = t->driver->ops.flags & CORDON_PLUGIN_DRIVER_LIMITS
				   ? c->limits.set & ~pr->limits
				   : 0;
	char why[512];
	if (!missing && t->driver->check_limits &&
	    t->driver->check_limits(t->state, &c->limits, why, sizeof(why)) < 0)
		return verdict(c, VERDICT_UNENFORCEABLE, g_strdup(why));
	if (!missing) {
		c->verdict = VERDICT_PASSED_OVER;
		return true;
	}
	GString *s = g_string_new("cannot enforce the ");
	bool first = true;
	for (unsigned i = 0; i < CORDON_LIMIT_COUNT_; i++)
		if (missing & (1u << i)) {
			g_string_append_printf(s, "%s%s", first ? "" : " and ",
					       policy_limit_name(i));
			first = false;
		}
	g_string_append(s, first ? "" : " limit here");
	return verdict(c, VERDICT_UNENFORCEABLE, g_string_free(s, FALSE));
}

/* A tier's egress rules are never left unenforced: a governed request on a tier with
 * `egress:` rules runs only where the tier's probe declares governed (docs/network.md).
 * A tier without rules is its driver's to judge at open (the kernel tier refuses; the
 * container tiers' governance is the administrator's named network). */
static bool judge_egress(const judge_ctx *j, const tier_runtime *t, const cordon_plugin_probe *pr,
			 decision_candidate *c)
{
	if (j->req->egress != CORDON_EGRESS_GOVERNED)
		return true;
	bool enforces = pr->egress_enforced &
			CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_GOVERNED);
	/* A tier that enforces governed egress does it by its egress: rules (cordon's
	 * proxy): without rules it has nothing to enforce and its open refuses. A tier that
	 * enforces nothing at all (the process jail: the host's network) cannot govern
	 * anything. One that enforces deny but not governed, without rules, is left to its
	 * driver (a container tier on the admin's named network, docs/network.md). */
	if (!t->cfg->egress_set && enforces)
		return verdict(c, VERDICT_DENIED,
			       g_strdup("governed egress here needs the tier's egress: rules, and "
					"it has none"));
	if (!t->cfg->egress_set && pr->egress_enforced == 0)
		return verdict(c, VERDICT_DENIED,
			       g_strdup("cannot govern egress (its probe declares no egress "
					"enforcement: the work would have the host's network)"));
	if (!t->cfg->egress_set)
		return true;
	if (!enforces)
		return verdict(c, VERDICT_DENIED,
			       g_strdup_printf("cannot enforce the tier's egress rules (its probe "
					       "declares %s)",
					       egress_declared(pr->egress_enforced)));
	return true;
}

/* The policy's services need a listener inside each sandbox (the driver's listen op,
 * sandbox-services.c): a tier whose driver has none, or whose probe does not say its
 * sandboxes can listen (the process jail shares the host's network), is passed over, as open
 * would refuse it. */
static bool judge_services(const judge_ctx *j, const tier_runtime *t, const cordon_plugin_probe *pr,
			   decision_candidate *c)
{
	if (j->ctx->policy->services->len == 0)
		return true;
	if (!t->driver->ops.listen)
		return verdict(c, VERDICT_UNSUPPORTED,
			       g_strdup_printf("cannot carry the policy's services (driver %s has "
					       "no listener inside a sandbox)",
					       t->driver->ops.name));
	if (!(pr->features & CORDON_PLUGIN_PROBE_LISTEN))
		return verdict(c, VERDICT_UNSUPPORTED,
			       g_strdup("cannot carry the policy's services here (its sandboxes "
					"have no network of their own to listen in)"));
	return true;
}

/* Judges one candidate, of tier t; true when it may run the request. */
static bool judge(judge_ctx *j, decision_candidate *c, tier_runtime *t)
{
	if (!t)
		return verdict(c, VERDICT_UNAVAILABLE,
			       g_strdup("unavailable: no such tier in the policy"));
	c->driver = g_strdup(t->cfg->driver);
	if (j->req->tier && strcmp(j->req->tier, c->tier) != 0)
		return verdict(
			c, VERDICT_NOT_REQUESTED,
			g_strdup_printf("not requested (tier %s was asked for)", j->req->tier));
	if (t->unusable)
		return verdict(c, VERDICT_UNAVAILABLE,
			       g_strdup_printf("unavailable: %s", t->unusable));
	const char *failed = open_failure(j->failed, t);
	if (failed)
		return verdict(c, VERDICT_UNAVAILABLE,
			       g_strdup_printf("unavailable: the open failed (%s); fallback: next",
					       failed));
	cordon_plugin_probe pr;
	context_probe(j->ctx, t, PROBE_MAX_AGE_US, j->probe_deadline, &pr);
	c->probed = true;
	c->available = pr.available;
	take_claim(c, t, pr.containment);
	if (!pr.available)
		return verdict(
			c, VERDICT_UNAVAILABLE,
			g_strdup_printf("unavailable: %s",
					pr.reason[0] ? pr.reason : "the probe gave no reason"));
	if (c->containment < j->need) {
		g_autofree char *claim = claim_text(c);
		return verdict(c, VERDICT_INSUFFICIENT,
			       g_strdup_printf("%s < %s%s",
					       cordon_containment_to_string(c->containment),
					       cordon_containment_to_string(j->need), claim));
	}
	if (!t->driver->ops.open)
		return verdict(c, VERDICT_UNAVAILABLE,
			       g_strdup_printf("unavailable: driver %s cannot open sandboxes",
					       t->driver->ops.name));
	if (j->req->mounts->len && (!(t->driver->ops.flags & CORDON_PLUGIN_DRIVER_MOUNTS) ||
				    !(pr.features & CORDON_PLUGIN_PROBE_MOUNTS))) {
		c->no_mounts = true;
		return verdict(c, VERDICT_UNSUPPORTED,
			       g_strdup("cannot mount host directories (--mount) on this tier"));
	}
	/* Untrusted work may read what the host lends it, never write it (as a container
	 * tier's guarantees keep its workspace read-only). */
	const char *rw = first_rw_mount(j->req);
	if (rw && j->trust == CORDON_TRUST_UNTRUSTED) {
		c->writable_mount = true;
		return verdict(
			c, VERDICT_DENIED,
			g_strdup_printf("untrusted work gets no writable mount (%s is :rw)", rw));
	}
	if (!judge_rules(j, t->cfg, pr.egress_enforced, c) || !judge_egress(j, t, &pr, c))
		return false;
	if (!judge_services(j, t, &pr, c))
		return false;
	return judge_enforceable(t, &pr, c);
}

/* ---- the decision -------------------------------------------------------------- */

static cordon_decision *decision_new(const cordon_context *ctx, const cordon_request *req)
{
	cordon_decision *d = g_new0(cordon_decision, 1);
	/* cordon_request_new already fails closed; this guards the index below. */
	d->trust = req->trust >= CORDON_TRUST_TRUSTED && req->trust <= CORDON_TRUST_UNTRUSTED
			   ? req->trust
			   : CORDON_TRUST_UNTRUSTED;
	d->trust_text = g_strdup(req->trust_text);
	d->candidates = g_ptr_array_new_with_free_func(decision_candidate_free);
	d->limits = req->limits;
	d->builtin = policy_builtin_minimum(d->trust);
	const policy_trust *pt = &ctx->policy->trust[d->trust];
	d->requirement = pt->set ? pt->require : d->builtin;
	d->relaxed = d->requirement < d->builtin;
	if (d->relaxed)
		g_debug("admission: %s work relaxed to %s (built-in minimum %s) by the policy",
			cordon_trust_to_string(d->trust),
			cordon_containment_to_string(d->requirement),
			cordon_containment_to_string(d->builtin));
	return d;
}

static int select_best(const cordon_context *ctx, const cordon_decision *d)
{
	int best = -1;
	for (guint i = 0; i < d->candidates->len; i++) {
		const decision_candidate *c = d->candidates->pdata[i];
		if (c->verdict != VERDICT_PASSED_OVER)
			continue;
		/* the first eligible one, or a stronger one when the policy selects the strongest */
		if (best < 0 ||
		    (ctx->policy->select == POLICY_SELECT_STRONGEST &&
		     c->containment >
			     ((decision_candidate *)d->candidates->pdata[best])->containment))
			best = (int)i;
	}
	return best;
}

/* For a governed request: how the chosen tier enforces each egress rule. */
static char *egress_text(const cordon_request *req, const tier_runtime *t)
{
	if (req->egress != CORDON_EGRESS_GOVERNED || !t->cfg->egress_set)
		return g_strdup("");
	net_egress *e = NULL;
	char why[256];
	if (net_egress_new((const char *const *)t->cfg->egress_allow,
			   (const char *const *)t->cfg->egress_deny, &e, why, sizeof(why)) < 0)
		return g_strdup_printf("; egress rules: %s", why);
	g_autofree char *rules = net_egress_explain(e);
	net_egress_free(e);
	return g_strdup_printf("; egress governed by cordon's proxy, the sandbox's only route "
			       "out (deny wins): %s",
			       rules);
}

static void mark_chosen(const cordon_context *ctx, const cordon_request *req, cordon_decision *d,
			int best)
{
	decision_candidate *b = d->candidates->pdata[best];
	b->chosen = true;
	b->verdict = VERDICT_CHOSEN;
	g_autofree char *claim = claim_text(b);
	g_autofree char *egress = egress_text(req, b->runtime);
	b->reason = g_strdup_printf("chosen%s%s", claim, egress);
	d->tier = g_strdup(b->tier);
	d->runtime = b->runtime;
	d->driver = g_strdup(b->driver);
	d->containment = b->containment;
	d->limits = b->limits;
	d->workspace_ro = b->workspace_ro;
	d->hits = b->hits;
	const char *how = ctx->policy->select == POLICY_SELECT_FIRST ? "first" : "strongest";
	for (guint i = 0; i < d->candidates->len; i++) {
		decision_candidate *c = d->candidates->pdata[i];
		if (c->verdict == VERDICT_PASSED_OVER)
			c->reason = g_strdup_printf("eligible; %s chosen (select: %s)", b->tier,
						    how);
	}
}

static bool any_verdict(const cordon_decision *d, candidate_verdict v)
{
	for (guint i = 0; i < d->candidates->len; i++)
		if (((decision_candidate *)d->candidates->pdata[i])->verdict == v)
			return true;
	return false;
}

/* Whether a candidate was denied, for a writable mount (writable_mount) or otherwise. */
static bool any_denied(const cordon_decision *d, bool writable_mount)
{
	for (guint i = 0; i < d->candidates->len; i++) {
		const decision_candidate *c = d->candidates->pdata[i];
		if (c->verdict == VERDICT_DENIED && c->writable_mount == writable_mount)
			return true;
	}
	return false;
}

/* Whether a candidate was passed over for what the tier cannot give: mounts (no_mounts),
 * or else the policy's services. */
static bool any_unsupported(const cordon_decision *d, bool no_mounts)
{
	for (guint i = 0; i < d->candidates->len; i++) {
		const decision_candidate *c = d->candidates->pdata[i];
		if (c->verdict == VERDICT_UNSUPPORTED && c->no_mounts == no_mounts)
			return true;
	}
	return false;
}

static char *refusal_message(const cordon_decision *d, const cordon_request *req,
			     bool tier_not_candidate)
{
	GString *s = g_string_new(NULL);
	if (strcmp(d->trust_text, cordon_trust_to_string(d->trust)) != 0)
		g_string_append_printf(s, "unknown trust '%s' is treated as untrusted; ",
				       d->trust_text);
	g_string_append_printf(s, "%s work requires %s", cordon_trust_to_string(d->trust),
			       cordon_containment_to_string(d->requirement));
	if (d->relaxed)
		g_string_append_printf(s, " (relaxed below the built-in %s)",
				       cordon_containment_to_string(d->builtin));
	g_string_append(s, "; ");
	if (tier_not_candidate) {
		g_string_append_printf(s, "tier %s is not a candidate for %s work", req->tier,
				       cordon_trust_to_string(d->trust));
		g_string_append(s,
				d->candidates->len ? " (candidates: " : " (the policy lists none)");
		for (guint i = 0; i < d->candidates->len; i++)
			g_string_append_printf(
				s, "%s%s", i ? ", " : "",
				((decision_candidate *)d->candidates->pdata[i])->tier);
		if (d->candidates->len)
			g_string_append_c(s, ')');
		return g_string_free(s, FALSE);
	}
	if (d->candidates->len == 0)
		g_string_append(s, "the policy lists no tier for it");
	for (guint i = 0; i < d->candidates->len; i++) {
		const decision_candidate *c = d->candidates->pdata[i];
		g_string_append_printf(s, "%s%s: %s", i ? "; " : "", c->tier, c->reason);
	}
	return g_string_free(s, FALSE);
}

static int refuse(cordon_decision *d, const cordon_request *req, bool tier_not_candidate,
		  cordon_error **reterr)
{
	bool denied = tier_not_candidate || any_denied(d, false);
	d->code = denied                                  ? ERRC(sandbox_denied)
		  : any_denied(d, true)                   ? ERRC(mount_writable)
		  : any_verdict(d, VERDICT_UNENFORCEABLE) ? ERRC(limit_unenforceable)
		  : any_unsupported(d, true)              ? ERRC(mount_unsupported)
		  : any_unsupported(d, false)             ? ERRC(services_unsupported)
							  : ERRC(containment_insufficient);
	d->refusal = refusal_message(d, req, tier_not_candidate);
	return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, d->code, "%s", d->refusal);
}

static bool tier_is_candidate(const policy_trust *pt, const char *tier)
{
	for (guint i = 0; i < pt->tiers->len; i++)
		if (strcmp(pt->tiers->pdata[i], tier) == 0)
			return true;
	return false;
}

static int decide(cordon_context *ctx, const cordon_request *req, const GPtrArray *failed,
		  cordon_decision *d, cordon_error **reterr)
{
	const policy_trust *pt = &ctx->policy->trust[d->trust];
	judge_ctx j = { ctx,
			req,
			d->trust,
			d->requirement,
			g_get_monotonic_time() + CONTEXT_PROBE_BOUND_US,
			failed };
	bool tier_ok = !req->tier || tier_is_candidate(pt, req->tier);
	g_autofree tier_runtime **tiers = tier_ok ? start_probes(ctx, req, pt) : NULL;
	for (guint i = 0; i < pt->tiers->len; i++) {
		decision_candidate *c = g_new0(decision_candidate, 1);
		c->tier = g_strdup(pt->tiers->pdata[i]);
		c->runtime = tier_ok ? tiers[i] : NULL;
		g_ptr_array_add(d->candidates, c);
		if (tier_ok)
			judge(&j, c, tiers[i]);
		else
			verdict(c, VERDICT_NOT_REQUESTED,
				g_strdup_printf("not requested (tier %s was asked for)",
						req->tier));
	}
	int best = tier_ok ? select_best(ctx, d) : -1;
	if (best < 0)
		return refuse(d, req, !tier_ok, reterr);
	mark_chosen(ctx, req, d, best);
	return 0;
}

/* An admission whose audit line cannot be written becomes a refusal. */
static int audit_failed(cordon_decision *d, cordon_error *aerr, cordon_error **reterr)
{
	g_clear_pointer(&d->tier, g_free);
	d->runtime = NULL;
	g_clear_pointer(&d->driver, g_free);
	d->containment = 0;
	d->hits = NULL;
	for (guint i = 0; i < d->candidates->len; i++)
		((decision_candidate *)d->candidates->pdata[i])->chosen = false;
	d->code = ERRC(audit_failed);
	d->refusal = g_strdup(aerr->message);
	return error_propagate(reterr, aerr);
}

static int decide_audited(cordon_context *ctx, const cordon_request *req, bool dry_run,
			  const GPtrArray *failed, cordon_decision **ret, cordon_error **reterr)
{
	if (!ctx || !req)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "a context and a request are required");
	cordon_decision *d = decision_new(ctx, req);
	d->dry_run = dry_run;
	int r = decide(ctx, req, failed, d, reterr);
	cordon_error *aerr = NULL;
	if (audit_record(ctx, req, d, &aerr) < 0) {
		if (ctx->policy->audit_required && r == 0)
			r = audit_failed(d, g_steal_pointer(&aerr), reterr);
		else if (aerr)
			g_debug("audit (not required): %s", aerr->message);
	}
	cordon_error_free(aerr);
	if (ret)
		*ret = d;
	else
		cordon_decision_free(d);
	return r;
}

int admission_decide_full(cordon_context *ctx, const cordon_request *req, bool dry_run,
			  cordon_decision **ret, cordon_error **reterr)
{
	return decide_audited(ctx, req, dry_run, NULL, ret, reterr);
}

int admission_decide(cordon_context *ctx, const cordon_request *req, cordon_decision **ret,
		     cordon_error **reterr)
{
	return decide_audited(ctx, req, false, NULL, ret, reterr);
}

int admission_decide_after(cordon_context *ctx, const cordon_request *req, const GPtrArray *failed,
			   cordon_decision **ret, cordon_error **reterr)
{
	return decide_audited(ctx, req, false, failed, ret, reterr);
}

admission_failure *admission_failure_new(const tier_runtime *tier, const char *why)
{
	admission_failure *f = g_new0(admission_failure, 1);
	f->tier = tier;
	f->why = g_strdup(why);
	return f;
}

void admission_failure_free(gpointer p)
{
	admission_failure *f = p;
	g_free(f->why);
	g_free(f);
}

int cordon_decide(cordon_context *ctx, const cordon_request *req, cordon_decision **ret_decision,
		  cordon_error **reterr)
{
	return admission_decide_full(ctx, req, true, ret_decision, reterr);
}

/* ---- the policy, as the context sees it ------------------------------------------- */

/* A line for each plugin the loader refused (`policy check --strict` fails on them), with
 * a guess when the name is close to a driver a tier needs (`load: [dockr]`). */
static void summary_plugin_problems(const cordon_context *ctx, GString *s)
{
	const GPtrArray *tiers = ctx->policy->tiers;
	g_autofree const char **drivers = g_new0(const char *, tiers->len + 1);
	for (guint i = 0; i < tiers->len; i++)
		drivers[i] = ((const policy_tier *)tiers->pdata[i])->driver;
	for (guint i = 0; i < ctx->plugins->len; i++) {
		const plugin_record *p = ctx->plugins->pdata[i];
		if (p->loaded)
			continue;
		const char *hint = cfg_did_you_mean(p->name, drivers);
		g_string_append_printf(s, "problem: plugin %s was refused: %s", p->name, p->detail);
		if (hint && strcmp(hint, p->name) != 0)
			g_string_append_printf(s, " (did you mean '%s'?)", hint);
		g_string_append_c(s, '\n');
	}
}

char *cordon_context_policy_summary(const cordon_context *ctx)
{
	if (!ctx)
		return NULL;
	g_autofree char *base = policy_describe(ctx->policy);
	GString *s = g_string_new(base);
	summary_plugin_problems(ctx, s);
	for (guint i = 0; i < ctx->tiers->len; i++) {
		const tier_runtime *t = ctx->tiers->pdata[i];
		if (t->unusable)
			g_string_append_printf(s,
					       "note: tier %s is unusable here (%s); its driver "
					       "keys were not checked\n",
					       t->cfg->name, t->unusable);
	}
	for (guint i = 0; i < ctx->policy->rules->len; i++) {
		const policy_rule *r = ctx->policy->rules->pdata[i];
		for (guint k = 0; k < r->when_drivers->len; k++)
			if (!context_find_driver(ctx, r->when_drivers->pdata[k]))
				g_string_append_printf(s,
						       "note: rule %s names driver %s, which is "
						       "not loaded here\n",
						       r->name, (char *)r->when_drivers->pdata[k]);
	}
	return g_string_free(s, FALSE);
}
