/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host services table (core/hostservices.c, core/hostspawn.c): a tier
 * section's typed getters, secrets, positioned errors, limits; spawn with its
 * minimal environment, new session, closed descriptors, stdin, caps,
 * signals and timeouts; find_program; path_is_confined.
 */
#include "config.h"

#include "testutil.h"

#include "context.h"
#include "hostspawn.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static const cordon_host *host = &cordon_host_services;

/* ---- a section, built as the policy parser would ------------------------------- */

static cfg_node *node_new(cfg_kind kind, const char *text, bool plain, const char *path,
			  uint32_t line, uint32_t col)
{
	cfg_node *n = g_new0(cfg_node, 1);
	n->kind = kind;
	n->scalar = g_strdup(text);
	n->plain = plain;
	n->path = g_strdup(path);
	n->line = line;
	n->col = col;
	if (kind != CFG_SCALAR)
		n->items = g_ptr_array_new_with_free_func((GDestroyNotify)cfg_node_free);
	if (kind == CFG_MAP)
		n->keys = g_ptr_array_new_with_free_func((GDestroyNotify)cfg_node_free);
	return n;
}

static cfg_node *put(cfg_node *map, const char *key, cfg_node *value)
{
	g_ptr_array_add(map->keys, node_new(CFG_SCALAR, key, true, map->path, value->line, 3));
	g_ptr_array_add(map->items, value);
	return value;
}

static cfg_node *put_scalar(cfg_node *map, const char *key, const char *text, bool plain,
			    uint32_t line)
{
	g_autofree char *path = g_strdup_printf("%s.%s", map->path, key);
	return put(map, key,
		   node_new(CFG_SCALAR, text, plain, path, line, 3 + (uint32_t)strlen(key) + 2));
}

static const cordon_plugin_config_key keys[] = {
	{ "image", CORDON_PLUGIN_CONFIG_STRING, 1 },
	{ "rootless", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "cpus", CORDON_PLUGIN_CONFIG_INT, 0 },
	{ "shm", CORDON_PLUGIN_CONFIG_SIZE, 0 },
	{ "grace", CORDON_PLUGIN_CONFIG_DURATION, 0 },
	{ "count", CORDON_PLUGIN_CONFIG_INT, 0 },
	{ "args", CORDON_PLUGIN_CONFIG_STRING_LIST, 0 },
	{ "token", CORDON_PLUGIN_CONFIG_SECRET, 0 },
	{ "empty", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ NULL, 0, 0 },
};

typedef struct section {
	cfg_node *root;
	policy_tier tier;
	struct cordon_plugin_config cfg;
} section;

static void section_init(section *s)
{
	s->root = node_new(CFG_MAP, NULL, false, "tiers.box", 4, 3);
	put_scalar(s->root, "driver", "podman", true, 5);
	put_scalar(s->root, "image", "localhost/x@sha256:00", false, 6);
	put_scalar(s->root, "rootless", "true", true, 7);
	put_scalar(s->root, "cpus", "-3", true, 8);
	put_scalar(s->root, "shm", "64MiB", true, 9);
	put_scalar(s->root, "grace", "1500ms", true, 10);
	put_scalar(s->root, "count", "twelve", true, 11);
	cfg_node *args = put(s->root, "args",
			     node_new(CFG_SEQ, NULL, false, "tiers.box.args", 12, 9));
	g_ptr_array_add(args->items,
			node_new(CFG_SCALAR, "--a", true, "tiers.box.args[0]", 12, 10));
	g_ptr_array_add(args->items,
			node_new(CFG_SCALAR, "b c", false, "tiers.box.args[1]", 12, 15));
	put_scalar(s->root, "empty", "~", true, 13);
	s->tier = (policy_tier){ .name = (char *)"box",
				 .driver = (char *)"podman",
				 .section = s->root };
	s->tier.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 1 << 30;
	s->tier.limits.set = 1u << CORDON_PLUGIN_LIMIT_MEMORY;
	s->cfg = (struct cordon_plugin_config){ &s->tier, "/etc/cordon/policy.yaml", keys };
}

static void section_fini(section *s) { cfg_node_free(s->root); }

START_TEST(test_table_complete)
{
	ck_assert_uint_eq(host->size, sizeof(cordon_host));
	ck_assert_uint_eq(host->abi_major, CORDON_PLUGIN_ABI_MAJOR);
	ck_assert_uint_eq(host->abi_minor, CORDON_PLUGIN_ABI_MINOR);
	/* Every service is there: a plugin never has to test for NULL. */
	const size_t first = offsetof(cordon_host, log);
	for (size_t off = first; off < sizeof(cordon_host); off += sizeof(void *)) {
		void *fn = NULL;
		memcpy(&fn, (const char *)host + off, sizeof(fn));
		ck_assert_msg(fn != NULL, "host service at offset %zu is NULL", off);
	}
}
END_TEST

