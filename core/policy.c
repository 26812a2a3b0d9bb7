/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy: schema v1 read strictly from the positioned YAML tree.
 * docs/policy.md is the contract; every rule here has a line there. */
#include "config.h"

#include "policy.h"

#include "filetrust.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define POLICY_MAX_ERRORS 50
#define NAME_MAX_LEN 64

cordon_containment policy_builtin_minimum(cordon_trust t)
{
	switch (t) {
	case CORDON_TRUST_TRUSTED: return CORDON_CONTAINMENT_PROCESS_JAIL;
	case CORDON_TRUST_SEMI_TRUSTED: return CORDON_CONTAINMENT_KERNEL;
	default: return CORDON_CONTAINMENT_MICROVM;
	}
}

const char *policy_default_text(void)
{
	return "# The built-in default policy of cordon, used when no policy is given.\n"
	       "# Trusted work runs in the process jail, semi-trusted work under kernel\n"
	       "# confinement; untrusted work needs a microVM, which this policy does not\n"
	       "# configure, so it is refused with the reason until a policy adds one.\n"
	       "cordon: 1\n"
	       "tiers:\n"
	       "  jail:   {driver: local, confine: none}\n"
	       "  kernel: {driver: local, confine: kernel}\n"
	       "trust:\n"
	       "  trusted:      {require: process-jail, tiers: [jail]}\n"
	       "  semi-trusted: {require: kernel, tiers: [kernel]}\n"
	       "  untrusted:    {require: microvm, tiers: []}\n"
	       "select: strongest\n";
}

const char *cordon_policy_default_text(void)
{
	return policy_default_text();
}

/* ---- numbers and units -------------------------------------------------------- */

/* The grammar itself is common/units.c, shared with the CLI. */
char *policy_format_size(uint64_t bytes)
{
	char buf[UNITS_FORMAT_MAX];
	units_format_size(bytes, buf);
	return g_strdup(buf);
}

char *policy_format_duration(uint64_t ms)
{
	char buf[UNITS_FORMAT_MAX];
	units_format_duration(ms, buf);
	return g_strdup(buf);
}

/* ---- limits ------------------------------------------------------------------- */

typedef enum limit_kind { LIMIT_DURATION, LIMIT_SIZE, LIMIT_COUNT, LIMIT_CPUS } limit_kind;

static const struct limit_def {
	const char *name;
	limit_kind kind;
	uint64_t max; /* 0: only overflow bounds it */
} limit_defs[CORDON_LIMIT_COUNT_] = {
	[CORDON_LIMIT_WALL_MS] = { "wall", LIMIT_DURATION, 0 },
	[CORDON_LIMIT_MEMORY] = { "memory", LIMIT_SIZE, 0 },
	[CORDON_LIMIT_PIDS] = { "pids", LIMIT_COUNT, 4194304 },     /* the kernel's PID_MAX_LIMIT */
	[CORDON_LIMIT_CPU_MILLI] = { "cpus", LIMIT_CPUS, UNITS_CPUS_MAX_MILLI },
	[CORDON_LIMIT_OUTPUT] = { "output", LIMIT_SIZE, 0 },
	[CORDON_LIMIT_NOFILE] = { "nofile", LIMIT_COUNT, 1048576 }, /* the default nr_open */
	[CORDON_LIMIT_FSIZE] = { "fsize", LIMIT_SIZE, 0 },
};

static const char *const limit_names[] = { "wall", "memory", "pids", "cpus", "output", "nofile",
					   "fsize", NULL };

const char *policy_limit_name(unsigned i)
{
	return i < CORDON_LIMIT_COUNT_ ? limit_defs[i].name : "?";
}

char *policy_format_limit(unsigned i, uint64_t v)
{
	if (i >= CORDON_LIMIT_COUNT_)
		return g_strdup("?");
	switch (limit_defs[i].kind) {
	case LIMIT_DURATION: {
		g_autofree char *d = policy_format_duration(v);
		return g_strdup_printf("%s %s", limit_defs[i].name, d);
	}
	case LIMIT_SIZE: {
		g_autofree char *s = policy_format_size(v);
		return g_strdup_printf("%s %s", limit_defs[i].name, s);
	}
	case LIMIT_CPUS:
		if (v % 1000 == 0)
			return g_strdup_printf("cpus %" G_GUINT64_FORMAT, v / 1000);
		return g_strdup_printf("cpus %" G_GUINT64_FORMAT ".%03u", v / 1000,
				       (unsigned)(v % 1000));
	default:
		return g_strdup_printf("%s %" G_GUINT64_FORMAT, limit_defs[i].name, v);
	}
}

/* ---- errors collected while reading ----------------------------------------------- */

typedef struct pctx {
	const char *name;
	cordon_policy *p;
	GString *msgs;
	unsigned count;
	const char *code;        /* of the first error; static strings only */
	GHashTable *tier_index;  /* name -> policy_tier*, once tiers are read */
	GHashTable *rule_names;  /* names seen so far */
} pctx;

static void perr(pctx *c, const char *code, const cfg_node *at, const char *path, const char *fmt,
		 ...) __attribute__((format(printf, 5, 6)));

static void perr(pctx *c, const char *code, const cfg_node *at, const char *path, const char *fmt,
		 ...)
{
	if (!c->code)
		c->code = code;
	if (++c->count > POLICY_MAX_ERRORS)
		return;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = cfg_error_text(c->name, at, path, fmt, ap);
	va_end(ap);
	if (c->msgs->len)
		g_string_append_c(c->msgs, '\n');
	g_string_append(c->msgs, msg);
}

static int pctx_finish(pctx *c, cordon_error **reterr)
{
	if (!c->count)
		return 0;
	if (c->count > POLICY_MAX_ERRORS)
		g_string_append_printf(c->msgs, "\n%s: ... and %u more errors", c->name,
				       c->count - POLICY_MAX_ERRORS);
	return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, c->code, "%s", c->msgs->str);
}

/* ---- typed reads -------------------------------------------------------------------- */

static bool is_bool_text(const char *s)
{
	return strcmp(s, "true") == 0 || strcmp(s, "false") == 0;
}

static bool looks_numeric(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	return g_ascii_isdigit(*s) || units_is_non_finite(s) || (*s == '.' && g_ascii_isdigit(s[1]));
}

