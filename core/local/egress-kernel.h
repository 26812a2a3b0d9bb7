/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's governed egress (docs/network.md): a proxy of the host's
 * (core/net/proxy.c) serving a listener inside the sandbox's network
 * namespace (confine_sandbox_listen), so that the work's only route out is
 * 127.0.0.1:PORT of its own loopback, through the tier's egress rules; and
 * the environment that points the work's HTTP clients at it.
 */
#pragma once

#include <cordon/plugin.h>

#include "confine.h"
#include "visibility.h"

typedef struct kernel_egress kernel_egress;

/* With spec->egress governed: the proxy for sandbox k, with spec's rules
 * (a tier without egress rules is refused: egress_unsupported), its
 * connections audited through spec->egress_audit. 0, or a negative errno
 * with err set. */
int kernel_egress_start(confine_sandbox *k, const cordon_plugin_open_spec *spec,
			kernel_egress **ret, cordon_plugin_error *err) CORDON_INTERNAL;
/* envp for a run: HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy
 * (http://127.0.0.1:PORT), NO_PROXY and no_proxy (localhost,127.0.0.1) first,
 * then envp without any of those names. NULL when e is NULL (use envp as it
 * is). Freed with kernel_egress_env_free. */
char **kernel_egress_env(const kernel_egress *e, const char *const *envp) CORDON_INTERNAL;
void kernel_egress_env_free(char **env) CORDON_INTERNAL;
/* cordon_sandbox_set_egress: narrows to allow/deny (both NULL-terminated;
 * allow NULL: the tier's rules alone). 0, or a negative errno with err set. */
int kernel_egress_narrow(kernel_egress *e, const char *const *allow, const char *const *deny,
			 cordon_plugin_error *err) CORDON_INTERNAL;
/* The proxy's port inside (0 when e is NULL). */
uint16_t kernel_egress_port(const kernel_egress *e) CORDON_INTERNAL;
/* Ends the proxy and every connection (each audited). NULL is fine. */
void kernel_egress_stop(kernel_egress *e) CORDON_INTERNAL;
