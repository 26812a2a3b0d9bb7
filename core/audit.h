/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit trail: one JSON line per decision, appended atomically. */
#pragma once

#include "decision.h"
#include "request.h"

/* How one run ended, for its outcome line. */
typedef struct audit_outcome {
	const char *kind; /* "run", "stream", "serve" */
	const char *const *argv;
	const cordon_plugin_run_status *status; /* NULL when the run failed (error_code) */
	const char *error_code;                 /* NULL when it ran */
	uint64_t duration_us;
	uint64_t bytes[3]; /* [1] stdout, [2] stderr, as the work wrote them */
	bool output_capped;
} audit_outcome;

/* A sandbox's governed egress, for its connections' lines: the handle of
 * host->egress_audit (open_spec.egress_audit), made before the driver's open
 * and freed after its close. */
typedef struct audit_egress_ref {
	cordon_context *ctx;
	char sandbox[37];  /* the sandbox's id */
	char decision[37]; /* the decision that opened it */
	char tier[65];
} audit_egress_ref;

/* Appends one governed connection's line (when the policy keeps a trail);
 * host->egress_audit. A write failure is a warning, as for a run's outcome. */
void audit_egress(void *ref, const char *method, const char *host, uint32_t port,
		  const char *address, int allowed, const char *reason, uint64_t bytes_up,
		  uint64_t bytes_down) CORDON_INTERNAL;

struct net_service_event;
/* Appends one line for a connection a service's proxy carried or refused
 * (`services:`; service NAME, its upstream host:port). Never the credential:
 * the proxy reports none. */
void audit_service(const audit_egress_ref *r, const char *name, const char *host, uint32_t port,
		   const struct net_service_event *ev) CORDON_INTERNAL;

/* Appends a runtime egress change's line (cordon_sandbox_set_egress): the lists
 * asked for and the error code when it was refused (NULL: applied). */
void audit_egress_change(const audit_egress_ref *r, const char *const *allow,
			 const char *const *deny, const char *error_code) CORDON_INTERNAL;

/* Gives d its id, then appends the decision's line to the policy's audit file (if any). Fails
 * only when the file cannot be written; the caller decides whether that
 * refuses admission (audit.required). */
int audit_record(cordon_context *ctx, const cordon_request *req, cordon_decision *d,
		 cordon_error **reterr) CORDON_INTERNAL;
/* Appends a run's outcome line (when the policy keeps a trail). A write failure is a
 * warning: the work has already run. */
void audit_run(const cordon_sandbox *sb, const audit_outcome *o) CORDON_INTERNAL;
/* The outcome line itself (with its newline). Owned by caller (g_free). */
char *audit_run_line(const cordon_policy *p, const cordon_sandbox *sb,
		     const audit_outcome *o) CORDON_INTERNAL;
/* The line itself (with its trailing newline). Never contains an
 * environment value: grants are listed by name. Owned by caller (g_free). */
char *audit_line(const cordon_policy *p, const cordon_request *req,
		 const cordon_decision *d) CORDON_INTERNAL;
/* Appends one line to path with a single write(2) on an O_APPEND fd under
 * flock(LOCK_EX); creates the file 0600; refuses symlinks and non-regular
 * files. */
int audit_append(const char *path, const char *line, size_t len,
		 cordon_error **reterr) CORDON_INTERNAL;