static const char *describe(const cfg_node *n)
{
	if (!n)
		return "nothing";
	if (n->kind == CFG_MAP)
		return "a mapping";
	if (n->kind == CFG_SEQ)
		return "a sequence";
	if (cfg_is_null(n))
		return "null (an empty value)";
	if (!n->plain)
		return "a quoted string";
	if (is_bool_text(n->scalar))
		return "a boolean";
	if (looks_numeric(n->scalar))
		return "a number";
	return "a string";
}

static bool want_map(pctx *c, const cfg_node *n)
{
	if (n->kind == CFG_MAP)
		return true;
	perr(c, ERRC(policy_type),
	     n, n->path, "expected a mapping (key: value), got %s", describe(n));
	return false;
}

static bool want_seq(pctx *c, const cfg_node *n)
{
	if (n->kind == CFG_SEQ)
		return true;
	perr(c, ERRC(policy_type), n, n->path, "expected a sequence ([a, b] or - lines), got %s",
	     describe(n));
	return false;
}

/*
 * The one reading of each value type. The checks below report what is wrong
 * with a value; the host services' getters (hostservices.c) read a driver's
 * keys with these same functions, so a value means one thing to both.
 */
int policy_read_string(const cfg_node *n, const char **ret)
{
	if (n->kind != CFG_SCALAR || cfg_is_null(n) || (n->plain && is_bool_text(n->scalar)))
		return -EINVAL;
	*ret = n->scalar;
	return 0;
}

int policy_read_bool(const cfg_node *n, bool *ret)
{
	if (n->kind != CFG_SCALAR || !n->plain || !is_bool_text(n->scalar))
		return -EINVAL;
	*ret = n->scalar[0] == 't';
	return 0;
}

int policy_read_int(const cfg_node *n, int64_t *ret, const char **ret_why)
{
	*ret_why = "not a plain number";
	if (n->kind != CFG_SCALAR || !n->plain || cfg_is_null(n))
		return -EINVAL;
	const char *s = n->scalar;
	bool neg = s[0] == '-' && s[1];
	uint64_t u;
	int r = units_parse_uint(neg ? s + 1 : s, &u, ret_why);
	if (r == 0 && u > (uint64_t)INT64_MAX + neg) {
		*ret_why = "does not fit in 64 bits";
		r = -ERANGE;
	}
	if (r == 0)
		*ret = neg ? (int64_t)(0 - u) : (int64_t)u;
	return r;
}

int policy_read_u64(const cfg_node *n, uint32_t type, uint64_t *ret, const char **ret_why)
{
	*ret_why = "not a plain number";
	if (n->kind != CFG_SCALAR || cfg_is_null(n))
		return -EINVAL;
	if (type == CORDON_PLUGIN_CONFIG_SIZE)
		return units_parse_size(n->scalar, ret, ret_why);
	if (type == CORDON_PLUGIN_CONFIG_DURATION)
		return units_parse_duration(n->scalar, ret, ret_why);
	return n->plain ? units_parse_uint(n->scalar, ret, ret_why) : -EINVAL;
}

static const char *want_string(pctx *c, const cfg_node *n)
{
	const char *s;
	if (policy_read_string(n, &s) == 0)
		return s;
	perr(c, ERRC(policy_type), n, n->path, "expected a string, got %s", describe(n));
	return NULL;
}

static bool want_bool(pctx *c, const cfg_node *n, bool *ret)
{
	if (policy_read_bool(n, ret) == 0)
		return true;
	static const char *const yaml11[] = { "yes", "no", "on", "off", "y", "n", "Yes", "No", "On",
					      "Off", "YES", "NO", "ON", "OFF", "Y", "N", "True",
					      "False", "TRUE", "FALSE", NULL };
	if (n->kind == CFG_SCALAR && g_strv_contains(yaml11, n->scalar))
		perr(c, ERRC(policy_type), n, n->path,
		     "'%s' is not a boolean here: write true or false", n->scalar);
	else
		perr(c, ERRC(policy_type),
		     n, n->path, "expected true or false, got %s", describe(n));
	return false;
}

/* A scalar that must be an unquoted number. */
static const char *want_number_text(pctx *c, const cfg_node *n, const char *what)
{
	if (n->kind == CFG_SCALAR && n->plain && !cfg_is_null(n))
		return n->scalar;
	perr(c, ERRC(policy_type), n, n->path, "expected %s, got %s", what, describe(n));
	return NULL;
}

static void number_error(pctx *c, const cfg_node *n, int r, const char *why, const char *what)
{
	perr(c, r == -ERANGE ? ERRC(policy_range) : ERRC(policy_type),
	     n, n->path, "'%s' is not %s: %s", n->scalar, what, why);
}

static bool want_uint(pctx *c, const cfg_node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	const char *s = want_number_text(c, n, "a whole number");
	if (!s)
		return false;
	const char *why;
	uint64_t v;
	int r = units_parse_uint(s, &v, &why);
	if (r < 0) {
		number_error(c, n, r, why, "a whole number");
		return false;
	}
	if (v < min || (max && v > max)) {
		perr(c, ERRC(policy_range), n, n->path,
		     "%" G_GUINT64_FORMAT " is out of range (%" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT ")",
		     v, min, max ? max : UINT64_MAX);
		return false;
	}
	*ret = v;
	return true;
}

static bool want_limit(pctx *c, const cfg_node *n, unsigned i, uint64_t *ret)
{
	const struct limit_def *d = &limit_defs[i];
	if (d->kind == LIMIT_COUNT)
		return want_uint(c, n, 1, d->max, ret);
	const char *what = d->kind == LIMIT_DURATION ? "a duration such as 30s or 10m"
			   : d->kind == LIMIT_SIZE   ? "a size such as 512MiB or 2GiB"
						     : "a number of CPUs such as 2 or 0.5";
	if (n->kind != CFG_SCALAR || cfg_is_null(n) || (n->plain && is_bool_text(n->scalar))) {
		perr(c, ERRC(policy_type), n, n->path, "expected %s, got %s", what, describe(n));
		return false;
	}
	const char *why = NULL;
	uint64_t v = 0;
	int r = d->kind == LIMIT_DURATION ? units_parse_duration(n->scalar, &v, &why)
		: d->kind == LIMIT_SIZE   ? units_parse_size(n->scalar, &v, &why)
					  : units_parse_cpus(n->scalar, &v, &why);
	if (r < 0) {
		number_error(c, n, r, why, what);
		return false;
	}
	if (v == 0 || (d->max && v > d->max)) {
		perr(c, ERRC(policy_range),
		     n, n->path, "'%s' is out of range: a limit must be greater "
		     "than 0%s", n->scalar, d->max ? " and at most 4096 CPUs" : "");
		return false;
	}
	*ret = v;
	return true;
}

