/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel-carried connection pairs (docs/network.md, "Sockmap"): two
 * connected TCP sockets of cordon's own whose bytes the kernel moves to each
 * other's send side (a BPF sockmap and a stream-verdict program), so a
 * relay's round trip pays no wake-up of a thread of ours and no copy in and
 * out of user space. Needs CAP_BPF and CAP_NET_ADMIN: without them (or
 * without the kernel's support) net_sockmap_new fails and the caller keeps
 * its user-space copy loop.
 *
 * What stays the caller's: polling each socket for its peer's FIN and for
 * errors, and passing a FIN on (shutdown(SHUT_WR)) once net_sockmap_flushed
 * says every byte before it reached the other side. Closing a socket takes
 * it out of the maps (the kernel does it at close).
 *
 * The maps and the program are descriptors of this process only
 * (close-on-exec, never pinned), holding only the sockets given here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

typedef struct net_sockmap net_sockmap;

/* Maps for up to max_pairs pairs and the program attached to them. 0, or a
 * negative errno: -EPERM without the capabilities, -EINVAL or -ENOSYS
 * without the kernel's support; why says which step failed. */
int net_sockmap_new(unsigned max_pairs, net_sockmap **ret, char *why,
		    size_t whylen) CORDON_INTERNAL;
/* Closes the program and the maps (pairs still joined stop being carried:
 * the caller closes them first). NULL is fine. */
void net_sockmap_free(net_sockmap *m) CORDON_INTERNAL;
/* From now on what a receives the kernel sends on b, and what b receives on
 * a; bytes already queued on either are carried too. a and b: connected TCP
 * sockets, not joined before. 0, -ECONNABORTED (joined but unusable: close
 * both), or another negative errno (nothing joined: the sockets are as they
 * were, for a copy loop of the caller's). */
int net_sockmap_join(net_sockmap *m, int a, int b) CORDON_INTERNAL;
/* After from's peer sent its FIN: 1 when every byte from received is on to's
 * send side (the FIN can be passed on), 0 while some is still on the way, or
 * a negative errno. */
int net_sockmap_flushed(int from, int to) CORDON_INTERNAL;
/* The entries both maps hold now (four per pair joined and not closed). */
unsigned net_sockmap_count(const net_sockmap *m) CORDON_INTERNAL;
