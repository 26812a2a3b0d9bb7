/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The microVM driver, once for every family (kvm, hvf, hyperv): configure, the truthful
 * probe, open (one guest per sandbox, booted cold or, with `clone: true`, restored as a
 * copy-on-write clone of a template: clone.c), runs and file operations over the agent's
 * channel (agent/client.c, as the container tiers), close.
 *
 * Containment: `microvm` only with the family's hardware accelerator usable here, QEMU and
 * its machine type present, both pins matching and a trial boot that reached the agent.
 * `accel: tcg` (emulation) reports `kernel`, never `microvm`: QEMU does not treat TCG as a
 * security boundary (DESIGN §7).
 */
#include "config.h"

#include "net.h"
#include "ttypeer.h"
#include "vm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const cordon_host *qemu_host;

#define DEFAULT_BOOT_TIMEOUT_MS 60000 /* TCG on a loaded 2-core host */
#define DEFAULT_SCRATCH (64ull << 20)
#define DEFAULT_MEMORY_MIB 256
#define MIN_MEMORY_MIB 128 /* the guest kernel and initramfs boot in it */
#define DEFAULT_OUTPUT_CAP (16ull << 20)
#define RUN_GRACE_MS 5000 /* past a run's timeout: the agent's own kill */
#define FILE_OP_TIMEOUT_MS 60000
#define PROBE_TIMEOUT_MS 10000
#define DEFAULT_WORKSPACE_FILES 10000
#define MAX_WORKSPACE_FILES 1000000

typedef struct qemu_sandbox {
	qemu_tier *tier;
	pthread_mutex_t lock; /* one exchange at a time on the channel */
	qemu_vm vm;
	uint64_t out_cap;
	bool broken; /* the channel failed: the guest is gone */
	qemu_workspace ws;
	cordon_host_process *fsd; /* virtiofsd, when ws is shared by virtio-fs (virtiofs.c) */
	pthread_mutex_t net_lock; /* guards net's making */
	qemu_net *net; /* the network channel's host end (net.c), made by its first user */
} qemu_sandbox;

/* ---- configure ------------------------------------------------------------------------ */

