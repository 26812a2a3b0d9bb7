/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A request's mounts, as a driver's open takes them (open_spec.mounts, ABI 1.4). */
#pragma once

#include "request.h"
#include "visibility.h"

/* The mounts handed to one open, closed after it. */
typedef struct open_mounts {
	cordon_plugin_mount *m; /* n of them, borrowing the request's strings; NULL when none */
	guint n;
} open_mounts;

/* Opens each of req's mounts (no symbolic link on the way) and refuses one in a forbidden
 * tree or holding a directory of held (workspace_check_mount_fd). */
int mounts_open(const cordon_request *req, const char *const *held, open_mounts **ret,
		cordon_error **reterr) CORDON_INTERNAL;
/* Closes the descriptors and frees; NULL is fine. */
void open_mounts_free(open_mounts *o) CORDON_INTERNAL;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(open_mounts, open_mounts_free)
