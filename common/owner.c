/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Owner tokens and liveness (owner.h). */
#include "config.h"

#include "owner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOOT_HEX 32

static ssize_t read_small(const char *path, char *buf, size_t max)
{
	buf[0] = '\0'; /* a caller that ignores the error still reads a string */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, max - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

/* The boot id without its dashes. */
static int boot_id(char out[BOOT_HEX + 1])
{
	char raw[64];
	ssize_t n = read_small("/proc/sys/kernel/random/boot_id", raw, sizeof(raw));
	if (n < 0)
		return (int)n;
	size_t k = 0;
	for (const char *p = raw; *p && *p != '\n'; p++) {
		if (*p == '-')
			continue;
		if (k == BOOT_HEX || !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return -EINVAL;
		out[k++] = *p;
	}
	out[k] = '\0';
	return k == BOOT_HEX ? 0 : -EINVAL;
}

static int pidns(unsigned long *ret)
{
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;
	*ret = (unsigned long)st.st_ino;
	return 0;
}

/* Field 22 of /proc/PID/stat (after the command, which may hold spaces and parentheses). */
static int start_time(long pid, unsigned long long *ret)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	ssize_t n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	const char *p = strrchr(buf, ')');
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p && sscanf(p, " %llu", ret) == 1 ? 0 : -EINVAL;
}

int owner_token_self(char buf[OWNER_TOKEN_MAX])
{
	char boot[BOOT_HEX + 1];
	unsigned long ns = 0;
	unsigned long long st = 0;
	long pid = (long)getpid();
	int r = boot_id(boot);
	if (r == 0)
		r = pidns(&ns);
	if (r == 0)
		r = start_time(pid, &st);
	if (r < 0)
		return r;
	snprintf(buf, OWNER_TOKEN_MAX, "%s-%lu-%ld-%llu", boot, ns, pid, st);
	return 0;
}

/* Decimal digits at *s (at least one, no sign, no space); advances *s. */
static bool scan_number(const char **s, unsigned long long *ret)
{
	const char *p = *s;
	unsigned long long v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (~0ull - 9) / 10)
			return false;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (p == *s)
		return false;
	*s = p;
	*ret = v;
	return true;
}

owner_state owner_token_state(const char *s, size_t *ret_len)
{
	if (!s)
		return OWNER_INVALID;
	const char *p = s;
	char boot[BOOT_HEX + 1];
	for (int i = 0; i < BOOT_HEX; i++, p++) {
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return OWNER_INVALID;
		boot[i] = *p;
	}
	boot[BOOT_HEX] = '\0';
	unsigned long long ns, pid, st;
	if (*p++ != '-' || !scan_number(&p, &ns) || *p++ != '-' || !scan_number(&p, &pid) ||
	    *p++ != '-' || !scan_number(&p, &st) || pid == 0 || pid > 0x7fffffff)
		return OWNER_INVALID;
	if (ret_len)
		*ret_len = (size_t)(p - s);
	char now[BOOT_HEX + 1];
	unsigned long our_ns = 0;
	/* What cannot be read about ourselves cannot prove anyone dead. */
	if (boot_id(now) < 0 || pidns(&our_ns) < 0)
		return OWNER_FOREIGN;
	if (strcmp(now, boot) != 0)
		return OWNER_DEAD; /* nothing of an earlier boot runs */
	if (ns != our_ns)
		return OWNER_FOREIGN;
	unsigned long long cur;
	int r = start_time((long)pid, &cur);
	if (r == -ENOENT || r == -ESRCH)
		return OWNER_DEAD;
	if (r < 0)
		return OWNER_FOREIGN;
	return cur == st ? OWNER_ALIVE : OWNER_DEAD;
}