static bool is_sha256(const char *s)
{
	if (!s || strlen(s) != 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static void tier_free(qemu_tier *t)
{
	if (!t)
		return;
	qemu_pool_free(t->pool);
	qemu_clones_free(t->clones); /* after the pool: its clones are gone */
	free(t->name);
	free(t->qemu);
	free(t->kernel.path);
	free(t->initrd.path);
	free(t->machine_ok);
	free(t->virtiofsd);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static int read_pin(const cordon_plugin_config *cfg, const char *key, const char *hash_key,
		    qemu_pin *pin, cordon_plugin_error *err)
{
	const char *path = NULL, *hash = NULL;
	qemu_host->config_string(cfg, key, &path);
	qemu_host->config_string(cfg, hash_key, &hash);
	if (!path || path[0] != '/')
		return qemu_host->config_error(cfg, key, err, "must be an absolute path");
	if (!is_sha256(hash))
		return qemu_host->config_error(cfg, hash_key, err,
					       "must be 64 lower-case hex digits (cordon vm build "
					       "prints it)");
	pin->path = qemu_xstrdup(path);
	snprintf(pin->sha256, sizeof(pin->sha256), "%s", hash);
	return 0;
}

/* What a workspace's copy may carry: by default what the guest's /work (a tmpfs of
 * `scratch`) holds, and 10000 entries. */
static int read_workspace_limits(const cordon_plugin_config *cfg, qemu_tier *t,
				 cordon_plugin_error *err)
{
	int64_t files = DEFAULT_WORKSPACE_FILES;
	if (qemu_host->config_int(cfg, "workspace_max_files", &files) == 1 &&
	    (files < 1 || files > MAX_WORKSPACE_FILES))
		return qemu_host->config_error(cfg, "workspace_max_files", err, "must be 1 to %d",
					       MAX_WORKSPACE_FILES);
	uint64_t bytes = 0;
	qemu_host->config_u64(cfg, "workspace_max_size", &bytes);
	if (bytes > t->scratch)
		return qemu_host->config_error(cfg, "workspace_max_size", err,
					       "must be at most scratch (%llu bytes): the guest's "
					       "/work is a tmpfs of that size",
					       (unsigned long long)t->scratch);
	t->workspace = (wsarc_limits){ .max_bytes = bytes ? bytes : t->scratch,
				       .max_files = (uint64_t)files };
	return 0;
}

/* A program's key: an absolute path into *ret (NULL when the key is absent). */
static int read_program(const cordon_plugin_config *cfg, const char *key, char **ret,
			cordon_plugin_error *err)
{
	const char *s = NULL;
	if (qemu_host->config_string(cfg, key, &s) != 1)
		return 0;
	if (s[0] != '/')
		return qemu_host->config_error(cfg, key, err, "must be an absolute path");
	*ret = qemu_xstrdup(s);
	return 0;
}

/* workspace_share: copy (the default) or virtiofs: cold boots only (a clone's RAM is the
 * template's, copy-on-write, and virtio-fs needs it shared), a 1.6 core (its file server). */
static int read_share(const cordon_plugin_config *cfg, qemu_tier *t, cordon_plugin_error *err)
{
	const char *s = NULL;
	if (qemu_host->config_string(cfg, "workspace_share", &s) == 1 && strcmp(s, "copy") != 0 &&
	    strcmp(s, "virtiofs") != 0)
		return qemu_host->config_error(cfg, "workspace_share", err,
					       "must be copy or virtiofs");
	t->virtiofs = s && strcmp(s, "virtiofs") == 0;
	if (t->virtiofs && t->clone)
		return qemu_host->config_error(
			cfg, "workspace_share", err,
			"virtiofs needs the guest's RAM shared, a clone's is "
			"its template's, copy-on-write: a clone tier copies");
	if (t->virtiofs && qemu_host->abi_minor < 6)
		return qemu_host->config_error(cfg, "workspace_share", err,
					       "virtiofs needs a core of plugin ABI 1.6 or newer "
					       "(its file server for virtiofsd)");
	return read_program(cfg, "virtiofsd", &t->virtiofsd, err);
}

static int read_scalars(const cordon_plugin_config *cfg, qemu_tier *t, cordon_plugin_error *err)
{
	const char *s = NULL;
	if (qemu_host->config_string(cfg, "accel", &s) == 1 && strcmp(s, "tcg") != 0 &&
	    strcmp(s, qemu_accel_name(t->family->accel)) != 0)
		return qemu_host->config_error(cfg, "accel", err, "must be %s or tcg",
					       qemu_accel_name(t->family->accel));
	t->tcg = s && strcmp(s, "tcg") == 0;
	s = NULL;
	if (qemu_host->config_string(cfg, "arch", &s) == 1) {
		if (strcmp(s, "x86_64") != 0 && strcmp(s, "aarch64") != 0)
			return qemu_host->config_error(cfg, "arch", err,
						       "must be x86_64 or aarch64");
		t->arch = strcmp(s, "aarch64") == 0 ? QEMU_ARCH_AARCH64 : QEMU_ARCH_X86_64;
	}
	/* another architecture than the host's runs only emulated */
	if (t->arch != qemu_host_arch() && !t->tcg)
		return qemu_host->config_error(cfg, "arch", err,
					       "a guest of another architecture needs accel: tcg");
	int pr = read_program(cfg, "qemu", &t->qemu, err);
	if (pr < 0)
		return pr;
	qemu_host->config_bool(cfg, "pvm_kernel", &t->pvm_kernel);
	qemu_host->config_bool(cfg, "clone", &t->clone);
	qemu_host->config_u64(cfg, "boot_timeout", &t->boot_timeout_ms);
	qemu_host->config_u64(cfg, "scratch", &t->scratch);
	if (qemu_host->config_int(cfg, "cpus", &t->cpus) == 1 && (t->cpus < 1 || t->cpus > 64))
		return qemu_host->config_error(cfg, "cpus", err, "must be 1 to 64");
	if (qemu_host->config_int(cfg, "pool", &t->pool_size) == 1 &&
	    (t->pool_size < 0 || t->pool_size > 8))
		return qemu_host->config_error(cfg, "pool", err, "must be 0 to 8");
	int r = read_share(cfg, t, err);
	if (r < 0)
		return r;
	if (t->boot_timeout_ms == 0)
		t->boot_timeout_ms = DEFAULT_BOOT_TIMEOUT_MS;
	if (t->scratch == 0)
		t->scratch = DEFAULT_SCRATCH;
	return read_workspace_limits(cfg, t, err);
}

static int qemu_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			  cordon_plugin_error *err)
{
	if (qemu_host->abi_minor < 2 ||
	    qemu_host->size < offsetof(cordon_host, process_spawn) + sizeof(void *) ||
	    !qemu_host->process_spawn)
		return qemu_host->error_set(err, ENOSYS, CORDON_PLUGIN_ERROR_TERMINAL,
					    ERRC(host_incomplete),
					    "the core lacks process_spawn (plugin ABI 1.2)");
	qemu_tier *t = xmalloc0(sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->family = data;
	t->arch = qemu_host_arch();
	t->name = qemu_xstrdup(qemu_host->config_tier_name(cfg));
	t->cpus = 1;
	/* without a token gc of another host could not tell our QEMUs from a dead one's */
	if (owner_token_self(t->owner) < 0) {
		tier_free(t);
		return qemu_host->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
					    "cannot tell this process's owner token from /proc");
	}
	int r = read_scalars(cfg, t, err);
	if (r == 0)
		r = read_pin(cfg, "kernel", "kernel_sha256", &t->kernel, err);
	if (r == 0)
		r = read_pin(cfg, "initrd", "initrd_sha256", &t->initrd, err);
	if (r < 0) {
		tier_free(t);
		return r;
	}
	/* a core before 1.5 cannot hand the jailed QEMU its template's RAM (a memfd) */
	if (t->clone && qemu_host->abi_minor < 5) {
		tier_free(t);
		return qemu_host->error_set(err, ENOSYS, CORDON_PLUGIN_ERROR_TERMINAL,
					    ERRC(host_incomplete),
					    "clone: true needs a core of plugin ABI 1.5 or newer "
					    "(the template's sealed RAM in QEMU's jail)");
	}
	t->limits.size = sizeof(t->limits);
	qemu_host->config_limits(cfg, &t->limits);
	if (t->clone)
		t->clones = qemu_clones_new();
	if (t->pool_size > 0)
		t->pool = qemu_pool_new(t, (size_t)t->pool_size);
	*ret_tier = t;
	return 0;
}

static void qemu_unconfigure(void *tier) { tier_free(tier); }

/* ---- the command line of one sandbox ------------------------------------------------------ */

static char *qemu_binary(const qemu_tier *t)
{
	if (t->qemu)
		return access(t->qemu, X_OK) == 0 ? qemu_xstrdup(t->qemu) : NULL;
	char *p = qemu_host->find_program(qemu_arch_binary(t->arch));
	char *r = p ? qemu_xstrdup(p) : NULL;
	qemu_host->free(p);
	return r;
}

static bool limit_set(const cordon_plugin_limits *l, int i) { return l->set & (1u << i); }

/* The config of one guest under limits l; a limit it cannot honour is refused. */
static int guest_config(const qemu_tier *t, const cordon_plugin_limits *l, char *binary,
			qemu_config *c, agent_error *r)
{
	uint64_t mib = DEFAULT_MEMORY_MIB;
	if (limit_set(l, CORDON_PLUGIN_LIMIT_MEMORY))
		mib = l->value[CORDON_PLUGIN_LIMIT_MEMORY] >> 20;
	if (mib < MIN_MEMORY_MIB)
		return qemu_refuse(r, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				   ERRC(limit_unenforceable),
				   "memory below %d MiB: the guest kernel does not boot in it",
				   MIN_MEMORY_MIB);
	uint64_t cpus = (uint64_t)t->cpus;
	if (limit_set(l, CORDON_PLUGIN_LIMIT_CPU_MILLI))
		cpus = (l->value[CORDON_PLUGIN_LIMIT_CPU_MILLI] + 999) / 1000;
	if (cpus < 1)
		cpus = 1;
	*c = (qemu_config){
		.binary = binary,
		.arch = t->arch,
		.accel = t->tcg ? QEMU_ACCEL_TCG : t->family->accel,
		.machine = t->family->machine(t->arch),
		.memory_mib = mib,
		.cpus = (uint32_t)cpus,
		.kernel = t->kernel.path,
		.initrd = t->initrd.path,
		.tsc_khz = t->tcg ? qemu_host_tsc_khz() : 0,
		.scratch_bytes = t->scratch,
		.pids = limit_set(l, CORDON_PLUGIN_LIMIT_PIDS) ? l->value[CORDON_PLUGIN_LIMIT_PIDS]
							       : 0,
		.nofile = limit_set(l, CORDON_PLUGIN_LIMIT_NOFILE)
				  ? l->value[CORDON_PLUGIN_LIMIT_NOFILE]
				  : 0,
		.fsize = limit_set(l, CORDON_PLUGIN_LIMIT_FSIZE)
				 ? l->value[CORDON_PLUGIN_LIMIT_FSIZE]
				 : 0,
		.owner = t->owner,
	};
	return 0;
}

int qemu_boot(qemu_tier *t, const cordon_plugin_limits *l, const qemu_share *share, qemu_vm *vm,
	      agent_error *r)
{
	int ret = qemu_pin_check(t, &t->kernel, "kernel", r);
	if (ret == 0)
		ret = qemu_pin_check(t, &t->initrd, "initrd", r);
	if (ret < 0)
		return ret;
	char *binary = qemu_binary(t);
	if (!binary)
		return qemu_refuse(r, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				   "QEMU (%s) is not installed",
				   t->qemu ? t->qemu : qemu_arch_binary(t->arch));
	qemu_config c;
	ret = guest_config(t, l, binary, &c, r);
	if (share) {
		c.virtiofs = true;
		c.vfs_fd = share->fd;
		c.vfs_read_only = share->read_only;
	}
	if (ret == 0 && t->clone && !share)
		ret = qemu_clone_start(t, &c, vm, r);
	else if (ret == 0 && (ret = qemu_vm_start(&c, t->boot_timeout_ms, vm, r)) == 0 &&
		 (ret = qemu_vm_identity(vm, t->boot_timeout_ms, r)) < 0)
		qemu_vm_stop(vm);
	free(binary);
	return ret;
}

/* ---- probe ---------------------------------------------------------------------------- */

/* Trial boots that reached the agent, in this process: a context is created per caller, and
 * each would boot its own trial otherwise (admission probes every 2 s; a boot is seconds
 * under TCG). Keyed by everything the boot depended on; the pins are checked again on every
 * probe and open, so a changed file is refused. */
#define TRIALS_MAX 16
static pthread_mutex_t trials_lock = PTHREAD_MUTEX_INITIALIZER;
static char *trials[TRIALS_MAX];
static int64_t trials_ms[TRIALS_MAX];
static size_t trials_next;

static char *trial_key(const qemu_tier *t, const char *binary)
{
	return xasprintf("%s|%s|%d|%s|%s|%s|%s", binary, t->tcg ? "tcg" : t->family->name,
			 (int)t->arch, t->kernel.path, t->kernel.sha256, t->initrd.path,
			 t->initrd.sha256);
}

static bool trial_passed(const char *key, int64_t *ret_ms)
{
	bool found = false;
	pthread_mutex_lock(&trials_lock);
	for (size_t i = 0; i < TRIALS_MAX && !found; i++)
		if (trials[i] && strcmp(trials[i], key) == 0) {
			found = true;
			*ret_ms = trials_ms[i];
		}
	pthread_mutex_unlock(&trials_lock);
	return found;
}

static void trial_remember(const char *key, int64_t ms)
{
	pthread_mutex_lock(&trials_lock);
	size_t i = trials_next++ % TRIALS_MAX;
	free(trials[i]);
	trials[i] = qemu_xstrdup(key);
	trials_ms[i] = ms;
	pthread_mutex_unlock(&trials_lock);
}

static int unavailable(cordon_plugin_probe *ret, uint32_t containment, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int unavailable(cordon_plugin_probe *ret, uint32_t containment, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ret->reason, sizeof(ret->reason), fmt, ap);
	va_end(ap);
	ret->available = 0;
	ret->containment = containment;
	return 0;
}

/* Whether `QEMU -machine help` lists the machine type. */
static bool machine_present(const char *binary, const char *machine)
{
	const char *argv[] = { binary, "-machine", "help", NULL };
	cordon_host_spawn s = { .size = sizeof(s), .argv = argv, .timeout_ms = PROBE_TIMEOUT_MS };
	bool found = false;
	if (qemu_host->spawn(&s, NULL) == 0 && s.exit_code == 0 && s.out) {
		size_t n = strlen(machine);
		for (const char *p = s.out; p && *p;
		     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
			if (strncmp(p, machine, n) == 0 && (p[n] == ' ' || p[n] == '\n'))
				found = true;
	}
	qemu_host->free(s.out);
	qemu_host->free(s.err);
	return found;
}

static int qemu_probe(void *tier, cordon_plugin_probe *ret)
{
	qemu_tier *t = tier;
	/* Under TCG the boundary is not the guest (QEMU does not treat emulation as one) but the
	 * jail around QEMU: the kernel tier's confinement (process_spawn's JAIL, ABI 1.4). A host
	 * older than that ignores the flag and runs QEMU as the caller under its own seccomp
	 * sandbox only: a process jail (docs/tiers/microvm.md). */
	uint32_t jail = qemu_host->abi_minor >= 4 ? CORDON_PLUGIN_CONTAINMENT_KERNEL
						  : CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL;
	uint32_t want = t->tcg ? jail : CORDON_PLUGIN_CONTAINMENT_MICROVM;
	/* Templates and clones run in the same jail (clone.c: the sealed RAM memfd handed in
	 * through jail_fd_path, ABI 1.5; configure refuses clone: true on older cores). */
	/* A kept answer (the probe cache) is dropped when these change; QEMU itself counts
	 * through find_program. */
	if (qemu_host->abi_minor >= 3) {
		qemu_host->probe_depends("/dev/kvm");
		qemu_host->probe_depends(t->kernel.path);
		qemu_host->probe_depends(t->initrd.path);
	}
	qemu_accel_probe a = { 0 };
	if (!t->tcg) {
		t->family->detect(t->pvm_kernel, &a);
		if (!a.usable)
			return unavailable(ret, want, "%s", a.reason);
	}
	char *binary = qemu_binary(t);
	if (!binary)
		return unavailable(ret, want, "QEMU (%s) is not installed",
				   t->qemu ? t->qemu : qemu_arch_binary(t->arch));
	if (t->virtiofs && (access(qemu_virtiofsd_path(t), X_OK) != 0 || geteuid() != 0)) {
		free(binary);
		return unavailable(ret, want, "workspace_share: virtiofs: %s%s",
				   geteuid() != 0 ? "virtiofsd is started as root only (its mount "
						    "of the workspace, its owner's user namespace)"
						  : "no virtiofsd at ",
				   geteuid() != 0 ? "" : qemu_virtiofsd_path(t));
	}
	const char *machine = t->family->machine(t->arch);
	pthread_mutex_lock(&t->lock);
	bool present = t->machine_ok && strcmp(t->machine_ok, binary) == 0;
	pthread_mutex_unlock(&t->lock);
	if (!present && !machine_present(binary, machine)) {
		free(binary);
		return unavailable(ret, want, "QEMU lacks the %s machine type", machine);
	}
	char *key = trial_key(t, binary);
	pthread_mutex_lock(&t->lock);
	free(t->machine_ok);
	t->machine_ok = binary;
	pthread_mutex_unlock(&t->lock);
	agent_error r;
	int64_t ms = 0;
	bool trial_ok = trial_passed(key, &ms);
	if (trial_ok) {
		if (qemu_pin_check(t, &t->kernel, "kernel", &r) < 0 ||
		    qemu_pin_check(t, &t->initrd, "initrd", &r) < 0) {
			free(key);
			return unavailable(ret, want, "%s", r.message);
		}
	} else {
		/* the trial boot: the pins are checked on the way */
		qemu_vm vm;
		if (qemu_boot(t, &t->limits, NULL, &vm, &r) < 0) {
			free(key);
			return unavailable(ret, want, "%s", r.message);
		}
		ms = vm.hello_ms;
		qemu_vm_stop(&vm);
		trial_remember(key, ms);
	}
	free(key);
	if (t->pool)
		qemu_pool_start(t->pool);
	ret->available = 1;
	ret->containment = want;
	/* The guest has no network device: nothing leaves but the agent's channels, and
	 * governed egress is cordon's proxy on a listener whose connections come over the
	 * network channel (net.c), a 1.5 core's (CORDON_PLUGIN_DRIVER_EGRESS_PROXY). */
	ret->egress_enforced = CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY);
	if (qemu_host->abi_minor >= 4)
		ret->features |= CORDON_PLUGIN_PROBE_LISTEN;
	if (qemu_host->abi_minor >= 5)
		ret->egress_enforced |= CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_GOVERNED);
	char share[300];
	if (t->virtiofs)
		snprintf(share, sizeof(share),
			 "a workspace is shared live by virtio-fs (%.40s, as its owner; read-only "
			 "for copy-in-only work)",
			 qemu_virtiofsd_path(t));
	else
		snprintf(share, sizeof(share),
			 "a workspace is copied in (at most %llu entries, %llu bytes) and, "
			 "writable, back at a clean close",
			 (unsigned long long)t->workspace.max_files,
			 (unsigned long long)t->workspace.max_bytes);
	snprintf(ret->reason, sizeof(ret->reason),
		 "%s machine, %.200s; kernel and initrd match their pins; a trial boot reached "
		 "the agent in %lld ms; no network device (cordon's proxy, services and serve "
		 "over the guest's network channel); %.130s",
		 machine, t->tcg ? "emulated (accel: tcg), not a hardware boundary" : a.reason,
		 (long long)ms, share);
	return 0;
}

/* Whether limits l boot the same guest as the tier's own (the pool's). */
static bool same_guest(const qemu_tier *t, const cordon_plugin_limits *l)
{
	qemu_config a = { 0 }, b = { 0 }; /* guest_config's refusals are variadic: the analyzer */
	agent_error r;
	if (guest_config(t, l, "qemu", &a, &r) < 0 ||
	    guest_config(t, &t->limits, "qemu", &b, &r) < 0)
		return false;
	return a.memory_mib == b.memory_mib && a.cpus == b.cpus && a.pids == b.pids &&
	       a.nofile == b.nofile && a.fsize == b.fsize;
}

/* A pooled guest for these limits, when one is ready and the pins still hold. */
static bool from_pool(qemu_tier *t, const cordon_plugin_limits *l, qemu_vm *vm)
{
	agent_error r;
	if (!t->pool || !same_guest(t, l) || qemu_pin_check(t, &t->kernel, "kernel", &r) < 0 ||
	    qemu_pin_check(t, &t->initrd, "initrd", &r) < 0)
		return false; /* the boot that follows says why */
	return qemu_pool_take(t->pool, vm);
}

/* ---- open and close ----------------------------------------------------------------------- */

static int file_op(qemu_sandbox *sb, const char *const *args, const void *in, size_t in_len,
		   uint8_t want, cordon_plugin_emit_fn emit, void *ctx, bool first_only,
		   cordon_plugin_error *err);

/* The workspace's stream (packed before the boot: one over the limits boots nothing) into
 * the guest's /work: read-only inside for untrusted work. */
static int copy_in(qemu_sandbox *sb, const char *data, size_t len, cordon_plugin_error *err)
{
	const char *args[] = { "unpack", sb->ws.writable ? "rw" : "ro", NULL };
	int rc = file_op(sb, args, data, len, 0, NULL, NULL, true, err);
	return rc < 0 ? rc : 0;
}

/* The guest's /work back into a writable workspace, at a clean close only: a guest that
 * broke the channel, or was killed, gives nothing back. A stream that is refused (cut
 * short, over the limits, a name that climbs out) changes nothing on the host. close has
 * no error to return: what happened is logged. */
static void copy_out(qemu_sandbox *sb)
{
	if (sb->ws.fd < 0 || !sb->ws.writable || sb->broken || sb->fsd)
		return; /* virtio-fs: the guest wrote into the workspace itself */
	qemu_owner_ids saved;
	int owner = qemu_workspace_as_owner(&sb->ws, &saved);
	wsarc_unpack *u = owner == 0 ? qemu_workspace_unpack_begin(&sb->ws, &sb->tier->workspace)
				     : NULL;
	if (!u) {
		int e = owner < 0 ? -owner : errno;
		if (qemu_workspace_as_root(&saved) < 0)
			abort(); /* a thread left with another's ids */
		qemu_host->log(CORDON_PLUGIN_LOG_WARNING, "qemu",
			       "%s: the workspace's copy-out could not start: %s", sb->tier->name,
			       strerror(e));
		return;
	}
	const char *args[] = { "pack", ".", NULL };
	cordon_plugin_error *err = NULL;
	int rc = file_op(sb, args, NULL, 0, AGENT_FRAME_DATA, qemu_workspace_unpack_emit, u, true,
			 err);
	wsarc_report rep = { 0 };
	if (rc == 0)
		rc = wsarc_unpack_finish(u, &rep);
	else
		wsarc_unpack_finish(u, &rep); /* its own error, if it has one, says more */
	wsarc_unpack_free(u);
	if (qemu_workspace_as_root(&saved) < 0)
		abort(); /* a thread left with another's ids */
	if (rc < 0)
		qemu_host->log(CORDON_PLUGIN_LOG_WARNING, "qemu",
			       "%s: the guest's /work was not copied back%s%s: %s "
			       "(%llu files, %llu conflicts)",
			       sb->tier->name, rep.over ? ", over the limit of " : "",
			       rep.over ? rep.over : "", strerror(rc < 0 ? -rc : EIO),
			       (unsigned long long)rep.files, (unsigned long long)rep.conflicts);
	else
		qemu_host->log(CORDON_PLUGIN_LOG_DEBUG, "qemu",
			       "%s: copied back %llu files, %llu directories, %llu bytes "
			       "(%llu unchanged)",
			       sb->tier->name, (unsigned long long)rep.files,
			       (unsigned long long)rep.dirs, (unsigned long long)rep.bytes,
			       (unsigned long long)rep.unchanged);
}

static void qemu_op_close(void *sandbox)
{
	qemu_sandbox *sb = sandbox;
	if (!sb)
		return;
	copy_out(sb);
	qemu_net_free(sb->net); /* every stream closed before the guest ends */
	qemu_vm_stop(&sb->vm);
	qemu_virtiofs_stop(&sb->fsd);
	qemu_workspace_close(&sb->ws);
	pthread_mutex_destroy(&sb->lock);
	pthread_mutex_destroy(&sb->net_lock);
	free(sb);
}

static int qemu_op_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
			cordon_plugin_error *err)
{
	qemu_tier *t = tier;
	/* governed: the core's proxy on the listen op, with the tier's rules (ABI 1.5) */
	bool proxied = spec->egress == CORDON_PLUGIN_EGRESS_GOVERNED && qemu_host->abi_minor >= 5 &&
		       spec->size >=
			       offsetof(cordon_plugin_open_spec, egress_audit) + sizeof(void *) &&
		       spec->egress_allow;
	if (spec->egress != CORDON_PLUGIN_EGRESS_DENY && !proxied)
		return qemu_host->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
					    ERRC(egress_unsupported),
					    "the guest has no network device: egress is denied, or "
					    "governed by cordon's proxy under the tier's rules");
	qemu_sandbox *sb = xmalloc0(sizeof(*sb));
	sb->tier = t;
	sb->ws.fd = -1;
	pthread_mutex_init(&sb->lock, NULL);
	pthread_mutex_init(&sb->net_lock, NULL);
	agent_error r;
	/* a workspace's unpack is the guest's first request after its identity (still root,
	 * so that /work can be sealed read-only): a pooled guest has served one already */
	bool pooled = !spec->workspace && from_pool(t, &spec->limits, &sb->vm);
	/* untrusted work, and a `workspace: read-only` rule (ABI 1.5), get copy-in only */
	bool ro = spec->trust == CORDON_PLUGIN_TRUST_UNTRUSTED ||
		  (spec->size >= offsetof(cordon_plugin_open_spec, reserved3) &&
		   (spec->flags & CORDON_PLUGIN_OPEN_WORKSPACE_RO));
	int ret = spec->workspace ? qemu_workspace_open(spec->workspace, !ro, &sb->ws, &r) : 0;
	/* workspace_share: virtiofs: served live by virtiofsd (read-only by the host's kernel
	 * for copy-in-only work), else packed here for the guest's unpack */
	bool shared = ret == 0 && spec->workspace && t->virtiofs;
	qemu_share share = { .fd = -1, .read_only = !sb->ws.writable };
	int fsd_rc = shared ? qemu_virtiofs_start(t, &sb->ws, &sb->fsd, &share.fd, err) : 0;
	char *stream = NULL;
	size_t stream_len = 0;
	if (ret == 0 && spec->workspace && !shared)
		ret = qemu_workspace_pack(&sb->ws, &t->workspace, &stream, &stream_len, &r);
	if (ret == 0 && fsd_rc == 0 && !pooled)
		ret = qemu_boot(t, &spec->limits, shared ? &share : NULL, &sb->vm, &r);
	if (share.fd >= 0)
		close(share.fd); /* QEMU has its copy, or never will */
	if (ret < 0 || fsd_rc < 0) {
		free(stream);
		qemu_virtiofs_stop(&sb->fsd);
		qemu_workspace_close(&sb->ws);
		pthread_mutex_destroy(&sb->lock);
		pthread_mutex_destroy(&sb->net_lock);
		free(sb);
		return fsd_rc < 0 ? fsd_rc : qemu_fail(err, &r);
	}
	uint64_t cap = limit_set(&spec->limits, CORDON_PLUGIN_LIMIT_OUTPUT)
			       ? spec->limits.value[CORDON_PLUGIN_LIMIT_OUTPUT]
			       : DEFAULT_OUTPUT_CAP;
	sb->out_cap = cap + 1; /* one byte more than the core keeps: it sees the cut */
	int rc = sb->ws.fd >= 0 && !shared ? copy_in(sb, stream, stream_len, err) : 0;
	free(stream);
	if (rc < 0) {
		sb->ws.writable = false; /* nothing of this guest goes back */
		qemu_op_close(sb);
		return rc;
	}
	*ret_sandbox = sb;
	return 0;
}

