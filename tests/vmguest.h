/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A microVM guest for the tests: built by `cordon vm build` from the kernel package that
 * .ci/test-setup.sh fetched, with this build's agent (tests/vmguest.c). */
#pragma once

#include <stdbool.h>

typedef struct vmguest {
	char *dir; /* the build's output (testutil_rmtree) */
	char *kernel, *kernel_sha256;
	char *initrd, *initrd_sha256;
} vmguest;

/* Why the tests cannot boot a guest here (no QEMU, no kernel package, no busybox), or NULL. */
char *vmguest_missing(void);
/* Builds a guest whose /init is agent (NULL: this build's cordon-agent); NULL, or why not
 * (g_free). */
char *vmguest_build(const char *agent, vmguest *ret);
/* A kvm tier emulated (accel: tcg) on g, in policy YAML at two spaces; extra: more keys,
 * each line indented by four. */
char *vmguest_tier(const vmguest *g, const char *name, const char *extra);
void vmguest_clear(vmguest *g);

/* The aarch64 guest (the hvf path, emulated here): why it cannot be built, or NULL. */
char *vmguest_missing_aarch64(void);
/* Builds it from arm64's kernel package, busybox and agent/cordon-agent-aarch64. */
char *vmguest_build_aarch64(vmguest *ret);
