/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sandbox port: run/exec/stream/serve and file operations, each mapped
 * onto one driver operation. Output caps, environment and time bounds are
 * enforced here, once, for every tier. */
#include "config.h"

#include "sandbox.h"
#include "admission.h"
#include "audit.h"
#include "env.h"
#include "hostport.h"
#include "mounts.h"
#include "result.h"
#include "runinput.h"
#include "workspace.h"

#include <inttypes.h>
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

int sandbox_invalid(cordon_error **reterr, const char *what)
{
	return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument), "%s", what);
}

int sandbox_unsupported(cordon_sandbox *sb, const char *op, cordon_error **reterr)
{
	return error_set(reterr, ENOTSUP, CORDON_ERROR_TERMINAL, ERRC(unsupported),
			 "tier %s (driver %s) does not support %s", sb->tier->cfg->name,
			 sb->tier->driver->ops.name, op);
}

/* ---- open / close ------------------------------------------------------------ */

/* One decision and the chosen tier's open: the driver's state in *ret_state. *ret_opened
 * names the tier whose open was tried (NULL when the decision refused). */
static int decide_and_open(cordon_context *ctx, const cordon_request *req, const GPtrArray *failed,
			   audit_egress_ref *egress, cordon_decision **ret_d, void **ret_state,
			   tier_runtime **ret_opened, cordon_error **reterr)
{
	g_autoptr(cordon_decision) d = NULL;
	*ret_opened = NULL;
	int r = admission_decide_after(ctx, req, failed, &d, reterr);
	if (r < 0)
		return r;
	/* After the (audited) decision, before any driver sees it: the lists are the same for
	 * every tier. */
	const char *const *held = (const char *const *)ctx->trusted_dirs;
	g_autoptr(open_mounts) mounts = NULL;
	if ((req->workspace && (r = workspace_check_held(req->workspace, held, reterr)) < 0) ||
	    (r = mounts_open(req, held, &mounts, reterr)) < 0)
		return r;
	tier_runtime *t = d->runtime;
	if (!t->driver->ops.open)
		return error_set(reterr, ENOTSUP, CORDON_ERROR_TERMINAL, ERRC(unsupported),
				 "driver %s cannot open sandboxes", t->driver->ops.name);

	cordon_plugin_open_spec spec = {
		.size = sizeof(spec),
		.trust = req->trust,
		.egress = req->egress,
		.workspace = req->workspace,
		.image = req->image,
		.limits = d->limits,
		.mounts = mounts->m,
		.n_mounts = mounts->n,
		.flags = d->workspace_ro ? CORDON_PLUGIN_OPEN_WORKSPACE_RO : 0,
	};
	/* Governed egress: the tier's rules, and where its connections are audited. */
	if (req->egress == CORDON_EGRESS_GOVERNED && t->cfg->egress_set) {
		spec.egress_allow = (const char *const *)t->cfg->egress_allow;
		spec.egress_deny = (const char *const *)t->cfg->egress_deny;
	}
	g_strlcpy(egress->decision, d->id, sizeof(egress->decision));
	g_strlcpy(egress->tier, t->cfg->name, sizeof(egress->tier));
	spec.egress_audit = egress;
	/* A 1.1 driver was built when the size was a reserved word, zero. */
	const plugin_record *plugin = t->driver->plugin;
	spec.limits.size = !plugin || plugin->abi_minor >= 2 ? sizeof(spec.limits) : 0;
	struct cordon_plugin_error perr = { 0 };
	*ret_opened = t;
	r = t->driver->ops.open(t->state, &spec, ret_state, &perr);
	r = error_from_plugin(reterr, &perr, r, "open");
	if (r < 0)
		return r;
	*ret_d = g_steal_pointer(&d);
	return 0;
}

/* Whether the request may go on to the next admissible tier after the open at tier
 * opened failed with err: only where the tier says fallback: next, and only for the
 * tier's own reasons (its engine is down or busy: terminal or transient), never past a
 * refusal (forbidden), a malformed request (invalid) or a cancellation. */
static bool may_fall_back(const tier_runtime *opened, const cordon_error *err)
{
	if (!opened || !opened->cfg->fallback_next || !err)
		return false;
	cordon_error_class cls = cordon_error_get_class(err);
	return cls == CORDON_ERROR_TERMINAL || cls == CORDON_ERROR_TRANSIENT;
}

