/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A decision (DESIGN §6): the tier admission chose, or why none, with every candidate's
 * verdict. Made by admission, read by the sandbox port, the audit trail and the public
 * accessors; this header is what they share, so that admission and audit need not include
 * each other. */
#pragma once

#include "context.h"

/* Where a candidate ended up, in the order admission looks at it. */
typedef enum candidate_verdict {
	VERDICT_CHOSEN = 0,
	VERDICT_PASSED_OVER,   /* eligible, another was selected */
	VERDICT_NOT_REQUESTED, /* the request named another tier */
	VERDICT_UNAVAILABLE,   /* no driver, configure failed, or the probe says no */
	VERDICT_INSUFFICIENT,  /* weaker than the requirement */
	VERDICT_DENIED,        /* a rule (deny, require, limit) or a tier limit */
	VERDICT_UNENFORCEABLE, /* a limit the request gets that the tier cannot enforce */
	VERDICT_UNSUPPORTED,   /* needs what the tier cannot give (mounts, the policy's services) */
} candidate_verdict;

/* A rule in mode warn or audit that would have refused the candidate (it did not). */
typedef struct decision_rule_hit {
	char *rule;
	policy_rule_mode mode; /* POLICY_RULE_WARN or POLICY_RULE_AUDIT */
	char *reason;          /* what enforcing it would have said */
} decision_rule_hit;

typedef struct decision_candidate {
	char *tier;
	char *driver; /* NULL when the tier is not in the policy */
	bool chosen;
	bool probed;
	bool available;
	cordon_containment
		containment; /* as admission takes it: the claim, capped (0 when not probed) */
	cordon_containment claimed; /* what the driver's probe claimed */
	cordon_containment cap;     /* the cap applied to the claim, 0: none */
	bool cap_default; /* ...the default cap of a plugin's claim, not max_containment */
	char *origin;     /* the plugin that claims it, NULL: built into cordon */
	GPtrArray *hits;  /* decision_rule_hit*: warn and audit rules it met */
	candidate_verdict verdict;
	char *reason; /* "chosen", "unavailable: ...", "container < microvm", "rule NAME..." */
	char *rule;   /* the rule that denied it, or NULL */
	bool writable_mount; /* denied for a writable mount (untrusted, or a read-only rule) */
	bool no_mounts;      /* unsupported: the tier cannot give the request's mounts */
	bool workspace_ro;   /* a rule admitted the workspace read-only (the driver can) */
	cordon_plugin_limits limits; /* what open would enforce on this tier */
	tier_runtime *runtime;       /* the tier, resolved once (NULL: not in the policy) */
} decision_candidate;

struct cordon_decision {
	cordon_trust trust; /* effective (unknown -> untrusted) */
	char *trust_text;   /* what the host asked */
	cordon_containment requirement;
	cordon_containment builtin; /* the built-in minimum of the trust level */
	bool relaxed;               /* the requirement is below the built-in minimum */
	bool dry_run;               /* cordon_decide rather than an open */
	char *tier;                 /* NULL when refused */
	tier_runtime *runtime;      /* the chosen tier, as admission judged it: the
					 * sandbox port opens this one, never a name
					 * looked up again; NULL when refused */
	char *driver;
	cordon_containment containment;
	GPtrArray *candidates;       /* decision_candidate* */
	cordon_plugin_limits limits; /* the request's limits after rules (what open enforces) */
	bool workspace_ro;           /* the chosen tier gives the workspace read-only */
	const GPtrArray *hits;       /* the chosen candidate's (borrowed), NULL when refused */
	const char *code;            /* static: NULL when admitted */
	char *refusal;               /* the forbidden message when refused */
	char id[37]; /* a random UUID: its audit line's "id", its runs' "decision" */
};

/* Frees a decision_rule_hit (a candidate's hits array owns them). */
void decision_rule_hit_free(gpointer p) CORDON_INTERNAL;
/* Frees a decision_candidate (a decision's candidates array owns them). */
void decision_candidate_free(gpointer p) CORDON_INTERNAL;
/* Appends the decision's JSON members (no braces) to out. */
void decision_json_members(GString *out, const cordon_decision *d) CORDON_INTERNAL;
/* Appends a limits object {"memory": N, ...} with the set limits. */
void decision_json_limits(GString *out, const cordon_plugin_limits *l) CORDON_INTERNAL;
/* The verdict's stable name ("chosen", "unavailable", ...). */
const char *decision_verdict_name(candidate_verdict v) CORDON_INTERNAL;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cordon_decision, cordon_decision_free)
