/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading the policy's values: the units and limits it writes, the errors
 * collected while reading (every one reported, with file:line:column), and
 * the typed reads, the one grammar that the schema here and a driver's
 * getters (hostservices.c) both use. docs/policy.md is the contract. */
#include "config.h"

#include "policy-internal.h"

#include "units.h"

#include <errno.h>
#include <string.h>

#define POLICY_MAX_ERRORS 50
#define NAME_MAX_LEN 64

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
	[CORDON_LIMIT_PIDS] = { "pids", LIMIT_COUNT, 4194304 }, /* the kernel's PID_MAX_LIMIT */
	[CORDON_LIMIT_CPU_MILLI] = { "cpus", LIMIT_CPUS, UNITS_CPUS_MAX_MILLI },
	[CORDON_LIMIT_OUTPUT] = { "output", LIMIT_SIZE, 0 },
	[CORDON_LIMIT_NOFILE] = { "nofile", LIMIT_COUNT, 1048576 }, /* the default nr_open */
	[CORDON_LIMIT_FSIZE] = { "fsize", LIMIT_SIZE, 0 },
};

static const char *const limit_names[] = { "wall",   "memory", "pids",  "cpus",
					   "output", "nofile", "fsize", NULL };

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
	default: return g_strdup_printf("%s %" G_GUINT64_FORMAT, limit_defs[i].name, v);
	}
}

/* ---- errors collected while reading ----------------------------------------------- */

/* One error, kept until the reading ends: reported in file order, whatever order the
 * sections were read in. */
typedef struct policy_error_entry {
	uint32_t line, col;
	guint seq; /* ties (and position-less errors) keep the order they were found in */
	const char *code;
	char *msg;
} policy_error_entry;

struct policy_errors {
	char *name;
	GPtrArray *list; /* policy_error_entry* */
};

static void error_entry_free(gpointer p)
{
	policy_error_entry *e = p;
	g_free(e->msg);
	g_free(e);
}

policy_errors *policy_errors_new(const char *name)
{
	policy_errors *e = g_new0(policy_errors, 1);
	e->name = g_strdup(name);
	e->list = g_ptr_array_new_with_free_func(error_entry_free);
	return e;
}

guint policy_errors_count(const policy_errors *errs) { return errs->list->len; }

void policy_err(pctx *c, const char *code, const cfg_node *at, const char *path, const char *fmt,
		...)
{
	policy_errors *errs = c->errs;
	va_list ap;
	va_start(ap, fmt);
	policy_error_entry *e = g_new0(policy_error_entry, 1);
	e->line = at ? at->line : 0;
	e->col = at ? at->col : 0;
	e->seq = errs->list->len;
	e->code = code;
	e->msg = cfg_error_text(errs->name, at, path, fmt, ap);
	va_end(ap);
	g_ptr_array_add(errs->list, e);
}

