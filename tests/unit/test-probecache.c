/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The probe cache across processes (core/probecache.c): what keeps an answer, what drops
 * it (each dependency), what it refuses to trust, and the one retry of an open made on a
 * kept "available" that proved wrong. A context stands in for a process: the cache is
 * only read when a tier has no answer in memory yet. */
#include "config.h"

#include "testutil.h"
#include "context.h"
#include "probecache.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a driver whose probe and open the tests steer ------------------------------- */

static gint probes, opens, available = 1, open_fails;
static char dep_path[512];

static int cache_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			   cordon_plugin_error *err)
{
	(void)data, (void)cfg, (void)err;
	*ret_tier = g_new0(int, 1);
	return 0;
}

static void cache_unconfigure(void *tier) { g_free(tier); }

static int cache_probe(void *tier, cordon_plugin_probe *ret)
{
	(void)tier;
	g_atomic_int_inc(&probes);
	cordon_host_services.probe_depends(dep_path);
	ret->available = (uint32_t)g_atomic_int_get(&available);
	ret->containment = CORDON_PLUGIN_CONTAINMENT_KERNEL;
	ret->egress_enforced = CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY);
	g_strlcpy(ret->reason, ret->available ? "steered: up" : "steered: down",
		  sizeof(ret->reason));
	return 0;
}

static int cache_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		      cordon_plugin_error *err)
{
	(void)tier, (void)spec;
	g_atomic_int_inc(&opens);
	if (g_atomic_int_get(&open_fails))
		return cordon_host_services.error_set(err, EIO, CORDON_PLUGIN_ERROR_TRANSIENT,
						      "tier_unavailable",
						      "steered: the engine went away");
	*ret_sandbox = g_new0(int, 1);
	return 0;
}

static void cache_close(void *sandbox) { g_free(sandbox); }

static const cordon_plugin_config_key cache_keys[] = { { NULL, 0, 0 } };

static const cordon_plugin_driver cache_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "tcache",
	.config_keys = cache_keys,
	.configure = cache_configure,
	.unconfigure = cache_unconfigure,
	.probe = cache_probe,
	.open = cache_open,
	.close = cache_close,
};

static const cordon_plugin_driver *const builtin[] = { &cache_driver, NULL };

static const char policy[] = "cordon: 1\n"
			     "tiers:\n"
			     "  steered: {driver: tcache}\n"
			     "trust:\n"
			     "  semi-trusted: {tiers: [steered]}\n";

static char *dir;

static void setup(void)
{
	dir = g_dir_make_tmp("cordon-probecache-XXXXXX", NULL);
	ck_assert(dir);
	ck_assert_int_eq(chmod(dir, 0700), 0);
	probecache_test_set_dir(dir);
	probecache_test_set_now(0);
	g_snprintf(dep_path, sizeof(dep_path), "%s/engine.sock", dir);
	ck_assert(g_file_set_contents(dep_path, "socket stand-in", -1, NULL));
	g_atomic_int_set(&probes, 0);
	g_atomic_int_set(&opens, 0);
	g_atomic_int_set(&available, 1);
	g_atomic_int_set(&open_fails, 0);
}

static void teardown(void)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	g_clear_pointer(&dir, g_free);
	probecache_test_set_dir(NULL);
}

/* One "process": a context with the cache on (or off), one probe of the tier. */
static cordon_plugin_probe probe_once(const char *text, bool cache)
{
	cordon_options *o = cordon_options_new();
	ck_assert_int_eq(cordon_options_set_policy_text(o, text, strlen(text), "cache.yaml", NULL),
			 0);
	o->builtin_drivers = builtin;
	cordon_options_set_probe_cache(o, cache);
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_context_new(o, &ctx, &err) == 0, "%s",
		      err ? cordon_error_get_message(err) : "");
	cordon_options_free(o);
	cordon_plugin_probe pr;
	context_probe(ctx, ctx->tiers->pdata[0], 0, g_get_monotonic_time() + 5 * G_USEC_PER_SEC,
		      &pr);
	cordon_context_free(ctx);
	return pr;
}

