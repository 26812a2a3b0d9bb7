/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One HTTP call to E2B over libcurl, with what every call needs: TLS
 * verification always on (an optional CA file adds trust, never removes the
 * check), plain HTTP only to loopback (checked at configure), no redirect
 * followed (a 3xx is an error: a key must never be sent to a host the policy
 * did not name), a deadline on the whole call, buffered answers capped,
 * retries with backoff only for idempotent calls, cancellation by a
 * descriptor, and the headers that carry secrets wiped before they are freed.
 * libcurl's proxy conventions (http_proxy, https_proxy, no_proxy) apply.
 */
#include "config.h"

#include "e2b.h"
#include "errcodes.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RETRIES 3

int e2b_protocol_error(cordon_plugin_error *err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return e2b_host->error_set(err, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(remote_protocol),
				   "e2b: %s", msg);
}

void e2b_call_clear(e2b_call *call)
{
	if (call->resp)
		e2b_host->free(call->resp);
	call->resp = NULL;
	call->resp_len = 0;
}

typedef struct xfer {
	e2b_call *call;
	CURL *h;
	size_t cap;
	size_t len, alloc;
	bool over, bad_type, sink_stop, checked, streaming;
} xfer;

/* The first bytes of the answer: a streamed 200 of the wrong type is refused,
 * any other status is buffered (an error body) instead of streamed. */
static void first_bytes(xfer *x)
{
	long status = 0;
	char *ct = NULL;
	x->checked = true;
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->h, CURLINFO_CONTENT_TYPE, &ct);
	x->call->status = status;
	snprintf(x->call->content, sizeof(x->call->content), "%s", ct ? ct : "");
	x->streaming = x->call->sink && status == 200;
	if (x->streaming && strcmp(x->call->content, "application/connect+json") != 0)
		x->bad_type = true;
}

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
	xfer *x = ctx;
	size_t len = size * n;
	if (!x->checked)
		first_bytes(x);
	if (x->bad_type)
		return 0;
	if (x->streaming) {
		if (!x->call->sink(x->call->sink_ctx, data, len)) {
			x->sink_stop = true;
			return 0;
		}
		return len;
	}
	if (len > x->cap - x->len) {
		x->over = true;
		return 0;
	}
	if (x->len + len + 1 > x->alloc) {
		size_t a = x->alloc ? x->alloc : 4096;
		while (a < x->len + len + 1)
			a *= 2;
		char *b = e2b_host->alloc(a);
		if (x->call->resp) {
			memcpy(b, x->call->resp, x->len);
			e2b_host->free(x->call->resp);
		}
		x->call->resp = b;
		x->alloc = a;
	}
	memcpy(x->call->resp + x->len, data, len);
	x->len += len;
	x->call->resp[x->len] = '\0';
	return len;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	xfer *x = ctx;
	struct pollfd p = { .fd = x->call->cancel_fd, .events = POLLIN };
	if (x->call->cancel_fd >= 0 && poll(&p, 1, 0) > 0) {
		x->call->cancelled = true;
		return 1;
	}
	return 0;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;
	char *h = e2b_host->alloc(n);
	snprintf(h, n, "%s: %s", name, value);
	struct curl_slist *r = curl_slist_append(l, h);
	explicit_bzero(h, n);
	e2b_host->free(h);
	if (!r)
		abort(); /* as host->alloc: memory exhaustion is not an error path */
	return r;
}

