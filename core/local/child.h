/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's launcher, private to it (confine.h is the driver's
 * interface): what the code that runs in the CLONE_VM children (child.c)
 * shares with the host side that starts them (zygote.c) and with the
 * id-mapping user namespaces (confine.c). The children use raw system
 * calls only (rawsys.h): everything here is plain data.
 */
#pragma once

#include "landlock-abi.h"
#include "visibility.h"

#include <stdbool.h>

enum confine_step {
	STEP_NONE = 0,
	STEP_CLONE,
	STEP_SETGROUPS_DENY,
	STEP_UID_MAP,
	STEP_GID_MAP,
	STEP_SYNC,
	STEP_LIFELINE,
	STEP_SELFTEST,
	STEP_CGROUPNS,
	STEP_RPRIVATE,
	STEP_DEVNODES,
	STEP_HOSTDIRS,
	STEP_TREE_RO,
	STEP_REMOUNT_RO,
	STEP_GROUPS,
	STEP_IDS,
	STEP_TMP,
	STEP_DEV,
	STEP_SHM,
	STEP_PROC,
	STEP_USERNS_MAX,
	STEP_MASK,
	STEP_HOSTNAME,
	STEP_LOOPBACK,
	STEP_SETSID,
	STEP_CAPS,
	STEP_NNP,
	STEP_FDS,
	STEP_SIGNALS,
	STEP_EXEC,
	STEP_COUNT_
};

/* What A and B read while they share our memory. */
typedef struct child_plan {
	bool privileged;
	unsigned in_uid, in_gid;
	char uid_map[48], gid_map[48];
	char tmp_opts[128], shm_opts[128], dev_opts[128];
	int fd_sync_r, fd_sync_w, fd_status_w, fd_control, fd_host_control;
	int fd_bpf, fd_nsinit;
	char *const *argv;               /* the zygote's */
	const char *mounts;              /* remount fallback: "/path\0/path\0\0" */
	char *stack_a_top, *stack_b_top; /* A, B */
	char *stack_c_top;               /* the self-test, which runs beside B */
	char *stack_d_top;               /* B's helper */
	struct ll_masks ll;              /* Landlock's handled access for this kernel's ABI */
	int ll_abi;
	/* written by A (pidfd by the kernel, in our fd table) */
	int pidfd;
	int err;
	int step;
} child_plan;

/* A: in the host's namespaces, sharing the host's memory (clone's fn, arg
 * a child_plan); the host thread is suspended until A exits. */
int child_stage_a(void *arg) CORDON_INTERNAL;
/* The holder of an id-mapping user namespace (clone's fn, arg the read end
 * of a pipe as an intptr_t): lives until a byte or EOF arrives. */
int child_idmap(void *arg) CORDON_INTERNAL;
/* Writes s to an existing file (a /proc map): 0 or -errno. */
long child_write_file(const char *path, const char *s) CORDON_INTERNAL;
