/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent protocol without an engine: the host client's codec and requests, and its
 * exchange loop fed hostile bytes through a socketpair (the agent lives inside the sandbox:
 * after a compromise, what it writes is the attacker's). Every malformed answer must end as
 * a clean -EPROTO (the plugins report it as engine_failed), never a crash, a hang, or
 * memory that grows with what the agent claims. The last cases run the real cordon-agent
 * in session mode over pipes: a stray CANCEL between runs, a malformed RUN.
 */
#include "config.h"

#include "client.h"
#include "testutil.h"

#include <cordon/plugin.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the codec (moved from test-oci.c) ----------------------------------------------------------------- */

START_TEST(test_status_parse)
{
	agent_status s;
	ck_assert_int_eq(agent_status_parse("exit 3", &s), 0);
	ck_assert(s.exited && !s.signaled && s.code == 3 && !s.timed_out && !s.oom);
	ck_assert_int_eq(agent_status_parse("signal 9 timeout", &s), 0);
	ck_assert(s.signaled && s.code == 9 && s.timed_out && !s.cancelled);
	ck_assert_int_eq(agent_status_parse("signal 9 oom truncated-stderr future-word", &s), 0);
	ck_assert(s.oom && s.truncated_err && !s.truncated_out);
	ck_assert_int_eq(agent_status_parse("exit 0 cancelled truncated-stdout", &s), 0);
	ck_assert(s.cancelled && s.truncated_out);
	ck_assert_int_eq(agent_status_parse("exited 0", &s), -EPROTO);
	ck_assert_int_eq(agent_status_parse("exit", &s), -EPROTO);
	ck_assert_int_eq(agent_status_parse(NULL, &s), -EPROTO);
}
END_TEST

START_TEST(test_error_parse)
{
	agent_error r;
	ck_assert_int_eq(
		agent_error_parse("sandbox_path_escape 18 open: Invalid cross-device link", &r), 0);
	ck_assert_str_eq(r.code, "sandbox_path_escape");
	ck_assert_int_eq(r.errnum, 18);
	ck_assert_uint_eq(r.cls, CORDON_PLUGIN_ERROR_FORBIDDEN);
	ck_assert_str_eq(r.message, "open: Invalid cross-device link");
	ck_assert_int_eq(agent_error_parse("exec_failed 2 /bin/nope: No such file", &r), 0);
	ck_assert_uint_eq(r.cls, CORDON_PLUGIN_ERROR_TERMINAL);
	ck_assert_int_eq(agent_error_parse("not_found 2 open: x", &r), 0);
	ck_assert_uint_eq(r.cls, CORDON_PLUGIN_ERROR_TERMINAL);
	ck_assert_int_eq(agent_error_parse("invalid_argument 22 x", &r), 0);
	ck_assert_uint_eq(r.cls, CORDON_PLUGIN_ERROR_INVALID);
	ck_assert_int_eq(agent_error_parse("code", &r), -EPROTO);
	ck_assert_int_eq(agent_error_parse("code 0 zero errno", &r), -EPROTO);
}
END_TEST

typedef struct collected {
	char types[64];
	char payloads[64][32];
	size_t n;
} collected;

static int collect(void *ctx, uint8_t type, const char *payload, uint32_t len)
{
	collected *c = ctx;
	ck_assert_uint_eq(strlen(payload) <= len, 1);
	c->types[c->n] = (char)type;
	ck_assert_uint_lt(len, sizeof(c->payloads[0]));
	memcpy(c->payloads[c->n], payload, len + 1);
	c->n++;
	return 0;
}

static size_t put_frame(uint8_t *buf, uint8_t type, const char *payload, size_t len)
{
	agent_frame_header(buf, type, (uint32_t)len);
	memcpy(buf + AGENT_FRAME_HEADER, payload, len);
	return AGENT_FRAME_HEADER + len;
}

START_TEST(test_decoder_chunks)
{
	uint8_t buf[256];
	size_t n = 0;
	n += put_frame(buf + n, AGENT_FRAME_HELLO, "42", 2);
	n += put_frame(buf + n, AGENT_FRAME_STDOUT, "hello\0world", 11);
	n += put_frame(buf + n, AGENT_FRAME_STDERR, "", 0);
	n += put_frame(buf + n, AGENT_FRAME_STATUS, "exit 0", 6);
	/* byte by byte, and all at once: the same frames */
	for (int mode = 0; mode < 2; mode++) {
		collected c = { 0 };
		agent_decoder d = { 0 };
		if (mode == 0) {
			for (size_t i = 0; i < n; i++)
				ck_assert_int_eq(agent_decoder_feed(&d, buf + i, 1, collect, &c),
						 0);
		} else {
			ck_assert_int_eq(agent_decoder_feed(&d, buf, n, collect, &c), 0);
		}
		agent_decoder_clear(&d);
		ck_assert_uint_eq(c.n, 4);
		ck_assert_int_eq(c.types[0], 'I');
		ck_assert_str_eq(c.payloads[0], "42");
		ck_assert_int_eq(c.types[1], 'O');
		ck_assert_int_eq(memcmp(c.payloads[1], "hello\0world", 11), 0);
		ck_assert_int_eq(c.types[2], 'E');
		ck_assert_int_eq(c.types[3], 'S');
		ck_assert_str_eq(c.payloads[3], "exit 0");
	}
}
END_TEST

START_TEST(test_decoder_malformed)
{
	collected c = { 0 };
	agent_decoder d = { 0 };
	uint8_t bad[AGENT_FRAME_HEADER];
	agent_frame_header(bad, 'Z', 1);
	ck_assert_int_eq(agent_decoder_feed(&d, bad, sizeof(bad), collect, &c), -EPROTO);
	/* once broken, always broken: no resynchronising on attacker bytes */
	uint8_t ok[16];
	size_t n = put_frame(ok, AGENT_FRAME_STDOUT, "x", 1);
	ck_assert_int_eq(agent_decoder_feed(&d, ok, n, collect, &c), -EPROTO);
	agent_decoder_clear(&d);
	agent_frame_header(bad, 'O', AGENT_FRAME_MAX + 1);
	ck_assert_int_eq(agent_decoder_feed(&d, bad, sizeof(bad), collect, &c), -EPROTO);
	agent_decoder_clear(&d);
	ck_assert_uint_eq(c.n, 0);
}
END_TEST

START_TEST(test_env_header)
{
	const char *env[] = { "A=1", "SECRET=s3", NULL };
	size_t len;
	char *h = agent_env_header(env, &len);
	const char want[] = "14\nA=1\0SECRET=s3"; /* sizeof counts the final NUL */
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert_int_eq(memcmp(h, want, len), 0);
	free(h);
	h = agent_env_header(NULL, &len);
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(memcmp(h, "0\n", 2), 0);
	free(h);
}
END_TEST

/* The next frame of a request stream (at *off, which it advances) is of
 * type, with exactly these bytes. */
static void expect_frame(const char *buf, size_t len, size_t *off, uint8_t type, const void *want,
			 size_t want_len)
{
	ck_assert_uint_ge(len - *off, AGENT_FRAME_HEADER);
	const uint8_t *h = (const uint8_t *)buf + *off;
	uint32_t n = agent_frame_length(h);
	ck_assert_uint_ge(len - *off - AGENT_FRAME_HEADER, n);
	ck_assert_int_eq(h[0], type);
	ck_assert_uint_eq(n, want_len);
	ck_assert_int_eq(memcmp(buf + *off + AGENT_FRAME_HEADER, want, n), 0);
	*off += AGENT_FRAME_HEADER + n;
}

START_TEST(test_session_request)
{
	const char *argv[] = { "/bin/sh", "-c", "", "x y", NULL };
	const char *env[] = { "A=1", "SECRET=s3", NULL };
	/* two STDIN frames: one full, one of 10 bytes */
	size_t in_len = AGENT_FRAME_MAX + 10;
	char *in = malloc(in_len);
	for (size_t i = 0; i < in_len; i++)
		in[i] = (char)(i * 7);
	size_t len;
	char *req = agent_run_request(argv, env, 1500, 1048577, "sub/dir", in, in_len, &len);
	ck_assert_ptr_nonnull(req);
	size_t off = 0;
	/* timeout, cap, workdir, argc, argv (an empty argument kept), environment */
	const char want[] = "1500\0001048577\0sub/dir\0"
			    "4\0/bin/sh\0-c\0\0x y\0A=1\0SECRET=s3";
	expect_frame(req, len, &off, AGENT_REQ_RUN, want, sizeof(want));
	expect_frame(req, len, &off, AGENT_REQ_STDIN, in, AGENT_FRAME_MAX);
	expect_frame(req, len, &off, AGENT_REQ_STDIN, in + AGENT_FRAME_MAX, 10);
	expect_frame(req, len, &off, AGENT_REQ_STDIN_END, "", 0);
	ck_assert_uint_eq(off, len);
	free(req);
	free(in);

	/* no workdir, no environment, no stdin: empty fields, STDIN_END at once */
	const char *one[] = { "true", NULL };
	req = agent_run_request(one, NULL, 0, 0, NULL, NULL, 0, &len);
	off = 0;
	const char want2[] = "0\0000\0\0"
			     "1\0true";
	expect_frame(req, len, &off, AGENT_REQ_RUN, want2, sizeof(want2));
	expect_frame(req, len, &off, AGENT_REQ_STDIN_END, "", 0);
	ck_assert_uint_eq(off, len);
	free(req);

	/* nothing to run, or more than the agent accepts: the caller uses exec */
	const char *none[] = { NULL };
	ck_assert_ptr_null(agent_run_request(none, NULL, 0, 0, NULL, NULL, 0, &len));
	char *big = malloc(AGENT_REQUEST_MAX + 8);
	memset(big, 'v', AGENT_REQUEST_MAX + 7);
	memcpy(big, "BIG=", 4);
	big[AGENT_REQUEST_MAX + 7] = '\0';
	const char *bigenv[] = { big, NULL };
	ck_assert_ptr_null(agent_run_request(one, bigenv, 0, 0, NULL, NULL, 0, &len));
	free(big);
}
END_TEST

/* A file operation for the session agent: the arguments `exec` would give
 * it in one FILE frame, a write's data as STDIN frames, then STDIN_END. */
START_TEST(test_session_file_request)
{
	const char *read_args[] = { "read", "a/b c.txt", "1048576", NULL };
	size_t len, off = 0;
	char *req = agent_file_request(read_args, NULL, 0, &len);
	ck_assert_ptr_nonnull(req);
	const char want[] = "read\0a/b c.txt\0"
			    "1048576";
	expect_frame(req, len, &off, AGENT_REQ_FILE, want, sizeof(want));
	expect_frame(req, len, &off, AGENT_REQ_STDIN_END, "", 0);
	ck_assert_uint_eq(off, len);
	free(req);

	/* a write of two frames of data, NUL bytes included, byte-exactly */
	size_t in_len = AGENT_FRAME_MAX + 3;
	char *in = calloc(1, in_len);
	in[AGENT_FRAME_MAX + 1] = 'z';
	const char *write_args[] = { "write", "out", NULL };
	req = agent_file_request(write_args, in, in_len, &len);
	ck_assert_ptr_nonnull(req);
	off = 0;
	expect_frame(req, len, &off, AGENT_REQ_FILE, "write\0out", sizeof("write\0out"));
	expect_frame(req, len, &off, AGENT_REQ_STDIN, in, AGENT_FRAME_MAX);
	expect_frame(req, len, &off, AGENT_REQ_STDIN, in + AGENT_FRAME_MAX, 3);
	expect_frame(req, len, &off, AGENT_REQ_STDIN_END, "", 0);
	ck_assert_uint_eq(off, len);
	free(req);
	free(in);

	/* not an operation with one or two arguments, or larger than the agent
	 * takes: the caller goes through exec */
	const char *alone[] = { "walk", NULL };
	const char *many[] = { "read", "a", "1", "x", NULL };
	ck_assert_ptr_null(agent_file_request(alone, NULL, 0, &len));
	ck_assert_ptr_null(agent_file_request(many, NULL, 0, &len));
	char *big = malloc(AGENT_FILE_REQUEST_MAX + 1);
	memset(big, 'p', AGENT_FILE_REQUEST_MAX);
	big[AGENT_FILE_REQUEST_MAX] = '\0';
	const char *long_args[] = { "glob", big, NULL };
	ck_assert_ptr_null(agent_file_request(long_args, NULL, 0, &len));
	free(big);
}
END_TEST

/* What a header claims is never allocated before it is checked, and a broken stream keeps
 * no payload: memory stays one frame whatever the agent says. (Not an RLIMIT_AS test:
 * the sanitizer builds reserve terabytes of address space.) */
START_TEST(test_decoder_claims_nothing)
{
	static const uint32_t lens[] = { AGENT_FRAME_MAX + 1, 0x7fffffffu, 0xffffffffu };
	for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
		collected c = { 0 };
		agent_decoder d = { 0 };
		uint8_t buf[64];
		size_t n = put_frame(buf, AGENT_FRAME_STDOUT, "kept", 4);
		agent_frame_header(buf + n, AGENT_FRAME_STDOUT, lens[i]);
		n += AGENT_FRAME_HEADER;
		ck_assert_int_eq(agent_decoder_feed(&d, buf, n, collect, &c), -EPROTO);
		ck_assert_uint_eq(c.n, 1);
		ck_assert_ptr_null(d.payload);
		ck_assert(!agent_decoder_pending(&d));
		agent_decoder_clear(&d);
	}
}
END_TEST

