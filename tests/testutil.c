/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "testutil.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>

int testutil_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static char *top_path(const char *var, const char *fallback, const char *rel)
{
	const char *top = g_getenv(var);
	return g_build_filename(top ? top : fallback, rel, NULL);
}

char *testutil_build_path(const char *rel)
{
	return top_path("CORDON_TOP_BUILDDIR", ".", rel);
}

char *testutil_src_path(const char *rel)
{
	return top_path("CORDON_TOP_SRCDIR", ".", rel);
}

char *testutil_tmpdir(void)
{
	g_autoptr(GError) err = NULL;
	char *d = g_dir_make_tmp("cordon-test-XXXXXX", &err);
	ck_assert_msg(d != NULL, "mkdtemp: %s", err ? err->message : "?");
	return d;
}

static void rmtree_at(const char *path)
{
	if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
		GDir *d = g_dir_open(path, 0, NULL);
		const char *name;
		while (d && (name = g_dir_read_name(d))) {
			g_autofree char *child = g_build_filename(path, name, NULL);
			rmtree_at(child);
		}
		if (d)
			g_dir_close(d);
		g_rmdir(path);
	} else {
		g_unlink(path);
	}
}

void testutil_rmtree(const char *dir)
{
	if (dir)
		rmtree_at(dir);
}
