/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* host->spawn, host->process_spawn and host->find_program: running a host
 * program for a plugin (an engine CLI, qemu-img, ...) with a minimal
 * environment, a new session, no inherited descriptors; spawn adds a timeout
 * that kills its process group and capped captures. Built on
 * common/hostproc.c. */
#pragma once

#include "error.h"

#include <cordon/plugin.h>

/* The PATH every host program sees unless the plugin passes envp. */
#define HOSTSPAWN_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define HOSTSPAWN_TIMEOUT_MS_DEFAULT 30000
#define HOSTSPAWN_OUTPUT_CAP_DEFAULT (1024 * 1024)

/* Runs spec->argv to completion. Returns 0 when the program ran (whatever its
 * exit code: spec->exit_code, 128+sig when signalled, -1 and timed_out on
 * timeout), a negative errno when it could not be started. */
int hostspawn_run(cordon_host_spawn *spec, cordon_plugin_error *err) CORDON_INTERNAL;
/* Starts spec->argv on the plugin's descriptors; *ret is released with its
 * release operation. */
int hostspawn_process(const cordon_host_process_spec *spec, cordon_host_process **ret,
		      cordon_plugin_error *err) CORDON_INTERNAL;
/* The absolute path of an executable on HOSTSPAWN_PATH (or name itself when
 * absolute and executable); NULL when there is none. Owned by caller (g_free). */
char *hostspawn_find_program(const char *name) CORDON_INTERNAL;
