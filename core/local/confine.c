/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier's launcher (confine.h). */
#include "config.h"

#include "confine.h"
#include "landlock.h"
#include "nsinit-proto.h"
#include "rawsys.h"
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010u
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* The embedded init (nsinit-blob.c, generated from the static cordon-nsinit). */
extern const unsigned char confine_nsinit_blob[] CONFINE_HIDDEN;
extern const size_t confine_nsinit_blob_len CONFINE_HIDDEN;

/* The identities of a privileged host: the work runs as this unprivileged
 * host id (the overflow id, "nobody"), never as root. */
#define OUTSIDE_NOBODY 65534u
/* The work's id inside when the caller's own id would be 0. */
#define INSIDE_USER 1000u

#define STACK_SIZE (256u << 10)

/* Sizes of the private scratch mounts. */
#define TMP_OPTS "size=512m,nr_inodes=65536,mode=1777"
#define SHM_OPTS "size=64m,nr_inodes=4096,mode=1777"
#define DEV_OPTS "size=64k,nr_inodes=64,mode=755"
#define MASK_OPTS "size=4k,nr_inodes=2,mode=555"

enum confine_step {
	STEP_NONE = 0,
	STEP_CLONE, STEP_SETGROUPS_DENY, STEP_UID_MAP, STEP_GID_MAP, STEP_CGROUP, STEP_SYNC,
	STEP_PDEATHSIG, STEP_LIFELINE, STEP_CGROUPNS, STEP_RPRIVATE, STEP_DEVNODES, STEP_WS_OPEN,
	STEP_TREE_RO, STEP_REMOUNT_RO, STEP_WS_MOUNTPOINT, STEP_WS_CLONE,
	STEP_GROUPS, STEP_IDS, STEP_TMP, STEP_DEV, STEP_SHM, STEP_PROC, STEP_USERNS_MAX, STEP_MASK,
	STEP_WS_BIND, STEP_HOSTNAME, STEP_LOOPBACK, STEP_LANDLOCK, STEP_WORKDIR,
	STEP_SETSID, STEP_RLIMIT, STEP_CAPS, STEP_NNP, STEP_FDS, STEP_SIGNALS, STEP_EXEC,
	STEP_COUNT_
};

static const char *const step_names[STEP_COUNT_] = {
	[STEP_NONE] = "setup",
	[STEP_CLONE] = "creating the namespaces",
	[STEP_SETGROUPS_DENY] = "writing setgroups",
	[STEP_UID_MAP] = "writing the uid map",
	[STEP_GID_MAP] = "writing the gid map",
	[STEP_CGROUP] = "joining the run's control groups",
	[STEP_SYNC] = "waiting for the launcher",
	[STEP_PDEATHSIG] = "setting the parent-death signal",
	[STEP_LIFELINE] = "checking the host is alive",
	[STEP_CGROUPNS] = "creating the cgroup namespace",
	[STEP_RPRIVATE] = "making mounts private",
	[STEP_DEVNODES] = "opening the host device nodes",
	[STEP_WS_OPEN] = "opening the workspace",
	[STEP_TREE_RO] = "making the host read-only",
	[STEP_REMOUNT_RO] = "remounting a host mount read-only",
	[STEP_WS_MOUNTPOINT] = "finding the workspace mount point",
	[STEP_WS_CLONE] = "cloning the workspace mount",
	[STEP_GROUPS] = "dropping supplementary groups",
	[STEP_IDS] = "switching to the sandbox user",
	[STEP_TMP] = "mounting /tmp",
	[STEP_DEV] = "building /dev",
	[STEP_SHM] = "mounting /dev/shm",
	[STEP_PROC] = "mounting /proc",
	[STEP_USERNS_MAX] = "forbidding nested user namespaces",
	[STEP_MASK] = "masking /proc and /sys entries",
	[STEP_WS_BIND] = "mounting the workspace",
	[STEP_HOSTNAME] = "setting the hostname",
	[STEP_LOOPBACK] = "bringing up loopback",
	[STEP_LANDLOCK] = "building the Landlock ruleset",
	[STEP_WORKDIR] = "entering the working directory",
	[STEP_SETSID] = "starting a session",
	[STEP_RLIMIT] = "setting resource limits",
	[STEP_CAPS] = "dropping capabilities",
	[STEP_NNP] = "setting no_new_privs",
	[STEP_FDS] = "arranging file descriptors",
	[STEP_SIGNALS] = "resetting signals",
	[STEP_EXEC] = "starting the namespace init",
};

static const char *const devnodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
#define NDEVNODES (sizeof(devnodes) / sizeof(devnodes[0]))

/* /proc files hidden behind /dev/null; /proc and /sys directories hidden
 * behind an empty read-only tmpfs; /proc entries made read-only. */
