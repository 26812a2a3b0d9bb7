/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The driver ABI, frozen: sizeof/offsetof of every struct in <cordon/plugin.h>
 * and the value of every constant, against the committed table
 * tests/abi/plugin-abi-lp64.txt (x86_64 and other LP64 hosts). Any change to
 * the ABI fails here until the table is edited in the same commit, so that
 * it is deliberate and visible in review (docs/plugin-guide.md, "ABI rules").
 *
 * After a deliberate, append-only change:
 *   tests/unit/test-abi --print > $(srcdir)/tests/abi/plugin-abi-lp64.txt
 */
#include "config.h"

#include "testutil.h"

/* As a third party's plugin sees the header: the ABI 1.1 names included. */
#undef CORDON_PLUGIN_NO_DEPRECATED
#include <cordon/plugin.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct abi_row {
	const char *kind; /* "struct", "field", "const" */
	const char *name;
	unsigned long long a, b; /* struct: size, 0; field: offset, size; const: value, 0 */
} abi_row;

#define STRUCT(T) \
	{ \
		"struct", #T, sizeof(T), 0 \
	}
#define FIELD(T, f) \
	{ \
		"field", #T "." #f, offsetof(T, f), sizeof(((T *)0)->f) \
	}
#define CONST(c) \
	{ \
		"const", #c, (unsigned long long)(c), 0 \
	}

