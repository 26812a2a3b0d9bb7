/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The unit grammar of every number a person writes for cordon, in a policy or on the command
 * line: whole numbers, sizes ("512MiB", plain bytes), durations ("30s", "10m": the unit is
 * required, so that a bare "2" is never read as seconds in one place and milliseconds in
 * another) and CPUs ("0.5"). One parser, so the policy and the CLI accept the same texts.
 * Decimal only: no sign, no leading zero, no hex, no separators, no fractions (but cpus),
 * no exponent, no space before the unit. libc only (common/).
 */
#pragma once

#include "visibility.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each returns 0, -EINVAL or -ERANGE. On failure *why (when why is not NULL) says what is
 * wrong, in a static string ("a duration needs a unit: ..."); on success it is untouched. */
int units_parse_uint(const char *text, uint64_t *ret, const char **why) CORDON_INTERNAL;
/* Bytes: a whole number, optionally B, KiB, MiB, GiB or TiB. */
int units_parse_size(const char *text, uint64_t *ret, const char **why) CORDON_INTERNAL;
/* Milliseconds: a whole number with ms, s, m or h. */
int units_parse_duration(const char *text, uint64_t *ret_ms, const char **why) CORDON_INTERNAL;
/* Thousandths of a CPU: a whole number with at most three decimals. The grammar has no
 * bound; a limit of cpus is at most UNITS_CPUS_MAX_MILLI (the policy's and the CLI's). */
#define UNITS_CPUS_MAX_MILLI 4096000ull /* 4096 CPUs */
int units_parse_cpus(const char *text, uint64_t *ret_milli, const char **why) CORDON_INTERNAL;
/* ".inf", "NaN" and friends: YAML reads them as numbers; cordon refuses them. */
bool units_is_non_finite(const char *text) CORDON_INTERNAL;

/* The largest unit that divides the value exactly ("2GiB", "1000"; "10m", "1500ms"). */
#define UNITS_FORMAT_MAX 32
void units_format_size(uint64_t bytes, char buf[UNITS_FORMAT_MAX]) CORDON_INTERNAL;
void units_format_duration(uint64_t ms, char buf[UNITS_FORMAT_MAX]) CORDON_INTERNAL;
