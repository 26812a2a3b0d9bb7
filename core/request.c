/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "request.h"
#include "env.h"
#include "error.h"

#include <errno.h>
#include <string.h>

static const char *const trust_names[] = {
	[CORDON_TRUST_TRUSTED] = "trusted",
	[CORDON_TRUST_SEMI_TRUSTED] = "semi-trusted",
	[CORDON_TRUST_UNTRUSTED] = "untrusted",
};

static const char *const containment_names[] = {
	[CORDON_CONTAINMENT_PROCESS_JAIL] = "process-jail",
	[CORDON_CONTAINMENT_KERNEL] = "kernel",
	[CORDON_CONTAINMENT_CONTAINER] = "container",
	[CORDON_CONTAINMENT_USERSPACE_KERNEL] = "userspace-kernel",
	[CORDON_CONTAINMENT_MICROVM] = "microvm",
	[CORDON_CONTAINMENT_REMOTE] = "remote",
};

cordon_trust cordon_trust_from_string(const char *s)
{
	for (size_t i = 1; s && i < G_N_ELEMENTS(trust_names); i++)
		if (strcmp(s, trust_names[i]) == 0)
			return (cordon_trust)i;
	return CORDON_TRUST_UNTRUSTED; /* unknown fails closed */
}

const char *cordon_trust_to_string(cordon_trust t)
{
	if (t >= CORDON_TRUST_TRUSTED && t <= CORDON_TRUST_UNTRUSTED)
		return trust_names[t];
	return "untrusted";
}

cordon_containment cordon_containment_from_string(const char *s)
{
	for (size_t i = 1; s && i < G_N_ELEMENTS(containment_names); i++)
		if (strcmp(s, containment_names[i]) == 0)
			return (cordon_containment)i;
	return 0;
}

const char *cordon_containment_to_string(cordon_containment c)
{
	if (c >= CORDON_CONTAINMENT_PROCESS_JAIL && c <= CORDON_CONTAINMENT_REMOTE)
		return containment_names[c];
	return "process-jail"; /* an unknown level never claims more */
}

static void request_mount_free(gpointer p)
{
	request_mount *m = p;
	g_free(m->host);
	g_free(m->inside);
	g_free(m);
}

cordon_request *cordon_request_new(const char *trust)
{
	cordon_request *req = g_new0(cordon_request, 1);
	req->trust = cordon_trust_from_string(trust);
	req->trust_text = g_strdup(trust ? trust : "");
	req->labels = g_ptr_array_new_with_free_func(g_free);
	req->env = g_ptr_array_new_with_free_func(env_entry_free);
	req->egress = CORDON_EGRESS_DENY;
	req->mounts = g_ptr_array_new_with_free_func(request_mount_free);
	return req;
}

void cordon_request_free(cordon_request *req)
{
	if (!req)
		return;
	g_free(req->trust_text);
	g_free(req->tier);
	g_ptr_array_unref(req->labels);
	g_free(req->workspace);
	g_ptr_array_unref(req->env);
	g_free(req->image);
	g_free(req->caller);
	g_ptr_array_unref(req->mounts);
	g_free(req);
}

static bool valid_name(const char *s) { return s && *s && strlen(s) < 256 && !strpbrk(s, "=\n\r"); }

int cordon_request_set_tier(cordon_request *req, const char *tier, cordon_error **reterr)
{
	if (!req || !valid_name(tier))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "a tier name is required");
	g_free(req->tier);
	req->tier = g_strdup(tier);
	return 0;
}

int cordon_request_add_label(cordon_request *req, const char *key, const char *value,
			     cordon_error **reterr)
{
	if (!req || !valid_name(key) || !value || strpbrk(value, "\n\r"))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "a label needs a key without '=' and a one-line value");
	g_ptr_array_add(req->labels, g_strdup_printf("%s=%s", key, value));
	return 0;
}

bool request_has_label(const cordon_request *req, const char *key_eq_value)
{
	for (guint i = 0; i < req->labels->len; i++)
		if (strcmp(req->labels->pdata[i], key_eq_value) == 0)
			return true;
	return false;
}

int cordon_request_set_workspace(cordon_request *req, const char *dir, cordon_error **reterr)
{
	if (!req || !dir || dir[0] != '/')
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "the workspace must be an absolute directory");
	g_free(req->workspace);
	req->workspace = g_strdup(dir);
	return 0;
}

int cordon_request_set_limit(cordon_request *req, cordon_limit which, uint64_t value,
			     cordon_error **reterr)
{
	if (!req || (unsigned)which >= CORDON_LIMIT_COUNT_ || value == 0)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "unknown limit or zero value");
	req->limits.value[which] = value;
	req->limits.set |= 1u << which;
	return 0;
}

