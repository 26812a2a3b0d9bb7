/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process jail's no-ptrace step and its hold on the tree as root (jail.h). */
#include "config.h"

#include "jail.h"
#include "context.h"

#include <cordon/plugin.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define H (&cordon_host_services)

/* How long the host may take to kill what a run's group still holds. */
#define JAIL_KILL_MS 1000

/* A step of the supervisor, inherited by the work (raw system calls only).
 * Work run as root keeps every capability, and CAP_SYS_PTRACE would let it
 * attach to cordon however non-dumpable cordon is: it goes from the bounding,
 * ambient and inheritable sets (execve as root then cannot grant it) and from
 * ours. Without CAP_SETPCAP there is nothing to drop: a caller without
 * privilege cannot attach to a non-dumpable process. */
static SPAWN_CHILD int step_no_ptrace(const spawn_plan *p, const void *arg)
{
	if (syscall(SYS_prctl, PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0) < 0)
		return errno == EPERM ? 0 : -errno;
	/* Fails only where ambient capabilities do not exist (before 4.3). */
	syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_PTRACE, 0, 0);
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	const uint32_t bit = 1u << CAP_SYS_PTRACE; /* below 32: in d[0] */
	d[0].effective &= ~bit;
	d[0].permitted &= ~bit;
	d[0].inheritable &= ~bit;
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

void jail_plan_noptrace(spawn_plan *p)
{
	spawn_plan_insert(p, NULL, &(spawn_step){ "noptrace", step_no_ptrace, NULL });
}

/* The supervisor's first step (before "stdio" closes the group's files):
 * it moves itself into the run's group ("0" is the writer), so the work and
 * everything it starts are born there. */
static SPAWN_CHILD int step_join(const spawn_plan *p, const void *arg)
{
	const limits_cgroup *cg = arg;
	for (int i = 0; i < cg->ndirs; i++)
		if (syscall(SYS_write, cg->procs_fd[i], "0", 1) < 0)
			return -errno;
	return 0;
}

bool jail_hold_begin(spawn_plan *p, limits_cgroup *cg)
{
	if (geteuid() != 0)
		return false;
	char why[PATH_MAX + 128];
	int r = limits_jail_group(cg, why, sizeof(why));
	if (r == 0 &&
	    spawn_plan_insert(p, "signals", &(spawn_step){ "cgroup", step_join, cg }) < 0) {
		limits_cgroup_destroy(cg);
		r = -E2BIG;
		snprintf(why, sizeof(why), "the launch plan is full");
	}
	if (r < 0) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			H->log(CORDON_PLUGIN_LOG_WARNING, "local",
			       "process jail as root without a control group (%s): work that "
			       "kills its supervisor can leave a detached process behind",
			       why);
		return false;
	}
	return true;
}

void jail_hold_end(limits_cgroup *cg)
{
	int r = limits_cgroup_kill(cg, JAIL_KILL_MS);
	if (r < 0)
		H->log(CORDON_PLUGIN_LOG_WARNING, "local",
		       "the process jail's control group %s still holds processes: %s", cg->dirs[0],
		       strerror(-r));
	limits_cgroup_destroy(cg);
}
