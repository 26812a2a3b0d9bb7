/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A run's streamed stdin: a pipe fed from the host's descriptor by a thread (stdinrelay.c). */
#pragma once

#include "cordon/cordon.h"

#include <glib.h>

/* The most a tier that cannot stream stdin is handed, read whole first. */
#define STDIN_WHOLE_MAX (16u << 20)

typedef struct stdin_relay {
	int src;  /* the host's descriptor, borrowed */
	int dst;  /* the pipe's write end, the thread's (closed at EOF) */
	int stop; /* eventfd: the run ended */
	GThread *thread;
} stdin_relay;

/* Starts copying src into a new pipe; *ret_read_end (the work's stdin) is the caller's to
 * close after the run. */
int stdin_relay_start(stdin_relay *r, int src, int *ret_read_end, cordon_error **reterr);
/* Stops the copy (what the work has not read is dropped) and joins the thread. */
void stdin_relay_stop(stdin_relay *r);
/* Reads src to EOF into out, at most STDIN_WHOLE_MAX bytes; cancel_fd (or -1) stops it. */
int stdin_read_whole(int src, int cancel_fd, GByteArray *out, cordon_error **reterr);