int cordon_sandbox_open(cordon_context *ctx, const cordon_request *req, cordon_sandbox **ret_sb,
			cordon_error **reterr)
{
	if (!ctx || !req || !ret_sb)
		return sandbox_invalid(reterr, "context, request and ret_sb are required");
	g_autoptr(cordon_decision) d = NULL;
	void *state = NULL;
	cordon_error *first = NULL;
	tier_runtime *opened = NULL;
	g_autoptr(GPtrArray) failed = g_ptr_array_new_with_free_func(admission_failure_free);
	/* The sandbox's id first: its governed connections are audited under it. */
	audit_egress_ref *egress = g_new0(audit_egress_ref, 1);
	egress->ctx = ctx;
	g_autofree char *uuid = g_uuid_string_random();
	g_strlcpy(egress->sandbox, uuid, sizeof(egress->sandbox));
	int r = decide_and_open(ctx, req, failed, egress, &d, &state, &opened, &first);
	/* A tier admitted on an answer kept from another process (probecache.h) whose open
	 * failed: that answer is forgotten and the request decided and opened once more, on
	 * answers made now (both decisions are audited). */
	if (r < 0 && opened && context_probe_forget_cached(ctx, opened)) {
		cordon_error_free(first);
		first = NULL;
		r = decide_and_open(ctx, req, failed, egress, &d, &state, &opened, &first);
	}
	/* fallback: next. Each round passes over one more tier, so it ends. */
	while (r < 0 && may_fall_back(opened, first)) {
		g_ptr_array_add(failed,
				admission_failure_new(opened, cordon_error_get_message(first)));
		cordon_error_free(first);
		first = NULL;
		r = decide_and_open(ctx, req, failed, egress, &d, &state, &opened, &first);
	}
	if (r < 0) {
		g_free(egress);
		error_propagate(reterr, first);
		return r;
	}
	/* decide_and_open sets d whenever it returns 0 (the analyzer does not follow the
	 * variadic error_set() of its failures). */
	// NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
	tier_runtime *t = d->runtime;

	cordon_sandbox *sb = g_new0(cordon_sandbox, 1);
	sb->ctx = ctx;
	sb->tier = t;
	sb->state = state;
	sb->containment = d->containment;
	sb->limits = d->limits;
	sb->env_grants = g_ptr_array_new_with_free_func(env_entry_free);
	for (guint i = 0; i < req->env->len; i++)
		g_ptr_array_add(sb->env_grants, g_strdup(req->env->pdata[i]));
	g_mutex_init(&sb->lock);
	sb->serves = g_ptr_array_new();
	sb->egress = egress;
	g_strlcpy(sb->id, egress->sandbox, sizeof(sb->id));
	g_strlcpy(sb->decision_id, d->id, sizeof(sb->decision_id));
	sb->caller = g_strdup(req->caller);
	r = sandbox_egress_start(sb, req->egress, reterr);
	if (r == 0)
		r = sandbox_services_start(sb, reterr);
	if (r < 0) {
		cordon_sandbox_close(sb);
		return r;
	}
	*ret_sb = sb;
	return 0;
}

cordon_containment cordon_sandbox_containment(const cordon_sandbox *sb)
{
	return sb ? sb->containment : CORDON_CONTAINMENT_PROCESS_JAIL;
}

const char *cordon_sandbox_tier(const cordon_sandbox *sb)
{
	return sb ? sb->tier->cfg->name : NULL;
}

const char *cordon_sandbox_id(const cordon_sandbox *sb) { return sb ? sb->id : NULL; }

/* ---- one run -------------------------------------------------------------------- */

/* What the sink of one run writes into. */
typedef struct run_capture {
	cordon_result *result;
	uint64_t cap;        /* per stream */
	bool keep;           /* keep output (run/exec) or only pass it on (stream) */
	cordon_output_fn fn; /* stream: the host's callback */
	void *user;
	int cancel_event; /* eventfd the callback's cancel writes to, or -1 */
	/* serve: the retained tail and the address, under the serve's lock;
	 * cond is signalled when the address comes */
	GMutex *lock;
	GCond *cond;
	GString *tail;
	char **address;
	int64_t *pid;      /* serve: the work's pid in the sandbox, once the tier says */
	const char *kind;  /* for the audit: "run", "stream", "serve" */
	uint64_t bytes[3]; /* what the work wrote, per stream, before any cap */
} run_capture;

static void append_capped(GString *s, bool *truncated, uint64_t cap, const char *data, size_t len)
{
	if (s->len + len > cap) {
		*truncated = true;
		len = s->len < cap ? cap - s->len : 0;
	}
	g_string_append_len(s, data, len);
}

