/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host side of the agent protocol (client.h). */
#include "config.h"

#include "client.h"
#include "errcodes.h"
#include "fserror.h"
#include "nosigpipe.h"

#include <cordon/plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* The agent was asked to cancel (or the deadline passed): how long it may take to answer. */
#define KILL_TIMEOUT_MS 10000
/* A terminal run: how often its size is looked at, and how much of its output is held for a
 * slow terminal before the channel is left unread. */
#define TTY_SIZE_POLL_MS 200
#define TTY_OUT_MAX (256u << 10)

int64_t agent_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- parsing ------------------------------------------------------------------------- */

int agent_status_parse(const char *text, agent_status *ret)
{
	agent_status s = { 0 };
	char kind[16];
	int code, used = 0;
	if (!text || sscanf(text, "%15s %d%n", kind, &code, &used) != 2)
		return -EPROTO;
	if (strcmp(kind, "exit") == 0)
		s.exited = true;
	else if (strcmp(kind, "signal") == 0)
		s.signaled = true;
	else
		return -EPROTO;
	s.code = code;
	char word[32];
	const char *p = text + used;
	int n;
	while (sscanf(p, "%31s%n", word, &n) == 1) {
		p += n;
		if (strcmp(word, "timeout") == 0)
			s.timed_out = true;
		else if (strcmp(word, "cancelled") == 0)
			s.cancelled = true;
		else if (strcmp(word, "oom") == 0)
			s.oom = true;
		else if (strcmp(word, "truncated-stdout") == 0)
			s.truncated_out = true;
		else if (strcmp(word, "truncated-stderr") == 0)
			s.truncated_err = true;
		/* unknown words: a newer agent; ignore */
	}
	*ret = s;
	return 0;
}

/* A file operation's codes take the class the local driver gives them (common/fserror.c),
 * so that a refusal reads the same on every tier; the agent's own: a malformed request. */
uint32_t agent_error_class_for(const char *code)
{
	if (strcmp(code, ERRC(invalid_argument)) == 0)
		return CORDON_PLUGIN_ERROR_INVALID;
	return fserror_class(code);
}

int agent_refuse(agent_error *r, int errnum, uint32_t cls, const char *code, const char *fmt, ...)
{
	if (r) {
		memset(r, 0, sizeof(*r));
		r->errnum = errnum;
		r->cls = cls;
		snprintf(r->code, sizeof(r->code), "%s", code);
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->message, sizeof(r->message), fmt, ap);
		va_end(ap);
	}
	return -errnum;
}

int agent_error_parse(const char *text, agent_error *ret)
{
	char code[48];
	int errnum, used = 0;
	if (!text || sscanf(text, "%47s %d %n", code, &errnum, &used) != 2 || errnum <= 0)
		return -EPROTO;
	agent_error e = { .errnum = errnum, .cls = agent_error_class_for(code) };
	snprintf(e.code, sizeof(e.code), "%s", code);
	snprintf(e.message, sizeof(e.message), "%s", text + used);
	*ret = e;
	return 0;
}

static bool known_frame(uint8_t t)
{
	return t == AGENT_FRAME_HELLO || t == AGENT_FRAME_STDOUT || t == AGENT_FRAME_STDERR ||
	       t == AGENT_FRAME_STATUS || t == AGENT_FRAME_ERROR || t == AGENT_FRAME_DATA ||
	       t == AGENT_FRAME_PATH || t == AGENT_FRAME_DONE || t == AGENT_FRAME_STARTED;
}

/* A complete header: checks it and makes room for the payload. */
static int decoder_begin(agent_decoder *d)
{
	free(d->payload); /* the last frame's: only one is ever held */
	d->payload = NULL;
	d->type = d->hdr[0];
	d->want = agent_frame_length(d->hdr);
	d->have = 0;
	if (!known_frame(d->type) || d->want > AGENT_FRAME_MAX)
		return -EPROTO;
	d->payload = malloc((size_t)d->want + 1);
	return d->payload ? 0 : -ENOMEM;
}

