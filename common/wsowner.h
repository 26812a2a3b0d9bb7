/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one rule for a writable workspace's owner when cordon runs as root (docs/tiers/local.md,
 * docs/tiers/microvm.md): the work's files come back with the workspace owner's ids (the
 * kernel tier's idmapped mount, the microVM tiers' copy-out as the owner), so a workspace of
 * root's, or of root's group, would let the work plant root's files where it chose. Such a
 * workspace is refused; copy-in only (read-only work) is harmless. libc only (common/).
 */
#pragma once

#include "visibility.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* 0, or -EPERM with the reason in why (it names the owner and says to chown): st is the
 * workspace's, privileged whether the host runs as root (unprivileged, the work's files are
 * the caller's: nothing to decide). */
int wsowner_check(const struct stat *st, bool privileged, char *why, size_t whylen) CORDON_INTERNAL;
