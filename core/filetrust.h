/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whether a file cordon takes code or configuration from (a plugin, the plugin
 * directory, a policy) could be changed by anyone but root and the user
 * running cordon. One set of rules for all of them (and for the audit trail, which
 * is written, not read) (docs/threat-model.md,
 * "Plugin loader and policy file"). */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/stat.h>

/* st, the status of path (opened, never looked up again): owned by root or
 * by us, not writable by group or others (unless a directory with the sticky
 * bit and sticky_ok), and a regular file has no other hard link. Returns 0,
 * or -EPERM with a one-line reason naming path in *ret_why. */
int filetrust_check_stat(const struct stat *st, const char *path, bool sticky_ok,
			 char **ret_why) CORDON_INTERNAL;

/* The directory open at dirfd (known as path) and every directory above it,
 * walked through ".." on descriptors up to the root: each must pass
 * filetrust_check_stat with the sticky bit allowed. Returns 0, or -errno with
 * a one-line reason in *ret_why. */
int filetrust_check_dirs(int dirfd, const char *path, char **ret_why) CORDON_INTERNAL;

/* Opens base in the directory open at dirfd (path names it in messages)
 * read-only: a regular file, not a symlink, passing filetrust_check_stat on
 * its descriptor. Returns 0, the fd and (ret_st not NULL) its status, or
 * -errno (-EPERM: untrusted, -ELOOP: a symlink, -EINVAL: not a regular file,
 * else why it could not be opened) with a one-line reason in *ret_why. */
int filetrust_openat(int dirfd, const char *base, const char *path, int *ret_fd,
		     struct stat *ret_st, char **ret_why) CORDON_INTERNAL;

/* filetrust_openat for path, in a directory that passes
 * filetrust_check_dirs (symlinks above the file are followed, and what they
 * lead to is checked). */
int filetrust_open(const char *path, int *ret_fd, char **ret_why) CORDON_INTERNAL;

/* filetrust_open with the caller's access flags and creation mode: the audit
 * trail opens O_WRONLY | O_APPEND | O_CREAT. With O_CREAT the directories
 * are checked before anything is created in them. */
int filetrust_open_flags(const char *path, int flags, mode_t mode, int *ret_fd,
			 char **ret_why) CORDON_INTERNAL;
