/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Context creation: policy, drivers (built-in and plugins), tiers, probes. */
#include "config.h"

#include "context.h"
#include "loader.h"
#include "probecache.h"
#include "local/local.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------- */

cordon_options *cordon_options_new(void)
{
	cordon_options *o = g_new0(cordon_options, 1);
	o->extra_plugins = g_ptr_array_new_with_free_func(g_free);
	return o;
}

void cordon_options_free(cordon_options *o)
{
	if (!o)
		return;
	g_free(o->policy_path);
	g_free(o->policy_text);
	g_free(o->policy_name);
	g_free(o->plugin_dir);
	g_ptr_array_unref(o->extra_plugins);
	g_free(o);
}

static int bad_option(cordon_error **reterr, const char *what)
{
	return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument), "%s", what);
}

int cordon_options_set_policy_file(cordon_options *o, const char *path, cordon_error **reterr)
{
	if (!o || !path || !*path)
		return bad_option(reterr, "a policy file path is required");
	g_free(o->policy_path);
	o->policy_path = g_strdup(path);
	return 0;
}

int cordon_options_set_policy_text(cordon_options *o, const char *text, size_t len,
				   const char *name, cordon_error **reterr)
{
	if (!o || (!text && len))
		return bad_option(reterr, "policy text is required");
	g_free(o->policy_text);
	o->policy_text = g_malloc(len + 1);
	if (len)
		memcpy(o->policy_text, text, len);
	o->policy_text[len] = '\0';
	o->policy_len = len;
	g_free(o->policy_name);
	o->policy_name = g_strdup(name ? name : "<policy>");
	return 0;
}

int cordon_options_set_plugin_dir(cordon_options *o, const char *dir, cordon_error **reterr)
{
	if (!o || !dir || dir[0] != '/')
		return bad_option(reterr, "the plugin directory must be an absolute path");
	g_free(o->plugin_dir);
	o->plugin_dir = g_strdup(dir);
	return 0;
}

int cordon_options_add_plugin(cordon_options *o, const char *name, cordon_error **reterr)
{
	if (!o || !name || !*name)
		return bad_option(reterr, "a plugin name is required");
	g_ptr_array_add(o->extra_plugins, g_strdup(name));
	return 0;
}

void cordon_options_set_load_all_plugins(cordon_options *o, bool all)
{
	if (o)
		o->load_all_plugins = all;
}

void cordon_options_set_probe_cache(cordon_options *o, bool use)
{
	if (o)
		o->probe_cache = use;
}

/* ---- drivers --------------------------------------------------------------- */

