/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control plane (e2b-protocol.md §1): create, list, get, kill, timeout,
 * connect, pause and resume. Pause is the library's (cordon_sandbox_pause),
 * where the sandbox's tier can; elsewhere it is a 400 with cordon's reason
 * (docs/server.md).
 */
#include "config.h"

#include "server.h"

#include <string.h>

static json_object *sandbox_json(const srv_sandbox *s, bool detail)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "templateID", json_object_new_string(s->template_name));
	json_object_object_add(o, "alias", json_object_new_string(s->template_name));
	json_object_object_add(o, "sandboxID", json_object_new_string(s->id));
	json_object_object_add(o, "clientID", json_object_new_string(SRV_CLIENT_ID));
	json_object_object_add(o, "envdVersion", json_object_new_string(SRV_ENVD_VERSION));
	if (!detail) {
		json_object_object_add(o, "envdAccessToken", json_object_new_string(s->token));
		json_object_object_add(o, "trafficAccessToken", NULL);
		json_object_object_add(o, "domain", NULL);
		return o;
	}
	char *started = srv_time_string(s->started), *end = srv_time_string(s->end);
	json_object_object_add(o, "startedAt", json_object_new_string(started));
	json_object_object_add(o, "endAt", json_object_new_string(end));
	g_free(started);
	g_free(end);
	/* cordon's limits are the policy's; these fields are required, so 0 says "not reported". */
	json_object_object_add(o, "cpuCount", json_object_new_int(0));
	json_object_object_add(o, "memoryMB", json_object_new_int(0));
	json_object_object_add(o, "diskSizeMB", json_object_new_int(0));
	json_object_object_add(o, "state",
			       json_object_new_string(srv_sandbox_paused((srv_sandbox *)s)
							      ? "paused"
							      : "running"));
	json_object_object_add(o, "metadata", json_object_get(s->metadata));
	return o;
}

static bool string_map(json_object *v)
{
	if (!json_object_is_type(v, json_type_object))
		return false;
	SRV_FOR_MEMBERS(v, it, end)
	if (!json_object_is_type(json_object_iter_peek_value(&it), json_type_string))
		return false;
	return true;
}

/* A timeout field in seconds: present, a positive integer within the cap. */
static const char *want_timeout(json_object *body, const char *key, uint64_t dflt, uint64_t *ret)
{
	json_object *v;
	if (!json_object_object_get_ex(body, key, &v) || json_object_is_type(v, json_type_null)) {
		*ret = dflt;
		return NULL;
	}
	if (!json_object_is_type(v, json_type_int))
		return "must be a whole number of seconds";
	int64_t t = json_object_get_int64(v);
	if (t <= 0)
		return "must be greater than 0";
	if ((uint64_t)t > srv.cfg.max_timeout_s)
		return "is over the server's max_timeout";
	*ret = (uint64_t)t;
	return NULL;
}