START_TEST(test_getters)
{
	section s;
	section_init(&s);
	const cordon_plugin_config *cfg = &s.cfg;
	const char *str = NULL;
	bool b = false;
	int64_t i64 = 0;
	uint64_t u64 = 0;

	ck_assert_str_eq(host->config_tier_name(cfg), "box");
	ck_assert_int_eq(host->config_string(cfg, "image", &str), 1);
	ck_assert_str_eq(str, "localhost/x@sha256:00");
	ck_assert_int_eq(host->config_string(cfg, "missing", &str), 0);
	ck_assert_int_eq(host->config_string(cfg, "empty", &str), 0); /* `empty: ~` is absent */
	ck_assert_int_eq(host->config_bool(cfg, "rootless", &b), 1);
	ck_assert(b);
	ck_assert_int_eq(host->config_bool(cfg, "image", &b), -EINVAL);
	ck_assert_int_eq(host->config_int(cfg, "cpus", &i64), 1);
	ck_assert_int_eq(i64, -3);
	ck_assert_int_eq(host->config_int(cfg, "count", &i64), -EINVAL);
	ck_assert_int_eq(host->config_u64(cfg, "shm", &u64), 1);
	ck_assert_uint_eq(u64, 64ull << 20);
	ck_assert_int_eq(host->config_u64(cfg, "grace", &u64), 1);
	ck_assert_uint_eq(u64, 1500);
	ck_assert_int_eq(host->config_u64(cfg, "cpus", &u64), -EINVAL); /* negative */
	ck_assert_int_eq(host->config_u64(cfg, "absent", &u64), 0);
	/* A list is not a string, a string not a list. */
	ck_assert_int_eq(host->config_string(cfg, "args", &str), -EINVAL);
	ck_assert_int_eq(host->config_strv(cfg, "image", NULL), -EINVAL);
	ck_assert_int_eq(host->config_tier_name(NULL) == NULL, 1);
	section_fini(&s);
}
END_TEST

START_TEST(test_strv_stable)
{
	section s;
	section_init(&s);
	const char *const *v = NULL, *const *again = NULL;
	ck_assert_int_eq(host->config_strv(&s.cfg, "args", &v), 1);
	ck_assert_str_eq(v[0], "--a");
	ck_assert_str_eq(v[1], "b c");
	ck_assert_ptr_null(v[2]);
	/* Borrowed and stable: the same array every time, as long as the policy. */
	ck_assert_int_eq(host->config_strv(&s.cfg, "args", &again), 1);
	ck_assert_ptr_eq(v, again);
	ck_assert_int_eq(host->config_strv(&s.cfg, "nothing", &v), 0);
	section_fini(&s);
}
END_TEST

START_TEST(test_limits)
{
	section s;
	section_init(&s);
	cordon_plugin_limits l;
	memset(&l, 0xff, sizeof(l));
	host->config_limits(&s.cfg, &l);
	ck_assert_uint_eq(l.set, 1u << CORDON_PLUGIN_LIMIT_MEMORY);
	ck_assert_uint_eq(l.value[CORDON_PLUGIN_LIMIT_MEMORY], 1 << 30);
	ck_assert_uint_eq(l.value[CORDON_PLUGIN_LIMIT_WALL_MS], 0);
	section_fini(&s);
}
END_TEST

static void set_scalar(section *s, const char *key, const char *text, bool plain)
{
	cfg_node *n = cfg_map_get(s->root, key);
	g_free(n->scalar);
	n->scalar = g_strdup(text);
	n->plain = plain;
}

/* A value reads the same to a driver as it did to the policy check: the
 * getters use the policy's own grammar, so what the check refuses (a
 * quoted or capitalised boolean, a leading zero or plus sign, an unquoted
 * boolean as a string) a getter never reads as something else. */
