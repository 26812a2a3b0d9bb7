/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A sandbox is a session container. `open` starts one container per sandbox, attached
 * (`run -i --rm`), whose pid 1 is cordon-agent in session mode (agent/): runs go to it as
 * request frames on the attached CLI's stdin, so a run costs no engine call at all, and
 * `close` is END and EOF on that stdin (the agent exits, the CLI removes the container).
 * Pooled containers are started the same way, ahead, with their CLIs kept by the pool. File
 * operations take the channel too. Runs and file operations that come while the channel is
 * busy (or is gone, or whose data is too large for it) go through `engine exec` of the
 * agent. The protocol itself (frames, requests, answers, the poll loop of one exchange) is
 * agent/client.c's; starting and ending containers is start.c's: this file opens sandboxes
 * and hands the client the CLI's pipes.
 */
#include "config.h"

#include "driver.h"
#include "proc.h"
#include "client.h"
#include "ttypeer.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Engine latency allowed on top of a run's own timeout before the host side
 * gives up on the CLI (the agent has killed the work by then). */
#define RUN_GRACE_MS 20000
#define DEFAULT_OUTPUT_CAP (16ull << 20)
#define CHAN_STDIN_MAX (8ull << 20)
/* ... and at most this share of the container's memory limit, which it is
 * charged to while it waits (the tier's limit may be as low as 6 MiB). */
#define CHAN_STDIN_MEMORY_SHARE 8

int oci_fail(cordon_plugin_error *err, const oci_refusal *r)
{
	return oci_host->error_set(err, r->errnum, r->cls, r->code, "%s", r->message);
}

/* ---- open / close ----------------------------------------------------------------- */

int oci_op_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		cordon_plugin_error *err)
{
	oci_tier *t = tier;
	oci_refusal r;
	oci_start st;
	oci_start_for_open(t, spec, &st);
	char *engine = oci_tier_engine(t, &r);
	if (!engine)
		return oci_fail(err, &r);
	oci_sandbox *sb = xmalloc0(sizeof(*sb));
	sb->tier = t;
	sb->engine = engine;
	sb->pidfd = -1;
	sb->chan = (oci_proc){ .pid = -1, .in = -1, .out = -1, .err = -1 };
	sb->oom.ev = -1;
	pthread_mutex_init(&sb->chan_lock, NULL);
	if (oci_pool_take(t, engine, &st, sb->name, sizeof(sb->name), &sb->pidfd, &sb->chan)) {
		sb->chan_open = sb->chan.pid > 0;
	} else {
		int ret = oci_session_start(sb, &st, &r);
		if (ret < 0) {
			pthread_mutex_destroy(&sb->chan_lock);
			free(sb->engine);
			free(sb);
			return oci_fail(err, &r);
		}
	}
	uint64_t cap = (st.limits.set & (1u << CORDON_PLUGIN_LIMIT_OUTPUT))
			       ? st.limits.value[CORDON_PLUGIN_LIMIT_OUTPUT]
			       : DEFAULT_OUTPUT_CAP;
	/* one byte more than the core keeps, so the core sees the cut and reports it */
	sb->out_cap = cap + 1;
	uint64_t share = (st.limits.set & (1u << CORDON_PLUGIN_LIMIT_MEMORY))
				 ? st.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] /
					   CHAN_STDIN_MEMORY_SHARE
				 : CHAN_STDIN_MAX;
	sb->chan_data_max = share < CHAN_STDIN_MAX ? share : CHAN_STDIN_MAX;
	sb->published = st.egress == CORDON_PLUGIN_EGRESS_GOVERNED && t->network ? t->publish : 0;
	if (oci_runtime_is_gvisor(t->runtime))
		oci_oom_watch_start(t, engine, sb->name, sb->cid, &sb->oom);
	*ret_sandbox = sb;
	return 0;
}

