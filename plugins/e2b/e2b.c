/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `e2b` driver: a tier's configuration (where E2B is, the key from the
 * policy's secret grant), the probe (the API answers and takes the key,
 * within a deadline), and a sandbox's life: created at open from the tier's
 * template with the tier's time to live as a backstop, killed at close.
 */
#include "config.h"

#include "e2b.h"
#include "errcodes.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cordon_host *e2b_host;

static const cordon_plugin_config_key e2b_keys[] = {
	{ "api_key", CORDON_PLUGIN_CONFIG_SECRET, 1 },
	{ "api_url", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "sandbox_url", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "template", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "root", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "ca_file", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "sandbox_timeout", CORDON_PLUGIN_CONFIG_DURATION, 0 },
	{ "request_timeout", CORDON_PLUGIN_CONFIG_DURATION, 0 },
	{ NULL, 0, 0 },
};

static char *dup_or(const char *s, const char *dflt) { return e2b_host->strdup(s ? s : dflt); }

/* https anywhere; plain http only to this host's loopback (a local cordon
 * server), where nothing crosses a network. */
static const char *url_problem(const char *url)
{
	static const char *const loopback[] = { "http://127.0.0.1:",
						"http://127.0.0.1/",
						"http://localhost:",
						"http://localhost/",
						"http://[::1]:",
						"http://[::1]/",
						NULL };
	size_t n = strlen(url);
	if (n == 0 || n > 512 || url[n - 1] == '/')
		return "must be a URL without a trailing slash";
	if (strncmp(url, "https://", 8) == 0)
		return NULL;
	for (const char *const *l = loopback; *l; l++)
		if (strncmp(url, *l, strlen(*l)) == 0 || strcmp(url, *l) == 0)
			return NULL;
	char with_slash[520];
	snprintf(with_slash, sizeof(with_slash), "%s/", url);
	for (const char *const *l = loopback; *l; l++)
		if (strcmp(with_slash, *l) == 0)
			return NULL;
	return "must be https:// (plain http only to 127.0.0.1, localhost or [::1])";
}

/* E2B's domain from its API URL: https://api.DOMAIN -> DOMAIN. */
static char *domain_of(const char *api_url)
{
	const char *h = strstr(api_url, "://");
	h = h ? h + 3 : api_url;
	if (strncmp(h, "api.", 4) == 0)
		h += 4;
	size_t n = strcspn(h, "/:");
	char *d = e2b_host->alloc(n + 1);
	memcpy(d, h, n);
	return d;
}

static void tier_free(e2b_tier *t)
{
	if (!t)
		return;
	if (t->api_key) {
		explicit_bzero(t->api_key, strlen(t->api_key));
		e2b_host->free(t->api_key);
	}
	e2b_host->free(t->name);
	e2b_host->free(t->api_url);
	e2b_host->free(t->sandbox_url);
	e2b_host->free(t->domain);
	e2b_host->free(t->template_id);
	e2b_host->free(t->root);
	e2b_host->free(t->ca_file);
	e2b_host->free(t);
}

static int configure_urls(e2b_tier *t, const cordon_plugin_config *cfg, cordon_plugin_error *err)
{
	const char *api = NULL, *sbx = NULL, *root = NULL, *ca = NULL, *why;
	e2b_host->config_string(cfg, "api_url", &api);
	e2b_host->config_string(cfg, "sandbox_url", &sbx);
	e2b_host->config_string(cfg, "root", &root);
	e2b_host->config_string(cfg, "ca_file", &ca);
	t->api_url = dup_or(api, "https://api.e2b.app");
	if ((why = url_problem(t->api_url)))
		return e2b_host->config_error(cfg, "api_url", err, "%s", why);
	if (sbx && (why = url_problem(sbx)))
		return e2b_host->config_error(cfg, "sandbox_url", err, "%s", why);
	t->sandbox_url = sbx ? e2b_host->strdup(sbx) : NULL;
	t->domain = domain_of(t->api_url);
	t->root = dup_or(root, "/home/user");
	if (t->root[0] != '/' || strstr(t->root, "..") || strlen(t->root) < 2)
		return e2b_host->config_error(cfg, "root", err, "must be an absolute directory");
	if (ca && ca[0] != '/')
		return e2b_host->config_error(cfg, "ca_file", err, "must be an absolute path");
	t->ca_file = ca ? e2b_host->strdup(ca) : NULL;
	return 0;
}

