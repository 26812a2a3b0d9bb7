/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Path confinement (core/local/pathres.c) and the file operations built on it
 * (core/local/fsops.c). Every case runs twice: with openat2 and with the
 * O_NOFOLLOW walk that replaces it where openat2 is missing.
 */
#include "config.h"

#include "testutil.h"
#include "fsops.h"
#include "pathres.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static const pathres_method methods[] = { PATHRES_OPENAT2, PATHRES_WALK };

static char *base;    /* holds root/ and outside/ */
static char *outside; /* a directory the sandbox must never reach */
static int root_fd = -1;

static void put(const char *dir, const char *rel, const char *content)
{
	g_autofree char *p = g_build_filename(dir, rel, NULL);
	g_autofree char *parent = g_path_get_dirname(p);
	ck_assert_int_eq(g_mkdir_with_parents(parent, 0755), 0);
	ck_assert(g_file_set_contents(p, content, -1, NULL));
}

static void link_at(const char *target, const char *rel)
{
	g_autofree char *p = g_build_filename(base, "root", rel, NULL);
	ck_assert_msg(symlink(target, p) == 0, "symlink %s: %s", rel, g_strerror(errno));
}

/* root/: f, sub/g, sub/back -> ../f, lnk -> sub, etc -> /etc, up -> ../outside,
 * dangle_abs and dangle_rel -> outside/created_*, pdir -> outside (absolute),
 * loop1 <-> loop2. outside/: sentinel. */
static void setup(void)
{
	base = testutil_tmpdir();
	g_autofree char *root = g_build_filename(base, "root", NULL);
	outside = g_build_filename(base, "outside", NULL);
	put(root, "f", "inside");
	put(root, "sub/g", "sub-g");
	put(outside, "sentinel", "SENTINEL");
	link_at("../f", "sub/back");
	link_at("sub", "lnk");
	link_at("/etc", "etc");
	link_at("../outside", "up");
	g_autofree char *abs_created = g_build_filename(outside, "created_abs", NULL);
	link_at(abs_created, "dangle_abs");
	link_at("../outside/created_rel", "dangle_rel");
	link_at(outside, "pdir");
	link_at("loop2", "loop1");
	link_at("loop1", "loop2");
	root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root_fd, 0);
}

static void teardown(void)
{
	pathres_set_method(PATHRES_AUTO);
	close(root_fd);
	testutil_rmtree(base);
	g_free(base);
	g_free(outside);
}

static int collect(void *ctx, const void *data, size_t len)
{
	g_string_append_len(ctx, data, (gssize)len);
	return 0;
}

/* Reads path under the root; returns its content or NULL with *ret_err. */
static char *read_in(const char *path, int *ret_err)
{
	GString *s = g_string_new(NULL);
	int r = fsops_read(root_fd, path, 1 << 20, collect, s);
	*ret_err = r;
	if (r < 0) {
		g_string_free(s, TRUE);
		return NULL;
	}
	return g_string_free(s, FALSE);
}

static void assert_outside_untouched(void)
{
	g_autofree char *s = NULL;
	g_autofree char *p = g_build_filename(outside, "sentinel", NULL);
	ck_assert(g_file_get_contents(p, &s, NULL, NULL));
	ck_assert_str_eq(s, "SENTINEL");
	GDir *d = g_dir_open(outside, 0, NULL);
	ck_assert_ptr_nonnull(d);
	const char *name;
	int n = 0;
	while ((name = g_dir_read_name(d))) {
		ck_assert_msg(strcmp(name, "sentinel") == 0, "created outside the root: %s", name);
		n++;
	}
	g_dir_close(d);
	ck_assert_int_eq(n, 1);
}

static void assert_escape(const char *path)
{
	int fd = pathres_open(root_fd, path, O_RDONLY, 0);
	ck_assert_msg(fd < 0 && pathres_is_escape(fd), "%s: expected an escape, got %d (%s)", path,
		      fd, fd < 0 ? g_strerror(-fd) : "opened");
}

START_TEST(test_dotdot)
{
	pathres_set_method(methods[_i]);
	assert_escape("..");
	assert_escape("../outside/sentinel");
	assert_escape("a/../../b");
	assert_escape("sub/../../outside/sentinel");
	assert_escape("sub/../..");
	/* ".." that stays inside is fine */
	int err;
	g_autofree char *s = read_in("sub/../f", &err);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "inside");
}
END_TEST

