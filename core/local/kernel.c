/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier of the local driver: probe, open, run hooks (kernel.h). */
#include "config.h"

#include "kernel.h"
#include "context.h"
#include "landlock.h"
#include "seccomp.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define H (&cordon_host_services)

static int read_sysctl(const char *path, long *ret)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return -ENOENT;
	char *end;
	long v = strtol(text, &end, 10);
	if (end == text)
		return -EINVAL;
	*ret = v;
	return 0;
}

static bool am_root(void) { return geteuid() == 0; }

/* What the host lacks, in words, before any launch is tried. */
static bool missing_mechanism(char *why, size_t len)
{
	long v;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
		snprintf(why, len, "the kernel has no seccomp (CONFIG_SECCOMP)");
		return true;
	}
	if (access("/proc/self/ns/user", F_OK) < 0) {
		snprintf(why, len, "the kernel has no user namespaces (CONFIG_USER_NS)");
		return true;
	}
	if (read_sysctl("/proc/sys/user/max_user_namespaces", &v) == 0 && v == 0) {
		snprintf(why, len, "user namespaces are disabled (user.max_user_namespaces = 0)");
		return true;
	}
	if (!am_root() && read_sysctl("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 &&
	    v == 0) {
		snprintf(why, len,
			 "unprivileged user namespaces are disabled "
			 "(kernel.unprivileged_userns_clone = 0)");
		return true;
	}
	if (!am_root() &&
	    read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 &&
	    v == 1) {
		snprintf(why, len,
			 "AppArmor restricts unprivileged user namespaces "
			 "(kernel.apparmor_restrict_unprivileged_userns = 1)");
		return true;
	}
	if (read_sysctl("/proc/sys/vm/memfd_noexec", &v) == 0 && v >= 2) {
		snprintf(why, len,
			 "executing memfds is forbidden (vm.memfd_noexec = 2): the "
			 "sandbox's init runs from one");
		return true;
	}
	const char *what = NULL;
	int fd = seccomp_filter_fd(&what);
	if (fd < 0) {
		snprintf(why, len, "the seccomp filter cannot be built (%s): %s", what ? what : "?",
			 g_strerror(-fd));
		return true;
	}
	return false;
}

void kernel_probe(const cordon_plugin_limits *limits, cordon_plugin_probe *ret)
{
	char why[CORDON_PLUGIN_REASON_MAX - 64] = "";
	ret->available = 0;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL;
	limits_plan lp;
	if (confine_trial(limits, missing_mechanism, why, sizeof(why)) < 0 ||
	    limits_plan_make(limits, &lp, why, sizeof(why)) < 0) {
		snprintf(ret->reason, sizeof(ret->reason), "kernel confinement unavailable: %s",
			 why);
		return;
	}
	char lim[256];
	limits_plan_describe(&lp, lim, sizeof(lim));
	int abi = landlock_abi();
	size_t denied;
	seccomp_filter_deny_list(&denied);
	ret->available = 1;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_KERNEL;
	/* The sandbox's network namespace has only lo; governed: its one way out is
	 * cordon's proxy, on a listener inside (docs/network.md). */
	ret->egress_enforced = CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY) |
			       CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_GOVERNED);
	/* and its own loopback, where a service's listener is (local_listen_inside) */
	ret->features = CORDON_PLUGIN_PROBE_LISTEN;
	snprintf(ret->reason, sizeof(ret->reason),
		 "user, mount, pid, net, ipc, uts and cgroup namespaces; read-only host; "
		 "seccomp (%zu calls refused, %zu BPF instructions); Landlock %s%d (%s); "
		 "no capabilities, no_new_privs, %s; limits: %s",
		 denied, seccomp_filter_insns(), abi > 0 ? "ABI " : "absent, ABI ", abi,
		 landlock_describe(abi),
		 am_root() ? "work runs as a host uid of its own per sandbox"
			   : "work runs as the caller's uid",
		 lim);
}

int kernel_check_limits(const cordon_plugin_limits *limits, char *why, size_t whylen)
{
	return limits_nofile_check(limits, why, whylen);
}

