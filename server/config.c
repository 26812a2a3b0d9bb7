/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The server's configuration: the `server:` section of the policy and the API
 * keys file.
 *
 * The library parses the whole policy first (strictly: duplicate keys,
 * anchors, aliases, size and depth caps) and accepts `server:` as a mapping;
 * this reads the same text, once in memory (no second read of the file that
 * could see other bytes), and checks the section's own keys and types with
 * line:column, refusing anything it does not know.
 */
#include "config.h"

#include "server.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define KEYS_FILE_MAX (64u * 1024u)
#define KEYS_MAX 1024u

typedef struct ycur {
	yaml_document_t *doc;
	const char *name;
	char *error;
} ycur;

static bool yfail(ycur *y, const yaml_node_t *n, const char *fmt, const char *what)
{
	if (!y->error)
		y->error = g_strdup_printf("%s:%zu:%zu: server: %s%s", y->name,
					   n->start_mark.line + 1, n->start_mark.column + 1, fmt,
					   what ? what : "");
	return false;
}

static const char *yscalar(ycur *y, const yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SCALAR_NODE) {
		yfail(y, n, "expected a scalar for ", what);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

static bool yuint(ycur *y, const yaml_node_t *n, const char *what, uint64_t *ret)
{
	const char *s = yscalar(y, n, what), *why = NULL;
	if (!s)
		return false;
	if (units_parse_uint(s, ret, &why) < 0)
		return yfail(y, n, "not a whole number: ", what);
	return true;
}

static bool ysize(ycur *y, const yaml_node_t *n, const char *what, uint64_t *ret)
{
	const char *s = yscalar(y, n, what), *why = NULL;
	if (!s)
		return false;
	if (units_parse_size(s, ret, &why) < 0)
		return yfail(y, n, "not a size (64MiB): ", what);
	return true;
}

static bool yduration_s(ycur *y, const yaml_node_t *n, const char *what, uint64_t *ret)
{
	const char *s = yscalar(y, n, what), *why = NULL;
	uint64_t ms;
	if (!s)
		return false;
	if (units_parse_duration(s, &ms, &why) < 0 || ms < 1000)
		return yfail(y, n, "not a duration of at least 1s: ", what);
	*ret = ms / 1000;
	return true;
}

static bool read_template(ycur *y, const char *name, yaml_node_t *n, srv_config *cfg)
{
	if (n->type != YAML_MAPPING_NODE)
		return yfail(y, n, "expected a mapping for template ", name);
	srv_template *t = g_new0(srv_template, 1);
	t->name = g_strdup(name);
	g_ptr_array_add(cfg->templates, t);
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *key = yscalar(y, k, "a key");
		const char *val = key ? yscalar(y, v, key) : NULL;
		if (!val)
			return false;
		if (strcmp(key, "trust") == 0) {
			if (strcmp(val, "trusted") && strcmp(val, "semi-trusted") &&
			    strcmp(val, "untrusted"))
				return yfail(y, v,
					     "trust is trusted, semi-trusted or untrusted, not ",
					     val);
			t->trust = g_strdup(val);
		} else if (strcmp(key, "tier") == 0) {
			t->tier = g_strdup(val);
		} else {
			return yfail(y, k, "unknown key in a template: ", key);
		}
	}
	if (!t->trust)
		return yfail(y, n, "missing required key 'trust' in template ", name);
	return true;
}

static bool read_templates(ycur *y, yaml_node_t *n, srv_config *cfg)
{
	if (n->type != YAML_MAPPING_NODE)
		return yfail(y, n, "expected a mapping for ", "templates");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		const char *name = yscalar(y, yaml_document_get_node(y->doc, p->key), "a template");
		if (!name || !read_template(y, name, yaml_document_get_node(y->doc, p->value), cfg))
			return false;
	}
	return true;
}

static bool read_section(ycur *y, yaml_node_t *n, srv_config *cfg)
{
	if (n->type != YAML_MAPPING_NODE)
		return yfail(y, n, "expected a mapping", NULL);
	bool have_templates = false;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *key = yscalar(y, k, "a key");
		uint64_t u;
		bool ok;
		if (!key)
			return false;
		if (strcmp(key, "templates") == 0) {
			ok = read_templates(y, v, cfg);
			have_templates = true;
		} else if (strcmp(key, "sandboxes_per_key") == 0) {
			ok = yuint(y, v, key, &u) &&
			     (u >= 1 && u <= 4096 ? true
						  : yfail(y, v, "between 1 and 4096: ", key));
			cfg->sandboxes_per_key = (unsigned)u;
		} else if (strcmp(key, "max_timeout") == 0) {
			ok = yduration_s(y, v, key, &cfg->max_timeout_s);
		} else if (strcmp(key, "max_body") == 0) {
			ok = ysize(y, v, key, &cfg->max_body) &&
			     (cfg->max_body >= 4096 && cfg->max_body <= (1ull << 30)
				      ? true
				      : yfail(y, v, "between 4KiB and 1GiB: ", key));
		} else {
			return yfail(y, k, "unknown key: ", key);
		}
		if (!ok)
			return false;
	}
	if (!have_templates)
		return yfail(y, n, "missing required key ", "'templates'");
	return true;
}

