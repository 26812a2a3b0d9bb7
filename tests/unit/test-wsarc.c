/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The workspace stream (common/wsarc.c): a tree packed and unpacked round trip (regular
 * files and directories only: symbolic links, FIFOs and set-id bits left out), and hostile
 * streams, as a compromised guest would send them at copy-out: a name with "..", an
 * absolute name, a symbolic link or device record, a 10 GiB size claim, too many entries, a
 * stream cut short or with bytes after its end, a name through a host symbolic link to
 * outside. Each is refused and leaves the destination as it was (no staging left).
 */
#include "config.h"

#include "testutil.h"
#include "wsarc.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const wsarc_limits roomy = { 1u << 20, 100 };

static int grow(void *ctx, const void *data, size_t len)
{
	g_byte_array_append(ctx, data, (guint)len);
	return 0;
}

static void put_be(GByteArray *b, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--) {
		uint8_t c = (uint8_t)(v >> (8 * i));
		g_byte_array_append(b, &c, 1);
	}
}

/* One record as a hostile guest may write it. */
static void record(GByteArray *b, char type, unsigned mode, const char *name, uint64_t size,
		   const char *data)
{
	uint8_t t = (uint8_t)type;
	g_byte_array_append(b, &t, 1);
	put_be(b, mode, 2);
	put_be(b, strlen(name), 2);
	put_be(b, size, 8);
	put_be(b, 1700000000, 8);
	put_be(b, 0, 4);
	g_byte_array_append(b, (const guint8 *)name, (guint)strlen(name));
	if (data)
		g_byte_array_append(b, (const guint8 *)data, (guint)strlen(data));
}

static int open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Unpacks b into dir; the result of finish (or of the feed that failed). */
static int unpack_into(const char *dir, GByteArray *b, wsarc_report *rep)
{
	int fd = open_dir(dir);
	wsarc_unpack_opts o = { .limits = roomy, .mode_mask = 0755 };
	wsarc_unpack *u = wsarc_unpack_new(fd, &o);
	ck_assert_ptr_nonnull(u);
	/* in odd chunks, as frames arrive */
	int r = 0;
	for (guint i = 0; r == 0 && i < b->len; i += 7)
		r = wsarc_unpack_feed(u, b->data + i, MIN(7u, b->len - i));
	int f = wsarc_unpack_finish(u, rep);
	wsarc_unpack_free(u);
	close(fd);
	return r ? r : f;
}

static void write_file(const char *dir, const char *rel, const char *text)
{
	g_autofree char *p = g_build_filename(dir, rel, NULL);
	ck_assert(g_file_set_contents(p, text, -1, NULL));
}

static char *read_file(const char *dir, const char *rel)
{
	g_autofree char *p = g_build_filename(dir, rel, NULL);
	char *text = NULL;
	return g_file_get_contents(p, &text, NULL, NULL) ? text : NULL;
}

/* The names under dir, sorted, "/"-joined: what a refused stream must leave. */
static void list_into(const char *dir, const char *rel, GPtrArray *out)
{
	g_autofree char *path = g_build_filename(dir, rel, NULL);
	GDir *d = g_dir_open(path, 0, NULL);
	const char *n;
	while (d && (n = g_dir_read_name(d))) {
		char *r = *rel ? g_strconcat(rel, "/", n, NULL) : g_strdup(n);
		g_ptr_array_add(out, r);
		g_autofree char *full = g_build_filename(dir, r, NULL);
		if (g_file_test(full, G_FILE_TEST_IS_DIR) &&
		    !g_file_test(full, G_FILE_TEST_IS_SYMLINK))
			list_into(dir, r, out);
	}
	if (d)
		g_dir_close(d);
}

static gint by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *listing(const char *dir)
{
	GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
	list_into(dir, "", a);
	g_ptr_array_sort(a, by_name);
	g_ptr_array_add(a, NULL);
	char *s = g_strjoinv(",", (char **)a->pdata);
	g_ptr_array_free(a, TRUE);
	return s;
}