START_TEST(test_absolute)
{
	pathres_set_method(methods[_i]);
	assert_escape("/etc/passwd");
	g_autofree char *abs = g_build_filename(outside, "sentinel", NULL);
	assert_escape(abs);
	g_autofree char *own = g_build_filename(base, "root", "f", NULL);
	assert_escape(own); /* even the root's own absolute path */
}
END_TEST

START_TEST(test_symlink_out)
{
	pathres_set_method(methods[_i]);
	assert_escape("etc/passwd");
	assert_escape("etc");
	assert_escape("up/sentinel");
	assert_escape("pdir/sentinel");
	assert_escape("sub/../up/sentinel");
	int err;
	char *s = read_in("pdir/sentinel", &err);
	ck_assert_ptr_null(s);
	ck_assert(pathres_is_escape(err));
}
END_TEST

START_TEST(test_symlink_inside)
{
	pathres_set_method(methods[_i]);
	int err;
	g_autofree char *a = read_in("lnk/g", &err);
	ck_assert_msg(a != NULL, "lnk/g: %s", g_strerror(-err));
	ck_assert_str_eq(a, "sub-g");
	g_autofree char *b = read_in("sub/back", &err);
	ck_assert_msg(b != NULL, "sub/back: %s", g_strerror(-err));
	ck_assert_str_eq(b, "inside");
	g_autofree char *c = read_in("lnk/back", &err);
	ck_assert_msg(c != NULL, "lnk/back: %s", g_strerror(-err));
	ck_assert_str_eq(c, "inside");
}
END_TEST

START_TEST(test_loops_and_types)
{
	pathres_set_method(methods[_i]);
	ck_assert_int_eq(pathres_open(root_fd, "loop1", O_RDONLY, 0), -ELOOP);
	ck_assert_int_eq(pathres_open(root_fd, "f/", O_RDONLY, 0), -ENOTDIR);
	ck_assert_int_eq(pathres_open(root_fd, "f/x", O_RDONLY, 0), -ENOTDIR);
	ck_assert_int_eq(pathres_open(root_fd, "missing/x", O_RDONLY, 0), -ENOENT);
	int err;
	ck_assert_ptr_null(read_in("sub", &err));
	ck_assert_int_eq(err, -EISDIR);
	/* "", "." and "sub/.." name the root itself */
	int fd = pathres_open(root_fd, "", O_RDONLY | O_DIRECTORY, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = pathres_open(root_fd, "sub/..", O_RDONLY | O_DIRECTORY, 0);
	ck_assert_int_ge(fd, 0);
	struct stat a, b;
	ck_assert_int_eq(fstat(fd, &a), 0);
	ck_assert_int_eq(fstat(root_fd, &b), 0);
	ck_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	close(fd);
}
END_TEST

/* /proc/self as a root: its magic links (root, cwd, fd/N) must not lead out. */
START_TEST(test_magic_links)
{
	pathres_set_method(methods[_i]);
	int proc = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(proc, 0);
	const char *paths[] = { "root/etc/passwd", "root", "cwd", "fd/0", "fd/1", "exe" };
	for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
		int fd = pathres_open(proc, paths[i], O_RDONLY, 0);
		ck_assert_msg(fd < 0, "/proc/self/%s was followed", paths[i]);
		ck_assert_msg(pathres_is_escape(fd) || fd == -ENOENT, "%s: %s", paths[i],
			      g_strerror(-fd));
	}
	close(proc);
}
END_TEST

