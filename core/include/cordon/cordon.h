/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <cordon/cordon.h>: the embedding API of libcordon.
 *
 * cordon runs work under the isolation tier its trust level requires and
 * refuses rather than downgrades. A host opens one context (policy, loaded
 * drivers), asks it for a sandbox for a request, and runs work in the sandbox.
 *
 * Conventions (docs/embedding.md, docs/error-handling.md):
 *  - Every fallible call returns int: >= 0 on success (0 or a count), a
 *    negative errno on failure. The optional last parameter `reterr`, when not
 *    NULL, receives a cordon_error the caller owns (cordon_error_free).
 *  - Output parameters are named ret_*, written only on success.
 *  - "borrowed": the callee does not keep the pointer past the call.
 *    "owned by caller": the caller frees it with the named destructor.
 *    All destructors accept NULL.
 *  - A context and its sandboxes may be used from many threads at once.
 *  - A non-zero exit of the work is a result, never an error: an error means
 *    the work could not run.
 */
#ifndef CORDON_CORDON_H
#define CORDON_CORDON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; what this header declares is
 * its whole public surface. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define CORDON_VERSION_MAJOR 0
#define CORDON_VERSION_MINOR 1

/* ---- the library itself (added in 0.2) ------------------------------------ */

/* The version of the library running (which may be newer than the header a host was
 * built with), e.g. "0.1.0". Static string. Each of ret_major, ret_minor, ret_micro may
 * be NULL. */
const char *cordon_version(int *ret_major, int *ret_minor, int *ret_micro);

/* Frees what the library returned for free(): the strings of *_to_json,
 * serve_address, serve_output, policy_summary, the data of read_file. For hosts
 * whose free() is not the library's (FFI, another C runtime). NULL is fine. */
void cordon_free(void *p);

typedef enum cordon_log_level {
	CORDON_LOG_ERROR = 1,
	CORDON_LOG_WARNING = 2,
	CORDON_LOG_INFO = 3,
	CORDON_LOG_DEBUG = 4,
} cordon_log_level;

/* Called with each library message at or above the level asked; message is borrowed
 * for the call. May be called from any thread, at once from several: the handler
 * must be thread-safe. */
typedef void (*cordon_log_fn)(void *user, cordon_log_level level, const char *message);

/* Routes the library's messages (every context's) to fn instead of GLib's default
 * handler, those up to max_level (CORDON_LOG_DEBUG: all). fn NULL restores the default.
 * Process-wide; thread-safe: once it returns, no message reaches the previous handler.
 * Messages never carry environment grants' values. */
void cordon_set_log_handler(cordon_log_fn fn, void *user, cordon_log_level max_level);

/* ---- errors ------------------------------------------------------------ */

typedef enum cordon_error_class {
	CORDON_ERROR_TERMINAL = 1,  /* the work could not run; retrying will not help */
	CORDON_ERROR_FORBIDDEN = 2, /* refused by policy; the answer is a stronger tier */
	CORDON_ERROR_TRANSIENT = 3, /* may succeed later (daemon restarting, busy) */
	CORDON_ERROR_CANCELLED = 4, /* the caller cancelled or a deadline passed */
	CORDON_ERROR_INVALID = 5,   /* the caller passed bad input */
} cordon_error_class;

typedef struct cordon_error cordon_error;

/* The class, never 0. */
cordon_error_class cordon_error_get_class(const cordon_error *err);
/* A stable machine-readable code, e.g. "sandbox_denied". Borrowed from err. */
const char *cordon_error_get_code(const cordon_error *err);
/* A one-line human message. Borrowed from err. */
const char *cordon_error_get_message(const cordon_error *err);
/* The positive errno the failing call returned negated. */
int cordon_error_get_errno(const cordon_error *err);
/* "forbidden", "terminal", ... Static string. */
const char *cordon_error_class_name(cordon_error_class cls);
void cordon_error_free(cordon_error *err);

/* ---- vocabulary ----------------------------------------------------------- */

typedef enum cordon_trust {
	CORDON_TRUST_TRUSTED = 1,
	CORDON_TRUST_SEMI_TRUSTED = 2,
	CORDON_TRUST_UNTRUSTED = 3,
} cordon_trust;

