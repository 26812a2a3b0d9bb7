/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "qemu.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int qemu_file_sha256(const char *path, char hex[65])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (r == 0)
		r = sha256_fd(fd, hex);
	close(fd);
	return r;
}

uint64_t qemu_parse_cpu_khz(const char *cpuinfo)
{
	const char *p = cpuinfo ? strstr(cpuinfo, "\ncpu MHz") : NULL;
	if (!p)
		return 0;
	p = strchr(p, ':');
	if (!p)
		return 0;
	char *end = NULL;
	double mhz = strtod(p + 1, &end);
	if (end == p + 1 || mhz <= 0 || mhz > 100000)
		return 0;
	return (uint64_t)(mhz * 1000.0 + 0.5);
}

uint64_t qemu_host_tsc_khz(void)
{
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[8192] = "\n"; /* the first CPU's block is enough */
	ssize_t n = read(fd, buf + 1, sizeof(buf) - 2);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n + 1] = '\0';
	return qemu_parse_cpu_khz(buf);
}
