/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Governed egress's proxy (proxy.h). One GSource per connection, through
 * its states: the request's head, the name's resolution (getaddrinfo on a
 * worker of a GThreadPool, the answer handed back to the loop), the upstream
 * connect (each checked address in turn), the reply to the work, a CONNECT's
 * ClientHello, then the copy (carry.h). Every descriptor is non-blocking and
 * close-on-exec; a connection is polled only for what its state waits for. */
#include "config.h"

#include "net/proxy.h"
#include "net/carry.h"
#include "net/httphead.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib-unix.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HELLO_MAX (5 + 16384) /* one TLS record */
#define RESOLVERS 4           /* getaddrinfo workers */
#define MAX_ADDRS 16          /* of one name, tried in turn */

struct net_proxy {
	GMainContext *ctx;
	GThread *thread;
	GThreadPool *pool;
	int listen_fd;
	GSource *listen_src;
	net_egress *rules;  /* the policy's */
	net_egress *narrow; /* net_proxy_narrow's, or NULL */
	net_proxy_audit_fn audit;
	void *user;
	net_proxy_resolve_fn resolve;
	GList *conns;
	unsigned nconns;
	bool stopping;
};

typedef enum state { HEAD, RESOLVING, CONNECTING, REPLY, HELLO, COPY, REFUSING } state;

typedef struct pconn {
	GSource src;
	net_proxy *p;
	GList *link;
	state st;
	gpointer tag[2];
	GIOCondition watched[2];
	GSource *deadline;
	net_carry *k; /* fd[0] the work's, fd[1] the upstream's */
	char *buf;    /* the head, then a CONNECT's hello */
	size_t len;
	char *out; /* a reply to the work (REPLY, REFUSING) */
	size_t out_len, out_off;
	net_http_req req;
	struct sockaddr_storage addrs[MAX_ADDRS];
	unsigned naddrs, next_addr;
	char address[INET6_ADDRSTRLEN + 8];
	char reason[640];
	bool allowed;
} pconn;

/* A name's resolution on a worker; back on the loop as an idle source. */
typedef struct lookup {
	pconn *c; /* a reference */
	char host[NET_HTTP_HOST_MAX];
	uint16_t port;
	struct sockaddr_storage addrs[MAX_ADDRS];
	unsigned naddrs;
	int err; /* EAI_* or 0 */
} lookup;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void watch(pconn *c, int i, GIOCondition ev)
{
	if (c->tag[i] && ev == c->watched[i])
		return;
	c->watched[i] = ev;
	if (!ev) {
		if (c->tag[i])
			g_source_remove_unix_fd(&c->src, c->tag[i]);
		c->tag[i] = NULL;
	} else if (c->tag[i]) {
		g_source_modify_unix_fd(&c->src, c->tag[i], ev);
	} else if (c->k->fd[i] >= 0) {
		c->tag[i] = g_source_add_unix_fd(&c->src, c->k->fd[i], ev);
	}
}

static void watch_only(pconn *c, GIOCondition ev0, GIOCondition ev1)
{
	watch(c, 0, ev0);
	watch(c, 1, ev1);
}

static void end(pconn *c, const char *reason)
{
	if (reason && !c->reason[0])
		g_strlcpy(c->reason, reason, sizeof(c->reason));
	g_source_destroy(&c->src); /* finalize reports it */
}

/* Refused: a short HTTP answer, then the end. */
static void refuse(pconn *c, int code, const char *status, const char *reason)
{
	g_strlcpy(c->reason, reason, sizeof(c->reason));
	c->allowed = false;
	g_autofree char *body = g_strdup_printf("cordon egress: %s\n", reason);
	g_free(c->out);
	c->out = g_strdup_printf("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: "
				 "close\r\nContent-Length: %zu\r\n\r\n%s",
				 code, status, strlen(body), body);
	c->out_len = strlen(c->out);
	c->out_off = 0;
	c->st = REFUSING;
	watch_only(c, G_IO_OUT, 0);
}

/* ---- resolving and connecting ---------------------------------------------------------- */

static void connect_next(pconn *c, int last_err);

/* Both rule sets allow the target (the narrowing one only narrows). */
static bool target_ok(const net_proxy *p, const char *host, uint16_t port, char *why, size_t whylen)
{
	return net_egress_target_allowed(p->rules, host, port, why, whylen) &&
	       (!p->narrow || net_egress_target_allowed(p->narrow, host, port, why, whylen));
}

