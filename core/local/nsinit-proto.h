/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the kernel tier's launcher (confine.c) and the namespace init
 * (nsinit.c, pid 1 of the sandbox) agree on: the file descriptors the init
 * starts with, its argv, and the records it writes on the status pipe.
 *
 * argv: [0] "cordon-nsinit", [1] flags, [2] the work's executable (absolute,
 * resolved by the host before the launch), [3..] the work's argv.
 * flags: a string of letters; 'L' = fd NSINIT_FD_RULESET holds a Landlock
 * ruleset to enforce; '-' = nothing. The seccomp filter is not optional.
 * envp: the work's environment, exactly as the core computed it.
 */
#pragma once

#include <stdint.h>

#define NSINIT_FD_STATUS 3   /* write end of the status pipe */
#define NSINIT_FD_BPF 4      /* sealed memfd: the seccomp BPF program */
#define NSINIT_FD_RULESET 5  /* Landlock ruleset, when flags has 'L' */
#define NSINIT_FD_LIFELINE 6 /* read end of a pipe only the host writes: EOF = host gone */
#define NSINIT_FD_COUNT 7    /* every fd from here up is closed before nsinit runs */

/* Largest seccomp program the init accepts (the kernel's BPF_MAXINSNS). */
#define NSINIT_BPF_MAX_INSNS 4096

#define NSINIT_MAGIC 0x636f7264u /* "cord" */

enum nsinit_record_kind {
	NSINIT_REC_SETUP_FAILED = 1, /* from the launcher: value = errno, step = confine_step */
	NSINIT_REC_STARTED = 2,      /* the init runs: everything before it held */
	NSINIT_REC_EXEC_FAILED = 3,  /* value = errno of the work's execve, step = nsinit step */
	NSINIT_REC_EXITED = 4,       /* value = the work's wait status */
};

/* Steps of the init's child before execve, for NSINIT_REC_EXEC_FAILED. */
enum nsinit_step {
	NSINIT_STEP_EXEC = 0,
	NSINIT_STEP_LANDLOCK = 1,
	NSINIT_STEP_SECCOMP = 2,
	NSINIT_STEP_SETSID = 3,
	NSINIT_STEP_FORK = 4,
	NSINIT_STEP_BPF = 5,
};

/* One record; 16 bytes, so a write to the pipe is atomic. */
struct nsinit_record {
	uint32_t magic;
	uint32_t kind;
	int32_t value;
	int32_t step;
};