int agent_decoder_feed(agent_decoder *d, const void *data, size_t len, agent_frame_fn fn, void *ctx)
{
	const uint8_t *p = data;
	if (d->broken)
		return -EPROTO;
	while (len > 0) {
		if (d->hdr_len < AGENT_FRAME_HEADER) {
			d->hdr[d->hdr_len++] = *p++;
			len--;
			if (d->hdr_len < AGENT_FRAME_HEADER)
				continue;
			int r = decoder_begin(d);
			if (r < 0) {
				d->broken = true;
				return r;
			}
		}
		size_t take = d->want - d->have;
		if (take > len)
			take = len;
		memcpy(d->payload + d->have, p, take);
		d->have += (uint32_t)take;
		p += take;
		len -= take;
		if (d->have == d->want) {
			d->payload[d->want] = '\0';
			d->hdr_len = 0;
			int r = fn(ctx, d->type, d->payload, d->want);
			if (r)
				return r;
		}
	}
	return 0;
}

bool agent_decoder_pending(const agent_decoder *d) { return d->hdr_len > 0 && !d->broken; }

void agent_decoder_clear(agent_decoder *d)
{
	free(d->payload);
	memset(d, 0, sizeof(*d));
}

/* ---- requests ------------------------------------------------------------------------ */

char *agent_env_header(const char *const *envp, size_t *ret_len)
{
	size_t block = 0;
	for (size_t i = 0; envp && envp[i]; i++)
		block += strlen(envp[i]) + 1;
	char prefix[32];
	int plen = snprintf(prefix, sizeof(prefix), "%zu\n", block);
	char *out = calloc(1, (size_t)plen + block + 1);
	if (!out)
		return NULL;
	memcpy(out, prefix, (size_t)plen);
	size_t off = (size_t)plen;
	for (size_t i = 0; envp && envp[i]; i++) {
		size_t n = strlen(envp[i]) + 1;
		memcpy(out + off, envp[i], n);
		off += n;
	}
	*ret_len = off;
	return out;
}

static void put_frame(char *out, size_t *off, uint8_t type, const void *data, size_t len)
{
	agent_frame_header((uint8_t *)out + *off, type, (uint32_t)len);
	*off += AGENT_FRAME_HEADER;
	if (len)
		memcpy(out + *off, data, len);
	*off += len;
}

static void put_str(char *out, size_t *off, const char *str)
{
	size_t n = strlen(str) + 1;
	memcpy(out + *off, str, n);
	*off += n;
}

/* in_len bytes as STDIN frames of at most AGENT_FRAME_MAX, then STDIN_END. */
static void put_stdin(char *out, size_t *off, const void *in, size_t in_len)
{
	for (size_t done = 0; done < in_len;) {
		size_t n = in_len - done > AGENT_FRAME_MAX ? AGENT_FRAME_MAX : in_len - done;
		put_frame(out, off, AGENT_REQ_STDIN, (const char *)in + done, n);
		done += n;
	}
	put_frame(out, off, AGENT_REQ_STDIN_END, NULL, 0);
}

/* A request of type with a payload of that size and in_len bytes of stdin: the buffer,
 * sized for all of it (header written), and in *ret_off where the payload goes. */
static char *request_begin(uint8_t type, size_t payload, size_t in_len, size_t *ret_off)
{
	size_t chunks = (in_len + AGENT_FRAME_MAX - 1) / AGENT_FRAME_MAX;
	size_t total = AGENT_FRAME_HEADER + payload + chunks * AGENT_FRAME_HEADER + in_len +
		       AGENT_FRAME_HEADER;
	char *out = calloc(1, total);
	if (!out)
		return NULL;
	agent_frame_header((uint8_t *)out, type, (uint32_t)payload);
	*ret_off = AGENT_FRAME_HEADER;
	return out;
}

