/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB: the local driver is being written. */
#include "config.h"

#include "local.h"

const cordon_plugin_driver local_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "local",
};
