/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A guest's life: QEMU started through the host services' process_spawn (its own session
 * and process group, a pidfd, nothing inherited but its stderr pipe and its end of the
 * agent's socket pair as fd 3), the agent's HELLO awaited within a bound, and a stop that
 * always ends with QEMU reaped. The socket pair means no socket file and no directory on the
 * host: nothing to race for, nothing left behind.
 *
 * When this process dies without closing (SIGKILL), its end of the pair closes with it: the
 * guest's agent reads EOF and exits, pid 1 exiting panics the kernel, and QEMU (-no-reboot,
 * panic=-1) exits. The work cannot stop that chain: it runs under an unprivileged uid in the
 * guest (agent/guest.c); only a guest kernel exploit could keep an orphaned QEMU alive, until
 * the tier's gc (driver.c) kills it by its owner token.
 */
#include "config.h"

#include "vm.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define STOP_WAIT_MS 3000

int qemu_fail(cordon_plugin_error *err, const agent_error *r)
{
	return qemu_host->error_set(err, r->errnum ? r->errnum : EIO, r->cls, r->code, "%s",
				    r->message);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void qemu_vm_kill(qemu_vm *vm)
{
	if (vm->proc)
		vm->proc->kill(vm->proc);
}

static void kill_cb(void *ctx) { qemu_vm_kill(ctx); }

/* The first line of what QEMU said on stderr, for a refusal. */
static void first_line(const char *s, char *out, size_t len)
{
	size_t n = s ? strcspn(s, "\n") : 0;
	if (n >= len)
		n = len - 1;
	memcpy(out, s ? s : "", n);
	out[n] = '\0';
}

/* What the jailed QEMU sees besides its binary and libraries (docs/tiers/microvm.md, "The
 * jail"): the kernel and the initrd, its firmware directory (microvm's qboot, the option ROMs
 * of -kernel), its TCG module when emulating (Debian builds TCG as a module), /dev/kvm when
 * the accelerator is KVM. Absent optional files are left out: QEMU then fails as it would
 * unjailed, with its own message. */
typedef struct qemu_jail {
	char *paths[8];
	const char *paths_v[8];
	const char *devices[2];
} qemu_jail;

static void jail_add(qemu_jail *j, size_t *n, char *owned, bool optional)
{
	if (!owned || (optional && access(owned, F_OK) != 0) || *n + 1 >= 8) {
		free(owned);
		return;
	}
	j->paths[*n] = owned;
	j->paths_v[*n] = owned;
	(*n)++;
}

#if defined(__x86_64__)
#define QEMU_MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define QEMU_MULTIARCH "aarch64-linux-gnu"
#else
#define QEMU_MULTIARCH "unknown"
#endif

static void jail_make(const qemu_config *c, qemu_jail *j)
{
	memset(j, 0, sizeof(*j));
	size_t n = 0;
	jail_add(j, &n, qemu_xstrdup(c->kernel), false);
	jail_add(j, &n, qemu_xstrdup(c->initrd), false);
	/* QEMU's prefix: the directory above its bin/ */
	char *prefix = qemu_xstrdup(c->binary);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(prefix, '/');
		if (slash)
			*slash = '\0';
	}
	if (!*prefix) {
		free(prefix);
		prefix = qemu_xstrdup("/usr");
	}
	jail_add(j, &n, xasprintf("%s/share/qemu", prefix), true);
	if (c->accel == QEMU_ACCEL_TCG) {
		const char *target = c->arch == QEMU_ARCH_AARCH64 ? "aarch64" : "x86_64";
		jail_add(
			j, &n,
			xasprintf("%s/lib/" QEMU_MULTIARCH "/qemu/accel-tcg-%s.so", prefix, target),
			true);
		jail_add(j, &n, xasprintf("%s/lib64/qemu/accel-tcg-%s.so", prefix, target), true);
		jail_add(j, &n, xasprintf("%s/lib/qemu/accel-tcg-%s.so", prefix, target), true);
	}
	free(prefix);
	if (c->accel == QEMU_ACCEL_KVM)
		j->devices[0] = "/dev/kvm";
}

static void jail_free(qemu_jail *j)
{
	for (size_t i = 0; i < 8; i++)
		free(j->paths[i]);
}

