/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The built-in `local` driver.
 *
 * confine: none  -> process-jail: the sandbox root is a directory (the
 *   request's workspace, or a private temporary directory removed at close);
 *   file operations are confined beneath it by pathres; commands start in
 *   it with only the core's environment, in a new session and process group,
 *   with nothing inherited beyond 0-2, rlimits where limits map to them, and
 *   everything they start killed when the run ends, times out or is cancelled.
 * confine: kernel -> the kernel tier (namespaces, read-only host, seccomp,
 *   Landlock, limits, an init as pid 1): kernel.c and the modules it names.
 *   Same sandbox root and file operations; runs go through kernel_spawn,
 *   kernel_stop and kernel_finish. A host that cannot confine probes unavailable and refuses
 *   to open, so kernel-tier work never runs unconfined.
 *
 * Limits of the process jail (what the kernel tier closes):
 *  - the work runs with the host user's rights outside the root: the jail
 *    confines the file API and the working directory, not the work itself;
 *  - the work runs under a supervisor (spawn.h), the subreaper of all it
 *    starts, which kills the whole tree when the work's leader exits, the
 *    run ends, or cordon dies (even of SIGKILL: its parent-death signal); a
 *    process that leaves the group (setsid, setpgid, a double fork) is still
 *    reached. Work that kills the supervisor itself (it runs as the same
 *    user) loses only that as root, where the tree is born in a control
 *    group of the run's that the host empties (jail.h); unprivileged its
 *    leader dies with it, but what it detached is re-parented to init;
 *  - work run as root loses CAP_SYS_PTRACE (bounding, inheritable and
 *    ambient sets), so that it cannot attach to a non-dumpable cordon;
 *  - limits: memory -> RLIMIT_AS (address space, so runtimes that reserve
 *    large mappings need a generous value), nofile -> RLIMIT_NOFILE, fsize ->
 *    RLIMIT_FSIZE, core dumps off; wall time is the run's timeout; output is
 *    capped by the core. pids and cpus need cgroups (RLIMIT_NPROC counts the
 *    whole user, and a CPU share is not a time): a jail tier configured with
 *    them probes unavailable, and a request for them is refused at open.
 */
#include "config.h"

#include "local.h"
#include "context.h"
#include "fserror.h"
#include "fsops.h"
#include "jail.h"
#include "kernel.h"
#include "net/forward.h"
#include "netserve.h"
#include "nosigpipe.h"
#include "pathres.h"
#include "privroot.h"
#include "spawn.h"
#include "workspace.h"

#include <errno.h>
#include <sys/fsuid.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H (&cordon_host_services)

/* Output is read in chunks of this size and handed to the sink as it comes. */
#define RUN_CHUNK (32u << 10)
/* Without pidfds, how often the loop looks for the leader's exit. */
#define NO_PIDFD_TICK_MS 10
/* After the group is killed: how long to collect what is still buffered. */
#define DRAIN_MS 200
/* After the leader is reaped: how long to wait for killed members to go. */
#define GROUP_GONE_MS 1000
/* How long a supervisor has to kill the work's tree before it is killed. */
#define SUPERVISOR_GRACE_MS 2000

typedef struct local_tier {
	bool kernel;
	uint64_t disk;               /* the private root's cap, bytes */
	cordon_plugin_limits limits; /* the tier's policy limits (the kernel probe checks them) */
} local_tier;

typedef struct local_sandbox {
	int root_fd;
	int null_fd;             /* /dev/null, the stdin of runs without input */
	private_root priv;       /* without a workspace: the private root, removed at close */
	spawn_plan base;         /* rlimits and default steps, copied per run */
	confine_sandbox *kernel; /* confine: kernel (kernel.c), else NULL */
} local_sandbox;

static const cordon_plugin_config_key local_keys[] = {
	{ "confine", CORDON_PLUGIN_CONFIG_STRING, 1 },
	{ "disk", CORDON_PLUGIN_CONFIG_SIZE, 0 },
	{ NULL, 0, 0 },
};

static const char kernel_missing[] = "kernel confinement is not implemented yet";

/* ---- configure / probe ------------------------------------------------------------ */

static int confine_error(const cordon_plugin_config *cfg, cordon_plugin_error *err,
			 const char *value)
{
	if (!value)
		return H->config_error(cfg, "confine", err,
				       "is required: 'none' (process jail) or 'kernel'");
	return H->config_error(cfg, "confine", err,
			       "'%.64s' is neither 'none' (process jail) nor 'kernel'", value);
}

/* Limits the jail cannot enforce (they need cgroups), named for a reason, or
 * NULL. Running without them would be a silent downgrade (DESIGN §8.2). */
static const char *jail_unenforceable(const cordon_plugin_limits *l)
{
	bool pids = l->set & (1u << CORDON_PLUGIN_LIMIT_PIDS);
	bool cpu = l->set & (1u << CORDON_PLUGIN_LIMIT_CPU_MILLI);
	return pids && cpu ? "pids and cpus" : pids ? "pids" : cpu ? "cpus" : NULL;
}

int local_check_limits(const void *tier, const cordon_plugin_limits *limits, char *why,
		       size_t whylen)
{
	const local_tier *t = tier;
	return t && t->kernel ? kernel_check_limits(limits, why, whylen) : 0;
}

static int local_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			   cordon_plugin_error *err)
{
	const char *confine = NULL;
	if (H->config_string(cfg, "confine", &confine) <= 0 || !confine)
		return confine_error(cfg, err, NULL);
	bool kernel;
	if (strcmp(confine, "none") == 0)
		kernel = false;
	else if (strcmp(confine, "kernel") == 0)
		kernel = true;
	else
		return confine_error(cfg, err, confine);
	local_tier *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->kernel = kernel;
	if (H->config_limits)
		H->config_limits(cfg, &t->limits);
	t->disk = PRIVATE_ROOT_DEFAULT_DISK;
	if (H->config_u64(cfg, "disk", &t->disk) > 0 && t->disk == 0) {
		free(t);
		return H->config_error(cfg, "disk", err, "must be greater than zero");
	}
	char why[256];
	if (kernel && kernel_check_limits(&t->limits, why, sizeof(why)) < 0) {
		free(t);
		return H->config_error(cfg, "limits", err, "%s", why);
	}
	*ret_tier = t;
	return 0;
}

