/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The built-in `local` driver: process jail and kernel confinement. */
#pragma once

#include <cordon/plugin.h>

/* The driver table, registered by every context under the name "local". */
extern const cordon_plugin_driver local_driver __attribute__((visibility("hidden")));