static size_t strv_length(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* A RUN payload (after prefix, prefix_len bytes) in a request of type. */
static char *run_request(uint8_t type, const char *prefix, size_t prefix_len,
			 const char *const *argv, const char *const *envp, uint64_t timeout_ms,
			 uint64_t cap, const char *workdir, const void *in, size_t in_len,
			 size_t *ret_len)
{
	size_t argc = strv_length(argv);
	char timeout[24], capv[24], argcv[24];
	snprintf(timeout, sizeof(timeout), "%" PRIu64, timeout_ms);
	snprintf(capv, sizeof(capv), "%" PRIu64, cap);
	snprintf(argcv, sizeof(argcv), "%zu", argc);
	if (!workdir)
		workdir = "";
	size_t payload = prefix_len + strlen(timeout) + strlen(capv) + strlen(workdir) +
			 strlen(argcv) + 4;
	for (size_t i = 0; i < argc; i++)
		payload += strlen(argv[i]) + 1;
	for (size_t i = 0; envp && envp[i]; i++)
		payload += strlen(envp[i]) + 1;
	if (argc == 0 || payload > AGENT_REQUEST_MAX)
		return NULL;
	size_t off;
	char *out = request_begin(type, payload, in_len, &off);
	if (!out)
		return NULL;
	memcpy(out + off, prefix, prefix_len);
	off += prefix_len;
	put_str(out, &off, timeout);
	put_str(out, &off, capv);
	put_str(out, &off, workdir);
	put_str(out, &off, argcv);
	for (size_t i = 0; i < argc; i++)
		put_str(out, &off, argv[i]);
	for (size_t i = 0; envp && envp[i]; i++)
		put_str(out, &off, envp[i]);
	put_stdin(out, &off, in, in_len);
	*ret_len = off;
	return out;
}

char *agent_run_request(const char *const *argv, const char *const *envp, uint64_t timeout_ms,
			uint64_t cap, const char *workdir, const void *in, size_t in_len,
			size_t *ret_len)
{
	return run_request(AGENT_REQ_RUN, "", 0, argv, envp, timeout_ms, cap, workdir, in, in_len,
			   ret_len);
}

char *agent_tty_run_request(const char *const *argv, const char *const *envp, uint64_t timeout_ms,
			    uint64_t cap, const char *workdir, uint16_t rows, uint16_t cols,
			    size_t *ret_len)
{
	char size[16];
	int n = snprintf(size, sizeof(size), "%u%c%u", (unsigned)rows, '\0', (unsigned)cols);
	return run_request(AGENT_REQ_TTY_RUN, size, (size_t)n + 1, argv, envp, timeout_ms, cap,
			   workdir, NULL, 0, ret_len);
}

char *agent_file_request(const char *const *args, const void *in, size_t in_len, size_t *ret_len)
{
	size_t argc = strv_length(args);
	size_t payload = 0;
	for (size_t i = 0; i < argc; i++)
		payload += strlen(args[i]) + 1;
	if (argc < 2 || argc > 3 || payload > AGENT_FILE_REQUEST_MAX)
		return NULL;
	size_t off;
	char *out = request_begin(AGENT_REQ_FILE, payload, in_len, &off);
	if (!out)
		return NULL;
	for (size_t i = 0; i < argc; i++)
		put_str(out, &off, args[i]);
	put_stdin(out, &off, in, in_len);
	*ret_len = off;
	return out;
}

void agent_end_frame(uint8_t out[AGENT_FRAME_HEADER]) { agent_frame_header(out, AGENT_REQ_END, 0); }

/* ---- the answers' state machines ----------------------------------------------------- */

static int hello_frame(agent_exchange *x, uint8_t type, const char *payload)
{
	/* the agent refused the session (one too old to know it, say): its reason is the
	 * open's */
	if (type == AGENT_FRAME_ERROR)
		x->have_error = agent_error_parse(payload, &x->error) == 0;
	if (type != AGENT_FRAME_HELLO)
		return -EPROTO;
	x->done = true;
	return 0;
}

static int run_frame(agent_exchange *x, uint8_t type, const char *payload, uint32_t len)
{
	const agent_sink *k = x->sink;
	if (x->done) /* nothing comes after the answer but the next answer's request */
		return -EPROTO;
	switch (type) {
	case AGENT_FRAME_HELLO:
		if (x->started)
			return -EPROTO;
		x->agent_pid = strtol(payload, NULL, 10);
		x->started = true;
		if (k && k->hello)
			k->hello(k->ctx, x->agent_pid);
		return 0;
	case AGENT_FRAME_STARTED: { /* once, after the hello; a pid the agent's kernel could give */
		char *end = NULL;
		long pid = strtol(payload, &end, 10);
		if (!x->started || x->work_pid || pid <= 0 || pid > (1L << 22) || end == payload ||
		    *end)
			return -EPROTO;
		x->work_pid = pid;
		if (k && k->started)
			k->started(k->ctx, pid);
		return 0;
	}
	case AGENT_FRAME_STDOUT:
	case AGENT_FRAME_STDERR:
		if (k && k->output)
			k->output(k->ctx, type == AGENT_FRAME_STDOUT ? 1 : 2, payload, len);
		return 0;
	case AGENT_FRAME_STATUS: /* one that does not parse is a malformed stream */
		if (agent_status_parse(payload, &x->status) < 0)
			return -EPROTO;
		x->have_status = x->done = true;
		return 0;
	case AGENT_FRAME_ERROR:
		if (agent_error_parse(payload, &x->error) < 0)
			return -EPROTO;
		x->have_error = x->done = true;
		return 0;
	default: return -EPROTO;
	}
}

/* Data frames of its one kind, then DONE or ERROR; over a session, a STATUS ends it.
 * Anything else, or anything after the answer but that STATUS, breaks the stream. */
static int file_frame(agent_exchange *x, bool session, uint8_t type, const char *payload,
		      uint32_t len)
{
	const agent_sink *k = x->sink;
	bool answered = x->file_done || x->have_error;
	if (x->done)
		return -EPROTO;
	x->started = true;
	if (type == AGENT_FRAME_STATUS && session) {
		x->done = true;
		return 0;
	}
	if (answered)
		return -EPROTO;
	if (type == AGENT_FRAME_DONE) {
		x->file_done = true;
		return 0;
	}
	if (type == AGENT_FRAME_ERROR) {
		x->have_error = agent_error_parse(payload, &x->error) == 0;
		return x->have_error ? 0 : -EPROTO;
	}
	if (!x->want || type != x->want)
		return -EPROTO;
	if (k && k->emit && x->emit_rc == 0)
		x->emit_rc = k->emit(k->ctx, payload, len);
	return 0;
}

typedef struct frame_ctx {
	agent_exchange *x;
	bool session;
} frame_ctx;

static int on_answer_frame(void *ctx, uint8_t type, const char *payload, uint32_t len)
{
	frame_ctx *f = ctx;
	switch (f->x->kind) {
	case AGENT_ANSWER_HELLO: return hello_frame(f->x, type, payload);
	case AGENT_ANSWER_RUN: return run_frame(f->x, type, payload, len);
	case AGENT_ANSWER_FILE: return file_frame(f->x, f->session, type, payload, len);
	}
	return -EPROTO;
}

int agent_exchange_feed(agent_exchange *x, bool session, agent_decoder *d, const void *data,
			size_t len)
{
	frame_ctx f = { x, session };
	return agent_decoder_feed(d, data, len, on_answer_frame, &f);
}

/* ---- the exchange loop --------------------------------------------------------------- */

typedef struct loop {
	agent_exchange *x;
	const agent_link *link;
	agent_decoder dec;
	const char *in;
	size_t in_len, in_off;
	uint8_t cancel[AGENT_FRAME_HEADER];
	size_t cancel_off; /* sizeof(cancel): nothing to send */
	bool src_open;     /* link->in_src is still to be copied */
	char *relay;       /* a chunk of it read, not yet written */
	size_t relay_len, relay_off;
	bool out_open, err_open;
	int64_t deadline, kill_deadline;
	int ret;
	/* a terminal run (link->tty): the relay holds one TTY_IN or TTY_RESIZE frame */
	bool tty_open;       /* tty_fd is still read */
	uint16_t rows, cols; /* the size the agent last heard of */
	char *tout;          /* the terminal's output, not yet written into tty_fd */
	size_t tout_len, tout_off;
	agent_sink tsink; /* the exchange's sink during the run: output into tout */
	const agent_sink *user_sink;
} loop;

static void close_in(const agent_link *l)
{
	if (*l->in >= 0)
		close(*l->in);
	*l->in = -1;
}

static bool relay_pending(const loop *s) { return s->relay_off < s->relay_len; }

/* Writes what is left of the request, then of a session's CANCEL frame, or of a one-shot's
 * streamed stdin. */
static void loop_write(loop *s)
{
	const agent_link *l = s->link;
	bool req = s->in_off < s->in_len;
	bool relay = !req && relay_pending(s);
	const char *p = req     ? s->in + s->in_off
			: relay ? s->relay + s->relay_off
				: (const char *)s->cancel + s->cancel_off;
	size_t n = req     ? s->in_len - s->in_off
		   : relay ? s->relay_len - s->relay_off
			   : sizeof(s->cancel) - s->cancel_off;
	ssize_t w = n && *l->in >= 0 ? write_nosigpipe(*l->in, p, n) : 0;
	if (w < 0 && errno != EAGAIN && errno != EINTR) {
		w = (ssize_t)n; /* the agent stopped reading: nothing more to give */
		s->src_open = false;
	}
	if (w > 0 && req)
		s->in_off += (size_t)w;
	else if (w > 0 && relay)
		s->relay_off += (size_t)w;
	else if (w > 0)
		s->cancel_off += (size_t)w;
	if (s->in_off >= s->in_len && !l->session && !s->src_open && !relay_pending(s))
		close_in(l);
}

/* A chunk of the streamed stdin; at its end (or an error) the agent's input closes. */
static void loop_read_src(loop *s)
{
	ssize_t r = read(s->link->in_src, s->relay, AGENT_FRAME_MAX);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	s->relay_off = 0;
	s->relay_len = r > 0 ? (size_t)r : 0;
	if (r <= 0) {
		s->src_open = false;
		close_in(s->link);
	}
}

static void loop_cancel(loop *s)
{
	agent_exchange *x = s->x;
	const agent_link *l = s->link;
	if (!x->cancel_wanted || x->cancel_sent)
		return;
	if (l->session) {
		x->cancel_sent = true;
		s->cancel_off = 0;
	} else if (x->agent_pid > 1) {
		x->cancel_sent = true;
		if (l->cancel)
			l->cancel(l->ctx, x->agent_pid);
	} else {
		return;
	}
	s->kill_deadline = agent_now_ms() + KILL_TIMEOUT_MS;
}

static void loop_read_out(loop *s)
{
	char buf[65536];
	ssize_t r = read(s->link->out, buf, sizeof(buf));
	if (r > 0) {
		int fr = agent_exchange_feed(s->x, s->link->session, &s->dec, buf, (size_t)r);
		if (fr < 0 && s->ret == 0)
			s->ret = fr;
	} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
		s->out_open = false;
	}
}

