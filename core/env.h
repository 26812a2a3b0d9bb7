/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The environment a command gets: a fixed baseline plus explicit grants. */
#pragma once

#include "error.h"

#include <glib.h>

/* Refuses empty or malformed names and names that steer the loader or the
 * shell (LD_*, GCONV_PATH, BASH_ENV, ...). */
int env_check_grant(const char *key, const char *value, cordon_error **reterr) CORDON_INTERNAL;
/* The baseline (PATH HOME TMPDIR LANG LC_ALL LC_CTYPE TERM, host values where
 * set, safe defaults otherwise) overlaid with grants ("K=V" arrays, later
 * wins). Returns a NULL-terminated strv (g_strfreev). */
char **env_build(const GPtrArray *grants, const char *const *run_grants) CORDON_INTERNAL;
/* Frees a "K=V" string after wiping it: values may be secrets. */
void env_entry_free(gpointer p) CORDON_INTERNAL;
