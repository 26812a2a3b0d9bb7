/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stream multiplexer (netmux.h): one poll loop over the transport, the wake pipe, the
 * control socket, the listeners and the streams' local sockets. */
#include "config.h"

#include "netmux.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FRAME_SPACE (NETMUX_HEADER + NETMUX_FRAME_MAX)
/* Local sockets are not read, nor connections accepted, while this much output waits: the
 * output holds at most one more frame of data beyond it. */
#define OUT_HIGH (1u << 20)
/* Room for one frame left over plus one read of the transport. */
#define IN_CAP (2 * FRAME_SPACE)
#define ACCEPT_BURST 16
#define ACCEPT_PAUSE_MS 100
#define WINDOW_MAX (1u << 30)
#define STREAMS_MAX (1u << 20)
#define END 1 /* a step's "the transport ended": run returns 0 */

enum {
	F_HELLO = 'H',
	F_OPEN = 'O',
	F_ACCEPT = 'A',
	F_DATA = 'D',
	F_FIN = 'F',
	F_RST = 'R',
	F_CREDIT = 'C'
};
/* Streams the guest opens leave a sixteenth of max_streams to the host's (16 of 256): work
 * that holds every connection it can still leaves the host its runs and served ports. */
#define HOST_RESERVE(max) ((max) / 16)

/* A byte queue: data[off, off + len) holds the bytes. */
typedef struct buf {
	uint8_t *data;
	size_t off, len, cap;
} buf;

/* A netmux_open waiting for the peer's answer (under the mux's lock once posted). */
typedef struct open_req {
	uint32_t target;
	int fd;
	int result;
	bool done, abandoned; /* answered; its caller stopped waiting (the loop frees it) */
	bool detached;        /* nobody waits: the loop frees it, the stream goes on */
	pthread_cond_t cond;
	struct open_req *next;
} open_req;

typedef struct stream {
	uint32_t id;
	int fd;
	bool opening;        /* ours, not accepted yet: its socket is not read until ACCEPT */
	open_req *req;       /* the netmux_open that waits for the answer, or NULL */
	uint32_t credit;     /* bytes we may still send */
	uint32_t granted;    /* bytes the peer may still send */
	uint32_t credit_due; /* written to fd, not credited yet */
	bool fin_sent, peer_fin, wr_shut, dead;
	buf q; /* the peer's bytes, for fd */
} stream;

typedef struct listener {
	int fd;
	uint32_t id;
	int64_t paused_until; /* CLOCK_MONOTONIC ms: accept ran out of descriptors or memory */
} listener;

typedef struct lsn_array {
	listener *v;
	size_t n, cap;
} lsn_array;

struct netmux {
	netmux_config c;
	size_t out_hard; /* the transport is not read while this much output waits */
	bool transport_sock;
	int wake[2];
	int ctl;
	bool ctl_dgram; /* SOCK_DGRAM: an empty message is no EOF */
	buf in, out;
	stream **streams; /* dead ones until the end of the loop's turn */
	size_t nstreams, streams_cap;
	uint32_t nlive;
	uint32_t nguest; /* live streams the guest opened (odd ids) */
	lsn_array lsn;
	struct pollfd *pfd;
	size_t pfd_cap;
	uint32_t next_id;

	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t hello; /* peer_hello became true */
	bool peer_hello;      /* the guest's HELLO came (host side) */
	lsn_array pending;    /* from netmux_add_listener, for the loop to take */
	open_req *opens;      /* from netmux_open, for the loop to take */
	bool stop, running, finished;
	uint32_t live; /* nlive, for netmux_streams */
};

/* ---- bytes -------------------------------------------------------------------------------- */

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Room for n more bytes at the end (not counted in len yet), NULL on ENOMEM. Past limit the
 * queue is compacted rather than grown, so a stream's queue never takes more than window. */
static uint8_t *buf_reserve(buf *b, size_t n, size_t limit)
{
	if (b->off + b->len + n <= b->cap)
		return b->data + b->off + b->len;
	size_t want = b->len + n;
	if (b->off) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	if (want <= b->cap && (b->cap >= limit || b->len <= b->cap / 2))
		return b->data + b->len;
	size_t cap = b->cap ? 2 * b->cap : 4096;
	if (cap > limit)
		cap = limit;
	if (cap < want)
		cap = want;
	uint8_t *d = realloc(b->data, cap);
	if (!d)
		return NULL;
	b->data = d;
	b->cap = cap;
	return d + b->len;
}