START_TEST(test_round_trip)
{
	g_autofree char *src = testutil_tmpdir(), *dst = testutil_tmpdir();
	write_file(src, "a.txt", "hello");
	g_autofree char *sub = g_build_filename(src, "sub", NULL);
	ck_assert_int_eq(g_mkdir(sub, 0750), 0);
	write_file(src, "sub/b.bin", "bytes\n");
	write_file(src, "sub/empty", "");
	g_autofree char *setid = g_build_filename(src, "sub/setid", NULL);
	write_file(src, "sub/setid", "x");
	ck_assert_int_eq(chmod(setid, 04755), 0);
	g_autofree char *link = g_build_filename(src, "link", NULL);
	ck_assert_int_eq(symlink("/etc/passwd", link), 0);
	g_autofree char *fifo = g_build_filename(src, "fifo", NULL);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	g_autofree char *stale = g_build_filename(src, WSARC_STAGE_PREFIX "0123", NULL);
	ck_assert_int_eq(g_mkdir(stale, 0700), 0); /* an unpack that died: not carried */

	GByteArray *b = g_byte_array_new();
	wsarc_report rep;
	int fd = open_dir(src);
	ck_assert_int_eq(wsarc_pack(fd, &roomy, grow, b, &rep), 0);
	close(fd);
	ck_assert_uint_eq(rep.files, 4);
	ck_assert_uint_eq(rep.dirs, 1);
	ck_assert_uint_eq(rep.symlinks, 1);
	ck_assert_uint_eq(rep.special, 1);
	ck_assert_uint_eq(rep.setid, 1);

	ck_assert_int_eq(unpack_into(dst, b, &rep), 0);
	g_autofree char *got = listing(dst);
	ck_assert_str_eq(got, "a.txt,sub,sub/b.bin,sub/empty,sub/setid");
	g_autofree char *a = read_file(dst, "a.txt"), *bb = read_file(dst, "sub/b.bin");
	ck_assert_str_eq(a, "hello");
	ck_assert_str_eq(bb, "bytes\n");
	struct stat st;
	g_autofree char *dsetid = g_build_filename(dst, "sub/setid", NULL);
	ck_assert_int_eq(stat(dsetid, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755); /* no set-id bit crossed */
	ck_assert_int_eq(st.st_mtim.tv_sec > 0, 1);

	/* the same stream again: every file is already there, same size and mtime */
	ck_assert_int_eq(unpack_into(dst, b, &rep), 0);
	ck_assert_uint_eq(rep.unchanged, 4);
	g_byte_array_free(b, TRUE);
	testutil_rmtree(src);
	testutil_rmtree(dst);
}
END_TEST

START_TEST(test_pack_limits)
{
	g_autofree char *src = testutil_tmpdir();
	write_file(src, "a", "0123456789");
	write_file(src, "b", "0123456789");
	GByteArray *b = g_byte_array_new();
	wsarc_report rep;
	int fd = open_dir(src);
	ck_assert_int_eq(wsarc_pack(fd, &(wsarc_limits){ 15, 100 }, grow, b, &rep), -EFBIG);
	ck_assert_str_eq(rep.over, "bytes");
	ck_assert_int_eq(wsarc_pack(fd, &(wsarc_limits){ 100, 1 }, grow, b, &rep), -E2BIG);
	ck_assert_str_eq(rep.over, "files");
	close(fd);
	g_byte_array_free(b, TRUE);
	testutil_rmtree(src);
}
END_TEST

/* A destination with a file, a directory and a symbolic link to a directory outside. */
typedef struct host_tree {
	char *dir, *outside, *before;
} host_tree;

static void host_tree_make(host_tree *h)
{
	h->dir = testutil_tmpdir();
	h->outside = testutil_tmpdir();
	write_file(h->dir, "keep", "precious");
	g_autofree char *d = g_build_filename(h->dir, "d", NULL);
	ck_assert_int_eq(g_mkdir(d, 0755), 0);
	g_autofree char *l = g_build_filename(h->dir, "out", NULL);
	ck_assert_int_eq(symlink(h->outside, l), 0);
	h->before = listing(h->dir);
}

static void host_tree_check_clear(host_tree *h)
{
	g_autofree char *after = listing(h->dir), *keep = read_file(h->dir, "keep"),
			*outside = listing(h->outside);
	ck_assert_str_eq(after, h->before); /* no staging left, nothing new */
	ck_assert_str_eq(keep, "precious");
	ck_assert_str_eq(outside, "");
	testutil_rmtree(h->dir);
	testutil_rmtree(h->outside);
	g_free(h->dir);
	g_free(h->outside);
	g_free(h->before);
}

/* A valid first record (so something is staged), then the hostile one, then the end. */
static int hostile(host_tree *h, char type, const char *name, uint64_t size, const char *data)
{
	GByteArray *b = g_byte_array_new();
	record(b, 'f', 0644, "keep", 3, "new");
	record(b, type, 0644, name, size, data);
	record(b, 'e', 0, "", 0, NULL);
	wsarc_report rep;
	int r = unpack_into(h->dir, b, &rep);
	g_byte_array_free(b, TRUE);
	return r;
}

START_TEST(test_hostile_names)
{
	const char *names[] = {
		"../escape", "/etc/passwd", "a/../../x", "d/./x", "d//x",
		"",          ".",           "..",        "d/..",  ".cordon-unpack-0"
	};
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		host_tree h;
		host_tree_make(&h);
		ck_assert_msg(hostile(&h, 'f', names[i], 1, "x") == -EPROTO, "%s", names[i]);
		host_tree_check_clear(&h);
	}
}
END_TEST

