/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The launcher: clone(CLONE_VM|CLONE_VFORK) and a plan of raw-syscall steps. */
#include "config.h"

#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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
/* A signal's bit in a kernel sigset. */
#define KSIG_BIT(sig) (1ull << ((sig)-1))
/* How often a supervisor killing its tree looks again for orphans. */
#define TREE_TICK_NS (10L * 1000 * 1000)

/* 1: CLONE_PIDFD works, -1: it does not, 0: not tried yet. */
static _Atomic int clone_pidfd_ok = 0;
static _Atomic bool pidfd_enabled = true;

/* What the child writes to the report pipe when a step fails. */
typedef struct report {
	int32_t step; /* index in plan->steps, or one of STEP_* below */
	int32_t errnum;
} report;

enum {
	STEP_SIGMASK = -1,
	STEP_SECCOMP = -2,
	STEP_EXECVE = -3,
	STEP_SUPERVISE = -4,
	STEP_DEADLINE = -5 /* ours, not the child's: it did not exec in time */
};

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

/* Dies with the launching thread; if our parent is already gone, stop here.
 * A supervisor is sent SIGTERM instead, which it waits for: it must outlive
 * us long enough to kill the work's tree. */
static SPAWN_CHILD int step_deathsig(const spawn_plan *p, const void *arg)
{
	int sig = p->supervise ? SIGTERM : SIGKILL;
	if (syscall(SYS_prctl, PR_SET_PDEATHSIG, sig, 0, 0, 0) < 0)
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
	if (p->extra_fd >= 0 && syscall(SYS_dup2, p->extra_fd, SPAWN_EXTRA_FD) < 0)
		return -errno;
	if (p->extra_fd2 >= 0 && syscall(SYS_dup2, p->extra_fd2, SPAWN_EXTRA_FD + 1) < 0)
		return -errno;
	/* spawn_start put the report pipe above the extra ones */
	unsigned first = p->extra_fd2 >= 0  ? SPAWN_EXTRA_FD + 2
			 : p->extra_fd >= 0 ? SPAWN_EXTRA_FD + 1
					    : 3u;
	if (p->extra_fd2 >= 0 && p->extra_fd < 0)
		syscall(SYS_close, SPAWN_EXTRA_FD);
	unsigned rfd = (unsigned)p->report_fd;
	if (syscall(SYS_close_range, first, rfd - 1, 0u) < 0 ||
	    syscall(SYS_close_range, rfd + 1, ~0u, 0u) < 0) {
		if (errno != ENOSYS)
			return -errno;
		/* Before Linux 5.9: close one by one up to the descriptor limit. */
		struct rlimit rl;
		if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) < 0)
			return -errno;
		unsigned max = rl.rlim_max > (1u << 20) ? (1u << 20) : (unsigned)rl.rlim_max;
		for (unsigned fd = first; fd < max; fd++)
			if (fd != rfd)
				syscall(SYS_close, fd);
	}
	return 0;
}

static SPAWN_CHILD int step_rlimits(const spawn_plan *p, const void *arg)
{
	for (size_t i = 0; i < p->n_rlimits; i++)
		if (syscall(SYS_prlimit64, 0, p->rlimits[i].resource, &p->rlimits[i].value, NULL) <
		    0)
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

/* ---- the supervisor (plan->supervise) --------------------------------------------- */

/* SIGKILLs each of our children, as /proc lists them (we are single-
 * threaded: thread-self's children are all of ours). Returns how many were
 * listed, or a negative errno when /proc cannot tell. */
static SPAWN_CHILD long kill_children(void)
{
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[512];
	long n, listed = 0, pid = 0;
	while ((n = syscall(SYS_read, fd, buf, sizeof(buf))) > 0) {
		for (long i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				pid = pid * 10 + (buf[i] - '0');
				continue;
			}
			if (pid > 0 && syscall(SYS_kill, pid, SIGKILL) == 0)
				listed++;
			pid = 0;
		}
	}
	if (pid > 0 && syscall(SYS_kill, pid, SIGKILL) == 0)
		listed++;
	syscall(SYS_close, fd);
	return listed;
}

