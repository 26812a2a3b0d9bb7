/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File operations of every tier (the local driver, and cordon-agent inside containers
 * and VMs), all under a root directory fd through
 * pathres (so nothing outside the root is read, written, listed or removed).
 * They return 0 (or what emit returned to stop early) or a negative errno;
 * the driver turns errnos into errors that name only the relative path.
 *
 * Bounds (fail with -E2BIG rather than truncate silently):
 *  - glob and walk visit at most FSOPS_MAX_ENTRIES directory entries and
 *    descend at most FSOPS_MAX_DEPTH directories below their start;
 *  - rmtree descends at most FSOPS_MAX_DEPTH levels (deeper leftovers are
 *    reported with -E2BIG and left in place).
 */
#pragma once

#include "visibility.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FSOPS_MAX_ENTRIES 100000
#define FSOPS_MAX_DEPTH 64

/* Receives data or one NUL-terminated path (len excludes the NUL); non-zero
 * stops the operation, which returns that value. */
typedef int (*fsops_emit_fn)(void *ctx, const void *data, size_t len);

/* Streams a regular file's bytes to emit. More than max_len bytes: -EFBIG
 * (after emitting max_len). Not a regular file: -EISDIR or -EINVAL. */
int fsops_read(int root_fd, const char *path, uint64_t max_len, fsops_emit_fn emit,
	       void *ctx) CORDON_INTERNAL;

/* Creates missing parents, writes a temporary file in the parent directory
 * and renames it over the final name, which is therefore never followed: a
 * symlink there (dangling or not) is replaced, its target never touched. An
 * existing file keeps its permission bits; a new one gets 0644 & ~umask. */
int fsops_write(int root_fd, const char *path, const void *data, size_t len) CORDON_INTERNAL;
/* The same, with the data read from data_fd to its end (streamed: the agent's stdin). A
 * failure may leave data_fd partly read. */
int fsops_write_fd(int root_fd, const char *path, int data_fd) CORDON_INTERNAL;

/* Emits every entry whose path relative to the root matches pattern as
 * fnmatch(FNM_PATHNAME | FNM_PERIOD) would, matching one component per
 * directory level: symlinks are matched by name, never descended into. */
int fsops_glob(int root_fd, const char *pattern, fsops_emit_fn emit, void *ctx) CORDON_INTERNAL;

/* Emits the regular files under dir ("" or "." for the root) as paths
 * relative to the root; never follows or lists symlinks. */
int fsops_walk(int root_fd, const char *dir, fsops_emit_fn emit, void *ctx) CORDON_INTERNAL;

/* Removes name under parent_fd and everything below it, never following a
 * symlink (links are unlinked, not their targets). */
int fsops_rmtree(int parent_fd, const char *name) CORDON_INTERNAL;

/* Opens the absolute path (O_PATH | O_DIRECTORY | O_CLOEXEC) one component at a time from
 * "/" with O_NOFOLLOW: a symbolic link anywhere on it fails (-ELOOP, or -ENOTDIR for
 * O_PATH's view of a link), so does a ".." (-EINVAL). A workspace a driver copies or
 * stages is opened so. */
int fsops_open_dir_nofollow(const char *path) CORDON_INTERNAL;
