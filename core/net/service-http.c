/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A request head, checked and rewritten for the upstream (service-http.h). */
#include "config.h"

#include "net/service-http.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* The request target, with the prefix before it, within a head's bound. */
#define TARGET_MAX 8192

void svc_wipe(GString *s)
{
	if (!s)
		return;
	explicit_bzero(s->str, s->allocated_len);
	g_string_free(s, TRUE);
}

static bool is_tchar(char c) { return g_ascii_isalnum(c) || strchr("!#$%&'*+-.^_`|~", c); }

/* The headers the proxy owns: framing and routing between it and the
 * upstream, and the credential. The work's copies are dropped. */
static bool header_dropped(const char *name, size_t len, const svc_route *r)
{
	static const char *const hop[] = { "host",
					   "connection",
					   "keep-alive",
					   "proxy-connection",
					   "proxy-authorization",
					   "te",
					   "upgrade",
					   "trailer",
					   NULL };
	for (int i = 0; hop[i]; i++)
		if (strlen(hop[i]) == len && g_ascii_strncasecmp(name, hop[i], len) == 0)
			return true;
	return strlen(r->header) == len && g_ascii_strncasecmp(name, r->header, len) == 0;
}

typedef struct head_state {
	int content_length; /* seen */
	bool chunked;
	const char *why;
	int status;
} head_state;

static bool refuse(head_state *st, int status, const char *why)
{
	st->status = status;
	st->why = why;
	return false;
}

/* "METHOD SP /target SP HTTP/1.x": the upstream's request line into out. */
static bool request_line(const char *s, size_t len, const svc_route *r, GString *out,
			 head_state *st)
{
	const char *sp1 = memchr(s, ' ', len);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - s)) : NULL;
	if (!sp1 || !sp2 || sp1 == s)
		return refuse(st, 400, "a malformed request line");
	for (const char *p = s; p < sp1; p++)
		if (!is_tchar(*p))
			return refuse(st, 400, "a malformed method");
	size_t mlen = (size_t)(sp1 - s);
	/* CONNECT would make a tunnel the credential is not added to; TRACE
	 * echoes the request, the added credential included, to the work. */
	if ((mlen == 7 && memcmp(s, "CONNECT", 7) == 0) ||
	    (mlen == 5 && memcmp(s, "TRACE", 5) == 0))
		return refuse(st, 405, "CONNECT and TRACE are not forwarded");
	const char *target = sp1 + 1, *version = sp2 + 1;
	size_t tlen = (size_t)(sp2 - target), vlen = len - (size_t)(version - s);
	if (tlen == 0 || target[0] != '/' || tlen + strlen(r->prefix) > TARGET_MAX)
		return refuse(st, 400, "the target must be a path (origin form)");
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= 0x20 || (unsigned char)target[i] >= 0x7f)
			return refuse(st, 400, "a malformed target");
	if (vlen != 8 ||
	    (memcmp(version, "HTTP/1.1", 8) != 0 && memcmp(version, "HTTP/1.0", 8) != 0))
		return refuse(st, 505, "only HTTP/1.0 and HTTP/1.1 are forwarded");
	g_string_append_len(out, s, (gssize)mlen + 1);
	g_string_append(out, r->prefix);
	g_string_append_len(out, target, (gssize)tlen);
	g_string_append_c(out, ' ');
	g_string_append_len(out, version, 8);
	g_string_append(out, "\r\n");
	return true;
}

static bool value_is(const char *v, size_t len, const char *want)
{
	while (len && (*v == ' ' || *v == '\t'))
		v++, len--;
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	return strlen(want) == len && g_ascii_strncasecmp(v, want, len) == 0;
}

/* One "name: value" line, kept in out unless the proxy owns it. Framing
 * the upstream and the proxy could read apart (both lengths, two lengths,
 * a coding other than chunked) is refused: the upstream must see the body
 * the work framed, and only it. */
static bool header_line(const char *s, size_t len, const svc_route *r, GString *out, head_state *st)
{
	const char *colon = memchr(s, ':', len);
	if (!colon || colon == s)
		return refuse(st, 400, "a malformed header line");
	size_t nlen = (size_t)(colon - s);
	for (size_t i = 0; i < nlen; i++)
		if (!is_tchar(s[i]))
			return refuse(st, 400, "a malformed header name");
	const char *v = colon + 1;
	size_t vlen = len - nlen - 1;
	for (size_t i = 0; i < vlen; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
			return refuse(st, 400, "a control character in a header value");
	if (nlen == 14 && g_ascii_strncasecmp(s, "content-length", 14) == 0) {
		if (st->content_length++)
			return refuse(st, 400, "two Content-Length headers");
	} else if (nlen == 17 && g_ascii_strncasecmp(s, "transfer-encoding", 17) == 0) {
		if (st->chunked || !value_is(v, vlen, "chunked"))
			return refuse(st, 501, "a transfer coding other than one chunked");
		st->chunked = true;
	}
	if (st->chunked && st->content_length)
		return refuse(st, 400, "both Content-Length and Transfer-Encoding");
	if (!header_dropped(s, nlen, r)) {
		g_string_append_len(out, s, (gssize)len);
		g_string_append(out, "\r\n");
	}
	return true;
}

static void append_host(GString *out, const svc_route *r)
{
	bool v6 = strchr(r->host, ':') != NULL;
	g_string_append_printf(out, "Host: %s%s%s", v6 ? "[" : "", r->host, v6 ? "]" : "");
	if (r->port != 443)
		g_string_append_printf(out, ":%u", (unsigned)r->port);
	g_string_append(out, "\r\n");
}

GString *svc_head_rewrite(const char *head, size_t len, const svc_route *r, int *ret_status,
			  const char **ret_why)
{
	head_state st = { 0, false, NULL, 0 };
	GString *out = g_string_sized_new(len + 256);
	const char *end = head + len - 2; /* the empty line's CRLF */
	const char *line = head;
	int n = 0;
	bool ok = true;
	while (ok && line < end) {
		const char *eol = g_strstr_len(line, end - line + 2, "\r\n");
		size_t llen = (size_t)(eol - line);
		if (memchr(line, '\n', llen) || memchr(line, '\0', llen))
			ok = refuse(&st, 400, "a bare LF or NUL in the head");
		else if (n == 0)
			ok = request_line(line, llen, r, out, &st);
		else if (line[0] == ' ' || line[0] == '\t')
			ok = refuse(&st, 400, "a folded header line");
		else if (n > SVC_HEADERS_MAX)
			ok = refuse(&st, 431, "more than 100 headers");
		else
			ok = header_line(line, llen, r, out, &st);
		if (ok && n == 0)
			append_host(out, r);
		n++;
		line = eol + 2;
	}
	if (!ok) {
		svc_wipe(out);
		*ret_status = st.status;
		*ret_why = st.why;
		return NULL;
	}
	g_string_append_printf(out, "%s: %s\r\nConnection: close\r\n\r\n", r->header, r->value);
	return out;
}