/* ---- the exchange loop against a fake agent --------------------------------------------- */

typedef struct fake {
	int host_in, host_out; /* our ends: the request goes to host_in, answers come on host_out */
	int agent;             /* the fake agent's end (both directions) */
	bool killed;
} fake;

static void fake_open(fake *f)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->host_in = sv[0];
	f->host_out = dup(sv[0]);
	f->agent = sv[1];
	f->killed = false;
	fcntl(f->host_in, F_SETFL, O_NONBLOCK);
}

static void fake_close(fake *f)
{
	if (f->host_in >= 0)
		close(f->host_in);
	close(f->host_out);
	if (f->agent >= 0)
		close(f->agent);
}

static void on_kill(void *ctx) { ((fake *)ctx)->killed = true; }

/* One exchange of kind with the fake agent, whose answer (written beforehand, and then its
 * end closed when eof) is already waiting. */
static int exchange(fake *f, agent_answer_kind kind, bool session, uint64_t limit_ms,
		    agent_exchange *x, bool *ret_deadline)
{
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->want = kind == AGENT_ANSWER_FILE ? AGENT_FRAME_PATH : 0;
	agent_link link = { .in = &f->host_in,
			    .out = f->host_out,
			    .err = -1,
			    .session = session,
			    .ctx = f,
			    .kill = on_kill };
	static const char req[] = "req";
	return agent_exchange_run(x, &link, limit_ms, -1, req, sizeof(req), ret_deadline);
}