static void local_unconfigure(void *tier)
{
	const local_tier *t = tier;
	/* A probe's warm sandbox and its groups do not outlive the tier. */
	if (t && t->kernel)
		kernel_release_warm();
	free(tier);
}

/* What the kernel tier's answer depends on, for a kept answer (probecache.h): the knobs
 * that allow user namespaces, the LSMs (Landlock), the seccomp actions, and this process's
 * own id mapping and control groups (cordon run inside a container differs from outside). */
static const char *const kernel_probe_files[] = {
	"/proc/sys/kernel/unprivileged_userns_clone",
	"/proc/sys/user/max_user_namespaces",
	"/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
	"/sys/kernel/security/lsm",
	"/proc/sys/kernel/seccomp/actions_avail",
	"/proc/self/uid_map",
	"/proc/self/cgroup",
};

static int local_probe(void *tier, cordon_plugin_probe *ret)
{
	const local_tier *t = tier;
	/* Never more than the weakest level: an unavailable tier provides nothing. */
	ret->containment = CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL;
	/* Every limit under kernel confinement; the jail has no cgroups (jail_unenforceable). */
	ret->limits = (1u << CORDON_PLUGIN_LIMIT_COUNT) - 1;
	if (t && !t->kernel)
		ret->limits &= ~(1u << CORDON_PLUGIN_LIMIT_PIDS |
				 1u << CORDON_PLUGIN_LIMIT_CPU_MILLI);
	if (t && t->kernel) {
		for (size_t i = 0; i < sizeof(kernel_probe_files) / sizeof(kernel_probe_files[0]);
		     i++)
			H->probe_depends(kernel_probe_files[i]);
		kernel_probe(&t->limits, ret);
		/* The jail's tiers bind nothing; the kernel tier binds as root (kernel_mounts). */
		if (ret->available && confine_can_mount())
			ret->features |= CORDON_PLUGIN_PROBE_MOUNTS;
		return 0;
	}
	if (!t) {
		ret->available = 0;
		snprintf(ret->reason, sizeof(ret->reason), "%s", kernel_missing);
		return 0;
	}
	const char *cannot = jail_unenforceable(&t->limits);
	if (cannot) {
		ret->available = 0;
		snprintf(ret->reason, sizeof(ret->reason),
			 "the process jail cannot enforce the tier's %s limit (it needs cgroups: "
			 "use confine: kernel)",
			 cannot);
		return 0;
	}
	ret->available = 1;
	/* The jail's work shares the host's network: it enforces no egress
	 * rule, so a rule requiring one refuses it (docs/network.md). */
	ret->egress_enforced = 0;
	snprintf(ret->reason, sizeof(ret->reason),
		 "directory jail, scrubbed environment, supervised process-tree kill "
		 "(no kernel isolation: for trusted work only)");
	return 0;
}

