/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the policy's three files share, private to them. The layers go one
 * way: policy.c (parsing, the summary) uses policy-schema.c (the sections),
 * and both use policy-read.c (errors and typed reads); nothing calls back up.
 */
#pragma once

#include "policy.h"

/* ---- errors collected while reading (policy-read.c) ------------------------ */

/* One reading of a policy text, or of one tier's section: every error is
 * collected (up to a bound) and reported at once. */
typedef struct pctx {
	const char *name;
	cordon_policy *p;
	policy_errors *errs;    /* every error, reported in file order */
	GHashTable *tier_index; /* name -> policy_tier*, once tiers are read */
	GHashTable *rule_names; /* names seen so far */
} pctx;

/* Records an error at node at ("name:line:col: path: message"); the whole reading fails
 * with the code of the error first in the file. */
void policy_err(pctx *c, const char *code, const cfg_node *at, const char *path, const char *fmt,
		...) CORDON_INTERNAL __attribute__((format(printf, 5, 6)));

/* ---- typed reads that report what is wrong (policy-read.c) ------------------ */

/* What a node is, for messages ("a mapping", "a quoted string", ...). */
const char *policy_node_kind(const cfg_node *n) CORDON_INTERNAL;
bool policy_want_map(pctx *c, const cfg_node *n) CORDON_INTERNAL;
bool policy_want_seq(pctx *c, const cfg_node *n) CORDON_INTERNAL;
const char *policy_want_string(pctx *c, const cfg_node *n) CORDON_INTERNAL;
bool policy_want_bool(pctx *c, const cfg_node *n, bool *ret) CORDON_INTERNAL;
/* A scalar that must be an unquoted number. */
const char *policy_want_number_text(pctx *c, const cfg_node *n, const char *what) CORDON_INTERNAL;
void policy_number_error(pctx *c, const cfg_node *n, int r, const char *why,
			 const char *what) CORDON_INTERNAL;
/* Key i of map, unknown: reported with a "did you mean" or the allowed list. */
void policy_unknown_key(pctx *c, const cfg_node *map, guint i, const char *const *allowed,
			const char *what) CORDON_INTERNAL;
/* Reports every key of map not in allowed. */
bool policy_check_keys(pctx *c, const cfg_node *map, const char *const *allowed) CORDON_INTERNAL;
/* The index of n's string in names, or -1 (reported). */
int policy_want_enum(pctx *c, const cfg_node *n, const char *const *names,
		     const char *what) CORDON_INTERNAL;
bool policy_valid_name(const char *s, bool allow_upper_dot) CORDON_INTERNAL;
const char *policy_want_name(pctx *c, const cfg_node *n, const char *what) CORDON_INTERNAL;
/* Absolute and normalised, never expanded. */
const char *policy_want_abs_path(pctx *c, const cfg_node *n) CORDON_INTERNAL;
/* A sequence of strings (or one string when one_allowed); owned by the caller. */
GPtrArray *policy_want_string_list(pctx *c, const cfg_node *n, bool one_allowed) CORDON_INTERNAL;
/* A limits map into *out (value and set bit of each limit given). */
void policy_want_limits(pctx *c, const cfg_node *n, cordon_plugin_limits *out) CORDON_INTERNAL;

/* ---- sections (policy-schema.c) --------------------------------------------- */

/* "trusted", "semi-trusted", "untrusted": index cordon_trust - 1. */
extern const char *const policy_trust_names[] CORDON_INTERNAL;
/* The top-level key that lets a trust level's work run in the process jail,
 * below its built-in minimum: NULL for trusted work, whose minimum it is. */
const char *policy_jail_key(cordon_trust level) CORDON_INTERNAL;
/* The schema version, read first and alone (a policy for another version is
 * not worth reporting key by key). */
int policy_read_version(pctx *c, const cfg_node *root, cordon_error **reterr) CORDON_INTERNAL;
/* Every top-level section into c->p; errors are collected in c. */
void policy_read_sections(pctx *c, const cfg_node *root) CORDON_INTERNAL;
/* Free functions of the policy's tiers and rules arrays. */
void policy_tier_free(gpointer data) CORDON_INTERNAL;
void policy_rule_free(gpointer data) CORDON_INTERNAL;
/* A secret grant, {env: NAME} or {file: /path} (its form only: nothing is read). */
void policy_check_secret(pctx *c, const cfg_node *v) CORDON_INTERNAL;

/* ---- services and their secrets (policy-services.c) ------------------------- */

/* `secrets:` and `services:` (both, as each names the other) into c->p. */
void policy_read_services(pctx *c, const cfg_node *secrets,
			  const cfg_node *services) CORDON_INTERNAL;
void policy_service_free(gpointer data) CORDON_INTERNAL;
