/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cordon command line: the dispatch of its subcommands (each in a file of its own,
 * their shared helpers in common.c), a thin shell over the public API only. */
#include "config.h"

#include "cli.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dispatch ----------------------------------------------------------------- */

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "run", cli_cmd_run, "run a program (no shell) in a sandbox" },
	{ "exec", cli_cmd_exec, "run a shell line in a sandbox" },
	{ "shell", cli_cmd_shell, "an interactive shell on a terminal in a sandbox" },
	{ "probe", cli_cmd_probe, "report each tier: available or not, containment, reason" },
	{ "plugins", cli_cmd_plugins, "list plugins: loaded or why refused" },
	{ "policy", cli_cmd_policy, "check a policy file, or show the policy in effect" },
	{ "explain", cli_cmd_explain, "explain which tier a request gets, or why it is refused" },
	{ "version", cli_cmd_version, "print versions" },
	{ "gc", cli_cmd_gc, "remove containers and guests that crashed hosts left behind" },
	{ "image", cli_cmd_image, "print a local image's pinned digest form (image pin REF)" },
	{ "server", cli_cmd_server, "serve E2B's API on this host's tiers (docs/server.md)" },
	{ "vm", cli_cmd_vm, "build a microVM guest: kernel + initramfs, and their sha256 pins" },
	{ "help", NULL, "describe a command (help COMMAND)" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: cordon COMMAND [OPTIONS]\n\nCommands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\n`cordon help COMMAND` (or `cordon COMMAND --help`) describes each command;\n"
		   "cordon(1) has the exit codes and the JSON output.\n");
}

static const struct command *find_command(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(name, c->name) == 0)
			return c;
	return NULL;
}

/* The command's name after "cordon" in its usage line ("Usage: cordon run ..."). */
static int dispatch(const struct command *c, int argc, char **argv)
{
	g_autofree char *prgname = g_strdup_printf("cordon %s", c->name);
	g_set_prgname(prgname);
	return c->fn(argc, argv);
}

/* `cordon help CMD [SUB]` is `cordon CMD [SUB] --help`. */
static int help(int argc, char **argv)
{
	if (argc < 3) {
		usage(stdout);
		return 0;
	}
	const struct command *c = find_command(argv[2]);
	if (!c)
		return cli_usage_error("unknown command '%s'", argv[2]);
	if (!c->fn) { /* help help */
		usage(stdout);
		return 0;
	}
	g_autoptr(GPtrArray) a = g_ptr_array_new();
	for (int i = 2; i < argc; i++)
		g_ptr_array_add(a, argv[i]);
	g_ptr_array_add(a, (char *)"--help");
	g_ptr_array_add(a, NULL);
	return dispatch(c, (int)a->len - 1, (char **)a->pdata);
}

int main(int argc, char **argv)
{
	/* A reader that goes away is an EPIPE to act on (run stops the work),
	 * not a death that would skip the sandbox's cleanup. The work gets
	 * default dispositions whatever ours are. */
	signal(SIGPIPE, SIG_IGN);
	cli_stdio_guard();
	cli_json_from_argv(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0)
		return help(argc, argv);
	if (strcmp(argv[1], "--version") == 0)
		return dispatch(find_command("version"), argc - 1, argv + 1);
	const struct command *c = find_command(argv[1]);
	if (c)
		return dispatch(c, argc - 1, argv + 1);
	return cli_usage_error("unknown command '%s'", argv[1]);
}