static const char *const mask_files[] = {
	"/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
	"/proc/sched_debug", "/proc/interrupts", "/proc/kallsyms", "/proc/kmsg", "/proc/vmallocinfo",
};
static const char *const mask_dirs[] = {
	"/proc/acpi", "/proc/asound", "/proc/scsi", "/proc/driver",
	"/sys/firmware", "/sys/devices/virtual/powercap", "/sys/fs/cgroup", "/sys/kernel/security",
	"/sys/kernel/debug", "/sys/kernel/tracing",
};
static const char *const readonly_paths[] = {
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

struct confine_sandbox {
	int root_fd;
	char ws_path[PATH_MAX];   /* canonical; the same path inside */
	dev_t ws_dev;
	ino_t ws_ino;
	bool ws_under_scratch;    /* under /tmp or /dev: its mount point is made in the tmpfs */
	bool privileged;          /* root in the initial user namespace */
	unsigned in_uid, in_gid, out_uid, out_gid;
	int idmap_userns;         /* privileged: maps the workspace owner to out_uid */
	limits_plan limits;
	char limits_desc[512];
	landlock_plan ll;
};

typedef struct child_plan {
	const confine_sandbox *s;
	char uid_map[48], gid_map[48];
	bool deny_setgroups;
	int fd_sync_r, fd_sync_w, fd_status_w, fd_lifeline_r, fd_lifeline_w;
	int fd_bpf, fd_nsinit, fd_stdin, fd_stdout, fd_stderr;
	int ws_detached;          /* privileged: the idmapped workspace mount; -1 otherwise */
	int cg_fds[LIMITS_CG_COUNT];
	int ncg;
	landlock_plan ll;
	char *const *argv;        /* nsinit's */
	char *const *envp;
	const char *workdir;
	bool want_loopback;
	const char *mounts;       /* remount fallback: "/path\0/path\0\0" */
	char *stack_a_top, *stack_b_top;
	/* written by A */
	pid_t child_pid;
	int err;
	int step;
} child_plan;

static bool force_remount_fallback;

void confine_test_force_remount_fallback(bool on)
{
	force_remount_fallback = on;
}

/* ---- code that runs in the children (raw system calls only) -------------------------- */

static void __attribute__((noreturn)) RAWSYS_CHILD child_exit(int code)
{
	for (;;)
		rsys1(SYS_exit, code);
}

static void __attribute__((noreturn)) RAWSYS_CHILD fail(int status_fd, int step, long err)
{
	struct nsinit_record rec = { NSINIT_MAGIC, NSINIT_REC_SETUP_FAILED, (int32_t)-err, step };
	rsys3(SYS_write, status_fd, &rec, sizeof(rec));
	child_exit(126);
}

static long RAWSYS_CHILD write_str(int fd, const char *s)
{
	size_t len = rs_strlen(s);
	long r = rsys3(SYS_write, fd, s, len);
	return r < 0 ? r : (size_t)r == len ? 0 : -EIO;
}

static long RAWSYS_CHILD write_file(const char *path, const char *s)
{
	long fd = rsys4(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	long r = write_str((int)fd, s);
	rsys1(SYS_close, fd);
	return r;
}

/* "/proc/<pid>/<what>" */
static void RAWSYS_CHILD proc_path(char *buf, long pid, const char *what)
{
	char *e = rs_stpcpy(buf, "/proc/");
	e = rs_utoa(e, (unsigned long)pid);
	e = rs_stpcpy(e, "/");
	rs_stpcpy(e, what);
}

/* "/proc/self/fd/<fd>" */
static void RAWSYS_CHILD fd_path(char *buf, long fd)
{
	rs_utoa(rs_stpcpy(buf, "/proc/self/fd/"), (unsigned long)fd);
}

/* A: in the host's namespaces, sharing the host's memory; the host thread
 * is suspended until A exits. */
static int RAWSYS_CHILD stage_b(void *arg);

static int RAWSYS_CHILD stage_a(void *arg)
{
	child_plan *p = arg;
	int step = STEP_CLONE;
	long r;
	long pid = clone(stage_b, p->stack_b_top,
			 CLONE_VM | CLONE_PARENT | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
				 CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS,
			 p);
	if (pid < 0) {
		/* The host thread is suspended: its errno is ours alone here. */
		p->err = -errno;
		p->step = step;
		child_exit(0);
	}
	p->child_pid = (pid_t)pid;
	char path[64];
	if (p->deny_setgroups) {
		step = STEP_SETGROUPS_DENY;
		proc_path(path, pid, "setgroups");
		if ((r = write_file(path, "deny")) < 0)
			goto fail;
	}
	step = STEP_UID_MAP;
	proc_path(path, pid, "uid_map");
	if ((r = write_file(path, p->uid_map)) < 0)
		goto fail;
	step = STEP_GID_MAP;
	proc_path(path, pid, "gid_map");
	if ((r = write_file(path, p->gid_map)) < 0)
		goto fail;
	step = STEP_CGROUP;
	char num[24];
	rs_utoa(num, (unsigned long)pid);
	for (int i = 0; i < p->ncg; i++)
		if ((r = write_str(p->cg_fds[i], num)) < 0)
			goto fail;
	step = STEP_SYNC;
	if ((r = rsys3(SYS_write, p->fd_sync_w, "x", 1)) != 1)
		goto fail;
	child_exit(0);
fail:
	p->err = (int)(r < 0 ? r : -EIO);
	p->step = step;
	rsys2(SYS_kill, pid, SIGKILL);
	child_exit(0);
}

#define CHECK(expr)                                 \
	do {                                        \
		long r_ = (expr);                   \
		if (r_ < 0)                         \
			fail(status_fd, step, r_);  \
	} while (0)

static long RAWSYS_CHILD open_path_dir(int dirfd, const char *path, uint64_t resolve)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = resolve,
	};
	return rsys4(SYS_openat2, dirfd, path, &how, sizeof(how));
}

static long RAWSYS_CHILD same_inode(long fd, dev_t dev, ino_t ino)
{
	struct statx stx;
	long r = rsys5(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_INO, &stx);
	if (r < 0)
		return r;
	if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev || stx.stx_ino != ino)
		return -ESTALE;
	return 0;
}

