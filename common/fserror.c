/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The meaning of a file operation's errno, once for every tier (fserror.h). */
#include "config.h"

#include "fserror.h"
#include "fsops.h"
#include "pathres.h"

#include <cordon/plugin.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *code;
	uint32_t cls;
} classes[] = {
	{ "sandbox_path_escape", CORDON_PLUGIN_ERROR_FORBIDDEN },
	{ "limit_exceeded", CORDON_PLUGIN_ERROR_FORBIDDEN },
	{ "path_too_long", CORDON_PLUGIN_ERROR_INVALID },
	{ "not_found", CORDON_PLUGIN_ERROR_TERMINAL },
	{ "not_a_file", CORDON_PLUGIN_ERROR_TERMINAL },
	{ "io_error", CORDON_PLUGIN_ERROR_TERMINAL },
};

uint32_t fserror_class(const char *code)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (strcmp(code, classes[i].code) == 0)
			return classes[i].cls;
	return CORDON_PLUGIN_ERROR_TERMINAL;
}

/* what follows the quoted path: " is ..." or ": ..." */
static void set(fserror *e, int errnum, const char *code, const char *op, const char *path,
		const char *what)
{
	e->errnum = errnum;
	e->code = code;
	e->cls = fserror_class(code);
	snprintf(e->message, sizeof(e->message), "%s: '%.256s'%s", op, path, what);
}

void fserror_describe(int r, const char *op, const char *path, fserror *ret)
{
	int e = r < 0 ? -r : r;
	if (!path)
		path = "";
	if (pathres_is_escape(e)) {
		set(ret, EPERM, "sandbox_path_escape", op, path, " resolves outside the sandbox");
		return;
	}
	switch (e) {
	case ENOENT:
		set(ret, ENOENT, "not_found", op, path, ": no such file or directory");
		return;
	case ENOTDIR:
		set(ret, ENOTDIR, "not_found", op, path, ": a component is not a directory");
		return;
	case EISDIR:
		set(ret, EISDIR, "not_a_file", op, path, " is a directory");
		return;
	case EINVAL:
		set(ret, EINVAL, "not_a_file", op, path, " is not a regular file");
		return;
	case E2BIG: {
		char what[128];
		snprintf(what, sizeof(what), " has more than %d entries or is deeper than %d "
			 "directories", FSOPS_MAX_ENTRIES, FSOPS_MAX_DEPTH);
		set(ret, E2BIG, "limit_exceeded", op, path, what);
		return;
	}
	case EFBIG:
		set(ret, EFBIG, "limit_exceeded", op, path, " is larger than the limit");
		return;
	case ENAMETOOLONG:
		set(ret, ENAMETOOLONG, "path_too_long", op, path, " is too long");
		return;
	}
	char what[128];
	snprintf(what, sizeof(what), ": %s", strerror(e));
	set(ret, e, "io_error", op, path, what);
}
