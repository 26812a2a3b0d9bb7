/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier's governed egress (egress-kernel.h). */
#include "config.h"

#include "egress-kernel.h"
#include "context.h"
#include "errcodes.h"
#include "net/proxy.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#define H (&cordon_host_services)

struct kernel_egress {
	net_proxy *proxy;
	uint16_t port;
	void *audit; /* open_spec.egress_audit */
};

static void on_event(void *user, const net_proxy_event *ev)
{
	const kernel_egress *e = user;
	H->egress_audit(e->audit, ev->method, ev->host, ev->port, ev->address, ev->allowed,
			ev->reason, ev->bytes_up, ev->bytes_down);
}

int kernel_egress_start(confine_sandbox *k, const cordon_plugin_open_spec *spec,
			kernel_egress **ret, cordon_plugin_error *err)
{
	bool has_rules = spec->size >=
				 offsetof(cordon_plugin_open_spec, egress_audit) + sizeof(void *) &&
			 spec->egress_allow;
	if (!has_rules)
		return H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    ERRC(egress_unsupported),
				    "kernel tier: egress governed needs the tier's egress rules "
				    "(egress: {allow: [...]} in its policy section)");
	net_egress *rules = NULL;
	char why[256];
	int r = net_egress_new(spec->egress_allow, spec->egress_deny, &rules, why, sizeof(why));
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_INVALID, ERRC(policy_invalid),
				    "kernel tier: egress rules: %s", why);
	kernel_egress *e = g_new0(kernel_egress, 1);
	e->audit = spec->egress_audit;
	int lsn = confine_sandbox_listen(k, &e->port);
	if (lsn < 0) {
		net_egress_free(rules);
		g_free(e);
		return H->error_set(err, -lsn, CORDON_PLUGIN_ERROR_TERMINAL,
				    ERRC(sandbox_open_failed),
				    "kernel tier: cannot listen for egress in the sandbox: %s",
				    g_strerror(-lsn));
	}
	r = net_proxy_start(lsn, rules, on_event, e, NULL, &e->proxy, why, sizeof(why));
	if (r < 0) {
		g_free(e);
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				    "kernel tier: %s", why);
	}
	*ret = e;
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

char **kernel_egress_env(const kernel_egress *e, const char *const *envp)
{
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

void kernel_egress_env_free(char **env) { g_strfreev(env); }

int kernel_egress_narrow(kernel_egress *e, const char *const *allow, const char *const *deny,
			 cordon_plugin_error *err)
{
	if (!e)
		return H->error_set(err, ENOTSUP, CORDON_PLUGIN_ERROR_INVALID, ERRC(unsupported),
				    "the sandbox was not opened with egress governed");
	net_egress *rules = NULL;
	char why[256];
	int r = allow ? net_egress_new(allow, deny, &rules, why, sizeof(why)) : 0;
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_INVALID, ERRC(invalid_argument),
				    "%s", why);
	net_proxy_narrow(e->proxy, rules);
	return 0;
}

uint16_t kernel_egress_port(const kernel_egress *e) { return e ? e->port : 0; }

void kernel_egress_stop(kernel_egress *e)
{
	if (!e)
		return;
	net_proxy_stop(e->proxy);
	g_free(e);
}