static void buf_consume(buf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

static void buf_free(buf *b)
{
	free(b->data);
	*b = (buf){ 0 };
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A condition variable on CLOCK_MONOTONIC: a step of the wall clock moves no bound. */
static int cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;
	int r = pthread_condattr_init(&a);
	if (r == 0 && (r = pthread_condattr_setclock(&a, CLOCK_MONOTONIC)) == 0)
		r = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return r;
}

/* Waits on c (m->lock held) until done or ms from start; false once the bound passed. */
static bool cond_wait_until(pthread_cond_t *c, pthread_mutex_t *lock, const struct timespec *until)
{
	return pthread_cond_timedwait(c, lock, until) != ETIMEDOUT;
}

static struct timespec deadline_in(int ms)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

static int fd_own(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* A reset local socket: its peer sees ECONNRESET, not an EOF it could take for the end. */
static void close_abort(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- frames out --------------------------------------------------------------------------- */

static void header_put(uint8_t *p, uint8_t type, uint32_t id, uint32_t len)
{
	p[0] = type;
	put_be32(p + 1, id);
	put_be32(p + 5, len);
}

static int frame_put(netmux *m, uint8_t type, uint32_t id, const uint8_t *p, uint32_t len)
{
	uint8_t *d = buf_reserve(&m->out, NETMUX_HEADER + len, m->out_hard);
	if (!d)
		return -ENOMEM;
	header_put(d, type, id, len);
	if (len)
		memcpy(d + NETMUX_HEADER, p, len);
	m->out.len += NETMUX_HEADER + len;
	return 0;
}

static int frame_u32(netmux *m, uint8_t type, uint32_t id, uint32_t v)
{
	uint8_t p[4];
	put_be32(p, v);
	return frame_put(m, type, id, p, sizeof p);
}

/* ---- streams ------------------------------------------------------------------------------ */

static void live_set(netmux *m, uint32_t n)
{
	m->nlive = n;
	pthread_mutex_lock(&m->lock);
	m->live = n;
	pthread_mutex_unlock(&m->lock);
}

static stream *stream_find(netmux *m, uint32_t id)
{
	for (size_t i = 0; i < m->nstreams; i++)
		if (!m->streams[i]->dead && m->streams[i]->id == id)
			return m->streams[i];
	return NULL;
}

/* NULL on ENOMEM (fd is left to the caller). */
static stream *stream_add(netmux *m, uint32_t id, int fd)
{
	if (m->nstreams == m->streams_cap) {
		size_t cap = m->streams_cap ? 2 * m->streams_cap : 16;
		/* an array of pointers: the poll slots point at streams that do not move */
		// NOLINTNEXTLINE(bugprone-sizeof-expression)
		stream **v = realloc(m->streams, cap * sizeof *v);
		if (!v)
			return NULL;
		m->streams = v;
		m->streams_cap = cap;
	}
	stream *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	*s = (stream){ .id = id, .fd = fd, .credit = m->c.window, .granted = m->c.window };
	m->streams[m->nstreams++] = s;
	m->nguest += id & 1;
	live_set(m, m->nlive + 1);
	return s;
}

/* The answer to a netmux_open: its caller wakes, or, gone, leaves it to us to free. */
static void open_done(netmux *m, open_req *q, int result)
{
	pthread_mutex_lock(&m->lock);
	bool gone = q->abandoned || q->detached;
	q->done = true;
	q->result = result;
	if (!gone)
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&m->lock);
	if (gone) {
		pthread_cond_destroy(&q->cond);
		free(q);
	}
}

/* Forgets s at once; its memory goes at the end of the loop's turn (poll slots point at it).
 * A stream of ours closed before the peer accepted it was refused. */
static void stream_close(netmux *m, stream *s, bool abort)
{
	if (abort)
		close_abort(s->fd);
	else
		close(s->fd);
	s->fd = -1;
	if (s->req) { /* after the close: its caller may look at the other end */
		open_done(m, s->req, -ECONNREFUSED);
		s->req = NULL;
	}
	s->dead = true;
	buf_free(&s->q);
	m->nguest -= s->id & 1;
	live_set(m, m->nlive - 1);
}

static int stream_reset(netmux *m, stream *s)
{
	uint32_t id = s->id;
	stream_close(m, s, true);
	return frame_put(m, F_RST, id, NULL, 0);
}

/* Both ways finished: closed without a reset. */
static void stream_maybe_done(netmux *m, stream *s)
{
	if (s->fin_sent && s->peer_fin && s->wr_shut)
		stream_close(m, s, false);
}

/* The queue is empty: after the peer's FIN, pass the half-close on. */
static void stream_drained(netmux *m, stream *s)
{
	if (s->q.cap > NETMUX_FRAME_MAX)
		buf_free(&s->q); /* an idle stream keeps no window's worth */
	if (s->peer_fin && !s->wr_shut) {
		(void)shutdown(s->fd, SHUT_WR); /* a local peer gone already shows on read */
		s->wr_shut = true;
		stream_maybe_done(m, s);
	}
}

static int stream_read(netmux *m, stream *s)
{
	uint32_t want = s->credit < NETMUX_FRAME_MAX ? s->credit : NETMUX_FRAME_MAX;
	if (want == 0)
		return 0; /* a read of 0 bytes would look like EOF */
	uint8_t *d = buf_reserve(&m->out, NETMUX_HEADER + want, m->out_hard);
	if (!d)
		return -ENOMEM;
	ssize_t n = read(s->fd, d + NETMUX_HEADER, want);
	if (n > 0) {
		header_put(d, F_DATA, s->id, (uint32_t)n);
		m->out.len += NETMUX_HEADER + (size_t)n;
		s->credit -= (uint32_t)n;
		return 0;
	}
	if (n == 0) {
		s->fin_sent = true;
		int r = frame_put(m, F_FIN, s->id, NULL, 0);
		stream_maybe_done(m, s);
		return r;
	}
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	return stream_reset(m, s);
}

static int stream_write(netmux *m, stream *s)
{
	ssize_t n = send(s->fd, s->q.data + s->q.off, s->q.len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : stream_reset(m, s);
	buf_consume(&s->q, (size_t)n);
	s->credit_due += (uint32_t)n;
	if (s->q.len == 0)
		stream_drained(m, s);
	return 0;
}

/* Credit goes back in quarters of the window, or when the queue is empty; never while the
 * output is full (it is only a count until then). */
static int credits_send(netmux *m)
{
	uint32_t quarter = m->c.window / 4 ? m->c.window / 4 : 1;
	for (size_t i = 0; i < m->nstreams && m->out.len < OUT_HIGH; i++) {
		stream *s = m->streams[i];
		if (s->dead || s->peer_fin || !s->credit_due ||
		    (s->credit_due < quarter && s->q.len))
			continue;
		int r = frame_u32(m, F_CREDIT, s->id, s->credit_due);
		if (r < 0)
			return r;
		s->granted += s->credit_due;
		s->credit_due = 0;
	}
	return 0;
}

/* ---- frames in ---------------------------------------------------------------------------- */

/* Whether one more stream may open: the guest's leave HOST_RESERVE to the host's. */
static bool room_for(const netmux *m, bool guest_opens)
{
	uint32_t max = m->c.max_streams;
	return m->nlive < max && (!guest_opens || m->nguest < max - HOST_RESERVE(max));
}

/* Whether id is one the peer may open: the guest's are odd, the host's even. */
static bool peer_id(const netmux *m, uint32_t id) { return (id & 1) == (m->c.host ? 1u : 0u); }

static int on_open(netmux *m, uint32_t id, const uint8_t *p, uint32_t len)
{
	if (len != 4 || !peer_id(m, id) || stream_find(m, id))
		return -EPROTO;
	if (!room_for(m, m->c.host) || !m->c.open_stream)
		return frame_put(m, F_RST, id, NULL, 0);
	int fd = m->c.open_stream(m->c.ctx, get_be32(p));
	if (fd < 0)
		return frame_put(m, F_RST, id, NULL, 0);
	if (fd_own(fd) < 0 || !stream_add(m, id, fd)) {
		close(fd);
		return frame_put(m, F_RST, id, NULL, 0);
	}
	return frame_put(m, F_ACCEPT, id, NULL, 0);
}

/* The peer took a stream of ours: its socket is read from now on. */
static int on_accept(netmux *m, uint32_t id, uint32_t len)
{
	stream *s = stream_find(m, id);
	if (len != 0 || peer_id(m, id) || (s && !s->opening))
		return -EPROTO;
	if (s) {
		s->opening = false;
		if (s->req) {
			open_done(m, s->req, 0);
			s->req = NULL;
		}
	}
	return 0;
}

static int on_data(netmux *m, uint32_t id, const uint8_t *p, uint32_t len)
{
	if (len == 0)
		return -EPROTO;
	stream *s = stream_find(m, id);
	if (!s)
		return 0; /* reset a moment ago */
	if (s->peer_fin || len > s->granted)
		return -EPROTO;
	uint8_t *d = buf_reserve(&s->q, len, m->c.window);
	if (!d)
		return -ENOMEM;
	memcpy(d, p, len);
	s->q.len += len;
	s->granted -= len;
	return 0;
}

static int on_fin(netmux *m, uint32_t id, uint32_t len)
{
	stream *s = stream_find(m, id);
	if (len != 0 || (s && s->peer_fin))
		return -EPROTO;
	if (s) {
		s->peer_fin = true;
		if (s->q.len == 0)
			stream_drained(m, s);
	}
	return 0;
}

static int on_rst(netmux *m, uint32_t id, uint32_t len)
{
	if (len != 0)
		return -EPROTO;
	stream *s = stream_find(m, id);
	if (s)
		stream_close(m, s, true);
	return 0;
}

static int on_credit(netmux *m, uint32_t id, const uint8_t *p, uint32_t len)
{
	if (len != 4)
		return -EPROTO;
	stream *s = stream_find(m, id);
	if (!s)
		return 0;
	uint64_t credit = (uint64_t)s->credit + get_be32(p);
	if (credit > m->c.window)
		return -EPROTO;
	s->credit = (uint32_t)credit;
	return 0;
}

/* The guest's first frame, once: its end of the channel runs (the host waits for it before
 * it opens a stream: a guest without a multiplexer would never answer). */
static int on_hello(netmux *m, uint32_t len)
{
	if (len != 0 || !m->c.host)
		return -EPROTO;
	pthread_mutex_lock(&m->lock);
	bool again = m->peer_hello;
	m->peer_hello = true;
	pthread_cond_broadcast(&m->hello);
	pthread_mutex_unlock(&m->lock);
	return again ? -EPROTO : 0;
}

static int frame_in(netmux *m, uint8_t type, uint32_t id, const uint8_t *p, uint32_t len)
{
	if (type == F_HELLO && id == 0)
		return on_hello(m, len);
	if (id == 0)
		return -EPROTO;
	switch (type) {
	case F_OPEN: return on_open(m, id, p, len);
	case F_ACCEPT: return on_accept(m, id, len);
	case F_DATA: return on_data(m, id, p, len);
	case F_FIN: return on_fin(m, id, len);
	case F_RST: return on_rst(m, id, len);
	case F_CREDIT: return on_credit(m, id, p, len);
	default: return -EPROTO;
	}
}

/* Every whole frame in the input; an oversized length fails at its header, before any of
 * its payload is waited for. */
static int frames_parse(netmux *m)
{
	buf *b = &m->in;
	while (b->len >= NETMUX_HEADER) {
		const uint8_t *h = b->data + b->off;
		uint32_t len = get_be32(h + 5);
		if (len > NETMUX_FRAME_MAX)
			return -EPROTO;
		if (b->len < NETMUX_HEADER + (size_t)len)
			break;
		int r = frame_in(m, h[0], get_be32(h + 1), h + NETMUX_HEADER, len);
		if (r < 0)
			return r;
		buf_consume(b, NETMUX_HEADER + (size_t)len);
	}
	return 0;
}

/* ---- the transport ------------------------------------------------------------------------ */

static int transport_read(netmux *m)
{
	/* less than a frame is left after a parse: this compacts, it never grows */
	uint8_t *d = buf_reserve(&m->in, FRAME_SPACE, IN_CAP);
	if (!d)
		return -ENOMEM;
	ssize_t n = read(m->c.transport, d, m->in.cap - m->in.off - m->in.len);
	if (n > 0) {
		m->in.len += (size_t)n;
		return frames_parse(m);
	}
	if (n == 0)
		return m->in.len ? -EPROTO : END; /* EOF inside a frame: cut short */
	return errno == EAGAIN || errno == EINTR ? 0 : END;
}

static int transport_write(netmux *m)
{
	while (m->out.len) {
		const uint8_t *p = m->out.data + m->out.off;
		ssize_t n = m->transport_sock ? send(m->c.transport, p, m->out.len, MSG_NOSIGNAL)
					      : write_nosigpipe(m->c.transport, p, m->out.len);
		if (n > 0) {
			buf_consume(&m->out, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 0 : END;
	}
	return 0;
}

/* ---- listeners ---------------------------------------------------------------------------- */

static int lsn_push(lsn_array *a, int fd, uint32_t id)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 4;
		listener *v = realloc(a->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = (listener){ .fd = fd, .id = id };
	return 0;
}

static void lsn_close_all(lsn_array *a)
{
	for (size_t i = 0; i < a->n; i++)
		close_fd(&a->v[i].fd);
	a->n = 0;
}

/* Takes the listeners netmux_add_listener left (closed if there is no memory for them). */
static void listeners_adopt(netmux *m)
{
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->pending.n; i++)
		if (lsn_push(&m->lsn, m->pending.v[i].fd, m->pending.v[i].id) < 0)
			close(m->pending.v[i].fd);
	m->pending.n = 0;
	pthread_mutex_unlock(&m->lock);
}

static uint32_t id_next(netmux *m);

static bool opens_cancelled(netmux *m, open_req *q)
{
	pthread_mutex_lock(&m->lock);
	bool gone = q->abandoned;
	pthread_mutex_unlock(&m->lock);
	return gone;
}

/* Streams whose opener stopped waiting before the peer answered: reset, their local socket
 * closed (its client learns now), never left open half made. */
static int opens_reap(netmux *m)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < m->nstreams; i++) {
		stream *s = m->streams[i];
		if (!s->dead && s->opening && s->req && opens_cancelled(m, s->req))
			r = stream_reset(m, s);
	}
	return r;
}

/* Takes the streams netmux_open posted: each an OPEN, answered when the peer's answer
 * comes (refused at once when there is no room). */
static int opens_adopt(netmux *m)
{
	pthread_mutex_lock(&m->lock);
	open_req *q = m->opens;
	m->opens = NULL;
	pthread_mutex_unlock(&m->lock);
	int r = 0;
	while (q) {
		open_req *next = q->next;
		bool cancelled = opens_cancelled(m, q);
		stream *s = r == 0 && !cancelled && room_for(m, !m->c.host)
				    ? stream_add(m, id_next(m), q->fd)
				    : NULL;
		if (s) {
			s->opening = true;
			s->req = q;
			r = frame_u32(m, F_OPEN, s->id, q->target);
		} else {
			close_abort(q->fd);
			open_done(m, q, r < 0 ? r : cancelled ? -ETIMEDOUT : -EAGAIN);
		}
		q = next;
	}
	return r;
}

static uint32_t id_next(netmux *m)
{
	do
		m->next_id += 2; /* the guest's odd, the host's even (netmux_new) */
	while (m->next_id == 0 || stream_find(m, m->next_id));
	return m->next_id;
}

/* Whether to stop accepting for this turn (a broken listener is closed, dropped at reap). */
static bool accept_failed(listener *l, int e)
{
	if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
		l->paused_until = now_ms() + ACCEPT_PAUSE_MS; /* it stays readable: no busy loop */
		return true;
	}
	if (e == EAGAIN || e == EINTR || e == ECONNABORTED || e == EPROTO || e == EPERM)
		return e == EAGAIN;
	close_fd(&l->fd);
	return true;
}

/* Over max_streams a connection is closed at once: its client learns now, not at a timeout. */
static int listener_accept(netmux *m, listener *l)
{
	for (int i = 0; i < ACCEPT_BURST && l->fd >= 0 && m->out.len < OUT_HIGH; i++) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (accept_failed(l, errno))
				return 0;
			continue;
		}
		if (!room_for(m, true)) {
			close(fd);
			continue;
		}
		uint32_t id = id_next(m);
		stream *s = stream_add(m, id, fd);
		if (!s) {
			close(fd);
			continue;
		}
		s->opening = true;
		int r = frame_u32(m, F_OPEN, id, l->id);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool is_listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof on;
	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on;
}

