/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `test` plugin: driver "fake", a FAKE tier for host-level tests.
 *
 * It isolates nothing and runs no program. It exists so that tests of the
 * core (admission, context, the sandbox port, the CLI) can have tiers of any
 * containment and availability without privileges, loaded through the real
 * loader and ABI. Built for `make check` only; never installed.
 *
 * Policy keys:  containment: process-jail|kernel|container|userspace-kernel|
 *                            microvm|remote   (default process-jail)
 *               available: BOOL               (default true)
 *               reason: STRING                (the probe's reason)
 *               open_error: STRING            (open fails with this message)
 *               egress_enforced: BOOL         (default true: the probe declares
 *                                              egress deny and governed enforced)
 *
 * run understands a few words (argv[0], or the words of `sh -c LINE`):
 *   echo ARGS...   ARGS joined by spaces and a newline on stdout, exit 0
 *   fail ARGS...   the same on stderr, exit 1
 *   exit N         exit N
 *   cat            stdin to stdout
 *   env            the environment the core computed, one per line
 *   sleep MS       waits MS milliseconds, honouring timeout and cancel_fd
 *   anything else  "fake: NAME: unknown command" on stderr, exit 127
 * Files live in memory per sandbox; paths are checked with
 * fake_host->path_is_confined.
 *
 * Like a third-party plugin, it uses only <cordon/plugin.h> and libc.
 */
#include <cordon/plugin.h>

#include "errcodes.h"

#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const cordon_host *fake_host;

typedef struct fake_tier {
	uint32_t containment;
	bool available;
	char reason[CORDON_PLUGIN_REASON_MAX];
	const char *open_error; /* borrowed from the policy */
	bool egress_enforced;
} fake_tier;

typedef struct fake_file {
	struct fake_file *next;
	char *path;
	void *data;
	size_t len;
} fake_file;

typedef struct fake_sandbox {
	pthread_mutex_t lock; /* guards files: sandboxes are used from many threads */
	fake_file *files;
} fake_sandbox;

/* ---- configure / probe ------------------------------------------------------ */

static const char *const containment_names[] = {
	NULL, "process-jail", "kernel", "container", "userspace-kernel", "microvm", "remote",
};

static int fake_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			  cordon_plugin_error *err)
{
	fake_tier *t = fake_host->alloc(sizeof(*t));
	const char *s = NULL;
	t->containment = CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL;
	t->available = true;
	if (fake_host->config_string(cfg, "containment", &s) > 0) {
		t->containment = 0;
		for (uint32_t i = 1; i < sizeof(containment_names) / sizeof(*containment_names);
		     i++)
			if (strcmp(s, containment_names[i]) == 0)
				t->containment = i;
		if (!t->containment) {
			fake_host->free(t);
			return fake_host->config_error(cfg, "containment", err,
						       "unknown containment '%s'", s);
		}
	}
	fake_host->config_bool(cfg, "available", &t->available);
	t->egress_enforced = true;
	fake_host->config_bool(cfg, "egress_enforced", &t->egress_enforced);
	s = "fake tier (no isolation)";
	fake_host->config_string(cfg, "reason", &s);
	snprintf(t->reason, sizeof(t->reason), "%s", s);
	fake_host->config_string(cfg, "open_error", &t->open_error);
	*ret_tier = t;
	return 0;
}

static void fake_unconfigure(void *tier) { fake_host->free(tier); }

static int fake_probe(void *tier, cordon_plugin_probe *ret)
{
	const fake_tier *t = tier;
	ret->available = t->available;
	ret->containment = t->containment;
	ret->egress_enforced = t->egress_enforced
				       ? CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY) |
						 CORDON_PLUGIN_EGRESS_BIT(
							 CORDON_PLUGIN_EGRESS_GOVERNED)
				       : 0;
	snprintf(ret->reason, sizeof(ret->reason), "%s", t->reason);
	return 0;
}

static int fake_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		     cordon_plugin_error *err)
{
	const fake_tier *t = tier;
	if (t->open_error)
		return fake_host->error_set(err, -EIO, CORDON_PLUGIN_ERROR_TERMINAL,
					    ERRC(fake_open_failed), "%s", t->open_error);
	fake_sandbox *sb = fake_host->alloc(sizeof(*sb));
	pthread_mutex_init(&sb->lock, NULL);
	*ret_sandbox = sb;
	return 0;
}

static void fake_close(void *sandbox)
{
	fake_sandbox *sb = sandbox;
	for (fake_file *f = sb->files, *next; f; f = next) {
		next = f->next;
		fake_host->free(f->path);
		fake_host->free(f->data);
		fake_host->free(f);
	}
	pthread_mutex_destroy(&sb->lock);
	fake_host->free(sb);
}

