/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Allocation for the libc-only code (plugins, the agent's host client): exhaustion is not an
 * error path a plugin can honour, so these abort instead of returning NULL. */
#pragma once

#include "visibility.h"

#include <stdarg.h>
#include <stddef.h>

void *xmalloc0(size_t n) CORDON_INTERNAL;     /* zeroed; 0 bytes allocates 1 */
char *xstrdup(const char *s) CORDON_INTERNAL; /* NULL gives NULL */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2))) CORDON_INTERNAL;
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0))) CORDON_INTERNAL;
void xstrv_free(char **v) CORDON_INTERNAL; /* a NULL-terminated vector and its strings */
