/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's launcher: new user, mount, pid, net, ipc, uts and cgroup
 * namespaces; the host read-only (every submount), the workspace the only
 * writable host path, private size-capped /tmp and /dev/shm, a fresh /proc,
 * a minimal /dev, masked /proc and /sys entries; then the sandbox's init,
 * the "zygote" (nsinit.c, nsinit-proto.h), which starts each run in a pid
 * namespace of its own: not root inside, no capabilities, no_new_privs,
 * rlimits and per-run cgroups, Landlock, seccomp last.
 *
 * Building a sandbox (thread-safe from a multi-threaded host):
 *   host thread   prepares everything (plans, pipes, the seccomp program,
 *                 argv), blocks signals, clone(CLONE_VM|CLONE_VFORK) -> A
 *   A (host ns)   clone(CLONE_VM|CLONE_PARENT|CLONE_NEW*) -> B; writes B's
 *                 uid/gid maps (as root: to an unprivileged host id) and
 *                 releases B; exits (the host resumes)
 *   B (pid 1)     mounts, limits of its own, fds; execveat(nsinit memfd)
 * A and B share the host's memory until B's exec: they use raw system calls
 * only (rawsys.h), allocate nothing, and report failures as records on the
 * status pipe. Every failure is fatal: nothing ever runs half-confined.
 *
 * A run is one request on the zygote's control socket (a few system calls
 * and two small process creations inside): the namespaces and mounts are
 * not rebuilt per run. Each sandbox has its own zygote; one built by the
 * probe's trial is kept warm for the next sandbox opened.
 */
#pragma once

#include "limits.h"

#include <cordon/plugin.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "visibility.h"

typedef struct confine_sandbox confine_sandbox;

/* Prepares a sandbox rooted at the directory root_fd (the workspace, which
 * appears inside at its own canonical path). limits: what every run must
 * enforce. private_disk: 0 for a workspace; for a private root its cap in
 * bytes: a tmpfs of that size, which only the sandbox mounts (as root a
 * detached one we make, else one the sandbox makes), at private_path when
 * root_fd is -1 (below /tmp, where the sandbox has a /tmp of its own: nothing
 * of it on the host, privroot.h) or at the path of root_fd (then an empty host
 * directory, its mount point, which stays empty); *ret_root_fd receives a new
 * fd of it, which replaces root_fd for file operations. Returns 0, or a
 * negative errno with a one-line reason in why (-EPERM: a limit cannot be
 * enforced here). */
int confine_sandbox_new(int root_fd, const char *private_path, const cordon_plugin_limits *limits,
			uint64_t private_disk, int *ret_root_fd, confine_sandbox **ret, char *why,
			size_t whylen) CORDON_INTERNAL;
/* Whether the host directory root_fd may be a workspace of this process's
 * sandboxes: as root the work's files take its owner's ids on the host
 * (docs/tiers/local.md, "Workspace owner"), so one owned by root or root's
 * group is refused. 0, or -EPERM with the reason in why. */
int confine_workspace_owner_check(int root_fd, char *why, size_t whylen) CORDON_INTERNAL;

/* Whether this process can give a sandbox extra mounts (confine_sandbox_mount): as root. */
bool confine_can_mount(void) CORDON_INTERNAL;
/* Mounts the host directory dir_fd at inside (absolute) in s, read-only unless rw (then
 * refused for a root-owned one, as a workspace is). 0 or -errno with why. */
int confine_sandbox_mount(confine_sandbox *s, int dir_fd, const char *inside, bool rw, char *why,
			  size_t whylen) CORDON_INTERNAL;
/* Ends every run of the sandbox and the sandbox itself. */
void confine_sandbox_free(confine_sandbox *s) CORDON_INTERNAL;
/* As root on a workspace of an unprivileged owner: true and the owner's
 * ids, which the work's files take on the host and the host's own writes
 * into the workspace must take too. False where no switch is needed. */
bool confine_sandbox_file_ids(const confine_sandbox *s, uid_t *ret_uid,
			      gid_t *ret_gid) CORDON_INTERNAL;
/* How the limits are enforced, one line (borrowed from s). */
const char *confine_sandbox_limits(const confine_sandbox *s) CORDON_INTERNAL;
/* A new TCP socket (AF_INET, close-on-exec, unconnected) of the sandbox's
 * network namespace, made by its init: connected by the host, it reaches
 * the sandbox's loopback (a served port's forwarder). Thread-safe. Returns
 * the fd, or a negative errno (-EPIPE after the sandbox's last run). */
