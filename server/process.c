/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * process.Process (e2b-protocol.md §4): Start and Connect as Connect server
 * streams (procout.c), List, SendInput, CloseStdin, SendSignal, Update.
 *
 * Each started process is one cordon_sandbox_stream() on a thread of its own;
 * its output becomes enveloped events for its readers (procout.c). A process
 * outlives its readers, as in envd: Connect re-attaches to it.
 *
 * stdin: a process started with stdin:true reads a pipe the library streams
 * (cordon_run_options.stdin_fd), so it runs at once and reads input as it
 * comes: SendInput writes into the pipe's other end, CloseStdin closes it.
 * A kill ends the run, which closes the reading end: a SendInput blocked on a
 * full pipe then fails (EPIPE) instead of waiting.
 *
 * A pty: the run gets the library's pseudo-terminal (CORDON_RUN_TTY) of the
 * requested size; SendInput's pty bytes go through the same pipe (typed into
 * the terminal), Update writes {rows, cols} records into the run's resize
 * descriptor, and the terminal's output is "pty" data.
 *
 * A port: a Start with the header Cordon-Serve-Port (cordon's own; E2B's
 * processes are reachable on any port, cordon's only on one the run was
 * started to serve) runs the process as cordon_sandbox_serve. Its start event
 * comes once the port accepts; tunnel.c reaches it at the serve's address;
 * its output is the retained tail, sent at its end.
 */
#include "config.h"

#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a SendInput waits for a process that does not read its stdin. */
#define STDIN_WAIT_MS 30000
/* Processes running at once in one sandbox: each holds a thread and a run. */
#define PROCS_MAX 64u
#define ARGS_MAX 4096

void srv_proc_unref(srv_proc *p)
{
	g_mutex_lock(&p->lock);
	bool last = --p->refs == 0;
	g_mutex_unlock(&p->lock);
	if (!last)
		return;
	g_strfreev(p->argv);
	g_strfreev(p->env);
	g_free(p->workdir);
	g_free(p->address);
	json_object_put(p->config);
	json_object_put(p->tag);
	if (p->line)
		g_string_free(p->line, TRUE);
	if (p->errtail)
		g_string_free(p->errtail, TRUE);
	for (int i = 0; i < 2; i++)
		if (p->resize[i] >= 0)
			close(p->resize[i]);
	if (p->stdin_pipe[0] >= 0)
		close(p->stdin_pipe[0]);
	if (p->stdin_pipe[1] >= 0)
		close(p->stdin_pipe[1]);
	g_mutex_clear(&p->stdin_lock);
	close(p->cancel[0]);
	close(p->cancel[1]);
	g_queue_clear_full(&p->backlog, (GDestroyNotify)g_bytes_unref);
	g_ptr_array_unref(p->readers);
	srv_sandbox_unref(p->sbx);
	g_mutex_clear(&p->lock);
	g_cond_clear(&p->cond);
	g_free(p);
}

/* ---- events --------------------------------------------------------------------- */

static int on_output(void *user, int stream, const void *data, size_t len)
{
	srv_proc *p = user;
	if (p->watcher)
		return srv_watch_output(p, stream, data, len);
	const guint8 *d = data;
	const char *kind = p->pty ? "pty" : stream == 2 ? "stderr" : "stdout";
	for (size_t off = 0; off < len; off += SRV_DATA_CHUNK) {
		size_t n = MIN(SRV_DATA_CHUNK, len - off);
		char *b64 = g_base64_encode(d + off, n);
		json_object *dat = json_object_new_object();
		json_object_object_add(dat, kind, json_object_new_string(b64));
		g_free(b64);
		g_mutex_lock(&p->lock);
		srv_proc_push(p, srv_envelope(0, srv_event("data", dat)), true);
		g_mutex_unlock(&p->lock);
	}
	return 0; /* the work goes on without readers (Connect re-attaches) */
}

