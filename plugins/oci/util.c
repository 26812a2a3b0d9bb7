/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Allocation and string vectors for the OCI library (no glib in plugins). */
#include "config.h"

#include "oci.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void strv_push(oci_strv *s, char *owned)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = realloc(s->v, s->cap * sizeof(char *));
		if (!s->v)
			abort();
	}
	s->v[s->n++] = owned;
	s->v[s->n] = NULL;
}

void oci_strv_add(oci_strv *s, const char *str) { strv_push(s, xstrdup(str)); }

void oci_strv_addf(oci_strv *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strv_push(s, xvasprintf(fmt, ap));
	va_end(ap);
}

void oci_strv_clear(oci_strv *s) { xstrv_free(oci_strv_steal(s)); }

char **oci_strv_steal(oci_strv *s)
{
	char **v = s->v;
	if (!v)
		v = xmalloc0(sizeof(char *));
	s->v = NULL;
	s->n = s->cap = 0;
	return v;
}

size_t oci_strv_length(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}