/* One message of the control socket: exactly one listening socket and a 4-byte id, or it is
 * dropped with whatever descriptors it carried. */
static void control_read(netmux *m)
{
	uint8_t id[4];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct iovec iov = { .iov_base = id, .iov_len = sizeof id };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b
	};
	ssize_t n = recvmsg(m->ctl, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	int fds[4], nfds = 0;
	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t j = 0; j < k && nfds < 4; j++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + j * sizeof(int), sizeof(int));
	}
	bool ok = n == sizeof id && nfds == 1 && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
		  is_listening(fds[0]) && fd_own(fds[0]) == 0 &&
		  lsn_push(&m->lsn, fds[0], get_be32(id)) == 0;
	for (int j = ok ? 1 : 0; j < nfds; j++)
		close(fds[j]);
	if (n < 0 || (n == 0 && !m->ctl_dgram))
		close_fd(&m->ctl); /* EOF: no more listeners; an error: none either */
}

/* ---- the loop ----------------------------------------------------------------------------- */

enum { P_WAKE, P_TRANSPORT, P_CTL, P_FIXED };

static int pfd_room(netmux *m, size_t n)
{
	if (n <= m->pfd_cap)
		return 0;
	struct pollfd *p = realloc(m->pfd, n * sizeof *p);
	if (!p)
		return -ENOMEM;
	m->pfd = p;
	m->pfd_cap = n;
	return 0;
}