json_object *srv_end_error(const char *code, const char *message, const cordon_error *err)
{
	json_object *e = json_object_new_object(), *o = json_object_new_object();
	json_object_object_add(e, "code", json_object_new_string(code));
	json_object_object_add(e, "message", json_object_new_string(message));
	if (err) /* cordon's code, for a cordon client (the e2b plugin) */
		json_object_object_add(e, "error_code",
				       json_object_new_string(cordon_error_get_code(err)));
	json_object_object_add(o, "error", e);
	return o;
}

/* The end event as Go's ProcessState reports it (e2b-protocol.md §4.2, 5). */
static json_object *end_event(const cordon_result *res, int killed_by)
{
	json_object *end = json_object_new_object();
	int sig = cordon_result_signal(res);
	if (!sig && cordon_result_cancelled(res))
		sig = killed_by ? killed_by : SIGKILL;
	char *status;
	if (sig) {
		/* Go's names are the C library's, in lower case ("signal: interrupt") */
		g_autofree char *name = g_ascii_strdown(g_strsignal(sig), -1);
		json_object_object_add(end, "exitCode", json_object_new_int(-1));
		status = g_strdup_printf("signal: %s", name);
	} else {
		int code = cordon_result_exit_code(res);
		if (code)
			json_object_object_add(end, "exitCode", json_object_new_int(code));
		json_object_object_add(end, "exited", json_object_new_boolean(1));
		status = g_strdup_printf("exit status %d", code);
	}
	json_object_object_add(end, "status", json_object_new_string(status));
	if (sig || cordon_result_exit_code(res))
		json_object_object_add(end, "error", json_object_new_string(status));
	g_free(status);
	return srv_event("end", end);
}

static GBytes *start_envelope(const srv_proc *p)
{
	json_object *st = json_object_new_object();
	json_object_object_add(st, "pid", json_object_new_int64(p->pid));
	if (p->serve_port) /* cordon's own: the port accepts (the e2b plugin checks it) */
		json_object_object_add(st, "servePort", json_object_new_int(p->serve_port));
	return srv_envelope(0, srv_event("start", st));
}

/* A served process: started, its start event once the port accepts, then it runs
 * until it ends or the cancel pipe asks (SendSignal, the client gone). */
static int run_served(srv_proc *p, const cordon_run_options *o, cordon_result **res,
		      cordon_error **err)
{
	cordon_run_options opts = *o;
	opts.cancel_fd = -1; /* serve is ended by cordon_serve_stop */
	cordon_serve *sv = NULL;
	if (cordon_sandbox_serve(p->sbx->sb, (const char *const *)p->argv, p->serve_port, &opts,
				 &sv, err) < 0)
		return -1;
	g_mutex_lock(&p->lock);
	p->address = cordon_serve_address(sv);
	srv_proc_push(p, start_envelope(p), false);
	g_mutex_unlock(&p->lock);
	int r;
	for (;;) {
		r = cordon_serve_wait(sv, 200, res, err);
		if (r != -ETIMEDOUT)
			break;
		cordon_error_free(*err);
		*err = NULL;
		struct pollfd pfd = { .fd = p->cancel[0], .events = POLLIN };
		if (poll(&pfd, 1, 0) > 0)
			cordon_serve_stop(sv, NULL);
	}
	g_mutex_lock(&p->lock);
	g_clear_pointer(&p->address, g_free);
	g_mutex_unlock(&p->lock);
	char *tail = cordon_serve_output(sv);
	if (r == 0 && tail && *tail)
		on_output(p, 1, tail, strlen(tail));
	g_free(tail);
	cordon_serve_free(sv);
	return r < 0 ? -1 : 0;
}

