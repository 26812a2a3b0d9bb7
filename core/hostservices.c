/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host services table: everything a plugin gets from the core. */
#include "config.h"

#include "audit.h"

#include "context.h"
#include "hostspawn.h"
#include "net/forward.h"
#include "probecache.h"
#include "secret.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void host_log(uint32_t level, const char *plugin, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	/* Library code logs at debug only; the host decides (G_MESSAGES_DEBUG). */
	g_debug("[%s] %s", plugin ? plugin : "core", msg);
}

static int host_error_set(cordon_plugin_error *err, int errnum, uint32_t cls, const char *code,
			  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = error_setv(err ? &err->err : NULL, errnum, cls, code, fmt, ap);
	va_end(ap);
	return r;
}

static void *host_alloc(size_t n) { return g_malloc0(n ? n : 1); }
static void host_free(void *p) { g_free(p); }
static char *host_strdup(const char *s) { return g_strdup(s); }

static int host_register_driver(cordon_plugin_registrar *reg, const cordon_plugin_driver *drv)
{
	if (!reg)
		return -EINVAL;
	int r = context_register_driver(reg->ctx, reg->plugin, drv, &reg->err);
	if (r == 0)
		reg->count++;
	return r;
}

static bool host_path_is_confined(const char *path)
{
	if (!path || !*path || path[0] == '/' || strlen(path) >= 4096)
		return false;
	g_auto(GStrv) parts = g_strsplit(path, "/", -1);
	for (size_t i = 0; parts[i]; i++)
		if (strcmp(parts[i], "..") == 0)
			return false;
	return true;
}

/* ---- a tier's section ------------------------------------------------------ */

static const cfg_node *section_of(const cordon_plugin_config *cfg)
{
	return cfg && cfg->tier ? cfg->tier->section : NULL;
}

static const cordon_plugin_config_key *declared(const cordon_plugin_config *cfg, const char *key)
{
	for (const cordon_plugin_config_key *k = cfg ? cfg->keys : NULL; k && k->name; k++)
		if (strcmp(k->name, key) == 0)
			return k;
	return NULL;
}

/* The value node of key: 1 and *ret when set, 0 when absent (`key:`,
 * `key: ~` and `key: null` too, as YAML means them). The getters read it
 * with the policy's own readers (policy_read_*): one grammar, the one the
 * policy was checked with. */
static int lookup(const cordon_plugin_config *cfg, const char *key, const cfg_node **ret)
{
	if (!key)
		return -EINVAL;
	const cfg_node *n = cfg_map_get(section_of(cfg), key);
	if (!n || cfg_is_null(n))
		return 0;
	*ret = n;
	return 1;
}

static const char *host_config_tier_name(const cordon_plugin_config *cfg)
{
	return cfg && cfg->tier ? cfg->tier->name : NULL;
}

static int host_config_string(const cordon_plugin_config *cfg, const char *key, const char **ret)
{
	const cordon_plugin_config_key *k = declared(cfg, key);
	/* A secret is read only through config_secret, so it is never a plain string. */
	if (k && k->type == CORDON_PLUGIN_CONFIG_SECRET)
		return -EPERM;
	const cfg_node *n = NULL;
	const char *s = NULL;
	int r = lookup(cfg, key, &n);
	if (r <= 0)
		return r;
	if (policy_read_string(n, &s) < 0)
		return -EINVAL;
	if (ret)
		*ret = s;
	return 1;
}

static int host_config_bool(const cordon_plugin_config *cfg, const char *key, bool *ret)
{
	const cfg_node *n = NULL;
	bool v;
	int r = lookup(cfg, key, &n);
	if (r <= 0)
		return r;
	if (policy_read_bool(n, &v) < 0)
		return -EINVAL;
	if (ret)
		*ret = v;
	return 1;
}

static int host_config_int(const cordon_plugin_config *cfg, const char *key, int64_t *ret)
{
	const cfg_node *n = NULL;
	const char *why;
	int64_t v;
	int r = lookup(cfg, key, &n);
	if (r <= 0)
		return r;
	if (policy_read_int(n, &v, &why) < 0)
		return -EINVAL;
	if (ret)
		*ret = v;
	return 1;
}