static void agent_says(fake *f, uint8_t type, const void *payload, uint32_t len)
{
	uint8_t hdr[AGENT_FRAME_HEADER];
	agent_frame_header(hdr, type, len);
	ck_assert_int_eq(write(f->agent, hdr, sizeof(hdr)), sizeof(hdr));
	if (len)
		ck_assert_int_eq(write(f->agent, payload, len), (ssize_t)len);
}

static void agent_hangs_up(fake *f)
{
	close(f->agent);
	f->agent = -1;
}

START_TEST(test_exchange_run_answer)
{
	fake f;
	fake_open(&f);
	agent_says(&f, AGENT_FRAME_HELLO, "7", 1);
	agent_says(&f, AGENT_FRAME_STDOUT, "out", 3);
	agent_says(&f, AGENT_FRAME_STATUS, "exit 3 timeout", 14);
	agent_exchange x;
	bool deadline;
	ck_assert_int_eq(exchange(&f, AGENT_ANSWER_RUN, true, 5000, &x, &deadline), 0);
	ck_assert(x.done && x.have_status && x.started && !deadline);
	ck_assert_int_eq(x.agent_pid, 7);
	ck_assert(x.status.exited && x.status.code == 3 && x.status.timed_out);
	fake_close(&f);
}
END_TEST