static gpointer proc_thread(gpointer data)
{
	srv_proc *p = data;
	cordon_run_options opts = CORDON_RUN_OPTIONS_INIT;
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	GBytes *final = NULL, *last = NULL;
	opts.timeout_ms = p->timeout_ms;
	opts.env = (const char *const *)p->env;
	opts.workdir = p->workdir && *p->workdir ? p->workdir : NULL;
	opts.cancel_fd = p->cancel[0];
	opts.stdin_fd = p->stdin_pipe[0];
	if (p->pty) {
		opts.flags |= CORDON_RUN_TTY;
		opts.tty_rows = p->rows;
		opts.tty_cols = p->cols;
		opts.tty_resize_fd = p->resize[0];
	}
	int rc = p->serve_port ? run_served(p, &opts, &res, &err)
			       : cordon_sandbox_stream(p->sbx->sb, (const char *const *)p->argv,
						       &opts, on_output, p, &res, &err);
	/* The run no longer reads: a writer blocked on the pipe gets EPIPE. */
	if (p->stdin_pipe[0] >= 0) {
		close(p->stdin_pipe[0]);
		p->stdin_pipe[0] = -1;
	}
	if (p->watcher) {
		final = srv_watch_end(p, rc, res, err);
	} else if (rc < 0) {
		final = srv_envelope(2, srv_end_error(srv_connect_code(err),
						      cordon_error_get_message(err), err));
	} else if (cordon_result_timed_out(res)) {
		final = srv_envelope(2, srv_end_error("deadline_exceeded",
						      "the process ran past its "
						      "Connect-Timeout-Ms and was killed",
						      NULL));
	} else {
		last = srv_envelope(0, end_event(res, p->killed_by));
		final = srv_envelope(2, json_object_new_object());
	}
	cordon_result_free(res);
	cordon_error_free(err);
	/* Gone from List and SendSignal before the client can read its end. */
	g_mutex_lock(&srv.lock);
	g_hash_table_remove(p->sbx->procs, GUINT_TO_POINTER(p->pid));
	g_mutex_unlock(&srv.lock);
	g_mutex_lock(&p->lock);
	if (last)
		srv_proc_push(p, last, false);
	srv_proc_push(p, final, false);
	p->ended = true;
	g_cond_broadcast(&p->cond);
	g_mutex_unlock(&p->lock);
	srv_proc_unref(p); /* the thread's */
	srv_proc_unref(p); /* the table's */
	return NULL;
}

/* ---- Start ------------------------------------------------------------------------ */

static char **strv_field(json_object *arr, size_t max)
{
	if (!arr)
		return g_new0(char *, 1);
	if (!json_object_is_type(arr, json_type_array) || json_object_array_length(arr) > max)
		return NULL;
	size_t n = json_object_array_length(arr);
	char **v = g_new0(char *, n + 1);
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(x, json_type_string)) {
			g_strfreev(v);
			return NULL;
		}
		v[i] = g_strdup(json_object_get_string(x));
	}
	return v;
}

/* argv = cmd + args; env = the sandbox's envVars, then the request's envs. */
static const char *read_config(srv_proc *p, json_object *cfg)
{
	static const char *const fields[] = { "cmd", "args", "envs", "cwd", NULL };
	json_object *cmd, *args = NULL, *envs = NULL, *cwd = NULL;
	if (!json_object_is_type(cfg, json_type_object) || srv_unknown_field(cfg, fields))
		return "process must be a ProcessConfig {cmd, args, envs, cwd}";
	if (!json_object_object_get_ex(cfg, "cmd", &cmd) ||
	    !json_object_is_type(cmd, json_type_string) || !*json_object_get_string(cmd))
		return "process.cmd (a string) is required";
	json_object_object_get_ex(cfg, "args", &args);
	char **a = strv_field(args, ARGS_MAX);
	if (!a)
		return "process.args must be a list of strings";
	p->argv = g_new0(char *, g_strv_length(a) + 2);
	p->argv[0] = g_strdup(json_object_get_string(cmd));
	memcpy(p->argv + 1, a, g_strv_length(a) * sizeof(char *));
	g_free(a);
	GPtrArray *env = g_ptr_array_new();
	for (char **e = p->sbx->env; *e; e++)
		g_ptr_array_add(env, g_strdup(*e));
	if (json_object_object_get_ex(cfg, "envs", &envs) &&
	    !json_object_is_type(envs, json_type_null)) {
		if (!json_object_is_type(envs, json_type_object)) {
			g_ptr_array_add(env, NULL);
			g_strfreev((char **)g_ptr_array_free(env, FALSE));
			return "process.envs must be a map of strings";
		}
		SRV_FOR_MEMBERS(envs, it, end)
		g_ptr_array_add(env, g_strdup_printf("%s=%s", json_object_iter_peek_name(&it),
						     json_object_get_string(
							     json_object_iter_peek_value(&it))));
	}
	g_ptr_array_add(env, NULL);
	p->env = (char **)g_ptr_array_free(env, FALSE);
	if (json_object_object_get_ex(cfg, "cwd", &cwd) &&
	    json_object_is_type(cwd, json_type_string) && *json_object_get_string(cwd)) {
		p->workdir = srv_map_path(json_object_get_string(cwd));
		if (!p->workdir)
			return "cwd is outside the sandbox's home (" SRV_HOME ")";
	}
	p->config = json_object_get(cfg);
	return NULL;
}

