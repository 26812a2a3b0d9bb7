/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Taken from the host when set there. */
static const char *const baseline[] = { "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", NULL };

/* Never the host's: its home and temporary directory are paths the work
 * cannot write under confinement, and they name the host's user. The
 * sandbox's own /tmp (private in the kernel and container tiers) is both;
 * a host that wants another value grants it. */
static const char *const fixed[] = { "HOME=/tmp", "TMPDIR=/tmp", NULL };

/* Names that change what gets executed or loaded rather than what the work
 * computes: never grantable. */
static const char *const forbidden_prefixes[] = { "LD_",
						  "DYLD_",
						  "GLIBC_TUNABLES",
						  "GCONV_PATH",
						  "BASH_ENV",
						  "ENV",
						  "BASH_FUNC_",
						  "SHELLOPTS",
						  "PS4",
						  "IFS",
						  "MALLOC_",
						  "NLSPATH",
						  "HOSTALIASES",
						  "RESOLV_HOST_CONF",
						  "LOCPATH",
						  "PYTHONSTARTUP",
						  "PERL5OPT",
						  "NODE_OPTIONS",
						  NULL };

static bool is_forbidden(const char *key)
{
	for (size_t i = 0; forbidden_prefixes[i]; i++) {
		const char *p = forbidden_prefixes[i];
		size_t n = strlen(p);
		bool prefix = p[n - 1] == '_';
		if (prefix ? strncmp(key, p, n) == 0 : strcmp(key, p) == 0)
			return true;
	}
	return false;
}

int env_check_grant(const char *key, const char *value, cordon_error **reterr)
{
	if (!key || !*key || !value || strlen(key) > 255)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(env_invalid),
				 "an environment grant needs a name and a value");
	if (!(g_ascii_isalpha(key[0]) || key[0] == '_'))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(env_invalid),
				 "environment name '%s' must start with a letter or '_'", key);
	for (const char *c = key; *c; c++)
		if (!(g_ascii_isalnum(*c) || *c == '_'))
			return error_set(
				reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(env_invalid),
				"environment name '%s' may hold only letters, digits and '_'", key);
	if (is_forbidden(key))
		return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, ERRC(env_forbidden),
				 "environment variable %s cannot be granted: it changes what the "
				 "work loads or executes",
				 key);
	return 0;
}

static const char *baseline_default(const char *key)
{
	if (strcmp(key, "PATH") == 0)
		return "/usr/local/bin:/usr/bin:/bin";
	if (strcmp(key, "LANG") == 0)
		return "C.UTF-8";
	return NULL;
}

static void overlay(GHashTable *env, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return;
	g_hash_table_replace(env, g_strndup(kv, eq - kv), g_strdup(eq + 1));
}

static void wipe_free(gpointer p)
{
	if (p)
		explicit_bzero(p, strlen(p));
	g_free(p);
}

void env_entry_free(gpointer p) { wipe_free(p); }

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **env_build(const GPtrArray *grants, const char *const *run_grants)
{
	g_autoptr(GHashTable)
		env = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, wipe_free);
	for (size_t i = 0; baseline[i]; i++) {
		const char *v = g_getenv(baseline[i]);
		if (!v)
			v = baseline_default(baseline[i]);
		if (v)
			g_hash_table_replace(env, g_strdup(baseline[i]), g_strdup(v));
	}
	for (size_t i = 0; fixed[i]; i++)
		overlay(env, fixed[i]);
	for (guint i = 0; grants && i < grants->len; i++)
		overlay(env, grants->pdata[i]);
	for (size_t i = 0; run_grants && run_grants[i]; i++)
		overlay(env, run_grants[i]);

	g_autofree gpointer *keys = g_hash_table_get_keys_as_array(env, NULL);
	guint n = g_hash_table_size(env);
	qsort(keys, n, sizeof(*keys), cmp_strp);
	char **out = g_new0(char *, n + 1);
	for (guint i = 0; i < n; i++)
		out[i] = g_strdup_printf("%s=%s", (char *)keys[i],
					 (char *)g_hash_table_lookup(env, keys[i]));
	return out;
}
