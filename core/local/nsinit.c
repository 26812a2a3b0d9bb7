/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-nsinit: the init of a kernel-tier sandbox (nsinit-proto.h).
 *
 * The launcher (confine.c, zygote.c, child.c) builds the sandbox's namespaces and its view of
 * the host, then executes this program from a sealed memfd embedded in
 * libcordon (no path on the host can be swapped for it). It runs as:
 *
 *  the zygote   pid 1 of the sandbox's pid namespace, one per sandbox. It
 *               keeps the few capabilities a run's setup needs (in the
 *               sandbox's user namespace only) and serves the host's
 *               requests on the control socket: mount the workspace; start
 *               a run. EOF on the socket (the sandbox closed, or the host
 *               died) makes it kill everything and exit, which ends the
 *               sandbox's pid namespace.
 *  a run's init forked by the zygote into a new pid namespace (its pid 1):
 *               joins the run's cgroups, takes the sandbox identity, sets
 *               the limits and the working directory, drops every
 *               capability, then forks the work, reaps every process of its
 *               namespace, forwards termination signals to the work's
 *               process group, reports the work's status on the run's
 *               status pipe and exits, taking its pid namespace with it. It
 *               dies with the zygote (PR_SET_PDEATHSIG).
 *  the work     a run init's child: its own session, Landlock, then the
 *               seccomp filter last, then execve (a bare name is searched in
 *               the work's own PATH, in the sandbox's view).
 *
 * Freestanding (no libc, raw system calls from rawsys.h, a few KiB): the
 * sandbox may not see the host's libraries, and runs are forked from it.
 * Built with -nostdlib -ffreestanding -fno-stack-protector (there is no TLS).
 */
#define _GNU_SOURCE 1
#include "landlock-abi.h"
#include "nsinit-proto.h"
#include "rawsys.h"

#include <errno.h>
#include <fcntl.h>
#include <asm/ioctls.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/stat.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

static struct sock_filter bpf[NSINIT_BPF_MAX_INSNS];
static unsigned short bpf_insns;
static char pathbuf[4096];
static char inline_buf[NSINIT_INLINE_MAX]; /* a request's payload */

/* The zygote's state, inherited by every run init it forks. */
static int ll_abi;
static bool root_mode; /* privileged host: runs switch to the sandbox ids */
static unsigned long in_uid, in_gid;
static int ws_fd = -1;        /* the workspace's mount, once attached */
static int base_ruleset = -1; /* the Landlock ruleset every run shares */
static int sfd = -1;          /* signalfd (SIGCHLD and the forwarded signals) */

/* The compiler may emit these for struct copies; there is no libc. */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n)
{
	unsigned char *p = d;
	while (n--)
		*p++ = (unsigned char)c;
	return d;
}
void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *p = d;
	const unsigned char *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

/* Where a last run's init puts the groups its work joins (after 0-2 stdio,
 * 3 status, 4 ruleset, 5 the control socket). */
#define WORK_FD_CGROUPS NSINIT_WORK_FD_CGROUPS

/* Signals passed on to the work; SIGCHLD drives the reaping. */
static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };

static void __attribute__((noreturn)) die(int code)
{
	for (;;)
		rsys1(SYS_exit_group, code);
}

static void report(int fd, uint32_t kind, long value, int32_t step)
{
	struct nsinit_record r = { NSINIT_MAGIC, kind, (int32_t)value, step };
	while (rsys3(SYS_write, fd, &r, sizeof(r)) == -EINTR)
		;
}

static bool has_char(const char *s, char c)
{
	for (; *s; s++)
		if (*s == c)
			return true;
	return false;
}

static unsigned long to_ulong(const char *s)
{
	unsigned long v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (unsigned long)(*s - '0');
	return v;
}

static bool starts_with_dir(const char *path, const char *dir)
{
	size_t n = rs_strlen(dir);
	for (size_t i = 0; i < n; i++)
		if (path[i] != dir[i])
			return false;
	return path[n] == '/';
}

static const char *env_value(char **envp, const char *name)
{
	size_t n = rs_strlen(name);
	for (; *envp; envp++) {
		size_t i = 0;
		while (i < n && (*envp)[i] == name[i])
			i++;
		if (i == n && (*envp)[n] == '=')
			return *envp + n + 1;
	}
	return NULL;
}

