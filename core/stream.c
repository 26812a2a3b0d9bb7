/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stream handle: cordon_sandbox_stream on a thread of the library's, its output
 * queued for a host that polls a descriptor (an event loop) instead of taking a
 * callback on a thread it does not own. */
#include "config.h"

#include "sandbox.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Past this much unread output the work's output blocks (through the callback, as it
 * would on a full pipe): a host that stops reading costs memory up to here, no more. */
#define STREAM_QUEUE_MAX (1u << 20)

typedef struct chunk {
	cordon_output_stream stream;
	size_t len, off;
	char data[];
} chunk;

struct cordon_stream {
	GMutex lock;
	GCond space;   /* the queue drained below STREAM_QUEUE_MAX, or a cancel */
	GQueue chunks; /* chunk*, under lock */
	size_t queued; /* unread bytes */
	bool done, cancelled;
	int ready_fd;     /* eventfd: non-zero while a chunk or the end waits */
	int cancel_event; /* eventfd the library's cancel writes to */
	int cancel_fd;    /* what the run watches: cancel_event, merged with the host's */
	GThread *thread;
	int rc;
	cordon_error *err;
	cordon_result *result;
	cordon_sandbox *sb;
	char **argv, **env, *workdir;
	void *stdin_copy;
	cordon_run_options opts;
};

static void signal_ready(cordon_stream *st)
{
	uint64_t one = 1;
	if (write(st->ready_fd, &one, sizeof(one)) < 0) {
		/* overflow only: it is readable already */
	}
}

/* Only under the lock, and only when nothing waits: the producer signals under the same
 * lock, so no wake-up is lost between the check and the reset. */
static void clear_ready(cordon_stream *st)
{
	uint64_t n;
	if (read(st->ready_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: not set */
	}
}

static int on_output(void *user, int stream, const void *data, size_t len)
{
	cordon_stream *st = user;
	chunk *c = g_malloc(sizeof(*c) + len);
	c->stream = (cordon_output_stream)stream;
	c->len = len;
	c->off = 0;
	memcpy(c->data, data, len);
	g_mutex_lock(&st->lock);
	while (st->queued >= STREAM_QUEUE_MAX && !st->cancelled)
		g_cond_wait(&st->space, &st->lock);
	bool cancelled = st->cancelled;
	if (!cancelled) {
		g_queue_push_tail(&st->chunks, c);
		st->queued += len;
		signal_ready(st);
	}
	g_mutex_unlock(&st->lock);
	if (cancelled)
		g_free(c);
	return cancelled ? 1 : 0;
}

static gpointer stream_thread(gpointer data)
{
	cordon_stream *st = data;
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_stream(st->sb, (const char *const *)st->argv, &st->opts, on_output,
				      st, &res, &err);
	g_mutex_lock(&st->lock);
	st->rc = r;
	st->err = err;
	st->result = res;
	st->done = true;
	signal_ready(st);
	g_mutex_unlock(&st->lock);
	return NULL;
}

static void stream_release(cordon_stream *st)
{
	if (st->cancel_fd >= 0 && st->cancel_fd != st->cancel_event)
		close(st->cancel_fd);
	if (st->cancel_event >= 0)
		close(st->cancel_event);
	if (st->ready_fd >= 0)
		close(st->ready_fd);
	g_queue_clear_full(&st->chunks, g_free);
	cordon_error_free(st->err);
	cordon_result_free(st->result);
	g_strfreev(st->argv);
	g_strfreev(st->env);
	g_free(st->workdir);
	g_free(st->stdin_copy);
	g_mutex_clear(&st->lock);
	g_cond_clear(&st->space);
	g_free(st);
}

/* The caller's options, copied: the run outlives the call. */
static void copy_options(cordon_stream *st, const cordon_run_options *o)
{
	st->opts = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	if (!o)
		return;
	memcpy(&st->opts, o, MIN((size_t)o->size, sizeof(st->opts)));
	st->opts.size = MIN(o->size, (uint32_t)sizeof(st->opts));
	st->env = o->env ? g_strdupv((char **)o->env) : NULL;
	st->workdir = g_strdup(o->workdir);
	st->stdin_copy = o->stdin_data ? g_memdup2(o->stdin_data, o->stdin_len) : NULL;
	st->opts.env = (const char *const *)st->env;
	st->opts.workdir = st->workdir;
	st->opts.stdin_data = st->stdin_copy;
}

int cordon_sandbox_stream_start(cordon_sandbox *sb, const char *const *argv,
				const cordon_run_options *opts, cordon_stream **ret,
				cordon_error **reterr)
{
	if (!sb || !argv || !argv[0] || !argv[0][0] || !ret)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "sandbox, a non-empty argv and ret are required");
	if (opts && opts->size < offsetof(cordon_run_options, stdin_fd))
		return error_set(
			reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
			"cordon_run_options.size is too small: use CORDON_RUN_OPTIONS_INIT");
	cordon_stream *st = g_new0(cordon_stream, 1);
	g_mutex_init(&st->lock);
	g_cond_init(&st->space);
	g_queue_init(&st->chunks);
	st->sb = sb;
	st->cancel_fd = -1;
	st->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	st->cancel_event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	copy_options(st, opts);
	int host_cancel = st->opts.cancel_fd;
	if (st->ready_fd >= 0 && st->cancel_event >= 0)
		st->cancel_fd = host_cancel >= 0
					? sandbox_cancel_merge(host_cancel, st->cancel_event)
					: st->cancel_event;
	if (st->ready_fd < 0 || st->cancel_event < 0 || st->cancel_fd < 0) {
		int e = st->cancel_fd < -1 ? -st->cancel_fd : errno;
		st->cancel_fd = -1;
		stream_release(st);
		return error_set(reterr, e, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "the stream's descriptors: %s", g_strerror(e));
	}
	st->opts.cancel_fd = st->cancel_fd;
	st->argv = g_strdupv((char **)argv);
	st->thread = g_thread_new("cordon-stream", stream_thread, st);
	*ret = st;
	return 0;
}

