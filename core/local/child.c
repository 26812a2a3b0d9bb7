/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier's launcher: the code that runs in the CLONE_VM children,
 * A and B (confine.h), on the host's memory: raw system calls only. */
#include "config.h"

#include "child.h"
#include "landlock-abi.h"
#include "nsinit-proto.h"
#include "rawsys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* The empty read-only tmpfs that masks a directory (mask_paths). */
#define MASK_OPTS "size=4k,nr_inodes=2,mode=555"

/* Capabilities the zygote keeps (in the sandbox's user namespace only) to
 * start runs: a pid namespace and the workspace mount need SYS_ADMIN, the
 * switch to the sandbox ids SETUID/SETGID, the run's capability drop SETPCAP. */
static const int zygote_caps[] = { CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_SETPCAP };

static const char *const devnodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
#define NDEVNODES (sizeof(devnodes) / sizeof(devnodes[0]))

/* /proc files hidden behind /dev/null; /proc and /sys directories hidden
 * behind an empty read-only tmpfs; /proc entries made read-only. /run too
 * (and /var/run where it is not a link to it): a read-only mount does not
 * stop connect(2) on a pathname unix socket, and /run (with each user's
 * /run/user/UID) is where host services listen: the system bus, journald,
 * container engines' APIs, ssh and gpg agents. */
