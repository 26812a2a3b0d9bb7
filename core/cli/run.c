/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon run | exec: the request, the environment it grants, cordon's
 * termination signals, and the work's output.
 *
 * Signals: SIGTERM, SIGINT and SIGHUP cancel the run through its cancel_fd
 * (a self-pipe), so that the tier kills the work and the sandbox's close
 * removes what it made (control groups, private root) before cordon exits
 * with 128+sig. A second signal is not caught (SA_RESETHAND): cordon dies of
 * it, and the tier's own lifeline (the jail's supervisor, the kernel tier's
 * init) still kills the work. A signal ignored when cordon starts (nohup, a
 * background job) stays ignored.
 *
 * -t (and `cordon shell`): the work gets a terminal of the sandbox's own (the library's
 * pseudo-terminal), our terminal goes raw for the run (tty.c: restored on every exit path),
 * and the work's output reaches it as it is: a terminal's bytes are the terminal's to
 * interpret, as with ssh -t or docker run -t. cordon's own messages stay escaped.
 */
#include "config.h"

#include "cli.h"
#include "units.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The largest --env-file read. */
#define ENV_FILE_MAX (1u << 20)

/* What follows the options: an argv (run), one shell line (exec), or an optional argv
 * (shell: /bin/sh by default, always with a terminal). */
typedef enum run_mode { RUN_ARGV, RUN_LINE, RUN_SHELL } run_mode;

typedef struct run_args {
	char *trust, *tier, *timeout, *workdir, *policy, *plugin_dir, *workspace, *env_file;
	char **env;
	gboolean json, raw, tty;
	cli_request_fields fields;
} run_args;

static void run_args_clear(run_args *a)
{
	g_free(a->trust);
	g_free(a->tier);
	g_free(a->timeout);
	g_free(a->workdir);
	g_free(a->policy);
	g_free(a->plugin_dir);
	g_free(a->workspace);
	g_free(a->env_file);
	g_strfreev(a->env);
	cli_request_fields_clear(&a->fields);
}

/* ---- the environment ----------------------------------------------------------- */

/* -e NAME takes the value from cordon's environment; -e NAME=VALUE (which any
 * user can read in /proc/PID/cmdline) is still accepted, with a warning. */
static int grant_env_flag(cordon_request *req, const char *arg)
{
	cordon_error *err = NULL;
	const char *eq = strchr(arg, '=');
	g_autofree char *key = eq ? g_strndup(arg, eq - arg) : g_strdup(arg);
	const char *value = eq ? eq + 1 : g_getenv(key);
	if (!value)
		return cli_usage_error("-e %s: %s is not set in cordon's environment", key, key);
	if (eq && *value)
		fprintf(stderr,
			"cordon: warning: the value of %s is on cordon's command line, "
			"readable by every user of this host: export it and pass -e %s, "
			"or use --env-file\n",
			key, key);
	return cordon_request_grant_env(req, key, value, &err) < 0 ? cli_report(err) : 0;
}

/* The file may hold secrets, and its lines decide the work's environment:
 * it must be the caller's (or root's), neither readable by others nor
 * writable by anyone else. A pipe (--env-file <(...)) is accepted. */
