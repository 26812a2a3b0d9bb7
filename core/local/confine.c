/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier's launcher (confine.h). */
#include "config.h"

#include "confine.h"
#include "landlock.h"
#include "landlock-abi.h"
#include "nsinit-proto.h"
#include "rawsys.h"
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
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

/* The embedded init (nsinit-blob.c, generated from the freestanding cordon-nsinit). */
extern const unsigned char confine_nsinit_blob[] CORDON_INTERNAL;
extern const size_t confine_nsinit_blob_len CORDON_INTERNAL;

/* The identities of a privileged host: the work runs as this unprivileged
 * host id (the overflow id, "nobody"), never as root. */
#define OUTSIDE_NOBODY 65534u
/* The work's id inside when the caller's own id would be 0. */
#define INSIDE_USER 1000u

#define STACK_SIZE (256u << 10)
#define NSTACKS 4 /* A, B, the self-test, B's helper */

/* Sizes of the private scratch mounts. */
#define TMP_SIZE "size=512m,nr_inodes=65536,mode=1777"
#define SHM_SIZE "size=64m,nr_inodes=4096,mode=1777"
#define DEV_SIZE "size=64k,nr_inodes=64,mode=755"
#define MASK_OPTS "size=4k,nr_inodes=2,mode=555"

/* Capabilities the zygote keeps (in the sandbox's user namespace only) to
 * start runs: a pid namespace and the workspace mount need SYS_ADMIN, the
 * switch to the sandbox ids SETUID/SETGID, the run's capability drop SETPCAP. */
static const int zygote_caps[] = { CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_SETPCAP };

enum confine_step {
	STEP_NONE = 0,
	STEP_CLONE, STEP_SETGROUPS_DENY, STEP_UID_MAP, STEP_GID_MAP, STEP_SYNC,
	STEP_LIFELINE, STEP_SELFTEST, STEP_CGROUPNS, STEP_RPRIVATE, STEP_DEVNODES, STEP_HOSTDIRS,
	STEP_TREE_RO, STEP_REMOUNT_RO, STEP_GROUPS, STEP_IDS, STEP_TMP, STEP_DEV, STEP_SHM,
	STEP_PROC, STEP_USERNS_MAX, STEP_MASK, STEP_HOSTNAME, STEP_LOOPBACK, STEP_SETSID,
	STEP_CAPS, STEP_NNP, STEP_FDS, STEP_SIGNALS, STEP_EXEC,
	STEP_COUNT_
};

static const char *const step_names[STEP_COUNT_] = {
	[STEP_NONE] = "setup",
	[STEP_CLONE] = "creating the namespaces",
	[STEP_SETGROUPS_DENY] = "writing setgroups",
	[STEP_UID_MAP] = "writing the uid map",
	[STEP_GID_MAP] = "writing the gid map",
	[STEP_SYNC] = "waiting for the launcher",
	[STEP_LIFELINE] = "checking the host is alive",
	[STEP_SELFTEST] = "starting the self-test",
	[STEP_CGROUPNS] = "creating the cgroup namespace",
	[STEP_RPRIVATE] = "making mounts private",
	[STEP_DEVNODES] = "opening the host device nodes",
	[STEP_HOSTDIRS] = "opening the host's /tmp and /dev",
	[STEP_TREE_RO] = "making the host read-only",
	[STEP_REMOUNT_RO] = "remounting a host mount read-only",
	[STEP_GROUPS] = "dropping supplementary groups",
	[STEP_IDS] = "switching to the sandbox user",
	[STEP_TMP] = "mounting /tmp",
	[STEP_DEV] = "building /dev",
	[STEP_SHM] = "mounting /dev/shm",
	[STEP_PROC] = "mounting /proc",
	[STEP_USERNS_MAX] = "forbidding nested user namespaces",
	[STEP_MASK] = "masking /proc, /sys and /run",
	[STEP_HOSTNAME] = "setting the hostname",
	[STEP_LOOPBACK] = "bringing up loopback",
	[STEP_SETSID] = "starting a session",
	[STEP_CAPS] = "limiting capabilities",
	[STEP_NNP] = "setting no_new_privs",
	[STEP_FDS] = "arranging file descriptors",
	[STEP_SIGNALS] = "resetting signals",
	[STEP_EXEC] = "starting the sandbox's init",
};

static const char *const run_step_names[NSINIT_STEP_COUNT] = {
	[NSINIT_STEP_EXEC] = "executing the command",
	[NSINIT_STEP_LANDLOCK] = "enforcing Landlock",
	[NSINIT_STEP_SECCOMP] = "installing the seccomp filter",
	[NSINIT_STEP_SETSID] = "starting a session",
	[NSINIT_STEP_FORK] = "forking",
	[NSINIT_STEP_BPF] = "loading the seccomp program",
	[NSINIT_STEP_CGROUP] = "joining the run's control groups",
	[NSINIT_STEP_PAYLOAD] = "reading the request",
	[NSINIT_STEP_IDS] = "switching to the sandbox user",
	[NSINIT_STEP_RLIMIT] = "setting resource limits",
	[NSINIT_STEP_WORKDIR] = "entering the working directory",
	[NSINIT_STEP_CAPS] = "dropping capabilities",
	[NSINIT_STEP_FDS] = "arranging file descriptors",
	[NSINIT_STEP_RULESET] = "building the Landlock ruleset",
	[NSINIT_STEP_WORKSPACE] = "mounting the workspace",
};

static const char *const devnodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
#define NDEVNODES (sizeof(devnodes) / sizeof(devnodes[0]))

/* /proc files hidden behind /dev/null; /proc and /sys directories hidden
 * behind an empty read-only tmpfs; /proc entries made read-only. /run too
 * (and /var/run where it is not a link to it): a read-only mount does not
 * stop connect(2) on a pathname unix socket, and /run (with each user's
 * /run/user/UID) is where host services listen: the system bus, journald,
 * container engines' APIs, ssh and gpg agents. */