/* Key i of map: reported at the key's position with the value's path (key
 * nodes carry no path of their own). */
static void unknown_key(pctx *c, const cfg_node *map, guint i, const char *const *allowed,
			const char *what)
{
	const cfg_node *key = map->keys->pdata[i];
	const char *path = ((const cfg_node *)map->items->pdata[i])->path;
	const char *hint = cfg_did_you_mean(key->scalar, allowed);
	g_autofree char *list = g_strjoinv(", ", (char **)allowed);
	if (hint)
		perr(c, ERRC(policy_unknown_key), key, path, "unknown %s '%s' (did you mean '%s'?)",
		     what, key->scalar, hint);
	else
		perr(c, ERRC(policy_unknown_key), key, path, "unknown %s '%s'; expected one of: %s",
		     what, key->scalar, list);
}

/* Reports every key of map not in allowed. */
static bool check_keys(pctx *c, const cfg_node *map, const char *const *allowed)
{
	bool ok = true;
	for (guint i = 0; i < map->keys->len; i++) {
		const cfg_node *k = map->keys->pdata[i];
		if (!g_strv_contains(allowed, k->scalar)) {
			unknown_key(c, map, i, allowed, "key");
			ok = false;
		}
	}
	return ok;
}

static int want_enum(pctx *c, const cfg_node *n, const char *const *names, const char *what)
{
	const char *s = want_string(c, n);
	if (!s)
		return -1;
	for (int i = 0; names[i]; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	const char *hint = cfg_did_you_mean(s, names);
	g_autofree char *list = g_strjoinv(", ", (char **)names);
	if (hint)
		perr(c, ERRC(policy_type),
		     n, n->path, "unknown %s '%s' (did you mean '%s'?)", what, s, hint);
	else
		perr(c, ERRC(policy_type),
		     n, n->path, "unknown %s '%s'; expected one of: %s", what, s, list);
	return -1;
}

static bool valid_name(const char *s, bool allow_upper_dot)
{
	size_t n = strlen(s);
	if (n == 0 || n > NAME_MAX_LEN || !(g_ascii_isalnum(s[0])))
		return false;
	for (; *s; s++) {
		bool ok = g_ascii_islower(*s) || g_ascii_isdigit(*s) || *s == '_' || *s == '-' ||
			  (allow_upper_dot && (g_ascii_isupper(*s) || *s == '.'));
		if (!ok)
			return false;
	}
	return allow_upper_dot || !g_ascii_isupper(s[0]);
}

static const char *want_name(pctx *c, const cfg_node *n, const char *what)
{
	const char *s = want_string(c, n);
	if (s && !valid_name(s, false)) {
		perr(c, ERRC(policy_type), n, n->path,
		     "'%s' is not a valid %s name: 1 to 64 of a-z 0-9 _ -, starting with a letter "
		     "or digit", s, what);
		return NULL;
	}
	return s;
}

/* Absolute and normalised: no expansion is ever done, so what is written is
 * exactly what is opened. */
static const char *want_abs_path(pctx *c, const cfg_node *n)
{
	const char *s = want_string(c, n);
	if (!s)
		return NULL;
	const char *why = NULL;
	if (s[0] != '/')
		why = "must be absolute (no ~, $VAR or relative paths: nothing is expanded)";
	else if (strlen(s) > 4095)
		why = "is too long";
	else if (strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../") ||
		 g_str_has_suffix(s, "/.") || g_str_has_suffix(s, "/..") ||
		 (strlen(s) > 1 && g_str_has_suffix(s, "/")))
		why = "must be normalised (no //, . or .. components, no trailing /)";
	if (why) {
		perr(c, ERRC(policy_path), n, n->path, "path '%s' %s", s, why);
		return NULL;
	}
	return s;
}

/* A string or a sequence of strings; each checked by check(c, node) when set. */
static GPtrArray *want_string_list(pctx *c, const cfg_node *n, bool one_allowed)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	if (one_allowed && n->kind == CFG_SCALAR) {
		const char *s = want_string(c, n);
		if (s)
			g_ptr_array_add(out, g_strdup(s));
		return out;
	}
	if (!want_seq(c, n))
		return out;
	for (guint i = 0; i < n->items->len; i++) {
		const char *s = want_string(c, n->items->pdata[i]);
		if (s)
			g_ptr_array_add(out, g_strdup(s));
	}
	return out;
}

/* ---- sections ----------------------------------------------------------------------- */

static void read_limits(pctx *c, const cfg_node *n, cordon_plugin_limits *out)
{
	if (!want_map(c, n))
		return;
	check_keys(c, n, limit_names);
	for (unsigned i = 0; i < CORDON_LIMIT_COUNT_; i++) {
		const cfg_node *v = cfg_map_get(n, limit_defs[i].name);
		uint64_t val;
		if (v && want_limit(c, v, i, &val)) {
			out->value[i] = val;
			out->set |= 1u << i;
		}
	}
}