static void loop_read_err(loop *s)
{
	agent_exchange *x = s->x;
	char buf[4096];
	ssize_t r = read(s->link->err, buf, sizeof(buf));
	if (r > 0) {
		size_t keep = sizeof(x->diag) - 1 - x->diag_len;
		if ((size_t)r < keep)
			keep = (size_t)r;
		memcpy(x->diag + x->diag_len, buf, keep);
		x->diag_len += keep;
		x->diag[x->diag_len] = '\0';
	} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
		s->err_open = false;
	}
}

/* ---- a terminal run ---------------------------------------------------------------- */

static bool tout_pending(const loop *s) { return s->tout_off < s->tout_len; }

static void tty_hello(void *ctx, long agent_pid)
{
	loop *s = ctx;
	if (s->user_sink && s->user_sink->hello)
		s->user_sink->hello(s->user_sink->ctx, agent_pid);
}

static void tty_started(void *ctx, long pid)
{
	loop *s = ctx;
	if (s->user_sink && s->user_sink->started)
		s->user_sink->started(s->user_sink->ctx, pid);
}

/* The terminal's output (STDOUT frames) goes into the host's terminal, which the core reads
 * as the run's output; what does not fit now waits in tout (the channel is left unread past
 * TTY_OUT_MAX). */
static void tty_output(void *ctx, int stream, const char *data, size_t len)
{
	loop *s = ctx;
	if (stream != 1 || !s->tty_open)
		return;
	if (!tout_pending(s))
		s->tout_len = s->tout_off = 0;
	char *grown = realloc(s->tout, s->tout_len + len);
	if (!grown)
		return; /* output lost, as a terminal that cannot keep up loses it */
	s->tout = grown;
	memcpy(s->tout + s->tout_len, data, len);
	s->tout_len += len;
}