static long open_dir(int dirfd, const char *path, uint64_t resolve)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = resolve };
	return rsys4(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* ---- Landlock ------------------------------------------------------------------------ */

static long ll_add_fd(long rs, long fd, uint64_t access)
{
	struct ll_path_beneath_attr pb = { .allowed_access = access, .parent_fd = (int32_t)fd };
	return rsys4(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0);
}

/* A path missing from this sandbox (no /dev/tty, say) needs no rule. */
static long ll_add_path(long rs, const char *path, uint64_t access)
{
	long fd = rsys4(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	long r = ll_add_fd(rs, fd, access);
	rsys1(SYS_close, fd);
	return r;
}

static long build_ruleset(void)
{
	static const char *const dirs[] = LL_WRITE_DIRS;
	static const char *const files[] = LL_DEV_FILES;
	struct ll_masks m;
	ll_masks_for(ll_abi, &m);
	long rs = rsys3(SYS_landlock_create_ruleset, &m.handled, m.handled_size, 0);
	if (rs < 0)
		return rs;
	long r = ll_add_path(rs, "/", m.read_exec);
	if (r >= 0 && ws_fd >= 0)
		r = ll_add_fd(rs, ws_fd, m.write_dir | m.read_exec);
	for (size_t i = 0; r >= 0 && i < sizeof(dirs) / sizeof(dirs[0]); i++)
		r = ll_add_path(rs, dirs[i], m.write_dir | m.read_exec);
	for (size_t i = 0; r >= 0 && i < sizeof(files) / sizeof(files[0]); i++)
		r = ll_add_path(rs, files[i], m.write_file);
	if (r < 0) {
		rsys1(SYS_close, rs);
		return r;
	}
	return rs;
}

/* ---- the work ---------------------------------------------------------------------- */

/* A script without a #! line runs under /bin/sh, as execvp does. */
static long exec_sh(const char *path, char **argv, char **envp)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	char *sh_argv[argc + 2];
	sh_argv[0] = (char *)"/bin/sh";
	sh_argv[1] = (char *)path;
	for (int i = 1; i <= argc; i++)
		sh_argv[i + 1] = argv[i];
	return rsys3(SYS_execve, "/bin/sh", sh_argv, envp);
}

static long try_exec(const char *path, char **argv, char **envp)
{
	long r = rsys3(SYS_execve, path, argv, envp);
	if (r == -ENOEXEC)
		r = exec_sh(path, argv, envp);
	return r;
}

/* execvpe's search, in the work's PATH (default /usr/local/bin:/usr/bin:/bin). */
static long exec_work(const char *file, char **argv, char **envp)
{
	if (has_char(file, '/'))
		return try_exec(file, argv, envp);
	const char *path = env_value(envp, "PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	size_t flen = rs_strlen(file);
	long err = -ENOENT;
	for (const char *d = path;; d++) {
		const char *end = d;
		while (*end && *end != ':')
			end++;
		size_t dlen = (size_t)(end - d);
		if (dlen + flen + 2 <= sizeof(pathbuf)) {
			size_t o = 0;
			for (size_t i = 0; i < dlen; i++)
				pathbuf[o++] = d[i];
			if (dlen == 0)
				pathbuf[o++] = '.';
			pathbuf[o++] = '/';
			for (size_t i = 0; i <= flen; i++)
				pathbuf[o++] = file[i];
			long r = try_exec(pathbuf, argv, envp);
			if (r == -EACCES)
				err = r; /* remembered, as execvp does, unless another entry works */
			else if (r != -ENOENT && r != -ENOTDIR && r != -ENAMETOOLONG && r != -ELOOP)
				return r;
		}
		if (!*end)
			return err;
		d = end;
	}
}

/* The work: the last confinement steps, then execve. fd 3 is the status
 * pipe (close-on-exec), fd 4 the Landlock ruleset when there is one, and
 * from WORK_FD_CGROUPS the ncg control-group files it joins (a last run;
 * cgroup.procs on v2, tasks on v1: it is single-threaded). */
static void __attribute__((noreturn))
work(char **argv, char **envp, bool landlock, const unsigned long *mask, int ncg, bool ctty)
{
	int step = NSINIT_STEP_CGROUP;
	long r = 0;
	for (int i = 0; i < ncg && r >= 0; i++)
		r = rsys3(SYS_write, WORK_FD_CGROUPS + i, "0", 1);
	if (r < 0)
		goto fail;
	step = NSINIT_STEP_SETSID;
	r = rsys0(SYS_setsid); /* no controlling terminal; a group the init can signal */
	/* ... unless the run has a terminal: then it is this session's (^C signals the work) */
	if (r >= 0 && ctty)
		r = rsys3(SYS_ioctl, 0, TIOCSCTTY, 0);
	if (r < 0)
		goto fail;
	if (landlock) {
		step = NSINIT_STEP_LANDLOCK;
		r = rsys2(SYS_landlock_restrict_self, 4, 0);
		if (r < 0)
			goto fail;
	}
	/* Nothing past stdio and the (close-on-exec) status pipe. */
	rsys3(SYS_close_range, 4, ~0U, 0);
	rsys4(SYS_rt_sigprocmask, SIG_SETMASK, mask, 0, sizeof(*mask));
	/* Last before execve: from here on the filter governs every call. */
	step = NSINIT_STEP_SECCOMP;
	struct sock_fprog prog = { .len = bpf_insns, .filter = bpf };
	r = rsys3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	if (r < 0)
		goto fail;
	step = NSINIT_STEP_EXEC;
	r = exec_work(argv[0], argv, envp);
fail:
	report(3, NSINIT_REC_EXEC_FAILED, -r, step);
	die(step == NSINIT_STEP_EXEC ? 127 : 126);
}

/* ---- a run's init ----------------------------------------------------------------------- */

/* Kills everything else in the namespace and reaps it. kill(-1) from pid 1
 * reaches every process of the namespace but the init itself. */
static void sweep(void)
{
	rsys2(SYS_kill, -1, SIGKILL);
	long r;
	while ((r = rsys4(SYS_wait4, -1, 0, __WALL, 0)) > 0 || r == -EINTR)
		;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

/* Reaps what is ready; returns true once the work itself has ended. */
static bool reap(long work_pid, int *status)
{
	bool done = false;
	for (;;) {
		int st;
		long p = rsys4(SYS_wait4, -1, &st, WNOHANG | __WALL, 0);
		if (p <= 0)
			return done;
		if (p == work_pid) {
			// NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign): the raw system call filled it
			*status = st;
			done = true;
		}
	}
}

/* The zygote's bounding set holds only what it keeps (child.c's
 * zygote_caps); the run drops those and everything else it has. */
static const int zygote_caps[] = { 21 /* SYS_ADMIN */, 7 /* SETUID */, 6 /* SETGID */,
				   8 /* SETPCAP */ };

static long drop_caps(void)
{
	long r = rsys2(SYS_prctl, PR_SET_SECUREBITS,
		       (1 << 0) | (1 << 1) |         /* NOROOT, locked */
			       (1 << 2) | (1 << 3) | /* NO_SETUID_FIXUP, locked */
			       (1 << 5) |            /* KEEP_CAPS off, locked */
			       (1 << 6) | (1 << 7)); /* NO_CAP_AMBIENT_RAISE, locked */
	if (r < 0)
		return r;
	/* SETPCAP last: the drops need it. */
	for (int i = (int)(sizeof(zygote_caps) / sizeof(zygote_caps[0])) - 1; i >= 0; i--)
		if ((r = rsys2(SYS_prctl, PR_CAPBSET_DROP, zygote_caps[i])) < 0)
			return r;
	r = rsys5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (r < 0)
		return r;
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
	return rsys2(SYS_capset, &hdr, data);
}

/* The payload: argc + envc NUL-terminated strings, then the workdir. */
static long parse_payload(const struct nsinit_request *req, const char *p, char ***ret_argv,
			  char ***ret_envp, const char **ret_workdir)
{
	size_t len = req->payload_len, n = req->argc + req->envc + 2;
	if (len == 0 || req->argc == 0 || n > (1u << 20))
		return -EINVAL;
	long vec = rsys6(SYS_mmap, 0, (long)(n * sizeof(char *)), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vec < 0)
		return vec;
	const char *end = p + len;
	char **v = (char **)vec;
	for (size_t i = 0; i < req->argc + req->envc + 1; i++) {
		const char *s = p;
		while (p < end && *p)
			p++;
		if (p == end)
			return -EINVAL; /* not NUL-terminated */
		p++;
		if (i < req->argc)
			v[i] = (char *)s;
		else if (i < req->argc + req->envc)
			v[i + 1] = (char *)s; /* envp starts after argv's NULL */
		else
			*ret_workdir = s;
	}
	v[req->argc] = 0;
	v[req->argc + req->envc + 1] = 0;
	*ret_argv = v;
	*ret_envp = v + req->argc + 1;
	return 0;
}

/* last: the zygote itself, for the sandbox's last run. It keeps the control
 * socket (fd 5 of the run) as its lifeline: EOF there ends everything. A
 * forked run init has the zygote as its lifeline instead (PR_SET_PDEATHSIG). */
static void __attribute__((noreturn))
run_init(const struct nsinit_request *req, const int *fds, bool last)
{
	int status = fds[3];
	int step = NSINIT_STEP_FDS;
	long r;
	char **argv = 0, **envp = 0;
	const char *workdir = "";

	rsys1(SYS_close, sfd);
	if (!last) {
		rsys1(SYS_close, NSINIT_FD_CONTROL);
		if ((r = rsys2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL)) < 0)
			goto fail;
	}
	/* A last run's init (the zygote) stays out of the run's groups: they
	 * must be empty once the work's end is reported, before the zygote's
	 * own exit. The work joins them itself. */
	step = NSINIT_STEP_CGROUP;
	if (!last)
		for (uint32_t i = 0; i < req->ncgroups; i++)
			if ((r = rsys3(SYS_write, fds[4 + i], "0", 1)) < 0)
				goto fail;
	step = NSINIT_STEP_PAYLOAD;
	const char *payload = inline_buf;
	if (req->flags & NSINIT_RUN_PAYLOAD_FD) {
		r = rsys6(SYS_mmap, 0, (long)req->payload_len, PROT_READ, MAP_PRIVATE,
			  fds[4 + req->ncgroups], 0);
		if (r < 0)
			goto fail;
		payload = (const char *)r;
	}
	if ((r = parse_payload(req, payload, &argv, &envp, &workdir)) < 0)
		goto fail;
	if (root_mode) {
		/* The zygote holds the caller's host identity (to reach its
		 * workspace); the work runs as the unprivileged sandbox ids. */
		step = NSINIT_STEP_IDS;
		if ((r = rsys2(SYS_setgroups, 0, 0)) < 0 ||
		    (r = rsys3(SYS_setresgid, in_gid, in_gid, in_gid)) < 0 ||
		    (r = rsys3(SYS_setresuid, in_uid, in_uid, in_uid)) < 0)
			goto fail;
	}
	step = NSINIT_STEP_RLIMIT;
	for (uint32_t i = 0; i < req->nrlimits; i++) {
		uint64_t lim[2] = { req->rlimits[i].value, req->rlimits[i].value };
		if ((r = rsys4(SYS_prlimit64, 0, req->rlimits[i].resource, lim, 0)) < 0)
			goto fail;
	}
	step = NSINIT_STEP_WORKDIR;
	if (ws_fd >= 0) {
		long wd = ws_fd;
		if (*workdir) {
			struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
						.resolve = RESOLVE_BENEATH |
							   RESOLVE_NO_MAGICLINKS };
			wd = rsys4(SYS_openat2, ws_fd, workdir, &how, sizeof(how));
		}
		r = wd < 0 ? wd : rsys1(SYS_fchdir, wd);
	} else {
		r = -ENOENT; /* no workspace mounted yet */
	}
	if (r < 0)
		goto fail;
	long ruleset = -1;
	if (ll_abi > 0) {
		step = NSINIT_STEP_RULESET;
		ruleset = base_ruleset < 0 ? build_ruleset() : base_ruleset;
		if ((r = ruleset) < 0)
			goto fail;
	}
	step = NSINIT_STEP_CAPS;
	if ((r = drop_caps()) < 0)
		goto fail;
	/* 0-2 the work's stdio, 3 the status pipe, 4 the ruleset; for a last
	 * run 5 the control socket and from 6 the groups the work joins
	 * (WORK_FD_CGROUPS); nothing else. */
	step = NSINIT_STEP_FDS;
	int ncg = last ? (int)req->ncgroups : 0;
	long tmp[WORK_FD_CGROUPS + NSINIT_MAX_CGROUPS] = { fds[0],  fds[1],
							   fds[2],  status,
							   ruleset, last ? NSINIT_FD_CONTROL : -1 };
	for (int i = 0; i < ncg; i++)
		tmp[WORK_FD_CGROUPS + i] = fds[4 + i];
	int nfd = WORK_FD_CGROUPS + ncg;
	for (int i = 0; i < nfd; i++)
		if (tmp[i] >= 0 &&
		    (tmp[i] = rsys3(SYS_fcntl, tmp[i], F_DUPFD_CLOEXEC, NSINIT_FD_MOVE_BASE)) < 0) {
			r = tmp[i];
			goto fail;
		}
	for (int i = 0; i < nfd; i++)
		if (tmp[i] >= 0 && (r = rsys3(SYS_dup3, tmp[i], i, i >= 3 ? O_CLOEXEC : 0)) < 0)
			goto fail;
	status = 3;
	rsys3(SYS_close_range, (unsigned)nfd, ~0U, 0);

	unsigned long mask = 1ul << (SIGCHLD - 1), oldmask = 0;
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		mask |= 1ul << (forwarded[i] - 1);
	rsys4(SYS_rt_sigprocmask, SIG_BLOCK, &mask, &oldmask, sizeof(mask));
	oldmask &= ~(1ul << (SIGCHLD - 1)); /* the zygote's block is not the work's */
	long sig = rsys4(SYS_signalfd4, -1, &mask, sizeof(mask), SFD_CLOEXEC | SFD_NONBLOCK);
	if (sig < 0 && last) {
		/* Without it we could not watch the lifeline while we wait. */
		r = sig;
		goto fail;
	}

	/* vfork-like: the work borrows our memory and stack until its execve
	 * (we sleep meanwhile), so no page table is copied per run. It only
	 * calls downwards (work() never returns) and touches nothing of ours. */
	step = NSINIT_STEP_FORK;
	long pid = rsys5(SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		work(argv, envp, ruleset >= 0, &oldmask, ncg, req->flags & NSINIT_RUN_CTTY);
	if ((r = pid) < 0)
		goto fail;
	if (ruleset >= 0)
		rsys1(SYS_close, 4);

	int st = 0;
	if (sig < 0) {
		/* Without a signalfd, block in wait4: no forwarding, same reaping. */
		long p;
		while ((p = rsys4(SYS_wait4, -1, &st, __WALL, 0)) != pid)
			if (p < 0 && p != -EINTR)
				die(255);
	} else {
		struct pollfd pfd[2] = { { (int)sig, POLLIN, 0 }, { last ? 5 : -1, POLLIN, 0 } };
		for (;;) {
			r = rsys5(SYS_ppoll, pfd, 2, 0, 0, 0);
			if ((r < 0 && r != -EINTR) || pfd[1].revents) {
				sweep(); /* the host is gone, or closed the sandbox */
				die(255);
			}
			struct signalfd_siginfo si;
			while (rsys3(SYS_read, sig, &si, sizeof(si)) == (long)sizeof(si))
				if (si.ssi_signo != SIGCHLD)
					rsys2(SYS_kill, -pid, si.ssi_signo);
			if (reap(pid, &st))
				break;
		}
	}
	sweep();
	report(status, NSINIT_REC_EXITED, st, 0);
	/* Closed now, not at exit: an exiting process releases its files only
	 * after its namespaces (a last run's: the sandbox's mount tree). */
	rsys1(SYS_close, status);
	die(exit_code(st));
fail:
	report(status, NSINIT_REC_SETUP_FAILED, -r, step);
	die(126);
}

/* ---- the zygote -------------------------------------------------------------------------- */

static long same_inode(long fd, uint64_t dev, uint64_t ino)
{
	struct statx stx;
	long r = rsys5(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_INO, &stx);
	if (r < 0)
		return r;
	// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): the raw system call filled it
	uint64_t d = ((uint64_t)stx.stx_dev_major << 32) | stx.stx_dev_minor;
	return d == dev && stx.stx_ino == ino ? 0 : -ESTALE;
}

/* mkdir -p of an absolute path in the sandbox's tmpfs; an O_PATH fd. */
static long make_dirs(const char *path)
{
	char buf[sizeof(pathbuf)];
	size_t n = rs_strlen(path);
	for (size_t i = 0; i <= n; i++)
		buf[i] = path[i];
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
	return open_dir(AT_FDCWD, path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* A fresh tmpfs of size bytes owned by the sandbox user, nosuid and nodev:
 * the private root of an unprivileged host. Returns its detached mount. */
static long private_tmpfs(uint64_t size)
{
	char opt[24];
	long fs = rsys2(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return fs;
	long r;
	rs_utoa(opt, (unsigned long)size);
	if ((r = rsys5(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", opt, 0)) >= 0 &&
	    (r = rsys5(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0700", 0)) >= 0) {
		rs_utoa(opt, in_uid);
		r = rsys5(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "uid", opt, 0);
	}
	if (r >= 0) {
		rs_utoa(opt, in_gid);
		r = rsys5(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "gid", opt, 0);
	}
	if (r >= 0)
		r = rsys5(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, 0, 0, 0);
	if (r >= 0)
		r = rsys3(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	rsys1(SYS_close, fs);
	return r;
}

/* Mounts the workspace at its own path: a detached mount the host made
 * (idmapped), or a copy of the directory the host named, found below the
 * sandbox's /tmp and /dev when it lives there, checked by identity. */
static long attach_workspace(const struct nsinit_request *req, const int *fds, int nfds)
{
	if (ws_fd >= 0)
		return -EBUSY;
	if (req->payload_len == 0 || req->payload_len >= sizeof(pathbuf))
		return -EINVAL;
	for (size_t i = 0; i < req->payload_len; i++)
		pathbuf[i] = inline_buf[i];
	pathbuf[req->payload_len] = '\0';
	if (pathbuf[0] != '/' || rs_strlen(pathbuf) + 1 != req->payload_len)
		return -EINVAL;
	long r;
	bool in_tmp = starts_with_dir(pathbuf, "/tmp"), in_dev = starts_with_dir(pathbuf, "/dev");
	long src;
	if (req->flags & NSINIT_WS_TMPFS) {
		src = private_tmpfs(req->tmpfs_size);
	} else if (nfds >= 1) {
		src = rsys3(SYS_fcntl, fds[0], F_DUPFD_CLOEXEC, 64);
	} else {
		long dir = in_tmp ? NSINIT_FD_HOSTTMP : in_dev ? NSINIT_FD_HOSTDEV : AT_FDCWD;
		const char *rel = dir == AT_FDCWD ? pathbuf : pathbuf + 5;
		long fd = open_dir(dir, rel,
				   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
					   (dir == AT_FDCWD ? 0 : RESOLVE_BENEATH));
		if (fd < 0)
			return fd;
		r = same_inode(fd, req->ws_dev, req->ws_ino);
		src = r < 0 ? r
			    : rsys3(SYS_open_tree, fd, "",
				    OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH |
					    OPEN_TREE_CLOEXEC);
		rsys1(SYS_close, fd);
		if (src >= 0) {
			/* The copy of the host is read-only; this one mount is not. */
			struct mount_attr a = { .attr_clr = MOUNT_ATTR_RDONLY,
						.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
			r = rsys5(SYS_mount_setattr, src, "", AT_EMPTY_PATH | AT_RECURSIVE, &a,
				  sizeof(a));
			if (r < 0)
				return r;
		}
	}
	if (src < 0)
		return src;
	long mp;
	if (in_tmp || in_dev) {
		/* New directories in the sandbox's tmpfs belong to the sandbox
		 * user: as root (whose host id the sandbox does not map) our file
		 * system ids switch first. For good: the host's id has no name
		 * here to switch back to, and nothing after needs it (this is the
		 * one workspace; runs take the sandbox ids anyway). */
		if (root_mode) {
			rsys1(SYS_setfsgid, in_gid);
			rsys1(SYS_setfsuid, in_uid);
		}
		mp = make_dirs(pathbuf);
	} else {
		mp = open_dir(AT_FDCWD, pathbuf, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	}
	if (mp < 0)
		return mp;
	r = rsys5(SYS_move_mount, src, "", mp, "",
		  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	rsys1(SYS_close, mp);
	if (r < 0)
		return r;
	ws_fd = (int)src;
	if (ll_abi > 0 && base_ruleset >= 0) {
		/* Built while we waited for the workspace: it lacks only it. */
		struct ll_masks m;
		ll_masks_for(ll_abi, &m);
		return ll_add_fd(base_ruleset, ws_fd, m.write_dir | m.read_exec);
	}
	if (ll_abi > 0) {
		r = build_ruleset();
		if (r < 0)
			return r;
		base_ruleset = (int)r;
	}
	return 0;
}

/* An extra host directory at its inside path: the detached mount the host made, moved
 * over a directory of the sandbox (made when below /tmp), writable in Landlock's eyes
 * only with NSINIT_MOUNT_RW. After the workspace, whose ruleset it joins. */
static long attach_mount(const struct nsinit_request *req, const int *fds, int nfds)
{
	if (nfds != 1 || ws_fd < 0 || req->payload_len < 2 || req->payload_len >= sizeof(pathbuf))
		return -EINVAL;
	for (size_t i = 0; i < req->payload_len; i++)
		pathbuf[i] = inline_buf[i];
	pathbuf[req->payload_len] = '\0';
	if (pathbuf[0] != '/' || rs_strlen(pathbuf) + 1 != req->payload_len ||
	    starts_with_dir(pathbuf, "/dev") || starts_with_dir(pathbuf, "/proc") ||
	    starts_with_dir(pathbuf, "/sys"))
		return -EINVAL;
	long mp;
	if (starts_with_dir(pathbuf, "/tmp")) {
		if (root_mode) { /* as attach_workspace: the tmpfs is the sandbox user's */
			rsys1(SYS_setfsgid, in_gid);
			rsys1(SYS_setfsuid, in_uid);
		}
		mp = make_dirs(pathbuf);
	} else {
		mp = open_dir(AT_FDCWD, pathbuf, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	}
	if (mp < 0)
		return mp;
	long r = rsys5(SYS_move_mount, fds[0], "", mp, "",
		       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	rsys1(SYS_close, mp);
	if (r < 0 || !(req->flags & NSINIT_MOUNT_RW) || ll_abi <= 0)
		return r;
	if (base_ruleset < 0)
		return -EINVAL;
	struct ll_masks m;
	ll_masks_for(ll_abi, &m);
	return ll_add_fd(base_ruleset, fds[0], m.write_dir | m.read_exec);
}

static void reply(long err, int step, long fd)
{
	struct nsinit_reply rep = { NSINIT_MAGIC, (int32_t)err, step, 0 };
	struct iovec iov = { &rep, sizeof(rep) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		int v = (int)fd;
		memcpy(CMSG_DATA(cm), &v, sizeof(v));
	}
	while (rsys3(SYS_sendmsg, NSINIT_FD_CONTROL, &mh, MSG_NOSIGNAL) == -EINTR)
		;
}

/* One request. Returns false at EOF: the sandbox is over. */
static bool serve_one(void)
{
	struct nsinit_request req;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * NSINIT_MAX_FDS)];
	} c;
	struct iovec iov[2] = { { &req, sizeof(req) }, { inline_buf, sizeof(inline_buf) } };
	struct msghdr mh = { .msg_iov = iov,
			     .msg_iovlen = 2,
			     .msg_control = c.buf,
			     .msg_controllen = sizeof(c.buf) };
	long n = rsys3(SYS_recvmsg, NSINIT_FD_CONTROL, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n == -EINTR || n == -EAGAIN)
		return true;
	if (n <= 0)
		return false;
	/* Room for every fd the control buffer can carry: its alignment padding
	 * holds one more than NSINIT_MAX_FDS, and a request with too many is
	 * refused below (every fd received is closed). */
	int fds[(sizeof(c.buf) - CMSG_LEN(0)) / sizeof(int)];
	int nfds = 0;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): the raw system call filled it
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
		nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(cm), (size_t)nfds * sizeof(int));
	}
	long err = 0;
	int step = NSINIT_STEP_PAYLOAD;
	int pidfd = -1;
	bool by_fd = req.flags & NSINIT_RUN_PAYLOAD_FD;
	// NOLINTBEGIN(bugprone-branch-clone): a malformed request and an unknown kind are refused alike
	if (n < (long)sizeof(req) || req.magic != NSINIT_MAGIC ||
	    (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || req.nrlimits > NSINIT_MAX_RLIMITS ||
	    req.ncgroups > NSINIT_MAX_CGROUPS ||
	    (!by_fd && (uint64_t)(n - (long)sizeof(req)) != req.payload_len)) {
		// NOLINTEND(bugprone-branch-clone)
		err = -EINVAL;
	} else if (req.kind == NSINIT_REQ_WORKSPACE) {
		step = NSINIT_STEP_WORKSPACE;
		err = attach_workspace(&req, fds, nfds);
		/* A tmpfs exists only here: the host reaches it by this fd. */
		if (err == 0 && (req.flags & NSINIT_WS_TMPFS))
			pidfd = (int)rsys3(SYS_fcntl, ws_fd, F_DUPFD_CLOEXEC, 64);
	} else if (req.kind == NSINIT_REQ_MOUNT) {
		step = NSINIT_STEP_MOUNT;
		err = attach_mount(&req, fds, nfds);
	} else if (req.kind == NSINIT_REQ_SOCKET && nfds == 0 && req.payload_len == 0) {
		step = NSINIT_STEP_SOCKET;
		int family = (req.flags & NSINIT_SOCKET_INET6) ? AF_INET6 : AF_INET;
		long fd = rsys3(SYS_socket, family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		err = fd < 0 ? fd : 0;
		pidfd = fd < 0 ? -1 : (int)fd; /* the reply's fd, closed once sent */
	} else if (req.kind == NSINIT_REQ_RUN && (req.flags & NSINIT_RUN_LAST) &&
		   nfds == 4 + (int)req.ncgroups + by_fd) {
		reply(0, NSINIT_STEP_FORK, -1);
		run_init(&req, fds, true);
	} else if (req.kind == NSINIT_REQ_RUN && nfds == 4 + (int)req.ncgroups + by_fd) {
		step = NSINIT_STEP_FORK;
		long pid = rsys5(SYS_clone, CLONE_NEWPID | CLONE_PIDFD | SIGCHLD, 0, &pidfd, 0, 0);
		if (pid == 0)
			run_init(&req, fds, false);
		err = pid < 0 ? pid : 0;
	} else {
		err = -EINVAL;
	}
	for (int i = 0; i < nfds; i++)
		rsys1(SYS_close, fds[i]);
	reply(-err, step, pidfd);
	if (pidfd >= 0)
		rsys1(SYS_close, pidfd);
	return true;
}

static long load_bpf(void)
{
	struct statx stx;
	long r = rsys5(SYS_statx, NSINIT_FD_BPF, "", AT_EMPTY_PATH, STATX_SIZE, &stx);
	if (r < 0)
		return r;
	// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): the raw system call filled it
	if (stx.stx_size == 0 || stx.stx_size % sizeof(struct sock_filter) ||
	    stx.stx_size > sizeof(bpf))
		return -EINVAL;
	r = rsys4(SYS_pread64, NSINIT_FD_BPF, bpf, stx.stx_size, 0);
	if (r != (long)stx.stx_size)
		return r < 0 ? r : -EIO;
	rsys1(SYS_close, NSINIT_FD_BPF);
	bpf_insns = (unsigned short)(stx.stx_size / sizeof(struct sock_filter));
	return 0;
}

static void __attribute__((noreturn)) zygote(char **argv)
{
	ll_abi = (int)to_ulong(argv[1] + 1);
	in_uid = to_ulong(argv[2]);
	in_gid = to_ulong(argv[3]);
	root_mode = argv[4][0] == 'R';
	for (int fd = NSINIT_FD_STATUS; fd < NSINIT_FD_COUNT; fd++)
		rsys3(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
	/* Nothing in the sandbox may read or write this process's memory. */
	rsys2(SYS_prctl, PR_SET_DUMPABLE, 0);
	long r = load_bpf();
	if (r < 0) {
		report(NSINIT_FD_STATUS, NSINIT_REC_SETUP_FAILED, -r,
		       NSINIT_ZYGOTE_STEP + NSINIT_STEP_BPF);
		die(126);
	}
	unsigned long mask = 1ul << (SIGCHLD - 1);
	rsys4(SYS_rt_sigprocmask, SIG_BLOCK, &mask, 0, sizeof(mask));
	sfd = (int)rsys4(SYS_signalfd4, -1, &mask, sizeof(mask), SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		report(NSINIT_FD_STATUS, NSINIT_REC_SETUP_FAILED, -sfd,
		       NSINIT_ZYGOTE_STEP + NSINIT_STEP_FORK);
		die(126);
	}
	/* What every run will enforce must hold here: the launcher started a
	 * child that enforces Landlock and installs the filter, as the work
	 * will, while it built the sandbox. It is our only child: its exit
	 * status is the verdict (a Landlock errno, or 128 + a seccomp one). */
	int st = 0;
	long t;
	while ((t = rsys4(SYS_wait4, -1, &st, __WALL, 0)) == -EINTR)
		;
	if (t < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		int code = t < 0 ? (int)-t : WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
		report(NSINIT_FD_STATUS, NSINIT_REC_SETUP_FAILED, code >= 128 ? code - 128 : code,
		       NSINIT_ZYGOTE_STEP +
			       (code >= 128 ? NSINIT_STEP_SECCOMP : NSINIT_STEP_LANDLOCK));
		die(126);
	}
	report(NSINIT_FD_STATUS, NSINIT_REC_STARTED, 0, 0);
	rsys1(SYS_close, NSINIT_FD_STATUS);
	/* Runs share one ruleset: built now, while the host
	 * decides, but for the workspace's rule (added when it is mounted). On
	 * failure the mount builds it, and reports why. */
	if (ll_abi > 0) {
		r = build_ruleset();
		base_ruleset = r < 0 ? -1 : (int)r;
	}

	struct pollfd pfd[2] = { { NSINIT_FD_CONTROL, POLLIN, 0 }, { sfd, POLLIN, 0 } };
	for (;;) {
		r = rsys5(SYS_ppoll, pfd, 2, 0, 0, 0);
		if (r < 0 && r != -EINTR)
			break;
		if (pfd[1].revents) {
			struct signalfd_siginfo si;
			while (rsys3(SYS_read, sfd, &si, sizeof(si)) == (long)sizeof(si))
				;
			while (rsys4(SYS_wait4, -1, 0, WNOHANG | __WALL, 0) > 0)
				;
		}
		if (pfd[0].revents && !serve_one())
			break;
	}
	/* The host closed the sandbox or died: nothing of it may remain. We
	 * are pid 1: our exit makes the kernel kill every process of the
	 * sandbox's pid namespace, runs' namespaces included (a kill(-1) of
	 * ours could not: they run as another user). */
	die(0);
}

__attribute__((used)) void nsinit_main(long *sp);

__attribute__((used)) void nsinit_main(long *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1);
	if (argc < 5 || argv[1][0] != 'Z') {
		report(NSINIT_FD_STATUS, NSINIT_REC_SETUP_FAILED, EINVAL,
		       NSINIT_ZYGOTE_STEP + NSINIT_STEP_PAYLOAD);
		die(126);
	}
	zygote(argv);
}

/* The entry point: the kernel leaves argc, argv and envp on the stack. */
#if defined(__x86_64__)
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	xor %rbp, %rbp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call nsinit_main\n"
	"	hlt\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x29, #0\n"
	"	mov x30, #0\n"
	"	mov x0, sp\n"
	"	and x1, x0, #-16\n"
	"	mov sp, x1\n"
	"	bl nsinit_main\n"
	"	brk #0\n");
#else
#error "cordon-nsinit needs an entry point for this architecture"
#endif
