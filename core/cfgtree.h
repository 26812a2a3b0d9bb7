/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A parsed YAML document as a tree of positioned nodes. The policy parser
 * builds it (strictly: no aliases, no duplicate keys); the policy and the
 * drivers' sections are read from it with their positions kept for errors. */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum cfg_kind { CFG_SCALAR = 1, CFG_SEQ, CFG_MAP } cfg_kind;

typedef struct cfg_node cfg_node;
struct cfg_node {
	cfg_kind kind;
	char *scalar;       /* CFG_SCALAR: the text */
	bool plain;         /* CFG_SCALAR: unquoted (so `true`, numbers are typed) */
	uint32_t line, col; /* 1-based position of the node */
	char *path;         /* key path: "tiers.box.limits.memory", "rules[2].name" */
	GPtrArray *keys;    /* CFG_MAP: cfg_node* keys (scalars) */
	GPtrArray *items;   /* CFG_MAP: values parallel to keys; CFG_SEQ: items */
	char **strv;        /* CFG_SEQ: NULL-terminated view of the scalars, built
			     * lazily by host->config_strv (hostservices.c) */
};

void cfg_node_free(cfg_node *n);
/* The value of key in a map, or NULL. */
cfg_node *cfg_map_get(const cfg_node *map, const char *key);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cfg_node, cfg_node_free)
