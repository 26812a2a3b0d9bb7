/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A write to a pipe whose reader may be gone, that never raises SIGPIPE in
 * the host: the signal is blocked around the write, and the one the write
 * raised is consumed (one already pending before is left alone).
 *
 * Header-only, and libc only, so that the core and the plugins built in this
 * tree share it without linking each other: it is not part of the plugin
 * ABI, each copy is compiled in.
 */
#pragma once

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

static inline ssize_t write_nosigpipe(int fd, const void *data, size_t len)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	ssize_t n = write(fd, data, len);
	int e = errno;
	if (n < 0 && e == EPIPE && !was_pending) {
		const struct timespec zero = { 0, 0 };
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return n;
}
