/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "error.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

int error_setv(cordon_error **reterr, int errnum, cordon_error_class cls, const char *code,
	       const char *fmt, va_list ap)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == 0)
		errnum = EIO;
	if (!reterr || *reterr)
		return -errnum;
	cordon_error *e = g_new0(cordon_error, 1);
	e->cls = cls ? cls : CORDON_ERROR_TERMINAL;
	e->errnum = errnum;
	e->code = g_strdup(code ? code : ERRC(error));
	e->message = g_strdup_vprintf(fmt, ap);
	*reterr = e;
	return -errnum;
}

int error_set(cordon_error **reterr, int errnum, cordon_error_class cls, const char *code,
	      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = error_setv(reterr, errnum, cls, code, fmt, ap);
	va_end(ap);
	return r;
}

int error_propagate(cordon_error **to, cordon_error *from)
{
	if (!from)
		return 0;
	int r = -from->errnum;
	if (to && !*to)
		*to = from;
	else
		cordon_error_free(from);
	return r;
}

void error_prefix(cordon_error **err, const char *fmt, ...)
{
	if (!err || !*err)
		return;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *prefix = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	char *msg = g_strdup_printf("%s: %s", prefix, (*err)->message);
	g_free((*err)->message);
	(*err)->message = msg;
}

int error_from_plugin(cordon_error **reterr, struct cordon_plugin_error *perr, int rc,
		      const char *what)
{
	if (perr->err)
		return error_propagate(reterr, g_steal_pointer(&perr->err));
	if (rc >= 0)
		return rc; /* a count passes through */
	/* A driver that failed without saying why still fails closed. */
	return error_set(reterr, -rc, CORDON_ERROR_TERMINAL, ERRC(driver_failed), "%s: %s", what,
			 g_strerror(-rc));
}

cordon_error_class cordon_error_get_class(const cordon_error *err)
{
	return err ? err->cls : CORDON_ERROR_TERMINAL;
}

const char *cordon_error_get_code(const cordon_error *err) { return err ? err->code : ""; }

const char *cordon_error_get_message(const cordon_error *err) { return err ? err->message : ""; }

int cordon_error_get_errno(const cordon_error *err) { return err ? -err->errnum : 0; }

const char *cordon_error_class_name(cordon_error_class cls)
{
	switch (cls) {
	case CORDON_ERROR_TERMINAL: return "terminal";
	case CORDON_ERROR_FORBIDDEN: return "forbidden";
	case CORDON_ERROR_TRANSIENT: return "transient";
	case CORDON_ERROR_CANCELLED: return "cancelled";
	case CORDON_ERROR_INVALID: return "invalid";
	}
	return "unknown";
}

void cordon_error_free(cordon_error *err)
{
	if (!err)
		return;
	g_free(err->code);
	g_free(err->message);
	g_free(err);
}