static void tty_write(loop *s)
{
	ssize_t w = write(s->link->tty_fd, s->tout + s->tout_off, s->tout_len - s->tout_off);
	if (w > 0)
		s->tout_off += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		s->tout_off = s->tout_len; /* the host's terminal is gone */
}

static void relay_frame(loop *s, uint8_t type, size_t len)
{
	agent_frame_header((uint8_t *)s->relay, type, (uint32_t)len);
	s->relay_off = 0;
	s->relay_len = AGENT_FRAME_HEADER + len;
}

/* A resize for the agent when the host's terminal changed size since it last heard. */
static void tty_check_size(loop *s)
{
	if (!s->relay) /* made by loop_tty_begin, for a terminal run alone */
		return;
	struct winsize ws;
	if (ioctl(s->link->tty_fd, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col ||
	    (ws.ws_row == s->rows && ws.ws_col == s->cols))
		return;
	s->rows = ws.ws_row;
	s->cols = ws.ws_col;
	int n = snprintf(s->relay + AGENT_FRAME_HEADER, AGENT_FRAME_MAX, "%u %u", (unsigned)s->rows,
			 (unsigned)s->cols);
	relay_frame(s, AGENT_REQ_TTY_RESIZE, (size_t)n);
}

static void tty_read(loop *s)
{
	if (!s->relay) /* made by loop_tty_begin, for a terminal run alone */
		return;
	ssize_t r = read(s->link->tty_fd, s->relay + AGENT_FRAME_HEADER, AGENT_FRAME_MAX);
	if (r > 0)
		relay_frame(s, AGENT_REQ_TTY_IN, (size_t)r);
	else if (r == 0 || (errno != EAGAIN && errno != EINTR))
		s->tty_open = false;
}

/* Whether the terminal's next frame may be made: the request is out, the relay and a cancel
 * are not half written, and the answer is still to come. */
static bool tty_wants_input(const loop *s)
{
	return s->link->tty && s->tty_open && s->in_off >= s->in_len && !relay_pending(s) &&
	       s->cancel_off >= sizeof(s->cancel) && !s->x->done;
}

static int loop_tty_begin(loop *s)
{
	s->relay = malloc(AGENT_FRAME_HEADER + AGENT_FRAME_MAX);
	if (!s->relay)
		return -ENOMEM;
	struct winsize ws = { 0 };
	ioctl(s->link->tty_fd, TIOCGWINSZ, &ws);
	s->rows = ws.ws_row;
	s->cols = ws.ws_col;
	s->tty_open = true;
	s->user_sink = s->x->sink;
	s->tsink = (agent_sink){
		.ctx = s, .hello = tty_hello, .started = tty_started, .output = tty_output
	};
	s->x->sink = &s->tsink;
	return 0;
}

/* One turn: false when the exchange is over. */
static bool loop_turn(loop *s, int cancel_fd, bool *ret_deadline)
{
	agent_exchange *x = s->x;
	const agent_link *l = s->link;
	/* a session stays open between requests: poll it only with bytes to send */
	bool want_out = s->in_off < s->in_len || s->cancel_off < sizeof(s->cancel) ||
			relay_pending(s) || (!l->session && *l->in >= 0 && !s->src_open);
	bool want_src = s->src_open && *l->in >= 0 && s->in_off >= s->in_len && !relay_pending(s);
	if (tty_wants_input(s))
		tty_check_size(s);
	bool want_tty = tty_wants_input(s);
	want_out = want_out || relay_pending(s);
	bool tty_full = s->tout_len - s->tout_off >= TTY_OUT_MAX;
	struct pollfd pfd[7] = {
		{ s->out_open && !tty_full ? l->out : -1, POLLIN, 0 },
		{ s->err_open ? l->err : -1, POLLIN, 0 },
		{ want_out ? *l->in : -1, POLLOUT, 0 },
		{ x->cancel_wanted ? -1 : cancel_fd, POLLIN, 0 },
		{ want_src ? l->in_src : -1, POLLIN, 0 },
		{ want_tty ? l->tty_fd : -1, POLLIN, 0 },
		{ tout_pending(s) ? l->tty_fd : -1, POLLOUT, 0 },
	};
	int64_t now = agent_now_ms();
	int64_t until = s->kill_deadline >= 0 ? s->kill_deadline : s->deadline;
	int wait = until - now < 0 ? 0 : (int)(until - now > 60000 ? 60000 : until - now);
	if (l->tty && wait > TTY_SIZE_POLL_MS)
		wait = TTY_SIZE_POLL_MS;
	int n = poll(pfd, 7, wait);
	if (n < 0 && errno != EINTR)
		return false;
	if (pfd[3].revents & (POLLIN | POLLHUP | POLLERR))
		x->cancel_wanted = true;
	loop_cancel(s);
	now = agent_now_ms();
	if (now >= s->deadline || (s->kill_deadline >= 0 && now >= s->kill_deadline)) {
		/* the transport hangs (a frozen daemon, a silent agent): stop waiting */
		*ret_deadline = now >= s->deadline;
		if (!l->session && !x->cancel_sent && x->agent_pid > 1 && l->cancel) {
			x->cancel_sent = true;
			l->cancel(l->ctx, x->agent_pid);
		}
		if (l->kill)
			l->kill(l->ctx);
		return false;
	}
	if (pfd[4].revents & (POLLIN | POLLHUP | POLLERR))
		loop_read_src(s);
	if (pfd[5].revents & (POLLIN | POLLHUP | POLLERR))
		tty_read(s);
	if (pfd[6].revents)
		tty_write(s);
	if (pfd[2].revents & (POLLOUT | POLLERR | POLLHUP))
		loop_write(s);
	if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
		loop_read_out(s);
		/* a session that spoke out of turn is dropped: no point waiting for an answer
		 * that may never be recognised */
		if (s->ret < 0 && l->session)
			return false;
	}
	if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
		loop_read_err(s);
	return true;
}