static bool address_ok(const net_proxy *p, const char *host, uint16_t port,
		       const struct sockaddr *a, char *why, size_t whylen)
{
	return net_egress_address_allowed(p->rules, host, port, a, why, whylen) &&
	       (!p->narrow || net_egress_address_allowed(p->narrow, host, port, a, why, whylen));
}

/* Keeps the addresses the rules allow; refuses when none is left. */
static bool keep_allowed(pconn *c, const struct sockaddr_storage *addrs, unsigned n)
{
	char why[256] = "no address";
	c->naddrs = 0;
	for (unsigned i = 0; i < n; i++) {
		char w[256];
		if (address_ok(c->p, c->req.host, c->req.port, (const struct sockaddr *)&addrs[i],
			       w, sizeof(w)))
			c->addrs[c->naddrs++] = addrs[i];
		else if (c->naddrs == 0)
			g_strlcpy(why, w, sizeof(why));
	}
	if (c->naddrs == 0)
		refuse(c, 403, "Forbidden", why);
	return c->naddrs > 0;
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

static gboolean lookup_done(gpointer data)
{
	lookup *l = data;
	pconn *c = l->c;
	if (!g_source_is_destroyed(&c->src) && c->st == RESOLVING) {
		if (l->err) {
			g_autofree char *why = g_strdup_printf("cannot resolve %s: %s", l->host,
							       gai_strerror(l->err));
			refuse(c, 502, "Bad Gateway", why);
		} else if (keep_allowed(c, l->addrs, l->naddrs)) {
			connect_next(c, 0);
		}
	}
	g_source_unref(&c->src);
	return G_SOURCE_REMOVE;
}

static void getaddrinfo_resolve(const char *host, struct sockaddr_storage *addrs, unsigned *n,
				int *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	*n = 0;
	*err = getaddrinfo(host, NULL, &hints, &res);
	for (struct addrinfo *a = res; a && *n < MAX_ADDRS; a = a->ai_next)
		if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
		    a->ai_addrlen <= sizeof(addrs[0]))
			memcpy(&addrs[(*n)++], a->ai_addr, a->ai_addrlen);
	if (res)
		freeaddrinfo(res);
}

static void lookup_worker(gpointer data, gpointer pool_data)
{
	lookup *l = data;
	net_proxy *p = pool_data;
	if (p->resolve)
		l->err = p->resolve(l->host, l->addrs, MAX_ADDRS, &l->naddrs);
	else
		getaddrinfo_resolve(l->host, l->addrs, &l->naddrs, &l->err);
	if (!l->err && l->naddrs == 0)
		l->err = EAI_NONAME;
	for (unsigned i = 0; i < l->naddrs; i++)
		set_port(&l->addrs[i], l->port);
	GSource *s = g_idle_source_new();
	g_source_set_callback(s, lookup_done, l, g_free);
	g_source_attach(s, p->ctx);
	g_source_unref(s);
}

/* The target's addresses: an IP literal as it is, a name by a worker. */
static void resolve(pconn *c)
{
	struct sockaddr_storage a = { 0 };
	struct sockaddr_in *v4 = (struct sockaddr_in *)&a;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a;
	if (inet_pton(AF_INET, c->req.host, &v4->sin_addr) == 1) {
		a.ss_family = AF_INET;
	} else if (inet_pton(AF_INET6, c->req.host, &v6->sin6_addr) == 1) {
		a.ss_family = AF_INET6;
	} else {
		lookup *l = g_new0(lookup, 1);
		l->c = c;
		g_source_ref(&c->src);
		g_strlcpy(l->host, c->req.host, sizeof(l->host));
		l->port = c->req.port;
		c->st = RESOLVING;
		watch_only(c, 0, 0);
		/* The pool owns l from here: lookup_done frees it. */
		g_thread_pool_push(c->p->pool, l, NULL);
		// cppcheck-suppress memleak
		return;
	}
	set_port(&a, c->req.port);
	if (keep_allowed(c, &a, 1))
		connect_next(c, 0);
}

