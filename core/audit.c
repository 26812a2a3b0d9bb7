/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB until the audit trail lands (issue 3). */
#include "config.h"

#include "audit.h"

#include <errno.h>

int audit_record(cordon_context *ctx, const cordon_request *req, const cordon_decision *d,
		 cordon_error **reterr)
{
	if (!ctx->policy->audit_path)
		return 0;
	return error_set(reterr, ENOSYS, CORDON_ERROR_TERMINAL, "audit_failed",
			 "the audit trail is not implemented yet");
}
