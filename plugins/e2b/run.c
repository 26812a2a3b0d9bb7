/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A run: process.Process/Start as a Connect server stream (e2b-protocol.md
 * §3.3, §4.2), read incrementally: envelopes are reassembled whatever the
 * chunking, one envelope is at most E2B_FRAME_MAX (a header claiming more is
 * refused before anything is allocated), compressed or unknown flags are
 * refused, data after the end-of-stream envelope is refused, and a stream that
 * stops without it is an error. The first message must be the start event;
 * stdin (whole, as the run spec gives it) follows it through SendInput and
 * CloseStdin. The deadline is envd's (Connect-Timeout-Ms) and ours (the
 * transfer's), the cancel descriptor aborts the transfer and kills the process.
 * A serve (spec->port) asks cordon server to serve the port (Cordon-Serve-Port);
 * its start event means the port accepts, and serve.c's listener is then the
 * address the core is told, until the run ends.
 * A terminal run (spec->tty_fd) starts with a pty of the terminal's size; its relay
 * (tty.c) begins at the start event and its "pty" data goes into the terminal.
 */
#include "config.h"

#include "e2b.h"
#include "errcodes.h"
#include "ttypeer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRACE_MS 5000

typedef struct run_ctx {
	const e2b_sandbox *s;
	const cordon_plugin_run_spec *spec;
	const cordon_plugin_run_sink *sink;
	cordon_plugin_error *err;
	unsigned char *buf;
	size_t len;
	bool failed, started, ended, got_end, exited, killed;
	int64_t pid;
	int exit_code, sig;
	char end_code[48];
	char end_message[300];
	e2b_serve serve;
	e2b_tty tty; /* a terminal run's relay; tty.fd -1 otherwise */
} run_ctx;

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Standard or URL-safe base64, padding optional (ProtoJSON's bytes); -1 when malformed. */
static ssize_t b64decode(const char *in, unsigned char *out)
{
	size_t n = strlen(in), o = 0;
	while (n && in[n - 1] == '=')
		n--;
	unsigned acc = 0, bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val((unsigned char)in[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return (ssize_t)o;
}

/* Standard base64 with padding, NUL-terminated (host->free). */
static char *b64encode(const unsigned char *d, size_t n)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *b64 = e2b_host->alloc(4 * ((n + 2) / 3) + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) |
			     (i + 2 < n ? d[i + 2] : 0);
		b64[o++] = tbl[v >> 18 & 63];
		b64[o++] = tbl[v >> 12 & 63];
		b64[o++] = i + 1 < n ? tbl[v >> 6 & 63] : '=';
		b64[o++] = i + 2 < n ? tbl[v & 63] : '=';
	}
	b64[o] = '\0';
	return b64;
}

json_object *e2b_input_object(const char *kind, const void *data, size_t len)
{
	char *b64 = b64encode(data, len);
	json_object *in = json_object_new_object();
	json_object_object_add(in, kind, json_object_new_string(b64));
	e2b_host->free(b64);
	return in;
}

static bool fail(run_ctx *x, const char *what)
{
	if (!x->failed)
		e2b_protocol_error(x->err, "Start: %s", what);
	x->failed = true;
	return false;
}

static bool send_stdin(run_ctx *x)
{
	json_object *sel = json_object_new_object(), *req = json_object_new_object(), *ans = NULL;
	json_object_object_add(sel, "pid", json_object_new_int64(x->pid));
	json_object_object_add(req, "process", json_object_get(sel));
	if (x->spec->stdin_len) {
		json_object_object_add(
			req, "input",
			e2b_input_object("stdin", x->spec->stdin_data, (size_t)x->spec->stdin_len));
		int r = e2b_unary(x->s, "/process.Process/SendInput", req, &ans, x->err);
		json_object_put(ans);
		json_object_object_del(req, "input");
		if (r < 0) {
			json_object_put(sel);
			json_object_put(req);
			x->failed = true;
			if (r < -1 && r >= -599)
				e2b_protocol_error(x->err, "SendInput: status %d", -r);
			return false;
		}
	}
	int r = e2b_unary(x->s, "/process.Process/CloseStdin", req, &ans, x->err);
	json_object_put(ans);
	json_object_put(sel);
	json_object_put(req);
	if (r < 0) {
		x->failed = true;
		if (r < -1 && r >= -599)
			e2b_protocol_error(x->err, "CloseStdin: status %d", -r);
	}
	return r >= 0;
}

static bool on_data(run_ctx *x, json_object *d)
{
	bool bad = false;
	const char *out = e2b_string(d, "stdout", &bad),
		   *errs = out ? NULL : e2b_string(d, "stderr", &bad);
	const char *b = out ? out : errs;
	if (bad)
		return fail(x, "a data event is malformed");
	const char *pty = b || x->tty.fd < 0 ? NULL : e2b_string(d, "pty", &bad);
	if (bad)
		return fail(x, "a data event is malformed");
	if (pty)
		b = pty;
	else if (!b)
		return true; /* pty data of a run without a terminal, or a newer kind */
	unsigned char *raw = e2b_host->alloc(strlen(b) * 3 / 4 + 3);
	ssize_t n = b64decode(b, raw);
	if (n < 0) {
		e2b_host->free(raw);
		return fail(x, "a data event is not base64");
	}
	if (pty)
		e2b_tty_write(&x->tty, raw, (size_t)n, x->spec->cancel_fd);
	else
		x->sink->output(x->sink->ctx, out ? 1 : 2, raw, (size_t)n);
	e2b_host->free(raw);
	return true;
}

/* The signal of an end event's status, as Go's ProcessState words it ("signal: interrupt");
 * one not named here (or no status) is taken as SIGKILL. */
static int signal_of(const char *status)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "hangup", SIGHUP },
		{ "interrupt", SIGINT },
		{ "quit", SIGQUIT },
		{ "aborted", SIGABRT },
		{ "segmentation fault", SIGSEGV },
		{ "broken pipe", SIGPIPE },
		{ "terminated", SIGTERM },
		{ "killed", SIGKILL },
	};
	const char *name = status && strncmp(status, "signal: ", 8) == 0 ? status + 8 : "";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i].name) == 0)
			return names[i].sig;
	return SIGKILL;
}