static enum MHD_Result create(srv_req *r, int key)
{
	static const char *const fields[] = { "templateID",
					      "timeout",
					      "autoPause",
					      "autoPauseMemory",
					      "autoResume",
					      "secure",
					      "allow_internet_access",
					      "network",
					      "metadata",
					      "envVars",
					      "mcp",
					      "iam",
					      "volumeMounts",
					      NULL };
	json_object *body = srv_parse_object((const char *)r->body->data, r->body->len), *v;
	const char *bad;
	uint64_t timeout = 15;
	enum MHD_Result ret;
	if (!body)
		return srv_reply_error(r, 400, NULL, "the body is not a JSON object");
	const char *tname = json_object_object_get_ex(body, "templateID", &v) &&
					    json_object_is_type(v, json_type_string)
				    ? json_object_get_string(v)
				    : NULL;
	const srv_template *t = tname ? srv_template_find(&srv.cfg, tname) : NULL;
	json_object *env = NULL, *meta = NULL;
	if ((bad = srv_unknown_field(body, fields))) {
		ret = srv_reply_error(r, 400, NULL, "unknown field '%s'", bad);
	} else if (!tname) {
		ret = srv_reply_error(r, 400, NULL, "templateID (a string) is required");
	} else if (!t) {
		ret = srv_reply_error(r, 404, "template_not_found",
				      "template '%s' is not in the "
				      "policy's server.templates",
				      tname);
	} else if ((bad = want_timeout(body, "timeout", 15, &timeout))) {
		ret = srv_reply_error(r, 400, NULL, "timeout %s", bad);
	} else if (json_object_object_get_ex(body, "autoPause", &v) && json_object_get_boolean(v)) {
		ret = srv_reply_error(r, 400, "pause_unsupported",
				      "autoPause (pausing when the timeout lapses) is not "
				      "implemented by cordon server: a lapsed sandbox is killed");
	} else if ((json_object_object_get_ex(body, "envVars", &env) && !string_map(env)) ||
		   (json_object_object_get_ex(body, "metadata", &meta) && !string_map(meta))) {
		ret = srv_reply_error(r, 400, NULL, "envVars and metadata are maps of strings");
	} else {
		int status = 500;
		char *err = NULL, *code = NULL;
		srv_sandbox *s = srv_sandbox_create(key, t, timeout, env, meta, &status, &err,
						    &code);
		if (s) {
			g_message("sandbox %s: created from template '%s' on tier %s", s->id,
				  t->name, cordon_sandbox_tier(s->sb));
			ret = srv_reply_json(r, 201, sandbox_json(s, false));
		} else {
			ret = srv_reply_error(r, (unsigned)status, code, "%s", err);
		}
		srv_sandbox_unref(s);
		g_free(err);
		g_free(code);
	}
	json_object_put(body);
	return ret;
}

static enum MHD_Result list(srv_req *r, int key)
{
	GPtrArray *a = srv_sandbox_list(key);
	json_object *arr = json_object_new_array();
	for (guint i = 0; i < a->len; i++) {
		json_object_array_add(arr, sandbox_json(a->pdata[i], true));
		srv_sandbox_unref(a->pdata[i]);
	}
	g_ptr_array_unref(a);
	return srv_reply_json(r, 200, arr);
}

static enum MHD_Result not_found(srv_req *r, const char *id)
{
	return srv_reply_error(r, 404, NULL,
			       "Sandbox \"%s\" doesn't exist or you don't have "
			       "access to it",
			       id);
}

static enum MHD_Result set_timeout(srv_req *r, int key, const char *id, const char *field,
				   bool extend_only, unsigned ok_status)
{
	json_object *body = srv_parse_object((const char *)r->body->data, r->body->len);
	uint64_t t = 0;
	const char *bad = body ? want_timeout(body, field, 0, &t) : "body is not a JSON object";
	enum MHD_Result ret;
	if (!bad && t == 0)
		bad = "is required";
	if (bad)
		ret = srv_reply_error(r, 400, NULL, "%s %s", field, bad);
	else if (!srv_sandbox_set_timeout(id, key, t, extend_only))
		ret = not_found(r, id);
	else if (ok_status == 204)
		ret = srv_reply_empty(r, 204);
	else {
		srv_sandbox *s = srv_sandbox_get(id, key);
		ret = s ? srv_reply_json(r, ok_status, sandbox_json(s, false)) : not_found(r, id);
		srv_sandbox_unref(s);
	}
	json_object_put(body);
	return ret;
}

static enum MHD_Result lifecycle_error(srv_req *r, const char *what, cordon_error *err)
{
	bool unsupported = strcmp(cordon_error_get_code(err), "unsupported") == 0;
	enum MHD_Result ret = srv_reply_cordon_error(r, unsupported ? 400 : 500, err, "%s: %s",
						     what, cordon_error_get_message(err));
	cordon_error_free(err);
	return ret;
}

