/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host->spawn and host->process_spawn: host programs for a plugin, on the one spawner of
 * common/hostproc.c (a new session, default signals, descriptors 0-2 (and 3) only, cwd "/",
 * the exit learnt through a pidfd without reaping). Here: the plugin-facing checks, the
 * minimal environment, the program's lookup on the minimal PATH, the errors.
 */
#include "config.h"

#include "hostspawn.h"
#include "hostproc.h"
#include "local/hostjail.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const minimal_env[] = { "PATH=" HOSTSPAWN_PATH, "LANG=C.UTF-8", NULL };

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

/* argv[0] checked and found on the minimal PATH: *ret_path (g_free). */
static int resolve_program(const char *const *argv, cordon_plugin_error *err, char **ret_path)
{
	cordon_error **reterr = err ? &err->err : NULL;
	if (!argv || !argv[0] || !*argv[0])
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "spawn: argv[0] is required");
	const char *name = argv[0];
	if (strchr(name, '/') && name[0] != '/')
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "spawn: '%s' must be absolute or a bare name", name);
	char *path = hostspawn_find_program(name);
	if (!path)
		return error_set(reterr, ENOENT, CORDON_ERROR_TERMINAL, ERRC(program_not_found),
				 "%s: not found%s", name,
				 name[0] == '/' ? " or not executable" : " on " HOSTSPAWN_PATH);
	*ret_path = path;
	return 0;
}

static int spawn_failed(cordon_plugin_error *err, const char *path, int r)
{
	return error_set(err ? &err->err : NULL, -r, CORDON_ERROR_TERMINAL, ERRC(spawn_failed),
			 "cannot run %s: %s", path, g_strerror(-r));
}

/* A capture handed to the plugin: g_malloc'd (host->free), NULs and all. */
static char *plugin_copy(char *data, size_t len)
{
	char *c = g_memdup2(data, len + 1);
	free(data);
	return c;
}

int hostspawn_run(cordon_host_spawn *spec, cordon_plugin_error *err)
{
	cordon_error **reterr = err ? &err->err : NULL;
	if (!spec || spec->size < sizeof(cordon_host_spawn))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "spawn: spec is missing or smaller than the ABI's");
	spec->out = spec->err = NULL;
	spec->exit_code = -1;
	spec->timed_out = 0;
	if (spec->stdin_len && !spec->stdin_data)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "spawn: stdin_len without stdin_data");
	g_autofree char *path = NULL;
	int r = resolve_program(spec->argv, err, &path);
	if (r < 0)
		return r;
	hostproc_result res;
	r = hostproc_run(path, spec->argv, spec->envp ? spec->envp : minimal_env, spec->stdin_data,
			 (size_t)spec->stdin_len,
			 spec->timeout_ms ? spec->timeout_ms : HOSTSPAWN_TIMEOUT_MS_DEFAULT,
			 spec->output_cap ? spec->output_cap : HOSTSPAWN_OUTPUT_CAP_DEFAULT, &res);
	if (r < 0)
		return spawn_failed(err, path, r);
	spec->exit_code = res.exit_code;
	spec->timed_out = res.timed_out;
	spec->out = plugin_copy(res.out, res.out_len);
	spec->err = plugin_copy(res.err, res.err_len);
	return 0;
}

/* ---- a streaming process (ABI 1.2) -------------------------------------------------- */

typedef struct host_process {
	cordon_host_process pub; /* first: the plugin's handle is this */
	hostproc proc;
	hostids ids; /* a jail's host id as root: released once it was reaped */
	/* Held to signal and to reap, never while waiting: a kill from another thread during
	 * a wait goes through, and never signals a pid once it was reaped (and reusable). */
	GMutex lock;
} host_process;

static host_process *from_pub(cordon_host_process *p) { return (host_process *)p; }

static void process_kill(cordon_host_process *p)
{
	host_process *h = from_pub(p);
	g_mutex_lock(&h->lock);
	hostproc_kill(&h->proc);
	g_mutex_unlock(&h->lock);
}

