/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * envd: files up and down (/files), ListDir and Stat for glob and walk, and
 * unary calls. Paths follow the seed's remote rules: relative to the sandbox
 * root (the tier's `root`, E2B's /home/user), refused before anything is sent
 * when they could leave it; the refusals and the errors read as every other
 * tier's (common/fserror.c), and what the server answers is checked entry by
 * entry: a path outside the root, a wrong type, too many entries are
 * remote_protocol errors, never passed on.
 */
#include "config.h"

#include "e2b.h"
#include "errcodes.h"
#include "fserror.h"
#include "fsops.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fs_error(cordon_plugin_error *err, int r, const char *op, const char *path)
{
	fserror fe;
	fserror_describe(r, op, path, &fe);
	return e2b_host->error_set(err, fe.errnum, fe.cls, fe.code, "%s", fe.message);
}

/* root + "/" + rel ("." and "" are the root itself). */
static char *remote_path(const e2b_sandbox *s, const char *rel)
{
	size_t n = strlen(s->tier->root) + strlen(rel) + 2;
	char *p = e2b_host->alloc(n);
	if (!*rel || strcmp(rel, ".") == 0)
		snprintf(p, n, "%s", s->tier->root);
	else
		snprintf(p, n, "%s/%s", s->tier->root, rel);
	return p;
}

char *e2b_normalize(const char *path)
{
	size_t n = strlen(path);
	if (path[0] == '/' || n >= 4096)
		return NULL;
	char *out = e2b_host->alloc(n + 1);
	size_t o = 0;
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (o == 0) {
				e2b_host->free(out);
				return NULL;
			}
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--; /* the slash before the dropped component */
		} else if (len && !(len == 1 && p[0] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len + (p[len] == '/');
	}
	out[o] = '\0';
	return out;
}

/* An error answer: cordon server names cordon's own code and message
 * (error_code, detail); E2B's are mapped by status. */
static int answer_error(const e2b_call *c, const char *op, const char *path,
			cordon_plugin_error *err)
{
	json_tokener *tok = json_tokener_new_ex(E2B_JSON_DEPTH);
	json_object *o = c->resp_len < E2B_BODY_MAX
				 ? json_tokener_parse_ex(tok, c->resp, (int)c->resp_len)
				 : NULL;
	json_tokener_free(tok);
	bool bad = false;
	const char *code = json_object_is_type(o, json_type_object)
				   ? e2b_string(o, "error_code", &bad)
				   : NULL;
	const char *detail = code ? e2b_string(o, "detail", &bad) : NULL;
	int r;
	if (code && detail && !bad && strlen(code) < 40 &&
	    strspn(code, "abcdefghijklmnopqrstuvwxyz_") == strlen(code))
		r = e2b_host->error_set(err, EIO, fserror_class(code), code, "%.350s", detail);
	else if (c->status == 404)
		r = fs_error(err, -ENOENT, op, path);
	else if (c->status == 400 && strcmp(op, "read") == 0)
		r = fs_error(err, -EISDIR, op, path);
	else
		r = e2b_status_error(c, op, err);
	json_object_put(o);
	return r;
}

int e2b_read_file(void *sandbox, const char *path, uint64_t max_len, cordon_plugin_emit_fn emit,
		  void *ctx, cordon_plugin_error *err)
{
	e2b_sandbox *s = sandbox;
	char *rel = e2b_normalize(path);
	if (!rel)
		return fs_error(err, -EXDEV, "read", path);
	char *rp = remote_path(s, rel);
	e2b_host->free(rel);
	e2b_call c = { .method = "GET",
		       .sbx = s,
		       .idempotent = true,
		       .cancel_fd = -1,
		       .max_body = max_len < (1ull << 31) ? (size_t)max_len + 1 : (size_t)1 << 31,
		       .quiet_over = true };
	c.url = e2b_url(s->envd, "/files", "path", rp);
	int r = e2b_http(s->tier, &c, err);
	/* over max_len: the transfer's own cap, or a complete answer that is longer */
	bool too_big = r == -EFBIG || (r >= 0 && c.status == 200 && c.resp_len > max_len);
	if (too_big)
		r = fs_error(err, -EFBIG, "read", path);
	else if (r >= 0 && c.status != 200)
		r = answer_error(&c, "read", path, err);
	else if (r >= 0)
		r = emit(ctx, c.resp ? c.resp : "", c.resp_len);
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	e2b_host->free(rp);
	return r;
}

