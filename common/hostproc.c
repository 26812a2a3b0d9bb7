/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host program spawner (hostproc.h): posix_spawn (vfork-like, safe from any thread), a
 * pidfd for the exit, a process group for the kill, and for hostproc_run a poll() pump of
 * stdin and both captures.
 */
#include "config.h"

#include "hostproc.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Our copies of the program's descriptors sit at or above this, so that no dup2 onto 0-3 can
 * clobber another source (a host may run with 0-2 closed) and every dup2 clears
 * close-on-exec (a dup2 of a descriptor onto itself would not). */
#define FIRST_HIGH_FD (HOSTPROC_EXTRA_FD + 1)

/* Without a pidfd the exit is noticed by polling this often. */
#define NO_PIDFD_POLL_MS 10

int64_t hostproc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int dup_high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, FIRST_HIGH_FD);
	return h >= 0 ? h : -errno;
}

static int pipe_high(int p[2])
{
	int raw[2];
	if (pipe2(raw, O_CLOEXEC) < 0)
		return -errno;
	p[0] = dup_high(raw[0]);
	p[1] = dup_high(raw[1]);
	close(raw[0]);
	close(raw[1]);
	if (p[0] >= 0 && p[1] >= 0)
		return 0;
	int e = p[0] < 0 ? p[0] : p[1];
	close_fd(&p[0]);
	close_fd(&p[1]);
	return e;
}

