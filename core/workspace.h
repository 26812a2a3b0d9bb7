/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one list of host directories no tier may take as a workspace
 * (docs/policy.md, "Forbidden workspaces"), checked by the sandbox port
 * before any driver sees the path. The check is made on an opened
 * descriptor (O_NOFOLLOW | O_DIRECTORY) by device and inode, so a symlink,
 * a bind mount or a path spelled another way cannot slip past it; where a
 * directory on the way up is a mount's root, what the mount shows is found
 * where its filesystem is mounted too (mountinfo, checked by device and
 * inode) and compared as well: a bind of a directory below a listed tree.
 */
#pragma once

#include "error.h"

/* 0 when `path` may be a workspace; else -EPERM (forbidden
 * `workspace_forbidden`, naming the directory it is or contains) or the
 * errno of opening it (invalid `workspace_invalid`). */
int workspace_check(const char *path, cordon_error **reterr) CORDON_INTERNAL;

/* The same list, checked on a directory a driver opened itself (fd, any open mode), named
 * path in messages: what the path led to when the driver opened it, which a rename since
 * workspace_check cannot change. */
int workspace_check_fd(int fd, const char *path, cordon_error **reterr) CORDON_INTERNAL;

/* workspace_check, and the workspace is not, nor lies above, any directory of held
 * (NULL-terminated; those that do not exist are skipped): forbidden workspace_forbidden. */
int workspace_check_held(const char *path, const char *const *held,
			 cordon_error **reterr) CORDON_INTERNAL;

/* The same checks for an extra mount (cordon_request_add_mount) already opened as fd: the
 * forbidden list and what cordon holds (held, as workspace_check_held). Forbidden
 * mount_forbidden, naming the directory. */
int workspace_check_mount_fd(int fd, const char *path, const char *const *held,
			     cordon_error **reterr) CORDON_INTERNAL;