static void sink_output(void *ctx, uint32_t stream, const void *data, size_t len)
{
	run_capture *c = ctx;
	if (stream != 1 && stream != 2)
		return;
	c->bytes[stream] += len;
	if (c->keep) {
		cordon_result *r = c->result;
		append_capped(r->out[stream], &r->truncated[stream], c->cap, data, len);
		append_capped(r->out[0], &r->truncated[0], 2 * c->cap, data, len);
	}
	if (c->tail) {
		g_mutex_lock(c->lock);
		g_string_append_len(c->tail, data, len);
		if (c->tail->len > SANDBOX_SERVE_TAIL)
			g_string_erase(c->tail, 0, c->tail->len - SANDBOX_SERVE_TAIL);
		g_mutex_unlock(c->lock);
	}
	if (c->fn && c->fn(c->user, (int)stream, data, len) != 0 && c->cancel_event >= 0) {
		uint64_t one = 1;
		if (write(c->cancel_event, &one, sizeof(one)) < 0) {
			/* an eventfd write only fails at overflow: already cancelled */
		}
	}
}

static void sink_started(void *ctx, int64_t pid)
{
	run_capture *c = ctx;
	if (!c->pid || pid <= 0)
		return;
	g_mutex_lock(c->lock);
	*c->pid = pid;
	g_mutex_unlock(c->lock);
}

static void sink_address(void *ctx, const char *host_port)
{
	run_capture *c = ctx;
	if (!c->address || !host_port)
		return;
	g_mutex_lock(c->lock);
	g_free(*c->address);
	*c->address = g_strdup(host_port);
	g_cond_broadcast(c->cond);
	g_mutex_unlock(c->lock);
}

/* Checks the per-run options against the sandbox's limits: a run may ask for
 * less than the policy allows, never more (refused, not clamped). */
static int run_bounds(cordon_sandbox *sb, const cordon_run_options *o, uint64_t *ret_timeout,
		      uint64_t *ret_cap, cordon_error **reterr)
{
	const cordon_plugin_limits *l = &sb->limits;
	uint64_t wall = (l->set & (1u << CORDON_LIMIT_WALL_MS)) ? l->value[CORDON_LIMIT_WALL_MS]
								: SANDBOX_DEFAULT_WALL_MS;
	uint64_t cap = (l->set & (1u << CORDON_LIMIT_OUTPUT)) ? l->value[CORDON_LIMIT_OUTPUT]
							      : SANDBOX_DEFAULT_OUTPUT_CAP;
	if (o && o->timeout_ms > wall)
		return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, ERRC(limit_exceeded),
				 "a timeout of %" G_GUINT64_FORMAT
				 " ms exceeds the tier's wall limit "
				 "of %" G_GUINT64_FORMAT " ms",
				 o->timeout_ms, wall);
	if (o && o->output_cap > cap)
		return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, ERRC(limit_exceeded),
				 "an output cap of %" G_GUINT64_FORMAT " bytes exceeds the tier's "
				 "limit of %" G_GUINT64_FORMAT,
				 o->output_cap, cap);
	*ret_timeout = (o && o->timeout_ms) ? o->timeout_ms : wall;
	*ret_cap = (o && o->output_cap) ? o->output_cap : cap;
	return 0;
}

/* The size of the options before stdin_fd: callers built then pass it. */
#define RUN_OPTIONS_SIZE_0_1 offsetof(cordon_run_options, stdin_fd)

/* Checks the caller's options and copies them into *ret as this library knows them: a
 * field a caller built before it (a smaller size) does not have gets its default. */