static int env_file_check(const char *path, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return cli_usage_error("--env-file %s: %s", path, g_strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
		return cli_usage_error("--env-file %s: not a regular file", path);
	if (S_ISREG(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0)
		return cli_refuse("--env-file %s: owned by uid %u, not by you or root", path,
				  (unsigned)st.st_uid);
	if (S_ISREG(st.st_mode) && (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)))
		return cli_refuse("--env-file %s: mode %04o lets other users read or write it "
				  "(chmod o-rw,g-w)",
				  path, (unsigned)(st.st_mode & 07777));
	return 0;
}

/* The names of a descriptor the caller already holds (a pipe, <(...)): the only links
 * --env-file follows. */
static bool names_a_descriptor(const char *path)
{
	return strcmp(path, "/dev/stdin") == 0 || g_str_has_prefix(path, "/dev/fd/") ||
	       g_str_has_prefix(path, "/proc/self/fd/");
}

static int read_env_file(const char *path, GString *buf)
{
	/* A link elsewhere could lead root to a file it would not name itself. */
	int nofollow = names_a_descriptor(path) ? 0 : O_NOFOLLOW;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | nofollow);
	if (fd < 0 && errno == ELOOP)
		return cli_refuse("--env-file %s: a symbolic link (name the file itself)", path);
	if (fd < 0)
		return cli_usage_error("--env-file %s: %s", path, g_strerror(errno));
	int r = env_file_check(path, fd);
	char chunk[4096];
	ssize_t n = 0;
	while (r == 0 && (n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = cli_usage_error("--env-file %s: %s", path, g_strerror(errno));
		else if (buf->len + (size_t)n > ENV_FILE_MAX)
			r = cli_usage_error("--env-file %s: larger than %u bytes", path,
					    ENV_FILE_MAX);
		else
			g_string_append_len(buf, chunk, n);
	}
	explicit_bzero(chunk, sizeof(chunk));
	close(fd);
	return r;
}

/* One NAME=VALUE per line; blank lines and lines starting with '#' are
 * skipped; the value is the rest of the line, verbatim (no quotes, no
 * escapes, no expansion). */
static int grant_env_line(cordon_request *req, const char *path, unsigned lineno, char *line)
{
	const char *p = line + strspn(line, " \t");
	if (!*p || *p == '#')
		return 0;
	char *eq = strchr(line, '=');
	if (!eq)
		return cli_usage_error("--env-file %s:%u: expected NAME=VALUE", path, lineno);
	*eq = '\0';
	cordon_error *err = NULL;
	if (cordon_request_grant_env(req, line, eq + 1, &err) < 0) {
		fprintf(stderr, "cordon: --env-file %s:%u:\n", path, lineno);
		return cli_report(err);
	}
	return 0;
}

static int grant_env_file(cordon_request *req, const char *path)
{
	GString *buf = g_string_new(NULL);
	int r = read_env_file(path, buf);
	char *line = buf->str;
	for (unsigned lineno = 1; r == 0 && line && *line; lineno++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		r = grant_env_line(req, path, lineno, line);
		line = nl ? nl + 1 : NULL;
	}
	/* A GString's str is never NULL (the analyzer cannot see into GLib). */
	// NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker)
	explicit_bzero(buf->str, buf->allocated_len);
	g_string_free(buf, TRUE);
	return r;
}

/* The file first, then -e: the command line has the last word. */
static int grant_env(cordon_request *req, const run_args *a)
{
	int r = a->env_file ? grant_env_file(req, a->env_file) : 0;
	for (size_t i = 0; r == 0 && a->env && a->env[i]; i++)
		r = grant_env_flag(req, a->env[i]);
	return r;
}

/* ---- termination signals ---------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;
static int stop_pipe[2] = { -1, -1 };

static void on_stop(int sig)
{
	int e = errno;
	cli_tty_restore(); /* a second signal kills us: the terminal is sane again first */
	if (!stop_signal)
		stop_signal = sig;
	if (write(stop_pipe[1], "", 1) < 0) {
		/* full: a stop is pending already */
	}
	errno = e;
}

/* Returns the descriptor that becomes readable on a stop, or -1. */
static int stop_signals_install(void)
{
	if (stop_pipe[0] < 0 && pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < G_N_ELEMENTS(sigs); i++) {
		struct sigaction old, sa = { .sa_handler = on_stop, .sa_flags = SA_RESETHAND };
		sigemptyset(&sa.sa_mask);
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
	return stop_pipe[0];
}

/* ---- a reader that goes away ------------------------------------------------------ */

/* The run's cancel_fd: readable on a stop signal, or once the reader of our
 * stdout or stderr is gone (a pipe's write end reports EPOLLERR, a socket's
 * EPOLLHUP), even while the work prints nothing: an epoll set is readable
 * when one of its members has an event. A regular file cannot be watched
 * (EPERM) and needs not be. */
static int cancel_fd_make(int stop_fd)
{
	int ep = stop_fd >= 0 ? epoll_create1(EPOLL_CLOEXEC) : -1;
	struct epoll_event in = { .events = EPOLLIN }, hup_only = { .events = 0 };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &in) < 0) {
		if (ep >= 0)
			close(ep);
		return stop_fd;
	}
	for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++)
		if (!cli_stdio_closed[fd] && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &hup_only) < 0) {
			/* a file or /dev/null: no reader to lose */
		}
	return ep;
}

