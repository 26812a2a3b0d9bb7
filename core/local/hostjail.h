/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host programs that die with the host, and host programs in a jail (host->process_spawn's
 * CORDON_HOST_PROCESS_PDEATHSIG and CORDON_HOST_PROCESS_JAIL, ABI 1.4): the VMM of the
 * microVM tiers, as Firecracker's jailer runs it.
 *
 * Every launch runs on one thread of the host that lives as long as the process: the
 * parent-death signal follows the thread that made the child, so a launch from a thread that
 * ends (a pool's refill thread, an application's worker) would kill the program with it.
 *
 * A jailed program is launched by the local driver's launcher (spawn.c) with steps of its
 * own: new mount, pid, network, IPC and UTS namespaces (and a user namespace when the host
 * is not root, mapping only the caller's ids); a tmpfs root that holds the named paths
 * read-only, the named device nodes, the program and the libraries its ELF headers ask for,
 * and nothing else (no /dev but the named nodes, no /tmp, no /proc unless a descriptor is
 * given: then its path is a link to /proc/self/fd/4 through a read-only proc of the jail's
 * own processes, since no bind can carry a memfd); an unprivileged uid (as
 * root, one of the kernel tier's per-sandbox host ids, hostids.h; the caller's otherwise);
 * no new privileges and the kernel tier's seccomp filter; SIGKILL when the host dies.
 *
 * A file server (CORDON_HOST_PROCESS_FILE_SERVER, ABI 1.6: virtiofsd, which builds its own
 * sandbox) is launched as root with other steps: the directory's mount cloned from its
 * descriptor (open_tree) and moved over jail_fd_path in a mount namespace of its own, then
 * a user namespace made by root in which only the owner is mapped (maps written by a forked
 * helper that stays root), then the owner's ids there (at file_server_id: 0, its root, or another id with the namespace's capabilities
 * kept as ambient ones); no new privileges; SIGKILL when the host dies; the set-id filter
 * (seccomp_setid_filter_compile) as the last step. Its launch forks (memory of its own) and
 * has a deadline: from the id change on, the owner could stop it.
 */
#pragma once

#include "hostids.h"
#include "visibility.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct hostjail_spec {
	const char *path; /* absolute */
	const char *const *argv;
	const char *const *envp;
	int fd[3];                  /* the program's 0-2: descriptors, each >= 0 */
	int extra_fd;               /* its 3, or -1 */
	bool jail;                  /* confined (else only the parent-death signal) */
	const char *const *paths;   /* jail: read-only host paths, NULL-terminated, or NULL */
	const char *const *devices; /* jail: device nodes, read-write */
	int jail_fd;                /* jail: its fd 4, opened by name at jail_fd_path, or -1 */
	const char *jail_fd_path;   /* jail: a link to /proc/self/fd/4, or NULL; file_server:
				     * where jail_fd's directory is mounted */
	bool file_server;           /* in a user namespace of jail_fd's owner's */
	unsigned file_server_id;    /* file_server: the owner's id there */
	bool read_only;             /* file_server: the directory's mount read-only */
} hostjail_spec;

typedef struct hostjail_proc {
	pid_t pid;   /* leads its own session and process group; a child of this process */
	int pidfd;   /* -1 where the kernel has none */
	hostids ids; /* as root: its uid, held until it was reaped (hostids_release) */
} hostjail_proc;

/* Starts it from the launcher thread. 0, or a negative errno with a one-line reason. */
int hostjail_start(const hostjail_spec *s, hostjail_proc *ret, char *why,
		   size_t whylen) CORDON_INTERNAL;
