/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The built-in `local` driver: process jail and kernel confinement. */
#pragma once

#include <cordon/plugin.h>
#include <stddef.h>

/* The driver table, registered by every context under the name "local". */
extern const cordon_plugin_driver local_driver __attribute__((visibility("hidden")));

/* Whether a tier of the local driver can run with these limits at all (the kernel tier's
 * nofile floor): 0, or -EPERM and why. Open refuses by the same check; admission calls it
 * so that explain equals open (a core-internal hook, not an ABI operation). */
int local_check_limits(const void *tier, const cordon_plugin_limits *limits, char *why,
		       size_t whylen) __attribute__((visibility("hidden")));