int cordon_stream_fd(const cordon_stream *st) { return st ? st->ready_fd : -1; }

int cordon_stream_read(cordon_stream *st, void *buf, size_t cap, cordon_output_stream *ret_stream,
		       cordon_error **reterr)
{
	if (!st || !buf || !cap)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "a stream and a buffer are required");
	g_mutex_lock(&st->lock);
	chunk *c = g_queue_peek_head(&st->chunks);
	int r;
	if (c) {
		size_t n = MIN(cap, MIN(c->len - c->off, (size_t)INT_MAX));
		memcpy(buf, c->data + c->off, n);
		if (ret_stream)
			*ret_stream = c->stream;
		c->off += n;
		if (c->off == c->len)
			g_free(g_queue_pop_head(&st->chunks));
		st->queued -= n;
		g_cond_signal(&st->space);
		r = (int)n;
	} else {
		r = st->done ? 0 : -EAGAIN;
	}
	if (g_queue_is_empty(&st->chunks) && !st->done)
		clear_ready(st);
	g_mutex_unlock(&st->lock);
	if (r == -EAGAIN)
		return error_set(reterr, EAGAIN, CORDON_ERROR_TRANSIENT, ERRC(still_running),
				 "no output waits yet: poll cordon_stream_fd");
	return r;
}

void cordon_stream_cancel(cordon_stream *st)
{
	if (!st)
		return;
	g_mutex_lock(&st->lock);
	st->cancelled = true;
	g_cond_broadcast(&st->space);
	g_mutex_unlock(&st->lock);
	uint64_t one = 1;
	if (write(st->cancel_event, &one, sizeof(one)) < 0) {
		/* overflow only: already cancelled */
	}
}

int cordon_stream_result(cordon_stream *st, cordon_result **ret_result, cordon_error **reterr)
{
	if (!st || !ret_result)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "a stream and ret_result are required");
	g_mutex_lock(&st->lock);
	int r = 0;
	if (!st->done)
		r = error_set(reterr, EAGAIN, CORDON_ERROR_TRANSIENT, ERRC(still_running),
			      "the run is still going");
	else if (st->rc < 0)
		r = error_set(reterr, st->err ? st->err->errnum : -st->rc,
			      st->err ? st->err->cls : CORDON_ERROR_TERMINAL,
			      st->err ? st->err->code : ERRC(error), "%s",
			      st->err ? st->err->message : "the run failed");
	else if (!st->result)
		r = error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
			      "the stream's result was taken already");
	else
		*ret_result = g_steal_pointer(&st->result);
	g_mutex_unlock(&st->lock);
	return r;
}

void cordon_stream_free(cordon_stream *st)
{
	if (!st)
		return;
	g_mutex_lock(&st->lock);
	bool done = st->done;
	g_mutex_unlock(&st->lock);
	if (!done)
		cordon_stream_cancel(st);
	g_thread_join(st->thread);
	stream_release(st);
}