/* ---- open / close ------------------------------------------------------------------ */

static int refuse_kernel(cordon_plugin_error *err)
{
	return H->error_set(err, ENOTSUP, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(tier_unavailable),
			    "%s; kernel-tier work is refused rather than run unconfined",
			    kernel_missing);
}

static int fd_fail(cordon_plugin_error *err, int r, const char *what)
{
	return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(sandbox_open_failed),
			    "%s: %s", what, strerror(-r));
}

static int open_workspace(local_sandbox *sb, const char *ws, cordon_plugin_error *err)
{
	if (ws[0] != '/')
		return H->error_set(err, EINVAL, CORDON_PLUGIN_ERROR_INVALID,
				    ERRC(invalid_argument),
				    "the workspace must be an absolute path");
	sb->root_fd = open(ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sb->root_fd < 0)
		return H->error_set(err, errno, CORDON_PLUGIN_ERROR_TERMINAL,
				    ERRC(sandbox_open_failed), "cannot open the workspace %s: %s",
				    ws, strerror(errno));
	/* The core checked the path; this is what it leads to now (a directory above it may
	 * have been swapped for a link since): the forbidden list again, on our descriptor. */
	cordon_error *why = NULL;
	int r = workspace_check_fd(sb->root_fd, ws, &why);
	if (r < 0) {
		r = H->error_set(err, -r, (uint32_t)cordon_error_get_class(why),
				 cordon_error_get_code(why), "%s", cordon_error_get_message(why));
		cordon_error_free(why);
	}
	return r;
}

/* Without a workspace. The jail's private root is a host directory (as root with a tmpfs
 * on it). The kernel tier's is a tmpfs only its sandbox mounts: named, not made, below
 * /tmp, where the sandbox has a /tmp of its own (*path; root_fd stays -1), else on an
 * empty host directory, its mount point (docs/tiers/local.md, "The private root"). */
static int open_private_root(local_sandbox *sb, const local_tier *t, char *path, size_t len,
			     cordon_plugin_error *err)
{
	const char *what = NULL;
	if (t->kernel) {
		int r = private_root_path(path, len, &what);
		if (r != -ENOTDIR)
			return r < 0 ? fd_fail(err, r, what) : 0;
	}
	sb->root_fd = private_root_make(&sb->priv, t->kernel ? 0 : t->disk, &what);
	return sb->root_fd < 0 ? fd_fail(err, sb->root_fd, what) : 0;
}

/* Lowers a limit to value, never above what we have ourselves. */
static void plan_rlimit(spawn_plan *p, int resource, uint64_t value)
{
	struct rlimit cur;
	if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && value > cur.rlim_max)
		value = cur.rlim_max;
	spawn_plan_add_rlimit(p, resource, (rlim_t)value);
}

static void plan_limits(spawn_plan *p, const cordon_plugin_limits *l)
{
	plan_rlimit(p, RLIMIT_CORE, 0);
	if (l->set & (1u << CORDON_PLUGIN_LIMIT_NOFILE))
		plan_rlimit(p, RLIMIT_NOFILE, l->value[CORDON_PLUGIN_LIMIT_NOFILE]);
	if (l->set & (1u << CORDON_PLUGIN_LIMIT_FSIZE))
		plan_rlimit(p, RLIMIT_FSIZE, l->value[CORDON_PLUGIN_LIMIT_FSIZE]);
	if (l->set & (1u << CORDON_PLUGIN_LIMIT_MEMORY))
		plan_rlimit(p, RLIMIT_AS, l->value[CORDON_PLUGIN_LIMIT_MEMORY]);
}

static void local_close(void *sandbox)
{
	local_sandbox *sb = sandbox;
	if (!sb)
		return;
	confine_sandbox_free(sb->kernel);
	if (sb->root_fd >= 0)
		close(sb->root_fd);
	if (sb->null_fd >= 0)
		close(sb->null_fd);
	if (sb->priv.name[0]) {
		char name[sizeof(sb->priv.name)];
		snprintf(name, sizeof(name), "%s", sb->priv.name);
		int r = private_root_remove(&sb->priv);
		if (r < 0)
			H->log(CORDON_PLUGIN_LOG_WARNING, "local",
			       "private sandbox directory %s not fully removed: %s", name,
			       strerror(-r));
	} else {
		private_root_remove(&sb->priv);
	}
	free(sb);
}

