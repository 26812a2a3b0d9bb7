/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier of the local driver (`confine: kernel`): what driver.c
 * calls when a tier is configured so. The mechanisms live in confine.c
 * (sandboxes, runs, the trial), zygote.c (the launch), child.c (namespaces,
 * mounts, identity), seccomp.c, landlock.c,
 * limits.c and nsinit.c; docs/tiers/local.md describes them.
 *
 * The probe is truthful: it reports `kernel` only after a trial launch on
 * this host went through every step (namespaces, read-only host, no
 * capabilities, Landlock where present, seccomp) and otherwise says which
 * mechanism is missing. Nothing falls back to a weaker run.
 */
#pragma once

#include "confine.h"

#include <cordon/plugin.h>
#include <stdbool.h>

#include "visibility.h"

/* Fills ret for a kernel tier whose policy asks for limits (may be NULL).
 * Never fails: an unavailable tier is a probe result. */
void kernel_probe(const cordon_plugin_limits *limits, cordon_plugin_probe *ret) CORDON_INTERNAL;

/* Refuses, when the policy is loaded, tier limits no kernel-tier run could
 * start with (nofile below the launcher's floor). 0, or -EPERM and why. */
int kernel_check_limits(const cordon_plugin_limits *limits, char *why,
			size_t whylen) CORDON_INTERNAL;

/* Prepares the kernel tier for a sandbox rooted at root_fd, under spec's
 * limits. Egress other than deny is refused: the sandbox has no network
 * until egress governance exists (a later issue), and a request for more
 * is refused rather than silently given less. Without a workspace,
 * private_disk caps the private root, at private_path when *root_fd is -1
 * (confine_sandbox_new), and *root_fd is replaced by the sandbox's own tmpfs
 * (the old fd, if any, is closed). */
int kernel_open(int *root_fd, const char *private_path, const cordon_plugin_open_spec *spec,
		uint64_t private_disk, confine_sandbox **ret,
		cordon_plugin_error *err) CORDON_INTERNAL;

/* Starts one run: argv[0] is searched in the work's PATH inside the
 * sandbox. The stdio fds are the child's ends (borrowed). On success *ret
 * holds the run's init, as a pidfd the run loop watches (it is not our
 * child: never use a pid for it). */
int kernel_spawn(confine_sandbox *k, const cordon_plugin_run_spec *spec, const int stdio[3],
		 confine_child *ret, cordon_plugin_error *err) CORDON_INTERNAL;

/* Ends the run when kill is true (timeout, cancel), then waits until its
 * init, and with it every process of the run, is gone. */
void kernel_stop(confine_child *c, bool kill) CORDON_INTERNAL;

/* Removes what hosts that died mid-run left behind (their runs' empty
 * control groups); returns how many. */
int kernel_gc(void) CORDON_INTERNAL;

/* Ends the sandbox a probe's trial left warm for the next open, and removes
 * the control groups made for its first run. */
void kernel_release_warm(void) CORDON_INTERNAL;

/* After kernel_stop: the work's status (exit code or signal, OOM) into st;
 * timed_out/cancelled flags stay. Releases the run's resources. Returns 0
 * or an error (the work could not be executed, or confinement failed). */
int kernel_finish(confine_child *c, cordon_plugin_run_status *st, const char *argv0,
		  cordon_plugin_error *err) CORDON_INTERNAL;
