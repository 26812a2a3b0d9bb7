/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* read/write/glob/walk/rmtree under a root fd (see fsops.h for the bounds). */
#include "config.h"

#include "fsops.h"
#include "pathres.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (64u << 10)

/* ---- read --------------------------------------------------------------------- */

static int read_stream(int fd, uint64_t max_len, fsops_emit_fn emit, void *ctx)
{
	char *buf = malloc(READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	uint64_t total = 0;
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		size_t keep = (size_t)n;
		if (total + keep > max_len)
			keep = (size_t)(max_len - total);
		if (keep) {
			r = emit(ctx, buf, keep);
			if (r != 0)
				break;
		}
		total += keep;
		if (keep < (size_t)n) {
			r = -EFBIG;
			break;
		}
	}
	free(buf);
	return r;
}

int fsops_read(int root_fd, const char *path, uint64_t max_len, fsops_emit_fn emit, void *ctx)
{
	/* O_NONBLOCK: a FIFO planted under the name must not hang us. */
	int fd = pathres_open(root_fd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && !S_ISREG(st.st_mode))
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (r == 0)
		r = read_stream(fd, max_len, emit, ctx);
	close(fd);
	return r;
}

/* ---- write -------------------------------------------------------------------- */

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int make_temp(int dirfd, char *name, size_t size)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		uint64_t rnd = 0;
		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)name ^
			      (uint64_t)attempt;
		snprintf(name, size, ".cordon-write-%016llx", (unsigned long long)rnd);
		int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0644);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

/* The data to write: a buffer, or a descriptor read to its end. */
typedef struct source {
	const char *data;
	size_t len;
	int fd;
} source;

