/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The launcher: clone(CLONE_VM|CLONE_VFORK) and a plan of raw-syscall steps. */
#include "config.h"

#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

/* The child's stack lives in the launching frame: our thread sleeps until the
 * child execs (CLONE_VFORK), so nothing else uses it meanwhile. */
#define CHILD_STACK (32u << 10)
/* The kernel's sigset size for rt_sig* calls. */
#define KSIGSET_SIZE 8
/* Highest real-time signal number on Linux. */
#define KSIG_MAX 64

/* 1: CLONE_PIDFD works, -1: it does not, 0: not tried yet. */
static _Atomic int clone_pidfd_ok = 0;
static _Atomic bool pidfd_enabled = true;

/* What the child writes to the report pipe when a step fails. */
typedef struct report {
	int32_t step; /* index in plan->steps, or one of STEP_* below */
	int32_t errnum;
} report;

enum { STEP_SIGMASK = -1, STEP_SECCOMP = -2, STEP_EXECVE = -3 };

/* ---- the child's steps ---------------------------------------------------------- */

/* The kernel's struct sigaction for rt_sigaction (glibc's differs). */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* Every handler back to SIG_DFL: a host handler must never run in a child
 * that shares its memory, and ignored signals must not stay ignored. */
static SPAWN_CHILD int step_signals(const spawn_plan *p, const void *arg)
{
	struct ksigaction dfl = { .handler = SIG_DFL };
	for (int sig = 1; sig <= KSIG_MAX; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		/* Fails only for numbers the kernel does not have: nothing to reset. */
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, KSIGSET_SIZE);
	}
	return 0;
}

/* A new session and process group: no controlling terminal, and the whole
 * group can be killed at once. */
static SPAWN_CHILD int step_session(const spawn_plan *p, const void *arg)
{
	return syscall(SYS_setsid) < 0 ? -errno : 0;
}

/* Dies with the launching thread; if our parent is already gone, stop here. */
static SPAWN_CHILD int step_deathsig(const spawn_plan *p, const void *arg)
{
	if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	return syscall(SYS_getppid) == p->parent_pid ? 0 : -ESRCH;
}

static SPAWN_CHILD int step_cwd(const spawn_plan *p, const void *arg)
{
	if (p->cwd_fd < 0)
		return 0;
	return syscall(SYS_fchdir, p->cwd_fd) < 0 ? -errno : 0;
}

/* 0-2 from the plan; nothing else crosses execve but the report pipe (which
 * is close-on-exec). */
static SPAWN_CHILD int step_stdio(const spawn_plan *p, const void *arg)
{
	for (int i = 0; i < 3; i++)
		if (syscall(SYS_dup2, p->stdio[i], i) < 0)
			return -errno;
	unsigned rfd = (unsigned)p->report_fd;
	if (syscall(SYS_close_range, 3u, rfd - 1, 0u) < 0 ||
	    syscall(SYS_close_range, rfd + 1, ~0u, 0u) < 0) {
		if (errno != ENOSYS)
			return -errno;
		/* Before Linux 5.9: close one by one up to the descriptor limit. */
		struct rlimit rl;
		if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) < 0)
			return -errno;
		unsigned max = rl.rlim_max > (1u << 20) ? (1u << 20) : (unsigned)rl.rlim_max;
		for (unsigned fd = 3; fd < max; fd++)
			if (fd != rfd)
				syscall(SYS_close, fd);
	}
	return 0;
}

static SPAWN_CHILD int step_rlimits(const spawn_plan *p, const void *arg)
{
	for (size_t i = 0; i < p->n_rlimits; i++)
		if (syscall(SYS_prlimit64, 0, p->rlimits[i].resource, &p->rlimits[i].value,
			    NULL) < 0)
			return -errno;
	return 0;
}

static SPAWN_CHILD __attribute__((noreturn)) void child_fail(const spawn_plan *p, int step,
							       int errnum)
{
	report rep = { .step = step, .errnum = errnum };
	/* Nothing more can be done if this write fails: the exit status says 127. */
	syscall(SYS_write, p->report_fd, &rep, sizeof(rep));
	for (;;)
		syscall(SYS_exit_group, 127);
}

static SPAWN_CHILD int child_main(void *arg)
{
	const spawn_plan *p = arg;
	for (size_t i = 0; i < p->n_steps; i++) {
		int r = p->steps[i].fn(p, p->steps[i].arg);
		if (r < 0)
			child_fail(p, (int)i, -r);
	}
	uint64_t none = 0;
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, KSIGSET_SIZE) < 0)
		child_fail(p, STEP_SIGMASK, errno);
	if (p->seccomp &&
	    (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	     syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, p->seccomp) < 0))
		child_fail(p, STEP_SECCOMP, errno);
	syscall(SYS_execve, p->path, p->argv, p->envp);
	child_fail(p, STEP_EXECVE, errno);
}

/* ---- the plan ------------------------------------------------------------------- */

static const spawn_step default_steps[] = {
	{ "signals", step_signals, NULL },
	{ "session", step_session, NULL },
	{ "deathsig", step_deathsig, NULL },
	{ "cwd", step_cwd, NULL },
	{ "stdio", step_stdio, NULL },
	{ "rlimits", step_rlimits, NULL },
};

void spawn_plan_init(spawn_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->stdio[0] = p->stdio[1] = p->stdio[2] = -1;
	p->cwd_fd = -1;
	p->report_fd = -1;
	p->n_steps = sizeof(default_steps) / sizeof(default_steps[0]);
	memcpy(p->steps, default_steps, sizeof(default_steps));
}