static void connect_next(pconn *c, int last_err)
{
	close_fd(&c->k->fd[1]);
	c->tag[1] = NULL;
	c->watched[1] = 0;
	while (c->next_addr < c->naddrs) {
		const struct sockaddr_storage *a = &c->addrs[c->next_addr++];
		socklen_t len = a->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							: sizeof(struct sockaddr_in6);
		char ip[INET6_ADDRSTRLEN] = "";
		const void *raw =
			a->ss_family == AF_INET
				? (const void *)&((const struct sockaddr_in *)a)->sin_addr
				: (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr;
		inet_ntop(a->ss_family, raw, ip, sizeof(ip));
		snprintf(c->address, sizeof(c->address),
			 a->ss_family == AF_INET ? "%s:%u" : "[%s]:%u", ip, (unsigned)c->req.port);
		int fd = socket(a->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			last_err = errno;
			continue;
		}
		if (connect(fd, (const struct sockaddr *)a, len) == 0 || errno == EINPROGRESS) {
			c->k->fd[1] = fd;
			c->st = CONNECTING;
			watch_only(c, 0, G_IO_OUT);
			return;
		}
		last_err = errno;
		close(fd);
	}
	g_autofree char *why = g_strdup_printf("cannot connect to %s: %s", c->address,
					       g_strerror(last_err ? last_err : ECONNREFUSED));
	refuse(c, 502, "Bad Gateway", why);
}

/* ---- the request --------------------------------------------------------------------- */

static void start_copy(pconn *c)
{
	if (c->deadline) {
		g_source_destroy(c->deadline);
		g_source_unref(c->deadline);
		c->deadline = NULL;
	}
	c->allowed = true;
	c->st = COPY;
	watch_only(c, net_carry_wants(c->k, 0), net_carry_wants(c->k, 1));
}

/* The head's whole: checked, then resolved. */
static void on_head(pconn *c, size_t head_len)
{
	char why[256];
	if (net_http_parse(c->buf, head_len, &c->req, why, sizeof(why)) < 0) {
		refuse(c, 400, "Bad Request", why);
		return;
	}
	if (!target_ok(c->p, c->req.host, c->req.port, why, sizeof(why))) {
		refuse(c, 403, "Forbidden", why);
		return;
	}
	resolve(c);
}

static void on_connected(pconn *c)
{
	if (c->req.connect) {
		/* What came after the head is the start of the hello. */
		c->len -= c->req.head_len;
		memmove(c->buf, c->buf + c->req.head_len, c->len);
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		c->out = g_strdup(ok);
		c->out_len = sizeof(ok) - 1;
		c->out_off = 0;
		c->st = REPLY;
		watch_only(c, G_IO_OUT, 0);
		return;
	}
	size_t n = 0;
	g_autofree char *head = net_http_upstream_head(c->buf, &c->req, &n);
	size_t rest = c->len - c->req.head_len;
	g_autofree char *all = g_malloc(n + rest);
	memcpy(all, head, n);
	memcpy(all + n, c->buf + c->req.head_len, rest);
	net_carry_preload(c->k, 0, all, n + rest);
	c->k->h[0].total = n + rest;
	start_copy(c);
}

/* A CONNECT's first bytes: a ClientHello naming the CONNECT host. */
static void on_hello(pconn *c)
{
	char sni[NET_HTTP_HOST_MAX];
	int r = net_tls_sni((const uint8_t *)c->buf, c->len, sni, sizeof(sni));
	if (r == 0)
		return;
	bool ip = strchr(c->req.host, ':') || g_hostname_is_ip_address(c->req.host);
	char why[640] = "";
	if (r < 0)
		snprintf(why, sizeof(why),
			 "the CONNECT tunnel does not start with a TLS ClientHello");
	else if (!sni[0] && !ip)
		snprintf(why, sizeof(why), "the TLS ClientHello names no server (SNI) for %s",
			 c->req.host);
	else if (sni[0] && strcmp(sni, c->req.host) != 0)
		snprintf(why, sizeof(why),
			 "the TLS server name %s differs from the CONNECT host %s", sni,
			 c->req.host);
	if (why[0]) {
		c->allowed = false;
		end(c, why);
		return;
	}
	net_carry_preload(c->k, 0, c->buf, c->len);
	c->k->h[0].total = c->len;
	start_copy(c);
}

/* Reads what fd[0] sent into buf, up to cap; false when the connection ended. */
static bool read_in(pconn *c, size_t cap, const char *what)
{
	ssize_t n = recv(c->k->fd[0], c->buf + c->len, cap - c->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		end(c, what);
		return false;
	}
	c->len += (size_t)n;
	return true;
}

/* Writes out to fd[0]; true once all of it is written. */
static bool write_out(pconn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->k->fd[0], c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				end(c, "the work closed the connection");
			return false;
		}
		c->out_off += (size_t)n;
	}
	return true;
}