static int copy_fd(int out, int in)
{
	char *buf = malloc(READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	for (;;) {
		ssize_t n = read(in, buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		if ((r = write_all(out, buf, (size_t)n)) < 0)
			break;
	}
	free(buf);
	return r;
}

/* Creates missing parents, fills a temporary file beside the final name from src and
 * renames it over the name. */
static int write_via_temp(int root_fd, const char *path, const source *src)
{
	char name[NAME_MAX + 1];
	int dirfd = pathres_open_parent(root_fd, path, true, 0755, name);
	if (dirfd < 0)
		return dirfd;
	char tmp[64];
	int fd = make_temp(dirfd, tmp, sizeof(tmp));
	if (fd < 0) {
		close(dirfd);
		return fd;
	}
	struct stat old;
	int r = src->fd >= 0 ? copy_fd(fd, src->fd) : write_all(fd, src->data, src->len);
	/* The old file's permissions, never its set-id bits: the work may have planted the old
	 * file, and the host's content must not become a set-id program. */
	if (r == 0 && fstatat(dirfd, name, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(old.st_mode) && fchmod(fd, old.st_mode & 01777) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	/* renameat replaces the final name itself: a link there is never followed. */
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	close(dirfd);
	return r;
}

int fsops_write(int root_fd, const char *path, const void *data, size_t len)
{
	source src = { data, len, -1 };
	return write_via_temp(root_fd, path, &src);
}

int fsops_write_fd(int root_fd, const char *path, int data_fd)
{
	source src = { NULL, 0, data_fd };
	return write_via_temp(root_fd, path, &src);
}

/* ---- listing helpers ------------------------------------------------------------- */

typedef struct lister {
	fsops_emit_fn emit;
	void *ctx;
	unsigned entries;
	char path[PATH_MAX]; /* relative to the root, of the directory being listed */
	size_t len;
} lister;

/* Appends "/name" (or "name" at the top) to l->path; returns the old length. */
static int path_push(lister *l, const char *name, size_t *ret_old)
{
	size_t nl = strlen(name), sep = l->len ? 1 : 0;
	if (l->len + sep + nl + 1 > sizeof(l->path))
		return -ENAMETOOLONG;
	*ret_old = l->len;
	if (sep)
		l->path[l->len++] = '/';
	memcpy(l->path + l->len, name, nl + 1);
	l->len += nl;
	return 0;
}

static void path_pop(lister *l, size_t old)
{
	l->len = old;
	l->path[old] = '\0';
}

static int emit_current(lister *l) { return l->emit(l->ctx, l->path, l->len); }

/* Opens a subdirectory for listing without following a link there. */
static DIR *open_subdir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

static int entry_type(int dirfd, const struct dirent *de)
{
	if (de->d_type != DT_UNKNOWN)
		return de->d_type;
	struct stat st;
	if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	return S_ISREG(st.st_mode)   ? DT_REG
	       : S_ISDIR(st.st_mode) ? DT_DIR
	       : S_ISLNK(st.st_mode) ? DT_LNK
				     : DT_UNKNOWN;
}

static bool is_dot(const char *n)
{
	return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

static int count_entry(lister *l) { return ++l->entries > FSOPS_MAX_ENTRIES ? -E2BIG : 0; }

/* ---- walk ------------------------------------------------------------------------- */

static int walk_dir(lister *l, DIR *d, int depth)
{
	if (depth > FSOPS_MAX_DEPTH)
		return -E2BIG;
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (is_dot(de->d_name))
			continue;
		r = count_entry(l);
		if (r != 0)
			break;
		int type = entry_type(dirfd(d), de);
		if (type != DT_REG && type != DT_DIR)
			continue; /* links, devices, sockets: never listed or followed */
		size_t old;
		r = path_push(l, de->d_name, &old);
		if (r < 0)
			break;
		if (type == DT_REG) {
			r = emit_current(l);
		} else {
			DIR *sub = open_subdir(dirfd(d), de->d_name);
			if (sub) { /* gone or swapped for a link meanwhile: skipped */
				r = walk_dir(l, sub, depth + 1);
				closedir(sub);
			}
		}
		path_pop(l, old);
	}
	return r;
}

/* The walk's own prefix: dir without "." and empty components. */
static int walk_prefix(lister *l, const char *dir)
{
	const char *p = dir;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		if (n && !(n == 1 && p[0] == '.')) {
			char name[NAME_MAX + 1];
			if (n > NAME_MAX)
				return -ENAMETOOLONG;
			memcpy(name, p, n);
			name[n] = '\0';
			size_t old;
			int r = path_push(l, name, &old);
			if (r < 0)
				return r;
		}
		p = end;
	}
	return 0;
}

int fsops_walk(int root_fd, const char *dir, fsops_emit_fn emit, void *ctx)
{
	lister *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->emit = emit;
	l->ctx = ctx;
	int r = walk_prefix(l, dir ? dir : "");
	int fd = r < 0 ? r : pathres_open(root_fd, dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd >= 0) {
		DIR *d = fdopendir(fd);
		if (d) {
			r = walk_dir(l, d, 0);
			closedir(d);
		} else {
			r = -errno;
			close(fd);
		}
	} else {
		r = fd;
	}
	free(l);
	return r;
}

/* ---- glob ------------------------------------------------------------------------- */

typedef struct globber {
	lister l;
	char comps[FSOPS_MAX_DEPTH][NAME_MAX + 1];
	int n;
} globber;

static bool has_magic(const char *s) { return strpbrk(s, "*?[\\") != NULL; }

static int glob_level(globber *g, int dirfd, int level);

/* One entry that matched component `level`: emit it or descend. */
static int glob_hit(globber *g, int dirfd, const char *name, int type, int level)
{
	size_t old;
	int r = path_push(&g->l, name, &old);
	if (r < 0)
		return r;
	if (level + 1 == g->n) {
		r = emit_current(&g->l);
	} else if (type == DT_DIR) {
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			r = glob_level(g, fd, level + 1);
			close(fd);
		}
	}
	path_pop(&g->l, old);
	return r;
}

static int glob_literal(globber *g, int dirfd, int level)
{
	const char *name = g->comps[level];
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	int r = count_entry(&g->l);
	if (r != 0)
		return r;
	return glob_hit(g, dirfd, name, S_ISDIR(st.st_mode) ? DT_DIR : DT_UNKNOWN, level);
}

static int glob_level(globber *g, int dirfd, int level)
{
	if (!has_magic(g->comps[level]))
		return glob_literal(g, dirfd, level);
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (is_dot(de->d_name))
			continue;
		r = count_entry(&g->l);
		if (r == 0 && fnmatch(g->comps[level], de->d_name, FNM_PERIOD) == 0)
			r = glob_hit(g, dirfd, de->d_name, entry_type(dirfd, de), level);
	}
	closedir(d);
	return r;
}

/* Splits the pattern into components; "." and empty ones are dropped, ".."
 * and absolute patterns are escapes. */
static int glob_split(globber *g, const char *pattern)
{
	if (pattern[0] == '/')
		return -EXDEV;
	const char *p = pattern;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -EXDEV;
		if (n && !(n == 1 && p[0] == '.')) {
			if (n > NAME_MAX)
				return -ENAMETOOLONG;
			if (g->n >= FSOPS_MAX_DEPTH)
				return -E2BIG;
			memcpy(g->comps[g->n], p, n);
			g->comps[g->n++][n] = '\0';
		}
		p = end;
	}
	return 0;
}

