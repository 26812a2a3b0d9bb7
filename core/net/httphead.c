/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Proxy request heads and TLS server names (httphead.h). */
#include "config.h"

#include "net/httphead.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long net_http_head_end(const char *buf, size_t len)
{
	size_t n = len < NET_HTTP_HEAD_MAX ? len : NET_HTTP_HEAD_MAX;
	for (size_t i = 3; i < n; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r')
			return (long)(i + 1);
	return len >= NET_HTTP_HEAD_MAX ? -E2BIG : 0;
}

static int fail(char *why, size_t whylen, const char *msg)
{
	snprintf(why, whylen, "%s", msg);
	return -EINVAL;
}

/* host[:port] or [v6][:port] of len bytes into host and port (default_port
 * when none; 0 when none and none may be assumed). */
static bool parse_authority(const char *s, size_t len, uint16_t default_port, char *host,
			    uint16_t *port)
{
	const char *hend, *colon = NULL;
	const char *h = s;
	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close)
			return false;
		h = s + 1;
		hend = close;
		if (close + 1 < s + len) {
			if (close[1] != ':')
				return false;
			colon = close + 1;
		}
		if (!memchr(h, ':', (size_t)(hend - h)))
			return false; /* brackets are for IPv6 only */
	} else {
		colon = memchr(s, ':', len);
		hend = colon ? colon : s + len;
	}
	size_t hl = (size_t)(hend - h);
	if (hl == 0 || hl >= NET_HTTP_HOST_MAX)
		return false;
	for (size_t i = 0; i < hl; i++) {
		char c = h[i];
		if (!(g_ascii_isalnum(c) || c == '-' || c == '.' || c == '_' ||
		      (c == ':' && s[0] == '[')))
			return false;
		host[i] = g_ascii_tolower(c);
	}
	host[hl] = '\0';
	if (!colon) {
		*port = default_port;
		return default_port != 0;
	}
	const char *p = colon + 1;
	size_t pl = (size_t)(s + len - p);
	if (pl == 0 || pl > 5)
		return false;
	unsigned v = 0;
	for (size_t i = 0; i < pl; i++) {
		if (!g_ascii_isdigit(p[i]))
			return false;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* The value of the one Host header, trimmed; false when there are several. */
static bool find_host(const char *buf, size_t from, size_t end, const char **val, size_t *vlen)
{
	*val = NULL;
	size_t i = from;
	while (i + 2 <= end) {
		const char *eol = g_strstr_len(buf + i, (gssize)(end - i), "\r\n");
		if (!eol || eol == buf + i)
			break;
		size_t ll = (size_t)(eol - (buf + i));
		if (ll > 5 && g_ascii_strncasecmp(buf + i, "host:", 5) == 0) {
			if (*val)
				return false;
			const char *v = buf + i + 5;
			const char *ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*val = v;
			*vlen = (size_t)(ve - v);
		}
		i += ll + 2;
	}
	return true;
}

static int parse_target(const char *t, size_t tl, net_http_req *r, char *why, size_t whylen)
{
	if (r->connect) {
		if (!parse_authority(t, tl, 0, r->host, &r->port))
			return fail(why, whylen, "CONNECT needs host:port");
		return 0;
	}
	if (tl < 7 || g_ascii_strncasecmp(t, "http://", 7) != 0)
		return fail(
			why, whylen,
			"a proxy request needs an absolute http:// URI (https: through CONNECT)");
	const char *a = t + 7;
	size_t al = 0;
	while (7 + al < tl && a[al] != '/' && a[al] != '?' && a[al] != '#')
		al++;
	if (memchr(a, '@', al))
		return fail(why, whylen, "user information in the URI");
	if (!parse_authority(a, al, 80, r->host, &r->port))
		return fail(why, whylen, "a malformed host in the URI");
	r->path_off = (size_t)(a + al - t);
	r->path_len = tl - r->path_off;
	return 0;
}

int net_http_parse(const char *buf, size_t head_len, net_http_req *r, char *why, size_t whylen)
{
	memset(r, 0, sizeof(*r));
	r->head_len = head_len;
	const char *eol = g_strstr_len(buf, (gssize)head_len, "\r\n");
	const char *sp1 = eol ? memchr(buf, ' ', (size_t)(eol - buf)) : NULL;
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp2 || (size_t)(sp1 - buf) >= sizeof(r->method) || sp1 == buf ||
	    (size_t)(eol - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return fail(why, whylen, "not an HTTP/1.x request line");
	memcpy(r->method, buf, (size_t)(sp1 - buf));
	for (size_t i = 0; r->method[i]; i++)
		if (!g_ascii_isupper(r->method[i]))
			return fail(why, whylen, "a malformed method");
	r->connect = strcmp(r->method, "CONNECT") == 0;
	const char *t = sp1 + 1;
	int e = parse_target(t, (size_t)(sp2 - t), r, why, whylen);
	if (e < 0)
		return e;
	r->path_off += (size_t)(t - buf);
	r->version_off = (size_t)(sp2 + 1 - buf);
	r->headers_off = (size_t)(eol + 2 - buf);
	const char *hv;
	size_t hl = 0;
	if (!find_host(buf, r->headers_off, head_len, &hv, &hl))
		return fail(why, whylen, "more than one Host header");
	if (!hv && !r->connect)
		return fail(why, whylen, "no Host header");
	char hh[NET_HTTP_HOST_MAX];
	uint16_t hp;
	if (hv && (!parse_authority(hv, hl, r->connect ? r->port : 80, hh, &hp) ||
		   strcmp(hh, r->host) != 0 || hp != r->port))
		return fail(why, whylen, "the Host header differs from the request's target");
	return 0;
}

static bool drop_header(const char *line, size_t len)
{
	static const char *const dropped[] = { "proxy-", "connection:", "keep-alive:", NULL };
	for (size_t i = 0; dropped[i]; i++) {
		size_t n = strlen(dropped[i]);
		if (len >= n && g_ascii_strncasecmp(line, dropped[i], n) == 0)
			return true;
	}
	return false;
}

char *net_http_upstream_head(const char *buf, const net_http_req *r, size_t *ret_len)
{
	GString *s = g_string_sized_new(r->head_len + 32);
	g_string_append(s, r->method);
	g_string_append_c(s, ' ');
	if (r->path_len == 0 || buf[r->path_off] != '/')
		g_string_append_c(s, '/');
	g_string_append_len(s, buf + r->path_off, (gssize)r->path_len);
	g_string_append_c(s, ' ');
	g_string_append_len(s, buf + r->version_off, 8);
	g_string_append(s, "\r\n");
	size_t i = r->headers_off;
	while (i + 2 <= r->head_len) {
		const char *eol = g_strstr_len(buf + i, (gssize)(r->head_len - i), "\r\n");
		if (!eol || eol == buf + i)
			break;
		size_t ll = (size_t)(eol - (buf + i));
		if (!drop_header(buf + i, ll))
			g_string_append_len(s, buf + i, (gssize)ll + 2);
		i += ll + 2;
	}
	g_string_append(s, "Connection: close\r\n\r\n");
	*ret_len = s->len;
	return g_string_free(s, FALSE);
}

/* ---- TLS ---------------------------------------------------------------------------- */

typedef struct rd {
	const uint8_t *p;
	size_t left;
	bool bad;
} rd;

static unsigned rd_n(rd *r, size_t n)
{
	if (r->bad || r->left < n) {
		r->bad = true;
		return 0;
	}
	unsigned v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | r->p[i];
	r->p += n;
	r->left -= n;
	return v;
}

static rd rd_sub(rd *r, size_t n)
{
	rd s = { r->p, n, r->bad || r->left < n };
	if (!s.bad) {
		r->p += n;
		r->left -= n;
	} else {
		r->bad = true;
	}
	return s;
}

/* The server_name extension's host_name into sni. */
static int read_sni(rd ext, char *sni, size_t snilen)
{
	rd list = rd_sub(&ext, rd_n(&ext, 2));
	while (!list.bad && list.left) {
		unsigned type = rd_n(&list, 1);
		rd name = rd_sub(&list, rd_n(&list, 2));
		if (list.bad || type != 0)
			continue;
		if (name.left == 0 || name.left >= snilen || name.left >= NET_HTTP_HOST_MAX)
			return -EINVAL;
		for (size_t i = 0; i < name.left; i++) {
			char c = (char)name.p[i];
			if (!(g_ascii_isalnum(c) || c == '-' || c == '.' || c == '_'))
				return -EINVAL;
			sni[i] = g_ascii_tolower(c);
		}
		sni[name.left] = '\0';
		return 1;
	}
	return list.bad ? -EINVAL : 1;
}

int net_tls_sni(const uint8_t *buf, size_t len, char *sni, size_t snilen)
{
	sni[0] = '\0';
	if (len < 5)
		return len && buf[0] != 0x16 ? -EINVAL : 0;
	/* One handshake record holding the whole ClientHello. */
	if (buf[0] != 0x16 || buf[1] != 3)
		return -EINVAL;
	size_t rec = (size_t)buf[3] << 8 | buf[4];
	if (rec < 4 || rec > 16384)
		return -EINVAL;
	if (len < 5 + rec)
		return 0;
	rd r = { buf + 5, rec, false };
	if (rd_n(&r, 1) != 1) /* client_hello */
		return -EINVAL;
	rd hello = rd_sub(&r, rd_n(&r, 3));
	rd_n(&hello, 2 + 32);            /* version, random */
	rd_sub(&hello, rd_n(&hello, 1)); /* session id */
	rd_sub(&hello, rd_n(&hello, 2)); /* cipher suites */
	rd_sub(&hello, rd_n(&hello, 1)); /* compression */
	if (hello.bad)
		return -EINVAL;
	if (hello.left == 0)
		return 1; /* no extensions: no name */
	rd exts = rd_sub(&hello, rd_n(&hello, 2));
	while (!exts.bad && exts.left) {
		unsigned type = rd_n(&exts, 2);
		rd ext = rd_sub(&exts, rd_n(&exts, 2));
		if (!exts.bad && type == 0)
			return read_sni(ext, sni, snilen);
	}
	return exts.bad ? -EINVAL : 1;
}