static bool on_end(run_ctx *x, json_object *e)
{
	json_object *v;
	bool bad = false;
	const char *status = e2b_string(e, "status", &bad);
	if (x->got_end || bad)
		return fail(x, "a second or malformed end event");
	x->got_end = true;
	x->exit_code = json_object_object_get_ex(e, "exitCode", &v) ? json_object_get_int(v) : 0;
	x->exited = json_object_object_get_ex(e, "exited", &v) && json_object_get_boolean(v);
	if (!x->exited)
		x->sig = signal_of(status);
	return true;
}

static void kill_process(run_ctx *x);

/* The start event of a serve: cordon server's says which port it serves (E2B's envd
 * ignores Cordon-Serve-Port and would start the process as any other). */
static bool begin_serve(run_ctx *x, json_object *start)
{
	json_object *v;
	if (!json_object_object_get_ex(start, "servePort", &v) ||
	    json_object_get_int64(v) != (int64_t)x->spec->port) {
		kill_process(x);
		x->failed = true;
		e2b_host->error_set(x->err, ENOTSUP, CORDON_PLUGIN_ERROR_TERMINAL,
				    ERRC(unsupported),
				    "e2b: the server started the process without serving port %u: "
				    "serve needs cordon server (docs/tiers/e2b.md)",
				    (unsigned)x->spec->port);
		return false;
	}
	char addr[64];
	int r = e2b_serve_begin(&x->serve, x->s, x->spec->port, addr, sizeof(addr));
	if (r < 0) {
		x->failed = true;
		e2b_host->error_set(x->err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				    "e2b: cannot listen for port %u: %s", (unsigned)x->spec->port,
				    strerror(-r));
		return false;
	}
	if (x->sink->address)
		x->sink->address(x->sink->ctx, addr);
	return true;
}