static gint by_position(gconstpointer a, gconstpointer b)
{
	const policy_error_entry *x = *(policy_error_entry *const *)a;
	const policy_error_entry *y = *(policy_error_entry *const *)b;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int policy_errors_finish(policy_errors *errs, cordon_error **reterr)
{
	if (!errs)
		return 0;
	int r = 0;
	guint n = errs->list->len;
	if (n) {
		g_ptr_array_sort(errs->list, by_position);
		GString *s = g_string_new(NULL);
		for (guint i = 0; i < n && i < POLICY_MAX_ERRORS; i++)
			g_string_append_printf(s, "%s%s", i ? "\n" : "",
					       ((policy_error_entry *)errs->list->pdata[i])->msg);
		if (n > POLICY_MAX_ERRORS)
			g_string_append_printf(s, "\n%s: ... and %u more errors", errs->name,
					       n - POLICY_MAX_ERRORS);
		const char *code = ((policy_error_entry *)errs->list->pdata[0])->code;
		r = error_set(reterr, EINVAL, CORDON_ERROR_INVALID, code, "%s", s->str);
		g_string_free(s, TRUE);
	}
	g_ptr_array_unref(errs->list);
	g_free(errs->name);
	g_free(errs);
	return r;
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
	return g_ascii_isdigit(*s) || units_is_non_finite(s) ||
	       (*s == '.' && g_ascii_isdigit(s[1]));
}

const char *policy_node_kind(const cfg_node *n)
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

bool policy_want_map(pctx *c, const cfg_node *n)
{
	if (n->kind == CFG_MAP)
		return true;
	policy_err(c, ERRC(policy_type), n, n->path, "expected a mapping (key: value), got %s",
		   policy_node_kind(n));
	return false;
}

bool policy_want_seq(pctx *c, const cfg_node *n)
{
	if (n->kind == CFG_SEQ)
		return true;
	policy_err(c, ERRC(policy_type), n, n->path,
		   "expected a sequence ([a, b] or - lines), got %s", policy_node_kind(n));
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

const char *policy_want_string(pctx *c, const cfg_node *n)
{
	const char *s;
	if (policy_read_string(n, &s) == 0)
		return s;
	policy_err(c, ERRC(policy_type), n, n->path, "expected a string, got %s",
		   policy_node_kind(n));
	return NULL;
}

bool policy_want_bool(pctx *c, const cfg_node *n, bool *ret)
{
	if (policy_read_bool(n, ret) == 0)
		return true;
	static const char *const yaml11[] = { "yes", "no", "on",   "off",   "y",    "n",     "Yes",
					      "No",  "On", "Off",  "YES",   "NO",   "ON",    "OFF",
					      "Y",   "N",  "True", "False", "TRUE", "FALSE", NULL };
	if (n->kind == CFG_SCALAR && g_strv_contains(yaml11, n->scalar))
		policy_err(c, ERRC(policy_type), n, n->path,
			   "'%s' is not a boolean here: write true or false", n->scalar);
	else
		policy_err(c, ERRC(policy_type), n, n->path, "expected true or false, got %s",
			   policy_node_kind(n));
	return false;
}

/* A scalar that must be an unquoted number. */
const char *policy_want_number_text(pctx *c, const cfg_node *n, const char *what)
{
	if (n->kind == CFG_SCALAR && n->plain && !cfg_is_null(n))
		return n->scalar;
	policy_err(c, ERRC(policy_type), n, n->path, "expected %s, got %s", what,
		   policy_node_kind(n));
	return NULL;
}

void policy_number_error(pctx *c, const cfg_node *n, int r, const char *why, const char *what)
{
	policy_err(c, r == -ERANGE ? ERRC(policy_range) : ERRC(policy_type), n, n->path,
		   "'%s' is not %s: %s", n->scalar, what, why);
}

static bool want_uint(pctx *c, const cfg_node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	const char *s = policy_want_number_text(c, n, "a whole number");
	if (!s)
		return false;
	const char *why;
	uint64_t v;
	int r = units_parse_uint(s, &v, &why);
	if (r < 0) {
		policy_number_error(c, n, r, why, "a whole number");
		return false;
	}
	if (v < min || (max && v > max)) {
		policy_err(c, ERRC(policy_range), n, n->path,
			   "%" G_GUINT64_FORMAT " is out of range (%" G_GUINT64_FORMAT
			   " to %" G_GUINT64_FORMAT ")",
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
		policy_err(c, ERRC(policy_type), n, n->path, "expected %s, got %s", what,
			   policy_node_kind(n));
		return false;
	}
	const char *why = NULL;
	uint64_t v = 0;
	int r = d->kind == LIMIT_DURATION ? units_parse_duration(n->scalar, &v, &why)
		: d->kind == LIMIT_SIZE   ? units_parse_size(n->scalar, &v, &why)
					  : units_parse_cpus(n->scalar, &v, &why);
	if (r < 0) {
		policy_number_error(c, n, r, why, what);
		return false;
	}
	if (v == 0 || (d->max && v > d->max)) {
		policy_err(c, ERRC(policy_range), n, n->path,
			   "'%s' is out of range: a limit must be greater "
			   "than 0%s",
			   n->scalar, d->max ? " and at most 4096 CPUs" : "");
		return false;
	}
	*ret = v;
	return true;
}

/* Key i of map: reported at the key's position with the value's path (key
 * nodes carry no path of their own). */
void policy_unknown_key(pctx *c, const cfg_node *map, guint i, const char *const *allowed,
			const char *what)
{
	const cfg_node *key = map->keys->pdata[i];
	const char *path = ((const cfg_node *)map->items->pdata[i])->path;
	const char *hint = cfg_did_you_mean(key->scalar, allowed);
	g_autofree char *list = g_strjoinv(", ", (char **)allowed);
	if (hint)
		policy_err(c, ERRC(policy_unknown_key), key, path,
			   "unknown %s '%s' (did you mean '%s'?)", what, key->scalar, hint);
	else
		policy_err(c, ERRC(policy_unknown_key), key, path,
			   "unknown %s '%s'; expected one of: %s", what, key->scalar, list);
}

/* Reports every key of map not in allowed. */
bool policy_check_keys(pctx *c, const cfg_node *map, const char *const *allowed)
{
	bool ok = true;
	for (guint i = 0; i < map->keys->len; i++) {
		const cfg_node *k = map->keys->pdata[i];
		if (!g_strv_contains(allowed, k->scalar)) {
			policy_unknown_key(c, map, i, allowed, "key");
			ok = false;
		}
	}
	return ok;
}

int policy_want_enum(pctx *c, const cfg_node *n, const char *const *names, const char *what)
{
	const char *s = policy_want_string(c, n);
	if (!s)
		return -1;
	for (int i = 0; names[i]; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	const char *hint = cfg_did_you_mean(s, names);
	g_autofree char *list = g_strjoinv(", ", (char **)names);
	if (hint)
		policy_err(c, ERRC(policy_type), n, n->path, "unknown %s '%s' (did you mean '%s'?)",
			   what, s, hint);
	else
		policy_err(c, ERRC(policy_type), n, n->path, "unknown %s '%s'; expected one of: %s",
			   what, s, list);
	return -1;
}

bool policy_valid_name(const char *s, bool allow_upper_dot)
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

const char *policy_want_name(pctx *c, const cfg_node *n, const char *what)
{
	const char *s = policy_want_string(c, n);
	if (s && !policy_valid_name(s, false)) {
		policy_err(c, ERRC(policy_type), n, n->path,
			   "'%s' is not a valid %s name: 1 to 64 of a-z 0-9 _ -, starting with a "
			   "letter "
			   "or digit",
			   s, what);
		return NULL;
	}
	return s;
}

/* Absolute and normalised: no expansion is ever done, so what is written is
 * exactly what is opened. */
const char *policy_want_abs_path(pctx *c, const cfg_node *n)
{
	const char *s = policy_want_string(c, n);
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
		policy_err(c, ERRC(policy_path), n, n->path, "path '%s' %s", s, why);
		return NULL;
	}
	return s;
}

/* A string or a sequence of strings; each checked by check(c, node) when set. */
GPtrArray *policy_want_string_list(pctx *c, const cfg_node *n, bool one_allowed)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	if (one_allowed && n->kind == CFG_SCALAR) {
		const char *s = policy_want_string(c, n);
		if (s)
			g_ptr_array_add(out, g_strdup(s));
		return out;
	}
	if (!policy_want_seq(c, n))
		return out;
	for (guint i = 0; i < n->items->len; i++) {
		const char *s = policy_want_string(c, n->items->pdata[i]);
		if (s)
			g_ptr_array_add(out, g_strdup(s));
	}
	return out;
}

/* ---- a limits map (a tier's limits, a rule's limit) ------------------------------- */

void policy_want_limits(pctx *c, const cfg_node *n, cordon_plugin_limits *out)
{
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, limit_names);
	for (unsigned i = 0; i < CORDON_LIMIT_COUNT_; i++) {
		const cfg_node *v = cfg_map_get(n, limit_defs[i].name);
		uint64_t val;
		if (v && want_limit(c, v, i, &val)) {
			out->value[i] = val;
			out->set |= 1u << i;
		}
	}
}