START_TEST(test_dangling_write)
{
	pathres_set_method(methods[_i]);
	/* open with O_CREAT through the link: refused, nothing created */
	ck_assert(pathres_is_escape(pathres_open(root_fd, "dangle_abs", O_WRONLY | O_CREAT, 0644)));
	ck_assert(pathres_is_escape(pathres_open(root_fd, "dangle_rel", O_WRONLY | O_CREAT, 0644)));
	ck_assert(pathres_is_escape(fsops_write(root_fd, "dangle_abs/x", "x", 1)));
	assert_outside_untouched();
	/* write_file replaces the link itself: its target is never created */
	ck_assert_int_eq(fsops_write(root_fd, "dangle_abs", "mine", 4), 0);
	ck_assert_int_eq(fsops_write(root_fd, "dangle_rel", "mine", 4), 0);
	assert_outside_untouched();
	struct stat st;
	ck_assert_int_eq(fstatat(root_fd, "dangle_abs", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(st.st_mode));
	int err;
	g_autofree char *s = read_in("dangle_rel", &err);
	ck_assert_str_eq(s, "mine");
}
END_TEST

START_TEST(test_symlinked_parent)
{
	pathres_set_method(methods[_i]);
	ck_assert(pathres_is_escape(fsops_write(root_fd, "pdir/new", "x", 1)));
	ck_assert(pathres_is_escape(fsops_write(root_fd, "pdir/sentinel", "x", 1)));
	ck_assert(pathres_is_escape(fsops_write(root_fd, "up/deep/er/new", "x", 1)));
	ck_assert(pathres_is_escape(fsops_write(root_fd, "etc/cordon-test", "x", 1)));
	ck_assert(pathres_is_escape(fsops_write(root_fd, "../outside/new", "x", 1)));
	ck_assert(pathres_is_escape(fsops_write(root_fd, "/tmp/cordon-test", "x", 1)));
	ck_assert(pathres_is_escape(fsops_write(root_fd, "..", "x", 1)));
	ck_assert_int_eq(fsops_write(root_fd, "sub/..", "x", 1), -EISDIR);
	assert_outside_untouched();
	ck_assert_int_eq(access("/tmp/cordon-test", F_OK), -1);
	ck_assert_int_eq(access("/etc/cordon-test", F_OK), -1);
}
END_TEST

START_TEST(test_write_creates_parents)
{
	pathres_set_method(methods[_i]);
	ck_assert_int_eq(fsops_write(root_fd, "a/b/c/d.txt", "deep", 4), 0);
	ck_assert_int_eq(fsops_write(root_fd, "lnk/new/x", "via-link", 8), 0);
	int err;
	g_autofree char *a = read_in("a/b/c/d.txt", &err);
	ck_assert_str_eq(a, "deep");
	g_autofree char *b = read_in("sub/new/x", &err);
	ck_assert_str_eq(b, "via-link");
	/* replacing keeps the mode and leaves no temporary file behind */
	ck_assert_int_eq(fchmodat(root_fd, "f", 0600, 0), 0);
	ck_assert_int_eq(fsops_write(root_fd, "f", "again", 5), 0);
	struct stat st;
	ck_assert_int_eq(fstatat(root_fd, "f", &st, 0), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	g_autofree char *c = read_in("f", &err);
	ck_assert_str_eq(c, "again");
	g_autofree char *rootp = g_build_filename(base, "root", NULL);
	GDir *d = g_dir_open(rootp, 0, NULL);
	const char *name;
	while ((name = g_dir_read_name(d)))
		ck_assert_msg(!g_str_has_prefix(name, ".cordon-write-"), "left behind: %s", name);
	g_dir_close(d);
	/* a directory in the way is an error, not a replacement */
	ck_assert_int_eq(fsops_write(root_fd, "sub", "x", 1), -EISDIR);
}
END_TEST

START_TEST(test_read_max_len)
{
	pathres_set_method(methods[_i]);
	GString *s = g_string_new(NULL);
	ck_assert_int_eq(fsops_read(root_fd, "f", 3, collect, s), -EFBIG);
	ck_assert_str_eq(s->str, "ins");
	g_string_truncate(s, 0);
	ck_assert_int_eq(fsops_read(root_fd, "f", 6, collect, s), 0);
	ck_assert_str_eq(s->str, "inside");
	g_string_free(s, TRUE);
	/* a FIFO is not read (and does not hang the reader) */
	ck_assert_int_eq(mkfifoat(root_fd, "fifo", 0600), 0);
	int err;
	ck_assert_ptr_null(read_in("fifo", &err));
	ck_assert_int_eq(err, -EINVAL);
}
END_TEST

static int collect_list(void *ctx, const void *data, size_t len)
{
	g_ptr_array_add(ctx, g_strndup(data, len));
	return 0;
}

static int cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *list_join(GPtrArray *a)
{
	g_ptr_array_sort(a, cmp_str);
	g_ptr_array_add(a, NULL);
	return g_strjoinv(",", (char **)a->pdata);
}

static char *do_glob(const char *pattern, int *ret)
{
	g_autoptr(GPtrArray) a = g_ptr_array_new_with_free_func(g_free);
	*ret = fsops_glob(root_fd, pattern, collect_list, a);
	return list_join(a);
}

static char *do_walk(const char *dir, int *ret)
{
	g_autoptr(GPtrArray) a = g_ptr_array_new_with_free_func(g_free);
	*ret = fsops_walk(root_fd, dir, collect_list, a);
	return list_join(a);
}

START_TEST(test_glob)
{
	pathres_set_method(methods[_i]);
	put(outside, "x.c", "");
	ck_assert_int_eq(fsops_write(root_fd, "src/a.c", "", 0), 0);
	ck_assert_int_eq(fsops_write(root_fd, "src/b.h", "", 0), 0);
	ck_assert_int_eq(fsops_write(root_fd, "src/.hidden.c", "", 0), 0);
	ck_assert_int_eq(fsops_write(root_fd, "src/deep/c.c", "", 0), 0);
	int r;
	g_autofree char *a = do_glob("src/*.c", &r);
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(a, "src/a.c"); /* no dotfile, no deeper level */
	g_autofree char *b = do_glob("src/.*.c", &r);
	ck_assert_str_eq(b, "src/.hidden.c");
	g_autofree char *c = do_glob("*/*/*.c", &r);
	ck_assert_str_eq(c, "src/deep/c.c");
	g_autofree char *d = do_glob("s?b/[gb]*", &r);
	ck_assert_str_eq(d, "sub/back,sub/g");
	g_autofree char *e = do_glob("./src/./a.c", &r);
	ck_assert_str_eq(e, "src/a.c");
	/* links are matched by name but never descended into */
	g_autofree char *f = do_glob("pdir/*", &r);
	ck_assert_str_eq(f, "");
	g_autofree char *g = do_glob("up/*.c", &r);
	ck_assert_str_eq(g, "");
	g_autofree char *h = do_glob("../outside/*", &r);
	ck_assert(pathres_is_escape(r));
	g_autofree char *i = do_glob("/etc/*", &r);
	ck_assert(pathres_is_escape(r));
}
END_TEST

START_TEST(test_walk)
{
	pathres_set_method(methods[_i]);
	int r;
	g_autofree char *all = do_walk("", &r);
	ck_assert_int_eq(r, 0);
	/* regular files only: no links (lnk, sub/back, pdir...) and nothing beyond them */
	ck_assert_str_eq(all, "f,sub/g");
	g_autofree char *sub = do_walk("./sub/", &r);
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(sub, "sub/g");
	g_autofree char *via = do_walk("lnk", &r); /* a start inside via a link */
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(via, "lnk/g");
	g_autofree char *out = do_walk("pdir", &r);
	ck_assert(pathres_is_escape(r));
	g_autofree char *up = do_walk("..", &r);
	ck_assert(pathres_is_escape(r));
}
END_TEST

START_TEST(test_walk_depth_cap)
{
	pathres_set_method(methods[_i]);
	GString *p = g_string_new("deep");
	for (int i = 0; i < FSOPS_MAX_DEPTH + 2; i++)
		g_string_append(p, "/d");
	g_string_append(p, "/file");
	ck_assert_int_eq(fsops_write(root_fd, p->str, "x", 1), 0);
	int r;
	g_autofree char *s = do_walk("deep", &r);
	ck_assert_int_eq(r, -E2BIG);
	g_string_free(p, TRUE);
}
END_TEST

START_TEST(test_rmtree_no_follow)
{
	pathres_set_method(methods[_i]);
	ck_assert_int_eq(fsops_write(root_fd, "sub/x/y/z", "z", 1), 0);
	g_autofree char *link = g_build_filename(base, "root", "sub", "x", "out", NULL);
	ck_assert_int_eq(symlink(outside, link), 0);
	g_autofree char *rootp = g_build_filename(base, "root", NULL);
	int basefd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(fsops_rmtree(basefd, "root"), 0);
	close(basefd);
	ck_assert_int_eq(access(rootp, F_OK), -1);
	assert_outside_untouched();
}
END_TEST

START_TEST(test_open_parent)
{
	pathres_set_method(methods[_i]);
	char name[NAME_MAX + 1];
	int fd = pathres_open_parent(root_fd, "n1/n2/leaf", true, 0700, name);
	ck_assert_int_ge(fd, 0);
	ck_assert_str_eq(name, "leaf");
	close(fd);
	struct stat st;
	ck_assert_int_eq(fstatat(root_fd, "n1/n2", &st, 0), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(pathres_open_parent(root_fd, "m1/leaf", false, 0700, name), -ENOENT);
	ck_assert_int_eq(pathres_open_parent(root_fd, "", true, 0700, name), -EISDIR);
	ck_assert_int_eq(pathres_open_parent(root_fd, "..", true, 0700, name), -EXDEV);
	ck_assert_int_eq(pathres_open_parent(root_fd, "/abs", true, 0700, name), -EXDEV);
	/* directories created through a link stay inside or are refused */
	ck_assert(pathres_is_escape(pathres_open_parent(root_fd, "pdir/n/leaf", true, 0700, name)));
	assert_outside_untouched();
}
END_TEST

/* A kernel (or a container's seccomp profile) without openat2: AUTO notices
 * ENOSYS by itself, switches to the walk, and still refuses every escape. */
START_TEST(test_enosys_fallback)
{
	pathres_set_method(PATHRES_AUTO);
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0), 0);
	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(seccomp_load(f), 0); /* this forked test process only */
	seccomp_release(f);
	int err;
	g_autofree char *s = read_in("lnk/back", &err);
	ck_assert_msg(s != NULL, "lnk/back: %s", g_strerror(-err));
	ck_assert_str_eq(s, "inside");
	ck_assert_int_eq(pathres_effective_method(), PATHRES_WALK);
	assert_escape("pdir/sentinel");
	assert_escape("up/sentinel");
	assert_escape("a/../../b");
	ck_assert(pathres_is_escape(fsops_write(root_fd, "dangle_abs/x", "x", 1)));
	assert_outside_untouched();
}
END_TEST

/* A seccomp profile that refuses openat2 with EPERM (gVisor's sentry, older container
 * profiles): each lookup takes the walk instead, with the walk's answers, escapes refused. */
START_TEST(test_eperm_fallback)
{
	pathres_set_method(PATHRES_AUTO);
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(openat2), 0), 0);
	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(seccomp_load(f), 0); /* this forked test process only */
	seccomp_release(f);
	int err;
	g_autofree char *s = read_in("lnk/back", &err);
	ck_assert_msg(s != NULL, "lnk/back: %s", g_strerror(-err));
	ck_assert_str_eq(s, "inside");
	assert_escape("pdir/sentinel");
	assert_escape("up/sentinel");
	assert_escape("a/../../b");
	ck_assert(pathres_is_escape(fsops_write(root_fd, "dangle_abs/x", "x", 1)));
	assert_outside_untouched();
}
END_TEST

