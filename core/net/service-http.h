/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one piece of HTTP a service's proxy reads (docs/network.md,
 * "Services"): the head of the work's request, checked strictly and
 * rewritten for the upstream (its Host, the injected credential, one request
 * per connection). Bodies and the upstream's answer are carried as bytes,
 * never parsed. Pure: no I/O.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/httphead.h"
#include "visibility.h"

/* The longest request head read (request line and headers), and most headers. */
#define SVC_HEAD_MAX NET_HTTP_HEAD_MAX /* its end is found by net_http_head_end */
#define SVC_HEADERS_MAX 100

typedef struct svc_route {
	const char *host; /* the upstream's, an IPv6 literal without [] */
	uint16_t port;
	const char *prefix; /* "" or "/v1" */
	const char *header; /* the injected header's name */
	const char *value;  /* its value (the secret in it) */
} svc_route;

/* The upstream's head for the work's (head, len bytes through the empty
 * line): the same method, the prefix before the target, the same version;
 * Host the upstream's; hop-by-hop headers and any of the injected name
 * dropped, the injected one added, Connection: close. NULL when the head is
 * refused: *ret_status the HTTP status to answer (400, 405, 431, 501) and
 * *ret_why the reason (static). The result holds the secret: the caller
 * wipes it (svc_wipe). */
GString *svc_head_rewrite(const char *head, size_t len, const svc_route *r, int *ret_status,
			  const char **ret_why) CORDON_INTERNAL;
/* Wipes and frees s (NULL is fine). */
void svc_wipe(GString *s) CORDON_INTERNAL;
