/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-proxy: one service's reverse proxy (docs/network.md, "Services"),
 * a program of its own that libcordon starts per service of a sandbox
 * (core/net/service.c). It takes:
 *   fd 3    a listening socket (the work's base URL: on the sandbox's own
 *           loopback for the kernel tier), accepted here;
 *   stdin   its configuration, "KEY VALUE" lines up to "end", the injected
 *           value (the secret in it) among them; then kept open: its EOF
 *           (libcordon closed it, or ended) ends this program;
 *   stdout  one line, "ready" or "error REASON"; after "ready", one line per
 *           connection as it ends, for the audit trail (service.h): "conn
 *           VERDICT STATUS METHOD PATH UP DOWN REASON", a single write each
 *           (under PIPE_BUF, so lines from concurrent connections never mix).
 * Each connection is a thread: the work's request head is checked and
 * rewritten (service-http.c), the upstream is reached over TLS with its
 * certificate verified (GIO's TLS, glib-networking: no backend, no proxy),
 * and the bytes are carried both ways until the upstream ends its answer.
 * A program of its own because GIO cannot be linked into the static cordon
 * command (docs/decisions.md), and so that neither the TLS stack nor the
 * credential lives in the host's process.
 */
#include "config.h"

#include "net/service-http.h"

#include <errno.h>
#include <gio/gio.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define LISTEN_FD 3
#define CONFIG_MAX 16384
#define MAX_CONNS 64
#define HEAD_TIMEOUT_S 30    /* the work's head, whole */
#define CONNECT_TIMEOUT_S 30 /* the upstream's connect and handshake */
#define IDLE_TIMEOUT_S 300   /* no byte either way */
#define COPY_BUF 65536

typedef struct config {
	char *host, *prefix, *header, *value, *ca;
	uint16_t port;
	GTlsDatabase *db; /* NULL: the backend's default (the system's store) */
} config;

static config cfg;
static gint nconns;
static GMutex audit_lock;
static GQueue live; /* the connections not yet reported */

typedef struct conn {
	int client;
	GIOStream *tls;
	char *rest; /* body bytes read with the head */
	size_t rest_len;
	/* what its audit line says, under audit_lock: a closing sandbox reports it too */
	GList link; /* in live */
	char method[16], path[256];
	int status;   /* the HTTP status the work got */
	bool carried; /* the request reached the upstream */
	char *reason; /* why not, or "" */
	guint64 up, down;
} conn;

/* ---- the configuration ------------------------------------------------------------- */

static bool config_line(char *line)
{
	char *sp = strchr(line, ' ');
	if (!sp)
		return false;
	*sp++ = '\0';
	char **slot = strcmp(line, "host") == 0     ? &cfg.host
		      : strcmp(line, "prefix") == 0 ? &cfg.prefix
		      : strcmp(line, "header") == 0 ? &cfg.header
		      : strcmp(line, "value") == 0  ? &cfg.value
		      : strcmp(line, "ca") == 0     ? &cfg.ca
						    : NULL;
	if (strcmp(line, "port") == 0) {
		guint64 p = 0;
		if (!g_ascii_string_to_unsigned(sp, 10, 1, 65535, &p, NULL))
			return false;
		cfg.port = (uint16_t)p;
		return true;
	}
	if (!slot || *slot)
		return false;
	*slot = g_strdup(sp);
	return true;
}

/* Reads stdin up to "end"; the buffer, which held the secret, is wiped. */
static const char *read_config(void)
{
	char *buf = g_malloc0(CONFIG_MAX + 1);
	size_t n = 0;
	const char *why = NULL;
	while (!why && !g_strstr_len(buf, (gssize)n, "\nend\n")) {
		ssize_t k = read(STDIN_FILENO, buf + n, CONFIG_MAX - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (n += (size_t)k) >= CONFIG_MAX)
			why = "the configuration ended early or is too large";
	}
	char *save = NULL;
	for (char *l = why ? NULL : strtok_r(buf, "\n", &save); l && strcmp(l, "end") != 0;
	     l = strtok_r(NULL, "\n", &save))
		if (!config_line(l))
			why = "a malformed configuration line";
	explicit_bzero(buf, CONFIG_MAX + 1);
	g_free(buf);
	if (!why && (!cfg.host || !cfg.port || !cfg.header || !cfg.value))
		why = "the configuration lacks host, port, header or value";
	if (!cfg.prefix)
		cfg.prefix = g_strdup("");
	return why;
}

/* Fails closed: without a TLS backend nothing is forwarded at all. */
static const char *setup_tls(char *why, size_t len)
{
	if (!g_tls_backend_supports_tls(g_tls_backend_get_default()))
		return "GIO has no TLS backend (install glib-networking)";
	if (!cfg.ca)
		return NULL;
	GError *e = NULL;
	cfg.db = g_tls_file_database_new(cfg.ca, &e);
	if (!cfg.db) {
		snprintf(why, len, "the CA file %s: %s", cfg.ca, e->message);
		g_error_free(e);
		return why;
	}
	return NULL;
}

/* ---- one connection ----------------------------------------------------------------- */

static void answer(conn *c, int status, const char *why)
{
	int fd = c->client;
	g_mutex_lock(&audit_lock);
	c->status = status;
	g_free(c->reason);
	c->reason = g_strdup(why);
	g_mutex_unlock(&audit_lock);
	g_autofree char *msg = g_strdup_printf(
		"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
		"Connection: close\r\n\r\ncordon: %s\n",
		status,
		status == 502   ? "Bad Gateway"
		: status == 504 ? "Gateway Timeout"
				: "Refused",
		strlen(why) + 9, why);
	(void)!send(fd, msg, strlen(msg), MSG_NOSIGNAL);
}

static void set_timeout(int fd, int seconds)
{
	struct timeval tv = { .tv_sec = seconds };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void set_reason(conn *c, const char *why)
{
	g_mutex_lock(&audit_lock);
	g_free(c->reason);
	c->reason = g_strdup(why);
	g_mutex_unlock(&audit_lock);
}

/* Counts bytes carried (*n: c->up or c->down). */
static void count(guint64 *n, guint64 k)
{
	g_mutex_lock(&audit_lock);
	*n += k;
	g_mutex_unlock(&audit_lock);
}

/* Copies what is printable and not a space of src (up to stop) into dst. */
static const char *token(char *dst, size_t size, const char *src, const char *end, char stop)
{
	size_t n = 0;
	for (; src < end && *src != stop && *src != ' ' && *src != '\r'; src++)
		if (n + 1 < size && *src > 0x20 && *src < 0x7f)
			dst[n++] = *src;
	dst[n] = '\0';
	return src;
}

/* The method and the path (without its query: the work's data) for the audit. */
static void request_line(conn *c, const char *head, size_t len)
{
	g_mutex_lock(&audit_lock);
	const char *end = head + len, *p = token(c->method, sizeof(c->method), head, end, ' ');
	if (p < end && *p == ' ')
		token(c->path, sizeof(c->path), p + 1, end, '?');
	g_mutex_unlock(&audit_lock);
}

/* The work's head, rewritten; NULL once answered with the refusal. */
static GString *read_head(conn *c)
{
	char *buf = g_malloc(SVC_HEAD_MAX);
	size_t n = 0;
	long end = 0;
	while ((end = net_http_head_end(buf, n)) == 0) {
		ssize_t k = recv(c->client, buf + n, SVC_HEAD_MAX - n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k < 0 && errno == EAGAIN)
				answer(c, 408, "the request head did not come in time");
			else
				set_reason(c, "the work sent no whole request head");
			g_free(buf);
			return NULL;
		}
		n += (size_t)k;
	}
	if (end < 0) {
		answer(c, 431, "the request head is larger than 16 KiB");
		g_free(buf);
		return NULL;
	}
	request_line(c, buf, (size_t)end);
	svc_route r = { cfg.host, cfg.port, cfg.prefix, cfg.header, cfg.value };
	int status = 0;
	const char *why = NULL;
	GString *up = svc_head_rewrite(buf, (size_t)end, &r, &status, &why);
	if (!up)
		answer(c, status, why);
	c->rest_len = n - (size_t)end;
	c->rest = g_memdup2(buf + end, c->rest_len);
	g_free(buf);
	return up;
}

/* The upstream, over TLS, its certificate checked against its name. */
static GIOStream *connect_upstream(GError **e)
{
	g_autoptr(GSocketClient) sc = g_socket_client_new();
	g_socket_client_set_timeout(sc, CONNECT_TIMEOUT_S);
	g_autoptr(GSocketConnectable) addr = g_network_address_new(cfg.host, cfg.port);
	g_autoptr(GSocketConnection) tcp = g_socket_client_connect(sc, addr, NULL, e);
	if (!tcp)
		return NULL;
	g_socket_set_timeout(g_socket_connection_get_socket(tcp), IDLE_TIMEOUT_S);
	GIOStream *tls = g_tls_client_connection_new(G_IO_STREAM(tcp), addr, e);
	if (!tls)
		return NULL;
	if (cfg.db)
		g_tls_connection_set_database(G_TLS_CONNECTION(tls), cfg.db);
	if (!g_tls_connection_handshake(G_TLS_CONNECTION(tls), NULL, e)) {
		g_object_unref(tls);
		return NULL;
	}
	return tls;
}

/* The work's bytes after the head (its body, and anything after it), to
 * the upstream, until the work stops sending or either side fails. */
static gpointer copy_up(gpointer data)
{
	conn *c = data;
	GOutputStream *out = g_io_stream_get_output_stream(c->tls);
	char *buf = g_malloc(COPY_BUF);
	for (;;) {
		ssize_t k = recv(c->client, buf, COPY_BUF, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || !g_output_stream_write_all(out, buf, (gsize)k, NULL, NULL, NULL))
			break;
		count(&c->up, (guint64)k);
	}
	g_free(buf);
	return NULL;
}

/* The status of the upstream's answer from its first bytes ("HTTP/1.1 200 "),
 * 0 when they do not show one. */
static int answer_status(const char *b, size_t n)
{
	if (n < 12 || strncmp(b, "HTTP/1.", 7) != 0 || b[8] != ' ')
		return 0;
	int st = 0;
	for (int i = 9; i < 12; i++)
		st = g_ascii_isdigit(b[i]) ? st * 10 + (b[i] - '0') : -1000;
	return st >= 100 ? st : 0;
}

/* The upstream's answer, as it comes, to the work. */
static void copy_down(conn *c)
{
	GInputStream *in = g_io_stream_get_input_stream(c->tls);
	char *buf = g_malloc(COPY_BUF);
	bool first = true;
	for (;;) {
		gssize k = g_input_stream_read(in, buf, COPY_BUF, NULL, NULL);
		if (k <= 0)
			break;
		if (first) {
			int st = answer_status(buf, (size_t)k);
			g_mutex_lock(&audit_lock);
			c->status = st;
			g_mutex_unlock(&audit_lock);
			first = false;
		}
		count(&c->down, (guint64)k);
		size_t off = 0;
		while (off < (size_t)k) {
			ssize_t w = send(c->client, buf + off, (size_t)k - off, MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto out;
			off += (size_t)w;
		}
	}
out:
	g_free(buf);
}

static void serve_conn(conn *c)
{
	set_timeout(c->client, HEAD_TIMEOUT_S);
	GString *head = read_head(c);
	if (!head)
		return;
	GError *e = NULL;
	c->tls = connect_upstream(&e);
	GOutputStream *out = c->tls ? g_io_stream_get_output_stream(c->tls) : NULL;
	bool sent = out && g_output_stream_write_all(out, head->str, head->len, NULL, NULL, &e) &&
		    g_output_stream_write_all(out, c->rest, c->rest_len, NULL, NULL, &e);
	if (sent) /* what reached the upstream */
		count(&c->up, head->len + c->rest_len);
	svc_wipe(head);
	if (!sent) {
		/* The reason is GIO's (a name, an address, a certificate's fault),
		 * never the request: the credential is in no message. */
		g_autofree char *why = g_strdup_printf("upstream %s:%u: %s", cfg.host,
						       (unsigned)cfg.port, e ? e->message : "?");
		answer(c, e && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) ? 504 : 502,
		       why);
		g_clear_error(&e);
		return;
	}
	g_mutex_lock(&audit_lock);
	c->carried = true;
	g_mutex_unlock(&audit_lock);
	set_timeout(c->client, IDLE_TIMEOUT_S);
	GThread *up = g_thread_try_new("cordon-proxy-up", copy_up, c, NULL);
	if (up)
		copy_down(c);
	/* The answer is over: the work's side ends, which ends copy_up. */
	shutdown(c->client, SHUT_RDWR);
	if (up)
		g_thread_join(up);
}

/* The connection's audit line, on stdout (see the top of this file); under
 * audit_lock. why: the reason, NULL for the connection's own. */
static void report(const conn *c, const char *why)
{
	char reason[400];
	g_strlcpy(reason, why ? why : c->reason ? c->reason : "", sizeof(reason));
	for (char *p = reason; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	char line[1024];
	int n = snprintf(line, sizeof(line),
			 "conn %s %d %s %s %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %s\n",
			 c->carried ? "allowed" : "refused", c->status,
			 c->method[0] ? c->method : "-", c->path[0] ? c->path : "-", c->up, c->down,
			 reason);
	if (n > 0)
		(void)!write(STDOUT_FILENO, line, (size_t)MIN(n, (int)sizeof(line) - 1));
}

static void conn_free(conn *c)
{
	if (c->tls)
		g_object_unref(c->tls);
	close(c->client);
	g_free(c->rest);
	g_free(c->reason);
	g_free(c);
}

static gpointer conn_thread(gpointer data)
{
	conn *c = data;
	serve_conn(c);
	g_mutex_lock(&audit_lock);
	g_queue_unlink(&live, &c->link);
	report(c, NULL);
	g_mutex_unlock(&audit_lock);
	conn_free(c);
	g_atomic_int_dec_and_test(&nconns);
	return NULL;
}

/* ---- the program ---------------------------------------------------------------------- */

/* stdin's EOF: libcordon is done with this service (or gone). The
 * connections still open are reported as cut, then everything ends at once
 * (the lock is kept: no line is written after these). */
static gpointer watch_stdin(gpointer data)
{
	(void)data;
	char b[64];
	while (read(STDIN_FILENO, b, sizeof(b)) != 0 && errno == EINTR)
		;
	g_mutex_lock(&audit_lock);
	for (GList *l = live.head; l; l = l->next)
		report(l->data, "the sandbox closed");
	_exit(0);
}

static void accept_loop(void)
{
	for (;;) {
		int fd = accept4(LISTEN_FD, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			    errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				continue;
			_exit(2);
		}
		conn *c = g_new0(conn, 1);
		c->client = fd;
		c->link.data = c;
		if (g_atomic_int_add(&nconns, 1) >= MAX_CONNS) {
			answer(c, 503, "too many connections at once");
			g_mutex_lock(&audit_lock);
			report(c, NULL);
			g_mutex_unlock(&audit_lock);
			conn_free(c);
			g_atomic_int_dec_and_test(&nconns);
			continue;
		}
		g_mutex_lock(&audit_lock);
		g_queue_push_tail_link(&live, &c->link);
		g_mutex_unlock(&audit_lock);
		GThread *t = g_thread_try_new("cordon-proxy-conn", conn_thread, c, NULL);
		if (t)
			g_thread_unref(t);
		else
			conn_thread(c);
	}
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_DUMPABLE, 0); /* no core dump, no ptrace by our user: the secret */
	char why[512];
	const char *err = read_config();
	if (!err)
		err = setup_tls(why, sizeof(why));
	if (err) {
		printf("error %s\n", err);
		return 1;
	}
	printf("ready\n");
	fflush(stdout); /* from here on stdout carries report()'s lines, unbuffered */
	GThread *w = g_thread_new("cordon-proxy-stdin", watch_stdin, NULL);
	g_thread_unref(w);
	accept_loop();
	return 0;
}
