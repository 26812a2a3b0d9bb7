/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox table: each E2B sandbox is one cordon sandbox, opened through
 * the policy (admission, limits, audit), owned by the API key that created
 * it, and closed when it is killed, when its timeout lapses, or at shutdown.
 *
 * A sandbox is reference counted under the server lock: the table holds one
 * reference while it is live, each request and each running process one more;
 * the last release closes the cordon sandbox, so a kill never frees what a
 * request still uses.
 */
#include "config.h"

#include "server.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

server srv;

static void random_chars(char *out, size_t n, const char *alphabet)
{
	size_t k = strlen(alphabet);
	guint8 buf[64];
	g_assert(n <= sizeof(buf));
	for (size_t got = 0; got < n;) {
		ssize_t r = getrandom(buf + got, n - got, 0);
		if (r < 0 && errno != EINTR)
			g_error("getrandom: %s", g_strerror(errno));
		got += r > 0 ? (size_t)r : 0;
	}
	/* 256 % 36 != 0: the small bias leaves ~103 bits in 20 characters. */
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[buf[i] % k];
	out[n] = '\0';
	explicit_bzero(buf, sizeof(buf));
}

static void sandbox_free(srv_sandbox *s)
{
	cordon_sandbox_close(s->sb);
	g_strfreev(s->env);
	json_object_put(s->metadata);
	g_free(s->template_name);
	g_hash_table_unref(s->procs);
	explicit_bzero(s->token, sizeof(s->token));
	g_free(s);
	g_mutex_lock(&srv.lock);
	srv.open--;
	g_cond_broadcast(&srv.cond);
	g_mutex_unlock(&srv.lock);
}

void srv_sandbox_unref(srv_sandbox *s)
{
	if (!s)
		return;
	g_mutex_lock(&srv.lock);
	bool last = --s->refs == 0;
	g_mutex_unlock(&srv.lock);
	if (last)
		sandbox_free(s);
}

static char **env_grants(json_object *env_vars)
{
	GPtrArray *a = g_ptr_array_new();
	if (env_vars) {
		SRV_FOR_MEMBERS(env_vars, it, end)
		g_ptr_array_add(a, g_strdup_printf("%s=%s", json_object_iter_peek_name(&it),
						   json_object_get_string(
							   json_object_iter_peek_value(&it))));
	}
	g_ptr_array_add(a, NULL);
	return (char **)g_ptr_array_free(a, FALSE);
}

static int open_sandbox(const srv_template *t, cordon_sandbox **ret, int *ret_status,
			char **ret_error, char **ret_code)
{
	cordon_request *req = cordon_request_new(t->trust);
	cordon_error *err = NULL;
	int r = cordon_request_add_label(req, "e2b.template", t->name, &err);
	if (r >= 0 && t->tier)
		r = cordon_request_set_tier(req, t->tier, &err);
	if (r >= 0)
		r = cordon_sandbox_open(srv.ctx, req, ret, &err);
	cordon_request_free(req);
	if (r >= 0)
		return 0;
	switch (cordon_error_get_class(err)) {
	case CORDON_ERROR_FORBIDDEN: *ret_status = 403; break;
	case CORDON_ERROR_TRANSIENT: *ret_status = 503; break;
	case CORDON_ERROR_INVALID: *ret_status = 400; break;
	default: *ret_status = 500;
	}
	*ret_error = g_strdup_printf("cordon refused template '%s' (trust %s): %s", t->name,
				     t->trust, cordon_error_get_message(err));
	*ret_code = g_strdup(cordon_error_get_code(err));
	cordon_error_free(err);
	return r;
}

