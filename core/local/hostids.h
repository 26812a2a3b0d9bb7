/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * As root, the kernel tier's work runs as a host uid and gid of its own per sandbox, never
 * one another tenant has: 65534 (nobody) is also the container tiers' user and NFS's squash
 * id, and two sandboxes sharing it read each other's workspaces through the read-only host.
 * An id is claimed by an exclusive lock on a file named after it in a root-only directory,
 * held for as long as the sandbox's processes can exist; a crashed host releases it with
 * its descriptors.
 */
#pragma once

#include "visibility.h"

#include <stddef.h>

/* The block the ids come from: the top of the 31-bit range, below the ids that 32-bit
 * interfaces read as -1 or negative, and outside the ranges distributions hand out
 * (users from 1000, /etc/subuid from 100000 in blocks of 65536, systemd's dynamic users
 * 61184-65519 and its container ranges up to 0x6fffffff). */
#define HOSTIDS_FIRST 0x7fff0000u
#define HOSTIDS_COUNT 0xfffeu /* up to 0x7ffffffd: 0x7ffffffe/f stay unused */
#define HOSTIDS_DIR "/run/cordon/ids"

typedef struct hostids {
	unsigned uid, gid; /* equal: one number for both */
	int lock_fd;       /* -1: nothing claimed */
} hostids;

/* Claims a free id (root only; -errno with the reason in why). */
int hostids_claim(hostids *ret, char *why, size_t whylen) CORDON_INTERNAL;
/* Gives it back; call only once no process of the sandbox can be alive. */
void hostids_release(hostids *h) CORDON_INTERNAL;
/* Whether id lies in the block (tests, and the docs' statements about it). */
int hostids_in_block(unsigned id) CORDON_INTERNAL;
