/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Engine CLI processes that stream (`engine exec` of a run): posix_spawn in a
 * session of their own (so the whole CLI can be killed), nothing inherited
 * beyond the three pipes, and a caller-driven poll loop. One-shot commands go
 * through host->spawn instead (engine.c).
 */
#include "config.h"

#include "proc.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

int oci_proc_spawn(const char *const *argv, const char *const *envp, int pass_fd, oci_proc *ret)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		int e = errno;
		close_pair(in);
		close_pair(out);
		close_pair(err);
		return -e;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
	/* nothing of the host process beyond the three pipes (and pass_fd,
	 * never itself OCI_PASS_FD: oci_seccomp_fd keeps it above) */
	if (pass_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, pass_fd, OCI_PASS_FD);
	posix_spawn_file_actions_addclosefrom_np(&fa, pass_fd >= 0 ? OCI_PASS_FD + 1 : 3);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int r = posix_spawn(&pid, argv[0], &fa, &at, (char *const *)argv, (char *const *)envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (r != 0) {
		close(in[1]);
		close(out[0]);
		close(err[0]);
		return -r;
	}
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	*ret = (oci_proc){ .pid = pid, .in = in[1], .out = out[0], .err = err[0] };
	return 0;
}

void oci_proc_close_in(oci_proc *p)
{
	if (p->in >= 0)
		close(p->in);
	p->in = -1;
}

/* The CLI's stdin: its reader may be gone (nosigpipe.h). */
ssize_t oci_proc_write(oci_proc *p, const void *buf, size_t len)
{
	return write_nosigpipe(p->in, buf, len);
}

void oci_proc_kill(oci_proc *p)
{
	if (p->pid > 0)
		kill(-p->pid, SIGKILL);
}

int oci_proc_wait(oci_proc *p)
{
	int status = 0;
	if (p->pid > 0) {
		while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
			;
		/* the CLI's session: whatever it left behind goes with it */
		kill(-p->pid, SIGKILL);
		p->pid = -1;
	}
	oci_proc_close_in(p);
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	p->out = p->err = -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int64_t oci_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