static short stream_events(const netmux *m, const stream *s)
{
	if (s->dead)
		return 0;
	bool rd = !s->opening && !s->fin_sent && s->credit && m->out.len < OUT_HIGH;
	return (short)((rd ? POLLIN : 0) | (s->q.len ? POLLOUT : 0));
}

/* Slots for everything; a descriptor with nothing to wait for gets -1, so that its POLLHUP
 * cannot spin the loop. The timeout: the first paused listener's end, or none. */
static int poll_build(netmux *m, size_t *ret_n, int *ret_timeout)
{
	size_t n = P_FIXED + m->lsn.n + m->nstreams;
	if (pfd_room(m, n) < 0)
		return -ENOMEM;
	struct pollfd *p = m->pfd;
	short tev = (short)((m->out.len < m->out_hard ? POLLIN : 0) | (m->out.len ? POLLOUT : 0));
	p[P_WAKE] = (struct pollfd){ .fd = m->wake[0], .events = POLLIN };
	p[P_TRANSPORT] = (struct pollfd){ .fd = m->c.transport, .events = tev };
	p[P_CTL] = (struct pollfd){ .fd = m->ctl, .events = POLLIN };
	int64_t now = now_ms(), wait = -1;
	for (size_t i = 0; i < m->lsn.n; i++) {
		listener *l = &m->lsn.v[i];
		bool paused = l->paused_until > now;
		if (paused && (wait < 0 || l->paused_until - now < wait))
			wait = l->paused_until - now;
		bool on = !paused && m->out.len < OUT_HIGH;
		p[P_FIXED + i] = (struct pollfd){ .fd = on ? l->fd : -1, .events = POLLIN };
	}
	for (size_t i = 0; i < m->nstreams; i++) {
		short ev = stream_events(m, m->streams[i]);
		p[P_FIXED + m->lsn.n + i] = (struct pollfd){ .fd = ev ? m->streams[i]->fd : -1,
							     .events = ev };
	}
	*ret_n = n;
	*ret_timeout = (int)wait;
	return 0;
}