static int process_wait(cordon_host_process *p, int64_t timeout_ms, uint32_t flags,
			int32_t *ret_status)
{
	host_process *h = from_pub(p);
	if (!hostproc_wait_exit(&h->proc, timeout_ms))
		return -ETIMEDOUT;
	int status = -1;
	g_mutex_lock(&h->lock);
	int r = hostproc_wait(&h->proc, 0, (flags & CORDON_HOST_WAIT_KILL_GROUP) != 0, &status);
	if (r == 0) {
		p->pid = 0;
		p->pidfd = -1;
	}
	g_mutex_unlock(&h->lock);
	if (r == 0 && ret_status)
		*ret_status = status;
	return r;
}

static void process_release(cordon_host_process *p)
{
	if (!p)
		return;
	host_process *h = from_pub(p);
	hostproc_close(&h->proc);
	hostids_release(&h->ids);
	g_mutex_clear(&h->lock);
	g_free(h);
}

/* A plugin's descriptor for the program's slot, or /dev/null. */
static int plugin_fd(int32_t fd) { return fd >= 0 ? fd : HOSTPROC_DEVNULL; }

/* The launcher's descriptors for a program's 0-4: copies above 4 (a dup2 onto 0-4 then never
 * overwrites another source), /dev/null for -1 in 0-2; src[3] and src[4] stay -1 without an
 * extra one or a jail descriptor. */