static void read_plugins(pctx *c, const cfg_node *n)
{
	static const char *const keys[] = { "dir", "load", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const cfg_node *dir = cfg_map_get(n, "dir");
	const char *d = dir ? want_abs_path(c, dir) : NULL;
	if (d)
		c->p->plugin_dir = g_strdup(d);
	const cfg_node *load = cfg_map_get(n, "load");
	if (!load || !want_seq(c, load))
		return;
	for (guint i = 0; i < load->items->len; i++) {
		const cfg_node *item = load->items->pdata[i];
		const char *name = want_name(c, item, "plugin");
		if (!name)
			continue;
		if (g_strv_contains((const char *const *)c->p->plugin_load->pdata, name)) {
			perr(c, ERRC(policy_invalid),
			     item, item->path, "plugin '%s' is listed twice", name);
			continue;
		}
		g_ptr_array_insert(c->p->plugin_load, c->p->plugin_load->len - 1, g_strdup(name));
	}
}

static void tier_free(gpointer data)
{
	policy_tier *t = data;
	g_free(t->name);
	g_free(t->driver);
	g_free(t);
}

static void read_tier(pctx *c, const cfg_node *key, cfg_node *sec)
{
	if (!valid_name(key->scalar, false)) {
		perr(c, ERRC(policy_type), key, sec->path,
		     "'%s' is not a valid tier name: 1 to 64 of a-z 0-9 _ -, starting with a letter "
		     "or digit", key->scalar);
		return;
	}
	if (!want_map(c, sec))
		return;
	const cfg_node *drv = cfg_map_get(sec, "driver");
	if (!drv) {
		perr(c, ERRC(policy_invalid), sec, sec->path, "missing required key 'driver'");
		return;
	}
	const char *driver = want_name(c, drv, "driver");
	if (!driver)
		return;
	policy_tier *t = g_new0(policy_tier, 1);
	t->name = g_strdup(key->scalar);
	t->driver = g_strdup(driver);
	t->section = sec;
	const cfg_node *lim = cfg_map_get(sec, "limits");
	if (lim)
		read_limits(c, lim, &t->limits);
	g_ptr_array_add(c->p->tiers, t);
}

static void read_tiers(pctx *c, const cfg_node *n)
{
	if (!want_map(c, n))
		return;
	for (guint i = 0; i < n->keys->len; i++)
		read_tier(c, n->keys->pdata[i], n->items->pdata[i]);
	/* References are checked against an index: policies may be large. */
	c->tier_index = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < c->p->tiers->len; i++) {
		policy_tier *t = c->p->tiers->pdata[i];
		g_hash_table_insert(c->tier_index, t->name, t);
	}
}

static const char *const trust_names[] = { "trusted", "semi-trusted", "untrusted", NULL };
static const char *const containment_names[] = { "process-jail", "kernel", "container",
						  "userspace-kernel", "microvm", "remote", NULL };

/* The names of every tier, NULL-terminated, borrowed from the policy. */
static const char **tier_names(const cordon_policy *p)
{
	const char **v = g_new0(const char *, p->tiers->len + 1);
	for (guint i = 0; i < p->tiers->len; i++)
		v[i] = ((const policy_tier *)p->tiers->pdata[i])->name;
	return v;
}

/* A tier name that must name a tier of the policy. */
static bool want_tier_ref(pctx *c, const cfg_node *n, const char *s)
{
	if (c->tier_index ? g_hash_table_contains(c->tier_index, s) : policy_find_tier(c->p, s) != NULL)
		return true;
	g_autofree const char **names = tier_names(c->p);
	const char *hint = cfg_did_you_mean(s, names);
	if (hint)
		perr(c, ERRC(policy_invalid),
		     n, n->path, "unknown tier '%s' (did you mean '%s'?)", s, hint);
	else
		perr(c, ERRC(policy_invalid),
		     n, n->path, "unknown tier '%s': it is not under tiers", s);
	return false;
}

/* The top-level key that lets a trust level's work run in the process jail,
 * below its built-in minimum: NULL for trusted work, whose minimum it is. */
static const char *jail_key(cordon_trust level)
{
	switch (level) {
	case CORDON_TRUST_TRUSTED: return NULL;
	case CORDON_TRUST_SEMI_TRUSTED: return "allow_semi_trusted_on_jail";
	default: return "allow_untrusted_on_jail";
	}
}

static bool jail_allowed(const cordon_policy *p, cordon_trust level)
{
	switch (level) {
	case CORDON_TRUST_TRUSTED: return true;
	case CORDON_TRUST_SEMI_TRUSTED: return p->allow_semi_trusted_on_jail;
	default: return p->allow_untrusted_on_jail;
	}
}

static void read_trust_level(pctx *c, cordon_trust level, const cfg_node *n)
{
	static const char *const keys[] = { "require", "tiers", "relax", NULL };
	policy_trust *pt = &c->p->trust[level];
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	pt->set = true;
	const cfg_node *req = cfg_map_get(n, "require");
	if (req) {
		int i = want_enum(c, req, containment_names, "containment");
		if (i >= 0)
			pt->declared = (cordon_containment)(i + 1);
	}
	const cfg_node *relax = cfg_map_get(n, "relax");
	if (relax)
		want_bool(c, relax, &pt->relax);
	cordon_containment builtin = policy_builtin_minimum(level);
	pt->require = pt->declared ? pt->declared : builtin;
	if (!pt->relax && pt->require < builtin)
		pt->require = builtin;
	if (pt->relax && pt->require < builtin)
		g_debug("policy %s: trust %s relaxed to %s, below the built-in minimum %s", c->name,
			trust_names[level - 1], cordon_containment_to_string(pt->require),
			cordon_containment_to_string(builtin));
	/* relax: true alone is not enough to run untrusted or semi-trusted work
	 * with the host user's rights (root's, when cordon runs as root). */
	if (pt->require == CORDON_CONTAINMENT_PROCESS_JAIL && !jail_allowed(c->p, level))
		perr(c, level == CORDON_TRUST_UNTRUSTED ? ERRC(policy_untrusted_on_jail)
							: ERRC(policy_semi_trusted_on_jail),
		     req ? req : n, req ? req->path : n->path,
		     "%s work would run in the process jail, with the rights of the user "
		     "running cordon (host root, as root): if that is meant, say so with "
		     "`%s: true` at the top level", trust_names[level - 1], jail_key(level));
	const cfg_node *tiers = cfg_map_get(n, "tiers");
	if (!tiers || !want_seq(c, tiers))
		return;
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < tiers->items->len; i++) {
		const cfg_node *item = tiers->items->pdata[i];
		const char *s = want_string(c, item);
		if (!s || !want_tier_ref(c, item, s))
			continue;
		if (!g_hash_table_add(seen, (gpointer)s)) {
			perr(c, ERRC(policy_invalid),
			     item, item->path, "tier '%s' is listed twice", s);
			continue;
		}
		g_ptr_array_add(pt->tiers, g_strdup(s));
	}
}

