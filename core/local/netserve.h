/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The local driver's network (docs/network.md): where a served port is
 * reached (the kernel tier's forwarder), and a service's listener inside. */
#pragma once

#include <cordon/plugin.h>

#include "confine.h"
#include "net/forward.h"

/* A serve's forwarder context: the run's sink (its address callback) and
 * the kernel tier's sandbox (NULL: the process jail). Lives for the run. */
typedef struct local_serve {
	const cordon_plugin_run_sink *sink;
	confine_sandbox *kernel;
} local_serve;

/* Starts what reaches spec->port (kernel NULL: the process jail's own port,
 * reported at once); *ret the forwarder, stopped by the caller. */
int local_serve_start(confine_sandbox *kernel, const cordon_plugin_run_spec *spec, local_serve *sc,
		      net_forward **ret, cordon_plugin_error *err) CORDON_INTERNAL;
/* The driver's listen op for a sandbox (kernel NULL: refused). */
int local_listen_inside(confine_sandbox *kernel, uint16_t *ret_port,
			cordon_plugin_error *err) CORDON_INTERNAL;
/* Reports a server's pid to sink->started (when the core asked for it), the pid $$ is for
 * the work: the jail's, the host's pid of its supervisor's child (the jail shares the host's
 * pid namespace); the kernel tier's (init_pidfd >= 0, the run's init), the pid in the run's
 * own pid namespace. Nothing when the work ended first. */
void local_serve_report_pid(const cordon_plugin_run_sink *sink, long supervisor,
			    int init_pidfd) CORDON_INTERNAL;
