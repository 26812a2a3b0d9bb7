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

bool cli_json;

void cli_json_from_argv(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			cli_json = true;
}

/* {"error":{"class","code","message","errno"}[,"decision":{...}]} on stdout, where a
 * --json reader looks; the human line stays on stderr. */
static void print_error_json(const char *cls, const char *code, const char *msg, int errnum,
			     const char *decision_json)
{
	g_autofree char *jc = cli_json_string(code, strlen(code));
	g_autofree char *jm = cli_json_string(msg, strlen(msg));
	printf("{\"error\":{\"class\":\"%s\",\"code\":%s,\"message\":%s,\"errno\":%d}%s%s}\n", cls,
	       jc, jm, errnum, decision_json ? ",\"decision\":" : "",
	       decision_json ? decision_json : "");
	fflush(stdout);
}

int cli_exit_for_class(cordon_error_class cls)
{
	return cls == CORDON_ERROR_FORBIDDEN ? EXIT_REFUSED
	       : cls == CORDON_ERROR_INVALID ? EXIT_USAGE
					     : EXIT_FAILED;
}

int cli_report_decision(cordon_error *err, const char *decision_json)
{
	cordon_error_class cls = cordon_error_get_class(err);
	/* A message may quote what the work or a file supplied: never raw controls. */
	g_autofree char *msg = cli_printable(cordon_error_get_message(err));
	fprintf(stderr, "cordon: %s [%s]: %s\n", cordon_error_class_name(cls),
		cordon_error_get_code(err), msg);
	if (cli_json)
		print_error_json(cordon_error_class_name(cls), cordon_error_get_code(err),
				 cordon_error_get_message(err), abs(cordon_error_get_errno(err)),
				 decision_json);
	int code = cli_exit_for_class(cls);
	cordon_error_free(err);
	return code;
}

int cli_report(cordon_error *err) { return cli_report_decision(err, NULL); }

static int cli_fail_v(int exit_code, const char *cls, const char *code, const char *fmt, va_list ap)
{
	g_autofree char *raw = g_strdup_vprintf(fmt, ap);
	g_autofree char *msg = cli_printable(raw);
	fprintf(stderr, "cordon: %s%s\n", msg, exit_code == EXIT_USAGE ? " (try --help)" : "");
	if (cli_json)
		print_error_json(cls, code, raw, 0, NULL);
	return exit_code;
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = cli_fail_v(EXIT_USAGE, "invalid", "usage", fmt, ap);
	va_end(ap);
	return r;
}

int cli_refuse(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = cli_fail_v(EXIT_REFUSED, "forbidden", "refused", fmt, ap);
	va_end(ap);
	return r;
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = cli_fail_v(EXIT_FAILED, "terminal", "failed", fmt, ap);
	va_end(ap);
	return r;
}

/* Controls (a terminal would act on them) shown as \xNN; newlines kept between lines. */
char *cli_printable(const char *s)
{
	GString *o = g_string_new(NULL);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			g_string_append_printf(o, "\\x%02x", *p);
		else
			g_string_append_c(o, (char)*p);
	}
	return g_string_free(o, FALSE);
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

void cli_set_probe_fresh(bool fresh) { probe_fresh = fresh; }

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
