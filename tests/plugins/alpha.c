/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Rejection corpus, good plugin: `alpha` registers one driver, "alpha". */
#include <cordon/plugin.h>

#include <stdio.h>

static int alpha_probe(void *tier, cordon_plugin_probe *ret)
{
	ret->available = 1;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_CONTAINER;
	snprintf(ret->reason, sizeof(ret->reason), "alpha is always there");
	return 0;
}

static const cordon_plugin_driver alpha_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "alpha",
	.probe = alpha_probe,
};

static int alpha_init(const cordon_host *host, cordon_plugin_registrar *reg,
		      cordon_plugin_error *err)
{
	return host->register_driver(reg, &alpha_driver);
}

CORDON_PLUGIN_DEFINE("alpha", "1.2.3", "corpus: a good plugin", "MIT", alpha_init)