void oci_op_close(void *sandbox)
{
	oci_sandbox *sb = sandbox;
	if (!sb)
		return;
	pthread_mutex_lock(&sb->chan_lock);
	bool ended = sb->chan_open && oci_chan_close(sb->tier, sb->name, &sb->chan);
	sb->chan_open = false;
	pthread_mutex_unlock(&sb->chan_lock);
	/* A session the CLI ended cleanly is removed: nothing to sweep. Only one that did not
	 * (oci_container_end's kill, left to --rm) is listed for the sweep at tier free. */
	if (ended) {
		if (sb->pidfd >= 0)
			close(sb->pidfd);
	} else {
		oci_container_end(sb->tier, sb->engine, sb->name, sb->pidfd);
	}
	oci_relay_remove(sb->tier, sb->name);
	oci_oom_watch_clear(&sb->oom);
	pthread_mutex_destroy(&sb->chan_lock);
	free(sb->engine);
	free(sb);
}

/* ---- run ------------------------------------------------------------------------------ */

/* One request to the agent and what came of it: the exchange (agent/client.h) and what the
 * plugin adds to it (the core's sink, the published port). */
typedef struct run_state {
	oci_sandbox *sb;
	oci_proc *proc;
	agent_exchange x;
	agent_sink k;
	const cordon_plugin_run_sink *sink;
	uint16_t port; /* serve: the published container port */
	int in_src;    /* a one-shot run's streamed stdin (spec->stdin_fd), or -1 */
	int tty_fd;    /* a terminal run's host end (spec->tty_fd), or -1 */
} run_state;

/* serve: where the published port is reachable on the host's loopback */
static void report_address(run_state *s)
{
	if (!s->sink || !s->sink->address)
		return;
	char port[32];
	snprintf(port, sizeof(port), "%u/tcp", s->port);
	const char *args[] = { "port", s->sb->name, port, NULL };
	oci_cli_result res;
	int r = oci_cli(s->sb->tier, s->sb->engine, args, NULL, 0, 0, 4096, &res);
	char line[128];
	oci_first_line(res.out, line, sizeof(line));
	/* only ever a loopback address: the publish flag binds 127.0.0.1 */
	if (r == 0 && res.exit_code == 0 && strncmp(line, "127.0.0.1:", 10) == 0)
		s->sink->address(s->sink->ctx, line);
	oci_cli_result_clear(&res);
}

static void on_hello(void *ctx, long agent_pid)
{
	(void)agent_pid;
	run_state *s = ctx;
	if (s->port)
		report_address(s);
}

/* The work's pid in the container, for a 1.4 core's serve handle. */
static void on_started(void *ctx, long pid)
{
	run_state *s = ctx;
	if (s->sink &&
	    s->sink->size >= offsetof(cordon_plugin_run_sink, started) + sizeof(s->sink->started) &&
	    s->sink->started)
		s->sink->started(s->sink->ctx, pid);
}

static void on_output(void *ctx, int stream, const char *data, size_t len)
{
	run_state *s = ctx;
	if (s->sink && s->sink->output)
		s->sink->output(s->sink->ctx, stream, data, len);
}

static void run_state_init(run_state *s, oci_sandbox *sb, agent_answer_kind kind)
{
	memset(s, 0, sizeof(*s));
	s->sb = sb;
	s->in_src = -1;
	s->tty_fd = -1;
	s->x.kind = kind;
	s->k = (agent_sink){
		.ctx = s, .hello = on_hello, .started = on_started, .output = on_output
	};
	s->x.sink = &s->k;
}

/* Asks a one-shot run's agent to kill its work (a second exec: killing the CLI would
 * leave the work running inside the container). */
static void cancel_by_exec(void *ctx, long agent_pid)
{
	run_state *s = ctx;
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", agent_pid);
	const char *args[] = { "exec", s->sb->name, AGENT_PATH, "kill", pid, NULL };
	oci_cli_result res;
	oci_cli(s->sb->tier, s->sb->engine, args, NULL, 0, OCI_KILL_TIMEOUT_MS, 4096, &res);
	oci_cli_result_clear(&res);
}

