/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loads driver plugins from one directory with libltdl (DESIGN §5). */
#pragma once

#include "context.h"

/* Loads the named plugins (or every *.so when load_all) from dir into ctx:
 * one plugin_record each in ctx->plugins, loaded or with its refusal. Only a
 * bad directory fails the call; a bad plugin never does. */
int loader_load(cordon_context *ctx, const char *dir, const char *const *names, bool load_all,
		cordon_error **reterr) CORDON_INTERNAL;
