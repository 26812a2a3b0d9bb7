/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A guest's network channel, host side (net.c). */
#ifndef CORDON_QEMU_NET_H
#define CORDON_QEMU_NET_H

#include "qemu.h"

#include <stdint.h>

typedef struct qemu_vm qemu_vm;
typedef struct qemu_net qemu_net;

/* A sandbox's: its listeners' directory is named after owner (this host's token). */
qemu_net *qemu_net_new(const char *owner) CORDON_INTERNAL;
/* Whether the guest's end of the channel runs (started, and its HELLO seen: asked once,
 * within 3 s): a guest image built before the channel has none. */
bool qemu_net_usable(qemu_net *net, qemu_vm *vm) CORDON_INTERNAL;
/* A new unix listener whose connections the guest's streams on *ret_id come from (the mux
 * started on vm's channel first, once): the listening socket (close-on-exec), or what
 * qemu_refuse returned. */
int qemu_net_listener(qemu_net *net, qemu_vm *vm, uint32_t *ret_id, agent_error *r) CORDON_INTERNAL;
/* A stream of ours on the channel to the guest's target (agent/protocol.h: a port of its
 * loopback, or AGENT_CHANNEL_SESSION), carried from local (taken, even on failure) once the
 * guest accepted it, within timeout_ms (< 0: not waited for; local is closed if refused).
 * 0, or what qemu_refuse returned. */
int qemu_net_open(qemu_net *net, qemu_vm *vm, uint32_t target, int local, int timeout_ms,
		  agent_error *r) CORDON_INTERNAL;
/* serve: a listener on the host's 127.0.0.1:0 (unix_socket: a unix socket in the listeners'
 * directory, mode 0700) whose connections are streams to the guest's port; ready(ctx,
 * "127.0.0.1:P" or "unix:/path") once the port accepts (from the forwarder's thread). NULL
 * with r when it cannot start. */
typedef struct qemu_forward qemu_forward;
qemu_forward *qemu_forward_start(qemu_net *net, qemu_vm *vm, uint16_t port, bool unix_socket,
				 void (*ready)(void *ctx, const char *address), void *ctx,
				 agent_error *r) CORDON_INTERNAL;
/* The listener closed and its socket's name removed (connections carried go on), the thread
 * joined. */
void qemu_forward_stop(qemu_forward *f) CORDON_INTERNAL;
/* Stops the mux (every stream closed), removes the listeners' sockets and directory. */
void qemu_net_free(qemu_net *net) CORDON_INTERNAL;
/* Removes the listener directories of hosts that died; the count. */
int qemu_net_gc(void) CORDON_INTERNAL;

#endif
