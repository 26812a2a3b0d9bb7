/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The local driver's network (netserve.h). */
#include "config.h"

#include "netserve.h"

#include "context.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define H (&cordon_host_services)

/* How long a kernel-tier run's init may take to fork the work, for its pid. */
#define PID_WAIT_MS 2000

static int inside_socket(void *user, int family)
{
	const local_serve *sc = user;
	return confine_sandbox_socket_family(sc->kernel, family);
}

static void forward_ready(void *user, const char *address)
{
	const local_serve *sc = user;
	sc->sink->address(sc->sink->ctx, address);
}

/* Where a served port is reached. The jail's work shares the host's
 * network: its port is the host's, reported at once. The kernel tier's port
 * is on the sandbox's own loopback: reached only through a forwarder that
 * listens on a port the host's kernel picks, reported once the port inside
 * accepts (docs/network.md), never a host port the work chose. */
int local_serve_start(confine_sandbox *kernel, const cordon_plugin_run_spec *spec, local_serve *sc,
		      net_forward **ret, cordon_plugin_error *err)
{
	bool unix_socket = spec->flags & CORDON_PLUGIN_RUNREQ_SERVE_UNIX;
	if (!kernel && unix_socket)
		return H->error_set(err, EOPNOTSUPP, CORDON_PLUGIN_ERROR_TERMINAL,
				    ERRC(unsupported),
				    "the process jail's port is the host's: no unix socket for it");
	if (!kernel) {
		char addr[32];
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)spec->port);
		sc->sink->address(sc->sink->ctx, addr);
		return 0;
	}
	sc->kernel = kernel;
	char why[256];
	int r = net_forward_start(spec->port, unix_socket, inside_socket, forward_ready, sc, ret,
				  why, sizeof(why));
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				    "kernel tier: serving port %u: %s", (unsigned)spec->port, why);
	return 0;
}

/* A service's listener: on the kernel tier's own loopback only. The process
 * jail's work shares the host's network, where a listener would hand the
 * credential to every local process. */
int local_listen_inside(confine_sandbox *kernel, uint16_t *ret_port, cordon_plugin_error *err)
{
	int fd = kernel ? confine_sandbox_listen(kernel, ret_port) : -EOPNOTSUPP;
	if (fd == -EOPNOTSUPP)
		return H->error_set(err, EOPNOTSUPP, CORDON_PLUGIN_ERROR_TERMINAL,
				    ERRC(unsupported),
				    "the process jail has no network of its own for services");
	if (fd < 0)
		return H->error_set(err, -fd, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				    "kernel tier: a listener inside: %s", strerror(-fd));
	return fd;
}

/* ---- the server's pid (cordon_serve_pid) -------------------------------------------------- */

/* The oldest child of the host process parent, as /proc lists them (oldest first): the work,
 * which the jail's supervisor and a kernel-tier run's init each fork first. 0 while none. */
static long first_child(long parent)
{
	char path[64], buf[32];
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", parent, parent);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strtol(buf, NULL, 10);
}

/* The last number on the line of a /proc file that starts with key ("NSpid:" lists a
 * process's pid in each pid namespace, the innermost last), or 0. */
static long proc_last_number(const char *path, const char *key)
{
	FILE *f = fopen(path, "re");
	char line[256];
	long v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0) {
			const char *last = strrchr(line, '\t');
			const char *sp = strrchr(line, ' ');
			v = strtol((sp > last ? sp : last) + 1, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A kernel-tier run's work, seen from its init (pidfd): its pid in the run's own pid
 * namespace, what $$ is there. The init forks it after its setup: looked for until it
 * appears, the init ends, or the bound passes. 0 when it was not seen. */
static long kernel_work_pid(int init_pidfd, int64_t deadline_ms)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", init_pidfd);
	long init = proc_last_number(path, "Pid:");
	long work = 0;
	while (init > 0 && !(work = first_child(init)) && mono_ms() < deadline_ms) {
		struct pollfd p = { init_pidfd, POLLIN, 0 };
		if (poll(&p, 1, 1) != 0)
			return 0; /* the init ended: no work to name */
	}
	if (work <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/status", work);
	return proc_last_number(path, "NSpid:");
}

void local_serve_report_pid(const cordon_plugin_run_sink *sink, long supervisor, int init_pidfd)
{
	if (!sink->started)
		return;
	long pid = init_pidfd >= 0 ? kernel_work_pid(init_pidfd, mono_ms() + PID_WAIT_MS)
				   : first_child(supervisor);
	if (pid > 0)
		sink->started(sink->ctx, pid);
}