/* ---- runs and file operations ------------------------------------------------------------- */

typedef struct exchange_state {
	qemu_sandbox *sb;
	agent_exchange x;
	agent_sink k;
	const cordon_plugin_run_sink *sink;
} exchange_state;

static void on_output(void *ctx, int stream, const char *data, size_t len)
{
	exchange_state *s = ctx;
	if (s->sink && s->sink->output)
		s->sink->output(s->sink->ctx, stream, data, len);
}

static void kill_vm(void *ctx)
{
	exchange_state *s = ctx;
	qemu_vm_kill(&s->sb->vm);
}

/* ---- sessions ------------------------------------------------------------------------------ */

static int gone(qemu_sandbox *sb, cordon_plugin_error *err)
{
	return qemu_host->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				    "the %s guest is gone (QEMU ended or was killed)",
				    sb->tier->name);
}

/* The session an exchange runs on: the first one (the agent's port, sb->lock held) when it
 * is free, else one more, a stream on the network channel to a session of the agent's own
 * (net.c, agent/relay.c): a run or file operation beside a run that goes on, a server's
 * above all. Without the channel (a guest image without it) the first is waited for. */
typedef struct session_lease {
	bool first;
	int fd;    /* the session's channel (the first's is sb->vm.chan) */
	int extra; /* an extra session's: ours to close */
} session_lease;

