/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared helpers for the Check suites. */
#pragma once

#include <check.h>
#include <cordon/cordon.h>
#include <glib.h>
#include <stdint.h>

/* Runs one suite with TAP output (automake's tap driver); returns the exit code. */
int testutil_run(Suite *s);
/* $CORDON_TOP_BUILDDIR/rel or $CORDON_TOP_SRCDIR/rel; owned by caller (g_free). */
char *testutil_build_path(const char *rel);
char *testutil_src_path(const char *rel);
/* A fresh private directory under $TMPDIR, removed by testutil_rmtree. */
char *testutil_tmpdir(void);
/* A serve's "unix:/path" address: a socket, in a directory of mode 0700 of this process's
 * uid; the socket's path (borrowed from address). */
const char *testutil_assert_unix_listener(const char *address);
/* Starts cordon-server on 127.0.0.1:0 with API key key, its files in dir (its sandboxes on
 * the kernel tier, template "base" at semi-trusted), and reads the port it prints once it
 * listens. NULL when it runs, else why not (newly allocated). */
char *testutil_server_start(const char *dir, const char *key, GPid *ret_pid, unsigned *ret_port);
void testutil_rmtree(const char *dir);
/* A port of the host's 127.0.0.1 that nothing listened on a moment ago. */
uint16_t testutil_free_port(void);
/* Waits (10 s at most, else fails the test) until something accepts on 127.0.0.1:port. */
void testutil_wait_port(uint16_t port);
/* A fresh private plugin directory (mode 0700) holding copies (mode 0644) of
 * the named in-tree plugins, e.g. "test" for the fake driver (plugins/test)
 * or "alpha" for a corpus plugin (tests/plugins). NULL-terminated; the build
 * tree itself may be group-writable, which the loader refuses. Remove with
 * testutil_rmtree; owned by caller (g_free). */
char *testutil_plugin_dir(const char *first, ...) __attribute__((sentinel));
/* The index of the policy's tier name in ctx; aborts the test when there is none. */
size_t testutil_tier_index(cordon_context *ctx, const char *name);
/* A context from a policy text (named name in messages); fails the test if it does not open. */
cordon_context *testutil_context_from_text(const char *policy, const char *name);
/* Opens req (taken) in ctx, or fails the test with the error's code and message (what
 * names the open in the message). */
cordon_sandbox *testutil_open(cordon_context *ctx, cordon_request *req, const char *what);
/* Whether the default policy's tier name is available here; its probe's
 * reason (or why there is none) in *ret_why (g_free). */
bool testutil_tier_available(const char *name, char **ret_why);
/* main() of a suite that needs tier name: skips (exit 0, TAP "SKIP" with the
 * reason; under CORDON_REQUIRE=all a bail-out, exit 1) when it is not
 * available, else runs s. */
int testutil_run_on_tier(const char *name, Suite *s);
/* Asserts err is set with class and code, then frees it. */
#define ck_assert_cordon_error(err, cls, code) \
	do { \
		ck_assert_ptr_nonnull(err); \
		ck_assert_str_eq(cordon_error_get_code(err), (code)); \
		ck_assert_int_eq(cordon_error_get_class(err), (cls)); \
		cordon_error_free(err); \
		(err) = NULL; \
	} while (0)
