/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit trail: one JSON line per decision, appended atomically. */
#pragma once

#include "admission.h"

/* Appends the decision's line to the policy's audit file (if any). Fails
 * only when the file cannot be written; the caller decides whether that
 * refuses admission (audit.required). */
int audit_record(cordon_context *ctx, const cordon_request *req, const cordon_decision *d,
		 cordon_error **reterr) CORDON_HIDDEN;
