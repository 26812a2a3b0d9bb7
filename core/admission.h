/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Admission: which tier runs a request, or why none may (DESIGN §6). */
#pragma once

#include "context.h"
#include "request.h"

typedef struct decision_candidate {
	char *tier;
	bool chosen;
	bool available;
	cordon_containment containment; /* as probed */
	char *reason;                   /* "chosen", "unavailable: ...", "container < microvm", "rule NAME" */
} decision_candidate;

struct cordon_decision {
	cordon_trust trust;
	char *trust_text;
	cordon_containment requirement;
	char *tier;                     /* NULL when refused */
	cordon_containment containment;
	GPtrArray *candidates;          /* decision_candidate* */
	cordon_plugin_limits limits;    /* the request's limits after rules (what open enforces) */
	char *refusal;                  /* the forbidden message when refused */
};

/* Decides for req. Always fills *ret when ret is not NULL (admitted or
 * refused); a refusal returns -EPERM with a forbidden "sandbox_denied" or
 * "containment_insufficient" error. Appends the audit line. */
int admission_decide(cordon_context *ctx, const cordon_request *req, cordon_decision **ret,
		     cordon_error **reterr) CORDON_HIDDEN;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cordon_decision, cordon_decision_free)