static int local_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		      cordon_plugin_error *err)
{
	const local_tier *t = tier;
	if (!t)
		return refuse_kernel(err);
	const char *cannot = t->kernel ? NULL : jail_unenforceable(&spec->limits);
	if (cannot)
		return H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    ERRC(limit_unenforceable),
				    "the process jail cannot enforce a %s limit; it needs a tier "
				    "with kernel confinement",
				    cannot);
	if (!t->kernel && spec->size > offsetof(cordon_plugin_open_spec, n_mounts) &&
	    spec->n_mounts)
		return H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    ERRC(mount_unsupported),
				    "the process jail cannot mount host directories");
	local_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	sb->root_fd = sb->null_fd = -1;
	sb->priv = (private_root)PRIVATE_ROOT_INIT;
	char private_path[PATH_MAX] = "";
	int r = spec->workspace ? open_workspace(sb, spec->workspace, err)
				: open_private_root(sb, t, private_path, sizeof(private_path), err);
	if (r == 0) {
		sb->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		r = sb->null_fd < 0 ? fd_fail(err, -errno, "/dev/null") : 0;
	}
	/* Both become sources of the child's 0-2 and cwd: keep them above 2. */
	if (r == 0 && ((r = spawn_fd_above_stdio(&sb->root_fd)) < 0 ||
		       (r = spawn_fd_above_stdio(&sb->null_fd)) < 0))
		r = fd_fail(err, r, "fcntl");
	if (r == 0 && t->kernel)
		r = kernel_open(&sb->root_fd, private_path, spec, t->disk, &sb->kernel, err);
	/* Governed egress is the core's proxy on local_listen (EGRESS_PROXY): the
	 * namespace has only lo either way. Without the tier's rules there is
	 * nothing to enforce. */
	if (r == 0 && t->kernel && spec->egress == CORDON_PLUGIN_EGRESS_GOVERNED &&
	    !(spec->size >= offsetof(cordon_plugin_open_spec, egress_audit) + sizeof(void *) &&
	      spec->egress_allow))
		r = H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				 ERRC(egress_unsupported),
				 "kernel tier: egress governed needs the tier's egress rules "
				 "(egress: {allow: [...]} in its policy section)");
	if (r == 0 && (r = spawn_fd_above_stdio(&sb->root_fd)) < 0)
		r = fd_fail(err, r, "fcntl");
	if (r < 0) {
		local_close(sb);
		return r;
	}
	spawn_plan_init(&sb->base);
	plan_limits(&sb->base, &spec->limits);
	if (!t->kernel) { /* the kernel tier's runs are its init's children */
		sb->base.supervise = true;
		jail_plan_noptrace(&sb->base);
	}
	*ret_sandbox = sb;
	return 0;
}

/* ---- run: setup ---------------------------------------------------------------------- */

typedef struct run_io {
	int out, err; /* our read ends; -1 at EOF */
	int in;       /* our write end of stdin; -1 when done or unused */
	const uint8_t *in_data;
	size_t in_left;
	const cordon_plugin_run_sink *sink;
	char buf[RUN_CHUNK];
} run_io;

typedef struct run_fds {
	int out[2], err[2], in[2];
	int cwd; /* a resolved workdir, or -1 */
} run_fds;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void run_fds_close(run_fds *f)
{
	for (int i = 0; i < 2; i++) {
		close_fd(&f->out[i]);
		close_fd(&f->err[i]);
		close_fd(&f->in[i]);
	}
	close_fd(&f->cwd);
}

static int run_pipes(run_fds *f, bool want_stdin)
{
	if (pipe2(f->out, O_CLOEXEC) < 0 || pipe2(f->err, O_CLOEXEC) < 0)
		return -errno;
	if (want_stdin) {
		if (pipe2(f->in, O_CLOEXEC) < 0)
			return -errno;
		/* Only our end: the work gets an ordinary blocking stdin. */
		if (fcntl(f->in[1], F_SETFL, O_NONBLOCK) < 0)
			return -errno;
	}
	int r = spawn_fd_above_stdio(&f->out[1]);
	if (r == 0)
		r = spawn_fd_above_stdio(&f->err[1]);
	if (r == 0)
		r = spawn_fd_above_stdio(&f->in[0]);
	return r;
}

static int path_error(cordon_plugin_error *err, int r, const char *op, const char *path);