static int e2b_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			 cordon_plugin_error *err)
{
	e2b_tier *t = e2b_host->alloc(sizeof(*t));
	const char *tmpl = NULL;
	uint64_t ttl_ms = 600000, req_ms = 30000;
	t->name = e2b_host->strdup(e2b_host->config_tier_name(cfg));
	int r = configure_urls(t, cfg, err);
	e2b_host->config_string(cfg, "template", &tmpl);
	t->template_id = dup_or(tmpl, "base");
	e2b_host->config_u64(cfg, "sandbox_timeout", &ttl_ms);
	e2b_host->config_u64(cfg, "request_timeout", &req_ms);
	if (r >= 0 && (ttl_ms < 1000 || ttl_ms > 86400000))
		r = e2b_host->config_error(cfg, "sandbox_timeout", err, "between 1s and 24h");
	if (r >= 0 && (req_ms < 100 || req_ms > 600000))
		r = e2b_host->config_error(cfg, "request_timeout", err, "between 100ms and 10m");
	t->ttl_s = ttl_ms / 1000;
	t->request_ms = req_ms;
	/* The key is resolved once, held only in this plugin's memory, wiped at unconfigure. */
	if (r >= 0)
		r = e2b_host->config_secret(cfg, "api_key", &t->api_key, err);
	if (r >= 0 && strpbrk(t->api_key, "\r\n"))
		r = e2b_host->config_error(cfg, "api_key", err, "the key holds a line break");
	if (r < 0) {
		tier_free(t);
		return r;
	}
	*ret_tier = t;
	return 0;
}

static void e2b_unconfigure(void *tier) { tier_free(tier); }

static int e2b_probe(void *tier, cordon_plugin_probe *ret)
{
	e2b_tier *t = tier;
	cordon_plugin_error *err = NULL; /* messages go to the reason: a throwaway error */
	e2b_call c = { .method = "GET",
		       .api = true,
		       .idempotent = true,
		       .cancel_fd = -1,
		       .timeout_ms = t->request_ms < 10000 ? t->request_ms : 10000 };
	c.url = e2b_url(t->api_url, "/sandboxes", NULL, NULL);
	ret->containment = CORDON_PLUGIN_CONTAINMENT_REMOTE;
	int r = e2b_http(t, &c, err);
	if (r < 0)
		snprintf(ret->reason, sizeof(ret->reason), "%s: %s", t->api_url,
			 c.failure[0] ? c.failure : "no usable answer");
	else if (c.status == 401 || c.status == 403)
		snprintf(ret->reason, sizeof(ret->reason), "%s refuses the API key (%ld)",
			 t->api_url, c.status);
	else if (c.status != 200)
		snprintf(ret->reason, sizeof(ret->reason), "%s answers %ld to a listing",
			 t->api_url, c.status);
	else
		snprintf(ret->reason, sizeof(ret->reason), "E2B at %s takes the key; template %s",
			 t->api_url, t->template_id);
	ret->available = r >= 0 && c.status == 200;
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	return 0;
}

/* ---- a sandbox --------------------------------------------------------------------- */

