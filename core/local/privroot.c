/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A sandbox's private root (privroot.h). */
#include "config.h"

#include "privroot.h"
#include "fsops.h"
#include "owner.h"

#include <dirent.h>
#include <glib.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_tmp(void)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	return open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int private_root_tmpfs(uint64_t size, const char **what)
{
	char bytes[24];
	snprintf(bytes, sizeof(bytes), "%" PRIu64, size);
	int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0) {
		*what = "cannot create the private root's tmpfs";
		return -errno;
	}
	int mnt = -1;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", bytes, 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0) {
		mnt = -errno;
		*what = "cannot create the private root's tmpfs";
	}
	close(fs);
	return mnt;
}

/* Mounts a fresh tmpfs of size bytes on the directory dirfd. */
static int mount_tmpfs(int dirfd, uint64_t size, const char **what)
{
	int mnt = private_root_tmpfs(size, what);
	if (mnt < 0)
		return mnt;
	int r = 0;
	if (syscall(SYS_move_mount, mnt, "", dirfd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		r = -errno;
		*what = "cannot mount the private root's tmpfs";
	}
	close(mnt);
	return r;
}

/* Detaches what is mounted on parent_fd/name (umount2 takes a path: the
 * parent's by its fd, the last component never followed). A run still
 * holding the tmpfs lets go of it when it ends. */
static int unmount_at(int parent_fd, const char *name)
{
	g_autofree char *path = g_strdup_printf("/proc/self/fd/%d/%s", parent_fd, name);
	return umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 ? -errno : 0;
}

/* "cordon-TOKEN-RANDOM" into name (owner.h: gc can tell when its maker is gone). */
static int make_name(char *name, size_t len, const char **what)
{
	char owner[OWNER_TOKEN_MAX];
	int tok = owner_token_self(owner);
	if (tok < 0) {
		*what = "cannot tell this process's owner token from /proc";
		return tok;
	}
	uint64_t rnd;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		*what = "getrandom";
		return -errno;
	}
	snprintf(name, len, "cordon-%s-%016llx", owner, (unsigned long long)rnd);
	return 0;
}

int private_root_path(char *buf, size_t len, const char **what)
{
	int tmp = open_tmp();
	if (tmp < 0) {
		*what = "cannot open the temporary directory";
		return -errno;
	}
	char link[64], dir[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", tmp);
	ssize_t n = readlink(link, dir, sizeof(dir) - 1);
	close(tmp);
	if (n <= 0) {
		*what = "cannot name the temporary directory";
		return n < 0 ? -errno : -EINVAL;
	}
	dir[n] = '\0';
	if (strcmp(dir, "/tmp") != 0 && strncmp(dir, "/tmp/", 5) != 0)
		return -ENOTDIR;
	char name[sizeof(((private_root *)0)->name)];
	int r = make_name(name, sizeof(name), what);
	if (r < 0)
		return r;
	if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len) {
		*what = "the temporary directory's path is too long";
		return -ENAMETOOLONG;
	}
	return 0;
}

int private_root_make(private_root *r, uint64_t disk, const char **what)
{
	r->parent_fd = open_tmp();
	if (r->parent_fd < 0) {
		*what = "cannot open the temporary directory";
		return -errno;
	}
	for (int attempt = 0; attempt < 32; attempt++) {
		int e = make_name(r->name, sizeof(r->name), what);
		if (e < 0) {
			r->name[0] = '\0';
			return e;
		}
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
	/* Only root can mount here; elsewhere the directory stays plain
	 * (docs/tiers/local.md, "The private root"). */
	if (disk > 0 && geteuid() == 0) {
		int dir = openat(r->parent_fd, r->name,
				 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int m = dir < 0 ? -errno : mount_tmpfs(dir, disk, what);
		if (dir >= 0)
			close(dir);
		if (m < 0 && m != -EPERM) /* EPERM: root without CAP_SYS_ADMIN here */
			return m;
		r->tmpfs = m == 0;
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
	if (r->tmpfs)
		res = unmount_at(r->parent_fd, r->name);
	if (r->parent_fd >= 0 && r->name[0] && res == 0)
		res = fsops_rmtree(r->parent_fd, r->name);
	if (r->parent_fd >= 0)
		close(r->parent_fd);
	*r = (private_root)PRIVATE_ROOT_INIT;
	return res;
}

/* A leftover: named by a process that is certainly gone (owner.h), a
 * directory (not a link to one), ours; as root also a mount point there (a
 * private root's tmpfs, which the kernel tier gave to the sandbox's user). */
static bool is_leftover(int dirfd, const char *name)
{
	static const char prefix[] = "cordon-";
	if (strncmp(name, prefix, strlen(prefix)) != 0)
		return false;
	const char *token = name + strlen(prefix);
	size_t len = 0;
	if (owner_token_state(token, &len) != OWNER_DEAD)
		return false; /* alive, not ours to tell, or not one of ours */
	const char *rnd = token + len;
	if (rnd[0] != '-' || strlen(rnd + 1) != 16 || strspn(rnd + 1, "0123456789abcdef") != 16)
		return false;
	struct stat st, parent;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    fstat(dirfd, &parent) < 0)
		return false;
	return st.st_uid == geteuid() || (geteuid() == 0 && st.st_dev != parent.st_dev);
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
	int removed = 0;
	struct dirent *ent;
	while ((ent = readdir(d))) {
		if (!is_leftover(tmp, ent->d_name))
			continue;
		/* Its creator died with its tmpfs mounted (as root). */
		if (geteuid() == 0)
			unmount_at(tmp, ent->d_name);
		if (fsops_rmtree(tmp, ent->d_name) == 0)
			removed++;
	}
	closedir(d);
	close(tmp);
	return removed;
}