static int header_int(srv_req *r, const char *name, int dflt, int max)
{
	const char *v = srv_header(r, name);
	char *end;
	if (!v || !*v)
		return dflt;
	long long n = g_ascii_strtoll(v, &end, 10);
	return *end || n <= 0 ? dflt : (int)MIN(n, (long long)max);
}

/* The one message of a streaming call's body (one uncompressed envelope); NULL and why. */
json_object *srv_stream_message(srv_req *r, const char **why)
{
	const guint8 *b = r->body->data;
	size_t len = r->body->len;
	if (len < 5 || b[0] != 0 ||
	    (((size_t)b[1] << 24) | ((size_t)b[2] << 16) | ((size_t)b[3] << 8) | b[4]) != len - 5) {
		*why = "the body must be exactly one uncompressed Connect envelope";
		return NULL;
	}
	json_object *req = srv_parse_object((const char *)b + 5, len - 5);
	if (!req)
		*why = "the message is not a JSON object";
	return req;
}

/* A terminal size {"cols": N, "rows": N}, each 1-4096. */
static bool read_size(json_object *pty, uint16_t *rows, uint16_t *cols)
{
	json_object *size, *r, *c;
	if (!json_object_is_type(pty, json_type_object) ||
	    !json_object_object_get_ex(pty, "size", &size) ||
	    !json_object_object_get_ex(size, "rows", &r) ||
	    !json_object_object_get_ex(size, "cols", &c) ||
	    !json_object_is_type(r, json_type_int) || !json_object_is_type(c, json_type_int))
		return false;
	int64_t nr = json_object_get_int64(r), nc = json_object_get_int64(c);
	if (nr < 1 || nr > 4096 || nc < 1 || nc > 4096)
		return false;
	*rows = (uint16_t)nr;
	*cols = (uint16_t)nc;
	return true;
}

