/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A sandbox port, reached through cordon server's own listener (docs/server.md,
 * "Ports"): an envd-style request (E2b-Sandbox-Id, X-Access-Token) whose
 * E2b-Sandbox-Port names a port a process serves (started with
 * Cordon-Serve-Port), asking `Upgrade: cordon-tcp`, is answered 101 and then
 * carries raw bytes both ways between the client and the address the library
 * gave that serve (cordon_serve_address: a forwarder cordon owns). Bytes are
 * copied, never interpreted. A tunnel ends when both sides have ended their
 * sending, when either fails, or at shutdown (srv_tunnels_end).
 */
#include "config.h"

#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TUNNEL_BUF 65536
#define TUNNELS_MAX 128

typedef struct tunnel {
	gint refs;
	gint state; /* 0: queued, 1: taken by the upgrade, 2: abandoned */
	int up;     /* the serve's address */
	int client; /* MHD's socket: never closed here (MHD_UPGRADE_ACTION_CLOSE) */
	struct MHD_UpgradeResponseHandle *urh;
	gint ended; /* directions done */
} tunnel;

static GMutex tunnels_lock;
static GPtrArray *tunnels; /* tunnel* being relayed, under tunnels_lock */
static unsigned tunnels_live;

static void tunnel_unref(tunnel *t)
{
	if (!g_atomic_int_dec_and_test(&t->refs))
		return;
	if (t->up >= 0)
		close(t->up);
	g_free(t);
}

/* The serve's address: "127.0.0.1:PORT" (or another IPv4 literal). */
static int connect_address(const char *addr)
{
	const char *colon = strrchr(addr, ':');
	struct sockaddr_in sa = { .sin_family = AF_INET };
	if (!colon)
		return -1;
	g_autofree char *host = g_strndup(addr, (gsize)(colon - addr));
	guint64 port = g_ascii_strtoull(colon + 1, NULL, 10);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || port == 0 || port > 65535)
		return -1;
	sa.sin_port = htons((uint16_t)port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool write_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

static void tunnel_close(tunnel *t)
{
	g_mutex_lock(&tunnels_lock);
	g_ptr_array_remove_fast(tunnels, t);
	tunnels_live--;
	g_mutex_unlock(&tunnels_lock);
	MHD_upgrade_action(t->urh, MHD_UPGRADE_ACTION_CLOSE);
	tunnel_unref(t);
}

/* One direction, on a thread of its own (blocking sockets): to the end of what
 * `from` sends, then a FIN to `to`; a failure ends both directions at once. */
static void copy(tunnel *t, int from, int to)
{
	char *buf = g_malloc(TUNNEL_BUF);
	for (;;) {
		ssize_t n = recv(from, buf, TUNNEL_BUF, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			shutdown(to, SHUT_WR);
			break;
		}
		if (n < 0 || !write_all(to, buf, (size_t)n)) {
			shutdown(from, SHUT_RDWR);
			shutdown(to, SHUT_RDWR);
			break;
		}
	}
	g_free(buf);
	if (g_atomic_int_add(&t->ended, 1) == 1)
		tunnel_close(t); /* the second direction to end closes it */
}

static gpointer copy_down(gpointer data)
{
	tunnel *t = data;
	copy(t, t->up, t->client);
	return NULL;
}

static gpointer copy_up(gpointer data)
{
	tunnel *t = data;
	copy(t, t->client, t->up);
	return NULL;
}

static void blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra,
		       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)conn;
	(void)con_cls;
	tunnel *t = cls;
	t->client = sock;
	t->urh = urh;
	if (!g_atomic_int_compare_and_exchange(&t->state, 0, 1)) {
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		tunnel_unref(t);
		return;
	}
	blocking(sock);
	g_mutex_lock(&tunnels_lock);
	g_ptr_array_add(tunnels, t);
	g_mutex_unlock(&tunnels_lock);
	if (extra_len && !write_all(t->up, extra, extra_len))
		shutdown(t->up, SHUT_RDWR);
	/* MHD's thread returns; the two directions run on threads of their own. */
	g_thread_unref(g_thread_new("tunnel", copy_down, t));
	g_thread_unref(g_thread_new("tunnel", copy_up, t));
}