START_TEST(test_getters_share_the_policy_grammar)
{
	static const struct {
		const char *text;
		bool plain;
	} not_bool[] = { { "true", false },
			 { "True", true },
			 { "FALSE", true },
			 { "yes", true },
			 { "on", true } };
	for (size_t i = 0; i < G_N_ELEMENTS(not_bool); i++) {
		section s;
		section_init(&s);
		set_scalar(&s, "rootless", not_bool[i].text, not_bool[i].plain);
		bool b = false;
		ck_assert_msg(host->config_bool(&s.cfg, "rootless", &b) == -EINVAL,
			      "'%s' read as %d", not_bool[i].text, b);
		section_fini(&s);
	}
	static const char *const not_int[] = { "007", "+5", "1_000" };
	for (size_t i = 0; i < G_N_ELEMENTS(not_int); i++) {
		section s;
		section_init(&s);
		set_scalar(&s, "cpus", not_int[i], true);
		int64_t v = 0;
		uint64_t u = 0;
		ck_assert_msg(host->config_int(&s.cfg, "cpus", &v) == -EINVAL, "'%s' read",
			      not_int[i]);
		ck_assert_msg(host->config_u64(&s.cfg, "cpus", &u) == -EINVAL, "'%s' read",
			      not_int[i]);
		section_fini(&s);
	}
	section s;
	section_init(&s);
	const char *str = NULL;
	ck_assert_int_eq(host->config_string(&s.cfg, "rootless", &str), -EINVAL); /* a boolean */
	/* A list of strings holds strings: not an unquoted boolean, not null. */
	cfg_node *args = cfg_map_get(s.root, "args");
	g_ptr_array_add(args->items,
			node_new(CFG_SCALAR, "false", true, "tiers.box.args[2]", 12, 20));
	ck_assert_int_eq(host->config_strv(&s.cfg, "args", NULL), -EINVAL);
	/* Null is null only as YAML spells it; "nULL" is a string like any other. */
	set_scalar(&s, "empty", "nULL", true);
	ck_assert_int_eq(host->config_string(&s.cfg, "empty", &str), 1);
	ck_assert_str_eq(str, "nULL");
	section_fini(&s);
}
END_TEST

/* ABI 1.2: the core fills no more of the limits than the plugin says it has
 * (nor than the core knows), and writes back what it filled; a plugin built
 * against 1.1, whose last word was reserved, gets the 64 bytes it has. */
START_TEST(test_limits_sized)
{
	section s;
	section_init(&s);
	struct {
		cordon_plugin_limits l;
		uint64_t canary;
	} big;
	memset(&big, 0xa5, sizeof(big));
	big.l.size = sizeof(big); /* a newer plugin's, larger struct */
	s.cfg.abi_minor = 2;
	host->config_limits(&s.cfg, &big.l);
	ck_assert_uint_eq(big.l.size, sizeof(cordon_plugin_limits));
	ck_assert_uint_eq(big.l.value[CORDON_PLUGIN_LIMIT_MEMORY], 1 << 30);
	ck_assert_uint_eq(big.canary, 0xa5a5a5a5a5a5a5a5ull);
	memset(&big, 0xa5, sizeof(big)); /* 1.1: "reserved" holds anything */
	s.cfg.abi_minor = 1;
	host->config_limits(&s.cfg, &big.l);
	ck_assert_uint_eq(big.l.set, 1u << CORDON_PLUGIN_LIMIT_MEMORY);
	ck_assert_uint_eq(big.canary, 0xa5a5a5a5a5a5a5a5ull);
	section_fini(&s);
}
END_TEST

static cordon_error *config_error_of(const cordon_plugin_config *cfg, const char *key)
{
	struct cordon_plugin_error perr = { 0 };
	ck_assert_int_eq(host->config_error(cfg, key, &perr, "must be %s", "pinned"), -EINVAL);
	return perr.err;
}

START_TEST(test_config_error)
{
	section s;
	section_init(&s);
	cordon_error *err = config_error_of(&s.cfg, "image");
	ck_assert_str_eq(cordon_error_get_message(err),
			 "/etc/cordon/policy.yaml:6:10: tiers.box.image: must be pinned");
	ck_assert_int_eq(cordon_error_get_errno(err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	/* An absent key points at the section. */
	err = config_error_of(&s.cfg, "network");
	ck_assert_str_eq(cordon_error_get_message(err),
			 "/etc/cordon/policy.yaml:4:3: tiers.box.network: must be pinned");
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	section_fini(&s);
}
END_TEST

/* ---- secrets ------------------------------------------------------------------------ */

static cfg_node *put_secret(section *s, const char *how, const char *what)
{
	cfg_node *m = put(s->root, "token",
			  node_new(CFG_MAP, NULL, false, "tiers.box.token", 14, 10));
	put_scalar(m, how, what, false, 14);
	return m;
}

static int secret(section *s, char **ret, cordon_error **ret_err)
{
	struct cordon_plugin_error perr = { 0 };
	int r = host->config_secret(&s->cfg, "token", ret, &perr);
	*ret_err = perr.err;
	return r;
}

START_TEST(test_secret_env)
{
	section s;
	section_init(&s);
	put_secret(&s, "env", "CORDON_TEST_TOKEN");
	g_setenv("CORDON_TEST_TOKEN", "tok-123", TRUE);
	char *v = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(secret(&s, &v, &err), 1);
	ck_assert_str_eq(v, "tok-123");
	host->free(v);
	/* A secret key is never readable as a plain string. */
	const char *str = NULL;
	ck_assert_int_eq(host->config_string(&s.cfg, "token", &str), -EPERM);
	g_unsetenv("CORDON_TEST_TOKEN");
	ck_assert_int_eq(secret(&s, &v, &err), -EINVAL);
	ck_assert_ptr_nonnull(
		strstr(cordon_error_get_message(err),
		       "tiers.box.token: environment variable CORDON_TEST_TOKEN is not set"));
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	section_fini(&s);
}
END_TEST

START_TEST(test_secret_file)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *path = g_build_filename(dir, "key", NULL);
	ck_assert(g_file_set_contents(path, "file-secret\n", -1, NULL));
	section s;
	section_init(&s);
	put_secret(&s, "file", path);
	char *v = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(secret(&s, &v, &err), 1);
	ck_assert_str_eq(v, "file-secret"); /* the editor's newline is dropped */
	host->free(v);
	ck_assert(g_file_set_contents(path, "", 0, NULL));
	ck_assert_int_eq(secret(&s, &v, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), ": empty"));
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	section_fini(&s);

	section_init(&s);
	put_secret(&s, "file", "relative/key");
	ck_assert_int_eq(secret(&s, &v, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "is not an absolute path"));
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	section_fini(&s);

	section_init(&s);
	put_secret(&s, "file", dir); /* a directory */
	ck_assert_int_eq(secret(&s, &v, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "not a regular file"));
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	section_fini(&s);
	testutil_rmtree(dir);
}
END_TEST