#define EXTRA_SESSION_WAIT_MS 10000

static int await_hello(int *fd, agent_error *r)
{
	agent_exchange x = { .kind = AGENT_ANSWER_HELLO };
	agent_sink k = { 0 };
	x.sink = &k;
	agent_link link = { .in = fd, .out = *fd, .err = -1, .session = true };
	bool deadline = false;
	int loop = agent_exchange_run(&x, &link, EXTRA_SESSION_WAIT_MS, -1, NULL, 0, &deadline);
	if (x.done && loop == 0)
		return 0;
	return qemu_refuse(r, deadline ? ETIMEDOUT : EPROTO, CORDON_PLUGIN_ERROR_TERMINAL,
			   ERRC(vm_failed), "the guest's second session did not say hello%s",
			   deadline ? " in time" : "");
}

static bool is_broken(qemu_sandbox *sb) { return __atomic_load_n(&sb->broken, __ATOMIC_ACQUIRE); }

/* The sandbox's network channel (net.c), made by its first user. */
static qemu_net *sandbox_net(qemu_sandbox *sb)
{
	pthread_mutex_lock(&sb->net_lock);
	if (!sb->net)
		sb->net = qemu_net_new(sb->tier->owner);
	qemu_net *net = sb->net;
	pthread_mutex_unlock(&sb->net_lock);
	return net;
}

