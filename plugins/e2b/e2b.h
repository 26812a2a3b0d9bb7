/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `e2b` driver: the remote tier over E2B's control plane (REST) and envd
 * (Connect, JSON) with libcurl and json-c (docs/tiers/e2b.md).
 */
#pragma once

#include <cordon/plugin.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define E2B_ENVD_PORT "49983"
#define E2B_BODY_MAX (1u << 20)  /* a control-plane or unary answer */
#define E2B_FRAME_MAX (4u << 20) /* one Connect envelope */
#define E2B_JSON_DEPTH 16
#define E2B_ID_MAX 64
#define E2B_TOKEN_MAX 256

extern const cordon_host *e2b_host;

typedef struct e2b_tier {
	char *name;
	char *api_url;     /* no trailing slash */
	char *sandbox_url; /* envd base for every sandbox, or NULL: 49983-ID.DOMAIN */
	char *domain;      /* from api_url's host (api.DOMAIN) */
	char *template_id;
	char *root; /* the sandbox root on E2B's side: /home/user */
	char *ca_file;
	char *api_key; /* held for the tier's life; wiped at unconfigure */
	uint64_t ttl_s;
	uint64_t request_ms;
} e2b_tier;

typedef struct e2b_sandbox {
	e2b_tier *tier;
	char id[E2B_ID_MAX + 1];
	char *token; /* envdAccessToken, or NULL */
	char *envd;  /* envd base URL */
	uint64_t egress;
} e2b_sandbox;

/* ---- HTTP (http.c) --------------------------------------------------------------- */

typedef struct e2b_call {
	const char *method;
	char *url;                /* owned by the caller */
	const char *content_type; /* of the body, or NULL */
	const void *body;
	size_t body_len;
	bool api;                 /* the control plane: X-API-Key */
	const e2b_sandbox *sbx;   /* envd: E2b-Sandbox-Id/Port, X-Access-Token */
	const char *const *extra; /* more "Name: value" headers, NULL-terminated */
	bool idempotent;          /* may be retried on a transport error or 502-504 */
	/* Outcomes the caller reports itself, so err stays unset: the deadline
	 * (-ETIMEDOUT) and an answer over max_body (-EFBIG). */
	bool quiet_timeout, quiet_over;
	uint64_t timeout_ms; /* the whole call; 0: the tier's request_timeout */
	size_t max_body;     /* buffered answers; 0: E2B_BODY_MAX */
	int cancel_fd;       /* readable: abort (-1: none) */
	/* Streaming: when set, the body goes here (return false to abort) and is not kept. */
	bool (*sink)(void *ctx, const char *data, size_t len);
	void *sink_ctx;
	/* out */
	long status;
	char *resp; /* NUL-terminated, host->free */
	size_t resp_len;
	char content[128]; /* the response's Content-Type */
	char failure[160]; /* a transport failure in words ("" when none) */
	bool cancelled;
} e2b_call;

/* Performs the call; 0 with call->status set (any status), or a negative errno
 * and err set (transport failure, deadline, redirect, body over its cap). */
int e2b_http(const e2b_tier *t, e2b_call *call, cordon_plugin_error *err);
void e2b_call_clear(e2b_call *call);
/* "%s/..." with each %s of the arguments percent-encoded as a query value. */
char *e2b_url(const char *base, const char *path, const char *query_key, const char *query_value);
int e2b_protocol_error(cordon_plugin_error *err, const char *fmt, ...) CORDON_PLUGIN_PRINTF(2, 3);
/* The JSON object of a body, bounded in depth; NULL (and err) when it is not one. */
json_object *e2b_parse(const char *data, size_t len, const char *what, cordon_plugin_error *err);
/* The same for another type (a listing's array). */
json_object *e2b_parse_as(const char *data, size_t len, json_type type, const char *what,
			  cordon_plugin_error *err);
/* A string member, NULL when absent; sets *bad when present but not a string. */
const char *e2b_string(json_object *o, const char *key, bool *bad);
/* The error an unexpected status means, from the body's message and code. */
int e2b_status_error(const e2b_call *c, const char *op, cordon_plugin_error *err);