/* A literal in the policy is refused, and the error never repeats it. */
START_TEST(test_secret_literal_refused)
{
	section s;
	section_init(&s);
	put_scalar(s.root, "token", "sk-live-LITERAL", false, 14);
	char *v = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(secret(&s, &v, &err), -EINVAL);
	ck_assert_ptr_null(v);
	ck_assert_ptr_null(strstr(cordon_error_get_message(err), "LITERAL"));
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "{env: NAME} or {file: PATH}"));
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	section_fini(&s);

	section_init(&s);
	put_secret(&s, "vault", "x");
	ck_assert_int_eq(secret(&s, &v, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "policy_invalid");
	section_fini(&s);
}
END_TEST

/* ---- spawn ------------------------------------------------------------------------------ */

static int spawn_sh(cordon_host_spawn *sp, const char *script, uint64_t timeout_ms)
{
	static const char *argv[4];
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = script;
	argv[3] = NULL;
	*sp = (cordon_host_spawn){ .size = sizeof(*sp), .argv = argv, .timeout_ms = timeout_ms };
	return 0;
}

static int run(cordon_host_spawn *sp, cordon_error **ret_err)
{
	struct cordon_plugin_error perr = { 0 };
	int r = host->spawn(sp, &perr);
	if (ret_err)
		*ret_err = perr.err;
	else
		cordon_error_free(perr.err);
	return r;
}

static void spawn_done(cordon_host_spawn *sp)
{
	host->free(sp->out);
	host->free(sp->err);
}

START_TEST(test_spawn_capture_and_exit)
{
	cordon_host_spawn sp;
	spawn_sh(&sp, "echo out; echo err >&2; exit 3", 0);
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_str_eq(sp.out, "out\n");
	ck_assert_str_eq(sp.err, "err\n");
	ck_assert_int_eq(sp.exit_code, 3);
	ck_assert_uint_eq(sp.timed_out, 0);
	spawn_done(&sp);

	spawn_sh(&sp, "kill -TERM $$", 0);
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_int_eq(sp.exit_code, 128 + SIGTERM);
	spawn_done(&sp);
}
END_TEST

START_TEST(test_spawn_minimal_env)
{
	g_setenv("CORDON_TEST_API_KEY", "must-not-leak", TRUE);
	cordon_host_spawn sp;
	const char *argv[] = { "env", NULL };
	sp = (cordon_host_spawn){ .size = sizeof(sp), .argv = argv };
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_str_eq(sp.out, "PATH=" HOSTSPAWN_PATH "\nLANG=C.UTF-8\n");
	spawn_done(&sp);
	/* A plugin's envp replaces the baseline entirely. */
	const char *envp[] = { "ONLY=this", NULL };
	sp = (cordon_host_spawn){ .size = sizeof(sp), .argv = argv, .envp = envp };
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_str_eq(sp.out, "ONLY=this\n");
	spawn_done(&sp);
	g_unsetenv("CORDON_TEST_API_KEY");
}
END_TEST

/* New session (its own group, no terminal), cwd "/", only fds 0-2. */
START_TEST(test_spawn_nothing_inherited)
{
	int leak = open("/dev/null", O_RDONLY); /* not O_CLOEXEC on purpose */
	ck_assert_int_ge(leak, 3);
	cordon_host_spawn sp;
	g_autofree char *script = g_strdup_printf(
		"set -e; echo $$; cut -d' ' -f6 /proc/$$/stat; pwd; "
		"if [ -e /proc/$$/fd/%d ]; then echo leaked; fi; ls /proc/self/fd | wc -l",
		leak);
	spawn_sh(&sp, script, 0);
	ck_assert_int_eq(run(&sp, NULL), 0);
	g_auto(GStrv) l = g_strsplit(sp.out, "\n", -1);
	ck_assert_uint_ge(g_strv_length(l), 4);
	ck_assert_str_eq(l[0], l[1]); /* session id == pid: setsid */
	ck_assert_str_eq(l[2], "/");
	/* ls: 0, 1, 2 and the one it opens to read the directory. */
	ck_assert_str_eq(g_strstrip(l[3]), "4");
	ck_assert_int_eq(sp.exit_code, 0);
	spawn_done(&sp);
	close(leak);
}
END_TEST

