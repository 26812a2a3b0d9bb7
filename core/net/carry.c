/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The copy loop between two sockets (carry.h). */
#include "config.h"

#include "net/carry.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

bool net_carry_pump(net_carry *c, int i)
{
	net_carry_half *h = &c->h[i];
	int to = c->fd[1 - i];
	bool drained = false; /* a short read took all there was */
	for (;;) {
		while (h->off < h->len) {
			ssize_t n = send(to, h->buf + h->off, h->len - h->off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0)
				return errno == EAGAIN || errno == EINTR;
			h->off += (size_t)n;
		}
		h->off = h->len = 0;
		if (h->eof)
			break;
		if (drained)
			return true; /* the poll says when more comes: no recv to hear EAGAIN */
		ssize_t n = recv(c->fd[i], h->buf, sizeof(h->buf), MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n == 0)
			h->eof = true;
		h->len = (size_t)n;
		h->total += (uint64_t)n;
		drained = n > 0 && (size_t)n < sizeof(h->buf);
	}
	if (!h->shut) {
		shutdown(to, SHUT_WR);
		h->shut = true;
	}
	return true;
}

GIOCondition net_carry_wants(const net_carry *c, int i)
{
	GIOCondition ev = 0;
	if (!c->h[i].eof && c->h[i].len == 0)
		ev |= G_IO_IN;
	if (c->h[1 - i].off < c->h[1 - i].len)
		ev |= G_IO_OUT;
	return ev;
}

bool net_carry_done(const net_carry *c) { return c->h[0].shut && c->h[1].shut; }

void net_carry_preload(net_carry *c, int i, const void *data, size_t n)
{
	net_carry_half *h = &c->h[i];
	if (n > sizeof(h->buf))
		n = sizeof(h->buf);
	memcpy(h->buf, data, n);
	h->off = 0;
	h->len = n;
}