START_TEST(test_kept_across_processes)
{
	cordon_plugin_probe a = probe_once(policy, true);
	ck_assert_uint_eq(a.available, 1);
	cordon_plugin_probe b = probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 1); /* the second came from the cache */
	ck_assert_uint_eq(b.available, 1);
	ck_assert_uint_eq(b.containment, CORDON_PLUGIN_CONTAINMENT_KERNEL);
	ck_assert_str_eq(b.reason, "steered: up");
	/* What the tier enforces of egress is kept too: a rule on egress judges a
	 * kept answer as it would a fresh one. */
	ck_assert_uint_eq(b.egress_enforced, CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY));
	/* The entry is private: one file, mode 0600, in a 0700 directory of ours. */
	g_autofree char *probes_dir = g_build_filename(dir, "cordon", "probes", NULL);
	struct stat st;
	ck_assert_int_eq(stat(probes_dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	GDir *d = g_dir_open(probes_dir, 0, NULL);
	const char *name = g_dir_read_name(d);
	ck_assert(name);
	g_autofree char *entry = g_build_filename(probes_dir, name, NULL);
	ck_assert_int_eq(stat(entry, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert(!g_dir_read_name(d));
	g_dir_close(d);
}
END_TEST

START_TEST(test_off_by_default)
{
	probe_once(policy, false);
	probe_once(policy, false);
	ck_assert_int_eq(g_atomic_int_get(&probes), 2);
}
END_TEST

START_TEST(test_dependency_changed)
{
	probe_once(policy, true);
	/* The engine's socket was made again (a daemon restart): another inode. */
	ck_assert_int_eq(g_unlink(dep_path), 0);
	ck_assert(g_file_set_contents(dep_path, "socket stand-in", -1, NULL));
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 2);
	/* and gone */
	ck_assert_int_eq(g_unlink(dep_path), 0);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 3);
}
END_TEST

START_TEST(test_policy_changed)
{
	probe_once(policy, true);
	g_autofree char *other = g_strconcat(policy, "# an edit\n", NULL);
	probe_once(other, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 2);
}
END_TEST

START_TEST(test_too_old)
{
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	probecache_test_set_now(now);
	probe_once(policy, true);
	probecache_test_set_now(now + PROBECACHE_MAX_AGE_S);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 1); /* at the bound: still kept */
	probecache_test_set_now(now + PROBECACHE_MAX_AGE_S + 1);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 2);
	/* from the future (a clock set back): not trusted either */
	probecache_test_set_now(now - 10);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 3);
}
END_TEST

START_TEST(test_unavailable_not_kept)
{
	g_atomic_int_set(&available, 0);
	cordon_plugin_probe a = probe_once(policy, true);
	ck_assert_uint_eq(a.available, 0);
	g_atomic_int_set(&available, 1);
	cordon_plugin_probe b = probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 2); /* the fix shows at once */
	ck_assert_uint_eq(b.available, 1);
}
END_TEST

/* What another could have written is not read: a group-writable directory, an entry of
 * another mode, a symlink for an entry. */
START_TEST(test_untrusted_not_read)
{
	probe_once(policy, true);
	g_autofree char *probes_dir = g_build_filename(dir, "cordon", "probes", NULL);
	GDir *d = g_dir_open(probes_dir, 0, NULL);
	g_autofree char *entry = g_build_filename(probes_dir, g_dir_read_name(d), NULL);
	g_dir_close(d);
	ck_assert_int_eq(chmod(entry, 0644), 0);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 2);
	/* the second probe wrote a fresh 0600 entry; a link in its place is not followed */
	g_autofree char *target = g_strconcat(entry, ".target", NULL);
	ck_assert_int_eq(rename(entry, target), 0);
	ck_assert_int_eq(symlink(target, entry), 0);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 3);
	ck_assert_int_eq(chmod(probes_dir, 0770), 0);
	probe_once(policy, true);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 5); /* neither read nor written there */
}
END_TEST

