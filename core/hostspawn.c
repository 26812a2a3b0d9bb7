/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host->spawn: a host program run to completion for a plugin.
 *
 * posix_spawn (vfork-like, safe from any thread) with: a new session (so the
 * program has no controlling terminal and its process group can be killed
 * as one), default signal dispositions and an empty mask, descriptors 0-2
 * only (closefrom), cwd "/", the minimal environment unless the plugin gives
 * one. The parent pumps stdin and both captures through poll() and learns of
 * the leader's exit through a pidfd without reaping it, so that its pid, the
 * group's id, cannot be reused while we may still signal it.
 *
 * On timeout the whole process group is killed. A program that exits by
 * itself may leave helpers behind on purpose (podman's conmon is one), so
 * its group is not killed then; captures are drained for at most
 * DRAIN_GRACE_MS after the leader exits, so that a leftover holding the
 * pipes cannot hold the call.
 */
#include "config.h"

#include "hostspawn.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long captures are still drained after the leader exited or the group
 * was killed: a leftover (or a process that escaped the group) holding the
 * pipes must not hold the call. */
#define DRAIN_GRACE_MS 1000

static bool is_executable_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *hostspawn_find_program(const char *name)
{
	if (!name || !*name)
		return NULL;
	if (strchr(name, '/'))
		return name[0] == '/' && is_executable_file(name) ? g_strdup(name) : NULL;
	g_auto(GStrv) dirs = g_strsplit(HOSTSPAWN_PATH, ":", -1);
	for (size_t i = 0; dirs[i]; i++) {
		g_autofree char *p = g_build_filename(dirs[i], name, NULL);
		if (is_executable_file(p))
			return g_steal_pointer(&p);
	}
	return NULL;
}

/* ---- one run ----------------------------------------------------------------- */

typedef struct spawn_run {
	pid_t pid;
	int pidfd;        /* -1: poll the leader with waitid(WNOWAIT) */
	int in_fd, out_fd, err_fd;
	const uint8_t *in_data;
	size_t in_left;
	GString *out, *err;
	uint64_t cap;
	bool exited;      /* the leader exited (not yet reaped) */
	bool timed_out;
} spawn_run;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A pipe whose ends are above 2, so that the child's dup2 onto 0-2 can never
 * clobber one of its own sources (a host may run with 0-2 closed). */
static int pipe_above_stdio(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		if (p[i] > 2)
			continue;
		int fd = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			int e = errno;
			close(p[0]);
			close(p[1]);
			return -e;
		}
		close(p[i]);
		p[i] = fd;
	}
	return 0;
}

static int spawn_child(spawn_run *s, const char *path, const char *const *argv,
		       const char *const *envp)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int r = pipe_above_stdio(out);
	if (r == 0)
		r = pipe_above_stdio(err);
	if (r == 0 && s->in_left)
		r = pipe_above_stdio(in);
	if (r < 0)
		goto fail;

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	if (in[0] >= 0)
		posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	else
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawn_file_actions_addchdir_np(&fa, "/");
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	r = -posix_spawn(&s->pid, path, &fa, &at, (char *const *)argv, (char *const *)envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (r < 0)
		goto fail;

	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	s->in_fd = in[1];
	s->out_fd = out[0];
	s->err_fd = err[0];
	for (int fd = 0; fd < 3; fd++) {
		int f = fd == 0 ? s->in_fd : fd == 1 ? s->out_fd : s->err_fd;
		if (f >= 0)
			fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_NONBLOCK);
	}
	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		close_fd(&in[i]);
		close_fd(&out[i]);
		close_fd(&err[i]);
	}
	return r;
}

static void read_capture(int *fd, GString *buf, uint64_t cap)
{
	char chunk[65536];
	ssize_t n = read(*fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_fd(fd);
		return;
	}
	/* Past the cap the program still runs; its output is read and dropped. */
	if (buf->len < cap)
		g_string_append_len(buf, chunk, (gssize)MIN((uint64_t)n, cap - buf->len));
}

/* Writes some stdin: a program that stops reading must not kill the host
 * with SIGPIPE (nosigpipe.h). */
static void write_stdin(spawn_run *s)
{
	ssize_t n = write_nosigpipe(s->in_fd, s->in_data, MIN(s->in_left, (size_t)65536));
	int e = errno;
	if (n > 0) {
		s->in_data += n;
		s->in_left -= (size_t)n;
	}
	if ((n < 0 && e != EAGAIN && e != EINTR) || s->in_left == 0)
		close_fd(&s->in_fd); /* EOF for the program, or it stopped reading */
}

static bool leader_exited(const spawn_run *s)
{
	siginfo_t si = { 0 };
	return waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == s->pid;
}

