/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pools: a tier with `pool: N` keeps N session containers started ahead so
 * that `open` takes a ready one. A pooled container is started exactly as
 * `open` would start it for a request without a workspace and with the tier's
 * own limits and denied egress; any other request starts its own. A container
 * taken from the pool belongs to that sandbox alone and is removed at close:
 * nothing is ever reused for another sandbox.
 */
#include "config.h"

#include "driver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX_BACKOFF_S 30

struct oci_pool {
	pthread_t thread;
	pthread_cond_t cond; /* with tier->lock */
	bool stop;
	char *engine;
	char **ready;    /* FIFO of container names */
	int *pidfds;     /* their pid 1, or -1 (oci_container_pidfd) */
	oci_proc *chans; /* their session channels (attached CLIs) */
	size_t n;
};

/* What open gets for a request that asks for nothing: the tier's own limits (which the
 * core hands open when no rule adds one), denied egress, no workspace. Any other open
 * starts its own container: pool_compatible compares open's final limits with these,
 * it never merges them. */
static void pool_start_spec(const oci_tier *t, oci_start *st)
{
	*st = (oci_start){ .image = t->image,
			   .trust = CORDON_PLUGIN_TRUST_UNTRUSTED,
			   .egress = CORDON_PLUGIN_EGRESS_DENY,
			   .limits = t->limits };
}

static bool limits_equal(const cordon_plugin_limits *a, const cordon_plugin_limits *b)
{
	if (a->set != b->set)
		return false;
	for (int i = 0; i < CORDON_PLUGIN_LIMIT_COUNT; i++)
		if ((a->set & (1u << i)) && a->value[i] != b->value[i])
			return false;
	return true;
}

static bool pool_compatible(const oci_tier *t, const oci_start *st)
{
	oci_start p;
	pool_start_spec(t, &p);
	return !st->workspace && st->n_mounts == 0 && st->egress == CORDON_PLUGIN_EGRESS_DENY &&
	       strcmp(st->image, t->image) == 0 && limits_equal(&st->limits, &p.limits);
}

static void *pool_filler(void *data)
{
	oci_tier *t = data;
	oci_pool *p = t->pool;
	oci_start st;
	pool_start_spec(t, &st);
	unsigned backoff = 0;
	pthread_mutex_lock(&t->lock);
	while (!p->stop) {
		if (p->n >= (size_t)t->pool_size) {
			pthread_cond_wait(&p->cond, &t->lock);
			continue;
		}
		pthread_mutex_unlock(&t->lock);
		char name[64];
		oci_refusal r;
		oci_proc chan;
		int ret = oci_session_attach(t, p->engine, &st, name, sizeof(name), &chan, &r);
		/* off the open path: lets close kill pid 1 without an engine call
		 * should the channel fail */
		int pidfd = ret == 0 ? oci_container_pidfd(t, p->engine, name) : -1;
		pthread_mutex_lock(&t->lock);
		if (ret == 0 && p->stop) {
			pthread_mutex_unlock(&t->lock);
			if (pidfd >= 0)
				close(pidfd);
			if (!oci_chan_close(t, name, &chan))
				oci_container_remove(t, p->engine, name);
			pthread_mutex_lock(&t->lock);
		} else if (ret == 0) {
			p->pidfds[p->n] = pidfd;
			p->chans[p->n] = chan;
			p->ready[p->n++] = xstrdup(name);
			backoff = 0;
		} else {
			oci_host->log(CORDON_PLUGIN_LOG_WARNING, t->kind->name,
				      "tier %s: pool container did not start: %s", t->name,
				      r.message);
			backoff = backoff ? (backoff * 2 > POOL_MAX_BACKOFF_S ? POOL_MAX_BACKOFF_S
									      : backoff * 2)
					  : 1;
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += backoff;
			while (!p->stop && pthread_cond_timedwait(&p->cond, &t->lock, &ts) == 0)
				;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* Called with t->lock held. */
static bool pool_ensure_started(oci_tier *t, const char *engine)
{
	if (t->pool)
		return true;
	oci_pool *p = xmalloc0(sizeof(*p));
	p->engine = xstrdup(engine);
	p->ready = xmalloc0(((size_t)t->pool_size + 1) * sizeof(char *));
	p->pidfds = xmalloc0(((size_t)t->pool_size + 1) * sizeof(int));
	p->chans = xmalloc0(((size_t)t->pool_size + 1) * sizeof(oci_proc));
	pthread_cond_init(&p->cond, NULL);
	t->pool = p;
	if (pthread_create(&p->thread, NULL, pool_filler, t) != 0) {
		t->pool = NULL;
		pthread_cond_destroy(&p->cond);
		free(p->chans);
		free(p->pidfds);
		free(p->ready);
		free(p->engine);
		free(p);
		return false;
	}
	return true;
}

bool oci_pool_take(oci_tier *t, const char *engine, const oci_start *st, char *ret_name,
		   size_t name_len, int *ret_pidfd, oci_proc *ret_chan)
{
	if (t->pool_size <= 0 || !pool_compatible(t, st))
		return false;
	bool took = false;
	pthread_mutex_lock(&t->lock);
	if (pool_ensure_started(t, engine) && t->pool->n > 0) {
		oci_pool *p = t->pool;
		char *name = p->ready[0];
		*ret_pidfd = p->pidfds[0];
		*ret_chan = p->chans[0];
		memmove(p->ready, p->ready + 1, (p->n - 1) * sizeof(char *));
		memmove(p->pidfds, p->pidfds + 1, (p->n - 1) * sizeof(int));
		memmove(p->chans, p->chans + 1, (p->n - 1) * sizeof(oci_proc));
		p->ready[--p->n] = NULL;
		pthread_cond_signal(&p->cond);
		snprintf(ret_name, name_len, "%s", name);
		free(name);
		took = true;
	}
	pthread_mutex_unlock(&t->lock);
	return took;
}

void oci_pool_destroy(oci_tier *t)
{
	pthread_mutex_lock(&t->lock);
	oci_pool *p = t->pool;
	t->pool = NULL;
	if (p) {
		p->stop = true;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&t->lock);
	if (!p)
		return;
	/* the filler may be inside an engine call: it sees stop and removes
	 * what it just started */
	pthread_join(p->thread, NULL);
	for (size_t i = 0; i < p->n; i++) {
		if (!oci_chan_close(t, p->ready[i], &p->chans[i]))
			oci_container_remove(t, p->engine, p->ready[i]);
		free(p->ready[i]);
		if (p->pidfds[i] >= 0)
			close(p->pidfds[i]);
	}
	pthread_cond_destroy(&p->cond);
	free(p->chans);
	free(p->pidfds);
	free(p->ready);
	free(p->engine);
	free(p);
}