static void kill_cli(void *ctx)
{
	run_state *s = ctx;
	oci_proc_kill(s->proc);
}

/* The exchange of one request over the CLI p (the session's, or a one-shot exec's, which
 * then copies s->in_src, when >= 0, after the request: a streamed stdin; a session's terminal
 * run relays s->tty_fd). */
static int exchange(run_state *s, oci_proc *p, bool session, uint64_t limit_ms, int cancel_fd,
		    const char *in, size_t in_len, bool *ret_deadline)
{
	s->proc = p;
	agent_link link = { .in = &p->in,
			    .out = p->out,
			    .err = p->err,
			    .session = session,
			    .stream_in = !session && s->in_src >= 0,
			    .in_src = s->in_src,
			    .ctx = s,
			    .cancel = cancel_by_exec,
			    .kill = kill_cli,
			    .tty = session && s->tty_fd >= 0,
			    .tty_fd = s->tty_fd };
	return agent_exchange_run(&s->x, &link, limit_ms, cancel_fd, in, in_len, ret_deadline);
}

/* Runs `engine exec [-i] NAME AGENT args...` to completion. in == NULL: no stdin at all.
 * Returns the CLI's exit code, or a negative errno when it could not be started. */
static int exec_agent(run_state *s, const char *const *args, const char *in, size_t in_len,
		      uint64_t timeout_ms, int cancel_fd, bool *ret_deadline, int *ret_loop)
{
	oci_sandbox *sb = s->sb;
	oci_strv a = { 0 };
	oci_strv_add(&a, "exec");
	if (in)
		oci_strv_add(&a, "-i");
	oci_strv_add(&a, sb->name);
	oci_strv_add(&a, AGENT_PATH);
	for (size_t i = 0; args[i]; i++)
		oci_strv_add(&a, args[i]);
	char **sub = oci_strv_steal(&a);
	char **argv = oci_engine_argv(sb->tier, sb->engine, (const char *const *)sub);
	xstrv_free(sub);
	char **env = oci_engine_env();
	oci_proc p;
	int r = oci_proc_spawn((const char *const *)argv, (const char *const *)env, -1, &p);
	xstrv_free(argv);
	xstrv_free(env);
	if (r < 0)
		return r;
	*ret_loop = exchange(s, &p, false, timeout_ms + RUN_GRACE_MS, cancel_fd, in, in_len,
			     ret_deadline);
	return oci_proc_wait(&p);
}

static bool container_oom_killed(const oci_sandbox *sb)
{
	const char *args[] = { "inspect", "--format", "{{.State.OOMKilled}}", "--", sb->name, NULL };
	oci_cli_result res;
	int r = oci_cli(sb->tier, sb->engine, args, NULL, 0, 0, 4096, &res);
	bool oom = r == 0 && res.exit_code == 0 && res.out && strncmp(res.out, "true", 4) == 0;
	oci_cli_result_clear(&res);
	return oom;
}

/* Neither a status nor a result came back: say why. */
static int exec_failure(run_state *s, int exit_code, cordon_plugin_run_status *ret,
			cordon_plugin_error *err)
{
	oci_sandbox *sb = s->sb;
	if (s->x.have_error)
		return oci_fail(err, &s->x.error);
	oci_cli_result res = { .err = s->x.diag, .exit_code = exit_code };
	oci_refusal r;
	if (sb->tier->kind->daemon && oci_output_says_daemon_down(s->x.diag)) {
		oci_health_note(sb->tier, false);
		oci_cli_failure(sb->tier, "exec", &res, &r);
		return oci_fail(err, &r);
	}
	/* a container-wide OOM kill (gVisor's sandbox, pid 1) takes the session
	 * with it; the engine may have removed the container by now (--rm) */
	if (ret && (oci_oom_watch_fired(&sb->oom) || container_oom_killed(sb))) {
		ret->flags = CORDON_PLUGIN_RUNSTATUS_SIGNALED | CORDON_PLUGIN_RUNSTATUS_OOM;
		ret->signal = 9;
		return 0;
	}
	char line[300];
	oci_first_line(s->x.diag, line, sizeof(line));
	if (oci_output_says_no_container(s->x.diag) || !line[0])
		return oci_host->error_set(err, ESRCH, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(container_gone),
					   "the session container %s is gone (removed or killed "
					   "from outside)%s%s",
					   sb->name, line[0] ? ": " : "", line);
	return oci_host->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed),
				   "%s exec failed (exit %d): %s", sb->tier->kind->name, exit_code,
				   line);
}

