/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-sandbox host ids for the kernel tier as root (hostids.h). */
#include "config.h"

#include "hostids.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int hostids_in_block(unsigned id)
{
	return id >= HOSTIDS_FIRST && id - HOSTIDS_FIRST < HOSTIDS_COUNT;
}

/* The lock directory, made root's and private if missing, refused if anyone else could
 * have planted or could remove its files. */
static int open_lock_dir(char *why, size_t whylen)
{
	static const char *const dirs[] = { "/run/cordon", HOSTIDS_DIR };
	int fd = -1;
	for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
		if (mkdir(dirs[i], 0700) < 0 && errno != EEXIST) {
			snprintf(why, whylen, "cannot make %s: %s", dirs[i], g_strerror(errno));
			return -errno;
		}
		if (fd >= 0)
			close(fd);
		fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			int e = errno;
			snprintf(why, whylen, "cannot open %s: %s", dirs[i], g_strerror(e));
			if (fd >= 0)
				close(fd);
			return -e;
		}
		if (st.st_uid != 0 || (st.st_mode & 022)) {
			snprintf(why, whylen,
				 "%s is not root's own directory (owner %u, mode %04o): "
				 "the sandbox ids' locks cannot be trusted there",
				 dirs[i], (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			close(fd);
			return -EPERM;
		}
	}
	return fd;
}

int hostids_claim(hostids *ret, char *why, size_t whylen)
{
	*ret = (hostids){ .lock_fd = -1 };
	int dir = open_lock_dir(why, whylen);
	if (dir < 0)
		return dir;
	/* From a random place: concurrent hosts rarely try the same files. */
	unsigned start = 0;
	if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
		start = (unsigned)getpid();
	int r = -EAGAIN;
	for (unsigned i = 0; i < HOSTIDS_COUNT && r == -EAGAIN; i++) {
		unsigned id = HOSTIDS_FIRST + (start + i) % HOSTIDS_COUNT;
		char name[16];
		snprintf(name, sizeof(name), "%u", id);
		int fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			r = -errno;
			snprintf(why, whylen, "cannot open %s/%s: %s", HOSTIDS_DIR, name,
				 g_strerror(errno));
			break;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*ret = (hostids){ .uid = id, .gid = id, .lock_fd = fd };
			r = 0;
		} else {
			close(fd);
		}
	}
	close(dir);
	if (r == -EAGAIN)
		snprintf(why, whylen, "all %u sandbox ids are in use", HOSTIDS_COUNT);
	return r;
}

void hostids_release(hostids *h)
{
	if (h->lock_fd >= 0)
		close(h->lock_fd);
	h->lock_fd = -1;
}
