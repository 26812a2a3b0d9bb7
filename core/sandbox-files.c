/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sandbox port's file operations (cordon_sandbox_read_file, write_file, glob, walk):
 * each checks the path, calls the driver's one operation and converts its error, the same
 * for every tier. Runs and serves are sandbox.c's. */
#include "config.h"

#include "sandbox.h"

#include <errno.h>
#include <string.h>

/* ---- file operations -------------------------------------------------------------- */

static int emit_bytes(void *ctx, const void *data, size_t len)
{
	GByteArray *b = ctx;
	if (b->len + len > SANDBOX_READ_MAX)
		return -EFBIG;
	g_byte_array_append(b, data, (guint)len);
	return 0;
}

static int emit_path(void *ctx, const void *data, size_t len)
{
	GPtrArray *a = ctx;
	g_ptr_array_add(a, g_strndup(data, len));
	return 0;
}

static int path_arg(const char *path, cordon_error **reterr)
{
	if (!path)
		return sandbox_invalid(reterr, "a path is required");
	return 0;
}

int cordon_sandbox_read_file(cordon_sandbox *sb, const char *path, void **ret_data, size_t *ret_len,
			     cordon_error **reterr)
{
	if (!sb || !ret_data || path_arg(path, reterr) < 0)
		return sandbox_invalid(reterr, "sandbox, path and ret_data are required");
	if (!sb->tier->driver->ops.read_file)
		return sandbox_unsupported(sb, "read_file", reterr);
	if (sandbox_check_paused(sb, reterr) < 0)
		return -EBUSY;
	g_autoptr(GByteArray) b = g_byte_array_new();
	struct cordon_plugin_error perr = { 0 };
	int r = sb->tier->driver->ops.read_file(sb->state, path, SANDBOX_READ_MAX, emit_bytes, b,
						&perr);
	if (r == -EFBIG && !perr.err)
		return error_set(reterr, EFBIG, CORDON_ERROR_FORBIDDEN, ERRC(limit_exceeded),
				 "%s is larger than %u bytes", path, SANDBOX_READ_MAX);
	r = error_from_plugin(reterr, &perr, r, "read_file");
	if (r < 0)
		return r;
	if (ret_len)
		*ret_len = b->len;
	g_byte_array_append(b, (const guint8 *)"", 1);
	*ret_data = g_byte_array_free(g_steal_pointer(&b), FALSE);
	return 0;
}

int cordon_sandbox_write_file(cordon_sandbox *sb, const char *path, const void *data, size_t len,
			      cordon_error **reterr)
{
	if (!sb || path_arg(path, reterr) < 0 || (!data && len))
		return sandbox_invalid(reterr, "sandbox, path and data are required");
	if (!sb->tier->driver->ops.write_file)
		return sandbox_unsupported(sb, "write_file", reterr);
	if (sandbox_check_paused(sb, reterr) < 0)
		return -EBUSY;
	struct cordon_plugin_error perr = { 0 };
	int r = sb->tier->driver->ops.write_file(sb->state, path, data ? data : "", len, &perr);
	return error_from_plugin(reterr, &perr, r, "write_file");
}

static int cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef int (*list_op)(void *, const char *, cordon_plugin_emit_fn, void *, cordon_plugin_error *);

static int list_paths(cordon_sandbox *sb, list_op op, const char *what, const char *arg,
		      char ***ret_paths, cordon_error **reterr)
{
	if (!sb || !arg || !ret_paths)
		return sandbox_invalid(reterr, "sandbox, argument and ret_paths are required");
	if (!op)
		return sandbox_unsupported(sb, what, reterr);
	if (sandbox_check_paused(sb, reterr) < 0)
		return -EBUSY;
	g_autoptr(GPtrArray) a = g_ptr_array_new_with_free_func(g_free);
	struct cordon_plugin_error perr = { 0 };
	int r = op(sb->state, arg, emit_path, a, &perr);
	r = error_from_plugin(reterr, &perr, r, what);
	if (r < 0)
		return r;
	g_ptr_array_sort(a, cmp_str);
	int n = (int)a->len;
	g_ptr_array_add(a, NULL);
	g_ptr_array_set_free_func(a, NULL);
	*ret_paths = (char **)g_ptr_array_free(g_steal_pointer(&a), FALSE);
	return n;
}

int cordon_sandbox_glob(cordon_sandbox *sb, const char *pattern, char ***ret_paths,
			cordon_error **reterr)
{
	return list_paths(sb, sb ? sb->tier->driver->ops.glob : NULL, "glob", pattern, ret_paths,
			  reterr);
}

int cordon_sandbox_walk(cordon_sandbox *sb, const char *dir, char ***ret_paths,
			cordon_error **reterr)
{
	return list_paths(sb, sb ? sb->tier->driver->ops.walk : NULL, "walk", dir, ret_paths,
			  reterr);
}

void cordon_strv_free(char **strv) { g_strfreev(strv); }
