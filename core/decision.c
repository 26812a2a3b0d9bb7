/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A decision: what admission concluded (decision.h), its accessors (the public
 * cordon_decision_* calls) and its JSON form, which admission's callers and the audit trail
 * share without depending on each other. */
#include "config.h"

#include "decision.h"
#include "json.h"

#include <string.h>

void decision_rule_hit_free(gpointer p)
{
	decision_rule_hit *h = p;
	g_free(h->rule);
	g_free(h->reason);
	g_free(h);
}

void decision_candidate_free(gpointer p)
{
	decision_candidate *c = p;
	if (c->hits)
		g_ptr_array_unref(c->hits);
	g_free(c->origin);
	g_free(c->tier);
	g_free(c->driver);
	g_free(c->reason);
	g_free(c->rule);
	g_free(c);
}

void cordon_decision_free(cordon_decision *d)
{
	if (!d)
		return;
	g_free(d->trust_text);
	g_free(d->tier);
	g_free(d->driver);
	g_ptr_array_unref(d->candidates);
	g_free(d->refusal);
	g_free(d);
}

const char *decision_verdict_name(candidate_verdict v)
{
	switch (v) {
	case VERDICT_CHOSEN: return "chosen";
	case VERDICT_PASSED_OVER: return "passed_over";
	case VERDICT_NOT_REQUESTED: return "not_requested";
	case VERDICT_UNAVAILABLE: return "unavailable";
	case VERDICT_INSUFFICIENT: return "insufficient";
	case VERDICT_DENIED: return "denied";
	case VERDICT_UNENFORCEABLE: return "unenforceable";
	case VERDICT_UNSUPPORTED: return "unsupported";
	}
	return "unknown";
}

/* ---- accessors ------------------------------------------------------------------- */

bool cordon_decision_admitted(const cordon_decision *d) { return d && d->tier; }
const char *cordon_decision_tier(const cordon_decision *d) { return d ? d->tier : NULL; }
cordon_containment cordon_decision_containment(const cordon_decision *d)
{
	return d ? d->containment : 0;
}
cordon_containment cordon_decision_requirement(const cordon_decision *d)
{
	return d ? d->requirement : 0;
}
cordon_trust cordon_decision_trust(const cordon_decision *d)
{
	return d ? d->trust : CORDON_TRUST_UNTRUSTED;
}
size_t cordon_decision_candidate_count(const cordon_decision *d)
{
	return d ? d->candidates->len : 0;
}
const char *cordon_decision_code(const cordon_decision *d) { return d ? d->code : NULL; }

bool cordon_decision_limit(const cordon_decision *d, cordon_limit which, uint64_t *ret)
{
	if (!d || (unsigned)which >= CORDON_LIMIT_COUNT_ || !(d->limits.set & (1u << which)))
		return false;
	if (ret)
		*ret = d->limits.value[which];
	return true;
}

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

bool cordon_decision_candidate_available(const cordon_decision *d, size_t i)
{
	const decision_candidate *c = cand(d, i);
	return c && c->probed && c->available;
}

cordon_containment cordon_decision_candidate_containment(const cordon_decision *d, size_t i)
{
	const decision_candidate *c = cand(d, i);
	return c ? c->containment : 0;
}

const char *cordon_decision_candidate_rule(const cordon_decision *d, size_t i)
{
	const decision_candidate *c = cand(d, i);
	return c ? c->rule : NULL;
}

static const decision_rule_hit *warning_at(const cordon_decision *d, size_t i)
{
	for (guint k = 0; d && d->hits && k < d->hits->len; k++) {
		const decision_rule_hit *h = d->hits->pdata[k];
		if (h->mode == POLICY_RULE_WARN && i-- == 0)
			return h;
	}
	return NULL;
}

size_t cordon_decision_warning_count(const cordon_decision *d)
{
	size_t n = 0;
	while (warning_at(d, n))
		n++;
	return n;
}

const char *cordon_decision_warning(const cordon_decision *d, size_t i)
{
	const decision_rule_hit *h = warning_at(d, i);
	return h ? h->reason : NULL;
}

/* ---- JSON ---------------------------------------------------------------------- */

static const char *const limit_json_names[CORDON_LIMIT_COUNT_] = {
	"wall_ms", "memory", "pids", "cpu_milli", "output", "nofile", "fsize",
};

void decision_json_limits(GString *out, const cordon_plugin_limits *l)
{
	g_string_append_c(out, '{');
	bool first = true;
	for (unsigned i = 0; i < CORDON_LIMIT_COUNT_; i++) {
		if (!(l->set & (1u << i)))
			continue;
		json_append_key(out, limit_json_names[i], first);
		json_append_u64(out, l->value[i]);
		first = false;
	}
	g_string_append_c(out, '}');
}