static bool valid_driver_name(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!(g_ascii_islower(*s) || g_ascii_isdigit(*s) || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* The key a driver declares as its image (CORDON_PLUGIN_CONFIG_IMAGE; for a
 * plugin built before 1.2, its STRING key named "image", as 1.1 read it).
 * -EINVAL when it declares two: admission would not know which one runs. */
static int find_image_key(const cordon_plugin_driver *drv, const plugin_record *plugin,
			  const char **ret)
{
	bool before_1_2 = plugin && plugin->abi_minor < 2;
	*ret = NULL;
	for (const cordon_plugin_config_key *k = drv->config_keys; k && k->name; k++) {
		bool image = k->type == CORDON_PLUGIN_CONFIG_IMAGE ||
			     (before_1_2 && k->type == CORDON_PLUGIN_CONFIG_STRING &&
			      strcmp(k->name, "image") == 0);
		if (image && *ret)
			return -EINVAL;
		if (image)
			*ret = k->name;
	}
	return 0;
}

int context_register_driver(cordon_context *ctx, const plugin_record *plugin,
			    const cordon_plugin_driver *drv, cordon_error **reterr)
{
	const char *who = plugin ? plugin->name : "core";
	if (!drv || drv->size < offsetof(cordon_plugin_driver, configure))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(plugin_invalid),
				 "%s: driver table too small", who);
	/* A table from a newer plugin must not carry operations we would ignore. */
	for (size_t i = sizeof(cordon_plugin_driver); i < drv->size; i++)
		if (((const uint8_t *)drv)[i])
			return error_set(
				reterr, EPROTO, CORDON_ERROR_INVALID, ERRC(plugin_invalid),
				"%s: driver table has %u bytes, %zu known, and the rest is "
				"not zero",
				who, drv->size, sizeof(cordon_plugin_driver));
	if (!valid_driver_name(drv->name))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(plugin_invalid),
				 "%s: driver name must match [a-z0-9_-]+", who);
	/* Both files named: the admin has to remove one of them. */
	const driver_entry *other = context_find_driver(ctx, drv->name);
	if (other)
		return error_set(reterr, EEXIST, CORDON_ERROR_INVALID, ERRC(plugin_duplicate),
				 "%s: driver '%s' is already registered by %s",
				 plugin ? plugin->path : who, drv->name,
				 other->plugin ? other->plugin->path : "the core");
	/* Flags came with ABI 1.3: an older plugin's word is reserved, zero. */
	uint32_t known = !plugin || plugin->abi_minor >= 3
				 ? CORDON_PLUGIN_DRIVER_STDIN_FD | CORDON_PLUGIN_DRIVER_TTY |
					   CORDON_PLUGIN_DRIVER_LIMITS
				 : 0;
	/* And SERVE_UNIX with 1.4. */
	if (!plugin || plugin->abi_minor >= 4)
		known |= CORDON_PLUGIN_DRIVER_SERVE_UNIX | CORDON_PLUGIN_DRIVER_MOUNTS;
	/* EGRESS_PROXY with 1.5, and only with the listen op it serves. */
	if ((!plugin || plugin->abi_minor >= 5) && drv->listen)
		known |= CORDON_PLUGIN_DRIVER_EGRESS_PROXY;
	/* And WORKSPACE_RO with 1.5. */
	if (!plugin || plugin->abi_minor >= 5)
		known |= CORDON_PLUGIN_DRIVER_WORKSPACE_RO;
	if (drv->flags & ~known)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(plugin_invalid),
				 "%s: unknown driver flags 0x%x", who, drv->flags);
	const char *image_key;
	if (find_image_key(drv, plugin, &image_key) < 0)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(plugin_invalid),
				 "%s: driver %s declares more than one image key", who, drv->name);
	driver_entry *e = g_new0(driver_entry, 1);
	memcpy(&e->ops, drv, MIN((size_t)drv->size, sizeof(e->ops)));
	e->ops.size = sizeof(e->ops);
	e->plugin = plugin;
	e->image_key = image_key;
	if (drv == &local_driver)
		e->check_limits = local_check_limits;
	g_ptr_array_add(ctx->drivers, e);
	return 0;
}

const driver_entry *context_find_driver(const cordon_context *ctx, const char *name)
{
	for (guint i = 0; i < ctx->drivers->len; i++) {
		const driver_entry *e = ctx->drivers->pdata[i];
		if (strcmp(e->ops.name, name) == 0)
			return e;
	}
	return NULL;
}

tier_runtime *context_find_tier(const cordon_context *ctx, const char *name)
{
	for (guint i = 0; i < ctx->tiers->len; i++) {
		tier_runtime *t = ctx->tiers->pdata[i];
		if (strcmp(t->cfg->name, name) == 0)
			return t;
	}
	return NULL;
}

/* ---- tiers ------------------------------------------------------------------- */

static void tier_free(gpointer p)
{
	tier_runtime *t = p;
	if (t->state && t->driver->ops.unconfigure)
		t->driver->ops.unconfigure(t->state);
	g_free(t->unusable);
	/* Only an abandoned probe's thread is left here, and it may be the one freeing us. */
	if (t->prober)
		g_thread_unref(t->prober);
	g_cond_clear(&t->probe_done);
	g_mutex_clear(&t->lock);
	g_free(t);
}

