/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Landlock for the kernel tier: read and execute everywhere the sandbox's
 * view shows, write only in the workspace and the private scratch (/tmp,
 * /dev/shm) and to the harmless device nodes; TCP bind and connect refused
 * but for the ports a run is given (ABI >= 4); abstract unix sockets and
 * signals scoped to the sandbox (ABI >= 6). The ABI reached is reported.
 *
 * The ruleset is built inside the sandbox by the launcher, after the mounts
 * (its rules name the sandbox's own tmpfs inodes), with raw system calls and
 * no allocation; the namespace init enforces it in the work.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define LANDLOCK_HIDDEN __attribute__((visibility("hidden")))

#define LANDLOCK_PLAN_DIRS 4
#define LANDLOCK_PLAN_FILES 8
#define LANDLOCK_PLAN_PORTS 4
#define LANDLOCK_PATH_MAX 4096

typedef struct landlock_plan {
	int abi;              /* 0: no Landlock here, nothing to build */
	uint64_t handled_fs;
	uint64_t handled_net;
	uint64_t scoped;
	uint64_t read_exec;   /* granted beneath "/" */
	uint64_t write_dir;   /* granted beneath each writable directory */
	uint64_t write_file;  /* granted on each writable device node */
	/* Absolute paths inside the sandbox; a missing one is skipped. */
	char dirs[LANDLOCK_PLAN_DIRS][LANDLOCK_PATH_MAX];
	int ndirs;
	const char *files[LANDLOCK_PLAN_FILES];
	int nfiles;
	uint16_t ports[LANDLOCK_PLAN_PORTS]; /* TCP bind and connect allowed */
	int nports;
} landlock_plan;

/* The ABI this kernel offers: 0 when Landlock is missing or disabled.
 * Cached after the first call; thread-safe. */
int landlock_abi(void) LANDLOCK_HIDDEN;

/* Fills the access masks for abi (no paths yet). */
void landlock_plan_init(landlock_plan *p, int abi) LANDLOCK_HIDDEN;
/* Adds a writable directory (absolute, inside the sandbox); -E2BIG/-ENAMETOOLONG. */
int landlock_plan_add_dir(landlock_plan *p, const char *path) LANDLOCK_HIDDEN;
/* Allows TCP bind and connect on port (ABI >= 4). */
int landlock_plan_add_port(landlock_plan *p, uint16_t port) LANDLOCK_HIDDEN;

/* Builds the ruleset from p in the current mount namespace, with ws_fd (the
 * workspace's mount, which the sandbox user may not reach by path) writable
 * too when >= 0. Returns the ruleset's fd (close-on-exec) or a negative
 * errno. Async-signal-safe, allocates nothing. */
int landlock_plan_build(const landlock_plan *p, int ws_fd) LANDLOCK_HIDDEN;

/* "Landlock ABI 7: filesystem, TCP ports, scoping" style summary, static. */
const char *landlock_describe(int abi) LANDLOCK_HIDDEN;
