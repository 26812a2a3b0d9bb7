/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * envd's subset (e2b-protocol.md §2, §5, §6): /health, /files (download and
 * upload) and filesystem.Filesystem's Stat, ListDir, MakeDir, Remove, Move.
 *
 * Paths: E2B's home directory (/home/user) is the sandbox root; a path
 * outside it, or climbing out with "..", is refused before anything runs.
 * Files move through the library's confined read_file/write_file. The
 * library has no stat, mkdir, remove or rename, so those run as small shell
 * scripts inside the sandbox (GNU find's -printf describes entries), under
 * the sandbox's own confinement; what they print is parsed strictly and
 * bounded, as anything the sandbox produces is hostile.
 */
#include "errcodes.h"
#include "config.h"

#include "process.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FS_OUTPUT_MAX (16u << 20)
#define FS_ENTRIES_MAX 100000
#define FS_FIELDS 8
#define FS_NOT_FOUND 44
#define FS_NOT_DIR 45
#define FS_EXISTS 46
#define FS_ESCAPE 47
/* type, size, permission bits, owner, group, mtime, link target, path below the start */
#define FS_PRINTF "%Y\\0%s\\0%m\\0%u\\0%g\\0%T@\\0%l\\0%P\\0"

char *srv_map_path(const char *path)
{
	if (!path)
		return NULL;
	const char *rest = path;
	if (strcmp(path, "~") == 0 || g_str_has_prefix(path, "~/"))
		rest = path + 1;
	else if (strcmp(path, SRV_HOME) == 0 || g_str_has_prefix(path, SRV_HOME "/"))
		rest = path + strlen(SRV_HOME);
	else if (path[0] == '/')
		return NULL;
	char **parts = g_strsplit(rest, "/", -1);
	GPtrArray *keep = g_ptr_array_new();
	bool ok = true;
	for (char **p = parts; *p && ok; p++) {
		if (strcmp(*p, "..") == 0)
			ok = false;
		else if (**p && strcmp(*p, ".") != 0)
			g_ptr_array_add(keep, *p);
	}
	g_ptr_array_add(keep, NULL);
	char *out = ok ? g_strjoinv("/", (char **)keep->pdata) : NULL;
	g_ptr_array_unref(keep);
	g_strfreev(parts);
	return out;
}

char *srv_e2b_path(const char *rel)
{
	return *rel ? g_strconcat(SRV_HOME "/", rel, NULL) : g_strdup(SRV_HOME);
}

/* The form a script gets: never starting with '-' (find would read an option). */
static char *script_path(const char *rel)
{
	return *rel ? g_strconcat("./", rel, NULL) : g_strdup(".");
}

/* ---- scripts in the sandbox ------------------------------------------------------- */

typedef struct fs_out {
	int exit_code;
	char *out;
	size_t len;
	char *err;
} fs_out;

static int run_script(srv_sandbox *s, const char *script, const char *a1, const char *a2, fs_out *o,
		      cordon_error **err)
{
	const char *argv[] = { "/bin/sh", "-c", script, "sh", a1, a2, NULL };
	cordon_run_options opts = CORDON_RUN_OPTIONS_INIT;
	cordon_result *res = NULL;
	opts.timeout_ms = 30000;
	opts.output_cap = FS_OUTPUT_MAX;
	int r = cordon_sandbox_run(s->sb, argv, &opts, &res, err);
	if (r < 0)
		return r;
	size_t n, m;
	const char *out = cordon_result_output(res, 1, &n);
	const char *e = cordon_result_output(res, 2, &m);
	o->exit_code = cordon_result_truncated(res, 1) ? -1 : cordon_result_exit_code(res);
	o->out = g_memdup2(out, n + 1);
	o->len = n;
	o->err = g_strndup(e, MIN(m, 512));
	g_strchomp(o->err);
	cordon_result_free(res);
	return 0;
}

static const char *file_type(char t)
{
	return t == 'f'   ? "FILE_TYPE_FILE"
	       : t == 'd' ? "FILE_TYPE_DIRECTORY"
			  : "FILE_TYPE_UNSPECIFIED";
}

static char *permissions(char t, unsigned mode)
{
	char s[11] = "----------";
	s[0] = t == 'd' ? 'd' : t == 'f' ? '-' : '?';
	for (int i = 0; i < 9; i++)
		if (mode & (0400u >> i))
			s[1 + i] = "rwxrwxrwx"[i];
	return g_strdup(s);
}

static json_object *entry_json(char **f, const char *base_rel)
{
	char *end;
	unsigned long long size = g_ascii_strtoull(f[1], &end, 10);
	unsigned long mode = strtoul(f[2], NULL, 8) & 0777;
	double mtime = g_ascii_strtod(f[5], NULL);
	char *rel = *f[7] ? (*base_rel ? g_strconcat(base_rel, "/", f[7], NULL) : g_strdup(f[7]))
			  : g_strdup(base_rel);
	char *path = srv_e2b_path(rel), *perm = permissions(f[0][0], (unsigned)mode);
	char *name = g_path_get_basename(path), sizes[24], when[64];
	GDateTime *dt = g_date_time_new_from_unix_utc((gint64)mtime);
	char *t = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S");
	g_snprintf(sizes, sizeof(sizes), "%llu", size);
	g_snprintf(when, sizeof(when), "%s.%09dZ", t, (int)((mtime - (double)(gint64)mtime) * 1e9));
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "type", json_object_new_string(file_type(f[0][0])));
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "size", json_object_new_string(sizes));
	json_object_object_add(o, "mode", json_object_new_int((int)mode));
	json_object_object_add(o, "permissions", json_object_new_string(perm));
	json_object_object_add(o, "owner", json_object_new_string(f[3]));
	json_object_object_add(o, "group", json_object_new_string(f[4]));
	json_object_object_add(o, "modifiedTime", json_object_new_string(when));
	if (*f[6])
		json_object_object_add(o, "symlinkTarget", json_object_new_string(f[6]));
	g_free(t);
	g_date_time_unref(dt);
	g_free(name);
	g_free(perm);
	g_free(path);
	g_free(rel);
	return o;
}

