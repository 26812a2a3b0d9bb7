/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SHA-256 (FIPS 180-4), libc only: the microVM plugins check the guest kernel and initrd
 * against the policy's pins with it, and `cordon vm build` prints the pins with the same
 * code. Checked against the standard's test vectors in tests/unit/test-common.c.
 */
#pragma once

#include "visibility.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
} sha256_ctx;

void sha256_init(sha256_ctx *c) CORDON_INTERNAL;
void sha256_update(sha256_ctx *c, const void *data, size_t len) CORDON_INTERNAL;
void sha256_final(sha256_ctx *c, uint8_t out[32]) CORDON_INTERNAL;
/* The digest as 64 lower-case hex digits and a NUL. */
void sha256_hex(const uint8_t digest[32], char hex[65]) CORDON_INTERNAL;
/* The sha256 of what fd reads to its end; -errno on a read error. */
int sha256_fd(int fd, char hex[65]) CORDON_INTERNAL;