static int run_workdir(local_sandbox *sb, const char *workdir, run_fds *f, cordon_plugin_error *err)
{
	if (!workdir || !*workdir)
		return 0;
	int fd = pathres_open(sb->root_fd, workdir, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return path_error(err, fd, "workdir", workdir);
	f->cwd = fd;
	return spawn_fd_above_stdio(&f->cwd);
}

static int spawn_error(cordon_plugin_error *err, int r, const spawn_failure *fail,
		       const char *argv0)
{
	if (fail->step && strcmp(fail->step, "execve") == 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(exec_failed),
				    "cannot execute '%.256s': %s", argv0, strerror(-r));
	if (fail->step)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(spawn_failed),
				    "cannot start '%.256s': sandbox setup step '%s' failed: %s",
				    argv0, fail->step, strerror(-r));
	return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(spawn_failed),
			    "cannot start '%.256s': %s", argv0, strerror(-r));
}

static int find_program(const cordon_plugin_run_spec *spec, char *buf, size_t size,
			cordon_plugin_error *err)
{
	int r = spawn_find_program(spec->argv[0], (char *const *)spec->envp, buf, size);
	if (r == -ENOENT)
		return H->error_set(err, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(exec_failed),
				    "cannot execute '%.256s': command not found", spec->argv[0]);
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(exec_failed),
				    "cannot execute '%.256s': %s", spec->argv[0], strerror(-r));
	return 0;
}

/* ---- run: the loop -------------------------------------------------------------------- */

typedef enum run_end { RUN_EXITED, RUN_TIMED_OUT, RUN_CANCELLED, RUN_FAILED } run_end;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pump_out(run_io *io, int *fd, uint32_t stream)
{
	ssize_t n = read(*fd, io->buf, sizeof(io->buf));
	if (n > 0) {
		io->sink->output(io->sink->ctx, stream, io->buf, (size_t)n);
		return;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	close_fd(fd); /* EOF, or an error we cannot read past */
}

static void pump_in(run_io *io)
{
	size_t chunk = io->in_left > (64u << 10) ? (64u << 10) : io->in_left;
	ssize_t n = write_nosigpipe(io->in, io->in_data, chunk);
	if (n > 0) {
		io->in_data += n;
		io->in_left -= (size_t)n;
		if (io->in_left == 0)
			close_fd(&io->in);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	close_fd(&io->in); /* the work closed its stdin: the rest is not wanted */
}

/* Without a pidfd: has the leader exited? ECHILD (the host reaped it) counts
 * as yes, so the run ends now and reports the lost status. */
static bool leader_exited(pid_t pid)
{
	siginfo_t si = { 0 };
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0)
		return errno == ECHILD;
	return si.si_pid == pid;
}

static run_end run_loop(run_io *io, const spawn_child *c, int cancel_fd, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd[5] = {
			{ .fd = c->pidfd, .events = POLLIN },  { .fd = io->out, .events = POLLIN },
			{ .fd = io->err, .events = POLLIN },   { .fd = io->in, .events = POLLOUT },
			{ .fd = cancel_fd, .events = POLLIN },
		};
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return RUN_TIMED_OUT;
		int wait = left > INT_MAX ? INT_MAX : (int)left;
		if (c->pidfd < 0 && wait > NO_PIDFD_TICK_MS)
			wait = NO_PIDFD_TICK_MS;
		int n = poll(pfd, 5, wait);
		if (n < 0 && errno != EINTR)
			return RUN_FAILED;
		if (n <= 0 && c->pidfd >= 0)
			continue;
		if (pfd[1].revents)
			pump_out(io, &io->out, 1);
		if (pfd[2].revents)
			pump_out(io, &io->err, 2);
		if (pfd[3].revents)
			pump_in(io);
		if (pfd[0].revents || (c->pidfd < 0 && leader_exited(c->pid)))
			return RUN_EXITED;
		if (pfd[4].revents)
			return RUN_CANCELLED;
	}
}

/* Collects what is still buffered once nothing in the group can write. */
static void drain(run_io *io)
{
	int64_t until = now_ms() + DRAIN_MS;
	while ((io->out >= 0 || io->err >= 0) && now_ms() < until) {
		struct pollfd pfd[2] = { { .fd = io->out, .events = POLLIN },
					 { .fd = io->err, .events = POLLIN } };
		if (poll(pfd, 2, 0) <= 0)
			break;
		if (pfd[0].revents)
			pump_out(io, &io->out, 1);
		if (pfd[1].revents)
			pump_out(io, &io->err, 2);
	}
}