/* A clone's (clone.c) QMP socket pair: ours in vm->qmp, QEMU's (its stdin) in *peer. */
static int qmp_pair(const qemu_config *c, qemu_vm *vm, int *peer, agent_error *r)
{
	int qp[2];
	*peer = -1;
	if (!c->qmp)
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qp) < 0)
		return qemu_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				   "socketpair: %s", strerror(errno));
	vm->qmp = qp[0];
	*peer = qp[1];
	fcntl(vm->qmp, F_SETFL, O_NONBLOCK);
	return 0;
}

/* QEMU on c; stdin_fd (or -1: /dev/null) as its stdin. */
static int spawn(const qemu_config *c, int stdin_fd, qemu_vm *vm, agent_error *r)
{
	int sp[2] = { -1, -1 }, np[2] = { -1, -1 }, ep[2] = { -1, -1 };
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, np) < 0 ||
	    pipe2(ep, O_CLOEXEC) < 0) {
		int e = errno;
		for (int i = 0; i < 2; i++) {
			close_fd(&sp[i]);
			close_fd(&np[i]);
		}
		return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				   "socketpair or pipe: %s", strerror(e));
	}
	char **argv = qemu_argv(c);
	qemu_jail jail;
	jail_make(c, &jail);
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = (const char *const *)argv,
		.envp = NULL,
		.stdin_fd = stdin_fd,
		.stdout_fd = np[1], /* QEMU_NET_FD */
		.stderr_fd = ep[1],
		.extra_fd = sp[1],
		/* jailed (docs/tiers/microvm.md, "The jail"), and dead with us */
		.flags = CORDON_HOST_PROCESS_JAIL | CORDON_HOST_PROCESS_PDEATHSIG,
		.jail_paths = jail.paths_v,
		.jail_devices = jail.devices,
		/* A template's or a clone's RAM (clone.c): QEMU 7.2 opens mem_path read-write and
		 * no bind can carry a memfd, so the jail links the path to the descriptor; a
		 * clone's is sealed, so QEMU maps it privately and cannot change it. */
		.jail_fd_path = c->mem_path,
		.jail_fd = c->mem_path ? c->mem_fd : -1,
	};
	int ret = argv ? qemu_host->process_spawn(&spec, &vm->proc, NULL) : -EINVAL;
	xstrv_free(argv);
	jail_free(&jail);
	close(sp[1]);
	close(np[1]);
	close(ep[1]);
	if (ret < 0) {
		close(sp[0]);
		close(np[0]);
		close(ep[0]);
		return qemu_refuse(r, -ret, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				   "could not start %s: %s", c->binary, strerror(-ret));
	}
	vm->chan = sp[0];
	vm->net = np[0];
	vm->err = ep[0];
	fcntl(vm->chan, F_SETFL, O_NONBLOCK);
	fcntl(vm->err, F_SETFL, O_NONBLOCK);
	return 0;
}

int qemu_vm_spawn(const qemu_config *c, qemu_vm *vm, agent_error *r)
{
	*vm = (qemu_vm){ .chan = -1, .err = -1, .qmp = -1, .net = -1 };
	int qmp_peer;
	int ret = qmp_pair(c, vm, &qmp_peer, r);
	if (ret == 0) /* QEMU_QMP_FD or QEMU_VFS_FD: never both (qemu_argv) */
		ret = spawn(c, c->virtiofs ? c->vfs_fd : qmp_peer, vm, r);
	close_fd(&qmp_peer);
	if (ret < 0)
		close_fd(&vm->qmp);
	return ret;
}

int qemu_vm_start(const qemu_config *c, uint64_t boot_ms, qemu_vm *vm, agent_error *r)
{
	int64_t t0 = agent_now_ms();
	int ret = qemu_vm_spawn(c, vm, r);
	if (ret < 0)
		return ret;
	agent_exchange x = { .kind = AGENT_ANSWER_HELLO };
	agent_sink k = { 0 };
	x.sink = &k;
	agent_link link = { .in = &vm->chan,
			    .out = vm->chan,
			    .err = vm->err,
			    .session = true,
			    .ctx = vm,
			    .kill = kill_cb };
	bool deadline = false;
	int loop = agent_exchange_run(&x, &link, boot_ms, -1, NULL, 0, &deadline);
	vm->hello_ms = agent_now_ms() - t0;
	if (x.done && loop == 0) {
		qemu_host->log(CORDON_PLUGIN_LOG_DEBUG, "qemu", "guest agent up in %lld ms",
			       (long long)vm->hello_ms);
		return 0;
	}
	char line[300];
	first_line(x.diag, line, sizeof(line));
	qemu_vm_kill(vm);
	qemu_vm_stop(vm);
	if (deadline)
		return qemu_refuse(r, ETIMEDOUT, CORDON_PLUGIN_ERROR_TRANSIENT,
				   ERRC(vm_boot_timeout),
				   "the guest's agent did not say hello within %llu ms%s%s",
				   (unsigned long long)boot_ms, line[0] ? ": " : "", line);
	if (loop < 0 && x.have_error) /* an ERROR where the HELLO was due: its reason */
		return qemu_refuse(r, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				   "the guest's agent failed before its hello: %s",
				   x.error.message);
	if (loop < 0)
		return qemu_refuse(r, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				   "the guest's agent spoke out of turn");
	return qemu_refuse(r, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
			   "QEMU ended before the guest's agent said hello%s%s",
			   line[0] ? ": " : "", line);
}

