/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `secrets:` and `services:` (docs/policy.md): the upstreams cordon's
 * reverse proxy (core/net/service.c) reaches for the work, and the grants of
 * the credentials it adds. Only the forms are checked here: a secret is read
 * when a sandbox starts its services, never while the policy is read.
 */
#include "config.h"

#include "policy-internal.h"

#include <string.h>

/* The longest injected value, without the secret (a header line is bounded). */
#define VALUE_MAX 1024
#define SECRET_REF_OPEN "${secret:"

void policy_service_free(gpointer data)
{
	policy_service *s = data;
	g_free(s->name);
	g_free(s->env);
	g_free(s->host);
	g_free(s->prefix);
	g_free(s->ca_file);
	g_free(s->header);
	g_free(s->value_pre);
	g_free(s->value_post);
	g_free(s->secret_name);
	g_free(s);
}

/* RFC 9110's token: what a header name may be. */
static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!g_ascii_isalnum(*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return false;
	return true;
}

/* Headers whose meaning the proxy owns (framing, routing), never injected. */
static bool header_reserved(const char *h)
{
	static const char *const names[] = { "host",       "content-length", "transfer-encoding",
					     "connection", "keep-alive",     "upgrade",
					     "te",         "trailer",        NULL };
	for (int i = 0; names[i]; i++)
		if (g_ascii_strcasecmp(h, names[i]) == 0)
			return true;
	return false;
}

/* "https://host[:port][/path]": TLS only, so the credential never travels in
 * clear; no user info, query or fragment (the work adds its own path). */
static void read_upstream(pctx *c, policy_service *s, const cfg_node *n)
{
	const char *u = policy_want_string(c, n);
	if (!u)
		return;
	g_autoptr(GError) e = NULL;
	g_autoptr(GUri) uri = g_uri_parse(u, G_URI_FLAGS_NONE, &e);
	const char *why = NULL;
	if (!uri)
		why = e->message;
	else if (g_ascii_strcasecmp(g_uri_get_scheme(uri), "https") != 0)
		why = "the upstream must be https:// (the credential never travels in clear)";
	else if (!g_uri_get_host(uri) || !*g_uri_get_host(uri))
		why = "the upstream names no host";
	else if (g_uri_get_userinfo(uri) || g_uri_get_query(uri) || g_uri_get_fragment(uri))
		why = "the upstream takes no user info, query or fragment";
	else if (g_uri_get_port(uri) == 0 || g_uri_get_port(uri) > 65535)
		why = "the upstream's port is out of range";
	if (why) {
		policy_err(c, ERRC(policy_type), n, n->path, "'%s': %s", u, why);
		return;
	}
	s->host = g_strdup(g_uri_get_host(uri));
	s->port = (uint16_t)(g_uri_get_port(uri) > 0 ? g_uri_get_port(uri) : 443);
	const char *path = g_uri_get_path(uri);
	size_t len = strlen(path);
	while (len > 0 && path[len - 1] == '/')
		len--;
	s->prefix = g_strndup(path, len);
}

/* "TEXT${secret:NAME}TEXT": one reference to a secret of `secrets:`; the
 * text around it printable ASCII (it becomes part of a header line). */