int fsops_glob(int root_fd, const char *pattern, fsops_emit_fn emit, void *ctx)
{
	globber *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->l.emit = emit;
	g->l.ctx = ctx;
	int r = glob_split(g, pattern);
	if (r == 0 && g->n > 0)
		r = glob_level(g, root_fd, 0);
	free(g);
	return r;
}

/* ---- rmtree ------------------------------------------------------------------------ */

static int rm_contents(int dirfd, int depth)
{
	if (depth > FSOPS_MAX_DEPTH)
		return -E2BIG;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (is_dot(de->d_name))
			continue;
		if (unlinkat(dirfd, de->d_name, 0) == 0 || (errno != EISDIR && errno != EPERM))
			continue;
		int sub = openat(dirfd, de->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		int rr = rm_contents(sub, depth + 1);
		close(sub);
		if (rr < 0 && r == 0)
			r = rr;
		if (unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0 && r == 0)
			r = -errno;
	}
	closedir(d);
	return r;
}

int fsops_rmtree(int parent_fd, const char *name)
{
	int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return unlinkat(parent_fd, name, 0) < 0 ? -errno : 0;
	/* Entries unlinked while readdir runs may make it skip others: go over
	 * the directory again while it is not empty (a few times at most). */
	int r = 0;
	for (int pass = 0; pass < 3; pass++) {
		r = rm_contents(fd, 0);
		if (unlinkat(parent_fd, name, AT_REMOVEDIR) == 0) {
			r = 0;
			break;
		}
		if (r == 0)
			r = -errno;
		if (r != -ENOTEMPTY)
			break;
	}
	close(fd);
	return r;
}

/* ---- open a directory by an absolute path, no link on the way ---------------------------- */

/* (fsops.h) */
int fsops_open_dir_nofollow(const char *path)
{
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int ret = fd < 0 ? -errno : 0;
	char *copy = strdup(path), *save = NULL;
	if (ret == 0 && !copy)
		ret = -ENOMEM;
	for (char *c = copy ? strtok_r(copy, "/", &save) : NULL; ret == 0 && c;
	     c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		/* ".." would climb back out of what was checked so far */
		int next = strcmp(c, "..") == 0
				   ? -1
				   : openat(fd, c, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		if (next < 0)
			ret = strcmp(c, "..") == 0 ? -EINVAL : -errno;
		close(fd);
		fd = next;
	}
	free(copy);
	if (ret < 0 && fd >= 0)
		close(fd);
	return ret < 0 ? ret : fd;
}