static char *create_body(const e2b_tier *t, const cordon_plugin_open_spec *spec)
{
	json_object *o = json_object_new_object(), *meta = json_object_new_object();
	json_object_object_add(o, "templateID", json_object_new_string(t->template_id));
	json_object_object_add(o, "timeout", json_object_new_int64((int64_t)t->ttl_s));
	json_object_object_add(o, "secure", json_object_new_boolean(1));
	json_object_object_add(o, "allow_internet_access",
			       json_object_new_boolean(spec->egress == CORDON_PLUGIN_EGRESS_ALLOW));
	json_object_object_add(meta, "cordon.tier", json_object_new_string(t->name));
	if (!e2b_owner_metadata(meta)) /* the time to live still ends it */
		e2b_host->log(CORDON_PLUGIN_LOG_WARNING, "e2b",
			      "cannot name this process as the sandbox's owner: gc will not "
			      "find it if this host dies");
	json_object_object_add(o, "metadata", meta);
	char *s = e2b_host->strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

bool e2b_valid_id(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	return n > 0 && n <= E2B_ID_MAX && strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") == n;
}

static int read_created(e2b_sandbox *s, const e2b_call *c, cordon_plugin_error *err)
{
	json_object *o = e2b_parse(c->resp, c->resp_len, "create", err);
	if (!o)
		return -EPROTO;
	bool bad = false;
	const char *id = e2b_string(o, "sandboxID", &bad);
	const char *token = e2b_string(o, "envdAccessToken", &bad);
	const char *domain = e2b_string(o, "domain", &bad);
	int r = 0;
	if (e2b_valid_id(id)) /* known from here on, so that a failed open still kills it */
		snprintf(s->id, sizeof(s->id), "%s", id);
	if (bad || !e2b_valid_id(id) ||
	    (token && (strlen(token) > E2B_TOKEN_MAX || strpbrk(token, "\r\n"))) ||
	    (domain &&
	     (strlen(domain) > 253 ||
	      strspn(domain, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(domain))))
		r = e2b_protocol_error(err,
				       "create: sandboxID, envdAccessToken or domain is missing "
				       "or malformed");
	if (r == 0) {
		s->token = token ? e2b_host->strdup(token) : NULL;
		if (s->tier->sandbox_url) {
			s->envd = e2b_host->strdup(s->tier->sandbox_url);
		} else {
			const char *d = domain && *domain ? domain : s->tier->domain;
			size_t n = strlen(id) + strlen(d) + 32;
			s->envd = e2b_host->alloc(n);
			snprintf(s->envd, n, "https://" E2B_ENVD_PORT "-%s.%s", id, d);
		}
	}
	json_object_put(o);
	return r;
}

void e2b_kill_remote(const e2b_tier *t, const char *id)
{
	cordon_plugin_error *err = NULL;
	char path[E2B_ID_MAX + 16];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	e2b_call c = { .method = "DELETE", .api = true, .idempotent = true, .cancel_fd = -1 };
	c.url = e2b_url(t->api_url, path, NULL, NULL);
	if (e2b_http(t, &c, err) < 0 || (c.status != 204 && c.status != 404 && c.status != 200))
		e2b_host->log(CORDON_PLUGIN_LOG_WARNING, "e2b",
			      "sandbox %s: kill answered %ld; its "
			      "timeout (%llu s) ends it",
			      id, c.status, (unsigned long long)t->ttl_s);
	e2b_call_clear(&c);
	e2b_host->free(c.url);
}

static int e2b_open(void *tier, const cordon_plugin_open_spec *spec, void **ret,
		    cordon_plugin_error *err)
{
	e2b_tier *t = tier;
	if (spec->workspace)
		return e2b_host->error_set(err, ENOTSUP, CORDON_PLUGIN_ERROR_FORBIDDEN,
					   ERRC(sandbox_denied),
					   "e2b: a remote sandbox cannot hold a host workspace");
	/* The template's machine bounds memory, tasks and files; this driver cannot
	 * set them per sandbox, so it refuses rather than ignores them. Wall time
	 * (envd's deadline and ours) and output (the core) are enforced. */
	static const struct {
		unsigned limit;
		const char *name;
	} unenforceable[] = { { CORDON_PLUGIN_LIMIT_MEMORY, "memory" },
			      { CORDON_PLUGIN_LIMIT_PIDS, "pids" },
			      { CORDON_PLUGIN_LIMIT_CPU_MILLI, "cpus" },
			      { CORDON_PLUGIN_LIMIT_NOFILE, "nofile" },
			      { CORDON_PLUGIN_LIMIT_FSIZE, "fsize" } };
	for (size_t i = 0; i < sizeof(unenforceable) / sizeof(unenforceable[0]); i++)
		if (spec->limits.set & (1u << unenforceable[i].limit))
			return e2b_host->error_set(
				err, ENOTSUP, CORDON_PLUGIN_ERROR_FORBIDDEN,
				ERRC(limit_unenforceable),
				"e2b: a %s limit cannot be "
				"set on a remote sandbox (its template's machine "
				"decides)",
				unenforceable[i].name);
	if (spec->egress == CORDON_PLUGIN_EGRESS_GOVERNED)
		return e2b_host->error_set(
			err, ENOTSUP, CORDON_PLUGIN_ERROR_FORBIDDEN, ERRC(egress_unsupported),
			"e2b: governed egress is not available on a remote sandbox "
			"(deny or allow)");
	char *body = create_body(t, spec);
	/* Not idempotent: a retried create could leave a second sandbox behind. */
	e2b_call c = { .method = "POST",
		       .api = true,
		       .content_type = "application/json",
		       .body = body,
		       .body_len = strlen(body),
		       .cancel_fd = -1 };
	c.url = e2b_url(t->api_url, "/sandboxes", NULL, NULL);
	e2b_sandbox *s = e2b_host->alloc(sizeof(*s));
	s->tier = t;
	s->egress = spec->egress;
	int r = e2b_http(t, &c, err);
	if (r >= 0 && c.status != 201 && c.status != 200)
		r = e2b_status_error(&c, "create", err);
	else if (r >= 0)
		r = read_created(s, &c, err);
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	e2b_host->free(body);
	if (r < 0) {
		if (s->id[0])
			e2b_kill_remote(t, s->id);
		e2b_host->free(s);
		return r;
	}
	e2b_host->log(CORDON_PLUGIN_LOG_DEBUG, "e2b", "sandbox %s created on %s", s->id,
		      t->api_url);
	*ret = s;
	return 0;
}

static void e2b_close(void *sandbox)
{
	e2b_sandbox *s = sandbox;
	e2b_kill_remote(s->tier, s->id);
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		e2b_host->free(s->token);
	}
	e2b_host->free(s->envd);
	e2b_host->free(s);
}

/* E2B's pause persists the sandbox (its memory and files) and stops its time to live; a
 * 409 is "already paused". Connect resumes it (200: it was running, 201: resumed) with the
 * tier's time to live again. */
static int lifecycle(e2b_sandbox *s, const char *action, const char *body, cordon_plugin_error *err)
{
	char path[E2B_ID_MAX + 32];
	snprintf(path, sizeof(path), "/sandboxes/%s/%s", s->id, action);
	e2b_call c = { .method = "POST",
		       .api = true,
		       .idempotent = true, /* a repeat is a 409 or a 200: no second sandbox */
		       .content_type = "application/json",
		       .body = body,
		       .body_len = strlen(body),
		       .cancel_fd = -1 };
	c.url = e2b_url(s->tier->api_url, path, NULL, NULL);
	int r = e2b_http(s->tier, &c, err);
	bool pause = strcmp(action, "pause") == 0;
	if (r >= 0 &&
	    !(pause ? c.status == 204 || c.status == 409 : c.status == 200 || c.status == 201))
		r = e2b_status_error(&c, action, err);
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	return r < 0 ? r : 0;
}

static int e2b_pause(void *sandbox, cordon_plugin_error *err)
{
	return lifecycle(sandbox, "pause", "{}", err);
}

static int e2b_resume(void *sandbox, cordon_plugin_error *err)
{
	e2b_sandbox *s = sandbox;
	char body[64];
	snprintf(body, sizeof(body), "{\"timeout\":%llu}", (unsigned long long)s->tier->ttl_s);
	return lifecycle(s, "connect", body, err);
}

static const cordon_plugin_driver e2b_driver = {
	.size = sizeof(cordon_plugin_driver),
	.flags = CORDON_PLUGIN_DRIVER_TTY,
	.name = "e2b",
	.config_keys = e2b_keys,
	.configure = e2b_configure,
	.unconfigure = e2b_unconfigure,
	.probe = e2b_probe,
	.open = e2b_open,
	.run = e2b_run,
	.read_file = e2b_read_file,
	.write_file = e2b_write_file,
	.glob = e2b_glob,
	.walk = e2b_walk,
	.close = e2b_close,
	.gc = e2b_gc,
	.pause = e2b_pause,
	.resume = e2b_resume,
};

static int e2b_init(const cordon_host *host, cordon_plugin_registrar *reg, cordon_plugin_error *err)
{
	e2b_host = host;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return host->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(driver_failed),
				       "e2b: libcurl does not initialise");
	return host->register_driver(reg, &e2b_driver);
}

CORDON_PLUGIN_DEFINE("e2b", PACKAGE_VERSION, "Remote sandboxes through E2B's API",
		     "LGPL-2.1-or-later", e2b_init)
