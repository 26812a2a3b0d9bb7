/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process jail's pieces beyond the launcher (spawn.c): the step that
 * takes CAP_SYS_PTRACE from work run as root, and, as root, the control group
 * that holds the work's tree whatever it does to its supervisor.
 *
 * The supervisor kills every descendant when the run ends, but the work runs
 * as the same user and can SIGKILL it first: what it detached (a setsid
 * daemon) was then re-parented to init and outlived the run. As root the
 * supervisor joins a group of its own (limits_jail_group) before it forks the
 * work, every process of the tree is born in it, and the host kills what the
 * group still holds when the run ends (limits_cgroup_kill), before it reports.
 * Unprivileged there is no group to make: the documented limit stays
 * (docs/tiers/process-jail.md, "Killing the supervisor").
 */
#pragma once

#include "limits.h"
#include "spawn.h"

#include <stdbool.h>

#include "visibility.h"

/* Appends the no-ptrace step (driver.c's base plan of a jail sandbox). */
void jail_plan_noptrace(spawn_plan *p) CORDON_INTERNAL;

/* A run's hold: as root, makes the group and inserts the step that joins it
 * first thing in the supervisor. Returns true when the run is held (cg then
 * needs jail_hold_end); false when the caller is not root or the host has no
 * group to give (logged once: the unprivileged limit then applies). cg must
 * outlive spawn_start. */
bool jail_hold_begin(spawn_plan *p, limits_cgroup *cg) CORDON_INTERNAL;

/* Kills what the group still holds (bounded) and removes it. */
void jail_hold_end(limits_cgroup *cg) CORDON_INTERNAL;