/* Pre-order, lexical within a directory (envd's WalkDir order): '/' sorts first. */
static int walk_order(const void *a, const void *b)
{
	const char *x = (*(char ***)a)[7], *y = (*(char ***)b)[7];
	for (; *x && *x == *y; x++, y++)
		;
	int cx = *x == '/' ? 1 : (unsigned char)*x + 1, cy = *y == '/' ? 1 : (unsigned char)*y + 1;
	if (!*x)
		cx = 0;
	if (!*y)
		cy = 0;
	return cx - cy;
}

/* Records of FS_FIELDS NUL-ended fields; NULL when the output is malformed. */
static GPtrArray *parse_records(const fs_out *o)
{
	GPtrArray *recs = g_ptr_array_new_with_free_func((GDestroyNotify)g_free);
	size_t i = 0;
	while (i < o->len) {
		char **f = g_new0(char *, FS_FIELDS + 1);
		g_ptr_array_add(recs, f);
		for (int k = 0; k < FS_FIELDS; k++) {
			const char *nul = memchr(o->out + i, '\0', o->len - i);
			bool type_ok = k != 0 || (nul && nul - (o->out + i) == 1);
			if (!nul || !type_ok || recs->len > FS_ENTRIES_MAX) {
				g_ptr_array_unref(recs);
				return NULL;
			}
			f[k] = o->out + i; /* borrowed from o->out */
			i = (size_t)(nul - o->out) + 1;
		}
	}
	return recs;
}

static enum MHD_Result fs_fail(srv_req *r, const fs_out *o, const char *path)
{
	switch (o->exit_code) {
	case FS_NOT_FOUND:
		return srv_reply_connect_error(r, "not_found", "path not found: %s", path);
	case FS_NOT_DIR:
		return srv_reply_connect_error(r, "invalid_argument", "path is not a directory: %s",
					       path);
	case FS_ESCAPE:
		return srv_reply_connect_error(r, "permission_denied",
					       "path leads outside the "
					       "sandbox's home: %s",
					       path);
	case FS_EXISTS:
		return srv_reply_connect_error(r, "already_exists", "directory already exists: %s",
					       path);
	default:
		return srv_reply_connect_error(r, "internal", "%s: %s", path,
					       o->exit_code < 0 ? "output over the limit" : o->err);
	}
}

