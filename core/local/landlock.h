/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Landlock for the kernel tier, host side: which ABI this kernel offers,
 * and what the tier enforces with it (landlock-abi.h has the policy; the
 * sandbox's init builds and enforces the rulesets, nsinit.c).
 */
#pragma once

#include "visibility.h"

/* The ABI this kernel offers: 0 when Landlock is missing or disabled.
 * Cached after the first call; thread-safe. */
int landlock_abi(void) CORDON_INTERNAL;

/* "filesystem rules, abstract-unix and signal scoping, ..." for abi; static. */
const char *landlock_describe(int abi) CORDON_INTERNAL;
