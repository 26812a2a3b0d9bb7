/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the loader decides from a plugin's ELF file before mapping it. */
#pragma once

#include "error.h"

#include <glib.h>
#include <stdint.h>

/* Checks the shared object open at fd (size bytes),
 * reading it only through fd: an ELF header of this host's class and type
 * ET_DYN, no interpreter, a program header table and every loadable segment
 * inside the file (mapping past the end would kill us with SIGBUS on first
 * touch), and library search paths (RPATH, RUNPATH, a DT_NEEDED with a slash)
 * only in the system library directories or plugin_dir. Returns 0, or
 * -ENOEXEC (not a loadable object) or -EPERM (a search path elsewhere) with a
 * one-line reason in *ret_why. */
int elfcheck_fd(int fd, uint64_t size, const char *plugin_dir, char **ret_why) CORDON_INTERNAL;
/* What the program or shared object open at fd (size bytes) asks the loader for: its
 * interpreter (*ret_interp, g_free; NULL when it names none; pass NULL to skip) and its
 * DT_NEEDED names, appended to needed (g_free'd strings). 0, or -ENOEXEC with *ret_why. */
int elfcheck_deps(int fd, uint64_t size, char **ret_interp, GPtrArray *needed,
		  char **ret_why) CORDON_INTERNAL;
