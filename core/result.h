/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A run's result (cordon_result, public accessors in cordon.h): how it ended and what it
 * wrote, filled by the sandbox's run sink (sandbox.c). */
#pragma once

#include "visibility.h"

#include <cordon/cordon.h>
#include <cordon/plugin.h>
#include <glib.h>
#include <stdbool.h>

struct cordon_result {
	cordon_plugin_run_status status;
	GString *out[3]; /* [0] combined, [1] stdout, [2] stderr */
	bool truncated[3];
};

cordon_result *result_new(void) CORDON_INTERNAL;
/* A new result with src's status and no output. */
cordon_result *result_copy(const cordon_result *src) CORDON_INTERNAL;
