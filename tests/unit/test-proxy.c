/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Governed egress's proxy (core/net/proxy.c) on real sockets, without a
 * sandbox: its listener is one of this test's on the host's loopback, the
 * upstreams a plain HTTP server (a thread of this test) and an HTTPS one
 * (openssl s_server with a certificate made at test time), both on
 * 127.0.0.1. Names resolve through the proxy's test hook (no real name
 * resolves to 169.254.169.254): allowed.test, and below wild.test names
 * that resolve to the host's loopback and to the metadata address.
 * curl is the HTTPS client; a hand-made ClientHello carries a wrong server
 * name. Also run under ThreadSanitizer and ASan in CI.
 */
#include "config.h"

#include "testutil.h"
#include "net/httphead.h"
#include "net/proxy.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <glib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the upstream HTTP server ------------------------------------------------------- */

typedef struct upstream {
	int lsn;
	uint16_t port;
	GThread *thread;
	GMutex lock;
	unsigned conns;
	GString *last_head;
} upstream;

static uint16_t local_port(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	return ntohs(a.sin_port);
}

static int listen_any(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	return fd;
}

static gpointer upstream_thread(gpointer data)
{
	upstream *u = data;
	for (;;) {
		int c = accept4(u->lsn, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return NULL;
		GString *h = g_string_new(NULL);
		char buf[4096];
		ssize_t n;
		while (!strstr(h->str, "\r\n\r\n") && (n = recv(c, buf, sizeof(buf), 0)) > 0)
			g_string_append_len(h, buf, n);
		if (h->len == 1 && h->str[0] == 'q') {
			close(c);
			g_string_free(h, TRUE);
			return NULL;
		}
		g_mutex_lock(&u->lock);
		u->conns++;
		g_string_assign(u->last_head, h->str);
		g_mutex_unlock(&u->lock);
		static const char ok[] =
			"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nhello upstream";
		(void)!send(c, ok, sizeof(ok) - 1, MSG_NOSIGNAL);
		close(c);
		g_string_free(h, TRUE);
	}
}

static void upstream_start(upstream *u)
{
	u->lsn = listen_any();
	u->port = local_port(u->lsn);
	g_mutex_init(&u->lock);
	u->last_head = g_string_new(NULL);
	u->thread = g_thread_new("upstream", upstream_thread, u);
}

static unsigned upstream_conns(upstream *u)
{
	g_mutex_lock(&u->lock);
	unsigned n = u->conns;
	g_mutex_unlock(&u->lock);
	return n;
}

static int connect_port(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void upstream_stop(upstream *u)
{
	int c = connect_port(u->port);
	(void)!send(c, "q", 1, MSG_NOSIGNAL);
	shutdown(c, SHUT_WR);
	g_thread_join(u->thread);
	close(c);
	close(u->lsn);
	g_string_free(u->last_head, TRUE);
	g_mutex_clear(&u->lock);
}

/* ---- the proxy under test ------------------------------------------------------------ */

typedef struct audit_log {
	GMutex lock;
	GPtrArray *lines; /* "allowed|refused host:port address up down reason" */
} audit_log;

static audit_log audits;

static void on_audit(void *user, const net_proxy_event *ev)
{
	audit_log *a = user;
	g_mutex_lock(&a->lock);
	g_ptr_array_add(a->lines,
			g_strdup_printf("%s %s %s:%u %s up=%" G_GUINT64_FORMAT
					" down=%" G_GUINT64_FORMAT " reason=%s",
					ev->allowed ? "allowed" : "refused", ev->method, ev->host,
					(unsigned)ev->port, ev->address[0] ? ev->address : "-",
					ev->bytes_up, ev->bytes_down, ev->reason));
	g_mutex_unlock(&a->lock);
}

/* The last audit line once there are n, waiting for the connection's end. */
static char *audit_wait(guint n)
{
	for (int i = 0; i < 500; i++) {
		g_mutex_lock(&audits.lock);
		char *l = audits.lines->len >= n ? g_strdup(audits.lines->pdata[n - 1]) : NULL;
		g_mutex_unlock(&audits.lock);
		if (l)
			return l;
		g_usleep(10000);
	}
	ck_abort_msg("no audit line %u", n);
	return NULL;
}

static guint audit_count(void)
{
	g_mutex_lock(&audits.lock);
	guint n = audits.lines->len;
	g_mutex_unlock(&audits.lock);
	return n;
}

static void put_v4(struct sockaddr_storage *s, const char *ip)
{
	struct sockaddr_in *a = (struct sockaddr_in *)s;
	memset(s, 0, sizeof(*s));
	a->sin_family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, ip, &a->sin_addr), 1);
}