/* Ordered: a larger value contains more. */
typedef enum cordon_containment {
	CORDON_CONTAINMENT_PROCESS_JAIL = 1,
	CORDON_CONTAINMENT_KERNEL = 2,
	CORDON_CONTAINMENT_CONTAINER = 3,
	CORDON_CONTAINMENT_USERSPACE_KERNEL = 4,
	CORDON_CONTAINMENT_MICROVM = 5,
	CORDON_CONTAINMENT_REMOTE = 6,
} cordon_containment;

/* Parses "trusted", "semi-trusted", "untrusted". Anything else, NULL
 * included, fails closed to CORDON_TRUST_UNTRUSTED. */
cordon_trust cordon_trust_from_string(const char *s);
const char *cordon_trust_to_string(cordon_trust t);
/* Returns 0 for an unknown name. */
cordon_containment cordon_containment_from_string(const char *s);
const char *cordon_containment_to_string(cordon_containment c);

/* ---- context ---------------------------------------------------------- */

typedef struct cordon_options cordon_options;
typedef struct cordon_context cordon_context;

cordon_options *cordon_options_new(void);
void cordon_options_free(cordon_options *opts);
/* The policy to use; without one, the built-in default policy. path and text
 * are copied. text need not be NUL-terminated. */
int cordon_options_set_policy_file(cordon_options *opts, const char *path, cordon_error **reterr);
int cordon_options_set_policy_text(cordon_options *opts, const char *text, size_t len,
				   const char *name, cordon_error **reterr);
/* Overrides the plugin directory of the policy and the configure-time default.
 * Must be absolute. Copied. */
int cordon_options_set_plugin_dir(cordon_options *opts, const char *dir, cordon_error **reterr);
/* Loads this plugin even if the policy does not list it (tests, the CLI's
 * `plugins` listing). name is copied. */
int cordon_options_add_plugin(cordon_options *opts, const char *name, cordon_error **reterr);
/* Loads every plugin found in the directory (the CLI's `plugins` listing). */
void cordon_options_set_load_all_plugins(cordon_options *opts, bool all);
/* Keeps tiers' probe answers across processes, per user (off by default; the cordon
 * command turns it on, `--fresh` off): an "available" answer younger than a minute
 * whose files (the programs and sockets a probe looked at, the policy, cordon itself)
 * are unchanged stands in for a new probe; one that proves wrong at open is forgotten
 * and the open retried once. For hosts that start many short-lived processes; a
 * long-lived host keeps its answers in memory anyway. */
void cordon_options_set_probe_cache(cordon_options *opts, bool use);

/* Loads plugins, configures tiers. opts is borrowed (may be NULL: defaults).
 * *ret_ctx is owned by the caller (cordon_context_free). A plugin that is
 * refused does not fail the context: see cordon_context_plugin_*. */
int cordon_context_new(const cordon_options *opts, cordon_context **ret_ctx, cordon_error **reterr);
void cordon_context_free(cordon_context *ctx);

/* Plugins seen at context creation, loaded or refused. Index < count. Strings
 * are borrowed from ctx. */
size_t cordon_context_plugin_count(const cordon_context *ctx);
const char *cordon_context_plugin_name(const cordon_context *ctx, size_t i);
bool cordon_context_plugin_loaded(const cordon_context *ctx, size_t i);
/* Version when loaded; the one-line refusal reason when refused. */
const char *cordon_context_plugin_detail(const cordon_context *ctx, size_t i);
/* Comma-separated driver names the plugin registered ("" when refused). */
const char *cordon_context_plugin_drivers(const cordon_context *ctx, size_t i);

/* ---- probing ---------------------------------------------------------- */

/* Tiers configured by the policy, in policy order. Strings borrowed from ctx. */
size_t cordon_context_tier_count(const cordon_context *ctx);
const char *cordon_context_tier_name(const cordon_context *ctx, size_t i);
const char *cordon_context_tier_driver(const cordon_context *ctx, size_t i);

typedef struct cordon_probe_report cordon_probe_report;

/* Probes tier i now (bypassing the probe cache). *ret is owned by the caller. */
int cordon_context_probe_tier(cordon_context *ctx, size_t i, cordon_probe_report **ret,
			      cordon_error **reterr);