/* Why a tier's driver is not registered: the loader's reason when a plugin of its name was
 * refused, else every refused plugin's (one of them may have been meant to provide it). */
static char *driver_missing(const cordon_context *ctx, const char *driver)
{
	for (guint i = 0; i < ctx->plugins->len; i++) {
		const plugin_record *p = ctx->plugins->pdata[i];
		if (strcmp(p->name, driver) == 0 && !p->loaded)
			return g_strdup_printf("driver %s was refused: %s", driver, p->detail);
	}
	GString *s = g_string_new(NULL);
	g_string_printf(s, "driver %s is not loaded", driver);
	const char *sep = " (refused: ";
	for (guint i = 0; i < ctx->plugins->len; i++) {
		const plugin_record *p = ctx->plugins->pdata[i];
		if (p->loaded)
			continue;
		g_string_append_printf(s, "%splugin %s: %s", sep, p->name, p->detail);
		sep = "; ";
	}
	if (*sep == ';')
		g_string_append_c(s, ')');
	return g_string_free(s, FALSE);
}

/* Every tier's driver keys, checked in one pass: all errors, in file order. */
static int check_sections(cordon_context *ctx, cordon_error **reterr)
{
	policy_errors *errs = policy_errors_new(ctx->policy->source);
	for (guint i = 0; i < ctx->policy->tiers->len; i++) {
		policy_tier *cfg = ctx->policy->tiers->pdata[i];
		const driver_entry *d = context_find_driver(ctx, cfg->driver);
		if (d)
			policy_check_section_into(ctx->policy, cfg, d->ops.config_keys,
						  d->image_key, errs);
	}
	return policy_errors_finish(errs, reterr);
}

static int configure_tier(cordon_context *ctx, policy_tier *cfg, cordon_error **reterr)
{
	tier_runtime *t = g_new0(tier_runtime, 1);
	g_mutex_init(&t->lock);
	g_cond_init(&t->probe_done);
	t->cfg = cfg;
	t->driver = context_find_driver(ctx, cfg->driver);
	g_ptr_array_add(ctx->tiers, t);
	if (!t->driver) {
		t->unusable = driver_missing(ctx, cfg->driver);
		return 0;
	}
	if (!t->driver->ops.configure)
		return 0;
	struct cordon_plugin_config pc = {
		cfg,
		ctx->policy->source,
		t->driver->ops.config_keys,
		t->driver->plugin ? t->driver->plugin->abi_minor : CORDON_PLUGIN_ABI_MINOR,
	};
	struct cordon_plugin_error perr = { 0 };
	int r = t->driver->ops.configure(t->driver->ops.data, &pc, &t->state, &perr);
	r = error_from_plugin(reterr, &perr, r, cfg->name);
	if (r < 0)
		error_prefix(reterr, "tier %s", cfg->name);
	return r;
}

/* ---- probes ------------------------------------------------------------------ */

/*
 * Each probe runs in a thread of its own so that tiers are probed at once and
 * a caller waits for them no longer than CONTEXT_PROBE_BOUND_US: a driver's
 * probe cannot be cancelled, and an engine that hangs would otherwise cost
 * its full timeout, tier after tier. Drivers' probes are thread-safe (the
 * driver ABI says so; the local and OCI drivers lock what they share).
 *
 * A probe thread given up on keeps the context alive (a reference taken by
 * the waiter that gave up) until it ends, since it runs on the tier's state;
 * the last reference frees the context, in that thread if it is the last.
 */

typedef struct probe_job {
	cordon_context *ctx;
	tier_runtime *t;
} probe_job;

static void context_unref(cordon_context *ctx);