static int fake_resolve(const char *host, struct sockaddr_storage *addrs, unsigned max, unsigned *n)
{
	ck_assert_uint_ge(max, 1);
	*n = 1;
	if (strcmp(host, "meta.wild.test") == 0)
		put_v4(&addrs[0], "169.254.169.254");
	else if (strcmp(host, "allowed.test") == 0 || g_str_has_suffix(host, ".wild.test"))
		put_v4(&addrs[0], "127.0.0.1");
	else
		*n = 0;
	return *n ? 0 : EAI_NONAME;
}

static net_egress *rules_for(uint16_t http, uint16_t https)
{
	g_autofree char *a1 = g_strdup_printf("allowed.test:%u", (unsigned)http);
	g_autofree char *a2 = g_strdup_printf("allowed.test:%u", (unsigned)https);
	const char *allow[] = { a1, a2, "*.wild.test:*", NULL };
	const char *deny[] = { "denied.wild.test:*", NULL };
	net_egress *e = NULL;
	char why[256];
	ck_assert_msg(net_egress_new(allow, deny, &e, why, sizeof(why)) == 0, "%s", why);
	return e;
}

typedef struct fixture {
	upstream up;
	uint16_t tls_port;
	GPid tls_pid;
	char *dir, *cert;
	net_proxy *p;
	uint16_t port;
} fixture;

static fixture fx;

static unsigned count(const char *dir, const char *comm)
{
	unsigned n = 0;
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		if (!comm) {
			n++;
			continue;
		}
		g_autofree char *p = g_strdup_printf("%s/%s/comm", dir, e->d_name);
		g_autofree char *c = NULL;
		if (g_file_get_contents(p, &c, NULL, NULL) && g_str_has_prefix(c, comm))
			n++;
	}
	closedir(d);
	return n;
}

static void proxy_start(fixture *f)
{
	int lsn = listen_any();
	f->port = local_port(lsn);
	char why[256];
	int r = net_proxy_start(lsn, rules_for(f->up.port, f->tls_port), on_audit, &audits,
				fake_resolve, &f->p, why, sizeof(why));
	ck_assert_msg(r == 0, "%s", why);
}

