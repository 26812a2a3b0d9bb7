/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A sandbox's private root: a fresh directory under $TMPDIR (or /tmp) for a
 * sandbox opened without a workspace, removed with everything in it when the
 * sandbox closes. Made and removed relative to a held fd of its parent, so
 * no path lookup can be redirected between the two. Its name carries the
 * creator's owner token ("cordon-TOKEN-RANDOM", common/owner.h): gc removes
 * the ones whose creator died (SIGKILL leaves them behind).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

typedef struct private_root {
	int parent_fd;  /* O_PATH of the temporary directory, or -1 */
	char name[128]; /* "cordon-" OWNER_TOKEN "-" 16 hex digits */
	bool tmpfs;     /* a size-capped tmpfs is mounted on it */
} private_root;

#define PRIVATE_ROOT_INIT \
	{ \
		-1, "", false \
	}

/* The cap of a private root when the policy names none (the local
 * driver's `disk` key). */
#define PRIVATE_ROOT_DEFAULT_DISK (256ull << 20)

/* Makes one; returns an O_RDONLY fd of it, or a negative errno with what
 * failed in *what. With disk > 0 and the privilege to mount (root), a
 * tmpfs of disk bytes (nosuid, nodev, mode 0700) is mounted on the
 * directory: what the work writes there is capped (ENOSPC) and never
 * reaches the host's disk. Without that privilege the directory is plain. */
int private_root_make(private_root *r, uint64_t disk, const char **what) CORDON_INTERNAL;

/* The path a private root would have ($TMPDIR/cordon-TOKEN-RANDOM, its parent canonical)
 * into buf, made nowhere: for a sandbox that mounts its own tmpfs there, below the private
 * /tmp it has (nothing of it on the host, so nothing to remove or collect; an ext4
 * directory's mkdir and rmdir cost 0.1 and 0.4 ms per sandbox here). 0; -ENOTDIR when
 * $TMPDIR is not /tmp or below it (a mount point must then exist on the host:
 * private_root_make); or a negative errno with what failed in *what. */
int private_root_path(char *buf, size_t len, const char **what) CORDON_INTERNAL;

/* A detached tmpfs of size bytes (nosuid, nodev, mode 0700), as private_root_make mounts
 * on the directory: its mount fd, or a negative errno with what failed in *what. Root
 * only. The kernel tier keeps it off the host's mount tree (its sandbox mounts it). */
int private_root_tmpfs(uint64_t size, const char **what) CORDON_INTERNAL;

/* Removes it (its tmpfs first) and everything in it; 0, or the negative
 * errno of what could not be removed. Safe on an empty one. */
int private_root_remove(private_root *r) CORDON_INTERNAL;

/* Removes the private roots, in the temporary directory, of processes of
 * our pid namespace that are gone; returns how many. Only our own
 * directories (same owner, not symlinks) are touched. */
int private_root_gc(void) CORDON_INTERNAL;