START_TEST(test_spawn_stdin_and_cap)
{
	gsize n = 3 * 1024 * 1024;
	g_autofree char *big = g_malloc(n);
	memset(big, 'x', n);
	const char *cat[] = { "cat", NULL };
	cordon_host_spawn sp = { .size = sizeof(sp),
				 .argv = cat,
				 .stdin_data = big,
				 .stdin_len = n,
				 .output_cap = 1000 };
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_uint_eq(strlen(sp.out), 1000); /* capped, and cat still finished */
	ck_assert_int_eq(sp.exit_code, 0);
	spawn_done(&sp);
	/* Default cap: 1 MiB. */
	sp = (cordon_host_spawn){
		.size = sizeof(sp), .argv = cat, .stdin_data = big, .stdin_len = n
	};
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_uint_eq(strlen(sp.out), HOSTSPAWN_OUTPUT_CAP_DEFAULT);
	spawn_done(&sp);
	/* A program that never reads its stdin must not kill us with SIGPIPE. */
	const char *tru[] = { "true", NULL };
	sp = (cordon_host_spawn){
		.size = sizeof(sp), .argv = tru, .stdin_data = big, .stdin_len = n
	};
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_int_eq(sp.exit_code, 0);
	spawn_done(&sp);
}
END_TEST

static bool process_gone(pid_t pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
	g_autofree char *stat = NULL;
	if (!g_file_get_contents(path, &stat, NULL, NULL))
		return true;
	const char *rp = strrchr(stat, ')');
	return rp && rp[1] == ' ' &&
	       (rp[2] == 'Z' || rp[2] == 'X'); /* dead, not yet reaped by init */
}

/* The timeout kills the whole group: the grandchild too, not just sh. */
START_TEST(test_spawn_timeout_kills_group)
{
	cordon_host_spawn sp;
	spawn_sh(&sp, "sleep 30 & echo $!; wait", 300);
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_eq(run(&sp, NULL), 0);
	gint64 dt = g_get_monotonic_time() - t0;
	ck_assert_uint_eq(sp.timed_out, 1);
	ck_assert_int_eq(sp.exit_code, -1);
	ck_assert_int_lt(dt, 3 * G_USEC_PER_SEC);
	pid_t grandchild = (pid_t)atoi(sp.out);
	ck_assert_int_gt(grandchild, 1);
	for (int i = 0; i < 100 && !process_gone(grandchild); i++)
		g_usleep(10000);
	ck_assert_msg(process_gone(grandchild), "grandchild %d survived the timeout",
		      (int)grandchild);
	spawn_done(&sp);
}
END_TEST

/* A leftover holding the pipes after the leader exits cannot hold the call. */
START_TEST(test_spawn_leftover_does_not_block)
{
	cordon_host_spawn sp;
	spawn_sh(&sp, "(sleep 5; echo late) & echo early", 10000);
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_eq(run(&sp, NULL), 0);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 3 * G_USEC_PER_SEC);
	ck_assert_uint_eq(sp.timed_out, 0);
	ck_assert_int_eq(sp.exit_code, 0);
	ck_assert_str_eq(sp.out, "early\n");
	spawn_done(&sp);
}
END_TEST

/* ---- process_spawn (ABI 1.2) ---- */

/* sh -c script on three pipes; *ret_pipes holds our ends (in, out, err). */
static cordon_host_process *process_sh(const char *script, int extra_fd, int ret_pipes[3])
{
	int p[3][2];
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pipe2(p[i], O_CLOEXEC), 0);
	const char *argv[] = { "sh", "-c", script, NULL };
	cordon_host_process_spec spec = { .size = sizeof(spec),
					  .argv = argv,
					  .stdin_fd = p[0][0],
					  .stdout_fd = p[1][1],
					  .stderr_fd = p[2][1],
					  .extra_fd = extra_fd };
	cordon_host_process *h = NULL;
	ck_assert_int_eq(host->process_spawn(&spec, &h, NULL), 0);
	close(p[0][0]);
	close(p[1][1]);
	close(p[2][1]);
	ret_pipes[0] = p[0][1];
	ret_pipes[1] = p[1][0];
	ret_pipes[2] = p[2][0];
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->size, sizeof(cordon_host_process));
	ck_assert_int_gt(h->pid, 0);
	return h;
}

static char *read_all(int fd)
{
	GString *s = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		g_string_append_len(s, buf, n);
	close(fd);
	return g_string_free(s, FALSE);
}