static const char *containment_or_null(cordon_containment c)
{
	return c ? cordon_containment_to_string(c) : NULL;
}

static void json_candidate(GString *out, const decision_candidate *c)
{
	g_string_append_c(out, '{');
	json_append_key(out, "tier", true);
	json_append_string(out, c->tier);
	json_append_key(out, "driver", false);
	json_append_string(out, c->driver);
	json_append_key(out, "verdict", false);
	json_append_string(out, decision_verdict_name(c->verdict));
	json_append_key(out, "chosen", false);
	json_append_bool(out, c->chosen);
	json_append_key(out, "available", false);
	if (c->probed)
		json_append_bool(out, c->available);
	else
		g_string_append(out, "null");
	json_append_key(out, "containment", false);
	json_append_string(out, c->probed ? containment_or_null(c->containment) : NULL);
	json_append_key(out, "claimed", false);
	json_append_string(out, c->probed ? containment_or_null(c->claimed) : NULL);
	json_append_key(out, "origin", false);
	json_append_string(out, c->probed ? (c->origin ? c->origin : "built-in") : NULL);
	json_append_key(out, "max_containment", false);
	json_append_string(out, containment_or_null(c->cap));
	json_append_key(out, "rule", false);
	json_append_string(out, c->rule);
	json_append_key(out, "reason", false);
	json_append_string(out, c->reason);
	g_string_append_c(out, '}');
}

static const char *const mode_names[] = { "enforce", "warn", "audit" };

/* "rule_hits": every warn and audit rule the chosen tier met; "warnings": the warn ones. */
static void json_hits(GString *out, const GPtrArray *hits)
{
	json_append_key(out, "rule_hits", false);
	g_string_append_c(out, '[');
	for (guint i = 0; hits && i < hits->len; i++) {
		const decision_rule_hit *h = hits->pdata[i];
		g_string_append(out, i ? ",{" : "{");
		json_append_key(out, "rule", true);
		json_append_string(out, h->rule);
		json_append_key(out, "mode", false);
		json_append_string(out, mode_names[h->mode]);
		json_append_key(out, "reason", false);
		json_append_string(out, h->reason);
		g_string_append_c(out, '}');
	}
	g_string_append_c(out, ']');
	json_append_key(out, "warnings", false);
	g_string_append_c(out, '[');
	bool first = true;
	for (guint i = 0; hits && i < hits->len; i++) {
		const decision_rule_hit *h = hits->pdata[i];
		if (h->mode != POLICY_RULE_WARN)
			continue;
		if (!first)
			g_string_append_c(out, ',');
		json_append_string(out, h->reason);
		first = false;
	}
	g_string_append_c(out, ']');
}

void decision_json_members(GString *out, const cordon_decision *d)
{
	json_append_key(out, "admitted", true);
	json_append_bool(out, d->tier != NULL);
	json_append_key(out, "code", false);
	json_append_string(out, d->code);
	json_append_key(out, "message", false);
	json_append_string(out, d->refusal);
	json_append_key(out, "trust", false);
	json_append_string(out, cordon_trust_to_string(d->trust));
	json_append_key(out, "trust_asked", false);
	json_append_string(out, d->trust_text);
	json_append_key(out, "requirement", false);
	json_append_string(out, cordon_containment_to_string(d->requirement));
	json_append_key(out, "builtin_minimum", false);
	json_append_string(out, cordon_containment_to_string(d->builtin));
	json_append_key(out, "relaxed", false);
	json_append_bool(out, d->relaxed);
	json_append_key(out, "tier", false);
	json_append_string(out, d->tier);
	json_append_key(out, "driver", false);
	json_append_string(out, d->driver);
	json_append_key(out, "containment", false);
	json_append_string(out, d->tier ? containment_or_null(d->containment) : NULL);
	json_append_key(out, "limits", false);
	decision_json_limits(out, d->tier ? &d->limits : &(cordon_plugin_limits){ 0 });
	json_hits(out, d->tier ? d->hits : NULL);
	json_append_key(out, "candidates", false);
	g_string_append_c(out, '[');
	for (guint i = 0; i < d->candidates->len; i++) {
		if (i)
			g_string_append_c(out, ',');
		json_candidate(out, d->candidates->pdata[i]);
	}
	g_string_append_c(out, ']');
}

char *cordon_decision_to_json(const cordon_decision *d)
{
	if (!d)
		return NULL;
	GString *s = g_string_new("{");
	decision_json_members(s, d);
	g_string_append_c(s, '}');
	return g_string_free(s, FALSE);
}
