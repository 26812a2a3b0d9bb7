/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host's end of a terminal run (run_spec.tty_fd, the peer of the core's pseudo-terminal)
 * as a driver that relays it takes it: every relaying family (the agent's client, the e2b
 * plugin) readies it here, once. libc only. */
#pragma once

#include "visibility.h"

#include <stdint.h>

/* Raw (the sandbox's terminal has the line discipline: echo, ^C, CR/LF are its),
 * non-blocking; its size now in *ret_rows, *ret_cols (24x80 when it has none).
 * Returns 0 or -errno. */
int tty_peer_prepare(int fd, uint16_t *ret_rows, uint16_t *ret_cols) CORDON_INTERNAL;