/* The plugin's descriptors are the program's 0-3, nothing else; pidfd, wait, status. */
START_TEST(test_process_streams)
{
	int leak = open("/dev/null", O_RDONLY); /* not O_CLOEXEC on purpose */
	int extra = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	g_autofree char *script = g_strdup_printf(
		"read x; echo \"got $x\"; echo $$; cut -d' ' -f6 /proc/$$/stat; pwd; "
		"readlink /proc/$$/fd/3; if [ -e /proc/$$/fd/%d ]; then echo leaked; fi; "
		"echo oops >&2; exit 3",
		leak);
	int fds[3];
	cordon_host_process *h = process_sh(script, extra, fds);
	/* a pidfd wherever the kernel has them (not under valgrind, which lacks the call) */
	int probe = (int)syscall(SYS_pidfd_open, getpid(), 0);
	ck_assert(probe < 0 || h->pidfd >= 0);
	if (probe >= 0)
		close(probe);
	ck_assert_int_eq(write(fds[0], "hi\n", 3), 3);
	close(fds[0]);
	g_autofree char *out = read_all(fds[1]);
	g_autofree char *err = read_all(fds[2]);
	int32_t status = -1;
	ck_assert_int_eq(h->wait(h, 5000, 0, &status), 0);
	ck_assert_int_eq(status, 3);
	ck_assert_int_eq(h->pid, 0); /* reaped */
	g_auto(GStrv) l = g_strsplit(out, "\n", -1);
	ck_assert_uint_eq(g_strv_length(l), 6);
	ck_assert_str_eq(l[0], "got hi");
	ck_assert_str_eq(l[1], l[2]); /* session id == pid: setsid */
	ck_assert_str_eq(l[3], "/");
	ck_assert_str_eq(l[4], "/dev/zero");
	ck_assert_str_eq(err, "oops\n");
	h->release(h);
	close(leak);
	close(extra);
}
END_TEST

/* wait's timeout leaves it running; kill ends the whole group; KILL_GROUP ends leftovers. */
START_TEST(test_process_timeout_kill_and_group)
{
	int fds[3];
	cordon_host_process *h = process_sh("sleep 30 & echo $!; wait", -1, fds);
	char buf[32] = { 0 };
	ck_assert_int_gt(read(fds[1], buf, sizeof(buf) - 1), 0);
	pid_t grandchild = (pid_t)atoi(buf);
	ck_assert_int_gt(grandchild, 1);
	int32_t status = -1;
	ck_assert_int_eq(h->wait(h, 50, 0, &status), -ETIMEDOUT);
	ck_assert_int_eq(status, -1);
	ck_assert_int_gt(h->pid, 0);
	h->kill(h);
	ck_assert_int_eq(h->wait(h, 5000, 0, &status), 0);
	ck_assert_int_eq(status, 128 + SIGKILL);
	for (int i = 0; i < 100 && !process_gone(grandchild); i++)
		g_usleep(10000);
	ck_assert_msg(process_gone(grandchild), "grandchild %d survived kill", (int)grandchild);
	h->kill(h); /* reaped: nothing to signal, and nothing else is hit */
	h->release(h);
	for (int i = 0; i < 3; i++)
		close(fds[i]);

	/* A leader that exits by itself leaves its helper; KILL_GROUP takes it along. */
	h = process_sh("sleep 30 </dev/null >/dev/null 2>&1 & echo $!", -1, fds);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_gt(read(fds[1], buf, sizeof(buf) - 1), 0);
	grandchild = (pid_t)atoi(buf);
	ck_assert_int_eq(h->wait(h, 5000, CORDON_HOST_WAIT_KILL_GROUP, &status), 0);
	ck_assert_int_eq(status, 0);
	for (int i = 0; i < 100 && !process_gone(grandchild); i++)
		g_usleep(10000);
	ck_assert_msg(process_gone(grandchild), "leftover %d survived KILL_GROUP", (int)grandchild);
	h->release(h);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}
END_TEST

static gpointer wait_forever(gpointer data)
{
	cordon_host_process *h = data;
	int32_t status = -1;
	int r = h->wait(h, -1, 0, &status);
	return GINT_TO_POINTER(r == 0 ? status : -1000);
}

/* A kill from another thread ends a wait that has no limit (it is not held off by it). */
START_TEST(test_process_kill_during_wait)
{
	int fds[3];
	cordon_host_process *h = process_sh("exec sleep 30", -1, fds);
	GThread *waiter = g_thread_new("wait", wait_forever, h);
	g_usleep(100000);
	gint64 t0 = g_get_monotonic_time();
	h->kill(h);
	int status = GPOINTER_TO_INT(g_thread_join(waiter));
	ck_assert_int_lt(g_get_monotonic_time() - t0, 3 * G_USEC_PER_SEC);
	ck_assert_int_eq(status, 128 + SIGKILL);
	h->release(h);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}
