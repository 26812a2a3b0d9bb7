/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cordon command line: a thin shell over the public API only. */
#include "config.h"

#include "cli.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit codes of the CLI itself (the work's own status passes through `run`). */
#define EXIT_USAGE 64     /* EX_USAGE */
#define EXIT_REFUSED 77   /* EX_NOPERM: refused by policy */
#define EXIT_FAILED 70    /* EX_SOFTWARE: could not run */

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

/* ---- run / exec ------------------------------------------------------------- */

static int run_work(int argc, char **argv, bool shell)
{
	g_autofree char *trust = NULL, *tier = NULL, *timeout = NULL, *workdir = NULL;
	g_autofree char *policy = NULL, *plugin_dir = NULL, *workspace = NULL;
	g_auto(GStrv) env = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "trust", 't', 0, G_OPTION_ARG_STRING, &trust, "Trust level: trusted, semi-trusted (default), untrusted", "T" },
		{ "tier", 0, 0, G_OPTION_ARG_STRING, &tier, "Ask for this tier by name", "NAME" },
		{ "timeout", 0, 0, G_OPTION_ARG_STRING, &timeout, "Wall time limit (30s, 10m, 500ms)", "D" },
		{ "env", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &env, "Grant an environment variable", "K=V" },
		{ "workdir", 'w', 0, G_OPTION_ARG_STRING, &workdir, "Working directory inside the sandbox", "DIR" },
		{ "workspace", 0, 0, G_OPTION_ARG_FILENAME, &workspace, "Host directory the work may write (absolute)", "DIR" },
		{ "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy, "Policy file", "FILE" },
		{ "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &plugin_dir, "Plugin directory (absolute)", "DIR" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the result as JSON instead of passing output through", NULL },
		{ NULL }
	};
	const char *usage = shell ? "'SHELL LINE' - run a shell line in a sandbox"
				  : "-- ARGV... - run a program (no shell) in a sandbox";
	g_autoptr(GOptionContext) oc = g_option_context_new(usage);
	g_option_context_add_main_entries(oc, entries, NULL);
	g_option_context_set_strict_posix(oc, TRUE);
	g_autoptr(GError) gerr = NULL;
	if (!g_option_context_parse(oc, &argc, &argv, &gerr))
		return cli_usage_error("%s", gerr->message);
	int first = 1;
	if (first < argc && strcmp(argv[first], "--") == 0)
		first++;
	if (first >= argc)
		return cli_usage_error(shell ? "a shell line is required" : "a command is required after --");
	if (shell && argc - first != 1)
		return cli_usage_error("exec takes exactly one shell line (quote it)");

	uint64_t timeout_ms = 0;
	if (timeout && cli_parse_duration(timeout, &timeout_ms) < 0)
		return cli_usage_error("bad --timeout '%s': use a number with ms, s, m or h", timeout);

	cordon_context *ctx = NULL;
	int r = cli_open_context(policy, plugin_dir, false, &ctx);
	if (r)
		return r;
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new(trust ? trust : "semi-trusted");
	if (trust && cordon_trust_from_string(trust) == CORDON_TRUST_UNTRUSTED &&
	    strcmp(trust, "untrusted") != 0)
		fprintf(stderr, "cordon: unknown trust '%s': treated as untrusted\n", trust);
	if (tier)
		r = cordon_request_set_tier(req, tier, &err);
	if (r >= 0 && workspace)
		r = cordon_request_set_workspace(req, workspace, &err);
	for (size_t i = 0; r >= 0 && env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		if (!eq) {
			r = cli_usage_error("--env needs KEY=VALUE");
			goto out;
		}
		g_autofree char *key = g_strndup(env[i], eq - env[i]);
		r = cordon_request_grant_env(req, key, eq + 1, &err);
	}
	cordon_sandbox *sb = NULL;
	if (r >= 0)
		r = cordon_sandbox_open(ctx, req, &sb, &err);
	if (r < 0) {
		r = cli_report(err);
		goto out;
	}
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.flags = CORDON_RUN_LAST; /* one run, then close: the tier may spend the sandbox on it */
	o.timeout_ms = timeout_ms;
	o.workdir = workdir;
	cordon_result *res = NULL;
	if (shell)
		r = cordon_sandbox_exec(sb, argv[first], &o, &res, &err);
	else
		r = cordon_sandbox_run(sb, (const char *const *)argv + first, &o, &res, &err);
	if (r < 0) {
		r = cli_report(err);
	} else {
		r = cli_print_result(res, cordon_sandbox_tier(sb), cordon_sandbox_containment(sb), json);
		cordon_result_free(res);
	}
	cordon_sandbox_close(sb);
out:
	cordon_request_free(req);
	cordon_context_free(ctx);
	return r;
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

int cli_cmd_run(int argc, char **argv) { return run_work(argc, argv, false); }
int cli_cmd_exec(int argc, char **argv) { return run_work(argc, argv, true); }

static void usage(FILE *f)
{
	fprintf(f, "Usage: cordon COMMAND [OPTIONS]\n\nCommands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\n`cordon COMMAND --help` describes each command.\n");
}

int main(int argc, char **argv)
{
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