/* serve: the host's listener for the work's port (a unix socket when the run asks for one),
 * the address given once it accepts. */
static void serve_ready(void *ctx, const char *address)
{
	const cordon_plugin_run_sink *sink = ctx;
	if (sink && sink->address)
		sink->address(sink->ctx, address);
}

static int serve_forward(qemu_sandbox *sb, const cordon_plugin_run_spec *spec,
			 const cordon_plugin_run_sink *sink, qemu_forward **ret,
			 cordon_plugin_error *err)
{
	agent_error r;
	bool unix_socket = spec->flags & CORDON_PLUGIN_RUNREQ_SERVE_UNIX;
	*ret = qemu_forward_start(sandbox_net(sb), &sb->vm, spec->port, unix_socket, serve_ready,
				  (void *)sink, &r);
	return *ret ? 0 : qemu_fail(err, &r);
}

/* An exchange that ended without its answer: the guest is gone when it was the first
 * session's, else only that second session ended. */
static int lost(qemu_sandbox *sb, const session_lease *l, cordon_plugin_error *err)
{
	if (l->first)
		return gone(sb, err);
	return qemu_host->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				    "the guest's second session ended before its answer (killed "
				    "inside the guest?); the sandbox goes on");
}

/* One more session: a socket pair whose far end the mux carries to the guest. */
static int extra_session(qemu_sandbox *sb, session_lease *l, agent_error *r)
{
	qemu_net *net = sandbox_net(sb);
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return qemu_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				   "socketpair: %s", strerror(errno));
	int rc = qemu_net_open(net, &sb->vm, AGENT_CHANNEL_SESSION, sp[1], EXTRA_SESSION_WAIT_MS,
			       r);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	if (rc == 0)
		rc = await_hello(&sp[0], r);
	if (rc < 0) {
		if (sp[0] >= 0)
			close(sp[0]);
		return rc;
	}
	*l = (session_lease){ .first = false, .fd = sp[0], .extra = sp[0] };
	return 0;
}

