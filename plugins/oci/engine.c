/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Talking to the engine CLI: argv with the tier's global flags, a minimal
 * environment (no host secret reaches the CLI or its logs), one-shot commands
 * through host->spawn with a timeout, and what their failures mean.
 */
#include "config.h"

#include "driver.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define OCI_PULL_TIMEOUT_MS (10ull * 60 * 1000)

/* ---- the seccomp profile -------------------------------------------------------- */

static pthread_once_t profile_once = PTHREAD_ONCE_INIT;
static int profile_fd[2] = { -1, -1 }, profile_errno[2];

/* A sealed memfd: the CLIs read the profile client-side from a path, and
 * this one is on no disk and cannot be changed by anyone. (Whatever its
 * number, the CLI gets it as OCI_PASS_FD: process_spawn hands over copies.) */
static int profile_memfd(const char *text)
{
	size_t len = strlen(text);
	int fd = memfd_create("cordon-seccomp-profile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	errno = 0;
	if (fd >= 0 && write(fd, text, len) == (ssize_t)len &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		return fd;
	int e = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	return -e;
}

static void profile_make(void)
{
	const char *text[2] = { oci_seccomp_profile, oci_seccomp_profile_gvisor };
	for (int i = 0; i < 2; i++) {
		int fd = profile_memfd(text[i]);
		profile_fd[i] = fd >= 0 ? fd : -1;
		profile_errno[i] = fd >= 0 ? 0 : -fd;
	}
}

int oci_seccomp_fd(bool gvisor, oci_refusal *r)
{
	pthread_once(&profile_once, profile_make);
	if (profile_fd[gvisor] < 0)
		return oci_refuse(r, profile_errno[gvisor], CORDON_PLUGIN_ERROR_TERMINAL,
				  ERRC(container_seccomp),
				  "could not hold the seccomp profile in memory: %s",
				  strerror(profile_errno[gvisor]));
	return profile_fd[gvisor];
}

char *oci_tier_engine(oci_tier *t, oci_refusal *r)
{
	pthread_mutex_lock(&t->lock);
	if (!t->engine) {
		if (t->engine_cfg) {
			if (access(t->engine_cfg, X_OK) == 0)
				t->engine = xstrdup(t->engine_cfg);
		} else if (oci_host->find_program) {
			char *p = oci_host->find_program(t->kind->name);
			t->engine = xstrdup(p);
			oci_host->free(p);
		}
	}
	char *e = xstrdup(t->engine);
	pthread_mutex_unlock(&t->lock);
	if (!e)
		oci_refuse(r, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_unavailable),
			   "the %s CLI is not installed (%s)", t->kind->name,
			   t->engine_cfg ? t->engine_cfg : "not found on PATH");
	return e;
}

char **oci_engine_argv(const oci_tier *t, const char *engine, const char *const *args)
{
	oci_strv a = { 0 };
	oci_strv_add(&a, engine);
	if (t->host_url) {
		oci_strv_add(&a, t->kind->host_flag);
		oci_strv_add(&a, t->host_url);
	}
	if (t->kind->runtime_is_global && t->runtime) {
		oci_strv_add(&a, "--runtime");
		oci_strv_add(&a, t->runtime);
	}
	for (size_t i = 0; t->runtime_flags && t->runtime_flags[i]; i++) {
		oci_strv_add(&a, "--runtime-flag");
		oci_strv_add(&a, t->runtime_flags[i]);
	}
	if (t->cgroup_manager) {
		oci_strv_add(&a, "--cgroup-manager");
		oci_strv_add(&a, t->cgroup_manager);
	}
	for (size_t i = 0; args && args[i]; i++)
		oci_strv_add(&a, args[i]);
	return oci_strv_steal(&a);
}

/* PATH for the CLI's own helpers (conmon, runc), HOME for its configuration,
 * a fixed locale so its messages can be recognised; nothing from the host's
 * environment, so no token or key of the host process reaches the engine. */
char *oci_engine_home(void)
{
	struct passwd pw, *res = NULL;
	char buf[1024];
	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) == 0 && res && res->pw_dir)
		return xstrdup(res->pw_dir);
	return xstrdup("/");
}

