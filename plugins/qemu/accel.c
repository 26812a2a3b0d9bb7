/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whether a family's hardware accelerator is usable here: the one thing (with the machine
 * type) that tells the kvm, hvf and hyperv plugins apart. Never more than was checked: a
 * device that opens is not yet a hypervisor that runs our guest (PVM), so KVM is asked to
 * create a VM, and the probe's trial boot is the last word.
 */
#include "config.h"

#include "qemu.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/kvm.h>
#endif
#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

static void verdict(qemu_accel_probe *ret, bool usable, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void verdict(qemu_accel_probe *ret, bool usable, const char *fmt, ...)
{
	ret->usable = usable;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ret->reason, sizeof(ret->reason), fmt, ap);
	va_end(ap);
}

#ifdef __linux__
/* PVM (kvm_pvm) runs only guest kernels built for it; a stock kernel fails with a KVM
 * emulation error, so a tier that does not name a PVM guest kernel cannot use it. */
static bool kvm_is_pvm(void)
{
	struct stat st;
	return stat("/sys/module/kvm_pvm", &st) == 0;
}
#endif

void qemu_detect_kvm(bool pvm_kernel, qemu_accel_probe *ret)
{
#ifdef __linux__
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		verdict(ret, false, "/dev/kvm does not open: %s", strerror(errno));
		return;
	}
	int api = ioctl(fd, KVM_GET_API_VERSION, 0);
	int vm = api == KVM_API_VERSION ? ioctl(fd, KVM_CREATE_VM, 0) : -1;
	int e = errno;
	close(fd);
	if (api != KVM_API_VERSION) {
		verdict(ret, false, "/dev/kvm speaks an unknown KVM API");
		return;
	}
	if (vm < 0) {
		verdict(ret, false, "/dev/kvm refuses KVM_CREATE_VM: %s", strerror(e));
		return;
	}
	close(vm);
	if (kvm_is_pvm() && !pvm_kernel) {
		verdict(ret, false,
			"/dev/kvm is PVM: needs a guest kernel built with "
			"CONFIG_PVM_GUEST");
		return;
	}
	verdict(ret, true, "%s",
		kvm_is_pvm() ? "/dev/kvm is PVM, with a PVM guest kernel" : "/dev/kvm creates VMs");
#else
	(void)pvm_kernel;
	verdict(ret, false, "requires Linux KVM");
#endif
}

void qemu_detect_hvf(bool pvm_kernel, qemu_accel_probe *ret)
{
	(void)pvm_kernel;
#ifdef __APPLE__
	int on = 0;
	size_t len = sizeof(on);
	if (sysctlbyname("kern.hv_support", &on, &len, NULL, 0) == 0 && on)
		verdict(ret, true, "%s", "Hypervisor.framework is supported");
	else
		verdict(ret, false, "%s", "Hypervisor.framework is not supported on this Mac");
#else
	verdict(ret, false, "requires macOS Hypervisor.framework");
#endif
}

void qemu_detect_whpx(bool pvm_kernel, qemu_accel_probe *ret)
{
	(void)pvm_kernel;
#ifdef _WIN32
	/* Not written: the detection (WHvGetCapability) needs a Windows build, which the
	 * project does not have (docs/tiers/microvm.md). */
	verdict(ret, false, "%s", "detecting the Windows Hypervisor Platform is not implemented");
#else
	verdict(ret, false, "requires the Windows Hypervisor Platform");
#endif
}