/* mkdir -p of an absolute path (in a tmpfs), returning an O_PATH fd. */
static long RAWSYS_CHILD make_dirs(const char *rel)
{
	char buf[PATH_MAX];
	size_t n = rs_strlen(rel);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	for (size_t i = 0; i <= n; i++)
		buf[i] = rel[i];
	for (size_t i = 1; i <= n; i++) {
		if ((buf[i] != '/' && buf[i] != '\0') || buf[i - 1] == '/')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		long r = rsys3(SYS_mkdirat, AT_FDCWD, buf, 0755);
		if (r < 0 && r != -EEXIST)
			return r;
		buf[i] = c;
	}
	return open_path_dir(AT_FDCWD, rel, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

static long RAWSYS_CHILD bind_fd(long src_fd, const char *target)
{
	char src[48];
	fd_path(src, src_fd);
	return rsys5(SYS_mount, src, target, 0, MS_BIND, 0);
}

static unsigned long RAWSYS_CHILD st_to_ms(unsigned long f)
{
	unsigned long ms = 0;
	if (f & ST_NOEXEC)
		ms |= MS_NOEXEC;
	if (f & ST_NOATIME)
		ms |= MS_NOATIME;
	if (f & ST_NODIRATIME)
		ms |= MS_NODIRATIME;
	if (f & ST_RELATIME)
		ms |= MS_RELATIME;
	return ms;
}

/* Without mount_setattr: every mount of the copied host tree, one by one,
 * keeping the flags a user namespace may not change. */
static long RAWSYS_CHILD remount_all_readonly(const char *mounts)
{
	for (const char *m = mounts; *m; m += rs_strlen(m) + 1) {
		const char *target = m;
		struct statfs sf;
		long r = rsys2(SYS_statfs, target, &sf);
		if (r == -ENOENT || r == -EACCES)
			continue; /* gone, or covered by a mount above it */
		if (r < 0)
			return r;
		unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
				      st_to_ms((unsigned long)sf.f_flags);
		r = rsys5(SYS_mount, 0, target, 0, flags, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Lets a device node bound from the (now nodev) host /dev work again. */
static long RAWSYS_CHILD allow_dev(const char *target, bool fallback)
{
	if (!fallback) {
		struct mount_attr a = { .attr_clr = MOUNT_ATTR_NODEV, .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC };
		return rsys5(SYS_mount_setattr, AT_FDCWD, target, 0, &a, sizeof(a));
	}
	struct statfs sf;
	long r = rsys2(SYS_statfs, target, &sf);
	if (r < 0)
		return r;
	return rsys5(SYS_mount, 0, target, 0,
		     MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC |
			     st_to_ms((unsigned long)sf.f_flags & ~ST_NOEXEC),
		     0);
}

static long RAWSYS_CHILD mount_dev(const long *node_fd, bool fallback)
{
	long r = rsys5(SYS_mount, "tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, DEV_OPTS);
	for (size_t i = 0; r >= 0 && i < NDEVNODES; i++) {
		if (node_fd[i] < 0)
			continue;
		char target[32];
		rs_stpcpy(rs_stpcpy(target, "/dev/"), devnodes[i]);
		long fd = rsys4(SYS_openat, AT_FDCWD, target, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return fd;
		rsys1(SYS_close, fd);
		r = bind_fd(node_fd[i], target);
		if (r >= 0)
			r = allow_dev(target, fallback);
	}
	static const char *const links[][2] = {
		{ "/proc/self/fd", "/dev/fd" },
		{ "/proc/self/fd/0", "/dev/stdin" },
		{ "/proc/self/fd/1", "/dev/stdout" },
		{ "/proc/self/fd/2", "/dev/stderr" },
	};
	for (size_t i = 0; r >= 0 && i < 4; i++)
		r = rsys3(SYS_symlinkat, links[i][0], AT_FDCWD, links[i][1]);
	if (r >= 0)
		r = rsys3(SYS_mkdirat, AT_FDCWD, "/dev/shm", 01777);
	return r;
}

/* A path missing on this host (no /proc/kcore, say) needs no mask. */
static long RAWSYS_CHILD skip_missing(long r)
{
	return r == -ENOENT ? 0 : r;
}

static long RAWSYS_CHILD mask_paths(void)
{
	long r = 0;
	for (size_t i = 0; r >= 0 && i < sizeof(mask_files) / sizeof(mask_files[0]); i++)
		r = skip_missing(rsys5(SYS_mount, "/dev/null", mask_files[i], 0, MS_BIND, 0));
	for (size_t i = 0; r >= 0 && i < sizeof(mask_dirs) / sizeof(mask_dirs[0]); i++)
		r = skip_missing(rsys5(SYS_mount, "tmpfs", mask_dirs[i], "tmpfs",
				       MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, MASK_OPTS));
	for (size_t i = 0; r >= 0 && i < sizeof(readonly_paths) / sizeof(readonly_paths[0]); i++) {
		const char *p = readonly_paths[i];
		r = rsys5(SYS_mount, p, p, 0, MS_BIND | MS_REC, 0);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r >= 0)
			r = rsys5(SYS_mount, 0, p, 0,
				  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, 0);
	}
	return r;
}

static long RAWSYS_CHILD loopback_up(void)
{
	long s = rsys3(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return s;
	struct ifreq ifr;
	for (size_t i = 0; i < sizeof(ifr); i++)
		((char *)&ifr)[i] = 0;
	ifr.ifr_name[0] = 'l';
	ifr.ifr_name[1] = 'o';
	long r = rsys3(SYS_ioctl, s, SIOCGIFFLAGS, &ifr);
	if (r >= 0) {
		ifr.ifr_flags |= IFF_UP;
		r = rsys3(SYS_ioctl, s, SIOCSIFFLAGS, &ifr);
	}
	rsys1(SYS_close, s);
	return r;
}

static long RAWSYS_CHILD drop_caps(void)
{
	long r = rsys2(SYS_prctl, PR_SET_SECUREBITS,
		       (1 << 0) | (1 << 1) |   /* NOROOT, locked */
		       (1 << 2) | (1 << 3) |   /* NO_SETUID_FIXUP, locked */
		       (1 << 5) |              /* KEEP_CAPS off, locked */
		       (1 << 6) | (1 << 7));   /* NO_CAP_AMBIENT_RAISE, locked */
	if (r < 0)
		return r;
	for (long cap = 0; cap < 64; cap++) {
		r = rsys2(SYS_prctl, PR_CAPBSET_DROP, cap);
		if (r == -EINVAL)
			break; /* past the last capability this kernel knows */
		if (r < 0)
			return r;
	}
	r = rsys5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (r < 0)
		return r;
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	for (size_t i = 0; i < sizeof(data); i++)
		((char *)data)[i] = 0;
	return rsys2(SYS_capset, &hdr, data);
}

/* Puts the fds nsinit expects at 0..NSINIT_FD_COUNT and the init's own
 * executable right above (close-on-exec), closing everything else. */
static long RAWSYS_CHILD arrange_fds(const child_plan *p, long ruleset)
{
	long src[NSINIT_FD_COUNT + 1] = {
		p->fd_stdin, p->fd_stdout, p->fd_stderr, p->fd_status_w, p->fd_bpf,
		ruleset, p->fd_lifeline_r, p->fd_nsinit,
	};
	long tmp[NSINIT_FD_COUNT + 1];
	/* First out of the way of the targets, then into place. */
	for (int i = 0; i <= NSINIT_FD_COUNT; i++) {
		tmp[i] = -1;
		if (src[i] < 0)
			continue;
		tmp[i] = rsys3(SYS_fcntl, src[i], F_DUPFD_CLOEXEC, NSINIT_FD_COUNT + 1);
		if (tmp[i] < 0)
			return tmp[i];
	}
	for (int i = 0; i <= NSINIT_FD_COUNT; i++) {
		long r = tmp[i] < 0 ? rsys1(SYS_close, i)
				    : rsys3(SYS_dup3, tmp[i], i, i == NSINIT_FD_COUNT ? O_CLOEXEC : 0);
		if (r < 0 && !(tmp[i] < 0 && r == -EBADF))
			return r;
	}
	return rsys3(SYS_close_range, NSINIT_FD_COUNT + 1, ~0U, 0);
}

struct k_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

static long RAWSYS_CHILD reset_signals(void)
{
	struct k_sigaction dfl = { SIG_DFL, 0, 0, 0 };
	for (long sig = 1; sig <= 64; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		long r = rsys4(SYS_rt_sigaction, sig, &dfl, 0, 8);
		if (r < 0 && r != -EINVAL)
			return r;
	}
	unsigned long none = 0;
	return rsys4(SYS_rt_sigprocmask, SIG_SETMASK, &none, 0, 8);
}

/* B: pid 1 of the new namespaces, still in the host's memory until execve. */
static int __attribute__((noreturn)) RAWSYS_CHILD stage_b_run(child_plan *p)
{
	const confine_sandbox *s = p->s;
	int status_fd = p->fd_status_w;
	int step = STEP_PDEATHSIG;
	char c;

	rsys1(SYS_close, p->fd_sync_w);
	rsys1(SYS_close, p->fd_lifeline_w);
	CHECK(rsys2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL));
	/* A writes our maps and cgroups, then one byte; EOF means it failed
	 * (and said why). */
	if (rsys3(SYS_read, p->fd_sync_r, &c, 1) != 1)
		child_exit(126);
	rsys1(SYS_close, p->fd_sync_r);
	/* The death signal is armed; if the host died before, nobody will
	 * ever kill us: check the lifeline once by hand. */
	step = STEP_LIFELINE;
	struct pollfd pfd = { p->fd_lifeline_r, POLLIN, 0 };
	if (rsys3(SYS_poll, &pfd, 1, 0) != 0)
		child_exit(126);

	step = STEP_CGROUPNS;
	CHECK(rsys1(SYS_unshare, CLONE_NEWCGROUP));
	step = STEP_RPRIVATE;
	CHECK(rsys5(SYS_mount, 0, "/", 0, MS_REC | MS_PRIVATE, 0));

	/* Host objects, opened while we still hold the caller's host identity
	 * (as root: uid 0, which can reach root-only directories). */
	step = STEP_DEVNODES;
	long node_fd[NDEVNODES];
	for (size_t i = 0; i < NDEVNODES; i++) {
		char path[32];
		rs_stpcpy(rs_stpcpy(path, "/dev/"), devnodes[i]);
		node_fd[i] = rsys4(SYS_openat, AT_FDCWD, path, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
		if (node_fd[i] == -ENOENT)
			continue;
		CHECK(node_fd[i]);
		struct statx stx;
		CHECK(rsys5(SYS_statx, node_fd[i], "", AT_EMPTY_PATH, STATX_TYPE, &stx));
		if (!S_ISCHR(stx.stx_mode))
			fail(status_fd, step, -ENOTTY);
	}
	long ws_src = p->ws_detached;
	if (ws_src < 0) {
		/* A copy of the workspace's mount, taken while it is still writable. */
		step = STEP_WS_OPEN;
		long fd = open_path_dir(AT_FDCWD, s->ws_path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		CHECK(fd);
		CHECK(same_inode(fd, s->ws_dev, s->ws_ino));
		step = STEP_WS_CLONE;
		ws_src = rsys3(SYS_open_tree, fd, "", OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH | OPEN_TREE_CLOEXEC);
		CHECK(ws_src);
		rsys1(SYS_close, fd);
		if (!p->mounts) {
			struct mount_attr wa = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
			CHECK(rsys5(SYS_mount_setattr, ws_src, "", AT_EMPTY_PATH | AT_RECURSIVE, &wa, sizeof(wa)));
		}
	}

	/* The root is our private copy of the host's mount tree: every mount
	 * read-only, nosuid, nodev. /tmp, /dev and /proc are covered below by
	 * mounts of our own; what they hide stays unreachable (no capability,
	 * and seccomp refuses every mount call). */
	if (!p->mounts) {
		step = STEP_TREE_RO;
		struct mount_attr ro = {
			.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			.propagation = MS_PRIVATE,
		};
		CHECK(rsys5(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)));
	} else {
		step = STEP_REMOUNT_RO;
		CHECK(remount_all_readonly(p->mounts));
	}
	long ws_mp = -1;
	if (!s->ws_under_scratch) {
		step = STEP_WS_MOUNTPOINT;
		ws_mp = open_path_dir(AT_FDCWD, s->ws_path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		CHECK(ws_mp);
	}

	/* From here on the sandbox identity (capabilities in our namespace
	 * stay until the drop below). */
	if (s->privileged) {
		step = STEP_GROUPS;
		CHECK(rsys2(SYS_setgroups, 0, 0));
	}
	step = STEP_IDS;
	CHECK(rsys3(SYS_setresgid, s->in_gid, s->in_gid, s->in_gid));
	CHECK(rsys3(SYS_setresuid, s->in_uid, s->in_uid, s->in_uid));

	step = STEP_TMP;
	CHECK(rsys5(SYS_mount, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, TMP_OPTS));
	step = STEP_DEV;
	CHECK(mount_dev(node_fd, p->mounts != NULL));
	step = STEP_SHM;
	CHECK(rsys5(SYS_mount, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, SHM_OPTS));
	if (s->ws_under_scratch) {
		step = STEP_WS_MOUNTPOINT;
		ws_mp = make_dirs(s->ws_path);
		CHECK(ws_mp);
	}
	step = STEP_DEV;
	CHECK(rsys5(SYS_mount, 0, "/dev", 0, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, 0));
	step = STEP_PROC;
	CHECK(rsys5(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0));
	/* Nested user namespaces are refused by seccomp; refuse them here too. */
	step = STEP_USERNS_MAX;
	CHECK(write_file("/proc/sys/user/max_user_namespaces", "0"));
	step = STEP_MASK;
	CHECK(mask_paths());
	step = STEP_WS_BIND;
	CHECK(rsys5(SYS_move_mount, ws_src, "", ws_mp, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
	if (p->mounts) {
		struct statfs sf;
		CHECK(rsys2(SYS_statfs, s->ws_path, &sf));
		CHECK(rsys5(SYS_mount, 0, s->ws_path, 0,
			    MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | st_to_ms((unsigned long)sf.f_flags), 0));
	}

	step = STEP_HOSTNAME;
	CHECK(rsys2(SYS_sethostname, "cordon", 6));
	/* Loopback only for a server (its port): an unused interface costs
	 * milliseconds when the namespace is torn down. */
	if (p->ll.nports || p->want_loopback) {
		step = STEP_LOOPBACK;
		CHECK(loopback_up());
	}

	long ruleset = -1;
	if (p->ll.abi > 0) {
		step = STEP_LANDLOCK;
		ruleset = landlock_plan_build(&p->ll, ws_src);
		CHECK(ruleset);
	}
	step = STEP_WORKDIR;
	if (p->workdir && p->workdir[0]) {
		struct open_how how = {
			.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		};
		long wd = rsys4(SYS_openat2, ws_src, p->workdir, &how, sizeof(how));
		CHECK(wd);
		CHECK(rsys1(SYS_fchdir, wd));
	} else {
		CHECK(rsys1(SYS_fchdir, ws_src));
	}

	step = STEP_SETSID;
	CHECK(rsys0(SYS_setsid));
	step = STEP_RLIMIT;
	for (int i = 0; i < s->limits.nrlimits; i++) {
		struct rlimit lim = { s->limits.rlimits[i].value, s->limits.rlimits[i].value };
		CHECK(rsys4(SYS_prlimit64, 0, s->limits.rlimits[i].resource, &lim, 0));
	}
	step = STEP_CAPS;
	CHECK(drop_caps());
	step = STEP_NNP;
	CHECK(rsys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	step = STEP_FDS;
	CHECK(arrange_fds(p, ruleset));
	status_fd = NSINIT_FD_STATUS;
	step = STEP_SIGNALS;
	CHECK(reset_signals());
	step = STEP_EXEC;
	CHECK(rsys5(SYS_execveat, NSINIT_FD_COUNT, "", p->argv, p->envp, AT_EMPTY_PATH));
	fail(status_fd, step, -EIO);
}

static int RAWSYS_CHILD stage_b(void *arg)
{
	stage_b_run(arg);
}

/* ---- host side ---------------------------------------------------------------------------- */

static pthread_once_t nsinit_once = PTHREAD_ONCE_INIT;
static int nsinit_memfd = -1;
static const char *nsinit_what;

static void nsinit_build(void)
{
	nsinit_what = "memfd_create";
	int fd = memfd_create("cordon-nsinit", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create("cordon-nsinit", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return;
	nsinit_what = "writing the namespace init";
	size_t off = 0;
	while (off < confine_nsinit_blob_len) {
		ssize_t n = write(fd, confine_nsinit_blob + off, confine_nsinit_blob_len - off);
		if (n <= 0) {
			close(fd);
			return;
		}
		off += (size_t)n;
	}
	nsinit_what = "sealing the namespace init";
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return;
	}
	nsinit_memfd = fd;
	nsinit_what = NULL;
}

static int nsinit_fd(const char **what)
{
	pthread_once(&nsinit_once, nsinit_build);
	if (nsinit_memfd < 0)
		*what = nsinit_what;
	return nsinit_memfd;
}

static bool kernel_has(long nr)
{
	/* An invalid call: ENOSYS only when the call itself is missing. */
	return syscall(nr, -1, NULL, 0, NULL, 0) < 0 && errno != ENOSYS;
}

/* Root of the initial user namespace, with the capabilities to map ids. */
static bool is_privileged(void)
{
	if (geteuid() != 0)
		return false;
	g_autofree char *map = NULL;
	if (!g_file_get_contents("/proc/self/uid_map", &map, NULL, NULL))
		return false;
	g_auto(GStrv) f = g_strsplit_set(g_strstrip(map), " \t\n", -1);
	const char *w[3];
	guint n = 0;
	for (char **x = f; *x; x++)
		if (**x && n++ < 3)
			w[n - 1] = *x;
	return n == 3 && strcmp(w[0], "0") == 0 && strcmp(w[1], "0") == 0 &&
	       strcmp(w[2], "4294967295") == 0;
}

/* A user namespace that maps the workspace's owner to the work's host id,
 * for the idmapped workspace mount of a privileged host. Held by fd. */
static int RAWSYS_CHILD idmap_child(void *arg)
{
	char c;
	rsys3(SYS_read, (long)(intptr_t)arg, &c, 1);
	child_exit(0);
}

static int make_idmap_userns(uid_t owner_uid, gid_t owner_gid, unsigned out_uid, unsigned out_gid)
{
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -errno;
	void *stack = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		int e = -errno;
		close(sync[0]);
		close(sync[1]);
		return e;
	}
	int r = 0;
	pid_t pid = clone(idmap_child, (char *)stack + (64 << 10), CLONE_VM | CLONE_NEWUSER | SIGCHLD,
			  (void *)(intptr_t)sync[0]);
	if (pid < 0) {
		r = -errno;
	} else {
		char path[64], map[64];
		snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
		snprintf(map, sizeof(map), "%u %u 1", (unsigned)owner_uid, out_uid);
		if (write_file(path, map) < 0)
			r = -EPERM;
		snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
		snprintf(map, sizeof(map), "%u %u 1", (unsigned)owner_gid, out_gid);
		if (r == 0 && write_file(path, map) < 0)
			r = -EPERM;
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if (r == 0) {
			r = open(path, O_RDONLY | O_CLOEXEC);
			if (r < 0)
				r = -errno;
		}
		if (write(sync[1], "x", 1) < 0) {
			/* the child dies with the pipe anyway */
		}
		close(sync[1]);
		sync[1] = -1;
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	close(sync[0]);
	if (sync[1] >= 0)
		close(sync[1]);
	munmap(stack, 64 << 10);
	return r;
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

int confine_sandbox_new(int root_fd, const cordon_plugin_limits *limits, confine_sandbox **ret,
			char *why, size_t whylen)
{
	g_autofree confine_sandbox *s = g_new0(confine_sandbox, 1);
	s->root_fd = -1;
	s->idmap_userns = -1;
	if (!kernel_has(SYS_open_tree) || !kernel_has(SYS_move_mount)) {
		snprintf(why, whylen, "the kernel lacks open_tree/move_mount (Linux 5.2)");
		return -ENOSYS;
	}
	int r = limits_plan_make(limits, &s->limits, why, whylen);
	if (r < 0)
		return r;
	limits_plan_describe(&s->limits, s->limits_desc, sizeof(s->limits_desc));

	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
	ssize_t n = readlink(link, s->ws_path, sizeof(s->ws_path) - 1);
	if (n <= 0 || s->ws_path[0] != '/') {
		snprintf(why, whylen, "cannot name the workspace directory");
		return n < 0 ? -errno : -EINVAL;
	}
	s->ws_path[n] = '\0';
	if (strcmp(s->ws_path, "/") == 0 || path_under(s->ws_path, "/proc") ||
	    path_under(s->ws_path, "/sys") || strstr(s->ws_path, " (deleted)")) {
		snprintf(why, whylen, "the workspace cannot be /, under /proc or /sys, or deleted");
		return -EINVAL;
	}
	struct stat st;
	if (fstat(root_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "the workspace is not a directory");
		return -ENOTDIR;
	}
	s->ws_dev = st.st_dev;
	s->ws_ino = st.st_ino;
	s->ws_under_scratch = path_under(s->ws_path, "/tmp") || path_under(s->ws_path, "/dev");

	s->privileged = is_privileged();
	if (s->privileged) {
		s->in_uid = s->in_gid = INSIDE_USER;
		s->out_uid = s->out_gid = OUTSIDE_NOBODY;
		s->idmap_userns = make_idmap_userns(st.st_uid, st.st_gid, s->out_uid, s->out_gid);
		if (s->idmap_userns < 0) {
			snprintf(why, whylen, "cannot create a user namespace (the workspace's id "
				 "mapping): %s", g_strerror(-s->idmap_userns));
			return s->idmap_userns;
		}
	} else {
		s->out_uid = geteuid();
		s->out_gid = getegid();
		s->in_uid = s->out_uid ? s->out_uid : INSIDE_USER;
		s->in_gid = s->out_uid ? s->out_gid : INSIDE_USER;
	}
	landlock_plan_init(&s->ll, landlock_abi());
	if (s->ll.abi > 0) {
		landlock_plan_add_dir(&s->ll, "/tmp");
		landlock_plan_add_dir(&s->ll, "/dev/shm");
	}
	s->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	if (s->root_fd < 0) {
		r = -errno;
		if (s->idmap_userns >= 0)
			close(s->idmap_userns);
		return r;
	}
	*ret = g_steal_pointer(&s);
	return 0;
}

void confine_sandbox_free(confine_sandbox *s)
{
	if (!s)
		return;
	if (s->root_fd >= 0)
		close(s->root_fd);
	if (s->idmap_userns >= 0)
		close(s->idmap_userns);
	g_free(s);
}

const char *confine_sandbox_limits(const confine_sandbox *s)
{
	return s->limits_desc;
}

void confine_sandbox_ids(const confine_sandbox *s, unsigned *ret_uid, unsigned *ret_gid)
{
	*ret_uid = s->in_uid;
	*ret_gid = s->in_gid;
}

/* The mount points of the host, parents first (the remount fallback for
 * kernels without mount_setattr). */
static char *host_mounts(void)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return NULL;
	GString *out = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, " ", 6);
		if (g_strv_length(f) < 5)
			continue;
		g_autofree char *mp = g_strcompress(f[4]); /* \040 and friends */
		g_string_append(out, mp);
		g_string_append_c(out, '\0');
	}
	g_string_append_c(out, '\0');
	return g_string_free(out, FALSE);
}

static bool need_remount_fallback(void)
{
	static gsize once;
	static bool missing;
	if (g_once_init_enter(&once)) {
		missing = !kernel_has(SYS_mount_setattr);
		g_once_init_leave(&once, 1);
	}
	return missing || force_remount_fallback;
}

/* nsinit's argv: name, flags, the file to execute, then the work's argv. */
static char **nsinit_argv(const confine_request *req, bool landlock)
{
	guint n = g_strv_length((char **)req->argv);
	char **a = g_new0(char *, n + 4);
	a[0] = (char *)"cordon-nsinit";
	a[1] = (char *)(req->probe ? (landlock ? "LP" : "P") : (landlock ? "L" : "-"));
	a[2] = (char *)req->argv[0];
	for (guint i = 0; i < n; i++)
		a[3 + i] = (char *)req->argv[i];
	return a;
}

typedef struct spawn_fds {
	int sync[2], status[2], lifeline[2];
} spawn_fds;

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

static int wait_started(child_plan *p, int pidfd, int status_fd, char *why, size_t whylen)
{
	struct pollfd pfd[2] = { { status_fd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
	struct nsinit_record rec;
	for (;;) {
		int n = poll(pfd, 2, 30000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, whylen, "the sandbox did not start within 30 s");
			return -ETIMEDOUT;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents) {
			/* Died: a record may still be in the pipe. */
			pfd[1].fd = -1;
			pfd[0].events = POLLIN;
			if (poll(pfd, 1, 0) <= 0) {
				snprintf(why, whylen, "the sandbox init died during setup");
				return -ECHILD;
			}
			break;
		}
	}
	ssize_t got = read(status_fd, &rec, sizeof(rec));
	if (got != (ssize_t)sizeof(rec) || rec.magic != NSINIT_MAGIC) {
		snprintf(why, whylen, "the sandbox init died during setup");
		return -ECHILD;
	}
	if (rec.kind == NSINIT_REC_STARTED)
		return 0;
	if (rec.kind == NSINIT_REC_SETUP_FAILED) {
		int step = rec.step > 0 && rec.step < STEP_COUNT_ ? rec.step : 0;
		snprintf(why, whylen, "kernel confinement failed %s: %s", step_names[step],
			 g_strerror(rec.value));
		return rec.value > 0 ? -rec.value : -EIO;
	}
	snprintf(why, whylen, "the namespace init could not start the work: %s",
		 g_strerror(rec.value));
	return rec.value > 0 ? -rec.value : -EIO;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
}

int confine_spawn(confine_sandbox *s, const confine_request *req, confine_child *ret, char *why,
		  size_t whylen)
{
	const char *what = NULL;
	int bpf = seccomp_filter_fd(&what);
	if (bpf < 0) {
		snprintf(why, whylen, "cannot build the seccomp filter (%s): %s", what, g_strerror(-bpf));
		return bpf;
	}
	int init = nsinit_fd(&what);
	if (init < 0) {
		snprintf(why, whylen, "cannot load the namespace init (%s)", what);
		return -EIO;
	}
	if (req->workdir && g_path_is_absolute(req->workdir)) {
		snprintf(why, whylen, "the working directory must be relative");
		return -EINVAL;
	}

	g_autofree child_plan *p = g_new0(child_plan, 1);
	spawn_fds f = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
	confine_child c = { .pid = -1, .pidfd = -1, .status_fd = -1, .lifeline_fd = -1 };
	char *stacks = MAP_FAILED;
	g_autofree char **argv = NULL;
	g_autofree char *mounts = NULL;
	int r = 0;

	if (pipe2(f.sync, O_CLOEXEC) < 0 || pipe2(f.status, O_CLOEXEC) < 0 ||
	    pipe2(f.lifeline, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(why, whylen, "pipe: %s", g_strerror(-r));
		goto out;
	}
	r = limits_cgroup_create(&s->limits, &c.cg, why, whylen);
	if (r < 0)
		goto out;
	c.have_cg = true;

	p->s = s;
	p->ws_detached = -1;
	if (s->privileged) {
		snprintf(p->uid_map, sizeof(p->uid_map), "%u %u 1", s->in_uid, s->out_uid);
		snprintf(p->gid_map, sizeof(p->gid_map), "%u %u 1", s->in_gid, s->out_gid);
		/* The workspace, mapped so the work owns it (it runs as nobody). */
		p->ws_detached = (int)syscall(SYS_open_tree, s->root_fd, "",
					      OPEN_TREE_CLONE | AT_EMPTY_PATH | OPEN_TREE_CLOEXEC);
		struct mount_attr ma = {
			.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			.userns_fd = (uint64_t)s->idmap_userns,
		};
		if (p->ws_detached < 0 ||
		    syscall(SYS_mount_setattr, p->ws_detached, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0) {
			r = -errno;
			snprintf(why, whylen, "cannot make an idmapped mount of the workspace (as root "
				 "the work runs as an unprivileged id and needs one): %s",
				 g_strerror(-r));
			goto out;
		}
	} else {
		snprintf(p->uid_map, sizeof(p->uid_map), "%u %u 1", s->in_uid, s->out_uid);
		snprintf(p->gid_map, sizeof(p->gid_map), "%u %u 1", s->in_gid, s->out_gid);
		p->deny_setgroups = true;
	}
	p->fd_sync_r = f.sync[0];
	p->fd_sync_w = f.sync[1];
	p->fd_status_w = f.status[1];
	p->fd_lifeline_r = f.lifeline[0];
	p->fd_lifeline_w = f.lifeline[1];
	p->fd_bpf = bpf;
	p->fd_nsinit = init;
	p->fd_stdin = req->stdin_fd;
	p->fd_stdout = req->stdout_fd;
	p->fd_stderr = req->stderr_fd;
	for (int i = 0; i < c.cg.ndirs; i++)
		p->cg_fds[p->ncg++] = c.cg.procs_fd[i];
	p->ll = s->ll;
	if (p->ll.abi > 0 && req->port)
		landlock_plan_add_port(&p->ll, req->port);
	argv = nsinit_argv(req, p->ll.abi > 0);
	p->argv = argv;
	p->envp = (char *const *)req->envp;
	p->workdir = req->workdir;
	p->want_loopback = req->port != 0;
	if (need_remount_fallback()) {
		mounts = host_mounts();
		if (!mounts) {
			r = -EIO;
			snprintf(why, whylen, "cannot read the host's mount table");
			goto out;
		}
		p->mounts = mounts;
	}

	stacks = mmap(NULL, 2 * STACK_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stacks == MAP_FAILED) {
		r = -errno;
		snprintf(why, whylen, "mmap: %s", g_strerror(-r));
		goto out;
	}
	p->stack_a_top = stacks + STACK_SIZE;
	p->stack_b_top = stacks + 2 * STACK_SIZE;

	/* No signal handler of the host may run on the children's stacks. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t a = clone(stage_a, p->stack_a_top, CLONE_VM | CLONE_VFORK | SIGCHLD, p);
	int clone_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (a < 0) {
		r = -clone_errno;
		snprintf(why, whylen, "clone: %s", g_strerror(clone_errno));
		goto out;
	}
	reap(a);
	close_pair(f.sync);
	close(f.status[1]);
	f.status[1] = -1;
	close(f.lifeline[0]);
	f.lifeline[0] = -1;
	if (p->err < 0) {
		r = p->err;
		int step = p->step > 0 && p->step < STEP_COUNT_ ? p->step : 0;
		snprintf(why, whylen, "kernel confinement failed %s: %s", step_names[step],
			 g_strerror(-r));
		if (p->child_pid > 0)
			reap(p->child_pid);
		goto out;
	}
	c.pid = p->child_pid;
	c.pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
	if (c.pidfd < 0) {
		r = -errno;
		snprintf(why, whylen, "pidfd_open: %s", g_strerror(-r));
		kill(c.pid, SIGKILL);
		reap(c.pid);
		goto out;
	}
	r = wait_started(p, c.pidfd, f.status[0], why, whylen);
	if (r < 0) {
		/* B may still be on its stack: wait for it before unmapping. */
		kill(c.pid, SIGKILL);
		reap(c.pid);
		close(c.pidfd);
		goto out;
	}
	c.status_fd = f.status[0];
	f.status[0] = -1;
	c.lifeline_fd = f.lifeline[1];
	f.lifeline[1] = -1;
	*ret = c;
	c.have_cg = false;
out:
	if (stacks != MAP_FAILED)
		munmap(stacks, 2 * STACK_SIZE);
	if (p->ws_detached >= 0)
		close(p->ws_detached);
	close_pair(f.sync);
	close_pair(f.status);
	close_pair(f.lifeline);
	if (c.have_cg)
		limits_cgroup_destroy(&c.cg);
	return r;
}

void confine_child_kill(confine_child *c)
{
	if (c->pidfd >= 0 && syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0) == 0)
		return;
	if (c->pid > 0)
		kill(c->pid, SIGKILL);
}

int confine_child_finish(confine_child *c, bool killed, cordon_plugin_run_status *st,
			 bool *ret_exec_failed, char *why, size_t whylen)
{
	struct nsinit_record rec;
	bool exited = false;
	int status = 0;
	*ret_exec_failed = false;
	fcntl(c->status_fd, F_SETFL, O_NONBLOCK);
	while (read(c->status_fd, &rec, sizeof(rec)) == (ssize_t)sizeof(rec)) {
		if (rec.magic != NSINIT_MAGIC)
			break;
		if (rec.kind == NSINIT_REC_EXITED) {
			exited = true;
			status = rec.value;
		} else if (rec.kind == NSINIT_REC_EXEC_FAILED && !killed) {
			*ret_exec_failed = rec.step == NSINIT_STEP_EXEC;
			if (rec.step == NSINIT_STEP_EXEC)
				snprintf(why, whylen, "cannot execute the command: %s",
					 g_strerror(rec.value));
			else
				snprintf(why, whylen, "kernel confinement failed in the work "
					 "(step %d): %s", rec.step, g_strerror(rec.value));
			return rec.value > 0 ? -rec.value : -EIO;
		}
	}
	if (c->have_cg && limits_cgroup_oom_killed(&c->cg))
		st->flags |= CORDON_PLUGIN_RUN_OOM;
	if (exited) {
		if (WIFSIGNALED(status)) {
			st->flags |= CORDON_PLUGIN_RUN_SIGNALED;
			st->signal = WTERMSIG(status);
		} else {
			st->flags |= CORDON_PLUGIN_RUN_EXITED;
			st->exit_code = WEXITSTATUS(status);
		}
		return 0;
	}
	if (killed) {
		st->flags |= CORDON_PLUGIN_RUN_SIGNALED;
		st->signal = SIGKILL;
		return 0;
	}
	snprintf(why, whylen, "the sandbox init ended without reporting the work's status");
	return -ECHILD;
}

void confine_child_release(confine_child *c)
{
	if (c->lifeline_fd >= 0)
		close(c->lifeline_fd);
	if (c->status_fd >= 0)
		close(c->status_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->have_cg)
		limits_cgroup_destroy(&c->cg);
	c->lifeline_fd = c->status_fd = c->pidfd = -1;
	c->have_cg = false;
}