/* ---- the race ------------------------------------------------------------------ */

#define RACE_ITERATIONS 3000
#define RACE_DEADLINE_US (15 * G_USEC_PER_SEC)

typedef struct race {
	atomic_bool stop;
	atomic_int outside_reads;
	atomic_int ok_reads, ok_writes, swaps;
} race;

static race R;

/* Keeps exchanging root/d (a directory) and root/d_swap (a symlink out). */
static void *swapper(void *arg)
{
	while (!atomic_load(&R.stop)) {
		if (renameat2(root_fd, "d", root_fd, "d_swap", RENAME_EXCHANGE) == 0) {
			atomic_fetch_add(&R.swaps, 1);
		} else {
			/* no RENAME_EXCHANGE here: the same swap in two renames */
			renameat(root_fd, "d", root_fd, "d_tmp");
			renameat(root_fd, "d_swap", root_fd, "d");
			renameat(root_fd, "d_tmp", root_fd, "d_swap");
			atomic_fetch_add(&R.swaps, 1);
		}
	}
	return NULL;
}

/* At least RACE_ITERATIONS, and on until the race has been seen both ways
 * (swaps, and operations that succeeded inside): a loaded host may starve
 * one thread for a while. Bounded by RACE_DEADLINE_US. */
static bool race_more(int i, gint64 deadline)
{
	if (g_get_monotonic_time() > deadline)
		return false;
	return i < RACE_ITERATIONS || atomic_load(&R.swaps) < 100 ||
	       atomic_load(&R.ok_reads) == 0 || atomic_load(&R.ok_writes) == 0;
}