static const abi_row compiled[] = {
	STRUCT(cordon_plugin_config_key),
	FIELD(cordon_plugin_config_key, name),
	FIELD(cordon_plugin_config_key, type),
	FIELD(cordon_plugin_config_key, required),
	STRUCT(cordon_plugin_probe),
	FIELD(cordon_plugin_probe, size),
	FIELD(cordon_plugin_probe, available),
	FIELD(cordon_plugin_probe, containment),
	FIELD(cordon_plugin_probe, egress_enforced),
	FIELD(cordon_plugin_probe, reason),
	FIELD(cordon_plugin_probe, limits),
	FIELD(cordon_plugin_probe, features),
	STRUCT(cordon_plugin_limits),
	FIELD(cordon_plugin_limits, value),
	FIELD(cordon_plugin_limits, set),
	FIELD(cordon_plugin_limits, size),
	STRUCT(cordon_plugin_open_spec),
	FIELD(cordon_plugin_open_spec, size),
	FIELD(cordon_plugin_open_spec, trust),
	FIELD(cordon_plugin_open_spec, egress),
	FIELD(cordon_plugin_open_spec, reserved),
	FIELD(cordon_plugin_open_spec, workspace),
	FIELD(cordon_plugin_open_spec, image),
	FIELD(cordon_plugin_open_spec, limits),
	FIELD(cordon_plugin_open_spec, egress_allow),
	FIELD(cordon_plugin_open_spec, egress_deny),
	FIELD(cordon_plugin_open_spec, egress_audit),
	FIELD(cordon_plugin_open_spec, mounts),
	FIELD(cordon_plugin_open_spec, n_mounts),
	FIELD(cordon_plugin_open_spec, reserved2),
	FIELD(cordon_plugin_open_spec, flags),
	FIELD(cordon_plugin_open_spec, reserved3),
	STRUCT(cordon_plugin_mount),
	FIELD(cordon_plugin_mount, size),
	FIELD(cordon_plugin_mount, flags),
	FIELD(cordon_plugin_mount, fd),
	FIELD(cordon_plugin_mount, reserved),
	FIELD(cordon_plugin_mount, host),
	FIELD(cordon_plugin_mount, inside),
	STRUCT(cordon_plugin_run_spec),
	FIELD(cordon_plugin_run_spec, size),
	FIELD(cordon_plugin_run_spec, flags),
	FIELD(cordon_plugin_run_spec, argv),
	FIELD(cordon_plugin_run_spec, envp),
	FIELD(cordon_plugin_run_spec, workdir),
	FIELD(cordon_plugin_run_spec, stdin_data),
	FIELD(cordon_plugin_run_spec, stdin_len),
	FIELD(cordon_plugin_run_spec, timeout_ms),
	FIELD(cordon_plugin_run_spec, cancel_fd),
	FIELD(cordon_plugin_run_spec, port),
	FIELD(cordon_plugin_run_spec, reserved),
	FIELD(cordon_plugin_run_spec, stdin_fd),
	FIELD(cordon_plugin_run_spec, tty_fd),
	STRUCT(cordon_plugin_run_sink),
	FIELD(cordon_plugin_run_sink, size),
	FIELD(cordon_plugin_run_sink, reserved),
	FIELD(cordon_plugin_run_sink, ctx),
	FIELD(cordon_plugin_run_sink, output),
	FIELD(cordon_plugin_run_sink, address),
	FIELD(cordon_plugin_run_sink, started),
	STRUCT(cordon_plugin_run_status),
	FIELD(cordon_plugin_run_status, size),
	FIELD(cordon_plugin_run_status, flags),
	FIELD(cordon_plugin_run_status, exit_code),
	FIELD(cordon_plugin_run_status, signal),
	STRUCT(cordon_plugin_driver),
	FIELD(cordon_plugin_driver, size),
	FIELD(cordon_plugin_driver, flags),
	FIELD(cordon_plugin_driver, name),
	FIELD(cordon_plugin_driver, config_keys),
	FIELD(cordon_plugin_driver, data),
	FIELD(cordon_plugin_driver, configure),
	FIELD(cordon_plugin_driver, unconfigure),
	FIELD(cordon_plugin_driver, probe),
	FIELD(cordon_plugin_driver, open),
	FIELD(cordon_plugin_driver, run),
	FIELD(cordon_plugin_driver, read_file),
	FIELD(cordon_plugin_driver, write_file),
	FIELD(cordon_plugin_driver, glob),
	FIELD(cordon_plugin_driver, walk),
	FIELD(cordon_plugin_driver, close),
	FIELD(cordon_plugin_driver, gc),
	FIELD(cordon_plugin_driver, listen),
	FIELD(cordon_plugin_driver, pause),
	FIELD(cordon_plugin_driver, resume),
	FIELD(cordon_plugin_driver, set_egress),
	STRUCT(cordon_host_spawn),
	FIELD(cordon_host_spawn, size),
	FIELD(cordon_host_spawn, reserved),
	FIELD(cordon_host_spawn, argv),
	FIELD(cordon_host_spawn, envp),
	FIELD(cordon_host_spawn, stdin_data),
	FIELD(cordon_host_spawn, stdin_len),
	FIELD(cordon_host_spawn, timeout_ms),
	FIELD(cordon_host_spawn, output_cap),
	FIELD(cordon_host_spawn, out),
	FIELD(cordon_host_spawn, err),
	FIELD(cordon_host_spawn, exit_code),
	FIELD(cordon_host_spawn, timed_out),
	STRUCT(cordon_host),
	FIELD(cordon_host, size),
	FIELD(cordon_host, abi_major),
	FIELD(cordon_host, abi_minor),
	FIELD(cordon_host, reserved),
	FIELD(cordon_host, log),
	FIELD(cordon_host, error_set),
	FIELD(cordon_host, alloc),
	FIELD(cordon_host, free),
	FIELD(cordon_host, strdup),
	FIELD(cordon_host, register_driver),
	FIELD(cordon_host, config_tier_name),
	FIELD(cordon_host, config_string),
	FIELD(cordon_host, config_bool),
	FIELD(cordon_host, config_int),
	FIELD(cordon_host, config_u64),
	FIELD(cordon_host, config_strv),
	FIELD(cordon_host, config_secret),
	FIELD(cordon_host, config_error),
	FIELD(cordon_host, config_limits),
	FIELD(cordon_host, spawn),
	FIELD(cordon_host, find_program),
	FIELD(cordon_host, path_is_confined),
	FIELD(cordon_host, process_spawn),
	FIELD(cordon_host, probe_depends),
	FIELD(cordon_host, egress_audit),
	FIELD(cordon_host, forward_start),
	FIELD(cordon_host, forward_stop),
	STRUCT(cordon_host_process_spec),
	FIELD(cordon_host_process_spec, size),
	FIELD(cordon_host_process_spec, reserved),
	FIELD(cordon_host_process_spec, argv),
	FIELD(cordon_host_process_spec, envp),
	FIELD(cordon_host_process_spec, stdin_fd),
	FIELD(cordon_host_process_spec, stdout_fd),
	FIELD(cordon_host_process_spec, stderr_fd),
	FIELD(cordon_host_process_spec, extra_fd),
	FIELD(cordon_host_process_spec, flags),
	FIELD(cordon_host_process_spec, reserved2),
	FIELD(cordon_host_process_spec, jail_paths),
	FIELD(cordon_host_process_spec, jail_devices),
	FIELD(cordon_host_process_spec, jail_fd_path),
	FIELD(cordon_host_process_spec, jail_fd),
	FIELD(cordon_host_process_spec, file_server_id),
	STRUCT(cordon_host_process),
	FIELD(cordon_host_process, size),
	FIELD(cordon_host_process, pid),
	FIELD(cordon_host_process, pidfd),
	FIELD(cordon_host_process, reserved),
	FIELD(cordon_host_process, kill),
	FIELD(cordon_host_process, wait),
	FIELD(cordon_host_process, release),
	STRUCT(cordon_host_forward_spec),
	FIELD(cordon_host_forward_spec, size),
	FIELD(cordon_host_forward_spec, flags),
	FIELD(cordon_host_forward_spec, port),
	FIELD(cordon_host_forward_spec, reserved),
	FIELD(cordon_host_forward_spec, reserved2),
	FIELD(cordon_host_forward_spec, socket),
	FIELD(cordon_host_forward_spec, ready),
	FIELD(cordon_host_forward_spec, ctx),
	STRUCT(cordon_plugin_descriptor),
	FIELD(cordon_plugin_descriptor, size),
	FIELD(cordon_plugin_descriptor, abi_major),
	FIELD(cordon_plugin_descriptor, abi_minor),
	FIELD(cordon_plugin_descriptor, reserved),
	FIELD(cordon_plugin_descriptor, name),
	FIELD(cordon_plugin_descriptor, version),
	FIELD(cordon_plugin_descriptor, description),
	FIELD(cordon_plugin_descriptor, license),
	FIELD(cordon_plugin_descriptor, init),
	CONST(CORDON_HOST_PROCESS_PDEATHSIG),
	CONST(CORDON_HOST_PROCESS_JAIL),
	CONST(CORDON_HOST_PROCESS_FILE_SERVER),
	CONST(CORDON_HOST_PROCESS_READ_ONLY),
	CONST(CORDON_HOST_FORWARD_UNIX),
	CONST(CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL),
	CONST(CORDON_PLUGIN_CONTAINMENT_KERNEL),
	CONST(CORDON_PLUGIN_CONTAINMENT_CONTAINER),
	CONST(CORDON_PLUGIN_CONTAINMENT_USERSPACE_KERNEL),
	CONST(CORDON_PLUGIN_CONTAINMENT_MICROVM),
	CONST(CORDON_PLUGIN_CONTAINMENT_REMOTE),
	CONST(CORDON_PLUGIN_ERROR_TERMINAL),
	CONST(CORDON_PLUGIN_ERROR_FORBIDDEN),
	CONST(CORDON_PLUGIN_ERROR_TRANSIENT),
	CONST(CORDON_PLUGIN_ERROR_CANCELLED),
	CONST(CORDON_PLUGIN_ERROR_INVALID),
	CONST(CORDON_PLUGIN_LOG_ERROR),
	CONST(CORDON_PLUGIN_LOG_WARNING),
	CONST(CORDON_PLUGIN_LOG_INFO),
	CONST(CORDON_PLUGIN_LOG_DEBUG),
	CONST(CORDON_PLUGIN_LIMIT_WALL_MS),
	CONST(CORDON_PLUGIN_LIMIT_MEMORY),
	CONST(CORDON_PLUGIN_LIMIT_PIDS),
	CONST(CORDON_PLUGIN_LIMIT_CPU_MILLI),
	CONST(CORDON_PLUGIN_LIMIT_OUTPUT),
	CONST(CORDON_PLUGIN_LIMIT_NOFILE),
	CONST(CORDON_PLUGIN_LIMIT_FSIZE),
	CONST(CORDON_PLUGIN_LIMIT_COUNT),
	CONST(CORDON_PLUGIN_EGRESS_DENY),
	CONST(CORDON_PLUGIN_EGRESS_GOVERNED),
	CONST(CORDON_PLUGIN_EGRESS_ALLOW),
	CONST(CORDON_PLUGIN_TRUST_TRUSTED),
	CONST(CORDON_PLUGIN_TRUST_SEMI_TRUSTED),
	CONST(CORDON_PLUGIN_TRUST_UNTRUSTED),
	CONST(CORDON_PLUGIN_CONFIG_STRING),
	CONST(CORDON_PLUGIN_CONFIG_BOOL),
	CONST(CORDON_PLUGIN_CONFIG_INT),
	CONST(CORDON_PLUGIN_CONFIG_SIZE),
	CONST(CORDON_PLUGIN_CONFIG_DURATION),
	CONST(CORDON_PLUGIN_CONFIG_STRING_LIST),
	CONST(CORDON_PLUGIN_CONFIG_SECRET),
	CONST(CORDON_PLUGIN_CONFIG_IMAGE),
	CONST(CORDON_PLUGIN_MOUNT_RW),
	CONST(CORDON_PLUGIN_DRIVER_MOUNTS),
	CONST(CORDON_PLUGIN_DRIVER_EGRESS_PROXY),
	CONST(CORDON_PLUGIN_DRIVER_WORKSPACE_RO),
	CONST(CORDON_PLUGIN_OPEN_WORKSPACE_RO),
	CONST(CORDON_PLUGIN_RUNSTATUS_EXITED),
	CONST(CORDON_PLUGIN_RUNSTATUS_SIGNALED),
	CONST(CORDON_PLUGIN_RUNSTATUS_TIMED_OUT),
	CONST(CORDON_PLUGIN_RUNSTATUS_CANCELLED),
	CONST(CORDON_PLUGIN_RUNSTATUS_OOM),
	CONST(CORDON_PLUGIN_RUNREQ_LAST),
	CONST(CORDON_PLUGIN_RUNREQ_SERVE_UNIX),
	CONST(CORDON_PLUGIN_DRIVER_SERVE_UNIX),
	CONST(CORDON_PLUGIN_DRIVER_STDIN_FD),
	CONST(CORDON_PLUGIN_DRIVER_TTY),
	CONST(CORDON_PLUGIN_PROBE_LISTEN),
	CONST(CORDON_PLUGIN_PROBE_MOUNTS),
	CONST(CORDON_HOST_WAIT_KILL_GROUP),
	CONST(CORDON_PLUGIN_ABI_MAJOR),
	CONST(CORDON_PLUGIN_ABI_MINOR),
	CONST(CORDON_PLUGIN_REASON_MAX),
};

