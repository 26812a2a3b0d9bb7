/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Secret grants: a policy names where a secret is, {env: NAME} (the host's
 * environment) or {file: PATH}, never the value. One resolver for the
 * plugins' secret keys (host->config_secret) and the core's own `secrets:`
 * (the services' credentials, docs/policy.md). A value lives in memory the
 * caller frees with secret_free, which wipes it; messages never hold it.
 */
#pragma once

#include "cfgtree.h"

#include <stdbool.h>
#include <stddef.h>

/* Resolves grant (a {env: NAME} or {file: PATH} map) into a new string.
 * private_file: the file must also be owned by root or by this process's
 * user and readable by its owner only (mode 0600 or 0400), so a secret the
 * policy names is not one every local user could read. Returns 0, or a
 * negative errno with the reason (never the value) in why. */
int secret_resolve(const cfg_node *grant, bool private_file, char **ret, char *why,
		   size_t whylen) CORDON_INTERNAL;
/* Wipes and frees a resolved secret (NULL is fine). */
void secret_free(char *s) CORDON_INTERNAL;