/* A kept "available" that proves wrong at open: forgotten, probed afresh, the open retried
 * once; here the fresh probe says the tier is down, so the request is refused with the
 * fresh reason, and the next process probes again. */
START_TEST(test_stale_available_retried)
{
	probe_once(policy, true);
	g_atomic_int_set(&available, 0);
	g_atomic_int_set(&open_fails, 1);
	cordon_options *o = cordon_options_new();
	ck_assert_int_eq(
		cordon_options_set_policy_text(o, policy, strlen(policy), "cache.yaml", NULL), 0);
	o->builtin_drivers = builtin;
	cordon_options_set_probe_cache(o, true);
	cordon_context *ctx = NULL;
	ck_assert_int_eq(cordon_context_new(o, &ctx, NULL), 0);
	cordon_options_free(o);
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_int_eq(g_atomic_int_get(&opens), 1);  /* once, on the kept answer */
	ck_assert_int_eq(g_atomic_int_get(&probes), 2); /* then asked afresh */
	ck_assert_msg(strstr(cordon_error_get_message(err), "steered: down"), "%s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	/* up again, and the open works: the retry opens on the fresh answer */
	g_atomic_int_set(&available, 1);
	g_atomic_int_set(&open_fails, 0);
	cordon_context_free(ctx);
	probe_once(policy, true);
	ck_assert_int_eq(g_atomic_int_get(&probes), 3); /* the wrong answer was forgotten */
	cordon_request_free(req);
}
END_TEST

/* An open that fails on the fresh answer too is the driver's own failure: one retry,
 * never more. */
START_TEST(test_one_retry_only)
{
	probe_once(policy, true);
	g_atomic_int_set(&open_fails, 1);
	cordon_options *o = cordon_options_new();
	ck_assert_int_eq(
		cordon_options_set_policy_text(o, policy, strlen(policy), "cache.yaml", NULL), 0);
	o->builtin_drivers = builtin;
	cordon_options_set_probe_cache(o, true);
	cordon_context *ctx = NULL;
	ck_assert_int_eq(cordon_context_new(o, &ctx, NULL), 0);
	cordon_options_free(o);
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, &err), 0);
	ck_assert_int_eq(g_atomic_int_get(&opens), 2);
	ck_assert_int_eq(g_atomic_int_get(&probes), 2);
	ck_assert_msg(strstr(cordon_error_get_message(err), "the engine went away"), "%s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	/* with nothing kept (the cache off) a failed open is not retried at all */
	cordon_context_free(ctx);
	o = cordon_options_new();
	ck_assert_int_eq(
		cordon_options_set_policy_text(o, policy, strlen(policy), "cache.yaml", NULL), 0);
	o->builtin_drivers = builtin;
	ck_assert_int_eq(cordon_context_new(o, &ctx, NULL), 0);
	cordon_options_free(o);
	ck_assert_int_lt(cordon_sandbox_open(ctx, req, &sb, NULL), 0);
	ck_assert_int_eq(g_atomic_int_get(&opens), 3);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

static Suite *probecache_suite(void)
{
	Suite *s = suite_create("probecache");
	TCase *tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_kept_across_processes);
	tcase_add_test(tc, test_off_by_default);
	tcase_add_test(tc, test_dependency_changed);
	tcase_add_test(tc, test_policy_changed);
	tcase_add_test(tc, test_too_old);
	tcase_add_test(tc, test_unavailable_not_kept);
	tcase_add_test(tc, test_untrusted_not_read);
	tcase_add_test(tc, test_stale_available_retried);
	tcase_add_test(tc, test_one_retry_only);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(probecache_suite()); }