int spawn_plan_insert(spawn_plan *p, const char *before, const spawn_step *step)
{
	if (p->n_steps >= SPAWN_MAX_STEPS)
		return -E2BIG;
	size_t at = p->n_steps;
	if (before) {
		for (at = 0; at < p->n_steps && strcmp(p->steps[at].name, before) != 0; at++)
			;
		if (at == p->n_steps)
			return -ENOENT;
	}
	memmove(&p->steps[at + 1], &p->steps[at], (p->n_steps - at) * sizeof(*step));
	p->steps[at] = *step;
	p->n_steps++;
	return 0;
}

int spawn_plan_add_rlimit(spawn_plan *p, int resource, rlim_t value)
{
	if (p->n_rlimits >= SPAWN_MAX_RLIMITS)
		return -E2BIG;
	p->rlimits[p->n_rlimits].resource = resource;
	p->rlimits[p->n_rlimits].value.rlim_cur = value;
	p->rlimits[p->n_rlimits].value.rlim_max = value;
	p->n_rlimits++;
	return 0;
}

/* ---- the parent side ------------------------------------------------------------ */

void spawn_set_pidfd_enabled(bool enabled)
{
	atomic_store(&pidfd_enabled, enabled);
}

int spawn_fd_above_stdio(int *fd)
{
	if (*fd < 0 || *fd > 2)
		return 0;
	int n = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
	if (n < 0)
		return -errno;
	close(*fd);
	*fd = n;
	return 0;
}

static const char *step_name(const spawn_plan *p, int step)
{
	switch (step) {
	case STEP_SIGMASK: return "sigmask";
	case STEP_SECCOMP: return "seccomp";
	case STEP_EXECVE: return "execve";
	}
	return step >= 0 && (size_t)step < p->n_steps ? p->steps[step].name : "unknown";
}

/* clone with every signal blocked in this thread, so that no handler of the
 * host runs in the child before step_signals has reset them. */
static pid_t clone_blocked(spawn_plan *p, unsigned long flags, int *ret_pidfd)
{
	char stack[CHILD_STACK] __attribute__((aligned(16)));
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(child_main, stack + sizeof(stack), (int)(flags | SIGCHLD), p,
			  ret_pidfd);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

static pid_t clone_child(spawn_plan *p, int *ret_pidfd)
{
	unsigned long flags = CLONE_VM | CLONE_VFORK | p->clone_flags;
	*ret_pidfd = -1;
	if (atomic_load(&clone_pidfd_ok) >= 0 && atomic_load(&pidfd_enabled)) {
		pid_t pid = clone_blocked(p, flags | CLONE_PIDFD, ret_pidfd);
		if (pid >= 0 || errno != EINVAL) {
			if (pid >= 0)
				atomic_store(&clone_pidfd_ok, 1);
			return pid;
		}
		atomic_store(&clone_pidfd_ok, -1);
		*ret_pidfd = -1;
	}
	return clone_blocked(p, flags, ret_pidfd);
}

int spawn_start(spawn_plan *p, spawn_child *ret, spawn_failure *ret_fail)
{
	int rp[2];
	if (pipe2(rp, O_CLOEXEC) < 0)
		return -errno;
	int r = spawn_fd_above_stdio(&rp[1]);
	if (r < 0) {
		close(rp[0]);
		close(rp[1]);
		return r;
	}
	p->parent_pid = getpid();
	p->report_fd = rp[1];
	int pidfd = -1;
	pid_t pid = clone_child(p, &pidfd);
	int clone_errno = errno;
	/* Kernels before 5.2 ignore CLONE_PIDFD; pidfd_open (5.3) may still work. */
	if (pid >= 0 && pidfd < 0 && atomic_load(&pidfd_enabled))
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	close(rp[1]);
	p->report_fd = -1;
	if (pid < 0) {
		close(rp[0]);
		return -clone_errno;
	}
	/* The child has exec'd (EOF) or failed (a report) by now: CLONE_VFORK. */
	report rep;
	ssize_t n;
	do
		n = read(rp[0], &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	close(rp[0]);
	if (n == (ssize_t)sizeof(rep)) {
		siginfo_t si;
		while (waitid(P_PID, (id_t)pid, &si, WEXITED | __WALL) < 0 && errno == EINTR)
			;
		if (pidfd >= 0)
			close(pidfd);
		if (ret_fail) {
			ret_fail->step = step_name(p, rep.step);
			ret_fail->errnum = rep.errnum;
		}
		return rep.errnum > 0 ? -rep.errnum : -EIO;
	}
	ret->pid = pid;
	ret->pidfd = pidfd;
	return 0;
}

/* ---- PATH search ------------------------------------------------------------------ */

static const char *env_get(char *const *envp, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], key, kl) == 0 && envp[i][kl] == '=')
			return envp[i] + kl + 1;
	return NULL;
}

static bool is_executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
}

int spawn_find_program(const char *name, char *const *envp, char *buf, size_t size)
{
	size_t nl = strlen(name);
	if (nl == 0)
		return -ENOENT;
	if (strchr(name, '/')) {
		if (nl >= size)
			return -ENAMETOOLONG;
		memcpy(buf, name, nl + 1);
		return 0;
	}
	const char *path = env_get(envp, "PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int r = -ENOENT;
	for (const char *p = path; *p;) {
		const char *end = strchrnul(p, ':');
		size_t dl = (size_t)(end - p);
		/* Relative entries ("", ".") would search the sandbox's cwd: skipped. */
		if (dl > 0 && p[0] == '/') {
			if (dl + 1 + nl + 1 > size) {
				r = -ENAMETOOLONG;
			} else {
				memcpy(buf, p, dl);
				buf[dl] = '/';
				memcpy(buf + dl + 1, name, nl + 1);
				if (is_executable(buf))
					return 0;
				if (errno == EACCES)
					r = -EACCES;
			}
		}
		p = *end ? end + 1 : end;
	}
	return r;
}
