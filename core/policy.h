/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy as typed structs (docs/policy.md is the contract for the YAML). */
#pragma once

#include "cfgtree.h"
#include "error.h"

#include <cordon/cordon.h>
#include <cordon/plugin.h>
#include <glib.h>

#define POLICY_TRUST_LEVELS 4 /* indexed by cordon_trust, [0] unused */
#define POLICY_VERSION 1

typedef struct policy_tier {
	char *name;
	char *driver;
	cordon_plugin_limits limits;
	cfg_node *section;  /* the tier's map, driver keys included (borrowed from policy->root) */
	const char *image;  /* the driver's image key, read by policy_check_section; NULL: none */
	bool fallback_next; /* fallback: next (default refuse) */
	cordon_containment max_containment; /* max_containment:, 0 when absent */
	uint64_t probe_timeout_ms;          /* probe_timeout:, 0 when absent (the core's 5 s) */
	const cfg_node *at;                 /* the tier's key, for positions */
	/* egress: {allow: [...], deny: [...]}: governed egress's rules (docs/network.md),
	 * NULL-terminated (empty when the list is absent); egress_set: the key is there. */
	bool egress_set;
	char **egress_allow, **egress_deny;
} policy_tier;

typedef struct policy_trust {
	bool set;
	cordon_containment require;  /* after relax/built-in minimum applied */
	cordon_containment declared; /* as written; 0 when absent */
	bool relax;
	GPtrArray *tiers; /* char*: candidate tier names, in policy order */
} policy_trust;

typedef enum policy_select { POLICY_SELECT_STRONGEST = 0, POLICY_SELECT_FIRST = 1 } policy_select;

/* A rule's mode: enforce refuses, warn admits with a warning, audit only records. */
typedef enum policy_rule_mode {
	POLICY_RULE_ENFORCE = 0,
	POLICY_RULE_WARN = 1,
	POLICY_RULE_AUDIT = 2,
} policy_rule_mode;

typedef struct policy_rule {
	char *name;
	policy_rule_mode mode;
	/* when: empty lists match everything */
	uint32_t when_trust;     /* bit (1<<cordon_trust); 0: any */
	GPtrArray *when_tiers;   /* char* */
	GPtrArray *when_drivers; /* char* */
	GPtrArray *when_labels;  /* char* "key=value" */
	/* effects */
	bool deny;
	int require_egress; /* -1: none, else cordon_egress maximum allowed */
	bool require_image_pinned;
	bool require_workspace_ro;
	cordon_plugin_limits limit;
} policy_rule;

/* audit.record_argv: hash (0, the default), full, none. */
enum { AUDIT_ARGV_HASH = 0, AUDIT_ARGV_FULL = 1, AUDIT_ARGV_NONE = 2 };

/* A service of `services:` (docs/policy.md): an upstream reached for the
 * work by cordon's reverse proxy, which adds a credential the work never
 * sees. Strings are the policy's, checked; the secret is only named. */
typedef struct policy_service {
	char *name;             /* "model-api" */
	char *env;              /* "MODEL_API_BASE_URL" */
	char *host;             /* the upstream's host (a name, or an IP literal without []) */
	uint16_t port;          /* 443 unless given */
	char *prefix;           /* the upstream URL's path, "" or "/v1" (no trailing /) */
	char *ca_file;          /* NULL: the system's trust store */
	char *header;           /* the header injected, "Authorization" */
	char *value_pre;        /* the value's text before ${secret:NAME} */
	char *value_post;       /* and after it */
	const cfg_node *secret; /* the grant of NAME in `secrets:` (borrowed from root) */
	char *secret_name;
} policy_service;

/* Most services in one policy. */
#define POLICY_MAX_SERVICES 16

typedef struct cordon_policy {
	char *source;           /* file name, or "<default>", or the text's name */
	char sha256[65];        /* of the text */
	char *plugin_dir;       /* NULL: the configure-time default */
	GPtrArray *plugin_load; /* char*: plugin names to load */
	GPtrArray *tiers;       /* policy_tier*, policy order */
	policy_trust trust[POLICY_TRUST_LEVELS];
	policy_select select;
	GPtrArray *rules; /* policy_rule* */
	char *audit_path; /* NULL: no audit file */
	bool audit_required;
	int audit_argv; /* AUDIT_ARGV_*: how a run's argv is recorded (default: hash) */
	bool allow_untrusted_on_jail;    /* the admin's words for untrusted -> process-jail */
	bool allow_semi_trusted_on_jail; /* and for semi-trusted -> process-jail */
	GPtrArray *services;             /* policy_service*, policy order */
	cfg_node *root;                  /* owns every section */
} cordon_policy;

/* The highest containment a third-party driver's claim is taken for when its tier sets no
 * max_containment (docs/policy.md, "Capping plugin claims"). */
#define POLICY_PLUGIN_CLAIM_DEFAULT_CAP CORDON_CONTAINMENT_CONTAINER

