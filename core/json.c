/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "json.h"

#include <inttypes.h>

static void append_escaped_char(GString *out, gunichar c)
{
	switch (c) {
	case '"': g_string_append(out, "\\\""); return;
	case '\\': g_string_append(out, "\\\\"); return;
	case '\n': g_string_append(out, "\\n"); return;
	case '\r': g_string_append(out, "\\r"); return;
	case '\t': g_string_append(out, "\\t"); return;
	case '\b': g_string_append(out, "\\b"); return;
	case '\f': g_string_append(out, "\\f"); return;
	}
	/* U+2028/2029 are valid JSON but break JavaScript parsers: escape them too. */
	if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029)
		g_string_append_printf(out, "\\u%04x", (unsigned)c);
	else
		g_string_append_unichar(out, c);
}

void json_append_string(GString *out, const char *s)
{
	if (!s) {
		g_string_append(out, "null");
		return;
	}
	g_string_append_c(out, '"');
	const char *p = s;
	while (*p) {
		gunichar c = g_utf8_get_char_validated(p, -1);
		if (c == (gunichar)-1 || c == (gunichar)-2) {
			g_string_append(out, "\\ufffd"); /* one invalid byte */
			p++;
			continue;
		}
		append_escaped_char(out, c);
		p = g_utf8_next_char(p);
	}
	g_string_append_c(out, '"');
}

void json_append_key(GString *out, const char *key, bool first)
{
	if (!first)
		g_string_append_c(out, ',');
	json_append_string(out, key);
	g_string_append_c(out, ':');
}

void json_append_bool(GString *out, bool v)
{
	g_string_append(out, v ? "true" : "false");
}

void json_append_u64(GString *out, uint64_t v)
{
	g_string_append_printf(out, "%" PRIu64, v);
}