static void probe_normalise(int r, cordon_plugin_probe *pr)
{
	pr->reason[sizeof(pr->reason) - 1] = '\0';
	/* A tier that cannot run enforces nothing; unknown modes are no claim. */
	pr->egress_enforced &= CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY) |
			       CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_GOVERNED);
	if (r < 0 || !pr->available)
		pr->egress_enforced = 0;
	if (r < 0) {
		pr->available = 0;
		if (!pr->reason[0])
			g_snprintf(pr->reason, sizeof(pr->reason), "probe failed: %s",
				   g_strerror(-r));
	}
	/* Never more than the scale allows; unknown counts as the weakest. */
	if (pr->containment < CORDON_CONTAINMENT_PROCESS_JAIL ||
	    pr->containment > CORDON_CONTAINMENT_REMOTE)
		pr->containment = CORDON_CONTAINMENT_PROCESS_JAIL;
}

static bool cache_key(const cordon_context *ctx, const tier_runtime *t, probecache_key *ret)
{
	if (!ctx->probe_cache)
		return false;
	*ret = (probecache_key){
		.policy_sha256 = ctx->policy->sha256,
		.tier = t->cfg->name,
		.driver = t->driver->ops.name,
		.plugin_path = t->driver->plugin ? t->driver->plugin->path : NULL,
	};
	return true;
}

static gpointer probe_thread(gpointer data)
{
	probe_job *job = data;
	tier_runtime *t = job->t;
	cordon_plugin_probe pr = { .size = sizeof(pr) };
	probecache_key key;
	bool keep = cache_key(job->ctx, t, &key);
	if (keep)
		probecache_collect_begin();
	int r = t->driver->ops.probe ? t->driver->ops.probe(t->state, &pr) : -ENOTSUP;
	g_autoptr(GPtrArray) deps = keep ? probecache_collect_end() : NULL;
	probe_normalise(r, &pr);
	if (keep && r >= 0)
		probecache_store(&key, &pr, deps);
	g_mutex_lock(&t->lock);
	t->probe = pr;
	t->probed_at = g_get_monotonic_time();
	t->probe_cached = false;
	t->probing = false;
	bool abandoned = t->abandoned;
	t->abandoned = false;
	g_cond_broadcast(&t->probe_done);
	g_mutex_unlock(&t->lock);
	/* Unless abandoned, t and the context are the waiters' from here on. */
	if (abandoned)
		context_unref(job->ctx);
	g_free(job);
	return NULL;
}

static bool probe_fresh(const tier_runtime *t, gint64 max_age_us)
{
	return max_age_us > 0 && t->probed_at &&
	       g_get_monotonic_time() - t->probed_at <= max_age_us;
}

/* With t->lock held. */
static void probe_start_locked(cordon_context *ctx, tier_runtime *t, gint64 max_age_us)
{
	if (t->probing || probe_fresh(t, max_age_us))
		return;
	/* This process's first answer may be another's, kept (probecache.h). */
	probecache_key key;
	if (!t->probed_at && cache_key(ctx, t, &key) && probecache_lookup(&key, &t->probe)) {
		t->probed_at = g_get_monotonic_time();
		t->probe_cached = true;
		return;
	}
	/* The previous thread is past the lock: joined, so none outlives what it used. */
	if (t->prober)
		g_thread_join(g_steal_pointer(&t->prober));
	probe_job *job = g_new(probe_job, 1);
	*job = (probe_job){ ctx, t };
	t->probing = true;
	t->prober = g_thread_new("cordon-probe", probe_thread, job);
}

void context_probe_start(cordon_context *ctx, tier_runtime *t, gint64 max_age_us)
{
	g_mutex_lock(&t->lock);
	probe_start_locked(ctx, t, max_age_us);
	g_mutex_unlock(&t->lock);
}

bool context_probe_forget_cached(cordon_context *ctx, tier_runtime *t)
{
	probecache_key key;
	g_mutex_lock(&t->lock);
	bool cached = t->probe_cached;
	if (cached) {
		t->probe_cached = false;
		t->probed_at = 0;
		t->probe = (cordon_plugin_probe){ .size = sizeof(t->probe) };
	}
	g_mutex_unlock(&t->lock);
	if (cached && cache_key(ctx, t, &key))
		probecache_forget(&key);
	return cached;
}