static bool on_message(run_ctx *x, json_object *m)
{
	json_object *ev, *v;
	if (!json_object_object_get_ex(m, "event", &ev) ||
	    !json_object_is_type(ev, json_type_object))
		return fail(x, "a message without an event");
	if (json_object_object_get_ex(ev, "start", &v)) {
		json_object *pid;
		if (x->started || !json_object_object_get_ex(v, "pid", &pid))
			return fail(x, "a second or malformed start event");
		x->started = true;
		x->pid = json_object_get_int64(pid);
		if (x->pid <= 0 || x->pid > UINT32_MAX)
			return fail(x, "the start event's pid is out of range");
		if (x->spec->port)
			return begin_serve(x, v);
		if (x->tty.fd >= 0 && e2b_tty_begin(&x->tty, x->s, x->pid) < 0) {
			kill_process(x);
			return fail(x, "cannot start the terminal's relay");
		}
		return x->spec->stdin_data ? send_stdin(x) : true;
	}
	if (!x->started)
		return fail(x, "the first event is not the start event");
	if (json_object_object_get_ex(ev, "data", &v))
		return json_object_is_type(v, json_type_object) ? on_data(x, v)
								: fail(x, "bad data");
	if (json_object_object_get_ex(ev, "end", &v))
		return json_object_is_type(v, json_type_object) ? on_end(x, v) : fail(x, "bad end");
	return true; /* keepalive, or an event a newer envd sends */
}

static bool on_trailer(run_ctx *x, json_object *t)
{
	json_object *e;
	x->ended = true;
	if (!json_object_object_get_ex(t, "error", &e))
		return true;
	bool bad = false;
	const char *code = json_object_is_type(e, json_type_object) ? e2b_string(e, "code", &bad)
								    : NULL;
	const char *msg = code ? e2b_string(e, "message", &bad) : NULL;
	const char *cordon = code ? e2b_string(e, "error_code", &bad) : NULL;
	if (!code || bad)
		return fail(x, "a malformed end-of-stream error");
	snprintf(x->end_code, sizeof(x->end_code), "%s", cordon ? cordon : code);
	snprintf(x->end_message, sizeof(x->end_message), "%.250s", msg ? msg : code);
	for (char *p = x->end_message; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	return true;
}

/* The transfer's bytes: whole envelopes are taken off the front of the buffer. */
static bool on_bytes(void *ctx, const char *data, size_t len)
{
	run_ctx *x = ctx;
	if (x->failed)
		return false;
	if (x->ended)
		return fail(x, "data after the end-of-stream envelope");
	while (len) {
		size_t want = x->len < 5 ? 5
					 : 5 + ((size_t)x->buf[1] << 24 | (size_t)x->buf[2] << 16 |
						(size_t)x->buf[3] << 8 | x->buf[4]);
		size_t take = want - x->len < len ? want - x->len : len;
		memcpy(x->buf + x->len, data, take);
		x->len += take;
		data += take;
		len -= take;
		if (x->len == 5) {
			size_t n = (size_t)x->buf[1] << 24 | (size_t)x->buf[2] << 16 |
				   (size_t)x->buf[3] << 8 | x->buf[4];
			if (x->buf[0] & ~0x02u)
				return fail(x, "an envelope is compressed or has unknown flags");
			if (n > E2B_FRAME_MAX) {
				char m[96];
				snprintf(m, sizeof(m), "an envelope claims %zu bytes (limit %u)", n,
					 E2B_FRAME_MAX);
				return fail(x, m);
			}
			want = 5 + n;
		}
		if (x->len < want || x->len < 5)
			continue;
		json_object *m = e2b_parse((const char *)x->buf + 5, x->len - 5, "Start", x->err);
		bool trailer = x->buf[0] & 0x02;
		x->len = 0;
		if (!m)
			return fail(x, "an envelope is not JSON");
		bool ok = trailer ? on_trailer(x, m) : on_message(x, m);
		json_object_put(m);
		if (!ok)
			return false;
		if (trailer && len)
			return fail(x, "data after the end-of-stream envelope");
	}
	return true;
}

static char *start_body(const e2b_sandbox *s, const cordon_plugin_run_spec *spec,
			const char *workdir, const e2b_tty *tty)
{
	json_object *proc = json_object_new_object(), *args = json_object_new_array(),
		    *envs = json_object_new_object(), *req = json_object_new_object();
	json_object_object_add(proc, "cmd", json_object_new_string(spec->argv[0]));
	for (size_t i = 1; spec->argv[i]; i++)
		json_object_array_add(args, json_object_new_string(spec->argv[i]));
	json_object_object_add(proc, "args", args);
	for (size_t i = 0; spec->envp && spec->envp[i]; i++) {
		const char *eq = strchr(spec->envp[i], '=');
		if (!eq)
			continue;
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - spec->envp[i]), spec->envp[i]);
		json_object_object_add(envs, name, json_object_new_string(eq + 1));
	}
	json_object_object_add(proc, "envs", envs);
	if (*workdir) {
		size_t n = strlen(s->tier->root) + strlen(workdir) + 2;
		char *cwd = e2b_host->alloc(n);
		snprintf(cwd, n, "%s/%s", s->tier->root, workdir);
		json_object_object_add(proc, "cwd", json_object_new_string(cwd));
		e2b_host->free(cwd);
	} else {
		json_object_object_add(proc, "cwd", json_object_new_string(s->tier->root));
	}
	json_object_object_add(req, "process", proc);
	json_object_object_add(req, "stdin", json_object_new_boolean(spec->stdin_data != NULL));
	if (tty->fd >= 0) /* its input is the terminal's */
		json_object_object_add(req, "pty", e2b_pty_object(tty->rows, tty->cols));
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(text);
	char *env = e2b_host->alloc(n + 6);
	env[0] = 0;
	env[1] = (char)(n >> 24);
	env[2] = (char)(n >> 16);
	env[3] = (char)(n >> 8);
	env[4] = (char)n;
	memcpy(env + 5, text, n);
	json_object_put(req);
	return env;
}

