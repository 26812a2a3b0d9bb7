/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon server: runs cordon-server, the E2B-compatible daemon (server/,
 * docs/server.md). A program of its own so that libmicrohttpd, GnuTLS and
 * json-c are loaded only by the daemon, never by every `cordon run`
 * (docs/decisions.md). It is looked for beside this program (the build tree)
 * and then in the installed libexec directory.
 */
#include "config.h"

#include "cli.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cli_cmd_server(int argc, char **argv)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *dir = self ? g_path_get_dirname(self) : NULL;
	g_autofree char *beside = dir ? g_build_filename(dir, "cordon-server", NULL) : NULL;
	const char *candidates[] = { beside, CORDON_LIBEXECDIR "/cordon-server" };
	argv[0] = (char *)"cordon-server";
	for (size_t i = 0; i < G_N_ELEMENTS(candidates); i++)
		if (candidates[i] && access(candidates[i], X_OK) == 0)
			execv(candidates[i], argv);
	fprintf(stderr,
		"cordon server: cordon-server is not installed (%s); it is built when "
		"configure finds libmicrohttpd and json-c\n",
		g_strerror(errno));
	return 1;
}
