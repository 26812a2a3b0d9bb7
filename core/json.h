/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A minimal JSON writer for decisions and audit lines: strings are always
 * escaped here, so no caller ever formats untrusted text into JSON itself. */
#pragma once

#include "error.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* Appends s as a JSON string ("null" when s is NULL). Control characters
 * are escaped; invalid UTF-8 becomes U+FFFD, so the output is always valid. */
void json_append_string(GString *out, const char *s) CORDON_INTERNAL;
/* Appends "key": (with a leading comma unless first). */
void json_append_key(GString *out, const char *key, bool first) CORDON_INTERNAL;
void json_append_bool(GString *out, bool v) CORDON_INTERNAL;
void json_append_u64(GString *out, uint64_t v) CORDON_INTERNAL;