/* QEMU exits once pid 1 of the guest does (END read, or EOF). */
void qemu_vm_stop(qemu_vm *vm)
{
	close_fd(&vm->qmp); /* a clone's: QEMU goes on without its monitor */
	close_fd(&vm->net);
	if (!vm->proc) {
		close_fd(&vm->chan);
		close_fd(&vm->err);
		return;
	}
	if (vm->chan >= 0) {
		uint8_t end[AGENT_FRAME_HEADER];
		agent_end_frame(end);
		if (write_nosigpipe(vm->chan, end, sizeof(end)) != (ssize_t)sizeof(end))
			qemu_host->log(CORDON_PLUGIN_LOG_DEBUG, "qemu", "the guest took no END");
		shutdown(vm->chan, SHUT_WR);
	}
	int status = 0;
	if (vm->proc->wait(vm->proc, STOP_WAIT_MS, CORDON_HOST_WAIT_KILL_GROUP, &status) ==
	    -ETIMEDOUT) {
		vm->proc->kill(vm->proc);
		vm->proc->wait(vm->proc, -1, CORDON_HOST_WAIT_KILL_GROUP, &status);
	}
	vm->proc->release(vm->proc);
	vm->proc = NULL;
	close_fd(&vm->chan);
	close_fd(&vm->err);
}

/* ---- the pins ----------------------------------------------------------------------- */

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

static bool same_file(const qemu_pin *p, const struct stat *st)
{
	return p->ok && p->dev == st->st_dev && p->ino == st->st_ino && p->size == st->st_size &&
	       p->mtime_ns == ns(st->st_mtim) && p->ctime_ns == ns(st->st_ctim);
}

int qemu_pin_check(qemu_tier *t, qemu_pin *pin, const char *key, agent_error *r)
{
	struct stat st;
	if (lstat(pin->path, &st) < 0)
		return qemu_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_image_invalid),
				   "%s %s: %s", key, pin->path, strerror(errno));
	/* QEMU opens it by name after us: only its owner (root or us) may change it */
	if (!S_ISREG(st.st_mode) || (st.st_mode & 022) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()))
		return qemu_refuse(r, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN, ERRC(vm_image_invalid),
				   "%s %s must be a regular file that only root or this user "
				   "can write",
				   key, pin->path);
	/* As root the jailed QEMU opens it under a uid of its own (the jail, process_spawn) */
	if (geteuid() == 0 && !(st.st_mode & S_IROTH))
		return qemu_refuse(r, EACCES, CORDON_PLUGIN_ERROR_FORBIDDEN, ERRC(vm_image_invalid),
				   "%s %s must be readable by others: the jailed QEMU runs as a "
				   "uid of its own",
				   key, pin->path);
	pthread_mutex_lock(&t->lock);
	bool cached = same_file(pin, &st);
	pthread_mutex_unlock(&t->lock);
	if (cached)
		return 0;
	char hex[65];
	int ret = qemu_file_sha256(pin->path, hex);
	if (ret < 0)
		return qemu_refuse(r, -ret, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_image_invalid),
				   "%s %s: %s", key, pin->path, strerror(-ret));
	if (strcmp(hex, pin->sha256) != 0)
		return qemu_refuse(r, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN, ERRC(vm_image_mismatch),
				   "%s %s has sha256 %s, the policy pins %s", key, pin->path, hex,
				   pin->sha256);
	pthread_mutex_lock(&t->lock);
	pin->ok = true;
	pin->dev = st.st_dev;
	pin->ino = st.st_ino;
	pin->size = st.st_size;
	pin->mtime_ns = ns(st.st_mtim);
	pin->ctime_ns = ns(st.st_ctim);
	pthread_mutex_unlock(&t->lock);
	return 0;
}
