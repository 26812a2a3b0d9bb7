/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Path confinement: resolving a caller's relative path under a root
 * directory file descriptor so that nothing outside the root is ever opened,
 * created or followed (DESIGN §8.3).
 *
 * Semantics are those of openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS):
 *  - absolute paths, and ".." that would climb above the root, fail -EXDEV;
 *    a path whose own ".." components climb above its start ("a/../../b")
 *    fails -EXDEV before any lookup, whether "a" exists or what it links to;
 *  - symbolic links are followed only while they stay beneath the root: an
 *    absolute target, or a relative one that climbs out, fails -EXDEV,
 *    whether the target exists or not (a dangling link never leads out);
 *  - "magic" links (/proc/PID/fd/N and friends) fail -ELOOP;
 *  - more than PATHRES_MAX_LINKS links fail -ELOOP.
 * Where openat2 is missing (-ENOSYS) the same semantics come from a walk one
 * component at a time with O_NOFOLLOW under directory fds we hold: ".." pops
 * to a held fd (never asks the kernel for ".."), a link's text is read from
 * the very inode opened (readlinkat on an O_PATH fd) and spliced into the
 * rest of the path, so a concurrent swap of a directory for a symlink can make
 * a lookup fail but never makes it leave the root.
 *
 * Known limit (both methods): a directory that is renamed to a place outside
 * the root while a lookup is inside it takes the lookup with it. That needs
 * write access outside the root, which the kernel tier does not give.
 */
#pragma once

#include "visibility.h"

#include <stdbool.h>
#include <sys/types.h>

/* Links followed in one resolution before -ELOOP (the kernel's own limit). */
#define PATHRES_MAX_LINKS 40
/* Directories deep a walk may hold at once before -ENAMETOOLONG. */
#define PATHRES_MAX_DEPTH 256

typedef enum pathres_method {
	PATHRES_AUTO = 0,    /* openat2, falling back to the walk on -ENOSYS */
	PATHRES_OPENAT2 = 1, /* openat2 only (fails -ENOSYS where missing) */
	PATHRES_WALK = 2,    /* the O_NOFOLLOW component walk only */
} pathres_method;

/* Test hook: forces a method process-wide. Not for production callers. */
void pathres_set_method(pathres_method m) CORDON_INTERNAL;
/* The method a lookup uses now (AUTO resolved to what this kernel has). */
pathres_method pathres_effective_method(void) CORDON_INTERNAL;

/* Opens path beneath root_fd with open(2) flags (O_CLOEXEC is always added;
 * mode applies with O_CREAT). "" and "." open the root itself. Returns a new
 * fd or a negative errno: -EXDEV (escape), -ELOOP (magic link or too many
 * links), -ENAMETOOLONG, or what open(2) says. */
int pathres_open(int root_fd, const char *path, int flags, mode_t mode) CORDON_INTERNAL;

/* Resolves the parent directory of path (creating missing directories with
 * mkdirat, one component at a time under a resolved parent, when create is
 * true) and returns an O_PATH directory fd; the final component is copied to
 * ret_name (NAME_MAX + 1 bytes) and is never resolved, so a caller acting on
 * (dirfd, name) with *at() calls never follows it. A final component of "",
 * "." or ".." is refused (-EISDIR, or -EXDEV when it climbs out). */
int pathres_open_parent(int root_fd, const char *path, bool create, mode_t dir_mode,
			char *ret_name) CORDON_INTERNAL;

/* True when err is one of the errors that mean "this path leaves the root". */
bool pathres_is_escape(int err) CORDON_INTERNAL;