void context_probe(cordon_context *ctx, tier_runtime *t, gint64 max_age_us, gint64 deadline,
		   cordon_plugin_probe *ret)
{
	g_mutex_lock(&t->lock);
	/* An answer kept from another process stands in for one made now. */
	if (!probe_fresh(t, max_age_us) && !t->probed_at)
		probe_start_locked(ctx, t, max_age_us);
	if (!(t->probe_cached && t->probed_at) && !probe_fresh(t, max_age_us)) {
		/* A running probe is as fresh as one started now. */
		probe_start_locked(ctx, t, max_age_us);
		while (t->probing && g_cond_wait_until(&t->probe_done, &t->lock, deadline))
			;
		if (t->probing) {
			if (!t->abandoned) {
				g_atomic_int_inc(&ctx->refs);
				t->abandoned = true;
			}
			*ret = (cordon_plugin_probe){
				.size = sizeof(*ret), .containment = CORDON_CONTAINMENT_PROCESS_JAIL
			};
			g_snprintf(ret->reason, sizeof(ret->reason),
				   "the probe timed out: no answer within %d s",
				   (int)(CONTEXT_PROBE_BOUND_US / G_USEC_PER_SEC));
			g_mutex_unlock(&t->lock);
			return;
		}
	}
	*ret = t->probe;
	g_mutex_unlock(&t->lock);
}

/* Waits out the probe threads nobody gave up on, and joins them: they use the tier, and a
 * context is freed with every probe it was asked for answered and its thread gone. */
static void probes_settle(cordon_context *ctx)
{
	for (guint i = 0; i < ctx->tiers->len; i++) {
		tier_runtime *t = ctx->tiers->pdata[i];
		g_mutex_lock(&t->lock);
		while (t->probing && !t->abandoned)
			g_cond_wait(&t->probe_done, &t->lock);
		GThread *done = t->probing ? NULL : g_steal_pointer(&t->prober);
		g_mutex_unlock(&t->lock);
		/* Joined, not left to end on its own: nothing of it is running once we return. */
		if (done)
			g_thread_join(done);
	}
}

/* ---- the context --------------------------------------------------------------- */

static void plugin_record_free(gpointer p)
{
	plugin_record *r = p;
	g_free(r->name);
	g_free(r->path);
	g_free(r->detail);
	g_free(r->drivers);
	g_free(r->version);
	g_free(r->description);
	g_free(r->license);
	g_free(r);
}

static int load_policy(const cordon_options *o, cordon_policy **ret, cordon_error **reterr)
{
	if (o && o->policy_text)
		return policy_parse(o->policy_text, o->policy_len, o->policy_name, ret, reterr);
	if (o && o->policy_path)
		return policy_load_file(o->policy_path, ret, reterr);
	*ret = policy_new_default();
	return 0;
}

static const char *plugin_dir_of(const cordon_context *ctx, const cordon_options *o)
{
	return (o && o->plugin_dir)      ? o->plugin_dir
	       : ctx->policy->plugin_dir ? ctx->policy->plugin_dir
					 : CORDON_PLUGINDIR;
}

/* The policy file's directory and the plugin directory, which no workspace may hold. */
static void note_trusted_dirs(cordon_context *ctx, const cordon_options *o)
{
	int n = 0;
	if (o && o->policy_path && !o->policy_text)
		ctx->trusted_dirs[n++] = g_path_get_dirname(o->policy_path);
	ctx->trusted_dirs[n] = g_strdup(plugin_dir_of(ctx, o));
}

