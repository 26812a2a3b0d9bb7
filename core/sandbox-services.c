/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A sandbox's services (`services:`, docs/network.md "Services"): for each,
 * a listener on the sandbox's own loopback (the driver's listen op) and
 * cordon-proxy on it (core/net/service.c); the work gets NAME_BASE_URL in
 * the environment of every run. Started at open, before any run; ended at
 * close, before the driver's sandbox.
 */
#include "config.h"

#include "audit.h"
#include "net/service.h"
#include "sandbox.h"

#include <errno.h>
#include <unistd.h>

/* One running service of a sandbox: its proxy, and what its audit lines name. */
typedef struct sandbox_service {
	net_service *proxy;
	const policy_service *svc;
	const audit_egress_ref *ref; /* sb->egress, freed after the services */
} sandbox_service;

static void on_connection(void *user, const net_service_event *ev)
{
	const sandbox_service *s = user;
	audit_service(s->ref, s->svc->name, s->svc->host, s->svc->port, ev);
}

static int start_one(cordon_sandbox *sb, const policy_service *svc, cordon_error **reterr)
{
	cordon_plugin_error perr = { 0 };
	uint16_t port = 0;
	int fd = sb->tier->driver->ops.listen(sb->state, &port, &perr);
	if (fd < 0)
		return error_from_plugin(reterr, &perr, fd, "listen");
	char why[512];
	sandbox_service *s = g_new0(sandbox_service, 1);
	s->svc = svc;
	s->ref = sb->egress;
	int r = net_service_start(svc, fd, on_connection, s, &s->proxy, why, sizeof(why));
	close(fd); /* the proxy holds its own copy */
	if (r < 0) {
		g_free(s);
		return error_set(reterr, -r, CORDON_ERROR_TERMINAL, ERRC(service_failed),
				 "service %s: %s", svc->name, why);
	}
	g_ptr_array_add(sb->services, s);
	g_ptr_array_add(sb->env_grants,
			g_strdup_printf("%s=http://127.0.0.1:%u", svc->env, (unsigned)port));
	return 0;
}

int sandbox_services_start(cordon_sandbox *sb, cordon_error **reterr)
{
	const GPtrArray *svcs = sb->ctx->policy->services;
	sb->services = g_ptr_array_new();
	if (svcs->len == 0)
		return 0;
	if (!sb->tier->driver->ops.listen)
		return error_set(reterr, EOPNOTSUPP, CORDON_ERROR_TERMINAL, ERRC(unsupported),
				 "tier %s cannot carry the policy's services (its driver %s has no "
				 "listener inside a sandbox)",
				 sb->tier->cfg->name, sb->tier->driver->ops.name);
	for (guint i = 0; i < svcs->len; i++) {
		int r = start_one(sb, svcs->pdata[i], reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

void sandbox_services_stop(cordon_sandbox *sb)
{
	if (!sb->services)
		return;
	for (guint i = 0; i < sb->services->len; i++) {
		sandbox_service *s = sb->services->pdata[i];
		net_service_stop(s->proxy);
		g_free(s);
	}
	g_ptr_array_unref(sb->services);
	sb->services = NULL;
}