/* MHD notifies a request's completion after its upgrade handler ran (an upgraded
 * one: once its socket is closed), so state 0 here means there was none. */
void srv_tunnel_abandon(void *tunnel_)
{
	tunnel *t = tunnel_;
	/* The upgrade never happened (the client went first): the request's reference. */
	if (g_atomic_int_compare_and_exchange(&t->state, 0, 2)) {
		g_mutex_lock(&tunnels_lock);
		tunnels_live--;
		g_mutex_unlock(&tunnels_lock);
		tunnel_unref(t);
	}
	tunnel_unref(t);
}

/* What E2B's edge proxy answers for a port nothing listens on. */
static enum MHD_Result proxy_error(srv_req *r, const char *id, unsigned port, bool served)
{
	json_object *o = json_object_new_object();
	char *msg = served ? g_strdup_printf("port %u does not accept connections", port)
			   : g_strdup_printf("no process serves port %u in this sandbox (start it "
					     "with Cordon-Serve-Port)",
					     port);
	json_object_object_add(o, "sandboxId", json_object_new_string(id));
	json_object_object_add(o, "message", json_object_new_string(msg));
	json_object_object_add(o, "port", json_object_new_int((int)port));
	json_object_object_add(o, "code", json_object_new_int(502));
	g_free(msg);
	return srv_reply_json(r, 502, o);
}

enum MHD_Result srv_port_tunnel(srv_req *r, srv_sandbox *s, const char *port_s)
{
	char *end;
	guint64 port = g_ascii_strtoull(port_s, &end, 10);
	const char *up = srv_header(r, MHD_HTTP_HEADER_UPGRADE);
	if (*end || port == 0 || port > 65535)
		return srv_reply_error(r, 400, NULL, "E2b-Sandbox-Port must be a port number");
	if (strcmp(r->method, "GET") != 0 || !up ||
	    g_ascii_strcasecmp(up, SRV_TUNNEL_PROTOCOL) != 0)
		return srv_reply_error(r, 400, "tunnel_required",
				       "port %u of a sandbox is reached "
				       "through a tunnel (GET with Upgrade: " SRV_TUNNEL_PROTOCOL
				       "); proxying HTTP requests to it is not implemented",
				       (unsigned)port);
	g_autofree char *addr = srv_serve_address(s, (uint16_t)port);
	if (!addr)
		return proxy_error(r, s->id, (unsigned)port, false);
	g_mutex_lock(&tunnels_lock);
	if (!tunnels)
		tunnels = g_ptr_array_new();
	bool full = tunnels_live >= TUNNELS_MAX;
	if (!full)
		tunnels_live++;
	g_mutex_unlock(&tunnels_lock);
	if (full)
		return srv_reply_error(r, 429, NULL, "%u tunnels are open already", TUNNELS_MAX);
	int fd = connect_address(addr);
	if (fd < 0) {
		g_mutex_lock(&tunnels_lock);
		tunnels_live--;
		g_mutex_unlock(&tunnels_lock);
		return proxy_error(r, s->id, (unsigned)port, true);
	}
	tunnel *t = g_new0(tunnel, 1);
	t->refs = 2; /* the request's (srv_tunnel_abandon), the upgrade's */
	t->up = fd;
	t->client = -1;
	r->tunnel = t;
	struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, t);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, SRV_TUNNEL_PROTOCOL);
	enum MHD_Result ret = MHD_queue_response(r->conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	return ret;
}

void srv_tunnels_end(void)
{
	g_mutex_lock(&tunnels_lock);
	for (guint i = 0; tunnels && i < tunnels->len; i++) {
		tunnel *t = tunnels->pdata[i];
		shutdown(t->up, SHUT_RDWR);
		shutdown(t->client, SHUT_RDWR);
	}
	g_mutex_unlock(&tunnels_lock);
}

/* Every tunnel closed (after srv_tunnels_end), at most 5 s. */
void srv_tunnels_wait(void)
{
	for (int i = 0; i < 500; i++) {
		g_mutex_lock(&tunnels_lock);
		unsigned n = tunnels_live;
		g_mutex_unlock(&tunnels_lock);
		if (!n)
			return;
		g_usleep(10000);
	}
}