/* Runs the script and answers with {key: entry} or {"entries": [...]}. */
static enum MHD_Result fs_answer(srv_req *r, srv_sandbox *s, const char *script, const char *a1,
				 const char *a2, const char *key, const char *base_rel,
				 const char *shown)
{
	fs_out o = { 0 };
	cordon_error *err = NULL;
	enum MHD_Result ret;
	if (run_script(s, script, a1, a2, &o, &err) < 0) {
		ret = srv_reply_connect_error(r, srv_connect_code(err), "%s",
					      cordon_error_get_message(err));
		cordon_error_free(err);
		return ret;
	}
	GPtrArray *recs = o.exit_code == 0 ? parse_records(&o) : NULL;
	if (o.exit_code != 0) {
		ret = fs_fail(r, &o, shown);
	} else if (!recs) {
		ret = srv_reply_connect_error(r, "internal", "malformed listing from the sandbox");
	} else {
		json_object *resp = json_object_new_object();
		if (strcmp(key, "entries") == 0) {
			qsort(recs->pdata, recs->len, sizeof(gpointer), walk_order);
			json_object *arr = json_object_new_array();
			for (guint i = 0; i < recs->len; i++)
				if (((char **)recs->pdata[i])[0][0] != 'N') /* vanished, dangling */
					json_object_array_add(arr,
							      entry_json(recs->pdata[i], base_rel));
			if (json_object_array_length(arr))
				json_object_object_add(resp, "entries", arr);
			else
				json_object_put(arr);
		} else if (*key) {
			if (recs->len == 1)
				json_object_object_add(resp, key,
						       entry_json(recs->pdata[0], base_rel));
		}
		bool ok = !*key || strcmp(key, "entries") == 0 || recs->len == 1;
		ret = ok ? srv_reply_json(r, 200, resp)
			 : (json_object_put(resp),
			    srv_reply_connect_error(r, "internal",
						    "malformed entry from the sandbox"));
	}
	if (recs)
		g_ptr_array_unref(recs);
	g_free(o.out);
	g_free(o.err);
	return ret;
}

#define STAT_ONE "find -P \"$1\" -maxdepth 0 -printf '" FS_PRINTF "'"
#define EXISTS "{ [ -e \"$1\" ] || [ -L \"$1\" ]; }"

