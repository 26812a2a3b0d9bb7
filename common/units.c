/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The unit grammar (units.h). Strict on purpose: a text that could mean two things (a leading
 * zero, "1M", "1h30m", a bare "30" for a duration) is refused with a reason rather than read
 * one way.
 */
#include "config.h"

#include "units.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

static int fail(const char **why, const char *reason, int r)
{
	if (why)
		*why = reason;
	return r;
}

bool units_is_non_finite(const char *s)
{
	static const char *const words[] = { ".inf",  "-.inf", "+.inf",    ".Inf", ".INF", "-.Inf",
					     "+.Inf", "-.INF", "+.INF",    ".nan", ".NaN", ".NAN",
					     "inf",   "nan",   "Infinity", "NaN",  NULL };
	return s && in_list(words, s);
}

/* Scans the leading decimal digits of s strictly. *ret_end points past them. */
static int scan_uint(const char *s, uint64_t *ret, const char **ret_end, const char **why)
{
	if (!s || !*s)
		return fail(why, "empty: a number is required", -EINVAL);
	if (units_is_non_finite(s))
		return fail(why, "infinity and NaN are not numbers here", -EINVAL);
	if (s[0] == '+')
		return fail(why, "a leading + is not allowed", -EINVAL);
	if (s[0] == '-')
		return fail(why, "a negative value is not allowed", -EINVAL);
	if (!is_digit(s[0]))
		return fail(why, "not a number", -EINVAL);
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return fail(why, "hexadecimal is not accepted: write the number in decimal",
			    -EINVAL);
	if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O' || s[1] == 'b' || s[1] == 'B'))
		return fail(why, "octal and binary are not accepted: write the number in decimal",
			    -EINVAL);
	if (s[0] == '0' && is_digit(s[1]))
		return fail(why,
			    "a leading zero is ambiguous (octal?): write the number without it",
			    -EINVAL);
	uint64_t v = 0;
	const char *p = s;
	for (; is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return fail(why, "too large", -ERANGE);
		v = v * 10 + d;
	}
	*ret = v;
	*ret_end = p;
	return 0;
}

/* Why the text after the digits of a number is wrong. */
static const char *suffix_problem(const char *rest)
{
	if (*rest == '_' || *rest == ',')
		return "digit separators are not accepted: write the digits together";
	if (*rest == '.')
		return "a fraction is not accepted here: write a whole number";
	if (*rest == 'e' || *rest == 'E')
		return "an exponent is not accepted: write every digit";
	return "unexpected text after the number";
}

int units_parse_uint(const char *s, uint64_t *ret, const char **why)
{
	const char *end;
	uint64_t v;
	int r = scan_uint(s, &v, &end, why);
	if (r < 0)
		return r;
	if (*end)
		return fail(why, suffix_problem(end), -EINVAL);
	*ret = v;
	return 0;
}

