/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * filesystem.Filesystem/WatchDir (e2b-protocol.md §5): a Connect server stream
 * of a directory's changes.
 *
 * The library has no watch API, so a small watcher runs inside the sandbox,
 * under its confinement, as a process of the server's (process.c) that the
 * API does not list: python3 with inotify through ctypes. It sets its
 * watches (each subdirectory's too when recursive, and new ones as they
 * come, at most WATCHES_MAX), prints "ready", then one JSON line
 * ["kind", "name"] per change. Its output is hostile input: each line is
 * bounded and parsed strictly, and anything else ends the watch. The watch
 * lives as long as its stream (the SDK's stop() ends it), the run's time
 * limit (Connect-Timeout-Ms, else the tier's wall limit) or the sandbox.
 */
#include "config.h"

#include "process.h"

#include <string.h>

#define LINE_MAX_BYTES 8192
#define WATCHES_MAX 10000
#define ERRTAIL_MAX 512

/* The watcher: argv[1] the directory (relative to the sandbox root), argv[2] "1" when
 * recursive. Exit codes: 44 no such path, 45 not a directory, 47 outside the root, 48
 * no inotify, 49 too many directories. */
static const char watcher[] =
	"import ctypes, json, os, struct, sys\n"
	"root, rec = sys.argv[1] or '.', sys.argv[2] == '1'\n"
	"if not os.path.lexists(root): sys.exit(44)\n"
	"if not os.path.isdir(root): sys.exit(45)\n"
	"d, t = os.path.realpath(root), os.path.realpath('.')\n"
	"if d != t and not d.startswith(t + '/'): sys.exit(47)\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"fd = libc.inotify_init1(os.O_CLOEXEC)\n"
	"if fd < 0: sys.exit(48)\n"
	"M = 0x2 | 0x4 | 0x40 | 0x80 | 0x100 | 0x200\n"
	"wd = {}\n"
	"def add(p, follow):\n"
	"  if len(wd) >= " G_STRINGIFY(
		WATCHES_MAX) ": sys.exit(49)\n"
			     "  w = libc.inotify_add_watch(fd, os.fsencode(p), M | 0x1000000 | (0 "
			     "if follow else "
			     "0x2000000))\n"
			     "  if w >= 0: wd[w] = p\n"
			     "def walk(p, follow):\n"
			     "  add(p, follow)\n"
			     "  if rec:\n"
			     "    for dp, dns, _ in os.walk(p):\n"
			     "      for n in dns: add(os.path.join(dp, n), False)\n"
			     "walk(root, True)\n"
			     "print('ready', flush=True)\n"
			     "kinds = ((0x100, 'create'), (0x80, 'create'), (0x2, 'write'), "
			     "(0x200, 'remove'), "
			     "(0x40, 'rename'), (0x4, 'chmod'))\n"
			     "while True:\n"
			     "  b, i = os.read(fd, 65536), 0\n"
			     "  while i + 16 <= len(b):\n"
			     "    w, mask, _, n = struct.unpack_from('iIII', b, i)\n"
			     "    name = os.fsdecode(b[i + 16:i + 16 + n].rstrip(b'\\0'))\n"
			     "    i += 16 + n\n"
			     "    if w not in wd or not name: continue\n"
			     "    full = os.path.join(wd[w], name)\n"
			     "    for bit, k in kinds:\n"
			     "      if mask & bit:\n"
			     "        print(json.dumps([k, os.path.relpath(full, root)]), "
			     "flush=True)\n"
			     "        break\n"
			     "    if rec and mask & 0x40000000 and mask & 0x180: walk(full, "
			     "False)\n";

/* WatchDirResponse's oneof is its own: {kind: body}, not a process's {"event": ...}. */
json_object *srv_watch_event(const char *kind, json_object *body)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, kind, body);
	return o;
}