END_TEST

/* release of a running program kills and reaps it; bad specs are refused. */
START_TEST(test_process_release_and_errors)
{
	int fds[3];
	cordon_host_process *h = process_sh("sleep 30", -1, fds);
	pid_t pid = h->pid;
	h->release(h);
	ck_assert(process_gone(pid));
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	const char *rel[] = { "bin/sh", NULL }, *missing[] = { "no-such-program-cordon", NULL };
	cordon_host_process_spec spec = { .size = sizeof(spec),
					  .argv = rel,
					  .stdin_fd = -1,
					  .stdout_fd = -1,
					  .stderr_fd = -1,
					  .extra_fd = -1 };
	struct cordon_plugin_error perr = { 0 };
	cordon_host_process *none = NULL;
	ck_assert_int_eq(host->process_spawn(&spec, &none, &perr), -EINVAL);
	ck_assert_ptr_null(none);
	ck_assert_cordon_error(perr.err, CORDON_ERROR_INVALID, "invalid_argument");
	spec.argv = missing;
	ck_assert_int_eq(host->process_spawn(&spec, &none, &perr), -ENOENT);
	ck_assert_cordon_error(perr.err, CORDON_ERROR_TERMINAL, "program_not_found");
	spec.size = 8;
	ck_assert_int_eq(host->process_spawn(&spec, &none, &perr), -EINVAL);
	ck_assert_cordon_error(perr.err, CORDON_ERROR_INVALID, "invalid_argument");
	ck_assert_ptr_null(none);
}
END_TEST

