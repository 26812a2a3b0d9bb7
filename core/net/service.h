/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A service's reverse proxy (docs/network.md, "Services"), from libcordon's
 * side: the program cordon-proxy (service-proxy.c) started for one
 * `services:` entry on a listening socket the caller made, given the
 * upstream and the injected value through a pipe (never argv or the
 * environment), and ended with the sandbox. The secret is read here, from
 * its grant, only while it is handed over, and wiped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "visibility.h"

typedef struct net_service net_service;

/* One connection the proxy carried or refused, as it ended: its audit line. */
typedef struct net_service_event {
	bool allowed;       /* the request reached the upstream */
	int status;         /* the HTTP status the work got (0: none seen) */
	const char *method; /* the work's, "-" when it sent none */
	const char *path;   /* without its query */
	const char *reason; /* why it was refused, or "" */
	uint64_t bytes_up, bytes_down;
} net_service_event;

/* Called on the service's own reader thread, once per connection. */
typedef void (*net_service_audit_fn)(void *user, const net_service_event *ev);

/* Where cordon-proxy is: $CORDON_PROXY_HELPER (a build tree's tests), else
 * the installed libexec directory's. */
const char *net_service_helper(void) CORDON_INTERNAL;

/* Resolves svc's secret and starts its proxy accepting on listen_fd (a
 * listening stream socket; ours stays ours). Returns once the proxy is
 * ready: 0, or a negative errno with the reason in why (never the secret).
 * audit (may be NULL) hears of each connection until net_service_stop. */
int net_service_start(const policy_service *svc, int listen_fd, net_service_audit_fn audit,
		      void *user, net_service **ret, char *why, size_t whylen) CORDON_INTERNAL;
/* Ends the proxy and every connection it carries, and frees s (NULL is
 * fine). Nothing of it is left when it returns. */
void net_service_stop(net_service *s) CORDON_INTERNAL;