/* The copies libcurl keeps of the secret headers are wiped before they are freed. */
static void free_headers(struct curl_slist *l)
{
	for (struct curl_slist *p = l; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(l);
}

static struct curl_slist *headers(const e2b_tier *t, const e2b_call *c)
{
	struct curl_slist *l = curl_slist_append(NULL, "Expect:");
	if (c->api)
		l = add_header(l, "X-API-Key", t->api_key);
	if (c->sbx) {
		l = add_header(l, "E2b-Sandbox-Id", c->sbx->id);
		l = add_header(l, "E2b-Sandbox-Port", E2B_ENVD_PORT);
		if (c->sbx->token)
			l = add_header(l, "X-Access-Token", c->sbx->token);
	}
	if (c->content_type)
		l = add_header(l, "Content-Type", c->content_type);
	for (const char *const *e = c->extra; e && *e; e++)
		l = curl_slist_append(l, *e);
	return l;
}

static void setup(CURL *h, const e2b_tier *t, e2b_call *c, xfer *x, uint64_t timeout_ms,
		  struct curl_slist *hdr)
{
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (t->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_file);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(timeout_ms < 10000 ? timeout_ms : 10000));
	curl_easy_setopt(h, CURLOPT_USERAGENT, "cordon-e2b/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	if (strcmp(c->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body ? c->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
	} else if (strcmp(c->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
	}
}

static int perform(const e2b_tier *t, e2b_call *c, uint64_t timeout_ms, bool *retry,
		   cordon_plugin_error *err)
{
	CURL *h = curl_easy_init();
	if (!h)
		return e2b_host->error_set(err, ENOMEM, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(resource), "e2b: curl_easy_init failed");
	xfer x = { .call = c, .h = h, .cap = c->max_body ? c->max_body : E2B_BODY_MAX };
	struct curl_slist *hdr = headers(t, c);
	e2b_call_clear(c);
	c->status = 0;
	c->content[0] = '\0';
	c->failure[0] = '\0';
	setup(h, t, c, &x, timeout_ms, hdr);
	CURLcode rc = curl_easy_perform(h);
	c->resp_len = x.len;
	if (!x.checked && rc == CURLE_OK)
		first_bytes(&x);
	char *location = NULL;
	curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &location);
	int r = 0;
	*retry = false;
	if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(c->failure, sizeof(c->failure), "no answer within %llu ms",
			 (unsigned long long)timeout_ms);
	else if (rc != CURLE_OK)
		snprintf(c->failure, sizeof(c->failure), "%s", curl_easy_strerror(rc));
	if (x.bad_type)
		r = e2b_protocol_error(
			err, "%s %s: a stream answered as '%s', not application/connect+json",
			c->method, c->url, c->content);
	else if (x.over && c->quiet_over)
		r = -EFBIG;
	else if (x.over)
		r = e2b_protocol_error(err, "%s %s: the answer is over its limit of %zu bytes",
				       c->method, c->url, x.cap);
	else if (c->cancelled)
		r = -ECANCELED;
	else if (x.sink_stop)
		r = -EPROTO; /* the sink set its own error */
	else if (rc == CURLE_OPERATION_TIMEDOUT && c->quiet_timeout)
		r = -ETIMEDOUT;
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		r = e2b_host->error_set(err, ETIMEDOUT, CORDON_PLUGIN_ERROR_TRANSIENT,
					ERRC(remote_unavailable), "e2b: %s %s: %s", c->method,
					c->url, c->failure);
	else if (rc != CURLE_OK) {
		*retry = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
			 rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR ||
			 rc == CURLE_SEND_ERROR;
		r = e2b_host->error_set(err, EHOSTUNREACH, CORDON_PLUGIN_ERROR_TRANSIENT,
					ERRC(remote_unavailable), "e2b: %s %s: %s", c->method,
					c->url, c->failure);
	} else if (c->status >= 300 && c->status < 400)
		r = e2b_protocol_error(err,
				       "%s %s: redirected (%ld) to %s: refused, a key is never "
				       "sent where the policy does not point",
				       c->method, c->url, c->status,
				       location ? location : "nowhere");
	else
		*retry = c->status >= 502 && c->status <= 504;
	free_headers(hdr);
	curl_easy_cleanup(h);
	return r;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int e2b_http(const e2b_tier *t, e2b_call *c, cordon_plugin_error *err)
{
	uint64_t budget = c->timeout_ms ? c->timeout_ms : t->request_ms;
	uint64_t deadline = now_ms() + budget;
	for (int attempt = 0;; attempt++) {
		bool retry = false;
		uint64_t left = deadline > now_ms() ? deadline - now_ms() : 1;
		int r = perform(t, c, left, &retry, err);
		uint64_t pause = 100u << attempt;
		if (!retry || !c->idempotent || attempt + 1 >= RETRIES ||
		    now_ms() + pause >= deadline)
			return r;
		e2b_host->log(CORDON_PLUGIN_LOG_DEBUG, "e2b", "%s %s: retrying in %llu ms",
			      c->method, c->url, (unsigned long long)pause);
		usleep((useconds_t)pause * 1000);
	}
}

char *e2b_url(const char *base, const char *path, const char *key, const char *value)
{
	char *esc = value ? curl_easy_escape(NULL, value, 0) : NULL;
	size_t n = strlen(base) + strlen(path) + (key ? strlen(key) : 0) + (esc ? strlen(esc) : 0) +
		   4;
	char *u = e2b_host->alloc(n);
	if (key && esc)
		snprintf(u, n, "%s%s?%s=%s", base, path, key, esc);
	else
		snprintf(u, n, "%s%s", base, path);
	curl_free(esc);
	return u;
}

json_object *e2b_parse_as(const char *data, size_t len, json_type type, const char *what,
			  cordon_plugin_error *err)
{
	json_tokener *tok = json_tokener_new_ex(E2B_JSON_DEPTH);
	json_object *o = data && len < E2B_FRAME_MAX ? json_tokener_parse_ex(tok, data, (int)len)
						     : NULL;
	bool whole = o && json_tokener_get_error(tok) == json_tokener_success &&
		     json_tokener_get_parse_end(tok) == len;
	json_tokener_free(tok);
	if (!whole || !json_object_is_type(o, type)) {
		json_object_put(o);
		e2b_protocol_error(err, "%s: the answer is not one JSON %s", what,
				   type == json_type_array ? "array" : "object");
		return NULL;
	}
	return o;
}

json_object *e2b_parse(const char *data, size_t len, const char *what, cordon_plugin_error *err)
{
	return e2b_parse_as(data, len, json_type_object, what, err);
}

const char *e2b_string(json_object *o, const char *key, bool *bad)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	if (!json_object_is_type(v, json_type_string)) {
		*bad = true;
		return NULL;
	}
	return json_object_get_string(v);
}

