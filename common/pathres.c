/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Path confinement under a root fd: openat2 or an O_NOFOLLOW walk. */
#include "config.h"

#include "pathres.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A rename racing a ".." lookup makes openat2 answer -EAGAIN; retry a while. */
#define OPENAT2_RETRIES 64

static _Atomic int forced_method = PATHRES_AUTO;
/* 0 unknown, 1 openat2 works, -1 openat2 is missing. */
static _Atomic int have_openat2 = 0;

void pathres_set_method(pathres_method m) { atomic_store(&forced_method, (int)m); }

pathres_method pathres_effective_method(void)
{
	int m = atomic_load(&forced_method);
	if (m != PATHRES_AUTO)
		return (pathres_method)m;
	return atomic_load(&have_openat2) < 0 ? PATHRES_WALK : PATHRES_OPENAT2;
}

bool pathres_is_escape(int err)
{
	err = err < 0 ? -err : err;
	return err == EXDEV || err == ELOOP;
}

static const char *dot_if_empty(const char *path) { return (!path || !*path) ? "." : path; }

static int via_openat2(int root_fd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	for (int i = 0; i < OPENAT2_RETRIES; i++) {
		long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	return -EAGAIN;
}

/* ---- the O_NOFOLLOW walk -------------------------------------------------- */

typedef struct walk {
	int root_fd;
	int stack[PATHRES_MAX_DEPTH]; /* held directories below the root */
	int depth;
	int links;
	char rest[2 * PATH_MAX]; /* what is left to resolve */
} walk;

static int walk_cur(const walk *w) { return w->depth ? w->stack[w->depth - 1] : w->root_fd; }

static void walk_release(walk *w)
{
	while (w->depth > 0)
		close(w->stack[--w->depth]);
}

/* Replaces the component just read (ending at `after`) by the link's text:
 * rest = target after. */
static int walk_splice(walk *w, int link_fd, const char *after)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(link_fd, "", target, sizeof(target));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(target))
		return -ENAMETOOLONG;
	target[n] = '\0';
	if (++w->links > PATHRES_MAX_LINKS)
		return -ELOOP;
	if (target[0] == '/')
		return -EXDEV;
	size_t tl = (size_t)n, al = strlen(after);
	if (tl + 1 + al + 1 > sizeof(w->rest))
		return -ENAMETOOLONG;
	/* `after` points into w->rest (it starts with '/' unless empty): move it
	 * first, then put the target in front. */
	memmove(w->rest + tl, after, al + 1);
	memcpy(w->rest, target, tl);
	return 0;
}