static int load_plugins(cordon_context *ctx, const cordon_options *o, cordon_error **reterr)
{
	const char *dir = plugin_dir_of(ctx, o);
	g_autoptr(GPtrArray) names = g_ptr_array_new();
	for (guint i = 0; i < ctx->policy->plugin_load->len; i++)
		g_ptr_array_add(names, ctx->policy->plugin_load->pdata[i]);
	for (guint i = 0; o && i < o->extra_plugins->len; i++)
		g_ptr_array_add(names, o->extra_plugins->pdata[i]);
	g_ptr_array_add(names, NULL);
	bool all = o && o->load_all_plugins;
	if (names->len == 1 && !all)
		return 0;
	/* Nothing installed yet: the build's own directory may not exist. One
	 * the host or the policy chose must. */
	bool chosen = (o && o->plugin_dir) || ctx->policy->plugin_dir;
	if (names->len == 1 && !chosen && access(dir, F_OK) < 0 && errno == ENOENT)
		return 0;
	return loader_load(ctx, dir, (const char *const *)names->pdata, all, reterr);
}

int cordon_context_new(const cordon_options *o, cordon_context **ret_ctx, cordon_error **reterr)
{
	if (!ret_ctx)
		return bad_option(reterr, "ret_ctx is required");
	cordon_context *ctx = g_new0(cordon_context, 1);
	ctx->plugins = g_ptr_array_new_with_free_func(plugin_record_free);
	ctx->drivers = g_ptr_array_new_with_free_func(g_free);
	ctx->tiers = g_ptr_array_new_with_free_func(tier_free);
	g_mutex_init(&ctx->audit_lock);
	ctx->refs = 1;
	ctx->probe_cache = o && o->probe_cache;

	int r = load_policy(o, &ctx->policy, reterr);
	if (r == 0)
		note_trusted_dirs(ctx, o);
	if (r >= 0)
		r = context_register_driver(ctx, NULL, &local_driver, reterr);
	for (size_t i = 0; r >= 0 && o && o->builtin_drivers && o->builtin_drivers[i]; i++)
		r = context_register_driver(ctx, NULL, o->builtin_drivers[i], reterr);
	if (r >= 0)
		r = load_plugins(ctx, o, reterr);
	if (r >= 0)
		r = check_sections(ctx, reterr);
	for (guint i = 0; r >= 0 && i < ctx->policy->tiers->len; i++)
		r = configure_tier(ctx, ctx->policy->tiers->pdata[i], reterr);
	if (r < 0) {
		cordon_context_free(ctx);
		return r;
	}
	*ret_ctx = ctx;
	return 0;
}

static void context_unref(cordon_context *ctx)
{
	if (!g_atomic_int_dec_and_test(&ctx->refs))
		return;
	/* Tiers first: unconfigure runs driver code that must still be mapped.
	 * Plugin modules stay resident (never unloaded). */
	g_ptr_array_unref(ctx->tiers);
	g_ptr_array_unref(ctx->drivers);
	g_ptr_array_unref(ctx->plugins);
	policy_free(ctx->policy);
	g_mutex_clear(&ctx->audit_lock);
	for (size_t i = 0; i < G_N_ELEMENTS(ctx->trusted_dirs); i++)
		g_free(ctx->trusted_dirs[i]);
	g_free(ctx);
}

void cordon_context_free(cordon_context *ctx)
{
	if (!ctx)
		return;
	probes_settle(ctx);
	context_unref(ctx);
}

/* ---- listings -------------------------------------------------------------------- */

static const plugin_record *plugin_at(const cordon_context *ctx, size_t i)
{
	return ctx && i < ctx->plugins->len ? ctx->plugins->pdata[i] : NULL;
}

size_t cordon_context_plugin_count(const cordon_context *ctx)
{
	return ctx ? ctx->plugins->len : 0;
}

const char *cordon_context_plugin_name(const cordon_context *ctx, size_t i)
{
	const plugin_record *p = plugin_at(ctx, i);
	return p ? p->name : NULL;
}

bool cordon_context_plugin_loaded(const cordon_context *ctx, size_t i)
{
	const plugin_record *p = plugin_at(ctx, i);
	return p && p->loaded;
}

