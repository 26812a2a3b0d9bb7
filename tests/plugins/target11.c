/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Built against the current header but declaring ABI 1.1
 * (CORDON_PLUGIN_TARGET_MINOR), as a plugin that must also load into 1.1
 * cores does: it uses a 1.2 field only after checking host->abi_minor.
 * Its probe says what it found ("host 1.N, limits size S").
 */
#define CORDON_PLUGIN_TARGET_MINOR 1
#include <cordon/plugin.h>

#include <stdio.h>
#include <string.h>

static const cordon_host *t11_host;

typedef struct t11_tier {
	char reason[CORDON_PLUGIN_REASON_MAX];
} t11_tier;

static int t11_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			 cordon_plugin_error *err)
{
	cordon_plugin_limits l;
	memset(&l, 0, sizeof(l));
	if (t11_host->abi_minor >= 2) /* the size is a 1.2 field */
		l.size = sizeof(l);
	t11_host->config_limits(cfg, &l);
	t11_tier *t = t11_host->alloc(sizeof(*t));
	snprintf(t->reason, sizeof(t->reason), "host 1.%u, limits size %u", t11_host->abi_minor,
		 t11_host->abi_minor >= 2 ? l.size : 0);
	*ret_tier = t;
	return 0;
}

static void t11_unconfigure(void *tier) { t11_host->free(tier); }

static int t11_probe(void *tier, cordon_plugin_probe *ret)
{
	const t11_tier *t = tier;
	ret->available = 1;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_CONTAINER;
	snprintf(ret->reason, sizeof(ret->reason), "%s", t->reason);
	return 0;
}

static const cordon_plugin_driver t11_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "target11",
	.configure = t11_configure,
	.unconfigure = t11_unconfigure,
	.probe = t11_probe,
};

static int t11_init(const cordon_host *host, cordon_plugin_registrar *reg, cordon_plugin_error *err)
{
	t11_host = host;
	return host->register_driver(reg, &t11_driver);
}

CORDON_PLUGIN_DEFINE("target11", "1.0", "corpus: built at 1.2, declaring 1.1", "MIT", t11_init)
