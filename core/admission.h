/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Admission: which tier runs a request, or why none may (DESIGN §6). */
#pragma once

#include "context.h"
#include "request.h"

/* Where a candidate ended up, in the order admission looks at it. */
typedef enum candidate_verdict {
	VERDICT_CHOSEN = 0,
	VERDICT_PASSED_OVER,   /* eligible, another was selected */
	VERDICT_NOT_REQUESTED, /* the request named another tier */
	VERDICT_UNAVAILABLE,   /* no driver, configure failed, or the probe says no */
	VERDICT_INSUFFICIENT,  /* weaker than the requirement */
	VERDICT_DENIED,        /* a rule (deny, require, limit) or a tier limit */
} candidate_verdict;

typedef struct decision_candidate {
	char *tier;
	char *driver;                   /* NULL when the tier is not in the policy */
	bool chosen;
	bool probed;
	bool available;
	cordon_containment containment; /* as probed (0 when not probed) */
	candidate_verdict verdict;
	char *reason;                   /* "chosen", "unavailable: ...", "container < microvm", "rule NAME..." */
	char *rule;                     /* the rule that denied it, or NULL */
	cordon_plugin_limits limits;    /* what open would enforce on this tier */
	tier_runtime *runtime;          /* the tier, resolved once (NULL: not in the policy) */
} decision_candidate;

struct cordon_decision {
	cordon_trust trust;             /* effective (unknown -> untrusted) */
	char *trust_text;               /* what the host asked */
	cordon_containment requirement;
	cordon_containment builtin;     /* the built-in minimum of the trust level */
	bool relaxed;                   /* the requirement is below the built-in minimum */
	bool dry_run;                   /* cordon_decide rather than an open */
	char *tier;                     /* NULL when refused */
	tier_runtime *runtime;          /* the chosen tier, as admission judged it: the
					 * sandbox port opens this one, never a name
					 * looked up again; NULL when refused */
	char *driver;
	cordon_containment containment;
	GPtrArray *candidates;          /* decision_candidate* */
	cordon_plugin_limits limits;    /* the request's limits after rules (what open enforces) */
	const char *code;               /* static: NULL when admitted */
	char *refusal;                  /* the forbidden message when refused */
};

/* Decides for req. Always fills *ret when ret is not NULL (admitted or
 * refused); a refusal returns -EPERM with a forbidden "sandbox_denied" or
 * "containment_insufficient" error. Appends the audit line; when the policy
 * requires the audit trail and it cannot be written, an admission becomes a
 * refusal ("audit_failed"). */
int admission_decide(cordon_context *ctx, const cordon_request *req, cordon_decision **ret,
		     cordon_error **reterr) CORDON_INTERNAL;
/* The same, marking the audit line as a dry run (cordon_decide). */
int admission_decide_full(cordon_context *ctx, const cordon_request *req, bool dry_run,
			  cordon_decision **ret, cordon_error **reterr) CORDON_INTERNAL;
/* Appends the decision's JSON members (no braces) to out. */
void admission_json_members(GString *out, const cordon_decision *d) CORDON_INTERNAL;
/* Appends a limits object {"memory": N, ...} with the set limits. */
void admission_json_limits(GString *out, const cordon_plugin_limits *l) CORDON_INTERNAL;
/* The verdict's stable name ("chosen", "unavailable", ...). */
const char *admission_verdict_name(candidate_verdict v) CORDON_INTERNAL;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cordon_decision, cordon_decision_free)
