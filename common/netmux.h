/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Many stream connections over one byte stream: a microVM guest has no network device, so
 * its connections to host-side services (the egress proxy) travel over a second
 * virtio-serial port. The guest side accepts on listening sockets and opens one stream per
 * accepted connection; the host side connects each stream to a local endpoint
 * (open_stream) and pumps bytes. libc only: linked into libcommon and into cordon-agent.
 *
 * Frames, both ways: a 9-byte header (type u8, stream id u32, payload length u32, all
 * big-endian), then the payload, at most NETMUX_FRAME_MAX bytes. Types:
 *   'O' OPEN   a new stream: a new non-zero id, odd when the guest opens it, even when the
 *              host does; payload: what it is for (u32): the host's listener id (the guest's
 *              listeners' streams), or a target of the guest's (netmux_open)
 *   'H' HELLO  the guest's first frame, stream id 0, empty: its end runs (netmux_wait_peer)
 *   'A' ACCEPT the receiver of an OPEN took the stream (open_stream gave a socket); empty.
 *              The opener reads nothing of its local socket before it: a refused stream
 *              (RST) loses no byte
 *   'D' DATA   at least one byte, within the credit the receiver granted
 *   'F' FIN    no more DATA from the sender on this stream (half-close); empty
 *   'R' RST    abort the stream; empty
 *   'C' CREDIT payload u32: that many more bytes were written to the local socket
 * Each stream starts with `window` bytes of credit each way; the receiver's queue of a
 * stream is thus at most `window` bytes, and a stalled reader stalls only its own stream.
 * DATA, FIN, RST, CREDIT or ACCEPT for an unknown stream is dropped (it may just have been
 * reset). Streams the guest opens leave a sixteenth of max_streams to the host's (work that
 * holds every connection it can does not stop the host's runs and served connections).
 *
 * The host treats the guest as hostile: any other frame (an unknown type, a wrong payload
 * length, stream id 0, an OPEN of a live id or of the other side's parity, an ACCEPT of a
 * live stream the host did not open or twice, a second HELLO, DATA beyond the credit or after a FIN, credit
 * above the window) ends the whole mux with -EPROTO, every descriptor closed. The guest
 * checks the host's frames the same way. Memory stays within max_streams * window plus the
 * output bound, whatever the peer claims.
 *
 * Ownership: every descriptor passed in belongs to the mux from the call on, also when the
 * call fails (it is closed then). netmux_add_listener, netmux_open, netmux_stop and
 * netmux_streams may be called from any thread while netmux_run runs on another; the rest
 * from one thread.
 */
#pragma once

#include "visibility.h"

#include <stdbool.h>
#include <stdint.h>

#define NETMUX_HEADER 9
#define NETMUX_FRAME_MAX 65536u

typedef struct netmux netmux;

typedef struct netmux_config {
	/* A connected stream (socket or character device); made O_NONBLOCK and close-on-exec. */
	int transport;
	bool host; /* the host side: the peer is hostile */
	/* The peer opened a stream for listener (the host's listener id, or the guest's
	 * target): a connected stream socket (the mux owns it and makes it O_NONBLOCK,
	 * close-on-exec), or a negative errno (the stream is reset). Called on netmux_run's
	 * thread, which it blocks while it runs. Required on the host; NULL on the guest:
	 * every stream the host opens is reset. */
	int (*open_stream)(void *ctx, uint32_t listener);
	void *ctx;
	uint32_t max_streams; /* streams open at once; 0: 256 */
	uint32_t window;      /* credit per stream and direction, in bytes; 0: 256 KiB */
} netmux_config;

/* NULL with errno set: EINVAL (no transport; a host without open_stream; a window above
 * 1 GiB or max_streams above 1 Mi), ENOMEM. */
netmux *netmux_new(const netmux_config *c) CORDON_INTERNAL;
/* Guest side: each connection accepted on lsn (a listening socket) opens a stream on
 * listener id. Over max_streams a connection is accepted and closed at once (its client
 * sees the close rather than a hang). 0, -EINVAL (the host side), -ESHUTDOWN (run has
 * returned), -ENOMEM. */
int netmux_add_listener(netmux *m, uint32_t id, int lsn) CORDON_INTERNAL;
/* Guest side, before netmux_run: listeners may also arrive on ctl, a unix socket with
 * message boundaries (SOCK_SEQPACKET or SOCK_DGRAM): each message one listening socket
 * (SCM_RIGHTS) and its listener id, 4 bytes big-endian, as data. A message that is not
 * exactly that is dropped, its descriptors closed. EOF on ctl only means no more
 * listeners. 0, -EINVAL (the host side), -EBUSY (a control socket is set). */
int netmux_set_control(netmux *m, int ctl) CORDON_INTERNAL;
/* Pumps until the transport ends (EOF or an error: 0; EOF inside a frame: -EPROTO), the
 * peer breaks the protocol (-EPROTO), netmux_stop (0), or memory runs out (-ENOMEM). Every
 * descriptor the mux owns is closed by then. Once per mux (-EALREADY after). */
int netmux_run(netmux *m) CORDON_INTERNAL;
/* A stream of ours to the peer's target, carried from local (the mux's from the call on,
 * also when it fails), once the peer accepts it. Any thread, while netmux_run runs; waits
 * up to timeout_ms for the answer: 0 (accepted), -ECONNREFUSED (refused, or the mux ended
 * first), -EAGAIN (max_streams open), -ETIMEDOUT (no answer in time: the stream is reset
 * and local closed), -ESHUTDOWN (run has returned), -ENOMEM. timeout_ms < 0: no wait, 0
 * once posted; the stream goes on when accepted, local is closed when it is not. */
int netmux_open(netmux *m, uint32_t target, int local, int timeout_ms) CORDON_INTERNAL;
/* Host side: waits up to timeout_ms for the guest's HELLO: 0, -ETIMEDOUT (a guest without
 * a multiplexer never sends it), -ESHUTDOWN (run has returned). Any thread. */
int netmux_wait_peer(netmux *m, int timeout_ms) CORDON_INTERNAL;
/* Makes netmux_run return soon (or at once, if it has not started yet). Any thread. */
void netmux_stop(netmux *m) CORDON_INTERNAL;
/* After netmux_run returned, or when it never ran: closes what is left, frees m. NULL is
 * fine. */
void netmux_free(netmux *m) CORDON_INTERNAL;
/* Streams open now (for tests and audit). Any thread. */
uint32_t netmux_streams(netmux *m) CORDON_INTERNAL;
