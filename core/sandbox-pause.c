/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cordon_sandbox_pause and cordon_sandbox_resume: the driver's pause and resume (ABI 1.4)
 * where the tier has them, and the refusal of runs and file operations while paused, the
 * same for every tier. */
#include "config.h"

#include "sandbox.h"

#include <errno.h>

int sandbox_check_paused(cordon_sandbox *sb, cordon_error **reterr)
{
	g_mutex_lock(&sb->lock);
	bool paused = sb->paused;
	g_mutex_unlock(&sb->lock);
	if (!paused)
		return 0;
	return error_set(reterr, EBUSY, CORDON_ERROR_TERMINAL, ERRC(sandbox_paused),
			 "the sandbox is paused: resume it first");
}

/* One pause or resume, at most one at a time per sandbox (pausing is set before the
 * driver's call, so that nothing new starts while it freezes). */
static int set_paused(cordon_sandbox *sb, bool pause, cordon_error **reterr)
{
	if (!sb)
		return sandbox_invalid(reterr, "a sandbox is required");
	const char *op = pause ? "pause" : "resume";
	int (*fn)(void *, cordon_plugin_error *) = pause ? sb->tier->driver->ops.pause
							 : sb->tier->driver->ops.resume;
	if (!fn)
		return sandbox_unsupported(sb, op, reterr);
	g_mutex_lock(&sb->lock);
	bool noop = sb->paused == pause || sb->pausing;
	if (!noop)
		sb->pausing = true;
	g_mutex_unlock(&sb->lock);
	if (noop)
		return 0;
	if (pause) { /* refused from now on */
		g_mutex_lock(&sb->lock);
		sb->paused = true;
		g_mutex_unlock(&sb->lock);
	}
	struct cordon_plugin_error perr = { 0 };
	int r = error_from_plugin(reterr, &perr, fn(sb->state, &perr), op);
	g_mutex_lock(&sb->lock);
	sb->paused = r < 0 ? !pause : pause;
	sb->pausing = false;
	g_mutex_unlock(&sb->lock);
	return r < 0 ? r : 0;
}

int cordon_sandbox_pause(cordon_sandbox *sb, cordon_error **reterr)
{
	return set_paused(sb, true, reterr);
}

int cordon_sandbox_resume(cordon_sandbox *sb, cordon_error **reterr)
{
	return set_paused(sb, false, reterr);
}
