/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The strict YAML reader: libyaml events into a positioned tree. It never
 * expands anything: the first anchor, alias, tag or merge key ends the parse,
 * so a billion-laughs document costs as much as its first few lines. */
#include "config.h"

#include "cfgtree.h"

#include <errno.h>
#include <string.h>
#include <yaml.h>

/* The parser allocates a document's nodes and strings from a few large
 * blocks: a 1 MiB policy has some 200 000 nodes, and one malloc each would
 * cost more than reading the YAML. */
typedef struct cfg_arena {
	GPtrArray *blocks;
	char *cur;
	size_t left;
} cfg_arena;

#define ARENA_BLOCK (64 * 1024)

static cfg_arena *arena_new(void)
{
	cfg_arena *a = g_new0(cfg_arena, 1);
	a->blocks = g_ptr_array_new_with_free_func(g_free);
	return a;
}

static void arena_free(cfg_arena *a)
{
	if (!a)
		return;
	g_ptr_array_unref(a->blocks);
	g_free(a);
}

/* Only the first `zeroed` bytes are cleared: the rest is copied over. */
static void *arena_alloc(cfg_arena *a, size_t size, size_t zeroed)
{
	size = (size + 15) & ~(size_t)15;
	if (size > a->left) {
		size_t block = MAX(size, ARENA_BLOCK);
		a->cur = g_malloc(block);
		a->left = block;
		g_ptr_array_add(a->blocks, a->cur);
	}
	void *p = a->cur;
	a->cur += size;
	a->left -= size;
	return memset(p, 0, zeroed);
}

void cfg_node_free(cfg_node *n)
{
	if (!n)
		return;
	if (n->keys)
		g_ptr_array_unref(n->keys);
	if (n->items)
		g_ptr_array_unref(n->items);
	g_free(n->strv); /* the strings are the items' */
	if (n->in_arena) {
		arena_free(n->arena); /* only the root holds it */
		return;
	}
	g_free(n->scalar);
	g_free(n->path);
	g_free(n);
}

static gssize map_index(const cfg_node *map, const char *key)
{
	if (!map || map->kind != CFG_MAP || !key)
		return -1;
	for (guint i = 0; i < map->keys->len; i++) {
		const cfg_node *k = map->keys->pdata[i];
		if (strcmp(k->scalar, key) == 0)
			return i;
	}
	return -1;
}

cfg_node *cfg_map_get(const cfg_node *map, const char *key)
{
	gssize i = map_index(map, key);
	return i < 0 ? NULL : map->items->pdata[i];
}

cfg_node *cfg_map_get_key(const cfg_node *map, const char *key)
{
	gssize i = map_index(map, key);
	return i < 0 ? NULL : map->keys->pdata[i];
}

bool cfg_is_null(const cfg_node *n)
{
	if (!n || n->kind != CFG_SCALAR || !n->plain)
		return false;
	const char *s = n->scalar;
	return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
	       strcmp(s, "NULL") == 0;
}

char *cfg_child_path(const cfg_node *map, const char *k)
{
	if (!map || !map->path || !*map->path)
		return g_strdup(k);
	return g_strconcat(map->path, ".", k, NULL);
}

static char *item_path(const cfg_node *seq, guint i)
{
	char idx[16];
	g_snprintf(idx, sizeof(idx), "[%u]", i);
	return g_strconcat(seq->path, idx, NULL);
}

/* ---- errors ------------------------------------------------------------------ */

char *cfg_error_text(const char *name, const cfg_node *at, const char *path, const char *fmt,
		     va_list ap)
{
	GString *s = g_string_new(name ? name : "<policy>");
	if (at && at->line)
		g_string_append_printf(s, ":%u:%u", at->line, at->col);
	g_string_append(s, ": ");
	if (path && *path)
		g_string_append_printf(s, "%s: ", path);
	g_string_append_vprintf(s, fmt, ap);
	return g_string_free(s, FALSE);
}

int cfg_error(cordon_error **reterr, const char *code, const char *name, const cfg_node *at,
	      const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = cfg_error_text(name, at, path, fmt, ap);
	va_end(ap);
	return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, code, "%s", msg);
}

/* ---- did you mean ---------------------------------------------------------------- */

