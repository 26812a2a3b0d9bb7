/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gc on the remote tier: the sandboxes a crashed host left running in E2B.
 *
 * Every sandbox this plugin creates carries, in its E2B metadata, the tier's
 * name (cordon.tier), this machine (cordon.host: a hash of /etc/machine-id,
 * which machine-id(5) asks never to expose as it is) and this
 * process's owner token (cordon.owner: common/owner.h, the scheme every tier's
 * gc uses). gc lists the account's sandboxes and kills those of this tier and
 * this machine whose owner is certainly dead. The machine comes first because
 * one E2B account serves many hosts: another machine's token names a boot
 * that is not ours, which owner_token_state() would call dead. A sandbox with
 * no such metadata, another machine's, another tier's, a live owner's or one
 * of another pid namespace is left alone: its time to live ends it.
 */
#include "config.h"

#include "e2b.h"
#include "owner.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define MACHINE_ID_LEN 32

/* This machine's tag: 32 hex digits of SHA-256 over an application key and
 * /etc/machine-id (32 lower-case hex digits, stable across boots), so that the
 * ID itself never leaves the host and the tag means nothing elsewhere. */
static bool machine_id(char buf[MACHINE_ID_LEN + 1])
{
	char id[MACHINE_ID_LEN + 1];
	int fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, id, MACHINE_ID_LEN + 1);
	close(fd);
	if (n < MACHINE_ID_LEN || (n == MACHINE_ID_LEN + 1 && id[MACHINE_ID_LEN] != '\n'))
		return false;
	id[MACHINE_ID_LEN] = '\0';
	if (strspn(id, "0123456789abcdef") != MACHINE_ID_LEN)
		return false;
	static const char app[] = "cordon e2b gc host\n";
	sha256_ctx c;
	uint8_t digest[32];
	char hex[65];
	sha256_init(&c);
	sha256_update(&c, app, sizeof(app) - 1);
	sha256_update(&c, id, MACHINE_ID_LEN);
	sha256_final(&c, digest);
	sha256_hex(digest, hex);
	memcpy(buf, hex, MACHINE_ID_LEN);
	buf[MACHINE_ID_LEN] = '\0';
	return true;
}

bool e2b_owner_metadata(json_object *meta)
{
	char host[MACHINE_ID_LEN + 1], token[OWNER_TOKEN_MAX];
	if (!machine_id(host) || owner_token_self(token) < 0)
		return false;
	json_object_object_add(meta, "cordon.host", json_object_new_string(host));
	json_object_object_add(meta, "cordon.owner", json_object_new_string(token));
	return true;
}

/* A metadata member that is a string, else NULL. */
static const char *meta_string(json_object *meta, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(meta, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Whether a listed sandbox is this tier's, this machine's, and its owner dead. */
static bool left_by_dead_host(const e2b_tier *t, const char *host, json_object *sbx)
{
	json_object *meta;
	if (!json_object_is_type(sbx, json_type_object) ||
	    !json_object_object_get_ex(sbx, "metadata", &meta) ||
	    !json_object_is_type(meta, json_type_object))
		return false;
	const char *tier = meta_string(meta, "cordon.tier");
	const char *h = meta_string(meta, "cordon.host");
	const char *owner = meta_string(meta, "cordon.owner");
	if (!tier || !h || !owner || strcmp(tier, t->name) != 0 || strcmp(h, host) != 0)
		return false;
	size_t len = 0;
	return owner_token_state(owner, &len) == OWNER_DEAD && owner[len] == '\0';
}

/* Kills what the listing names as left by a dead host; how many. */
static int kill_left(const e2b_tier *t, json_object *list, cordon_plugin_error *err)
{
	char host[MACHINE_ID_LEN + 1];
	if (!machine_id(host)) /* nothing of ours can be told apart */
		return 0;
	int killed = 0;
	size_t n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++) {
		json_object *sbx = json_object_array_get_idx(list, i), *v;
		if (!left_by_dead_host(t, host, sbx))
			continue;
		const char *id = json_object_object_get_ex(sbx, "sandboxID", &v) &&
						 json_object_is_type(v, json_type_string)
					 ? json_object_get_string(v)
					 : NULL;
		if (!e2b_valid_id(id))
			return e2b_protocol_error(err, "gc: a listed sandboxID is malformed");
		e2b_host->log(
			CORDON_PLUGIN_LOG_INFO, "e2b",
			"gc: sandbox %s of tier %s was left by a dead host process; killing it", id,
			t->name);
		e2b_kill_remote(t, id);
		killed++;
	}
	return killed;
}

int e2b_gc(void *tier, cordon_plugin_error *err)
{
	e2b_tier *t = tier;
	e2b_call c = { .method = "GET", .api = true, .idempotent = true, .cancel_fd = -1 };
	c.url = e2b_url(t->api_url, "/sandboxes", NULL, NULL);
	int r = e2b_http(t, &c, err);
	if (r >= 0 && c.status != 200)
		r = e2b_status_error(&c, "gc: list", err);
	json_object *list = NULL;
	if (r >= 0 && !(list = e2b_parse_as(c.resp, c.resp_len, json_type_array, "gc: list", err)))
		r = -EPROTO;
	if (r >= 0)
		r = kill_left(t, list, err);
	json_object_put(list);
	e2b_call_clear(&c);
	e2b_host->free(c.url);
	return r;
}
