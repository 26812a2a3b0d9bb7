/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The context: loaded plugins, registered drivers, configured tiers. */
#pragma once

#include "error.h"
#include "policy.h"

#include <cordon/cordon.h>
#include <cordon/plugin.h>
#include <glib.h>

/* A plugin file seen by the loader, loaded or refused. */
typedef struct plugin_record {
	char *name; /* file base name */
	char *path;
	bool loaded;
	int errnum;    /* positive errno of the refusal */
	char *detail;  /* version when loaded, one-line reason when refused */
	char *drivers; /* comma-separated driver names */
	char *version, *description, *license;
	uint32_t abi_minor; /* the ABI minor it was built against */
} plugin_record;

/* A registered driver (a plugin's, or the built-in local one). */
typedef struct driver_entry {
	cordon_plugin_driver ops;    /* normalised copy: unknown tail refused, missing ops NULL */
	const plugin_record *plugin; /* NULL for built-in drivers */
	const char *image_key;       /* the key naming a tier's image (borrowed), or NULL */
	/* Built-in drivers only: whether a tier can run with a request's limits (values, not
	 * just which ones), as its open judges them; NULL: every value is taken. */
	int (*check_limits)(const void *tier, const cordon_plugin_limits *limits, char *why,
			    size_t whylen);
} driver_entry;

/* What a plugin's configure reads: the tier's section checked against the
 * driver's declared keys. */
struct cordon_plugin_config {
	const policy_tier *tier;
	const char *source; /* policy file name, for positions */
	const cordon_plugin_config_key *keys;
	uint32_t abi_minor; /* the plugin's ABI minor, the core's for built-in drivers */
};

/* A tier of the policy, bound to its driver. */
typedef struct tier_runtime {
	const policy_tier *cfg;
	const driver_entry *driver; /* NULL when the driver is not registered */
	void *state;                /* the driver's configure result */
	char *unusable;             /* why the tier cannot be used (no driver, configure failed) */
	GMutex lock;                /* guards the probe cache and the fields below */
	cordon_plugin_probe probe;
	gint64 probed_at;  /* monotonic µs; 0: never */
	GCond probe_done;  /* broadcast when a probe thread ends */
	bool probing;      /* a probe thread is running */
	bool probe_cached; /* the answer came from the cross-process cache */
	bool abandoned;    /* ...and a waiter gave up on it: it holds a context ref */
	GThread *prober;   /* the last probe thread, joined before the next and at free */
} tier_runtime;

struct cordon_options {
	char *policy_path;
	char *policy_text;
	size_t policy_len;
	char *policy_name;
	char *plugin_dir;
	GPtrArray *extra_plugins;
	bool load_all_plugins;
	bool probe_cache; /* probe answers kept across processes (probecache.h) */
	/* Internal (tests): driver tables registered like built-in ones, before
	 * tiers are configured. NULL-terminated, borrowed. */
	const cordon_plugin_driver *const *builtin_drivers;
};

struct cordon_context {
	cordon_policy *policy;
	GPtrArray *plugins; /* plugin_record* */
	GPtrArray *drivers; /* driver_entry* */
	GPtrArray *tiers;   /* tier_runtime* */
	GMutex audit_lock;
	gint refs; /* the host's, and one per abandoned probe thread */
	/* What cordon trusts on disk, no workspace may hold: the policy file's directory and
	 * the plugin directory (NULL-terminated; an entry may be missing). */
	char *trusted_dirs[3];
	bool probe_cache; /* the options' */
};

/* Handed to a plugin's init: where its drivers register. */
struct cordon_plugin_registrar {
	cordon_context *ctx;
	plugin_record *plugin; /* NULL for built-in drivers */
	cordon_error *err;     /* the first registration failure */
	unsigned count;
};

/* The host services table handed to plugins (and used by built-in drivers). */
extern const cordon_host cordon_host_services CORDON_INTERNAL;

/* Registers a driver (validates name and table; copies the table). */
int context_register_driver(cordon_context *ctx, const plugin_record *plugin,
			    const cordon_plugin_driver *drv, cordon_error **reterr) CORDON_INTERNAL;
const driver_entry *context_find_driver(const cordon_context *ctx,
					const char *name) CORDON_INTERNAL;
tier_runtime *context_find_tier(const cordon_context *ctx, const char *name) CORDON_INTERNAL;
/* How long probing may take, however many tiers (an engine that hangs
 * must not hold up `cordon probe` or an admission for its own timeout). */
#define CONTEXT_PROBE_BOUND_US (5 * (gint64)G_USEC_PER_SEC)
/* Starts probing t in a thread of its own, unless its cached probe is younger
 * than max_age_us (0: never young enough) or a probe of it is running. */
void context_probe_start(cordon_context *ctx, tier_runtime *t, gint64 max_age_us) CORDON_INTERNAL;
/* The probe of t through the cache (starting one as context_probe_start),
 * waiting for it until deadline (monotonic µs) at the latest: a probe still
 * running then is reported unavailable, timed out, and left to finish. */
void context_probe(cordon_context *ctx, tier_runtime *t, gint64 max_age_us, gint64 deadline,
		   cordon_plugin_probe *ret) CORDON_INTERNAL;
/* Whether t's answer came from the cross-process cache; if so, forgets it there and
 * here, so that the next probe asks the driver (an open that failed on it). */
bool context_probe_forget_cached(cordon_context *ctx, tier_runtime *t) CORDON_INTERNAL;