static bool output_reader_gone(void)
{
	struct pollfd pfd[2] = { { .fd = STDOUT_FILENO }, { .fd = STDERR_FILENO } };
	return poll(pfd, 2, 0) > 0 && ((pfd[0].revents | pfd[1].revents) & (POLLERR | POLLHUP));
}

/* ---- the run ------------------------------------------------------------------------ */

typedef struct passthrough {
	cli_out out[3]; /* [1] stdout, [2] stderr */
	bool reader_gone;
} passthrough;

/* A non-zero return cancels the run: the output has nowhere to go, or a
 * stop signal came (perhaps while a write was blocked on a slow reader). */
static int on_output(void *user, int stream, const void *data, size_t len)
{
	passthrough *pt = user;
	if (stream != 1 && stream != 2)
		return 0;
	bool written = cli_out_write(&pt->out[stream], data, len);
	pt->reader_gone |= pt->out[stream].gone;
	return !written || stop_signal;
}

static int run_passthrough(cordon_sandbox *sb, const char *const *argv, const cordon_run_options *o,
			   bool raw)
{
	passthrough pt = { .reader_gone = false };
	bool tty = o->flags & CORDON_RUN_TTY;
	cli_out_init(&pt.out[1], STDOUT_FILENO, raw || tty, &stop_signal);
	cli_out_init(&pt.out[2], STDERR_FILENO, raw, &stop_signal);
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	if (tty && !cli_stdio_closed[STDIN_FILENO] && cli_tty_raw(STDIN_FILENO) < 0)
		fprintf(stderr, "cordon: warning: cannot put the terminal in raw mode\n");
	int r = cordon_sandbox_stream(sb, argv, o, on_output, &pt, &res, &err);
	cli_tty_restore();
	cli_out_flush(&pt.out[1]);
	cli_out_flush(&pt.out[2]);
	if (r < 0)
		return cli_report(err);
	pt.reader_gone |= output_reader_gone();
	/* Like a program whose reader went away: it would have died of SIGPIPE. */
	r = pt.reader_gone ? 128 + SIGPIPE : cli_work_status(res, !stop_signal);
	if (!pt.reader_gone && !stop_signal)
		cli_report_run(res);
	cordon_result_free(res);
	return r;
}

static int run_json(cordon_sandbox *sb, const char *const *argv, const cordon_run_options *o)
{
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_run(sb, argv, o, &res, &err) < 0)
		return cli_report(err);
	int r = 128 + SIGPIPE;
	if (!output_reader_gone())
		r = cli_print_json(res, cordon_sandbox_tier(sb), cordon_sandbox_containment(sb));
	cordon_result_free(res);
	return r;
}

/* Whether fd is /dev/null: nothing to stream (EOF at once either way), and a run without a
 * streamed stdin keeps a container tier's session channel (no engine call). */
static bool is_dev_null(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

/* The work's stdin: ours, streamed as it comes through a pipe of the library's (the work
 * never holds our descriptor: a terminal, a file). None when ours was closed at the start
 * or is /dev/null, or is a terminal we run in the background of (`cordon run ... &`):
 * reading it would stop us with SIGTTIN, as it stops `cat &`, though the work may never
 * want input. */
static int stdin_for_work(void)
{
	if (cli_stdio_closed[STDIN_FILENO] || is_dev_null(STDIN_FILENO))
		return -1;
	if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) != getpgrp())
		return -1;
	return STDIN_FILENO;
}

/* With --json a refusal carries the decision, every candidate's verdict: decided again
 * (as explain does, audited as a dry run) since a failed open returns none. */
static int report_open_failure(cordon_context *ctx, const cordon_request *req, cordon_error *err)
{
	if (!cli_json || cordon_error_get_class(err) != CORDON_ERROR_FORBIDDEN)
		return cli_report(err);
	cordon_decision *d = NULL;
	cordon_decide(ctx, req, &d, NULL);
	char *dj = d ? cordon_decision_to_json(d) : NULL;
	int r = cli_report_decision(err, dj);
	free(dj);
	cordon_decision_free(d);
	return r;
}

