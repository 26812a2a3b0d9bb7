/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "cfgtree.h"

#include <string.h>

void cfg_node_free(cfg_node *n)
{
	if (!n)
		return;
	g_free(n->scalar);
	g_free(n->path);
	if (n->keys)
		g_ptr_array_unref(n->keys);
	if (n->items)
		g_ptr_array_unref(n->items);
	g_free(n->strv); /* the strings are the items' */
	g_free(n);
}

cfg_node *cfg_map_get(const cfg_node *map, const char *key)
{
	if (!map || map->kind != CFG_MAP)
		return NULL;
	for (guint i = 0; i < map->keys->len; i++) {
		const cfg_node *k = map->keys->pdata[i];
		if (strcmp(k->scalar, key) == 0)
			return map->items->pdata[i];
	}
	return NULL;
}