bool cordon_probe_report_available(const cordon_probe_report *r);
/* The containment the tier provides on this host (process-jail when unknown). */
cordon_containment cordon_probe_report_containment(const cordon_probe_report *r);
/* Plain-language reason: what was found or what is missing. Borrowed. */
const char *cordon_probe_report_reason(const cordon_probe_report *r);
/* Who claims the containment: the plugin's name, or "built-in" (cordon's own driver);
 * NULL when the tier's driver is not loaded. Borrowed from the context. */
const char *cordon_probe_report_origin(const cordon_probe_report *r);
/* The cap admission puts on the claim (the tier's max_containment, or for a plugin's
 * third-party plugin's driver container by default), 0 when none: admission takes the lower of the two. */
cordon_containment cordon_probe_report_max_containment(const cordon_probe_report *r);
void cordon_probe_report_free(cordon_probe_report *r);

/* Removes what crashed hosts left behind (containers, guests, remote
 * sandboxes marked as cordon's whose owner process is gone) for every tier
 * whose driver supports it. Returns how many objects were removed; the first
 * driver failure is reported, and the other tiers are still collected. */
int cordon_context_gc(cordon_context *ctx, cordon_error **reterr);

/* ---- requests and decisions -------------------------------------------- */

typedef struct cordon_request cordon_request;

typedef enum cordon_limit {
	CORDON_LIMIT_WALL_MS = 0,   /* wall time of one run, milliseconds */
	CORDON_LIMIT_MEMORY = 1,    /* bytes */
	CORDON_LIMIT_PIDS = 2,      /* tasks */
	CORDON_LIMIT_CPU_MILLI = 3, /* thousandths of a CPU */
	CORDON_LIMIT_OUTPUT = 4,    /* bytes per output stream */
	CORDON_LIMIT_NOFILE = 5,    /* open files */
	CORDON_LIMIT_FSIZE = 6,     /* bytes, largest file written */
	CORDON_LIMIT_COUNT_ = 7,
} cordon_limit;

typedef enum cordon_egress {
	CORDON_EGRESS_DENY = 0,
	CORDON_EGRESS_GOVERNED = 1,
	CORDON_EGRESS_ALLOW = 2,
} cordon_egress;

/* Unknown trust strings fail closed to untrusted. trust is copied. */
cordon_request *cordon_request_new(const char *trust);
void cordon_request_free(cordon_request *req);
/* Asks for this tier by name; it must still be a candidate for the trust. */
int cordon_request_set_tier(cordon_request *req, const char *tier, cordon_error **reterr);
int cordon_request_add_label(cordon_request *req, const char *key, const char *value,
			     cordon_error **reterr);
/* The host directory the work may write (absolute). For the local driver it is
 * the sandbox root; without one, a private temporary directory is made and
 * removed at close. */
int cordon_request_set_workspace(cordon_request *req, const char *dir, cordon_error **reterr);
int cordon_request_set_limit(cordon_request *req, cordon_limit which, uint64_t value,
			     cordon_error **reterr);
/* Grants one environment variable to every command of the sandbox. The value
 * is never logged or audited. Loader-influencing names (LD_*, ...) are refused. */
int cordon_request_grant_env(cordon_request *req, const char *key, const char *value,
			     cordon_error **reterr);
int cordon_request_set_egress(cordon_request *req, cordon_egress egress, cordon_error **reterr);
int cordon_request_set_image(cordon_request *req, const char *image, cordon_error **reterr);
/* Added in 0.2: who the work is for, in the host's words (an agent's session, a
 * user), recorded in the audit trail beside the host's uid and pid. At most 256
 * printable bytes. Copied. */
int cordon_request_set_caller(cordon_request *req, const char *label, cordon_error **reterr);
/* Added in 0.2: cordon_request_add_mount flags. */
enum { CORDON_MOUNT_RW = 1u << 0 };
/* Added in 0.2: an extra host directory the work sees at the absolute path `inside`,
 * read-only unless flags has CORDON_MOUNT_RW (docs/embedding.md, "Mounts"). Checked here:
 * host_dir absolute; inside absolute, without "." or ".." components, not /, nor under
 * /proc, /sys or /dev; at most 16 mounts, one per inside path. Judged at open as the
 * workspace is: host_dir is opened once with no symbolic link on the way and refused inside
 * the forbidden trees (mount_forbidden); a writable one is refused for untrusted work and
 * under a `workspace: read-only` rule (mount_writable); tiers that cannot mount (the jail,
 * microVMs) are passed over (mount_unsupported). Copied. */
