/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Makes GLib's locks visible to ThreadSanitizer: preloaded into the tests of a --enable-tsan
 * build (tests.am). GLib's GMutex and GCond are futexes inside an uninstrumented libglib,
 * so TSan sees none of their ordering and reports every access they protect as a race. Each
 * wrapper calls GLib's own function and tells TSan the happens-before edge it creates:
 * unlock releases, lock acquires, a condition wait does both. Nothing else changes.
 * Itself uninstrumented, and harmless in a process without TSan (a program the tests
 * start): the annotations are looked up at run time and skipped when absent.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glib.h>

static void (*tsan_acquire_fn)(void *addr);
static void (*tsan_release_fn)(void *addr);

__attribute__((constructor)) static void find_tsan(void)
{
	tsan_acquire_fn = (void (*)(void *))dlsym(RTLD_DEFAULT, "__tsan_acquire");
	tsan_release_fn = (void (*)(void *))dlsym(RTLD_DEFAULT, "__tsan_release");
}

static void __tsan_acquire(void *addr)
{
	if (tsan_acquire_fn)
		tsan_acquire_fn(addr);
}

static void __tsan_release(void *addr)
{
	if (tsan_release_fn)
		tsan_release_fn(addr);
}

/* The next definition of NAME in the lookup order: GLib's. */
#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (!__atomic_load_n(&real_##name, __ATOMIC_ACQUIRE)) \
	__atomic_store_n(&real_##name, (__typeof__(name) *)dlsym(RTLD_NEXT, #name), \
			 __ATOMIC_RELEASE)

void g_mutex_lock(GMutex *mutex)
{
	REAL(g_mutex_lock);
	real_g_mutex_lock(mutex);
	__tsan_acquire(mutex);
}

gboolean g_mutex_trylock(GMutex *mutex)
{
	REAL(g_mutex_trylock);
	if (!real_g_mutex_trylock(mutex))
		return FALSE;
	__tsan_acquire(mutex);
	return TRUE;
}

void g_mutex_unlock(GMutex *mutex)
{
	REAL(g_mutex_unlock);
	__tsan_release(mutex);
	real_g_mutex_unlock(mutex);
}

void g_cond_wait(GCond *cond, GMutex *mutex)
{
	REAL(g_cond_wait);
	__tsan_release(mutex);
	real_g_cond_wait(cond, mutex);
	__tsan_acquire(mutex);
}

gboolean g_cond_wait_until(GCond *cond, GMutex *mutex, gint64 end_time)
{
	REAL(g_cond_wait_until);
	__tsan_release(mutex);
	gboolean signalled = real_g_cond_wait_until(cond, mutex, end_time);
	__tsan_acquire(mutex);
	return signalled;
}

/* g_once_init_enter is a macro whose slow path is this function: a FALSE answer means
 * another thread initialised the value, and its g_once_init_leave released it. */
gboolean(g_once_init_enter)(volatile void *location)
{
	REAL(g_once_init_enter);
	gboolean ours = real_g_once_init_enter(location);
	if (!ours)
		__tsan_acquire((void *)location);
	return ours;
}

void(g_once_init_leave)(volatile void *location, gsize result)
{
	REAL(g_once_init_leave);
	__tsan_release((void *)location);
	real_g_once_init_leave(location, result);
}