/* A tunnel to a port a process of s serves (cordon server: GET with Upgrade:
 * cordon-tcp, docs/tiers/e2b.md): a connected CONNECT_ONLY handle past the 101
 * (curl_easy_send/recv carry the port's bytes), and the bytes that came with the
 * answer (at most cap) in extra; NULL and why otherwise. */
#define E2B_TUNNEL_PROTOCOL "cordon-tcp"
typedef void CURL;
CURL *e2b_tunnel_open(const e2b_sandbox *s, uint16_t port, char *extra, size_t cap,
		      size_t *extra_len, char *why, size_t why_len);

/* A sandbox path made plain: "." and empty components dropped, ".." taken back
 * lexically; NULL when it is absolute or climbs above the root ("" is the root). */
char *e2b_normalize(const char *path);

/* ---- serve (serve.c) ---------------------------------------------------------------- */

/* A served port's host side: a loopback listener, each connection tunnelled. */
typedef struct e2b_serve {
	const e2b_sandbox *sbx;
	uint16_t port;
	int listen_fd;
	int stop[2]; /* [1] closed: everything stops */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned conns; /* connection threads alive, under lock */
	bool running;
} e2b_serve;

/* Listens (127.0.0.1, a free port, written to addr) and accepts; -errno. */
int e2b_serve_begin(e2b_serve *sv, const e2b_sandbox *s, uint16_t port, char *addr, size_t len);
/* Stops accepting, ends every connection and waits for them. Idempotent. */
void e2b_serve_end(e2b_serve *sv);

/* ---- a terminal run (tty.c) ---------------------------------------------------------- */

/* The relay of a terminal run: fd (run_spec.tty_fd, raw) to envd's pty and back. */
typedef struct e2b_tty {
	int fd;
	uint16_t rows, cols; /* the size envd last heard */
	const e2b_sandbox *sbx;
	int64_t pid;
	int stop[2]; /* [1] closed: the relay ends */
	pthread_t thread;
	bool running;
} e2b_tty;

/* StartRequest's and UpdateRequest's pty: {size: {cols, rows}}. */
json_object *e2b_pty_object(uint16_t rows, uint16_t cols);
/* SendInput's input: {KIND: base64 of data}, KIND stdin or pty. */
json_object *e2b_input_object(const char *kind, const void *data, size_t len);
/* Starts relaying what is typed into t->fd (and its size) to process pid of s; -errno. */
int e2b_tty_begin(e2b_tty *t, const e2b_sandbox *s, int64_t pid);
/* Stops the relay and waits for it. Idempotent. */
void e2b_tty_end(e2b_tty *t);
/* Writes the pty's output into t->fd, waiting while the core catches up (not past a cancel). */
void e2b_tty_write(const e2b_tty *t, const unsigned char *data, size_t len, int cancel_fd);

/* ---- a sandbox's life (e2b.c) and what a crashed host left (gc.c) ------------------- */

/* DELETE /sandboxes/{id}; a failure is logged (the time to live ends it). */
void e2b_kill_remote(const e2b_tier *t, const char *id);
/* A sandbox ID as E2B writes them: [a-z0-9], at most E2B_ID_MAX. */
bool e2b_valid_id(const char *id);
/* The metadata that names this host and process as a sandbox's owner
 * (cordon.host, cordon.owner), added to meta; false when /proc or
 * /etc/machine-id cannot tell (then gc can never judge the sandbox). */
bool e2b_owner_metadata(json_object *meta);
int e2b_gc(void *tier, cordon_plugin_error *err);

/* ---- the envd operations (envd.c) -------------------------------------------------- */

int e2b_run(void *sandbox, const cordon_plugin_run_spec *spec, const cordon_plugin_run_sink *sink,
	    cordon_plugin_run_status *ret, cordon_plugin_error *err);
int e2b_read_file(void *sandbox, const char *path, uint64_t max_len, cordon_plugin_emit_fn emit,
		  void *ctx, cordon_plugin_error *err);
int e2b_write_file(void *sandbox, const char *path, const void *data, uint64_t len,
		   cordon_plugin_error *err);
int e2b_glob(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
	     cordon_plugin_error *err);
int e2b_walk(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
	     cordon_plugin_error *err);
/* An envd unary call (Connect JSON): 0 and *ret (the answer) or an error. */
int e2b_unary(const e2b_sandbox *s, const char *procedure, json_object *req, json_object **ret,
	      cordon_plugin_error *err);