static void read_trust(pctx *c, const cfg_node *n)
{
	if (!want_map(c, n))
		return;
	for (guint i = 0; i < n->keys->len; i++) {
		const cfg_node *k = n->keys->pdata[i];
		int level = -1;
		for (int j = 0; trust_names[j]; j++)
			if (strcmp(k->scalar, trust_names[j]) == 0)
				level = j + 1;
		if (level < 0)
			unknown_key(c, n, i, trust_names, "trust level");
		else
			read_trust_level(c, (cordon_trust)level, n->items->pdata[i]);
	}
}

static void rule_free(gpointer data)
{
	policy_rule *r = data;
	g_free(r->name);
	g_ptr_array_unref(r->when_tiers);
	g_ptr_array_unref(r->when_drivers);
	g_ptr_array_unref(r->when_labels);
	g_free(r);
}

static void read_when_labels(pctx *c, policy_rule *rule, const cfg_node *n)
{
	if (!want_map(c, n))
		return;
	for (guint i = 0; i < n->keys->len; i++) {
		const cfg_node *k = n->keys->pdata[i];
		const cfg_node *val = n->items->pdata[i];
		const char *v = want_string(c, val);
		if (strchr(k->scalar, '=') || strchr(k->scalar, '\n')) {
			perr(c, ERRC(policy_type),
			     k, val->path, "a label key has no '=' and no newline");
			continue;
		}
		if (v)
			g_ptr_array_add(rule->when_labels, g_strdup_printf("%s=%s", k->scalar, v));
	}
}

