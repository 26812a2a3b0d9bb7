/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one visibility macro for everything but the public headers: functions shared between
 * the objects of one library or program, never exported. (libcordon exports through its
 * version script, a plugin through CORDON_PLUGIN_EXPORT; nothing else leaves either.)
 */
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define CORDON_INTERNAL __attribute__((visibility("hidden")))
#else
#define CORDON_INTERNAL
#endif
