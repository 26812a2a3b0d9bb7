/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's Landlock policy as access masks per ABI, shared by the
 * host (landlock.c: what to report) and the sandbox's init (nsinit.c: what
 * to enforce). Header-only and libc-free: the init is freestanding.
 *
 * Read and execute beneath "/" (everything the sandbox's view shows, which
 * is read-only anyway); everything but device ioctls beneath the workspace,
 * /tmp and /dev/shm; read, write and truncate on the harmless device nodes;
 * TCP not handled: the sandbox's network namespace (only lo) is what
 * confines TCP, and Landlock's port rules, which cannot tell the sandbox's
 * own loopback from any other address, would only break its servers and
 * clients (docs/decisions.md, "The kernel tier's loopback"); abstract
 * unix sockets and signals scoped to the sandbox (ABI >= 6); connecting to a
 * pathname unix socket (ABI >= 9) only beneath the writable places, where
 * the sockets are the sandbox's own: "/" is the host, read-only, and a
 * read-only mount does not stop connect(2) to a host service. The uapi header
 * of the build host may predate the ABI of the run host: the values are the
 * kernel's, spelled out.
 */
#pragma once

#include <stdint.h>

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_ABI1 ((1ull << 13) - 1)      /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ull << 13)           /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)        /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15)       /* ABI 5 */
#define LL_FS_RESOLVE_UNIX (1ull << 16)    /* ABI 9: connect(2)/sendmsg(2) to a pathname socket */
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_masks {
	struct ll_ruleset_attr handled;
	unsigned long handled_size; /* what this ABI's kernel reads of it */
	uint64_t read_exec;         /* beneath "/" */
	uint64_t write_dir;         /* beneath the workspace, /tmp, /dev/shm */
	uint64_t write_file;        /* on the device nodes below */
};

/* Device nodes the work may write (the rest of /dev is read-only anyway). */
#define LL_DEV_FILES \
	{ \
		"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty" \
	}
#define LL_WRITE_DIRS \
	{ \
		"/tmp", "/dev/shm" \
	}

static inline void ll_masks_for(int abi, struct ll_masks *m)
{
	uint64_t fs = LL_FS_ABI1;
	if (abi >= 2)
		fs |= LL_FS_REFER;
	if (abi >= 3)
		fs |= LL_FS_TRUNCATE;
	if (abi >= 5)
		fs |= LL_FS_IOCTL_DEV;
	if (abi >= 9)
		fs |= LL_FS_RESOLVE_UNIX;
	m->handled.handled_access_fs = fs;
	m->handled.handled_access_net = 0; /* the network namespace confines TCP */
	m->handled.scoped = abi >= 6 ? LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL : 0;
	m->handled_size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
	m->read_exec = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
	m->write_dir = fs & ~LL_FS_IOCTL_DEV;
	m->write_file = LL_FS_READ_FILE | LL_FS_WRITE_FILE | (fs & LL_FS_TRUNCATE);
}