/* The HTTPS upstream: openssl s_server with a certificate for allowed.test. */
static void tls_start(fixture *f)
{
	f->dir = testutil_tmpdir();
	f->cert = g_build_filename(f->dir, "cert.pem", NULL);
	g_autofree char *key = g_build_filename(f->dir, "key.pem", NULL);
	const char *gen[] = { "openssl",  "req",
			      "-x509",    "-newkey",
			      "rsa:2048", "-nodes",
			      "-keyout",  key,
			      "-out",     f->cert,
			      "-days",    "1",
			      "-subj",    "/CN=allowed.test",
			      "-addext",  "subjectAltName=DNS:allowed.test",
			      NULL };
	gint status = -1;
	ck_assert(g_spawn_sync(NULL, (char **)gen, NULL,
			       G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL |
				       G_SPAWN_STDERR_TO_DEV_NULL,
			       NULL, NULL, NULL, NULL, &status, NULL));
	ck_assert_int_eq(status, 0);
	int probe = listen_any(); /* a free port, released for s_server */
	f->tls_port = local_port(probe);
	close(probe);
	g_autofree char *acc = g_strdup_printf("127.0.0.1:%u", (unsigned)f->tls_port);
	const char *srv[] = { "openssl", "s_server", "-quiet", "-accept", acc, "-cert",
			      f->cert,   "-key",     key,      "-www",    NULL };
	ck_assert(g_spawn_async(NULL, (char **)srv, NULL,
				G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
					G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
				NULL, NULL, &f->tls_pid, NULL));
	for (int i = 0; i < 500; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(f->tls_port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int r = connect(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (r == 0)
			return;
		g_usleep(10000);
	}
	ck_abort_msg("openssl s_server did not start");
}

static void setup(void)
{
	g_mutex_init(&audits.lock);
	audits.lines = g_ptr_array_new_with_free_func(g_free);
	upstream_start(&fx.up);
	tls_start(&fx);
	proxy_start(&fx);
}

static void teardown(void)
{
	net_proxy_stop(fx.p);
	kill(fx.tls_pid, SIGTERM);
	waitpid(fx.tls_pid, NULL, 0);
	upstream_stop(&fx.up);
	testutil_rmtree(fx.dir);
	g_free(fx.dir);
	g_free(fx.cert);
	g_ptr_array_free(audits.lines, TRUE);
	g_mutex_clear(&audits.lock);
}

/* Sends req to the proxy; everything it answers until it closes. */
static char *exchange(const void *req, size_t len)
{
	int c = connect_port(fx.port);
	ck_assert_int_eq(send(c, req, len, MSG_NOSIGNAL), (ssize_t)len);
	GString *s = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	struct pollfd p = { c, POLLIN, 0 };
	while (poll(&p, 1, 15000) == 1 && (n = recv(c, buf, sizeof(buf), 0)) > 0)
		g_string_append_len(s, buf, n);
	close(c);
	return g_string_free(s, FALSE);
}

static char *exchange_str(const char *req) { return exchange(req, strlen(req)); }

/* ---- plain HTTP ---------------------------------------------------------------------- */

START_TEST(test_http_allowed)
{
	g_autofree char *req = g_strdup_printf(
		"GET http://allowed.test:%u/x?y=1 HTTP/1.1\r\nHost: allowed.test:%u\r\n"
		"Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nUser-Agent: t\r\n\r\n",
		(unsigned)fx.up.port, (unsigned)fx.up.port);
	g_autofree char *got = exchange_str(req);
	ck_assert_msg(g_str_has_prefix(got, "HTTP/1.1 200 OK") && strstr(got, "hello upstream"),
		      "%s", got);
	g_mutex_lock(&fx.up.lock);
	g_autofree char *head = g_strdup(fx.up.last_head->str);
	g_mutex_unlock(&fx.up.lock);
	/* Origin form upstream, one request per connection, no proxy headers. */
	ck_assert_msg(g_str_has_prefix(head, "GET /x?y=1 HTTP/1.1\r\n"), "%s", head);
	ck_assert(strstr(head, "\r\nConnection: close\r\n"));
	ck_assert(strstr(head, "\r\nUser-Agent: t\r\n"));
	ck_assert(!strstr(head, "Proxy-Connection") && !strstr(head, "keep-alive"));
	g_autofree char *a = audit_wait(1);
	g_autofree char *want = g_strdup_printf("allowed GET allowed.test:%u 127.0.0.1:%u up=",
						(unsigned)fx.up.port, (unsigned)fx.up.port);
	ck_assert_msg(g_str_has_prefix(a, want) && strstr(a, " down=53 "), "%s", a);
}
END_TEST

/* Each refused with the status and the reason the work and the audit see,
 * and the upstream never reached. */
static void assert_refused(const char *req, const char *status, const char *reason)
{
	unsigned before = upstream_conns(&fx.up);
	guint n = audit_count();
	g_autofree char *got = exchange_str(req);
	ck_assert_msg(g_str_has_prefix(got, status), "%s: %s", req, got);
	ck_assert_msg(strstr(got, reason), "%s: %s", req, got);
	g_autofree char *a = audit_wait(n + 1);
	ck_assert_msg(g_str_has_prefix(a, "refused ") && strstr(a, reason), "%s", a);
	ck_assert_uint_eq(upstream_conns(&fx.up), before);
}

START_TEST(test_http_refused)
{
	unsigned up = fx.up.port;
	g_autofree char *host = g_strdup_printf(
		"GET http://allowed.test:%u/ HTTP/1.1\r\nHost: other.test:%u\r\n\r\n", up, up);
	assert_refused(host, "HTTP/1.1 400", "the Host header differs");
	g_autofree char *two = g_strdup_printf("GET http://allowed.test:%u/ HTTP/1.1\r\nHost: "
					       "allowed.test:%u\r\nHost: x\r\n\r\n",
					       up, up);
	assert_refused(two, "HTTP/1.1 400", "more than one Host header");
	assert_refused("GET http://nope.test/ HTTP/1.1\r\nHost: nope.test\r\n\r\n", "HTTP/1.1 403",
		       "nope.test");
	g_autofree char *ip = g_strdup_printf(
		"GET http://127.0.0.1:%u/ HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", up, up);
	assert_refused(ip, "HTTP/1.1 403", "127.0.0.1");
	g_autofree char *loop = g_strdup_printf(
		"GET http://loop.wild.test:%u/ HTTP/1.1\r\nHost: loop.wild.test:%u\r\n\r\n", up,
		up);
	assert_refused(loop, "HTTP/1.1 403", "loopback");
	assert_refused("GET http://meta.wild.test/ HTTP/1.1\r\nHost: meta.wild.test\r\n\r\n",
		       "HTTP/1.1 403", "169.254.169.254");
	g_autofree char *denied = g_strdup_printf(
		"GET http://denied.wild.test:%u/ HTTP/1.1\r\nHost: denied.wild.test:%u\r\n\r\n", up,
		up);
	assert_refused(denied, "HTTP/1.1 403", "denied.wild.test");
	assert_refused("GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "HTTP/1.1 400",
		       "absolute http:// URI");
	/* A head that never ends within the bound. */
	GString *big = g_string_new("GET http://allowed.test/ HTTP/1.1\r\n");
	while (big->len < NET_HTTP_HEAD_MAX + 100)
		g_string_append(big, "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	assert_refused(big->str, "HTTP/1.1 431", "too long");
	g_string_free(big, TRUE);
}
END_TEST

/* ---- CONNECT ------------------------------------------------------------------------- */

/* curl through the proxy to the HTTPS upstream, the certificate verified. */
START_TEST(test_connect_tls_allowed)
{
	g_autofree char *proxy = g_strdup_printf("http://127.0.0.1:%u", (unsigned)fx.port);
	g_autofree char *url = g_strdup_printf("https://allowed.test:%u/", (unsigned)fx.tls_port);
	const char *argv[] = { "curl", "-sS",      "--max-time", "20", "--proxy",
			       proxy,  "--cacert", fx.cert,      url,  NULL };
	g_autofree char *out = NULL, *err = NULL;
	gint status = -1;
	ck_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
			       &err, &status, NULL));
	ck_assert_msg(status == 0 && strstr(out, "s_server"), "curl: %s %s", out, err);
	g_autofree char *a = audit_wait(1);
	ck_assert_msg(g_str_has_prefix(a, "allowed CONNECT allowed.test:") && !strstr(a, "up=0 "),
		      "%s", a);
}
END_TEST

/* A minimal ClientHello naming sni (NULL: no server_name extension). */
static GByteArray *client_hello(const char *sni)
{
	GByteArray *ext = g_byte_array_new();
	if (sni) {
		size_t n = strlen(sni);
		guint8 h[9] = { 0,
				0,
				(guint8)((n + 5) >> 8),
				(guint8)(n + 5),
				(guint8)((n + 3) >> 8),
				(guint8)(n + 3),
				0,
				(guint8)(n >> 8),
				(guint8)n };
		g_byte_array_append(ext, h, sizeof(h));
		g_byte_array_append(ext, (const guint8 *)sni, (guint)n);
	}
	GByteArray *body = g_byte_array_new();
	guint8 vr[34] = { 3, 3 };
	g_byte_array_append(body, vr, sizeof(vr));
	static const guint8 rest[] = { 0, 0, 2, 0, 0x2f, 1, 0 };
	g_byte_array_append(body, rest, sizeof(rest));
	guint8 el[2] = { (guint8)(ext->len >> 8), (guint8)ext->len };
	g_byte_array_append(body, el, 2);
	g_byte_array_append(body, ext->data, ext->len);
	GByteArray *rec = g_byte_array_new();
	guint hl = body->len + 4;
	guint8 rh[9] = { 0x16,
			 3,
			 1,
			 (guint8)(hl >> 8),
			 (guint8)hl,
			 1,
			 0,
			 (guint8)(body->len >> 8),
			 (guint8)body->len };
	g_byte_array_append(rec, rh, sizeof(rh));
	g_byte_array_append(rec, body->data, body->len);
	g_byte_array_free(ext, TRUE);
	g_byte_array_free(body, TRUE);
	return rec;
}

/* CONNECT, then first bytes: the tunnel is opened (200) and closed after
 * them, never reaching the upstream's TLS. */
static void assert_tunnel_refused(const char *target, const guint8 *first, size_t n,
				  const char *reason)
{
	g_autofree char *req = g_strdup_printf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target,
					       target);
	GByteArray *all = g_byte_array_new();
	g_byte_array_append(all, (const guint8 *)req, (guint)strlen(req));
	g_byte_array_append(all, first, (guint)n);
	guint before = audit_count();
	g_autofree char *got = exchange(all->data, all->len);
	g_byte_array_free(all, TRUE);
	ck_assert_msg(g_str_has_prefix(got, "HTTP/1.1 200 ") && strlen(got) < 64, "%s", got);
	g_autofree char *a = audit_wait(before + 1);
	ck_assert_msg(g_str_has_prefix(a, "refused CONNECT") && strstr(a, reason), "%s", a);
	ck_assert_msg(strstr(a, " up=0 down=0 "), "%s", a);
}

