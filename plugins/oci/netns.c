/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sockets in a container's own network namespace, made from the host: a listener on its
 * loopback (the listen op: governed egress's proxy and the policy's services accept on it,
 * docs/network.md "Governed egress on the container tiers"), and one socket per connection
 * of a serve on a unix socket (the core's forwarder connects it to the served port). A
 * socket's network namespace is fixed when it is made: a short-lived thread joins the
 * container's namespace (setns on a pidfd of its pid 1), makes the socket there and ends;
 * the socket stays the container's, while every thread of cordon stays in the host's.
 * Nothing is left in the container: the sockets are the core's, closed at the sandbox's
 * close or the connection's end.
 *
 * runc (docker, rootful podman); gVisor's work talks to the Sentry's own
 * network stack, where a socket of the namespace is not seen: its listener is
 * the agent's relay to a host unix socket (relay.c). setns(2) on a
 * pidfd takes Linux 5.8; an older kernel fails the listen (EINVAL), and the
 * open with it.
 */
#include "config.h"

#include "driver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One socket made in the container's network namespace: a TCP socket of family, and with
 * listen bound to 127.0.0.1:0 and listening. */
typedef struct inside_socket {
	int ns_fd;     /* a pidfd of the container's pid 1 */
	int family;    /* AF_INET or AF_INET6 */
	bool listen;   /* bind 127.0.0.1:0 and listen */
	int fd;        /* the socket, or -1 */
	uint16_t port; /* listen: its port, the container's kernel's pick */
	int err;       /* errno of the step that failed */
	const char *step;
} inside_socket;

static void *make_inside(void *arg)
{
	inside_socket *l = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	l->step = "setns";
	if (setns(l->ns_fd, CLONE_NEWNET) < 0)
		goto fail;
	l->step = "socket";
	l->fd = socket(l->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		goto fail;
	if (!l->listen)
		return NULL;
	l->step = "bind";
	if (bind(l->fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l->fd, SOMAXCONN) < 0 ||
	    getsockname(l->fd, (struct sockaddr *)&a, &len) < 0)
		goto fail;
	l->port = ntohs(a.sin_port);
	return NULL;
fail:
	l->err = errno;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	return NULL;
}

/* Makes l's socket from a thread that joins the namespace and ends (setns moves only the
 * calling thread, and none of cordon's may stay there): l->fd, or -1 with l->err. */
static void socket_inside(inside_socket *l)
{
	l->fd = -1;
	pthread_t th;
	int r = pthread_create(&th, NULL, make_inside, l);
	if (r == 0) {
		pthread_join(th, NULL);
		return;
	}
	l->err = r;
	l->step = "thread";
}

/* A pidfd of the container's pid 1, the sandbox's own (a copy) or found anew. */
static int container_ns_fd(oci_sandbox *sb)
{
	int fd = sb->pidfd >= 0 ? fcntl(sb->pidfd, F_DUPFD_CLOEXEC, 3) : -1;
	return fd >= 0 ? fd : oci_container_pidfd(sb->tier, sb->engine, sb->name);
}

bool oci_can_listen(const oci_tier *t)
{
	/* joining a container's network namespace takes CAP_SYS_ADMIN over it: rootful
	 * engines' containers, as root */
	if (oci_runtime_is_gvisor(t->runtime))
		return oci_relay_wanted(t);
	return geteuid() == 0;
}

int oci_op_listen(void *sandbox, uint16_t *ret_port, cordon_plugin_error *err)
{
	oci_sandbox *sb = sandbox;
	if (!oci_can_listen(sb->tier))
		return oci_host->error_set(
			err, EOPNOTSUPP, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(unsupported), "%s",
			oci_runtime_is_gvisor(sb->tier->runtime)
				? "gVisor's work uses the Sentry's own network stack: its "
				  "listener is the agent's relay to a host socket, which "
				  "needs root and runsc's host-uds=open (runtime_flags)"
				: "a listener inside a container needs root (its network "
				  "namespace is joined from the host)");
	if (oci_runtime_is_gvisor(sb->tier->runtime))
		return oci_relay_listen(sb, ret_port, err);
	inside_socket l = { .ns_fd = container_ns_fd(sb), .family = AF_INET, .listen = true };
	if (l.ns_fd < 0)
		return oci_host->error_set(err, ESRCH, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed),
					   "container %s: its pid 1 was not found", sb->name);
	socket_inside(&l);
	close(l.ns_fd);
	if (l.fd < 0)
		return oci_host->error_set(err, l.err, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
					   "container %s: a listener on its loopback: %s: %s",
					   sb->name, l.step, strerror(l.err));
	*ret_port = l.port;
	return l.fd;
}

/* ---- serve on a unix socket: the core's forwarder --------------------------------------- */

struct oci_serve {
	int ns_fd; /* a pidfd of the container's pid 1, for every connection's socket */
	const cordon_plugin_run_sink *sink;
	cordon_host_forward *fwd;
};

static int serve_socket(void *ctx, int family)
{
	oci_serve *sv = ctx;
	inside_socket l = { .ns_fd = sv->ns_fd, .family = family };
	socket_inside(&l);
	return l.fd >= 0 ? l.fd : -l.err;
}

static void serve_ready(void *ctx, const char *address)
{
	oci_serve *sv = ctx;
	if (sv->sink && sv->sink->address)
		sv->sink->address(sv->sink->ctx, address);
}

bool oci_can_forward(const oci_tier *t)
{
	return oci_host->abi_minor >= 6 && !oci_runtime_is_gvisor(t->runtime) && geteuid() == 0;
}

int oci_serve_start(oci_sandbox *sb, uint16_t port, const cordon_plugin_run_sink *sink,
		    oci_serve **ret, cordon_plugin_error *err)
{
	if (!oci_can_forward(sb->tier))
		return oci_host->error_set(
			err, EOPNOTSUPP, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(unsupported), "%s",
			oci_runtime_is_gvisor(sb->tier->runtime)
				? "serve on a unix socket: gVisor's work uses the Sentry's own "
				  "network stack, where no socket of the host's reaches its port"
				: "serve on a unix socket needs root (the container's network "
				  "namespace is joined from the host)");
	oci_serve *sv = xmalloc0(sizeof(*sv));
	sv->sink = sink;
	sv->ns_fd = container_ns_fd(sb);
	if (sv->ns_fd < 0) {
		free(sv);
		return oci_host->error_set(err, ESRCH, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed),
					   "container %s: its pid 1 was not found", sb->name);
	}
	cordon_host_forward_spec spec = { .size = sizeof(spec),
					  .flags = CORDON_HOST_FORWARD_UNIX,
					  .port = port,
					  .socket = serve_socket,
					  .ready = serve_ready,
					  .ctx = sv };
	int r = oci_host->forward_start(&spec, &sv->fwd, err);
	if (r < 0) {
		close(sv->ns_fd);
		free(sv);
		return r;
	}
	*ret = sv;
	return 0;
}

void oci_serve_stop(oci_serve *sv)
{
	if (!sv)
		return;
	oci_host->forward_stop(sv->fwd);
	close(sv->ns_fd);
	free(sv);
}
