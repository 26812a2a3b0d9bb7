/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Landlock rulesets for the kernel tier (landlock.h). */
#include "config.h"

#include "landlock.h"
#include "rawsys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

/* The uapi header of the build host may predate the ABI of the run host:
 * the values are the kernel's, spelled out. */
#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_ABI1 ((1ull << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ull << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15)  /* ABI 5 */
#define LL_NET_BIND_TCP (1ull << 0)   /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
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

struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

/* Device nodes the work may write (the rest of /dev is read-only anyway). */
static const char *const dev_files[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
};

static pthread_once_t abi_once = PTHREAD_ONCE_INIT;
static int abi_cached;

static void abi_probe(void)
{
	long r = rsys3(SYS_landlock_create_ruleset, 0, 0, LL_CREATE_RULESET_VERSION);
	abi_cached = r > 0 ? (int)r : 0;
}

int landlock_abi(void)
{
	pthread_once(&abi_once, abi_probe);
	return abi_cached;
}

void landlock_plan_init(landlock_plan *p, int abi)
{
	memset(p, 0, sizeof(*p));
	p->abi = abi;
	if (abi < 1)
		return;
	uint64_t fs = LL_FS_ABI1;
	if (abi >= 2)
		fs |= LL_FS_REFER;
	if (abi >= 3)
		fs |= LL_FS_TRUNCATE;
	if (abi >= 5)
		fs |= LL_FS_IOCTL_DEV;
	p->handled_fs = fs;
	if (abi >= 4)
		p->handled_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
	if (abi >= 6)
		p->scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
	p->read_exec = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
	/* Everything in the writable trees but device ioctls (none live there). */
	p->write_dir = fs & ~LL_FS_IOCTL_DEV;
	p->write_file = LL_FS_READ_FILE | LL_FS_WRITE_FILE | (fs & LL_FS_TRUNCATE);
	for (size_t i = 0; i < sizeof(dev_files) / sizeof(dev_files[0]); i++)
		p->files[p->nfiles++] = dev_files[i];
}

int landlock_plan_add_dir(landlock_plan *p, const char *path)
{
	if (p->ndirs >= LANDLOCK_PLAN_DIRS)
		return -E2BIG;
	if (strlen(path) >= LANDLOCK_PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(p->dirs[p->ndirs++], path);
	return 0;
}

int landlock_plan_add_port(landlock_plan *p, uint16_t port)
{
	if (p->nports >= LANDLOCK_PLAN_PORTS)
		return -E2BIG;
	p->ports[p->nports++] = port;
	return 0;
}

static RAWSYS_CHILD long add_fd(int rs, int fd, uint64_t access)
{
	struct ll_path_beneath_attr pb = { .allowed_access = access, .parent_fd = fd };
	return rsys4(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0);
}

/* One path-beneath rule; a path missing from this sandbox is skipped. */
static RAWSYS_CHILD long add_path(int rs, const char *path, uint64_t access)
{
	long fd = rsys4(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	long r = add_fd(rs, (int)fd, access);
	rsys1(SYS_close, fd);
	return r;
}

RAWSYS_CHILD int landlock_plan_build(const landlock_plan *p, int ws_fd)
{
	if (p->abi < 1)
		return -EOPNOTSUPP;
	struct ll_ruleset_attr ra = {
		.handled_access_fs = p->handled_fs,
		.handled_access_net = p->handled_net,
		.scoped = p->scoped,
	};
	/* Older kernels know a shorter struct; give them only what they know. */
	unsigned long size = p->abi >= 6 ? sizeof(ra) : p->abi >= 4 ? 16 : 8;
	long rs = rsys3(SYS_landlock_create_ruleset, &ra, size, 0);
	if (rs < 0)
		return (int)rs;
	long r = add_path((int)rs, "/", p->read_exec);
	if (r >= 0 && ws_fd >= 0)
		r = add_fd((int)rs, ws_fd, p->write_dir | p->read_exec);
	for (int i = 0; r >= 0 && i < p->ndirs; i++)
		r = add_path((int)rs, p->dirs[i], p->write_dir | p->read_exec);
	for (int i = 0; r >= 0 && i < p->nfiles; i++)
		r = add_path((int)rs, p->files[i], p->write_file);
	for (int i = 0; r >= 0 && p->handled_net && i < p->nports; i++) {
		struct ll_net_port_attr np = { p->handled_net, p->ports[i] };
		r = rsys4(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &np, 0);
	}
	if (r < 0) {
		rsys1(SYS_close, rs);
		return (int)r;
	}
	return (int)rs;
}

const char *landlock_describe(int abi)
{
	if (abi <= 0)
		return "no Landlock";
	if (abi < 4)
		return "filesystem rules";
	if (abi < 6)
		return "filesystem rules, TCP bind/connect rules";
	return "filesystem rules, TCP bind/connect rules, abstract-unix and signal scoping";
}