unsigned cfg_edit_distance(const char *a, const char *b, unsigned cap)
{
	/* Optimal string alignment: a swap of two neighbours counts once. */
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	unsigned d[65][65];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			unsigned cost = a[i - 1] != b[j - 1];
			unsigned v = MIN(MIN(d[i - 1][j] + 1, d[i][j - 1] + 1),
					 d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
				v = MIN(v, d[i - 2][j - 2] + 1);
			d[i][j] = v;
		}
	}
	return d[la][lb] > cap ? cap + 1 : d[la][lb];
}

const char *cfg_did_you_mean(const char *word, const char *const *candidates)
{
	if (!word || !candidates)
		return NULL;
	size_t len = strlen(word);
	unsigned cap = len <= 3 ? 1 : len <= 8 ? 2 : 3;
	const char *best = NULL;
	unsigned best_d = cap + 1;
	for (size_t i = 0; candidates[i]; i++) {
		unsigned dist = cfg_edit_distance(word, candidates[i], cap);
		if (dist < best_d) {
			best_d = dist;
			best = candidates[i];
		}
	}
	/* A case-only difference is always worth naming. */
	for (size_t i = 0; !best && candidates[i]; i++)
		if (g_ascii_strcasecmp(word, candidates[i]) == 0)
			best = candidates[i];
	return best;
}

/* ---- the builder -------------------------------------------------------------------- */

typedef struct frame {
	cfg_node *node;
	GHashTable *seen; /* maps with many keys: key text -> key node */
} frame;

typedef struct builder {
	const char *name;
	const char *text;
	size_t len;
	GArray *stack; /* frame */
	cfg_node *root;
	guint nodes;
	guint documents;
	GString *scratch; /* the next node's path */
	cfg_arena *arena;
	cordon_error **reterr;
} builder;

static void position_of_offset(const char *text, size_t len, size_t off, uint32_t *line,
			       uint32_t *col)
{
	uint32_t l = 1, c = 1;
	for (size_t i = 0; i < off && i < len; i++) {
		if (text[i] == '\n') {
			l++;
			c = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			c++; /* columns count characters, as libyaml's marks do */
		}
	}
	*line = l;
	*col = c;
}

static int fail_at(builder *b, const char *code, uint32_t line, uint32_t col, const char *path,
		   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int fail_at(builder *b, const char *code, uint32_t line, uint32_t col, const char *path,
		   const char *fmt, ...)
{
	cfg_node at = { .line = line, .col = col };
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = cfg_error_text(b->name, &at, path, fmt, ap);
	va_end(ap);
	return error_set(b->reterr, EINVAL, CORDON_ERROR_INVALID, code, "%s", msg);
}

static frame *top(builder *b)
{
	return b->stack->len ? &g_array_index(b->stack, frame, b->stack->len - 1) : NULL;
}

/* Where the parser is in the tree, for errors that have no node yet. */
static char *current_path(builder *b)
{
	frame *f = top(b);
	if (!f)
		return g_strdup("");
	cfg_node *n = f->node;
	if (n->kind == CFG_SEQ)
		return item_path(n, n->items->len);
	if (n->keys->len > n->items->len)
		return cfg_child_path(n, ((cfg_node *)n->keys->pdata[n->keys->len - 1])->scalar);
	return g_strdup(n->path);
}

/* The path of the node about to be attached, or NULL at a key position (a
 * key has no path of its own). Borrowed from b->scratch. */
static const char *next_path(builder *b)
{
	frame *f = top(b);
	GString *s = b->scratch;
	g_string_truncate(s, 0);
	if (!f)
		return s->str;
	cfg_node *n = f->node;
	if (n->kind == CFG_MAP && n->keys->len == n->items->len)
		return NULL;
	g_string_append(s, n->path);
	if (n->kind == CFG_SEQ) {
		g_string_append_printf(s, "[%u]", n->items->len);
		return s->str;
	}
	if (s->len)
		g_string_append_c(s, '.');
	g_string_append(s, ((cfg_node *)n->keys->pdata[n->keys->len - 1])->scalar);
	return s->str;
}

/* One arena allocation per node, its strings included. */
static cfg_node *node_new(builder *b, cfg_kind kind, const yaml_mark_t *mark, const char *scalar,
			  size_t scalar_len, const char *path)
{
	size_t path_len = path ? strlen(path) : 0;
	size_t size = sizeof(cfg_node) + (scalar ? scalar_len + 1 : 0) + (path ? path_len + 1 : 0);
	cfg_node *n = arena_alloc(b->arena, size, sizeof(cfg_node));
	char *p = (char *)(n + 1);
	n->in_arena = true;
	if (scalar) {
		memcpy(p, scalar, scalar_len);
		p[scalar_len] = '\0';
		n->scalar = p;
		p += scalar_len + 1;
	}
	if (path) {
		memcpy(p, path, path_len + 1);
		n->path = p;
	}
	n->kind = kind;
	n->line = (uint32_t)mark->line + 1;
	n->col = (uint32_t)mark->column + 1;
	if (kind != CFG_SCALAR) {
		n->items = g_ptr_array_new_full(4, (GDestroyNotify)cfg_node_free);
		if (kind == CFG_MAP)
			n->keys = g_ptr_array_new_full(4, (GDestroyNotify)cfg_node_free);
	}
	return n;
}

static int check_scalar_bytes(builder *b, const yaml_event_t *ev, const cfg_node *n)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		/* Tabs and newlines too: every value ends up in one-line messages,
		 * audit records or argv, where a line break forges a line. */
		if (c >= 0x20 && c != 0x7f)
			continue;
		g_autofree char *path = current_path(b);
		if (c == 0)
			return fail_at(b, ERRC(policy_encoding), n->line, n->col, path,
				       "a NUL character in a value is not allowed");
		return fail_at(b, ERRC(policy_encoding), n->line, n->col, path,
			       "control character 0x%02x in a value is not allowed", c);
	}
	return 0;
}

