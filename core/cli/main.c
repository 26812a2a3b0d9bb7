/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cordon command line: a thin shell over the public API only. */
#include "config.h"

#include "cli.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (r >= 0)
		r = cordon_context_new(o, ret, &err);
	cordon_options_free(o);
	return r < 0 ? cli_report(err) : 0;
}

/* ---- dispatch ----------------------------------------------------------------- */

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "run", cli_cmd_run, "run a program (no shell) in a sandbox" },
	{ "exec", cli_cmd_exec, "run a shell line in a sandbox" },
	{ "probe", cli_cmd_probe, "report each tier: available or not, containment, reason" },
	{ "plugins", cli_cmd_plugins, "list plugins: loaded or why refused" },
	{ "policy", cli_cmd_policy, "check a policy file, or show the policy in effect" },
	{ "explain", cli_cmd_explain, "explain which tier a request gets, or why it is refused" },
	{ "version", cli_cmd_version, "print versions" },
	{ "gc", cli_cmd_gc, "remove containers and guests that crashed hosts left behind" },
	{ "image", cli_cmd_image, "print a local image's pinned digest form (image pin REF)" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: cordon COMMAND [OPTIONS]\n\nCommands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\n`cordon COMMAND --help` describes each command.\n");
}

int main(int argc, char **argv)
{
	/* A reader that goes away is an EPIPE to act on (run stops the work),
	 * not a death that would skip the sandbox's cleanup. The work gets
	 * default dispositions whatever ours are. */
	signal(SIGPIPE, SIG_IGN);
	cli_stdio_guard();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cli_cmd_version(argc - 1, argv + 1);
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(argv[1], c->name) == 0)
			return c->fn(argc - 1, argv + 1);
	return cli_usage_error("unknown command '%s'", argv[1]);
}