static void fill_status(const run_state *s, cordon_plugin_run_status *ret)
{
	const agent_status *st = &s->x.status;
	ret->flags = 0;
	if (st->exited) {
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_EXITED;
		ret->exit_code = st->code;
	} else {
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_SIGNALED;
		ret->signal = st->code;
	}
	if (st->timed_out)
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_TIMED_OUT;
	if (st->cancelled)
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_CANCELLED;
	if (st->oom)
		ret->flags |= CORDON_PLUGIN_RUNSTATUS_OOM;
}

static int finish_run(run_state *s, int code, bool deadline, int loop,
		      cordon_plugin_run_status *ret, cordon_plugin_error *err);

/* ---- the session channel ------------------------------------------------------------ */

/* The CLI ends when its container does (killed from outside, a daemon that
 * stopped); between requests nothing comes on its stdout. Its stderr may
 * carry an engine's warnings (dropped) until it ends. */
static bool chan_idle_ok(const oci_sandbox *sb)
{
	for (;;) {
		struct pollfd p[2] = { { sb->chan.out, POLLIN, 0 }, { sb->chan.err, POLLIN, 0 } };
		int n = poll(p, 2, 0);
		if (n == 0)
			return true;
		if (n < 0 || p[0].revents)
			return false;
		char buf[4096];
		ssize_t r = read(sb->chan.err, buf, sizeof(buf));
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return false;
	}
}

/* Whether a request with in_len bytes of stdin may take the channel: it is
 * open and idle (one found broken is dropped), and the data, which waits in
 * the container's memory until the work starts, is small (chan_data_max: a
 * larger one streams through exec instead). */
static bool chan_usable(oci_sandbox *sb, uint64_t in_len)
{
	if (!sb->chan_open || in_len > sb->chan_data_max)
		return false;
	if (!chan_idle_ok(sb)) {
		oci_chan_drop(sb);
		return false;
	}
	return true;
}

/* A run over the session channel. False when it did not reach the agent (channel busy,
 * gone, or the request too large): the caller runs it through `engine exec`, which also
 * says why a container is gone. */
static bool chan_run(oci_sandbox *sb, const cordon_plugin_run_spec *spec, uint16_t port,
		     const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		     cordon_plugin_error *err, int *ret_rc)
{
	if (!chan_usable(sb, spec->stdin_len))
		return false;
	size_t len;
	uint16_t rows = 0, cols = 0;
	bool tty = spec->tty_fd >= 0 && tty_peer_prepare(spec->tty_fd, &rows, &cols) == 0;
	char *req = tty ? agent_tty_run_request(spec->argv, spec->envp, spec->timeout_ms,
						sb->out_cap, spec->workdir, rows, cols, &len)
		    : spec->tty_fd >= 0
			    ? NULL
			    : agent_run_request(spec->argv, spec->envp, spec->timeout_ms,
						sb->out_cap, spec->workdir, spec->stdin_data,
						(size_t)spec->stdin_len, &len);
	if (!req)
		return false;
	run_state s;
	run_state_init(&s, sb, AGENT_ANSWER_RUN);
	s.sink = sink;
	s.port = port;
	s.tty_fd = tty ? spec->tty_fd : -1;
	bool deadline = false;
	int loop = exchange(&s, &sb->chan, true, spec->timeout_ms + RUN_GRACE_MS, spec->cancel_fd,
			    req, len, &deadline);
	explicit_bzero(req, len); /* granted secrets */
	free(req);
	if (s.x.done && loop == 0) {
		*ret_rc = finish_run(&s, -1, false, 0, ret, err);
		return true;
	}
	/* the channel failed: the CLI ended, hangs, or the stream is malformed */
	if (deadline)
		oci_host->log(CORDON_PLUGIN_LOG_WARNING, sb->tier->kind->name,
			      "the %s CLI of session %s did not answer in time",
			      sb->tier->kind->name, sb->name);
	int code = oci_chan_drop(sb);
	if (!s.x.started && !deadline && loop == 0)
		return false;
	*ret_rc = finish_run(&s, code, deadline, loop, ret, err);
	return true;
}

