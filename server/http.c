/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The HTTP layer over libmicrohttpd: a request's body gathered up to the
 * configured cap (a larger one is answered 413 before it is read), then
 * routed: a request naming a sandbox in E2b-Sandbox-Id is envd's (e2b-protocol.md
 * §2.2: what E2B_SANDBOX_URL makes the SDKs send), any other the control plane's.
 */
#include "config.h"

#include "server.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *srv_header(const srv_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *srv_query(const srv_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

static enum MHD_Result queue(srv_req *r, unsigned status, struct MHD_Response *resp,
			     const char *content_type)
{
	if (content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result srv_reply_json(srv_req *r, unsigned status, json_object *obj)
{
	const char *text = obj ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN) : "";
	char *copy = g_strdup(text);
	json_object_put(obj);
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(copy), copy,
								    MHD_RESPMEM_MUST_FREE);
	/* g_strdup's memory is malloc's (GLib >= 2.46), as MUST_FREE needs. */
	return queue(r, status, resp, "application/json; charset=utf-8");
}

enum MHD_Result srv_reply_empty(srv_req *r, unsigned status)
{
	return queue(r, status,
		     MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT), NULL);
}

enum MHD_Result srv_reply_error(srv_req *r, unsigned status, const char *code_name, const char *fmt,
				...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "code", json_object_new_int((int)status));
	json_object_object_add(o, "message", json_object_new_string(msg));
	if (code_name)
		json_object_object_add(o, "error_code", json_object_new_string(code_name));
	g_free(msg);
	return srv_reply_json(r, status, o);
}

enum MHD_Result srv_reply_cordon_error(srv_req *r, unsigned status, const cordon_error *err,
				       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "code", json_object_new_int((int)status));
	json_object_object_add(o, "message", json_object_new_string(msg));
	/* cordon's own words beside E2B's, for a cordon client (the e2b plugin). */
	json_object_object_add(o, "error_code", json_object_new_string(cordon_error_get_code(err)));
	json_object_object_add(o, "detail", json_object_new_string(cordon_error_get_message(err)));
	g_free(msg);
	return srv_reply_json(r, status, o);
}

/* Connect's code -> HTTP status table (e2b-protocol.md §3.2). */
static unsigned connect_status(const char *code)
{
	static const struct {
		const char *code;
		unsigned status;
	} map[] = {
		{ "canceled", 499 },
		{ "invalid_argument", 400 },
		{ "deadline_exceeded", 504 },
		{ "not_found", 404 },
		{ "already_exists", 409 },
		{ "permission_denied", 403 },
		{ "resource_exhausted", 429 },
		{ "failed_precondition", 400 },
		{ "aborted", 409 },
		{ "out_of_range", 400 },
		{ "unimplemented", 501 },
		{ "unavailable", 503 },
		{ "unauthenticated", 401 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
		if (strcmp(map[i].code, code) == 0)
			return map[i].status;
	return 500;
}

enum MHD_Result srv_reply_connect_error(srv_req *r, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	g_free(msg);
	return srv_reply_json(r, connect_status(code), o);
}

const char *srv_connect_code(const cordon_error *err)
{
	if (!err)
		return "internal";
	if (strcmp(cordon_error_get_code(err), "sandbox_path_escape") == 0)
		return "permission_denied";
	if (strcmp(cordon_error_get_code(err), "not_found") == 0)
		return "not_found";
	switch (cordon_error_get_class(err)) {
	case CORDON_ERROR_FORBIDDEN: return "permission_denied";
	case CORDON_ERROR_INVALID: return "invalid_argument";
	case CORDON_ERROR_TRANSIENT: return "unavailable";
	case CORDON_ERROR_CANCELLED: return "deadline_exceeded";
	default: return "internal";
	}
}

json_object *srv_parse_object(const char *data, size_t len)
{
	if (!data || len == 0 || len > INT32_MAX)
		return NULL;
	json_tokener *tok = json_tokener_new_ex(SRV_JSON_DEPTH);
	json_object *o = json_tokener_parse_ex(tok, data, (int)len);
	bool whole = json_tokener_get_error(tok) == json_tokener_success &&
		     json_tokener_get_parse_end(tok) == len;
	json_tokener_free(tok);
	if (!whole || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

const char *srv_unknown_field(json_object *obj, const char *const *allowed)
{
	SRV_FOR_MEMBERS(obj, it, end)
	{
		const char *k = json_object_iter_peek_name(&it);
		bool known = false;
		for (const char *const *a = allowed; *a && !known; a++)
			known = strcmp(*a, k) == 0;
		if (!known)
			return k;
	}
	return NULL;
}

char *srv_time_string(int64_t us)
{
	GDateTime *dt = g_date_time_new_from_unix_utc(us / G_USEC_PER_SEC);
	char *s = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%SZ");
	g_date_time_unref(dt);
	return s;
}

/* ---- routing -------------------------------------------------------------------- */

static enum MHD_Result route_envd(srv_req *r, const char *id)
{
	srv_sandbox *s = srv_sandbox_get(id, -1);
	if (!s) {
		/* What E2B's edge proxy answers for a sandbox that is gone. */
		json_object *o = json_object_new_object();
		json_object_object_add(o, "sandboxId", json_object_new_string(id));
		json_object_object_add(o, "message",
				       json_object_new_string("The sandbox was not found"));
		json_object_object_add(o, "code", json_object_new_int(502));
		return srv_reply_json(r, 502, o);
	}
	const char *token = srv_header(r, "X-Access-Token");
	const char *port = srv_header(r, "E2b-Sandbox-Port");
	enum MHD_Result ret;
	if (!token || !srv_secret_equal(token, s->token))
		ret = srv_reply_error(r, 401, NULL,
				      "unauthorized access, please provide a valid "
				      "access token or method signing if supported");
	else if (port && strcmp(port, SRV_ENVD_PORT) != 0)
		ret = srv_port_tunnel(r, s, port);
	else
		ret = srv_envd(r, s);
	srv_sandbox_unref(s);
	return ret;
}

static bool body_add(srv_req *r, const char *data, size_t len)
{
	if (r->too_big || r->body->len + len > srv.cfg.max_body) {
		r->too_big = true;
		return false;
	}
	g_byte_array_append(r->body, (const guint8 *)data, (guint)len);
	return true;
}

enum MHD_Result srv_http_handler(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	srv_req *r = *con_cls;
	if (!r) {
		r = g_new0(srv_req, 1);
		r->conn = conn;
		r->method = method;
		r->url = url;
		r->body = g_byte_array_new();
		*con_cls = r;
		const char *cl = srv_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && g_ascii_strtoull(cl, NULL, 10) > srv.cfg.max_body)
			r->too_big = true;
		else
			return MHD_YES;
	}
	if (*upload_size && !r->too_big) {
		body_add(r, upload, *upload_size);
		*upload_size = 0;
		if (!r->too_big)
			return MHD_YES;
	}
	if (r->too_big)
		/* MHD closes the connection after it: the rest is never read. */
		return srv_reply_error(r, 413, "body_too_large",
				       "the request body is over the "
				       "server's limit of %" PRIu64 " bytes",
				       srv.cfg.max_body);
	const char *id = srv_header(r, "E2b-Sandbox-Id");
	return id ? route_envd(r, id) : srv_control(r);
}

void srv_http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			enum MHD_RequestTerminationCode toe)
{
	srv_req *r = *con_cls;
	if (!r)
		return;
	if (r->tunnel)
		srv_tunnel_abandon(r->tunnel);
	g_byte_array_unref(r->body);
	g_free(r);
	*con_cls = NULL;
}