static int lease_session(qemu_sandbox *sb, session_lease *l, cordon_plugin_error *err)
{
	if (pthread_mutex_trylock(&sb->lock) == 0) {
		*l = (session_lease){ .first = true, .fd = sb->vm.chan, .extra = -1 };
		return 0;
	}
	if (is_broken(sb))
		return gone(sb, err);
	agent_error r;
	if (!qemu_net_usable(sandbox_net(sb), &sb->vm)) {
		/* a guest image without the channel: wait for the first */
		pthread_mutex_lock(&sb->lock);
		*l = (session_lease){ .first = true, .fd = sb->vm.chan, .extra = -1 };
		return 0;
	}
	return extra_session(sb, l, &r) < 0 ? qemu_fail(err, &r) : 0;
}

static void release_session(qemu_sandbox *sb, session_lease *l)
{
	if (l->first)
		pthread_mutex_unlock(&sb->lock);
	else if (l->extra >= 0)
		close(l->extra); /* the guest's session ends at EOF */
}

/* One request on the leased session. A deadline kills the guest. */
static int exchange(exchange_state *s, session_lease *l, const char *req, size_t len,
		    uint64_t limit_ms, int cancel_fd, int tty_fd, bool *ret_deadline)
{
	qemu_sandbox *sb = s->sb;
	agent_link link = { .in = l->first ? &sb->vm.chan : &l->fd,
			    .out = l->first ? sb->vm.chan : l->fd,
			    .err = l->first ? sb->vm.err : -1,
			    .session = true,
			    .ctx = s,
			    .kill = kill_vm,
			    .tty = tty_fd >= 0,
			    .tty_fd = tty_fd };
	int loop = agent_exchange_run(&s->x, &link, limit_ms, cancel_fd, req, len, ret_deadline);
	/* the guest is gone, killed, or spoke out of turn; a second session that did is the
	 * work's to kill (its uid), and fails its own operation alone */
	if (l->first && (!s->x.done || loop < 0))
		__atomic_store_n(&sb->broken, true, __ATOMIC_RELEASE);
	return loop;
}