static int stream_io(netmux *m, stream *s, const struct pollfd *p)
{
	const short gone = POLLHUP | POLLERR;
	int r = 0;
	if ((p->events & POLLOUT) && (p->revents & (POLLOUT | gone)))
		r = stream_write(m, s);
	/* the output may have filled during this turn: read only while it has room */
	if (r == 0 && !s->dead && (p->events & POLLIN) && (p->revents & (POLLIN | gone)) &&
	    m->out.len < OUT_HIGH)
		r = stream_read(m, s);
	return r;
}

static int dispatch(netmux *m, size_t nlsn, size_t nstreams)
{
	const struct pollfd *p = m->pfd;
	char drain[64];
	if (p[P_WAKE].revents)
		while (read(m->wake[0], drain, sizeof drain) > 0)
			;
	int r = 0;
	if (p[P_TRANSPORT].revents & (POLLOUT | POLLERR | POLLHUP | POLLNVAL))
		r = transport_write(m);
	if (r == 0 && (p[P_TRANSPORT].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)))
		r = transport_read(m);
	if (r == 0 && m->ctl >= 0 && p[P_CTL].revents)
		control_read(m);
	for (size_t i = 0; r == 0 && i < nlsn; i++)
		if (p[P_FIXED + i].revents)
			r = listener_accept(m, &m->lsn.v[i]);
	for (size_t i = 0; r == 0 && i < nstreams; i++)
		if (p[P_FIXED + nlsn + i].revents && !m->streams[i]->dead)
			r = stream_io(m, m->streams[i], &p[P_FIXED + nlsn + i]);
	return r;
}

