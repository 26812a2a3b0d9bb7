/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <cordon/cordon.h>
#include <cordon/plugin.h>
#include <glib.h>

struct cordon_request {
	cordon_trust trust;
	char *trust_text;  /* what the host asked, for audit ("bogus" -> untrusted) */
	char *tier;        /* explicit tier, or NULL */
	GPtrArray *labels; /* char* "key=value", sorted on use */
	char *workspace;
	cordon_plugin_limits limits;
	GPtrArray *env; /* char* "KEY=VALUE" grants; values are secret */
	bool egress_set;
	cordon_egress egress;
	char *image;
	char *caller;      /* the host's label for whom the work is for, or NULL */
	GPtrArray *mounts; /* request_mount*, in the order added */
};

/* One extra host directory (cordon_request_add_mount): paths as given, inside normalised. */
typedef struct request_mount {
	char *host;
	char *inside;
	bool rw;
} request_mount;

/* At most this many mounts in a request. */
#define REQUEST_MOUNTS_MAX 16

/* Whether any mount of the request is writable. */
bool request_has_rw_mount(const cordon_request *req) G_GNUC_INTERNAL;

/* True when a label "key=value" is present. */
bool request_has_label(const cordon_request *req, const char *key_eq_value) G_GNUC_INTERNAL;
