/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cordon-agent as a microVM guest's init (agent/guest.c). */
#ifndef CORDON_AGENT_GUEST_H
#define CORDON_AGENT_GUEST_H

#include "protocol.h"

#include <stdbool.h>

/* The virtio-serial port's name (plugins/qemu's QEMU_AGENT_PORT). */
#define AGENT_GUEST_PORT "org.cordon.agent"
/* The network channel's port (plugins/qemu's QEMU_NET_PORT). */
#define AGENT_GUEST_NET_PORT "org.cordon.net"
/* Where the image builder puts the kernel modules the guest loads, NN-name.ko. */
#define AGENT_GUEST_MODULES "/lib/cordon/modules"

/* Whether we are the guest's /init: pid 1, run as /init with no arguments. */
bool guest_is_init(int argc, char **argv);
/* Mounts, modules, the port as stdin and stdout: the session follows (still root: the
 * identity request drops to the work's uid). */
int guest_init(void);

/* The network channel's port (open, non-blocking, close-on-exec), the caller's from now
 * on, or -1: the guest has none (a host without it), or it was taken. */
int guest_net_port_take(void);

/* The host's IDENTITY request (agent/protocol.h), as root: reseed, machine id, hostname,
 * clock. -errno and what failed otherwise (the session must then end: the guest is not fit
 * to serve). The agent stays root for one more request only when it is the workspace's
 * `unpack` (guest_drop follows it); any other drops first. */
int guest_identity(const char *payload, size_t len, const char **ret_what);
/* The drop to the work's uid for good, with NoNewPrivs and the pids limit. */
int guest_drop(void);
/* /work remounted read-only (a read-only workspace, once unpacked; as root). */
int guest_seal_work(void);

/* Waits until the port takes a write; false once the host side is gone. virtio_console
 * blocks a write for ever while the host is not connected (its poll says POLLHUP), so a
 * guest whose host died would never get to read the EOF that ends it. */
bool guest_port_writable(int fd);
/* In the work's child: the limits the host asked for on the command line. */
int guest_work_limits(void);

#endif
