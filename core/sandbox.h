/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sandboxes: the port of DESIGN §4 on top of a driver's operations. */
#pragma once

#include "context.h"

/* Default wall time of a run when neither the request nor the policy sets one. */
#define SANDBOX_DEFAULT_WALL_MS (10 * 60 * 1000)
/* Default output kept per stream. */
#define SANDBOX_DEFAULT_OUTPUT_CAP (16u << 20)
/* Largest file read_file returns. */
#define SANDBOX_READ_MAX (256u << 20)
/* Combined output a serve handle retains. */
#define SANDBOX_SERVE_TAIL (64u << 10)
/* How long serve waits at most for a served port to accept (or the run's
 * timeout, when shorter). */
#define SANDBOX_SERVE_READY_MS 30000u

struct cordon_sandbox {
	cordon_context *ctx;
	tier_runtime *tier;
	void *state; /* the driver's open result */
	cordon_containment containment;
	GPtrArray *env_grants; /* "K=V" copies of the request's grants */
	cordon_plugin_limits limits;
	GMutex lock;
	GPtrArray *serves;    /* cordon_serve*, references held until close */
	int active_runs;      /* driver runs in progress (serves included), under lock */
	bool spent;           /* a last run started: no run may follow */
	bool paused;          /* cordon_sandbox_pause: no run nor file operation until resumed */
	bool pausing;         /* a pause or resume is in the driver */
	char id[37];          /* a random UUID, in its runs' audit lines */
	char decision_id[37]; /* the decision that opened it */
	char *caller;         /* the request's caller label, or NULL */
	GPtrArray *services;  /* the policy's services, running (sandbox-services.c) */
	struct audit_egress_ref *egress; /* host->egress_audit's handle (audit.h) */
	struct sandbox_egress *governed; /* the core's governed egress (sandbox-egress.c), or NULL */
};
typedef struct sandbox_egress sandbox_egress;

/* The port's refusals of bad input and of an operation the tier's driver lacks (both
 * return -errno), shared by sandbox.c and sandbox-files.c. */
int sandbox_invalid(cordon_error **reterr, const char *what) CORDON_INTERNAL;
int sandbox_unsupported(cordon_sandbox *sb, const char *op, cordon_error **reterr) CORDON_INTERNAL;
/* The refusal of a run or file operation on a paused sandbox (sandbox-pause.c), or 0. */
int sandbox_check_paused(cordon_sandbox *sb, cordon_error **reterr) CORDON_INTERNAL;

/* An epoll fd readable when host_fd (-1: none) or event_fd is: a run's cancel_fd that
 * both the host and the library can fire. Owned by caller; a negative errno. */
int sandbox_cancel_merge(int host_fd, int event_fd) CORDON_INTERNAL;

/* The policy's services for sb: a listener inside for each (the driver's listen op) with
 * cordon-proxy on it, and NAME_BASE_URL added to sb's environment grants. Refused when
 * the policy has services and the tier cannot carry them. -errno; what started is ended
 * by sandbox_services_stop. */
int sandbox_services_start(cordon_sandbox *sb, cordon_error **reterr) CORDON_INTERNAL;
void sandbox_services_stop(cordon_sandbox *sb) CORDON_INTERNAL;

/* Governed egress by the core's proxy (sandbox-egress.c): whether the core governs a
 * sandbox opened with egress on sb's tier (governed, the tier has egress: rules, its
 * driver declares CORDON_PLUGIN_DRIVER_EGRESS_PROXY), and then, after the driver's open,
 * the proxy with those rules on a listener of the driver's. -errno. */
bool sandbox_egress_by_core(const cordon_sandbox *sb, cordon_egress egress) CORDON_INTERNAL;
int sandbox_egress_start(cordon_sandbox *sb, cordon_egress egress,
			 cordon_error **reterr) CORDON_INTERNAL;
/* A run's environment with governed egress: HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy
 * (http://127.0.0.1:PORT), NO_PROXY, no_proxy (localhost,127.0.0.1) first, then envp
 * without any of those names. NULL when sb is not governed by the core (envp as it is). */
char **sandbox_egress_env(const cordon_sandbox *sb, const char *const *envp) CORDON_INTERNAL;
/* cordon_sandbox_set_egress for a core-governed sandbox: allow NULL, the tier's rules alone. */
int sandbox_egress_narrow(cordon_sandbox *sb, const char *const *allow, const char *const *deny,
			  cordon_error **reterr) CORDON_INTERNAL;
/* Ends the proxy and every connection (each audited). Nothing is left. */
void sandbox_egress_stop(cordon_sandbox *sb) CORDON_INTERNAL;
