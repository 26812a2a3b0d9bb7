/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A started process of cordon server (process.c) and its output's readers
 * (procout.c): what the two share.
 */
#ifndef CORDON_SERVER_PROCESS_H
#define CORDON_SERVER_PROCESS_H

#include "server.h"

struct srv_proc {
	int refs; /* under p->lock */
	uint32_t pid;
	srv_sandbox *sbx; /* a reference */
	char **argv;
	char **env;
	char *workdir;
	uint64_t timeout_ms;
	json_object *config; /* the request's ProcessConfig, for List */
	json_object *tag;    /* the request's tag, or NULL */
	GMutex lock;
	GCond cond;
	bool want_stdin;
	bool pty;            /* a pseudo-terminal: its output is "pty" data */
	uint16_t rows, cols; /* its size at the start */
	int resize[2];       /* [1]: Update writes {rows, cols} records; -1 if none */
	uint16_t serve_port; /* Cordon-Serve-Port, or 0 */
	char *address;       /* the serve's, under p->lock, while it runs */
	/* The stdin pipe (a pty's input too): [0] the run reads (through the library), [1]
	 * SendInput writes; -1 once closed. [1] only under stdin_lock, which also keeps
	 * concurrent SendInputs in order; [0] only by the process's thread. */
	GMutex stdin_lock;
	int stdin_pipe[2];
	int cancel[2];
	int killed_by; /* the signal SendSignal asked for, 0 if none */
	/* The output's readers (srv_reader*: a Start's stream, each Connect's), and what came
	 * while there was none (data events, the newest SRV_QUEUE_MAX bytes), under p->lock. */
	GPtrArray *readers;
	GQueue backlog;
	size_t backlog_len;
	bool ended; /* the end events are queued to every reader */
	/* A WatchDir's watcher (watch.c): not a process of List, Connect, SendInput or
	 * SendSignal; its output is parsed, not streamed; its last reader gone ends it. */
	bool watcher;
	bool watch_ready, watch_bad; /* its "ready" came; it printed what it may not */
	GString *line;               /* a watcher's partial line of output */
	GString *errtail;            /* the end of its stderr, for the error it ends with */
};

void srv_proc_unref(srv_proc *p);
/* A process of s (a reference to s taken), and its pipes (cancel, stdin, pty). */
srv_proc *srv_proc_new(srv_sandbox *s);
bool srv_proc_pipes(srv_proc *p);
/* Registers p, starts its thread and answers r with a stream of its events, the start
 * event first when start_now (else the thread pushes it). Consumes p. */
enum MHD_Result srv_proc_launch(srv_req *r, srv_proc *p, bool start_now);
/* A streaming call's request message (one envelope), NULL and why. */
json_object *srv_stream_message(srv_req *r, const char **why);
/* A streaming call's error: a 200 whose one envelope is the end-of-stream error. */
enum MHD_Result srv_stream_error(srv_req *r, const char *code, const char *message);
/* {"error": {code, message, error_code?}} */
json_object *srv_end_error(const char *code, const char *message, const cordon_error *err);
/* The watcher's side (watch.c): its output, and its trailer when its run ended. */
int srv_watch_output(srv_proc *p, int stream, const void *data, size_t len);
GBytes *srv_watch_end(srv_proc *p, int rc, const cordon_result *res, const cordon_error *err);
/* A WatchDir event: {kind: body} (body consumed). */
json_object *srv_watch_event(const char *kind, json_object *body);
/* filesystem.Filesystem/WatchDir. */
enum MHD_Result srv_watch_dir(srv_req *r, srv_sandbox *s);
/* One Connect envelope of msg (consumed). */
GBytes *srv_envelope(uint8_t flags, json_object *msg);
/* {"event": {kind: body}} */
json_object *srv_event(const char *kind, json_object *body);
/* Under p->lock: ev (consumed) to every reader, waiting (wait) while one of them has
 * SRV_QUEUE_MAX bytes unread; with no reader, a data event is kept in the backlog. */
void srv_proc_push(srv_proc *p, GBytes *ev, bool wait);
/* Under p->lock: a new reader of p's events from now on, first events, then the backlog;
 * the response that streams them (queued on r's connection by the caller). */
struct MHD_Response *srv_reader_new(srv_proc *p, struct MHD_Connection *conn, GBytes *first,
				    int keepalive_s);

#endif
