/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rejection corpus: one source, one real shared object per refusal. Each
 * module is built with -DCORPUS_NAME="name" (its file's base name) and one
 * -DCORPUS_<CASE>; tests/unit/test-loader.c asserts the errno and reason of
 * each. Refusals that are about the file rather than its code (not regular,
 * symlink, writable, hard-linked, not ELF, truncated, wrong name) are made by
 * the test from copies; those about how it is linked (RPATH, RUNPATH) by
 * corpus.am.
 */
#include <cordon/plugin.h>

#include <errno.h>
#include <stddef.h>

#ifndef CORPUS_NAME
#error "CORPUS_NAME is required"
#endif

#if defined(CORPUS_UNDEF)
/* Defined nowhere: with lazy binding the plugin would load and the first
 * probe would kill the host ("symbol lookup error"). */
extern int corpus_missing_symbol(void);
#endif

#if defined(CORPUS_CTOREXIT)
#include <stdlib.h>
/* Runs at dlopen, before the loader sees a descriptor. */
__attribute__((constructor)) static void corpus_exit_early(void) { exit(0); }
#endif

#if defined(CORPUS_CTOR_EXIT)
#include <unistd.h>
/* The same with _exit(0): no atexit handler runs (review of issue 10). */
__attribute__((constructor)) static void corpus_exit_early(void) { _exit(0); }
#endif

#if defined(CORPUS_CTORQUICK)
#include <stdlib.h>
/* quick_exit(0): at_quick_exit handlers only, never atexit ones. */
__attribute__((constructor)) static void corpus_exit_early(void) { quick_exit(0); }
#endif

#if defined(CORPUS_CTORCRASH)
#include <signal.h>
/* Dies of a signal while loading. */
__attribute__((constructor)) static void corpus_crash_early(void) { raise(SIGSEGV); }
#endif

#if defined(CORPUS_CTORLOOP)
#include <unistd.h>
/* Never returns: the probe's bound, not a hang. */
__attribute__((constructor)) static void corpus_loop_early(void)
{
	for (;;)
		pause();
}
#endif

static int corpus_probe(void *tier, cordon_plugin_probe *ret)
{
#if defined(CORPUS_UNDEF)
	if (corpus_missing_symbol())
		return -EIO;
#endif
	ret->available = 1;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL;
	return 0;
}

__attribute__((unused)) static const cordon_plugin_driver corpus_driver = {
	.size = sizeof(cordon_plugin_driver),
#if defined(CORPUS_DUPDRV)
	.name = "alpha", /* the good plugin `alpha` registered it first */
#else
	.name = CORPUS_NAME,
#endif
	.probe = corpus_probe,
};

__attribute__((unused)) static int corpus_init(const cordon_host *host,
					       cordon_plugin_registrar *reg,
					       cordon_plugin_error *err)
{
#if defined(CORPUS_INITMSG)
	return host->error_set(err, -EACCES, CORDON_PLUGIN_ERROR_FORBIDDEN, "corpus_denied",
			       "needs /dev/corpus, which this host lacks");
#elif defined(CORPUS_INITBARE)
	return -EIO;
#elif defined(CORPUS_INITPARTIAL)
	/* Registers, then fails: the core must take the driver back. */
	int r = host->register_driver(reg, &corpus_driver);
	return r < 0 ? r : -ENXIO;
#elif defined(CORPUS_NODRIVER)
	return 0;
#elif defined(CORPUS_DUPDRV)
	/* Ignores the registration failure: the core must refuse anyway. */
	host->register_driver(reg, &corpus_driver);
	return 0;
#else
	return host->register_driver(reg, &corpus_driver);
#endif
}

#if defined(CORPUS_NOSYM)
/* Exports something, but not cordon_plugin_entry. */
__attribute__((visibility("default"))) void *corpus_not_the_entry(void);
void *corpus_not_the_entry(void) { return (void *)corpus_init; }
#else

#define D_MAJOR CORDON_PLUGIN_ABI_MAJOR
#define D_MINOR CORDON_PLUGIN_ABI_MINOR
#define D_SIZE sizeof(cordon_plugin_descriptor)
#define D_NAME CORPUS_NAME
#define D_VERSION "1.0"
#define D_DESCRIPTION "corpus: refused on purpose"
#define D_LICENSE "MIT"
#define D_INIT corpus_init
#define D_TAIL 0

#if defined(CORPUS_ABIMAJOR)
#undef D_MAJOR
#define D_MAJOR (CORDON_PLUGIN_ABI_MAJOR + 1)
#elif defined(CORPUS_ABIMINOR)
#undef D_MINOR
#define D_MINOR (CORDON_PLUGIN_ABI_MINOR + 1)
#elif defined(CORPUS_SMALL)
#undef D_SIZE
#define D_SIZE offsetof(cordon_plugin_descriptor, init)
#elif defined(CORPUS_TAIL)
#undef D_SIZE
#define D_SIZE sizeof(corpus_descriptor)
#undef D_TAIL
#define D_TAIL 1
#elif defined(CORPUS_NOVERSION)
#undef D_VERSION
#define D_VERSION ""
#elif defined(CORPUS_NOLICENSE)
#undef D_LICENSE
#define D_LICENSE NULL
#elif defined(CORPUS_NOINIT)
#undef D_INIT
#define D_INIT NULL
#elif defined(CORPUS_CTRLCHAR)
#undef D_DESCRIPTION
#define D_DESCRIPTION "two\nlines"
#elif defined(CORPUS_MISMATCH)
#undef D_NAME
#define D_NAME "someone-else"
#elif defined(CORPUS_BADNAME)
#undef D_NAME
#define D_NAME "BADNAME"
#endif

/* The descriptor with room for a tail, as a newer plugin would have it. */
__attribute__((unused)) static const struct {
	cordon_plugin_descriptor d;
	uint64_t tail;
} corpus_descriptor = {
	.d = { D_SIZE, D_MAJOR, D_MINOR, 0, D_NAME, D_VERSION, D_DESCRIPTION, D_LICENSE, D_INIT },
	.tail = D_TAIL,
};

CORDON_PLUGIN_EXPORT const cordon_plugin_descriptor *cordon_plugin_entry(const cordon_host *host);
const cordon_plugin_descriptor *cordon_plugin_entry(const cordon_host *host)
{
#if defined(CORPUS_NULLDESC)
	return NULL;
#else
	return &corpus_descriptor.d;
#endif
}
#endif