/* One poll round, at most until deadline (monotonic ms). */
static void pump_once(spawn_run *s, gint64 deadline_ms)
{
	struct pollfd p[4];
	int n = 0, i_out = -1, i_err = -1, i_in = -1, i_pid = -1;
	if (s->out_fd >= 0)
		p[i_out = n++] = (struct pollfd){ .fd = s->out_fd, .events = POLLIN };
	if (s->err_fd >= 0)
		p[i_err = n++] = (struct pollfd){ .fd = s->err_fd, .events = POLLIN };
	if (s->in_fd >= 0 && !s->exited)
		p[i_in = n++] = (struct pollfd){ .fd = s->in_fd, .events = POLLOUT };
	if (s->pidfd >= 0 && !s->exited)
		p[i_pid = n++] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
	gint64 left = deadline_ms - g_get_monotonic_time() / 1000;
	/* Without a pidfd the leader's exit is noticed by polling every 10 ms. */
	if (s->pidfd < 0 && !s->exited)
		left = MIN(left, 10);
	if (poll(p, (nfds_t)n, (int)CLAMP(left, 0, G_MAXINT)) < 0)
		return; /* EINTR: the caller loops */
	if (i_out >= 0 && p[i_out].revents)
		read_capture(&s->out_fd, s->out, s->cap);
	if (i_err >= 0 && p[i_err].revents)
		read_capture(&s->err_fd, s->err, s->cap);
	if (i_in >= 0 && p[i_in].revents)
		write_stdin(s);
	if (!s->exited && (i_pid >= 0 ? p[i_pid].revents != 0 : leader_exited(s)))
		s->exited = true;
}

static void run_to_end(spawn_run *s, uint64_t timeout_ms)
{
	gint64 deadline = g_get_monotonic_time() / 1000 + (gint64)MIN(timeout_ms, (uint64_t)G_MAXINT32);
	while (!s->exited && g_get_monotonic_time() / 1000 < deadline)
		pump_once(s, deadline);
	/* The leader is running or a zombie, never reaped yet: its pid is still
	 * the group's id, so this cannot hit an unrelated process. */
	if (!s->exited) {
		s->timed_out = true;
		kill(-s->pid, SIGKILL);
	}
	close_fd(&s->in_fd);
	gint64 drain = g_get_monotonic_time() / 1000 + DRAIN_GRACE_MS;
	s->exited = true;
	while ((s->out_fd >= 0 || s->err_fd >= 0) && g_get_monotonic_time() / 1000 < drain)
		pump_once(s, drain);
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);
	close_fd(&s->pidfd);
}

static int32_t reap(pid_t pid)
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

int hostspawn_run(cordon_host_spawn *spec, cordon_plugin_error *err)
{
	cordon_error **reterr = err ? &err->err : NULL;
	if (!spec || spec->size < sizeof(cordon_host_spawn))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, "invalid_argument",
				 "spawn: spec is missing or smaller than the ABI's");
	spec->out = spec->err = NULL;
	spec->exit_code = -1;
	spec->timed_out = 0;
	if (!spec->argv || !spec->argv[0] || !*spec->argv[0])
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, "invalid_argument",
				 "spawn: argv[0] is required");
	if (spec->stdin_len && !spec->stdin_data)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, "invalid_argument",
				 "spawn: stdin_len without stdin_data");
	const char *name = spec->argv[0];
	if (strchr(name, '/') && name[0] != '/')
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, "invalid_argument",
				 "spawn: '%s' must be absolute or a bare name", name);
	g_autofree char *path = hostspawn_find_program(name);
	if (!path)
		return error_set(reterr, ENOENT, CORDON_ERROR_TERMINAL, "program_not_found",
				 "%s: not found%s", name,
				 name[0] == '/' ? " or not executable" : " on " HOSTSPAWN_PATH);

	static const char *const minimal_env[] = { "PATH=" HOSTSPAWN_PATH, "LANG=C.UTF-8", NULL };
	spawn_run s = {
		.pidfd = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1,
		.in_data = spec->stdin_data, .in_left = (size_t)spec->stdin_len,
		.cap = spec->output_cap ? spec->output_cap : HOSTSPAWN_OUTPUT_CAP_DEFAULT,
	};
	int r = spawn_child(&s, path, spec->argv, spec->envp ? spec->envp : minimal_env);
	if (r < 0)
		return error_set(reterr, r, CORDON_ERROR_TERMINAL, "spawn_failed", "cannot run %s: %s",
				 path, g_strerror(-r));
	s.out = g_string_new(NULL);
	s.err = g_string_new(NULL);
	run_to_end(&s, spec->timeout_ms ? spec->timeout_ms : HOSTSPAWN_TIMEOUT_MS_DEFAULT);
	int32_t code = reap(s.pid);
	spec->exit_code = s.timed_out ? -1 : code;
	spec->timed_out = s.timed_out;
	spec->out = g_string_free(s.out, FALSE);
	spec->err = g_string_free(s.err, FALSE);
	return 0;
}