static const char *parse_start(srv_req *r, srv_proc *p)
{
	static const char *const fields[] = { "process", "pty", "tag", "stdin", NULL };
	const char *bad = NULL;
	json_object *req = srv_stream_message(r, &bad), *v;
	if (!req)
		return bad;
	if (srv_unknown_field(req, fields))
		bad = "unknown field in StartRequest";
	else if (!json_object_object_get_ex(req, "process", &v))
		bad = "process is required";
	else
		bad = read_config(p, v);
	if (!bad && json_object_object_get_ex(req, "pty", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (read_size(v, &p->rows, &p->cols))
			p->pty = p->want_stdin = true; /* its input is the terminal's */
		else
			bad = "pty.size must be {cols, rows}, each 1-4096";
	}
	if (!bad && !p->pty && json_object_object_get_ex(req, "stdin", &v))
		p->want_stdin = json_object_get_boolean(v);
	if (!bad && json_object_object_get_ex(req, "tag", &v) &&
	    json_object_is_type(v, json_type_string))
		p->tag = json_object_get(v);
	json_object_put(req);
	return bad;
}

static bool nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

/* Cordon-Serve-Port: the port the process is started to serve. */
static const char *parse_serve(srv_req *r, srv_proc *p)
{
	const char *v = srv_header(r, "Cordon-Serve-Port");
	char *end;
	if (!v)
		return NULL;
	guint64 port = g_ascii_strtoull(v, &end, 10);
	if (!*v || *end || port == 0 || port > 65535 || port == (guint64)atoi(SRV_ENVD_PORT))
		return "Cordon-Serve-Port must be a port number (not envd's)";
	if (p->want_stdin)
		return "a served process takes no stdin nor pty";
	p->serve_port = (uint16_t)port;
	return NULL;
}

srv_proc *srv_proc_new(srv_sandbox *s)
{
	srv_proc *p = g_new0(srv_proc, 1);
	g_mutex_init(&p->lock);
	g_cond_init(&p->cond);
	g_queue_init(&p->backlog);
	p->readers = g_ptr_array_new();
	g_mutex_init(&p->stdin_lock);
	p->stdin_pipe[0] = p->stdin_pipe[1] = -1;
	p->cancel[0] = p->cancel[1] = -1;
	p->resize[0] = p->resize[1] = -1;
	p->refs = 1;
	g_mutex_lock(&srv.lock);
	s->refs++;
	g_mutex_unlock(&srv.lock);
	p->sbx = s;
	return p;
}

/* The pipes a process needs: cancel; stdin (and a pty's input); a pty's resizes. */
bool srv_proc_pipes(srv_proc *p)
{
	if (pipe2(p->cancel, O_CLOEXEC | O_NONBLOCK) < 0)
		return false;
	if (p->want_stdin &&
	    (pipe2(p->stdin_pipe, O_CLOEXEC) < 0 || !nonblocking(p->stdin_pipe[1])))
		return false;
	return !p->pty || pipe2(p->resize, O_CLOEXEC | O_NONBLOCK) == 0;
}

/* A streaming call's error, which travels in the stream's trailer. */
enum MHD_Result srv_stream_error(srv_req *r, const char *code, const char *message)
{
	GBytes *e = srv_envelope(2, srv_end_error(code, message, NULL));
	gsize n;
	gconstpointer d = g_bytes_get_data(e, &n);
	struct MHD_Response *resp = MHD_create_response_from_buffer(n, (void *)d,
								    MHD_RESPMEM_MUST_COPY);
	g_bytes_unref(e);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/connect+json");
	enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result queue_stream(srv_req *r, struct MHD_Response *resp)
{
	enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* At most 60 s: below the daemon's 120 s idle limit, so a quiet stream lives. */
static int keepalive_of(srv_req *r) { return header_int(r, "Keepalive-Ping-Interval", 60, 60); }

/* Under srv.lock. */
static bool port_taken(srv_sandbox *s, uint16_t port)
{
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, s->procs);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (((srv_proc *)v)->serve_port == port)
			return true;
	return false;
}

char *srv_serve_address(srv_sandbox *s, uint16_t port)
{
	char *addr = NULL;
	GHashTableIter it;
	gpointer v;
	g_mutex_lock(&srv.lock);
	g_hash_table_iter_init(&it, s->procs);
	while (!addr && g_hash_table_iter_next(&it, NULL, &v)) {
		srv_proc *p = v;
		if (p->serve_port != port)
			continue;
		g_mutex_lock(&p->lock);
		addr = g_strdup(p->address);
		g_mutex_unlock(&p->lock);
	}
	g_mutex_unlock(&srv.lock);
	return addr;
}

/* Registers p in s's table under a new pid; NULL, or the Connect code of a refusal. */
static const char *register_proc(srv_sandbox *s, srv_proc *p)
{
	const char *why = NULL;
	g_mutex_lock(&srv.lock);
	if (s->dead)
		why = "unavailable";
	else if (g_hash_table_size(s->procs) >= PROCS_MAX)
		why = "resource_exhausted";
	else if (p->serve_port && port_taken(s, p->serve_port))
		why = "already_exists";
	if (!why) {
		p->pid = s->next_pid++;
		g_hash_table_insert(s->procs, GUINT_TO_POINTER(p->pid), p);
	}
	g_mutex_unlock(&srv.lock);
	return why;
}

static enum MHD_Result start(srv_req *r, srv_sandbox *s)
{
	const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strcmp(ct, "application/connect+json") != 0)
		return srv_reply_error(r, 415, NULL, "Start takes application/connect+json");
	srv_proc *p = srv_proc_new(s);
	const char *bad = parse_start(r, p);
	if (!bad)
		bad = parse_serve(r, p);
	if (bad || !srv_proc_pipes(p)) {
		srv_proc_unref(p);
		return srv_stream_error(r, bad ? "invalid_argument" : "internal",
					bad ? bad : "cannot make a pipe");
	}
	return srv_proc_launch(r, p, !p->serve_port);
}

enum MHD_Result srv_proc_launch(srv_req *r, srv_proc *p, bool start_now)
{
	srv_sandbox *s = p->sbx;
	p->timeout_ms = (uint64_t)header_int(r, "Connect-Timeout-Ms", 0, INT32_MAX);
	p->refs = 2; /* the table's, the thread's; the reader takes its own */
	const char *refused = register_proc(s, p);
	if (refused) {
		unsigned port = p->serve_port;
		p->refs = 1; /* it never left this thread */
		srv_proc_unref(p);
		if (strcmp(refused, "already_exists") == 0)
			return srv_reply_connect_error(r, refused,
						       "port %u is served by another process of "
						       "this sandbox",
						       port);
		if (strcmp(refused, "unavailable") == 0)
			return srv_reply_connect_error(r, refused, "the sandbox was killed");
		return srv_reply_connect_error(
			r, refused, "%u processes are running in this sandbox already", PROCS_MAX);
	}
	/* The reader first: a later start event (a serve's, a watcher's) comes from the
	 * thread, to the readers there are. */
	g_mutex_lock(&p->lock);
	struct MHD_Response *resp = srv_reader_new(p, r->conn, start_now ? start_envelope(p) : NULL,
						   keepalive_of(r));
	g_mutex_unlock(&p->lock);
	g_thread_unref(g_thread_new("proc", proc_thread, p));
	return queue_stream(r, resp);
}

/* ---- Connect --------------------------------------------------------------------- */

static srv_proc *selected(srv_sandbox *s, json_object *req);

/* Re-attaching: a start event, what came while no one read (bounded), then the rest. */
static enum MHD_Result connect_proc(srv_req *r, srv_sandbox *s)
{
	const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strcmp(ct, "application/connect+json") != 0)
		return srv_reply_error(r, 415, NULL, "Connect takes application/connect+json");
	const char *bad = NULL;
	json_object *req = srv_stream_message(r, &bad);
	if (!req)
		return srv_stream_error(r, "invalid_argument", bad);
	srv_proc *p = selected(s, req);
	json_object_put(req);
	if (!p)
		return srv_stream_error(r, "not_found", "process not found");
	struct MHD_Response *resp = NULL;
	g_mutex_lock(&p->lock);
	if (!p->ended && !p->serve_port)
		resp = srv_reader_new(p, r->conn, start_envelope(p), keepalive_of(r));
	bool served = p->serve_port != 0;
	g_mutex_unlock(&p->lock);
	srv_proc_unref(p);
	if (!resp)
		return served ? srv_stream_error(r, "failed_precondition",
						 "a served process's output is not streamed")
			      : srv_stream_error(r, "not_found", "process not found");
	return queue_stream(r, resp);
}

