/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU command line, a pure function of qemu_config (tests/unit/test-qemu.c checks it
 * word for word). What it holds and why:
 *   -nodefaults -no-user-config   no default devices (NIC, VGA, serial, floppy), no config
 *                                 file read from the host: every device is named here
 *   -nographic, -serial none       no display, no console: the guest's only way out is the
 *                                 agent's port (the kernel is told `quiet`)
 *   no -netdev / -nic              no network device at all: the work reaches cordon's
 *                                 proxy and services only through the network channel
 *                                 below (net.c), never a route of its own
 *   -sandbox on,...               QEMU's own seccomp filter: no obsolete calls, no privilege
 *                                 changes, no exec/fork, no affinity/priority changes
 *   -chardev socket,fd=3          the agent's channel: a socket pair the plugin made, so no
 *                                 socket file exists on the host (nothing to race, nothing
 *                                 to clean up)
 *   -chardev socket,fd=1          the network channel: a second port on a second socket
 *                                 pair, streams multiplexed (common/netmux.h)
 *   -no-reboot                    a guest reboot ends QEMU (the sandbox is over)
 *   -name cordon-vm-<owner>       the host's owner token, for gc (gc.c)
 */
#include "config.h"

#include "qemu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *qemu_accel_name(qemu_accel a)
{
	switch (a) {
	case QEMU_ACCEL_KVM: return "kvm";
	case QEMU_ACCEL_HVF: return "hvf";
	case QEMU_ACCEL_WHPX: return "whpx";
	case QEMU_ACCEL_TCG: return "tcg";
	}
	return "tcg";
}

const char *qemu_arch_binary(qemu_arch a)
{
	return a == QEMU_ARCH_AARCH64 ? "qemu-system-aarch64" : "qemu-system-x86_64";
}

qemu_arch qemu_host_arch(void)
{
#if defined(__aarch64__)
	return QEMU_ARCH_AARCH64;
#else
	return QEMU_ARCH_X86_64;
#endif
}

/* The machine's options. microvm: no legacy PC devices (no PIT, PIC, RTC is kept: `rtc=off`
 * costs 2 s of boot), ACPI kept (without it the guest loses the virtio-mmio devices). virt
 * (aarch64): the GIC version the accelerator supports ("max" under TCG and hvf). */
static char *machine_arg(const qemu_config *c)
{
	if (strcmp(c->machine, "microvm") == 0)
		return xasprintf("microvm,pit=off,pic=off,isa-serial=off");
	if (strcmp(c->machine, "virt") == 0)
		return xasprintf("virt,gic-version=%s",
				 c->accel == QEMU_ACCEL_KVM ? "host" : "max");
	return qemu_xstrdup(c->machine);
}

/* The CPU model: the host's under a hardware accelerator, QEMU's fullest under TCG (aarch64
 * needs one named: virt's default is a 32-bit core). Emulated aarch64 takes QEMU's own
 * pointer-authentication algorithm: the architected one (QARMA) costs 5.2 s of boot against
 * 1.7 s here, and the guest cannot tell the difference. */
static const char *cpu_model(const qemu_config *c)
{
	if (c->accel != QEMU_ACCEL_TCG)
		return "host";
	return c->arch == QEMU_ARCH_AARCH64 ? "max,pauth-impdef=on" : "max";
}

/* Whether the machine's virtio transport is MMIO (microvm, virt) or PCI (q35, for WHPX). */
static bool virtio_mmio(const qemu_config *c)
{
	return strcmp(c->machine, "microvm") == 0 || strcmp(c->machine, "virt") == 0;
}

char *qemu_append_line(const qemu_config *c)
{
	char tsc[48] = "", pids[48] = "", nofile[48] = "", fsize[48] = "";
	/* Under emulation the guest calibrates its TSC against a timer that TCG runs at its own
	 * pace: about one boot in five hangs there without the frequency given. */
	if (c->accel == QEMU_ACCEL_TCG && c->arch == QEMU_ARCH_X86_64 && c->tsc_khz)
		snprintf(tsc, sizeof(tsc), " tsc_early_khz=%" PRIu64, c->tsc_khz);
	if (c->pids)
		snprintf(pids, sizeof(pids), " cordon.pids=%" PRIu64, c->pids);
	if (c->nofile)
		snprintf(nofile, sizeof(nofile), " cordon.nofile=%" PRIu64, c->nofile);
	if (c->fsize)
		snprintf(fsize, sizeof(fsize), " cordon.fsize=%" PRIu64, c->fsize);
	/* cryptomgr.notests: the self-tests cost 0.2 s and test nothing of ours; panic=-1 with
	 * -no-reboot: a guest panic ends QEMU at once; console=: nothing on a console */
	const char *vfs = !c->virtiofs       ? ""
			  : c->vfs_read_only ? " " AGENT_VIRTIOFS_ARG "ro"
					     : " " AGENT_VIRTIOFS_ARG "rw";
	return xasprintf("quiet panic=-1 cryptomgr.notests random.trust_cpu=on%s "
			 "cordon.scratch=%" PRIu64 "%s%s%s%s",
			 tsc, c->scratch_bytes, pids, nofile, fsize, vfs);
}

typedef struct argv_builder {
	char **v;
	size_t n;
} argv_builder;