static gboolean conn_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
	(void)cb;
	(void)data;
	pconn *c = (pconn *)src;
	GIOCondition ev[2];
	for (int i = 0; i < 2; i++)
		ev[i] = c->tag[i] ? g_source_query_unix_fd(src, c->tag[i]) : 0;
	switch (c->st) {
	case HEAD: {
		if (!ev[0] || !read_in(c, NET_HTTP_HEAD_MAX, "closed before a request"))
			break;
		long e = net_http_head_end(c->buf, c->len);
		if (e < 0)
			refuse(c, 431, "Request Header Fields Too Large",
			       "the request's head is too long");
		else if (e > 0)
			on_head(c, (size_t)e);
		break;
	}
	case CONNECTING: {
		if (!ev[1])
			break;
		int e = 0;
		socklen_t l = sizeof(e);
		if (getsockopt(c->k->fd[1], SOL_SOCKET, SO_ERROR, &e, &l) < 0)
			e = errno;
		if (e)
			connect_next(c, e);
		else
			on_connected(c);
		break;
	}
	case REPLY:
		if (ev[0] && write_out(c)) {
			c->st = HELLO;
			watch_only(c, G_IO_IN, 0);
			on_hello(c); /* bytes sent with the CONNECT */
		}
		break;
	case HELLO:
		if (ev[0] && read_in(c, HELLO_MAX, "closed before a TLS ClientHello"))
			on_hello(c);
		break;
	case REFUSING:
		if (ev[0] && write_out(c))
			end(c, NULL);
		break;
	case COPY:
		for (int i = 0; i < 2; i++)
			if ((ev[i] & (G_IO_IN | G_IO_HUP | G_IO_ERR)) ||
			    (ev[1 - i] & (G_IO_OUT | G_IO_HUP | G_IO_ERR)))
				if (!net_carry_pump(c->k, i)) {
					end(c, NULL);
					return G_SOURCE_REMOVE;
				}
		if (net_carry_done(c->k)) {
			end(c, NULL);
			return G_SOURCE_REMOVE;
		}
		watch_only(c, net_carry_wants(c->k, 0), net_carry_wants(c->k, 1));
		break;
	case RESOLVING: break;
	}
	if (!g_source_is_destroyed(src) && c->st == HELLO && c->len >= HELLO_MAX)
		end(c, "the TLS ClientHello is larger than one record");
	return G_SOURCE_CONTINUE;
}

static void conn_finalize(GSource *src)
{
	pconn *c = (pconn *)src;
	net_proxy_event ev = {
		.method = c->req.method,
		.host = c->req.host,
		.port = c->req.port,
		.address = c->address,
		.allowed = c->allowed,
		.reason = c->reason,
		.bytes_up = c->k->h[0].total,
		.bytes_down = c->k->h[1].total,
	};
	c->p->audit(c->p->user, &ev);
	if (c->deadline) {
		g_source_destroy(c->deadline);
		g_source_unref(c->deadline);
	}
	close_fd(&c->k->fd[0]);
	close_fd(&c->k->fd[1]);
	g_free(c->k);
	g_free(c->buf);
	g_free(c->out);
	c->p->conns = g_list_delete_link(c->p->conns, c->link);
	c->p->nconns--;
	if (c->p->stopping && !c->p->nconns)
		g_main_context_wakeup(c->p->ctx);
}

static GSourceFuncs conn_funcs = { .dispatch = conn_dispatch, .finalize = conn_finalize };

static gboolean on_deadline(gpointer data)
{
	pconn *c = data;
	g_source_unref(c->deadline);
	c->deadline = NULL;
	end(c, "no request within the deadline");
	return G_SOURCE_REMOVE;
}

static void conn_new(net_proxy *p, int fd)
{
	pconn *c = (pconn *)g_source_new(&conn_funcs, sizeof(pconn));
	c->p = p;
	c->k = g_new0(net_carry, 1);
	c->k->fd[0] = fd;
	c->k->fd[1] = -1;
	c->buf = g_malloc(HELLO_MAX > NET_HTTP_HEAD_MAX ? HELLO_MAX : NET_HTTP_HEAD_MAX);
	p->conns = g_list_prepend(p->conns, c);
	c->link = p->conns;
	p->nconns++;
	g_source_set_can_recurse(&c->src, TRUE);
	c->deadline = g_timeout_source_new(NET_PROXY_DEADLINE_MS);
	g_source_set_callback(c->deadline, on_deadline, c, NULL);
	g_source_attach(c->deadline, p->ctx);
	c->st = HEAD;
	watch_only(c, G_IO_IN, 0);
	g_source_attach(&c->src, p->ctx);
	g_source_unref(&c->src); /* the context's reference is the connection's life */
}

/* Over the cap: told so at once, never queued. */
static void refuse_busy(net_proxy *p, int fd)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
				   "Content-Length: 0\r\n\r\n";
	(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
	net_proxy_event ev = { "", "", 0, "", false, "too many connections", 0, 0 };
	p->audit(p->user, &ev);
}