/* Frees the streams closed during the turn and drops broken listeners. */
static void reap(netmux *m)
{
	size_t k = 0;
	for (size_t i = 0; i < m->nstreams; i++) {
		if (m->streams[i]->dead)
			free(m->streams[i]);
		else
			m->streams[k++] = m->streams[i];
	}
	m->nstreams = k;
	k = 0;
	for (size_t i = 0; i < m->lsn.n; i++)
		if (m->lsn.v[i].fd >= 0)
			m->lsn.v[k++] = m->lsn.v[i];
	m->lsn.n = k;
}

static bool stopping(netmux *m)
{
	pthread_mutex_lock(&m->lock);
	bool stop = m->stop;
	pthread_mutex_unlock(&m->lock);
	return stop;
}

/* Closes everything run owned; the streams reset (cut, not finished). */
static void run_end(netmux *m)
{
	for (size_t i = 0; i < m->nstreams; i++) {
		if (!m->streams[i]->dead)
			stream_close(m, m->streams[i], true);
		free(m->streams[i]);
	}
	m->nstreams = 0;
	lsn_close_all(&m->lsn);
	close_fd(&m->ctl);
	close_fd(&m->c.transport);
	pthread_mutex_lock(&m->lock);
	lsn_close_all(&m->pending);
	open_req *q = m->opens;
	m->opens = NULL;
	m->finished = true;
	pthread_cond_broadcast(&m->hello);
	pthread_mutex_unlock(&m->lock);
	for (open_req *next; q; q = next) {
		next = q->next;
		close(q->fd);
		open_done(m, q, -ESHUTDOWN);
	}
}