const char *cordon_context_plugin_detail(const cordon_context *ctx, size_t i)
{
	const plugin_record *p = plugin_at(ctx, i);
	return p ? p->detail : NULL;
}

const char *cordon_context_plugin_drivers(const cordon_context *ctx, size_t i)
{
	const plugin_record *p = plugin_at(ctx, i);
	return p ? (p->drivers ? p->drivers : "") : NULL;
}

size_t cordon_context_tier_count(const cordon_context *ctx) { return ctx ? ctx->tiers->len : 0; }

static const tier_runtime *tier_at(const cordon_context *ctx, size_t i)
{
	return ctx && i < ctx->tiers->len ? ctx->tiers->pdata[i] : NULL;
}

const char *cordon_context_tier_name(const cordon_context *ctx, size_t i)
{
	const tier_runtime *t = tier_at(ctx, i);
	return t ? t->cfg->name : NULL;
}

const char *cordon_context_tier_driver(const cordon_context *ctx, size_t i)
{
	const tier_runtime *t = tier_at(ctx, i);
	return t ? t->cfg->driver : NULL;
}

int cordon_context_gc(cordon_context *ctx, cordon_error **reterr)
{
	if (!ctx)
		return bad_option(reterr, "a context is required");
	int removed = 0, failed = 0;
	for (guint i = 0; i < ctx->tiers->len; i++) {
		tier_runtime *t = ctx->tiers->pdata[i];
		if (t->unusable || !t->driver->ops.gc)
			continue;
		struct cordon_plugin_error perr = { 0 };
		int r = t->driver->ops.gc(t->state, &perr);
		r = error_from_plugin(reterr, &perr, r, "gc");
		if (r < 0) {
			error_prefix(reterr, "tier %s", t->cfg->name);
			failed = failed ? failed : r;
			continue;
		}
		removed += r;
	}
	return failed ? failed : removed;
}

struct cordon_probe_report {
	cordon_plugin_probe probe;
	const char *origin;     /* the plugin's name (borrowed from the context), "built-in" */
	cordon_containment cap; /* policy_claim_cap; 0: none */
};

int cordon_context_probe_tier(cordon_context *ctx, size_t i, cordon_probe_report **ret,
			      cordon_error **reterr)
{
	tier_runtime *t = (tier_runtime *)tier_at(ctx, i);
	if (!t || !ret)
		return bad_option(reterr, "no such tier");
	cordon_probe_report *rep = g_new0(cordon_probe_report, 1);
	const plugin_record *plugin = t->driver ? t->driver->plugin : NULL;
	bool dflt;
	rep->origin = !t->driver ? NULL : plugin ? plugin->name : "built-in";
	bool third_party = plugin && !policy_plugin_is_cordons(plugin->name, plugin->version);
	rep->cap = policy_claim_cap(t->cfg, third_party, &dflt);
	if (t->unusable) {
		rep->probe.containment = CORDON_CONTAINMENT_PROCESS_JAIL;
		g_strlcpy(rep->probe.reason, t->unusable, sizeof(rep->probe.reason));
	} else {
		context_probe(ctx, t, 0, g_get_monotonic_time() + CONTEXT_PROBE_BOUND_US,
			      &rep->probe);
	}
	*ret = rep;
	return 0;
}

bool cordon_probe_report_available(const cordon_probe_report *r) { return r && r->probe.available; }

cordon_containment cordon_probe_report_containment(const cordon_probe_report *r)
{
	return r ? (cordon_containment)r->probe.containment : CORDON_CONTAINMENT_PROCESS_JAIL;
}

const char *cordon_probe_report_origin(const cordon_probe_report *r)
{
	return r ? r->origin : NULL;
}

cordon_containment cordon_probe_report_max_containment(const cordon_probe_report *r)
{
	return r ? r->cap : 0;
}

const char *cordon_probe_report_reason(const cordon_probe_report *r)
{
	return r ? r->probe.reason : "";
}

void cordon_probe_report_free(cordon_probe_report *r) { g_free(r); }
