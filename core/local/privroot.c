/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A sandbox's private root (privroot.h). */
#include "config.h"

#include "privroot.h"
#include "fsops.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long own_pidns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static int open_tmp(void)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	return open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int private_root_make(private_root *r, const char **what)
{
	r->parent_fd = open_tmp();
	if (r->parent_fd < 0) {
		*what = "cannot open the temporary directory";
		return -errno;
	}
	unsigned long ns = own_pidns();
	for (int attempt = 0; attempt < 32; attempt++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) {
			*what = "getrandom";
			return -errno;
		}
		snprintf(r->name, sizeof(r->name), "cordon-%lu-%d-%016llx", ns, (int)getpid(),
			 (unsigned long long)rnd);
		if (mkdirat(r->parent_fd, r->name, 0700) == 0)
			break;
		r->name[0] = '\0';
		if (errno != EEXIST) {
			*what = "cannot create a private sandbox directory";
			return -errno;
		}
	}
	if (!r->name[0]) {
		*what = "cannot create a private sandbox directory";
		return -EEXIST;
	}
	int fd = openat(r->parent_fd, r->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*what = "cannot open the private sandbox directory";
		return -errno;
	}
	return fd;
}

int private_root_remove(private_root *r)
{
	int res = 0;
	if (r->parent_fd >= 0 && r->name[0])
		res = fsops_rmtree(r->parent_fd, r->name);
	if (r->parent_fd >= 0)
		close(r->parent_fd);
	*r = (private_root)PRIVATE_ROOT_INIT;
	return res;
}

/* A leftover: named by a process of our pid namespace that is gone, a
 * directory (not a link to one), ours. */
static bool is_leftover(int dirfd, const char *name, unsigned long ns)
{
	unsigned long their_ns = 0;
	int pid = 0, len = 0;
	unsigned long long rnd;
	if (sscanf(name, "cordon-%lu-%d-%16llx%n", &their_ns, &pid, &rnd, &len) != 3 ||
	    name[len] != '\0' || their_ns != ns || !ns || pid <= 0 || pid == (int)getpid())
		return false;
	if (kill(pid, 0) == 0 || errno != ESRCH)
		return false; /* alive (or not ours to tell) */
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid();
}

int private_root_gc(void)
{
	int tmp = open_tmp();
	if (tmp < 0)
		return 0;
	int fd = openat(tmp, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		close(tmp);
		return 0;
	}
	unsigned long ns = own_pidns();
	int removed = 0;
	struct dirent *ent;
	while ((ent = readdir(d)))
		if (is_leftover(tmp, ent->d_name, ns) && fsops_rmtree(tmp, ent->d_name) == 0)
			removed++;
	closedir(d);
	close(tmp);
	return removed;
}
