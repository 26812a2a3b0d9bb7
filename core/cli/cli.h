/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <cordon/cordon.h>
#include <stdbool.h>
#include <stdint.h>

/* Prints err ("cordon: CLASS [CODE]: message"), frees it, returns the exit code. */
int cli_report(cordon_error *err);
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The policy path by precedence (see main.c), or NULL for the built-in default. */
const char *cli_policy_path(const char *flag);
/* Opens a context; returns 0 or an exit code (after printing why). */
int cli_open_context(const char *policy_flag, const char *plugin_dir, bool all_plugins,
		     struct cordon_context **ret);
int cli_parse_duration(const char *s, uint64_t *ret_ms);
/* Passes the work's output through (or prints JSON); returns the work's exit status. */
int cli_print_result(const cordon_result *res, const char *tier, cordon_containment c, bool json);
char *cli_json_string(const char *s, size_t len);

int cli_cmd_run(int argc, char **argv);
int cli_cmd_exec(int argc, char **argv);
int cli_cmd_probe(int argc, char **argv);
int cli_cmd_plugins(int argc, char **argv);
int cli_cmd_version(int argc, char **argv);
int cli_cmd_gc(int argc, char **argv);
int cli_cmd_policy(int argc, char **argv);
int cli_cmd_explain(int argc, char **argv);
int cli_cmd_image(int argc, char **argv);