/* SIZE and DURATION keys use the policy's unit grammar; others are plain. */
static int host_config_u64(const cordon_plugin_config *cfg, const char *key, uint64_t *ret)
{
	const cfg_node *n = NULL;
	const char *why;
	uint64_t v;
	int r = lookup(cfg, key, &n);
	if (r <= 0)
		return r;
	const cordon_plugin_config_key *k = declared(cfg, key);
	if (policy_read_u64(n, k ? k->type : CORDON_PLUGIN_CONFIG_INT, &v, &why) < 0)
		return -EINVAL;
	if (ret)
		*ret = v;
	return 1;
}

/* A NULL-terminated view of a sequence of scalars. Cached on the node so that
 * it lives as long as the policy, as the getters promise. */
static int host_config_strv(const cordon_plugin_config *cfg, const char *key,
			    const char *const **ret)
{
	const cfg_node *n = NULL;
	int r = lookup(cfg, key, &n);
	if (r <= 0)
		return r;
	if (n->kind != CFG_SEQ)
		return -EINVAL;
	const char *s;
	for (guint i = 0; i < n->items->len; i++)
		if (policy_read_string(n->items->pdata[i], &s) < 0)
			return -EINVAL;
	cfg_node *node = (cfg_node *)n; /* the cache is the only thing written */
	char **v = g_atomic_pointer_get(&node->strv);
	if (!v) {
		char **fresh = g_new0(char *, n->items->len + 1);
		for (guint i = 0; i < n->items->len; i++)
			fresh[i] = ((const cfg_node *)n->items->pdata[i])->scalar;
		/* Another thread may have won: use its array, drop ours. */
		if (!g_atomic_pointer_compare_and_exchange(&node->strv, NULL, fresh))
			g_free(fresh);
		v = g_atomic_pointer_get(&node->strv);
	}
	if (ret)
		*ret = (const char *const *)v;
	return 1;
}

/* "file:line:col: tiers.NAME.KEY: message", class invalid, code policy_invalid. */
static int config_errorv(const cordon_plugin_config *cfg, const char *key, cordon_error **reterr,
			 const char *fmt, va_list ap) G_GNUC_PRINTF(4, 0);
static int config_errorv(const cordon_plugin_config *cfg, const char *key, cordon_error **reterr,
			 const char *fmt, va_list ap)
{
	const cfg_node *sec = section_of(cfg);
	const cfg_node *at = key ? cfg_map_get(sec, key) : NULL;
	if (!at)
		at = sec;
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	g_autofree char *path = NULL;
	if (sec && sec->path && *sec->path)
		path = key ? g_strdup_printf("%s.%s", sec->path, key) : g_strdup(sec->path);
	else
		path = g_strdup(key ? key : "");
	const char *source = cfg && cfg->source ? cfg->source : "<policy>";
	if (at && at->line)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(policy_invalid),
				 "%s:%u:%u: %s: %s", source, at->line, at->col, path, msg);
	return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(policy_invalid), "%s: %s: %s",
			 source, path, msg);
}

static int host_config_error(const cordon_plugin_config *cfg, const char *key,
			     cordon_plugin_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = config_errorv(cfg, key, err ? &err->err : NULL, fmt, ap);
	va_end(ap);
	return r;
}

