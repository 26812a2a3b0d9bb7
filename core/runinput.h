/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A run's input as its driver takes it (runinput.c): the caller's bytes, a pipe fed from the
 * caller's descriptor, that descriptor read whole, or a pseudo-terminal. */
#pragma once

#include "cordon/cordon.h"
#include "cordon/plugin.h"

#include <glib.h>

/* The most a tier that cannot stream stdin is handed, read whole first. */
#define STDIN_WHOLE_MAX (16u << 20)
/* A terminal's size when the caller gives none. */
#define TTY_DEFAULT_ROWS 24
#define TTY_DEFAULT_COLS 80

/* Where a terminal's output goes: the run's sink (stream 1). */
typedef void (*run_input_out_fn)(void *ctx, uint32_t stream, const void *data, size_t len);

typedef struct run_input {
	/* for the driver's run_spec */
	const void *data;
	uint64_t len;
	int fd;     /* stdin_fd: the pipe's read end, or -1 */
	int tty_fd; /* the terminal's peer, or -1 */
	/* ours */
	int pipe_w, master, src, resize, stop;
	run_input_out_fn out;
	void *out_ctx;
	GThread *thread;
	GByteArray *whole;
} run_input;

#define RUN_INPUT_INIT \
	{ \
		.fd = -1, .tty_fd = -1, .pipe_w = -1, .master = -1, .src = -1, .resize = -1, \
		.stop = -1 \
	}

/* Sets up in for options o on a driver with driver_flags (CORDON_PLUGIN_DRIVER_*): a terminal
 * (CORDON_RUN_TTY; its output goes to out), a streamed or whole stdin, or o's bytes.
 * cancel_fd stops a whole read. On failure, run_input_close still releases in. */
int run_input_open(run_input *in, const cordon_run_options *o, uint32_t driver_flags, int cancel_fd,
		   run_input_out_fn out, void *out_ctx, cordon_error **reterr);
/* After the driver's run: what the terminal still holds is delivered, the copy stops
 * (input the work did not read is dropped), everything is closed. */
void run_input_close(run_input *in);
