/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Owner tokens: what names a host process in the things it leaves behind when it dies
 * (private roots in $TMPDIR, control groups, containers' cordon.owner label), so that gc
 * removes what a dead host left and never what a live one holds. One scheme for every tier.
 *
 * A token is "BOOT-PIDNS-PID-START": the boot id (32 hex digits), the inode of the pid
 * namespace, the pid and its start time (field 22 of /proc/PID/stat). The start time tells a
 * reused pid apart (kill(pid, 0) alone takes a stranger for the owner, forever); the pid
 * namespace keeps us from judging a process by a pid that is not ours to read (a host in a
 * container sharing the engine): its things are left alone. Only [0-9a-f-], so a token fits
 * a file name, a cgroup name and a label. libc only (common/).
 */
#pragma once

#include "visibility.h"

#include <stddef.h>

#define OWNER_TOKEN_MAX 96

typedef enum owner_state {
	OWNER_ALIVE,   /* the process that wrote it runs (us included) */
	OWNER_DEAD,    /* certainly gone: an earlier boot, no such pid, or another start time */
	OWNER_FOREIGN, /* of another pid namespace: not ours to tell, leave it */
	OWNER_INVALID, /* not a token */
} owner_state;

/* Our token, NUL-terminated; -errno when /proc cannot tell (then nothing should be named
 * with it: another host could not tell it from a dead one's). */
int owner_token_self(char buf[OWNER_TOKEN_MAX]) CORDON_INTERNAL;
/* The state of the token at the start of s; *ret_len (may be NULL) is its length, so that
 * a name can carry more after it. */
owner_state owner_token_state(const char *s, size_t *ret_len) CORDON_INTERNAL;