static int check_duplicate(builder *b, frame *f, cfg_node *key)
{
	cfg_node *map = f->node;
	cfg_node *first = NULL;
	if (f->seen) {
		first = g_hash_table_lookup(f->seen, key->scalar);
	} else {
		for (guint i = 0; i < map->keys->len && !first; i++)
			if (strcmp(((cfg_node *)map->keys->pdata[i])->scalar, key->scalar) == 0)
				first = map->keys->pdata[i];
	}
	if (first) {
		g_autofree char *path = cfg_child_path(map, key->scalar);
		return fail_at(b, ERRC(policy_duplicate_key), key->line, key->col, path,
			       "duplicate key '%s' (first at line %u, column %u)", key->scalar,
			       first->line, first->col);
	}
	if (!f->seen && map->keys->len >= 8) {
		f->seen = g_hash_table_new(g_str_hash, g_str_equal);
		for (guint i = 0; i < map->keys->len; i++) {
			cfg_node *k = map->keys->pdata[i];
			g_hash_table_insert(f->seen, k->scalar, k);
		}
	}
	if (f->seen)
		g_hash_table_insert(f->seen, key->scalar, key);
	return 0;
}

static int add_key(builder *b, frame *f, cfg_node *n)
{
	if (n->kind != CFG_SCALAR) {
		int r = fail_at(b, ERRC(policy_type), n->line, n->col, f->node->path,
				"a key must be a plain string, not a %s",
				n->kind == CFG_MAP ? "mapping" : "sequence");
		cfg_node_free(n);
		return r;
	}
	/* A key carries no path: its value's is the same string. */
	int r = 0;
	if (n->plain && strcmp(n->scalar, "<<") == 0)
		r = fail_at(b, ERRC(policy_alias), n->line, n->col, f->node->path,
			    "merge keys (<<) are not allowed: write every key out");
	else if (cfg_is_null(n))
		r = fail_at(b, ERRC(policy_type), n->line, n->col, f->node->path,
			    "an empty key is not allowed");
	else
		r = check_duplicate(b, f, n);
	if (r < 0) {
		cfg_node_free(n);
		return r;
	}
	g_ptr_array_add(f->node->keys, n);
	return 0;
}

/* Hangs n below the current container (or makes it the root). Takes n. */
static int attach(builder *b, cfg_node *n)
{
	if (++b->nodes > CFG_MAX_NODES) {
		int r = fail_at(b, ERRC(policy_too_large), n->line, n->col, NULL,
				"more than %u values: the document is too large", CFG_MAX_NODES);
		cfg_node_free(n);
		return r;
	}
	frame *f = top(b);
	if (!f) {
		b->root = n;
		return 0;
	}
	cfg_node *parent = f->node;
	if (parent->kind == CFG_MAP && parent->keys->len == parent->items->len)
		return add_key(b, f, n);
	g_ptr_array_add(parent->items, n);
	return 0;
}