int agent_exchange_run(agent_exchange *x, const agent_link *link, uint64_t limit_ms, int cancel_fd,
		       const char *in, size_t in_len, bool *ret_deadline)
{
	loop s = {
		.x = x,
		.link = link,
		.in = in,
		.in_len = in ? in_len : 0,
		.cancel_off = AGENT_FRAME_HEADER,
		.out_open = true,
		.err_open = link->err >= 0,
		.deadline = agent_now_ms() + (int64_t)limit_ms,
		.kill_deadline = -1,
		.src_open = link->stream_in && !link->session && link->in_src >= 0,
	};
	if (s.src_open)
		s.relay = malloc(AGENT_FRAME_MAX);
	if (s.src_open && !s.relay)
		return -ENOMEM;
	if (link->tty && link->session && loop_tty_begin(&s) < 0)
		return -ENOMEM;
	agent_frame_header(s.cancel, AGENT_REQ_CANCEL, 0);
	*ret_deadline = false;
	if (!in && !link->session && !s.src_open)
		close_in(link);
	/* a terminal's last output is written into it before the answer counts as complete */
	while ((s.out_open || s.err_open) && !(link->session && x->done && !tout_pending(&s)))
		if (!loop_turn(&s, cancel_fd, ret_deadline))
			break;
	if (s.tsink.ctx)
		x->sink = s.user_sink;
	/* the stream ended inside a frame: what came of it is no answer */
	if (s.ret == 0 && !s.out_open && !*ret_deadline && agent_decoder_pending(&s.dec))
		s.ret = -EPROTO;
	agent_decoder_clear(&s.dec);
	free(s.relay);
	free(s.tout);
	return s.ret;
}

int agent_port_collect(void *ctx, const void *data, size_t len)
{
	agent_port_answer *p = ctx;
	if (p->len + len >= sizeof(p->text))
		return -EPROTO;
	memcpy(p->text + p->len, data, len);
	p->len += len;
	p->text[p->len] = '\0';
	return 0;
}

uint16_t agent_port_value(const agent_port_answer *p)
{
	char *end = NULL;
	errno = 0;
	unsigned long port = p->len ? strtoul(p->text, &end, 10) : 0;
	bool digits = p->len && p->text[0] >= '0' && p->text[0] <= '9';
	return digits && !errno && end && !*end && port > 0 && port <= 65535 ? (uint16_t)port : 0;
}