static int check_options(const cordon_run_options *o, cordon_run_options *ret,
			 cordon_error **reterr)
{
	*ret = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	if (!o)
		return 0;
	if (o->size < RUN_OPTIONS_SIZE_0_1)
		return sandbox_invalid(
			reterr,
			"cordon_run_options.size is too small: use CORDON_RUN_OPTIONS_INIT");
	memcpy(ret, o, MIN((size_t)o->size, sizeof(*ret)));
	ret->size = sizeof(*ret);
	o = ret;
	if (o->stdin_fd >= 0 && o->stdin_data)
		return sandbox_invalid(reterr, "stdin_data and stdin_fd are exclusive");
	if (o->stdin_fd < -1 || o->tty_resize_fd < -1)
		return sandbox_invalid(reterr, "stdin_fd and tty_resize_fd are a descriptor or -1");
	if ((o->flags & CORDON_RUN_TTY) && o->stdin_data)
		return sandbox_invalid(
			reterr, "a terminal run takes its input from stdin_fd, not stdin_data");
	if (o->flags & ~(uint32_t)(CORDON_RUN_LAST | CORDON_RUN_TTY | CORDON_RUN_SERVE_UNIX))
		return sandbox_invalid(reterr, "unknown cordon_run_options flags");
	for (size_t i = 0; o->env && o->env[i]; i++) {
		const char *eq = strchr(o->env[i], '=');
		if (!eq)
			return sandbox_invalid(reterr, "run environment grants are KEY=VALUE");
		g_autofree char *key = g_strndup(o->env[i], eq - o->env[i]);
		int r = env_check_grant(key, eq + 1, reterr);
		if (r < 0)
			return r;
	}
	if (o->workdir && !cordon_host_services.path_is_confined(o->workdir))
		return error_set(
			reterr, EPERM, CORDON_ERROR_FORBIDDEN, ERRC(sandbox_path_escape),
			"the working directory must be a relative path inside the sandbox");
	return 0;
}

static bool argv_ok(const char *const *argv) { return argv && argv[0] && argv[0][0]; }

/* Counts a run in; a last run spends the sandbox. Returns the driver's run
 * flags: LAST only when this run is alone and the driver knows the flag
 * (ABI 1.1; built-in drivers always do). */
static int run_begin(cordon_sandbox *sb, const cordon_run_options *o, uint32_t *ret_flags,
		     cordon_error **reterr)
{
	bool last = o && (o->flags & CORDON_RUN_LAST);
	const plugin_record *plugin = sb->tier->driver->plugin;
	if (sandbox_check_paused(sb, reterr) < 0)
		return -EBUSY;
	g_mutex_lock(&sb->lock);
	bool spent = sb->spent;
	bool alone = sb->active_runs == 0;
	if (!spent) {
		sb->active_runs++;
		sb->spent = last;
	}
	g_mutex_unlock(&sb->lock);
	if (spent)
		return error_set(reterr, EPIPE, CORDON_ERROR_TERMINAL, ERRC(sandbox_spent),
				 "the sandbox's last run has started: no other run may follow");
	*ret_flags = last && alone && (!plugin || plugin->abi_minor >= 1)
			     ? CORDON_PLUGIN_RUNREQ_LAST
			     : 0;
	return 0;
}

static void run_end(cordon_sandbox *sb)
{
	g_mutex_lock(&sb->lock);
	sb->active_runs--;
	g_mutex_unlock(&sb->lock);
}

/* Runs argv through the driver with capture c. cancel_fd is what the driver
 * watches (the host's, a merge of the host's and ours, or -1). */
