/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading what engines say: CLI error texts, `info` output, the owner labels
 * of containers (the agent's frames are agent/client.c's).
 * Pure except for the owner functions, which read /proc.
 */
#include "config.h"

#include "oci.h"
#include "owner.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool contains_any(const char *text, const char *const *needles)
{
	if (!text)
		return false;
	for (size_t i = 0; needles[i]; i++)
		if (strcasestr(text, needles[i]))
			return true;
	return false;
}

bool oci_output_says_daemon_down(const char *text)
{
	static const char *const n[] = { "cannot connect to the docker daemon",
					 "is the docker daemon running",
					 "unable to connect to podman",
					 "cannot connect to podman",
					 "connection refused",
					 "error during connect",
					 NULL };
	return contains_any(text, n);
}

bool oci_output_says_no_image(const char *text)
{
	static const char *const n[] = { "no such image",       "image not known",
					 "manifest unknown",    "unable to find image",
					 "not found: manifest", "failed to resolve reference",
					 "pull access denied",  NULL };
	return contains_any(text, n);
}

bool oci_output_says_no_container(const char *text)
{
	static const char *const n[] = { "no such container",   "no container with name or id",
					 "container not known", "is not running",
					 "state improper",      NULL };
	return contains_any(text, n);
}

/* `docker info --format '{{json .Runtimes}}'`: {"runc":{...},"runsc":{...}}.
 * A key is a quoted name followed by a colon at the top level: what follows its colon,
 * or NULL. */
static const char *runtime_entry(const char *json, const char *runtime)
{
	if (!json || !runtime || !*runtime)
		return NULL;
	size_t n = strlen(runtime);
	int depth = 0;
	for (const char *p = json; *p; p++) {
		if (*p == '{') {
			depth++;
		} else if (*p == '}') {
			depth--;
		} else if (*p == '"') {
			const char *end = strchr(p + 1, '"');
			if (!end)
				return NULL;
			const char *after = end + 1;
			while (*after == ' ')
				after++;
			if (depth == 1 && *after == ':' && (size_t)(end - p - 1) == n &&
			    strncmp(p + 1, runtime, n) == 0)
				return after + 1;
			p = end;
		}
	}
	return NULL;
}

bool oci_runtimes_json_has(const char *json, const char *runtime)
{
	return runtime_entry(json, runtime) != NULL;
}

bool oci_runtimes_json_arg(const char *json, const char *runtime, bool (*match)(const char *))
{
	const char *p = runtime_entry(json, runtime);
	while (p && *p == ' ')
		p++;
	if (!p || *p != '{')
		return false;
	/* the strings of the runtime's object (no escapes: runsc's flags have none) */
	for (int depth = 0; *p; p++) {
		if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return false;
		} else if (*p == '"') {
			const char *end = strchr(p + 1, '"');
			if (!end || memchr(p + 1, '\\', (size_t)(end - p - 1)))
				return false;
			char tok[128];
			size_t len = (size_t)(end - p - 1);
			if (len < sizeof(tok)) {
				memcpy(tok, p + 1, len);
				tok[len] = '\0';
				if (match(tok))
					return true;
			}
			p = end;
		}
	}
	return false;
}

void oci_first_line(const char *text, char *out, size_t max)
{
	if (!max)
		return;
	out[0] = '\0';
	if (!text)
		return;
	while (*text && isspace((unsigned char)*text))
		text++;
	size_t n = strcspn(text, "\r\n");
	if (n >= max)
		n = max - 1;
	memcpy(out, text, n);
	out[n] = '\0';
	while (n > 0 && isspace((unsigned char)out[n - 1]))
		out[--n] = '\0';
}

/* ---- owners ------------------------------------------------------------------------ */

/* The token and its liveness are common/owner.c, shared with the local tiers. */
char *oci_owner_label(void)
{
	char token[OWNER_TOKEN_MAX];
	return owner_token_self(token) == 0 ? xstrdup(token) : NULL;
}

bool oci_owner_is_dead(const char *owner)
{
	size_t len = 0;
	owner_state st = owner_token_state(owner, &len);
	/* a label that is no token (or more than one) names no live host: the container is
	 * ours (gc lists only cordon's) and nobody's */
	if (st == OWNER_INVALID || owner[len] != '\0')
		return true;
	return st == OWNER_DEAD;
}

bool oci_runsc_host_uds_flag(const char *flag)
{
	while (*flag == '-')
		flag++;
	return strcmp(flag, "host-uds=open") == 0 || strcmp(flag, "host-uds=all") == 0;
}

bool oci_runtime_is_gvisor(const char *runtime)
{
	if (!runtime)
		return false;
	const char *base = strrchr(runtime, '/');
	base = base ? base + 1 : runtime;
	/* runsc-uds: docker's second name for runsc, given --host-uds=open (.ci/engines.sh,
	 * docs/tiers/containers.md); any other name is not taken for gVisor */
	return strcmp(base, "runsc") == 0 || strcmp(base, "runsc-uds") == 0;
}
