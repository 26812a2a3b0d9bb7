/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The "is this image pinned" predicate (imageref.h). */
#include "config.h"

#include "imageref.h"

#include <string.h>

#define SHA256_PREFIX "sha256:"
#define SHA256_HEX 64

static bool is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

/* Registry host[:port], path components and an optional tag: lower-case alphanumerics and
 * . _ - / : (a tag may hold upper case), starting with an alphanumeric so that no engine can
 * read the reference as a flag. */
static bool name_ok(const char *name, size_t len)
{
	if (len == 0 || len > 255)
		return false;
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return false;
	const char *slash = memrchr(name, '/', len);
	const char *from = slash ? slash : name;
	const char *tag = memchr(from, ':', len - (size_t)(from - name));
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		bool in_tag = tag && name + i > tag;
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
			  c == '_' || c == '-' || (!in_tag && (c == '/' || c == ':')) ||
			  (in_tag && c >= 'A' && c <= 'Z');
		if (!ok || (c == '/' && (i + 1 == len || name[i + 1] == '/')))
			return false;
	}
	return !(tag && name + len - 1 == tag);
}

image_ref_verdict image_ref_check(const char *ref)
{
	if (!ref || !*ref)
		return IMAGE_REF_EMPTY;
	const char *at = strchr(ref, '@');
	if (!at)
		return IMAGE_REF_UNPINNED;
	if (!name_ok(ref, (size_t)(at - ref)))
		return IMAGE_REF_BAD_NAME;
	const char *digest = at + 1;
	if (strncmp(digest, SHA256_PREFIX, strlen(SHA256_PREFIX)) != 0)
		return IMAGE_REF_BAD_ALGO;
	digest += strlen(SHA256_PREFIX);
	if (strlen(digest) != SHA256_HEX || !is_lower_hex(digest, SHA256_HEX))
		return IMAGE_REF_BAD_DIGEST;
	return IMAGE_REF_PINNED;
}