static char **run_args(const oci_sandbox *sb, const cordon_plugin_run_spec *spec)
{
	oci_strv a = { 0 };
	oci_strv_add(&a, "run");
	oci_strv_add(&a, "--timeout-ms");
	oci_strv_addf(&a, "%" PRIu64, spec->timeout_ms);
	oci_strv_add(&a, "--cap");
	oci_strv_addf(&a, "%" PRIu64, sb->out_cap);
	if (spec->workdir && *spec->workdir) {
		oci_strv_add(&a, "--workdir");
		oci_strv_add(&a, spec->workdir);
	}
	oci_strv_add(&a, "--");
	for (size_t i = 0; spec->argv[i]; i++)
		oci_strv_add(&a, spec->argv[i]);
	return oci_strv_steal(&a);
}

/* The work, on the session channel or by exec; port: a published port to report, or 0. */
static int run_work(oci_sandbox *sb, const cordon_plugin_run_spec *spec, uint16_t port,
		    const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		    cordon_plugin_error *err)
{
	/* the session channel when it is free; a concurrent run takes exec, and so does a
	 * streamed stdin (the session agent holds a run's stdin until the work starts) */
	bool streamed = spec->stdin_fd >= 0;
	if (!streamed && pthread_mutex_trylock(&sb->chan_lock) == 0) {
		int rc = 0;
		bool done = chan_run(sb, spec, port, sink, ret, err, &rc);
		pthread_mutex_unlock(&sb->chan_lock);
		if (done)
			return rc;
	}
	/* a terminal is the session agent's alone: a one-shot exec carries no resize */
	if (spec->tty_fd >= 0)
		return oci_host->error_set(err, EBUSY, CORDON_PLUGIN_ERROR_TRANSIENT,
					   ERRC(container_tty_busy),
					   "a terminal run needs the session's channel, which is "
					   "busy with another run (or gone)");
	/* the environment goes on stdin, never into the engine's argv */
	size_t hdr_len;
	char *hdr = agent_env_header(spec->envp, &hdr_len);
	if (!hdr)
		abort(); /* as xmalloc0: exhaustion is not an error path we can honour */
	size_t in_len = hdr_len + (size_t)spec->stdin_len;
	char *in = xmalloc0(in_len + 1);
	memcpy(in, hdr, hdr_len);
	if (spec->stdin_len)
		memcpy(in + hdr_len, spec->stdin_data, (size_t)spec->stdin_len);
	explicit_bzero(hdr, hdr_len);
	free(hdr);

	char **args = run_args(sb, spec);
	run_state s;
	run_state_init(&s, sb, AGENT_ANSWER_RUN);
	s.sink = sink;
	s.port = port;
	s.in_src = streamed ? spec->stdin_fd : -1;
	bool deadline = false;
	int loop = 0;
	int code = exec_agent(&s, (const char *const *)args, in, in_len, spec->timeout_ms,
			      spec->cancel_fd, &deadline, &loop);
	xstrv_free(args);
	explicit_bzero(in, in_len); /* granted secrets */
	free(in);
	if (code < 0)
		return oci_host->error_set(err, -code, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed), "could not start %s exec: %s",
					   sb->tier->kind->name, strerror(-code));
	return finish_run(&s, code, deadline, loop, ret, err);
}