static int launch_fds(const cordon_host_process_spec *spec, int src[5])
{
	const int32_t want[5] = { spec->stdin_fd, spec->stdout_fd, spec->stderr_fd, spec->extra_fd,
				  spec->jail_fd_path ? spec->jail_fd : -1 };
	for (int i = 0; i < 5; i++)
		src[i] = -1;
	for (int i = 0; i < 5; i++) {
		if (want[i] < 0 && i >= 3)
			continue;
		int fd = want[i] >= 0 ? fcntl(want[i], F_DUPFD_CLOEXEC, 5)
				      : open("/dev/null", (i ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
		if (fd >= 0 && fd < 5) {
			int high = fcntl(fd, F_DUPFD_CLOEXEC, 5);
			close(fd);
			fd = high;
		}
		if (fd < 0) {
			int e = errno ? -errno : -EBADF;
			for (int k = 0; k < i; k++)
				if (src[k] >= 0)
					close(src[k]);
			return e;
		}
		src[i] = fd;
	}
	return 0;
}

/* CORDON_HOST_PROCESS_PDEATHSIG or _JAIL: the local driver's launcher (local/hostjail.c). */
static int start_launched(const cordon_host_process_spec *spec, const char *path, host_process *h,
			  cordon_plugin_error *err)
{
	int src[5];
	int r = launch_fds(spec, src);
	if (r < 0)
		return spawn_failed(err, path, r);
	hostjail_spec js = {
		.path = path,
		.argv = spec->argv,
		.envp = spec->envp ? spec->envp : minimal_env,
		.fd = { src[0], src[1], src[2] },
		.extra_fd = src[3],
		.jail = (spec->flags & CORDON_HOST_PROCESS_JAIL) != 0,
		.paths = spec->jail_paths,
		.devices = spec->jail_devices,
		.jail_fd = src[4],
		.jail_fd_path = spec->jail_fd_path,
		.file_server = (spec->flags & CORDON_HOST_PROCESS_FILE_SERVER) != 0,
		.read_only = (spec->flags & CORDON_HOST_PROCESS_READ_ONLY) != 0,
		.file_server_id = spec->file_server_id,
	};
	char why[512] = "";
	hostjail_proc jp;
	r = hostjail_start(&js, &jp, why, sizeof(why));
	for (int i = 0; i < 5; i++)
		if (src[i] >= 0)
			close(src[i]);
	if (r < 0) {
		g_debug("[core] process_spawn: %s", why); /* for a plugin that passed no err */
		return error_set(err ? &err->err : NULL, -r, CORDON_ERROR_TERMINAL,
				 ERRC(spawn_failed), "%s", why);
	}
	h->proc = (hostproc){ .pid = jp.pid, .pidfd = jp.pidfd, .in = -1, .out = -1, .err = -1 };
	h->ids = jp.ids;
	return 0;
}

/* The plugin's spec, its newer fields zero when it was built against an older minor (1.4's
 * from 1.2 or 1.3, 1.5's jail_fd_path from 1.4: none). */
static bool read_spec(const cordon_host_process_spec *in, cordon_host_process_spec *out)
{
	const size_t v1_2 = offsetof(cordon_host_process_spec, flags);
	if (!in || in->size < v1_2)
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out, in, in->size < sizeof(*out) ? in->size : sizeof(*out));
	return true;
}

int hostspawn_process(const cordon_host_process_spec *plugin_spec, cordon_host_process **ret,
		      cordon_plugin_error *err)
{
	cordon_error **reterr = err ? &err->err : NULL;
	cordon_host_process_spec specbuf, *spec = &specbuf;
	if (!read_spec(plugin_spec, spec) || !ret)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "process_spawn: spec is missing or smaller than the ABI's");
	const uint32_t known = CORDON_HOST_PROCESS_PDEATHSIG | CORDON_HOST_PROCESS_JAIL |
			       CORDON_HOST_PROCESS_FILE_SERVER | CORDON_HOST_PROCESS_READ_ONLY;
	const uint32_t server = CORDON_HOST_PROCESS_FILE_SERVER;
	if (spec->flags & ~known)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "process_spawn: unknown flags 0x%x", spec->flags & ~known);
	if ((spec->flags & server) && (spec->flags & CORDON_HOST_PROCESS_JAIL))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "process_spawn: FILE_SERVER and JAIL are exclusive");
	if ((spec->flags & CORDON_HOST_PROCESS_READ_ONLY) && !(spec->flags & server))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "process_spawn: READ_ONLY needs FILE_SERVER");
	if ((spec->flags & server) && (!spec->jail_fd_path || spec->jail_fd < 0))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "process_spawn: FILE_SERVER needs a directory (jail_fd) and "
				 "where to mount it (jail_fd_path)");
	if (spec->jail_fd_path && !(spec->flags & (CORDON_HOST_PROCESS_JAIL | server)))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "process_spawn: jail_fd_path needs CORDON_HOST_PROCESS_JAIL or "
				 "FILE_SERVER");
	if (spec->jail_fd_path && spec->jail_fd < 0)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "process_spawn: jail_fd_path needs a descriptor");
	g_autofree char *path = NULL;
	int r = resolve_program(spec->argv, err, &path);
	if (r < 0)
		return r;
	host_process *h = g_new0(host_process, 1);
	h->ids.lock_fd = -1;
	if (spec->flags & known) {
		r = start_launched(spec, path, h, err);
	} else {
		hostproc_spec hs = {
			.path = path,
			.argv = spec->argv,
			.envp = spec->envp ? spec->envp : minimal_env,
			.fd = { plugin_fd(spec->stdin_fd), plugin_fd(spec->stdout_fd),
				plugin_fd(spec->stderr_fd) },
			.extra_fd = spec->extra_fd >= 0 ? spec->extra_fd : -1,
		};
		r = hostproc_start(&hs, &h->proc);
		if (r < 0)
			r = spawn_failed(err, path, r);
	}
	if (r < 0) {
		g_free(h);
		return r;
	}
	g_mutex_init(&h->lock);
	h->pub = (cordon_host_process){
		.size = sizeof(cordon_host_process),
		.pid = h->proc.pid,
		.pidfd = h->proc.pidfd,
		.kill = process_kill,
		.wait = process_wait,
		.release = process_release,
	};
	*ret = &h->pub;
	return 0;
}