static void read_when(pctx *c, policy_rule *rule, const cfg_node *n)
{
	static const char *const keys[] = { "trust", "tier", "driver", "labels", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const cfg_node *v;
	if ((v = cfg_map_get(n, "trust"))) {
		const cfg_node *one[] = { v };
		const cfg_node *const *items = v->kind == CFG_SEQ ? (const cfg_node *const *)v->items->pdata : one;
		guint count = v->kind == CFG_SEQ ? v->items->len : 1;
		for (guint i = 0; i < count; i++) {
			int t = want_enum(c, items[i], trust_names, "trust level");
			if (t >= 0)
				rule->when_trust |= 1u << (t + 1);
		}
	}
	if ((v = cfg_map_get(n, "tier"))) {
		g_autoptr(GPtrArray) names = want_string_list(c, v, true);
		for (guint i = 0; i < names->len; i++) {
			const cfg_node *at = v->kind == CFG_SEQ ? v->items->pdata[i] : v;
			if (want_tier_ref(c, at, names->pdata[i]))
				g_ptr_array_add(rule->when_tiers, g_strdup(names->pdata[i]));
		}
	}
	if ((v = cfg_map_get(n, "driver"))) {
		g_autoptr(GPtrArray) names = want_string_list(c, v, true);
		for (guint i = 0; i < names->len; i++)
			g_ptr_array_add(rule->when_drivers, g_strdup(names->pdata[i]));
	}
	if ((v = cfg_map_get(n, "labels")))
		read_when_labels(c, rule, v);
}

static void read_require(pctx *c, policy_rule *rule, const cfg_node *n)
{
	static const char *const keys[] = { "egress", "image", "workspace", NULL };
	static const char *const egress[] = { "deny", "governed", NULL };
	static const char *const image[] = { "pinned", NULL };
	static const char *const workspace[] = { "read-only", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const cfg_node *v;
	if ((v = cfg_map_get(n, "egress"))) {
		int e = want_enum(c, v, egress, "egress requirement");
		if (e >= 0)
			rule->require_egress = e; /* deny = 0, governed = 1, as cordon_egress */
	}
	if ((v = cfg_map_get(n, "image")) && want_enum(c, v, image, "image requirement") == 0)
		rule->require_image_pinned = true;
	if ((v = cfg_map_get(n, "workspace")) &&
	    want_enum(c, v, workspace, "workspace requirement") == 0)
		rule->require_workspace_ro = true;
}

static bool rule_has_require(const policy_rule *r)
{
	return r->require_egress >= 0 || r->require_image_pinned || r->require_workspace_ro;
}

static void read_rule(pctx *c, const cfg_node *n)
{
	static const char *const keys[] = { "name", "when", "deny", "require", "limit", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	policy_rule *rule = g_new0(policy_rule, 1);
	rule->require_egress = -1;
	rule->when_tiers = g_ptr_array_new_with_free_func(g_free);
	rule->when_drivers = g_ptr_array_new_with_free_func(g_free);
	rule->when_labels = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(c->p->rules, rule);

	const cfg_node *name = cfg_map_get(n, "name");
	const char *s = name ? want_string(c, name) : NULL;
	if (!name)
		perr(c, ERRC(policy_invalid), n, n->path, "missing required key 'name'");
	else if (s && !valid_name(s, true))
		perr(c, ERRC(policy_type), name, name->path,
		     "'%s' is not a valid rule name: 1 to 64 of A-Z a-z 0-9 _ . -", s);
	else if (s)
		rule->name = g_strdup(s);
	if (rule->name && !g_hash_table_add(c->rule_names, rule->name))
		perr(c, ERRC(policy_invalid),
		     name, name->path, "rule name '%s' is used twice", rule->name);

	const cfg_node *v;
	if ((v = cfg_map_get(n, "when")))
		read_when(c, rule, v);
	if ((v = cfg_map_get(n, "deny")))
		want_bool(c, v, &rule->deny);
	if ((v = cfg_map_get(n, "require")))
		read_require(c, rule, v);
	if ((v = cfg_map_get(n, "limit")))
		read_limits(c, v, &rule->limit);
	bool has_other = rule_has_require(rule) || cfg_map_get(n, "require") || cfg_map_get(n, "limit");
	if (rule->deny && has_other)
		perr(c, ERRC(policy_invalid), n, n->path,
		     "a rule with deny: true takes no require or limit (it refuses outright)");
	else if (!rule->deny && !has_other)
		perr(c, ERRC(policy_invalid), n, n->path,
		     "the rule has no effect: give it deny: true, require or limit");
}

static void read_rules(pctx *c, const cfg_node *n)
{
	if (!want_seq(c, n))
		return;
	for (guint i = 0; i < n->items->len; i++)
		read_rule(c, n->items->pdata[i]);
}

/* Records are appended to a file: a directory there ("/" first) would refuse
 * every run, or with required: false silently lose every record. Anything
 * else that is not a regular file (a symlink, a FIFO, which can appear
 * later) is refused by audit_append at each write. */
static const char *audit_path_problem(const char *s)
{
	struct stat st;
	if (strcmp(s, "/") == 0 || (lstat(s, &st) == 0 && S_ISDIR(st.st_mode)))
		return "is a directory";
	return NULL;
}

static void read_audit(pctx *c, const cfg_node *n)
{
	static const char *const keys[] = { "path", "required", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const cfg_node *path = cfg_map_get(n, "path");
	if (!path) {
		perr(c, ERRC(policy_invalid), n, n->path, "missing required key 'path'");
	} else {
		const char *s = want_abs_path(c, path);
		const char *why = s ? audit_path_problem(s) : NULL;
		if (why)
			perr(c, ERRC(policy_path),
			     path, path->path, "audit path '%s' %s: name the file "
			     "records are appended to", s, why);
		else if (s)
			c->p->audit_path = g_strdup(s);
	}
	c->p->audit_required = true; /* fail closed unless the policy says otherwise */
	const cfg_node *req = cfg_map_get(n, "required");
	if (req)
		want_bool(c, req, &c->p->audit_required);
}

/* The schema version is read first and alone: a policy for another version
 * is not worth reporting key by key. */
static int read_version(pctx *c, const cfg_node *root, cordon_error **reterr)
{
	const cfg_node *v = cfg_map_get(root, "cordon");
	if (!v)
		return cfg_error(reterr, ERRC(policy_version), c->name, root, NULL,
				 "missing the schema version: the policy starts with `cordon: %d`",
				 POLICY_VERSION);
	uint64_t version = 0;
	const char *why;
	if (v->kind != CFG_SCALAR || !v->plain || units_parse_uint(v->scalar, &version, &why) < 0)
		return cfg_error(reterr, ERRC(policy_version), c->name, v, v->path,
				 "the schema version is a whole number (`cordon: %d`), got %s",
				 POLICY_VERSION, describe(v));
	if (version != POLICY_VERSION)
		return cfg_error(reterr, ERRC(policy_version), c->name, v, v->path,
				 "unsupported policy version %" G_GUINT64_FORMAT ": this cordon reads "
				 "version %d", version, POLICY_VERSION);
	return 0;
}

static void read_sections(pctx *c, const cfg_node *root)
{
	static const char *const keys[] = { "cordon", "plugins", "tiers", "trust", "select",
					    "rules", "audit", "allow_untrusted_on_jail",
					    "allow_semi_trusted_on_jail", "server", NULL };
	static const char *const selects[] = { "strongest", "first", NULL };
	check_keys(c, root, keys);
	const cfg_node *v;
	/* Before trust, which it lets reach the process jail. */
	if ((v = cfg_map_get(root, "allow_untrusted_on_jail")))
		want_bool(c, v, &c->p->allow_untrusted_on_jail);
	if ((v = cfg_map_get(root, "allow_semi_trusted_on_jail")))
		want_bool(c, v, &c->p->allow_semi_trusted_on_jail);
	if ((v = cfg_map_get(root, "plugins")))
		read_plugins(c, v);
	if ((v = cfg_map_get(root, "tiers")))
		read_tiers(c, v);
	if ((v = cfg_map_get(root, "trust")))
		read_trust(c, v);
	if ((v = cfg_map_get(root, "select"))) {
		int s = want_enum(c, v, selects, "select");
		if (s >= 0)
			c->p->select = (policy_select)s;
	}
	if ((v = cfg_map_get(root, "rules")))
		read_rules(c, v);
	if ((v = cfg_map_get(root, "audit")))
		read_audit(c, v);
	/* `cordon server`'s own section: it checks the keys (docs/server.md). */
	if ((v = cfg_map_get(root, "server")))
		want_map(c, v);
}

/* ---- the policy ------------------------------------------------------------------------ */

static cordon_policy *policy_alloc(const char *name)
{
	cordon_policy *p = g_new0(cordon_policy, 1);
	p->source = g_strdup(name);
	p->plugin_load = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(p->plugin_load, NULL); /* kept NULL-terminated */
	p->tiers = g_ptr_array_new_with_free_func(tier_free);
	p->rules = g_ptr_array_new_with_free_func(rule_free);
	for (int t = CORDON_TRUST_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++) {
		p->trust[t].require = policy_builtin_minimum((cordon_trust)t);
		p->trust[t].tiers = g_ptr_array_new_with_free_func(g_free);
	}
	return p;
}

int policy_parse(const char *text, size_t len, const char *name, cordon_policy **ret,
		 cordon_error **reterr)
{
	if (!ret)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "ret is required");
	name = name ? name : "<policy>";
	g_autoptr(cfg_node) root = NULL;
	int r = cfg_parse(text, len, name, &root, reterr);
	if (r < 0)
		return r;
	g_autoptr(cordon_policy) p = policy_alloc(name);
	pctx c = { .name = name, .p = p, .msgs = g_string_new(NULL),
		   .rule_names = g_hash_table_new(g_str_hash, g_str_equal) };
	r = read_version(&c, root, reterr);
	if (r >= 0) {
		read_sections(&c, root);
		r = pctx_finish(&c, reterr);
	}
	g_string_free(c.msgs, TRUE);
	g_hash_table_unref(c.rule_names);
	if (c.tier_index)
		g_hash_table_unref(c.tier_index);
	if (r < 0)
		return r;
	g_ptr_array_remove_index(p->plugin_load, p->plugin_load->len - 1);
	g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)text, len);
	g_strlcpy(p->sha256, sum, sizeof(p->sha256));
	p->root = g_steal_pointer(&root);
	*ret = g_steal_pointer(&p);
	return 0;
}

cordon_policy *policy_new_default(void)
{
	const char *text = policy_default_text();
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	if (policy_parse(text, strlen(text), "<default>", &p, &err) < 0)
		g_error("the built-in default policy does not parse: %s", err->message);
	return p;
}

static int read_fd_capped(int fd, const char *path, GByteArray *buf, cordon_error **reterr)
{
	char chunk[16384];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return error_set(reterr, errno, CORDON_ERROR_INVALID, ERRC(policy_io),
					 "%s: cannot read: %s", path, g_strerror(errno));
		if (n == 0)
			return 0;
		if (buf->len + (size_t)n > CFG_MAX_BYTES)
			return error_set(reterr, EFBIG, CORDON_ERROR_INVALID,
					 ERRC(policy_too_large),
					 "%s: the policy is larger than %u bytes (1 MiB)", path,
					 CFG_MAX_BYTES);
		g_byte_array_append(buf, (const guint8 *)chunk, (guint)n);
	}
}

