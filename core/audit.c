/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit trail. Every decision, admitted or refused, is one JSON line
 * ("event": "decision", with an "id"); every run in a sandbox it opened is
 * another ("event": "run", its "decision" that id): what ran, how it ended, for
 * whom (docs/embedding.md, "Audit").
 * Lines from threads (ctx->audit_lock) and processes (flock) never
 * interleave: each is one write(2) of the whole line on an O_APPEND fd. */
#include "config.h"

#include "audit.h"
#include "net/service.h"

#include "filetrust.h"
#include "json.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const egress_names[] = { "deny", "governed", "allow" };

static void json_labels(GString *out, const GPtrArray *labels)
{
	g_string_append_c(out, '{');
	for (guint i = 0; i < labels->len; i++) {
		const char *kv = labels->pdata[i];
		const char *eq = strchr(kv, '=');
		g_autofree char *k = g_strndup(kv, eq ? (gsize)(eq - kv) : strlen(kv));
		json_append_key(out, k, i == 0);
		json_append_string(out, eq ? eq + 1 : "");
	}
	g_string_append_c(out, '}');
}

/* Each mount as the request named it: host, inside and whether writable. */
static void json_mounts(GString *out, const GPtrArray *mounts)
{
	g_string_append_c(out, '[');
	for (guint i = 0; i < mounts->len; i++) {
		const request_mount *m = mounts->pdata[i];
		g_string_append(out, i ? ",{" : "{");
		json_append_key(out, "host", true);
		json_append_string(out, m->host);
		json_append_key(out, "inside", false);
		json_append_string(out, m->inside);
		json_append_key(out, "rw", false);
		g_string_append(out, m->rw ? "true" : "false");
		g_string_append_c(out, '}');
	}
	g_string_append_c(out, ']');
}

/* Grant names only: the values are secrets by contract. */
static void json_env_names(GString *out, const GPtrArray *env)
{
	g_string_append_c(out, '[');
	for (guint i = 0; i < env->len; i++) {
		const char *kv = env->pdata[i];
		const char *eq = strchr(kv, '=');
		g_autofree char *k = g_strndup(kv, eq ? (gsize)(eq - kv) : strlen(kv));
		if (i)
			g_string_append_c(out, ',');
		json_append_string(out, k);
	}
	g_string_append_c(out, ']');
}

/* Who asked: the host process (its uid and pid) and the host's own label. */
static void json_caller(GString *out, const char *label)
{
	g_string_append_c(out, '{');
	json_append_key(out, "uid", true);
	json_append_u64(out, (uint64_t)getuid());
	json_append_key(out, "pid", false);
	json_append_u64(out, (uint64_t)getpid());
	json_append_key(out, "label", false);
	json_append_string(out, label);
	g_string_append_c(out, '}');
}

static void json_request(GString *out, const cordon_request *req)
{
	g_string_append_c(out, '{');
	json_append_key(out, "trust", true);
	json_append_string(out, req->trust_text);
	json_append_key(out, "tier", false);
	json_append_string(out, req->tier);
	json_append_key(out, "labels", false);
	json_labels(out, req->labels);
	json_append_key(out, "workspace", false);
	json_append_string(out, req->workspace);
	json_append_key(out, "mounts", false);
	json_mounts(out, req->mounts);
	json_append_key(out, "limits", false);
	decision_json_limits(out, &req->limits);
	json_append_key(out, "egress", false);
	json_append_string(out, (unsigned)req->egress <= CORDON_EGRESS_ALLOW
					? egress_names[req->egress]
					: "deny");
	json_append_key(out, "image", false);
	json_append_string(out, req->image);
	json_append_key(out, "env", false);
	json_env_names(out, req->env);
	g_string_append_c(out, '}');
}

/* Every line's head: its time and its event (the object left open). */
static GString *line_begin(const char *event, gsize size)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autofree char *time = g_date_time_format(now, "%Y-%m-%dT%H:%M:%S.%fZ");
	GString *s = g_string_sized_new(size);
	g_string_append_c(s, '{');
	json_append_key(s, "time", true);
	json_append_string(s, time);
	json_append_key(s, "event", false);
	json_append_string(s, event);
	return s;
}