/* Whether a plugin (its descriptor's name and version) is one cordon ships, of this build:
 * its drivers' claims are not capped by default. */
bool policy_plugin_is_cordons(const char *name, const char *version) CORDON_INTERNAL;
/* The cap on the containment tier t's driver claims: its max_containment, else for a
 * third-party driver POLICY_PLUGIN_CLAIM_DEFAULT_CAP (*ret_default then true), else 0
 * (none: cordon's own drivers are taken at their word). */
cordon_containment policy_claim_cap(const policy_tier *t, bool third_party,
				    bool *ret_default) CORDON_INTERNAL;

/* The built-in minimum containment per trust level (DESIGN §6). */
cordon_containment policy_builtin_minimum(cordon_trust t) CORDON_INTERNAL;
/* The built-in default policy, parsed from policy_default_text(): trusted ->
 * process-jail (local jail), semi-trusted -> kernel (local kernel), untrusted
 * -> microvm (no tier: refused with the reason). */
cordon_policy *policy_new_default(void) CORDON_INTERNAL;
/* The default policy's YAML text (shown by `cordon policy show --default`). */
const char *policy_default_text(void) CORDON_INTERNAL;
/* Parses a policy strictly. name prefixes errors. A policy with several
 * errors fails with the first error's code and a message listing every error,
 * one per line ("name:line:col: key.path: message"). */
int policy_parse(const char *text, size_t len, const char *name, cordon_policy **ret,
		 cordon_error **reterr) CORDON_INTERNAL;
/* Reads a regular file of at most CFG_MAX_BYTES (never blocks on a FIFO,
 * refuses a world-writable file) and parses it. */
int policy_load_file(const char *path, cordon_policy **ret, cordon_error **reterr) CORDON_INTERNAL;
void policy_free(cordon_policy *p) CORDON_INTERNAL;
const policy_tier *policy_find_tier(const cordon_policy *p, const char *name) CORDON_INTERNAL;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cordon_policy, policy_free)

/* Errors collected over one reading (a policy text, or every tier's driver section),
 * reported together in file order: "name:line:col: path: message", one a line. */
typedef struct policy_errors policy_errors;
policy_errors *policy_errors_new(const char *name) CORDON_INTERNAL;
guint policy_errors_count(const policy_errors *errs) CORDON_INTERNAL;
/* Frees errs: 0 when nothing was recorded, else -EINVAL with every message and the code
 * of the first (in the file). */
int policy_errors_finish(policy_errors *errs, cordon_error **reterr) CORDON_INTERNAL;

/* Checks a tier's section against its driver's declared keys: the core's own
 * keys (driver, limits) plus keys[]; unknown keys, wrong types and missing
 * required keys are errors with file:line:column and key path. Then reads
 * image_key (the driver's, NULL when it has none) into t->image. */
int policy_check_section(const cordon_policy *p, policy_tier *t,
			 const cordon_plugin_config_key *keys, const char *image_key,
			 cordon_error **reterr) CORDON_INTERNAL;
/* The same, adding the errors to errs (so that every tier is checked in one pass):
 * false when the section has errors. */
bool policy_check_section_into(const cordon_policy *p, policy_tier *t,
			       const cordon_plugin_config_key *keys, const char *image_key,
			       policy_errors *errs) CORDON_INTERNAL;

/* The one reading of a value of each type (docs/policy.md), for the checks
 * here and a driver's getters alike: 0 and *ret, or -EINVAL (-ERANGE when a
 * number overflows) and, for numbers, *ret_why (static). n is not null. */
int policy_read_string(const cfg_node *n, const char **ret) CORDON_INTERNAL;
int policy_read_bool(const cfg_node *n, bool *ret) CORDON_INTERNAL;
int policy_read_int(const cfg_node *n, int64_t *ret, const char **ret_why) CORDON_INTERNAL;
/* SIZE and DURATION by their units; any other type a plain whole number. */
int policy_read_u64(const cfg_node *n, uint32_t type, uint64_t *ret,
		    const char **ret_why) CORDON_INTERNAL;

/* The unit grammar (docs/policy.md) is common/units.h, shared with the CLI. */
/* Formats a value the way the policy writes it ("2GiB", "10m"). Owned by caller. */
char *policy_format_size(uint64_t bytes) CORDON_INTERNAL;
char *policy_format_duration(uint64_t ms) CORDON_INTERNAL;
/* Formats limit i ("memory 2GiB", "cpus 0.5"). Owned by caller. */
char *policy_format_limit(unsigned i, uint64_t value) CORDON_INTERNAL;
/* The policy name of limit i ("memory", "wall", ...). */
const char *policy_limit_name(unsigned i) CORDON_INTERNAL;
/* A human-readable summary: version, hash, tiers, trust levels, rules, audit,
 * and notes (raised requirements, unused tiers). Owned by caller (g_free). */
char *policy_describe(const cordon_policy *p) CORDON_INTERNAL;
