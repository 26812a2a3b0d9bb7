/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What governed egress's proxy reads of the work's bytes before it carries
 * them (proxy.c): an HTTP/1.x proxy request's head, and the server name of
 * a TLS ClientHello. Pure: no I/O, bounded inputs, everything the work sends
 * is hostile. Refusals say why in a short phrase for the audit trail.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

/* A head is at most this long (request line and headers). */
#define NET_HTTP_HEAD_MAX 16384
/* A name, as a target or a TLS server name. */
#define NET_HTTP_HOST_MAX 256

typedef struct net_http_req {
	bool connect;                 /* CONNECT host:port; else an absolute http:// URI */
	char method[16];              /* as sent */
	char host[NET_HTTP_HOST_MAX]; /* lower case, no brackets around IPv6 */
	uint16_t port;                /* 80 when an http:// URI names none */
	size_t head_len;              /* bytes of the head, its blank line included */
	size_t path_off, path_len; /* plain HTTP: the origin-form path in the head ("/" if none) */
	size_t version_off;        /* the request line's "HTTP/1.x" */
	size_t headers_off;        /* the first header line */
} net_http_req;

/* The head's length when buf holds a whole one ("\r\n\r\n" included), 0 when
 * more is needed, -E2BIG when none ends within NET_HTTP_HEAD_MAX. */
long net_http_head_end(const char *buf, size_t len) CORDON_INTERNAL;
/* Reads a whole head (head_len bytes of buf). The request must be CONNECT
 * host:port or an absolute http:// URI, and a Host header (required for a
 * URI, optional for CONNECT), exactly one, must name the same host and port.
 * 0, or -EINVAL with why. */
int net_http_parse(const char *buf, size_t head_len, net_http_req *ret, char *why,
		   size_t whylen) CORDON_INTERNAL;
/* The head to send upstream for a plain-HTTP request: the request line in
 * origin form, the headers without Proxy-* and Connection ones, and
 * "Connection: close" (one request per upstream connection: a second one
 * on it could name another host). Owned by the caller (g_free), its length
 * in *ret_len. */
char *net_http_upstream_head(const char *buf, const net_http_req *r,
			     size_t *ret_len) CORDON_INTERNAL;

/* The server name (SNI) of the TLS ClientHello at the start of buf: 1 with
 * the name, lower case, in sni ("" when the hello has none), 0 when more
 * bytes are needed, -EINVAL when buf does not start with a ClientHello in one
 * record (or the name is malformed). */
int net_tls_sni(const uint8_t *buf, size_t len, char *sni, size_t snilen) CORDON_INTERNAL;
