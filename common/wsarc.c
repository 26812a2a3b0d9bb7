/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The workspace stream (wsarc.h): pack a tree from a descriptor, unpack a hostile stream. */
#include "config.h"

#include "wsarc.h"
#include "fsops.h"
#include "pathres.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (64u << 10)

/* ---- the header ------------------------------------------------------------------------- */

typedef struct header {
	uint8_t type;
	uint16_t mode, name_len;
	uint64_t size, mtime_s;
	uint32_t mtime_ns;
} header;

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

static void header_encode(const header *h, uint8_t out[WSARC_HEADER])
{
	out[0] = h->type;
	put_be(out + 1, h->mode, 2);
	put_be(out + 3, h->name_len, 2);
	put_be(out + 5, h->size, 8);
	put_be(out + 13, h->mtime_s, 8);
	put_be(out + 21, h->mtime_ns, 4);
}

static void header_decode(const uint8_t in[WSARC_HEADER], header *h)
{
	*h = (header){ .type = in[0],
		       .mode = (uint16_t)get_be(in + 1, 2),
		       .name_len = (uint16_t)get_be(in + 3, 2),
		       .size = get_be(in + 5, 8),
		       .mtime_s = get_be(in + 13, 8),
		       .mtime_ns = (uint32_t)get_be(in + 21, 4) };
}

bool wsarc_name_ok(const char *name, size_t len)
{
	if (len == 0 || len > WSARC_NAME_MAX || memchr(name, '\0', len) || name[0] == '/')
		return false;
	size_t prefix = strlen(WSARC_STAGE_PREFIX);
	if (len >= prefix && memcmp(name, WSARC_STAGE_PREFIX, prefix) == 0)
		return false;
	for (size_t i = 0; i <= len;) {
		const char *slash = memchr(name + i, '/', len - i);
		size_t n = slash ? (size_t)(slash - (name + i)) : len - i;
		if (n == 0 || n > NAME_MAX || (n == 1 && name[i] == '.') ||
		    (n == 2 && name[i] == '.' && name[i + 1] == '.'))
			return false;
		i += n + 1;
	}
	return true;
}

/* ---- pack ------------------------------------------------------------------------------- */

typedef struct packer {
	const wsarc_limits *lim;
	wsarc_emit_fn emit;
	void *ctx;
	wsarc_report *rep;
	dev_t dev;
	char path[WSARC_NAME_MAX + 1];
	char *buf;
} packer;

/* A record's header and name; st is NULL for the end. */
static int emit_record(packer *p, uint8_t type, const struct stat *st, size_t name_len)
{
	uint8_t h[WSARC_HEADER];
	header hd = { .type = type, .name_len = (uint16_t)name_len };
	if (st) {
		hd.mode = (uint16_t)(st->st_mode & 0777);
		hd.size = type == 'f' ? (uint64_t)st->st_size : 0;
		hd.mtime_s = (uint64_t)st->st_mtim.tv_sec;
		hd.mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	}
	header_encode(&hd, h);
	int r = p->emit(p->ctx, h, sizeof(h));
	return r ? r : name_len ? p->emit(p->ctx, p->path, name_len) : 0;
}

static int count_entry(packer *p, const struct stat *st)
{
	wsarc_report *rep = p->rep;
	if (rep->files + rep->dirs + 1 > p->lim->max_files) {
		rep->over = "files";
		return -E2BIG;
	}
	if (S_ISREG(st->st_mode) && (uint64_t)st->st_size > p->lim->max_bytes - rep->bytes) {
		rep->over = "bytes";
		return -EFBIG;
	}
	if (st->st_mode & 07000)
		rep->setid++;
	if (S_ISREG(st->st_mode)) {
		rep->files++;
		rep->bytes += (uint64_t)st->st_size;
	} else {
		rep->dirs++;
	}
	return 0;
}

/* Exactly st_size bytes of fd: a file that shrank while packed fails (the stream's sizes
 * are in its headers), one that grew is cut at the size announced. */
