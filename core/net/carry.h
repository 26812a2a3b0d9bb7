/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bytes carried unchanged between two connected, non-blocking sockets, a
 * half-close passed on: the one copy loop of the serve forwarder
 * (forward.c) and governed egress's proxy (proxy.c). The caller polls each
 * side for what net_carry_wants says and calls net_carry_pump when it is
 * ready; nothing here blocks or polls.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

#define NET_CARRY_BUF 65536 /* per direction */

/* Bytes read from one side, waiting to be written to the other. */
typedef struct net_carry_half {
	size_t len, off;
	bool eof;       /* the side it reads from sent FIN */
	bool shut;      /* its FIN passed on (SHUT_WR on the other side) */
	uint64_t total; /* bytes read from that side so far */
	char buf[NET_CARRY_BUF];
} net_carry_half;

/* fd[0] and fd[1]; h[i] holds what fd[i] sent, for fd[1 - i]. */
typedef struct net_carry {
	int fd[2];
	net_carry_half h[2];
} net_carry;

/* Moves what fd[i] sent to fd[1 - i] as far as both allow. false when the
 * connection is over (an error on either side). */
bool net_carry_pump(net_carry *c, int i) CORDON_INTERNAL;
/* What fd[i] is to be polled for: readable while its half has room and no
 * FIN came, writable while the other half has bytes for it. */
GIOCondition net_carry_wants(const net_carry *c, int i) CORDON_INTERNAL;
/* Both sides said all they had, and it was passed on. */
bool net_carry_done(const net_carry *c) CORDON_INTERNAL;
/* Queues n bytes (at most NET_CARRY_BUF, into an empty half) as if fd[i]
 * had sent them: what a proxy read itself before the copy starts. */
void net_carry_preload(net_carry *c, int i, const void *data, size_t n) CORDON_INTERNAL;