char **oci_engine_env(void)
{
	oci_strv e = { 0 };
	oci_strv_add(&e, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	oci_strv_add(&e, "LC_ALL=C");
	char *home = oci_engine_home();
	oci_strv_addf(&e, "HOME=%s", home);
	free(home);
	if (getuid() != 0) {
		char dir[64];
		struct stat sb;
		snprintf(dir, sizeof(dir), "/run/user/%u", (unsigned)getuid());
		if (stat(dir, &sb) == 0 && sb.st_uid == getuid())
			oci_strv_addf(&e, "XDG_RUNTIME_DIR=%s", dir);
	}
	return oci_strv_steal(&e);
}

int oci_cli(const oci_tier *t, const char *engine, const char *const *args, const void *in,
	    size_t in_len, uint64_t timeout_ms, uint64_t cap, oci_cli_result *ret)
{
	*ret = (oci_cli_result){ .exit_code = -1 };
	if (!oci_host->spawn)
		return -ENOSYS;
	char **argv = oci_engine_argv(t, engine, args);
	char **env = oci_engine_env();
	cordon_host_spawn sp = {
		.size = sizeof(sp),
		.argv = (const char *const *)argv,
		.envp = (const char *const *)env,
		.stdin_data = in,
		.stdin_len = in_len,
		.timeout_ms = timeout_ms ? timeout_ms : t->cli_timeout_ms,
		.output_cap = cap,
	};
	int64_t t0 = oci_now_ms();
	int r = oci_host->spawn(&sp, NULL);
	/* the subcommand and how long it took, never its arguments (values) */
	oci_host->log(CORDON_PLUGIN_LOG_DEBUG, t->kind->name, "%s %s: exit %d in %lld ms",
		      t->kind->name, args[0], sp.exit_code, (long long)(oci_now_ms() - t0));
	xstrv_free(argv);
	xstrv_free(env);
	/* a daemon that stopped answering must be probed again at once */
	if (r < 0 || sp.timed_out ||
	    (t->kind->daemon && sp.exit_code != 0 && oci_output_says_daemon_down(sp.err)))
		oci_health_note(t, false);
	ret->out = sp.out;
	ret->err = sp.err;
	ret->exit_code = sp.exit_code;
	ret->timed_out = sp.timed_out != 0;
	return r;
}

void oci_cli_result_clear(oci_cli_result *r)
{
	if (r->out)
		oci_host->free(r->out);
	if (r->err)
		oci_host->free(r->err);
	r->out = r->err = NULL;
}

int oci_cli_failure(const oci_tier *t, const char *what, const oci_cli_result *res, oci_refusal *r)
{
	char line[300];
	oci_first_line(res->err && *res->err ? res->err : res->out, line, sizeof(line));
	if (res->timed_out)
		return oci_refuse(r, ETIMEDOUT, CORDON_PLUGIN_ERROR_TRANSIENT,
				  ERRC(engine_unavailable),
				  "%s: the %s engine did not answer in time", what, t->kind->name);
	if (t->kind->daemon && oci_output_says_daemon_down(res->err))
		return oci_refuse(r, ECONNREFUSED, CORDON_PLUGIN_ERROR_TRANSIENT,
				  ERRC(engine_unavailable), "%s: the %s daemon is not running",
				  what, t->kind->name);
	if (oci_output_says_no_image(res->err))
		return oci_refuse(r, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL,
				  ERRC(container_image_missing), "%s: image not available: %s",
				  what, line);
	return oci_refuse(r, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed), "%s: %s", what,
			  line[0] ? line : "the engine failed without a message");
}

bool oci_image_present(const oci_tier *t, const char *engine, const char *image)
{
	const char *args[] = { "image", "inspect", "--format", "{{.Id}}", "--", image, NULL };
	oci_cli_result res;
	int r = oci_cli(t, engine, args, NULL, 0, 0, 64 << 10, &res);
	bool ok = r == 0 && res.exit_code == 0;
	oci_cli_result_clear(&res);
	return ok;
}