int e2b_write_file(void *sandbox, const char *path, const void *data, uint64_t len,
		   cordon_plugin_error *err)
{
	e2b_sandbox *s = sandbox;
	char *rel = e2b_normalize(path);
	if (!rel || !*rel) {
		e2b_host->free(rel);
		return fs_error(err, rel ? -EISDIR : -EXDEV, "write", path);
	}
	char *rp = remote_path(s, rel);
	e2b_host->free(rel);
	e2b_call c = { .method = "POST",
		       .sbx = s,
		       .content_type = "application/octet-stream",
		       .body = data,
		       .body_len = (size_t)len,
		       .idempotent = true,
		       .cancel_fd = -1 };
	c.url = e2b_url(s->envd, "/files", "path", rp);
	int r = e2b_http(s->tier, &c, err);
	if (r >= 0 && c.status != 200) {
		r = answer_error(&c, "write", path, err);
	} else if (r >= 0) {
		json_tokener *tok = json_tokener_new_ex(E2B_JSON_DEPTH);
		json_object *a = json_tokener_parse_ex(tok, c.resp ? c.resp : "", (int)c.resp_len);
		json_tokener_free(tok);
		if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) == 0)
			r = e2b_protocol_error(err,
					       "write: the answer is not a list of written files");
		json_object_put(a);
	}
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	e2b_host->free(rp);
	return r;
}

/* ---- unary calls ------------------------------------------------------------------- */

int e2b_unary(const e2b_sandbox *s, const char *procedure, json_object *req, json_object **ret,
	      cordon_plugin_error *err)
{
	static const char *const extra[] = { "Connect-Protocol-Version: 1", NULL };
	const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	e2b_call c = { .method = "POST",
		       .sbx = s,
		       .content_type = "application/json",
		       .body = body,
		       .body_len = strlen(body),
		       .extra = extra,
		       .cancel_fd = -1,
		       .idempotent = strstr(procedure, "/Stat") || strstr(procedure, "/ListDir") ||
				     strstr(procedure, "/List") };
	c.url = e2b_url(s->envd, procedure, NULL, NULL);
	int r = e2b_http(s->tier, &c, err);
	*ret = NULL;
	if (r >= 0 && c.status == 200 && strncmp(c.content, "application/json", 16) != 0)
		r = e2b_protocol_error(err, "%s: answered as '%s', not application/json", procedure,
				       c.content);
	else if (r >= 0 && c.status == 200)
		r = (*ret = e2b_parse(c.resp, c.resp_len, procedure, err)) ? 0 : -EPROTO;
	else if (r >= 0)
		r = -(int)c.status; /* the caller maps it, with the body */
	if (r < -1 && r >= -599 && c.resp_len) {
		/* Keep the Connect code for the caller in the answer's place. */
		json_tokener *tok = json_tokener_new_ex(E2B_JSON_DEPTH);
		*ret = json_tokener_parse_ex(tok, c.resp, (int)c.resp_len);
		json_tokener_free(tok);
		if (!json_object_is_type(*ret, json_type_object)) {
			json_object_put(*ret);
			*ret = NULL;
		}
	}
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	return r;
}

/* ---- listings ------------------------------------------------------------------------ */

typedef struct listing {
	char **rel; /* below the root, host->free each */
	bool *file; /* a regular file, not a link */
	bool *link;
	size_t n;
} listing;

static void listing_clear(listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		e2b_host->free(l->rel[i]);
	e2b_host->free(l->rel);
	e2b_host->free(l->file);
	e2b_host->free(l->link);
	memset(l, 0, sizeof(*l));
}

/* One entry, checked: a path under the root, a known type. */
static int add_entry(const e2b_sandbox *s, listing *l, json_object *e, cordon_plugin_error *err)
{
	bool bad = !json_object_is_type(e, json_type_object);
	const char *path = bad ? NULL : e2b_string(e, "path", &bad);
	const char *type = bad ? NULL : e2b_string(e, "type", &bad);
	const char *target = bad ? NULL : e2b_string(e, "symlinkTarget", &bad);
	size_t rl = strlen(s->tier->root);
	if (bad || !path || !type || strncmp(path, s->tier->root, rl) != 0 || path[rl] != '/' ||
	    !e2b_host->path_is_confined(path + rl + 1))
		return e2b_protocol_error(err,
					  "ListDir: an entry is malformed or outside the root");
	l->rel[l->n] = e2b_host->strdup(path + rl + 1);
	l->link[l->n] = target != NULL;
	l->file[l->n] = !target && strcmp(type, "FILE_TYPE_FILE") == 0;
	l->n++;
	return 0;
}

/* The errno a Connect error code (not a cordon code) of ListDir stands for. */
static int connect_errno(json_object *ans, int status)
{
	bool bad = false;
	const char *rpc = ans ? e2b_string(ans, "code", &bad) : NULL;
	static const struct {
		const char *rpc;
		int status, errnum;
	} map[] = { { "not_found", -404, -ENOENT },
		    { "invalid_argument", -400, -ENOTDIR },
		    { "permission_denied", -403, -EXDEV } };
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if ((rpc && !bad && strcmp(rpc, map[i].rpc) == 0) || status == map[i].status)
			return map[i].errnum;
	return 0;
}

