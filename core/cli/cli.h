/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <cordon/cordon.h>
#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Exit codes (cordon(1), EXIT STATUS): the work's own status passes through `run` when it is
 * 0-127, a signal that killed it is 128+N, and cordon's own codes are 200-203, which no work
 * status reaches: a work that exits 128-255 itself is EXIT_WORK_HIGH (its status said on
 * stderr and in --json). So a refusal is told from any status of the work's without --json. */
#define EXIT_WORK_HIGH 200 /* the work exited 128-255 by itself */
#define EXIT_REFUSED 201   /* refused: by the policy, or cordon refused an input */
#define EXIT_USAGE 202     /* a usage error or invalid input */
#define EXIT_FAILED 203    /* the work could not run */

/* --json anywhere on the command line before "--": errors print one JSON object on stdout
 * too (main.c sets it before any parsing, so that a usage error is JSON as well). */
extern bool cli_json;
void cli_json_from_argv(int argc, char **argv);
/* Prints err ("cordon: CLASS [CODE]: message"; with --json also the object, with the
 * decision when given), frees it, returns the exit code of its class. */
int cli_report(cordon_error *err);
int cli_report_decision(cordon_error *err, const char *decision_json);
int cli_exit_for_class(cordon_error_class cls);
/* cordon's own errors, as cli_report prints a library's: usage (64, invalid/usage),
 * refused (77, forbidden/refused), could not run (70, terminal/failed). */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* s with control bytes as \xNN (owned by caller, g_free). */
char *cli_printable(const char *s);
/* The policy path by precedence (see main.c), or NULL for the built-in default. */
const char *cli_policy_path(const char *flag);
/* `cordon probe --fresh`: the context opened next asks every tier afresh. */
void cli_set_probe_fresh(bool fresh);
/* Opens a context; returns 0 or an exit code (after printing why). */
int cli_open_context(const char *policy_flag, const char *plugin_dir, bool all_plugins,
		     struct cordon_context **ret);
/* The work's output on one of cordon's descriptors (output.c). */
typedef struct cli_out {
	int fd;
	bool escape;  /* a terminal, and no --raw: controls are shown, not sent */
	bool gone;    /* a write failed (or fd was closed at start): nothing more goes */
	char held[4]; /* the start of a UTF-8 sequence cut at the end of a chunk */
	size_t nheld;
	const volatile sig_atomic_t *stop; /* set: a write blocked on a slow reader gives up */
} cli_out;

/* Which of 0-2 were closed when cordon started: cli_stdio_guard puts
 * /dev/null there, so that no descriptor cordon opens lands on them. */
extern bool cli_stdio_closed[3];
void cli_stdio_guard(void);
void cli_out_init(cli_out *o, int fd, bool raw, const volatile sig_atomic_t *stop);
/* Writes (escaped on a terminal); false once the stream is gone (o->gone) or
 * when *o->stop interrupted the write. */
bool cli_out_write(cli_out *o, const char *data, size_t len);
/* Ends the stream: an incomplete UTF-8 sequence still held is shown escaped. */
void cli_out_flush(cli_out *o);
/* Prints what the tier reported beyond the status (truncated, timed out, OOM). */
void cli_report_run(const cordon_result *res);
/* The exit code for the work's result: its status (0-127), 128+signal, or EXIT_WORK_HIGH for
 * a status of 128-255 it exited with (said on stderr when say). */
int cli_work_status(const cordon_result *res, bool say);
/* Prints the result as one JSON object; returns cli_work_status's code. */
int cli_print_json(const cordon_result *res, const char *tier, cordon_containment c);
/* Any bytes as a quoted JSON string (jsonstr.h). */
char *cli_json_string(const char *s, size_t len);

/* The request fields a policy judges (request.c): --label, --limit, --egress, --image; and
 * --caller, the audit's label. */
typedef struct cli_request_fields {
	char *egress, *image, *caller;
	char **labels, **limits, **mounts;
} cli_request_fields;
void cli_request_fields_clear(cli_request_fields *f);
/* The option rows filling f, NULL-terminated; g_free() the array. */
GOptionEntry *cli_request_fields_entries(cli_request_fields *f);
/* Returns 0, a usage exit code (printed), or -1 with *err set. */
int cli_request_fields_apply(const cli_request_fields *f, cordon_request *req, cordon_error **err);

/* The user's terminal (tty.c). Raw mode on fd, when a terminal, until cli_tty_restore
 * (async-signal-safe; also run at exit). */
int cli_tty_raw(int fd);
void cli_tty_restore(void);
/* The terminal's size now (0 when none) and the read end of its resize records (a pipe
 * SIGWINCH writes to), or -1. */
int cli_tty_size_start(uint16_t *ret_rows, uint16_t *ret_cols);

int cli_cmd_run(int argc, char **argv);
int cli_cmd_exec(int argc, char **argv);
int cli_cmd_shell(int argc, char **argv);
int cli_cmd_probe(int argc, char **argv);
int cli_cmd_plugins(int argc, char **argv);
int cli_cmd_version(int argc, char **argv);
int cli_cmd_gc(int argc, char **argv);
int cli_cmd_policy(int argc, char **argv);
int cli_cmd_explain(int argc, char **argv);
int cli_cmd_image(int argc, char **argv);
int cli_cmd_vm(int argc, char **argv);
int cli_cmd_server(int argc, char **argv);
int cli_cmd_audit(int argc, char **argv);
