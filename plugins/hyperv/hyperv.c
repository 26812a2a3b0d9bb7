/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `hyperv` driver: microVMs on the Windows Hypervisor Platform (QEMU -accel whpx, the
 * q35 machine: WHPX is not known to run microvm). Everything else lives in plugins/qemu.
 * Built everywhere; on anything but Windows its probe says why it is unavailable
 * (docs/tiers/microvm.md).
 */
#include "config.h"

#include "../qemu/qemu.h"

static const cordon_plugin_config_key hyperv_keys[] = {
	QEMU_CONFIG_KEYS_COMMON,
	{ NULL, 0, 0 },
};

static const char *hyperv_machine(qemu_arch arch)
{
	return arch == QEMU_ARCH_AARCH64 ? "virt" : "q35";
}

static const qemu_family hyperv_family = {
	.name = "hyperv",
	.accel = QEMU_ACCEL_WHPX,
	.machine = hyperv_machine,
	.detect = qemu_detect_whpx,
	.config_keys = hyperv_keys,
};

static int hyperv_init(const cordon_host *host, cordon_plugin_registrar *reg,
		       cordon_plugin_error *err)
{
	return qemu_plugin_init(host, reg, err, &hyperv_family);
}

CORDON_PLUGIN_DEFINE("hyperv", PACKAGE_VERSION, "MicroVMs: QEMU on the Windows Hypervisor Platform",
		     "LGPL-2.1-or-later", hyperv_init)