/* ---- run ------------------------------------------------------------------------ */

static void emit_words(const cordon_plugin_run_sink *sink, uint32_t stream,
		       const char *const *words)
{
	for (size_t i = 0; words[i]; i++) {
		if (i)
			sink->output(sink->ctx, stream, " ", 1);
		sink->output(sink->ctx, stream, words[i], strlen(words[i]));
	}
	sink->output(sink->ctx, stream, "\n", 1);
}

/* Waits ms, or less when the run's timeout or cancel_fd says so. */
static uint32_t fake_sleep(const cordon_plugin_run_spec *spec, uint64_t ms)
{
	bool timeout = ms >= spec->timeout_ms;
	uint64_t wait = timeout ? spec->timeout_ms : ms;
	if (spec->cancel_fd >= 0) {
		struct pollfd p = { .fd = spec->cancel_fd, .events = POLLIN };
		if (poll(&p, 1, (int)(wait > 3600000 ? 3600000 : wait)) > 0)
			return CORDON_PLUGIN_RUNSTATUS_CANCELLED;
	} else {
		struct timespec ts = { (time_t)(wait / 1000), (long)(wait % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return timeout ? CORDON_PLUGIN_RUNSTATUS_TIMED_OUT : 0;
}

static int32_t fake_command(const cordon_plugin_run_spec *spec, const char *const *w,
			    const cordon_plugin_run_sink *sink, uint32_t *flags)
{
	const char *cmd = w[0];
	if (strcmp(cmd, "echo") == 0) {
		emit_words(sink, 1, w + 1);
		return 0;
	}
	if (strcmp(cmd, "fail") == 0) {
		emit_words(sink, 2, w + 1);
		return 1;
	}
	if (strcmp(cmd, "exit") == 0)
		return w[1] ? (int32_t)strtol(w[1], NULL, 10) : 0;
	if (strcmp(cmd, "cat") == 0) {
		if (spec->stdin_len)
			sink->output(sink->ctx, 1, spec->stdin_data, (size_t)spec->stdin_len);
		return 0;
	}
	if (strcmp(cmd, "env") == 0) {
		for (size_t i = 0; spec->envp && spec->envp[i]; i++) {
			sink->output(sink->ctx, 1, spec->envp[i], strlen(spec->envp[i]));
			sink->output(sink->ctx, 1, "\n", 1);
		}
		return 0;
	}
	if (strcmp(cmd, "sleep") == 0) {
		*flags = fake_sleep(spec, w[1] ? strtoull(w[1], NULL, 10) : 0);
		return *flags ? -1 : 0;
	}
	if (strcmp(cmd, "flags") == 0) { /* the run flags the core passed */
		char buf[16];
		int n = snprintf(buf, sizeof(buf), "%u", spec->flags);
		sink->output(sink->ctx, 1, buf, (size_t)n);
		return 0;
	}
	static const char unknown[] = ": unknown command\n";
	sink->output(sink->ctx, 2, "fake: ", 6);
	sink->output(sink->ctx, 2, cmd, strlen(cmd));
	sink->output(sink->ctx, 2, unknown, sizeof(unknown) - 1);
	return 127;
}

/* `sh -c LINE` (what exec sends) is split into words on spaces. */
static char **split_line(const char *line)
{
	size_t n = 0, len = strlen(line);
	char **w = fake_host->alloc((len / 2 + 2) * sizeof(*w));
	for (const char *p = line; *p;) {
		while (*p == ' ')
			p++;
		const char *end = p;
		while (*end && *end != ' ')
			end++;
		if (end > p) {
			w[n] = fake_host->alloc((size_t)(end - p) + 1);
			memcpy(w[n++], p, (size_t)(end - p));
		}
		p = end;
	}
	return w;
}

static int fake_run(void *sandbox, const cordon_plugin_run_spec *spec,
		    const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		    cordon_plugin_error *err)
{
	const char *const *words = spec->argv;
	char **line = NULL;
	const char *base = strrchr(spec->argv[0], '/');
	base = base ? base + 1 : spec->argv[0];
	if (strcmp(base, "sh") == 0 && spec->argv[1] && strcmp(spec->argv[1], "-c") == 0 &&
	    spec->argv[2]) {
		line = split_line(spec->argv[2]);
		words = (const char *const *)line;
	}
	uint32_t flags = 0;
	int32_t code = words[0] ? fake_command(spec, words, sink, &flags) : 0;
	ret->flags = flags ? flags : CORDON_PLUGIN_RUNSTATUS_EXITED;
	ret->exit_code = flags ? -1 : code;
	for (size_t i = 0; line && line[i]; i++)
		fake_host->free(line[i]);
	fake_host->free(line);
	return 0;
}

/* ---- files ------------------------------------------------------------------------ */

static fake_file *find_file(fake_sandbox *sb, const char *path)
{
	for (fake_file *f = sb->files; f; f = f->next)
		if (strcmp(f->path, path) == 0)
			return f;
	return NULL;
}

static int bad_path(const char *path, cordon_plugin_error *err)
{
	return fake_host->error_set(err, -EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    ERRC(sandbox_path_escape), "path '%s' leaves the sandbox",
				    path);
}

static int fake_read_file(void *sandbox, const char *path, uint64_t max_len,
			  cordon_plugin_emit_fn emit, void *ctx, cordon_plugin_error *err)
{
	fake_sandbox *sb = sandbox;
	if (!fake_host->path_is_confined(path))
		return bad_path(path, err);
	pthread_mutex_lock(&sb->lock);
	const fake_file *f = find_file(sb, path);
	int r = !f ? -ENOENT : f->len > max_len ? -EFBIG : 0;
	if (r == 0)
		r = emit(ctx, f->data, f->len);
	pthread_mutex_unlock(&sb->lock);
	if (r == -ENOENT)
		return fake_host->error_set(err, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL,
					    ERRC(not_found), "%s: no such file", path);
	return r;
}

static int fake_write_file(void *sandbox, const char *path, const void *data, uint64_t len,
			   cordon_plugin_error *err)
{
	fake_sandbox *sb = sandbox;
	if (!fake_host->path_is_confined(path))
		return bad_path(path, err);
	void *copy = fake_host->alloc((size_t)len);
	memcpy(copy, data, (size_t)len);
	pthread_mutex_lock(&sb->lock);
	fake_file *f = find_file(sb, path);
	if (!f) {
		f = fake_host->alloc(sizeof(*f));
		f->path = fake_host->strdup(path);
		f->next = sb->files;
		sb->files = f;
	}
	fake_host->free(f->data);
	f->data = copy;
	f->len = (size_t)len;
	pthread_mutex_unlock(&sb->lock);
	return 0;
}

/* Whether path lies under the directory prefix (every path does under NULL). */
static bool under(const char *path, const char *prefix)
{
	if (!prefix)
		return true;
	size_t plen = strlen(prefix);
	return strncmp(path, prefix, plen) == 0 && path[plen] == '/';
}

/* Emits every path that matches; under the lock, so emit must not call back. */
static int emit_matching(fake_sandbox *sb, const char *pattern, const char *prefix,
			 cordon_plugin_emit_fn emit, void *ctx)
{
	int r = 0;
	pthread_mutex_lock(&sb->lock);
	for (const fake_file *f = sb->files; f && r == 0; f = f->next) {
		bool match = pattern ? fnmatch(pattern, f->path, FNM_PATHNAME) == 0
				     : under(f->path, prefix);
		if (match)
			r = emit(ctx, f->path, strlen(f->path));
	}
	pthread_mutex_unlock(&sb->lock);
	return r;
}

static int fake_glob(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
		     cordon_plugin_error *err)
{
	if (!fake_host->path_is_confined(pattern))
		return bad_path(pattern, err);
	return emit_matching(sandbox, pattern, NULL, emit, ctx);
}

static int fake_walk(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
		     cordon_plugin_error *err)
{
	if (strcmp(dir, ".") != 0 && strcmp(dir, "") != 0 && !fake_host->path_is_confined(dir))
		return bad_path(dir, err);
	bool all = strcmp(dir, ".") == 0 || strcmp(dir, "") == 0;
	return emit_matching(sandbox, NULL, all ? NULL : dir, emit, ctx);
}

static int fake_gc(void *tier, cordon_plugin_error *err)
{
	return 0; /* nothing outlives a fake sandbox */
}

/* ---- the plugin ------------------------------------------------------------------------ */

static const cordon_plugin_config_key fake_keys[] = {
	{ "containment", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "available", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "reason", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "open_error", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "egress_enforced", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ NULL, 0, 0 },
};

static const cordon_plugin_driver fake_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "fake",
	.config_keys = fake_keys,
	.configure = fake_configure,
	.unconfigure = fake_unconfigure,
	.probe = fake_probe,
	.open = fake_open,
	.run = fake_run,
	.read_file = fake_read_file,
	.write_file = fake_write_file,
	.glob = fake_glob,
	.walk = fake_walk,
	.close = fake_close,
	.gc = fake_gc,
};

static int test_init(const cordon_host *h, cordon_plugin_registrar *reg, cordon_plugin_error *err)
{
	fake_host = h;
	return fake_host->register_driver(reg, &fake_driver);
}

CORDON_PLUGIN_DEFINE("test", "1.0", "a FAKE driver for tests: isolates nothing",
		     "LGPL-2.1-or-later", test_init)