/* Unknown frame types, and a length over AGENT_FRAME_MAX (up to 4 GiB claimed): -EPROTO
 * (test_decoder_claims_nothing: and nothing allocated for the claim). */
START_TEST(test_exchange_unknown_and_oversized)
{
	static const uint32_t lens[] = { AGENT_FRAME_MAX + 1, 0x7fffffffu, 0xffffffffu };
	for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
		fake f;
		fake_open(&f);
		agent_says(&f, AGENT_FRAME_HELLO, "7", 1);
		uint8_t hdr[AGENT_FRAME_HEADER];
		agent_frame_header(hdr, AGENT_FRAME_STDOUT, lens[i]);
		ck_assert_int_eq(write(f.agent, hdr, sizeof(hdr)), sizeof(hdr));
		agent_exchange x;
		bool deadline;
		ck_assert_int_eq(exchange(&f, AGENT_ANSWER_RUN, true, 5000, &x, &deadline),
				 -EPROTO);
		ck_assert(!x.done && !deadline);
		fake_close(&f);
	}
	for (unsigned t = 0; t < 256; t++) {
		if (strchr("IOESXDPK", (int)t) && t)
			continue;
		fake f;
		fake_open(&f);
		agent_says(&f, (uint8_t)t, "", 0);
		agent_exchange x;
		bool deadline;
		ck_assert_int_eq(exchange(&f, AGENT_ANSWER_RUN, true, 5000, &x, &deadline),
				 -EPROTO);
		fake_close(&f);
	}
}
END_TEST

/* Frames that are well formed but out of turn, or whose text does not parse. */
START_TEST(test_exchange_out_of_turn)
{
	static const struct {
		agent_answer_kind kind;
		uint8_t type[3];
		const char *payload[3];
	} cases[] = {
		{ AGENT_ANSWER_RUN, { 'I', 'S' }, { "1", "exited 0" } }, /* a malformed STATUS */
		{ AGENT_ANSWER_RUN,
		  { 'I', 'X' },
		  { "1", "io_error 0 x" } },                         /* an ERROR without errno */
		{ AGENT_ANSWER_RUN, { 'I', 'I' }, { "1", "1" } },    /* a second HELLO */
		{ AGENT_ANSWER_RUN, { 'I', 'D' }, { "1", "data" } }, /* file data in a run */
		{ AGENT_ANSWER_FILE, { 'D' }, { "data" } },          /* DATA where PATHs are due */
		{ AGENT_ANSWER_FILE, { 'K', 'P' }, { "", "a" } },    /* a path after DONE */
		{ AGENT_ANSWER_HELLO, { 'O' }, { "x" } }, /* output before the greeting */
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		fake f;
		fake_open(&f);
		for (size_t j = 0; j < 3 && cases[i].type[j]; j++)
			agent_says(&f, cases[i].type[j], cases[i].payload[j],
				   (uint32_t)strlen(cases[i].payload[j]));
		agent_exchange x;
		bool deadline;
		ck_assert_msg(exchange(&f, cases[i].kind, true, 5000, &x, &deadline) == -EPROTO,
			      "case %zu", i);
		ck_assert(!deadline);
		fake_close(&f);
	}
}
END_TEST

