/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Governed egress and services, checked on any tier (tests/netcheck.c): the container
 * tiers' (tests/integration/test-containers.c) and the microVM tier's
 * (tests/integration/test-microvm.c) cases run the same checks, through the public API,
 * with the work's tools busybox has (wget, nc, ssl_client).
 */
#pragma once

#include <cordon/cordon.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* Opens a sandbox of the tier with egress (CORDON_EGRESS_GOVERNED for the egress checks),
 * granted NETCHECK_GRANT into its environment when grant (the services' decoy). */
typedef cordon_sandbox *(*netcheck_open_fn)(cordon_context *ctx, const char *tier,
					    cordon_egress egress, bool grant);
#define NETCHECK_GRANT "zq-granted-secret-9a7c"

/* The upstreams on the host's loopback: plain HTTP, HTTPS with a test CA, an audit path. */
typedef struct netcheck_egress_env {
	char *dir, *audit;
	uint16_t http, https;
	GPid http_pid, https_pid;
} netcheck_egress_env;

void netcheck_egress_start(netcheck_egress_env *g);
/* The tier's `egress:` keys (owned), indented for a tier's section. */
char *netcheck_egress_rules(const netcheck_egress_env *g);
void netcheck_egress_stop(netcheck_egress_env *g);
/* On tier: the work reaches cordon's proxy on its own loopback (the proxy variables set),
 * plain HTTP and HTTPS through CONNECT with the SNI checked; a denied name, an unlisted one
 * and 169.254.169.254 refused (403); no route of its own (a loopback port of the host's, an
 * outside address, a resolver); set_egress narrows and widens back; everything audited;
 * nothing of the proxy left after a second open and close (descriptors, threads). */
void netcheck_egress(const netcheck_egress_env *g, cordon_context *ctx, const char *tier,
		     netcheck_open_fn open);

/* The services' upstream: HTTPS (the test CA) recording each request's head, the secret
 * in a 0600 file. */
typedef struct netcheck_service_env {
	char *dir, *heads, *secret, *key;
	unsigned port;
	GPid pid;
	int port_fd;
} netcheck_service_env;

void netcheck_service_start(netcheck_service_env *s);
/* The policy's `secrets:` and `services:` sections (owned). */
char *netcheck_service_policy(const netcheck_service_env *s);
void netcheck_service_stop(netcheck_service_env *s);
/* On tier: the work's call to its MODEL_API_BASE_URL reaches the upstream with the
 * credential added; the secret is in no file, environment or command line the work can
 * read, while the granted decoy is found by the same search. */
void netcheck_services(const netcheck_service_env *s, cordon_context *ctx, const char *tier,
		       netcheck_open_fn open);

/* A shell line's exit code and its stdout and stderr together (owned). */
char *netcheck_sh(cordon_sandbox *sb, const char *line, int *ret_code);
/* The audit trail at path once a line holds needle (and also, when not NULL); owned. */
char *netcheck_audit_holding(const char *path, const char *needle, const char *also);
/* The number of entries of dir. */
unsigned netcheck_count_dir(const char *dir);
