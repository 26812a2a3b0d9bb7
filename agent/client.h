/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host side of the agent protocol (protocol.h), once for every plugin family that runs
 * cordon-agent (the container tiers now, the microVM tiers next): the frame codec, the
 * requests, the answers' state machines and the poll loop of one exchange. libc only (and the
 * SDK header's constants): it links into plugins, which reach the core through the host
 * services table alone.
 *
 * Everything the agent says is hostile: it runs inside the sandbox, and a compromised
 * sandbox writes what it likes on the channel. A malformed stream (an unknown or oversized
 * frame, a frame out of turn, a status or error that does not parse) ends the exchange with
 * -EPROTO; memory stays bounded by AGENT_FRAME_MAX per frame.
 */
#ifndef CORDON_AGENT_CLIENT_H
#define CORDON_AGENT_CLIENT_H

#include "protocol.h"
#include "visibility.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- parsing what the agent says --------------------------------------------------- */

typedef struct agent_status {
	bool exited, signaled, timed_out, cancelled, oom;
	bool truncated_out, truncated_err;
	int code; /* exit code or signal number */
} agent_status;

/* A refusal the agent reported (ERROR frame), with the class the host gives its code. */
typedef struct agent_error {
	int errnum;   /* positive errno */
	uint32_t cls; /* CORDON_PLUGIN_ERROR_* */
	char code[48];
	char message[400];
} agent_error;

/* Parses a STATUS frame payload ("exit 3", "signal 9 timeout"). */
int agent_status_parse(const char *text, agent_status *ret) CORDON_INTERNAL;
/* Parses an ERROR frame payload ("<code> <errno> <message>"). */
int agent_error_parse(const char *text, agent_error *ret) CORDON_INTERNAL;
/* Fills r (when not NULL) with a refusal made on the host side, in the same record as
 * the agent's (so a plugin passes both on alike); returns -errnum. */
int agent_refuse(agent_error *r, int errnum, uint32_t cls, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6))) CORDON_INTERNAL;
/* The error class of an agent's error code. */
uint32_t agent_error_class_for(const char *code) CORDON_INTERNAL;

/* An incremental frame decoder (the answer arrives in arbitrary chunks). */
typedef struct agent_decoder {
	uint8_t hdr[AGENT_FRAME_HEADER];
	size_t hdr_len;
	uint8_t type;
	uint32_t want, have;
	char *payload;
	bool broken;
} agent_decoder;

typedef int (*agent_frame_fn)(void *ctx, uint8_t type, const char *payload, uint32_t len);

/* Feeds bytes; calls fn for every complete frame (payload NUL-terminated). Returns -EPROTO
 * on a malformed stream (unknown type, payload over AGENT_FRAME_MAX; the decoder stays
 * broken), -ENOMEM, or fn's first non-zero return. */
int agent_decoder_feed(agent_decoder *d, const void *data, size_t len, agent_frame_fn fn,
		       void *ctx) CORDON_INTERNAL;
/* Whether the bytes fed so far end inside a frame (a stream cut there is malformed). */
bool agent_decoder_pending(const agent_decoder *d) CORDON_INTERNAL;
void agent_decoder_clear(agent_decoder *d) CORDON_INTERNAL;

/* ---- requests ------------------------------------------------------------------------ */

/* The environment header of a one-shot `run`: "<n>\n" + KEY=VALUE\0... */
char *agent_env_header(const char *const *envp, size_t *ret_len) CORDON_INTERNAL;
/* A run for the session agent: a RUN frame, the stdin as STDIN frames, one STDIN_END. NULL
 * when the RUN payload would exceed AGENT_REQUEST_MAX or argv is empty (the caller runs it
 * another way). workdir may be NULL. */
char *agent_run_request(const char *const *argv, const char *const *envp, uint64_t timeout_ms,
			uint64_t cap, const char *workdir, const void *in, size_t in_len,
			size_t *ret_len) CORDON_INTERNAL;
/* A run on a terminal for the session agent: a TTY_RUN frame (the work gets a
 * pseudo-terminal of rows x cols inside the sandbox) and one STDIN_END. NULL as
 * agent_run_request. */
char *agent_tty_run_request(const char *const *argv, const char *const *envp, uint64_t timeout_ms,
			    uint64_t cap, const char *workdir, uint16_t rows, uint16_t cols,
			    size_t *ret_len) CORDON_INTERNAL;
/* A file operation for the session agent: a FILE frame of args (the op and its 1..2
 * arguments, as the one-shot command line gives them), the data as STDIN frames, one
 * STDIN_END. NULL when args are not 2..3 strings or exceed AGENT_FILE_REQUEST_MAX. */
char *agent_file_request(const char *const *args, const void *in, size_t in_len,
			 size_t *ret_len) CORDON_INTERNAL;

