/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The meaning of a file operation's errno, once for every tier (fserror.h). */
#include "config.h"

#include "fserror.h"
#include "errcodes.h"
#include "fsops.h"
#include "pathres.h"

#include <cordon/plugin.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Every code's class, from the one registry (errcodes.def): the agent and the local driver
 * class the codes its file operations report, and the agent's answers, the same way. */
static const struct {
	const char *code;
	uint32_t cls;
} classes[] = {
#define ERRCODE(code_, cls_, meaning_) { #code_, CORDON_PLUGIN_ERROR_##cls_ },
#include "errcodes.def"
#undef ERRCODE
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
		set(ret, EPERM, ERRC(sandbox_path_escape), op, path,
		    " resolves outside the sandbox");
		return;
	}
	switch (e) {
	case ENOENT:
		set(ret, ENOENT, ERRC(not_found), op, path, ": no such file or directory");
		return;
	case ENOTDIR:
		set(ret, ENOTDIR, ERRC(not_found), op, path, ": a component is not a directory");
		return;
	case EISDIR: set(ret, EISDIR, ERRC(not_a_file), op, path, " is a directory"); return;
	case EINVAL: set(ret, EINVAL, ERRC(not_a_file), op, path, " is not a regular file"); return;
	case E2BIG: {
		char what[128];
		snprintf(what, sizeof(what),
			 " has more than %d entries or is deeper than %d "
			 "directories",
			 FSOPS_MAX_ENTRIES, FSOPS_MAX_DEPTH);
		set(ret, E2BIG, ERRC(limit_exceeded), op, path, what);
		return;
	}
	case EFBIG:
		set(ret, EFBIG, ERRC(limit_exceeded), op, path, " is larger than the limit");
		return;
	case ENAMETOOLONG:
		set(ret, ENAMETOOLONG, ERRC(path_too_long), op, path, " is too long");
		return;
	}
	char what[128];
	snprintf(what, sizeof(what), ": %s", strerror(e));
	set(ret, e, ERRC(io_error), op, path, what);
}