/* A header (and a payload) split across reads, one byte at a time with pauses: the same
 * answer as all at once. */
START_TEST(test_exchange_split_reads)
{
	fake f;
	fake_open(&f);
	uint8_t buf[64];
	size_t n = 0;
	agent_frame_header(buf, AGENT_FRAME_HELLO, 2);
	memcpy(buf + AGENT_FRAME_HEADER, "42", 2);
	n = AGENT_FRAME_HEADER + 2;
	agent_frame_header(buf + n, AGENT_FRAME_STATUS, 6);
	memcpy(buf + n + AGENT_FRAME_HEADER, "exit 0", 6);
	n += AGENT_FRAME_HEADER + 6;
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (size_t i = 0; i < n; i++) {
			if (write(f.agent, buf + i, 1) != 1)
				_exit(1);
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL);
		}
		_exit(0);
	}
	agent_exchange x;
	bool deadline;
	ck_assert_int_eq(exchange(&f, AGENT_ANSWER_RUN, true, 5000, &x, &deadline), 0);
	ck_assert(x.done && x.have_status && x.agent_pid == 42);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fake_close(&f);
}
END_TEST

/* A one-shot agent whose stream stops inside a frame (a header, or part of a payload): a
 * malformed answer, not an answer that is merely missing. */
START_TEST(test_exchange_truncated_at_eof)
{
	for (int cut = 1; cut < AGENT_FRAME_HEADER + 4; cut++) {
		fake f;
		fake_open(&f);
		agent_says(&f, AGENT_FRAME_HELLO, "1", 1);
		uint8_t frame[AGENT_FRAME_HEADER + 6];
		agent_frame_header(frame, AGENT_FRAME_STATUS, 6);
		memcpy(frame + AGENT_FRAME_HEADER, "exit 0", 6);
		ck_assert_int_eq(write(f.agent, frame, (size_t)cut), cut);
		agent_hangs_up(&f);
		agent_exchange x;
		bool deadline;
		ck_assert_msg(exchange(&f, AGENT_ANSWER_RUN, false, 5000, &x, &deadline) == -EPROTO,
			      "cut at %d", cut);
		ck_assert(!x.have_status && !deadline);
		fake_close(&f);
	}
}
END_TEST

/* An agent that says nothing: the exchange ends at its deadline and stops the transport. */
START_TEST(test_exchange_silent_agent)
{
	fake f;
	fake_open(&f);
	agent_exchange x;
	bool deadline;
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_eq(exchange(&f, AGENT_ANSWER_RUN, true, 200, &x, &deadline), 0);
	ck_assert(deadline && f.killed && !x.done);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 5 * G_USEC_PER_SEC);
	fake_close(&f);
}
END_TEST

/* ---- the real agent, in session mode -------------------------------------------------- */

typedef struct session {
	pid_t pid;
	int in, out;
} session;