START_TEST(test_connect_refused)
{
	g_autofree char *target = g_strdup_printf("allowed.test:%u", (unsigned)fx.tls_port);
	GByteArray *evil = client_hello("evil.test");
	assert_tunnel_refused(target, evil->data, evil->len, "differs from the CONNECT host");
	g_byte_array_free(evil, TRUE);
	GByteArray *none = client_hello(NULL);
	assert_tunnel_refused(target, none->data, none->len, "names no server");
	g_byte_array_free(none, TRUE);
	static const char ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
	assert_tunnel_refused(target, (const guint8 *)ssh, sizeof(ssh) - 1,
			      "does not start with a TLS ClientHello");
	/* Refused before any tunnel: an IPv6 literal, a direct IP, a Host that
	 * differs from the CONNECT target, a name resolving to the metadata
	 * address that no rule names. */
	assert_refused("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403", "::1");
	assert_refused("CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403", "127.0.0.1");
	g_autofree char *host = g_strdup_printf(
		"CONNECT %s HTTP/1.1\r\nHost: other.test:%u\r\n\r\n", target,
		(unsigned)fx.tls_port);
	assert_refused(host, "HTTP/1.1 400", "the Host header differs");
	assert_refused("CONNECT meta.wild.test:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403",
		       "169.254.169.254");
	assert_refused("CONNECT nope.test:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403", "nope.test");
}
END_TEST