static int run_driver(cordon_sandbox *sb, const char *const *argv, const cordon_run_options *o,
		      uint16_t port, int cancel_fd, run_capture *c, cordon_error **reterr)
{
	if (!sb->tier->driver->ops.run)
		return sandbox_unsupported(sb, "run", reterr);
	uint64_t timeout = 0, cap = 0; /* written by run_bounds on success */
	int r = run_bounds(sb, o, &timeout, &cap, reterr);
	if (r < 0)
		return r;
	bool unix_socket = o && (o->flags & CORDON_RUN_SERVE_UNIX);
	if (unix_socket && !port)
		return sandbox_invalid(reterr, "CORDON_RUN_SERVE_UNIX is for a serve with a port");
	if (unix_socket && !(sb->tier->driver->ops.flags & CORDON_PLUGIN_DRIVER_SERVE_UNIX))
		return sandbox_unsupported(sb, "serve on a unix socket", reterr);
	uint32_t flags = 0;
	r = run_begin(sb, o, &flags, reterr);
	if (r < 0)
		return r;
	flags |= unix_socket ? CORDON_PLUGIN_RUNREQ_SERVE_UNIX : 0;
	c->cap = cap;
	run_input in = RUN_INPUT_INIT;
	const cordon_run_options none = CORDON_RUN_OPTIONS_INIT;
	if ((r = run_input_open(&in, o ? o : &none, sb->tier->driver->ops.flags, cancel_fd,
				sink_output, c, reterr)) < 0) {
		run_input_close(&in);
		run_end(sb);
		return r;
	}
	g_auto(GStrv) built = env_build(sb->env_grants, o ? o->env : NULL);
	g_auto(GStrv) proxied = sandbox_egress_env(sb, (const char *const *)built);
	char **envp = proxied ? proxied : built;
	cordon_plugin_run_spec spec = {
		.size = sizeof(spec),
		.flags = flags,
		.argv = argv,
		.envp = (const char *const *)envp,
		.workdir = o ? o->workdir : NULL,
		.stdin_data = in.data,
		.stdin_len = in.len,
		.timeout_ms = timeout,
		.cancel_fd = cancel_fd,
		.port = port,
		.stdin_fd = in.fd,
		.tty_fd = in.tty_fd,
	};
	/* started only for a serve, which keeps the pid: a driver may work to find it */
	cordon_plugin_run_sink sink = {
		sizeof(sink), 0, c, sink_output, sink_address, c->pid ? sink_started : NULL
	};
	cordon_plugin_run_status st = { .size = sizeof(st) };
	struct cordon_plugin_error perr = { 0 };
	gint64 t0 = g_get_monotonic_time();
	r = sb->tier->driver->ops.run(sb->state, &spec, &sink, &st, &perr);
	gint64 t1 = g_get_monotonic_time();
	run_input_close(&in);
	run_end(sb);
	cordon_error *rerr = NULL; /* kept here for the audit line even when reterr is NULL */
	r = error_from_plugin(&rerr, &perr, r, "run");
	if (r >= 0 && c->result)
		c->result->status = st;
	audit_outcome ao = {
		.kind = c->kind ? c->kind : "run",
		.argv = argv,
		.status = r >= 0 ? &st : NULL,
		.error_code = rerr ? rerr->code : NULL,
		.duration_us = (uint64_t)(t1 - t0),
		.bytes = { 0, c->bytes[1], c->bytes[2] },
		.output_capped = c->result && (c->result->truncated[1] || c->result->truncated[2]),
	};
	audit_run(sb, &ao);
	error_propagate(reterr, rerr);
	return r;
}

int cordon_sandbox_run(cordon_sandbox *sb, const char *const *argv, const cordon_run_options *o,
		       cordon_result **ret_result, cordon_error **reterr)
{
	if (!sb || !argv_ok(argv) || !ret_result)
		return sandbox_invalid(reterr,
				       "sandbox, a non-empty argv and ret_result are required");
	cordon_run_options on;
	int r = check_options(o, &on, reterr);
	if (r < 0)
		return r;
	run_capture c = { .result = result_new(), .keep = true, .cancel_event = -1 };
	r = run_driver(sb, argv, &on, 0, on.cancel_fd, &c, reterr);
	if (r < 0) {
		cordon_result_free(c.result);
		return r;
	}
	*ret_result = c.result;
	return 0;
}

int cordon_sandbox_exec(cordon_sandbox *sb, const char *line, const cordon_run_options *o,
			cordon_result **ret_result, cordon_error **reterr)
{
	if (!line)
		return sandbox_invalid(reterr, "a shell line is required");
	const char *argv[] = { "/bin/sh", "-c", line, NULL };
	return cordon_sandbox_run(sb, argv, o, ret_result, reterr);
}

/* An fd readable when either the host's cancel_fd or our eventfd is: an
 * epoll set polls readable when any member is ready. */
int sandbox_cancel_merge(int host_fd, int event_fd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, event_fd, &ev) < 0 ||
	    (host_fd >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, host_fd, &ev) < 0)) {
		int e = -errno;
		close(ep);
		return e;
	}
	return ep;
}

int cordon_sandbox_stream(cordon_sandbox *sb, const char *const *argv, const cordon_run_options *o,
			  cordon_output_fn fn, void *user, cordon_result **ret_result,
			  cordon_error **reterr)
{
	if (!sb || !argv_ok(argv) || !fn)
		return sandbox_invalid(reterr,
				       "sandbox, a non-empty argv and a callback are required");
	cordon_run_options on;
	int r = check_options(o, &on, reterr);
	if (r < 0)
		return r;
	o = &on;
	int ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ev < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "eventfd: %s", g_strerror(errno));
	int merged = sandbox_cancel_merge(o->cancel_fd, ev);
	if (merged < 0) {
		close(ev);
		return error_set(reterr, -merged, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "epoll: %s", g_strerror(-merged));
	}
	run_capture c = {
		.result = result_new(), .fn = fn, .user = user, .cancel_event = ev, .kind = "stream"
	};
	r = run_driver(sb, argv, o, 0, merged, &c, reterr);
	close(merged);
	close(ev);
	if (r < 0 || !ret_result)
		cordon_result_free(c.result);
	else
		*ret_result = c.result;
	return r;
}