/* A serve's port: the tier's published one (reported from the engine's port mapping), or
 * any port on a unix socket, through the core's forwarder into the container's network. */
int oci_op_run(void *sandbox, const cordon_plugin_run_spec *spec,
	       const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
	       cordon_plugin_error *err)
{
	oci_sandbox *sb = sandbox;
	bool unix_serve = spec->port && (spec->flags & CORDON_PLUGIN_RUNREQ_SERVE_UNIX);
	if (spec->port && !unix_serve && spec->port != sb->published)
		return oci_host->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
					   ERRC(container_publish_invalid),
					   "port %u is not published by this tier (publish: needs "
					   "governed egress and network:)",
					   spec->port);
	oci_serve *fwd = NULL;
	int r = unix_serve ? oci_serve_start(sb, spec->port, sink, &fwd, err) : 0;
	if (r < 0)
		return r;
	int rc = run_work(sb, spec, unix_serve ? 0 : spec->port, sink, ret, err);
	oci_serve_stop(fwd);
	return rc;
}

/* What a run's answer (or its absence) means. */
static int finish_run(run_state *s, int code, bool deadline, int loop,
		      cordon_plugin_run_status *ret, cordon_plugin_error *err)
{
	oci_sandbox *sb = s->sb;
	if (s->x.have_status) {
		oci_health_note(sb->tier, true);
		fill_status(s, ret);
		if (s->x.cancel_wanted && !s->x.status.timed_out)
			ret->flags |= CORDON_PLUGIN_RUNSTATUS_CANCELLED;
		return 0;
	}
	if (deadline) {
		ret->flags = CORDON_PLUGIN_RUNSTATUS_SIGNALED | CORDON_PLUGIN_RUNSTATUS_TIMED_OUT;
		ret->signal = 9;
		return 0;
	}
	if (loop < 0 && !s->x.have_error)
		return oci_host->error_set(err, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed), "the agent's output was malformed");
	return exec_failure(s, code, ret, err);
}

/* ---- file operations ----------------------------------------------------------------- */

/* What a file operation's answer (or its absence) means; the same for both ways of
 * reaching the agent. */
static int file_finish(run_state *s, bool session, int code, bool deadline, int loop,
		       cordon_plugin_error *err)
{
	oci_sandbox *sb = s->sb;
	const agent_exchange *x = &s->x;
	if (x->emit_rc)
		return x->emit_rc;
	/* a read over its max_len: the local driver's answer, -EFBIG alone (the core names
	 * the limit) */
	if (x->have_error && loop == 0 && x->want == AGENT_FRAME_DATA && x->error.errnum == EFBIG)
		return -EFBIG;
	if (x->have_error && loop == 0)
		return oci_fail(err, &x->error);
	if (x->file_done && loop == 0)
		return 0;
	if (deadline)
		return oci_host->error_set(
			err, ETIMEDOUT, CORDON_PLUGIN_ERROR_TRANSIENT, ERRC(engine_unavailable),
			"the %s engine did not answer in time", sb->tier->kind->name);
	if (loop < 0)
		return oci_host->error_set(err, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed),
					   "the agent's answer to a file operation was malformed");
	if (session && x->done)
		return oci_host->error_set(err, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed),
					   "the session agent ended a file operation without an "
					   "answer");
	return exec_failure(s, code, NULL, err);
}

/* A file answer's frames carry only data, which goes straight to the core's emitter. */
static void file_state_init(run_state *s, oci_sandbox *sb, uint8_t want, cordon_plugin_emit_fn emit,
			    void *ctx)
{
	run_state_init(s, sb, AGENT_ANSWER_FILE);
	s->x.want = want;
	s->k = (agent_sink){ .ctx = ctx, .emit = emit };
}

/* A file operation over the session channel. False when it did not reach the agent
 * (channel busy, gone, or the data too large for it): the caller goes through `engine
 * exec`, which also says why a container is gone. */
