/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-nsinit: pid 1 of a kernel-tier sandbox.
 *
 * The launcher (confine.c) builds the namespaces, mounts, identity and
 * limits, then executes this program from a sealed memfd embedded in
 * libcordon (so no path on the host can be swapped for it). It:
 *  - forks the work, which enforces Landlock and installs the seccomp
 *    filter as its very last steps before execve;
 *  - reaps every process of the namespace (orphans re-parent to pid 1);
 *  - forwards termination signals to the work's process group;
 *  - when the work ends, kills whatever it left behind and exits, and since
 *    it is pid 1 the kernel kills the rest of the namespace with it;
 *  - dies with the host: PR_SET_PDEATHSIG (set by the launcher, kept across
 *    this execve) and EOF on the lifeline pipe both end it.
 * It reports on the status pipe (nsinit-proto.h), never on stdout/stderr,
 * which belong to the work.
 *
 * Built as a static executable: it runs where the host's libraries may not
 * be reachable and must not depend on the sandbox's view of them.
 */
#define _GNU_SOURCE 1
#include "nsinit-proto.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct sock_filter bpf[NSINIT_BPF_MAX_INSNS];

/* Signals passed on to the work; SIGCHLD drives the reaping. */
static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };

static void report(uint32_t kind, int32_t value, int32_t step)
{
	struct nsinit_record r = { NSINIT_MAGIC, kind, value, step };
	ssize_t n;
	do
		n = write(NSINIT_FD_STATUS, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
}

/* The work's side of the fork: the last confinement steps, then execve. */
static void __attribute__((noreturn))
work(const char *path, char **argv, char **envp, bool landlock, bool probe,
     unsigned short insns, const sigset_t *oldmask)
{
	int step = NSINIT_STEP_SETSID;
	/* Its own session: no controlling terminal, and a process group the
	 * init can signal as a whole. */
	if (setsid() < 0)
		goto fail;
	if (landlock) {
		step = NSINIT_STEP_LANDLOCK;
		if (syscall(SYS_landlock_restrict_self, NSINIT_FD_RULESET, 0) < 0)
			goto fail;
		close(NSINIT_FD_RULESET);
	}
	/* Nothing past stdio and the (close-on-exec) status pipe. */
	syscall(SYS_close_range, NSINIT_FD_STATUS + 1, ~0U, 0);
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	/* Last before execve: from here on the filter governs every call. */
	step = NSINIT_STEP_SECCOMP;
	struct sock_fprog prog = { .len = insns, .filter = bpf };
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		goto fail;
	if (probe)
		_exit(0); /* every step held: that is all a probe asks */
	/* A bare name is searched in the work's own PATH, in the sandbox's view. */
	if (strchr(path, '/'))
		execve(path, argv, envp);
	else
		execvpe(path, argv, envp);
	step = NSINIT_STEP_EXEC;
fail:
	report(NSINIT_REC_EXEC_FAILED, errno, step);
	_exit(step == NSINIT_STEP_EXEC ? 127 : 126);
}

static int load_bpf(unsigned short *ret_insns)
{
	struct stat st;
	if (fstat(NSINIT_FD_BPF, &st) < 0)
		return -1;
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) ||
	    (size_t)st.st_size > sizeof(bpf)) {
		errno = EINVAL;
		return -1;
	}
	ssize_t n = pread(NSINIT_FD_BPF, bpf, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	close(NSINIT_FD_BPF);
	*ret_insns = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	return 0;
}

/* Kills everything else in the namespace and reaps it. kill(-1) from pid 1
 * reaches every process of the namespace but the init itself. */
static void sweep(void)
{
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
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
static bool reap(pid_t work_pid, int *status)
{
	bool done = false;
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG | __WALL);
		if (p <= 0)
			return done;
		if (p == work_pid) {
			*status = st;
			done = true;
		}
	}
}

int main(int argc, char **argv, char **envp)
{
	if (argc < 4) {
		report(NSINIT_REC_EXEC_FAILED, EINVAL, NSINIT_STEP_EXEC);
		return 126;
	}
	bool landlock = strchr(argv[1], 'L') != NULL;
	bool probe = strchr(argv[1], 'P') != NULL;
	fcntl(NSINIT_FD_STATUS, F_SETFD, FD_CLOEXEC);
	fcntl(NSINIT_FD_LIFELINE, F_SETFD, FD_CLOEXEC);
	/* Nothing in the sandbox may read or write this process's memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	unsigned short insns = 0;
	if (load_bpf(&insns) < 0) {
		report(NSINIT_REC_EXEC_FAILED, errno, NSINIT_STEP_BPF);
		return 126;
	}

	sigset_t mask, oldmask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&mask, forwarded[i]);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	report(NSINIT_REC_STARTED, 0, 0);
	pid_t pid = fork();
	if (pid == 0)
		work(argv[2], argv + 3, envp, landlock, probe, insns, &oldmask);
	if (pid < 0) {
		report(NSINIT_REC_EXEC_FAILED, errno, NSINIT_STEP_FORK);
		return 126;
	}
	if (landlock)
		close(NSINIT_FD_RULESET);
	if (sfd < 0) {
		/* Without a signalfd, block in waitpid: no forwarding, same reaping. */
		int st;
		pid_t p;
		while ((p = waitpid(-1, &st, __WALL)) != pid)
			if (p < 0 && errno != EINTR)
				return 255;
		sweep();
		report(NSINIT_REC_EXITED, st, 0);
		return exit_code(st);
	}

	int status = 0;
	struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { NSINIT_FD_LIFELINE, POLLIN, 0 } };
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			sweep();
			return 255;
		}
		if (pfd[1].revents) {
			/* The host is gone (EOF or error): nothing may outlive it. */
			sweep();
			return 137;
		}
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo != SIGCHLD)
				kill(-pid, (int)si.ssi_signo);
		}
		if (reap(pid, &status))
			break;
	}
	sweep();
	report(NSINIT_REC_EXITED, status, 0);
	return exit_code(status);
}