static void session_start(session *s)
{
	g_autofree char *agent = testutil_build_path("agent/cordon-agent");
	int to[2], from[2];
	ck_assert_int_eq(pipe2(to, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(from, O_CLOEXEC), 0);
	s->pid = fork();
	ck_assert_int_ge(s->pid, 0);
	if (s->pid == 0) {
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		execl(agent, agent, "session", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	s->in = to[1];
	s->out = from[0];
	fcntl(s->in, F_SETFL, O_NONBLOCK);
	fcntl(s->out, F_SETFL, O_NONBLOCK);
	agent_exchange x = { .kind = AGENT_ANSWER_HELLO };
	agent_link link = { .in = &s->in, .out = s->out, .err = -1, .session = true };
	bool deadline;
	ck_assert_int_eq(agent_exchange_run(&x, &link, 10000, -1, NULL, 0, &deadline), 0);
	ck_assert_msg(x.done, "cordon-agent session did not greet");
}

static int session_send(session *s, agent_answer_kind kind, const char *req, size_t len,
			agent_exchange *x)
{
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->want = AGENT_FRAME_PATH;
	agent_link link = { .in = &s->in, .out = s->out, .err = -1, .session = true };
	bool deadline;
	int r = agent_exchange_run(x, &link, 10000, -1, req, len, &deadline);
	ck_assert(!deadline);
	return r;
}

/* A `walk` of a directory that does not exist: whatever the answer, it is one, and the
 * session is still there for the next request. */
static void session_alive(session *s)
{
	const char *args[] = { "walk", "no/such/dir-cordon-test", NULL };
	size_t len;
	char *req = agent_file_request(args, NULL, 0, &len);
	agent_exchange x;
	ck_assert_int_eq(session_send(s, AGENT_ANSWER_FILE, req, len, &x), 0);
	ck_assert(x.done && x.have_error);
	free(req);
}

static void session_end(session *s)
{
	uint8_t end[AGENT_FRAME_HEADER];
	agent_end_frame(end);
	ck_assert_int_eq(write(s->in, end, sizeof(end)), sizeof(end));
	close(s->in);
	int st;
	ck_assert_int_eq(waitpid(s->pid, &st, 0), s->pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(s->out);
}

/* A CANCEL that comes after its run ended (the host's cancel raced the work's exit) is
 * dropped: the session serves the next request. */
START_TEST(test_agent_stray_cancel)
{
	session s;
	session_start(&s);
	uint8_t cancel[AGENT_FRAME_HEADER];
	agent_frame_header(cancel, AGENT_REQ_CANCEL, 0);
	ck_assert_int_eq(write(s.in, cancel, sizeof(cancel)), sizeof(cancel));
	ck_assert_int_eq(write(s.in, cancel, sizeof(cancel)), sizeof(cancel));
	session_alive(&s);
	session_end(&s);
}
END_TEST

/* A RUN whose payload does not parse (no argc, an argc beyond the strings): an
 * invalid_argument refusal of that run, and the session goes on. */
START_TEST(test_agent_malformed_run)
{
	static const char *const payloads[] = { "1000\0",
						"1000\0"
						"0\0\0"
						"9\0sh\0",
						"x" };
	static const size_t lens[] = { 5, 13, 1 };
	for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
		session s;
		session_start(&s);
		char req[64];
		agent_frame_header((uint8_t *)req, AGENT_REQ_RUN, (uint32_t)lens[i]);
		memcpy(req + AGENT_FRAME_HEADER, payloads[i], lens[i]);
		agent_frame_header((uint8_t *)req + AGENT_FRAME_HEADER + lens[i],
				   AGENT_REQ_STDIN_END, 0);
		agent_exchange x;
		ck_assert_int_eq(session_send(&s, AGENT_ANSWER_RUN, req,
					      2 * AGENT_FRAME_HEADER + lens[i], &x),
				 0);
		ck_assert(x.done && x.have_error);
		ck_assert_str_eq(x.error.code, "invalid_argument");
		session_alive(&s);
		session_end(&s);
	}
}
END_TEST

/* ---- the relay (gVisor's listen op, agent/relay.c) ------------------------------------- */

static int collect_text(void *ctx, const void *data, size_t len)
{
	g_string_append_len(ctx, data, (gssize)len);
	return 0;
}

/* `relay PATH` over the session: the port of the agent's loopback listener. */
static unsigned session_relay(session *s, const char *path)
{
	const char *args[] = { "relay", path, NULL };
	size_t len;
	char *req = agent_file_request(args, NULL, 0, &len);
	g_autoptr(GString) port = g_string_new(NULL);
	agent_sink k = { .ctx = port, .emit = collect_text };
	agent_exchange x = { .kind = AGENT_ANSWER_FILE, .want = AGENT_FRAME_DATA, .sink = &k };
	agent_link link = { .in = &s->in, .out = s->out, .err = -1, .session = true };
	bool deadline;
	ck_assert_int_eq(agent_exchange_run(&x, &link, 10000, -1, req, len, &deadline), 0);
	free(req);
	ck_assert_msg(x.done && x.file_done && !x.have_error, "%s", x.error.message);
	return (unsigned)atoi(port->str);
}

/* One connection to the relay's port, accepted on the unix listener: bytes both ways and
 * the half-close passed on. */
static void relay_carries(int unix_lsn, unsigned port)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	int h = accept4(unix_lsn, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(h, 0);
	char buf[16] = { 0 };
	ck_assert_int_eq(write(c, "up", 2), 2);
	ck_assert_int_eq(shutdown(c, SHUT_WR), 0);
	ck_assert_int_eq(read(h, buf, sizeof(buf)), 2);
	ck_assert_int_eq(read(h, buf + 2, sizeof(buf) - 2), 0); /* the half-close */
	ck_assert_int_eq(write(h, "down", 4), 4);
	close(h);
	ck_assert_int_eq(read(c, buf, sizeof(buf)), 4);
	ck_assert(memcmp(buf, "down", 4) == 0);
	close(c);
}

/* The children of pid, from /proc. */
static GArray *children_of(pid_t pid)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(pid_t));
	GDir *d = g_dir_open("/proc", 0, NULL);
	const char *name;
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *path = g_strdup_printf("/proc/%s/stat", name);
		g_autofree char *st = NULL;
		if (!g_ascii_isdigit(name[0]) || !g_file_get_contents(path, &st, NULL, NULL))
			continue;
		const char *cp = strrchr(st, ')');
		int ppid = 0;
		if (cp && sscanf(cp + 2, "%*c %d", &ppid) == 1 && ppid == pid) {
			pid_t child = (pid_t)atoi(name);
			g_array_append_val(out, child);
		}
	}
	if (d)
		g_dir_close(d);
	return out;
}