/* ---- the unary RPCs ------------------------------------------------------------------ */

/* A reference to the process the request's {"process": {"pid": N}} names. */
static srv_proc *selected(srv_sandbox *s, json_object *req)
{
	json_object *sel, *pid;
	if (!json_object_object_get_ex(req, "process", &sel) ||
	    !json_object_object_get_ex(sel, "pid", &pid))
		return NULL;
	int64_t n = json_object_get_int64(pid); /* a number or a numeric string */
	if (n <= 0 || n > UINT32_MAX)
		return NULL;
	g_mutex_lock(&srv.lock);
	srv_proc *p = g_hash_table_lookup(s->procs, GUINT_TO_POINTER((guint)n));
	if (p && p->watcher)
		p = NULL; /* a WatchDir's: not a process of the API */
	if (p) {
		g_mutex_lock(&p->lock);
		p->refs++;
		g_mutex_unlock(&p->lock);
	}
	g_mutex_unlock(&srv.lock);
	return p;
}

static void signal_proc(srv_proc *p, int sig)
{
	g_mutex_lock(&p->lock);
	if (!p->killed_by)
		p->killed_by = sig;
	g_cond_broadcast(&p->cond);
	g_mutex_unlock(&p->lock);
	/* The library's cancel ends the work's whole tree (SIGKILL). */
	if (write(p->cancel[1], "x", 1) < 0 && errno != EAGAIN)
		g_warning("process %u: cannot cancel: %s", p->pid, g_strerror(errno));
}