/* open_spec.mounts (ABI 1.4), each bound from the core's descriptor into the sandbox. */
static int kernel_mounts(confine_sandbox *k, const cordon_plugin_open_spec *spec,
			 cordon_plugin_error *err)
{
	bool has = spec->size >= offsetof(cordon_plugin_open_spec, reserved2);
	for (uint32_t i = 0; has && i < spec->n_mounts; i++) {
		const cordon_plugin_mount *m = &spec->mounts[i];
		char why[512];
		bool rw = m->flags & CORDON_PLUGIN_MOUNT_RW;
		int r = confine_sandbox_mount(k, m->fd, m->inside, rw, why, sizeof(why));
		if (r == -EPERM)
			return H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
					    ERRC(mount_forbidden), "kernel tier: mount %s: %s",
					    m->host, why);
		if (r < 0)
			return H->error_set(err, -r, CORDON_PLUGIN_ERROR_INVALID,
					    ERRC(mount_invalid), "kernel tier: mount %s: %s",
					    m->host, why);
	}
	return 0;
}

int kernel_open(int *root_fd, const char *private_path, const cordon_plugin_open_spec *spec,
		uint64_t private_disk, confine_sandbox **ret, cordon_plugin_error *err)
{
	if (spec->egress != CORDON_PLUGIN_EGRESS_DENY &&
	    spec->egress != CORDON_PLUGIN_EGRESS_GOVERNED)
		return H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    ERRC(egress_unsupported),
				    "kernel tier: open egress is never given; egress deny (no "
				    "network) or governed (the tier's egress rules, through "
				    "cordon's proxy) can be honoured");
	char why[512];
	/* A private root is ours; a workspace is the host's, owned by someone. */
	if (spec->workspace && confine_workspace_owner_check(*root_fd, why, sizeof(why)) < 0)
		return H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    ERRC(workspace_forbidden), "kernel tier: %s", why);
	/* Limits first: only they make an open forbidden. A build that fails later with
	 * EPERM (a host filter refusing a step) is the tier unavailable, as the probe says. */
	limits_plan plan;
	if (limits_plan_make(&spec->limits, &plan, why, sizeof(why)) < 0)
		return H->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    ERRC(limit_unenforceable), "kernel tier: %s", why);
	int tmpfs_fd = -1;
	int r = confine_sandbox_new(*root_fd, private_path, &spec->limits,
				    spec->workspace ? 0 : private_disk, &tmpfs_fd, ret, why,
				    sizeof(why));
	if (r == 0 && tmpfs_fd >= 0) {
		if (*root_fd >= 0)
			close(*root_fd);
		*root_fd = tmpfs_fd;
	}
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(tier_unavailable),
				    "kernel tier: %s", why);
	r = kernel_mounts(*ret, spec, err);
	if (r < 0) {
		confine_sandbox_free(*ret);
		*ret = NULL;
	}
	return r;
}

int kernel_spawn(confine_sandbox *k, const cordon_plugin_run_spec *spec, const int stdio[3],
		 confine_child *ret, cordon_plugin_error *err)
{
	confine_request req = {
		.argv = spec->argv,
		.envp = spec->envp,
		.workdir = spec->workdir,
		.stdin_fd = stdio[0],
		.stdout_fd = stdio[1],
		.stderr_fd = stdio[2],
		.last = spec->flags & CORDON_PLUGIN_RUNREQ_LAST,
		.ctty = spec->tty_fd >= 0,
	};
	char why[512];
	int r = confine_spawn(k, &req, ret, why, sizeof(why));
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(spawn_failed),
				    "cannot start '%.256s' in the kernel tier: %s", spec->argv[0],
				    why);
	return 0;
}

void kernel_release_warm(void) { confine_release_warm(); }

int kernel_gc(void) { return limits_gc(); }

void kernel_stop(confine_child *c, bool kill) { confine_child_stop(c, kill); }

int kernel_finish(confine_child *c, cordon_plugin_run_status *st, const char *argv0,
		  cordon_plugin_error *err)
{
	const uint32_t stopped = CORDON_PLUGIN_RUNSTATUS_TIMED_OUT |
				 CORDON_PLUGIN_RUNSTATUS_CANCELLED;
	bool killed = st->flags & stopped;
	cordon_plugin_run_status work = { .size = sizeof(work) };
	bool exec_failed = false;
	char why[512];
	int r = confine_child_finish(c, killed, &work, &exec_failed, why, sizeof(why));
	confine_child_release(c);
	if (r < 0 && exec_failed)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(exec_failed),
				    "cannot execute '%.256s': %s", argv0, g_strerror(-r));
	if (r < 0)
		return H->error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(run_failed),
				    "'%.256s': %s", argv0, why);
	st->flags = (st->flags & stopped) | work.flags;
	st->exit_code = work.exit_code;
	st->signal = work.signal;
	return 0;
}
