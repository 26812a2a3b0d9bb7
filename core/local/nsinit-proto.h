/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the kernel tier's launcher (confine.c, zygote.c, child.c) and its init (nsinit.c) agree
 * on. One sandbox = one init process, the "zygote", pid 1 of the sandbox's
 * pid namespace, holding its user, mount, net, ipc, uts and cgroup
 * namespaces and its read-only view of the host, built once at open. Each
 * run is a request on the zygote's control socket: the zygote forks a run
 * init into a new pid namespace of its own (pid 1 there), which joins the
 * run's cgroups, takes the sandbox identity, drops every capability, and
 * forks the work; the work enforces Landlock and seccomp right before
 * execve. The run init reaps, forwards signals, reports the work's status
 * and, by dying, takes its whole pid namespace with it.
 *
 * Zygote argv: [0] "cordon-nsinit", [1] "Z<landlock abi>" (e.g. "Z7",
 * "Z0" without Landlock), [2] the sandbox uid, [3] gid, [4] "R" when the host
 * is privileged (the zygote keeps the caller's host identity and runs take
 * the sandbox's), else "U". Descriptors at start: see NSINIT_FD_*.
 */
#pragma once

#include <stdint.h>

#define NSINIT_FD_STATUS 3  /* setup status pipe: STARTED, then closed */
#define NSINIT_FD_BPF 4     /* sealed memfd: the seccomp BPF program */
#define NSINIT_FD_HOSTTMP 5 /* O_PATH: the host's /tmp, below the sandbox's tmpfs */
#define NSINIT_FD_CONTROL 6 /* SOCK_SEQPACKET to the host; EOF = host gone or sandbox closed */
#define NSINIT_FD_HOSTDEV 7 /* O_PATH: the host's /dev, below the sandbox's */
#define NSINIT_FD_COUNT 8   /* everything from here up is closed before the zygote runs */

/* Largest seccomp program the init accepts (the kernel's BPF_MAXINSNS). */
#define NSINIT_BPF_MAX_INSNS 4096
#define NSINIT_MAX_RLIMITS 8
#define NSINIT_MAX_CGROUPS 4
#define NSINIT_MAX_FDS (5 + NSINIT_MAX_CGROUPS)
/* A run's descriptors: 0-2 stdio, 3 status, 4 ruleset, 5 control, then the
 * cgroups it joins. Its init lays them out by first moving every one to
 * NSINIT_FD_MOVE_BASE and up (above whatever the zygote holds), with the
 * work's RLIMIT_NOFILE already in force: a limit below NSINIT_NOFILE_FLOOR
 * would make every run fail (EMFILE/EINVAL at the "descriptors" step). */
#define NSINIT_WORK_FD_CGROUPS 6
#define NSINIT_FD_MOVE_BASE 64
#define NSINIT_NOFILE_FLOOR (NSINIT_FD_MOVE_BASE + NSINIT_WORK_FD_CGROUPS + NSINIT_MAX_CGROUPS)

#define NSINIT_MAGIC 0x636f7264u /* "cord" */

/* ---- records on a status pipe ------------------------------------------------------ */

enum nsinit_record_kind {
	NSINIT_REC_SETUP_FAILED = 1, /* value = errno, step = confine/nsinit step */
	NSINIT_REC_STARTED = 2,      /* the zygote, or a run's init, is up */
	NSINIT_REC_EXEC_FAILED = 3,  /* value = errno of the work's execve, step = nsinit step */
	NSINIT_REC_EXITED = 4,       /* value = the work's wait status */
};

/* Steps of a run (NSINIT_REC_SETUP_FAILED / EXEC_FAILED). */
enum nsinit_step {
	NSINIT_STEP_EXEC = 0,
	NSINIT_STEP_LANDLOCK = 1,
	NSINIT_STEP_SECCOMP = 2,
	NSINIT_STEP_SETSID = 3,
	NSINIT_STEP_FORK = 4,
	NSINIT_STEP_BPF = 5,
	NSINIT_STEP_CGROUP = 6,
	NSINIT_STEP_PAYLOAD = 7,
	NSINIT_STEP_IDS = 8,
	NSINIT_STEP_RLIMIT = 9,
	NSINIT_STEP_WORKDIR = 10,
	NSINIT_STEP_CAPS = 11,
	NSINIT_STEP_FDS = 12,
	NSINIT_STEP_RULESET = 13,
	NSINIT_STEP_WORKSPACE = 14,
	NSINIT_STEP_SOCKET = 15,
	NSINIT_STEP_MOUNT = 16,
	NSINIT_STEP_COUNT = 17,
};

/* The zygote's own setup failures carry step + NSINIT_ZYGOTE_STEP, the
 * launcher's carry its steps (child.h). */
#define NSINIT_ZYGOTE_STEP 1000

/* One record; 16 bytes, so a write to the pipe is atomic. */
struct nsinit_record {
	uint32_t magic;
	uint32_t kind;
	int32_t value;
	int32_t step;
};

/* ---- requests on the control socket ------------------------------------------------ */

/* A request's payload follows it in the same message, up to this size;
 * a larger one comes as a memfd (NSINIT_RUN_PAYLOAD_FD). */
#define NSINIT_INLINE_MAX 65536

enum nsinit_request_kind {
	/* Mount the workspace. Payload (inline): its absolute path,
	 * NUL-terminated. fds: [0] a detached (idmapped) mount of it, optional.
	 * With NSINIT_WS_TMPFS: no host directory, a fresh tmpfs of tmpfs_size
	 * bytes at that path; the reply carries a descriptor of its mount. */
	NSINIT_REQ_WORKSPACE = 1,
	/* Start a run. Payload: argv strings, envp strings, then the working
	 * directory relative to the workspace ("" for the workspace), each
	 * NUL-terminated. fds: [0] stdin [1] stdout [2] stderr [3] status pipe
	 * [4..] the run's control-group join files (limits.h), then the payload's memfd when
	 * NSINIT_RUN_PAYLOAD_FD. Reply: its init's pidfd (none for a last run). */
	NSINIT_REQ_RUN = 2,
	/* A TCP socket of the sandbox's network namespace, for the host's serve
	 * forwarder to connect to a port on the sandbox's loopback (created
	 * here, connected by the host: the host never joins the namespace).
	 * No payload, no fds. Reply: the socket (SOCK_STREAM; AF_INET, or
	 * AF_INET6 with NSINIT_SOCKET_INET6). */
	NSINIT_REQ_SOCKET = 3,
	/* Mount an extra host directory (open_spec.mounts), after the workspace. Payload
	 * (inline): the absolute inside path, NUL-terminated. fds: [0] its detached mount
	 * (read-only unless NSINIT_MOUNT_RW), made by a privileged host. Below /tmp the
	 * mount point is made; elsewhere it must be a directory of the sandbox already. */
	NSINIT_REQ_MOUNT = 4,
};

#define NSINIT_RUN_PAYLOAD_FD 2u /* the payload is in a memfd (the last fd), not inline */
/* The sandbox's last run: the zygote replies, then becomes the run's init
 * itself (no fork, no pid namespace of its own: the sandbox's is the run's),
 * and the sandbox ends with the work. It still ends at EOF on the socket. */
#define NSINIT_RUN_LAST 4u
/* WORKSPACE: the private root of an unprivileged host, a size-capped tmpfs
 * made in the sandbox (the host cannot mount one itself). */
#define NSINIT_WS_TMPFS 8u
/* RUN: stdin is a terminal, to become the work's controlling terminal. */
#define NSINIT_RUN_CTTY 16u
/* SOCKET: an AF_INET6 socket (a server listening on ::1). */
#define NSINIT_SOCKET_INET6 32u
/* MOUNT: the work may write there (a Landlock rule beside the workspace's). */
#define NSINIT_MOUNT_RW 64u

struct nsinit_rlimit {
	uint32_t resource;
	uint32_t reserved;
	uint64_t value;
};

struct nsinit_request {
	uint32_t magic;
	uint32_t kind;
	uint32_t flags;
	uint32_t reserved;   /* 0 */
	uint32_t argc, envc; /* RUN */
	uint64_t payload_len;
	uint64_t ws_dev, ws_ino; /* WORKSPACE by path: the directory's identity */
	uint64_t tmpfs_size;     /* WORKSPACE with NSINIT_WS_TMPFS: bytes */
	uint32_t nrlimits;
	uint32_t ncgroups;
	struct nsinit_rlimit rlimits[NSINIT_MAX_RLIMITS];
};

struct nsinit_reply {
	uint32_t magic;
	int32_t err;  /* 0, or a positive errno */
	int32_t step; /* where it failed */
	int32_t reserved;
};