static enum MHD_Result send_signal(srv_req *r, srv_proc *p, json_object *req)
{
	json_object *v;
	const char *name = json_object_object_get_ex(req, "signal", &v) ? json_object_get_string(v)
									: "";
	int sig = strcmp(name, "SIGNAL_SIGKILL") == 0 || strcmp(name, "9") == 0    ? SIGKILL
		  : strcmp(name, "SIGNAL_SIGTERM") == 0 || strcmp(name, "15") == 0 ? SIGTERM
										   : 0;
	if (!sig)
		return srv_reply_connect_error(r, "unimplemented", "invalid signal: %s", name);
	signal_proc(p, sig);
	return srv_reply_json(r, 200, json_object_new_object());
}

/* Writes all of data into the stdin pipe (under stdin_lock), waiting while it
 * is full, at most STDIN_WAIT_MS; NULL or why it could not. */
static const char *write_stdin(srv_proc *p, const guchar *data, size_t n)
{
	gint64 until = g_get_monotonic_time() + STDIN_WAIT_MS * 1000;
	while (n) {
		ssize_t w = write(p->stdin_pipe[1], data, n);
		if (w > 0) {
			data += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EPIPE)
			return "the process has ended";
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return "cannot write the process's stdin";
		gint64 left = (until - g_get_monotonic_time()) / 1000;
		if (left <= 0)
			return "the process does not read its stdin";
		struct pollfd pfd = { .fd = p->stdin_pipe[1], .events = POLLOUT };
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return "cannot write the process's stdin";
	}
	return NULL;
}

/* SendInput's bytes: input.stdin for a process started with stdin, input.pty for a pty. */
static const char *input_bytes(const srv_proc *p, json_object *req, guchar **ret, gsize *n)
{
	json_object *in, *data;
	const char *kind = p->pty ? "pty" : "stdin";
	if (!json_object_object_get_ex(req, "input", &in) ||
	    !json_object_object_get_ex(in, kind, &data) ||
	    !json_object_is_type(data, json_type_string))
		return p->pty ? "input.pty (base64) is required for a pty"
			      : "input.stdin (base64) is required";
	*ret = g_base64_decode(json_object_get_string(data), n);
	return NULL;
}

static enum MHD_Result send_input(srv_req *r, srv_proc *p, json_object *req, bool close_it)
{
	guchar *bytes = NULL;
	gsize n = 0;
	const char *bad = close_it ? NULL : input_bytes(p, req, &bytes, &n);
	if (bad)
		return srv_reply_connect_error(r, "invalid_argument", "%s", bad);
	g_mutex_lock(&p->stdin_lock);
	bad = !p->want_stdin         ? "the process was not started with stdin"
	      : p->stdin_pipe[1] < 0 ? "stdin is closed"
				     : NULL;
	if (!bad && n)
		bad = write_stdin(p, bytes, n);
	if (!bad && close_it) {
		close(p->stdin_pipe[1]);
		p->stdin_pipe[1] = -1;
	}
	g_mutex_unlock(&p->stdin_lock);
	g_free(bytes);
	if (bad)
		return srv_reply_connect_error(r, "failed_precondition", "%s", bad);
	return srv_reply_json(r, 200, json_object_new_object());
}