static int refuse_decorations(builder *b, const yaml_event_t *ev, const yaml_char_t *anchor,
			      const yaml_char_t *tag)
{
	if (!anchor && !tag)
		return 0;
	uint32_t line = (uint32_t)ev->start_mark.line + 1,
		 col = (uint32_t)ev->start_mark.column + 1;
	g_autofree char *path = current_path(b);
	if (anchor)
		return fail_at(b, ERRC(policy_alias), line, col, path,
			       "anchors (&%s) are not allowed: write every value out", anchor);
	if (tag)
		return fail_at(b, ERRC(policy_tag), line, col, path, "tags (%s) are not allowed",
			       tag);
	return 0;
}

static int on_scalar(builder *b, const yaml_event_t *ev)
{
	int r = refuse_decorations(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag);
	if (r < 0)
		return r;
	cfg_node *n = node_new(b, CFG_SCALAR, &ev->start_mark, (const char *)ev->data.scalar.value,
			       ev->data.scalar.length, next_path(b));
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	r = check_scalar_bytes(b, ev, n);
	if (r < 0)
		return r; /* n is in the arena, freed with it */
	return attach(b, n);
}

static int on_collection_start(builder *b, const yaml_event_t *ev, cfg_kind kind)
{
	const yaml_char_t *anchor = kind == CFG_MAP ? ev->data.mapping_start.anchor
						    : ev->data.sequence_start.anchor;
	const yaml_char_t *tag = kind == CFG_MAP ? ev->data.mapping_start.tag
						 : ev->data.sequence_start.tag;
	int r = refuse_decorations(b, ev, anchor, tag);
	if (r < 0)
		return r;
	if (b->stack->len >= CFG_MAX_DEPTH) {
		g_autofree char *path = current_path(b);
		return fail_at(b, ERRC(policy_depth), (uint32_t)ev->start_mark.line + 1,
			       (uint32_t)ev->start_mark.column + 1, path,
			       "nested more than %u levels deep", CFG_MAX_DEPTH);
	}
	const char *path = next_path(b);
	cfg_node *n = node_new(b, kind, &ev->start_mark, NULL, 0, path ? path : "");
	r = attach(b, n);
	if (r < 0)
		return r;
	frame f = { n, NULL };
	g_array_append_val(b->stack, f);
	return 0;
}

static void on_collection_end(builder *b)
{
	frame *f = top(b);
	if (f->seen)
		g_hash_table_unref(f->seen);
	g_array_set_size(b->stack, b->stack->len - 1);
}

static int on_document_start(builder *b, const yaml_event_t *ev)
{
	uint32_t line = (uint32_t)ev->start_mark.line + 1,
		 col = (uint32_t)ev->start_mark.column + 1;
	if (b->documents++)
		return fail_at(b, ERRC(policy_multidoc), line, col, NULL,
			       "a second document: a policy is exactly one YAML document");
	if (ev->data.document_start.tag_directives.start !=
	    ev->data.document_start.tag_directives.end)
		return fail_at(b, ERRC(policy_tag), line, col, NULL,
			       "%%TAG directives are not allowed");
	return 0;
}

static int on_event(builder *b, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT: return on_document_start(b, ev);
	case YAML_ALIAS_EVENT: {
		g_autofree char *path = current_path(b);
		return fail_at(b, ERRC(policy_alias), (uint32_t)ev->start_mark.line + 1,
			       (uint32_t)ev->start_mark.column + 1, path,
			       "aliases (*%s) are not allowed: write every value out",
			       ev->data.alias.anchor);
	}
	case YAML_SCALAR_EVENT: return on_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT: return on_collection_start(b, ev, CFG_SEQ);
	case YAML_MAPPING_START_EVENT: return on_collection_start(b, ev, CFG_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: on_collection_end(b); return 0;
	default: return 0;
	}
}