int cordon_request_add_mount(cordon_request *req, const char *host_dir, const char *inside,
			     unsigned flags, cordon_error **reterr);

typedef struct cordon_decision cordon_decision;

/* Decides without opening anything (a dry run). Returns 0 and a decision when
 * admitted; a refusal is -EPERM with a forbidden error AND a decision (when
 * ret_decision is not NULL) so the host can read every candidate's verdict. */
int cordon_decide(cordon_context *ctx, const cordon_request *req, cordon_decision **ret_decision,
		  cordon_error **reterr);
bool cordon_decision_admitted(const cordon_decision *d);
/* NULL when refused. Borrowed. */
const char *cordon_decision_tier(const cordon_decision *d);
cordon_containment cordon_decision_containment(const cordon_decision *d);
cordon_containment cordon_decision_requirement(const cordon_decision *d);
cordon_trust cordon_decision_trust(const cordon_decision *d);
size_t cordon_decision_candidate_count(const cordon_decision *d);
const char *cordon_decision_candidate_tier(const cordon_decision *d, size_t i);
bool cordon_decision_candidate_chosen(const cordon_decision *d, size_t i);
/* Why the candidate was passed over ("unavailable: ...", "container < microvm",
 * "rule untrusted-offline"), or "chosen". Borrowed. */
const char *cordon_decision_candidate_reason(const cordon_decision *d, size_t i);
/* The decision as one JSON object; owned by caller (free()). */
char *cordon_decision_to_json(const cordon_decision *d);
void cordon_decision_free(cordon_decision *d);
/* Structured verdicts (docs/policy.md, "Decisions"): whether the candidate
 * was probed available, the containment it probed at (0 when not probed),
 * the rule that denied it (NULL when none; borrowed). */
bool cordon_decision_candidate_available(const cordon_decision *d, size_t i);
cordon_containment cordon_decision_candidate_containment(const cordon_decision *d, size_t i);
const char *cordon_decision_candidate_rule(const cordon_decision *d, size_t i);
/* The warnings of an admission: each rule in `mode: warn` that would have refused the
 * chosen tier ("rule NAME: why"; borrowed). 0 when refused. Rules in `mode: audit` are
 * only in the audit trail (and cordon_decision_to_json's "rule_hits"). */
size_t cordon_decision_warning_count(const cordon_decision *d);
const char *cordon_decision_warning(const cordon_decision *d, size_t i);
/* The refusal code ("containment_insufficient", "sandbox_denied",
 * "audit_failed"), NULL when admitted. Static string. */
const char *cordon_decision_code(const cordon_decision *d);
/* The limit an admitted request runs under (the request's own value, or the
 * smallest policy cap). Returns false when no limit of that kind applies. */
bool cordon_decision_limit(const cordon_decision *d, cordon_limit which, uint64_t *ret);

/* Added in 0.2: the decision's id, which its audit line and the outcome lines of the
 * runs in a sandbox it opened carry ("id" and "decision"). Borrowed. */
const char *cordon_decision_id(const cordon_decision *d);

/* ---- policy --------------------------------------------------------------- */

/* The YAML text of the built-in default policy. Static string. */
const char *cordon_policy_default_text(void);
/* A human-readable summary of the context's policy (tiers, trust levels,
 * rules, audit, and notes such as tiers whose driver is not loaded). Owned by
 * caller (free()). */
char *cordon_context_policy_summary(const cordon_context *ctx);
/* Added in 0.2: the policy's audit trail (a JSON line per decision and per run), NULL
 * when it keeps none. Borrowed from ctx. */
const char *cordon_context_audit_path(const cordon_context *ctx);

/* ---- sandboxes ------------------------------------------------------------ */

typedef struct cordon_sandbox cordon_sandbox;

/* Decides and opens. *ret_sb is owned by the caller (cordon_sandbox_close).
 * req is borrowed. */
int cordon_sandbox_open(cordon_context *ctx, const cordon_request *req, cordon_sandbox **ret_sb,
			cordon_error **reterr);