static int emit_data(packer *p, int fd, uint64_t size)
{
	while (size > 0) {
		ssize_t n = read(fd, p->buf, size < CHUNK ? (size_t)size : CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		int r = p->emit(p->ctx, p->buf, (size_t)n);
		if (r)
			return r;
		size -= (uint64_t)n;
	}
	return 0;
}

static int pack_dir(packer *p, int dir_fd, size_t len, int depth);

/* One entry of dir_fd, named p->path[0..len) from the root. */
static int pack_entry(packer *p, int dir_fd, const char *name, size_t len, int depth)
{
	/* a staging directory an unpack that died left behind is no part of the tree */
	if (depth == 0 && strncmp(name, WSARC_STAGE_PREFIX, strlen(WSARC_STAGE_PREFIX)) == 0)
		return 0;
	struct stat st;
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
	if (S_ISLNK(st.st_mode)) {
		p->rep->symlinks++;
		return 0;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		p->rep->special++;
		return 0;
	}
	if (st.st_dev != p->dev) {
		p->rep->other_mounts++;
		return 0;
	}
	int flags = S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK;
	int fd = openat(dir_fd, name, flags | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat now;
	int r = fstat(fd, &now) < 0 ? -errno : 0;
	/* swapped between the two looks: take what is open only if it is what was judged */
	if (r == 0 && (now.st_ino != st.st_ino || now.st_dev != st.st_dev ||
		       (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT)))
		r = -EAGAIN;
	if (r == 0)
		r = count_entry(p, &now);
	if (r == 0)
		r = emit_record(p, S_ISDIR(now.st_mode) ? 'd' : 'f', &now, len);
	if (r == 0 && S_ISREG(now.st_mode))
		r = emit_data(p, fd, (uint64_t)now.st_size);
	if (r == 0 && S_ISDIR(now.st_mode))
		r = pack_dir(p, fd, len, depth + 1);
	close(fd);
	return r;
}

static int pack_dir(packer *p, int dir_fd, size_t len, int depth)
{
	if (depth > FSOPS_MAX_DEPTH)
		return -ENAMETOOLONG;
	int fd = dup(dir_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	rewinddir(d); /* the duplicate shares dir_fd's offset: a second pack starts over */
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		size_t n = strlen(e->d_name), at = len ? len + 1 : 0;
		if (at + n > WSARC_NAME_MAX)
			r = -ENAMETOOLONG;
		if (r == 0 && len)
			p->path[len] = '/';
		if (r == 0) {
			memcpy(p->path + at, e->d_name, n);
			r = pack_entry(p, dir_fd, e->d_name, at + n, depth);
		}
	}
	closedir(d);
	return r;
}

int wsarc_pack(int root_fd, const wsarc_limits *lim, wsarc_emit_fn emit, void *ctx,
	       wsarc_report *rep)
{
	*rep = (wsarc_report){ 0 };
	struct stat st;
	if (fstat(root_fd, &st) < 0)
		return -errno;
	packer p = { .lim = lim, .emit = emit, .ctx = ctx, .rep = rep, .dev = st.st_dev };
	p.buf = malloc(CHUNK);
	if (!p.buf)
		return -ENOMEM;
	int r = pack_dir(&p, root_fd, 0, 0);
	if (r == 0)
		r = emit_record(&p, 'e', NULL, 0);
	free(p.buf);
	return r;
}

/* ---- unpack ----------------------------------------------------------------------------- */

typedef struct entry {
	char *name;
	bool dir;
	mode_t mode;
	struct timespec mtime;
	uint64_t size;
} entry;

struct wsarc_unpack {
	int root_fd, stage_fd;
	char stage[sizeof(WSARC_STAGE_PREFIX) + 16];
	wsarc_unpack_opts o;
	wsarc_report rep;
	int err; /* sticky */
	bool ended;
	/* the record being read */
	uint8_t hdr[WSARC_HEADER];
	size_t hdr_have;
	header h;
	char name[WSARC_NAME_MAX + 1];
	size_t name_have;
	uint64_t data_left;
	int file_fd;
	entry *entries;
	size_t n, cap;
};

wsarc_unpack *wsarc_unpack_new(int root_fd, const wsarc_unpack_opts *opts)
{
	uint8_t rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return NULL;
	wsarc_unpack *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	int n = snprintf(u->stage, sizeof(u->stage), "%s", WSARC_STAGE_PREFIX);
	for (size_t i = 0; i < sizeof(rnd); i++)
		n += snprintf(u->stage + n, sizeof(u->stage) - (size_t)n, "%02x", rnd[i]);
	u->root_fd = root_fd;
	u->o = *opts;
	u->file_fd = -1;
	if (mkdirat(root_fd, u->stage, 0700) < 0 ||
	    (u->stage_fd = openat(root_fd, u->stage,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		int e = errno;
		unlinkat(root_fd, u->stage, AT_REMOVEDIR);
		free(u);
		errno = e;
		return NULL;
	}
	return u;
}

static int fail(wsarc_unpack *u, int err)
{
	if (!u->err)
		u->err = err;
	return u->err;
}

/* The header and name are in: check them against the limits, open the staged file. */
static int record_begin(wsarc_unpack *u)
{
	header *h = &u->h;
	wsarc_report *rep = &u->rep;
	if (h->type == 'e') {
		u->ended = true;
		return h->name_len || h->size ? -EPROTO : 0;
	}
	if ((h->type != 'f' && h->type != 'd') || (h->type == 'd' && h->size) ||
	    !wsarc_name_ok(u->name, h->name_len) || h->mtime_ns >= 1000000000u)
		return -EPROTO;
	if (rep->files + rep->dirs + 1 > u->o.limits.max_files) {
		rep->over = "files";
		return -E2BIG;
	}
	if (h->size > u->o.limits.max_bytes - rep->bytes) {
		rep->over = "bytes"; /* before a byte of it is written */
		return -EFBIG;
	}
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 64;
		entry *e = realloc(u->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		u->entries = e;
		u->cap = cap;
	}
	entry *e = &u->entries[u->n];
	*e = (entry){ .name = strndup(u->name, h->name_len),
		      .dir = h->type == 'd',
		      .mode = (mode_t)(h->mode & 0777 & u->o.mode_mask),
		      .mtime = { (time_t)h->mtime_s, (long)h->mtime_ns },
		      .size = h->size };
	if (!e->name)
		return -ENOMEM;
	u->n++;
	if (e->dir) {
		rep->dirs++;
		return 0;
	}
	rep->files++;
	rep->bytes += h->size;
	char staged[32];
	snprintf(staged, sizeof(staged), "%zu", u->n - 1);
	u->file_fd = openat(u->stage_fd, staged,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (u->file_fd < 0)
		return -errno;
	u->data_left = h->size;
	return 0;
}

static int file_end(wsarc_unpack *u)
{
	const entry *e = &u->entries[u->n - 1];
	int fd = u->file_fd, r = 0;
	u->file_fd = -1;
	if ((u->o.chown && fchown(fd, u->o.uid, u->o.gid) < 0) || fchmod(fd, e->mode) < 0 ||
	    futimens(fd, (struct timespec[2]){ { 0, UTIME_OMIT }, e->mtime }) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

static int write_data(wsarc_unpack *u, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(u->file_fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Takes what it can of p[0..n) into the record being read; returns the bytes taken. */
static size_t feed_one(wsarc_unpack *u, const uint8_t *p, size_t n, int *ret)
{
	*ret = 0;
	if (u->hdr_have < WSARC_HEADER) {
		size_t k = WSARC_HEADER - u->hdr_have < n ? WSARC_HEADER - u->hdr_have : n;
		memcpy(u->hdr + u->hdr_have, p, k);
		u->hdr_have += k;
		if (u->hdr_have == WSARC_HEADER) {
			header_decode(u->hdr, &u->h);
			u->name_have = 0;
			if (u->h.name_len > WSARC_NAME_MAX)
				*ret = -EPROTO;
			else if (u->h.name_len == 0)
				*ret = record_begin(u);
		}
		return k;
	}
	if (u->name_have < u->h.name_len) {
		size_t want = u->h.name_len - u->name_have, k = want < n ? want : n;
		memcpy(u->name + u->name_have, p, k);
		u->name_have += k;
		if (u->name_have == u->h.name_len) {
			u->name[u->name_have] = '\0';
			*ret = record_begin(u);
		}
		return k;
	}
	size_t k = u->data_left < n ? (size_t)u->data_left : n;
	*ret = write_data(u, p, k);
	u->data_left -= k;
	return k;
}

/* Whether the record being read is complete (its data included). */
static bool record_done(const wsarc_unpack *u)
{
	return u->hdr_have == WSARC_HEADER && u->name_have == u->h.name_len && u->data_left == 0;
}

int wsarc_unpack_feed(wsarc_unpack *u, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (!u->err && len > 0) {
		if (u->ended)
			return fail(u, -EPROTO); /* bytes after the end */
		int r;
		size_t k = feed_one(u, p, len, &r);
		if (r == 0 && record_done(u)) {
			if (u->file_fd >= 0)
				r = file_end(u);
			u->hdr_have = 0;
		}
		if (r < 0)
			return fail(u, r);
		p += k;
		len -= k;
	}
	return u->err;
}

/* ---- commit ----------------------------------------------------------------------------- */

static int commit_dir(wsarc_unpack *u, int parent, const char *name, const entry *e)
{
	if (mkdirat(parent, name, e->mode | 0700) == 0) {
		if (u->o.chown &&
		    fchownat(parent, name, u->o.uid, u->o.gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		return 0;
	}
	struct stat st;
	if (errno == EEXIST && fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		return 0;
	u->rep.conflicts++;
	return errno == EEXIST ? -ENOTDIR : -errno;
}

static int commit_file(wsarc_unpack *u, int parent, const char *name, const entry *e, size_t index)
{
	char staged[32];
	snprintf(staged, sizeof(staged), "%zu", index);
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode)) {
			u->rep.conflicts++;
			return -EISDIR;
		}
		if (S_ISREG(st.st_mode) && (uint64_t)st.st_size == e->size &&
		    st.st_mtim.tv_sec == e->mtime.tv_sec &&
		    st.st_mtim.tv_nsec == e->mtime.tv_nsec) {
			u->rep.unchanged++;
			return 0;
		}
	}
	return renameat(u->stage_fd, staged, parent, name) < 0 ? -errno : 0;
}

static int commit(wsarc_unpack *u)
{
	int first = 0;
	for (size_t i = 0; i < u->n; i++) {
		const entry *e = &u->entries[i];
		char name[NAME_MAX + 1];
		/* parents exist: a stream lists a directory before what is in it, and an entry
		 * whose parent it did not list fails here rather than creating one */
		int parent = pathres_open_parent(u->root_fd, e->name, false, 0, name);
		int r = parent;
		if (parent >= 0) {
			r = e->dir ? commit_dir(u, parent, name, e)
				   : commit_file(u, parent, name, e, i);
			close(parent);
		}
		if (r < 0 && first == 0)
			first = r;
	}
	return first;
}

int wsarc_unpack_finish(wsarc_unpack *u, wsarc_report *rep)
{
	int r = u->err;
	if (r == 0 && (!u->ended || u->hdr_have))
		r = fail(u, -EPROTO); /* cut short */
	if (r == 0)
		r = commit(u);
	if (rep)
		*rep = u->rep;
	return r;
}

void wsarc_unpack_free(wsarc_unpack *u)
{
	if (!u)
		return;
	if (u->file_fd >= 0)
		close(u->file_fd);
	close(u->stage_fd);
	fsops_rmtree(u->root_fd, u->stage);
	for (size_t i = 0; i < u->n; i++)
		free(u->entries[i].name);
	free(u->entries);
	free(u);
}