char *audit_line(const cordon_policy *p, const cordon_request *req, const cordon_decision *d)
{
	GString *s = line_begin("decision", 1024);
	json_append_key(s, "id", false);
	json_append_string(s, d->id);
	json_append_key(s, "caller", false);
	json_caller(s, req->caller);
	json_append_key(s, "dry_run", false);
	json_append_bool(s, d->dry_run);
	json_append_key(s, "policy", false);
	json_append_string(s, p->source);
	json_append_key(s, "policy_sha256", false);
	json_append_string(s, p->sha256);
	json_append_key(s, "request", false);
	json_request(s, req);
	g_string_append_c(s, ',');
	decision_json_members(s, d);
	g_string_append(s, "}\n");
	return g_string_free(s, FALSE);
}

static int fail(cordon_error **reterr, int errnum, const char *path, const char *what)
{
	return error_set(reterr, errnum, CORDON_ERROR_TERMINAL, ERRC(audit_failed),
			 "the audit trail %s cannot be written: %s", path, what);
}

static int write_locked(int fd, const char *path, const char *line, size_t len,
			cordon_error **reterr)
{
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return fail(reterr, errno, path, g_strerror(errno));
	/* One write of the whole line: on a local filesystem an O_APPEND write
	 * is atomic with respect to other appenders; the lock covers the rest. */
	ssize_t n;
	do
		n = write(fd, line, len);
	while (n < 0 && errno == EINTR);
	int r = 0;
	if (n < 0)
		r = fail(reterr, errno, path, g_strerror(errno));
	else if ((size_t)n != len)
		r = fail(reterr, EIO, path, "short write (disk full?)");
	flock(fd, LOCK_UN);
	return r;
}

int audit_append(const char *path, const char *line, size_t len, cordon_error **reterr)
{
	/* The trusted-file rules (filetrust.c), as for the policy: a trail that
	 * another user owns or could replace, or whose directory they could
	 * change, would let them read, forge or truncate what root wrote. */
	int fd = -1;
	g_autofree char *why = NULL;
	int r = filetrust_open_flags(path, O_WRONLY | O_APPEND | O_CREAT, 0600, &fd, &why);
	if (r < 0)
		return error_set(reterr, -r, CORDON_ERROR_TERMINAL, ERRC(audit_failed),
				 "the audit trail cannot be written: %s", why);
	r = write_locked(fd, path, line, len, reterr);
	close(fd);
	return r;
}

static int append_line(cordon_context *ctx, const char *line, cordon_error **reterr)
{
	g_mutex_lock(&ctx->audit_lock);
	int r = audit_append(ctx->policy->audit_path, line, strlen(line), reterr);
	g_mutex_unlock(&ctx->audit_lock);
	return r;
}

int audit_record(cordon_context *ctx, const cordon_request *req, cordon_decision *d,
		 cordon_error **reterr)
{
	if (!d)
		return 0; /* nothing decided, nothing to record */
	/* Every decision gets an id, audited or not: a sandbox it opens carries it. */
	if (!d->id[0]) {
		g_autofree char *uuid = g_uuid_string_random();
		g_strlcpy(d->id, uuid, sizeof(d->id));
	}
	const cordon_policy *p = ctx->policy;
	if (!p->audit_path)
		return 0;
	g_autofree char *line = audit_line(p, req, d);
	return append_line(ctx, line, reterr);
}

/* The argv as the policy's record_argv says: in full, as the SHA-256 of its words
 * each ended by a NUL (so that "a b" and "a", "b" differ), or not at all. */
