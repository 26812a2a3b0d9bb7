/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit trail. Every decision, admitted or refused, is one JSON line.
 * Lines from threads (ctx->audit_lock) and processes (flock) never
 * interleave: each is one write(2) of the whole line on an O_APPEND fd. */
#include "config.h"

#include "audit.h"

#include "filetrust.h"
#include "json.h"

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
	json_append_key(out, "limits", false);
	decision_json_limits(out, &req->limits);
	json_append_key(out, "egress", false);
	json_append_string(out, (unsigned)req->egress <= CORDON_EGRESS_ALLOW ? egress_names[req->egress]
									      : "deny");
	json_append_key(out, "image", false);
	json_append_string(out, req->image);
	json_append_key(out, "env", false);
	json_env_names(out, req->env);
	g_string_append_c(out, '}');
}

char *audit_line(const cordon_policy *p, const cordon_request *req, const cordon_decision *d)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autofree char *time = g_date_time_format(now, "%Y-%m-%dT%H:%M:%S.%fZ");
	GString *s = g_string_sized_new(1024);
	g_string_append_c(s, '{');
	json_append_key(s, "time", true);
	json_append_string(s, time);
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

int audit_record(cordon_context *ctx, const cordon_request *req, const cordon_decision *d,
		 cordon_error **reterr)
{
	const cordon_policy *p = ctx->policy;
	if (!p->audit_path)
		return 0;
	g_autofree char *line = audit_line(p, req, d);
	g_mutex_lock(&ctx->audit_lock);
	int r = audit_append(p->audit_path, line, strlen(line), reterr);
	g_mutex_unlock(&ctx->audit_lock);
	return r;
}