/* Update: a pty's new size, one {rows, cols} record the library reads at once. */
static enum MHD_Result update(srv_req *r, srv_proc *p, json_object *req)
{
	json_object *pty;
	uint16_t rec[2];
	if (!json_object_object_get_ex(req, "pty", &pty) || !read_size(pty, &rec[0], &rec[1]))
		return srv_reply_connect_error(r, "invalid_argument",
					       "pty.size must be {cols, rows}, each 1-4096");
	if (!p->pty)
		return srv_reply_connect_error(r, "failed_precondition", "the process has no pty");
	/* 4 bytes, under PIPE_BUF: written whole or not at all. */
	ssize_t w = write(p->resize[1], rec, sizeof(rec));
	if (w != (ssize_t)sizeof(rec))
		return srv_reply_connect_error(r, "resource_exhausted",
					       "the pty does not take its resizes");
	return srv_reply_json(r, 200, json_object_new_object());
}

static enum MHD_Result list_procs(srv_req *r, srv_sandbox *s)
{
	json_object *arr = json_object_new_array(), *o = json_object_new_object();
	GHashTableIter it;
	gpointer v;
	g_mutex_lock(&srv.lock);
	g_hash_table_iter_init(&it, s->procs);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		srv_proc *p = v;
		if (p->watcher)
			continue;
		json_object *info = json_object_new_object();
		json_object_object_add(info, "config", json_object_get(p->config));
		json_object_object_add(info, "pid", json_object_new_int64(p->pid));
		if (p->tag)
			json_object_object_add(info, "tag", json_object_get(p->tag));
		json_object_array_add(arr, info);
	}
	g_mutex_unlock(&srv.lock);
	if (json_object_array_length(arr))
		json_object_object_add(o, "processes", arr);
	else
		json_object_put(arr);
	return srv_reply_json(r, 200, o);
}

enum MHD_Result srv_process_rpc(srv_req *r, srv_sandbox *s, const char *method)
{
	if (strcmp(method, "Start") == 0)
		return start(r, s);
	if (strcmp(method, "Connect") == 0)
		return connect_proc(r, s);
	const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strcmp(ct, "application/json") != 0)
		return srv_reply_error(r, 415, NULL, "unary calls take application/json");
	json_object *req = srv_parse_object((const char *)r->body->data, r->body->len);
	if (!req)
		return srv_reply_connect_error(r, "invalid_argument",
					       "the body is not a JSON object");
	enum MHD_Result ret;
	if (strcmp(method, "List") == 0) {
		ret = list_procs(r, s);
	} else if (strcmp(method, "SendSignal") == 0 || strcmp(method, "SendInput") == 0 ||
		   strcmp(method, "CloseStdin") == 0 || strcmp(method, "Update") == 0) {
		srv_proc *p = selected(s, req);
		if (!p)
			ret = srv_reply_connect_error(r, "not_found", "process not found");
		else if (strcmp(method, "SendSignal") == 0)
			ret = send_signal(r, p, req);
		else if (strcmp(method, "Update") == 0)
			ret = update(r, p, req);
		else
			ret = send_input(r, p, req, strcmp(method, "CloseStdin") == 0);
		if (p)
			srv_proc_unref(p);
	} else {
		ret = srv_reply_connect_error(r, "unimplemented",
					      "process.Process/%s is not "
					      "implemented by cordon server",
					      method);
	}
	json_object_put(req);
	return ret;
}

void srv_procs_cancel_all(srv_sandbox *s)
{
	GPtrArray *a = g_ptr_array_new();
	GHashTableIter it;
	gpointer v;
	g_mutex_lock(&srv.lock);
	g_hash_table_iter_init(&it, s->procs);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		srv_proc *p = v;
		g_mutex_lock(&p->lock);
		p->refs++;
		g_mutex_unlock(&p->lock);
		g_ptr_array_add(a, p);
	}
	g_mutex_unlock(&srv.lock);
	for (guint i = 0; i < a->len; i++) {
		signal_proc(a->pdata[i], SIGKILL);
		srv_proc_unref(a->pdata[i]);
	}
	g_ptr_array_unref(a);
}