static void json_argv(GString *out, int mode, const char *const *argv)
{
	if (mode == AUDIT_ARGV_FULL) {
		json_append_key(out, "argv", false);
		g_string_append_c(out, '[');
		for (size_t i = 0; argv[i]; i++) {
			if (i)
				g_string_append_c(out, ',');
			json_append_string(out, argv[i]);
		}
		g_string_append_c(out, ']');
	} else if (mode == AUDIT_ARGV_HASH) {
		g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
		for (size_t i = 0; argv[i]; i++)
			g_checksum_update(sum, (const guchar *)argv[i],
					  (gssize)strlen(argv[i]) + 1);
		json_append_key(out, "argv_sha256", false);
		json_append_string(out, g_checksum_get_string(sum));
	}
}

static void json_status(GString *out, const audit_outcome *o)
{
	const cordon_plugin_run_status *st = o->status;
	bool sig = st && (st->flags & CORDON_PLUGIN_RUNSTATUS_SIGNALED);
	json_append_key(out, "exit_code", false);
	if (st && !sig)
		json_append_u64(out, (uint64_t)(uint32_t)st->exit_code);
	else
		g_string_append(out, "null");
	json_append_key(out, "signal", false);
	if (sig)
		json_append_u64(out, (uint64_t)st->signal);
	else
		g_string_append(out, "null");
	json_append_key(out, "limits_hit", false);
	g_string_append_c(out, '[');
	bool first = true;
	const char *hit[] = {
		st && (st->flags & CORDON_PLUGIN_RUNSTATUS_TIMED_OUT) ? "timeout" : NULL,
		o->output_capped ? "output" : NULL,
		st && (st->flags & CORDON_PLUGIN_RUNSTATUS_OOM) ? "oom" : NULL,
	};
	for (size_t i = 0; i < G_N_ELEMENTS(hit); i++)
		if (hit[i]) {
			if (!first)
				g_string_append_c(out, ',');
			json_append_string(out, hit[i]);
			first = false;
		}
	g_string_append_c(out, ']');
	json_append_key(out, "cancelled", false);
	json_append_bool(out, st && (st->flags & CORDON_PLUGIN_RUNSTATUS_CANCELLED));
}

char *audit_run_line(const cordon_policy *p, const cordon_sandbox *sb, const audit_outcome *o)
{
	GString *s = line_begin("run", 512);
	json_append_key(s, "kind", false);
	json_append_string(s, o->kind);
	json_append_key(s, "decision", false);
	json_append_string(s, sb->decision_id);
	json_append_key(s, "sandbox", false);
	json_append_string(s, sb->id);
	json_append_key(s, "tier", false);
	json_append_string(s, sb->tier->cfg->name);
	json_append_key(s, "caller", false);
	json_caller(s, sb->caller);
	json_argv(s, p->audit_argv, o->argv);
	json_append_key(s, "error", false);
	json_append_string(s, o->error_code);
	json_status(s, o);
	json_append_key(s, "duration_ms", false);
	json_append_u64(s, o->duration_us / 1000);
	json_append_key(s, "bytes_out", false);
	g_string_append_printf(
		s, "{\"stdout\":%" G_GUINT64_FORMAT ",\"stderr\":%" G_GUINT64_FORMAT "}",
		o->bytes[1], o->bytes[2]);
	g_string_append(s, "}\n");
	return g_string_free(s, FALSE);
}

void audit_run(const cordon_sandbox *sb, const audit_outcome *o)
{
	cordon_context *ctx = sb->ctx;
	if (!ctx->policy->audit_path)
		return;
	g_autofree char *line = audit_run_line(ctx->policy, sb, o);
	cordon_error *err = NULL;
	/* The work has run: a record that cannot be written can refuse nothing any
	 * more, so it is said loudly instead (the host's log handler sees it). */
	if (append_line(ctx, line, &err) < 0)
		g_warning("the outcome of a run in sandbox %s is not audited: %s", sb->id,
			  err->message);
	cordon_error_free(err);
}

/* An egress or service line's head: time, event and the sandbox it belongs to (object left open). */
static GString *egress_line_begin(const audit_egress_ref *r, const char *event)
{
	GString *s = line_begin(event, 512);
	json_append_key(s, "decision", false);
	json_append_string(s, r->decision);
	json_append_key(s, "sandbox", false);
	json_append_string(s, r->sandbox);
	json_append_key(s, "tier", false);
	json_append_string(s, r->tier);
	return s;
}