static void *reader(void *arg)
{
	gint64 deadline = g_get_monotonic_time() + RACE_DEADLINE_US;
	for (int i = 0; race_more(i, deadline); i++) {
		int err;
		g_autofree char *s = read_in(i % 2 ? "d/sentinel" : "d/../d/sentinel", &err);
		if (s && strcmp(s, "SENTINEL") == 0)
			atomic_fetch_add(&R.outside_reads, 1);
		else if (s)
			atomic_fetch_add(&R.ok_reads, 1);
	}
	return NULL;
}

static void *writer(void *arg)
{
	gint64 deadline = g_get_monotonic_time() + RACE_DEADLINE_US;
	for (int i = 0; race_more(i, deadline); i++) {
		char path[64];
		if (i % 2)
			snprintf(path, sizeof(path), "d/sentinel");
		else
			snprintf(path, sizeof(path), "d/n%d/leaf", i);
		if (fsops_write(root_fd, path, "overwritten", 11) == 0)
			atomic_fetch_add(&R.ok_writes, 1);
	}
	return NULL;
}

static void race_run(const char *link_target)
{
	g_autofree char *root = g_build_filename(base, "root", NULL);
	put(root, "d/sentinel", "inside-sentinel");
	link_at(link_target, "d_swap");
	memset(&R, 0, sizeof(R));
	pthread_t sw, rd, wr;
	pthread_create(&sw, NULL, swapper, NULL);
	pthread_create(&rd, NULL, reader, NULL);
	pthread_create(&wr, NULL, writer, NULL);
	pthread_join(rd, NULL);
	pthread_join(wr, NULL);
	atomic_store(&R.stop, true);
	pthread_join(sw, NULL);
	int outside_reads = atomic_load(&R.outside_reads);
	int swaps = atomic_load(&R.swaps);
	int ok_reads = atomic_load(&R.ok_reads), ok_writes = atomic_load(&R.ok_writes);
	ck_assert_msg(outside_reads == 0, "%d reads returned the file outside", outside_reads);
	assert_outside_untouched();
	/* the race really happened, and work inside still got done */
	ck_assert_int_ge(swaps, 100);
	ck_assert_int_gt(ok_reads, 0);
	ck_assert_int_gt(ok_writes, 0);
}

