/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trusted files: the rules the loader applies to plugins and their directory,
 * and the policy reader to a policy file. Whoever can write such a file, its
 * directory or any directory above it (which lets them rename what is below)
 * chooses the code cordon runs or the policy it enforces, so that must be
 * root or us. A world-writable directory with the sticky bit (/tmp) is fine
 * above the file: others cannot rename what we own in it.
 *
 * Everything is decided on descriptors: the file is opened once, without
 * following a final symlink, and the directories are reached from its
 * directory's descriptor through "..", so what is checked is what is read.
 */
#include "config.h"

#include "filetrust.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <unistd.h>

static bool owner_trusted(uid_t uid) { return uid == 0 || uid == geteuid(); }

int filetrust_check_stat(const struct stat *st, const char *path, bool sticky_ok, char **ret_why)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);
	if (!owner_trusted(st->st_uid))
		*ret_why = g_strdup_printf("%s is owned by uid %u, not by root or by us", path,
					   (unsigned)st->st_uid);
	else if ((st->st_mode & (S_IWGRP | S_IWOTH)) &&
		 !(sticky_ok && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
		*ret_why = g_strdup_printf(S_ISDIR(st->st_mode) && sticky_ok
						   ? "%s is group- or world-writable without the "
						     "sticky bit (mode %04o)"
						   : "%s is group- or world-writable (mode %04o)",
					   path, mode);
	/* Another name for the file may sit in a directory we do not check. */
	else if (S_ISREG(st->st_mode) && st->st_nlink > 1)
		*ret_why = g_strdup_printf("%s has %ju hard links (another name for it could be "
					   "anywhere)",
					   path, (uintmax_t)st->st_nlink);
	else
		return 0;
	return -EPERM;
}

/* The directory's name for messages: where the kernel says it is. */
static char *dir_name(int fd, const char *fallback)
{
	g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", fd);
	char *name = g_file_read_link(link, NULL);
	if (!name)
		name = g_strdup_printf("a directory above %s", fallback);
	return name;
}

int filetrust_check_dirs(int dirfd, const char *path, char **ret_why)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		int e = errno;
		*ret_why = g_strdup_printf("%s: %s", path, g_strerror(e));
		return -e;
	}
	int r = 0;
	for (bool first = true;; first = false) {
		struct stat st, up;
		if (fstat(fd, &st) < 0) {
			r = -errno;
			*ret_why = g_strdup_printf("%s: %s", path, g_strerror(-r));
			break;
		}
		g_autofree char *name = first ? g_strdup(path) : dir_name(fd, path);
		if ((r = filetrust_check_stat(&st, name, true, ret_why)) < 0)
			break;
		int parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0 || fstat(parent, &up) < 0) {
			r = -errno;
			*ret_why = g_strdup_printf("the directory above %s: %s", name,
						   g_strerror(-r));
			if (parent >= 0)
				close(parent);
			break;
		}
		close(fd);
		fd = parent;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break; /* the root: its own parent */
	}
	close(fd);
	return r;
}

/* filetrust_openat with the caller's access flags (O_RDONLY, or O_WRONLY |
 * O_APPEND | O_CREAT for the audit trail), created with mode. */
static int openat_flags(int dirfd, const char *base, const char *path, int flags, mode_t mode,
			int *ret_fd, struct stat *ret_st, char **ret_why)
{
	/* O_NONBLOCK: a FIFO must not hang us; it is refused below anyway. */
	int fd = openat(dirfd, base, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode);
	if (fd < 0) {
		int e = errno;
		*ret_why = e == ELOOP ? g_strdup_printf("%s is a symbolic link", path)
				      : g_strdup_printf("cannot open %s: %s", path, g_strerror(e));
		return -e;
	}
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		*ret_why = g_strdup_printf("cannot stat %s: %s", path, g_strerror(-r));
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		*ret_why = g_strdup_printf("%s is not a regular file", path);
	} else {
		r = filetrust_check_stat(&st, path, false, ret_why);
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	if (ret_st)
		*ret_st = st;
	*ret_fd = fd;
	return 0;
}

int filetrust_openat(int dirfd, const char *base, const char *path, int *ret_fd,
		     struct stat *ret_st, char **ret_why)
{
	return openat_flags(dirfd, base, path, O_RDONLY, 0, ret_fd, ret_st, ret_why);
}

int filetrust_open_flags(const char *path, int flags, mode_t mode, int *ret_fd, char **ret_why)
{
	g_autofree char *dir = g_path_get_dirname(path);
	g_autofree char *base = g_path_get_basename(path);
	if (!*path || g_str_has_suffix(path, "/") || strcmp(base, ".") == 0 ||
	    strcmp(base, "..") == 0) {
		*ret_why = g_strdup_printf("%s does not name a file", path);
		return -EINVAL;
	}
	/* Symlinks above the file are followed: the directories reached are
	 * the ones checked. */
	int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		int e = errno;
		*ret_why = g_strdup_printf("cannot open %s: %s", path, g_strerror(e));
		return -e;
	}
	int fd = -1;
	int r;
	if (flags & O_CREAT) {
		/* Nothing is created in a directory someone else could change. */
		r = filetrust_check_dirs(dirfd, dir, ret_why);
		if (r >= 0)
			r = openat_flags(dirfd, base, path, flags, mode, &fd, NULL, ret_why);
	} else {
		r = openat_flags(dirfd, base, path, flags, mode, &fd, NULL, ret_why);
		if (r >= 0 && (r = filetrust_check_dirs(dirfd, dir, ret_why)) < 0)
			close(fd);
	}
	close(dirfd);
	if (r < 0)
		return r;
	*ret_fd = fd;
	return 0;
}

int filetrust_open(const char *path, int *ret_fd, char **ret_why)
{
	return filetrust_open_flags(path, O_RDONLY, 0, ret_fd, ret_why);
}
