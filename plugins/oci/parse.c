/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading what engines say: CLI error texts, `info` output, the owner labels
 * of containers (the agent's frames are agent/client.c's).
 * Pure except for the owner functions, which read /proc.
 */
#include "config.h"

#include "oci.h"

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
					 "unable to connect to podman", "cannot connect to podman",
					 "connection refused", "error during connect", NULL };
	return contains_any(text, n);
}

bool oci_output_says_no_image(const char *text)
{
	static const char *const n[] = { "no such image", "image not known", "manifest unknown",
					 "unable to find image", "not found: manifest",
					 "failed to resolve reference", "pull access denied", NULL };
	return contains_any(text, n);
}

bool oci_output_says_no_container(const char *text)
{
	static const char *const n[] = { "no such container", "no container with name or id",
					 "container not known", "is not running",
					 "state improper", NULL };
	return contains_any(text, n);
}

/* `docker info --format '{{json .Runtimes}}'`: {"runc":{...},"runsc":{...}}.
 * A key is a quoted name followed by a colon at the top level. */
bool oci_runtimes_json_has(const char *json, const char *runtime)
{
	if (!json || !runtime || !*runtime)
		return false;
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
				return false;
			const char *after = end + 1;
			while (*after == ' ')
				after++;
			if (depth == 1 && *after == ':' && (size_t)(end - p - 1) == n &&
			    strncmp(p + 1, runtime, n) == 0)
				return true;
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

static bool read_small(const char *path, char *buf, size_t max)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, max - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > 0;
}

static bool boot_id(char *out, size_t max)
{
	if (!read_small("/proc/sys/kernel/random/boot_id", out, max))
		return false;
	out[strcspn(out, "\n")] = '\0';
	return true;
}

/* Field 22 of /proc/PID/stat: the start time, which tells a reused pid apart. */
static bool start_time(long pid, unsigned long long *ret)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!read_small(path, buf, sizeof(buf)))
		return false;
	const char *p = strrchr(buf, ')');
	if (!p)
		return false;
	p++;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
	}
	return p && sscanf(p, " %llu", ret) == 1;
}

char *oci_owner_label(void)
{
	char boot[64] = "unknown";
	unsigned long long st = 0;
	boot_id(boot, sizeof(boot));
	start_time((long)getpid(), &st);
	return oci_xasprintf("%s:%ld:%llu", boot, (long)getpid(), st);
}

bool oci_owner_is_dead(const char *owner)
{
	char boot[64], now[64];
	long pid;
	unsigned long long st, cur;
	if (!owner || sscanf(owner, "%63[^:]:%ld:%llu", boot, &pid, &st) != 3 || pid <= 0)
		return true;
	if (!boot_id(now, sizeof(now)) || strcmp(now, boot) != 0)
		return true;
	if (!start_time(pid, &cur))
		return true;
	return cur != st;
}

bool oci_runtime_is_gvisor(const char *runtime)
{
	if (!runtime)
		return false;
	const char *base = strrchr(runtime, '/');
	return strcmp(base ? base + 1 : runtime, "runsc") == 0;
}