int netmux_run(netmux *m)
{
	pthread_mutex_lock(&m->lock);
	bool again = m->running || m->finished;
	m->running = true;
	pthread_mutex_unlock(&m->lock);
	if (again)
		return -EALREADY;
	/* the guest says it runs before anything else (netmux_wait_peer) */
	int r = m->c.host ? 0 : frame_put(m, F_HELLO, 0, NULL, 0);
	while (r == 0 && !stopping(m)) {
		listeners_adopt(m);
		size_t n = 0;
		int timeout = -1;
		r = opens_adopt(m);
		if (r == 0)
			r = opens_reap(m);
		if (r == 0)
			r = credits_send(m);
		if (r == 0)
			r = poll_build(m, &n, &timeout);
		if (r < 0)
			break;
		size_t nlsn = m->lsn.n, nstreams = m->nstreams;
		if (poll(m->pfd, (nfds_t)n, timeout) < 0) {
			if (errno != EINTR)
				r = -errno;
			continue;
		}
		r = dispatch(m, nlsn, nstreams);
		reap(m);
	}
	run_end(m);
	return r == END ? 0 : r;
}

/* ---- the handle --------------------------------------------------------------------------- */

static bool config_ok(const netmux_config *c)
{
	return c->transport >= 0 && (!c->host || c->open_stream) && c->window <= WINDOW_MAX &&
	       c->max_streams <= STREAMS_MAX;
}