int e2b_status_error(const e2b_call *c, const char *op, cordon_plugin_error *err)
{
	char msg[300] = "";
	json_object *o = NULL;
	if (c->resp_len && c->resp_len < E2B_BODY_MAX) {
		json_tokener *tok = json_tokener_new_ex(E2B_JSON_DEPTH);
		o = json_tokener_parse_ex(tok, c->resp, (int)c->resp_len);
		json_tokener_free(tok);
	}
	bool bad = false;
	const char *m = json_object_is_type(o, json_type_object) ? e2b_string(o, "message", &bad)
								 : NULL;
	/* What the server says is quoted, never trusted as a format, and cut. */
	snprintf(msg, sizeof(msg), "%.250s", m ? m : "(no message)");
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	json_object_put(o);
	long s = c->status;
	if (s == 401 || s == 403)
		return e2b_host->error_set(err, EACCES, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(remote_refused),
					   "e2b: %s: the server refused (%ld): %s", op, s, msg);
	if (s == 429 || s >= 500)
		return e2b_host->error_set(
			err, EAGAIN, CORDON_PLUGIN_ERROR_TRANSIENT, ERRC(remote_unavailable),
			"e2b: %s: the server is unavailable (%ld): %s", op, s, msg);
	return e2b_host->error_set(err, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(remote_protocol),
				   "e2b: %s: unexpected status %ld: %s", op, s, msg);
}

/* ---- a port tunnel (serve.c) -------------------------------------------------------- */

#define TUNNEL_HEAD_MAX 8192

/* Waits until h's socket is ready for what `events` asks, or the deadline. */
static bool tunnel_wait(CURL *h, short events, uint64_t deadline)
{
	curl_socket_t sock = CURL_SOCKET_BAD;
	curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &sock);
	uint64_t now = now_ms();
	if (sock == CURL_SOCKET_BAD || now >= deadline)
		return false;
	struct pollfd p = { .fd = sock, .events = events };
	return poll(&p, 1, (int)(deadline - now)) > 0;
}

static bool tunnel_send(CURL *h, const char *b, size_t n, uint64_t deadline)
{
	while (n) {
		size_t w = 0;
		CURLcode rc = curl_easy_send(h, b, n, &w);
		if (rc == CURLE_AGAIN) {
			if (!tunnel_wait(h, POLLOUT, deadline))
				return false;
			continue;
		}
		if (rc != CURLE_OK)
			return false;
		b += w;
		n -= w;
	}
	return true;
}

/* The request: an envd-style one (the sandbox, its token) for the port, asking the
 * server to switch to raw bytes. Written by hand: CONNECT_ONLY gives a bare stream. */
