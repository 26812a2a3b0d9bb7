/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A process's output as Connect server streams: each reader (the Start's
 * response, and one per process.Process/Connect) has a queue of enveloped
 * events that its response drains, with a keepalive when nothing came for the
 * client's Keepalive-Ping-Interval.
 *
 * Bounds: a reader with SRV_QUEUE_MAX bytes unread stalls the work (a pipe's
 * back-pressure), never the server's memory. With no reader at all (the
 * client went away, as E2B's SDKs do on disconnect()) the work goes on, as
 * in envd, and its newest SRV_QUEUE_MAX bytes of output are kept for the next
 * Connect; older output is dropped, since no reader may ever come. A reader
 * that goes away no longer ends the work: SendSignal, the sandbox's kill or
 * timeout, or the run's own time limit do. A reader waiting for events
 * checks its client's socket every PEER_CHECK_MS: one that hung up is
 * detached at once, so that what comes next is kept for a Connect rather
 * than written to a closed connection.
 */
#include "config.h"

#include "process.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

/* How often a reader waiting for events checks that its client is still there. */
#define PEER_CHECK_MS 200

typedef struct srv_reader {
	srv_proc *p; /* a reference */
	GQueue events;
	size_t queued;
	GBytes *current; /* being written to the client */
	size_t offset;
	int keepalive_s;
	gint64 since; /* when this wait for events began (monotonic µs), 0: not waiting */
	int fd;       /* the connection's socket (MHD's), to see the client go; -1: unknown */
} srv_reader;

GBytes *srv_envelope(uint8_t flags, json_object *msg)
{
	const char *text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(text);
	guint8 *buf = g_malloc(5 + n);
	buf[0] = flags;
	buf[1] = (guint8)(n >> 24);
	buf[2] = (guint8)(n >> 16);
	buf[3] = (guint8)(n >> 8);
	buf[4] = (guint8)n;
	memcpy(buf + 5, text, n);
	json_object_put(msg);
	return g_bytes_new_take(buf, 5 + n);
}

json_object *srv_event(const char *kind, json_object *body)
{
	json_object *ev = json_object_new_object(), *o = json_object_new_object();
	json_object_object_add(ev, kind, body);
	json_object_object_add(o, "event", ev);
	return o;
}

static bool a_reader_full(const srv_proc *p)
{
	for (guint i = 0; i < p->readers->len; i++)
		if (((srv_reader *)p->readers->pdata[i])->queued > SRV_QUEUE_MAX)
			return true;
	return false;
}

static void enqueue(srv_reader *r, GBytes *ev)
{
	r->queued += g_bytes_get_size(ev);
	g_queue_push_tail(&r->events, g_bytes_ref(ev));
}

void srv_proc_push(srv_proc *p, GBytes *ev, bool wait)
{
	while (wait && a_reader_full(p))
		g_cond_wait(&p->cond, &p->lock);
	if (p->readers->len == 0 && wait) { /* data: kept for the next Connect, bounded */
		p->backlog_len += g_bytes_get_size(ev);
		g_queue_push_tail(&p->backlog, ev);
		while (p->backlog_len > SRV_QUEUE_MAX) {
			GBytes *old = g_queue_pop_head(&p->backlog);
			p->backlog_len -= g_bytes_get_size(old);
			g_bytes_unref(old);
		}
		return;
	}
	for (guint i = 0; i < p->readers->len; i++)
		enqueue(p->readers->pdata[i], ev);
	g_bytes_unref(ev);
	g_cond_broadcast(&p->cond);
}

/* Whether the client hung up (a request's client never half-closes while it waits). */
static bool peer_gone(const srv_reader *r)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLRDHUP };
	return r->fd >= 0 && poll(&pfd, 1, 0) > 0 &&
	       (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	srv_reader *r = cls;
	srv_proc *p = r->p;
	(void)pos;
	g_mutex_lock(&p->lock);
	while (!r->current) {
		r->current = g_queue_pop_head(&r->events);
		if (r->current) {
			r->offset = 0;
			r->queued -= g_bytes_get_size(r->current);
			g_cond_broadcast(&p->cond);
			break;
		}
		if (p->ended) {
			g_mutex_unlock(&p->lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		gint64 now = g_get_monotonic_time();
		if (!r->since)
			r->since = now;
		gint64 keepalive = r->since + (gint64)r->keepalive_s * G_USEC_PER_SEC;
		gint64 until = MIN(keepalive, now + PEER_CHECK_MS * 1000);
		if (g_cond_wait_until(&p->cond, &p->lock, until) || !g_queue_is_empty(&r->events) ||
		    p->ended)
			continue;
		if (peer_gone(r)) {
			g_mutex_unlock(&p->lock);
			return MHD_CONTENT_READER_END_WITH_ERROR; /* stream_free detaches it */
		}
		if (g_get_monotonic_time() >= keepalive) {
			/* Nothing for a while: a keepalive tells the client the stream lives. */
			json_object *ka = json_object_new_object();
			r->current = srv_envelope(0, p->watcher ? srv_watch_event("keepalive", ka)
								: srv_event("keepalive", ka));
			r->offset = 0;
		}
	}
	r->since = 0;
	size_t size;
	const guint8 *d = g_bytes_get_data(r->current, &size);
	size_t n = MIN(max, size - r->offset);
	memcpy(buf, d + r->offset, n);
	r->offset += n;
	if (r->offset == size)
		g_clear_pointer(&r->current, g_bytes_unref);
	g_mutex_unlock(&p->lock);
	return (ssize_t)n;
}

/* The response is done or the client went away: the work goes on without this reader
 * (and never waits for it again). */
static void stream_free(void *cls)
{
	srv_reader *r = cls;
	srv_proc *p = r->p;
	g_mutex_lock(&p->lock);
	g_ptr_array_remove_fast(p->readers, r);
	bool unwatched = p->watcher && p->readers->len == 0;
	g_cond_broadcast(&p->cond);
	g_mutex_unlock(&p->lock);
	/* A watch lives as long as someone reads it (the SDK's stop() ends the stream). */
	if (unwatched && write(p->cancel[1], "x", 1) < 0 && errno != EAGAIN)
		g_warning("watcher %u: cannot cancel: %s", p->pid, g_strerror(errno));
	g_queue_clear_full(&r->events, (GDestroyNotify)g_bytes_unref);
	g_clear_pointer(&r->current, g_bytes_unref);
	g_free(r);
	srv_proc_unref(p);
}

struct MHD_Response *srv_reader_new(srv_proc *p, struct MHD_Connection *conn, GBytes *first,
				    int keepalive_s)
{
	srv_reader *r = g_new0(srv_reader, 1);
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	r->fd = ci ? ci->connect_fd : -1;
	r->p = p;
	p->refs++;
	r->keepalive_s = keepalive_s;
	g_queue_init(&r->events);
	if (first) {
		enqueue(r, first);
		g_bytes_unref(first);
	}
	for (GList *l = p->backlog.head; l; l = l->next)
		enqueue(r, l->data);
	g_queue_clear_full(&p->backlog, (GDestroyNotify)g_bytes_unref);
	p->backlog_len = 0;
	g_ptr_array_add(p->readers, r);
	g_cond_broadcast(&p->cond);
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
								      stream_read, r, stream_free);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/connect+json");
	return resp;
}
