/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A served port's forwarder (docs/network.md): a listener on the host's
 * 127.0.0.1, on a port the kernel picks, whose every connection cordon
 * carries to a TCP port on the loopback of a sandbox's own network
 * namespace. The sandbox side is a socket made inside that namespace (the
 * caller's socket_fn: the kernel tier's init creates it and passes it out
 * with SCM_RIGHTS) and connected by the host, so the host never joins the
 * namespace and the work never gets a descriptor of the host's.
 *
 * Runs on a thread of its own around GLib's main loop (one GMainContext per
 * forwarder): nothing of it runs on the caller's threads but start and stop.
 * The bytes are moved by the kernel (sockmap.h) where this process may make
 * a sockmap (root) and the listener is TCP, else by a copy loop there.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

typedef struct net_forward net_forward;

/* A new TCP socket of family (AF_INET or AF_INET6; SOCK_STREAM,
 * close-on-exec, not connected) in the sandbox's network namespace, or a
 * negative errno. Called on the forwarder's thread, once per connection and
 * per readiness probe. */
typedef int (*net_forward_socket_fn)(void *user, int family);
/* Called once, on the forwarder's thread, when the port inside first
 * accepts a connection; address: the host listener, "127.0.0.1:PORT" or
 * "unix:/path". */
typedef void (*net_forward_ready_fn)(void *user, const char *address);

/* Most connections carried at once; more are closed as they come. */
#define NET_FORWARD_MAX_CONNS 256

/* Listens and starts probing port inside (every 10 ms until it accepts), on
 * 127.0.0.1 and then on ::1: the first that accepts is where every
 * connection goes (a server listening on ::1 only is reached there).
 * Returns 0, or a negative errno with the reason in why. */
/* unix_socket: the host listener is a unix socket, "sock" in a directory of
 * mode 0700 made in $XDG_RUNTIME_DIR or the temporary directory (both
 * removed at stop), instead of 127.0.0.1:PORT. */
int net_forward_start(uint16_t port, bool unix_socket, net_forward_socket_fn socket_fn,
		      net_forward_ready_fn ready_fn, void *user, net_forward **ret, char *why,
		      size_t whylen) CORDON_INTERNAL;
/* Whether the kernel carries f's connections (a BPF sockmap, root, a TCP
 * listener: docs/network.md), else the relay, a copy loop on f's thread. */
bool net_forward_kernel_path(const net_forward *f) CORDON_INTERNAL;
/* The connection pairs the kernel carries now (0 on the relay). */
unsigned net_forward_kernel_pairs(const net_forward *f) CORDON_INTERNAL;
/* The host listener's address ("127.0.0.1:PORT" or "unix:/path"; borrowed from f). */
const char *net_forward_address(const net_forward *f) CORDON_INTERNAL;
/* Closes the listener and every connection, ends the thread, frees f.
 * NULL is fine. Nothing of f is left when it returns. */
void net_forward_stop(net_forward *f) CORDON_INTERNAL;