START_TEST(test_spawn_errors)
{
	cordon_error *err = NULL;
	const char *missing[] = { "cordon-no-such-program", NULL };
	cordon_host_spawn sp = { .size = sizeof(sp), .argv = missing };
	ck_assert_int_eq(run(&sp, &err), -ENOENT);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "program_not_found");
	const char *relative[] = { "./bin/thing", NULL };
	sp = (cordon_host_spawn){ .size = sizeof(sp), .argv = relative };
	ck_assert_int_eq(run(&sp, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	sp = (cordon_host_spawn){ .size = 8, .argv = missing };
	ck_assert_int_eq(run(&sp, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	const char *empty[] = { NULL };
	sp = (cordon_host_spawn){ .size = sizeof(sp), .argv = empty };
	ck_assert_int_eq(run(&sp, &err), -EINVAL);
	ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
	/* A directory is found by nobody. */
	const char *dir[] = { "/tmp", NULL };
	sp = (cordon_host_spawn){ .size = sizeof(sp), .argv = dir };
	ck_assert_int_eq(run(&sp, &err), -ENOENT);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "program_not_found");
}
END_TEST

START_TEST(test_find_program)
{
	g_autofree char *sh = host->find_program("sh");
	ck_assert_ptr_nonnull(sh);
	ck_assert(g_path_is_absolute(sh));
	ck_assert(g_str_has_suffix(sh, "/sh"));
	g_autofree char *abs = host->find_program("/bin/sh");
	ck_assert_str_eq(abs, "/bin/sh");
	ck_assert_ptr_null(host->find_program("cordon-no-such-program"));
	ck_assert_ptr_null(host->find_program("../bin/sh"));
	ck_assert_ptr_null(host->find_program(""));
	ck_assert_ptr_null(host->find_program(NULL));
	ck_assert_ptr_null(host->find_program("/etc/passwd")); /* not executable */
}
END_TEST

START_TEST(test_path_is_confined)
{
	ck_assert(host->path_is_confined("a"));
	ck_assert(host->path_is_confined("a/b/c.txt"));
	ck_assert(host->path_is_confined("a/..b"));
	ck_assert(!host->path_is_confined(NULL));
	ck_assert(!host->path_is_confined(""));
	ck_assert(!host->path_is_confined("/etc/passwd"));
	ck_assert(!host->path_is_confined(".."));
	ck_assert(!host->path_is_confined("a/../../b"));
	ck_assert(!host->path_is_confined("a/.."));
}
END_TEST

/* ---- serve forwarders (ABI 1.6) ------------------------------------------------------------ */

/* The "sandbox's network" here is the host's own: the forwarder cannot tell. */
static int plain_socket(void *ctx, int family)
{
	(void)ctx;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

static void note_ready(void *ctx, const char *address)
{
	g_atomic_pointer_set((gpointer *)ctx, g_strdup(address));
}

static int forward_start(const cordon_host_forward_spec *spec, cordon_host_forward **f,
			 cordon_error **ret_err)
{
	struct cordon_plugin_error perr = { 0 };
	int r = host->forward_start(spec, f, &perr);
	*ret_err = perr.err;
	return r;
}

START_TEST(test_forward_start_refuses_bad_specs)
{
	char *address = NULL;
	const cordon_host_forward_spec good = { .size = sizeof(good),
						.port = 9,
						.socket = plain_socket,
						.ready = note_ready,
						.ctx = &address };
	cordon_host_forward_spec bad[5] = { good, good, good, good, good };
	bad[0].size = offsetof(cordon_host_forward_spec, ctx);
	bad[1].port = 0;
	bad[2].flags = 1u << 7;
	bad[3].socket = NULL;
	bad[4].ready = NULL;
	for (size_t i = 0; i <= G_N_ELEMENTS(bad); i++) {
		cordon_host_forward *f = (cordon_host_forward *)&address; /* left alone */
		cordon_error *err = NULL;
		int r = forward_start(i < G_N_ELEMENTS(bad) ? &bad[i] : NULL, &f, &err);
		ck_assert_msg(r == -EINVAL, "spec %zu: %d", i, r);
		ck_assert_cordon_error(err, CORDON_ERROR_INVALID, "invalid_argument");
		ck_assert_ptr_eq(f, (cordon_host_forward *)&address);
	}
	host->forward_stop(NULL);
}
END_TEST

/* A one-reply server on 127.0.0.1 that the forwarder's readiness probes (connections
 * that send nothing) do not end. */
static gpointer echo_once(gpointer data)
{
	int lfd = GPOINTER_TO_INT(data);
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return NULL;
		char buf[64];
		ssize_t n = read(c, buf, sizeof(buf));
		if (n > 0) {
			ck_assert_int_eq(write(c, "pong:", 5), 5);
			ck_assert_int_eq(write(c, buf, (size_t)n), n);
		}
		close(c);
		if (n > 0)
			return NULL;
	}
}

START_TEST(test_forward_unix_round_trip)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(in);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&in, sizeof(in)), 0);
	ck_assert_int_eq(listen(lfd, 16), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&in, &len), 0);
	GThread *server = g_thread_new("echo", echo_once, GINT_TO_POINTER(lfd));

	char *address = NULL;
	const cordon_host_forward_spec spec = { .size = sizeof(spec),
						.flags = CORDON_HOST_FORWARD_UNIX,
						.port = ntohs(in.sin_port),
						.socket = plain_socket,
						.ready = note_ready,
						.ctx = &address };
	cordon_host_forward *f = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(forward_start(&spec, &f, &err), 0);
	ck_assert_ptr_null(err);
	for (int i = 0; i < 500 && !g_atomic_pointer_get((gpointer *)&address); i++)
		g_usleep(10000);
	ck_assert_ptr_nonnull(address);
	ck_assert_msg(g_str_has_prefix(address, "unix:/"), "%s", address);
	const char *path = address + strlen("unix:");
	g_autofree char *dir = g_path_get_dirname(path);
	struct stat st;
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);

	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	g_strlcpy(un.sun_path, path, sizeof(un.sun_path));
	ck_assert_int_eq(connect(c, (struct sockaddr *)&un, sizeof(un)), 0);
	ck_assert_int_eq(write(c, "ping", 4), 4);
	char reply[16] = { 0 };
	size_t got = 0;
	for (ssize_t n; got < 9 && (n = read(c, reply + got, sizeof(reply) - 1 - got)) > 0;)
		got += (size_t)n;
	ck_assert_str_eq(reply, "pong:ping");
	close(c);
	g_thread_join(server);

	host->forward_stop(f);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(access(dir, F_OK), -1);
	g_free(address);
	close(lfd);
}
END_TEST

static Suite *hostservices_suite(void)
{
	Suite *s = suite_create("hostservices");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, test_table_complete);
	tcase_add_test(tc, test_getters);
	tcase_add_test(tc, test_strv_stable);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_getters_share_the_policy_grammar);
	tcase_add_test(tc, test_limits_sized);
	tcase_add_test(tc, test_config_error);
	tcase_add_test(tc, test_secret_env);
	tcase_add_test(tc, test_secret_file);
	tcase_add_test(tc, test_secret_literal_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("spawn");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_spawn_capture_and_exit);
	tcase_add_test(tc, test_spawn_minimal_env);
	tcase_add_test(tc, test_spawn_nothing_inherited);
	tcase_add_test(tc, test_spawn_stdin_and_cap);
	tcase_add_test(tc, test_spawn_timeout_kills_group);
	tcase_add_test(tc, test_spawn_leftover_does_not_block);
	tcase_add_test(tc, test_spawn_errors);
	tcase_add_test(tc, test_process_streams);
	tcase_add_test(tc, test_process_timeout_kill_and_group);
	tcase_add_test(tc, test_process_kill_during_wait);
	tcase_add_test(tc, test_process_release_and_errors);
	tcase_add_test(tc, test_find_program);
	tcase_add_test(tc, test_path_is_confined);
	suite_add_tcase(s, tc);
	tc = tcase_create("forward");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_forward_start_refuses_bad_specs);
	tcase_add_test(tc, test_forward_unix_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(hostservices_suite()); }
