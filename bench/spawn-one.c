/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The minimal C launcher a whole-process cordon run is compared with: it
 * spawns its arguments once, waits, and exits with their status, so both
 * sides pay for two process creations. */
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv)
{
	pid_t pid;
	int st;
	if (argc < 2 || posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ) != 0) {
		fprintf(stderr, "usage: spawn-one /ABSOLUTE/PROGRAM [ARGS...]\n");
		return 127;
	}
	if (waitpid(pid, &st, 0) < 0)
		return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
