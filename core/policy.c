/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB until the policy parser lands (issue 3): the default policy built in C. */
#include "config.h"

#include "policy.h"

#include <errno.h>
#include <string.h>

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
	return "cordon: 1\n"
	       "tiers:\n"
	       "  jail:   {driver: local, confine: none}\n"
	       "  kernel: {driver: local, confine: kernel}\n"
	       "trust:\n"
	       "  trusted:      {require: process-jail, tiers: [jail]}\n"
	       "  semi-trusted: {require: kernel, tiers: [kernel]}\n"
	       "  untrusted:    {require: microvm, tiers: []}\n"
	       "select: strongest\n";
}

static cfg_node *scalar(const char *text, const char *path)
{
	cfg_node *n = g_new0(cfg_node, 1);
	n->kind = CFG_SCALAR;
	n->scalar = g_strdup(text);
	n->plain = true;
	n->path = g_strdup(path);
	return n;
}

static cfg_node *map_new(const char *path)
{
	cfg_node *n = g_new0(cfg_node, 1);
	n->kind = CFG_MAP;
	n->path = g_strdup(path);
	n->keys = g_ptr_array_new_with_free_func((GDestroyNotify)cfg_node_free);
	n->items = g_ptr_array_new_with_free_func((GDestroyNotify)cfg_node_free);
	return n;
}

static void map_put(cfg_node *map, const char *key, cfg_node *value)
{
	g_ptr_array_add(map->keys, scalar(key, map->path));
	g_ptr_array_add(map->items, value);
}

static void add_tier(cordon_policy *p, const char *name, const char *confine)
{
	g_autofree char *path = g_strdup_printf("tiers.%s", name);
	cfg_node *sec = map_new(path);
	map_put(sec, "driver", scalar("local", path));
	map_put(sec, "confine", scalar(confine, path));
	map_put(p->root, name, sec);
	policy_tier *t = g_new0(policy_tier, 1);
	t->name = g_strdup(name);
	t->driver = g_strdup("local");
	t->section = sec;
	g_ptr_array_add(p->tiers, t);
}

static void tier_free(gpointer p)
{
	policy_tier *t = p;
	g_free(t->name);
	g_free(t->driver);
	g_free(t);
}

cordon_policy *policy_new_default(void)
{
	cordon_policy *p = g_new0(cordon_policy, 1);
	p->source = g_strdup("<default>");
	p->plugin_load = g_ptr_array_new_with_free_func(g_free);
	p->tiers = g_ptr_array_new_with_free_func(tier_free);
	p->rules = g_ptr_array_new();
	p->root = map_new("");
	add_tier(p, "jail", "none");
	add_tier(p, "kernel", "kernel");
	for (int t = CORDON_TRUST_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++) {
		p->trust[t].set = true;
		p->trust[t].require = policy_builtin_minimum(t);
		p->trust[t].tiers = g_ptr_array_new_with_free_func(g_free);
	}
	g_ptr_array_add(p->trust[CORDON_TRUST_TRUSTED].tiers, g_strdup("jail"));
	g_ptr_array_add(p->trust[CORDON_TRUST_SEMI_TRUSTED].tiers, g_strdup("kernel"));
	return p;
}

int policy_parse(const char *text, size_t len, const char *name, cordon_policy **ret,
		 cordon_error **reterr)
{
	return error_set(reterr, ENOSYS, CORDON_ERROR_TERMINAL, "policy_unsupported",
			 "%s: YAML policies are not implemented yet", name ? name : "policy");
}

int policy_load_file(const char *path, cordon_policy **ret, cordon_error **reterr)
{
	return policy_parse(NULL, 0, path, ret, reterr);
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
	for (guint i = 0; i < p->tiers->len; i++) {
		const policy_tier *t = p->tiers->pdata[i];
		if (strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

int policy_check_section(const cordon_policy *p, const policy_tier *t,
			 const cordon_plugin_config_key *keys, cordon_error **reterr)
{
	return 0; /* STUB: strict checking comes with the parser */
}

/* loader engineer: replace with the policy grammar */
static int parse_unit(const char *text, const char *const *units, const uint64_t *mul,
		      uint64_t *ret)
{
	char *end = NULL;
	if (!text || !g_ascii_isdigit(*text))
		return -EINVAL;
	errno = 0;
	guint64 v = g_ascii_strtoull(text, &end, 10);
	if (errno)
		return -ERANGE;
	for (size_t i = 0; units[i]; i++)
		if (strcmp(end, units[i]) == 0) {
			if (mul[i] && v > UINT64_MAX / mul[i])
				return -ERANGE;
			*ret = v * mul[i];
			return 0;
		}
	return -EINVAL;
}

int policy_parse_size(const char *text, uint64_t *ret)
{
	static const char *const units[] = { "", "B", "KiB", "MiB", "GiB", "TiB", NULL };
	static const uint64_t mul[] = { 1, 1, 1ull << 10, 1ull << 20, 1ull << 30, 1ull << 40 };
	return parse_unit(text, units, mul, ret);
}

int policy_parse_duration(const char *text, uint64_t *ret_ms)
{
	static const char *const units[] = { "ms", "s", "m", "h", NULL };
	static const uint64_t mul[] = { 1, 1000, 60000, 3600000 };
	return parse_unit(text, units, mul, ret_ms);
}
