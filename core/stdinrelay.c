/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A run's streamed stdin (cordon_run_options.stdin_fd): the host's descriptor is never handed
 * to a driver or to the work. A terminal or a file passed in would let hostile work reopen it
 * through /proc/self/fd (a file with the host's access, outside the sandbox's view) or push
 * input into the user's terminal (TIOCSTI); a fresh pipe carries nothing but the bytes.
 *
 * A thread copies the host's descriptor into the pipe as the bytes come (a slow producer's
 * lines reach the work when they are written) and closes the pipe at EOF, so that the work
 * sees EOF; stopping it (the run ended) is an eventfd it polls beside both ends. The host's
 * descriptor keeps its flags: it is read only when poll says so, never made non-blocking
 * (that would change the user's shell's terminal too).
 *
 * For a driver that cannot stream (no CORDON_PLUGIN_DRIVER_STDIN_FD) the input is read whole
 * first, bounded, into stdin_data.
 */
#include "config.h"

#include "stdinrelay.h"
#include "error.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define RELAY_CHUNK (64u << 10)

/* Waits for fd to be ready for events, or for the stop; false on a stop. */
static bool relay_wait(int fd, short events, int stop)
{
	for (;;) {
		struct pollfd p[2] = { { fd, events, 0 }, { stop, POLLIN, 0 } };
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			return false;
		if (p[0].revents)
			return true;
	}
}

/* Writes all of buf into the pipe; false when the work closed its stdin or on a stop. */
static bool relay_write(stdin_relay *r, const char *buf, size_t len)
{
	while (len) {
		if (!relay_wait(r->dst, POLLOUT, r->stop))
			return false;
		ssize_t w = write_nosigpipe(r->dst, buf, len);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			return false; /* EPIPE: the work does not want the rest */
		buf += w;
		len -= (size_t)w;
	}
	return true;
}

static gpointer relay_thread(gpointer data)
{
	stdin_relay *r = data;
	char *buf = g_malloc(RELAY_CHUNK);
	for (;;) {
		if (!relay_wait(r->src, POLLIN, r->stop))
			break;
		ssize_t n = read(r->src, buf, RELAY_CHUNK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0 || !relay_write(r, buf, (size_t)n))
			break; /* EOF (or an error past which nothing can be read) */
	}
	g_free(buf);
	/* EOF for the work; the thread owns the write end from its start. */
	close(r->dst);
	r->dst = -1;
	return NULL;
}

int stdin_relay_start(stdin_relay *r, int src, int *ret_read_end, cordon_error **reterr)
{
	int p[2];
	*r = (stdin_relay){ .src = src, .dst = -1, .stop = -1 };
	if (pipe2(p, O_CLOEXEC) < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "stdin pipe: %s", g_strerror(errno));
	r->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* Only our end: the work gets an ordinary blocking stdin. */
	if (r->stop < 0 || fcntl(p[1], F_SETFL, O_NONBLOCK) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		if (r->stop >= 0)
			close(r->stop);
		r->stop = -1;
		return error_set(reterr, e, CORDON_ERROR_TERMINAL, ERRC(resource), "stdin relay: %s",
				 g_strerror(e));
	}
	r->dst = p[1];
	r->thread = g_thread_new("cordon-stdin", relay_thread, r);
	*ret_read_end = p[0];
	return 0;
}

void stdin_relay_stop(stdin_relay *r)
{
	if (!r->thread)
		return;
	uint64_t one = 1;
	if (write(r->stop, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only at overflow: a stop is pending already */
	}
	g_thread_join(r->thread);
	r->thread = NULL;
	close(r->stop);
	r->stop = -1;
}

int stdin_read_whole(int src, int cancel_fd, GByteArray *out, cordon_error **reterr)
{
	char *buf = g_malloc(RELAY_CHUNK);
	int r = 0;
	for (;;) {
		struct pollfd p[2] = { { src, POLLIN, 0 }, { cancel_fd, POLLIN, 0 } };
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && p[1].revents) {
			r = error_set(reterr, ECANCELED, CORDON_ERROR_CANCELLED, ERRC(cancelled),
				      "cancelled while reading the work's stdin");
			break;
		}
		ssize_t got = n > 0 ? read(src, buf, RELAY_CHUNK) : -1;
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0) {
			r = error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(stdin_failed),
				      "reading the work's stdin: %s", g_strerror(errno));
			break;
		}
		if (got == 0)
			break;
		if (out->len + (size_t)got > STDIN_WHOLE_MAX) {
			r = error_set(reterr, EFBIG, CORDON_ERROR_FORBIDDEN, ERRC(limit_exceeded),
				      "the work's stdin exceeds %u bytes, the most a tier that "
				      "cannot stream it takes", STDIN_WHOLE_MAX);
			break;
		}
		g_byte_array_append(out, (const guint8 *)buf, (guint)got);
	}
	g_free(buf);
	return r;
}