static int config_fail(const cordon_plugin_config *cfg, const char *key, cordon_plugin_error *err,
		       const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static int config_fail(const cordon_plugin_config *cfg, const char *key, cordon_plugin_error *err,
		       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = config_errorv(cfg, key, err ? &err->err : NULL, fmt, ap);
	va_end(ap);
	return r;
}

static int host_config_secret(const cordon_plugin_config *cfg, const char *key, char **ret,
			      cordon_plugin_error *err)
{
	const cfg_node *n = NULL;
	int r = lookup(cfg, key, &n);
	if (r <= 0)
		return r;
	char why[PATH_MAX + 128];
	char *val = NULL;
	if (secret_resolve(n, false, &val, why, sizeof(why)) < 0)
		return config_fail(cfg, key, err, "%s", why);
	*ret = val;
	return 1;
}

/* How much of *ret the plugin owns: a 1.1 plugin's struct is the 64 bytes
 * it was built with, whatever its last word holds (then "reserved"); a 1.2
 * plugin says, and never less than the 1.1 layout every plugin has. */
static size_t limits_room(const cordon_plugin_config *cfg, const cordon_plugin_limits *ret)
{
	const size_t v1_1 = offsetof(cordon_plugin_limits, size) + sizeof(ret->size);
	if (!cfg || cfg->abi_minor < 2 || ret->size < v1_1)
		return v1_1;
	return ret->size;
}

static void host_config_limits(const cordon_plugin_config *cfg, cordon_plugin_limits *ret)
{
	if (!ret)
		return;
	size_t n = MIN(limits_room(cfg, ret), sizeof(*ret));
	cordon_plugin_limits l = { 0 };
	if (cfg && cfg->tier)
		l = cfg->tier->limits;
	l.size = (uint32_t)n;
	memcpy(ret, &l, n);
}

/* ---- values shared with <cordon/cordon.h> ---------------------------------- */

/* The core hands its own values to plugins as they are (sandbox.c copies
 * trust, egress, limits and run flags into the specs; error.c takes a
 * plugin's class as a cordon_error_class): the two headers must agree. */
#define SAME(pub, plug) G_STATIC_ASSERT((uint32_t)(pub) == (uint32_t)(plug))
SAME(CORDON_CONTAINMENT_PROCESS_JAIL, CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL);
SAME(CORDON_CONTAINMENT_KERNEL, CORDON_PLUGIN_CONTAINMENT_KERNEL);
SAME(CORDON_CONTAINMENT_CONTAINER, CORDON_PLUGIN_CONTAINMENT_CONTAINER);
SAME(CORDON_CONTAINMENT_USERSPACE_KERNEL, CORDON_PLUGIN_CONTAINMENT_USERSPACE_KERNEL);
SAME(CORDON_CONTAINMENT_MICROVM, CORDON_PLUGIN_CONTAINMENT_MICROVM);
SAME(CORDON_CONTAINMENT_REMOTE, CORDON_PLUGIN_CONTAINMENT_REMOTE);
SAME(CORDON_ERROR_TERMINAL, CORDON_PLUGIN_ERROR_TERMINAL);
SAME(CORDON_ERROR_FORBIDDEN, CORDON_PLUGIN_ERROR_FORBIDDEN);
SAME(CORDON_ERROR_TRANSIENT, CORDON_PLUGIN_ERROR_TRANSIENT);
SAME(CORDON_ERROR_CANCELLED, CORDON_PLUGIN_ERROR_CANCELLED);
SAME(CORDON_ERROR_INVALID, CORDON_PLUGIN_ERROR_INVALID);
SAME(CORDON_TRUST_TRUSTED, CORDON_PLUGIN_TRUST_TRUSTED);
SAME(CORDON_TRUST_SEMI_TRUSTED, CORDON_PLUGIN_TRUST_SEMI_TRUSTED);
SAME(CORDON_TRUST_UNTRUSTED, CORDON_PLUGIN_TRUST_UNTRUSTED);
SAME(CORDON_EGRESS_DENY, CORDON_PLUGIN_EGRESS_DENY);
SAME(CORDON_EGRESS_GOVERNED, CORDON_PLUGIN_EGRESS_GOVERNED);
SAME(CORDON_EGRESS_ALLOW, CORDON_PLUGIN_EGRESS_ALLOW);
SAME(CORDON_LIMIT_WALL_MS, CORDON_PLUGIN_LIMIT_WALL_MS);
SAME(CORDON_LIMIT_MEMORY, CORDON_PLUGIN_LIMIT_MEMORY);
SAME(CORDON_LIMIT_PIDS, CORDON_PLUGIN_LIMIT_PIDS);
SAME(CORDON_LIMIT_CPU_MILLI, CORDON_PLUGIN_LIMIT_CPU_MILLI);
SAME(CORDON_LIMIT_OUTPUT, CORDON_PLUGIN_LIMIT_OUTPUT);
SAME(CORDON_LIMIT_NOFILE, CORDON_PLUGIN_LIMIT_NOFILE);
SAME(CORDON_LIMIT_FSIZE, CORDON_PLUGIN_LIMIT_FSIZE);
SAME(CORDON_LIMIT_COUNT_, CORDON_PLUGIN_LIMIT_COUNT);
SAME(CORDON_RUN_LAST, CORDON_PLUGIN_RUNREQ_LAST);
#undef SAME

/* ---- probe dependencies ---------------------------------------------------------- */

/* A program found during a probe is one of its answer's dependencies (probecache.h). */
static char *host_find_program(const char *name)
{
	char *path = hostspawn_find_program(name);
	probecache_note(path);
	return path;
}

static void host_probe_depends(const char *path) { probecache_note(path); }

/* ---- serve forwarders (ABI 1.6) ------------------------------------------------------ */

/* The core's forwarder (net/forward.h), for a driver that can make sockets in its
 * sandbox's network namespace. */
struct cordon_host_forward {
	net_forward *fwd;
};

static int host_forward_start(const cordon_host_forward_spec *spec, cordon_host_forward **ret,
			      cordon_plugin_error *err)
{
	if (!spec || !ret || spec->size < sizeof(*spec) || !spec->port || !spec->socket ||
	    !spec->ready || (spec->flags & ~(uint32_t)CORDON_HOST_FORWARD_UNIX))
		return host_error_set(err, EINVAL, CORDON_PLUGIN_ERROR_INVALID,
				      ERRC(invalid_argument),
				      "forward_start: a whole spec (ABI 1.6) with a port, a socket "
				      "and a ready callback, and no unknown flag");
	char why[256];
	net_forward *f = NULL;
	int r = net_forward_start(spec->port, spec->flags & CORDON_HOST_FORWARD_UNIX, spec->socket,
				  spec->ready, spec->ctx, &f, why, sizeof(why));
	if (r < 0)
		return host_error_set(err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				      "serving port %u: %s", (unsigned)spec->port, why);
	*ret = g_new0(cordon_host_forward, 1);
	(*ret)->fwd = f;
	return 0;
}

static void host_forward_stop(cordon_host_forward *f)
{
	if (!f)
		return;
	net_forward_stop(f->fwd);
	g_free(f);
}

/* ---- the table --------------------------------------------------------------- */

/* Field order is plugin.h's, so that a misplaced entry shows up in review. */
const cordon_host cordon_host_services = {
	.size = sizeof(cordon_host),
	.abi_major = CORDON_PLUGIN_ABI_MAJOR,
	.abi_minor = CORDON_PLUGIN_ABI_MINOR,
	.reserved = 0,
	.log = host_log,
	.error_set = host_error_set,
	.alloc = host_alloc,
	.free = host_free,
	.strdup = host_strdup,
	.register_driver = host_register_driver,
	.config_tier_name = host_config_tier_name,
	.config_string = host_config_string,
	.config_bool = host_config_bool,
	.config_int = host_config_int,
	.config_u64 = host_config_u64,
	.config_strv = host_config_strv,
	.config_secret = host_config_secret,
	.config_error = host_config_error,
	.config_limits = host_config_limits,
	.spawn = hostspawn_run,
	.find_program = host_find_program,
	.path_is_confined = host_path_is_confined,
	.process_spawn = hostspawn_process,  /* ABI 1.2 */
	.probe_depends = host_probe_depends, /* ABI 1.3 */
	.egress_audit = audit_egress,        /* ABI 1.4 */
	.forward_start = host_forward_start, /* ABI 1.6 */
	.forward_stop = host_forward_stop,
};
