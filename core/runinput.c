/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A run's input: a streamed stdin (cordon_run_options.stdin_fd) or a terminal
 * (CORDON_RUN_TTY). The host's descriptor is never handed to a driver or to the work: a
 * terminal or a file passed in would let hostile work reopen it through /proc/self/fd (a file
 * with the host's access, outside the sandbox's view) or push input into the user's terminal
 * (TIOCSTI). The work gets a fresh pipe, or the peer of a pseudo-terminal of our own, which
 * carries nothing but the bytes.
 *
 * One thread copies: the host's descriptor into the pipe (closed at EOF, so that the work
 * sees EOF) or into the terminal, the terminal's output to the run's sink as stream 1, and
 * resize records into the terminal's window size (the work gets SIGWINCH). Stopping it (the
 * run ended) is an eventfd it polls beside the rest. The host's descriptors keep their flags:
 * they are read only when poll says so, never made non-blocking (that would change the user's
 * shell's terminal too).
 *
 * For a driver that cannot stream (no CORDON_PLUGIN_DRIVER_STDIN_FD) the input is read whole
 * first, bounded, into stdin_data; a terminal on a driver that cannot give one is refused.
 */
#include "config.h"

#include "runinput.h"
#include "error.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#define RELAY_CHUNK (64u << 10)
/* How long the terminal's last output is collected after the run. */
#define TTY_DRAIN_MS 200

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- the copy ------------------------------------------------------------------------ */

typedef struct relay_buf {
	char *data;
	size_t len, off;
} relay_buf;

static bool pending(const relay_buf *b) { return b->off < b->len; }

/* Input into the pipe or the terminal; false when it is gone (the work closed its stdin). */
static bool relay_flush(int dst, relay_buf *b)
{
	ssize_t w = write_nosigpipe(dst, b->data + b->off, b->len - b->off);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (w <= 0)
		return false;
	b->off += (size_t)w;
	return true;
}

/* A resize record: {rows, cols}, two uint16 in host order. */
static void apply_resize(run_input *in)
{
	uint16_t rc[2];
	ssize_t n = read(in->resize, rc, sizeof(rc));
	if (n == (ssize_t)sizeof(rc)) {
		struct winsize ws = { .ws_row = rc[0], .ws_col = rc[1] };
		ioctl(in->master, TIOCSWINSZ, &ws);
	} else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		in->resize = -1; /* the caller's; not ours to close */
	}
}

/* The terminal's output to the sink; false at its end (no peer left open). */
static bool tty_output(run_input *in, char *buf)
{
	ssize_t n = read(in->master, buf, RELAY_CHUNK);
	if (n > 0)
		in->out(in->out_ctx, 1, buf, (size_t)n);
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

static void tty_drain(run_input *in, char *buf)
{
	gint64 until = g_get_monotonic_time() + TTY_DRAIN_MS * G_TIME_SPAN_MILLISECOND;
	for (;;) {
		struct pollfd p = { in->master, POLLIN, 0 };
		int left = (int)((until - g_get_monotonic_time()) / G_TIME_SPAN_MILLISECOND);
		if (left <= 0 || poll(&p, 1, left) <= 0 || !tty_output(in, buf))
			return;
	}
}

static gpointer relay_thread(gpointer data)
{
	run_input *in = data;
	char *out = g_malloc(RELAY_CHUNK);
	relay_buf b = { .data = g_malloc(RELAY_CHUNK) };
	int dst = in->master >= 0 ? in->master : in->pipe_w;
	for (;;) {
		struct pollfd p[4] = {
			{ dst,
			  (short)((pending(&b) ? POLLOUT : 0) | (in->master >= 0 ? POLLIN : 0)),
			  0 },
			{ pending(&b) ? -1 : in->src, POLLIN, 0 },
			{ in->resize, POLLIN, 0 },
			{ in->stop, POLLIN, 0 },
		};
		if (poll(p, 4, -1) < 0 && errno != EINTR)
			break;
		if (p[3].revents)
			break;
		if (in->master >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !tty_output(in, out))
			break;
		bool gone = in->master < 0 && (p[0].revents & POLLERR);
		if (gone || ((p[0].revents & POLLOUT) && pending(&b) && !relay_flush(dst, &b))) {
			in->src = -1; /* the work closed its stdin: it does not want the rest */
			b.len = b.off = 0;
		}
		if (p[1].revents) {
			ssize_t n = read(in->src, b.data, RELAY_CHUNK);
			b.off = 0;
			b.len = n > 0 ? (size_t)n : 0;
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				in->src = -1; /* EOF (or an error past which nothing can be read) */
		}
		if (p[2].revents)
			apply_resize(in);
		/* EOF for the work; a terminal stays open, its work ends by itself */
		if (in->src < 0 && !pending(&b) && in->pipe_w >= 0)
			close_fd(&in->pipe_w);
		if (in->src < 0 && !pending(&b) && in->master < 0)
			break;
	}
	if (in->master >= 0)
		tty_drain(in, out);
	g_free(out);
	g_free(b.data);
	return NULL;
}

static int start_thread(run_input *in, cordon_error **reterr)
{
	in->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (in->stop < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "stdin relay: %s", g_strerror(errno));
	in->thread = g_thread_new("cordon-input", relay_thread, in);
	return 0;
}

/* ---- the three kinds ------------------------------------------------------------------ */

static int open_pipe(run_input *in, cordon_error **reterr)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "stdin pipe: %s", g_strerror(errno));
	in->fd = p[0];
	in->pipe_w = p[1];
	/* Only our end: the work gets an ordinary blocking stdin. */
	if (fcntl(p[1], F_SETFL, O_NONBLOCK) < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "stdin pipe: %s", g_strerror(errno));
	return start_thread(in, reterr);
}