static char *tunnel_request(const e2b_sandbox *s, uint16_t port, size_t *len)
{
	CURLU *u = curl_url();
	char *host = NULL, *pstr = NULL;
	if (curl_url_set(u, CURLUPART_URL, s->envd, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		curl_url_cleanup(u);
		return NULL;
	}
	curl_url_get(u, CURLUPART_PORT, &pstr, 0);
	size_t n = 512 + strlen(host) + strlen(s->id) + (s->token ? strlen(s->token) : 0);
	char *req = e2b_host->alloc(n);
	int w = snprintf(req, n,
			 "GET / HTTP/1.1\r\nHost: %s%s%s\r\nConnection: Upgrade\r\n"
			 "Upgrade: " E2B_TUNNEL_PROTOCOL
			 "\r\nUser-Agent: cordon-e2b/" PACKAGE_VERSION
			 "\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: %u\r\n%s%s%s\r\n",
			 host, pstr ? ":" : "", pstr ? pstr : "", s->id, (unsigned)port,
			 s->token ? "X-Access-Token: " : "", s->token ? s->token : "",
			 s->token ? "\r\n" : "");
	curl_free(host);
	curl_free(pstr);
	curl_url_cleanup(u);
	*len = (size_t)w;
	return req;
}

/* Reads the answer's head; true on a 101 (what follows it, up to cap, in extra). */
static bool tunnel_answer(CURL *h, uint64_t deadline, char *extra, size_t cap, size_t *extra_len,
			  char *why, size_t why_len)
{
	char head[TUNNEL_HEAD_MAX + 1];
	size_t got = 0;
	char *end = NULL;
	while (!end) {
		size_t n = 0;
		if (got == TUNNEL_HEAD_MAX) {
			snprintf(why, why_len, "the tunnel's answer has no end of its head");
			return false;
		}
		CURLcode rc = curl_easy_recv(h, head + got, TUNNEL_HEAD_MAX - got, &n);
		if (rc == CURLE_AGAIN) {
			if (!tunnel_wait(h, POLLIN, deadline)) {
				snprintf(why, why_len, "no answer to the tunnel in time");
				return false;
			}
			continue;
		}
		if (rc != CURLE_OK || n == 0) {
			snprintf(why, why_len, "the server closed the tunnel before answering");
			return false;
		}
		got += n;
		head[got] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	if (strncmp(head, "HTTP/1.1 101 ", 13) != 0) {
		/* The status line, and the message of a JSON error body if it came along. */
		char *eol = strstr(head, "\r\n");
		char *msg = strstr(end, "\"message\":\"");
		snprintf(why, why_len, "the tunnel was refused: %.*s%s%.160s", (int)(eol - head),
			 head, msg ? ": " : "", msg ? msg + 11 : "");
		char *q = msg ? strchr(why, '"') : NULL;
		if (q)
			*q = '\0';
		return false;
	}
	size_t rest = got - (size_t)(end + 4 - head);
	if (rest > cap) {
		snprintf(why, why_len, "too many bytes after the tunnel's answer");
		return false;
	}
	memcpy(extra, end + 4, rest);
	*extra_len = rest;
	return true;
}

CURL *e2b_tunnel_open(const e2b_sandbox *s, uint16_t port, char *extra, size_t cap,
		      size_t *extra_len, char *why, size_t why_len)
{
	const e2b_tier *t = s->tier;
	uint64_t deadline = now_ms() + t->request_ms;
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(why, why_len, "curl_easy_init failed");
		return NULL;
	}
	curl_easy_setopt(h, CURLOPT_URL, s->envd);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (t->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_file);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)t->request_ms);
	curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	/* Through an HTTP proxy the stream is a CONNECT tunnel, as libcurl's conventions say. */
	curl_easy_setopt(h, CURLOPT_HTTPPROXYTUNNEL, 1L);
	CURLcode rc = curl_easy_perform(h);
	size_t len = 0;
	char *req = rc == CURLE_OK ? tunnel_request(s, port, &len) : NULL;
	bool ok = req && tunnel_send(h, req, len, deadline);
	if (req) {
		explicit_bzero(req, len); /* the access token */
		e2b_host->free(req);
	}
	if (rc != CURLE_OK)
		snprintf(why, why_len, "%s", curl_easy_strerror(rc));
	else if (!ok)
		snprintf(why, why_len, "cannot send the tunnel's request");
	else
		ok = tunnel_answer(h, deadline, extra, cap, extra_len, why, why_len);
	if (!ok) {
		curl_easy_cleanup(h);
		return NULL;
	}
	return h;
}
