/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A strict JSON validator for tests (RFC 8259): one value, nothing after
 * it but whitespace; strings valid UTF-8 without raw control characters. */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <string.h>

static inline const char *jsoncheck_value(const char *p, int depth);

static inline const char *jsoncheck_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static inline const char *jsoncheck_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	const char *start = p;
	while (*p != '"') {
		unsigned char c = (unsigned char)*p;
		if (c == 0 || c < 0x20)
			return NULL;
		if (c == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!g_ascii_isxdigit(p[i]))
						return NULL;
				p += 5;
				continue;
			}
			if (!strchr("\"\\/bfnrt", *p) || !*p)
				return NULL;
		}
		p++;
	}
	if (!g_utf8_validate(start, p - start, NULL))
		return NULL;
	return p + 1;
}

static inline const char *jsoncheck_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (g_ascii_isdigit(*p))
		while (g_ascii_isdigit(*p))
			p++;
	else
		return NULL;
	if (*p == '.') {
		p++;
		if (!g_ascii_isdigit(*p))
			return NULL;
		while (g_ascii_isdigit(*p))
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!g_ascii_isdigit(*p))
			return NULL;
		while (g_ascii_isdigit(*p))
			p++;
	}
	return p;
}

static inline const char *jsoncheck_container(const char *p, int depth, char close, bool object)
{
	p = jsoncheck_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (object) {
			p = jsoncheck_string(jsoncheck_ws(p));
			if (!p)
				return NULL;
			p = jsoncheck_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = jsoncheck_value(p, depth + 1);
		if (!p)
			return NULL;
		p = jsoncheck_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static inline const char *jsoncheck_value(const char *p, int depth)
{
	if (depth > 64)
		return NULL;
	p = jsoncheck_ws(p);
	switch (*p) {
	case '{': return jsoncheck_container(p, depth, '}', true);
	case '[': return jsoncheck_container(p, depth, ']', false);
	case '"': return jsoncheck_string(p);
	case 't': return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
	case 'f': return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
	case 'n': return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
	default: return jsoncheck_number(p);
	}
}

/* True when s is exactly one JSON value (an object for audit lines). */
static inline bool json_is_valid(const char *s)
{
	const char *end = s ? jsoncheck_value(s, 0) : NULL;
	return end && *jsoncheck_ws(end) == '\0';
}
