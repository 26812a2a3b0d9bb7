/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU library's pure functions: the command line of every family, word for word (kvm
 * on x86_64 and aarch64, emulated, hvf, hyperv), the kernel command line, the host TSC read
 * from /proc/cpuinfo's text, the accelerator verdicts that hold on any Linux host, and the
 * sha256 the pins are checked with (FIPS 180-4's vectors).
 */
#include "config.h"

#include "testutil.h"
#include "qemu/qemu.h"
#include "qemu/vm.h"
#include "sha256.h"

#include <stdlib.h>
#include <string.h>

#define SANDBOX \
	"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"
/* the agent's port, then the network channel's (plugins/qemu/net.c), on QEMU's stdout */
#define AGENT_CHAN \
	"-chardev", "socket,id=agent,fd=3", "-device", \
		"virtserialport,chardev=agent,name=org.cordon.agent", "-chardev", \
		"socket,id=net,fd=1", "-device", "virtserialport,chardev=net,name=org.cordon.net"
#define COMMON \
	"-nodefaults", "-no-user-config", "-nographic", "-serial", "none", "-monitor", "none", \
		"-no-reboot", "-kernel", "/k", "-initrd", "/i"

static qemu_config base(void)
{
	return (qemu_config){ .binary = "/usr/bin/qemu-system-x86_64",
			      .arch = QEMU_ARCH_X86_64,
			      .accel = QEMU_ACCEL_KVM,
			      .machine = "microvm",
			      .memory_mib = 256,
			      .cpus = 2,
			      .kernel = "/k",
			      .initrd = "/i",
			      .tsc_khz = 2245780,
			      .scratch_bytes = 1048576 };
}

static void assert_argv(const qemu_config *c, const char *const *want)
{
	char **got = qemu_argv(c);
	ck_assert_ptr_nonnull(got);
	size_t i = 0;
	for (; want[i] && got[i]; i++)
		ck_assert_msg(strcmp(want[i], got[i]) == 0, "word %zu: want '%s', got '%s'", i,
			      want[i], got[i]);
	ck_assert_msg(!want[i] && !got[i], "length differs at word %zu (%s)", i,
		      want[i] ? want[i] : got[i]);
	xstrv_free(got);
}

START_TEST(test_argv_kvm_x86_64)
{
	qemu_config c = base();
	const char *want[] = { "/usr/bin/qemu-system-x86_64",
			       "-M",
			       "microvm,pit=off,pic=off,isa-serial=off",
			       "-accel",
			       "kvm",
			       "-cpu",
			       "host",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "cordon.scratch=1048576",
			       "-device",
			       "virtio-serial-device",
			       AGENT_CHAN,
			       SANDBOX,
			       NULL };
	assert_argv(&c, want);
}
END_TEST

/* Under TCG: QEMU's fullest CPU, and the TSC frequency on the kernel's command line. */
START_TEST(test_argv_tcg_x86_64)
{
	qemu_config c = base();
	c.accel = QEMU_ACCEL_TCG;
	c.pids = 64;
	c.nofile = 1024;
	c.fsize = 4096;
	const char *want[] = { "/usr/bin/qemu-system-x86_64",
			       "-M",
			       "microvm,pit=off,pic=off,isa-serial=off",
			       "-accel",
			       "tcg",
			       "-cpu",
			       "max",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "tsc_early_khz=2245780 cordon.scratch=1048576 cordon.pids=64 "
			       "cordon.nofile=1024 cordon.fsize=4096",
			       "-device",
			       "virtio-serial-device",
			       AGENT_CHAN,
			       SANDBOX,
			       NULL };
	assert_argv(&c, want);
}
END_TEST

START_TEST(test_argv_kvm_aarch64)
{
	qemu_config c = base();
	c.binary = "/usr/bin/qemu-system-aarch64";
	c.arch = QEMU_ARCH_AARCH64;
	c.machine = "virt";
	const char *want[] = { "/usr/bin/qemu-system-aarch64",
			       "-M",
			       "virt,gic-version=host",
			       "-accel",
			       "kvm",
			       "-cpu",
			       "host",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "cordon.scratch=1048576",
			       "-device",
			       "virtio-serial-device",
			       AGENT_CHAN,
			       SANDBOX,
			       NULL };
	assert_argv(&c, want);
}
END_TEST

/* The hvf guest path as CI runs it on Linux: aarch64 emulated. */
START_TEST(test_argv_tcg_aarch64)
{
	qemu_config c = base();
	c.binary = "/usr/bin/qemu-system-aarch64";
	c.arch = QEMU_ARCH_AARCH64;
	c.accel = QEMU_ACCEL_TCG;
	c.machine = "virt";
	const char *want[] = { "/usr/bin/qemu-system-aarch64",
			       "-M",
			       "virt,gic-version=max",
			       "-accel",
			       "tcg",
			       "-cpu",
			       "max,pauth-impdef=on",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "cordon.scratch=1048576",
			       "-device",
			       "virtio-serial-device",
			       AGENT_CHAN,
			       SANDBOX,
			       NULL };
	assert_argv(&c, want);
}
END_TEST

START_TEST(test_argv_hvf)
{
	qemu_config c = base();
	c.binary = "/opt/homebrew/bin/qemu-system-aarch64";
	c.arch = QEMU_ARCH_AARCH64;
	c.accel = QEMU_ACCEL_HVF;
	c.machine = "virt";
	const char *want[] = { "/opt/homebrew/bin/qemu-system-aarch64",
			       "-M",
			       "virt,gic-version=max",
			       "-accel",
			       "hvf",
			       "-cpu",
			       "host",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "cordon.scratch=1048576",
			       "-device",
			       "virtio-serial-device",
			       AGENT_CHAN,
			       SANDBOX,
			       NULL };
	assert_argv(&c, want);
}
END_TEST

/* WHPX on q35: virtio over PCI. */
START_TEST(test_argv_hyperv)
{
	qemu_config c = base();
	c.binary = "C:/qemu/qemu-system-x86_64.exe";
	c.accel = QEMU_ACCEL_WHPX;
	c.machine = "q35";
	const char *want[] = { "C:/qemu/qemu-system-x86_64.exe",
			       "-M",
			       "q35",
			       "-accel",
			       "whpx",
			       "-cpu",
			       "host",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "cordon.scratch=1048576",
			       "-device",
			       "virtio-serial-pci",
			       AGENT_CHAN,
			       SANDBOX,
			       NULL };
	assert_argv(&c, want);
}
END_TEST

/* Nothing that would give the guest a network, a display or a way to the host's files. */
START_TEST(test_argv_no_devices_beyond_the_channel)
{
	qemu_config c = base();
	char **got = qemu_argv(&c);
	for (size_t i = 0; got[i]; i++) {
		ck_assert_msg(strcmp(got[i], "-netdev") && strcmp(got[i], "-nic") &&
				      strcmp(got[i], "-net") && strcmp(got[i], "-drive") &&
				      strcmp(got[i], "-virtfs") && strcmp(got[i], "-display") &&
				      strcmp(got[i], "-runas"),
			      "%s in the argv", got[i]);
		if (strcmp(got[i], "-device") == 0)
			ck_assert(strncmp(got[i + 1], "virtio-serial", 13) == 0 ||
				  strncmp(got[i + 1], "virtserialport,", 15) == 0);
	}
	xstrv_free(got);
}
END_TEST

/* The owner token goes in -name, where gc finds it again. */
START_TEST(test_argv_owner_for_gc)
{
	qemu_config c = base();
	c.owner = "0123-45-67-89";
	char **got = qemu_argv(&c);
	size_t n = 0, len = 0;
	char line[4096];
	for (; got[n]; n++) {
		size_t l = strlen(got[n]) + 1;
		ck_assert(len + l < sizeof(line));
		memcpy(line + len, got[n], l);
		len += l;
	}
	ck_assert_str_eq(got[n - 4], "-name");
	ck_assert_str_eq(got[n - 3], "cordon-vm-0123-45-67-89");
	ck_assert_str_eq(qemu_gc_token(line, len), "0123-45-67-89");
	xstrv_free(got);
	/* not QEMU, or no name: none */
	const char other[] = "/bin/sleep\0-name\0cordon-vm-1\0";
	ck_assert_ptr_null(qemu_gc_token(other, sizeof(other) - 1));
	const char unnamed[] = "/usr/bin/qemu-system-x86_64\0-M\0none\0";
	ck_assert_ptr_null(qemu_gc_token(unnamed, sizeof(unnamed) - 1));
	const char named[] = "qemu-system-aarch64\0-name\0cordon-vm-ab\0";
	ck_assert_str_eq(qemu_gc_token(named, sizeof(named) - 1), "ab");
}
END_TEST

/* A clone template's RAM is a shared file and its monitor a socket on fd 0; its clones map
 * the file privately and wait for their state (-incoming defer: no exec: migration). */
START_TEST(test_argv_clone_template_and_restore)
{
	qemu_config c = base();
	c.mem_path = "/dev/shm/cordon-vm-t-X/ram";
	c.mem_shared = true;
	c.qmp = true;
	const char *tmpl[] = { "/usr/bin/qemu-system-x86_64",
			       "-M",
			       "microvm,pit=off,pic=off,isa-serial=off,memory-backend=cordon.ram",
			       "-accel",
			       "kvm",
			       "-cpu",
			       "host",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       "-object",
			       "memory-backend-file,id=cordon.ram,size=256M,"
			       "mem-path=/dev/shm/cordon-vm-t-X/ram,share=on",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "cordon.scratch=1048576",
			       "-device",
			       "virtio-serial-device",
			       AGENT_CHAN,
			       SANDBOX,
			       "-chardev",
			       "socket,id=qmp,fd=0",
			       "-mon",
			       "chardev=qmp,mode=control",
			       NULL };
	assert_argv(&c, tmpl);
	c.mem_shared = false;
	c.incoming = true;
	const char *clone[] = { "/usr/bin/qemu-system-x86_64",
				"-M",
				"microvm,pit=off,pic=off,isa-serial=off,memory-backend=cordon.ram",
				"-accel",
				"kvm",
				"-cpu",
				"host",
				"-m",
				"256M",
				"-smp",
				"2",
				"-object",
				"memory-backend-file,id=cordon.ram,size=256M,"
				"mem-path=/dev/shm/cordon-vm-t-X/ram,share=off",
				COMMON,
				"-append",
				"quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
				"cordon.scratch=1048576",
				"-device",
				"virtio-serial-device",
				AGENT_CHAN,
				SANDBOX,
				"-chardev",
				"socket,id=qmp,fd=0",
				"-mon",
				"chardev=qmp,mode=control",
				"-incoming",
				"defer",
				NULL };
	assert_argv(&c, clone);
	c.mem_path = "/dev/shm/a,b/ram"; /* QEMU would read a second option */
	ck_assert_ptr_null(qemu_argv(&c));
}
END_TEST

/* A cold boot's workspace over virtio-fs: RAM a shared memfd of QEMU's, the vhost-user
 * device on fd 0 (modern MMIO, or PCI on q35), the guest told rw or ro; never with a
 * clone's pieces. */
START_TEST(test_argv_virtiofs)
{
	qemu_config c = base();
	c.virtiofs = true;
	c.vfs_read_only = true;
	const char *want[] = { "/usr/bin/qemu-system-x86_64",
			       "-M",
			       "microvm,pit=off,pic=off,isa-serial=off,memory-backend=cordon.ram",
			       "-accel",
			       "kvm",
			       "-cpu",
			       "host",
			       "-m",
			       "256M",
			       "-smp",
			       "2",
			       COMMON,
			       "-append",
			       "quiet panic=-1 cryptomgr.notests random.trust_cpu=on "
			       "cordon.scratch=1048576 cordon.virtiofs=ro",
			       "-device",
			       "virtio-serial-device",
			       AGENT_CHAN,
			       "-object",
			       "memory-backend-memfd,id=cordon.ram,size=256M,share=on",
			       "-global",
			       "virtio-mmio.force-legacy=false",
			       "-chardev",
			       "socket,id=vfs,fd=0",
			       "-device",
			       "vhost-user-fs-device,chardev=vfs,tag=cordon.work",
			       SANDBOX,
			       NULL };
	assert_argv(&c, want);
	c.vfs_read_only = false;
	g_autofree char *line = qemu_append_line(&c);
	ck_assert(g_str_has_suffix(line, " cordon.virtiofs=rw"));
	c.machine = "q35";
	char **pci = qemu_argv(&c);
	bool found = false;
	for (size_t i = 0; pci[i]; i++) {
		found |= strcmp(pci[i], "vhost-user-fs-pci,chardev=vfs,tag=cordon.work") == 0;
		ck_assert_str_ne(pci[i], "virtio-mmio.force-legacy=false");
	}
	ck_assert(found);
	xstrv_free(pci);
	c = base();
	c.virtiofs = true;
	c.qmp = true;
	ck_assert_ptr_null(qemu_argv(&c));
	c.qmp = false;
	c.mem_path = "/dev/shm/x/ram";
	ck_assert_ptr_null(qemu_argv(&c));
}
END_TEST

START_TEST(test_argv_refuses_incomplete)
{
	qemu_config c = base();
	c.kernel = NULL;
	ck_assert_ptr_null(qemu_argv(&c));
	c = base();
	c.memory_mib = 0;
	ck_assert_ptr_null(qemu_argv(&c));
	c = base();
	c.cpus = 0;
	ck_assert_ptr_null(qemu_argv(&c));
}
END_TEST

START_TEST(test_cpu_khz)
{
	ck_assert_uint_eq(qemu_parse_cpu_khz("\nprocessor\t: 0\ncpu MHz\t\t: 2245.780\n"), 2245780);
	ck_assert_uint_eq(qemu_parse_cpu_khz("\ncpu MHz\t: 3000\n"), 3000000);
	ck_assert_uint_eq(qemu_parse_cpu_khz("\ncpu MHz\t: junk\n"), 0);
	ck_assert_uint_eq(qemu_parse_cpu_khz("\nmodel name\t: x\n"), 0);
	ck_assert_uint_eq(qemu_parse_cpu_khz(NULL), 0);
}
END_TEST

/* On Linux, whatever the hardware: the exact words an admin reads. */
START_TEST(test_detect_hvf_hyperv_on_linux)
{
	qemu_accel_probe a = { 0 };
	qemu_detect_hvf(false, &a);
	ck_assert(!a.usable);
	ck_assert_str_eq(a.reason, "requires macOS Hypervisor.framework");
	qemu_detect_whpx(false, &a);
	ck_assert(!a.usable);
	ck_assert_str_eq(a.reason, "requires the Windows Hypervisor Platform");
}
END_TEST

START_TEST(test_accel_names)
{
	ck_assert_str_eq(qemu_accel_name(QEMU_ACCEL_KVM), "kvm");
	ck_assert_str_eq(qemu_accel_name(QEMU_ACCEL_TCG), "tcg");
	ck_assert_str_eq(qemu_arch_binary(QEMU_ARCH_AARCH64), "qemu-system-aarch64");
	ck_assert_str_eq(qemu_arch_binary(QEMU_ARCH_X86_64), "qemu-system-x86_64");
}
END_TEST

static void assert_sha256(const char *data, size_t len, const char *want)
{
	sha256_ctx c;
	sha256_init(&c);
	/* in uneven pieces: the block boundary is crossed inside an update */
	for (size_t off = 0; off < len;) {
		size_t n = len - off < 7 ? len - off : 7;
		sha256_update(&c, data + off, n);
		off += n;
	}
	uint8_t d[32];
	char hex[65];
	sha256_final(&c, d);
	sha256_hex(d, hex);
	ck_assert_str_eq(hex, want);
}

START_TEST(test_sha256_vectors)
{
	assert_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_sha256(two, strlen(two),
		      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	char *million = malloc(1000000);
	memset(million, 'a', 1000000);
	assert_sha256(million, 1000000,
		      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}
END_TEST

static Suite *qemu_suite(void)
{
	Suite *s = suite_create("qemu");
	TCase *tc = tcase_create("argv");
	tcase_add_test(tc, test_argv_kvm_x86_64);
	tcase_add_test(tc, test_argv_tcg_x86_64);
	tcase_add_test(tc, test_argv_kvm_aarch64);
	tcase_add_test(tc, test_argv_tcg_aarch64);
	tcase_add_test(tc, test_argv_hvf);
	tcase_add_test(tc, test_argv_hyperv);
	tcase_add_test(tc, test_argv_no_devices_beyond_the_channel);
	tcase_add_test(tc, test_argv_owner_for_gc);
	tcase_add_test(tc, test_argv_refuses_incomplete);
	tcase_add_test(tc, test_argv_clone_template_and_restore);
	tcase_add_test(tc, test_argv_virtiofs);
	suite_add_tcase(s, tc);
	tc = tcase_create("host");
	tcase_add_test(tc, test_cpu_khz);
	tcase_add_test(tc, test_detect_hvf_hyperv_on_linux);
	tcase_add_test(tc, test_accel_names);
	tcase_add_test(tc, test_sha256_vectors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(qemu_suite()); }
