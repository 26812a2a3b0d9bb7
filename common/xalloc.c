/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Aborting allocation (xalloc.h). */
#include "config.h"

#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *xmalloc0(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		abort();
	return p;
}

char *xstrdup(const char *s)
{
	if (!s)
		return NULL;
	char *p = strdup(s);
	if (!p)
		abort();
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *p = NULL;
	if (vasprintf(&p, fmt, ap) < 0)
		abort();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = xvasprintf(fmt, ap);
	va_end(ap);
	return p;
}

void xstrv_free(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}
