/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A host program run beside cordon (an engine CLI, qemu, qemu-img): the one spawner behind
 * host->spawn (run to completion, captured) and host->process_spawn (streaming, the plugin's
 * descriptors). libc only (common/).
 *
 * The program gets a session of its own (no controlling terminal; its process group can be
 * killed as one), default signal dispositions and an empty mask, cwd "/", descriptors 0-2
 * (and 3 when asked) only. Its exit is learnt through a pidfd, or waitid(WNOWAIT) where the
 * kernel has none, WITHOUT reaping it: until hostproc_wait reaps it, its pid, which is also
 * its group's id, cannot be reused, so hostproc_kill never hits an unrelated process.
 */
#pragma once

#include "visibility.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the program's descriptor 0, 1 or 2 is, besides a descriptor of ours. */
#define HOSTPROC_DEVNULL (-1) /* /dev/null */
#define HOSTPROC_PIPE (-2)    /* a pipe; we keep the other end (hostproc.in, .out, .err) */

/* The descriptor number the program finds extra_fd at. */
#define HOSTPROC_EXTRA_FD 3

typedef struct hostproc_spec {
	const char *path; /* absolute */
	const char *const *argv;
	const char *const *envp; /* the whole environment */
	int fd[3];               /* for 0-2: HOSTPROC_DEVNULL, HOSTPROC_PIPE or a descriptor */
	int extra_fd;            /* -1, or one more descriptor, as HOSTPROC_EXTRA_FD */
} hostproc_spec;

typedef struct hostproc {
	pid_t pid;        /* > 0 until reaped */
	int pidfd;        /* readable once it exited; -1 where the kernel has none */
	int in, out, err; /* our non-blocking ends of HOSTPROC_PIPE descriptors, else -1 */
} hostproc;

/* Starts it. Our descriptors in spec stay ours (the program gets copies). -errno. */
int hostproc_start(const hostproc_spec *spec, hostproc *ret) CORDON_INTERNAL;
/* Whether it exited (not reaped: still killable as a group). */
bool hostproc_exited(const hostproc *p) CORDON_INTERNAL;
/* Waits up to timeout_ms (negative: no limit) for it to exit, without reaping it: false
 * while it runs. */
bool hostproc_wait_exit(const hostproc *p, int64_t timeout_ms) CORDON_INTERNAL;
/* Waits up to timeout_ms (negative: no limit) for it to exit; -ETIMEDOUT while it runs.
 * Then, with kill_group, SIGKILLs what it left in its process group, and reaps it:
 * *ret_status is its exit code, 128+signal when killed. Closes the pidfd, not the pipes. */
int hostproc_wait(hostproc *p, int64_t timeout_ms, bool kill_group,
		  int *ret_status) CORDON_INTERNAL;
/* SIGKILLs its whole process group; nothing once it was reaped. */
void hostproc_kill(hostproc *p) CORDON_INTERNAL;
/* write() to its stdin pipe that never raises SIGPIPE (EPIPE instead). */
ssize_t hostproc_write(hostproc *p, const void *buf, size_t len) CORDON_INTERNAL;
void hostproc_close_in(hostproc *p) CORDON_INTERNAL;
/* Closes every descriptor still open: kills and reaps it first when it was not reaped. */
void hostproc_close(hostproc *p) CORDON_INTERNAL;
int64_t hostproc_now_ms(void) CORDON_INTERNAL;

/* ---- to completion, captured ------------------------------------------------------- */

typedef struct hostproc_result {
	char *out, *err; /* malloc'd, NUL-terminated (the bytes may hold NULs) */
	size_t out_len, err_len;
	int exit_code; /* 128+sig when killed; -1 on timeout */
	bool timed_out;
} hostproc_result;

/* Runs path with stdin from stdin_data (or /dev/null when stdin_len is 0) and both outputs
 * captured up to output_cap bytes each (the rest is read and dropped). At timeout_ms its
 * whole process group is killed. A program that exits by itself may leave helpers behind on
 * purpose (podman's conmon): its group is not killed then, and the captures are drained for
 * at most HOSTPROC_DRAIN_GRACE_MS, so that a leftover holding the pipes cannot hold the call.
 * Returns 0 when it ran (whatever its exit code; free out and err), -errno when it could not
 * be started. */
#define HOSTPROC_DRAIN_GRACE_MS 1000
int hostproc_run(const char *path, const char *const *argv, const char *const *envp,
		 const void *stdin_data, size_t stdin_len, uint64_t timeout_ms, uint64_t output_cap,
		 hostproc_result *ret) CORDON_INTERNAL;
