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
};

void srv_proc_unref(srv_proc *p);
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
