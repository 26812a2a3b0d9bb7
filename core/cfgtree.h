/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A parsed YAML document as a tree of positioned nodes. The policy parser
 * builds it (strictly: no aliases, no duplicate keys); the policy and the
 * drivers' sections are read from it with their positions kept for errors. */
#pragma once

#include "error.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* Hard caps of the strict parser (docs/policy.md, "Limits"). */
#define CFG_MAX_BYTES (1u << 20) /* the whole document */
#define CFG_MAX_DEPTH 32         /* nested maps and sequences, the top map included */
#define CFG_MAX_NODES (1u << 18) /* scalars, maps and sequences, keys included */

typedef enum cfg_kind { CFG_SCALAR = 1, CFG_SEQ, CFG_MAP } cfg_kind;

typedef struct cfg_node cfg_node;
struct cfg_node {
	char *scalar;       /* CFG_SCALAR: the text */
	char *path;         /* key path: "tiers.box.limits.memory", "rules[2].name"; NULL
			     * for key nodes (their value has the same path) */
	GPtrArray *keys;    /* CFG_MAP: cfg_node* keys (scalars) */
	GPtrArray *items;   /* CFG_MAP: values parallel to keys; CFG_SEQ: items */
	char **strv;        /* CFG_SEQ: NULL-terminated view of the scalars, built
			     * lazily by host->config_strv (hostservices.c) */
	void *arena;        /* the root of a parsed document: the arena it owns */
	uint32_t line, col; /* 1-based position of the node */
	cfg_kind kind;
	bool plain;    /* CFG_SCALAR: unquoted (so `true`, numbers are typed) */
	bool in_arena; /* the parser's nodes: the node and its strings live in
			     * the document's arena, freed with the root; other
			     * nodes (tests) are g_new0'd with g_strdup'd strings */
};

void cfg_node_free(cfg_node *n);
/* The value of key in a map, or NULL. */
cfg_node *cfg_map_get(const cfg_node *map, const char *key);
/* The key node of key in a map (for positions of key errors), or NULL. */
cfg_node *cfg_map_get_key(const cfg_node *map, const char *key);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cfg_node, cfg_node_free)

/* Parses one YAML document strictly into a tree whose top is a map. name
 * prefixes every error ("name:line:col: path: message"). text need not be
 * NUL-terminated. Refused (each with its own error code, see policy.md):
 * empty documents, syntax errors, several documents, anchors, aliases, merge
 * keys, tags, duplicate keys, NUL bytes, invalid UTF-8, control characters,
 * more than CFG_MAX_BYTES, CFG_MAX_DEPTH or CFG_MAX_NODES. */
int cfg_parse(const char *text, size_t len, const char *name, cfg_node **ret,
	      cordon_error **reterr) CORDON_INTERNAL;

/* True for a plain `~`, `null` (any case form YAML knows) or empty scalar. */
bool cfg_is_null(const cfg_node *n) CORDON_INTERNAL;
/* The path of key k below map (as the parser names it). Owned by caller. */
char *cfg_child_path(const cfg_node *map, const char *k) CORDON_INTERNAL;

/* Sets a positioned error: "name:line:col: path: message" (path omitted when
 * empty, position omitted when at is NULL). Returns -EINVAL (class invalid). */
int cfg_error(cordon_error **reterr, const char *code, const char *name, const cfg_node *at,
	      const char *path, const char *fmt, ...)
	__attribute__((format(printf, 6, 7))) CORDON_INTERNAL;
/* The same message as a string, for callers that collect several errors. */
char *cfg_error_text(const char *name, const cfg_node *at, const char *path, const char *fmt,
		     va_list ap) __attribute__((format(printf, 4, 0))) CORDON_INTERNAL;

/* Levenshtein distance, capped: returns cap+1 when larger. */
unsigned cfg_edit_distance(const char *a, const char *b, unsigned cap) CORDON_INTERNAL;
/* The candidate closest to word (NULL-terminated list), or NULL when none is
 * close enough to be a plausible typo. */
const char *cfg_did_you_mean(const char *word, const char *const *candidates) CORDON_INTERNAL;