static char *row_text(const abi_row *r)
{
	if (strcmp(r->kind, "field") == 0)
		return g_strdup_printf("field %s %llu %llu", r->name, r->a, r->b);
	return g_strdup_printf("%s %s %llu", r->kind, r->name, r->a);
}

static char *table_path(void) { return testutil_src_path("tests/abi/plugin-abi-lp64.txt"); }

/* The committed rows, comments and blank lines dropped. */
static GPtrArray *committed_rows(void)
{
	g_autofree char *path = table_path();
	g_autofree char *text = NULL;
	g_autoptr(GError) err = NULL;
	ck_assert_msg(g_file_get_contents(path, &text, NULL, &err), "%s",
		      err ? err->message : path);
	GPtrArray *rows = g_ptr_array_new_with_free_func(g_free);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (size_t i = 0; lines[i]; i++) {
		char *l = g_strstrip(lines[i]);
		if (*l && *l != '#')
			g_ptr_array_add(rows, g_strdup(l));
	}
	return rows;
}

static bool in_rows(GPtrArray *rows, const char *text)
{
	for (guint i = 0; i < rows->len; i++)
		if (g_strcmp0(rows->pdata[i], text) == 0)
			return true;
	return false;
}

/* Every compiled row is in the table, and every table row is compiled:
 * a stale table is as wrong as a changed header. */
