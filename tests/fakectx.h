/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An in-process driver for admission tests and benchmarks: tiers of any
 * containment and availability, without privileges or plugins. Its keys:
 *   containment: process-jail ... remote   (what the probe reports)
 *   available: true | false                 (default true)
 *   reason: "text"                          (the probe's reason)
 *   image: "ref"                            (its image key, read by image rules)
 *   enforces: [memory, wall, ...]           (the limits it enforces; default all)
 *   open_fails: terminal | forbidden        (its open fails so; default it opens)
 * The tfake-template driver is the same with its image key named template,
 * and an image key that is a plain string. */
#pragma once

#include "context.h"

#define FAKECTX_DRIVER "tfake"
#define FAKECTX_TEMPLATE_DRIVER "tfake-template"
#define FAKECTX_NOOP_DRIVER "tfake-noop" /* tfake without open, run or close */

/* Opens a context for the policy text with the tfake driver registered
 * next to the built-in ones. */
int fakectx_open(const char *policy, cordon_context **ret, cordon_error **reterr);
/* Opens tried on tfake tiers so far (all contexts of the process). */
unsigned fakectx_open_count(void);
/* Probes made by tfake tiers so far (all contexts of the process). */
unsigned fakectx_probe_count(void);
/* Changes what a tier's next probe reports. */
void fakectx_set_available(cordon_context *ctx, const char *tier, bool available);