/* Ends everything the sandbox started and releases it. Safe on NULL. */
void cordon_sandbox_close(cordon_sandbox *sb);
cordon_containment cordon_sandbox_containment(const cordon_sandbox *sb);
/* Borrowed from sb. */
const char *cordon_sandbox_tier(const cordon_sandbox *sb);
/* Added in 0.2: the sandbox's id, which its runs' audit lines carry. Borrowed. */
const char *cordon_sandbox_id(const cordon_sandbox *sb);
/* Added in 0.3: freezes everything the sandbox runs, where its tier can (the driver's
 * pause: the e2b tier maps it to E2B's pause, which persists the remote sandbox); a run in
 * progress freezes too (its time limit keeps counting). While paused, runs, streams, serves
 * and file operations are refused (terminal "sandbox_paused"); close still ends it. A
 * tier that cannot pause refuses (terminal "unsupported") and the sandbox runs on. Pausing
 * a paused sandbox, or resuming a running one, does nothing. */
int cordon_sandbox_pause(cordon_sandbox *sb, cordon_error **reterr);
int cordon_sandbox_resume(cordon_sandbox *sb, cordon_error **reterr);
/* Added with libcordon interface 3: narrows a sandbox opened with egress governed, from its next
 * connection on, to the destinations both its tier's egress rules and allow
 * (and not deny) permit; rules as the policy's (docs/policy.md, "Egress"),
 * NULL-terminated. allow NULL: the tier's rules alone again (widening back).
 * It never gives more than the tier's rules. Connections already carried go
 * on. Audited ("egress_change"). -EINVAL for a malformed rule, -ENOTSUP for a
 * sandbox without governed egress or a tier that cannot change it. */
int cordon_sandbox_set_egress(cordon_sandbox *sb, const char *const *allow, const char *const *deny,
			      cordon_error **reterr);

/* Run option flags. */
enum {
	/* The sandbox's last run: no run, stream or serve follows it (they are
	 * refused with "sandbox_spent"); file operations and close still work.
	 * A tier may spend the sandbox on it, which makes a one-shot run faster
	 * (the kernel tier's init runs the work itself). Ignored, but still
	 * ending runs, when another run or a server is active. */
	CORDON_RUN_LAST = 1u << 0,
	/* Added in 0.2. The work's stdin, stdout and stderr are one pseudo-terminal, the
	 * controlling terminal of its session (its line discipline turns ^C into SIGINT for
	 * the work, a shell gets job control). stdin_fd's bytes are typed into it; its output,
	 * the work's as the terminal shows it, arrives as stream 1 only, as it is (the host
	 * decides what reaches a real terminal), on a thread of the library's: a stream
	 * callback must not assume the calling thread. Size: tty_rows, tty_cols, tty_resize_fd.
	 * A tier that cannot give one refuses the run (terminal "unsupported"): the local
	 * and the container tiers can. Not with stdin_data, nor for serve. */
	CORDON_RUN_TTY = 1u << 1,
	/* Added in 0.3, for cordon_sandbox_serve only: the served port is reached through a
	 * unix socket, in a directory the library makes (mode 0700, in $XDG_RUNTIME_DIR or
	 * the temporary directory) and removes when the server stops, instead of a 127.0.0.1
	 * port every local process may connect to; cordon_serve_address returns
	 * "unix:/path". A tier that cannot refuses the serve (terminal "unsupported"): the
	 * kernel tier can; the process jail (the work's port is the host's) and the container
	 * tiers cannot. */
	CORDON_RUN_SERVE_UNIX = 1u << 2,
};

/* Options for one run. Zero-initialise with CORDON_RUN_OPTIONS_INIT; fields
 * added later go at the end, and `size` tells the library which exist. */
typedef struct cordon_run_options {
	uint32_t size;
	uint32_t flags;         /* CORDON_RUN_LAST or 0 */
	uint64_t timeout_ms;    /* 0: the tier's wall limit (always finite) */
	const char *const *env; /* NULL-terminated "KEY=VALUE" grants for this run; borrowed */
	const char *workdir;    /* relative to the sandbox root; NULL: the root */
	const void *stdin_data; /* written to the work's stdin, then closed; borrowed */
	size_t stdin_len;
	int cancel_fd; /* readable => cancel; -1 for none */
	uint32_t reserved_;
	uint64_t output_cap; /* bytes per stream kept; 0: the tier's limit (16 MiB default) */
	/* Added in 0.2 (libtool 2:0:2): the work's stdin, streamed from this descriptor until
	 * EOF; -1 for none. Borrowed: read during the call, never closed, never handed to the
	 * sandbox itself (the work reads a pipe the library feeds). Not with stdin_data. On a
	 * tier whose driver cannot stream, it is read whole first (at most 16 MiB). Callers
	 * built before it (a smaller size) get no stdin_fd. */
	int32_t stdin_fd;
	/* Added in 0.2, with CORDON_RUN_TTY: the window size at the start (0: 24 rows, 80
	 * columns), and a descriptor of resize records, each two uint16_t {rows, cols} in host
	 * byte order written at once (a pipe the host's SIGWINCH handler writes to); every
	 * record read resizes the terminal (the work gets SIGWINCH). -1: a fixed size. */
	uint16_t tty_rows, tty_cols;
	int32_t tty_resize_fd;
	uint32_t reserved2_;
} cordon_run_options;