START_TEST(test_hostile_types)
{
	/* a symbolic link to /etc, a device, a hard link, a FIFO: no such record exists */
	const char types[] = { 'l', 'c', 'b', 'h', 'p', 0 };
	for (size_t i = 0; i < sizeof(types); i++) {
		host_tree h;
		host_tree_make(&h);
		ck_assert_int_eq(hostile(&h, types[i], "evil", 4, "/etc"), -EPROTO);
		host_tree_check_clear(&h);
	}
}
END_TEST

START_TEST(test_hostile_sizes)
{
	host_tree h;
	host_tree_make(&h);
	/* 10 GiB claimed: refused at the header, before a byte is written */
	ck_assert_int_eq(hostile(&h, 'f', "big", 10ull << 30, NULL), -EFBIG);
	host_tree_check_clear(&h);

	host_tree_make(&h);
	GByteArray *b = g_byte_array_new();
	for (int i = 0; i < 101; i++) {
		g_autofree char *n = g_strdup_printf("f%d", i);
		record(b, 'f', 0644, n, 0, NULL);
	}
	record(b, 'e', 0, "", 0, NULL);
	wsarc_report rep;
	ck_assert_int_eq(unpack_into(h.dir, b, &rep), -E2BIG);
	ck_assert_str_eq(rep.over, "files");
	g_byte_array_free(b, TRUE);
	host_tree_check_clear(&h);

	/* a directory with a size */
	host_tree_make(&h);
	ck_assert_int_eq(hostile(&h, 'd', "dd", 5, "xxxxx"), -EPROTO);
	host_tree_check_clear(&h);
}
END_TEST

START_TEST(test_hostile_framing)
{
	/* cut short: a file's data never comes to its size */
	host_tree h;
	host_tree_make(&h);
	GByteArray *b = g_byte_array_new();
	record(b, 'f', 0644, "keep", 100, "short");
	wsarc_report rep;
	ck_assert_int_eq(unpack_into(h.dir, b, &rep), -EPROTO);
	g_byte_array_free(b, TRUE);
	host_tree_check_clear(&h);

	/* no end record */
	host_tree_make(&h);
	b = g_byte_array_new();
	record(b, 'f', 0644, "keep", 3, "new");
	ck_assert_int_eq(unpack_into(h.dir, b, &rep), -EPROTO);
	g_byte_array_free(b, TRUE);
	host_tree_check_clear(&h);

	/* bytes after the end */
	host_tree_make(&h);
	b = g_byte_array_new();
	record(b, 'f', 0644, "keep", 3, "new");
	record(b, 'e', 0, "", 0, NULL);
	record(b, 'f', 0644, "late", 1, "x");
	ck_assert_int_eq(unpack_into(h.dir, b, &rep), -EPROTO);
	g_byte_array_free(b, TRUE);
	host_tree_check_clear(&h);
}
END_TEST

START_TEST(test_commit_confined)
{
	host_tree h;
	host_tree_make(&h);
	GByteArray *b = g_byte_array_new();
	/* through the host's link to outside: refused by pathres; over the link itself: the
	 * link is replaced, its target untouched; a file where a directory is: a conflict */
	record(b, 'f', 0644, "out/x", 1, "x");
	record(b, 'f', 0666, "out", 2, "hi");
	record(b, 'f', 0644, "d", 1, "x");
	record(b, 'd', 0755, "newdir", 0, NULL);
	record(b, 'f', 04777, "newdir/f", 2, "ok");
	record(b, 'e', 0, "", 0, NULL);
	wsarc_report rep;
	ck_assert_int_lt(unpack_into(h.dir, b, &rep), 0);
	ck_assert_uint_eq(rep.conflicts, 1);
	g_autofree char *outside = listing(h.outside);
	ck_assert_str_eq(outside, "");
	g_autofree char *out = g_build_filename(h.dir, "out", NULL);
	ck_assert(!g_file_test(out, G_FILE_TEST_IS_SYMLINK));
	g_autofree char *hi = read_file(h.dir, "out"), *ok = read_file(h.dir, "newdir/f");
	ck_assert_str_eq(hi, "hi");
	ck_assert_str_eq(ok, "ok");
	struct stat st;
	ck_assert_int_eq(stat(out, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644); /* the mask: no group/other write */
	g_autofree char *f = g_build_filename(h.dir, "newdir/f", NULL);
	ck_assert_int_eq(stat(f, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	g_autofree char *after = listing(h.dir);
	ck_assert_str_eq(after, "d,keep,newdir,newdir/f,out");
	g_byte_array_free(b, TRUE);
	testutil_rmtree(h.dir);
	testutil_rmtree(h.outside);
	g_free(h.dir);
	g_free(h.outside);
	g_free(h.before);
}
END_TEST

static Suite *wsarc_suite(void)
{
	Suite *s = suite_create("wsarc");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_pack_limits);
	tcase_add_test(tc, test_hostile_names);
	tcase_add_test(tc, test_hostile_types);
	tcase_add_test(tc, test_hostile_sizes);
	tcase_add_test(tc, test_hostile_framing);
	tcase_add_test(tc, test_commit_confined);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(wsarc_suite()); }
