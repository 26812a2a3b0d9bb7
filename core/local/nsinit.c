/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-nsinit: pid 1 of a kernel-tier sandbox.
 *
 * The launcher (confine.c) builds the namespaces, mounts, identity and
 * limits, then executes this program from a sealed memfd embedded in
 * libcordon (so no path on the host can be swapped for it). It:
 *  - forks the work, which enforces Landlock and installs the seccomp
 *    filter as its very last steps before execve (a bare name is searched in
 *    the work's own PATH, in the sandbox's view of the filesystem);
 *  - reaps every process of the namespace (orphans re-parent to pid 1);
 *  - forwards termination signals to the work's process group;
 *  - when the work ends, kills whatever it left behind and exits, and since
 *    it is pid 1 the kernel kills the rest of the namespace with it;
 *  - dies with the host: PR_SET_PDEATHSIG (set by the launcher, kept across
 *    this execve) and EOF on the lifeline pipe both end it.
 * It reports on the status pipe (nsinit-proto.h), never on stdout/stderr,
 * which belong to the work.
 *
 * Freestanding (no libc, raw system calls from rawsys.h, a few KiB): it is
 * executed once per run, and a static libc costs several times its exec.
 * Built with -nostdlib -ffreestanding -fno-stack-protector (no TLS here).
 */
#define _GNU_SOURCE 1
#include "nsinit-proto.h"
#include "rawsys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/stat.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

static struct sock_filter bpf[NSINIT_BPF_MAX_INSNS];
static char pathbuf[4096];

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

/* Signals passed on to the work; SIGCHLD drives the reaping. */
static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };

static void __attribute__((noreturn)) die(int code)
{
	for (;;)
		rsys1(SYS_exit_group, code);
}

static void report(uint32_t kind, long value, int32_t step)
{
	struct nsinit_record r = { NSINIT_MAGIC, kind, (int32_t)value, step };
	while (rsys3(SYS_write, NSINIT_FD_STATUS, &r, sizeof(r)) == -EINTR)
		;
}

static bool has_char(const char *s, char c)
{
	for (; *s; s++)
		if (*s == c)
			return true;
	return false;
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

/* The work's side of the fork: the last confinement steps, then execve. */
static void __attribute__((noreturn))
work(const char *file, char **argv, char **envp, bool landlock, bool probe, unsigned short insns,
     const unsigned long *oldmask)
{
	int step = NSINIT_STEP_SETSID;
	long r = rsys0(SYS_setsid); /* no controlling terminal; a group the init can signal */
	if (r < 0)
		goto fail;
	if (landlock) {
		step = NSINIT_STEP_LANDLOCK;
		r = rsys2(SYS_landlock_restrict_self, NSINIT_FD_RULESET, 0);
		if (r < 0)
			goto fail;
		rsys1(SYS_close, NSINIT_FD_RULESET);
	}
	/* Nothing past stdio and the (close-on-exec) status pipe. */
	rsys3(SYS_close_range, NSINIT_FD_STATUS + 1, ~0U, 0);
	rsys4(SYS_rt_sigprocmask, SIG_SETMASK, oldmask, 0, sizeof(*oldmask));
	/* Last before execve: from here on the filter governs every call. */
	step = NSINIT_STEP_SECCOMP;
	struct sock_fprog prog = { .len = insns, .filter = bpf };
	r = rsys3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	if (r < 0)
		goto fail;
	if (probe)
		die(0); /* every step held: that is all a probe asks */
	step = NSINIT_STEP_EXEC;
	r = exec_work(file, argv, envp);
fail:
	report(NSINIT_REC_EXEC_FAILED, -r, step);
	die(step == NSINIT_STEP_EXEC ? 127 : 126);
}

static long load_bpf(unsigned short *ret_insns)
{
	struct statx stx;
	long r = rsys5(SYS_statx, NSINIT_FD_BPF, "", AT_EMPTY_PATH, STATX_SIZE, &stx);
	if (r < 0)
		return r;
	if (stx.stx_size == 0 || stx.stx_size % sizeof(struct sock_filter) ||
	    stx.stx_size > sizeof(bpf))
		return -EINVAL;
	r = rsys4(SYS_pread64, NSINIT_FD_BPF, bpf, stx.stx_size, 0);
	if (r != (long)stx.stx_size)
		return r < 0 ? r : -EIO;
	rsys1(SYS_close, NSINIT_FD_BPF);
	*ret_insns = (unsigned short)(stx.stx_size / sizeof(struct sock_filter));
	return 0;
}

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
			*status = st;
			done = true;
		}
	}
}

__attribute__((used)) void nsinit_main(long *sp);

__attribute__((used)) void nsinit_main(long *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	if (argc < 4) {
		report(NSINIT_REC_EXEC_FAILED, EINVAL, NSINIT_STEP_EXEC);
		die(126);
	}
	bool landlock = has_char(argv[1], 'L');
	bool probe = has_char(argv[1], 'P');
	rsys3(SYS_fcntl, NSINIT_FD_STATUS, F_SETFD, FD_CLOEXEC);
	rsys3(SYS_fcntl, NSINIT_FD_LIFELINE, F_SETFD, FD_CLOEXEC);
	/* Nothing in the sandbox may read or write this process's memory. */
	rsys2(SYS_prctl, PR_SET_DUMPABLE, 0);

	unsigned short insns = 0;
	long r = load_bpf(&insns);
	if (r < 0) {
		report(NSINIT_REC_EXEC_FAILED, -r, NSINIT_STEP_BPF);
		die(126);
	}

	unsigned long mask = 1ul << (SIGCHLD - 1), oldmask = 0;
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		mask |= 1ul << (forwarded[i] - 1);
	rsys4(SYS_rt_sigprocmask, SIG_BLOCK, &mask, &oldmask, sizeof(mask));
	long sfd = rsys4(SYS_signalfd4, -1, &mask, sizeof(mask), SFD_CLOEXEC | SFD_NONBLOCK);

	report(NSINIT_REC_STARTED, 0, 0);
	long pid = rsys5(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		work(argv[2], argv + 3, envp, landlock, probe, insns, &oldmask);
	if (pid < 0) {
		report(NSINIT_REC_EXEC_FAILED, -pid, NSINIT_STEP_FORK);
		die(126);
	}
	if (landlock)
		rsys1(SYS_close, NSINIT_FD_RULESET);

	int status = 0;
	if (sfd < 0) {
		/* Without a signalfd, block in wait4: no forwarding, same reaping. */
		long p;
		while ((p = rsys4(SYS_wait4, -1, &status, __WALL, 0)) != pid)
			if (p < 0 && p != -EINTR)
				die(255);
	} else {
		struct pollfd pfd[2] = { { (int)sfd, POLLIN, 0 }, { NSINIT_FD_LIFELINE, POLLIN, 0 } };
		for (;;) {
			r = rsys5(SYS_ppoll, pfd, 2, 0, 0, 0);
			if (r == -EINTR)
				continue;
			if (r < 0 || pfd[1].revents) {
				/* The host is gone (EOF) or we cannot watch: nothing may outlive it. */
				sweep();
				die(137);
			}
			struct signalfd_siginfo si;
			while (rsys3(SYS_read, sfd, &si, sizeof(si)) == (long)sizeof(si))
				if (si.ssi_signo != SIGCHLD)
					rsys2(SYS_kill, -pid, si.ssi_signo);
			if (reap(pid, &status))
				break;
		}
	}
	sweep();
	report(NSINIT_REC_EXITED, status, 0);
	die(exit_code(status));
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
