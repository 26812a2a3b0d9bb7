/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU convenience library shared by the microVM plugins (`kvm`, `hvf`, `hyperv`): the
 * QEMU command line as a pure function of a typed config (argv.c, unit-tested with exact
 * argv in tests/unit/test-qemu.c), the guest's files pinned by sha256, the VM's life
 * (vm.c: QEMU started through the host services' process_spawn, the agent reached on a
 * virtio-serial port) and the driver itself (driver.c). The agent's protocol and its
 * host-side client are agent/'s, shared with the container plugins.
 *
 * A family (one per plugin) differs from the others only in how its accelerator is detected
 * and in its machine type (qemu_family). Plain C: plugins reach the core through the host
 * services table alone.
 */
#ifndef CORDON_QEMU_H
#define CORDON_QEMU_H

#include <cordon/plugin.h>

#include "errcodes.h"
#include "xalloc.h"
#include "client.h"
#include "visibility.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The guest architecture (also QEMU's binary: qemu-system-x86_64, -aarch64). */
typedef enum qemu_arch {
	QEMU_ARCH_X86_64,
	QEMU_ARCH_AARCH64,
} qemu_arch;

typedef enum qemu_accel {
	QEMU_ACCEL_KVM,
	QEMU_ACCEL_HVF,
	QEMU_ACCEL_WHPX,
	QEMU_ACCEL_TCG, /* emulation: never a microvm boundary (DESIGN §7) */
} qemu_accel;

/* The name of the virtio-serial port the agent looks for in the guest. */
#define QEMU_AGENT_PORT "org.cordon.agent"
/* QEMU's -name: this prefix and the owner token of the host that started it (gc.c). */
#define QEMU_NAME_PREFIX "cordon-vm-"
/* The descriptor QEMU finds its end of the agent's socket pair on (process_spawn's extra_fd). */
#define QEMU_AGENT_FD 3
/* The descriptor QEMU finds its end of the QMP socket pair on, when it has one (its stdin). */
#define QEMU_QMP_FD 0
/* The second port: the guest's network channel (plugins/qemu/net.c, common/netmux.h), on a
 * socket pair whose QEMU end is its stdout. QEMU writes nothing to stdout here (-nographic,
 * -serial none, -monitor none): its diagnostics go to stderr. */
#define QEMU_NET_PORT "org.cordon.net"
#define QEMU_NET_FD 1
/* A cold boot's workspace over virtio-fs (virtiofs.c): QEMU's end of virtiofsd's vhost-user
 * socket is its stdin, which only a clone's QMP takes otherwise (a clone has no virtio-fs). */
#define QEMU_VFS_FD 0
/* The id of the memory backend that holds guest RAM in a file. */
#define QEMU_RAM_ID "cordon.ram"

/* Everything the command line depends on. */
typedef struct qemu_config {
	const char *binary; /* absolute path of qemu-system-* */
	qemu_arch arch;
	qemu_accel accel;
	const char *machine; /* "microvm", "virt", "q35" */
	uint64_t memory_mib;
	uint32_t cpus;
	const char *kernel; /* host paths (the jail's view of them once the VMM is jailed) */
	const char *initrd;
	uint64_t tsc_khz;       /* TCG on x86_64: the host TSC (tsc_early_khz), or 0 */
	uint64_t scratch_bytes; /* the guest's /tmp and /work tmpfs cap */
	uint64_t pids;          /* the work's RLIMIT_NPROC in the guest, or 0: none */
	uint64_t nofile;        /* its RLIMIT_NOFILE, or 0 */
	uint64_t fsize;         /* its RLIMIT_FSIZE, or 0 */
	const char *owner;      /* the host's owner token (-name), or NULL */
	/* Copy-on-write clones (clone.c): guest RAM in the file mem_path (no ','), shared
	 * (a template's) or private (a clone's); QMP on fd 0 (QEMU_QMP_FD), a socket; the
	 * device state awaited over QMP (-incoming defer). The file is mem_fd (a memfd), which
	 * the jail makes mem_path (vm.c); mem_fd is read only when mem_path is set. */
	const char *mem_path;
	int mem_fd;
	bool mem_shared;
	bool qmp;
	bool incoming;
	/* The workspace over virtio-fs (virtiofs.c), on QEMU_VFS_FD (vfs_fd, ours): guest RAM
	 * shared (a memfd of QEMU's, which virtiofsd maps), the guest's /work the device's,
	 * read-only inside too with vfs_read_only. Not with mem_path or qmp. */
	bool virtiofs;
	bool vfs_read_only;
	int vfs_fd;
} qemu_config;

