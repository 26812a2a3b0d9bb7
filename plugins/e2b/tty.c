/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A terminal run's host side (run_spec.tty_fd, the peer of the core's pseudo-terminal, made
 * raw by common/ttypeer.c): envd's pty (e2b-protocol.md §4.2, StartRequest.pty) holds the
 * line discipline, so the bytes typed here go to it as they are (SendInput's input.pty), and
 * its output ("pty" data events) is written back as it is. A peer gets no SIGWINCH: its size
 * is looked at every TTY_SIZE_POLL_MS and a change is sent as Update's pty.size, which gives
 * the work its SIGWINCH on the remote side.
 *
 * The relay is a thread of its own beside the Start stream (a blocking transfer on the run's
 * thread); each input or resize is one unary call of its own. It starts at the start event
 * (SendInput needs the pid), so what is typed before it waits in the terminal, bounded by
 * the terminal's own buffer, and is sent then: nothing typed ahead is lost.
 */
#include "config.h"

#include "e2b.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define TTY_SIZE_POLL_MS 200
#define TTY_CHUNK 16384 /* one SendInput at most */
#define TTY_WRITE_WAIT_MS 1000

static json_object *selector(int64_t pid)
{
	json_object *sel = json_object_new_object(), *req = json_object_new_object();
	json_object_object_add(sel, "pid", json_object_new_int64(pid));
	json_object_object_add(req, "process", sel);
	return req;
}

/* A failed call is not the run's failure: the process may just have ended, and the run's own
 * stream says how. */
static void call(const e2b_tty *t, const char *procedure, json_object *req)
{
	json_object *ans = NULL;
	e2b_unary(t->sbx, procedure, req, &ans, NULL);
	json_object_put(ans);
	json_object_put(req);
}

static void send_typed(const e2b_tty *t, const char *data, size_t len)
{
	json_object *req = selector(t->pid);
	json_object_object_add(req, "input", e2b_input_object("pty", data, len));
	call(t, "/process.Process/SendInput", req);
}

static void check_size(e2b_tty *t)
{
	struct winsize ws;
	if (ioctl(t->fd, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col ||
	    (ws.ws_row == t->rows && ws.ws_col == t->cols))
		return;
	t->rows = ws.ws_row;
	t->cols = ws.ws_col;
	json_object *req = selector(t->pid);
	json_object_object_add(req, "pty", e2b_pty_object(t->rows, t->cols));
	call(t, "/process.Process/Update", req);
}

static void *relay(void *arg)
{
	e2b_tty *t = arg;
	char *buf = e2b_host->alloc(TTY_CHUNK);
	bool open = true;
	for (;;) {
		struct pollfd p[2] = { { t->stop[0], POLLIN, 0 },
				       { open ? t->fd : -1, POLLIN, 0 } };
		int n = poll(p, 2, TTY_SIZE_POLL_MS);
		if ((n < 0 && errno != EINTR) || p[0].revents)
			break;
		check_size(t);
		if (!(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		ssize_t r = read(t->fd, buf, TTY_CHUNK);
		if (r > 0)
			send_typed(t, buf, (size_t)r);
		else if (r == 0 || (errno != EAGAIN && errno != EINTR))
			open = false; /* the host's terminal is gone: resizes still count */
	}
	e2b_host->free(buf);
	return NULL;
}

json_object *e2b_pty_object(uint16_t rows, uint16_t cols)
{
	json_object *size = json_object_new_object(), *pty = json_object_new_object();
	json_object_object_add(size, "cols", json_object_new_int(cols));
	json_object_object_add(size, "rows", json_object_new_int(rows));
	json_object_object_add(pty, "size", size);
	return pty;
}

int e2b_tty_begin(e2b_tty *t, const e2b_sandbox *s, int64_t pid)
{
	t->sbx = s;
	t->pid = pid;
	if (pipe2(t->stop, O_CLOEXEC) < 0)
		return -errno;
	int r = pthread_create(&t->thread, NULL, relay, t);
	if (r) {
		close(t->stop[0]);
		close(t->stop[1]);
		return -r;
	}
	t->running = true;
	return 0;
}

void e2b_tty_end(e2b_tty *t)
{
	if (!t->running)
		return;
	t->running = false;
	close(t->stop[1]);
	pthread_join(t->thread, NULL);
	close(t->stop[0]);
}

void e2b_tty_write(const e2b_tty *t, const unsigned char *data, size_t len, int cancel_fd)
{
	while (len) {
		ssize_t w = write(t->fd, data, len);
		if (w > 0) {
			data += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 || errno != EAGAIN)
			return; /* the host's terminal is gone */
		/* the core drains the terminal while the run lasts; a cancel stops the wait */
		struct pollfd p[2] = { { t->fd, POLLOUT, 0 }, { cancel_fd, POLLIN, 0 } };
		if (poll(p, 2, TTY_WRITE_WAIT_MS) < 0 && errno != EINTR)
			return;
		if (p[1].revents)
			return;
	}
}