/* Waits (bounded) until no process of the group is left, so that what they
 * held (locks, files, ports) is released when the run returns. The leader is
 * reaped already; killed members go as soon as their reaper collects them. */
static void wait_group_gone(pid_t pgid)
{
	struct timespec pause = { 0, 50000 };
	int64_t until = now_ms() + GROUP_GONE_MS;
	while (kill(-pgid, 0) == 0 && now_ms() < until) {
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 8000000)
			pause.tv_nsec *= 2;
	}
}

static int wait_leader(pid_t pid, int flags, siginfo_t *si)
{
	int r;
	while ((r = waitid(P_PID, (id_t)pid, si, WEXITED | __WALL | flags)) < 0 && errno == EINTR)
		;
	return r < 0 ? -errno : 0;
}

/* Ends the run: nothing started by the work survives it. Returns -ECHILD when
 * the host reaped the leader first (SIGCHLD ignored, or a waitpid(-1) reaper):
 * its status is lost and is not made up. */
static int run_finish(run_io *io, const spawn_child *c, run_end end, limits_cgroup *hold,
		      cordon_plugin_run_status *st)
{
	siginfo_t si = { 0 };
	if (end != RUN_EXITED)
		spawn_stop(c, SUPERVISOR_GRACE_MS, end == RUN_CANCELLED);
	/* Not reaped yet: the group id cannot be reused while we kill by it.
	 * (Should the host have reaped it, killed members keep the id taken.) */
	int r = wait_leader(c->pid, WNOWAIT, &si);
	kill(-c->pid, SIGKILL);
	/* As root, what the supervisor did not reach (it was killed): before the
	 * drain, since a survivor would hold the output open. */
	if (hold)
		jail_hold_end(hold);
	drain(io);
	if (r == 0)
		r = wait_leader(c->pid, 0, &si);
	wait_group_gone(c->pid);
	if (r < 0)
		return r;

	st->flags = 0;
	if (si.si_code == CLD_EXITED) {
		st->flags |= CORDON_PLUGIN_RUNSTATUS_EXITED;
		st->exit_code = si.si_status;
	} else {
		st->flags |= CORDON_PLUGIN_RUNSTATUS_SIGNALED;
		st->signal = si.si_status;
	}
	if (end == RUN_TIMED_OUT)
		st->flags |= CORDON_PLUGIN_RUNSTATUS_TIMED_OUT;
	if (end == RUN_CANCELLED)
		st->flags |= CORDON_PLUGIN_RUNSTATUS_CANCELLED;
	return 0;
}

