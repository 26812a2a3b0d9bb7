/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Landlock for the kernel tier, host side (landlock.h). */
#include "config.h"

#include "landlock.h"
#include "landlock-abi.h"
#include "rawsys.h"

#include <pthread.h>

static pthread_once_t abi_once = PTHREAD_ONCE_INIT;
static int abi_cached;

static void abi_probe(void)
{
	long r = rsys3(SYS_landlock_create_ruleset, 0, 0, LL_CREATE_RULESET_VERSION);
	abi_cached = r > 0 ? (int)r : 0;
}

int landlock_abi(void)
{
	pthread_once(&abi_once, abi_probe);
	return abi_cached;
}

const char *landlock_describe(int abi)
{
	if (abi <= 0)
		return "no Landlock";
	if (abi < 6)
		return "filesystem rules";
	if (abi < 9)
		return "filesystem rules, abstract-unix and signal scoping";
	return "filesystem rules, abstract-unix and signal scoping, pathname-unix connect rules";
}