static void config_defaults(srv_config *cfg)
{
	cfg->templates = g_ptr_array_new();
	cfg->key_digests = g_ptr_array_new_with_free_func(g_free);
	cfg->sandboxes_per_key = 8;
	cfg->max_timeout_s = 3600;
	cfg->max_body = 64u << 20;
}

int srv_config_load(srv_config *cfg, const char *text, size_t len, const char *name,
		    char **ret_error)
{
	config_defaults(cfg);
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_parser_delete(&parser);
		*ret_error = g_strdup_printf("%s: not YAML", name);
		return -EINVAL;
	}
	ycur y = { &doc, name, NULL };
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	yaml_node_t *section = NULL;
	if (root && root->type == YAML_MAPPING_NODE)
		for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
		     p < root->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(&doc, p->key);
			if (k->type == YAML_SCALAR_NODE &&
			    strcmp((const char *)k->data.scalar.value, "server") == 0)
				section = yaml_document_get_node(&doc, p->value);
		}
	if (section) {
		read_section(&y, section, cfg);
	} else {
		/* The SDKs' default template, at the trust the library defaults to. */
		srv_template *t = g_new0(srv_template, 1);
		t->name = g_strdup("base");
		t->trust = g_strdup("semi-trusted");
		g_ptr_array_add(cfg->templates, t);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (y.error) {
		*ret_error = y.error;
		return -EINVAL;
	}
	return 0;
}

const srv_template *srv_template_find(const srv_config *cfg, const char *name)
{
	for (guint i = 0; i < cfg->templates->len; i++) {
		const srv_template *t = cfg->templates->pdata[i];
		if (strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

void srv_config_clear(srv_config *cfg)
{
	for (guint i = 0; cfg->templates && i < cfg->templates->len; i++) {
		srv_template *t = cfg->templates->pdata[i];
		g_free(t->name);
		g_free(t->trust);
		g_free(t->tier);
		g_free(t);
	}
	g_clear_pointer(&cfg->templates, g_ptr_array_unref);
	g_clear_pointer(&cfg->key_digests, g_ptr_array_unref);
}

/* ---- API keys ------------------------------------------------------------------ */

static void digest(const char *s, guint8 out[32])
{
	GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
	gsize n = 32;
	g_checksum_update(c, (const guchar *)s, strlen(s));
	g_checksum_get_digest(c, out, &n);
	g_checksum_free(c);
}

/* Digests of equal length compared without an early exit: how long the
 * comparison takes says nothing about how much of a guess was right. */
static bool digest_equal(const guint8 *a, const guint8 *b)
{
	guint8 d = 0;
	for (int i = 0; i < 32; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

bool srv_secret_equal(const char *a, const char *b)
{
	guint8 da[32], db[32];
	digest(a, da);
	digest(b, db);
	return digest_equal(da, db);
}

int srv_key_find(const srv_config *cfg, const char *key)
{
	guint8 d[32];
	int found = -1;
	digest(key, d);
	/* Every key is compared, the match or not. */
	for (guint i = 0; i < cfg->key_digests->len; i++)
		if (digest_equal(cfg->key_digests->pdata[i], d) && found < 0)
			found = (int)i;
	return found;
}

static int keys_parse(srv_config *cfg, char *text, const char *path, char **ret_error)
{
	unsigned lineno = 0;
	for (char *line = text, *next; line && *line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		g_strstrip(line);
		if (!*line || *line == '#')
			continue;
		bool ok = g_str_has_prefix(line, "e2b_") && strlen(line) >= 4 + 32;
		for (const char *c = line + 4; ok && *c; c++)
			ok = g_ascii_isxdigit(*c) && !g_ascii_isupper(*c);
		if (!ok) {
			*ret_error = g_strdup_printf("%s:%u: an API key is e2b_ and at least 32 "
						     "lower-case hex digits",
						     path, lineno);
			return -EINVAL;
		}
		if (cfg->key_digests->len >= KEYS_MAX) {
			*ret_error = g_strdup_printf("%s: more than %u keys", path, KEYS_MAX);
			return -E2BIG;
		}
		guint8 *d = g_malloc(32);
		digest(line, d);
		g_ptr_array_add(cfg->key_digests, d);
	}
	if (cfg->key_digests->len == 0) {
		*ret_error = g_strdup_printf("%s: no API key", path);
		return -EINVAL;
	}
	return 0;
}

int srv_keys_load(srv_config *cfg, const char *path, char **ret_error)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	struct stat st;
	if (fd < 0) {
		int e = errno;
		*ret_error = g_strdup_printf("%s: %s", path, g_strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) ||
	    (st.st_uid != geteuid() && st.st_uid != 0) || st.st_size > KEYS_FILE_MAX) {
		close(fd);
		*ret_error = g_strdup_printf("%s: the API keys file must be a regular file of at "
					     "most 64KiB, owned by this user or root, that no "
					     "group or other user can read or write (chmod 600)",
					     path);
		return -EPERM;
	}
	char *text = g_malloc0(KEYS_FILE_MAX + 1);
	ssize_t n = read(fd, text, KEYS_FILE_MAX);
	close(fd);
	int r = n < 0 ? -errno : keys_parse(cfg, text, path, ret_error);
	if (n < 0)
		*ret_error = g_strdup_printf("%s: %s", path, g_strerror(-r));
	explicit_bzero(text, KEYS_FILE_MAX);
	g_free(text);
	return r;
}