static const char *string_field(json_object *req, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(req, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static enum MHD_Result filesystem_rpc(srv_req *r, srv_sandbox *s, const char *method,
				      json_object *req)
{
	static const char *const path_only[] = { "path", NULL };
	static const char *const list_fields[] = { "path", "depth", NULL };
	static const char *const move_fields[] = { "source", "destination", NULL };
	bool move = strcmp(method, "Move") == 0, list = strcmp(method, "ListDir") == 0;
	const char *bad = srv_unknown_field(req, move   ? move_fields
						 : list ? list_fields
							: path_only);
	if (bad)
		return srv_reply_connect_error(r, "invalid_argument", "unknown field '%s'", bad);
	const char *p1 = string_field(req, move ? "source" : "path");
	const char *p2 = move ? string_field(req, "destination") : NULL;
	g_autofree char *rel = srv_map_path(p1 ? p1 : "");
	g_autofree char *rel2 = move ? srv_map_path(p2 ? p2 : "") : NULL;
	if (!rel || (move && !rel2))
		return srv_reply_connect_error(r, "permission_denied",
					       "path outside the sandbox's "
					       "home (" SRV_HOME "): %s",
					       !rel ? p1 : p2);
	g_autofree char *a1 = script_path(rel), *a2 = move ? script_path(rel2) : NULL;
	g_autofree char *shown = srv_e2b_path(rel);
	if (strcmp(method, "Stat") == 0)
		return fs_answer(r, s, EXISTS " || exit 44; exec " STAT_ONE, a1, NULL, "entry", rel,
				 shown);
	if (list) {
		json_object *d;
		int64_t depth = json_object_object_get_ex(req, "depth", &d)
					? json_object_get_int64(d)
					: 1;
		char ds[16];
		g_snprintf(ds, sizeof(ds), "%d", (int)CLAMP(depth, 1, 128));
		/* The directory may be a link (followed, as every tier's walk does), but
		 * never to outside the sandbox root; nothing below it is followed. */
		return fs_answer(
			r, s,
			"[ -e \"$1\" ] || exit 44; [ -d \"$1\" ] || exit 45; "
			"d=$(cd -P -- \"$1\" && pwd -P) && t=$(pwd -P) || exit 44; "
			"case \"$d/\" in \"$t\"/*) ;; *) exit 47;; esac; exec find -H \"$1\" "
			"-mindepth 1 -maxdepth \"$2\" -printf '" FS_PRINTF "'",
			a1, ds, "entries", rel, shown);
	}
	if (strcmp(method, "MakeDir") == 0)
		return fs_answer(r, s,
				 "[ -d \"$1\" ] && exit 46; " EXISTS " && exit 45; "
				 "mkdir -p -- \"$1\" && exec " STAT_ONE,
				 a1, NULL, "entry", rel, shown);
	if (strcmp(method, "Remove") == 0) {
		if (!*rel)
			return srv_reply_connect_error(r, "permission_denied",
						       "the home directory "
						       "itself cannot be removed");
		return fs_answer(r, s, "exec rm -rf -- \"$1\"", a1, NULL, "", rel, shown);
	}
	if (move) {
		if (!*rel || !*rel2)
			return srv_reply_connect_error(r, "permission_denied",
						       "the home directory "
						       "itself cannot be moved");
		return fs_answer(r, s,
				 EXISTS " || exit 44; mv -f -- \"$1\" \"$2\" && set -- \"$2\" "
					"&& exec " STAT_ONE,
				 a1, a2, "entry", rel2, shown);
	}
	return srv_reply_connect_error(r, "unimplemented",
				       "filesystem.Filesystem/%s is not "
				       "implemented by cordon server",
				       method);
}

/* ---- /files ---------------------------------------------------------------------- */

static enum MHD_Result download(srv_req *r, srv_sandbox *s)
{
	const char *path = srv_query(r, "path");
	g_autofree char *rel = srv_map_path(path ? path : "");
	if (!path || !rel || !*rel)
		return srv_reply_error(r, 400, NULL,
				       "path '%s' is not a file in the sandbox's "
				       "home (" SRV_HOME ")",
				       path ? path : "");
	void *data = NULL;
	size_t len = 0;
	cordon_error *err = NULL;
	if (cordon_sandbox_read_file(s->sb, rel, &data, &len, &err) < 0) {
		const char *code = cordon_error_get_code(err);
		enum MHD_Result ret =
			strcmp(code, ERRC(not_found)) == 0
				? srv_reply_cordon_error(r, 404, err, "path '%s' does not exist",
							 path)
			: strcmp(code, ERRC(not_a_file)) == 0
				? srv_reply_cordon_error(r, 400, err,
							 "path '%s' is not a regular file", path)
				: srv_reply_cordon_error(r,
							 cordon_error_get_class(err) ==
									 CORDON_ERROR_FORBIDDEN
								 ? 403
								 : 400,
							 err, "%s", cordon_error_get_message(err));
		cordon_error_free(err);
		return ret;
	}
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, data,
								    MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

typedef struct upload_part {
	char *path;
	GByteArray *data;
} upload_part;

typedef struct upload {
	GPtrArray *parts; /* upload_part* */
	bool bad;
} upload;

static void part_free(gpointer p)
{
	upload_part *u = p;
	g_free(u->path);
	g_byte_array_unref(u->data);
	g_free(u);
}

static enum MHD_Result form_part(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *filename, const char *content_type,
				 const char *transfer_encoding, const char *data, uint64_t off,
				 size_t size)
{
	upload *u = cls;
	if (strcmp(key, "file") != 0)
		return MHD_YES; /* envd ignores other parts */
	if (off == 0) {
		upload_part *p = g_new0(upload_part, 1);
		p->path = g_strdup(filename ? filename : "");
		p->data = g_byte_array_new();
		g_ptr_array_add(u->parts, p);
	}
	if (!u->parts->len)
		return MHD_NO;
	upload_part *p = u->parts->pdata[u->parts->len - 1];
	g_byte_array_append(p->data, (const guint8 *)data, (guint)size);
	return MHD_YES;
}

static enum MHD_Result reply_written(srv_req *r, srv_sandbox *s, upload *u, const char *qpath)
{
	json_object *arr = json_object_new_array();
	for (guint i = 0; i < u->parts->len; i++) {
		upload_part *p = u->parts->pdata[i];
		const char *want = qpath ? qpath : p->path;
		g_autofree char *rel = srv_map_path(want);
		cordon_error *err = NULL;
		if (!rel || !*rel) {
			json_object_put(arr);
			return srv_reply_error(r, 400, NULL,
					       "path '%s' is not a file in the sandbox's "
					       "home (" SRV_HOME ")",
					       want);
		}
		if (cordon_sandbox_write_file(s->sb, rel, p->data->data, p->data->len, &err) < 0) {
			json_object_put(arr);
			enum MHD_Result ret = srv_reply_cordon_error(
				r,
				cordon_error_get_class(err) == CORDON_ERROR_FORBIDDEN ? 403 : 400,
				err, "%s: %s", want, cordon_error_get_message(err));
			cordon_error_free(err);
			return ret;
		}
		g_autofree char *path = srv_e2b_path(rel), *name = g_path_get_basename(path);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "type", json_object_new_string("file"));
		json_object_array_add(arr, o);
	}
	return srv_reply_json(r, 200, arr);
}

static enum MHD_Result upload_files(srv_req *r, srv_sandbox *s)
{
	const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE), *qpath = srv_query(r, "path");
	upload u = { g_ptr_array_new_with_free_func(part_free), false };
	enum MHD_Result ret;
	if (ct && g_str_has_prefix(ct, "application/octet-stream")) {
		if (srv_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING))
			u.bad = true; /* gzip is not decoded here */
		upload_part *p = g_new0(upload_part, 1);
		p->path = g_strdup(qpath ? qpath : "");
		p->data = g_byte_array_ref(r->body);
		g_ptr_array_add(u.parts, p);
	} else if (ct && g_str_has_prefix(ct, "multipart/form-data")) {
		struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, 64 * 1024,
									 form_part, &u);
		u.bad = !pp ||
			MHD_post_process(pp, (const char *)r->body->data, r->body->len) != MHD_YES;
		if (pp && MHD_destroy_post_processor(pp) != MHD_YES)
			u.bad = true;
	} else {
		g_ptr_array_unref(u.parts);
		return srv_reply_error(r, 400, NULL,
				       "unsupported content type: %s, expected "
				       "multipart/form-data or application/octet-stream",
				       ct ? ct : "none");
	}
	if (u.bad || u.parts->len == 0)
		ret = srv_reply_error(r, 400, NULL,
				      "a malformed upload, an encoded body, or no "
				      "part named 'file'");
	else
		ret = reply_written(r, s, &u, u.parts->len == 1 ? qpath : NULL);
	g_ptr_array_unref(u.parts);
	return ret;
}