/* envd's EventType names (the SDK maps them to create, write, ...). */
static const char *event_type(const char *kind)
{
	static const char *const map[][2] = {
		{ "create", "EVENT_TYPE_CREATE" }, { "write", "EVENT_TYPE_WRITE" },
		{ "remove", "EVENT_TYPE_REMOVE" }, { "rename", "EVENT_TYPE_RENAME" },
		{ "chmod", "EVENT_TYPE_CHMOD" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
		if (strcmp(kind, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/* The library's write_file writes a temporary file beside the target and renames it:
 * an upload is seen as the target's create, without that noise. */
static bool library_temporary(const char *name)
{
	const char *base = strrchr(name, '/');
	return g_str_has_prefix(base ? base + 1 : name, ".cordon-write-");
}

/* Under p->lock, one line of the watcher's: false when it is not one it may print. */
static bool watch_line(srv_proc *p, const char *line)
{
	if (!p->watch_ready) { /* WatchDir's start event: the watches are set */
		p->watch_ready = strcmp(line, "ready") == 0;
		if (p->watch_ready)
			srv_proc_push(
				p,
				srv_envelope(0, srv_watch_event("start", json_object_new_object())),
				false);
		return p->watch_ready;
	}
	json_tokener *tok = json_tokener_new_ex(4);
	json_object *a = json_tokener_parse_ex(tok, line, (int)strlen(line));
	bool whole = a && json_tokener_get_error(tok) == json_tokener_success &&
		     json_tokener_get_parse_end(tok) == strlen(line);
	json_tokener_free(tok);
	json_object *k = whole && json_object_is_type(a, json_type_array) &&
					 json_object_array_length(a) == 2
				 ? json_object_array_get_idx(a, 0)
				 : NULL;
	json_object *n = k ? json_object_array_get_idx(a, 1) : NULL;
	const char *type = k && json_object_is_type(k, json_type_string)
				   ? event_type(json_object_get_string(k))
				   : NULL;
	bool ok = type && json_object_is_type(n, json_type_string);
	if (ok && !library_temporary(json_object_get_string(n))) {
		json_object *fs = json_object_new_object();
		json_object_object_add(fs, "name", json_object_get(n));
		json_object_object_add(fs, "type", json_object_new_string(type));
		srv_proc_push(p, srv_envelope(0, srv_watch_event("filesystem", fs)), true);
	}
	json_object_put(a);
	return ok;
}

int srv_watch_output(srv_proc *p, int stream, const void *data, size_t len)
{
	if (stream == 2) { /* kept for the error it may end with */
		g_string_append_len(p->errtail, data, (gssize)len);
		if (p->errtail->len > ERRTAIL_MAX)
			g_string_erase(p->errtail, 0, (gssize)(p->errtail->len - ERRTAIL_MAX));
		return 0;
	}
	const char *d = data;
	for (size_t i = 0; i < len; i++) {
		if (d[i] != '\n') {
			if (p->line->len >= LINE_MAX_BYTES) {
				p->watch_bad = true; /* a line that long is not the watcher's */
				return 1;
			}
			g_string_append_c(p->line, d[i]);
			continue;
		}
		g_mutex_lock(&p->lock);
		bool ok = watch_line(p, p->line->str);
		g_mutex_unlock(&p->lock);
		g_string_truncate(p->line, 0);
		if (!ok) {
			p->watch_bad = true;
			return 1; /* cancels the run: the watch ends with an error */
		}
	}
	return 0;
}

GBytes *srv_watch_end(srv_proc *p, int rc, const cordon_result *res, const cordon_error *err)
{
	static const struct {
		int code;
		const char *connect, *message;
	} exits[] = {
		{ 44, "not_found", "the directory does not exist" },
		{ 45, "invalid_argument", "the path is not a directory" },
		{ 47, "permission_denied", "the directory is outside the sandbox's home" },
		{ 48, "internal", "the sandbox has no inotify" },
		{ 49, "resource_exhausted", "more than " G_STRINGIFY(WATCHES_MAX) " directories" },
	};
	if (rc < 0)
		return srv_envelope(2, srv_end_error(srv_connect_code(err),
						     cordon_error_get_message(err), err));
	if (p->watch_bad)
		return srv_envelope(
			2, srv_end_error("internal", "the watcher printed what it may not", NULL));
	int code = cordon_result_exit_code(res);
	for (size_t i = 0; i < G_N_ELEMENTS(exits); i++)
		if (!cordon_result_signal(res) && code == exits[i].code)
			return srv_envelope(
				2, srv_end_error(exits[i].connect, exits[i].message, NULL));
	if (cordon_result_cancelled(res) || cordon_result_timed_out(res))
		return srv_envelope(2, json_object_new_object()); /* stopped, or its time is up */
	char *why = g_strdup_printf(
		"the watcher ended (%d): %.*s", code, (int)MIN(p->errtail->len, 200),
		p->errtail->str + (p->errtail->len > 200 ? p->errtail->len - 200 : 0));
	for (char *c = why; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
	GBytes *b = srv_envelope(2, srv_end_error("internal", why, NULL));
	g_free(why);
	return b;
}

enum MHD_Result srv_watch_dir(srv_req *r, srv_sandbox *s)
{
	const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strcmp(ct, "application/connect+json") != 0)
		return srv_reply_error(r, 415, NULL, "WatchDir takes application/connect+json");
	static const char *const fields[] = { "path", "recursive", "includeEntry",
					      "allowNetworkMounts", NULL };
	const char *bad = NULL;
	json_object *req = srv_stream_message(r, &bad), *v;
	if (!req)
		return srv_stream_error(r, "invalid_argument", bad);
	const char *path = json_object_object_get_ex(req, "path", &v) &&
					   json_object_is_type(v, json_type_string)
				   ? json_object_get_string(v)
				   : NULL;
	char *rel = path ? srv_map_path(path) : NULL;
	bool recursive = json_object_object_get_ex(req, "recursive", &v) &&
			 json_object_get_boolean(v);
	bool entry = json_object_object_get_ex(req, "includeEntry", &v) &&
		     json_object_get_boolean(v);
	bad = srv_unknown_field(req, fields) ? "unknown field in WatchDirRequest"
	      : !path                        ? "path (a string) is required"
	      : !rel  ? "the path is outside the sandbox's home (" SRV_HOME ")"
	      : entry ? "includeEntry is not implemented by cordon server"
		      : NULL;
	json_object_put(req);
	srv_proc *p = srv_proc_new(s);
	p->watcher = true;
	p->line = g_string_new(NULL);
	p->errtail = g_string_new(NULL);
	p->argv = g_new0(char *, 6);
	p->argv[0] = g_strdup("/usr/bin/python3");
	p->argv[1] = g_strdup("-c");
	p->argv[2] = g_strdup(watcher);
	p->argv[3] = rel ? rel : g_strdup("");
	p->argv[4] = g_strdup(recursive ? "1" : "0");
	p->env = g_new0(char *, 1);
	p->config = json_object_new_object();
	if (bad || !srv_proc_pipes(p)) {
		srv_proc_unref(p);
		return srv_stream_error(r, bad ? "invalid_argument" : "internal",
					bad ? bad : "cannot make a pipe");
	}
	return srv_proc_launch(r, p, false);
}