START_TEST(test_abi_table)
{
	g_autoptr(GPtrArray) rows = committed_rows();
	g_autoptr(GPtrArray) mine = g_ptr_array_new_with_free_func(g_free);
	GString *diff = g_string_new(NULL);
	for (size_t i = 0; i < G_N_ELEMENTS(compiled); i++) {
		char *t = row_text(&compiled[i]);
		g_ptr_array_add(mine, t);
		if (!in_rows(rows, t))
			g_string_append_printf(diff, "\n  compiled, not in the table: %s", t);
	}
	for (guint i = 0; i < rows->len; i++)
		if (!in_rows(mine, rows->pdata[i]))
			g_string_append_printf(diff, "\n  in the table, not compiled: %s",
					       (char *)rows->pdata[i]);
	ck_assert_msg(diff->len == 0,
		      "the plugin ABI differs from tests/abi/plugin-abi-lp64.txt:%s", diff->str);
	g_string_free(diff, TRUE);
}
END_TEST

/* Structs crossing the boundary start with their size (DESIGN §5), and the
 * host table starts with its size and ABI version. */
START_TEST(test_size_first)
{
	ck_assert_uint_eq(offsetof(cordon_plugin_probe, size), 0);
	ck_assert_uint_eq(offsetof(cordon_plugin_open_spec, size), 0);
	ck_assert_uint_eq(offsetof(cordon_plugin_run_spec, size), 0);
	ck_assert_uint_eq(offsetof(cordon_plugin_run_sink, size), 0);
	ck_assert_uint_eq(offsetof(cordon_plugin_run_status, size), 0);
	ck_assert_uint_eq(offsetof(cordon_plugin_driver, size), 0);
	ck_assert_uint_eq(offsetof(cordon_host_spawn, size), 0);
	ck_assert_uint_eq(offsetof(cordon_host, size), 0);
	ck_assert_uint_eq(offsetof(cordon_host, abi_major), 4);
	ck_assert_uint_eq(offsetof(cordon_host, abi_minor), 8);
	ck_assert_uint_eq(offsetof(cordon_plugin_descriptor, size), 0);
}
END_TEST