static void add(argv_builder *b, char *owned)
{
	b->v = realloc(b->v, (b->n + 2) * sizeof(*b->v));
	if (!b->v)
		abort();
	b->v[b->n++] = owned;
	b->v[b->n] = NULL;
}

static void add2(argv_builder *b, const char *opt, char *owned)
{
	add(b, qemu_xstrdup(opt));
	add(b, owned);
}

/* The machine, its RAM the memory backend's when it has one. */
static char *machine_with_ram(const qemu_config *c)
{
	char *m = machine_arg(c);
	if (!c->mem_path && !c->virtiofs)
		return m;
	char *r = xasprintf("%s,memory-backend=" QEMU_RAM_ID, m);
	free(m);
	return r;
}

/* A clone's pieces (clone.c): guest RAM in a file, shared by a template, copy-on-write
 * (share=off: MAP_PRIVATE) in its clones; QMP on a socket the host holds the other end of;
 * the device state loaded when the host says (-incoming defer: `-incoming exec:` would
 * spawn, which -sandbox spawn=deny kills). */
static void add_ram(argv_builder *b, const qemu_config *c)
{
	add2(b, "-object",
	     xasprintf("memory-backend-file,id=" QEMU_RAM_ID ",size=%" PRIu64
		       "M,mem-path=%s,share=%s",
		       c->memory_mib, c->mem_path, c->mem_shared ? "on" : "off"));
}

/* virtio-fs: guest RAM that virtiofsd can map (a memfd QEMU makes, shared), the device on
 * virtiofsd's socket (QEMU_VFS_FD); MMIO's legacy transport has no vhost-user-fs. */
static void add_virtiofs(argv_builder *b, const qemu_config *c, bool mmio)
{
	add2(b, "-object",
	     xasprintf("memory-backend-memfd,id=" QEMU_RAM_ID ",size=%" PRIu64 "M,share=on",
		       c->memory_mib));
	if (mmio)
		add2(b, "-global", qemu_xstrdup("virtio-mmio.force-legacy=false"));
	add2(b, "-chardev", xasprintf("socket,id=vfs,fd=%d", QEMU_VFS_FD));
	add2(b, "-device",
	     xasprintf("%s,chardev=vfs,tag=" AGENT_VIRTIOFS_TAG,
		       mmio ? "vhost-user-fs-device" : "vhost-user-fs-pci"));
}

static void add_qmp(argv_builder *b, const qemu_config *c)
{
	if (c->qmp) {
		add2(b, "-chardev", xasprintf("socket,id=qmp,fd=%d", QEMU_QMP_FD));
		add2(b, "-mon", qemu_xstrdup("chardev=qmp,mode=control"));
	}
	if (c->incoming)
		add2(b, "-incoming", qemu_xstrdup("defer"));
}

char **qemu_argv(const qemu_config *c)
{
	if (!c->binary || !c->kernel || !c->initrd || !c->machine || !c->memory_mib || !c->cpus ||
	    (c->mem_path && strchr(c->mem_path, ',')) ||
	    (c->virtiofs && (c->mem_path || c->qmp || c->incoming)))
		return NULL;
	argv_builder b = { 0 };
	add(&b, qemu_xstrdup(c->binary));
	add2(&b, "-M", machine_with_ram(c));
	add2(&b, "-accel", qemu_xstrdup(qemu_accel_name(c->accel)));
	add2(&b, "-cpu", qemu_xstrdup(cpu_model(c)));
	add2(&b, "-m", xasprintf("%" PRIu64 "M", c->memory_mib));
	add2(&b, "-smp", xasprintf("%u", c->cpus));
	if (c->mem_path)
		add_ram(&b, c);
	add(&b, qemu_xstrdup("-nodefaults"));
	add(&b, qemu_xstrdup("-no-user-config"));
	add(&b, qemu_xstrdup("-nographic"));
	add2(&b, "-serial", qemu_xstrdup("none"));
	add2(&b, "-monitor", qemu_xstrdup("none"));
	add(&b, qemu_xstrdup("-no-reboot"));
	add2(&b, "-kernel", qemu_xstrdup(c->kernel));
	add2(&b, "-initrd", qemu_xstrdup(c->initrd));
	add2(&b, "-append", qemu_append_line(c));
	bool mmio = virtio_mmio(c);
	add2(&b, "-device", qemu_xstrdup(mmio ? "virtio-serial-device" : "virtio-serial-pci"));
	add2(&b, "-chardev", xasprintf("socket,id=agent,fd=%d", QEMU_AGENT_FD));
	add2(&b, "-device", qemu_xstrdup("virtserialport,chardev=agent,name=" QEMU_AGENT_PORT));
	add2(&b, "-chardev", xasprintf("socket,id=net,fd=%d", QEMU_NET_FD));
	add2(&b, "-device", qemu_xstrdup("virtserialport,chardev=net,name=" QEMU_NET_PORT));
	if (c->virtiofs)
		add_virtiofs(&b, c, mmio);
	if (c->owner)
		add2(&b, "-name", xasprintf(QEMU_NAME_PREFIX "%s", c->owner));
	add2(&b, "-sandbox",
	     qemu_xstrdup("on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
			  "resourcecontrol=deny"));
	add_qmp(&b, c);
	return b.v;
}