netmux *netmux_new(const netmux_config *c)
{
	if (!config_ok(c)) {
		if (c->transport >= 0)
			close(c->transport);
		errno = EINVAL;
		return NULL;
	}
	netmux *m = calloc(1, sizeof *m);
	int e = ENOMEM;
	if (!m)
		goto fail;
	m->c = *c;
	m->c.max_streams = c->max_streams ? c->max_streams : 256;
	m->c.window = c->window ? c->window : 256u << 10;
	/* one frame beyond OUT_HIGH, and one reset per stream at most on the guest: an honest
	 * pair never reaches it both at once, so neither stops reading the other */
	m->out_hard = OUT_HIGH + 2 * FRAME_SPACE + 16 * (size_t)m->c.max_streams;
	m->ctl = -1;
	m->next_id = c->host ? 0 : UINT32_MAX; /* first ids: 2 (the host's), 1 (the guest's) */
	m->wake[0] = m->wake[1] = -1;
	struct stat st;
	m->transport_sock = fstat(c->transport, &st) == 0 && S_ISSOCK(st.st_mode);
	if ((e = -fd_own(c->transport)) || pipe2(m->wake, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    (e = pthread_mutex_init(&m->lock, NULL))) {
		e = e ? e : errno;
		goto fail;
	}
	if ((e = cond_init(&m->hello))) {
		pthread_mutex_destroy(&m->lock);
		goto fail;
	}
	m->in.data = malloc(IN_CAP);
	if (!m->in.data) {
		pthread_cond_destroy(&m->hello);
		pthread_mutex_destroy(&m->lock);
		e = ENOMEM;
		goto fail;
	}
	m->in.cap = IN_CAP;
	return m;
fail:
	close(c->transport);
	if (m) {
		close_fd(&m->wake[0]);
		close_fd(&m->wake[1]);
		free(m);
	}
	errno = e;
	return NULL;
}

static void wake(netmux *m)
{
	ssize_t n = write(m->wake[1], "", 1); /* full: a wake is pending anyway */
	(void)n;
}

int netmux_add_listener(netmux *m, uint32_t id, int lsn)
{
	int r = m->c.host ? -EINVAL : fd_own(lsn);
	if (r == 0) {
		pthread_mutex_lock(&m->lock);
		r = m->finished ? -ESHUTDOWN : lsn_push(&m->pending, lsn, id);
		pthread_mutex_unlock(&m->lock);
	}
	if (r < 0) {
		close(lsn);
		return r;
	}
	wake(m);
	return 0;
}

int netmux_set_control(netmux *m, int ctl)
{
	int type = 0;
	socklen_t len = sizeof type;
	pthread_mutex_lock(&m->lock);
	bool busy = m->running || m->ctl >= 0;
	pthread_mutex_unlock(&m->lock);
	int r = m->c.host ? -EINVAL : busy ? -EBUSY : 0;
	if (r == 0 && getsockopt(ctl, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		r = -errno;
	if (r == 0 && type != SOCK_SEQPACKET && type != SOCK_DGRAM)
		r = -EINVAL; /* a byte stream has no message boundaries to keep ids apart */
	if (r == 0)
		r = fd_own(ctl);
	if (r < 0) {
		close(ctl);
		return r;
	}
	m->ctl = ctl;
	m->ctl_dgram = type == SOCK_DGRAM;
	return 0;
}

void netmux_stop(netmux *m)
{
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_mutex_unlock(&m->lock);
	wake(m);
}

int netmux_open(netmux *m, uint32_t target, int local, int timeout_ms)
{
	open_req *q = calloc(1, sizeof *q);
	int r = q ? fd_own(local) : -ENOMEM;
	if (r == 0 && (r = -cond_init(&q->cond)) == 0) {
		q->target = target;
		q->fd = local;
		q->detached = timeout_ms < 0;
		pthread_mutex_lock(&m->lock);
		if (m->finished) {
			r = -ESHUTDOWN;
		} else {
			q->next = m->opens;
			m->opens = q;
		}
		pthread_mutex_unlock(&m->lock);
		if (r < 0)
			pthread_cond_destroy(&q->cond);
	}
	if (r < 0) {
		free(q);
		close(local);
		return r;
	}
	wake(m);
	/* q is on m->opens: the loop answers it and, nobody waiting, frees it */
	if (timeout_ms < 0)
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
		return 0;
	struct timespec until = deadline_in(timeout_ms);
	pthread_mutex_lock(&m->lock);
	while (!q->done && cond_wait_until(&q->cond, &m->lock, &until))
		;
	bool done = q->done;
	r = done ? q->result : -ETIMEDOUT;
	q->abandoned = !done; /* the loop resets the stream and frees it */
	pthread_mutex_unlock(&m->lock);
	if (done) {
		pthread_cond_destroy(&q->cond);
		free(q);
	} else {
		wake(m);
	}
	return r;
}

int netmux_wait_peer(netmux *m, int timeout_ms)
{
	struct timespec until = deadline_in(timeout_ms);
	pthread_mutex_lock(&m->lock);
	while (!m->peer_hello && !m->finished && cond_wait_until(&m->hello, &m->lock, &until))
		;
	int r = m->peer_hello ? 0 : m->finished ? -ESHUTDOWN : -ETIMEDOUT;
	pthread_mutex_unlock(&m->lock);
	return r;
}

uint32_t netmux_streams(netmux *m)
{
	pthread_mutex_lock(&m->lock);
	uint32_t n = m->live;
	pthread_mutex_unlock(&m->lock);
	return n;
}

void netmux_free(netmux *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nstreams; i++) {
		if (!m->streams[i]->dead)
			close_abort(m->streams[i]->fd);
		buf_free(&m->streams[i]->q);
		free(m->streams[i]);
	}
	free(m->streams);
	for (open_req *q = m->opens, *next; q; q = next) { /* a run that never ran: no waiter */
		next = q->next;
		close(q->fd);
		pthread_cond_destroy(&q->cond);
		free(q);
	}
	lsn_close_all(&m->lsn);
	lsn_close_all(&m->pending);
	free(m->lsn.v);
	free(m->pending.v);
	close_fd(&m->ctl);
	close_fd(&m->c.transport);
	close_fd(&m->wake[0]);
	close_fd(&m->wake[1]);
	buf_free(&m->in);
	buf_free(&m->out);
	free(m->pfd);
	pthread_cond_destroy(&m->hello);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