#define CORDON_RUN_OPTIONS_INIT \
	{ \
		sizeof(cordon_run_options), 0, 0, NULL, NULL, NULL, 0, -1, 0, 0, -1, 0, 0, -1, 0 \
	}

typedef struct cordon_result cordon_result;

/* The output streams, as `stream` arguments and callbacks number them (added in 0.2;
 * the numbers were the API before). */
typedef enum cordon_output_stream {
	CORDON_STREAM_COMBINED = 0, /* stdout and stderr interleaved as they arrived */
	CORDON_STREAM_STDOUT = 1,
	CORDON_STREAM_STDERR = 2,
} cordon_output_stream;

/* Exit code; 128+signal when killed by a signal (as a shell reports it). */
int cordon_result_exit_code(const cordon_result *r);
/* The signal that ended the work, 0 when it exited. */
int cordon_result_signal(const cordon_result *r);
bool cordon_result_timed_out(const cordon_result *r);
bool cordon_result_cancelled(const cordon_result *r);
bool cordon_result_oom_killed(const cordon_result *r);
/* stream: 1 stdout, 2 stderr, 0 both interleaved as they arrived. Borrowed;
 * NUL-terminated for convenience, *len excludes the NUL. */
const char *cordon_result_output(const cordon_result *r, int stream, size_t *len);
/* True when the stream (0: either) exceeded its cap and was cut. */
bool cordon_result_truncated(const cordon_result *r, int stream);
void cordon_result_free(cordon_result *r);

/* Runs argv (no shell) to completion. argv is NULL-terminated and borrowed;
 * opts may be NULL. */
int cordon_sandbox_run(cordon_sandbox *sb, const char *const *argv, const cordon_run_options *opts,
		       cordon_result **ret_result, cordon_error **reterr);
/* Runs one shell line through the sandbox's /bin/sh -c. */
int cordon_sandbox_exec(cordon_sandbox *sb, const char *line, const cordon_run_options *opts,
			cordon_result **ret_result, cordon_error **reterr);

/* Called with output as it comes (stream 1 or 2). Return non-zero to cancel. */
typedef int (*cordon_output_fn)(void *user, int stream, const void *data, size_t len);

/* Runs argv delivering output live; returns when the work ends, times out or
 * is cancelled (by cancel_fd or the callback). The result carries status only
 * (no captured output). */
int cordon_sandbox_stream(cordon_sandbox *sb, const char *const *argv,
			  const cordon_run_options *opts, cordon_output_fn fn, void *user,
			  cordon_result **ret_result, cordon_error **reterr);

/* A stream as a handle (added in 0.2), for hosts with an event loop: the run goes on
 * on a library thread and its output waits in the handle (at most 1 MiB: past it the
 * work blocks on its output until the host reads, never lost). *ret is owned by the
 * caller (cordon_stream_free, which cancels a run still going). argv and opts are
 * copied (opts->cancel_fd stays the host's, borrowed until the run ends). */
typedef struct cordon_stream cordon_stream;
int cordon_sandbox_stream_start(cordon_sandbox *sb, const char *const *argv,
				const cordon_run_options *opts, cordon_stream **ret,
				cordon_error **reterr);
/* Readable (poll, epoll, asyncio's add_reader) while output or the end waits to be
 * read; the host never reads or closes it. Borrowed from st. */
int cordon_stream_fd(const cordon_stream *st);
/* Takes the next chunk, at most cap bytes, into buf: returns its length (> 0) and
 * its stream in *ret_stream; 0 at the end (then cordon_stream_result); -EAGAIN when
 * nothing waits yet. Never blocks. */