srv_sandbox *srv_sandbox_create(int key, const srv_template *t, uint64_t timeout_s,
				json_object *env_vars, json_object *metadata, int *ret_status,
				char **ret_error, char **ret_code)
{
	g_mutex_lock(&srv.lock);
	bool over = srv.per_key[key] >= srv.cfg.sandboxes_per_key;
	bool stopping = srv.stopping;
	if (!over && !stopping) {
		srv.per_key[key]++; /* reserved now: concurrent creates cannot pass the quota */
		srv.open++;
	}
	g_mutex_unlock(&srv.lock);
	if (over || stopping) {
		*ret_status = over ? 429 : 503;
		*ret_error = over ? g_strdup_printf("this API key has its quota of %u sandboxes "
						    "running; kill one first",
						    srv.cfg.sandboxes_per_key)
				  : g_strdup("the server is shutting down");
		*ret_code = g_strdup(over ? "sandbox_quota" : "shutting_down");
		return NULL;
	}
	cordon_sandbox *sb = NULL;
	if (open_sandbox(t, &sb, ret_status, ret_error, ret_code) < 0) {
		g_mutex_lock(&srv.lock);
		srv.per_key[key]--;
		srv.open--;
		g_cond_broadcast(&srv.cond);
		g_mutex_unlock(&srv.lock);
		return NULL;
	}
	srv_sandbox *s = g_new0(srv_sandbox, 1);
	s->refs = 2; /* the table's and the caller's */
	random_chars(s->id + 1, SRV_ID_LEN - 1, "abcdefghijklmnopqrstuvwxyz0123456789");
	s->id[0] = 'i';
	random_chars(s->token, SRV_TOKEN_LEN, "0123456789abcdef");
	s->template_name = g_strdup(t->name);
	s->key = key;
	s->sb = sb;
	s->env = env_grants(env_vars);
	s->metadata = metadata ? json_object_get(metadata) : json_object_new_object();
	s->started = g_get_real_time();
	s->end = s->started + (int64_t)timeout_s * G_USEC_PER_SEC;
	s->procs = g_hash_table_new(g_direct_hash, g_direct_equal);
	s->next_pid = 1000;
	g_mutex_lock(&srv.lock);
	bool late = srv.stopping; /* the reaper has already ended the table's sandboxes */
	if (late) {
		s->refs = 1;
		s->dead = true;
		srv.per_key[key]--;
	} else {
		g_hash_table_insert(srv.sandboxes, s->id, s);
	}
	g_cond_broadcast(&srv.cond); /* the reaper's next deadline may be this one */
	g_mutex_unlock(&srv.lock);
	if (late) {
		srv_sandbox_unref(s);
		*ret_status = 503;
		*ret_error = g_strdup("the server is shutting down");
		*ret_code = g_strdup("shutting_down");
		return NULL;
	}
	return s;
}

static srv_sandbox *lookup_locked(const char *id, int key)
{
	srv_sandbox *s = g_hash_table_lookup(srv.sandboxes, id);
	/* Another key's sandbox does not exist for this one. */
	return s && (key < 0 || s->key == key) ? s : NULL;
}

srv_sandbox *srv_sandbox_get(const char *id, int key)
{
	g_mutex_lock(&srv.lock);
	srv_sandbox *s = lookup_locked(id, key);
	if (s)
		s->refs++;
	g_mutex_unlock(&srv.lock);
	return s;
}

/* Under the lock: out of the table, its quota slot given back. */
static void detach_locked(srv_sandbox *s)
{
	g_hash_table_remove(srv.sandboxes, s->id);
	s->dead = true;
	srv.per_key[s->key]--;
}

static void end_sandbox(srv_sandbox *s)
{
	srv_procs_cancel_all(s);
	srv_sandbox_unref(s); /* the table's reference */
}

bool srv_sandbox_kill(const char *id, int key)
{
	g_mutex_lock(&srv.lock);
	srv_sandbox *s = lookup_locked(id, key);
	if (s)
		detach_locked(s);
	g_mutex_unlock(&srv.lock);
	if (s)
		end_sandbox(s);
	return s != NULL;
}

bool srv_sandbox_set_timeout(const char *id, int key, uint64_t timeout_s, bool extend_only)
{
	int64_t end = g_get_real_time() + (int64_t)timeout_s * G_USEC_PER_SEC;
	g_mutex_lock(&srv.lock);
	srv_sandbox *s = lookup_locked(id, key);
	int64_t left = (int64_t)timeout_s * G_USEC_PER_SEC;
	if (s && s->paused && (!extend_only || left > s->paused_left))
		s->paused_left = left; /* counted from the resume */
	else if (s && !s->paused && (!extend_only || end > s->end))
		s->end = end;
	g_cond_broadcast(&srv.cond);
	g_mutex_unlock(&srv.lock);
	return s != NULL;
}

bool srv_sandbox_paused(srv_sandbox *s)
{
	g_mutex_lock(&srv.lock);
	bool paused = s->paused;
	g_mutex_unlock(&srv.lock);
	return paused;
}