/* A plugin written for ABI 1.1 still compiles against this header, and its
 * flag names mean what they meant: each is the renamed constant. */
START_TEST(test_deprecated_names)
{
	ck_assert_uint_eq(CORDON_PLUGIN_RUN_LAST, CORDON_PLUGIN_RUNREQ_LAST);
	ck_assert_uint_eq(CORDON_PLUGIN_RUN_EXITED, CORDON_PLUGIN_RUNSTATUS_EXITED);
	ck_assert_uint_eq(CORDON_PLUGIN_RUN_SIGNALED, CORDON_PLUGIN_RUNSTATUS_SIGNALED);
	ck_assert_uint_eq(CORDON_PLUGIN_RUN_TIMED_OUT, CORDON_PLUGIN_RUNSTATUS_TIMED_OUT);
	ck_assert_uint_eq(CORDON_PLUGIN_RUN_CANCELLED, CORDON_PLUGIN_RUNSTATUS_CANCELLED);
	ck_assert_uint_eq(CORDON_PLUGIN_RUN_OOM, CORDON_PLUGIN_RUNSTATUS_OOM);
	/* size took the place of 1.1's reserved word: value[] and set stay put. */
	ck_assert_uint_eq(offsetof(cordon_plugin_limits, size), 60);
	ck_assert_uint_eq(sizeof(cordon_plugin_limits), 64);
}
END_TEST

/* The macro a plugin uses fills the descriptor with this header's values. */
CORDON_PLUGIN_DEFINE("abi", "1", "the ABI test's own descriptor", "MIT", NULL)

START_TEST(test_define_macro)
{
	const cordon_plugin_descriptor *d = cordon_plugin_entry(NULL);
	ck_assert_uint_eq(d->size, sizeof(cordon_plugin_descriptor));
	ck_assert_uint_eq(d->abi_major, CORDON_PLUGIN_ABI_MAJOR);
	ck_assert_uint_eq(d->abi_minor, CORDON_PLUGIN_ABI_MINOR);
	ck_assert_uint_eq(d->reserved, 0);
	ck_assert_str_eq(d->name, "abi");
	ck_assert_str_eq(CORDON_PLUGIN_ENTRY_SYMBOL, "cordon_plugin_entry");
}
END_TEST

static bool host_is_lp64(void)
{
	return sizeof(void *) == 8 && sizeof(long) == 8 && _Alignof(uint64_t) == 8;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--print") == 0) {
		printf("# The plugin ABI on LP64 hosts (tests/unit/test-abi.c). Edit only with a\n"
		       "# deliberate ABI change: append-only, and a minor bump in plugin.h.\n"
		       "# struct NAME SIZE | field STRUCT.FIELD OFFSET SIZE | const NAME VALUE\n");
		for (size_t i = 0; i < G_N_ELEMENTS(compiled); i++) {
			g_autofree char *t = row_text(&compiled[i]);
			printf("%s\n", t);
		}
		return 0;
	}
	if (!host_is_lp64()) {
		/* The committed table is LP64's; other data models need their own.
		 * Under the TAP driver a skipped program is a "1..0 # SKIP" plan. */
		if (g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") == 0) {
			printf("Bail out! CORDON_REQUIRE=all: the ABI table is for LP64 hosts "
			       "only\n");
			return EXIT_FAILURE;
		}
		printf("1..0 # SKIP the ABI table is for LP64 hosts only\n");
		return 0;
	}
	Suite *s = suite_create("abi");
	TCase *tc = tcase_create("plugin.h");
	tcase_add_test(tc, test_abi_table);
	tcase_add_test(tc, test_size_first);
	tcase_add_test(tc, test_define_macro);
	tcase_add_test(tc, test_deprecated_names);
	suite_add_tcase(s, tc);
	return testutil_run(s);
}