int oci_image_pull(const oci_tier *t, const char *engine, const char *image, oci_refusal *r)
{
	if (!t->pull_missing)
		return oci_refuse(
			r, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(container_image_missing),
			"image %s is not present and the tier never pulls (pull: never)", image);
	/* by digest: the engine verifies the content against the pin */
	const char *args[] = { "pull", "-q", "--", image, NULL };
	oci_cli_result res;
	int ret = oci_cli(t, engine, args, NULL, 0, OCI_PULL_TIMEOUT_MS, 64 << 10, &res);
	if (ret == 0 && res.exit_code != 0) {
		char line[300];
		oci_first_line(res.err, line, sizeof(line));
		if (t->kind->daemon && oci_output_says_daemon_down(res.err))
			ret = oci_cli_failure(t, "pull", &res, r);
		else
			ret = oci_refuse(r, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL,
					 ERRC(container_image_unavailable),
					 "pulling %s by digest failed: %s", image, line);
	} else if (ret < 0) {
		oci_refuse(r, -ret, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed),
			   "could not run %s pull: %s", t->kind->name, strerror(-ret));
	}
	oci_cli_result_clear(&res);
	return ret;
}

void oci_container_remove(const oci_tier *t, const char *engine, const char *name)
{
	oci_strv a = { 0 };
	oci_strv_add(&a, "rm");
	oci_strv_add(&a, "-f");
	for (size_t i = 0; t->kind->rm_extra && t->kind->rm_extra[i]; i++)
		oci_strv_add(&a, t->kind->rm_extra[i]);
	oci_strv_add(&a, "--");
	oci_strv_add(&a, name);
	char **args = oci_strv_steal(&a);
	oci_cli_result res;
	int r = oci_cli(t, engine, (const char *const *)args, NULL, 0, 0, 64 << 10, &res);
	xstrv_free(args);
	oci_relay_remove(t, name); /* a pooled or failed container's, where there is one */
	if (r < 0 || (res.exit_code != 0 && !oci_output_says_no_container(res.err))) {
		char line[300];
		oci_first_line(res.err, line, sizeof(line));
		/* left to `gc`: the container carries our owner label */
		oci_host->log(CORDON_PLUGIN_LOG_WARNING, t->kind->name,
			      "could not remove container %s: %s", name, line);
	}
	oci_cli_result_clear(&res);
}

void oci_health_note(const oci_tier *t, bool ok)
{
	oci_health *h = t->health;
	pthread_mutex_lock(&h->lock);
	if (ok)
		h->ok_at = oci_now_ms();
	else
		h->probed = false;
	pthread_mutex_unlock(&h->lock);
}

/* The named network a published server joins, created when absent (as the
 * reference's EnsureContainerNetwork): idempotent, and a concurrent creator
 * winning the race is success. It names the network; whether its egress is
 * governed is the administrator's configuration of that network. */
int oci_network_ensure(const oci_tier *t, const char *engine, const char *name, oci_refusal *r)
{
	const char *inspect[] = { "network", "inspect", "--format", "{{.Name}}", "--", name, NULL };
	oci_cli_result res;
	int ret = oci_cli(t, engine, inspect, NULL, 0, 0, 64 << 10, &res);
	bool exists = ret == 0 && res.exit_code == 0;
	oci_cli_result_clear(&res);
	if (exists)
		return 0;
	const char *create[] = { "network", "create", "--", name, NULL };
	ret = oci_cli(t, engine, create, NULL, 0, 0, 64 << 10, &res);
	if (ret == 0 && res.exit_code != 0 && !strcasestr(res.err ? res.err : "", "already exists"))
		ret = oci_cli_failure(t, "creating the network", &res, r);
	else if (ret < 0)
		oci_refuse(r, -ret, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed),
			   "could not run %s network create", t->kind->name);
	oci_cli_result_clear(&res);
	return ret;
}

#define REAP_BATCH 64
#define KILL_WAIT_MS 10000

int oci_container_pid(const oci_tier *t, const char *engine, const char *name)
{
	const char *args[] = { "inspect", "--format", "{{.State.Running}} {{.State.Pid}}",
			       "--",      name,       NULL };
	oci_cli_result res;
	int r = oci_cli(t, engine, args, NULL, 0, 0, 4096, &res);
	long pid = -1;
	if (r == 0 && res.exit_code == 0 && res.out && strncmp(res.out, "true ", 5) == 0)
		pid = strtol(res.out + 5, NULL, 10);
	oci_cli_result_clear(&res);
	return pid > 1 && pid < INT32_MAX ? (int)pid : -1;
}