/* ---- one exchange -------------------------------------------------------------------- */

/* Where an answer's payload goes. Any callback may be NULL. */
typedef struct agent_sink {
	void *ctx;
	void (*hello)(void *ctx, long agent_pid); /* the work starts */
	void (*started)(void *ctx, long pid);     /* it runs: its pid in the sandbox */
	void (*output)(void *ctx, int stream, const char *data, size_t len); /* 1, 2 */
	int (*emit)(void *ctx, const void *data, size_t len); /* a file op's data; non-zero stops */
} agent_sink;

/* The transport an exchange runs over: a session channel (kept between requests) or a
 * one-shot agent (its input closed when the request is written, its output read to EOF). */
typedef struct agent_link {
	int *in; /* our write end (non-blocking); a one-shot's is closed and set to -1 */
	int out; /* the agent's frames (non-blocking) */
	int err; /* the transport's own diagnostics (an engine CLI's stderr), or -1 */
	bool session;
	/* one-shot: after the request, copy in_src into in until EOF (the work's streamed
	 * stdin), as the bytes come */
	bool stream_in;
	int in_src;
	void *ctx;
	/* one-shot: cancel the work out of band (the session's cancel is a CANCEL frame) */
	void (*cancel)(void *ctx, long agent_pid);
	/* stop the transport: the deadline passed, or the cancel went unanswered */
	void (*kill)(void *ctx);
	/* session, a TTY_RUN request: tty_fd (tty_peer_prepare'd, common/ttypeer.h) is the work's terminal on
	 * the host. What is typed into it goes to the agent as TTY_IN frames, its size changes
	 * as TTY_RESIZE (it is looked at every turn: a peer gets no SIGWINCH), and the answer's
	 * STDOUT frames are written into it, not to the sink. */
	bool tty;
	int tty_fd;
} agent_link;

typedef enum agent_answer_kind {
	AGENT_ANSWER_HELLO, /* a session's greeting: one HELLO */
	AGENT_ANSWER_RUN,   /* HELLO, STDOUT/STDERR, then STATUS or ERROR */
	AGENT_ANSWER_FILE,  /* data frames of one kind, DONE or ERROR, then (session) STATUS */
} agent_answer_kind;

#define AGENT_DIAG_MAX 8192

typedef struct agent_exchange {
	/* in */
	agent_answer_kind kind;
	uint8_t want; /* FILE: the one data frame type it answers with (0: none) */
	const agent_sink *sink;
	/* out */
	long agent_pid;
	long work_pid; /* RUN: the work's pid in the sandbox, once it runs (0 before) */
	bool started;  /* a frame came: the agent took the request */
	bool done;     /* the answer is complete */
	bool have_status, have_error, file_done;
	bool cancel_wanted, cancel_sent;
	int emit_rc; /* what sink->emit returned to stop */
	agent_status status;
	agent_error error;
	char diag[AGENT_DIAG_MAX]; /* the start of link->err */
	size_t diag_len;
} agent_exchange;

/* Feeds the answer's bytes through d into x (the state machine of x->kind; session: the
 * answer is read from a session channel). Returns 0, -EPROTO when the answer is malformed,
 * or -ENOMEM. What agent_exchange_run reads goes here; so do a fuzzer's bytes. */
int agent_exchange_feed(agent_exchange *x, bool session, agent_decoder *d, const void *data,
			size_t len) CORDON_INTERNAL;

/* Runs one exchange: writes in (a session's request is followed by a CANCEL frame when
 * cancel_fd becomes readable), decodes the answer into x, reads link->err into x->diag.
 * Bounded by limit_ms from now (*ret_deadline: it passed; link->kill was called). Returns 0,
 * or -EPROTO when the stream was malformed or ended inside a frame (a session's exchange
 * stops there). */
int agent_exchange_run(agent_exchange *x, const agent_link *link, uint64_t limit_ms, int cancel_fd,
		       const char *in, size_t in_len, bool *ret_deadline) CORDON_INTERNAL;

/* The END frame that closes a session (before EOF: a forked copy of our write end must not
 * keep a session alive). */
void agent_end_frame(uint8_t out[AGENT_FRAME_HEADER]) CORDON_INTERNAL;

int64_t agent_now_ms(void) CORDON_INTERNAL;

/* The answer to a `relay` request (agent/protocol.h): one DATA frame, a port in decimal.
 * agent_port_collect is its emit callback (ctx: an agent_port_answer, zeroed). */
typedef struct agent_port_answer {
	char text[16];
	size_t len;
} agent_port_answer;
int agent_port_collect(void *ctx, const void *data, size_t len) CORDON_INTERNAL;
/* The port it holds (1 to 65535), or 0: none. */
uint16_t agent_port_value(const agent_port_answer *p) CORDON_INTERNAL;

#endif /* CORDON_AGENT_CLIENT_H */
