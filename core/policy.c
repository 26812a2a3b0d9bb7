/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy: the built-in default, parsing a text or a trusted file into
 * the typed structs (policy-schema.c reads the sections), and the summary.
 * docs/policy.md is the contract. */
#include "config.h"

#include "policy-internal.h"

#include "filetrust.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

const char *cordon_policy_default_text(void) { return policy_default_text(); }

/* ---- the policy ------------------------------------------------------------------------ */

static cordon_policy *policy_alloc(const char *name)
{
	cordon_policy *p = g_new0(cordon_policy, 1);
	p->source = g_strdup(name);
	p->plugin_load = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(p->plugin_load, NULL); /* kept NULL-terminated */
	p->tiers = g_ptr_array_new_with_free_func(policy_tier_free);
	p->rules = g_ptr_array_new_with_free_func(policy_rule_free);
	p->services = g_ptr_array_new_with_free_func(policy_service_free);
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
	pctx c = { .name = name,
		   .p = p,
		   .errs = policy_errors_new(name),
		   .rule_names = g_hash_table_new(g_str_hash, g_str_equal) };
	r = policy_read_version(&c, root, reterr);
	if (r >= 0)
		policy_read_sections(&c, root);
	/* A wrong version is reported alone (nothing else was read). */
	int e = policy_errors_finish(c.errs, r < 0 ? NULL : reterr);
	r = r < 0 ? r : e;
	g_hash_table_unref(c.rule_names);
	if (c.tier_index)
		g_hash_table_unref(c.tier_index);
	if (r < 0)
		return r;
	g_ptr_array_remove_index(p->plugin_load, p->plugin_load->len - 1);
	g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)text,
							   len);
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
	g_ptr_array_unref(p->services);
	g_free(p->audit_path);
	cfg_node_free(p->root);
	g_free(p);
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
		g_string_append_printf(s,
				       "  %-13s requires %-16s tiers: ", policy_trust_names[t - 1],
				       cordon_containment_to_string(pt->require));
		for (guint i = 0; i < pt->tiers->len; i++)
			g_string_append_printf(s, "%s%s", i ? ", " : "",
					       (char *)pt->tiers->pdata[i]);
		if (!pt->tiers->len)
			g_string_append(s, "(none: always refused)");
		if (pt->declared && pt->declared < builtin && !pt->relax)
			g_string_append_printf(s,
					       "  [require %s raised to the built-in minimum; "
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
		if (t->max_containment)
			g_string_append_printf(s, "; max_containment %s",
					       cordon_containment_to_string(t->max_containment));
		if (t->fallback_next)
			g_string_append(s, "; fallback: next");
		if (!tier_is_candidate(p, t->name))
			g_string_append(s, "  [no trust level lists it]");
		g_string_append_c(s, '\n');
	}
	for (int t = CORDON_TRUST_SEMI_TRUSTED; t <= CORDON_TRUST_UNTRUSTED; t++)
		if (p->trust[t].require == CORDON_CONTAINMENT_PROCESS_JAIL)
			g_string_append_printf(s,
					       "WARNING: %s: %s work may run in the process jail, "
					       "with the rights of the user running cordon (host "
					       "root, as root)\n",
					       policy_jail_key((cordon_trust)t),
					       policy_trust_names[t - 1]);
	g_string_append(s, "trust:\n");
	describe_trust(s, p);
	g_string_append_printf(s, "select: %s\n",
			       p->select == POLICY_SELECT_FIRST ? "first" : "strongest");
	g_string_append_printf(s, "rules (%u):\n", p->rules->len);
	for (guint i = 0; i < p->rules->len; i++) {
		const policy_rule *r = p->rules->pdata[i];
		static const char *const modes[] = { "", " [mode: warn]", " [mode: audit]" };
		g_string_append_printf(s, "  %s:%s%s", r->name, modes[r->mode],
				       r->deny ? " deny" : "");
		if (r->require_egress >= 0)
			g_string_append_printf(s, " egress %s",
					       r->require_egress ? "governed" : "deny");
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
	if (p->services->len)
		g_string_append_printf(s, "services (%u):\n", p->services->len);
	for (guint i = 0; i < p->services->len; i++) {
		const policy_service *v = p->services->pdata[i];
		g_string_append_printf(s, "  %s: %s -> https://%s:%u%s (%s from secret %s)\n",
				       v->name, v->env, v->host, (unsigned)v->port, v->prefix,
				       v->header, v->secret_name);
	}
	if (p->audit_path)
		g_string_append_printf(s, "audit: %s (%s)\n", p->audit_path,
				       p->audit_required ? "required: a write failure refuses work"
							 : "best effort");
	else
		g_string_append(s, "audit: none\n");
	return g_string_free(s, FALSE);
}
