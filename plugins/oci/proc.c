/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Engine CLI processes that stream (`engine exec` of a run, the session's
 * attached `engine run -i`): three pipes of ours on the host's streaming
 * process (host->process_spawn, ABI 1.2: a session of its own, nothing
 * inherited beyond the pipes and pass_fd, a pidfd), and a caller-driven
 * poll loop. One-shot commands go through host->spawn instead (engine.c).
 */
#include "config.h"

#include "proc.h"
#include "driver.h" /* oci_host */
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Defined here, at the bottom of the library, rather than in driver.c, which sets it
 * (oci_plugin_init): every file reaches the host through it, and none must need
 * driver.c for that. */
const cordon_host *oci_host;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void close_pair(int p[2])
{
	close_fd(&p[0]);
	close_fd(&p[1]);
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
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = argv,
		.envp = envp,
		.stdin_fd = in[0],
		.stdout_fd = out[1],
		.stderr_fd = err[1],
		.extra_fd = pass_fd,
	};
	cordon_host_process *h = NULL;
	int r = oci_host->process_spawn(&spec, &h, NULL);
	/* the CLI has its copies */
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	if (r < 0) {
		close_fd(&in[1]);
		close_fd(&out[0]);
		close_fd(&err[0]);
		return r;
	}
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	*ret = (oci_proc){ .pid = h->pid, .in = in[1], .out = out[0], .err = err[0], .host = h };
	return 0;
}

void oci_proc_close_in(oci_proc *p) { close_fd(&p->in); }

/* The CLI's stdin: its reader may be gone (nosigpipe.h). */
ssize_t oci_proc_write(oci_proc *p, const void *buf, size_t len)
{
	return write_nosigpipe(p->in, buf, len);
}

void oci_proc_kill(oci_proc *p)
{
	if (p->host)
		p->host->kill(p->host);
}

int oci_proc_wait(oci_proc *p)
{
	int32_t status = -1;
	if (p->host) {
		/* the CLI's session: whatever it left behind goes with it */
		p->host->wait(p->host, -1, CORDON_HOST_WAIT_KILL_GROUP, &status);
		p->host->release(p->host);
		p->host = NULL;
		p->pid = -1;
	}
	oci_proc_close_in(p);
	close_fd(&p->out);
	close_fd(&p->err);
	return status;
}

int64_t oci_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
