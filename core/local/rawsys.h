/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Raw system calls for code that runs between clone() and execve() in the
 * host's address space (the kernel tier's launcher, core/local/child.c).
 *
 * Why not libc: the launcher's children share the host's memory and its
 * calling thread's TLS (clone without CLONE_SETTLS). Two of them run at the
 * same time (the outer helper and the namespace init), so a libc wrapper
 * that stores errno would race on the host thread's errno. These helpers
 * return -errno in the result and touch no memory but their arguments.
 * Everything here is async-signal-safe by construction.
 */
#pragma once

#include <stddef.h>
#include <sys/syscall.h>

/* Marks code that runs in the launcher's children: no sanitizer runtime
 * call may happen there (ASan's no-return bookkeeping and fake stacks
 * assume the host's own threads and stacks; TSan's shadow stack is the thread's). */
#define RAWSYS_CHILD __attribute__((no_sanitize_address, no_sanitize_undefined, no_sanitize_thread))

#if defined(__x86_64__)
static inline RAWSYS_CHILD long rsys6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline RAWSYS_CHILD long rsys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#else
#error "the kernel tier's launcher needs raw system calls for this architecture (rawsys.h)"
#endif

#define RSYS_ARG(x) ((long)(x))
#define rsys0(n) rsys6((n), 0, 0, 0, 0, 0, 0)
#define rsys1(n, a) rsys6((n), RSYS_ARG(a), 0, 0, 0, 0, 0)
#define rsys2(n, a, b) rsys6((n), RSYS_ARG(a), RSYS_ARG(b), 0, 0, 0, 0)
#define rsys3(n, a, b, c) rsys6((n), RSYS_ARG(a), RSYS_ARG(b), RSYS_ARG(c), 0, 0, 0)
#define rsys4(n, a, b, c, d) rsys6((n), RSYS_ARG(a), RSYS_ARG(b), RSYS_ARG(c), RSYS_ARG(d), 0, 0)
#define rsys5(n, a, b, c, d, e) \
	rsys6((n), RSYS_ARG(a), RSYS_ARG(b), RSYS_ARG(c), RSYS_ARG(d), RSYS_ARG(e), 0)

/* Small string helpers that allocate nothing (the children may not). */
static inline RAWSYS_CHILD size_t rs_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* Appends the decimal form of v at dst (which has room for 21 bytes) and
 * NUL-terminates; returns the end. */
static inline RAWSYS_CHILD char *rs_utoa(char *dst, unsigned long v)
{
	char tmp[21];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*dst++ = tmp[--n];
	*dst = '\0';
	return dst;
}

/* Appends src at dst (room is the caller's business); returns the end. */
static inline RAWSYS_CHILD char *rs_stpcpy(char *dst, const char *src)
{
	while (*src)
		*dst++ = *src++;
	*dst = '\0';
	return dst;
}