static int libyaml_error(builder *b, const yaml_parser_t *p)
{
	if (p->error == YAML_MEMORY_ERROR)
		return error_set(b->reterr, ENOMEM, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "%s: out of memory while parsing", b->name);
	g_autofree char *path = current_path(b);
	if (p->error == YAML_READER_ERROR) {
		uint32_t line, col;
		position_of_offset(b->text, b->len, p->problem_offset, &line, &col);
		return fail_at(b, ERRC(policy_encoding), line, col, path, "%s",
			       p->problem ? p->problem : "unreadable input");
	}
	const char *problem = p->problem ? p->problem : "syntax error";
	if (p->context)
		return fail_at(b, ERRC(policy_syntax), (uint32_t)p->problem_mark.line + 1,
			       (uint32_t)p->problem_mark.column + 1, path, "%s %s (line %zu)",
			       problem, p->context, p->context_mark.line + 1);
	return fail_at(b, ERRC(policy_syntax), (uint32_t)p->problem_mark.line + 1,
		       (uint32_t)p->problem_mark.column + 1, path, "%s", problem);
}

/* Byte-level checks before libyaml sees the text: it would stop at a NUL
 * and guess encodings from a BOM. */
static int check_bytes(builder *b)
{
	if (b->len > CFG_MAX_BYTES)
		return error_set(b->reterr, EFBIG, CORDON_ERROR_INVALID, ERRC(policy_too_large),
				 "%s: the policy is %zu bytes; the limit is %u (1 MiB)", b->name,
				 b->len, CFG_MAX_BYTES);
	/* One pass: g_utf8_validate_len also stops at a NUL byte. */
	const char *end = NULL;
	if (!g_utf8_validate_len(b->text, b->len, &end)) {
		uint32_t line, col;
		position_of_offset(b->text, b->len, (size_t)(end - b->text), &line, &col);
		if (!*end)
			return fail_at(b, ERRC(policy_encoding), line, col, NULL,
				       "a NUL byte is not allowed");
		return fail_at(b, ERRC(policy_encoding), line, col, NULL,
			       "invalid UTF-8 (byte 0x%02x): the policy must be UTF-8 text",
			       (unsigned char)*end);
	}
	/* libyaml is told the encoding (it would otherwise guess from a BOM);
	 * a UTF-8 BOM is skipped here so it is not read as a character. */
	if (b->len >= 3 && memcmp(b->text, "\xef\xbb\xbf", 3) == 0) {
		b->text += 3;
		b->len -= 3;
	}
	return 0;
}

static int finish(builder *b)
{
	if (!b->root || cfg_is_null(b->root))
		return error_set(b->reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(policy_empty),
				 "%s:1:1: the policy is empty: an empty policy is an error, never "
				 "\"allow everything\"",
				 b->name);
	if (b->root->kind != CFG_MAP)
		return cfg_error(b->reterr, ERRC(policy_type), b->name, b->root, NULL,
				 "the top level must be a mapping (key: value), not a %s",
				 b->root->kind == CFG_SEQ ? "sequence" : "scalar");
	return 0;
}

static int run_parser(builder *b)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return error_set(b->reterr, ENOMEM, CORDON_ERROR_TERMINAL, ERRC(resource),
				 "%s: cannot initialise the YAML parser", b->name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)b->text, b->len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	int r = 0;
	for (bool done = false; !done && r >= 0;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev)) {
			r = libyaml_error(b, &parser);
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		r = on_event(b, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return r;
}

int cfg_parse(const char *text, size_t len, const char *name, cfg_node **ret, cordon_error **reterr)
{
	builder b = { .name = name ? name : "<policy>",
		      .text = text ? text : "",
		      .len = text ? len : 0,
		      .reterr = reterr };
	int r = check_bytes(&b);
	if (r < 0)
		return r;
	b.stack = g_array_new(FALSE, FALSE, sizeof(frame));
	b.scratch = g_string_sized_new(256);
	b.arena = arena_new();
	r = run_parser(&b);
	if (r >= 0)
		r = finish(&b);
	while (b.stack->len)
		on_collection_end(&b);
	g_array_unref(b.stack);
	g_string_free(b.scratch, TRUE);
	if (r < 0) {
		cfg_node_free(b.root);
		arena_free(b.arena);
		return r;
	}
	/* finish() refused a missing root; the analyzer does not follow the variadic
	 * error_set() it returned through. */
	// NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
	b.root->arena = b.arena; /* freed with the root */
	*ret = b.root;
	return 0;
}
