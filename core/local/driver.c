/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB: the local driver is being written. */
#include "config.h"

#include "local.h"

/* policy engineer: the key the default policy uses, so its tiers pass the strict check. */
static const cordon_plugin_config_key local_keys[] = {
	{ "confine", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ NULL, 0, 0 },
};

const cordon_plugin_driver local_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "local",
	.config_keys = local_keys,
};