/* Outside the lock: the tier's freeze may take a while (a remote call). Only one of
 * them at a time on a sandbox matters to the library, which makes a second a no-op. */
int srv_sandbox_pause(srv_sandbox *s, cordon_error **err)
{
	if (srv_sandbox_paused(s))
		return 1;
	int r = cordon_sandbox_pause(s->sb, err);
	if (r < 0)
		return r;
	g_mutex_lock(&srv.lock);
	if (!s->paused)
		s->paused_left = MAX(s->end - g_get_real_time(), 0);
	s->paused = true;
	g_cond_broadcast(&srv.cond);
	g_mutex_unlock(&srv.lock);
	return 0;
}

int srv_sandbox_resume(srv_sandbox *s, cordon_error **err)
{
	if (!srv_sandbox_paused(s))
		return 1;
	int r = cordon_sandbox_resume(s->sb, err);
	if (r < 0)
		return r;
	g_mutex_lock(&srv.lock);
	if (s->paused)
		s->end = g_get_real_time() + s->paused_left;
	s->paused = false;
	g_cond_broadcast(&srv.cond); /* the reaper's next deadline may be this one */
	g_mutex_unlock(&srv.lock);
	return 0;
}

GPtrArray *srv_sandbox_list(int key)
{
	GPtrArray *a = g_ptr_array_new();
	GHashTableIter it;
	gpointer v;
	g_mutex_lock(&srv.lock);
	g_hash_table_iter_init(&it, srv.sandboxes);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		srv_sandbox *s = v;
		if (s->key == key) {
			s->refs++;
			g_ptr_array_add(a, s);
		}
	}
	g_mutex_unlock(&srv.lock);
	return a;
}

/* ---- timeouts and shutdown -------------------------------------------------------- */

/* Under the lock: the sandboxes whose time is up leave the table; returns
 * them and the next deadline. */
static GPtrArray *expired_locked(int64_t now, int64_t *next)
{
	GPtrArray *gone = g_ptr_array_new();
	GHashTableIter it;
	gpointer v;
	*next = now + 60 * G_USEC_PER_SEC;
	g_hash_table_iter_init(&it, srv.sandboxes);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		srv_sandbox *s = v;
		if (s->paused && !srv.stopping)
			continue; /* its time to live does not count */
		if (s->end <= now || srv.stopping)
			g_ptr_array_add(gone, s);
		else if (s->end < *next)
			*next = s->end;
	}
	for (guint i = 0; i < gone->len; i++)
		detach_locked(gone->pdata[i]);
	return gone;
}

static gpointer reaper(gpointer unused)
{
	g_mutex_lock(&srv.lock);
	for (;;) {
		int64_t next;
		GPtrArray *gone = expired_locked(g_get_real_time(), &next);
		bool stop = srv.stopping;
		g_mutex_unlock(&srv.lock);
		for (guint i = 0; i < gone->len; i++) {
			srv_sandbox *s = gone->pdata[i];
			g_message("sandbox %s: %s, killed", s->id,
				  stop ? "shutting down" : "its timeout lapsed");
			end_sandbox(s);
		}
		g_ptr_array_unref(gone);
		g_mutex_lock(&srv.lock);
		if (stop && srv.stopping)
			break;
		/* Monotonic wait for a real-time deadline, re-checked on each wake. */
		int64_t wait = next - g_get_real_time();
		if (wait > 0 && !srv.stopping)
			g_cond_wait_until(&srv.cond, &srv.lock, g_get_monotonic_time() + wait);
	}
	g_mutex_unlock(&srv.lock);
	return NULL;
}

void srv_reaper_start(void) { srv.reaper = g_thread_new("reaper", reaper, NULL); }

void srv_shutdown_begin(void)
{
	g_mutex_lock(&srv.lock);
	srv.stopping = true;
	g_cond_broadcast(&srv.cond);
	g_mutex_unlock(&srv.lock);
	g_thread_join(srv.reaper);
}

void srv_shutdown_wait(void)
{
	/* The reaper killed every sandbox; wait for the requests and processes
	 * that still hold one to let go, so that all are closed on exit. */
	g_mutex_lock(&srv.lock);
	while (srv.open > 0)
		g_cond_wait(&srv.cond, &srv.lock);
	g_mutex_unlock(&srv.lock);
}