static bool chan_file(oci_sandbox *sb, const char *const *args, const void *in, size_t in_len,
		      run_state *s, cordon_plugin_error *err, int *ret_rc)
{
	if (!chan_usable(sb, in_len))
		return false;
	size_t len;
	char *req = agent_file_request(args, in, in_len, &len);
	if (!req)
		return false;
	bool deadline = false;
	int loop = exchange(s, &sb->chan, true, sb->tier->cli_timeout_ms, -1, req, len, &deadline);
	free(req);
	if (s->x.done && loop == 0) {
		*ret_rc = file_finish(s, true, 0, false, 0, err);
		return true;
	}
	/* the channel failed: the CLI ended, hangs, or the stream is malformed */
	int code = oci_chan_drop(sb);
	if (!s->x.started && !deadline && loop == 0)
		return false; /* nothing came back: ask again through exec */
	*ret_rc = file_finish(s, true, code, deadline, loop, err);
	return true;
}

/* One agent file operation: frames stream back (binary-safe), bounded by the tier's
 * engine timeout; over the session channel when it is free. */
static int file_op(oci_sandbox *sb, const char *const *args, const void *in, size_t in_len,
		   uint8_t want, cordon_plugin_emit_fn emit, void *ctx, cordon_plugin_error *err)
{
	run_state s;
	file_state_init(&s, sb, want, emit, ctx);
	if (pthread_mutex_trylock(&sb->chan_lock) == 0) {
		int rc = 0;
		bool done = chan_file(sb, args, in, in_len, &s, err, &rc);
		pthread_mutex_unlock(&sb->chan_lock);
		if (done)
			return rc;
		file_state_init(&s, sb, want, emit, ctx); /* exec starts afresh */
	}
	bool deadline = false;
	int loop = 0;
	int code = exec_agent(&s, args, in, in_len, sb->tier->cli_timeout_ms, -1, &deadline, &loop);
	if (code < 0)
		return oci_host->error_set(err, -code, CORDON_PLUGIN_ERROR_TERMINAL,
					   ERRC(engine_failed), "could not start %s exec: %s",
					   sb->tier->kind->name, strerror(-code));
	return file_finish(&s, false, code, deadline, loop, err);
}

int oci_agent_file_op(oci_sandbox *sb, const char *const *args, uint8_t want,
		      cordon_plugin_emit_fn emit, void *ctx, cordon_plugin_error *err)
{
	return file_op(sb, args, NULL, 0, want, emit, ctx, err);
}

/* The paths and patterns go to the agent as they came: it confines and refuses them with
 * the local driver's own code (common/), so every tier answers alike. */
int oci_op_read_file(void *sandbox, const char *path, uint64_t max_len, cordon_plugin_emit_fn emit,
		     void *ctx, cordon_plugin_error *err)
{
	char max[32];
	snprintf(max, sizeof(max), "%" PRIu64, max_len);
	const char *args[] = { "read", path, max, NULL };
	return file_op(sandbox, args, NULL, 0, AGENT_FRAME_DATA, emit, ctx, err);
}

int oci_op_write_file(void *sandbox, const char *path, const void *data, uint64_t len,
		      cordon_plugin_error *err)
{
	const char *args[] = { "write", path, NULL };
	/* an empty file still needs a stdin that reaches EOF */
	return file_op(sandbox, args, len ? data : "", (size_t)len, 0, NULL, NULL, err);
}

int oci_op_glob(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
		cordon_plugin_error *err)
{
	const char *args[] = { "glob", pattern, NULL };
	return file_op(sandbox, args, NULL, 0, AGENT_FRAME_PATH, emit, ctx, err);
}

int oci_op_walk(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
		cordon_plugin_error *err)
{
	const char *args[] = { "walk", dir && *dir ? dir : ".", NULL };
	return file_op(sandbox, args, NULL, 0, AGENT_FRAME_PATH, emit, ctx, err);
}