static int local_run(void *sandbox, const cordon_plugin_run_spec *spec,
		     const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		     cordon_plugin_error *err)
{
	local_sandbox *sb = sandbox;
	if (spec->flags & ~(uint32_t)(CORDON_PLUGIN_RUNREQ_LAST | CORDON_PLUGIN_RUNREQ_SERVE_UNIX))
		return H->error_set(err, EINVAL, CORDON_PLUGIN_ERROR_INVALID,
				    ERRC(invalid_argument), "unknown run flags 0x%x", spec->flags);
	if (!spec->argv || !spec->argv[0])
		return H->error_set(err, EINVAL, CORDON_PLUGIN_ERROR_INVALID,
				    ERRC(invalid_argument), "an argv is required");
	int64_t deadline = now_ms() + (int64_t)(spec->timeout_ms ? spec->timeout_ms : 1);
	char program[PATH_MAX];
	/* The kernel tier searches PATH inside the sandbox, in its own view. */
	int r = sb->kernel ? 0 : find_program(spec, program, sizeof(program), err);
	if (r < 0)
		return r;

	/* One chunk of buffer: kept off the (possibly small) host thread stack. */
	run_io *io = malloc(sizeof(*io));
	if (!io)
		return H->error_set(err, ENOMEM, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				    "out of memory");
	run_fds f = { { -1, -1 }, { -1, -1 }, { -1, -1 }, -1 };
	bool want_stdin = spec->stdin_data && spec->stdin_len > 0;
	r = run_workdir(sb, spec->workdir, &f, err);
	if (r == 0 && (r = run_pipes(&f, want_stdin)) < 0)
		r = H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(spawn_failed),
				 "cannot create pipes: %s", strerror(-r));
	/* A streamed stdin is the core's pipe, which carries nothing else, and a terminal the
	 * peer of the core's pseudo-terminal: the work holds it itself (a copy of our own,
	 * closed after the start like the other ends), a terminal as 0, 1 and 2. */
	bool tty = spec->tty_fd >= 0;
	bool stream_in = !want_stdin && (tty || spec->stdin_fd >= 0);
	if (r == 0 && stream_in &&
	    (f.in[0] = fcntl(tty ? spec->tty_fd : spec->stdin_fd, F_DUPFD_CLOEXEC,
			     STDERR_FILENO + 1)) < 0)
		r = H->error_set(err, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(spawn_failed),
				 "cannot pass stdin: %s", strerror(errno));
	local_serve sc = { sink, NULL };
	net_forward *fw = NULL;
	/* Listening before the work starts; reported once its port accepts. */
	if (r == 0 && spec->port && sink->address)
		r = local_serve_start(sb->kernel, spec, &sc, &fw, err);
	if (r < 0) {
		run_fds_close(&f);
		free(io);
		return r;
	}

	spawn_plan plan = sb->base;
	plan.path = program;
	plan.argv = (char *const *)spec->argv;
	plan.envp = (char *const *)spec->envp;
	plan.stdio[0] = want_stdin || stream_in ? f.in[0] : sb->null_fd;
	plan.stdio[1] = tty ? f.in[0] : f.out[1];
	plan.stdio[2] = tty ? f.in[0] : f.err[1];
	plan.ctty = tty;
	plan.cwd_fd = f.cwd >= 0 ? f.cwd : sb->root_fd;
	spawn_child child;
	spawn_failure fail = { NULL, 0 };
	confine_child kchild;
	limits_cgroup jail_cg;
	bool held = !sb->kernel && jail_hold_begin(&plan, &jail_cg);
	if (sb->kernel) {
		r = kernel_spawn(sb->kernel, spec, plan.stdio, &kchild, err);
		/* The run's init is the sandbox's child, not ours: an fd, no pid. */
		child = (spawn_child){ -1, r == 0 ? confine_child_end_fd(&kchild) : -1 };
	} else {
		r = spawn_start(&plan, &child, &fail);
	}
	/* The child has its copies (or is gone): ours would hide EOF. */
	close_fd(&f.out[1]);
	close_fd(&f.err[1]);
	close_fd(&f.in[0]);
	close_fd(&f.cwd);
	if (r < 0) {
		if (held)
			jail_hold_end(&jail_cg);
		net_forward_stop(fw);
		run_fds_close(&f);
		free(io);
		return sb->kernel ? r : spawn_error(err, r, &fail, spec->argv[0]);
	}

	local_serve_report_pid(sink, child.pid, sb->kernel ? kchild.pidfd : -1);
	*io = (run_io){ .out = f.out[0],
			.err = f.err[0],
			.in = want_stdin ? f.in[1] : -1,
			.in_data = spec->stdin_data,
			.in_left = spec->stdin_len,
			.sink = sink };
	f.out[0] = f.err[0] = f.in[1] = -1;
	run_end end = run_loop(io, &child, spec->cancel_fd, deadline);
	net_forward_stop(fw); /* its listener and connections end with the server */
	int fr = 0, kr = 0;
	if (sb->kernel) {
		/* Stopped and watched through its pidfd; the status is the work's,
		 * as its init reported it. */
		kernel_stop(&kchild, end != RUN_EXITED);
		drain(io);
		ret->flags = end == RUN_TIMED_OUT   ? CORDON_PLUGIN_RUNSTATUS_TIMED_OUT
			     : end == RUN_CANCELLED ? CORDON_PLUGIN_RUNSTATUS_CANCELLED
						    : 0;
		kr = kernel_finish(&kchild, ret, spec->argv[0], err);
		child.pidfd = -1; /* released with kchild */
	} else {
		fr = run_finish(io, &child, end, held ? &jail_cg : NULL, ret);
	}
	close_fd(&io->out);
	close_fd(&io->err);
	close_fd(&io->in);
	free(io);
	if (child.pidfd >= 0)
		close(child.pidfd);
	run_fds_close(&f);
	if (end == RUN_FAILED)
		return H->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(run_failed),
				    "waiting for '%.256s' failed; the work was killed",
				    spec->argv[0]);
	if (fr < 0)
		return H->error_set(err, -fr, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(status_lost),
				    "the exit status of '%.256s' was lost: the host reaps child "
				    "processes itself (SIGCHLD ignored?)",
				    spec->argv[0]);
	return kr;
}

/* ---- file operations ------------------------------------------------------------------- */

