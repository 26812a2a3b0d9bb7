/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Governed egress's proxy (docs/network.md): HTTP CONNECT and plain HTTP
 * (absolute http:// URIs) on a listening socket the caller made (the kernel
 * tier's is inside the sandbox's network namespace: confine_sandbox_listen),
 * to the destinations a rule set (egress.h) allows. The proxy resolves names
 * itself (GResolver's default at start), checks every address, and connects
 * to a checked address only. A CONNECT's first bytes must be a TLS
 * ClientHello whose server name is the CONNECT host (an IP target: none, or
 * the same); a plain request's Host header must name its URI's host. Every
 * connection, carried or refused, is reported once, when it ends.
 *
 * Runs on a thread of its own around GLib's main loop and GIO (one
 * GMainContext per proxy): nothing of it runs on the caller's threads but
 * start, set_rules and stop.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/egress.h"
#include "visibility.h"

typedef struct net_proxy net_proxy;

/* One connection's end, for the audit trail (borrowed for the call). */
typedef struct net_proxy_event {
	const char *method; /* "CONNECT", "GET", ...; "" when no request was read */
	const char *host;   /* the target as asked; "" when none */
	uint16_t port;
	const char *address; /* the upstream address connected to; "" when none */
	bool allowed;        /* carried */
	const char *reason;  /* a refusal's or an end's reason; "" when it ended normally */
	uint64_t bytes_up;   /* from the work to the upstream (a plain request's head as sent) */
	uint64_t bytes_down; /* from the upstream to the work */
} net_proxy_event;

/* Called on the proxy's thread. */
typedef void (*net_proxy_audit_fn)(void *user, const net_proxy_event *ev);

/* Most connections at once; more are refused (503) and reported. */
#define NET_PROXY_MAX_CONNS 256
/* From accept to the request's head (and a CONNECT's ClientHello) read,
 * and for an upstream connect. */
#define NET_PROXY_DEADLINE_MS 10000

/* Tests only (no real name resolves to what a test needs, such as
 * 169.254.169.254): host's addresses into addrs (at most max; ports not
 * set), their count in *n; 0 or an EAI_* code. Called on a worker. NULL in
 * the product: getaddrinfo. */
struct sockaddr_storage;
typedef int (*net_proxy_resolve_fn)(const char *host, struct sockaddr_storage *addrs, unsigned max,
				    unsigned *n);

/* Serves listen_fd (a listening TCP socket; taken, closed by stop) with the
 * rules (taken). Returns 0, or a negative errno with the reason in why. */
int net_proxy_start(int listen_fd, net_egress *rules, net_proxy_audit_fn audit, void *user,
		    net_proxy_resolve_fn resolve, net_proxy **ret, char *why,
		    size_t whylen) CORDON_INTERNAL;
/* From the next request read on: a destination needs both the start's rules
 * and these (taken; NULL: the start's alone again), so this narrows and
 * widens back, never beyond the start's. Connections already carried go on. */
void net_proxy_narrow(net_proxy *p, net_egress *rules) CORDON_INTERNAL;
/* Ends every connection (each reported), closes the listener, ends the
 * thread, frees p. NULL is fine. Nothing of p is left when it returns. */
void net_proxy_stop(net_proxy *p) CORDON_INTERNAL;