/* Appends the finished line; the connection or change is over, so a failure is said loudly. */
static void egress_line_end(const audit_egress_ref *r, GString *s, const char *what)
{
	cordon_error *err = NULL;
	if (append_line(r->ctx, s->str, &err) < 0)
		g_warning("%s of sandbox %s is not audited: %s", what, r->sandbox, err->message);
	cordon_error_free(err);
	g_string_free(s, TRUE);
}

void audit_egress(void *ref, const char *method, const char *host, uint32_t port,
		  const char *address, int allowed, const char *reason, uint64_t bytes_up,
		  uint64_t bytes_down)
{
	const audit_egress_ref *r = ref;
	g_debug("egress: sandbox %s: %s %s:%u %s%s%s", r->sandbox, method, host, (unsigned)port,
		allowed ? "allowed" : "refused", reason[0] ? ": " : "", reason);
	if (!r->ctx->policy->audit_path)
		return;
	GString *s = egress_line_begin(r, "egress");
	json_append_key(s, "method", false);
	json_append_string(s, method);
	json_append_key(s, "host", false);
	json_append_string(s, host);
	json_append_key(s, "port", false);
	json_append_u64(s, port);
	json_append_key(s, "address", false);
	json_append_string(s, address);
	json_append_key(s, "verdict", false);
	json_append_string(s, allowed ? "allowed" : "refused");
	json_append_key(s, "reason", false);
	json_append_string(s, reason);
	json_append_key(s, "bytes", false);
	g_string_append_printf(s,
			       "{\"up\":%" G_GUINT64_FORMAT ",\"down\":%" G_GUINT64_FORMAT "}}\n",
			       bytes_up, bytes_down);
	egress_line_end(r, s, "a governed connection");
}

void audit_service(const audit_egress_ref *r, const char *name, const char *host, uint32_t port,
		   const net_service_event *ev)
{
	g_debug("service %s: sandbox %s: %s %s %s %d", name, r->sandbox, ev->method, ev->path,
		ev->allowed ? "carried" : "refused", ev->status);
	if (!r->ctx->policy->audit_path)
		return;
	GString *s = egress_line_begin(r, "service");
	json_append_key(s, "service", false);
	json_append_string(s, name);
	json_append_key(s, "host", false);
	json_append_string(s, host);
	json_append_key(s, "port", false);
	json_append_u64(s, port);
	json_append_key(s, "method", false);
	json_append_string(s, ev->method);
	json_append_key(s, "path", false);
	json_append_string(s, ev->path);
	json_append_key(s, "status", false);
	json_append_u64(s, (uint64_t)ev->status);
	json_append_key(s, "verdict", false);
	json_append_string(s, ev->allowed ? "allowed" : "refused");
	json_append_key(s, "reason", false);
	json_append_string(s, ev->reason);
	json_append_key(s, "bytes", false);
	g_string_append_printf(s,
			       "{\"up\":%" G_GUINT64_FORMAT ",\"down\":%" G_GUINT64_FORMAT "}}\n",
			       ev->bytes_up, ev->bytes_down);
	egress_line_end(r, s, "a service's connection");
}

static void json_strv(GString *s, const char *key, const char *const *v)
{
	json_append_key(s, key, false);
	if (!v) {
		g_string_append(s, "null");
		return;
	}
	g_string_append_c(s, '[');
	for (size_t i = 0; v[i]; i++) {
		if (i)
			g_string_append_c(s, ',');
		json_append_string(s, v[i]);
	}
	g_string_append_c(s, ']');
}

void audit_egress_change(const audit_egress_ref *r, const char *const *allow,
			 const char *const *deny, const char *error_code)
{
	if (!r->ctx->policy->audit_path)
		return;
	GString *s = egress_line_begin(r, "egress_change");
	json_strv(s, "allow", allow);
	json_strv(s, "deny", deny);
	json_append_key(s, "error", false);
	json_append_string(s, error_code);
	g_string_append(s, "}\n");
	egress_line_end(r, s, "an egress change");
}
