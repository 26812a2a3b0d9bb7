/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's launcher: new user, mount, pid, net, ipc, uts and cgroup
 * namespaces; the host read-only (every submount), the workspace the only
 * writable host path, private size-capped /tmp and /dev/shm, a fresh /proc,
 * a minimal /dev, masked /proc and /sys entries; no capabilities, not root
 * inside, no_new_privs; rlimits and per-run cgroups; then the namespace init
 * (nsinit.c) as pid 1, which applies Landlock and seccomp to the work.
 *
 * Launch sequence (thread-safe from a multi-threaded host):
 *   host thread   prepares everything (plans, pipes, cgroups, seccomp program,
 *                 argv), blocks signals, clone(CLONE_VM|CLONE_VFORK) -> A
 *   A (host ns)   clone(CLONE_VM|CLONE_PARENT|CLONE_NEW*) -> B; writes B's
 *                 uid/gid maps (as root: to an unprivileged host id) and its
 *                 cgroup membership; releases B; exits (the host resumes)
 *   B (pid 1)     mounts, identity, caps, rlimits, fds; execveat(nsinit memfd)
 * A and B share the host's memory until B's exec: they use raw system calls
 * only (rawsys.h), allocate nothing, and report failures as records on the
 * status pipe (nsinit-proto.h). Every failure is fatal: nothing ever runs
 * half-confined.
 */
#pragma once

#include "limits.h"

#include <cordon/plugin.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CONFINE_HIDDEN __attribute__((visibility("hidden")))

typedef struct confine_sandbox confine_sandbox;

/* Prepares a sandbox rooted at the directory root_fd (the workspace, which
 * appears inside at its own canonical path). limits: what every run must
 * enforce. Returns 0, or a negative errno with a one-line reason in why. */
int confine_sandbox_new(int root_fd, const cordon_plugin_limits *limits, confine_sandbox **ret,
			char *why, size_t whylen) CONFINE_HIDDEN;
void confine_sandbox_free(confine_sandbox *s) CONFINE_HIDDEN;
/* How the limits are enforced, one line (borrowed from s). */
const char *confine_sandbox_limits(const confine_sandbox *s) CONFINE_HIDDEN;
/* The work's uid and gid inside the sandbox. */
void confine_sandbox_ids(const confine_sandbox *s, unsigned *ret_uid, unsigned *ret_gid) CONFINE_HIDDEN;

typedef struct confine_request {
	const char *const *argv;  /* argv[0]: a path, or a name searched in envp's PATH inside */
	const char *const *envp;
	const char *workdir;      /* relative to the workspace, or NULL */
	int stdin_fd, stdout_fd, stderr_fd; /* the child's ends; borrowed */
	uint16_t port;            /* a TCP port the work may bind and connect, or 0 */
	bool probe;               /* nsinit's child exits 0 after its last step instead of exec */
} confine_request;

/* A running sandbox init (pid 1 of the run). */
typedef struct confine_child {
	pid_t pid;
	int pidfd;
	int status_fd;   /* read end of the status pipe */
	int lifeline_fd; /* write end; closing it ends the run */
	limits_cgroup cg;
	bool have_cg;
} confine_child;

/* Launches req in s and waits until the init runs (or setup failed).
 * Returns 0, or a negative errno with a reason in why (nothing left running). */
int confine_spawn(confine_sandbox *s, const confine_request *req, confine_child *ret, char *why,
		  size_t whylen) CONFINE_HIDDEN;

/* Kills the whole run (the init, hence its pid namespace). */
void confine_child_kill(confine_child *c) CONFINE_HIDDEN;

/* After the init ended and was reaped: reads its records into st (flags,
 * exit code, signal; OOM from the cgroup). killed: the host killed it
 * (timeout or cancel). Returns 0, or a negative errno with why when the work
 * never ran (exec failure: -ENOENT etc. with *ret_exec_failed set). */
int confine_child_finish(confine_child *c, bool killed, cordon_plugin_run_status *st,
			 bool *ret_exec_failed, char *why, size_t whylen) CONFINE_HIDDEN;
/* Releases fds and cgroups (after finish, or after kill + reap). */
void confine_child_release(confine_child *c) CONFINE_HIDDEN;

/* Test hooks (never for production callers). */
void confine_test_force_remount_fallback(bool on) CONFINE_HIDDEN;
