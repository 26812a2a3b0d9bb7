/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a failed file operation (fsops, pathres) means to the caller: one error code, class
 * and message per errno, the same on every tier. The local driver reports it through the
 * host services; cordon-agent sends it in an ERROR frame ("<code> <errno> <message>"), from
 * which the host's client (agent/client.c) takes the class back with fserror_class.
 */
#pragma once

#include "visibility.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fserror {
	int errnum;       /* positive errno */
	uint32_t cls;     /* CORDON_PLUGIN_ERROR_* */
	const char *code; /* sandbox_path_escape, not_found, not_a_file, limit_exceeded, ... */
	char message[400];
} fserror;

/* Describes r (a negative errno from fsops_* or pathres_*) of operation op ("read", "glob")
 * on path, which the message names (never anything outside the sandbox). */
void fserror_describe(int r, const char *op, const char *path, fserror *ret) CORDON_INTERNAL;

/* The class of one of the codes above (CORDON_PLUGIN_ERROR_TERMINAL for any other). */
uint32_t fserror_class(const char *code) CORDON_INTERNAL;