START_TEST(test_race_absolute_link)
{
	pathres_set_method(methods[_i]);
	race_run(outside);
}
END_TEST

START_TEST(test_race_relative_link)
{
	pathres_set_method(methods[_i]);
	race_run("../outside");
}
END_TEST

static Suite *pathres_suite(void)
{
	Suite *s = suite_create("pathres");
	TCase *tc = tcase_create("confinement");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_dotdot, 0, 2);
	tcase_add_loop_test(tc, test_absolute, 0, 2);
	tcase_add_loop_test(tc, test_symlink_out, 0, 2);
	tcase_add_loop_test(tc, test_symlink_inside, 0, 2);
	tcase_add_loop_test(tc, test_loops_and_types, 0, 2);
	tcase_add_loop_test(tc, test_magic_links, 0, 2);
	tcase_add_loop_test(tc, test_dangling_write, 0, 2);
	tcase_add_loop_test(tc, test_symlinked_parent, 0, 2);
	tcase_add_loop_test(tc, test_write_creates_parents, 0, 2);
	tcase_add_loop_test(tc, test_read_max_len, 0, 2);
	tcase_add_loop_test(tc, test_glob, 0, 2);
	tcase_add_loop_test(tc, test_walk, 0, 2);
	tcase_add_loop_test(tc, test_walk_depth_cap, 0, 2);
	tcase_add_loop_test(tc, test_rmtree_no_follow, 0, 2);
	tcase_add_loop_test(tc, test_open_parent, 0, 2);
	tcase_add_test(tc, test_enosys_fallback);
	tcase_add_test(tc, test_eperm_fallback);
	tcase_add_loop_test(tc, test_race_absolute_link, 0, 2);
	tcase_add_loop_test(tc, test_race_relative_link, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(pathres_suite()); }
