/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit trail: one JSON line per decision, appended atomically. */
#pragma once

#include "decision.h"
#include "request.h"

/* Appends the decision's line to the policy's audit file (if any). Fails
 * only when the file cannot be written; the caller decides whether that
 * refuses admission (audit.required). */
int audit_record(cordon_context *ctx, const cordon_request *req, const cordon_decision *d,
		 cordon_error **reterr) CORDON_INTERNAL;
/* The line itself (with its trailing newline). Never contains an
 * environment value: grants are listed by name. Owned by caller (g_free). */
char *audit_line(const cordon_policy *p, const cordon_request *req, const cordon_decision *d)
	CORDON_INTERNAL;
/* Appends one line to path with a single write(2) on an O_APPEND fd under
 * flock(LOCK_EX); creates the file 0600; refuses symlinks and non-regular
 * files. */
int audit_append(const char *path, const char *line, size_t len, cordon_error **reterr)
	CORDON_INTERNAL;
