/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host services table: everything a plugin gets from the core. */
#include "config.h"

#include "context.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void host_log(uint32_t level, const char *plugin, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	/* Library code logs at debug only; the host decides (G_MESSAGES_DEBUG). */
	g_debug("[%s] %s", plugin ? plugin : "core", msg);
}

static int host_error_set(cordon_plugin_error *err, int errnum, uint32_t cls, const char *code,
			  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = error_setv(err ? &err->err : NULL, errnum, cls, code, fmt, ap);
	va_end(ap);
	return r;
}

static void *host_alloc(size_t n) { return g_malloc0(n ? n : 1); }
static void host_free(void *p) { g_free(p); }
static char *host_strdup(const char *s) { return g_strdup(s); }

static int host_register_driver(cordon_plugin_registrar *reg, const cordon_plugin_driver *drv)
{
	if (!reg)
		return -EINVAL;
	int r = context_register_driver(reg->ctx, reg->plugin, drv, &reg->err);
	if (r == 0)
		reg->count++;
	return r;
}

static bool host_path_is_confined(const char *path)
{
	if (!path || !*path || path[0] == '/' || strlen(path) >= 4096)
		return false;
	g_auto(GStrv) parts = g_strsplit(path, "/", -1);
	for (size_t i = 0; parts[i]; i++)
		if (strcmp(parts[i], "..") == 0)
			return false;
	return true;
}

const cordon_host cordon_host_services = {
	.size = sizeof(cordon_host),
	.abi_major = CORDON_PLUGIN_ABI_MAJOR,
	.abi_minor = CORDON_PLUGIN_ABI_MINOR,
	.log = host_log,
	.error_set = host_error_set,
	.alloc = host_alloc,
	.free = host_free,
	.strdup = host_strdup,
	.register_driver = host_register_driver,
	.path_is_confined = host_path_is_confined,
	/* config getters, spawn, find_program, path_is_confined: see issue 2 loader work */
};