/* A narrowing applies to the next request, and never widens past the start's rules. */
START_TEST(test_narrow)
{
	net_egress *none = NULL;
	char why[64];
	ck_assert_int_eq(net_egress_new(NULL, NULL, &none, why, sizeof(why)), 0);
	net_proxy_narrow(fx.p, none);
	g_autofree char *req = g_strdup_printf(
		"GET http://allowed.test:%u/ HTTP/1.1\r\nHost: allowed.test:%u\r\n\r\n",
		(unsigned)fx.up.port, (unsigned)fx.up.port);
	assert_refused(req, "HTTP/1.1 403", "allowed.test");
	/* A narrowing naming more than the start's rules gives no more. */
	const char *wide[] = { "allowed.test:*", "nope.test:*", "127.0.0.0/8:*", NULL };
	net_egress *w = NULL;
	ck_assert_int_eq(net_egress_new(wide, NULL, &w, why, sizeof(why)), 0);
	net_proxy_narrow(fx.p, w);
	assert_refused("GET http://nope.test/ HTTP/1.1\r\nHost: nope.test\r\n\r\n", "HTTP/1.1 403",
		       "nope.test");
	g_autofree char *ip = g_strdup_printf(
		"GET http://127.0.0.1:%u/ HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n",
		(unsigned)fx.up.port, (unsigned)fx.up.port);
	assert_refused(ip, "HTTP/1.1 403", "127.0.0.1");
	g_autofree char *got = exchange_str(req);
	ck_assert_msg(g_str_has_prefix(got, "HTTP/1.1 200 OK"), "%s", got);
	net_proxy_narrow(fx.p, NULL);
	g_autofree char *again = exchange_str(req);
	ck_assert_msg(g_str_has_prefix(again, "HTTP/1.1 200 OK"), "%s", again);
}
END_TEST

/* A stop with connections open, one mid-request and one carried: each is
 * closed and reported, and nothing of the proxy is left. */