/* The QEMU argv (NULL-terminated, malloc'd: xstrv_free), or NULL for a config it cannot
 * express (no binary, kernel or initrd, zero memory or cpus, a ',' in mem_path, virtiofs
 * with a clone's pieces). */
char **qemu_argv(const qemu_config *c) CORDON_INTERNAL;
/* The kernel command line alone (malloc'd). */
char *qemu_append_line(const qemu_config *c) CORDON_INTERNAL;

const char *qemu_accel_name(qemu_accel a) CORDON_INTERNAL;
const char *qemu_arch_binary(qemu_arch a) CORDON_INTERNAL;
/* The architecture this plugin was built for (the host's: guests are never cross-arch but
 * under TCG in tests). */
qemu_arch qemu_host_arch(void) CORDON_INTERNAL;

/* ---- small utilities (util.c) -------------------------------------------------------- */

/* xstrdup, with NULL taken as "" (the argv builder's unset fields). */
static inline char *qemu_xstrdup(const char *s) { return xstrdup(s ? s : ""); }

/* The sha256 of a file opened without following links, as 64 lower-case hex digits into
 * hex[65]; -errno when it cannot be read. */
int qemu_file_sha256(const char *path, char hex[65]) CORDON_INTERNAL;
/* The host TSC frequency in kHz from /proc/cpuinfo's "cpu MHz", or 0 when unknown. */
uint64_t qemu_host_tsc_khz(void) CORDON_INTERNAL;
/* Parses the text of /proc/cpuinfo for it (pure; unit-tested). */
uint64_t qemu_parse_cpu_khz(const char *cpuinfo) CORDON_INTERNAL;

/* ---- a plugin family ---------------------------------------------------------------- */

/* What the accelerator detection found. */
typedef struct qemu_accel_probe {
	bool usable;
	char reason[CORDON_PLUGIN_REASON_MAX]; /* why not, or what was found */
} qemu_accel_probe;

typedef struct qemu_family {
	const char *name;                  /* the driver's (and plugin's) name */
	qemu_accel accel;                  /* the hardware accelerator */
	const char *(*machine)(qemu_arch); /* the machine type on this architecture */
	/* Whether the hardware accelerator is usable on this host, and why not. pvm_kernel:
	 * the tier names a guest kernel built for PVM (CONFIG_PVM_GUEST). */
	void (*detect)(bool pvm_kernel, qemu_accel_probe *ret);
	const cordon_plugin_config_key *config_keys;
} qemu_family;

/* The keys every family takes. */
#define QEMU_CONFIG_KEYS_COMMON \
	{ "kernel", CORDON_PLUGIN_CONFIG_STRING, 1 }, \
		{ "initrd", CORDON_PLUGIN_CONFIG_STRING, 1 }, \
		{ "kernel_sha256", CORDON_PLUGIN_CONFIG_STRING, 1 }, \
		{ "initrd_sha256", CORDON_PLUGIN_CONFIG_STRING, 1 }, \
		{ "accel", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "qemu", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "arch", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "pvm_kernel", CORDON_PLUGIN_CONFIG_BOOL, 0 }, \
		{ "boot_timeout", CORDON_PLUGIN_CONFIG_DURATION, 0 }, \
		{ "scratch", CORDON_PLUGIN_CONFIG_SIZE, 0 }, \
		{ "cpus", CORDON_PLUGIN_CONFIG_INT, 0 }, \
		{ "clone", CORDON_PLUGIN_CONFIG_BOOL, 0 }, \
		{ "workspace_max_size", CORDON_PLUGIN_CONFIG_SIZE, 0 }, \
		{ "workspace_max_files", CORDON_PLUGIN_CONFIG_INT, 0 }, \
		{ "workspace_share", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "virtiofsd", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
	{ \
		"pool", CORDON_PLUGIN_CONFIG_INT, 0 \
	}

/* Registers the family's driver (the plugin's init). */
int qemu_plugin_init(const cordon_host *host, cordon_plugin_registrar *reg,
		     cordon_plugin_error *err, const qemu_family *family) CORDON_INTERNAL;

/* The accelerator detections, one per family (accel.c): pure enough to run on any host. */
void qemu_detect_kvm(bool pvm_kernel, qemu_accel_probe *ret) CORDON_INTERNAL;
void qemu_detect_hvf(bool pvm_kernel, qemu_accel_probe *ret) CORDON_INTERNAL;
void qemu_detect_whpx(bool pvm_kernel, qemu_accel_probe *ret) CORDON_INTERNAL;

#endif /* CORDON_QEMU_H */