static void read_value(pctx *c, policy_service *s, const cfg_node *secrets, const cfg_node *n)
{
	const char *v = policy_want_string(c, n);
	if (!v)
		return;
	const char *open = strstr(v, SECRET_REF_OPEN);
	const char *close = open ? strchr(open, '}') : NULL;
	const char *why = NULL;
	for (const char *p = v; !why && *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			why = "holds a character that is not printable ASCII";
	if (!why && strlen(v) > VALUE_MAX)
		why = "is longer than 1024 characters";
	if (!why && !close)
		why = "names no secret: it takes one ${secret:NAME}";
	if (!why && strstr(close, SECRET_REF_OPEN))
		why = "names more than one secret";
	if (why) {
		policy_err(c, ERRC(policy_type), n, n->path, "the injected value %s", why);
		return;
	}
	const char *name = open + strlen(SECRET_REF_OPEN);
	g_autofree char *ref = g_strndup(name, (gsize)(close - name));
	const cfg_node *grant = secrets ? cfg_map_get(secrets, ref) : NULL;
	if (!grant) {
		policy_err(c, ERRC(policy_invalid), n, n->path,
			   "${secret:%s} is not a key of `secrets:`", ref);
		return;
	}
	s->value_pre = g_strndup(v, (gsize)(open - v));
	s->value_post = g_strdup(close + 1);
	s->secret_name = g_steal_pointer(&ref);
	s->secret = grant;
}

static void read_inject(pctx *c, policy_service *s, const cfg_node *secrets, const cfg_node *n)
{
	static const char *const keys[] = { "header", "value", NULL };
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	const cfg_node *h = cfg_map_get(n, "header"), *v = cfg_map_get(n, "value");
	if (!h || !v) {
		policy_err(c, ERRC(policy_invalid), n, n->path,
			   "inject takes a header and a value");
		return;
	}
	const char *name = policy_want_string(c, h);
	if (name && (!is_token(name) || strlen(name) > 64 || header_reserved(name)))
		policy_err(c, ERRC(policy_type), h, h->path,
			   "'%s' cannot be injected: a header name (1 to 64 token characters) "
			   "that is not one the proxy sets itself (Host, Content-Length, "
			   "Transfer-Encoding, Connection, ...)",
			   name);
	else if (name)
		s->header = g_strdup(name);
	read_value(c, s, secrets, v);
}

/* MODEL_API_BASE_URL for model-api. */
static char *env_name(const char *name)
{
	GString *e = g_string_new(NULL);
	for (const char *p = name; *p; p++)
		g_string_append_c(e, *p == '-' ? '_' : g_ascii_toupper(*p));
	g_string_append(e, "_BASE_URL");
	return g_string_free(e, FALSE);
}

static void read_service(pctx *c, const cfg_node *secrets, const cfg_node *n, GHashTable *names)
{
	static const char *const keys[] = { "name", "upstream", "ca", "inject", NULL };
	static const char *const required[] = { "name", "upstream", "inject", NULL };
	if (!policy_want_map(c, n))
		return;
	policy_check_keys(c, n, keys);
	for (int i = 0; required[i]; i++)
		if (!cfg_map_get(n, required[i]))
			policy_err(c, ERRC(policy_invalid), n, n->path, "missing required key '%s'",
				   required[i]);
	policy_service *s = g_new0(policy_service, 1);
	g_ptr_array_add(c->p->services, s);
	const cfg_node *v;
	if ((v = cfg_map_get(n, "name"))) {
		const char *name = policy_want_name(c, v, "service");
		if (name && !g_hash_table_add(names, g_strdup(name)))
			policy_err(c, ERRC(policy_invalid), v, v->path,
				   "service name '%s' is used twice", name);
		else if (name) {
			s->name = g_strdup(name);
			s->env = env_name(name);
		}
	}
	if ((v = cfg_map_get(n, "upstream")))
		read_upstream(c, s, v);
	if ((v = cfg_map_get(n, "ca"))) {
		const char *ca = policy_want_abs_path(c, v);
		s->ca_file = ca ? g_strdup(ca) : NULL;
	}
	if ((v = cfg_map_get(n, "inject")))
		read_inject(c, s, secrets, v);
}

void policy_read_services(pctx *c, const cfg_node *secrets, const cfg_node *services)
{
	if (secrets && policy_want_map(c, secrets))
		for (guint i = 0; i < secrets->keys->len; i++) {
			const cfg_node *k = secrets->keys->pdata[i];
			if (!policy_valid_name(k->scalar, true))
				policy_err(c, ERRC(policy_type), k, secrets->path,
					   "'%s' is not a valid secret name: 1 to 64 of A-Z a-z "
					   "0-9 _ . -",
					   k->scalar);
			policy_check_secret(c, secrets->items->pdata[i]);
		}
	if (!services || !policy_want_seq(c, services))
		return;
	if (services->items->len > POLICY_MAX_SERVICES) {
		policy_err(c, ERRC(policy_range), services, services->path, "at most %d services",
			   POLICY_MAX_SERVICES);
		return;
	}
	g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (guint i = 0; i < services->items->len; i++)
		read_service(c, secrets, services->items->pdata[i], names);
}
