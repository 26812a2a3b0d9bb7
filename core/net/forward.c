/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A served port's forwarder (forward.h). Every descriptor is non-blocking
 * and close-on-exec, polled by GLib's main loop only while the connection
 * wants something of it (so a peer's hang-up never spins the loop). What
 * the work sends is carried as bytes and never interpreted: by the kernel
 * where a sockmap can be made (sockmap.h: root), else by the relay, a copy
 * loop on this thread (carry.h). */
#include "config.h"

#include "net/forward.h"
#include "net/carry.h"
#include "net/sockmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib-unix.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define FWD_PROBE_MS 10 /* readiness probes' interval */
#define FWD_BACKLOG 128
#define FWD_FLUSH_US 1000      /* a FIN waiting for the kernel's copy: first look again */
#define FWD_FLUSH_US_MAX 50000 /* and at most this far apart */

struct net_forward {
	GMainContext *ctx;
	GMainLoop *loop;
	GThread *thread;
	int listen_fd;
	uint16_t port; /* inside */
	char address[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	char *unix_dir; /* the unix listener's directory, or NULL */
	net_forward_socket_fn socket_fn;
	net_forward_ready_fn ready_fn;
	void *user;
	GSource *listen_src;
	GSource *probe_src;
	int probe_fd;     /* a readiness probe's connect in progress, or -1 */
	int probe_family; /* its family */
	int family;       /* where the port accepted: AF_INET (127.0.0.1) or AF_INET6 (::1) */
	GList *conns;     /* fwd_conn*, on the forwarder's thread only */
	unsigned nconns;
	net_sockmap *sockmap; /* the kernel path, or NULL: the relay carries every connection */
};

/* One carried connection: fd[0] the host's client, fd[1] the socket inside
 * (carry.h). A GSource of its own. */
typedef struct fwd_conn {
	GSource src;
	net_forward *f;
	GList *link;
	net_carry k;
	gpointer tag[2];
	GIOCondition watched[2]; /* what fd[i] is polled for now */
	bool connecting;         /* fd[1]'s connect not finished */
	bool kernel;             /* joined in f->sockmap: the kernel moves the bytes */
	bool fin[2];             /* kernel: fd[i]'s peer sent its FIN */
	bool passed[2];          /* kernel: and it was passed on (fd[1 - i] shut for writing) */
	gint64 flush_us;         /* kernel: the wait before looking again at a FIN not passed on */
} fwd_conn;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* 127.0.0.1:port's or [::1]:port's connect on a non-blocking socket: 0
 * done, 1 in progress, or a negative errno. */
static int connect_loopback(int fd, int family, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int r = family == AF_INET6 ? connect(fd, (struct sockaddr *)&a6, sizeof(a6))
				   : connect(fd, (struct sockaddr *)&a, sizeof(a));
	if (r == 0)
		return 0;
	return errno == EINPROGRESS ? 1 : -errno;
}

static int socket_error(int fd)
{
	int e = 0;
	socklen_t len = sizeof(e);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		return -errno;
	return -e;
}

/* A socket inside, non-blocking, its connect to the port started. */
static int inside_connect(net_forward *f, int family, bool *ret_in_progress)
{
	int fd = f->socket_fn(f->user, family);
	if (fd < 0)
		return fd;
	int fl = fcntl(fd, F_GETFL);
	int r = fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0
			? -errno
			: connect_loopback(fd, family, f->port);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_in_progress = r == 1;
	return fd;
}

/* ---- one connection --------------------------------------------------------------- */

/* Polls fd[i] for events, or not at all when events is 0. */
static void conn_watch(fwd_conn *c, int i, GIOCondition events)
{
	if (c->tag[i] && events == c->watched[i])
		return; /* a change costs the loop a rebuild of its poll set */
	c->watched[i] = events;
	if (!events) {
		if (c->tag[i])
			g_source_remove_unix_fd(&c->src, c->tag[i]);
		c->tag[i] = NULL;
	} else if (c->tag[i]) {
		g_source_modify_unix_fd(&c->src, c->tag[i], events);
	} else {
		c->tag[i] = g_source_add_unix_fd(&c->src, c->k.fd[i], events);
	}
}

static void conn_rewatch(fwd_conn *c)
{
	for (int i = 0; i < 2; i++)
		conn_watch(c, i, net_carry_wants(&c->k, i));
}

/* ---- a connection the kernel carries ---------------------------------------------- */

/* What fd[i] is polled for on the kernel path (raw poll(2) bits: GLib
 * passes them through): its peer's FIN (POLLRDHUP: never a wake-up for the
 * bytes themselves, which the kernel moves), then errors while bytes still
 * go to it, then nothing (both ways shut: a hang-up would be level). */
static GIOCondition kernel_wants(const fwd_conn *c, int i)
{
	if (!c->fin[i])
		return (GIOCondition)POLLRDHUP;
	return c->passed[1 - i] ? 0 : G_IO_ERR;
}

static void kernel_rewatch(fwd_conn *c)
{
	for (int i = 0; i < 2; i++)
		conn_watch(c, i, kernel_wants(c, i));
}

/* A FIN is passed on only once every byte before it is on the other
 * side's send queue (the kernel's copy runs on a worker of its own):
 * looked at again after 1, 2, 4... ms while it is not. */
static gboolean kernel_dispatch(fwd_conn *c)
{
	g_source_set_ready_time(&c->src, -1);
	for (int i = 0; i < 2; i++) {
		GIOCondition ev = c->tag[i] ? g_source_query_unix_fd(&c->src, c->tag[i]) : 0;
		if (ev & G_IO_ERR)
			return G_SOURCE_REMOVE; /* a reset, or the kernel's send failed */
		if (ev & (POLLRDHUP | G_IO_HUP))
			c->fin[i] = true;
	}
	bool waiting = false;
	for (int i = 0; i < 2; i++) {
		if (!c->fin[i] || c->passed[i])
			continue;
		int r = net_sockmap_flushed(c->k.fd[i], c->k.fd[1 - i]);
		if (r < 0)
			return G_SOURCE_REMOVE;
		if (r == 1 && shutdown(c->k.fd[1 - i], SHUT_WR) < 0)
			return G_SOURCE_REMOVE;
		c->passed[i] = r == 1;
		waiting |= r == 0;
	}
	if (c->passed[0] && c->passed[1])
		return G_SOURCE_REMOVE; /* both sides said all they had */
	if (!waiting) {
		c->flush_us = 0;
	} else {
		c->flush_us = c->flush_us ? MIN(2 * c->flush_us, FWD_FLUSH_US_MAX) : FWD_FLUSH_US;
		g_source_set_ready_time(&c->src, g_source_get_time(&c->src) + c->flush_us);
	}
	kernel_rewatch(c);
	return G_SOURCE_CONTINUE;
}

/* The inside socket is connected: the kernel carries the pair where it can.
 * false when the connection cannot go on. */
static bool conn_begin(fwd_conn *c)
{
	net_forward *f = c->f;
	int r = f->sockmap ? net_sockmap_join(f->sockmap, c->k.fd[0], c->k.fd[1]) : -ENOTSUP;
	if (r == -ECONNABORTED)
		return false;
	c->kernel = r == 0;
	if (f->sockmap && r < 0)
		g_debug("serve forwarder: port %u: a connection carried by the relay: %s",
			(unsigned)f->port, g_strerror(-r));
	if (c->kernel)
		kernel_rewatch(c);
	else
		conn_rewatch(c);
	return true;
}

static gboolean conn_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
	(void)cb;
	(void)data;
	fwd_conn *c = (fwd_conn *)src;
	if (c->connecting) {
		if (!(g_source_query_unix_fd(src, c->tag[1]) & (G_IO_OUT | G_IO_ERR | G_IO_HUP)))
			return G_SOURCE_CONTINUE;
		if (socket_error(c->k.fd[1]) < 0)
			return G_SOURCE_REMOVE; /* nothing listens inside: the client is closed */
		c->connecting = false;
		return conn_begin(c) ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
	}
	if (c->kernel)
		return kernel_dispatch(c);
	/* Only the directions this wake-up concerns: fd[i] readable, or the
	 * other side writable for what fd[i] sent. */
	GIOCondition ev[2];
	for (int i = 0; i < 2; i++)
		ev[i] = c->tag[i] ? g_source_query_unix_fd(src, c->tag[i]) : 0;
	for (int i = 0; i < 2; i++)
		if ((ev[i] & (G_IO_IN | G_IO_HUP | G_IO_ERR)) ||
		    (ev[1 - i] & (G_IO_OUT | G_IO_HUP | G_IO_ERR)))
			if (!net_carry_pump(&c->k, i))
				return G_SOURCE_REMOVE;
	if (net_carry_done(&c->k))
		return G_SOURCE_REMOVE; /* both sides said all they had */
	conn_rewatch(c);
	return G_SOURCE_CONTINUE;
}

static void conn_finalize(GSource *src)
{
	fwd_conn *c = (fwd_conn *)src;
	close_fd(&c->k.fd[0]);
	close_fd(&c->k.fd[1]);
	c->f->conns = g_list_delete_link(c->f->conns, c->link);
	c->f->nconns--;
}

static GSourceFuncs conn_funcs = { .dispatch = conn_dispatch, .finalize = conn_finalize };

static void conn_new(net_forward *f, int client)
{
	bool in_progress = false;
	int inside = f->nconns < NET_FORWARD_MAX_CONNS ? inside_connect(f, f->family, &in_progress)
						       : -EMFILE;
	if (inside < 0) {
		g_debug("serve forwarder: a connection to port %u refused: %s", (unsigned)f->port,
			g_strerror(-inside));
		close(client);
		return;
	}
	fwd_conn *c = (fwd_conn *)g_source_new(&conn_funcs, sizeof(fwd_conn));
	c->f = f;
	c->k.fd[0] = client;
	c->k.fd[1] = inside;
	/* A forwarder adds no delay of its own: what a peer flushed goes at once. */
	int one = 1;
	setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(inside, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->connecting = in_progress;
	f->conns = g_list_prepend(f->conns, c);
	c->link = f->conns;
	f->nconns++;
	/* Nothing here iterates the loop recursively; without this GLib takes
	 * both fds out of its poll set and back around every dispatch, which
	 * wakes the loop four times per wake-up. */
	g_source_set_can_recurse(&c->src, TRUE);
	bool ok = true;
	if (in_progress)
		conn_watch(c, 1, G_IO_OUT);
	else
		ok = conn_begin(c);
	g_source_attach(&c->src, f->ctx);
	g_source_unref(&c->src); /* the context's reference is the connection's life */
	if (!ok)
		g_source_destroy(&c->src);
}

/* ---- the listener and the readiness probe --------------------------------------------- */

static gboolean on_accept(gint fd, GIOCondition cond, gpointer data)
{
	(void)cond;
	net_forward *f = data;
	for (;;) {
		int client = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (client >= 0) {
			conn_new(f, client);
			continue;
		}
		if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
			g_debug("serve forwarder: accept: %s", g_strerror(errno));
		if (errno != EINTR && errno != ECONNABORTED)
			break;
	}
	return G_SOURCE_CONTINUE;
}

/* One step of the readiness probe: true once the port inside accepted a
 * connection (which is closed at once: the server sees one empty one). The
 * steps take 127.0.0.1 and ::1 in turn; f->family is the one that accepted. */
static bool probe_step(net_forward *f)
{
	if (f->probe_fd >= 0) {
		struct pollfd p = { f->probe_fd, POLLOUT, 0 };
		if (poll(&p, 1, 0) == 0)
			return false; /* still connecting */
		int e = socket_error(f->probe_fd);
		close_fd(&f->probe_fd);
		if (e == 0)
			f->family = f->probe_family;
		return e == 0;
	}
	int family = f->probe_family = f->probe_family == AF_INET ? AF_INET6 : AF_INET;
	bool in_progress = false;
	int fd = inside_connect(f, family, &in_progress);
	if (fd < 0)
		return false; /* refused: nothing listens there yet */
	if (!in_progress) {
		close(fd);
		f->family = family;
		return true;
	}
	f->probe_fd = fd;
	return false;
}

static gboolean on_probe(gpointer data)
{
	net_forward *f = data;
	if (!probe_step(f))
		return G_SOURCE_CONTINUE;
	f->ready_fn(f->user, f->address);
	f->probe_src = NULL;
	return G_SOURCE_REMOVE;
}

static gpointer forward_thread(gpointer data)
{
	net_forward *f = data;
	g_main_loop_run(f->loop);
	/* Stopped: every connection ends here, on the thread that owns them. */
	if (f->probe_src)
		g_source_destroy(f->probe_src);
	g_source_destroy(f->listen_src);
	while (f->conns)
		g_source_destroy(f->conns->data); /* finalize unlinks it */
	close_fd(&f->probe_fd);
	return NULL;
}

static int listen_loopback(char *address, size_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, FWD_BACKLOG) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	snprintf(address, len, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
	return fd;
}

/* A unix listener in a fresh directory only we can enter: the socket's own
 * mode is the umask's, so the directory is what keeps other users out. */
static int listen_unix(net_forward *f)
{
	const char *base = g_getenv("XDG_RUNTIME_DIR");
	g_autofree char *tmpl = g_build_filename(base && base[0] == '/' ? base : g_get_tmp_dir(),
						 "cordon-serve-XXXXXX", NULL);
	if (!g_mkdtemp_full(tmpl, 0700))
		return -errno;
	f->unix_dir = g_steal_pointer(&tmpl);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/sock", f->unix_dir);
	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, FWD_BACKLOG) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	snprintf(f->address, sizeof(f->address), "unix:%s", a.sun_path);
	return fd;
}

/* Removes the unix listener's socket and directory. */
static void unix_cleanup(net_forward *f)
{
	if (!f->unix_dir)
		return;
	g_autofree char *sock = g_build_filename(f->unix_dir, "sock", NULL);
	unlink(sock);
	rmdir(f->unix_dir);
	g_clear_pointer(&f->unix_dir, g_free);
}

/* The kernel path where it can be had: a TCP listener (what a unix
 * client sends the kernel could carry, but the FIN's bookkeeping is
 * TCP's, net_sockmap_flushed), and a sockmap this process may make (root).
 * CORDON_SERVE_FORWARD=relay keeps the relay (benchmarks, tests). Which
 * path was taken, and why, is in the debug log. */
static void choose_path(net_forward *f, bool unix_socket)
{
	char why[160] = "a unix socket's listener";
	if (!unix_socket && g_strcmp0(g_getenv("CORDON_SERVE_FORWARD"), "relay") == 0)
		snprintf(why, sizeof(why), "CORDON_SERVE_FORWARD=relay");
	else if (!unix_socket)
		net_sockmap_new(NET_FORWARD_MAX_CONNS, &f->sockmap, why, sizeof(why));
	if (f->sockmap)
		g_debug("serve forwarder: port %u: connections carried by the kernel (sockmap)",
			(unsigned)f->port);
	else
		g_debug("serve forwarder: port %u: connections carried by the relay (%s)",
			(unsigned)f->port, why);
}

bool net_forward_kernel_path(const net_forward *f) { return f->sockmap != NULL; }

unsigned net_forward_kernel_pairs(const net_forward *f)
{
	return f->sockmap ? (net_sockmap_count(f->sockmap) + 3) / 4 : 0; /* a part counts */
}

static gboolean quit_loop(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

int net_forward_start(uint16_t port, bool unix_socket, net_forward_socket_fn socket_fn,
		      net_forward_ready_fn ready_fn, void *user, net_forward **ret, char *why,
		      size_t whylen)
{
	net_forward *f = g_new0(net_forward, 1);
	f->port = port;
	f->socket_fn = socket_fn;
	f->ready_fn = ready_fn;
	f->user = user;
	f->probe_fd = -1;
	f->family = AF_INET;
	f->probe_family = AF_INET6; /* the first probe's is AF_INET */
	f->listen_fd = unix_socket ? listen_unix(f)
				   : listen_loopback(f->address, sizeof(f->address));
	if (f->listen_fd < 0) {
		int r = f->listen_fd;
		snprintf(why, whylen, "cannot listen on %s: %s",
			 unix_socket ? "a unix socket" : "127.0.0.1", g_strerror(-r));
		unix_cleanup(f);
		g_free(f);
		return r;
	}
	choose_path(f, unix_socket);
	f->ctx = g_main_context_new();
	f->loop = g_main_loop_new(f->ctx, FALSE);
	f->listen_src = g_unix_fd_source_new(f->listen_fd, G_IO_IN);
	g_source_set_callback(f->listen_src, G_SOURCE_FUNC(on_accept), f, NULL);
	g_source_set_can_recurse(f->listen_src, TRUE);
	g_source_attach(f->listen_src, f->ctx);
	f->probe_src = g_timeout_source_new(FWD_PROBE_MS);
	g_source_set_callback(f->probe_src, on_probe, f, NULL);
	g_source_attach(f->probe_src, f->ctx);
	g_source_unref(f->probe_src); /* the context holds it until it is removed */
	GError *e = NULL;
	f->thread = g_thread_try_new("cordon-forward", forward_thread, f, &e);
	if (!f->thread) {
		snprintf(why, whylen, "cannot start the forwarder: %s", e->message);
		g_error_free(e);
		f->probe_src = NULL;
		net_forward_stop(f);
		return -EAGAIN;
	}
	*ret = f;
	return 0;
}

const char *net_forward_address(const net_forward *f) { return f->address; }

void net_forward_stop(net_forward *f)
{
	if (!f)
		return;
	if (f->thread) {
		/* Through the loop itself: it may be blocked in poll. */
		GSource *q = g_idle_source_new();
		g_source_set_callback(q, quit_loop, f->loop, NULL);
		g_source_attach(q, f->ctx);
		g_source_unref(q);
		g_thread_join(f->thread);
	} else {
		g_source_destroy(f->listen_src);
	}
	g_source_unref(f->listen_src);
	close_fd(&f->listen_fd);
	unix_cleanup(f);
	net_sockmap_free(f->sockmap); /* after every connection closed: the maps are empty */
	g_main_loop_unref(f->loop);
	g_main_context_unref(f->ctx);
	g_free(f);
}
