/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Streaming engine CLI processes (see proc.c). */
#ifndef CORDON_OCI_PROC_H
#define CORDON_OCI_PROC_H

#include "oci.h"

#include <sys/types.h>

typedef struct oci_proc {
	pid_t pid;                 /* also its process group and session; -1 when none */
	int in, out, err;          /* non-blocking parent ends; -1 once closed */
	cordon_host_process *host; /* host->process_spawn's handle */
} oci_proc;

/* The descriptor number a CLI finds pass_fd at (process_spawn's extra_fd). */
#define OCI_PASS_FD 3

/* argv[0] must be absolute; envp is the whole environment. pass_fd, unless
 * -1, is the one more descriptor the CLI gets (as OCI_PASS_FD). */
int oci_proc_spawn(const char *const *argv, const char *const *envp, int pass_fd,
		   oci_proc *ret) CORDON_INTERNAL;
void oci_proc_close_in(oci_proc *p) CORDON_INTERNAL;
/* write() to its stdin without SIGPIPE when the CLI is gone (EPIPE instead). */
ssize_t oci_proc_write(oci_proc *p, const void *buf, size_t len) CORDON_INTERNAL;
/* SIGKILLs the CLI's whole process group. */
void oci_proc_kill(oci_proc *p) CORDON_INTERNAL;
/* Waits for it, kills what it left in its session, reaps it, closes the
 * pipes; returns the exit code (128+sig when killed). */
int oci_proc_wait(oci_proc *p) CORDON_INTERNAL;
int64_t oci_now_ms(void) CORDON_INTERNAL;

#endif
