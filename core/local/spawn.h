/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The launcher of the local driver: starts one program from a possibly
 * multi-threaded host without inheriting anything by accident.
 *
 * Everything is prepared before the fork (argv/envp arrays, the resolved
 * executable, the descriptors, the rlimit values, a seccomp program). The
 * child is a clone(CLONE_VM | CLONE_VFORK) on a private stack: it shares our
 * memory until execve, so it runs only the steps of its plan, each made of
 * raw, async-signal-safe system calls (no malloc, no locks, no libc state,
 * no sanitizer interceptors), and our thread sleeps until it execs or dies.
 * A plan with an exec deadline forks instead (memory of its own) and waits
 * for the exec that long at most.
 *
 * The child runs, in order:
 *   the plan's steps (default: "signals", "session", "deathsig", "cwd",
 *   "stdio", "rlimits"; more can be inserted, see spawn_plan_insert),
 *   then "sigmask" (unblock), "seccomp" (when plan->seccomp is set: no new
 *   privileges, then the filter), then "execve".
 * A failing step writes {step, errno} to a close-on-exec pipe and exits 127;
 * spawn_start turns that into an error naming the step. The seccomp filter
 * must allow execve, write and exit_group (the failure report).
 *
 * Supervised (plan->supervise, the process jail): the child is a fork, not a
 * vfork, and stays between us and the work as its supervisor. It runs the
 * plan's steps (its parent-death signal is SIGTERM, which it waits for
 * rather than dies of), becomes the subreaper of everything the work
 * starts, and forks the work, which takes a session of its own, dies with
 * the supervisor (PR_SET_PDEATHSIG), then runs "sigmask", "seccomp" and
 * "execve". When the work exits, or the supervisor gets SIGTERM, SIGINT or
 * SIGHUP (from spawn_stop, or because we died), it kills every descendant
 * (after SIGINT, a cancel, the work's process group first gets SIGTERM and
 * SPAWN_FORWARD_GRACE_MS to end on its own),
 * those that left the work's session or process group included (as their
 * subreaper, it inherits each orphan), and exits with the work's status
 * (dying of the work's signal). The cost: a fork of our address space.
 *
 * For the kernel tier: extra clone flags (CLONE_NEW*) go in clone_flags;
 * namespace, mount and pivot steps go before "cwd" (spawn_plan_insert(p,
 * "cwd", ...)); Landlock, capability and no-new-privs steps are appended
 * (before = NULL) and so run after "rlimits"; the seccomp program, built
 * before the fork, is installed last. A step that needs a descriptor must
 * run before "stdio", which closes everything but 0-2 and the report pipe.
 */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "visibility.h"
/* Code that runs in the child: on a borrowed stack, sharing our memory. */
#define SPAWN_CHILD __attribute__((no_sanitize_address, no_sanitize_thread, noinline))

#define SPAWN_MAX_STEPS 16
#define SPAWN_MAX_RLIMITS 8

typedef struct spawn_plan spawn_plan;

/* The descriptor number plan->extra_fd is given at. */
#define SPAWN_EXTRA_FD 3

/* A step of the child's setup. Runs in the child: raw system calls only;
 * returns 0 or a negative errno (which aborts the launch). */
typedef int (*spawn_step_fn)(const spawn_plan *plan, const void *arg);

typedef struct spawn_step {
	const char *name; /* static string, reported when the step fails */
	spawn_step_fn fn;
	const void *arg;
} spawn_step;

typedef struct spawn_rlimit {
	int resource;
	struct rlimit value;
} spawn_rlimit;

struct spawn_plan {
	const char *path; /* the executable, resolved before the fork */
	char *const *argv;
	char *const *envp;
	int stdio[3];  /* become the child's 0, 1, 2 */
	int extra_fd;  /* becomes its SPAWN_EXTRA_FD, or -1 (above 3 itself, like stdio's) */
	int extra_fd2; /* becomes its SPAWN_EXTRA_FD + 1, or -1 (above 4 itself) */
	int cwd_fd;    /* fchdir target, or -1 to stay */
	spawn_rlimit rlimits[SPAWN_MAX_RLIMITS];
	size_t n_rlimits;
	unsigned long clone_flags;        /* extra clone flags (CLONE_NEW*) */
	const struct sock_fprog *seccomp; /* installed right before execve, or NULL */
	bool supervise;                   /* a supervisor between us and the work (see above) */
	bool ctty;                        /* stdin is a terminal: the work's controlling one
					   * (supervised plans only) */
	/* > 0: the launch must reach execve within this many milliseconds, or the child is
	 * killed and spawn_start fails with -ETIMEDOUT (step "deadline"). The child then has
	 * memory of its own (a fork, not a vfork), so that a child stopped during its steps
	 * (SIGSTOP from a user whose ids it took) cannot park our thread. */
	int exec_deadline_ms;
	spawn_step steps[SPAWN_MAX_STEPS];
	size_t n_steps;
	/* set by spawn_start for the child */
	pid_t parent_pid;
	int report_fd;
};

/* The result of a launch. */
typedef struct spawn_child {
	pid_t pid;       /* also the child's session and process group id */
	int pidfd;       /* -1 where the kernel has no pidfds */
	bool supervised; /* pid is the work's supervisor */
} spawn_child;

/* Why a launch failed in the child: the step's name ("execve" when the program
 * could not be executed) and its errno. */
typedef struct spawn_failure {
	const char *step;
	int errnum;
} spawn_failure;

/* Fills the default steps and empties everything else (fds -1). */
void spawn_plan_init(spawn_plan *p) CORDON_INTERNAL;
/* Inserts step before the step named `before` (NULL: at the end). -E2BIG
 * when full, -ENOENT for an unknown name. */
int spawn_plan_insert(spawn_plan *p, const char *before, const spawn_step *step) CORDON_INTERNAL;
/* Adds an rlimit (soft = hard = value). */
int spawn_plan_add_rlimit(spawn_plan *p, int resource, rlim_t value) CORDON_INTERNAL;

/* Launches the plan. Returns 0 and the child, or a negative errno; when the
 * failure happened in the child, *ret_fail names the step (the child is
 * already reaped). The plan's fds are not closed. Thread-safe. */
int spawn_start(spawn_plan *p, spawn_child *ret, spawn_failure *ret_fail) CORDON_INTERNAL;

/* spawn_start in two halves, for a launcher thread that must not wait out a plan's exec
 * deadline (it would hold every other launch back): spawn_begin clones and returns the child
 * and the read end of its report pipe; spawn_end, on any thread, waits for the report (up
 * to plan->exec_deadline_ms), kills and reaps a child that failed or missed it, and closes
 * the pipe. With CLONE_VFORK (no deadline) the child has exec'd or died when spawn_begin
 * returns. */
int spawn_begin(spawn_plan *p, spawn_child *ret, int *ret_report) CORDON_INTERNAL;
int spawn_end(const spawn_plan *p, spawn_child *c, int report_fd,
	      spawn_failure *ret_fail) CORDON_INTERNAL;

/* How long a cancelled run's work has, after the SIGTERM forwarded to it, before SIGKILL. */
#define SPAWN_FORWARD_GRACE_MS 1000

/* Ends a launched child: a supervised one is asked to kill its tree and
 * given up to grace_ms to do it (forward: a cancel, which first forwards
 * SIGTERM to the work and waits SPAWN_FORWARD_GRACE_MS more); then (and for
 * an unsupervised one at once) its process group and itself get SIGKILL.
 * Does not reap it. */
void spawn_stop(const spawn_child *c, int grace_ms, bool forward) CORDON_INTERNAL;

/* Finds name on the PATH of envp (only absolute PATH entries count) the way
 * execvp would, before any fork. name with a '/' is returned as is. Writes
 * into buf; returns 0 or -ENOENT/-EACCES/-ENAMETOOLONG. */
int spawn_find_program(const char *name, char *const *envp, char *buf, size_t size) CORDON_INTERNAL;

/* Test hook: launch without pidfds, as on kernels before 5.3 (the driver
 * then polls for the leader's exit). Process-wide. */
void spawn_set_pidfd_enabled(bool enabled) CORDON_INTERNAL;

/* Moves *fd to a number >= 3 (close-on-exec), so that setting up 0-2 in the
 * child never overwrites a source. */
int spawn_fd_above_stdio(int *fd) CORDON_INTERNAL;