int cordon_stream_read(cordon_stream *st, void *buf, size_t cap, cordon_output_stream *ret_stream,
		       cordon_error **reterr);
/* Asks the run to stop (the result says cancelled). Idempotent. */
void cordon_stream_cancel(cordon_stream *st);
/* After the end: the run's status (no output), owned by caller; or the error that
 * kept the work from running. -EAGAIN while it is still going. */
int cordon_stream_result(cordon_stream *st, cordon_result **ret_result, cordon_error **reterr);
void cordon_stream_free(cordon_stream *st);

typedef struct cordon_serve cordon_serve;

/* Starts argv in the background. port, when not 0, is the port the server
 * listens on inside the sandbox, to be reachable from the host loopback:
 * then serve returns once the tier reports where it is reached (the kernel
 * tier: once the port accepts connections), and fails with the reason when
 * the tier refuses it, the server ends first, or it takes longer than 30 s
 * (or the run's timeout). *ret is owned by the caller (cordon_serve_free
 * stops it first). */
int cordon_sandbox_serve(cordon_sandbox *sb, const char *const *argv, uint16_t port,
			 const cordon_run_options *opts, cordon_serve **ret, cordon_error **reterr);
/* "127.0.0.1:PORT" on the host, or NULL when no port was asked: on the
 * kernel tier a listener cordon made for this server, never a host port the
 * work chose; in the process jail, which shares the host's network, the
 * work's own port.
 * Owned by caller (free()). */
char *cordon_serve_address(cordon_serve *s);
bool cordon_serve_running(cordon_serve *s);
/* Added in 0.2 (libtool 3:0:3): the server's pid as seen inside its sandbox, what $$ is there
 * (a container's own pid namespace, where a host pid would mean nothing; the kernel tier's
 * run's own; the host's for the jail, which shares it), once its tier reports it; -1 before
 * that, when it ended unseen, and on a tier that reports none. It stays after the server
 * ends. */
int64_t cordon_serve_pid(cordon_serve *s);
/* The retained tail of combined output; owned by caller (free()). */
char *cordon_serve_output(cordon_serve *s);
/* Waits up to timeout_ms (negative: forever) for the server to end. Returns
 * 0 and the result when it ended, -ETIMEDOUT when still running. */
int cordon_serve_wait(cordon_serve *s, int64_t timeout_ms, cordon_result **ret_result,
		      cordon_error **reterr);
/* Added in 0.2: waits up to timeout_ms (negative: forever) until the server is ready:
 * with a port, its address is known and a TCP connection to it is accepted; without
 * one, it has started (the tier's run is under way). Returns 0 when ready, -ETIMEDOUT
 * (transient "still_starting") when not yet, the run's error, or terminal
 * "serve_ended" when it ended first. */
int cordon_serve_wait_ready(cordon_serve *s, int64_t timeout_ms, cordon_error **reterr);
/* Ends the server and everything it started. Idempotent. */
int cordon_serve_stop(cordon_serve *s, cordon_error **reterr);
void cordon_serve_free(cordon_serve *s);

/* File operations. Paths are relative to the sandbox root; anything that
 * would resolve outside it (.., absolute, symlinks out) is refused with
 * forbidden "sandbox_path_escape". */
/* *ret_data is owned by the caller (free()), NUL-terminated past *ret_len. */
int cordon_sandbox_read_file(cordon_sandbox *sb, const char *path, void **ret_data, size_t *ret_len,
			     cordon_error **reterr);
/* Creates parent directories; replaces the file atomically. data borrowed. */
int cordon_sandbox_write_file(cordon_sandbox *sb, const char *path, const void *data, size_t len,
			      cordon_error **reterr);
/* Paths matching a shell pattern (fnmatch, '/' matched literally), sorted,
 * relative to the root. Returns the count; *ret_paths is a NULL-terminated
 * array owned by the caller (cordon_strv_free). */
int cordon_sandbox_glob(cordon_sandbox *sb, const char *pattern, char ***ret_paths,
			cordon_error **reterr);
/* Regular files under dir ("" or "." for the root), sorted, relative to the
 * sandbox root. Symlinks are listed as nothing and never followed. */
int cordon_sandbox_walk(cordon_sandbox *sb, const char *dir, char ***ret_paths,
			cordon_error **reterr);
void cordon_strv_free(char **strv);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* CORDON_CORDON_H */
