/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Resource limits of the kernel tier: which mechanism enforces each limit on
 * this host, and the per-run control groups.
 *
 *  wall     the host's timer; expiry kills the namespace's init, and with it
 *           the whole pid namespace
 *  output   the core's capture caps
 *  memory   cgroup v2 memory.max (+ swap.max 0), else cgroup v1 (root),
 *           else RLIMIT_AS per process
 *  pids     cgroup v2/v1 pids.max, else RLIMIT_NPROC (counted per user
 *           namespace since Linux 5.14: the sandbox's own processes only)
 *  cpu      cgroup v2 cpu.max / v1 cpu.cfs_quota_us; no rlimit can cap a
 *           rate, so without a cgroup a CPU limit makes the tier unavailable
 *  nofile   RLIMIT_NOFILE          fsize  RLIMIT_FSIZE
 * A limit no mechanism can enforce makes the tier unavailable with the
 * reason; nothing runs without a limit it was asked for.
 */
#pragma once

#include <cordon/plugin.h>
#include <linux/limits.h> /* PATH_MAX */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

/* Defaults when neither policy nor request sets a limit (no run is unbounded). */
#define LIMITS_DEFAULT_MEMORY (4ull << 30)
#define LIMITS_DEFAULT_PIDS 1024
#define LIMITS_DEFAULT_NOFILE 1024

typedef enum limit_via {
	LIMIT_VIA_UNSET = 0,  /* not asked for, no default */
	LIMIT_VIA_HOST_TIMER, /* wall */
	LIMIT_VIA_CORE,       /* output */
	LIMIT_VIA_CGROUP2,
	LIMIT_VIA_CGROUP1,
	LIMIT_VIA_RLIMIT,
	LIMIT_VIA_IMPOSSIBLE, /* asked for, cannot be enforced here */
} limit_via;

enum { LIMITS_CG_MEMORY = 0, LIMITS_CG_PIDS = 1, LIMITS_CG_CPU = 2, LIMITS_CG_COUNT = 3 };

/* What the host offers, detected once per process. */
typedef struct limits_host {
	bool v2; /* a writable, delegating cgroup v2 directory */
	char v2_dir[PATH_MAX];
	bool v2_has[LIMITS_CG_COUNT];
	bool v1_has[LIMITS_CG_COUNT]; /* writable v1 hierarchy for the controller */
	char v1_dir[LIMITS_CG_COUNT][PATH_MAX];
} limits_host;

#define LIMITS_MAX_RLIMITS 8

typedef struct limits_plan {
	uint64_t value[CORDON_PLUGIN_LIMIT_COUNT];
	uint32_t set; /* bit i: value[i] applies */
	limit_via via[CORDON_PLUGIN_LIMIT_COUNT];
	bool cgroup2;                  /* one v2 group per run */
	bool cgroup1[LIMITS_CG_COUNT]; /* one v1 group per controller per run */
	struct {
		int resource;
		uint64_t value;
	} rlimits[LIMITS_MAX_RLIMITS];
	int nrlimits;
} limits_plan;

/* The host's cgroup facilities (cached; thread-safe). */
const limits_host *limits_host_get(void) CORDON_INTERNAL;
/* Test hook: forget the cgroup facilities (as on a host without them). */
void limits_host_disable_cgroups(bool disable) CORDON_INTERNAL;

/* Decides how each limit is enforced. Returns 0, or -EPERM with a reason in
 * why when a limit asked for cannot be enforced on this host. */
/* The least nofile a kernel-tier run can start with (nsinit-proto.h,
 * NSINIT_NOFILE_FLOOR): 0, or -EPERM with the reason in why when l sets a
 * lower one. limits_plan_make applies it; the driver's configure too, so a
 * policy with a lower value is refused when it is loaded. */
int limits_nofile_check(const cordon_plugin_limits *l, char *why, size_t whylen) CORDON_INTERNAL;

int limits_plan_make(const cordon_plugin_limits *want, limits_plan *ret, char *why,
		     size_t whylen) CORDON_INTERNAL;
/* What the sandbox's private tmpfs mounts (/tmp, /dev/shm) may hold together: the memory
 * limit where RLIMIT_AS enforces it (tmpfs pages are no process's address space, so the
 * rlimit alone would not count them), 0 (their fixed sizes) where a memory cgroup does
 * (it charges them to the writer). */
uint64_t limits_plan_scratch_cap(const limits_plan *p) CORDON_INTERNAL;
/* Whether two plans enforce the same limits the same way. */
bool limits_plan_equal(const limits_plan *a, const limits_plan *b) CORDON_INTERNAL;
/* "wall: host timer; memory 4294967296: cgroup v1; ..." into buf. */
void limits_plan_describe(const limits_plan *p, char *buf, size_t len) CORDON_INTERNAL;
const char *limits_via_name(limit_via v) CORDON_INTERNAL;

/* The control groups of one run. */
typedef struct limits_cgroup {
	int ndirs;
	char dirs[LIMITS_CG_COUNT][PATH_MAX];
	int procs_fd[LIMITS_CG_COUNT]; /* "0" joins: cgroup.procs (v2), tasks (v1) */
	int events_fd;                 /* memory.events (v2) or memory.oom_control (v1), or -1 */
	uint64_t oom_base;             /* OOM kills counted before this run */
	bool v2;
} limits_cgroup;

/* Creates the run's groups with the plan's values and opens the files a
 * single-threaded joiner writes "0" to (cgroup.procs on v2, tasks on v1). Returns 0 or a negative errno with a reason in why. */
int limits_cgroup_create(const limits_plan *p, limits_cgroup *cg, char *why,
			 size_t whylen) CORDON_INTERNAL;
/* A run starts in cg (a new group, or one a finished run left empty):
 * remembers the OOM kills so far. */
void limits_cgroup_begin(limits_cgroup *cg) CORDON_INTERNAL;
/* True when the kernel's OOM killer killed a process of the run since
 * limits_cgroup_begin. */
bool limits_cgroup_oom_killed(const limits_cgroup *cg) CORDON_INTERNAL;
/* Removes empty groups left by hosts that died mid-run (their pid gone);
 * returns how many. Done once per process before the first group is made. */
int limits_gc(void) CORDON_INTERNAL;
/* Removes the groups (after every process of the run is gone). */
void limits_cgroup_destroy(limits_cgroup *cg) CORDON_INTERNAL;

/* The process jail's hold on its tree, as root (docs/tiers/process-jail.md): one empty
 * group (no limit) in the pids hierarchy, v2 where delegated, else v1, that the
 * supervisor joins before it forks the work, so that a daemon the work detached
 * stays in it even once the supervisor is killed. -ENOTSUP where the host has
 * neither; else 0 or a negative errno with the reason in why. */
int limits_jail_group(limits_cgroup *cg, char *why, size_t whylen) CORDON_INTERNAL;
/* SIGKILLs every process in cg's groups (cgroup.kill where v2 has it, else the
 * pids cgroup.procs lists, again until none is listed), for at most ms.
 * Returns 0 once none is left, -ETIMEDOUT, or a negative errno. */
int limits_cgroup_kill(const limits_cgroup *cg, int ms) CORDON_INTERNAL;
