/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The local driver's network (netserve.h). */
#include "config.h"

#include "netserve.h"

#include "context.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define H (&cordon_host_services)

static int inside_socket(void *user, int family)
{
	const local_serve *sc = user;
	return confine_sandbox_socket_family(sc->kernel, family);
}

static void forward_ready(void *user, const char *address)
{
	const local_serve *sc = user;
	sc->sink->address(sc->sink->ctx, address);
}

/* Where a served port is reached. The jail's work shares the host's
 * network: its port is the host's, reported at once. The kernel tier's port
 * is on the sandbox's own loopback: reached only through a forwarder that
 * listens on a port the host's kernel picks, reported once the port inside
 * accepts (docs/network.md), never a host port the work chose. */
int local_serve_start(confine_sandbox *kernel, const cordon_plugin_run_spec *spec, local_serve *sc,
		      net_forward **ret, cordon_plugin_error *err)
{
	bool unix_socket = spec->flags & CORDON_PLUGIN_RUNREQ_SERVE_UNIX;
	if (!kernel && unix_socket)
		return H->error_set(err, EOPNOTSUPP, CORDON_PLUGIN_ERROR_TERMINAL,
				    ERRC(unsupported),
				    "the process jail's port is the host's: no unix socket for it");
	if (!kernel) {
		char addr[32];
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)spec->port);
		sc->sink->address(sc->sink->ctx, addr);
		return 0;
	}
	sc->kernel = kernel;
	char why[256];
	int r = net_forward_start(spec->port, unix_socket, inside_socket, forward_ready, sc, ret,
				  why, sizeof(why));
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				    "kernel tier: serving port %u: %s", (unsigned)spec->port, why);
	return 0;
}

/* A service's listener: on the kernel tier's own loopback only. The process
 * jail's work shares the host's network, where a listener would hand the
 * credential to every local process. */
int local_listen_inside(confine_sandbox *kernel, uint16_t *ret_port, cordon_plugin_error *err)
{
	int fd = kernel ? confine_sandbox_listen(kernel, ret_port) : -EOPNOTSUPP;
	if (fd == -EOPNOTSUPP)
		return H->error_set(err, EOPNOTSUPP, CORDON_PLUGIN_ERROR_TERMINAL,
				    ERRC(unsupported),
				    "the process jail has no network of its own for services");
	if (fd < 0)
		return H->error_set(err, -fd, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				    "kernel tier: a listener inside: %s", strerror(-fd));
	return fd;
}