/* Reaps one child (flags: WNOHANG or 0); keeps the work's status. */
static SPAWN_CHILD long reap_one(pid_t work, int *status, bool *have, int flags)
{
	int st = 0;
	long pid = syscall(SYS_wait4, -1, &st, flags | __WALL, NULL);
	if (pid == work) {
		*status = st;
		*have = true;
	}
	return pid;
}

/* Kills every descendant. Each orphan of the tree is re-parented to us (the
 * subreaper) before its dead parent can be reaped, so killing our children
 * and reaping them until none is left reaches every process the work
 * started, whatever session or group it moved to. Without /proc, only the
 * work's own process group can be reached. */
static SPAWN_CHILD void kill_tree(pid_t work, int *status, bool *have)
{
	const uint64_t chld = KSIG_BIT(SIGCHLD);
	const struct timespec tick = { 0, TREE_TICK_NS };
	for (;;) {
		long listed = kill_children();
		if (listed < 0) {
			syscall(SYS_kill, -work, SIGKILL);
			syscall(SYS_kill, work, SIGKILL);
		}
		long pid;
		while ((pid = reap_one(work, status, have, WNOHANG)) > 0)
			;
		if ((pid < 0 && errno == ECHILD) || (listed < 0 && *have))
			return;
		syscall(SYS_rt_sigtimedwait, &chld, NULL, &tick, KSIGSET_SIZE);
	}
}

