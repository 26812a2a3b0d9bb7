/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "json.h"
#include "jsonstr.h"

#include <inttypes.h>
#include <string.h>

void json_append_string(GString *out, const char *s)
{
	if (!s)
		g_string_append(out, "null");
	else
		jsonstr_append(out, s, strlen(s));
}

void json_append_key(GString *out, const char *key, bool first)
{
	if (!first)
		g_string_append_c(out, ',');
	json_append_string(out, key);
	g_string_append_c(out, ':');
}

void json_append_bool(GString *out, bool v) { g_string_append(out, v ? "true" : "false"); }

void json_append_u64(GString *out, uint64_t v) { g_string_append_printf(out, "%" PRIu64, v); }