/* Opens one intermediate component: a directory is pushed, a link spliced. */
static int walk_step(walk *w, const char *name, const char *after)
{
	int fd = openat(walk_cur(w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (S_ISDIR(st.st_mode)) {
		if (w->depth >= PATHRES_MAX_DEPTH) {
			close(fd);
			return -ENAMETOOLONG;
		}
		w->stack[w->depth++] = fd;
		return 1; /* advanced */
	}
	int r = S_ISLNK(st.st_mode) ? walk_splice(w, fd, after) : -ENOTDIR;
	close(fd);
	return r; /* 0: rest rewritten */
}

/* Follows the link lfd (the final component) by splicing its text. */
static int walk_last_link(walk *w, int lfd, int e)
{
	struct stat st;
	int r = fstat(lfd, &st) < 0 ? -errno : 0;
	if (r == 0)
		r = S_ISLNK(st.st_mode) ? walk_splice(w, lfd, "") : -e;
	return r;
}

/* Opens the final component; a link there is followed like any other. What it is comes
 * from an O_PATH|O_NOFOLLOW open, which never follows anything; only then is it opened
 * with the caller's flags, and that must be the very inode looked at. O_NOFOLLOW alone is
 * not enough: gVisor follows a final link when O_DIRECTORY is set too (runsc 2023). */
static int walk_last(walk *w, const char *name, int flags, mode_t mode, int *ret_fd)
{
	int lfd = openat(walk_cur(w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0 && (errno != ENOENT || !(flags & O_CREAT)))
		return -errno;
	struct stat seen;
	if (lfd >= 0 && fstat(lfd, &seen) < 0) {
		int e = -errno;
		close(lfd);
		return e;
	}
	if (lfd >= 0 && S_ISLNK(seen.st_mode)) {
		int r = walk_last_link(w, lfd, ELOOP);
		close(lfd);
		return r;
	}
	int fd = openat(walk_cur(w), name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	int e = errno;
	if (fd < 0 && lfd < 0 && e == ELOOP) {
		/* created meanwhile, as a link: read it from the inode we open now */
		lfd = openat(walk_cur(w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		int r = lfd < 0 ? -errno : walk_last_link(w, lfd, e);
		if (lfd >= 0)
			close(lfd);
		return r;
	}
	struct stat got;
	bool same = fd >= 0 && (lfd < 0 || (fstat(fd, &got) == 0 && got.st_dev == seen.st_dev &&
					    got.st_ino == seen.st_ino));
	if (lfd >= 0)
		close(lfd);
	if (fd < 0)
		return -e;
	if (!same) { /* swapped between the two opens: it may have led anywhere */
		close(fd);
		return -ELOOP;
	}
	*ret_fd = fd;
	return 1;
}

/* Splits the next component off w->rest at *pos into name; returns its length
 * (0 at the end) and sets *after to what follows it. */
static int walk_next(walk *w, size_t *pos, char *name, const char **after)
{
	const char *p = w->rest + *pos;
	while (*p == '/')
		p++;
	const char *end = strchrnul(p, '/');
	size_t len = (size_t)(end - p);
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, p, len);
	name[len] = '\0';
	*after = end;
	*pos = (size_t)(end - w->rest);
	return (int)len;
}

/* The path ended on a directory we hold: open it with the caller's flags. */
static int walk_open_here(const walk *w, int flags)
{
	int fd = openat(walk_cur(w), ".", (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int walk_resolve(walk *w, int flags, mode_t mode)
{
	char name[NAME_MAX + 1];
	size_t pos = 0;
	for (;;) {
		const char *after;
		int len = walk_next(w, &pos, name, &after);
		if (len < 0)
			return len;
		if (len == 0) /* ended on a directory ("", "a/", "a/.") */
			return walk_open_here(w, flags);
		bool last = *after == '\0';
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			if (w->depth == 0)
				return -EXDEV;
			close(w->stack[--w->depth]);
			if (last) /* "a/..": the directory we are back in */
				return walk_open_here(w, flags);
			continue;
		}
		int r, fd = -1;
		if (last)
			r = walk_last(w, name, flags, mode, &fd);
		else
			r = walk_step(w, name, after);
		if (r < 0)
			return r;
		if (fd >= 0)
			return fd;
		if (r == 0) /* a link was spliced into rest: start over from its text */
			pos = 0;
	}
}

static int via_walk(int root_fd, const char *path, int flags, mode_t mode)
{
	if (path[0] == '/')
		return -EXDEV;
	walk w = { .root_fd = root_fd };
	size_t len = strlen(path);
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(w.rest, path, len + 1);
	int r = walk_resolve(&w, flags, mode);
	walk_release(&w);
	return r;
}

/* True when the path's own ".." components climb above where it starts,
 * before any link is looked at ("a/../../b", "../x"). */
static bool climbs_lexically(const char *path)
{
	int depth = 0;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return true;
		} else if (n > 0 && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		p = end;
	}
	return false;
}

int pathres_open(int root_fd, const char *path, int flags, mode_t mode)
{
	path = dot_if_empty(path);
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (path[0] == '/' || climbs_lexically(path))
		return -EXDEV;
	pathres_method m = pathres_effective_method();
	if (m == PATHRES_WALK)
		return via_walk(root_fd, path, flags, mode);
	int fd = via_openat2(root_fd, path, flags, mode);
	if (atomic_load(&forced_method) != PATHRES_AUTO)
		return fd;
	if (fd == -ENOSYS) {
		atomic_store(&have_openat2, -1);
		return via_walk(root_fd, path, flags, mode);
	}
	/* A seccomp filter that refuses openat2 itself says EPERM (older container profiles,
	 * gVisor's sentry): the walk gives the same answer, an open(2) EPERM included. */
	if (fd == -EPERM)
		return via_walk(root_fd, path, flags, mode);
	return fd;
}

/* ---- parents ------------------------------------------------------------ */

/* Splits path into its directory part (copied to dir) and final component. */
static int split_last(const char *path, char *dir, size_t dirsz, char *ret_name)
{
	size_t len = strlen(path);
	if (len >= dirsz)
		return -ENAMETOOLONG;
	while (len > 0 && path[len - 1] == '/')
		len--;
	if (len == 0)
		return path[0] == '/' ? -EXDEV : -EISDIR;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (len - start > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(ret_name, path + start, len - start);
	ret_name[len - start] = '\0';
	memcpy(dir, path, start);
	dir[start] = '\0';
	return 0;
}

/* Makes every missing directory of dir, each with mkdirat under the resolved
 * parent, then resolves dir itself. */
static int make_parents(int root_fd, const char *dir, mode_t dir_mode)
{
	char prefix[PATH_MAX];
	size_t len = strlen(dir), i = 0;
	int parent = -1;
	while (i < len) {
		while (i < len && dir[i] == '/')
			i++;
		size_t start = i;
		while (i < len && dir[i] != '/')
			i++;
		if (i == start)
			break;
		memcpy(prefix, dir, i);
		prefix[i] = '\0';
		int fd = pathres_open(root_fd, prefix, O_PATH | O_DIRECTORY, 0);
		if (fd == -ENOENT) {
			char name[NAME_MAX + 1];
			size_t nl = i - start;
			if (nl > NAME_MAX) {
				fd = -ENAMETOOLONG;
			} else {
				memcpy(name, dir + start, nl);
				name[nl] = '\0';
				int at = parent >= 0 ? parent : root_fd;
				if (mkdirat(at, name, dir_mode) < 0 && errno != EEXIST)
					fd = -errno;
				else
					fd = pathres_open(root_fd, prefix, O_PATH | O_DIRECTORY, 0);
			}
		}
		if (parent >= 0)
			close(parent);
		if (fd < 0)
			return fd;
		parent = fd;
	}
	return parent >= 0 ? parent : pathres_open(root_fd, ".", O_PATH | O_DIRECTORY, 0);
}

int pathres_open_parent(int root_fd, const char *path, bool create, mode_t dir_mode, char *ret_name)
{
	char dir[PATH_MAX];
	if (!path || !*path)
		return -EISDIR;
	if (path[0] == '/')
		return -EXDEV;
	int r = split_last(path, dir, sizeof(dir), ret_name);
	if (r < 0)
		return r;
	if (strcmp(ret_name, ".") == 0 || strcmp(ret_name, "..") == 0) {
		/* Names a directory: say whether it is one inside or an escape. */
		int fd = pathres_open(root_fd, path, O_PATH | O_DIRECTORY, 0);
		if (fd < 0)
			return fd;
		close(fd);
		return -EISDIR;
	}
	int fd = pathres_open(root_fd, dir, O_PATH | O_DIRECTORY, 0);
	if (fd == -ENOENT && create)
		fd = make_parents(root_fd, dir, dir_mode);
	return fd;
}