START_TEST(test_stop_leaves_nothing)
{
	net_proxy_stop(fx.p);
	fx.p = NULL;
	unsigned fds0 = count("/proc/self/fd", NULL);
	proxy_start(&fx);
	for (int i = 0; i < 200 && count("/proc/self/task", "cordon-proxy") != 1; i++)
		g_usleep(10000); /* the thread names itself once it runs */
	ck_assert_uint_eq(count("/proc/self/task", "cordon-proxy"), 1);
	int idle = connect_port(fx.port);
	(void)!send(idle, "GET http://allowed", 18, MSG_NOSIGNAL);
	int held = connect_port(fx.port);
	g_autofree char *req = g_strdup_printf("CONNECT allowed.test:%u HTTP/1.1\r\n\r\n",
					       (unsigned)fx.tls_port);
	(void)!send(held, req, strlen(req), MSG_NOSIGNAL);
	char buf[64];
	ck_assert_int_gt(recv(held, buf, sizeof(buf), 0), 0); /* 200: waits for the hello */
	net_proxy_stop(fx.p);
	/* Joined: the thread is gone, though its /proc entry can outlive the join by a moment
	 * (the kernel wakes the joiner before it releases the task). */
	for (int i = 0; i < 100 && count("/proc/self/task", "cordon-proxy") != 0; i++)
		g_usleep(10000);
	ck_assert_uint_eq(count("/proc/self/task", "cordon-proxy"), 0);
	ck_assert_int_le(recv(idle, buf, sizeof(buf), 0), 0);
	ck_assert_int_le(recv(held, buf, sizeof(buf), 0), 0);
	close(idle);
	close(held);
	ck_assert_uint_eq(audit_count(), 2);
	g_autofree char *a = audit_wait(2);
	ck_assert_msg(strstr(a, "the sandbox closed"), "%s", a);
	/* Its listener went with it: nothing accepts on that port. */
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(fx.port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_lt(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	ck_assert_uint_eq(count("/proc/self/fd", NULL), fds0);
	proxy_start(&fx); /* for the teardown */
}
END_TEST

/* ---- the parsers alone ---------------------------------------------------------------- */

START_TEST(test_parsers)
{
	net_http_req r;
	char why[128];
	const char *h = "CONNECT [2001:DB8::1]:8443 HTTP/1.1\r\n\r\n";
	ck_assert_int_eq(net_http_parse(h, strlen(h), &r, why, sizeof(why)), 0);
	ck_assert(r.connect);
	ck_assert_str_eq(r.host, "2001:db8::1");
	ck_assert_uint_eq(r.port, 8443);
	const char *bad[] = { "CONNECT host HTTP/1.1\r\n\r\n",
			      "CONNECT a:0 HTTP/1.1\r\n\r\n",
			      "CONNECT a:65536 HTTP/1.1\r\n\r\n",
			      "get http://a/ HTTP/1.1\r\n\r\n",
			      "GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n",
			      "GET http://a/ HTTP/2.0\r\nHost: a\r\n\r\n",
			      "GET http://a b/ HTTP/1.1\r\n\r\n",
			      NULL };
	for (int i = 0; bad[i]; i++)
		ck_assert_msg(net_http_parse(bad[i], strlen(bad[i]), &r, why, sizeof(why)) < 0,
			      "%s", bad[i]);
	ck_assert_int_eq(net_http_head_end("GET / HTTP/1.1\r\n", 16), 0);
	GByteArray *ch = client_hello("Allowed.Test");
	char sni[256];
	ck_assert_int_eq(net_tls_sni(ch->data, ch->len, sni, sizeof(sni)), 1);
	ck_assert_str_eq(sni, "allowed.test");
	ck_assert_int_eq(net_tls_sni(ch->data, ch->len - 1, sni, sizeof(sni)), 0);
	ch->data[ch->len - 2] = '/'; /* not a host name */
	ck_assert_int_eq(net_tls_sni(ch->data, ch->len, sni, sizeof(sni)), -EINVAL);
	ch->data[10] = 0xff; /* the hello's length past its record */
	ck_assert_int_eq(net_tls_sni(ch->data, ch->len, sni, sizeof(sni)), -EINVAL);
	g_byte_array_free(ch, TRUE);
}
END_TEST

static Suite *proxy_suite(void)
{
	Suite *s = suite_create("proxy");
	TCase *tc = tcase_create("proxy");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_http_allowed);
	tcase_add_test(tc, test_http_refused);
	tcase_add_test(tc, test_connect_tls_allowed);
	tcase_add_test(tc, test_connect_refused);
	tcase_add_test(tc, test_narrow);
	tcase_add_test(tc, test_stop_leaves_nothing);
	suite_add_tcase(s, tc);
	TCase *tp = tcase_create("parsers");
	tcase_add_test(tp, test_parsers);
	suite_add_tcase(s, tp);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return testutil_run(proxy_suite());
}
