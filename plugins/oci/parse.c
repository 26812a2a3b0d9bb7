/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading what engines and the helper say: CLI error texts, `info` output,
 * the helper's frames and status lines, the owner labels of containers.
 * Pure except for the owner functions, which read /proc.
 */
#include "config.h"

#include "oci.h"
#include "protocol.h"
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

/* The token and its liveness are common/owner.c, shared with the local tiers. */
char *oci_owner_label(void)
{
	char token[OWNER_TOKEN_MAX];
	return owner_token_self(token) == 0 ? oci_xstrdup(token) : NULL;
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

/* ---- helper protocol ------------------------------------------------------------------ */

int oci_status_parse(const char *text, oci_status *ret)
{
	oci_status s = { 0 };
	char kind[16];
	int code, used = 0;
	if (!text || sscanf(text, "%15s %d%n", kind, &code, &used) != 2)
		return -EPROTO;
	if (strcmp(kind, "exit") == 0)
		s.exited = true;
	else if (strcmp(kind, "signal") == 0)
		s.signaled = true;
	else
		return -EPROTO;
	s.code = code;
	char word[32];
	const char *p = text + used;
	int n;
	while (sscanf(p, "%31s%n", word, &n) == 1) {
		p += n;
		if (strcmp(word, "timeout") == 0)
			s.timed_out = true;
		else if (strcmp(word, "cancelled") == 0)
			s.cancelled = true;
		else if (strcmp(word, "oom") == 0)
			s.oom = true;
		else if (strcmp(word, "truncated-stdout") == 0)
			s.truncated_out = true;
		else if (strcmp(word, "truncated-stderr") == 0)
			s.truncated_err = true;
		/* unknown words: a newer helper; ignore */
	}
	*ret = s;
	return 0;
}

uint32_t oci_error_class_for(const char *code)
{
	if (strcmp(code, "sandbox_path_escape") == 0 || strcmp(code, "limit_exceeded") == 0 ||
	    strcmp(code, "permission_denied") == 0)
		return CORDON_PLUGIN_ERROR_FORBIDDEN;
	if (strcmp(code, "invalid_argument") == 0)
		return CORDON_PLUGIN_ERROR_INVALID;
	return CORDON_PLUGIN_ERROR_TERMINAL;
}

int oci_error_parse(const char *text, oci_refusal *ret)
{
	char code[48];
	int errnum, used = 0;
	if (!text || sscanf(text, "%47s %d %n", code, &errnum, &used) != 2 || errnum <= 0)
		return -EPROTO;
	oci_refuse(ret, errnum, oci_error_class_for(code), code, "%s", text + used);
	return 0;
}

static bool known_frame(uint8_t t)
{
	return t == OCI_FRAME_HELLO || t == OCI_FRAME_STDOUT || t == OCI_FRAME_STDERR ||
	       t == OCI_FRAME_STATUS || t == OCI_FRAME_ERROR || t == OCI_FRAME_DATA ||
	       t == OCI_FRAME_PATH || t == OCI_FRAME_DONE;
}

int oci_decoder_feed(oci_decoder *d, const void *data, size_t len,
		     int (*fn)(void *ctx, uint8_t type, const char *payload, uint32_t len), void *ctx)
{
	const uint8_t *p = data;
	if (d->broken)
		return -EPROTO;
	while (len > 0) {
		if (d->hdr_len < OCI_FRAME_HEADER) {
			d->hdr[d->hdr_len++] = *p++;
			len--;
			if (d->hdr_len < OCI_FRAME_HEADER)
				continue;
			d->type = d->hdr[0];
			d->want = oci_frame_length(d->hdr);
			d->have = 0;
			if (!known_frame(d->type) || d->want > OCI_FRAME_MAX) {
				d->broken = true;
				return -EPROTO;
			}
			free(d->payload);
			d->payload = oci_xmalloc0((size_t)d->want + 1);
		}
		size_t take = d->want - d->have;
		if (take > len)
			take = len;
		memcpy(d->payload + d->have, p, take);
		d->have += (uint32_t)take;
		p += take;
		len -= take;
		if (d->have == d->want) {
			d->payload[d->want] = '\0';
			d->hdr_len = 0;
			int r = fn(ctx, d->type, d->payload, d->want);
			if (r)
				return r;
		}
	}
	return 0;
}

void oci_decoder_clear(oci_decoder *d)
{
	free(d->payload);
	memset(d, 0, sizeof(*d));
}

char *oci_env_header(const char *const *envp, size_t *ret_len)
{
	size_t block = 0;
	for (size_t i = 0; envp && envp[i]; i++)
		block += strlen(envp[i]) + 1;
	char prefix[32];
	int plen = snprintf(prefix, sizeof(prefix), "%zu\n", block);
	char *out = oci_xmalloc0((size_t)plen + block + 1);
	memcpy(out, prefix, (size_t)plen);
	size_t off = (size_t)plen;
	for (size_t i = 0; envp && envp[i]; i++) {
		size_t n = strlen(envp[i]) + 1;
		memcpy(out + off, envp[i], n);
		off += n;
	}
	*ret_len = off;
	return out;
}

static void put_frame(char *out, size_t *off, uint8_t type, const void *data, size_t len)
{
	oci_frame_header((uint8_t *)out + *off, type, (uint32_t)len);
	*off += OCI_FRAME_HEADER;
	if (len)
		memcpy(out + *off, data, len);
	*off += len;
}

static void put_str(char *out, size_t *off, const char *str)
{
	size_t n = strlen(str) + 1;
	memcpy(out + *off, str, n);
	*off += n;
}

/* in_len bytes as STDIN frames of at most OCI_FRAME_MAX, then STDIN_END. */
static void put_stdin(char *out, size_t *off, const void *in, size_t in_len)
{
	for (size_t done = 0; done < in_len;) {
		size_t n = in_len - done > OCI_FRAME_MAX ? OCI_FRAME_MAX : in_len - done;
		put_frame(out, off, OCI_REQ_STDIN, (const char *)in + done, n);
		done += n;
	}
	put_frame(out, off, OCI_REQ_STDIN_END, NULL, 0);
}

/* A request of type with a payload of that size and in_len bytes of stdin:
 * the buffer, sized for all of it (header written), and in *ret_off where
 * the payload goes. */
static char *request_begin(uint8_t type, size_t payload, size_t in_len, size_t *ret_off)
{
	size_t chunks = (in_len + OCI_FRAME_MAX - 1) / OCI_FRAME_MAX;
	size_t total = OCI_FRAME_HEADER + payload + chunks * OCI_FRAME_HEADER + in_len +
		       OCI_FRAME_HEADER;
	char *out = oci_xmalloc0(total);
	oci_frame_header((uint8_t *)out, type, (uint32_t)payload);
	*ret_off = OCI_FRAME_HEADER;
	return out;
}

char *oci_session_request(const char *const *argv, const char *const *envp, uint64_t timeout_ms,
			  uint64_t cap, const char *workdir, const void *in, size_t in_len,
			  size_t *ret_len)
{
	size_t argc = oci_strv_length(argv);
	char timeout[24], capv[24], argcv[24];
	snprintf(timeout, sizeof(timeout), "%" PRIu64, timeout_ms);
	snprintf(capv, sizeof(capv), "%" PRIu64, cap);
	snprintf(argcv, sizeof(argcv), "%zu", argc);
	if (!workdir)
		workdir = "";
	size_t payload = strlen(timeout) + strlen(capv) + strlen(workdir) + strlen(argcv) + 4;
	for (size_t i = 0; i < argc; i++)
		payload += strlen(argv[i]) + 1;
	for (size_t i = 0; envp && envp[i]; i++)
		payload += strlen(envp[i]) + 1;
	if (argc == 0 || payload > OCI_REQUEST_MAX)
		return NULL;
	size_t off;
	char *out = request_begin(OCI_REQ_RUN, payload, in_len, &off);
	put_str(out, &off, timeout);
	put_str(out, &off, capv);
	put_str(out, &off, workdir);
	put_str(out, &off, argcv);
	for (size_t i = 0; i < argc; i++)
		put_str(out, &off, argv[i]);
	for (size_t i = 0; envp && envp[i]; i++)
		put_str(out, &off, envp[i]);
	put_stdin(out, &off, in, in_len);
	*ret_len = off;
	return out;
}

char *oci_session_file_request(const char *const *args, const void *in, size_t in_len,
			       size_t *ret_len)
{
	size_t argc = oci_strv_length(args);
	size_t payload = 0;
	for (size_t i = 0; i < argc; i++)
		payload += strlen(args[i]) + 1;
	if (argc < 2 || argc > 3 || payload > OCI_FILE_REQUEST_MAX)
		return NULL;
	size_t off;
	char *out = request_begin(OCI_REQ_FILE, payload, in_len, &off);
	for (size_t i = 0; i < argc; i++)
		put_str(out, &off, args[i]);
	put_stdin(out, &off, in, in_len);
	*ret_len = off;
	return out;
}

bool oci_runtime_is_gvisor(const char *runtime)
{
	if (!runtime)
		return false;
	const char *base = strrchr(runtime, '/');
	return strcmp(base ? base + 1 : runtime, "runsc") == 0;
}