static void set_nonblock(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* The program's sources for 0-3 (src[i], ours, all high) and our ends of its pipes. */
typedef struct child_fds {
	int src[4];
	int ours[3];
} child_fds;

static void child_fds_close(child_fds *c)
{
	for (int i = 0; i < 4; i++)
		close_fd(&c->src[i]);
	for (int i = 0; i < 3; i++)
		close_fd(&c->ours[i]);
}

static int child_fds_make(const hostproc_spec *s, child_fds *c)
{
	*c = (child_fds){ .src = { -1, -1, -1, -1 }, .ours = { -1, -1, -1 } };
	for (int i = 0; i < 3; i++) {
		int r = 0;
		if (s->fd[i] == HOSTPROC_PIPE) {
			int p[2] = { -1, -1 };
			r = pipe_high(p);
			if (r == 0) {
				c->src[i] = i == 0 ? p[0] : p[1];
				c->ours[i] = i == 0 ? p[1] : p[0];
			}
		} else if (s->fd[i] >= 0) {
			r = c->src[i] = dup_high(s->fd[i]);
		} else if (s->fd[i] != HOSTPROC_DEVNULL) {
			r = -EBADF;
		}
		if (r < 0) {
			child_fds_close(c);
			return r;
		}
	}
	if (s->extra_fd >= 0 && (c->src[3] = dup_high(s->extra_fd)) < 0) {
		int r = c->src[3];
		child_fds_close(c);
		return r;
	}
	return 0;
}

static int spawn(const hostproc_spec *s, const child_fds *c, pid_t *ret_pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	for (int i = 0; i < 3; i++) {
		if (c->src[i] >= 0)
			posix_spawn_file_actions_adddup2(&fa, c->src[i], i);
		else
			posix_spawn_file_actions_addopen(&fa, i, "/dev/null",
							 i ? O_WRONLY : O_RDONLY, 0);
	}
	if (c->src[3] >= 0)
		posix_spawn_file_actions_adddup2(&fa, c->src[3], HOSTPROC_EXTRA_FD);
	posix_spawn_file_actions_addclosefrom_np(&fa, c->src[3] >= 0 ? HOSTPROC_EXTRA_FD + 1 : 3);
	posix_spawn_file_actions_addchdir_np(&fa, "/");
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	int r = posix_spawn(ret_pid, s->path, &fa, &at, (char *const *)s->argv,
			    (char *const *)s->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return -r;
}

int hostproc_start(const hostproc_spec *s, hostproc *ret)
{
	if (!s || !s->path || s->path[0] != '/' || !s->argv || !s->argv[0] || !s->envp)
		return -EINVAL;
	child_fds c;
	int r = child_fds_make(s, &c);
	if (r < 0)
		return r;
	pid_t pid;
	r = spawn(s, &c, &pid);
	for (int i = 0; i < 4; i++)
		close_fd(&c.src[i]);
	if (r < 0) {
		child_fds_close(&c);
		return r;
	}
	*ret = (hostproc){ .pid = pid, .in = c.ours[0], .out = c.ours[1], .err = c.ours[2] };
	set_nonblock(ret->in);
	set_nonblock(ret->out);
	set_nonblock(ret->err);
	ret->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

bool hostproc_exited(const hostproc *p)
{
	if (p->pid <= 0)
		return true;
	siginfo_t si = { 0 };
	return waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == p->pid;
}

static int clamp_ms(int64_t ms) { return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms; }

bool hostproc_wait_exit(const hostproc *p, int64_t timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : hostproc_now_ms() + timeout_ms;
	while (!hostproc_exited(p)) {
		int64_t left = deadline < 0 ? INT_MAX : deadline - hostproc_now_ms();
		if (left <= 0)
			return false;
		if (p->pidfd < 0 && left > NO_PIDFD_POLL_MS)
			left = NO_PIDFD_POLL_MS;
		struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
		poll(&pfd, p->pidfd >= 0 ? 1 : 0, clamp_ms(left)); /* EINTR: loop */
	}
	return true;
}

static int reap(pid_t pid)
{
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

int hostproc_wait(hostproc *p, int64_t timeout_ms, bool kill_group, int *ret_status)
{
	if (p->pid <= 0)
		return -ECHILD;
	if (!hostproc_wait_exit(p, timeout_ms))
		return -ETIMEDOUT;
	/* The leader is a zombie, not reaped: its pid is still the group's id. */
	if (kill_group)
		kill(-p->pid, SIGKILL);
	int status = reap(p->pid);
	p->pid = 0;
	close_fd(&p->pidfd);
	if (ret_status)
		*ret_status = status;
	return 0;
}

void hostproc_kill(hostproc *p)
{
	if (p->pid > 0)
		kill(-p->pid, SIGKILL);
}

ssize_t hostproc_write(hostproc *p, const void *buf, size_t len)
{
	return write_nosigpipe(p->in, buf, len);
}

void hostproc_close_in(hostproc *p) { close_fd(&p->in); }

void hostproc_close(hostproc *p)
{
	if (p->pid > 0) {
		hostproc_kill(p);
		hostproc_wait(p, -1, false, NULL);
	}
	close_fd(&p->pidfd);
	close_fd(&p->in);
	close_fd(&p->out);
	close_fd(&p->err);
}

/* ---- to completion, captured ------------------------------------------------------- */

typedef struct capture {
	char *data;
	size_t len, size;
	uint64_t cap;
} capture;

typedef struct pump {
	hostproc *p;
	const uint8_t *in_data;
	size_t in_left;
	capture out, err;
	bool exited;
	bool failed; /* out of memory */
} pump;

static void capture_add(pump *s, capture *c, const char *data, size_t n)
{
	/* Past the cap the program still runs; its output is read and dropped. */
	if (c->len >= c->cap)
		return;
	if (n > c->cap - c->len)
		n = (size_t)(c->cap - c->len);
	if (c->len + n + 1 > c->size) {
		size_t want = c->size ? c->size * 2 : 4096;
		while (want < c->len + n + 1)
			want *= 2;
		char *d = realloc(c->data, want);
		if (!d) {
			s->failed = true;
			return;
		}
		c->data = d;
		c->size = want;
	}
	memcpy(c->data + c->len, data, n);
	c->len += n;
	c->data[c->len] = '\0';
}

static void read_capture(pump *s, int *fd, capture *c)
{
	char chunk[65536];
	ssize_t n = read(*fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0)
		close_fd(fd);
	else
		capture_add(s, c, chunk, (size_t)n);
}

/* Some stdin: a program that stops reading ends its stdin, not the host (nosigpipe.h). */
static void write_stdin(pump *s)
{
	ssize_t n = hostproc_write(s->p, s->in_data, s->in_left < 65536 ? s->in_left : 65536);
	int e = errno;
	if (n > 0) {
		s->in_data += n;
		s->in_left -= (size_t)n;
	}
	if ((n < 0 && e != EAGAIN && e != EINTR) || s->in_left == 0)
		hostproc_close_in(s->p); /* EOF for the program, or it stopped reading */
}

/* One poll round, at most until deadline (monotonic ms). */
static void pump_once(pump *s, int64_t deadline)
{
	hostproc *p = s->p;
	struct pollfd pf[4];
	int n = 0, i_out = -1, i_err = -1, i_in = -1, i_pid = -1;
	if (p->out >= 0)
		pf[i_out = n++] = (struct pollfd){ .fd = p->out, .events = POLLIN };
	if (p->err >= 0)
		pf[i_err = n++] = (struct pollfd){ .fd = p->err, .events = POLLIN };
	if (p->in >= 0 && !s->exited)
		pf[i_in = n++] = (struct pollfd){ .fd = p->in, .events = POLLOUT };
	if (p->pidfd >= 0 && !s->exited)
		pf[i_pid = n++] = (struct pollfd){ .fd = p->pidfd, .events = POLLIN };
	int64_t left = deadline - hostproc_now_ms();
	if (p->pidfd < 0 && !s->exited && left > NO_PIDFD_POLL_MS)
		left = NO_PIDFD_POLL_MS;
	if (poll(pf, (nfds_t)n, clamp_ms(left)) < 0)
		return; /* EINTR: the caller loops */
	if (i_out >= 0 && pf[i_out].revents)
		read_capture(s, &p->out, &s->out);
	if (i_err >= 0 && pf[i_err].revents)
		read_capture(s, &p->err, &s->err);
	if (i_in >= 0 && pf[i_in].revents)
		write_stdin(s);
	if (!s->exited && (i_pid >= 0 ? pf[i_pid].revents != 0 : hostproc_exited(p)))
		s->exited = true;
}

/* Returns whether it timed out (and its group was killed). */
static bool pump_to_end(pump *s, uint64_t timeout_ms)
{
	int64_t deadline = hostproc_now_ms() +
			   (int64_t)(timeout_ms > INT_MAX ? INT_MAX : timeout_ms);
	while (!s->exited && hostproc_now_ms() < deadline)
		pump_once(s, deadline);
	bool timed_out = !s->exited;
	if (timed_out)
		hostproc_kill(s->p);
	hostproc_close_in(s->p);
	int64_t drain = hostproc_now_ms() + HOSTPROC_DRAIN_GRACE_MS;
	s->exited = true;
	while ((s->p->out >= 0 || s->p->err >= 0) && hostproc_now_ms() < drain)
		pump_once(s, drain);
	return timed_out;
}

/* A capture as a NUL-terminated string even when nothing came. */
static char *capture_steal(pump *s, capture *c, size_t *ret_len)
{
	if (!c->data && !(c->data = calloc(1, 1)))
		s->failed = true;
	*ret_len = c->len;
	char *d = c->data;
	c->data = NULL;
	return d;
}

int hostproc_run(const char *path, const char *const *argv, const char *const *envp,
		 const void *stdin_data, size_t stdin_len, uint64_t timeout_ms, uint64_t output_cap,
		 hostproc_result *ret)
{
	hostproc_spec spec = {
		.path = path,
		.argv = argv,
		.envp = envp,
		.extra_fd = -1,
		.fd = { stdin_len ? HOSTPROC_PIPE : HOSTPROC_DEVNULL, HOSTPROC_PIPE,
			HOSTPROC_PIPE },
	};
	hostproc p;
	int r = hostproc_start(&spec, &p);
	if (r < 0)
		return r;
	pump s = { .p = &p,
		   .in_data = stdin_data,
		   .in_left = stdin_len,
		   .out = { .cap = output_cap },
		   .err = { .cap = output_cap } };
	bool timed_out = pump_to_end(&s, timeout_ms);
	int code = -1;
	hostproc_wait(&p, -1, false, &code);
	hostproc_close(&p);
	hostproc_result res = { .exit_code = timed_out ? -1 : code, .timed_out = timed_out };
	res.out = capture_steal(&s, &s.out, &res.out_len);
	res.err = capture_steal(&s, &s.err, &res.err_len);
	if (s.failed) {
		free(res.out);
		free(res.err);
		return -ENOMEM;
	}
	*ret = res;
	return 0;
}
