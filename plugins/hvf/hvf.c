/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `hvf` driver: microVMs on macOS Hypervisor.framework (QEMU -accel hvf, the virt
 * machine: Apple silicon). Everything else lives in plugins/qemu. Built everywhere; on
 * anything but macOS its probe says why it is unavailable (docs/tiers/microvm.md).
 */
#include "config.h"

#include "../qemu/qemu.h"

static const cordon_plugin_config_key hvf_keys[] = {
	QEMU_CONFIG_KEYS_COMMON,
	{ NULL, 0, 0 },
};

static const char *hvf_machine(qemu_arch arch)
{
	(void)arch; /* virt on both: microvm does not run under hvf */
	return "virt";
}

static const qemu_family hvf_family = {
	.name = "hvf",
	.accel = QEMU_ACCEL_HVF,
	.machine = hvf_machine,
	.detect = qemu_detect_hvf,
	.config_keys = hvf_keys,
};

static int hvf_init(const cordon_host *host, cordon_plugin_registrar *reg, cordon_plugin_error *err)
{
	return qemu_plugin_init(host, reg, err, &hvf_family);
}

CORDON_PLUGIN_DEFINE("hvf", PACKAGE_VERSION, "MicroVMs: QEMU on macOS Hypervisor.framework",
		     "LGPL-2.1-or-later", hvf_init)
