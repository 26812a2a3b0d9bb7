/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A sandbox's governed egress (docs/network.md, "Governed egress"): for a
 * driver that declares CORDON_PLUGIN_DRIVER_EGRESS_PROXY, cordon's proxy
 * (core/net/proxy.c) serves a listener the driver makes on the sandbox's own
 * loopback (its listen op: the kernel tier's init, a container's network
 * namespace), so the work's only route out is 127.0.0.1:PORT, through the
 * tier's egress rules; the work's runs get HTTP(S)_PROXY pointed at it; its
 * connections are audited; cordon_sandbox_set_egress narrows it here. One
 * mechanism for every tier that can listen inside its sandboxes.
 */
#include "config.h"

#include "audit.h"
#include "net/proxy.h"
#include "sandbox.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

struct sandbox_egress {
	net_proxy *proxy;
	uint16_t port;
	audit_egress_ref *audit;
};

static void on_event(void *user, const net_proxy_event *ev)
{
	const sandbox_egress *e = user;
	audit_egress(e->audit, ev->method, ev->host, ev->port, ev->address, ev->allowed, ev->reason,
		     ev->bytes_up, ev->bytes_down);
}

bool sandbox_egress_by_core(const cordon_sandbox *sb, cordon_egress egress)
{
	/* Without the tier's rules governed egress is the driver's (a container tier's named
	 * network, the administrator's) or refused (the kernel tier's open; admission passes
	 * over a tier that declares governed and has no rules). */
	return egress == CORDON_EGRESS_GOVERNED && sb->tier->cfg->egress_set &&
	       (sb->tier->driver->ops.flags & CORDON_PLUGIN_DRIVER_EGRESS_PROXY);
}

int sandbox_egress_start(cordon_sandbox *sb, cordon_egress egress, cordon_error **reterr)
{
	if (!sandbox_egress_by_core(sb, egress))
		return 0;
	const policy_tier *t = sb->tier->cfg;
	if (!sb->tier->driver->ops.listen) /* the loader refuses the flag without it */
		return error_set(reterr, ENOTSUP, CORDON_ERROR_FORBIDDEN, ERRC(egress_unsupported),
				 "tier %s: its driver has no listener for governed egress",
				 t->name);
	net_egress *rules = NULL;
	char why[256];
	int r = net_egress_new((const char *const *)t->egress_allow,
			       (const char *const *)t->egress_deny, &rules, why, sizeof(why));
	if (r < 0)
		return error_set(reterr, -r, CORDON_ERROR_INVALID, ERRC(policy_invalid),
				 "tier %s: egress rules: %s", t->name, why);
	cordon_plugin_error perr = { 0 };
	uint16_t port = 0;
	int lsn = sb->tier->driver->ops.listen(sb->state, &port, &perr);
	if (lsn < 0) {
		net_egress_free(rules);
		return error_from_plugin(reterr, &perr, lsn, "listen (governed egress)");
	}
	sandbox_egress *e = g_new0(sandbox_egress, 1);
	e->port = port;
	e->audit = sb->egress;
	r = net_proxy_start(lsn, rules, on_event, e, NULL, &e->proxy, why, sizeof(why));
	if (r < 0) {
		g_free(e);
		return error_set(reterr, -r, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "tier %s: governed egress: %s", t->name, why);
	}
	sb->governed = e;
	return 0;
}

static const char *const proxy_vars[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
					  "NO_PROXY",   "no_proxy",    NULL };

static bool is_proxy_var(const char *entry)
{
	for (size_t i = 0; proxy_vars[i]; i++) {
		size_t n = strlen(proxy_vars[i]);
		if (strncmp(entry, proxy_vars[i], n) == 0 && entry[n] == '=')
			return true;
	}
	return false;
}

char **sandbox_egress_env(const cordon_sandbox *sb, const char *const *envp)
{
	const sandbox_egress *e = sb->governed;
	if (!e)
		return NULL;
	GPtrArray *a = g_ptr_array_new();
	for (size_t i = 0; proxy_vars[i]; i++)
		g_ptr_array_add(a,
				i < 4 ? g_strdup_printf("%s=http://127.0.0.1:%u", proxy_vars[i],
							(unsigned)e->port)
				      : g_strdup_printf("%s=localhost,127.0.0.1", proxy_vars[i]));
	for (size_t i = 0; envp && envp[i]; i++)
		if (!is_proxy_var(envp[i]))
			g_ptr_array_add(a, g_strdup(envp[i]));
	g_ptr_array_add(a, NULL);
	return (char **)g_ptr_array_free(a, FALSE);
}

int sandbox_egress_narrow(cordon_sandbox *sb, const char *const *allow, const char *const *deny,
			  cordon_error **reterr)
{
	if (!sb->governed)
		return error_set(reterr, ENOTSUP, CORDON_ERROR_INVALID, ERRC(unsupported),
				 "the sandbox was not opened with egress governed");
	net_egress *rules = NULL;
	char why[256];
	int r = allow ? net_egress_new(allow, deny, &rules, why, sizeof(why)) : 0;
	if (r < 0)
		return error_set(reterr, -r, CORDON_ERROR_INVALID, ERRC(invalid_argument), "%s",
				 why);
	net_proxy_narrow(sb->governed->proxy, rules);
	return 0;
}

void sandbox_egress_stop(cordon_sandbox *sb)
{
	if (!sb->governed)
		return;
	net_proxy_stop(sb->governed->proxy);
	g_free(sb->governed);
	sb->governed = NULL;
}