int oci_container_pidfd(const oci_tier *t, const char *engine, const char *name)
{
	int pid = oci_container_pid(t, engine, name);
	if (pid < 0)
		return -1;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -1;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	/* the pid could have died and been reused between the inspect and the
	 * open: only a container still running with that pid proves fd is its */
	if (oci_container_pid(t, engine, name) != pid) {
		close(fd);
		return -1;
	}
	return fd;
}

/* SIGKILL through a pidfd of pid 1, waiting until it (and with it the whole
 * pid namespace) is gone. */
static bool kill_by_pidfd(int pidfd)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return false;
	struct pollfd p = { pidfd, POLLIN, 0 };
	int64_t until = oci_now_ms() + KILL_WAIT_MS;
	for (;;) {
		int64_t left = until - oci_now_ms();
		if (left <= 0)
			return false;
		int n = poll(&p, 1, (int)left);
		if (n > 0)
			return true;
		if (n < 0 && errno != EINTR)
			return false;
	}
}

void oci_container_end(oci_tier *t, const char *engine, const char *name, int pidfd)
{
	bool killed = false;
	if (pidfd >= 0) {
		killed = kill_by_pidfd(pidfd);
		close(pidfd);
	}
	if (killed) {
		oci_reap_note(t, name);
		return;
	}
	/* SIGKILL to the container's pid 1 (the idle helper): the kernel kills
	 * every other process of its pid namespace with it */
	const char *args[] = { "kill", "--signal", "KILL", "--", name, NULL };
	oci_cli_result res;
	int r = oci_cli(t, engine, args, NULL, 0, 0, 64 << 10, &res);
	killed = r == 0 && res.exit_code == 0;
	bool gone = r == 0 && res.exit_code != 0 && oci_output_says_no_container(res.err);
	oci_cli_result_clear(&res);
	if (gone)
		return;
	if (!killed) {
		/* not confirmed (stopped already, engine trouble): remove it now */
		oci_container_remove(t, engine, name);
		return;
	}
	oci_reap_note(t, name);
}

void oci_reap_note(oci_tier *t, const char *name)
{
	pthread_mutex_lock(&t->lock);
	char **v = realloc(t->reap, (t->n_reap + 2) * sizeof(char *));
	if (!v)
		abort();
	t->reap = v;
	t->reap[t->n_reap++] = xstrdup(name);
	t->reap[t->n_reap] = NULL;
	bool full = t->n_reap >= REAP_BATCH;
	pthread_mutex_unlock(&t->lock);
	if (full)
		oci_reap_all(t);
}

static bool strv_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

void oci_reap_all(oci_tier *t)
{
	pthread_mutex_lock(&t->lock);
	char **names = t->reap;
	size_t n = t->n_reap;
	char *engine = xstrdup(t->engine);
	t->reap = NULL;
	t->n_reap = 0;
	pthread_mutex_unlock(&t->lock);
	if (!names)
		goto out;
	if (!engine) {
		xstrv_free(names);
		goto out;
	}
	/* which of them the engine has not removed yet (usually none): one ps,
	 * then one rm for those; a failing ps removes every name one by one */
	char *owner = xasprintf("label=cordon.owner=%s", t->owner);
	char *tier = xasprintf("label=cordon.tier=%s", t->name);
	const char *ps[] = { "ps",  "-a",       "--format", "{{.Names}}", "--filter",
			     owner, "--filter", tier,       NULL };
	oci_cli_result res;
	int r = oci_cli(t, engine, ps, NULL, 0, 0, 1 << 20, &res);
	free(owner);
	free(tier);
	bool listed = r == 0 && res.exit_code == 0;
	char *save = NULL;
	for (char *line = listed && res.out ? strtok_r(res.out, " \n", &save) : NULL; line;
	     line = strtok_r(NULL, " \n", &save))
		if (strv_has(names, n, line))
			oci_container_remove(t, engine, line);
	oci_cli_result_clear(&res);
	for (size_t i = 0; !listed && i < n; i++)
		oci_container_remove(t, engine, names[i]);
	xstrv_free(names);
out:
	free(engine);
}
