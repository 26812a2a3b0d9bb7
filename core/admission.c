/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Minimal admission until the policy issue extends it with rules. */
#include "config.h"

#include "admission.h"
#include "audit.h"

#include <errno.h>
#include <string.h>

#define PROBE_MAX_AGE_US (2 * G_USEC_PER_SEC)

static void candidate_free(gpointer p)
{
	decision_candidate *c = p;
	g_free(c->tier);
	g_free(c->reason);
	g_free(c);
}

static cordon_decision *decision_new(const cordon_request *req)
{
	cordon_decision *d = g_new0(cordon_decision, 1);
	d->trust = req->trust;
	d->trust_text = g_strdup(req->trust_text);
	d->candidates = g_ptr_array_new_with_free_func(candidate_free);
	d->limits = req->limits;
	return d;
}

void cordon_decision_free(cordon_decision *d)
{
	if (!d)
		return;
	g_free(d->trust_text);
	g_free(d->tier);
	g_ptr_array_unref(d->candidates);
	g_free(d->refusal);
	g_free(d);
}

/* Judges one candidate; returns true when it may run the request. */
static bool judge(cordon_context *ctx, const cordon_request *req, cordon_containment need,
		  const char *name, decision_candidate *c)
{
	tier_runtime *t = context_find_tier(ctx, name);
	if (!t) {
		c->reason = g_strdup("unavailable: no such tier in the policy");
		return false;
	}
	if (t->unusable) {
		c->reason = g_strdup_printf("unavailable: %s", t->unusable);
		return false;
	}
	cordon_plugin_probe pr;
	context_probe(t, PROBE_MAX_AGE_US, &pr);
	c->available = pr.available;
	c->containment = pr.containment;
	if (!pr.available) {
		c->reason = g_strdup_printf("unavailable: %s", pr.reason);
		return false;
	}
	if (pr.containment < need) {
		c->reason = g_strdup_printf("%s < %s", cordon_containment_to_string(pr.containment),
					    cordon_containment_to_string(need));
		return false;
	}
	if (req->tier && strcmp(req->tier, name) != 0) {
		c->reason = g_strdup_printf("not the requested tier %s", req->tier);
		return false;
	}
	return true;
}

static char *refusal_message(const cordon_decision *d)
{
	GString *s = g_string_new(NULL);
	g_string_append_printf(s, "%s work requires %s; ", cordon_trust_to_string(d->trust),
			       cordon_containment_to_string(d->requirement));
	if (d->candidates->len == 0)
		g_string_append(s, "the policy lists no tier for it");
	for (guint i = 0; i < d->candidates->len; i++) {
		const decision_candidate *c = d->candidates->pdata[i];
		g_string_append_printf(s, "%s%s: %s", i ? "; " : "", c->tier, c->reason);
	}
	return g_string_free(s, FALSE);
}

int admission_decide(cordon_context *ctx, const cordon_request *req, cordon_decision **ret,
		     cordon_error **reterr)
{
	cordon_decision *d = decision_new(req);
	const policy_trust *pt = &ctx->policy->trust[req->trust];
	d->requirement = pt->set ? pt->require : policy_builtin_minimum(req->trust);

	int best = -1;
	for (guint i = 0; pt->tiers && i < pt->tiers->len; i++) {
		decision_candidate *c = g_new0(decision_candidate, 1);
		c->tier = g_strdup(pt->tiers->pdata[i]);
		g_ptr_array_add(d->candidates, c);
		if (!judge(ctx, req, d->requirement, c->tier, c))
			continue;
		if (best < 0 || (ctx->policy->select == POLICY_SELECT_STRONGEST &&
				 c->containment >
					 ((decision_candidate *)d->candidates->pdata[best])->containment))
			best = (int)i;
	}
	for (guint i = 0; i < d->candidates->len; i++) {
		decision_candidate *c = d->candidates->pdata[i];
		if ((int)i == best) {
			c->chosen = true;
			g_free(c->reason);
			c->reason = g_strdup("chosen");
			d->tier = g_strdup(c->tier);
			d->containment = c->containment;
		} else if (!c->reason) {
			c->reason = g_strdup_printf("passed over: %s chosen",
				((decision_candidate *)d->candidates->pdata[best])->tier);
		}
	}

	int r = 0;
	if (best < 0) {
		d->refusal = refusal_message(d);
		r = error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, "containment_insufficient",
			      "%s", d->refusal);
	}
	cordon_error *aerr = NULL;
	if (audit_record(ctx, req, d, &aerr) < 0 && ctx->policy->audit_required && r == 0) {
		g_free(d->tier);
		d->tier = NULL;
		r = error_propagate(reterr, aerr);
		aerr = NULL;
	}
	cordon_error_free(aerr);
	if (ret)
		*ret = d;
	else
		cordon_decision_free(d);
	return r;
}

bool cordon_decision_admitted(const cordon_decision *d) { return d && d->tier; }
const char *cordon_decision_tier(const cordon_decision *d) { return d ? d->tier : NULL; }
cordon_containment cordon_decision_containment(const cordon_decision *d) { return d ? d->containment : 0; }
cordon_containment cordon_decision_requirement(const cordon_decision *d) { return d ? d->requirement : 0; }
cordon_trust cordon_decision_trust(const cordon_decision *d) { return d ? d->trust : CORDON_TRUST_UNTRUSTED; }
size_t cordon_decision_candidate_count(const cordon_decision *d) { return d ? d->candidates->len : 0; }

static const decision_candidate *cand(const cordon_decision *d, size_t i)
{
	return d && i < d->candidates->len ? d->candidates->pdata[i] : NULL;
}

const char *cordon_decision_candidate_tier(const cordon_decision *d, size_t i)
{
	const decision_candidate *c = cand(d, i);
	return c ? c->tier : NULL;
}

bool cordon_decision_candidate_chosen(const cordon_decision *d, size_t i)
{
	const decision_candidate *c = cand(d, i);
	return c && c->chosen;
}

const char *cordon_decision_candidate_reason(const cordon_decision *d, size_t i)
{
	const decision_candidate *c = cand(d, i);
	return c ? c->reason : NULL;
}

char *cordon_decision_to_json(const cordon_decision *d)
{
	return d ? g_strdup("{}") : NULL; /* the policy issue writes the real encoder */
}