static const char *const mask_files[] = {
	"/proc/kcore",       "/proc/keys",        "/proc/latency_stats", "/proc/timer_list",
	"/proc/timer_stats", "/proc/sched_debug", "/proc/interrupts",    "/proc/kallsyms",
	"/proc/kmsg",        "/proc/vmallocinfo",
};
static const char *const mask_dirs[] = {
	"/proc/acpi",
	"/proc/asound",
	"/proc/scsi",
	"/proc/driver",
	"/sys/firmware",
	"/sys/devices/virtual/powercap",
	"/sys/fs/cgroup",
	"/sys/kernel/security",
	"/sys/kernel/debug",
	"/sys/kernel/tracing",
	"/run",
	"/var/run",
};
static const char *const readonly_paths[] = {
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

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

long RAWSYS_CHILD child_write_file(const char *path, const char *s)
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

int RAWSYS_CHILD child_stage_a(void *arg)
{
	child_plan *p = arg;
	int step = STEP_CLONE;
	long r;
	long pid = clone(stage_b, p->stack_b_top,
			 CLONE_VM | CLONE_PIDFD | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
				 CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS,
			 p, &p->pidfd);
	if (pid < 0) {
		/* The host thread is suspended: its errno is ours alone here. */
		p->err = -errno;
		p->step = step;
		child_exit(0);
	}
	char path[64];
	if (!p->privileged) {
		step = STEP_SETGROUPS_DENY;
		proc_path(path, pid, "setgroups");
		if ((r = child_write_file(path, "deny")) < 0)
			goto fail;
	}
	step = STEP_UID_MAP;
	proc_path(path, pid, "uid_map");
	if ((r = child_write_file(path, p->uid_map)) < 0)
		goto fail;
	step = STEP_GID_MAP;
	proc_path(path, pid, "gid_map");
	if ((r = child_write_file(path, p->gid_map)) < 0)
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

#define CHECK(expr) \
	do { \
		long r_ = (expr); \
		if (r_ < 0) \
			fail(status_fd, step, r_); \
	} while (0)

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
		struct statfs sf;
		long r = rsys2(SYS_statfs, m, &sf);
		if (r == -ENOENT || r == -EACCES)
			continue; /* gone, or covered by a mount above it */
		if (r < 0)
			return r;
		unsigned long flags =
			MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
			// NOLINTNEXTLINE(clang-analyzer-core.CallAndMessage): the raw system call filled it
			st_to_ms((unsigned long)sf.f_flags);
		r = rsys5(SYS_mount, 0, m, 0, flags, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Lets a device node bound from the (now nodev) host /dev work again. */
static long RAWSYS_CHILD allow_dev(const char *target, bool fallback)
{
	if (!fallback) {
		struct mount_attr a = { .attr_clr = MOUNT_ATTR_NODEV,
					.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC };
		return rsys5(SYS_mount_setattr, AT_FDCWD, target, 0, &a, sizeof(a));
	}
	struct statfs sf;
	long r = rsys2(SYS_statfs, target, &sf);
	if (r < 0)
		return r;
	return rsys5(
		SYS_mount, 0, target, 0,
		MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC |
			// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): the raw system call filled it
			st_to_ms((unsigned long)sf.f_flags & ~ST_NOEXEC),
		0);
}

/* The files of our /dev: mount points for the host's nodes, the usual links. */
static long RAWSYS_CHILD make_dev_files(void)
{
	long r = 0;
	for (size_t i = 0; r >= 0 && i < NDEVNODES; i++) {
		char target[32];
		rs_stpcpy(rs_stpcpy(target, "/dev/"), devnodes[i]);
		long fd = rsys4(SYS_openat, AT_FDCWD, target,
				O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return fd;
		rsys1(SYS_close, fd);
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

/* Runs fn as the sandbox user. As root we keep the caller's host id (to
 * reach the host objects it can), which is not mapped in the sandbox, so
 * files we create would have no owner: a short-lived fork switches first.
 * (Not setfsuid: the host's id has no name here to switch back to, and
 * an fsuid other than the euid at execve costs the init its ambient
 * capabilities on Linux 6.18.) */
static int RAWSYS_CHILD sandbox_user_child(void *arg)
{
	child_plan *p = arg;
	long r = rsys3(SYS_setresgid, p->in_gid, p->in_gid, p->in_gid);
	if (r >= 0)
		r = rsys3(SYS_setresuid, p->in_uid, p->in_uid, p->in_uid);
	if (r >= 0)
		r = make_dev_files();
	child_exit(r < 0 ? (int)-r : 0);
}

static long RAWSYS_CHILD as_sandbox_user(child_plan *p)
{
	if (!p->privileged)
		return make_dev_files();
	/* On a stack of its own, sharing our memory, while we wait. */
	long pid = clone(sandbox_user_child, p->stack_d_top, CLONE_VM | CLONE_VFORK | SIGCHLD, p);
	if (pid < 0)
		return -EAGAIN;
	int st = 0;
	long w;
	while ((w = rsys4(SYS_wait4, pid, &st, __WALL, 0)) == -EINTR)
		;
	if (w < 0)
		return w;
	return WIFEXITED(st) ? -(long)WEXITSTATUS(st) : -EIO;
}

static long RAWSYS_CHILD mount_dev(child_plan *p, const long *node_fd, bool fallback)
{
	long r = rsys5(SYS_mount, "tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, p->dev_opts);
	if (r >= 0)
		r = as_sandbox_user(p);
	for (size_t i = 0; r >= 0 && i < NDEVNODES; i++) {
		char target[32];
		rs_stpcpy(rs_stpcpy(target, "/dev/"), devnodes[i]);
		if (node_fd[i] < 0) {
			rsys3(SYS_unlinkat, AT_FDCWD, target, 0); /* no such node on this host */
			continue;
		}
		r = bind_fd(node_fd[i], target);
		if (r >= 0)
			r = allow_dev(target, fallback);
	}
	return r;
}

/* A path missing on this host (no /proc/kcore, say) needs no mask. */
static long RAWSYS_CHILD skip_missing(long r) { return r == -ENOENT ? 0 : r; }

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
				  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
					  MS_NOEXEC,
				  0);
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

/* The zygote keeps only zygote_caps, as ambient capabilities (they survive
 * its execve); its runs drop those too (nsinit.c). */
static long RAWSYS_CHILD limit_caps(void)
{
	uint64_t keep = 0;
	for (size_t i = 0; i < sizeof(zygote_caps) / sizeof(zygote_caps[0]); i++)
		keep |= 1ull << zygote_caps[i];
	for (long cap = 0; cap < 64; cap++) {
		if (keep & (1ull << cap))
			continue;
		long r = rsys2(SYS_prctl, PR_CAPBSET_DROP, cap);
		if (r == -EINVAL)
			break; /* past the last capability this kernel knows */
		if (r < 0)
			return r;
	}
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = {
		{ (uint32_t)keep, (uint32_t)keep, (uint32_t)keep },
		{ (uint32_t)(keep >> 32), (uint32_t)(keep >> 32), (uint32_t)(keep >> 32) },
	};
	long r = rsys2(SYS_capset, &hdr, data);
	for (size_t i = 0; r >= 0 && i < sizeof(zygote_caps) / sizeof(zygote_caps[0]); i++)
		r = rsys5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, zygote_caps[i], 0, 0);
	return r;
}

/* Puts what the zygote expects at 0..NSINIT_FD_COUNT and its executable
 * right above (close-on-exec), closing everything else. */
static long RAWSYS_CHILD arrange_fds(const child_plan *p, long null, long host_tmp, long host_dev)
{
	long src[NSINIT_FD_COUNT + 1] = {
		null,     null,          null,     p->fd_status_w, p->fd_bpf,
		host_tmp, p->fd_control, host_dev, p->fd_nsinit,
	};
	long tmp[NSINIT_FD_COUNT + 1];
	/* First out of the way of the targets, then into place. */
	for (int i = 0; i <= NSINIT_FD_COUNT; i++) {
		tmp[i] = rsys3(SYS_fcntl, src[i], F_DUPFD_CLOEXEC, NSINIT_FD_COUNT + 1);
		if (tmp[i] < 0)
			return tmp[i];
	}
	for (int i = 0; i <= NSINIT_FD_COUNT; i++) {
		long r = rsys3(SYS_dup3, tmp[i], i, i == NSINIT_FD_COUNT ? O_CLOEXEC : 0);
		if (r < 0)
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

/* What every run will enforce must hold here: a child of B enforces
 * Landlock and installs the seccomp filter, as the work will (no_new_privs
 * first), while B goes on building. Its exit status is the verdict, which
 * the init reads before it reports the sandbox started: a Landlock errno,
 * or 128 + a seccomp errno. */
static int RAWSYS_CHILD selftest_child(void *arg)
{
	child_plan *p = arg;
	long r = rsys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (r >= 0 && p->ll_abi > 0) {
		r = rsys3(SYS_landlock_create_ruleset, &p->ll.handled, p->ll.handled_size, 0);
		if (r >= 0)
			r = rsys2(SYS_landlock_restrict_self, r, 0);
	}
	if (r < 0)
		child_exit((int)-r);
	struct sock_filter prog[NSINIT_BPF_MAX_INSNS];
	r = rsys4(SYS_pread64, p->fd_bpf, prog, sizeof(prog), 0);
	if (r > 0 && r % (long)sizeof(prog[0]) == 0) {
		struct sock_fprog fp = { (unsigned short)(r / (long)sizeof(prog[0])), prog };
		r = rsys3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp);
	} else if (r >= 0) {
		r = -EINVAL;
	}
	child_exit(r < 0 ? 128 + (int)-r : 0);
}

/* B: pid 1 of the new namespaces, in the host's memory until execve. */
static int __attribute__((noreturn)) RAWSYS_CHILD stage_b_run(child_plan *p)
{
	int status_fd = p->fd_status_w;
	int step = STEP_SYNC;
	char c;

	rsys1(SYS_close, p->fd_sync_w);
	rsys1(SYS_close, p->fd_host_control);
	/* A writes our maps, then one byte; EOF means it failed (and said why). */
	if (rsys3(SYS_read, p->fd_sync_r, &c, 1) != 1)
		child_exit(126);
	rsys1(SYS_close, p->fd_sync_r);
	/* The host holds the other end of the control socket: if it is gone
	 * already, so are we. No PR_SET_PDEATHSIG here: the sandbox outlives
	 * the thread that opened it; the socket is the process's lifeline. */
	// NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores): every phase names its step, this one too
	step = STEP_LIFELINE;
	struct pollfd pfd = { p->fd_control, POLLIN, 0 };
	if (rsys3(SYS_poll, &pfd, 1, 0) != 0)
		child_exit(126);

	step = STEP_SELFTEST;
	if (clone(selftest_child, p->stack_c_top, CLONE_VM | SIGCHLD, p) < 0)
		fail(status_fd, step, -EAGAIN);
	step = STEP_CGROUPNS;
	CHECK(rsys1(SYS_unshare, CLONE_NEWCGROUP));
	step = STEP_RPRIVATE;
	CHECK(rsys5(SYS_mount, 0, "/", 0, MS_REC | MS_PRIVATE, 0));

	/* Host objects our own mounts will cover, opened first. */
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
		// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): the raw system call filled it
		if (!S_ISCHR(stx.stx_mode))
			fail(status_fd, step, -ENOTTY);
	}
	/* The zygote finds a workspace below our /tmp or /dev through these. */
	step = STEP_HOSTDIRS;
	long host_tmp = rsys4(SYS_openat, AT_FDCWD, "/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	CHECK(host_tmp);
	long host_dev = rsys4(SYS_openat, AT_FDCWD, "/dev", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	CHECK(host_dev);

	/* The root is our private copy of the host's mount tree: every mount
	 * read-only, nosuid, nodev. /tmp, /dev and /proc are covered below by
	 * mounts of our own; what they hide stays unreachable (no capability
	 * in the work, and seccomp refuses every mount call). */
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

	/* The sandbox identity. As root the zygote keeps the caller's host id
	 * (it must reach a workspace in root-only directories) and creates
	 * files through as_sandbox_user; runs switch fully. */
	if (p->privileged) {
		step = STEP_GROUPS;
		CHECK(rsys2(SYS_setgroups, 0, 0));
	} else {
		step = STEP_IDS;
		CHECK(rsys3(SYS_setresgid, p->in_gid, p->in_gid, p->in_gid));
		CHECK(rsys3(SYS_setresuid, p->in_uid, p->in_uid, p->in_uid));
	}

	step = STEP_TMP;
	CHECK(rsys5(SYS_mount, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, p->tmp_opts));
	step = STEP_DEV;
	CHECK(mount_dev(p, node_fd, p->mounts != NULL));
	step = STEP_SHM;
	CHECK(rsys5(SYS_mount, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, p->shm_opts));
	step = STEP_DEV;
	CHECK(rsys5(SYS_mount, 0, "/dev", 0,
		    MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, 0));
	step = STEP_PROC;
	CHECK(rsys5(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0));
	/* Nested user namespaces are refused by seccomp; refuse them here too. */
	step = STEP_USERNS_MAX;
	CHECK(child_write_file("/proc/sys/user/max_user_namespaces", "0"));
	step = STEP_MASK;
	CHECK(mask_paths());

	step = STEP_HOSTNAME;
	CHECK(rsys2(SYS_sethostname, "cordon", 6));
	step = STEP_LOOPBACK;
	CHECK(loopback_up());
	step = STEP_SETSID;
	CHECK(rsys0(SYS_setsid));
	CHECK(rsys1(SYS_chdir, "/")); /* not the host's working directory */
	step = STEP_CAPS;
	CHECK(limit_caps());
	step = STEP_NNP;
	CHECK(rsys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	step = STEP_FDS;
	long null = rsys4(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC, 0);
	CHECK(null);
	CHECK(arrange_fds(p, null, host_tmp, host_dev));
	status_fd = NSINIT_FD_STATUS;
	step = STEP_SIGNALS;
	CHECK(reset_signals());
	step = STEP_EXEC;
	static char *const envp[] = { NULL };
	CHECK(rsys5(SYS_execveat, NSINIT_FD_COUNT, "", p->argv, envp, AT_EMPTY_PATH));
	fail(status_fd, step, -EIO);
}

static int RAWSYS_CHILD stage_b(void *arg) { stage_b_run(arg); }

/* A user namespace that maps the workspace's owner to the work's host id,
 * for the idmapped workspace mount of a privileged host. Held by fd. */
int RAWSYS_CHILD child_idmap(void *arg)
{
	char c;
	rsys3(SYS_read, (long)(intptr_t)arg, &c, 1);
	child_exit(0);
}