static void fill_status(const agent_exchange *x, cordon_plugin_run_status *ret)
{
	const agent_status *st = &x->status;
	ret->flags = st->exited ? CORDON_PLUGIN_RUNSTATUS_EXITED : CORDON_PLUGIN_RUNSTATUS_SIGNALED;
	if (st->exited)
		ret->exit_code = st->code;
	else
		ret->signal = st->code;
	if (st->timed_out)
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_TIMED_OUT;
	if (st->cancelled || (x->cancel_wanted && !st->timed_out))
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_CANCELLED;
	if (st->oom)
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_OOM;
}

/* The run's request: a TTY_RUN when the core gave the run a terminal (the guest agent makes
 * the work a pseudo-terminal of the host's size; the link relays it), a RUN otherwise. */
static char *run_request(const qemu_sandbox *sb, const cordon_plugin_run_spec *spec,
			 size_t *ret_len)
{
	uint16_t rows = 0, cols = 0;
	if (spec->tty_fd < 0)
		return agent_run_request(spec->argv, spec->envp, spec->timeout_ms, sb->out_cap,
					 spec->workdir, spec->stdin_data, (size_t)spec->stdin_len,
					 ret_len);
	if (tty_peer_prepare(spec->tty_fd, &rows, &cols) < 0)
		return NULL;
	return agent_tty_run_request(spec->argv, spec->envp, spec->timeout_ms, sb->out_cap,
				     spec->workdir, rows, cols, ret_len);
}

static int qemu_op_run(void *sandbox, const cordon_plugin_run_spec *spec,
		       const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		       cordon_plugin_error *err)
{
	qemu_sandbox *sb = sandbox;
	size_t len;
	char *req = run_request(sb, spec, &len);
	if (!req && spec->tty_fd >= 0)
		return qemu_host->error_set(err, EINVAL, CORDON_PLUGIN_ERROR_INVALID,
					    ERRC(invalid_argument),
					    "the run's terminal cannot be readied, or its argv and "
					    "environment exceed what the agent's channel carries");
	if (!req)
		return qemu_host->error_set(err, E2BIG, CORDON_PLUGIN_ERROR_INVALID,
					    ERRC(invalid_argument),
					    "the run's argv, environment and stdin exceed what the "
					    "agent's channel carries (%u bytes)",
					    AGENT_REQUEST_MAX);
	exchange_state s = { .sb = sb, .sink = sink };
	s.x.kind = AGENT_ANSWER_RUN;
	s.k = (agent_sink){ .ctx = &s, .output = on_output };
	s.x.sink = &s.k;
	session_lease l = { .first = false, .extra = -1 };
	int rc = lease_session(sb, &l, err);
	qemu_forward *fwd = NULL;
	if (rc == 0 && spec->port)
		rc = serve_forward(sb, spec, sink, &fwd, err);
	bool deadline = false;
	if (rc < 0) {
		/* said */
	} else if (is_broken(sb)) {
		rc = gone(sb, err);
	} else {
		int loop = exchange(&s, &l, req, len, spec->timeout_ms + RUN_GRACE_MS,
				    spec->cancel_fd, spec->tty_fd, &deadline);
		if (s.x.have_status && loop == 0) {
			fill_status(&s.x, ret);
			rc = 0;
		} else if (deadline) {
			/* the guest did not end the work itself: the VM was killed with it */
			ret->flags = CORDON_PLUGIN_RUNSTATUS_SIGNALED |
				     CORDON_PLUGIN_RUNSTATUS_TIMED_OUT;
			ret->signal = 9;
			rc = 0;
		} else if (s.x.have_error && loop == 0) {
			rc = qemu_fail(err, &s.x.error);
		} else {
			rc = loop < 0 ? qemu_host->error_set(err, EPROTO,
							     CORDON_PLUGIN_ERROR_TERMINAL,
							     ERRC(vm_failed),
							     "the guest's agent spoke out of turn")
				      : lost(sb, &l, err);
		}
	}
	qemu_forward_stop(fwd);
	release_session(sb, &l);
	explicit_bzero(req, len); /* granted secrets */
	free(req);
	return rc;
}