int confine_sandbox_socket(confine_sandbox *s) CORDON_INTERNAL;
/* The same, of family AF_INET or AF_INET6 (a server on ::1). */
int confine_sandbox_socket_family(confine_sandbox *s, int family) CORDON_INTERNAL;
/* A TCP socket listening on 127.0.0.1:*ret_port of the sandbox's network
 * namespace (the port its kernel picks), close-on-exec, blocking: the init
 * makes it and passes it out with SCM_RIGHTS (as confine_sandbox_socket),
 * the host binds it and listens. The host accepts on it, so a connection
 * the work makes to 127.0.0.1:*ret_port inside comes to the host and
 * reaches nothing else of the host's (governed egress's proxy,
 * docs/network.md). The work cannot take the port: it is bound before the
 * caller hands it to the work. Thread-safe. Returns the fd, or a negative
 * errno (-EPIPE after the sandbox's last run). */
int confine_sandbox_listen(confine_sandbox *s, uint16_t *ret_port) CORDON_INTERNAL;

typedef struct confine_request {
	const char *const *argv; /* argv[0]: a path, or a name searched in envp's PATH inside */
	const char *const *envp;
	const char *workdir;                /* relative to the workspace, or NULL */
	int stdin_fd, stdout_fd, stderr_fd; /* the work's; borrowed */
	bool last;                          /* the sandbox's last run: its init runs it (no run
				   * may follow; the sandbox ends with the work) */
	bool ctty;                          /* stdin is a terminal: the work's controlling one */
} confine_request;

/* A running run: its init (pid 1 of the run's pid namespace; for a last
 * run the zygote, pid 1 of the sandbox's) as a pidfd. The init is not our
 * child: watch and kill it through the pidfd, never by pid. */
typedef struct confine_child {
	int pidfd;
	int status_fd; /* read end of the run's status pipe */
	limits_cgroup cg;
	bool have_cg;
	bool last;              /* the init is the zygote, which ends with the work */
	confine_sandbox *owner; /* whose idle control groups take cg back; NULL: none */
	struct zygote *z;       /* whose live runs count this one */
} confine_child;

/* The fd that turns readable when the run has ended (poll it for POLLIN). */
int confine_child_end_fd(const confine_child *c) CORDON_INTERNAL;

/* Starts req in s. Returns 0, or a negative errno with a reason in why. */
int confine_spawn(confine_sandbox *s, const confine_request *req, confine_child *ret, char *why,
		  size_t whylen) CORDON_INTERNAL;

/* Kills the run (its init, hence its pid namespace) when kill is true, then
 * waits until the init is gone. */
void confine_child_stop(confine_child *c, bool kill) CORDON_INTERNAL;

/* After the init ended: its records into st (flags, exit code, signal; OOM
 * from the cgroup). killed: the host killed it (timeout or cancel). Returns
 * 0, or a negative errno with why when the work never ran (exec failure:
 * *ret_exec_failed set). */
int confine_child_finish(confine_child *c, bool killed, cordon_plugin_run_status *st,
			 bool *ret_exec_failed, char *why, size_t whylen) CORDON_INTERNAL;
/* Releases fds and cgroups (after finish, or after a stop). */
void confine_child_release(confine_child *c) CORDON_INTERNAL;

/* What the host lacks for the tier, checked without a launch: true with
 * the reason in why. */
typedef bool (*confine_precheck_fn)(char *why, size_t whylen);

/* The probe's trial: the host passes precheck, the limits are enforceable
 * (the run's control groups can be made), and a sandbox without workspace
 * builds and passes its self-test (Landlock enforced, the seccomp filter
 * installed, in a child of its init). The sandbox starts first and the
 * checks run while it builds; their reason wins when both fail. Returns 0,
 * or a negative errno with the reason. The sandbox it built is kept warm
 * for the next confine_sandbox_new. */
int confine_trial(const cordon_plugin_limits *limits, confine_precheck_fn precheck, char *why,
		  size_t whylen) CORDON_INTERNAL;

/* Ends the zygote the last trial kept warm and removes its groups. */
void confine_release_warm(void) CORDON_INTERNAL;

/* Test hooks (never for production callers). */
void confine_test_force_remount_fallback(bool on) CORDON_INTERNAL;
