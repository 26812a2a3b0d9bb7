/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's relay from its loopback to a host unix socket (agent/relay.c). */
#ifndef CORDON_AGENT_RELAY_H
#define CORDON_AGENT_RELAY_H

#include <stdint.h>
#include <sys/types.h>

/* Listens on 127.0.0.1:*ret_port inside and starts the relay's process (*ret_pid), which
 * carries each connection to the unix socket at path. 0, or a negative errno. */
int agent_relay_start(const char *path, uint16_t *ret_port, pid_t *ret_pid);

#endif /* CORDON_AGENT_RELAY_H */