static const struct unit {
	const char *suffix;
	uint64_t mul;
} size_units[] = {
	{ "", 1 }, { "B", 1 }, { "KiB", 1ull << 10 }, { "MiB", 1ull << 20 },
	{ "GiB", 1ull << 30 }, { "TiB", 1ull << 40 }, { NULL, 0 },
}, duration_units[] = {
	{ "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 }, { "h", 60 * 60 * 1000 }, { NULL, 0 },
};

static const char *size_unit_problem(const char *u)
{
	static const char *const decimal[] = { "kB", "KB", "MB", "GB", "TB",
					       "PB", "kb", "mb", "gb", NULL };
	static const char *const shorthand[] = { "K",   "k",   "M",   "m",   "G",   "g",   "T",
						 "t",   "Ki",  "Mi",  "Gi",  "Ti",  "KI",  "MI",
						 "GI",  "kiB", "mib", "gib", "Kib", "Mib", "Gib",
						 "KIB", "MIB", "GIB", NULL };
	if (in_list(decimal, u))
		return "decimal units (kB, MB, GB) are not accepted: sizes use the binary units "
		       "KiB, MiB, GiB, TiB";
	if (in_list(shorthand, u))
		return "ambiguous unit: write KiB, MiB, GiB or TiB exactly (e.g. 512MiB)";
	if (*u == ' ')
		return "no space between the number and its unit (e.g. 512MiB)";
	return "unknown unit: use B, KiB, MiB, GiB or TiB (e.g. 512MiB), or plain bytes";
}

static const char *duration_unit_problem(const char *u)
{
	if (!*u)
		return "a duration needs a unit: ms, s, m or h (a bare number is refused: "
		       "write 2s for two seconds, 500ms, 10m)";
	if (*u == ' ')
		return "no space between the number and its unit (e.g. 30s)";
	return "unknown unit: use ms, s, m or h (e.g. 30s, 10m); combinations such as 1h30m are "
	       "not accepted";
}

static int parse_with_units(const char *text, const struct unit *units, uint64_t *ret,
			    const char **why)
{
	const char *end;
	uint64_t v;
	int r = scan_uint(text, &v, &end, why);
	if (r < 0)
		return r;
	if (*end == '_' || *end == ',' || *end == '.' ||
	    ((*end == 'e' || *end == 'E') && is_digit(end[1])))
		return fail(why, suffix_problem(end), -EINVAL);
	for (const struct unit *u = units; u->suffix; u++) {
		if (strcmp(end, u->suffix) != 0)
			continue;
		if (u->mul && v > UINT64_MAX / u->mul)
			return fail(why, "too large", -ERANGE);
		*ret = v * u->mul;
		return 0;
	}
	return fail(why, units == size_units ? size_unit_problem(end) : duration_unit_problem(end),
		    -EINVAL);
}

int units_parse_size(const char *text, uint64_t *ret, const char **why)
{
	return parse_with_units(text, size_units, ret, why);
}

int units_parse_duration(const char *text, uint64_t *ret_ms, const char **why)
{
	return parse_with_units(text, duration_units, ret_ms, why);
}

int units_parse_cpus(const char *text, uint64_t *ret_milli, const char **why)
{
	const char *end;
	uint64_t v;
	int r = scan_uint(text, &v, &end, why);
	if (r < 0)
		return r;
	uint64_t frac = 0;
	if (*end == '.') {
		const char *f = end + 1;
		unsigned n = 0;
		for (; is_digit(*f); f++, n++)
			frac = frac * 10 + (uint64_t)(*f - '0');
		if (n == 0 || n > 3 || *f)
			return fail(
				why,
				n > 3 ? "cpus take at most three decimals (thousandths of a CPU)"
				      : "expected a number of CPUs such as 2 or 0.5",
				-EINVAL);
		for (; n < 3; n++)
			frac *= 10;
		end = f;
	}
	if (*end)
		return fail(why,
			    *end == 'm'
				    ? "millicpu suffixes are not accepted: write 0.5 for half a CPU"
				    : suffix_problem(end),
			    -EINVAL);
	if (v > UINT64_MAX / 1000 - 1)
		return fail(why, "too large", -ERANGE);
	*ret_milli = v * 1000 + frac;
	return 0;
}

/* units[first..last] from the largest down: the first that divides v exactly. */
static void format_with(uint64_t v, const struct unit *units, int first, int last,
			const char *fallback, char buf[UNITS_FORMAT_MAX])
{
	for (int i = last; i >= first; i--)
		if (v && v % units[i].mul == 0) {
			snprintf(buf, UNITS_FORMAT_MAX, "%" PRIu64 "%s", v / units[i].mul,
				 units[i].suffix);
			return;
		}
	snprintf(buf, UNITS_FORMAT_MAX, "%" PRIu64 "%s", v, fallback);
}

void units_format_size(uint64_t bytes, char buf[UNITS_FORMAT_MAX])
{
	format_with(bytes, size_units, 2, 5, "", buf);
}

void units_format_duration(uint64_t ms, char buf[UNITS_FORMAT_MAX])
{
	format_with(ms, duration_units, 1, 3, "ms", buf);
}
