/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "Is this image pinned?": the one predicate behind a policy's `require: {image: pinned}`,
 * `cordon image pin` and the container tiers' refusal of a movable tag. Pinned means
 * NAME@sha256:<64 lower-case hex digits>, NAME a valid reference (registry host[:port], path
 * components, an optional tag) that no engine can read as a flag. Only sha256: it is what the
 * engines and registries cordon drives verify; another algorithm is refused, not trusted on
 * its say-so. libc only (common/).
 */
#pragma once

#include "visibility.h"

#include <stdbool.h>

typedef enum image_ref_verdict {
	IMAGE_REF_PINNED = 0,
	IMAGE_REF_EMPTY,      /* NULL or "" */
	IMAGE_REF_UNPINNED,   /* no digest: a tag (or nothing) names it, and a tag can move */
	IMAGE_REF_BAD_NAME,   /* the part before '@' is not a reference */
	IMAGE_REF_BAD_ALGO,   /* a digest, but not sha256 */
	IMAGE_REF_BAD_DIGEST, /* sha256, but not 64 lower-case hex digits */
} image_ref_verdict;

image_ref_verdict image_ref_check(const char *ref) CORDON_INTERNAL;
static inline bool image_ref_is_pinned(const char *ref)
{
	return image_ref_check(ref) == IMAGE_REF_PINNED;
}