/* The sockets pid holds: the relay's listener and two per connection. */
static unsigned open_sockets(pid_t pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/fd", (int)pid);
	GDir *d = g_dir_open(path, 0, NULL);
	ck_assert_ptr_nonnull(d);
	unsigned n = 0;
	for (const char *name; (name = g_dir_read_name(d));) {
		g_autofree char *fd = g_build_filename(path, name, NULL);
		g_autofree char *target = g_file_read_link(fd, NULL);
		n += target && g_str_has_prefix(target, "socket:");
	}
	g_dir_close(d);
	return n;
}

/* Waits (boundedly) until pid holds want sockets: a connection the test closed ends in the
 * relay a moment later. */
static unsigned sockets_settle(pid_t pid, unsigned want)
{
	unsigned n = open_sockets(pid);
	for (int tries = 0; n != want && tries < 300; tries++) {
		g_usleep(10000);
		n = open_sockets(pid);
	}
	return n;
}

static int relay_connect(unsigned port)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	return c;
}

#define BULK_BYTES (8u << 20)

typedef struct bulk_writer {
	int fd;
	uint8_t seed;
} bulk_writer;

/* BULK_BYTES of a pattern of seed's, then the half-close. */
static void *bulk_write(void *arg)
{
	bulk_writer *w = arg;
	static __thread uint8_t buf[65536];
	for (size_t sent = 0; sent < BULK_BYTES;) {
		size_t n = MIN(sizeof(buf), BULK_BYTES - sent);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)(w->seed + (sent + i) * 7);
		ssize_t k = write(w->fd, buf, n);
		if (k <= 0)
			return NULL;
		sent += (size_t)k;
	}
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* Reads fd to EOF, checking seed's pattern; the bytes read. */
static size_t bulk_check(int fd, uint8_t seed)
{
	uint8_t buf[65536];
	size_t got = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			ck_assert_uint_eq(buf[i], (uint8_t)(seed + (got + (size_t)i) * 7));
		got += (size_t)n;
	}
	return got;
}

typedef struct bulk_reader {
	int fd;
	uint8_t seed;
	size_t got;
} bulk_reader;

static void *bulk_read(void *arg)
{
	bulk_reader *r = arg;
	r->got = bulk_check(r->fd, r->seed);
	return NULL;
}

/* Many connections at once, carried by the relay's one process (no process per
 * connection), 8 MiB each way at once on one of them (both sides writing while neither
 * reads all: the relay's buffers fill and drain), and every descriptor of theirs closed
 * after. */
static void relay_concurrent(int unix_lsn, unsigned port, pid_t agent)
{
	g_autoptr(GArray) kids = children_of(agent);
	ck_assert_uint_eq(kids->len, 1); /* the relay */
	pid_t relay = g_array_index(kids, pid_t, 0);
	ck_assert_uint_eq(sockets_settle(relay, 1), 1); /* its listener alone */
	enum { N = 32 };
	int c[N], h[N];
	for (int i = 0; i < N; i++) {
		c[i] = relay_connect(port);
		h[i] = accept4(unix_lsn, NULL, NULL, SOCK_CLOEXEC);
		ck_assert_int_ge(h[i], 0);
	}
	g_autoptr(GArray) during = children_of(relay);
	ck_assert_uint_eq(during->len, 0);
	/* each connection accepted on both ends: the relay holds its two sockets */
	ck_assert_uint_eq(open_sockets(relay), 1 + 2 * N);
	for (int i = N - 1; i >= 0; i--) { /* in another order than opened */
		char msg[16], buf[16] = { 0 };
		int len = snprintf(msg, sizeof(msg), "ping %d", i);
		ck_assert_int_eq(write(c[i], msg, (size_t)len), len);
		ck_assert_int_eq(read(h[i], buf, sizeof(buf)), len);
		ck_assert(memcmp(buf, msg, (size_t)len) == 0);
		ck_assert_int_eq(write(h[i], "pong", 4), 4);
		ck_assert_int_eq(read(c[i], buf, sizeof(buf)), 4);
	}
	bulk_writer up = { c[0], 3 }, down = { h[0], 11 };
	bulk_reader back = { c[0], 11, 0 };
	pthread_t tu, td, tb;
	ck_assert_int_eq(pthread_create(&tu, NULL, bulk_write, &up), 0);
	ck_assert_int_eq(pthread_create(&td, NULL, bulk_write, &down), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, bulk_read, &back), 0);
	ck_assert_uint_eq(bulk_check(h[0], 3), BULK_BYTES); /* and the half-close */
	pthread_join(tu, NULL);
	pthread_join(td, NULL);
	pthread_join(tb, NULL);
	ck_assert_uint_eq(back.got, BULK_BYTES);
	for (int i = 0; i < N; i++) {
		close(c[i]);
		close(h[i]);
	}
	ck_assert_uint_eq(sockets_settle(relay, 1), 1);
}