static enum MHD_Result pause_sandbox(srv_req *r, int key, const char *id)
{
	srv_sandbox *s = srv_sandbox_get(id, key);
	if (!s)
		return not_found(r, id);
	cordon_error *err = NULL;
	int rc = srv_sandbox_pause(s, &err);
	srv_sandbox_unref(s);
	if (rc < 0)
		return lifecycle_error(r, "pause", err);
	if (rc == 1)
		return srv_reply_error(r, 409, NULL, "sandbox %s is already paused", id);
	g_message("sandbox %s: paused", id);
	return srv_reply_empty(r, 204);
}

/* connect: resumes a paused sandbox (201) or extends a running one's time (200), never
 * shortening it; resume (deprecated): a paused one only (409 otherwise), with its timeout. */
static enum MHD_Result resume_sandbox(srv_req *r, int key, const char *id, bool connect)
{
	srv_sandbox *s = srv_sandbox_get(id, key);
	if (!s)
		return not_found(r, id);
	cordon_error *err = NULL;
	int rc = srv_sandbox_paused(s) ? srv_sandbox_resume(s, &err) : 1;
	srv_sandbox_unref(s);
	if (rc < 0)
		return lifecycle_error(r, "resume", err);
	if (rc == 1 && !connect)
		return srv_reply_error(r, 409, NULL, "sandbox %s is running", id);
	if (rc == 0)
		g_message("sandbox %s: resumed", id);
	return set_timeout(r, key, id, "timeout", connect, rc == 0 ? 201 : 200);
}

static enum MHD_Result one_sandbox(srv_req *r, int key, const char *id, const char *action)
{
	bool post = strcmp(r->method, "POST") == 0;
	if (!action && strcmp(r->method, "GET") == 0) {
		srv_sandbox *s = srv_sandbox_get(id, key);
		enum MHD_Result ret = s ? srv_reply_json(r, 200, sandbox_json(s, true))
					: not_found(r, id);
		srv_sandbox_unref(s);
		return ret;
	}
	if (!action && strcmp(r->method, "DELETE") == 0) {
		if (!srv_sandbox_kill(id, key))
			return not_found(r, id);
		g_message("sandbox %s: killed", id);
		return srv_reply_empty(r, 204);
	}
	if (post && action && strcmp(action, "timeout") == 0)
		return set_timeout(r, key, id, "timeout", false, 204);
	if (post && action && strcmp(action, "pause") == 0)
		return pause_sandbox(r, key, id);
	if (post && action && (strcmp(action, "connect") == 0 || strcmp(action, "resume") == 0))
		return resume_sandbox(r, key, id, strcmp(action, "connect") == 0);
	return srv_reply_error(r, 404, NULL, "no such endpoint: %s %s", r->method, r->url);
}

enum MHD_Result srv_control(srv_req *r)
{
	if (strcmp(r->url, "/health") == 0)
		return srv_reply_empty(r, 204);
	const char *k = srv_header(r, "X-API-Key");
	int key = k ? srv_key_find(&srv.cfg, k) : -1;
	if (key < 0)
		return srv_reply_error(r, 401, NULL, "Invalid API key");
	const char *path = r->url;
	if (g_str_has_prefix(path, "/v2/"))
		path += 3;
	if (strcmp(path, "/sandboxes") == 0) {
		if (strcmp(r->method, "POST") == 0)
			return create(r, key);
		if (strcmp(r->method, "GET") == 0)
			return list(r, key);
	} else if (g_str_has_prefix(path, "/sandboxes/")) {
		char **parts = g_strsplit(path + strlen("/sandboxes/"), "/", 3);
		enum MHD_Result ret;
		if (!parts[0] || !*parts[0] || (parts[1] && parts[2]))
			ret = srv_reply_error(r, 404, NULL, "no such endpoint: %s", r->url);
		else
			ret = one_sandbox(r, key, parts[0], parts[1]);
		g_strfreev(parts);
		return ret;
	}
	return srv_reply_error(r, 404, NULL, "no such endpoint: %s %s", r->method, r->url);
}
