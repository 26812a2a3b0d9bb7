/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vmm-probe: stands in for QEMU in the jailed host program's red-team test
 * (tests/unit/test-hostservices.c, "jail"): started through the same
 * host->process_spawn(CORDON_HOST_PROCESS_JAIL) as the VMM, it reports what it
 * can see and do, one "key value" line each:
 *   ids UID GID        pid PID  ppid PPID  hostname NAME  nnp 0|1
 *   seccomp MODE       PR_GET_SECCOMP: 2 under a filter (there is no /proc to read)
 *   root NAMES         every path under / (depth-first, ':'-separated)
 *   open PATH ERRNO    for each argv path: 0 when it opened, else its errno
 *   write PATH ERRNO   the same for a write open of the first argv path
 *   net ERRNO          a TCP connect to 127.0.0.1:PORT ($PROBE_PORT)
 *   mount ERRNO  unshare ERRNO  chroot ERRNO   what the seccomp filter refuses
 *   fd3 0|1            whether descriptor 3 is open
 *   kvm API ERRNO      with $PROBE_KVM (a device node): KVM_GET_API_VERSION's answer (or
 *                      -errno of the open) and KVM_CREATE_VM's errno (0: it made a VM)
 *   proc NAMES         what /proc holds (not descended into by root), ':'-separated
 *   procwrite ERRNO    a write open of /proc/self/comm
 *   fdpath OPEN PRIVATE SHARED WRITE TRUNCATE FIRST
 *                      with $PROBE_FD_PATH (the jail's descriptor, by name), as QEMU uses its
 *                      RAM file: the errno of an O_RDWR open, of a write into a MAP_PRIVATE
 *                      writable mapping (0: it took), of a MAP_SHARED writable mapping (0:
 *                      it mapped, and "X" was written through it), of write(2) and of
 *                      ftruncate; then the file's first 8 bytes (hex) read back after them
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

static void walk(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d || depth > 12) {
		if (d)
			closedir(d);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, de->d_name);
		printf("%s:", p);
		if (de->d_type == DT_DIR && strcmp(p, "/proc") != 0)
			walk(p, depth + 1);
	}
	closedir(d);
}

static int err_of(int r) { return r < 0 ? errno : 0; }

static void list_proc(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	printf("proc ");
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			printf("%s:", de->d_name);
	printf("\n");
	if (d)
		closedir(d);
	int fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
	printf("procwrite %d\n", fd < 0 ? errno : 0);
}

/* As QEMU 7.2 treats its RAM file: opened read-write by name, mapped. */
static void probe_fd_path(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	int open_err = fd < 0 ? errno : 0, priv = -1, shared = -1, wr = -1, tr = -1;
	unsigned char first[8] = { 0 };
	if (fd >= 0) {
		unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		priv = m == MAP_FAILED ? errno : 0;
		if (m != MAP_FAILED) {
			m[0] = 'P';
			munmap(m, 4096);
		}
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		shared = m == MAP_FAILED ? errno : 0;
		if (m != MAP_FAILED) {
			m[1] = 'X';
			munmap(m, 4096);
		}
		wr = pwrite(fd, "W", 1, 2) == 1 ? 0 : errno;
		tr = err_of(ftruncate(fd, 0));
		if (pread(fd, first, sizeof(first), 0) < 0)
			memset(first, 0xff, sizeof(first));
		close(fd);
	}
	printf("fdpath %d %d %d %d %d ", open_err, priv, shared, wr, tr);
	for (size_t i = 0; i < sizeof(first); i++)
		printf("%02x", first[i]);
	printf("\n");
}

int main(int argc, char **argv)
{
	char host[64] = "";
	gethostname(host, sizeof(host));
	printf("ids %u %u\npid %d\nppid %d\nhostname %s\nnnp %d\nseccomp %d\n", getuid(), getgid(),
	       getpid(), getppid(), host, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
	       prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
	printf("root ");
	walk("/", 0);
	printf("\n");
	list_proc();
	for (int i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		printf("open %s %d\n", argv[i], fd < 0 ? errno : 0);
		if (fd >= 0)
			close(fd);
	}
	if (argc > 1) {
		int fd = open(argv[1], O_WRONLY | O_CLOEXEC);
		printf("write %s %d\n", argv[1], fd < 0 ? errno : 0);
		if (fd >= 0)
			close(fd);
	}
	const char *port = getenv("PROBE_PORT");
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port ? atoi(port) : 1) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	printf("net %d\n", s < 0 ? errno : err_of(connect(s, (struct sockaddr *)&a, sizeof(a))));
	printf("mount %d\n", err_of(mount("none", "/", "tmpfs", 0, NULL)));
	printf("unshare %d\n", err_of(unshare(CLONE_NEWUSER)));
	printf("chroot %d\n", err_of(chroot("/")));
	printf("fd3 %d\n", fcntl(3, F_GETFD) >= 0);
	const char *fd_path = getenv("PROBE_FD_PATH");
	if (fd_path)
		probe_fd_path(fd_path);
	const char *kvm = getenv("PROBE_KVM");
	if (kvm) {
		int fd = open(kvm, O_RDWR | O_CLOEXEC);
		int api = fd < 0 ? -errno : ioctl(fd, KVM_GET_API_VERSION, 0);
		int vm = fd < 0 ? -1 : ioctl(fd, KVM_CREATE_VM, 0);
		printf("kvm %d %d\n", api, vm < 0 ? errno : 0);
	}
	fflush(stdout);
	return 0;
}