/* ---- routing ---------------------------------------------------------------------- */

enum MHD_Result srv_envd(srv_req *r, srv_sandbox *s)
{
	const char *url = r->url, *m = r->method;
	if (strcmp(url, "/health") == 0)
		return srv_reply_empty(r, 204);
	if (strcmp(url, "/files") == 0 && strcmp(m, "GET") == 0)
		return download(r, s);
	if (strcmp(url, "/files") == 0 && strcmp(m, "POST") == 0)
		return upload_files(r, s);
	if (strcmp(m, "POST") == 0 && g_str_has_prefix(url, "/process.Process/"))
		return srv_process_rpc(r, s, url + strlen("/process.Process/"));
	if (strcmp(m, "POST") == 0 && strcmp(url, "/filesystem.Filesystem/WatchDir") == 0)
		return srv_watch_dir(r, s);
	if (strcmp(m, "POST") == 0 && g_str_has_prefix(url, "/filesystem.Filesystem/")) {
		const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
		if (!ct || strcmp(ct, "application/json") != 0)
			return srv_reply_error(r, 415, NULL, "unary calls take application/json");
		json_object *req = srv_parse_object((const char *)r->body->data, r->body->len);
		if (!req)
			return srv_reply_connect_error(r, "invalid_argument",
						       "the body is not a JSON object");
		enum MHD_Result ret = filesystem_rpc(r, s, url + strlen("/filesystem.Filesystem/"),
						     req);
		json_object_put(req);
		return ret;
	}
	return srv_reply_connect_error(r, "unimplemented",
				       "%s %s is not implemented by cordon "
				       "server",
				       m, url);
}
