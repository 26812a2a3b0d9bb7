/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's relay from its loopback to a host unix socket (agent/relay.c). */
#ifndef CORDON_AGENT_RELAY_H
#define CORDON_AGENT_RELAY_H

#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"

/* Listens on 127.0.0.1:*ret_port inside and starts the relay's process (*ret_pid), which
 * carries each connection to the unix socket at path. 0, or a negative errno. */
int agent_relay_start(const char *path, uint16_t *ret_port, pid_t *ret_pid);

/* Serves one more session of the agent's protocol on fd, in a child of the multiplexer's;
 * never returns. */
typedef void (*agent_session_fn)(int fd);

/* A microVM guest's network channel (the port's descriptor, taken): its multiplexer's
 * process (*ret_pid), started once, which first calls drop (the work's uid) and ends if
 * that fails. The streams the host opens on it reach a port of the guest's loopback, or a
 * session (session). 0, or a negative errno (-ENODEV: no channel). */
int agent_channel_start(int channel, int (*drop)(void), agent_session_fn session, pid_t *ret_pid);
/* `relay channel:N` (target): listens on 127.0.0.1:*ret_port and hands the listener to the
 * multiplexer, whose streams of listener N carry its connections. 0, or a negative errno
 * (-ENODEV: no multiplexer). */
int agent_relay_channel(const char *target, uint16_t *ret_port);

#endif /* CORDON_AGENT_RELAY_H */