int cordon_request_grant_env(cordon_request *req, const char *key, const char *value,
			     cordon_error **reterr)
{
	if (!req)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "no request");
	int r = env_check_grant(key, value, reterr);
	if (r < 0)
		return r;
	g_ptr_array_add(req->env, g_strdup_printf("%s=%s", key, value));
	return 0;
}

int cordon_request_set_egress(cordon_request *req, cordon_egress egress, cordon_error **reterr)
{
	if (!req || (unsigned)egress > CORDON_EGRESS_ALLOW)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "unknown egress mode");
	req->egress = egress;
	req->egress_set = true;
	return 0;
}

int cordon_request_set_image(cordon_request *req, const char *image, cordon_error **reterr)
{
	if (!req || !image || !*image || strpbrk(image, " \t\n\r"))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "an image reference without spaces is required");
	g_free(req->image);
	req->image = g_strdup(image);
	return 0;
}

int cordon_request_set_caller(cordon_request *req, const char *label, cordon_error **reterr)
{
	/* Printable only: the label lands in the audit trail, where a control byte
	 * could forge what a terminal shows of it. */
	size_t n = label ? strlen(label) : 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)label[i] < 0x20 || label[i] == 0x7f)
			n = 0;
	if (!req || n == 0 || n > 256)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(invalid_argument),
				 "a caller label is 1 to 256 printable bytes");
	g_free(req->caller);
	req->caller = g_strdup(label);
	return 0;
}

/* The sandbox's own trees a mount may not cover: what the tier builds there is what
 * confines the work (its /proc, its /dev), and / would hide the whole sandbox. */
static bool inside_reserved(const char *inside)
{
	static const char *const trees[] = { "/proc", "/sys", "/dev" };
	if (strcmp(inside, "/") == 0)
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(trees); i++) {
		size_t n = strlen(trees[i]);
		if (strncmp(inside, trees[i], n) == 0 && (inside[n] == '\0' || inside[n] == '/'))
			return true;
	}
	return false;
}

/* inside, absolute, with repeated and trailing slashes dropped; NULL when it is relative,
 * holds a "." or ".." component or a control byte, or is too long. */
static char *inside_normalise(const char *inside)
{
	if (!inside || inside[0] != '/' || strlen(inside) >= 4096)
		return NULL;
	for (const char *p = inside; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ':' || *p == ',')
			return NULL;
	g_auto(GStrv) parts = g_strsplit(inside, "/", -1);
	GString *s = g_string_new(NULL);
	for (size_t i = 0; parts[i]; i++) {
		if (!parts[i][0])
			continue;
		if (strcmp(parts[i], ".") == 0 || strcmp(parts[i], "..") == 0) {
			g_string_free(s, TRUE);
			return NULL;
		}
		g_string_append_printf(s, "/%s", parts[i]);
	}
	if (s->len == 0)
		g_string_append_c(s, '/');
	return g_string_free(s, FALSE);
}

int cordon_request_add_mount(cordon_request *req, const char *host_dir, const char *inside,
			     unsigned flags, cordon_error **reterr)
{
	if (!req || !host_dir || host_dir[0] != '/' || (flags & ~(unsigned)CORDON_MOUNT_RW))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(mount_invalid),
				 "a mount needs an absolute host directory (and flags of "
				 "CORDON_MOUNT_RW only)");
	g_autofree char *norm = inside_normalise(inside);
	if (!norm)
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(mount_invalid),
				 "the mount's inside path '%s' must be absolute, without '.' or "
				 "'..' components, ':', ',' or control bytes",
				 inside ? inside : "(null)");
	if (inside_reserved(norm))
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(mount_invalid),
				 "the mount's inside path %s would cover the sandbox's own %s, "
				 "which the tier builds",
				 norm, strcmp(norm, "/") == 0 ? "root" : "/proc, /sys or /dev");
	if (req->mounts->len >= REQUEST_MOUNTS_MAX)
		return error_set(reterr, E2BIG, CORDON_ERROR_INVALID, ERRC(mount_invalid),
				 "a request has at most %d mounts", REQUEST_MOUNTS_MAX);
	for (guint i = 0; i < req->mounts->len; i++)
		if (strcmp(((request_mount *)req->mounts->pdata[i])->inside, norm) == 0)
			return error_set(reterr, EEXIST, CORDON_ERROR_INVALID, ERRC(mount_invalid),
					 "two mounts at %s", norm);
	request_mount *m = g_new0(request_mount, 1);
	m->host = g_strdup(host_dir);
	m->inside = g_steal_pointer(&norm);
	m->rw = flags & CORDON_MOUNT_RW;
	g_ptr_array_add(req->mounts, m);
	return 0;
}

bool request_has_rw_mount(const cordon_request *req)
{
	for (guint i = 0; i < req->mounts->len; i++)
		if (((const request_mount *)req->mounts->pdata[i])->rw)
			return true;
	return false;
}