static void kill_process(run_ctx *x)
{
	if (x->killed)
		return;
	x->killed = true;
	json_object *sel = json_object_new_object(), *req = json_object_new_object(), *ans = NULL;
	cordon_plugin_error *ignored = NULL;
	json_object_object_add(sel, "pid", json_object_new_int64(x->pid));
	json_object_object_add(req, "process", sel);
	json_object_object_add(req, "signal", json_object_new_string("SIGNAL_SIGKILL"));
	e2b_unary(x->s, "/process.Process/SendSignal", req, &ans, ignored);
	json_object_put(ans);
	json_object_put(req);
}

/* envd kills a process past its deadline, as every tier does: SIGKILL. */
static int timed_out(cordon_plugin_run_status *ret)
{
	ret->flags = CORDON_PLUGIN_RUNSTATUS_TIMED_OUT | CORDON_PLUGIN_RUNSTATUS_SIGNALED;
	ret->signal = SIGKILL;
	ret->exit_code = 128 + SIGKILL;
	return 0;
}

static int finish(run_ctx *x, e2b_call *c, int r, cordon_plugin_run_status *ret)
{
	if (c->cancelled) {
		if (x->started)
			kill_process(x);
		ret->flags = CORDON_PLUGIN_RUNSTATUS_CANCELLED;
		return 0;
	}
	if (x->failed)
		return -EPROTO;
	if (r < 0)
		return r;
	if (c->status != 200)
		return e2b_status_error(c, "Start", x->err);
	if (!x->ended)
		return e2b_protocol_error(
			x->err, "Start: the stream stopped without its end-of-stream envelope");
	if (strcmp(x->end_code, "deadline_exceeded") == 0)
		return timed_out(ret);
	if (x->end_code[0]) {
		bool ours = strchr(x->end_code, '_') &&
			    strcmp(x->end_code, "invalid_argument") != 0;
		return e2b_host->error_set(x->err, EIO, CORDON_PLUGIN_ERROR_TERMINAL,
					   ours ? x->end_code : ERRC(remote_protocol), "e2b: %s",
					   x->end_message);
	}
	if (!x->got_end)
		return e2b_protocol_error(x->err, "Start: the stream ended without an end event");
	if (x->exited) {
		ret->flags = CORDON_PLUGIN_RUNSTATUS_EXITED;
		ret->exit_code = x->exit_code;
	} else {
		ret->flags = CORDON_PLUGIN_RUNSTATUS_SIGNALED;
		ret->signal = x->sig;
		ret->exit_code = 128 + x->sig;
	}
	return 0;
}