/* ---- serve -------------------------------------------------------------------- */

struct cordon_serve {
	gint refs;
	cordon_sandbox *sb; /* valid while running; cleared at close */
	GThread *thread;
	GMutex lock;
	GCond done_cond;
	bool done;
	int cancel_event;
	int rc;
	cordon_error *err;
	cordon_result *result;
	GString *tail;
	char *address;
	int64_t pid; /* in the sandbox, once the tier reports it; -1 before, or never */
	/* copies: the caller's argv and options need not outlive the call */
	char **argv;
	char **env;
	char *workdir;
	uint16_t port;
	cordon_run_options opts;
};

static void serve_unref(cordon_serve *s)
{
	if (!s || !g_atomic_int_dec_and_test(&s->refs))
		return;
	cordon_serve_stop(s, NULL);
	if (s->cancel_event >= 0)
		close(s->cancel_event);
	cordon_error_free(s->err);
	cordon_result_free(s->result);
	g_string_free(s->tail, TRUE);
	g_free(s->address);
	g_strfreev(s->argv);
	g_strfreev(s->env);
	g_free(s->workdir);
	g_mutex_clear(&s->lock);
	g_cond_clear(&s->done_cond);
	g_free(s);
}

static gpointer serve_thread(gpointer data)
{
	cordon_serve *s = data;
	run_capture c = { .result = result_new(),
			  .cancel_event = -1,
			  .lock = &s->lock,
			  .cond = &s->done_cond,
			  .tail = s->tail,
			  .address = &s->address,
			  .pid = &s->pid,
			  .kind = "serve" };
	cordon_error *err = NULL;
	int r = run_driver(s->sb, (const char *const *)s->argv, &s->opts, s->port, s->cancel_event,
			   &c, &err);
	g_mutex_lock(&s->lock);
	s->rc = r;
	s->err = err;
	s->result = c.result;
	s->done = true;
	g_cond_broadcast(&s->done_cond);
	g_mutex_unlock(&s->lock);
	return NULL;
}

/* A server with a port is returned only once its tier reports where the
 * port is reached (the kernel tier: once the port accepts); one that ends
 * first, or takes longer than the bound, fails the serve with the reason. */
static int serve_wait_ready(cordon_serve *s, uint64_t timeout_ms, cordon_error **reterr)
{
	uint64_t bound = timeout_ms && timeout_ms < SANDBOX_SERVE_READY_MS ? timeout_ms
									   : SANDBOX_SERVE_READY_MS;
	gint64 deadline = g_get_monotonic_time() + (gint64)bound * G_TIME_SPAN_MILLISECOND;
	g_mutex_lock(&s->lock);
	while (!s->done && !s->address && g_cond_wait_until(&s->done_cond, &s->lock, deadline))
		;
	int r = 0;
	if (s->address) {
		r = 0;
	} else if (s->done && s->rc < 0 && s->err) {
		r = error_set(reterr, s->err->errnum, s->err->cls, s->err->code, "%s",
			      s->err->message);
	} else if (s->done && cordon_result_signal(s->result)) {
		r = error_set(reterr, ECONNREFUSED, CORDON_ERROR_TERMINAL, ERRC(serve_not_ready),
			      "the server ended (killed by signal %d) before port %u accepted "
			      "connections",
			      cordon_result_signal(s->result), (unsigned)s->port);
	} else if (s->done) {
		r = error_set(reterr, ECONNREFUSED, CORDON_ERROR_TERMINAL, ERRC(serve_not_ready),
			      "the server ended (exit status %d) before port %u accepted "
			      "connections",
			      s->result->status.exit_code, (unsigned)s->port);
	} else {
		r = error_set(reterr, ETIMEDOUT, CORDON_ERROR_TERMINAL, ERRC(serve_not_ready),
			      "port %u did not accept connections within %" PRIu64
			      " ms; the server was stopped",
			      (unsigned)s->port, bound);
	}
	g_mutex_unlock(&s->lock);
	return r;
}

