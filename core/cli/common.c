/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the subcommands share: reporting an error, a usage error, finding the policy and
 * opening the context. (main.c only dispatches: no subcommand calls back into it.) */
#include "config.h"

#include "cli.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_report(cordon_error *err)
{
	fprintf(stderr, "cordon: %s [%s]: %s\n", cordon_error_class_name(cordon_error_get_class(err)),
		cordon_error_get_code(err), cordon_error_get_message(err));
	int code = cordon_error_get_class(err) == CORDON_ERROR_FORBIDDEN ? EXIT_REFUSED
		   : cordon_error_get_class(err) == CORDON_ERROR_INVALID  ? EXIT_USAGE
									   : EXIT_FAILED;
	cordon_error_free(err);
	return code;
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "cordon: %s (try --help)\n", msg);
	return EXIT_USAGE;
}

/* The policy, in this order: --policy FILE, $CORDON_POLICY, the system file
 * $sysconfdir/cordon/policy.yaml when it exists, the built-in default. */
const char *cli_policy_path(const char *flag)
{
	if (flag)
		return flag;
	const char *env = g_getenv("CORDON_POLICY");
	if (env && *env)
		return env;
	static const char sys[] = CORDON_SYSCONFDIR "/cordon/policy.yaml";
	if (g_file_test(sys, G_FILE_TEST_EXISTS))
		return sys;
	return NULL;
}

/* The command keeps probe answers across its runs (cordon_options_set_probe_cache) unless
 * told to ask afresh (`cordon probe --fresh`). */
static bool probe_fresh;

void cli_set_probe_fresh(bool fresh)
{
	probe_fresh = fresh;
}

int cli_open_context(const char *policy_flag, const char *plugin_dir, bool all_plugins,
		     cordon_context **ret)
{
	cordon_error *err = NULL;
	cordon_options *o = cordon_options_new();
	const char *policy = cli_policy_path(policy_flag);
	const char *dir = plugin_dir ? plugin_dir : g_getenv("CORDON_PLUGIN_DIR");
	int r = 0;
	if (policy)
		r = cordon_options_set_policy_file(o, policy, &err);
	if (r >= 0 && dir && *dir)
		r = cordon_options_set_plugin_dir(o, dir, &err);
	cordon_options_set_load_all_plugins(o, all_plugins);
	cordon_options_set_probe_cache(o, !probe_fresh);
	if (r >= 0)
		r = cordon_context_new(o, ret, &err);
	cordon_options_free(o);
	return r < 0 ? cli_report(err) : 0;
}