/* The relay carries a connection to the host's unix socket, many at once, lives on past a
 * run's end (which kills everything else the agent started) and a host socket that went
 * away, and is refused over `exec`. */
START_TEST(test_agent_relay)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *path = g_build_filename(dir, "s", NULL);
	int lsn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	ck_assert_uint_lt(strlen(path), sizeof(a.sun_path));
	strcpy(a.sun_path, path);
	ck_assert_int_eq(bind(lsn, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lsn, 8), 0);
	session s;
	session_start(&s);
	unsigned port = session_relay(&s, path);
	ck_assert_uint_gt(port, 0);
	relay_carries(lsn, port);
	relay_concurrent(lsn, port, s.pid);
	/* a run, whose end kills every other descendant of the agent */
	const char *argv[] = { "/bin/true", NULL };
	const char *envp[] = { NULL };
	size_t len;
	char *req = agent_run_request(argv, envp, 10000, 1024, NULL, NULL, 0, &len);
	agent_exchange x;
	ck_assert_int_eq(session_send(&s, AGENT_ANSWER_RUN, req, len, &x), 0);
	free(req);
	ck_assert_msg(x.done && x.have_status, "%d %d %s %s", x.done, x.have_error, x.error.code,
		      x.error.message);
	relay_carries(lsn, port);
	/* the host's socket gone: the connection is refused (closed at once); a socket there
	 * again is reached */
	close(lsn);
	ck_assert_int_eq(unlink(path), 0);
	int refused = relay_connect(port);
	char byte;
	ck_assert_int_le(read(refused, &byte, 1), 0);
	close(refused);
	lsn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(lsn, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lsn, 8), 0);
	relay_carries(lsn, port);
	session_end(&s); /* the relay ends with it (PR_SET_PDEATHSIG) */
	/* over exec: refused (an orphan there would not outlive the next run) */
	g_autofree char *agent = testutil_build_path("agent/cordon-agent");
	const char *exec_argv[] = { agent, "relay", path, NULL };
	gint st = -1;
	g_autofree char *out = NULL;
	ck_assert(g_spawn_sync(NULL, (char **)exec_argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
			       NULL, &out, NULL, &st, NULL));
	ck_assert(!g_spawn_check_wait_status(st, NULL));
	ck_assert_int_eq(out[0], AGENT_FRAME_ERROR); /* its one answer: an ERROR frame */
	close(lsn);
	testutil_rmtree(dir);
}
END_TEST

static Suite *agent_proto_suite(void)
{
	Suite *s = suite_create("agent-proto");
	TCase *tc = tcase_create("codec");
	tcase_add_test(tc, test_status_parse);
	tcase_add_test(tc, test_error_parse);
	tcase_add_test(tc, test_decoder_chunks);
	tcase_add_test(tc, test_decoder_malformed);
	tcase_add_test(tc, test_decoder_claims_nothing);
	tcase_add_test(tc, test_env_header);
	tcase_add_test(tc, test_session_request);
	tcase_add_test(tc, test_session_file_request);
	suite_add_tcase(s, tc);
	tc = tcase_create("exchange");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_exchange_run_answer);
	tcase_add_test(tc, test_exchange_unknown_and_oversized);
	tcase_add_test(tc, test_exchange_out_of_turn);
	tcase_add_test(tc, test_exchange_split_reads);
	tcase_add_test(tc, test_exchange_truncated_at_eof);
	tcase_add_test(tc, test_exchange_silent_agent);
	suite_add_tcase(s, tc);
	tc = tcase_create("agent");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_agent_stray_cancel);
	tcase_add_test(tc, test_agent_malformed_run);
	tcase_add_test(tc, test_agent_relay);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return testutil_run(agent_proto_suite());
}
