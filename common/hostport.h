/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whether a "HOST:PORT" (numeric, as tiers report a server's address) accepts a TCP
 * connection now: the readiness of a served process (cordon_serve_wait_ready). libc only. */
#pragma once

#include "visibility.h"

#include <stdbool.h>

/* Connects and closes at once: the server sees one empty connection. */
bool hostport_accepts(const char *host_port) CORDON_INTERNAL;
