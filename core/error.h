/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal error helpers: one error object model for the core and plugins. */
#pragma once

#include "errcodes.h" /* ERRC(code): every code the core sets, by name */

#include <cordon/cordon.h>
#include <cordon/plugin.h>
#include <stdarg.h>

#include "visibility.h"

struct cordon_error {
	cordon_error_class cls;
	int errnum; /* positive errno */
	char *code;
	char *message;
};

/* A plugin-facing error slot: the core hands plugins a pointer to one. */
struct cordon_plugin_error {
	cordon_error *err;
};

/* Sets *reterr (when reterr is not NULL and *reterr is NULL: the first error
 * wins) and returns -errnum, so `return error_set(...)` reads well. */
int error_set(cordon_error **reterr, int errnum, cordon_error_class cls, const char *code,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6))) CORDON_INTERNAL;
int error_setv(cordon_error **reterr, int errnum, cordon_error_class cls, const char *code,
	       const char *fmt, va_list ap) __attribute__((format(printf, 5, 0))) CORDON_INTERNAL;
/* Moves *from into *to (to may be NULL: from is freed). Returns -errnum of from. */
int error_propagate(cordon_error **to, cordon_error *from) CORDON_INTERNAL;
/* Prefixes the message of *err (when set) with "prefix: ". */
void error_prefix(cordon_error **err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3))) CORDON_INTERNAL;

/* Converts what a plugin left in its error slot (or a bare errno) into a
 * cordon_error; used after every call into a driver. A non-negative rc
 * without an error passes through (a count). */
int error_from_plugin(cordon_error **reterr, struct cordon_plugin_error *perr, int rc,
		      const char *what) CORDON_INTERNAL;
