/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Error codes by name, checked against the registry (errcodes.def) when compiled:
 *   error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, ERRC(sandbox_denied), ...)
 * ERRC(x) is the string "x" when x is registered and does not compile otherwise, so no code
 * reaches a host without being in the registry and the documentation. It is an address
 * constant: usable in static initialisers. Header-only, libc-free: the core and the in-tree
 * plugins include it; third-party plugins keep their own codes (docs/plugin-guide.md).
 */
#pragma once

#include <stddef.h> /* size_t, for ERRC's index */

enum errcode_id {
#define ERRCODE(code_, cls_, meaning_) ERRCODE_ID_##code_,
#include "errcodes.def"
#undef ERRCODE
	ERRCODE_COUNT
};

#define ERRC(code_) (&#code_[(size_t)0 * ERRCODE_ID_##code_])
