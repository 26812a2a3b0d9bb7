/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `pool: N`: guests started ahead on the tier's own limits, each handed to one sandbox and
 * never back (close ends it). A thread of the tier's keeps N ready, started by the first
 * probe that found the tier available, and stopped with the tier (every ready guest
 * ended). A guest is started as every open starts one (qemu_boot): a cold boot, or with
 * `clone: true` a copy-on-write clone of the tier's template (clone.c). Either way it took
 * its own identity before it waits here (fresh host randomness in its kernel RNG, its own
 * machine id and hostname), so siblings share no secret state. The price is N guests'
 * memory held while idle: -m each when cold, a clone's private pages (tens of MiB) when
 * cloned. A pooled clone runs /bin/true once before it waits (qemu_vm_warm: under TCG its
 * first exec costs most of a first run); that run leaves nothing but translated code.
 */
#include "config.h"

#include "vm.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_MS 2000 /* a failed boot is tried again after this */
#define WARM_MS 30000 /* a clone's warm-up run (clone.c), TCG on a loaded host */

struct qemu_pool {
	qemu_tier *tier;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	qemu_vm *ready;
	size_t n, want;
	bool stopping, started;
	pthread_t thread;
};

qemu_pool *qemu_pool_new(qemu_tier *t, size_t want)
{
	qemu_pool *p = xmalloc0(sizeof(*p));
	p->tier = t;
	p->want = want;
	p->ready = xmalloc0(want * sizeof(*p->ready));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	return p;
}

/* Waits up to ms for a change (or stopping); the caller holds the lock. */
static void wait_ms(qemu_pool *p, int64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&p->cond, &p->lock, &ts);
}

static void *refill(void *arg)
{
	qemu_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		if (p->n >= p->want) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		qemu_vm vm;
		agent_error r;
		int ret = qemu_boot(p->tier, &p->tier->limits, NULL, &vm, &r);
		if (ret == 0 && p->tier->clone && qemu_vm_warm(&vm, WARM_MS) < 0) {
			qemu_vm_stop(&vm);
			ret = qemu_refuse(&r, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
					  "a clone's warm-up run failed");
		}
		pthread_mutex_lock(&p->lock);
		if (ret < 0) {
			qemu_host->log(CORDON_PLUGIN_LOG_WARNING, "qemu", "pool of %s: %s",
				       p->tier->name, r.message);
			wait_ms(p, RETRY_MS);
		} else if (p->stopping || p->n >= p->want) {
			pthread_mutex_unlock(&p->lock);
			qemu_vm_stop(&vm);
			pthread_mutex_lock(&p->lock);
		} else {
			p->ready[p->n++] = vm;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void qemu_pool_start(qemu_pool *p)
{
	pthread_mutex_lock(&p->lock);
	if (!p->started && !p->stopping && pthread_create(&p->thread, NULL, refill, p) == 0)
		p->started = true;
	pthread_mutex_unlock(&p->lock);
}

/* Whether a ready guest's QEMU still runs (killed from outside while it waited?). */
static bool alive(const qemu_vm *vm)
{
	if (vm->proc->pidfd < 0)
		return true; /* no pidfd: the first request will tell */
	struct pollfd p = { vm->proc->pidfd, POLLIN, 0 };
	return poll(&p, 1, 0) == 0;
}

bool qemu_pool_take(qemu_pool *p, qemu_vm *ret)
{
	bool got = false;
	pthread_mutex_lock(&p->lock);
	while (!got && p->n > 0) {
		qemu_vm vm = p->ready[--p->n];
		if (alive(&vm)) {
			*ret = vm;
			got = true;
		} else {
			pthread_mutex_unlock(&p->lock);
			qemu_vm_stop(&vm);
			pthread_mutex_lock(&p->lock);
		}
	}
	pthread_cond_broadcast(&p->cond); /* one to boot again */
	pthread_mutex_unlock(&p->lock);
	return got;
}

void qemu_pool_free(qemu_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	bool started = p->started;
	pthread_mutex_unlock(&p->lock);
	if (started)
		pthread_join(p->thread, NULL);
	for (size_t i = 0; i < p->n; i++)
		qemu_vm_stop(&p->ready[i]);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->ready);
	free(p);
}