/* Our own pseudo-terminal: the master ours (non-blocking), the peer the work's. */
static int open_tty(run_input *in, const cordon_run_options *o, cordon_error **reterr)
{
	in->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (in->master < 0 || grantpt(in->master) < 0 || unlockpt(in->master) < 0 ||
	    (in->tty_fd = ioctl(in->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "cannot make a pseudo-terminal: %s", g_strerror(errno));
	struct winsize ws = { .ws_row = o->tty_rows ? o->tty_rows : TTY_DEFAULT_ROWS,
			      .ws_col = o->tty_cols ? o->tty_cols : TTY_DEFAULT_COLS };
	if (ioctl(in->master, TIOCSWINSZ, &ws) < 0 || fcntl(in->master, F_SETFL, O_NONBLOCK) < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "pseudo-terminal: %s", g_strerror(errno));
	in->resize = o->tty_resize_fd;
	return start_thread(in, reterr);
}

static int read_whole(run_input *in, int src, int cancel_fd, cordon_error **reterr)
{
	in->whole = g_byte_array_new();
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
		if (in->whole->len + (size_t)got > STDIN_WHOLE_MAX) {
			r = error_set(reterr, EFBIG, CORDON_ERROR_FORBIDDEN, ERRC(limit_exceeded),
				      "the work's stdin exceeds %u bytes, the most a tier that "
				      "cannot stream it takes",
				      STDIN_WHOLE_MAX);
			break;
		}
		g_byte_array_append(in->whole, (const guint8 *)buf, (guint)got);
	}
	g_free(buf);
	in->data = in->whole->data;
	in->len = in->whole->len;
	return r;
}

int run_input_open(run_input *in, const cordon_run_options *o, uint32_t driver_flags, int cancel_fd,
		   run_input_out_fn out, void *out_ctx, cordon_error **reterr)
{
	in->data = o->stdin_data;
	in->len = o->stdin_data ? o->stdin_len : 0;
	in->src = o->stdin_fd;
	in->out = out;
	in->out_ctx = out_ctx;
	if (o->flags & CORDON_RUN_TTY) {
		if (!(driver_flags & CORDON_PLUGIN_DRIVER_TTY))
			return error_set(reterr, ENOTTY, CORDON_ERROR_TERMINAL, ERRC(unsupported),
					 "this tier cannot give the work a terminal");
		return open_tty(in, o, reterr);
	}
	if (o->stdin_fd < 0)
		return 0;
	if (driver_flags & CORDON_PLUGIN_DRIVER_STDIN_FD)
		return open_pipe(in, reterr);
	return read_whole(in, o->stdin_fd, cancel_fd, reterr);
}

void run_input_close(run_input *in)
{
	/* No peer of ours left: the terminal's output ends with the work's. */
	close_fd(&in->tty_fd);
	if (in->thread) {
		uint64_t one = 1;
		if (write(in->stop, &one, sizeof(one)) < 0) {
			/* an eventfd write fails only at overflow: a stop is pending already */
		}
		g_thread_join(in->thread);
		in->thread = NULL;
	}
	close_fd(&in->stop);
	close_fd(&in->pipe_w);
	close_fd(&in->fd);
	close_fd(&in->master);
	if (in->whole)
		g_byte_array_unref(in->whole);
	in->whole = NULL;
}