/* The file is trusted like a plugin (filetrust.h): whoever could change it,
 * or rename it away, chooses what cordon enforces. */
static int open_policy(const char *path, int *ret_fd, cordon_error **reterr)
{
	g_autofree char *why = NULL;
	int r = filetrust_open(path, ret_fd, &why);
	if (r == -EPERM || r == -ELOOP)
		return error_set(reterr, -r, CORDON_ERROR_INVALID, ERRC(policy_perms),
				 "%s: the policy cannot be trusted: %s", path, why);
	if (r < 0)
		return error_set(reterr, -r, CORDON_ERROR_INVALID, ERRC(policy_io),
				 "%s: cannot open the policy: %s", path, why);
	return 0;
}

int policy_load_file(const char *path, cordon_policy **ret, cordon_error **reterr)
{
	if (!path || !*path || !ret)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "a policy path is required");
	int fd = -1;
	int r = open_policy(path, &fd, reterr);
	if (r < 0)
		return r;
	struct stat st;
	if (fstat(fd, &st) < 0)
		r = error_set(reterr, errno, CORDON_ERROR_INVALID, ERRC(policy_io), "%s: %s", path,
			      g_strerror(errno));
	else if (st.st_size > CFG_MAX_BYTES)
		r = error_set(reterr, EFBIG, CORDON_ERROR_INVALID, ERRC(policy_too_large),
			      "%s: the policy is %jd bytes; the limit is %u (1 MiB)", path,
			      (intmax_t)st.st_size, CFG_MAX_BYTES);
	g_autoptr(GByteArray) buf = g_byte_array_sized_new(r < 0 ? 0 : (guint)st.st_size);
	if (r >= 0)
		r = read_fd_capped(fd, path, buf, reterr);
	close(fd);
	if (r < 0)
		return r;
	return policy_parse((const char *)buf->data, buf->len, path, ret, reterr);
}

void policy_free(cordon_policy *p)
{
	if (!p)
		return;
	g_free(p->source);
	g_free(p->plugin_dir);
	g_ptr_array_unref(p->plugin_load);
	g_ptr_array_unref(p->tiers);
	for (int t = 0; t < POLICY_TRUST_LEVELS; t++)
		if (p->trust[t].tiers)
			g_ptr_array_unref(p->trust[t].tiers);
	g_ptr_array_unref(p->rules);
	g_free(p->audit_path);
	cfg_node_free(p->root);
	g_free(p);
}