int cordon_sandbox_serve(cordon_sandbox *sb, const char *const *argv, uint16_t port,
			 const cordon_run_options *o, cordon_serve **ret, cordon_error **reterr)
{
	if (!sb || !argv_ok(argv) || !ret)
		return sandbox_invalid(reterr, "sandbox, a non-empty argv and ret are required");
	cordon_run_options on;
	int r = check_options(o, &on, reterr);
	if (r < 0)
		return r;
	if (o && (on.stdin_fd >= 0 || (on.flags & CORDON_RUN_TTY)))
		return sandbox_invalid(reterr, "servers get no stdin and no terminal");
	o = o ? &on : NULL;
	if (o && o->cancel_fd >= 0)
		return sandbox_invalid(reterr,
				       "serve is stopped with cordon_serve_stop, not a cancel_fd");
	uint64_t timeout = 0, cap = 0; /* written by run_bounds on success */
	r = run_bounds(sb, o, &timeout, &cap, reterr);
	if (r < 0)
		return r;
	int ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ev < 0)
		return error_set(reterr, errno, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "eventfd: %s", g_strerror(errno));

	cordon_serve *s = g_new0(cordon_serve, 1);
	s->refs = 2; /* the caller's and the sandbox's */
	s->sb = sb;
	g_mutex_init(&s->lock);
	g_cond_init(&s->done_cond);
	s->cancel_event = ev;
	s->pid = -1;
	s->tail = g_string_new(NULL);
	s->argv = g_strdupv((char **)argv);
	s->port = port;
	if (o) {
		s->opts = *o;
		s->env = o->env ? g_strdupv((char **)o->env) : NULL;
		s->workdir = g_strdup(o->workdir);
		s->opts.env = (const char *const *)s->env;
		s->opts.workdir = s->workdir;
		s->opts.stdin_data = NULL; /* servers get no stdin */
		s->opts.stdin_len = 0;
	} else {
		s->opts = (cordon_run_options)CORDON_RUN_OPTIONS_INIT;
	}
	s->opts.cancel_fd = -1;
	g_mutex_lock(&sb->lock);
	g_ptr_array_add(sb->serves, s);
	g_mutex_unlock(&sb->lock);
	s->thread = g_thread_new("cordon-serve", serve_thread, s);
	r = port ? serve_wait_ready(s, timeout, reterr) : 0;
	if (r < 0) {
		cordon_serve_free(s); /* the sandbox's reference stays until close */
		return r;
	}
	*ret = s;
	return 0;
}

char *cordon_serve_address(cordon_serve *s)
{
	if (!s)
		return NULL;
	g_mutex_lock(&s->lock);
	char *a = g_strdup(s->address);
	g_mutex_unlock(&s->lock);
	return a;
}

int64_t cordon_serve_pid(cordon_serve *s)
{
	if (!s)
		return -1;
	g_mutex_lock(&s->lock);
	int64_t pid = s->pid;
	g_mutex_unlock(&s->lock);
	return pid;
}

bool cordon_serve_running(cordon_serve *s)
{
	if (!s)
		return false;
	g_mutex_lock(&s->lock);
	bool running = !s->done;
	g_mutex_unlock(&s->lock);
	return running;
}

char *cordon_serve_output(cordon_serve *s)
{
	if (!s)
		return NULL;
	g_mutex_lock(&s->lock);
	char *t = g_strndup(s->tail->str, s->tail->len);
	g_mutex_unlock(&s->lock);
	return t;
}

int cordon_serve_wait(cordon_serve *s, int64_t timeout_ms, cordon_result **ret_result,
		      cordon_error **reterr)
{
	if (!s)
		return sandbox_invalid(reterr, "no serve handle");
	gint64 deadline = g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND;
	g_mutex_lock(&s->lock);
	while (!s->done) {
		if (timeout_ms < 0)
			g_cond_wait(&s->done_cond, &s->lock);
		else if (!g_cond_wait_until(&s->done_cond, &s->lock, deadline))
			break;
	}
	int r;
	if (!s->done) {
		r = error_set(reterr, ETIMEDOUT, CORDON_ERROR_TRANSIENT, ERRC(still_running),
			      "the server is still running");
	} else if (s->rc < 0) {
		r = s->rc;
		if (reterr && !*reterr && s->err)
			error_set(reterr, s->err->errnum, s->err->cls, s->err->code, "%s",
				  s->err->message);
	} else {
		r = 0;
		if (ret_result)
			*ret_result = result_copy(s->result);
	}
	g_mutex_unlock(&s->lock);
	return r;
}