static SPAWN_CHILD int64_t monotonic_ns(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Forwards a stop to the work (SIGTERM to its process group, where a shell keeps its jobs)
 * and reaps until every child is gone or the grace is over; kill_tree does the rest. */
static SPAWN_CHILD void forward_stop(pid_t work, int *status, bool *have)
{
	const uint64_t chld = KSIG_BIT(SIGCHLD);
	const struct timespec tick = { 0, TREE_TICK_NS };
	syscall(SYS_kill, -work, SIGTERM);
	syscall(SYS_kill, work, SIGTERM);
	int64_t until = monotonic_ns() + (int64_t)SPAWN_FORWARD_GRACE_MS * 1000000;
	while (monotonic_ns() < until) {
		long pid;
		while ((pid = reap_one(work, status, have, WNOHANG)) > 0)
			;
		if (pid < 0 && errno == ECHILD)
			return;
		syscall(SYS_rt_sigtimedwait, &chld, NULL, &tick, KSIGSET_SIZE);
	}
}

/* Exits as the work did: with its code, or dying of its signal. */
static SPAWN_CHILD __attribute__((noreturn)) void exit_as(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		uint64_t bit = KSIG_BIT(sig);
		struct ksigaction dfl = { .handler = SIG_DFL };
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, KSIGSET_SIZE);
		syscall(SYS_kill, syscall(SYS_getpid), sig);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &bit, NULL, KSIGSET_SIZE);
	}
	for (;;)
		syscall(SYS_exit_group,
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* Every signal stays blocked here: the ones that matter are taken with
 * sigtimedwait, the rest cannot stop us before the tree is killed. */
static SPAWN_CHILD __attribute__((noreturn)) void supervise(const spawn_plan *p, pid_t work)
{
	/* The work's copies alone: its exec (EOF on the report pipe) tells the
	 * launcher it started, and its tree's end is the output's EOF. */
	syscall(SYS_close, p->report_fd);
	for (int fd = 0; fd < 3; fd++)
		syscall(SYS_close, fd);
	const uint64_t wake = KSIG_BIT(SIGCHLD) | KSIG_BIT(SIGTERM) | KSIG_BIT(SIGINT) |
			      KSIG_BIT(SIGHUP);
	int status = 0;
	bool have = false;
	long sig = 0;
	while (!have) {
		sig = syscall(SYS_rt_sigtimedwait, &wake, NULL, NULL, KSIGSET_SIZE);
		if (sig == SIGCHLD)
			while (reap_one(work, &status, &have, WNOHANG) > 0)
				;
		else if (sig > 0)
			break; /* told to stop, or our parent died */
	}
	/* SIGINT: a cancel (spawn_stop's forward, or ^C at the terminal), which the work hears
	 * first; SIGTERM (a timeout, or our parent's death) and SIGHUP kill at once. */
	if (!have && sig == SIGINT)
		forward_stop(work, &status, &have);
	kill_tree(work, &status, &have);
	exit_as(have ? status : SIGKILL);
}

/* Becomes the supervisor and forks the work; returns in the work only, which
 * takes a session of its own and dies with us. */
static SPAWN_CHILD void fork_work(const spawn_plan *p)
{
	long self = syscall(SYS_getpid);
	if (syscall(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		child_fail(p, STEP_SUPERVISE, errno);
	long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		child_fail(p, STEP_SUPERVISE, errno);
	if (pid > 0)
		supervise(p, (pid_t)pid);
	if (syscall(SYS_setsid) < 0 || syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(p, STEP_SUPERVISE, errno);
	/* A terminal run: the new session's controlling terminal, so that its line discipline
	 * signals the work (^C, ^Z) and a shell has job control. */
	if (p->ctty && syscall(SYS_ioctl, 0, TIOCSCTTY, 0) < 0)
		child_fail(p, STEP_SUPERVISE, errno);
	if (syscall(SYS_getppid) != self)
		child_fail(p, STEP_SUPERVISE, ESRCH);
}

static SPAWN_CHILD int child_main(void *arg)
{
	const spawn_plan *p = arg;
	for (size_t i = 0; i < p->n_steps; i++) {
		int r = p->steps[i].fn(p, p->steps[i].arg);
		if (r < 0)
			child_fail(p, (int)i, -r);
	}
	if (p->supervise)
		fork_work(p);
	uint64_t none = 0;
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, KSIGSET_SIZE) < 0)
		child_fail(p, STEP_SIGMASK, errno);
	if (p->seccomp && (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
			   syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, p->seccomp) < 0))
		child_fail(p, STEP_SECCOMP, errno);
	syscall(SYS_execve, p->path, p->argv, p->envp);
	child_fail(p, STEP_EXECVE, errno);
}

/* ---- the plan ------------------------------------------------------------------- */

static const spawn_step default_steps[] = {
	{ "signals", step_signals, NULL },   { "session", step_session, NULL },
	{ "deathsig", step_deathsig, NULL }, { "cwd", step_cwd, NULL },
	{ "stdio", step_stdio, NULL },       { "rlimits", step_rlimits, NULL },
};

void spawn_plan_init(spawn_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->stdio[0] = p->stdio[1] = p->stdio[2] = -1;
	p->extra_fd = -1;
	p->extra_fd2 = -1;
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

void spawn_set_pidfd_enabled(bool enabled) { atomic_store(&pidfd_enabled, enabled); }

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
	case STEP_SUPERVISE: return "supervise";
	case STEP_DEADLINE: return "deadline";
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
	pid_t pid = clone(child_main, stack + sizeof(stack), (int)(flags | SIGCHLD), p, ret_pidfd);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

static pid_t clone_child(spawn_plan *p, int *ret_pidfd)
{
	/* A supervisor outlives the launch, and a launch with a deadline must not suspend us
	 * (CLONE_VFORK): both need memory of their own. */
	bool own_memory = p->supervise || p->exec_deadline_ms > 0;
	unsigned long flags = (own_memory ? 0 : CLONE_VM | CLONE_VFORK) | p->clone_flags;
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

/* The child's report, or 0 at EOF (it exec'd); -ETIMEDOUT when deadline_ms (> 0) passed
 * first, another negative errno when waiting failed. */
static ssize_t read_report(int fd, int deadline_ms, report *rep)
{
	if (deadline_ms > 0) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t end = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + deadline_ms;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r;
		for (;;) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			int64_t left = end - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
			r = left > 0 ? poll(&pfd, 1, (int)left) : 0;
			if (r >= 0 || errno != EINTR)
				break;
		}
		if (r <= 0)
			return r == 0 ? -ETIMEDOUT : -errno;
	}
	ssize_t n;
	do
		n = read(fd, rep, sizeof(*rep));
	while (n < 0 && errno == EINTR);
	return n;
}

int spawn_begin(spawn_plan *p, spawn_child *ret, int *ret_report)
{
	*ret = (spawn_child){ .pid = -1, .pidfd = -1 };
	*ret_report = -1;
	int rp[2];
	if (pipe2(rp, O_CLOEXEC) < 0)
		return -errno;
	int r = spawn_fd_above_stdio(&rp[1]);
	int above = p->extra_fd2 >= 0 ? SPAWN_EXTRA_FD + 1 : SPAWN_EXTRA_FD;
	if (r >= 0 && (p->extra_fd >= 0 || p->extra_fd2 >= 0) && rp[1] <= above) {
		int n = fcntl(rp[1], F_DUPFD_CLOEXEC, above + 1);
		r = n < 0 ? -errno : 0;
		if (n >= 0) {
			close(rp[1]);
			rp[1] = n;
		}
	}
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
	*ret = (spawn_child){ .pid = pid, .pidfd = pidfd, .supervised = p->supervise };
	*ret_report = rp[0];
	return 0;
}

int spawn_end(const spawn_plan *p, spawn_child *c, int report_fd, spawn_failure *ret_fail)
{
	/* EOF once the work has exec'd, or a report: at once with CLONE_VFORK, and
	 * a supervisor closes its copy of the pipe after forking the work. */
	report rep = { 0 };
	ssize_t n = read_report(report_fd, p->exec_deadline_ms, &rep);
	close(report_fd);
	if (n < 0 && p->exec_deadline_ms > 0) {
		/* stopped or stuck before its exec (or no way to wait for it): killed, reaped,
		 * reported as ours. By its pidfd only where it has one: the pid may be another
		 * process's if a host that reaps for itself took it. */
		if (c->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
		else
			kill(c->pid, SIGKILL);
		rep = (report){ .step = STEP_DEADLINE, .errnum = (int32_t)-n };
		n = sizeof(rep);
	}
	if (n != (ssize_t)sizeof(rep))
		return 0;
	siginfo_t si;
	while (waitid(P_PID, (id_t)c->pid, &si, WEXITED | __WALL) < 0 && errno == EINTR)
		;
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	if (ret_fail) {
		ret_fail->step = step_name(p, rep.step);
		ret_fail->errnum = rep.errnum;
	}
	return rep.errnum > 0 ? -rep.errnum : -EIO;
}

int spawn_start(spawn_plan *p, spawn_child *ret, spawn_failure *ret_fail)
{
	spawn_child c;
	int report_fd;
	int r = spawn_begin(p, &c, &report_fd);
	if (r < 0)
		return r;
	r = spawn_end(p, &c, report_fd, ret_fail);
	if (r == 0)
		*ret = c;
	return r;
}

/* Waits up to ms for the child's exit, without reaping it. */
static void wait_exit(const spawn_child *c, int ms)
{
	if (c->pidfd >= 0) {
		struct pollfd pfd = { .fd = c->pidfd, .events = POLLIN };
		while (poll(&pfd, 1, ms) < 0 && errno == EINTR)
			;
		return;
	}
	const struct timespec tick = { 0, 10L * 1000 * 1000 };
	for (int waited = 0; waited < ms; waited += 10) {
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 ||
		    si.si_pid == c->pid)
			return;
		nanosleep(&tick, NULL);
	}
}

void spawn_stop(const spawn_child *c, int grace_ms, bool forward)
{
	if (c->supervised && kill(c->pid, forward ? SIGINT : SIGTERM) == 0)
		wait_exit(c, grace_ms + (forward ? SPAWN_FORWARD_GRACE_MS : 0));
	kill(-c->pid, SIGKILL);
	/* The leader too, by pid, should the group kill ever fail: its reaper
	 * must not wait for a live process. */
	kill(c->pid, SIGKILL);
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