static int list_dir(const e2b_sandbox *s, const char *rel, int depth, listing *l, const char *op,
		    const char *shown, cordon_plugin_error *err)
{
	json_object *req = json_object_new_object(), *ans = NULL, *entries;
	char *rp = remote_path(s, rel);
	json_object_object_add(req, "path", json_object_new_string(rp));
	json_object_object_add(req, "depth", json_object_new_int(depth));
	int r = e2b_unary(s, "/filesystem.Filesystem/ListDir", req, &ans, err);
	json_object_put(req);
	e2b_host->free(rp);
	if (r < -1 && r >= -599) {
		int e = connect_errno(ans, r);
		json_object_put(ans);
		return e ? fs_error(err, e, op, shown)
			 : e2b_protocol_error(err, "ListDir: status %d", -r);
	}
	if (r < 0)
		return r;
	size_t n = json_object_object_get_ex(ans, "entries", &entries) &&
				   json_object_is_type(entries, json_type_array)
			   ? json_object_array_length(entries)
			   : 0;
	if (n > FSOPS_MAX_ENTRIES) {
		json_object_put(ans);
		return fs_error(err, -E2BIG, op, shown);
	}
	l->rel = e2b_host->alloc((n + 1) * sizeof(char *));
	l->file = e2b_host->alloc(n + 1);
	l->link = e2b_host->alloc(n + 1);
	for (size_t i = 0; i < n && r >= 0; i++)
		r = add_entry(s, l, json_object_array_get_idx(entries, i), err);
	json_object_put(ans);
	return r;
}

/* Compacts the listing in place: entry i moves to the front or is freed. */
static void keep(listing *l, size_t i, size_t *kept, bool yes)
{
	char *p = l->rel[i];
	l->rel[i] = NULL;
	if (yes)
		l->rel[(*kept)++] = p;
	else
		e2b_host->free(p);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int emit_sorted(char **paths, size_t n, cordon_plugin_emit_fn emit, void *ctx)
{
	if (n > 1)
		qsort(paths, n, sizeof(char *), by_name);
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		r = emit(ctx, paths[i], strlen(paths[i]));
	return r < 0 ? r : (int)n;
}

static size_t depth_of(const char *rel)
{
	size_t d = 1;
	for (; *rel; rel++)
		d += *rel == '/';
	return d;
}

int e2b_walk(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
	     cordon_plugin_error *err)
{
	e2b_sandbox *s = sandbox;
	char *rel = e2b_normalize(dir);
	if (!rel)
		return fs_error(err, -EXDEV, "walk", dir);
	listing l = { 0 };
	int r = list_dir(s, rel, FSOPS_MAX_DEPTH + 1, &l, "walk", dir, err);
	size_t base = *rel ? depth_of(rel) : 0, kept = 0;
	for (size_t i = 0; r >= 0 && i < l.n; i++) {
		if (depth_of(l.rel[i]) - base > FSOPS_MAX_DEPTH)
			r = fs_error(err, -E2BIG, "walk", dir);
		else
			keep(&l, i, &kept, l.file[i]);
	}
	if (r >= 0) {
		l.n = kept;
		r = emit_sorted(l.rel, l.n, emit, ctx);
	}
	listing_clear(&l);
	e2b_host->free(rel);
	return r;
}

/* Each component of the pattern against the same level of the path. */
static bool glob_match(char **comps, size_t ncomps, const char *rel)
{
	size_t i = 0;
	const char *p = rel;
	for (; i < ncomps; i++) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		char name[256];
		if (n >= sizeof(name))
			return false;
		memcpy(name, p, n);
		name[n] = '\0';
		if (fnmatch(comps[i], name, FNM_PERIOD) != 0)
			return false;
		if (!slash)
			return i + 1 == ncomps;
		p = slash + 1;
	}
	return false;
}

int e2b_glob(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
	     cordon_plugin_error *err)
{
	e2b_sandbox *s = sandbox;
	char *plain = e2b_normalize(pattern);
	e2b_host->free(plain);
	if (!plain || !e2b_host->path_is_confined(pattern))
		return fs_error(err, -EXDEV, "glob", pattern);
	size_t ncomps = depth_of(pattern);
	if (ncomps > FSOPS_MAX_DEPTH)
		return fs_error(err, -E2BIG, "glob", pattern);
	char *copy = e2b_host->strdup(pattern);
	char **comps = e2b_host->alloc((ncomps + 1) * sizeof(char *));
	size_t k = 0;
	for (char *save = NULL, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
		comps[k++] = c;
	listing l = { 0 };
	int r = list_dir(s, "", (int)k, &l, "glob", pattern, err);
	size_t kept = 0;
	for (size_t i = 0; r >= 0 && i < l.n; i++) {
		keep(&l, i, &kept, glob_match(comps, k, l.rel[i]));
	}
	if (r >= 0) {
		l.n = kept;
		r = emit_sorted(l.rel, l.n, emit, ctx);
	}
	listing_clear(&l);
	e2b_host->free(comps);
	e2b_host->free(copy);
	return r;
}