static int run_in_sandbox(cordon_context *ctx, cordon_request *req, const run_args *a,
			  const char *const *argv, uint64_t timeout_ms, int cancel_fd)
{
	cordon_error *err = NULL;
	cordon_sandbox *sb = NULL;
	if (stop_signal)
		return 0;
	if (a->json && cli_stdio_closed[STDOUT_FILENO]) {
		fprintf(stderr, "cordon: stdout is closed: --json has nowhere to go\n");
		return 128 + SIGPIPE;
	}
	if (cordon_sandbox_open(ctx, req, &sb, &err) < 0)
		return report_open_failure(ctx, req, err);
	/* From here on, work runs, possibly as the same user: it must not attach
	 * to us (a traced cordon enforces no timeout). Not before: the kernel
	 * tier's open writes the id maps of children that share our memory,
	 * which an unprivileged host can only do while it is dumpable. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.flags = CORDON_RUN_LAST; /* one run, then close: the tier may spend the sandbox on it */
	o.timeout_ms = timeout_ms;
	o.workdir = a->workdir;
	o.cancel_fd = cancel_fd_make(cancel_fd);
	o.stdin_fd = stdin_for_work();
	if (a->tty) {
		o.flags |= CORDON_RUN_TTY;
		o.tty_resize_fd = cli_tty_size_start(&o.tty_rows, &o.tty_cols);
	}
	int r = 0;
	if (!stop_signal)
		r = a->json ? run_json(sb, argv, &o) : run_passthrough(sb, argv, &o, a->raw);
	if (o.cancel_fd != cancel_fd)
		close(o.cancel_fd);
	cordon_sandbox_close(sb);
	return r;
}

static int parse_run(int *argc, char ***argv, run_mode mode, run_args *a)
{
	GOptionEntry entries[] = {
		{ "trust", 0, 0, G_OPTION_ARG_STRING, &a->trust,
		  "Trust level: trusted, semi-trusted (default), untrusted", "T" },
		{ "tty", 't', 0, G_OPTION_ARG_NONE, &a->tty,
		  "Give the work a terminal (the sandbox's own pseudo-terminal; this terminal goes "
		  "raw for the run)",
		  NULL },
		{ "tier", 0, 0, G_OPTION_ARG_STRING, &a->tier, "Ask for this tier by name",
		  "NAME" },
		{ "timeout", 0, 0, G_OPTION_ARG_STRING, &a->timeout,
		  "Wall time limit (30s, 10m, 500ms)", "D" },
		{ "env", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &a->env,
		  "Grant variable NAME with its value in cordon's environment (NAME=VALUE works "
		  "but shows the value to every user)",
		  "NAME" },
		{ "env-file", 0, 0, G_OPTION_ARG_FILENAME, &a->env_file,
		  "Grant the NAME=VALUE lines of FILE (yours, not readable by others; # comments, "
		  "no quoting or expansion)",
		  "FILE" },
		{ "workdir", 'w', 0, G_OPTION_ARG_STRING, &a->workdir,
		  "Working directory inside the sandbox", "DIR" },
		{ "workspace", 0, 0, G_OPTION_ARG_FILENAME, &a->workspace,
		  "Host directory the work may write (absolute)", "DIR" },
		{ "policy", 'p', 0, G_OPTION_ARG_FILENAME, &a->policy, "Policy file", "FILE" },
		{ "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &a->plugin_dir,
		  "Plugin directory (absolute)", "DIR" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &a->json,
		  "Print the result as JSON instead of passing output through", NULL },
		{ "raw", 0, 0, G_OPTION_ARG_NONE, &a->raw,
		  "Pass control characters to a terminal as they are (by default they are shown as "
		  "\\xNN)",
		  NULL },
		{ NULL }
	};
	const char *usage = mode == RUN_LINE ? "'SHELL LINE' - run a shell line in a sandbox"
			    : mode == RUN_SHELL
				    ? "[-- PROGRAM ARGS...] - an interactive shell (/bin/sh) "
				      "on a terminal in a sandbox"
				    : "-- ARGV... - run a program (no shell) in a sandbox";
	g_autoptr(GOptionContext) oc = g_option_context_new(usage);
	g_option_context_add_main_entries(oc, entries, NULL);
	g_autofree GOptionEntry *fields = cli_request_fields_entries(&a->fields);
	g_option_context_add_main_entries(oc, fields, NULL);
	g_option_context_set_strict_posix(oc, TRUE);
	g_autoptr(GError) gerr = NULL;
	if (!g_option_context_parse(oc, argc, argv, &gerr))
		return cli_usage_error("%s", gerr->message);
	if (mode == RUN_SHELL)
		a->tty = TRUE;
	if (a->tty && a->json)
		return cli_usage_error("--tty and --json do not go together: a terminal's output "
				       "is one stream, for a terminal");
	return 0;
}

