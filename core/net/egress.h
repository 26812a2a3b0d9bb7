/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Governed egress's rule set and destination check (issue 14, item 3; the
 * proxy that will enforce it is not built yet: docs/network.md). Pure: no
 * I/O, no resolver; the caller resolves names and asks about each address.
 *
 * A rule, in an allow or a deny list:
 *   pypi.org            that name
 *   *.example.com       any name below example.com (not example.com itself)
 *   10.0.0.0/8, 1.2.3.4, 2001:db8::/32, ::1
 *                       addresses (an IP literal target needs one of these)
 * each optionally with a port, NAME:PORT, NAME:* (any port), [V6]:PORT;
 * without one a rule covers ports 80 and 443 only. Deny wins over allow.
 * A name that resolves to a loopback, private, link-local (the cloud
 * metadata address included), shared, unspecified or multicast address is
 * refused unless a rule names it: an address rule covering it, or an allow
 * rule naming that exact host (never a wildcard).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "visibility.h"

typedef struct net_egress net_egress;

/* Most rules in one list. */
#define NET_EGRESS_MAX_RULES 1024

/* A rule set from NULL-terminated lists (either may be NULL). Returns 0,
 * or -EINVAL with the first bad rule and why in why. */
int net_egress_new(const char *const *allow, const char *const *deny, net_egress **ret, char *why,
		   size_t whylen) CORDON_INTERNAL;
void net_egress_free(net_egress *e) CORDON_INTERNAL;
/* Whether the work may ask for host:port (host: a name or an IP literal),
 * before any resolution; false with the reason in why. */
bool net_egress_target_allowed(const net_egress *e, const char *host, uint16_t port, char *why,
			       size_t whylen) CORDON_INTERNAL;
/* Whether host (an allowed target) may be reached at addr, one of the
 * addresses it resolved to; false with the reason in why. */
bool net_egress_address_allowed(const net_egress *e, const char *host, uint16_t port,
				const struct sockaddr *addr, char *why,
				size_t whylen) CORDON_INTERNAL;
/* The rules in words, each with how the proxy enforces it (cordon explain).
 * Owned by the caller (g_free). */
char *net_egress_explain(const net_egress *e) CORDON_INTERNAL;
