/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The benchmarks' shared timing helpers: the monotonic clock, this process's CPU time and
 * the median of a sample, in microseconds. Header-only, so that each benchmark stays one
 * program built from its own source.
 */
#ifndef CORDON_BENCH_BENCHUTIL_H
#define CORDON_BENCH_BENCHUTIL_H

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static inline double bench_now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* User plus system time of this process (its children are not counted). */
static inline double bench_cpu_us(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v in place; the mean of the middle two for an even n; 0 for an empty sample. */
static inline double bench_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
