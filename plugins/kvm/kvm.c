/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `kvm` driver: microVMs on Linux KVM. Everything but the accelerator's detection and
 * the machine type lives in plugins/qemu.
 */
#include "config.h"

#include "../qemu/qemu.h"

static const cordon_plugin_config_key kvm_keys[] = {
	QEMU_CONFIG_KEYS_COMMON,
	{ NULL, 0, 0 },
};

/* microvm on x86_64 (no PCI, no legacy devices); virt on aarch64 */
static const char *kvm_machine(qemu_arch arch)
{
	return arch == QEMU_ARCH_AARCH64 ? "virt" : "microvm";
}

static const qemu_family kvm_family = {
	.name = "kvm",
	.accel = QEMU_ACCEL_KVM,
	.machine = kvm_machine,
	.detect = qemu_detect_kvm,
	.config_keys = kvm_keys,
};

static int kvm_init(const cordon_host *host, cordon_plugin_registrar *reg, cordon_plugin_error *err)
{
	return qemu_plugin_init(host, reg, err, &kvm_family);
}

CORDON_PLUGIN_DEFINE("kvm", PACKAGE_VERSION, "MicroVMs: QEMU on Linux KVM", "LGPL-2.1-or-later",
		     kvm_init)