const policy_tier *policy_find_tier(const cordon_policy *p, const char *name)
{
	for (guint i = 0; name && i < p->tiers->len; i++) {
		const policy_tier *t = p->tiers->pdata[i];
		if (strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

/* ---- a driver's section ---------------------------------------------------------------- */

static void check_secret(pctx *c, const cfg_node *v)
{
	static const char *const keys[] = { "env", "file", NULL };
	if (v->kind != CFG_MAP) {
		perr(c, ERRC(policy_type), v, v->path,
		     "a secret is {env: NAME} or {file: /path}, never the value itself; got %s",
		     describe(v));
		return;
	}
	if (!check_keys(c, v, keys))
		return;
	const cfg_node *env = cfg_map_get(v, "env"), *file = cfg_map_get(v, "file");
	if ((env != NULL) == (file != NULL)) {
		perr(c, ERRC(policy_type), v, v->path, "a secret has exactly one of env or file");
		return;
	}
	if (file) {
		want_abs_path(c, file);
		return;
	}
	const char *name = want_string(c, env);
	bool ok = name && (g_ascii_isalpha(name[0]) || name[0] == '_');
	for (const char *s = name; ok && *s; s++)
		ok = g_ascii_isalnum(*s) || *s == '_';
	if (name && !ok)
		perr(c, ERRC(policy_type),
		     env, env->path, "'%s' is not an environment variable name", name);
}

static void check_value(pctx *c, const cfg_node *v, uint32_t type)
{
	bool b;
	int64_t i;
	uint64_t u;
	const char *why = NULL;
	int r;
	switch (type) {
	case CORDON_PLUGIN_CONFIG_STRING:
	case CORDON_PLUGIN_CONFIG_IMAGE:
		want_string(c, v);
		return;
	case CORDON_PLUGIN_CONFIG_BOOL:
		want_bool(c, v, &b);
		return;
	case CORDON_PLUGIN_CONFIG_INT:
		if (want_number_text(c, v, "a whole number") &&
		    (r = policy_read_int(v, &i, &why)) < 0)
			number_error(c, v, r, why, "a whole number");
		return;
	case CORDON_PLUGIN_CONFIG_SIZE:
	case CORDON_PLUGIN_CONFIG_DURATION: {
		const char *what = type == CORDON_PLUGIN_CONFIG_SIZE ? "a size such as 512MiB"
								     : "a duration such as 30s";
		if (v->kind != CFG_SCALAR || cfg_is_null(v))
			perr(c, ERRC(policy_type),
			     v, v->path, "expected %s, got %s", what, describe(v));
		else if ((r = policy_read_u64(v, type, &u, &why)) < 0)
			number_error(c, v, r, why, what);
		return;
	}
	case CORDON_PLUGIN_CONFIG_STRING_LIST: {
		g_autoptr(GPtrArray) l = want_string_list(c, v, false);
		return;
	}
	case CORDON_PLUGIN_CONFIG_SECRET:
		check_secret(c, v);
		return;
	default:
		perr(c, ERRC(policy_invalid), v, v->path,
		     "the driver declares this key with an unknown type %u", type);
	}
}

static const cordon_plugin_config_key *find_key(const cordon_plugin_config_key *keys,
						const char *name)
{
	for (size_t i = 0; keys && keys[i].name; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

int policy_check_section(const cordon_policy *p, policy_tier *t,
			 const cordon_plugin_config_key *keys, const char *image_key,
			 cordon_error **reterr)
{
	if (!p || !t || !t->section)
		return 0;
	t->image = NULL;
	const cfg_node *sec = t->section;
	pctx c = { .name = p->source, .p = (cordon_policy *)p, .msgs = g_string_new(NULL) };
	g_autoptr(GPtrArray) allowed = g_ptr_array_new();
	g_ptr_array_add(allowed, (gpointer) "driver");
	g_ptr_array_add(allowed, (gpointer) "limits");
	for (size_t i = 0; keys && keys[i].name; i++)
		g_ptr_array_add(allowed, (gpointer)keys[i].name);
	g_ptr_array_add(allowed, NULL);
	for (guint i = 0; i < sec->keys->len; i++) {
		const cfg_node *k = sec->keys->pdata[i];
		if (strcmp(k->scalar, "driver") == 0 || strcmp(k->scalar, "limits") == 0)
			continue;
		const cordon_plugin_config_key *decl = find_key(keys, k->scalar);
		if (!decl) {
			g_autofree char *what = g_strdup_printf("key for driver %s", t->driver);
			unknown_key(&c, sec, i, (const char *const *)allowed->pdata, what);
			continue;
		}
		check_value(&c, sec->items->pdata[i], decl->type);
	}
	for (size_t i = 0; keys && keys[i].name; i++)
		if (keys[i].required && !cfg_map_get(sec, keys[i].name))
			perr(&c, ERRC(policy_invalid), sec, sec->path,
			     "missing required key '%s' (driver %s)", keys[i].name, t->driver);
	int r = pctx_finish(&c, reterr);
	g_string_free(c.msgs, TRUE);
	/* Checked a string above: admission's image rules read it from here. */
	const cfg_node *image = r == 0 && image_key ? cfg_map_get(sec, image_key) : NULL;
	if (image && policy_read_string(image, &t->image) < 0)
		t->image = NULL;
	return r;
}

/* ---- the summary ------------------------------------------------------------------------ */

static void describe_limits(GString *s, const cordon_plugin_limits *l)
{
	bool first = true;
	for (unsigned i = 0; i < CORDON_LIMIT_COUNT_; i++) {
		if (!(l->set & (1u << i)))
			continue;
		g_autofree char *v = policy_format_limit(i, l->value[i]);
		g_string_append_printf(s, "%s%s", first ? "" : ", ", v);
		first = false;
	}
}

static bool tier_is_candidate(const cordon_policy *p, const char *name)
{
	for (int t = CORDON_TRUST_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++)
		if (g_ptr_array_find_with_equal_func(p->trust[t].tiers, name, g_str_equal, NULL))
			return true;
	return false;
}

static void describe_trust(GString *s, const cordon_policy *p)
{
	for (int t = CORDON_TRUST_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++) {
		const policy_trust *pt = &p->trust[t];
		cordon_containment builtin = policy_builtin_minimum((cordon_trust)t);
		g_string_append_printf(s, "  %-13s requires %-16s tiers: ", trust_names[t - 1],
				       cordon_containment_to_string(pt->require));
		for (guint i = 0; i < pt->tiers->len; i++)
			g_string_append_printf(s, "%s%s", i ? ", " : "", (char *)pt->tiers->pdata[i]);
		if (!pt->tiers->len)
			g_string_append(s, "(none: always refused)");
		if (pt->declared && pt->declared < builtin && !pt->relax)
			g_string_append_printf(s, "  [require %s raised to the built-in minimum; "
					       "relax: true lowers it]",
					       cordon_containment_to_string(pt->declared));
		if (pt->relax && pt->require < builtin)
			g_string_append_printf(s, "  [relaxed below the built-in %s]",
					       cordon_containment_to_string(builtin));
		g_string_append_c(s, '\n');
	}
}

char *policy_describe(const cordon_policy *p)
{
	GString *s = g_string_new(NULL);
	g_string_append_printf(s, "%s: valid policy (schema %d, sha256 %s)\n", p->source,
			       POLICY_VERSION, p->sha256);
	g_string_append_printf(s, "tiers (%u):\n", p->tiers->len);
	for (guint i = 0; i < p->tiers->len; i++) {
		const policy_tier *t = p->tiers->pdata[i];
		g_string_append_printf(s, "  %-13s driver %s", t->name, t->driver);
		if (t->limits.set) {
			g_string_append(s, "; limits: ");
			describe_limits(s, &t->limits);
		}
		if (!tier_is_candidate(p, t->name))
			g_string_append(s, "  [no trust level lists it]");
		g_string_append_c(s, '\n');
	}
	for (int t = CORDON_TRUST_SEMI_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++)
		if (p->trust[t].require == CORDON_CONTAINMENT_PROCESS_JAIL)
			g_string_append_printf(s, "WARNING: %s: %s work may run in the process jail, "
					       "with the rights of the user running cordon (host "
					       "root, as root)\n", jail_key((cordon_trust)t), trust_names[t - 1]);
	g_string_append(s, "trust:\n");
	describe_trust(s, p);
	g_string_append_printf(s, "select: %s\n", p->select == POLICY_SELECT_FIRST ? "first" : "strongest");
	g_string_append_printf(s, "rules (%u):\n", p->rules->len);
	for (guint i = 0; i < p->rules->len; i++) {
		const policy_rule *r = p->rules->pdata[i];
		g_string_append_printf(s, "  %s:%s", r->name, r->deny ? " deny" : "");
		if (r->require_egress >= 0)
			g_string_append_printf(s, " egress %s", r->require_egress ? "governed" : "deny");
		if (r->require_image_pinned)
			g_string_append(s, " image pinned");
		if (r->require_workspace_ro)
			g_string_append(s, " workspace read-only");
		if (r->limit.set) {
			g_string_append(s, " limit ");
			describe_limits(s, &r->limit);
		}
		g_string_append_c(s, '\n');
	}
	if (p->audit_path)
		g_string_append_printf(s, "audit: %s (%s)\n", p->audit_path,
				       p->audit_required ? "required: a write failure refuses work"
							 : "best effort");
	else
		g_string_append(s, "audit: none\n");
	return g_string_free(s, FALSE);
}