static int file_op(qemu_sandbox *sb, const char *const *args, const void *in, size_t in_len,
		   uint8_t want, cordon_plugin_emit_fn emit, void *ctx, bool first_only,
		   cordon_plugin_error *err)
{
	size_t len;
	char *req = agent_file_request(args, in, in_len, &len);
	if (!req)
		return qemu_host->error_set(err, ENAMETOOLONG, CORDON_PLUGIN_ERROR_INVALID,
					    ERRC(path_too_long),
					    "the path is too long for the agent");
	exchange_state s = { .sb = sb };
	s.x.kind = AGENT_ANSWER_FILE;
	s.x.want = want;
	s.k = (agent_sink){ .ctx = ctx, .emit = emit };
	s.x.sink = &s.k;
	session_lease l = { .first = false, .extra = -1 };
	int rc = 0;
	if (first_only) { /* the workspace's copies and relays: the first session's requests */
		pthread_mutex_lock(&sb->lock);
		l = (session_lease){ .first = true, .fd = sb->vm.chan, .extra = -1 };
	} else {
		rc = lease_session(sb, &l, err);
	}
	bool deadline = false;
	if (rc < 0) {
		/* said */
	} else if (is_broken(sb)) {
		rc = gone(sb, err);
	} else {
		int loop = exchange(&s, &l, req, len, FILE_OP_TIMEOUT_MS, -1, -1, &deadline);
		if (s.x.emit_rc)
			rc = s.x.emit_rc;
		else if (s.x.have_error && loop == 0 && want == AGENT_FRAME_DATA &&
			 s.x.error.errnum == EFBIG)
			rc = -EFBIG; /* as the local driver: the core names the limit */
		else if (s.x.have_error && loop == 0)
			rc = qemu_fail(err, &s.x.error);
		else if (s.x.file_done && loop == 0)
			rc = 0;
		else if (deadline)
			rc = qemu_host->error_set(
				err, ETIMEDOUT, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				"the guest did not answer a file operation in %d s "
				"(the VM was killed)",
				FILE_OP_TIMEOUT_MS / 1000);
		else
			rc = lost(sb, &l, err);
	}
	release_session(sb, &l);
	free(req);
	return rc;
}

static int qemu_op_read_file(void *sandbox, const char *path, uint64_t max_len,
			     cordon_plugin_emit_fn emit, void *ctx, cordon_plugin_error *err)
{
	char max[32];
	snprintf(max, sizeof(max), "%" PRIu64, max_len);
	const char *args[] = { "read", path, max, NULL };
	return file_op(sandbox, args, NULL, 0, AGENT_FRAME_DATA, emit, ctx, false, err);
}

static int qemu_op_write_file(void *sandbox, const char *path, const void *data, uint64_t len,
			      cordon_plugin_error *err)
{
	const char *args[] = { "write", path, NULL };
	return file_op(sandbox, args, len ? data : "", (size_t)len, 0, NULL, NULL, false, err);
}

static int qemu_op_glob(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
			cordon_plugin_error *err)
{
	const char *args[] = { "glob", pattern, NULL };
	return file_op(sandbox, args, NULL, 0, AGENT_FRAME_PATH, emit, ctx, false, err);
}

static int qemu_op_walk(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
			cordon_plugin_error *err)
{
	const char *args[] = { "walk", dir && *dir ? dir : ".", NULL };
	return file_op(sandbox, args, NULL, 0, AGENT_FRAME_PATH, emit, ctx, false, err);
}

/* ---- the listen op (net.c) ---------------------------------------------------------------- */

/* A listener on the guest's 127.0.0.1 whose connections are the returned unix listener's:
 * the agent's relay over the network channel. */
static int qemu_op_listen(void *sandbox, uint16_t *ret_port, cordon_plugin_error *err)
{
	qemu_sandbox *sb = sandbox;
	agent_error r;
	uint32_t id = 0;
	qemu_net *net = is_broken(sb) ? NULL : sandbox_net(sb);
	int fd = is_broken(sb) ? -EIO : net ? qemu_net_listener(net, &sb->vm, &id, &r) : -1;
	if (fd == -EIO)
		return gone(sb, err);
	if (fd < 0)
		return qemu_fail(err, &r);
	char target[32];
	snprintf(target, sizeof(target), AGENT_RELAY_CHANNEL "%u", (unsigned)id);
	const char *args[] = { "relay", target, NULL };
	agent_port_answer p = { 0 };
	int rc = file_op(sb, args, NULL, 0, AGENT_FRAME_DATA, agent_port_collect, &p, true, err);
	uint16_t port = rc == 0 ? agent_port_value(&p) : 0;
	if (rc == 0 && !port)
		rc = qemu_host->error_set(err, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL,
					  ERRC(vm_failed), "the guest's relay answered no port");
	if (rc < 0) {
		close(fd);
		return rc;
	}
	*ret_port = port;
	return fd;
}

int qemu_plugin_init(const cordon_host *host, cordon_plugin_registrar *reg,
		     cordon_plugin_error *err, const qemu_family *family)
{
	(void)err;
	qemu_host = host;
	static cordon_plugin_driver drv; /* one family per plugin module */
	drv = (cordon_plugin_driver){
		.size = sizeof(drv),
		.name = family->name,
		.config_keys = family->config_keys,
		.data = (void *)family,
		.configure = qemu_configure,
		.unconfigure = qemu_unconfigure,
		.probe = qemu_probe,
		.open = qemu_op_open,
		.run = qemu_op_run,
		.read_file = qemu_op_read_file,
		.write_file = qemu_op_write_file,
		.glob = qemu_op_glob,
		.walk = qemu_op_walk,
		.close = qemu_op_close,
		.gc = qemu_gc,
		/* a 1.2 core knows no flags, and refuses them */
		.flags = (host->abi_minor >= 3 ? CORDON_PLUGIN_DRIVER_TTY : 0) |
			 (host->abi_minor >= 4 ? CORDON_PLUGIN_DRIVER_SERVE_UNIX : 0) |
			 (host->abi_minor >= 5 ? CORDON_PLUGIN_DRIVER_WORKSPACE_RO |
							 CORDON_PLUGIN_DRIVER_EGRESS_PROXY
					       : 0),
		/* a 1.3 core's driver table ends before listen */
		.listen = host->abi_minor >= 4 ? qemu_op_listen : NULL,
	};
	return host->register_driver(reg, &drv);
}