static const char *const mask_files[] = {
	"/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
	"/proc/sched_debug", "/proc/interrupts", "/proc/kallsyms", "/proc/kmsg", "/proc/vmallocinfo",
};
static const char *const mask_dirs[] = {
	"/proc/acpi", "/proc/asound", "/proc/scsi", "/proc/driver",
	"/sys/firmware", "/sys/devices/virtual/powercap", "/sys/fs/cgroup", "/sys/kernel/security",
	"/sys/kernel/debug", "/sys/kernel/tracing", "/run", "/var/run",
};
static const char *const readonly_paths[] = {
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

/* A sandbox's init, the host's end of it. */
typedef struct zygote {
	int pidfd;    /* not our child: init (or a subreaper) reaps it */
	int control;  /* SOCK_SEQPACKET; closing it ends the sandbox */
	GMutex lock;  /* one request/reply at a time */
	bool privileged;
	unsigned in_uid, in_gid;
	gint live_runs; /* runs started and not yet released (atomic) */
	int pending;    /* requests sent whose replies are unread (under lock) */
	int failed, failed_step; /* a sent request's failure, for every later call */
} zygote;

struct confine_sandbox {
	char ws_path[PATH_MAX];   /* canonical; the same path inside */
	dev_t ws_dev;
	ino_t ws_ino;
	limits_plan limits;
	char limits_desc[512];
	zygote *z;
	/* Control groups finished runs left empty, for the next runs: a
	 * group is made once, not per run. */
	GMutex cg_lock;
	limits_cgroup idle[4];
	int nidle;
	/* As root, the host ids the work's files take (a workspace's owner, or
	 * the work's own for our private root): the host's writes take them too. */
	bool file_ids;
	uid_t file_uid;
	gid_t file_gid;
};

/* What A and B read while they share our memory. */
typedef struct child_plan {
	bool privileged;
	unsigned in_uid, in_gid;
	char uid_map[48], gid_map[48];
	char tmp_opts[128], shm_opts[128], dev_opts[128];
	int fd_sync_r, fd_sync_w, fd_status_w, fd_control, fd_host_control;
	int fd_bpf, fd_nsinit;
	char *const *argv; /* the zygote's */
	const char *mounts; /* remount fallback: "/path\0/path\0\0" */
	char *stack_a_top, *stack_b_top; /* A, B */
	char *stack_c_top; /* the self-test, which runs beside B */
	char *stack_d_top; /* B's helper */
	struct ll_masks ll; /* Landlock's handled access for this kernel's ABI */
	int ll_abi;
	/* written by A (pidfd by the kernel, in our fd table) */
	int pidfd;
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
		unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
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
	return rsys5(SYS_mount, 0, target, 0,
		     MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC |
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
		long fd = rsys4(SYS_openat, AT_FDCWD, target, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
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
		null, null, null, p->fd_status_w, p->fd_bpf, host_tmp, p->fd_control, host_dev,
		p->fd_nsinit,
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
	CHECK(rsys5(SYS_mount, 0, "/dev", 0, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, 0));
	step = STEP_PROC;
	CHECK(rsys5(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0));
	/* Nested user namespaces are refused by seccomp; refuse them here too. */
	step = STEP_USERNS_MAX;
	CHECK(write_file("/proc/sys/user/max_user_namespaces", "0"));
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

static int RAWSYS_CHILD stage_b(void *arg)
{
	stage_b_run(arg);
}

/* A user namespace that maps the workspace's owner to the work's host id,
 * for the idmapped workspace mount of a privileged host. Held by fd. */
static int RAWSYS_CHILD idmap_child(void *arg)
{
	char c;
	rsys3(SYS_read, (long)(intptr_t)arg, &c, 1);
	child_exit(0);
}

/* ---- host side: the embedded init ------------------------------------------------------ */

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
	nsinit_what = "writing the sandbox's init";
	size_t off = 0;
	while (off < confine_nsinit_blob_len) {
		ssize_t n = write(fd, confine_nsinit_blob + off, confine_nsinit_blob_len - off);
		if (n <= 0) {
			close(fd);
			return;
		}
		off += (size_t)n;
	}
	nsinit_what = "sealing the sandbox's init";
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

/* The id-mapping user namespaces by workspace owner: made once, by fd. */
static GMutex idmap_lock;
static struct {
	uid_t uid;
	gid_t gid;
	int fd;
} idmaps[8];
static int nidmaps;

/* A user namespace mapping owner to out (a new fd the caller closes). */
static int idmap_userns(uid_t owner_uid, gid_t owner_gid, unsigned out_uid, unsigned out_gid)
{
	int fd = -1;
	g_mutex_lock(&idmap_lock);
	for (int i = 0; i < nidmaps && fd < 0; i++)
		if (idmaps[i].uid == owner_uid && idmaps[i].gid == owner_gid)
			fd = fcntl(idmaps[i].fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		fd = make_idmap_userns(owner_uid, owner_gid, out_uid, out_gid);
		if (fd >= 0 && nidmaps < (int)G_N_ELEMENTS(idmaps)) {
			int keep = fcntl(fd, F_DUPFD_CLOEXEC, 3);
			if (keep >= 0)
				idmaps[nidmaps++] = (typeof(idmaps[0])){ owner_uid, owner_gid, keep };
		}
	}
	g_mutex_unlock(&idmap_lock);
	return fd;
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

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
}

/* ---- host side: a zygote ----------------------------------------------------------------- */

/* EOF on the control socket makes it end the sandbox; the kill makes sure,
 * and the pid namespace takes everything with it. Does not wait. */
static void zygote_kill(zygote *z)
{
	close_fd(&z->control);
	if (z->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, z->pidfd, SIGKILL, NULL, 0);
}

static void wait_hangup(int fd, short events)
{
	struct pollfd pfd = { fd, events, 0 };
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
}

/* Killed with no run alive, the zygote is the sandbox's last process: it
 * can run no more code, and its namespaces' teardown (a millisecond: the
 * mount tree's) need not hold up the host. With runs alive we wait for it:
 * the kernel kills their processes in that teardown. */
static void zygote_free(zygote *z)
{
	if (!z)
		return;
	zygote_kill(z);
	if (z->pidfd >= 0 && g_atomic_int_get(&z->live_runs) > 0)
		wait_hangup(z->pidfd, POLLIN);
	close_fd(&z->pidfd);
	g_mutex_clear(&z->lock);
	g_free(z);
}

static bool zygote_alive(const zygote *z)
{
	struct pollfd pfd = { z->pidfd, POLLIN, 0 };
	return poll(&pfd, 1, 0) == 0;
}

/* Waits for the zygote's first record: STARTED, or why setup failed. */
static const char *run_step_name(int step);

static int wait_started(int pidfd, int status_fd, char *why, size_t whylen)
{
	struct pollfd pfd[2] = { { status_fd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
	for (;;) {
		int n = poll(pfd, 2, 30000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, whylen, "the sandbox did not start within 30 s");
			return -ETIMEDOUT;
		}
		if (pfd[0].revents || pfd[1].revents)
			break;
	}
	struct nsinit_record rec;
	ssize_t got = read(status_fd, &rec, sizeof(rec));
	if (got != (ssize_t)sizeof(rec) || rec.magic != NSINIT_MAGIC) {
		snprintf(why, whylen, "the sandbox's init died during setup");
		return -ECHILD;
	}
	if (rec.kind == NSINIT_REC_STARTED)
		return 0;
	int step = rec.step > 0 && rec.step < STEP_COUNT_ ? rec.step : 0;
	if (rec.step >= NSINIT_ZYGOTE_STEP)
		snprintf(why, whylen, "kernel confinement failed %s (the sandbox's self-test): %s",
			 run_step_name(rec.step - NSINIT_ZYGOTE_STEP), g_strerror(rec.value));
	else
		snprintf(why, whylen, "kernel confinement failed %s: %s", step_names[step],
			 g_strerror(rec.value));
	return rec.value > 0 ? -rec.value : -EIO;
}

/* Host work that can overlap a zygote's setup (the other CPU builds the
 * sandbox meanwhile): run between its start and its first record. An
 * error (a negative errno, the reason in why) ends the start with it. */
typedef struct zygote_overlap {
	int (*fn)(void *arg, char *why, size_t whylen);
	void *arg;
	bool ran;
} zygote_overlap;

static int zygote_start(bool privileged, unsigned in_uid, unsigned in_gid, unsigned out_uid,
			unsigned out_gid, zygote_overlap *overlap, zygote **ret, char *why,
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
		snprintf(why, whylen, "cannot load the sandbox's init (%s)", what);
		return -EIO;
	}
	g_autofree child_plan *p = g_new0(child_plan, 1);
	int sync[2] = { -1, -1 }, status[2] = { -1, -1 }, control[2] = { -1, -1 };
	char *stacks = MAP_FAILED;
	g_autofree char *mounts = NULL;
	zygote *z = NULL;
	int r = 0;

	if (pipe2(sync, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) < 0) {
		r = -errno;
		snprintf(why, whylen, "pipe: %s", g_strerror(-r));
		goto out;
	}
	p->privileged = privileged;
	p->in_uid = in_uid;
	p->in_gid = in_gid;
	snprintf(p->uid_map, sizeof(p->uid_map), "%u %u 1", in_uid, out_uid);
	snprintf(p->gid_map, sizeof(p->gid_map), "%u %u 1", in_gid, out_gid);
	snprintf(p->tmp_opts, sizeof(p->tmp_opts), "%s,uid=%u,gid=%u", TMP_SIZE, in_uid, in_gid);
	snprintf(p->shm_opts, sizeof(p->shm_opts), "%s,uid=%u,gid=%u", SHM_SIZE, in_uid, in_gid);
	snprintf(p->dev_opts, sizeof(p->dev_opts), "%s,uid=%u,gid=%u", DEV_SIZE, in_uid, in_gid);
	p->fd_sync_r = sync[0];
	p->fd_sync_w = sync[1];
	p->fd_status_w = status[1];
	p->fd_control = control[1];
	p->fd_host_control = control[0];
	p->fd_bpf = bpf;
	p->fd_nsinit = init;
	char abi[16], uid[16], gid[16];
	snprintf(abi, sizeof(abi), "Z%d", landlock_abi());
	snprintf(uid, sizeof(uid), "%u", in_uid);
	snprintf(gid, sizeof(gid), "%u", in_gid);
	char *argv[] = { "cordon-nsinit", abi, uid, gid, privileged ? "R" : "U", NULL };
	p->argv = argv;
	if (need_remount_fallback()) {
		mounts = host_mounts();
		if (!mounts) {
			r = -EIO;
			snprintf(why, whylen, "cannot read the host's mount table");
			goto out;
		}
		p->mounts = mounts;
	}
	stacks = mmap(NULL, NSTACKS * STACK_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stacks == MAP_FAILED) {
		r = -errno;
		snprintf(why, whylen, "mmap: %s", g_strerror(-r));
		goto out;
	}
	p->stack_a_top = stacks + STACK_SIZE;
	p->stack_b_top = stacks + 2 * STACK_SIZE;
	p->stack_c_top = stacks + 3 * STACK_SIZE;
	p->stack_d_top = stacks + 4 * STACK_SIZE;
	p->ll_abi = landlock_abi();
	ll_masks_for(p->ll_abi, &p->ll);

	/* No signal handler of the host may run on the children's stacks. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* A shares our fd table: B's pidfd lands in it. */
	p->pidfd = -1;
	pid_t a = clone(stage_a, p->stack_a_top, CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, p);
	int clone_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (a < 0) {
		r = -clone_errno;
		snprintf(why, whylen, "clone: %s", g_strerror(clone_errno));
		goto out;
	}
	reap(a);
	close_fd(&sync[0]);
	close_fd(&sync[1]);
	close_fd(&status[1]);
	close_fd(&control[1]);
	if (p->err < 0) {
		r = p->err;
		int step = p->step > 0 && p->step < STEP_COUNT_ ? p->step : 0;
		snprintf(why, whylen, "kernel confinement failed %s: %s", step_names[step],
			 g_strerror(-r));
		if (p->pidfd >= 0)
			wait_hangup(p->pidfd, POLLIN); /* A killed it */
		close_fd(&p->pidfd);
		goto out;
	}
	z = g_new0(zygote, 1);
	g_mutex_init(&z->lock);
	z->pidfd = p->pidfd;
	z->control = control[0];
	control[0] = -1;
	z->privileged = privileged;
	z->in_uid = in_uid;
	z->in_gid = in_gid;
	if (overlap) {
		overlap->ran = true;
		r = overlap->fn(overlap->arg, why, whylen);
		if (r < 0)
			goto out;
	}
	r = wait_started(z->pidfd, status[0], why, whylen);
	if (r < 0)
		goto out;
	*ret = g_steal_pointer(&z);
out:
	/* B runs on our stack until its execve: it is done, or dead once we
	 * waited for it. */
	if (r < 0 && z) {
		zygote_kill(z);
		wait_hangup(z->pidfd, POLLIN);
		zygote_free(g_steal_pointer(&z));
	}
	if (stacks != MAP_FAILED)
		munmap(stacks, NSTACKS * STACK_SIZE);
	close_fd(&sync[0]);
	close_fd(&sync[1]);
	close_fd(&status[0]);
	close_fd(&status[1]);
	close_fd(&control[0]);
	close_fd(&control[1]);
	return r;
}

static int zygote_errno(int r)
{
	return r == -EPIPE || r == -ECONNRESET ? -ECHILD : r;
}

/* Sends one request (under z->lock); its reply is read later, in order. */
static int zygote_send(zygote *z, const struct nsinit_request *req, const void *inline_data,
		       size_t inline_len, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * NSINIT_MAX_FDS)];
	} c;
	struct iovec iov[2] = { { (void *)req, sizeof(*req) }, { (void *)inline_data, inline_len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = inline_len ? 2 : 1 };
	if (nfds > 0) {
		mh.msg_control = c.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	while ((n = sendmsg(z->control, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return zygote_errno(-errno);
	z->pending++;
	return 0;
}

/* Reads the oldest unread reply (under z->lock): its error and step, and
 * the fd that may come with it (closed when ret_fd is NULL). */
static int zygote_recv(zygote *z, int *ret_fd, int *ret_step)
{
	struct nsinit_reply rep;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} rc;
	struct iovec riov = { &rep, sizeof(rep) };
	struct msghdr rmh = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = rc.buf,
			      .msg_controllen = sizeof(rc.buf) };
	ssize_t n;
	while ((n = recvmsg(z->control, &rmh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return zygote_errno(-errno);
	z->pending--;
	if (n != (ssize_t)sizeof(rep) || rep.magic != NSINIT_MAGIC)
		return -ECHILD; /* EOF: the init is gone */
	int fd = -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&rmh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	*ret_step = rep.step;
	if (rep.err || !ret_fd) {
		if (fd >= 0)
			close(fd);
		return -rep.err;
	}
	*ret_fd = fd;
	return 0;
}

/* One request and its reply (and the fd that may come with it). It goes
 * out at once, behind any sent ahead, whose replies come first: the first
 * of those that failed (a workspace that did not mount) stays the zygote's
 * error, this call's and every later one's. (A run queued behind a failed
 * workspace fails on its own, at its working directory.) */
static int zygote_call(zygote *z, const struct nsinit_request *req, const void *inline_data,
		       size_t inline_len, const int *fds, int nfds, int *ret_fd, int *ret_step)
{
	g_mutex_lock(&z->lock);
	int r = z->failed ? z->failed : zygote_send(z, req, inline_data, inline_len, fds, nfds);
	while (r == 0 && z->pending > 1) {
		int e = zygote_recv(z, NULL, &z->failed_step);
		if (e < 0)
			r = z->failed = e;
	}
	if (r == 0)
		r = zygote_recv(z, ret_fd, ret_step);
	else
		*ret_step = z->failed_step;
	g_mutex_unlock(&z->lock);
	return r;
}

static const char *run_step_name(int step)
{
	return step >= 0 && step < NSINIT_STEP_COUNT && run_step_names[step] ? run_step_names[step]
									       : "setup";
}

/* ---- host side: the warm pool -------------------------------------------------------------- */

/* The probe's trial zygote, kept for the next sandbox of the same identity,
 * with the control groups its first run will use (made while it started). */
static GMutex pool_lock;
static zygote *pool;
static limits_plan pool_plan;
static limits_cgroup pool_cg;
static bool pool_has_cg;

/* Takes the pooled zygote when it fits; its groups go to *ret_cg when they
 * were made for plan (else they are removed). */
static zygote *pool_take(bool privileged, unsigned in_uid, unsigned in_gid, const limits_plan *plan,
			 limits_cgroup *ret_cg, bool *ret_have_cg)
{
	g_mutex_lock(&pool_lock);
	zygote *z = NULL;
	limits_cgroup cg = pool_cg;
	bool have_cg = false;
	if (pool && pool->privileged == privileged && pool->in_uid == in_uid &&
	    pool->in_gid == in_gid && zygote_alive(pool)) {
		z = g_steal_pointer(&pool);
		have_cg = pool_has_cg;
		pool_has_cg = false;
	}
	g_mutex_unlock(&pool_lock);
	*ret_have_cg = false;
	if (have_cg && plan && limits_plan_equal(plan, &pool_plan)) {
		*ret_cg = cg;
		*ret_have_cg = true;
	} else if (have_cg) {
		limits_cgroup_destroy(&cg);
	}
	return z;
}

static void pool_put(zygote *z, const limits_plan *plan, limits_cgroup *cg)
{
	g_mutex_lock(&pool_lock);
	zygote *old = pool;
	limits_cgroup old_cg = pool_cg;
	bool old_has_cg = pool_has_cg;
	pool = z;
	pool_has_cg = cg != NULL;
	if (cg) {
		pool_plan = *plan;
		pool_cg = *cg;
	}
	g_mutex_unlock(&pool_lock);
	zygote_free(old);
	if (old_has_cg)
		limits_cgroup_destroy(&old_cg);
}

void confine_release_warm(void)
{
	pool_put(NULL, NULL, NULL);
}

/* ---- host side: sandboxes ----------------------------------------------------------------- */

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

typedef struct identity {
	bool privileged;
	unsigned in_uid, in_gid, out_uid, out_gid;
} identity;

static identity our_identity(void)
{
	identity id = { .privileged = is_privileged() };
	if (id.privileged) {
		id.in_uid = id.in_gid = INSIDE_USER;
		id.out_uid = id.out_gid = OUTSIDE_NOBODY;
	} else {
		id.out_uid = geteuid();
		id.out_gid = getegid();
		id.in_uid = id.out_uid ? id.out_uid : INSIDE_USER;
		id.in_gid = id.out_uid ? id.out_gid : INSIDE_USER;
	}
	return id;
}

static int get_zygote(const identity *id, confine_sandbox *s, char *why, size_t whylen)
{
	bool have_cg = false;
	s->z = pool_take(id->privileged, id->in_uid, id->in_gid, &s->limits, &s->idle[0], &have_cg);
	if (have_cg)
		s->nidle = 1;
	if (s->z)
		return 0;
	return zygote_start(id->privileged, id->in_uid, id->in_gid, id->out_uid, id->out_gid, NULL,
			    &s->z, why, whylen);
}

int confine_workspace_owner_check(int root_fd, char *why, size_t whylen)
{
	struct stat st;
	if (fstat(root_fd, &st) < 0) {
		snprintf(why, whylen, "cannot examine the workspace: %s", g_strerror(errno));
		return -errno;
	}
	/* Unprivileged, the work's files are the caller's: nothing to decide. */
	if (!our_identity().privileged || (st.st_uid != 0 && st.st_gid != 0))
		return 0;
	snprintf(why, whylen, "the workspace is owned by %s (uid %u, gid %u): as root the work's "
		 "files take the workspace owner's ids on the host, and a root-owned one would "
		 "let the work plant root's files; give the directory to an unprivileged user "
		 "and group (chown) first", st.st_uid == 0 ? "root" : "root's group",
		 (unsigned)st.st_uid, (unsigned)st.st_gid);
	return -EPERM;
}

/* As root, the detached mount of root_fd the zygote attaches (nosuid,
 * nodev): idmapped so that the work owns the owner's files, or plain for
 * our own private root, whose tmpfs belongs to the work's host ids already
 * (tmpfs has idmapped mounts only from Linux 6.3). Returns it or -errno. */
static int host_mount(int root_fd, const struct stat *st, const identity *id, bool idmap,
		      char *why, size_t whylen)
{
	int userns = idmap ? idmap_userns(st->st_uid, st->st_gid, id->out_uid, id->out_gid) : -1;
	if (idmap && userns < 0) {
		snprintf(why, whylen, "cannot create a user namespace (the workspace's id "
			 "mapping): %s", g_strerror(-userns));
		return userns;
	}
	int mnt = (int)syscall(SYS_open_tree, root_fd, "",
			       OPEN_TREE_CLONE | AT_EMPTY_PATH | OPEN_TREE_CLOEXEC);
	struct mount_attr ma = {
		.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (idmap ? MOUNT_ATTR_IDMAP : 0),
		.userns_fd = idmap ? (uint64_t)userns : 0,
	};
	int r = 0;
	if (mnt < 0 || syscall(SYS_mount_setattr, mnt, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0) {
		r = -errno;
		snprintf(why, whylen, "cannot make %s mount of the workspace (as root the work runs "
			 "as an unprivileged id and needs one): %s", idmap ? "an idmapped" : "a",
			 g_strerror(-r));
		close_fd(&mnt);
	}
	if (userns >= 0)
		close(userns);
	return r < 0 ? r : mnt;
}

/* Mounts the workspace in the zygote: as root an idmapped mount we make
 * (the work, host uid 65534, then owns the owner's files); else the
 * zygote finds the directory by path and checks it is the one we hold. */
static int attach_workspace(confine_sandbox *s, const identity *id, int root_fd, const struct stat *st,
			    bool idmap, char *why, size_t whylen)
{
	int mnt = -1, nfds = 0, r = 0;
	size_t len = strlen(s->ws_path) + 1;
	if (id->privileged) {
		mnt = host_mount(root_fd, st, id, idmap, why, whylen);
		if (mnt < 0) {
			r = mnt;
			goto out;
		}
		nfds = 1;
	}
	struct nsinit_request req = {
		.magic = NSINIT_MAGIC,
		.kind = NSINIT_REQ_WORKSPACE,
		.payload_len = len,
		.ws_dev = ((uint64_t)major(st->st_dev) << 32) | minor(st->st_dev),
		.ws_ino = st->st_ino,
	};
	/* Sent ahead: the zygote mounts it while we return to the host, and
	 * the first run reads the reply (and fails with its error). */
	g_mutex_lock(&s->z->lock);
	r = zygote_send(s->z, &req, s->ws_path, len, &mnt, nfds);
	g_mutex_unlock(&s->z->lock);
	if (r < 0)
		snprintf(why, whylen, "kernel confinement failed mounting the workspace: %s",
			 g_strerror(-r));
out:
	close_fd(&mnt);
	return r;
}

/* The private root of an unprivileged host, which cannot mount: a tmpfs
 * the zygote makes at the directory's path. *ret_fd: its root, for the
 * host's file operations. */
static int attach_private_tmpfs(confine_sandbox *s, uint64_t size, int *ret_fd, char *why,
				size_t whylen)
{
	size_t len = strlen(s->ws_path) + 1;
	struct nsinit_request req = {
		.magic = NSINIT_MAGIC,
		.kind = NSINIT_REQ_WORKSPACE,
		.flags = NSINIT_WS_TMPFS,
		.payload_len = len,
		.tmpfs_size = size,
	};
	int mnt = -1, step = 0;
	int r = zygote_call(s->z, &req, s->ws_path, len, NULL, 0, &mnt, &step);
	if (r == 0 && mnt < 0)
		r = -EPROTO;
	int fd = r < 0 ? -1 : openat(mnt, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r == 0 && fd < 0)
		r = -errno;
	close_fd(&mnt);
	if (r < 0) {
		snprintf(why, whylen, "kernel confinement failed making the private root's tmpfs: %s",
			 g_strerror(-r));
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* As root, our private root (the tmpfs the caller mounted): given to the
 * work's host ids outright, so no idmapped mount is needed, and the host's
 * writes take those ids too (confine_sandbox_file_ids). */
static int own_private_root(confine_sandbox *s, const identity *id, int root_fd,
			    const struct stat *st, char *why, size_t whylen)
{
	if (fchown(root_fd, id->out_uid, id->out_gid) < 0) {
		snprintf(why, whylen, "cannot give the private root to the sandbox's user: %s",
			 g_strerror(errno));
		return -errno;
	}
	s->file_ids = true;
	s->file_uid = id->out_uid;
	s->file_gid = id->out_gid;
	return attach_workspace(s, id, root_fd, st, false, why, whylen);
}

int confine_sandbox_new(int root_fd, const cordon_plugin_limits *limits, uint64_t private_disk,
			int *ret_root_fd, confine_sandbox **ret, char *why, size_t whylen)
{
	if (!kernel_has(SYS_open_tree) || !kernel_has(SYS_move_mount)) {
		snprintf(why, whylen, "the kernel lacks open_tree/move_mount (Linux 5.2)");
		return -ENOSYS;
	}
	g_autofree confine_sandbox *s = g_new0(confine_sandbox, 1);
	int r = limits_plan_make(limits, &s->limits, why, whylen);
	if (r < 0)
		return r;
	g_mutex_init(&s->cg_lock);
	limits_plan_describe(&s->limits, s->limits_desc, sizeof(s->limits_desc));

	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
	ssize_t n = readlink(link, s->ws_path, sizeof(s->ws_path) - 1);
	if (n <= 0 || s->ws_path[0] != '/') {
		snprintf(why, whylen, "cannot name the workspace directory");
		return n < 0 ? -errno : -EINVAL;
	}
	s->ws_path[n] = '\0';
	/* /run is masked in the sandbox (mask_dirs): nothing below it can be
	 * mounted there. */
	if (strcmp(s->ws_path, "/") == 0 || strcmp(s->ws_path, "/tmp") == 0 ||
	    strcmp(s->ws_path, "/dev") == 0 ||
	    path_under(s->ws_path, "/proc") || path_under(s->ws_path, "/sys") ||
	    path_under(s->ws_path, "/run") || strstr(s->ws_path, " (deleted)")) {
		snprintf(why, whylen, "the workspace cannot be /, /tmp, /dev, under /proc, "
			 "/sys or /run, or deleted");
		return -EINVAL;
	}
	struct stat st;
	if (fstat(root_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "the workspace is not a directory");
		return -ENOTDIR;
	}
	s->ws_dev = st.st_dev;
	s->ws_ino = st.st_ino;
	identity id = our_identity();
	s->file_ids = id.privileged && st.st_uid != 0;
	s->file_uid = st.st_uid;
	s->file_gid = st.st_gid;
	r = get_zygote(&id, s, why, whylen);
	if (r < 0)
		return r;
	if (private_disk && !id.privileged)
		r = attach_private_tmpfs(s, private_disk, ret_root_fd, why, whylen);
	else if (private_disk)
		r = own_private_root(s, &id, root_fd, &st, why, whylen);
	else
		r = attach_workspace(s, &id, root_fd, &st, true, why, whylen);
	if (r < 0) {
		confine_sandbox_free(g_steal_pointer(&s));
		return r;
	}
	*ret = g_steal_pointer(&s);
	return 0;
}

void confine_sandbox_free(confine_sandbox *s)
{
	if (!s)
		return;
	/* The idle groups hold no process of the sandbox: they go while its
	 * namespaces are torn down on the other CPU; then we wait for that. */
	if (s->z)
		zygote_kill(s->z);
	for (int i = 0; i < s->nidle; i++)
		limits_cgroup_destroy(&s->idle[i]);
	zygote_free(s->z);
	g_mutex_clear(&s->cg_lock);
	g_free(s);
}

bool confine_sandbox_file_ids(const confine_sandbox *s, uid_t *ret_uid, gid_t *ret_gid)
{
	if (!s || !s->file_ids)
		return false;
	*ret_uid = s->file_uid;
	*ret_gid = s->file_gid;
	return true;
}

const char *confine_sandbox_limits(const confine_sandbox *s)
{
	return s->limits_desc;
}

/* ---- host side: runs ---------------------------------------------------------------------- */

/* argv, envp and the workdir, NUL-terminated, as the zygote reads them. */
static GString *make_payload(const confine_request *req, uint32_t *argc, uint32_t *envc)
{
	GString *b = g_string_new(NULL);
	for (*argc = 0; req->argv[*argc]; (*argc)++)
		g_string_append_len(b, req->argv[*argc], (gssize)strlen(req->argv[*argc]) + 1);
	for (*envc = 0; req->envp && req->envp[*envc]; (*envc)++)
		g_string_append_len(b, req->envp[*envc], (gssize)strlen(req->envp[*envc]) + 1);
	const char *wd = req->workdir ? req->workdir : "";
	g_string_append_len(b, wd, (gssize)strlen(wd) + 1);
	return b;
}

/* A payload too large for the message goes in a memfd. */
static int payload_memfd(const GString *b)
{
	int fd = memfd_create("cordon-run", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < b->len) {
		ssize_t n = write(fd, b->str + off, b->len - off);
		if (n <= 0) {
			close(fd);
			return -EIO;
		}
		off += (size_t)n;
	}
	return fd;
}

/* A run's control groups: an idle set of the sandbox's, or new ones. */
static int cgroup_get(confine_sandbox *s, const limits_plan *lp, limits_cgroup *cg, char *why,
		      size_t whylen)
{
	if (s) {
		g_mutex_lock(&s->cg_lock);
		bool have = s->nidle > 0;
		if (have)
			*cg = s->idle[--s->nidle];
		g_mutex_unlock(&s->cg_lock);
		if (have)
			return 0;
	}
	return limits_cgroup_create(lp, cg, why, whylen);
}

static void cgroup_put(confine_sandbox *s, limits_cgroup *cg)
{
	if (s) {
		g_mutex_lock(&s->cg_lock);
		bool kept = s->nidle < (int)G_N_ELEMENTS(s->idle);
		if (kept)
			s->idle[s->nidle++] = *cg;
		g_mutex_unlock(&s->cg_lock);
		if (kept)
			return;
	}
	limits_cgroup_destroy(cg);
}

static int spawn_in(confine_sandbox *s, zygote *z, const limits_plan *lp,
		    const confine_request *req, confine_child *ret, char *why, size_t whylen)
{
	confine_child c = { .pidfd = -1, .status_fd = -1, .owner = s };
	int status[2] = { -1, -1 }, payload = -1;
	g_autoptr(GString) b = NULL;
	int r;
	if (req->workdir && g_path_is_absolute(req->workdir)) {
		snprintf(why, whylen, "the working directory must be relative");
		return -EINVAL;
	}
	if (pipe2(status, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(why, whylen, "pipe: %s", g_strerror(-r));
		goto out;
	}
	r = cgroup_get(s, lp, &c.cg, why, whylen);
	if (r < 0)
		goto out;
	c.have_cg = true;
	limits_cgroup_begin(&c.cg);
	struct nsinit_request q = {
		.magic = NSINIT_MAGIC,
		.kind = NSINIT_REQ_RUN,
		.flags = (req->last ? NSINIT_RUN_LAST : 0) | (req->ctty ? NSINIT_RUN_CTTY : 0),
		.port = req->port,
		.ncgroups = (uint32_t)c.cg.ndirs,
	};
	b = make_payload(req, &q.argc, &q.envc);
	q.payload_len = b->len;
	int fds[NSINIT_MAX_FDS] = { req->stdin_fd, req->stdout_fd, req->stderr_fd, status[1] };
	int nfds = 4;
	for (int i = 0; i < c.cg.ndirs; i++)
		fds[nfds++] = c.cg.procs_fd[i];
	if (b->len > NSINIT_INLINE_MAX) {
		payload = payload_memfd(b);
		if (payload < 0) {
			r = payload;
			snprintf(why, whylen, "cannot pass the command: %s", g_strerror(-r));
			goto out;
		}
		q.flags |= NSINIT_RUN_PAYLOAD_FD;
		fds[nfds++] = payload;
	}
	for (int i = 0; i < lp->nrlimits && i < NSINIT_MAX_RLIMITS; i++) {
		q.rlimits[i].resource = (uint32_t)lp->rlimits[i].resource;
		q.rlimits[i].value = lp->rlimits[i].value;
		q.nrlimits++;
	}
	int step = 0;
	bool inline_payload = !(q.flags & NSINIT_RUN_PAYLOAD_FD);
	r = zygote_call(z, &q, inline_payload ? b->str : NULL, inline_payload ? b->len : 0, fds,
			nfds, req->last ? NULL : &c.pidfd, &step);
	if (r == 0 && req->last) {
		/* The zygote is the run's init now. */
		c.last = true;
		c.pidfd = fcntl(z->pidfd, F_DUPFD_CLOEXEC, 3);
		if (c.pidfd < 0) {
			r = -errno;
			zygote_kill(z);
			snprintf(why, whylen, "dup: %s", g_strerror(-r));
			goto out;
		}
	}
	if (r < 0) {
		if (r == -ECHILD)
			snprintf(why, whylen, "the sandbox's init is gone");
		else if (step == NSINIT_STEP_WORKSPACE)
			snprintf(why, whylen, "kernel confinement failed mounting the workspace: %s",
				 r == -ESTALE ? "the directory changed under its path" : g_strerror(-r));
		else
			snprintf(why, whylen, "the sandbox could not start the run (%s): %s",
				 run_step_name(step), g_strerror(-r));
		goto out;
	}
	c.status_fd = status[0];
	c.z = z;
	g_atomic_int_inc(&z->live_runs);
	status[0] = -1;
	*ret = c;
	c.have_cg = false;
out:
	close_fd(&status[0]);
	close_fd(&status[1]);
	close_fd(&payload);
	if (c.have_cg)
		limits_cgroup_destroy(&c.cg);
	return r;
}

int confine_spawn(confine_sandbox *s, const confine_request *req, confine_child *ret, char *why,
		  size_t whylen)
{
	return spawn_in(s, s->z, &s->limits, req, ret, why, whylen);
}

int confine_child_end_fd(const confine_child *c)
{
	/* A last run's init reports the work's end once it has killed and
	 * reaped everything else: the record, not its own exit, ends the run. */
	return c->last ? c->status_fd : c->pidfd;
}

void confine_child_stop(confine_child *c, bool kill_it)
{
	if (c->pidfd < 0)
		return;
	if (kill_it)
		syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
	/* A last run not killed: the zygote closes the status pipe once it has
	 * swept its namespace; its own teardown need not hold up the run
	 * (finish waits for it when no end was reported). Else the init's exit,
	 * which comes after its namespace is empty. */
	if (c->last && !kill_it)
		wait_hangup(c->status_fd, 0);
	else
		wait_hangup(c->pidfd, POLLIN);
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
		} else if ((rec.kind == NSINIT_REC_EXEC_FAILED || rec.kind == NSINIT_REC_SETUP_FAILED) &&
			   !killed) {
			*ret_exec_failed = rec.kind == NSINIT_REC_EXEC_FAILED &&
					   rec.step == NSINIT_STEP_EXEC;
			if (*ret_exec_failed)
				snprintf(why, whylen, "cannot execute the command: %s",
					 g_strerror(rec.value));
			else
				snprintf(why, whylen, "kernel confinement failed %s: %s",
					 run_step_name(rec.step), g_strerror(rec.value));
			return rec.value > 0 ? -rec.value : -EIO;
		}
	}
	if (c->last && !exited)
		wait_hangup(c->pidfd, POLLIN); /* no sweep reported: wait for the kernel's */
	if (c->have_cg && limits_cgroup_oom_killed(&c->cg))
		st->flags |= CORDON_PLUGIN_RUNSTATUS_OOM;
	if (exited) {
		if (WIFSIGNALED(status)) {
			st->flags |= CORDON_PLUGIN_RUNSTATUS_SIGNALED;
			st->signal = WTERMSIG(status);
		} else {
			st->flags |= CORDON_PLUGIN_RUNSTATUS_EXITED;
			st->exit_code = WEXITSTATUS(status);
		}
		return 0;
	}
	if (killed) {
		st->flags |= CORDON_PLUGIN_RUNSTATUS_SIGNALED;
		st->signal = SIGKILL;
		return 0;
	}
	snprintf(why, whylen, "the run's init ended without reporting the work's status");
	return -ECHILD;
}

void confine_child_release(confine_child *c)
{
	close_fd(&c->status_fd);
	close_fd(&c->pidfd);
	if (c->z)
		g_atomic_int_add(&c->z->live_runs, -1);
	c->z = NULL;
	/* The run's processes are gone (stop waited for its init, or a last
	 * run's zygote had reaped them): its groups are empty. */
	if (c->have_cg)
		cgroup_put(c->owner, &c->cg);
	c->have_cg = false;
}

/* ---- the probe's trial -------------------------------------------------------------------- */

/* While the trial sandbox builds on the other CPU: the host's own checks
 * and limits, then what the first sandbox after a probe needs: the
 * id-mapping namespace of a workspace we own (as root) and the first run's
 * control groups (best effort: a failure there is met again, and reported,
 * where they are needed). */
typedef struct trial_warmup {
	const identity *id;
	const cordon_plugin_limits *limits;
	confine_precheck_fn precheck;
	limits_plan plan;
	limits_cgroup cg;
	bool have_cg;
} trial_warmup;

static int trial_check(trial_warmup *w, char *why, size_t whylen)
{
	if (w->precheck && w->precheck(why, whylen))
		return -ENOTSUP;
	return limits_plan_make(w->limits, &w->plan, why, whylen);
}

static int trial_warm(void *arg, char *why, size_t whylen)
{
	trial_warmup *w = arg;
	int r = trial_check(w, why, whylen);
	if (r < 0)
		return r;
	if (w->id->privileged) {
		int fd = idmap_userns(geteuid(), getegid(), w->id->out_uid, w->id->out_gid);
		if (fd >= 0)
			close(fd);
	}
	char ignored[256];
	w->have_cg = limits_cgroup_create(&w->plan, &w->cg, ignored, sizeof(ignored)) == 0;
	return 0;
}

int confine_trial(const cordon_plugin_limits *limits, confine_precheck_fn precheck, char *why,
		  size_t whylen)
{
	if (!kernel_has(SYS_open_tree) || !kernel_has(SYS_move_mount)) {
		snprintf(why, whylen, "the kernel lacks open_tree/move_mount (Linux 5.2)");
		return -ENOSYS;
	}
	/* A fresh sandbox: namespaces, read-only host, mounts, identity, and
	 * its self-test (Landlock enforced, the seccomp filter installed). It
	 * starts first; the host's checks run while it builds. */
	identity id = our_identity();
	trial_warmup warm = { .id = &id, .limits = limits, .precheck = precheck };
	zygote_overlap overlap = { trial_warm, &warm, false };
	zygote *z = NULL;
	int r = zygote_start(id.privileged, id.in_uid, id.in_gid, id.out_uid, id.out_gid, &overlap,
			     &z, why, whylen);
	/* A start that failed early: the checks name the cause better. */
	if (r < 0 && !overlap.ran) {
		char checked[512];
		if (trial_check(&warm, checked, sizeof(checked)) < 0)
			snprintf(why, whylen, "%s", checked);
	}
	if (r < 0) {
		if (warm.have_cg)
			limits_cgroup_destroy(&warm.cg);
		return r;
	}
	pool_put(z, &warm.plan, warm.have_cg ? &warm.cg : NULL);
	return 0;
}
