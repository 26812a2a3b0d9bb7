/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Admission: which tier runs a request, or why none may (DESIGN §6). */
#pragma once

#include "decision.h"
#include "request.h"

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

/* A tier whose open failed for its own reasons, during one cordon_sandbox_open. */
typedef struct admission_failure {
	const tier_runtime *tier;
	char *why; /* the open's error message */
} admission_failure;
admission_failure *admission_failure_new(const tier_runtime *tier, const char *why) CORDON_INTERNAL;
void admission_failure_free(gpointer p) CORDON_INTERNAL;
/* admission_decide once more after opens failed at the tiers in failed
 * (admission_failure*; their tiers have fallback: next): those are passed over as
 * unavailable, with the failure as the reason, and the decision is audited again. */
int admission_decide_after(cordon_context *ctx, const cordon_request *req, const GPtrArray *failed,
			   cordon_decision **ret, cordon_error **reterr) CORDON_INTERNAL;
