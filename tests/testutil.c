/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "testutil.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

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

char *testutil_build_path(const char *rel) { return top_path("CORDON_TOP_BUILDDIR", ".", rel); }

char *testutil_src_path(const char *rel) { return top_path("CORDON_TOP_SRCDIR", ".", rel); }

const char *testutil_assert_unix_listener(const char *address)
{
	ck_assert_msg(address && g_str_has_prefix(address, "unix:/"), "%s",
		      address ? address : "(none)");
	const char *path = address + 5;
	g_autofree char *dir = g_path_get_dirname(path);
	struct stat st;
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(st.st_uid, geteuid());
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	return path;
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

/* Where `make check` builds a plugin module (libtool puts it in .libs). */
static char *built_plugin(const char *name)
{
	g_autofree char *file = g_strconcat(name, ".so", NULL);
	g_autofree char *in_plugins = g_build_filename("plugins", name, ".libs", file, NULL);
	g_autofree char *in_corpus = g_build_filename("tests/plugins/.libs", file, NULL);
	const char *const rels[] = { in_plugins, in_corpus };
	for (size_t i = 0; i < G_N_ELEMENTS(rels); i++) {
		char *p = testutil_build_path(rels[i]);
		if (g_file_test(p, G_FILE_TEST_IS_REGULAR))
			return p;
		g_free(p);
	}
	ck_abort_msg("plugin %s is not built (make check builds it)", name);
	return NULL;
}

char *testutil_plugin_dir(const char *first, ...)
{
	char *dir = testutil_tmpdir();
	va_list ap;
	va_start(ap, first);
	for (const char *name = first; name; name = va_arg(ap, const char *)) {
		g_autofree char *src = built_plugin(name);
		g_autofree char *data = NULL;
		gsize len = 0;
		g_autoptr(GError) err = NULL;
		ck_assert_msg(g_file_get_contents(src, &data, &len, &err), "%s",
			      err ? err->message : src);
		g_autofree char *file = g_strconcat(name, ".so", NULL);
		g_autofree char *dst = g_build_filename(dir, file, NULL);
		ck_assert_msg(g_file_set_contents_full(dst, data, (gssize)len,
						       G_FILE_SET_CONTENTS_NONE, 0644, &err),
			      "%s", err ? err->message : dst);
	}
	va_end(ap);
	return dir;
}

size_t testutil_tier_index(cordon_context *ctx, const char *name)
{
	for (size_t i = 0; i < cordon_context_tier_count(ctx); i++)
		if (strcmp(cordon_context_tier_name(ctx, i), name) == 0)
			return i;
	ck_abort_msg("no tier %s", name);
	return 0;
}

cordon_context *testutil_context_from_text(const char *policy, const char *name)
{
	cordon_options *o = cordon_options_new();
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_options_set_policy_text(o, policy, strlen(policy), name, &err), 0);
	cordon_context *ctx = NULL;
	int r = cordon_context_new(o, &ctx, &err);
	ck_assert_msg(r == 0, "context: %s", err ? cordon_error_get_message(err) : "?");
	cordon_options_free(o);
	return ctx;
}

cordon_sandbox *testutil_open(cordon_context *ctx, cordon_request *req, const char *what)
{
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_open(ctx, req, &sb, &err);
	cordon_request_free(req);
	ck_assert_msg(r == 0, "open %s: %s: %s", what, err ? cordon_error_get_code(err) : "?",
		      err ? cordon_error_get_message(err) : "?");
	return sb;
}

bool testutil_tier_available(const char *name, char **ret_why)
{
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	*ret_why = NULL;
	if (cordon_context_new(NULL, &ctx, &err) < 0) {
		*ret_why = g_strdup(cordon_error_get_message(err));
		cordon_error_free(err);
		return false;
	}
	cordon_probe_report *p = NULL;
	bool ok = false;
	for (size_t i = 0; i < cordon_context_tier_count(ctx); i++)
		if (strcmp(cordon_context_tier_name(ctx, i), name) == 0 &&
		    cordon_context_probe_tier(ctx, i, &p, NULL) == 0) {
			ok = cordon_probe_report_available(p);
			*ret_why = g_strdup(cordon_probe_report_reason(p));
			cordon_probe_report_free(p);
		}
	cordon_context_free(ctx);
	return ok;
}

int testutil_run_on_tier(const char *name, Suite *s)
{
	g_autofree char *why = NULL;
	if (!testutil_tier_available(name, &why)) {
		const char *r = why ? why : "no such tier";
		srunner_free(srunner_create(s)); /* Check frees a suite with its runner */
		if (g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") == 0) {
			printf("Bail out! CORDON_REQUIRE=all: %s: %s\n", name, r);
			return 1;
		}
		printf("1..0 # SKIP %s: %s\n", name, r);
		return 0;
	}
	fprintf(stderr, "# running as uid %d: %s\n", (int)geteuid(), why);
	return testutil_run(s);
}

char *testutil_server_start(const char *dir, const char *key, GPid *ret_pid, unsigned *ret_port)
{
	g_autofree char *bin = testutil_build_path("cordon-server");
	if (access(bin, X_OK) != 0)
		return g_strdup_printf("%s is not built (libmicrohttpd, json-c)", bin);
	g_autofree char *keys = g_build_filename(dir, "keys", NULL);
	g_autofree char *keyfile = g_build_filename(dir, "key", NULL);
	g_autofree char *pol = g_build_filename(dir, "server.yaml", NULL);
	if (!g_file_set_contents(keys, key, -1, NULL) ||
	    !g_file_set_contents(keyfile, key, -1, NULL) || chmod(keys, 0600) < 0 ||
	    chmod(keyfile, 0600) < 0 ||
	    !g_file_set_contents(pol,
				 "cordon: 1\ntiers:\n  kernel: {driver: local, confine: kernel, "
				 "limits: {wall: 60s}}\ntrust:\n  semi-trusted: {require: kernel, "
				 "tiers: [kernel]}\nserver:\n  templates:\n    base: {trust: "
				 "semi-trusted}\n",
				 -1, NULL))
		return g_strdup("cannot write the server's files");
	const char *argv[] = { bin,        "--listen", "127.0.0.1:0", "--api-keys", keys,
			       "--policy", pol,        "--quiet",     NULL };
	int out = -1;
	GError *e = NULL;
	if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL,
				      NULL, ret_pid, NULL, &out, NULL, &e)) {
		char *why = g_strdup_printf("cordon server: %s", e->message);
		g_error_free(e);
		return why;
	}
	FILE *f = fdopen(out, "r");
	char line[256] = "";
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "cordon server: listening on %*s port %u", ret_port) != 1)
		return g_strdup_printf("cordon server did not start: %s", line);
	/* its later lines are left unread: it writes only one more, at the end */
	return NULL;
}

uint16_t testutil_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	close(fd);
	return ntohs(a.sin_port);
}

void testutil_wait_port(uint16_t port)
{
	for (int i = 0; i < 1000; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int r = connect(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (r == 0)
			return;
		g_usleep(10000);
	}
	ck_abort_msg("nothing listens on port %u", (unsigned)port);
}