static bool is_trust_name(const char *s)
{
	return strcmp(s, "trusted") == 0 || strcmp(s, "semi-trusted") == 0 ||
	       strcmp(s, "untrusted") == 0;
}

/* What follows the options: argv[*ret_first] on (run) or the one shell line
 * there (exec); and the timeout. Returns 0 or an exit code. */
static int parse_command(int argc, char **argv, run_mode mode, const run_args *a, int *ret_first,
			 uint64_t *ret_timeout_ms)
{
	int first = 1;
	/* `-t trusted --`: -t was --trust before 0.2; now it is --tty, and "trusted" would
	 * be run as the program. */
	if (a->tty && first + 1 < argc && is_trust_name(argv[first]) &&
	    strcmp(argv[first + 1], "--") == 0)
		return cli_usage_error("-t is --tty; the trust level is --trust %s", argv[first]);
	if (first < argc && strcmp(argv[first], "--") == 0)
		first++;
	if (first >= argc && mode != RUN_SHELL)
		return cli_usage_error(mode == RUN_LINE ? "a shell line is required"
							: "a command is required after --");
	if (mode == RUN_LINE && argc - first != 1)
		return cli_usage_error("exec takes exactly one shell line (quote it)");
	const char *why = NULL;
	if (a->timeout && units_parse_duration(a->timeout, ret_timeout_ms, &why) == 0 &&
	    *ret_timeout_ms == 0)
		why = "a timeout must be greater than 0";
	if (why)
		return cli_usage_error("bad --timeout '%s': %s", a->timeout, why);
	*ret_first = first;
	return 0;
}

static int make_request(const run_args *a, cordon_request **ret)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new(a->trust ? a->trust : "semi-trusted");
	if (a->trust && cordon_trust_from_string(a->trust) == CORDON_TRUST_UNTRUSTED &&
	    strcmp(a->trust, "untrusted") != 0)
		fprintf(stderr, "cordon: unknown trust '%s': treated as untrusted\n", a->trust);
	int r = 0;
	if (a->tier && cordon_request_set_tier(req, a->tier, &err) < 0)
		r = cli_report(err);
	if (r == 0 && a->workspace && cordon_request_set_workspace(req, a->workspace, &err) < 0)
		r = cli_report(err);
	if (r == 0 && (r = cli_request_fields_apply(&a->fields, req, &err)) < 0)
		r = cli_report(err);
	if (r == 0)
		r = grant_env(req, a);
	if (r == 0)
		*ret = req;
	else
		cordon_request_free(req);
	return r;
}

static int run_work(int argc, char **argv, run_mode mode)
{
	run_args a = { NULL };
	int first = 0;
	uint64_t timeout_ms = 0;
	int r = parse_run(&argc, &argv, mode, &a);
	if (r == 0)
		r = parse_command(argc, argv, mode, &a, &first, &timeout_ms);
	/* Before the context: a signal during plugin loading or the probe still
	 * ends in an orderly exit. */
	int cancel_fd = r == 0 ? stop_signals_install() : -1;
	cordon_context *ctx = NULL;
	cordon_request *req = NULL;
	if (r == 0)
		r = cli_open_context(a.policy, a.plugin_dir, false, &ctx);
	if (r == 0)
		r = make_request(&a, &req);
	if (r == 0) {
		const char *line[] = { "/bin/sh", "-c", argv[first], NULL };
		const char *sh[] = { "/bin/sh", NULL };
		const char *const *work = mode == RUN_LINE ? line
					  : first < argc   ? (const char *const *)argv + first
							   : sh;
		r = run_in_sandbox(ctx, req, &a, work, timeout_ms, cancel_fd);
	}
	cordon_request_free(req);
	cordon_context_free(ctx);
	run_args_clear(&a);
	return stop_signal ? 128 + stop_signal : r;
}

int cli_cmd_run(int argc, char **argv) { return run_work(argc, argv, RUN_ARGV); }
int cli_cmd_exec(int argc, char **argv) { return run_work(argc, argv, RUN_LINE); }
int cli_cmd_shell(int argc, char **argv) { return run_work(argc, argv, RUN_SHELL); }
