/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A listener on a container's own loopback, made from the host (the listen
 * op: governed egress's proxy and the policy's services accept on it,
 * docs/network.md "Governed egress on the container tiers"). A socket's
 * network namespace is fixed when it is made: a short-lived thread joins the
 * container's namespace (setns on a pidfd of its pid 1), makes, binds and
 * listens on a socket there and ends; the socket stays the container's,
 * while every thread of cordon stays in the host's. Nothing is left in the
 * container: the socket is the core's, closed at the sandbox's close.
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
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct inside_listen {
	int ns_fd;     /* a pidfd of the container's pid 1 */
	int fd;        /* the listening socket, or -1 */
	uint16_t port; /* its port, the container's kernel's pick */
	int err;       /* errno of the step that failed */
	const char *step;
} inside_listen;

static void *listen_inside(void *arg)
{
	inside_listen *l = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	l->step = "setns";
	if (setns(l->ns_fd, CLONE_NEWNET) < 0)
		goto fail;
	l->step = "socket";
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		goto fail;
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
	inside_listen l = { .ns_fd = sb->pidfd >= 0 ? fcntl(sb->pidfd, F_DUPFD_CLOEXEC, 3) : -1,
			    .fd = -1 };
	if (l.ns_fd < 0)
		l.ns_fd = oci_container_pidfd(sb->tier, sb->engine, sb->name);
	if (l.ns_fd < 0)
		return oci_host->error_set(err, ESRCH, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed),
					   "container %s: its pid 1 was not found", sb->name);
	pthread_t th;
	int r = pthread_create(&th, NULL, listen_inside, &l);
	if (r == 0)
		pthread_join(th, NULL);
	else
		l = (inside_listen){ .ns_fd = l.ns_fd, .fd = -1, .err = r, .step = "thread" };
	close(l.ns_fd);
	if (l.fd < 0)
		return oci_host->error_set(err, l.err, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
					   "container %s: a listener on its loopback: %s: %s",
					   sb->name, l.step, strerror(l.err));
	*ret_port = l.port;
	return l.fd;
}
