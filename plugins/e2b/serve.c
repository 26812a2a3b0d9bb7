/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * serve on the remote tier (docs/tiers/e2b.md, "Ports"): the process is
 * started to serve its port (Cordon-Serve-Port, run.c), and once its start
 * event says the port accepts, a listener on 127.0.0.1 (a port the kernel
 * picks) is the address the core is told. Each connection to it is carried
 * to the sandbox's port through a tunnel of its own (e2b_tunnel_open), bytes
 * copied both ways and never interpreted. Everything ends with the run:
 * the listener, the acceptor and every connection.
 */
#include "config.h"

#include "e2b.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNS_MAX 32
#define BUF 65536

/* One direction's bytes, read from one side and waiting for the other. */
typedef struct half {
	char buf[BUF];
	size_t len, off;
	bool eof;
} half;

typedef struct conn {
	e2b_serve *sv;
	int fd; /* the host client's */
} conn;

static void conn_done(e2b_serve *sv)
{
	pthread_mutex_lock(&sv->lock);
	sv->conns--;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->lock);
}

/* Reads what the tunnel has (TLS may hold bytes its socket no longer shows). */
static bool from_tunnel(CURL *h, half *d)
{
	size_t n = 0;
	CURLcode rc = curl_easy_recv(h, d->buf, BUF, &n);
	if (rc == CURLE_AGAIN)
		return true;
	if (rc != CURLE_OK)
		return false;
	d->len = n;
	d->off = 0;
	d->eof = n == 0;
	return true;
}

static bool to_tunnel(CURL *h, half *u)
{
	size_t n = 0;
	CURLcode rc = curl_easy_send(h, u->buf + u->off, u->len - u->off, &n);
	if (rc == CURLE_AGAIN)
		return true;
	u->off += n;
	return rc == CURLE_OK;
}

/* Copies both ways until both sides have ended, either fails, or the run ends. */
static void relay(int fd, CURL *h, int stop, half *up, half *down)
{
	curl_socket_t sock = CURL_SOCKET_BAD;
	curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &sock);
	bool down_shut = false, up_shut = false;
	for (;;) {
		if (down->off == down->len && !down->eof && !from_tunnel(h, down))
			return;
		if (down->off == down->len && down->eof && !down_shut) {
			shutdown(fd, SHUT_WR);
			down_shut = true;
		}
		if (up->off == up->len && up->eof && !up_shut) {
			shutdown(sock, SHUT_WR);
			up_shut = true;
		}
		if (down_shut && up_shut)
			return;
		struct pollfd p[3] = { { .fd = stop, .events = POLLIN },
				       { .fd = fd },
				       { .fd = sock } };
		if (up->off == up->len && !up->eof)
			p[1].events |= POLLIN;
		if (down->off < down->len)
			p[1].events |= POLLOUT;
		if (down->off == down->len && !down->eof)
			p[2].events |= POLLIN;
		if (up->off < up->len)
			p[2].events |= POLLOUT;
		/* A side nothing is wanted of is left out (its hang-up would spin the loop). */
		if (!p[1].events)
			p[1].fd = -1;
		if (!p[2].events)
			p[2].fd = -1;
		if (poll(p, 3, -1) < 0 && errno != EINTR)
			return;
		if (p[0].revents)
			return;
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR) && up->off == up->len && !up->eof) {
			ssize_t n = recv(fd, up->buf, BUF, 0);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return;
			up->len = n > 0 ? (size_t)n : 0;
			up->off = 0;
			up->eof = n == 0;
		}
		if (p[1].revents & POLLOUT && down->off < down->len) {
			ssize_t n = send(fd, down->buf + down->off, down->len - down->off,
					 MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return;
			down->off += n > 0 ? (size_t)n : 0;
		}
		if (up->off < up->len && !to_tunnel(h, up))
			return;
	}
}

static void *conn_thread(void *arg)
{
	conn *c = arg;
	e2b_serve *sv = c->sv;
	half *up = e2b_host->alloc(sizeof(half)), *down = e2b_host->alloc(sizeof(half));
	memset(up, 0, sizeof(*up));
	memset(down, 0, sizeof(*down));
	char why[256];
	CURL *h = e2b_tunnel_open(sv->sbx, sv->port, down->buf, BUF, &down->len, why, sizeof(why));
	if (h) {
		relay(c->fd, h, sv->stop[0], up, down);
		curl_easy_cleanup(h);
	} else {
		e2b_host->log(CORDON_PLUGIN_LOG_WARNING, "e2b", "port %u: %s", (unsigned)sv->port,
			      why);
	}
	close(c->fd);
	e2b_host->free(up);
	e2b_host->free(down);
	e2b_host->free(c);
	conn_done(sv);
	return NULL;
}

static void take(e2b_serve *sv, int fd)
{
	pthread_mutex_lock(&sv->lock);
	bool full = sv->conns >= CONNS_MAX;
	if (!full)
		sv->conns++;
	pthread_mutex_unlock(&sv->lock);
	if (full) {
		close(fd); /* a bound, as every tier's forwarder has */
		return;
	}
	conn *c = e2b_host->alloc(sizeof(conn));
	c->sv = sv;
	c->fd = fd;
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, conn_thread, c) != 0) {
		close(fd);
		e2b_host->free(c);
		conn_done(sv);
	}
	pthread_attr_destroy(&a);
}

static void *acceptor(void *arg)
{
	e2b_serve *sv = arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = sv->stop[0], .events = POLLIN },
				       { .fd = sv->listen_fd, .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (!p[1].revents)
			continue;
		int fd = accept4(sv->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			take(sv, fd);
	}
	return NULL;
}

int e2b_serve_begin(e2b_serve *sv, const e2b_sandbox *s, uint16_t port, char *addr, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	memset(sv, 0, sizeof(*sv));
	sv->sbx = s;
	sv->port = port;
	sv->stop[0] = sv->stop[1] = -1;
	sv->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sv->listen_fd < 0 || bind(sv->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(sv->listen_fd, 64) < 0 ||
	    getsockname(sv->listen_fd, (struct sockaddr *)&sa, &sl) < 0 ||
	    pipe2(sv->stop, O_CLOEXEC) < 0) {
		int e = errno;
		if (sv->listen_fd >= 0)
			close(sv->listen_fd);
		return -e;
	}
	pthread_mutex_init(&sv->lock, NULL);
	pthread_cond_init(&sv->cond, NULL);
	if (pthread_create(&sv->thread, NULL, acceptor, sv) != 0) {
		close(sv->listen_fd);
		close(sv->stop[0]);
		close(sv->stop[1]);
		pthread_mutex_destroy(&sv->lock);
		pthread_cond_destroy(&sv->cond);
		return -EAGAIN;
	}
	sv->running = true;
	snprintf(addr, len, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
	return 0;
}

void e2b_serve_end(e2b_serve *sv)
{
	if (!sv->running)
		return;
	/* The stop pipe's writing end closed: readable for the acceptor and every relay. */
	close(sv->stop[1]);
	pthread_join(sv->thread, NULL);
	close(sv->listen_fd);
	pthread_mutex_lock(&sv->lock);
	while (sv->conns)
		pthread_cond_wait(&sv->cond, &sv->lock);
	pthread_mutex_unlock(&sv->lock);
	close(sv->stop[0]);
	pthread_mutex_destroy(&sv->lock);
	pthread_cond_destroy(&sv->cond);
	sv->running = false;
}
