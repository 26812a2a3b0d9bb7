/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON string escaper: any bytes in, a valid JSON string out.
 *
 * Header-only (GLib only), so that libcordon's JSON writer (json.c) and the
 * cordon command line, which links only the public API, share one escaper.
 *
 * Encoding: valid UTF-8 passes through; each byte that does not begin a
 * valid sequence (stray continuation bytes, truncated or overlong
 * sequences, surrogates, code points above U+10FFFF) becomes U+FFFD; NUL
 * and the other C0 controls, DEL, U+2028 and U+2029 are \u escapes (\n \r
 * \t \b \f the short forms).
 */
#pragma once

#include <glib.h>

static inline void jsonstr_append_char(GString *out, gunichar c)
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
	/* U+2028/2029 are valid JSON but break JavaScript parsers: escaped too. */
	if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029)
		g_string_append_printf(out, "\\u%04x", (unsigned)c);
	else
		g_string_append_unichar(out, c);
}

/* Appends the len bytes at s (NULs included) as a quoted JSON string. */
static inline void jsonstr_append(GString *out, const char *s, size_t len)
{
	g_string_append_c(out, '"');
	const char *p = s, *end = s + len;
	while (p < end) {
		gunichar c = g_utf8_get_char_validated(p, end - p);
		/* NUL is a character here, not the end: the validator stops at it. */
		if (*p == '\0')
			c = 0;
		if (c == (gunichar)-1 || c == (gunichar)-2) {
			g_string_append(out, "\\ufffd"); /* one invalid byte */
			p++;
			continue;
		}
		jsonstr_append_char(out, c);
		p = *p ? g_utf8_next_char(p) : p + 1;
	}
	g_string_append_c(out, '"');
}
