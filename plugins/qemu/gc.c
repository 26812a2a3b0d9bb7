/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gc: QEMUs whose host died. Every guest's QEMU is named `-name cordon-vm-<owner token>`
 * (common/owner.h); normally it ends with its host (vm.c), but a guest kernel the work took
 * over could keep it running. A QEMU whose token's owner is certainly dead is killed through
 * a pidfd opened before its command line is read again, so a reused pid is never signalled.
 * Tokens of live hosts, of other pid namespaces, or that do not parse are left alone.
 */
#include "config.h"

#include "net.h"
#include "vm.h"
#include "owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CMDLINE_MAX 65536

/* The token after `-name cordon-vm-` in a QEMU's NUL-separated command line, or NULL. */
const char *qemu_gc_token(const char *cmdline, size_t len)
{
	const char *end = cmdline + len, *prev = NULL;
	const char *base = strrchr(cmdline, '/');
	if (strncmp(base ? base + 1 : cmdline, "qemu-system-", 12) != 0)
		return NULL;
	for (const char *p = cmdline; p < end; p += strlen(p) + 1) {
		if (prev && strcmp(prev, "-name") == 0 &&
		    strncmp(p, QEMU_NAME_PREFIX, strlen(QEMU_NAME_PREFIX)) == 0)
			return p + strlen(QEMU_NAME_PREFIX);
		prev = p;
	}
	return NULL;
}

static ssize_t read_cmdline(int dirfd, char *buf, size_t len)
{
	int fd = openat(dirfd, "cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n > 0)
		buf[n] = '\0';
	return n;
}

/* Kills pid when it is still the QEMU of a dead owner; 1 when it did. */
static int reap_one(pid_t pid, char *buf)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return 0;
	char path[32];
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ssize_t n = dir >= 0 ? read_cmdline(dir, buf, CMDLINE_MAX) : -1;
	if (dir >= 0)
		close(dir);
	/* read after the pidfd: the pid named the same process while we read */
	const char *token = n > 0 ? qemu_gc_token(buf, (size_t)n) : NULL;
	int killed = 0;
	if (token && owner_token_state(token, NULL) == OWNER_DEAD &&
	    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
		killed = 1;
	close(pidfd);
	return killed;
}

int qemu_gc(void *tier, cordon_plugin_error *err)
{
	(void)tier;
	(void)err;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	char *buf = xmalloc0(CMDLINE_MAX);
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end = NULL;
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 1 || *end)
			continue;
		int dir = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ssize_t n = dir >= 0 ? read_cmdline(dir, buf, CMDLINE_MAX) : -1;
		if (dir >= 0)
			close(dir);
		if (n > 0 && qemu_gc_token(buf, (size_t)n))
			removed += reap_one((pid_t)pid, buf);
	}
	closedir(d);
	free(buf);
	removed += qemu_clones_gc();
	removed += qemu_net_gc(); /* the listener directories of hosts that died */
	if (removed)
		qemu_host->log(CORDON_PLUGIN_LOG_INFO, "qemu",
			       "gc: removed %d orphaned QEMUs or templates", removed);
	return removed;
}