int e2b_run(void *sandbox, const cordon_plugin_run_spec *spec, const cordon_plugin_run_sink *sink,
	    cordon_plugin_run_status *ret, cordon_plugin_error *err)
{
	e2b_sandbox *s = sandbox;
	char *workdir = spec->workdir ? e2b_normalize(spec->workdir) : e2b_host->strdup("");
	if (!workdir)
		return e2b_host->error_set(
			err, EXDEV, CORDON_PLUGIN_ERROR_FORBIDDEN, ERRC(sandbox_path_escape),
			"run: workdir '%.256s' resolves outside the sandbox", spec->workdir);
	char timeout[64];
	snprintf(timeout, sizeof(timeout), "Connect-Timeout-Ms: %llu",
		 (unsigned long long)spec->timeout_ms);
	char serve[48];
	snprintf(serve, sizeof(serve), "Cordon-Serve-Port: %u", (unsigned)spec->port);
	const char *extra[] = { "Connect-Protocol-Version: 1", "Keepalive-Ping-Interval: 10",
				timeout, spec->port ? serve : NULL, NULL };
	run_ctx x = { .s = s, .spec = spec, .sink = sink, .err = err, .tty.fd = -1 };
	if (spec->tty_fd >= 0) {
		int r = tty_peer_prepare(spec->tty_fd, &x.tty.rows, &x.tty.cols);
		if (r < 0) {
			e2b_host->free(workdir);
			return e2b_host->error_set(
				err, -r, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(driver_failed),
				"e2b: cannot ready the terminal: %s", strerror(-r));
		}
		x.tty.fd = spec->tty_fd;
	}
	char *body = start_body(s, spec, workdir, &x.tty);
	e2b_host->free(workdir);
	size_t blen = 5 + ((size_t)(unsigned char)body[1] << 24 |
			   (size_t)(unsigned char)body[2] << 16 |
			   (size_t)(unsigned char)body[3] << 8 | (unsigned char)body[4]);
	x.buf = e2b_host->alloc(5 + E2B_FRAME_MAX);
	/* Not idempotent: a retried Start would run the work twice. */
	e2b_call c = { .method = "POST",
		       .sbx = s,
		       .content_type = "application/connect+json",
		       .body = body,
		       .body_len = blen,
		       .extra = extra,
		       .cancel_fd = spec->cancel_fd,
		       .timeout_ms = spec->timeout_ms + GRACE_MS,
		       .sink = on_bytes,
		       .sink_ctx = &x,
		       .quiet_timeout = true };
	c.url = e2b_url(s->envd, "/process.Process/Start", NULL, NULL);
	int r = e2b_http(s->tier, &c, err);
	e2b_serve_end(&x.serve); /* the run is over: so is its port */
	e2b_tty_end(&x.tty);     /* and its terminal's relay */
	if (r == -ETIMEDOUT && !x.failed) {
		/* Our deadline, past envd's: the process is killed and the run timed out. */
		kill_process(&x);
		r = timed_out(ret);
	} else {
		/* A stream that broke before the process ended: envd (and cordon server) keep a
		 * process whose reader left, so it is killed, as every run's work ends with it. */
		if (x.started && !x.got_end && !c.cancelled)
			kill_process(&x);
		r = finish(&x, &c, r, ret);
	}
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	e2b_host->free(body);
	e2b_host->free(x.buf);
	return r;
}
