/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's launcher, private to it (confine.h is the driver's
 * interface): a sandbox's init (the zygote), the host's end of it, and the
 * warm pool (zygote.c), for the sandboxes, runs and trial of confine.c.
 */
#pragma once

#include "hostids.h"
#include "limits.h"
#include "nsinit-proto.h"
#include "visibility.h"

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A sandbox's init, the host's end of it. */
typedef struct zygote {
	int pidfd;   /* not our child: init (or a subreaper) reaps it */
	int control; /* SOCK_SEQPACKET; closing it ends the sandbox */
	GMutex lock; /* one request/reply at a time */
	bool privileged;
	unsigned in_uid, in_gid;
	unsigned out_uid, out_gid; /* the work's host ids: as root, the claimed ids */
	hostids ids;               /* as root: held until the sandbox's processes are gone */
	uint64_t scratch_cap;      /* what /tmp and /dev/shm hold together at most (0: usual) */
	gint live_runs;            /* runs started and not yet released (atomic) */
	int pending;               /* requests sent whose replies are unread (under lock) */
	int failed, failed_step;   /* a sent request's failure, for every later call */
	bool spent;                /* a last run was sent: no request follows it (under lock) */
} zygote;

/* Host work that can overlap a zygote's setup (the other CPU builds the
 * sandbox meanwhile): run between its start and its first record. An
 * error (a negative errno, the reason in why) ends the start with it. */
typedef struct zygote_overlap {
	int (*fn)(void *arg, char *why, size_t whylen);
	void *arg;
	bool ran;
} zygote_overlap;

/* A new sandbox whose work runs as in_uid/in_gid inside, out_uid/out_gid on
 * the host (*ret on success; else -errno, the reason in why). As root the
 * out ids are ignored: the sandbox claims ids of its own (hostids.h). /tmp and
 * /dev/shm hold at most scratch_cap together (0: their usual sizes). */
int zygote_start(bool privileged, unsigned in_uid, unsigned in_gid, unsigned out_uid,
		 unsigned out_gid, uint64_t scratch_cap, zygote_overlap *overlap, zygote **ret,
		 char *why, size_t whylen) CORDON_INTERNAL;
void zygote_kill(zygote *z) CORDON_INTERNAL;
void zygote_free(zygote *z) CORDON_INTERNAL;
int zygote_send(zygote *z, const struct nsinit_request *req, const void *inline_data,
		size_t inline_len, const int *fds, int nfds) CORDON_INTERNAL;
int zygote_call(zygote *z, const struct nsinit_request *req, const void *inline_data,
		size_t inline_len, const int *fds, int nfds, int *ret_fd,
		int *ret_step) CORDON_INTERNAL;
/* What a run's step (NSINIT_STEP_*) was doing, for messages. */
const char *zygote_run_step_name(int step) CORDON_INTERNAL;

zygote *zygote_pool_take(bool privileged, unsigned in_uid, unsigned in_gid, const limits_plan *plan,
			 limits_cgroup *ret_cg, bool *ret_have_cg) CORDON_INTERNAL;
void zygote_pool_put(zygote *z, const limits_plan *plan, limits_cgroup *cg) CORDON_INTERNAL;

/* Host helpers the launcher's files share. */
bool confine_kernel_has(long nr) CORDON_INTERNAL;
void confine_close_fd(int *fd) CORDON_INTERNAL;
void confine_wait_hangup(int fd, short events) CORDON_INTERNAL;