static gboolean on_accept(gint fd, GIOCondition cond, gpointer data)
{
	(void)cond;
	net_proxy *p = data;
	for (;;) {
		int client = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (client >= 0) {
			if (p->nconns >= NET_PROXY_MAX_CONNS)
				refuse_busy(p, client);
			else
				conn_new(p, client);
			continue;
		}
		if (errno != EINTR && errno != ECONNABORTED)
			break;
	}
	return G_SOURCE_CONTINUE;
}

/* ---- the thread ------------------------------------------------------------------------ */

static gboolean shut_down(gpointer data)
{
	net_proxy *p = data;
	p->stopping = true;
	g_source_destroy(p->listen_src);
	for (GList *l = p->conns; l;) {
		GList *next = l->next; /* finalize unlinks it */
		end(l->data, "the sandbox closed");
		l = next;
	}
	return G_SOURCE_REMOVE;
}

static gpointer proxy_thread(gpointer data)
{
	net_proxy *p = data;
	g_main_context_push_thread_default(p->ctx);
	while (!p->stopping || p->nconns)
		g_main_context_iteration(p->ctx, TRUE);
	g_main_context_pop_thread_default(p->ctx);
	return NULL;
}

typedef struct swap {
	net_proxy *p;
	net_egress *rules;
} swap;

static gboolean swap_rules(gpointer data)
{
	swap *s = data;
	net_egress_free(s->p->narrow);
	s->p->narrow = s->rules;
	g_free(s);
	return G_SOURCE_REMOVE;
}

void net_proxy_narrow(net_proxy *p, net_egress *rules)
{
	swap *s = g_new0(swap, 1);
	s->p = p;
	s->rules = rules;
	/* Before any connection's next step: a request read after this call is
	 * judged by the new rules (fd sources have the default priority). */
	GSource *src = g_idle_source_new();
	g_source_set_priority(src, G_PRIORITY_HIGH);
	g_source_set_callback(src, swap_rules, s, NULL);
	g_source_attach(src, p->ctx);
	g_source_unref(src);
	/* The source owns s from here: swap_rules frees it. */
	// cppcheck-suppress memleak
}

int net_proxy_start(int listen_fd, net_egress *rules, net_proxy_audit_fn audit, void *user,
		    net_proxy_resolve_fn resolve_fn, net_proxy **ret, char *why, size_t whylen)
{
	net_proxy *p = g_new0(net_proxy, 1);
	p->listen_fd = listen_fd;
	p->rules = rules;
	p->audit = audit;
	p->user = user;
	p->resolve = resolve_fn;
	p->ctx = g_main_context_new();
	GError *e = NULL;
	p->pool = g_thread_pool_new(lookup_worker, p, RESOLVERS, FALSE, &e);
	int fl = fcntl(listen_fd, F_GETFL);
	if (!p->pool || fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		snprintf(why, whylen, "cannot start the proxy: %s",
			 e ? e->message : g_strerror(errno));
		g_clear_error(&e);
		goto fail;
	}
	p->listen_src = g_unix_fd_source_new(listen_fd, G_IO_IN);
	g_source_set_callback(p->listen_src, G_SOURCE_FUNC(on_accept), p, NULL);
	g_source_attach(p->listen_src, p->ctx);
	p->thread = g_thread_try_new("cordon-proxy", proxy_thread, p, &e);
	if (!p->thread) {
		snprintf(why, whylen, "cannot start the proxy: %s", e->message);
		g_error_free(e);
		goto fail;
	}
	*ret = p;
	return 0;
fail:
	net_proxy_stop(p);
	return -EAGAIN;
}

void net_proxy_stop(net_proxy *p)
{
	if (!p)
		return;
	if (p->thread) {
		GSource *q = g_idle_source_new();
		g_source_set_callback(q, shut_down, p, NULL);
		g_source_attach(q, p->ctx);
		g_source_unref(q);
		g_thread_join(p->thread);
	}
	/* A lookup still on a worker hands its answer to the context: the
	 * workers end first, then what they left is dispatched and dropped. */
	if (p->pool)
		g_thread_pool_free(p->pool, FALSE, TRUE);
	while (g_main_context_iteration(p->ctx, FALSE))
		;
	if (p->listen_src) {
		g_source_destroy(p->listen_src);
		g_source_unref(p->listen_src);
	}
	close_fd(&p->listen_fd);
	net_egress_free(p->rules);
	net_egress_free(p->narrow);
	g_main_context_unref(p->ctx);
	g_free(p);
}
