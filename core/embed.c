/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a host needs around the API itself (docs/embedding.md, "Embedding from other
 * languages"): the runtime version, a free() of the library's, the log handler, and the
 * accessors of ids. */
#include "config.h"

#include "decision.h"

#include <stdio.h>
#include <stdlib.h>

const char *cordon_version(int *ret_major, int *ret_minor, int *ret_micro)
{
	int v[3] = { 0, 0, 0 };
	/* PACKAGE_VERSION is "MAJOR.MINOR.MICRO" (configure.ac's AC_INIT). */
	if (sscanf(PACKAGE_VERSION, "%d.%d.%d", &v[0], &v[1], &v[2]) < 2)
		v[0] = v[1] = v[2] = 0;
	if (ret_major)
		*ret_major = v[0];
	if (ret_minor)
		*ret_minor = v[1];
	if (ret_micro)
		*ret_micro = v[2];
	return PACKAGE_VERSION;
}

void cordon_free(void *p)
{
	/* Everything the API hands out for free() comes from g_malloc, which is malloc. */
	free(p);
}

/* ---- the log handler ------------------------------------------------------------ */

/* Readers are the messages (concurrent); the writer is cordon_set_log_handler, which so
 * waits until no message is still on its way to the handler it replaces. */
static GRWLock log_lock;
static cordon_log_fn log_fn;
static void *log_user;
static cordon_log_level log_max;

static cordon_log_level level_of(GLogLevelFlags flags)
{
	if (flags & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		return CORDON_LOG_ERROR;
	if (flags & G_LOG_LEVEL_WARNING)
		return CORDON_LOG_WARNING;
	if (flags & (G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO))
		return CORDON_LOG_INFO;
	return CORDON_LOG_DEBUG;
}

static void log_forward(const gchar *domain, GLogLevelFlags flags, const gchar *message,
			gpointer unused)
{
	(void)unused;
	g_rw_lock_reader_lock(&log_lock);
	cordon_log_fn fn = log_fn;
	cordon_log_level level = level_of(flags);
	if (fn && level <= log_max)
		fn(log_user, level, message);
	g_rw_lock_reader_unlock(&log_lock);
	if (!fn)
		g_log_default_handler(domain, flags, message, NULL);
}

void cordon_set_log_handler(cordon_log_fn fn, void *user, cordon_log_level max_level)
{
	static gsize installed;
	/* Only the library's own domain (core.am's G_LOG_DOMAIN): the host's GLib
	 * messages stay the host's. */
	if (g_once_init_enter(&installed)) {
		g_log_set_handler(G_LOG_DOMAIN,
				  G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL | G_LOG_FLAG_RECURSION,
				  log_forward, NULL);
		g_once_init_leave(&installed, 1);
	}
	g_rw_lock_writer_lock(&log_lock);
	log_fn = fn;
	log_user = user;
	log_max = max_level;
	g_rw_lock_writer_unlock(&log_lock);
}

/* ---- ids ------------------------------------------------------------------------ */

const char *cordon_decision_id(const cordon_decision *d) { return d && d->id[0] ? d->id : NULL; }

const char *cordon_context_audit_path(const cordon_context *ctx)
{
	return ctx ? ctx->policy->audit_path : NULL;
}