/* Ready, ended, or neither yet; 1, a negative errno (set), or 0. */
static int serve_ready_now(cordon_serve *s, cordon_error **reterr)
{
	g_mutex_lock(&s->lock);
	bool done = s->done;
	int rc = s->rc;
	g_autofree char *addr = g_strdup(s->address);
	g_mutex_unlock(&s->lock);
	if (done) {
		if (rc < 0)
			return cordon_serve_wait(s, 0, NULL, reterr);
		return error_set(reterr, EPIPE, CORDON_ERROR_TERMINAL, ERRC(serve_ended),
				 "the server ended before it was ready");
	}
	if (!s->port)
		return 1;
	return addr && hostport_accepts(addr) ? 1 : 0;
}

int cordon_serve_wait_ready(cordon_serve *s, int64_t timeout_ms, cordon_error **reterr)
{
	if (!s)
		return sandbox_invalid(reterr, "no serve handle");
	gint64 deadline = g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND;
	for (;;) {
		int r = serve_ready_now(s, reterr);
		if (r != 0)
			return r < 0 ? r : 0;
		if (timeout_ms >= 0 && g_get_monotonic_time() >= deadline)
			return error_set(reterr, ETIMEDOUT, CORDON_ERROR_TRANSIENT,
					 ERRC(still_starting), "the server is not ready yet");
		/* Polling, short: a listening socket announces itself to nobody. It ends
		 * early when the server does (done_cond). */
		g_mutex_lock(&s->lock);
		if (!s->done)
			g_cond_wait_until(&s->done_cond, &s->lock,
					  g_get_monotonic_time() + 20 * G_TIME_SPAN_MILLISECOND);
		g_mutex_unlock(&s->lock);
	}
}

int cordon_serve_stop(cordon_serve *s, cordon_error **reterr)
{
	if (!s)
		return 0;
	uint64_t one = 1;
	g_mutex_lock(&s->lock);
	if (s->cancel_event >= 0 && write(s->cancel_event, &one, sizeof(one)) < 0) {
		/* overflow only: a stop is already pending */
	}
	GThread *t = g_steal_pointer(&s->thread);
	g_mutex_unlock(&s->lock);
	if (t) {
		g_thread_join(t);
		/* A stopped server needs no stop event: nothing of it stays open
		 * until the sandbox closes. */
		g_mutex_lock(&s->lock);
		close(s->cancel_event);
		s->cancel_event = -1;
		g_mutex_unlock(&s->lock);
	}
	return 0;
}

void cordon_serve_free(cordon_serve *s)
{
	if (!s)
		return;
	cordon_serve_stop(s, NULL);
	serve_unref(s);
}

/* ---- close ------------------------------------------------------------------------ */

void cordon_sandbox_close(cordon_sandbox *sb)
{
	if (!sb)
		return;
	/* Servers first: their runs use the driver's sandbox state. */
	for (guint i = 0; i < sb->serves->len; i++) {
		cordon_serve *s = sb->serves->pdata[i];
		cordon_serve_stop(s, NULL);
		serve_unref(s);
	}
	g_ptr_array_unref(sb->serves);
	sandbox_services_stop(sb);
	sandbox_egress_stop(sb);
	if (sb->tier->driver->ops.close)
		sb->tier->driver->ops.close(sb->state);
	g_free(sb->egress); /* after the close: the driver's connections are over */
	g_ptr_array_unref(sb->env_grants);
	g_free(sb->caller);
	g_mutex_clear(&sb->lock);
	g_free(sb);
}

/* ---- runtime egress ---------------------------------------------------------------------- */

int cordon_sandbox_set_egress(cordon_sandbox *sb, const char *const *allow, const char *const *deny,
			      cordon_error **reterr)
{
	if (!sb)
		return sandbox_invalid(reterr, "a sandbox is required");
	if (sandbox_egress_by_core(sb, CORDON_EGRESS_GOVERNED)) {
		cordon_error *e = NULL;
		int r = sandbox_egress_narrow(sb, allow, deny, &e);
		audit_egress_change(sb->egress, allow, deny, e ? cordon_error_get_code(e) : NULL);
		if (e)
			error_propagate(reterr, e);
		return r;
	}
	if (!sb->tier->driver->ops.set_egress) {
		audit_egress_change(sb->egress, allow, deny, ERRC(unsupported));
		return sandbox_unsupported(sb, "runtime egress changes", reterr);
	}
	struct cordon_plugin_error perr = { 0 };
	int r = sb->tier->driver->ops.set_egress(sb->state, allow, deny, &perr);
	cordon_error *e = NULL;
	r = error_from_plugin(&e, &perr, r, "set_egress");
	audit_egress_change(sb->egress, allow, deny, e ? cordon_error_get_code(e) : NULL);
	if (e)
		error_propagate(reterr, e);
	return r;
}
