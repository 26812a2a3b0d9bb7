/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Probe results kept across processes, per user (docs/embedding.md, "Probe cache"): a
 * `cordon run` need not ask an engine whether it is there when the last process asked a
 * moment ago. An entry is one file, mode 0600, in a directory of the user's own
 * ($XDG_RUNTIME_DIR/cordon/probes, root's /run/cordon/probes), named by a hash of what the
 * answer depends on by construction: the boot, the user, this build of cordon, the policy
 * (the tier's configuration with it), the tier and its driver. Inside are the answer and
 * fingerprints of the files the probe looked at (the programs it found, what the driver
 * named through host->probe_depends: an engine's socket, /dev/kvm, sysctls); a changed
 * fingerprint or an entry older than PROBECACHE_MAX_AGE_S is a miss. Only "available" is
 * kept: an unavailable tier is asked again every time, so a fix shows at once, and a kept
 * "available" that proves wrong at open is forgotten and the open retried once
 * (cordon_sandbox_open).
 */
#pragma once

#include <cordon/plugin.h>
#include <glib.h>
#include <stdbool.h>

#include "visibility.h"

#define PROBECACHE_MAX_AGE_S 60
#define PROBECACHE_MAX_DEPS 32

/* What names one entry; NULL fields are refused (no entry). */
typedef struct probecache_key {
	const char *policy_sha256;
	const char *tier;
	const char *driver;
	const char *plugin_path; /* the driver's plugin file, NULL for built-in drivers */
} probecache_key;

/* Collects, in this thread, the paths a probe depends on, until probecache_collect_end
 * (which returns them: a GPtrArray of g_strdup'ed paths, or NULL when none was begun). */
void probecache_collect_begin(void) CORDON_INTERNAL;
GPtrArray *probecache_collect_end(void) CORDON_INTERNAL;
/* Notes path (absolute) for the probe running in this thread; nothing outside one. */
void probecache_note(const char *path) CORDON_INTERNAL;

/* A kept answer for key whose dependencies are unchanged: true and *ret filled. */
bool probecache_lookup(const probecache_key *key, cordon_plugin_probe *ret) CORDON_INTERNAL;
/* Keeps an available answer with its dependencies (best effort: no error). */
void probecache_store(const probecache_key *key, const cordon_plugin_probe *pr,
		      const GPtrArray *deps) CORDON_INTERNAL;
/* Forgets key's entry (an answer that proved wrong). */
void probecache_forget(const probecache_key *key) CORDON_INTERNAL;

/* Test hooks: the directory used (NULL: the default), and "now" (0: the clock). */
void probecache_test_set_dir(const char *dir) CORDON_INTERNAL;
void probecache_test_set_now(gint64 unix_seconds) CORDON_INTERNAL;