static int path_error(cordon_plugin_error *err, int r, const char *op, const char *path)
{
	fserror e;
	fserror_describe(r, op, path, &e);
	return H->error_set(err, e.errnum, e.cls, e.code, "%s", e.message);
}

/* Tells the emitter's own stop value apart from an error of the operation. */
typedef struct relay {
	cordon_plugin_emit_fn fn;
	void *ctx;
	bool stopped;
} relay;

static int relay_emit(void *ctx, const void *data, size_t len)
{
	relay *rl = ctx;
	int r = rl->fn(rl->ctx, data, len);
	if (r != 0)
		rl->stopped = true;
	return r;
}

static int fs_result(int r, const relay *rl, cordon_plugin_error *err, const char *op,
		     const char *path)
{
	if (rl && rl->stopped)
		return r;
	return r < 0 ? path_error(err, r, op, path) : r;
}

static int local_read_file(void *sandbox, const char *path, uint64_t max_len,
			   cordon_plugin_emit_fn emit, void *ctx, cordon_plugin_error *err)
{
	local_sandbox *sb = sandbox;
	relay rl = { emit, ctx, false };
	int r = fsops_read(sb->root_fd, path, max_len, relay_emit, &rl);
	if (r == -EFBIG) /* the core names the limit */
		return r;
	return fs_result(r, &rl, err, "read", path);
}

static int local_write_file(void *sandbox, const char *path, const void *data, uint64_t len,
			    cordon_plugin_error *err)
{
	local_sandbox *sb = sandbox;
	if (len > SIZE_MAX)
		return H->error_set(err, EFBIG, CORDON_PLUGIN_ERROR_INVALID, ERRC(invalid_argument),
				    "write: too large");
	/* As root on an unprivileged owner's workspace, the write takes the
	 * owner's ids and rights, as the work's files do: what the host wrote
	 * stays the work's to change, and the file API is never more privileged
	 * there than the work. setfsuid is per thread and the call synchronous. */
	uid_t uid;
	gid_t gid;
	bool as_owner = sb->kernel && confine_sandbox_file_ids(sb->kernel, &uid, &gid);
	int old_gid = as_owner ? setfsgid(gid) : -1;
	int old_uid = as_owner ? setfsuid(uid) : -1;
	int r = fsops_write(sb->root_fd, path, data, (size_t)len);
	if (as_owner) {
		setfsuid((uid_t)old_uid);
		setfsgid((gid_t)old_gid);
	}
	return fs_result(r, NULL, err, "write", path);
}

static int local_glob(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
		      cordon_plugin_error *err)
{
	local_sandbox *sb = sandbox;
	relay rl = { emit, ctx, false };
	return fs_result(fsops_glob(sb->root_fd, pattern, relay_emit, &rl), &rl, err, "glob",
			 pattern);
}

static int local_walk(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
		      cordon_plugin_error *err)
{
	local_sandbox *sb = sandbox;
	relay rl = { emit, ctx, false };
	return fs_result(fsops_walk(sb->root_fd, dir, relay_emit, &rl), &rl, err, "walk", dir);
}

/* What hosts that died left behind: their private roots (either tier) and,
 * for the kernel tier, their runs' control groups. */
static int local_gc(void *tier, cordon_plugin_error *err)
{
	const local_tier *t = tier;
	return private_root_gc() + (t && t->kernel ? kernel_gc() : 0);
}

static int local_listen(void *sandbox, uint16_t *ret_port, cordon_plugin_error *err)
{
	return local_listen_inside(((local_sandbox *)sandbox)->kernel, ret_port, err);
}

const cordon_plugin_driver local_driver = {
	.size = sizeof(cordon_plugin_driver),
	.flags = CORDON_PLUGIN_DRIVER_STDIN_FD | CORDON_PLUGIN_DRIVER_TTY |
		 CORDON_PLUGIN_DRIVER_LIMITS | CORDON_PLUGIN_DRIVER_SERVE_UNIX |
		 CORDON_PLUGIN_DRIVER_MOUNTS | CORDON_PLUGIN_DRIVER_EGRESS_PROXY,
	.name = "local",
	.config_keys = local_keys,
	.configure = local_configure,
	.unconfigure = local_unconfigure,
	.probe = local_probe,
	.open = local_open,
	.run = local_run,
	.read_file = local_read_file,
	.write_file = local_write_file,
	.glob = local_glob,
	.walk = local_walk,
	.close = local_close,
	.gc = local_gc,
	.listen = local_listen,
};
