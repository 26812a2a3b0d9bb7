/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cordon policy check | policy show, and cordon explain. */
#include "config.h"

#include "cli.h"
#include "units.h"

#include <cordon/cordon.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>

#define EXIT_INVALID_POLICY 1 /* `policy check`: the policy has errors */

static int parse_args(int *argc, char ***argv, const char *what, const char *summary,
		      GOptionEntry *entries, const GOptionEntry *more)
{
	g_autoptr(GOptionContext) oc = g_option_context_new(what);
	if (summary)
		g_option_context_set_summary(oc, summary);
	g_option_context_add_main_entries(oc, entries, NULL);
	if (more)
		g_option_context_add_main_entries(oc, more, NULL);
	g_autoptr(GError) gerr = NULL;
	if (!g_option_context_parse(oc, argc, argv, &gerr))
		return cli_usage_error("%s", gerr->message);
	return 0;
}

/* ---- policy check ------------------------------------------------------------- */

static int open_policy(const char *path, const char *plugin_dir, cordon_context **ret,
		       cordon_error **reterr)
{
	cordon_options *o = cordon_options_new();
	const char *dir = plugin_dir ? plugin_dir : g_getenv("CORDON_PLUGIN_DIR");
	int r = 0;
	if (path)
		r = cordon_options_set_policy_file(o, path, reterr);
	if (r >= 0 && dir && *dir)
		r = cordon_options_set_plugin_dir(o, dir, reterr);
	if (r >= 0)
		r = cordon_context_new(o, ret, reterr);
	cordon_options_free(o);
	return r;
}

/* The summary's warnings go to stderr as well: a script that keeps only
 * the exit status, or a terminal where stdout is redirected, still shows them. */
static void warn_loudly(const char *summary)
{
	g_auto(GStrv) lines = g_strsplit(summary, "\n", -1);
	for (size_t i = 0; lines[i]; i++)
		if (g_str_has_prefix(lines[i], "WARNING: "))
			fprintf(stderr, "cordon: %s\n", lines[i]);
}

/* A JSON array of the text's lines that start with prefix (or all, prefix NULL), without
 * it. Owned by caller. */
static char *json_lines(const char *text, const char *prefix)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	GString *o = g_string_new("[");
	bool any = false;
	for (size_t i = 0; lines[i]; i++) {
		if (!*lines[i] || (prefix && !g_str_has_prefix(lines[i], prefix)))
			continue;
		const char *l = lines[i] + (prefix ? strlen(prefix) : 0);
		g_autofree char *j = cli_json_string(l, strlen(l));
		g_string_append_printf(o, "%s%s", any ? "," : "", j);
		any = true;
	}
	g_string_append_c(o, ']');
	return g_string_free(o, FALSE);
}

/* policy check --json: {"file","valid":true,"summary","warnings":[...],"problems":[...]} or
 * {"file","valid":false,"error":{"class","code","message"},"errors":[one a line]}. */
static void print_check_valid(const char *file, const char *summary)
{
	g_autofree char *jf = cli_json_string(file, strlen(file));
	g_autofree char *js = cli_json_string(summary, strlen(summary));
	g_autofree char *jw = json_lines(summary, "WARNING: ");
	g_autofree char *jp = json_lines(summary, "problem: ");
	printf("{\"file\":%s,\"valid\":true,\"summary\":%s,\"warnings\":%s,\"problems\":%s}\n", jf,
	       js, jw, jp);
}

static void print_check_invalid(const char *file, const cordon_error *err)
{
	g_autofree char *jf = cli_json_string(file, strlen(file));
	const char *msg = cordon_error_get_message(err);
	g_autofree char *jc = cli_json_string(cordon_error_get_code(err),
					      strlen(cordon_error_get_code(err)));
	g_autofree char *jm = cli_json_string(msg, strlen(msg));
	g_autofree char *je = json_lines(msg, NULL);
	printf("{\"file\":%s,\"valid\":false,\"error\":{\"class\":\"%s\",\"code\":%s,"
	       "\"message\":%s},\"errors\":%s}\n",
	       jf, cordon_error_class_name(cordon_error_get_class(err)), jc, jm, je);
}

/* The summary's plugin problems (a plugin refused, a tier whose driver is not loaded),
 * each to stderr: what --strict fails on. Returns how many. */
static unsigned strict_problems(const char *summary)
{
	g_auto(GStrv) lines = g_strsplit(summary, "\n", -1);
	unsigned n = 0;
	for (size_t i = 0; lines[i]; i++)
		if (g_str_has_prefix(lines[i], "problem: ") ||
		    (g_str_has_prefix(lines[i], "note: tier ") &&
		     strstr(lines[i], " is unusable here"))) {
			fprintf(stderr, "cordon: %s\n", lines[i]);
			n++;
		}
	return n;
}

static int policy_check(int argc, char **argv)
{
	g_autofree char *plugin_dir = NULL;
	gboolean json = FALSE, strict = FALSE;
	GOptionEntry entries[] = {
		{ "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &plugin_dir,
		  "Plugin directory (absolute)", "DIR" },
		{ "strict", 0, 0, G_OPTION_ARG_NONE, &strict,
		  "Fail (exit 1) on plugin problems as well: a plugin refused or "
		  "not found, a tier whose driver is not loaded",
		  NULL },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "Print the verdict as one JSON object (valid, summary and "
		  "warnings, or every error)",
		  NULL },
		{ NULL }
	};
	int r = parse_args(
		&argc, &argv, "FILE - check a policy file",
		"Exit status: 0 when the policy is valid (a summary is printed), 1 when it "
		"has errors (every one printed, in file order, with file:line:column and key "
		"path), or with --strict when a plugin problem is found.",
		entries, NULL);
	if (r)
		return r;
	if (argc != 2)
		return cli_usage_error("policy check takes exactly one FILE");
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	if (open_policy(argv[1], plugin_dir, &ctx, &err) < 0) {
		if (cordon_error_get_class(err) != CORDON_ERROR_INVALID ||
		    strncmp(cordon_error_get_code(err), "policy_", 7) != 0)
			return cli_report(err);
		/* Every error, one per line, each with its position. */
		if (json)
			print_check_invalid(argv[1], err);
		g_autofree char *msg = cli_printable(cordon_error_get_message(err));
		fprintf(stderr, "%s\n", msg);
		fprintf(stderr, "cordon: %s is not a valid policy [%s]\n", argv[1],
			cordon_error_get_code(err));
		cordon_error_free(err);
		return EXIT_INVALID_POLICY;
	}
	char *summary = cordon_context_policy_summary(ctx);
	if (json)
		print_check_valid(argv[1], summary);
	else
		fputs(summary, stdout);
	warn_loudly(summary);
	unsigned problems = strict ? strict_problems(summary) : 0;
	if (problems)
		fprintf(stderr, "cordon: %s: %u plugin problem%s (--strict)\n", argv[1], problems,
			problems == 1 ? "" : "s");
	free(summary);
	cordon_context_free(ctx);
	return problems ? EXIT_INVALID_POLICY : 0;
}

static int policy_show(int argc, char **argv)
{
	g_autofree char *policy = NULL, *plugin_dir = NULL;
	gboolean def = FALSE, json = FALSE;
	GOptionEntry entries[] = {
		{ "default", 0, 0, G_OPTION_ARG_NONE, &def,
		  "Print the built-in default policy (YAML)", NULL },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "Print {\"file\",\"summary\"} (or {\"default\"}) as one JSON object", NULL },
		{ "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy, "Policy file", "FILE" },
		{ "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &plugin_dir,
		  "Plugin directory (absolute)", "DIR" },
		{ NULL }
	};
	int r = parse_args(
		&argc, &argv, "- show the policy in effect (or the built-in default)",
		"Without --default: a summary of the policy cordon would use here, found "
		"in this order: --policy, $CORDON_POLICY, " CORDON_SYSCONFDIR
		"/cordon/policy.yaml, the built-in default.",
		entries, NULL);
	if (r)
		return r;
	if (argc > 1)
		return cli_usage_error("unexpected argument '%s'", argv[1]);
	if (def) {
		const char *t = cordon_policy_default_text();
		g_autofree char *jt = json ? cli_json_string(t, strlen(t)) : NULL;
		if (json)
			printf("{\"default\":%s}\n", jt);
		else
			fputs(t, stdout);
		return 0;
	}
	const char *path = cli_policy_path(policy);
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	if (open_policy(path, plugin_dir, &ctx, &err) < 0)
		return cli_report(err);
	char *summary = cordon_context_policy_summary(ctx);
	if (json) {
		g_autofree char *jf = path ? cli_json_string(path, strlen(path)) : g_strdup("null");
		g_autofree char *js = cli_json_string(summary, strlen(summary));
		printf("{\"file\":%s,\"summary\":%s}\n", jf, js);
	} else {
		if (!path)
			printf("(no policy file: the built-in default is in effect)\n");
		fputs(summary, stdout);
	}
	free(summary);
	cordon_context_free(ctx);
	return 0;
}

int cli_cmd_policy(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "check") == 0) {
		g_set_prgname("cordon policy check");
		return policy_check(argc - 1, argv + 1);
	}
	if (argc >= 2 && strcmp(argv[1], "show") == 0) {
		g_set_prgname("cordon policy show");
		return policy_show(argc - 1, argv + 1);
	}
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: cordon policy check [--strict] [--json] FILE\n"
		       "       cordon policy show [--default] [--policy FILE]\n");
		return 0;
	}
	return cli_usage_error("policy needs a subcommand: check FILE, or show [--default]");
}

/* ---- explain ------------------------------------------------------------------ */

typedef struct explain_args {
	char *trust, *tier, *workspace;
	cli_request_fields fields;
} explain_args;

static void explain_args_clear(explain_args *a)
{
	g_free(a->trust);
	g_free(a->tier);
	g_free(a->workspace);
	cli_request_fields_clear(&a->fields);
}

/* Builds the request; returns 0, a usage exit code, or -1 with *err set. */
static int build_request(const explain_args *a, cordon_request **ret, cordon_error **err)
{
	cordon_request *req = cordon_request_new(a->trust);
	int r = 0;
	if (a->tier)
		r = cordon_request_set_tier(req, a->tier, err);
	if (r == 0)
		r = cli_request_fields_apply(&a->fields, req, err);
	if (r == 0 && a->workspace)
		r = cordon_request_set_workspace(req, a->workspace, err) < 0 ? -1 : 0;
	if (r != 0) {
		cordon_request_free(req);
		return r;
	}
	*ret = req;
	return 0;
}

static void print_size(uint64_t v)
{
	static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };
	for (int i = 0; i < 4; i++) {
		uint64_t mul = 1ull << (10 * (4 - i));
		if (v % mul == 0) {
			printf("%" G_GUINT64_FORMAT "%s", v / mul, units[i]);
			return;
		}
	}
	printf("%" G_GUINT64_FORMAT, v);
}

static void print_duration(uint64_t ms)
{
	if (ms % 3600000 == 0)
		printf("%" G_GUINT64_FORMAT "h", ms / 3600000);
	else if (ms % 60000 == 0)
		printf("%" G_GUINT64_FORMAT "m", ms / 60000);
	else if (ms % 1000 == 0)
		printf("%" G_GUINT64_FORMAT "s", ms / 1000);
	else
		printf("%" G_GUINT64_FORMAT "ms", ms);
}

static void print_limits(const cordon_decision *d)
{
	static const char *const names[] = { "wall",   "memory", "pids", "cpus",
					     "output", "nofile", "fsize" };
	bool any = false;
	for (int i = 0; i < CORDON_LIMIT_COUNT_; i++) {
		uint64_t v;
		if (!cordon_decision_limit(d, (cordon_limit)i, &v))
			continue;
		printf("%s%s ", any ? ", " : "limits:       ", names[i]);
		if (i == CORDON_LIMIT_WALL_MS)
			print_duration(v);
		else if (i == CORDON_LIMIT_CPU_MILLI)
			printf("%g", (double)v / 1000.0);
		else if (i == CORDON_LIMIT_PIDS || i == CORDON_LIMIT_NOFILE)
			printf("%" G_GUINT64_FORMAT, v);
		else
			print_size(v);
		any = true;
	}
	printf(any ? "\n" : "limits:       none set by the request or the policy\n");
}

static void print_decision(const cordon_decision *d, const char *trust_asked)
{
	const char *trust = cordon_trust_to_string(cordon_decision_trust(d));
	if (trust_asked && strcmp(trust_asked, trust) != 0)
		printf("trust:        %s (asked: '%s', unknown, so treated as untrusted)\n", trust,
		       trust_asked);
	else
		printf("trust:        %s\n", trust);
	printf("requirement:  %s\n", cordon_containment_to_string(cordon_decision_requirement(d)));
	if (cordon_decision_admitted(d)) {
		printf("decision:     admitted: tier %s (containment %s)\n",
		       cordon_decision_tier(d),
		       cordon_containment_to_string(cordon_decision_containment(d)));
		print_limits(d);
	} else {
		printf("decision:     refused [%s]\n", cordon_decision_code(d));
	}
	for (size_t i = 0; i < cordon_decision_warning_count(d); i++)
		printf("warning:      %s (mode: warn)\n", cordon_decision_warning(d, i));
	printf("candidates:%s\n", cordon_decision_candidate_count(d) ? "" : "   none");
	for (size_t i = 0; i < cordon_decision_candidate_count(d); i++) {
		cordon_containment c = cordon_decision_candidate_containment(d, i);
		printf("  %s %-12s %-16s %s\n", cordon_decision_candidate_chosen(d, i) ? "*" : " ",
		       cordon_decision_candidate_tier(d, i),
		       c ? cordon_containment_to_string(c) : "-",
		       cordon_decision_candidate_reason(d, i));
	}
}

static int explain(const explain_args *a, const char *policy, const char *plugin_dir, bool json)
{
	cordon_context *ctx = NULL;
	int r = cli_open_context(policy, plugin_dir, false, &ctx);
	if (r)
		return r;
	cordon_error *err = NULL;
	cordon_request *req = NULL;
	r = build_request(a, &req, &err);
	if (r != 0) {
		cordon_context_free(ctx);
		return r < 0 ? cli_report(err) : r;
	}
	cordon_decision *d = NULL;
	r = cordon_decide(ctx, req, &d, &err);
	if (!d) {
		r = cli_report(err);
	} else if (json && r < 0) {
		/* a refusal: the error object, with the decision */
		char *j = cordon_decision_to_json(d);
		r = cli_report_decision(g_steal_pointer(&err), j);
		free(j);
	} else {
		if (json) {
			char *j = cordon_decision_to_json(d);
			printf("%s\n", j);
			free(j);
		} else {
			print_decision(d, a->trust);
			if (r < 0)
				printf("why:          %s\n", cordon_error_get_message(err));
		}
		r = cordon_decision_admitted(d) ? 0 : EXIT_REFUSED;
		cordon_error_free(err);
	}
	cordon_decision_free(d);
	cordon_request_free(req);
	cordon_context_free(ctx);
	return r;
}

int cli_cmd_explain(int argc, char **argv)
{
	explain_args a = { 0 };
	g_autofree char *policy = NULL, *plugin_dir = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "trust", 't', 0, G_OPTION_ARG_STRING, &a.trust,
		  "Trust level: trusted, semi-trusted, untrusted (required)", "T" },
		{ "tier", 0, 0, G_OPTION_ARG_STRING, &a.tier, "Ask for this tier by name", "NAME" },
		{ "workspace", 0, 0, G_OPTION_ARG_FILENAME, &a.workspace,
		  "Host workspace (absolute)", "DIR" },
		{ "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy, "Policy file", "FILE" },
		{ "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &plugin_dir,
		  "Plugin directory (absolute)", "DIR" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the decision as one JSON object",
		  NULL },
		{ NULL }
	};
	g_autofree GOptionEntry *fields = cli_request_fields_entries(&a.fields);
	int r = parse_args(
		&argc, &argv, "- explain which tier a request gets, or why it is refused",
		"Exit status: 0 when admitted, 201 when refused. Nothing is opened or run; "
		"the decision is audited as a dry run when the policy has an audit trail.",
		entries, fields);
	if (!r && argc > 1)
		r = cli_usage_error("unexpected argument '%s'", argv[1]);
	if (!r && !a.trust)
		r = cli_usage_error("explain needs --trust");
	if (!r)
		r = explain(&a, policy, plugin_dir, json);
	explain_args_clear(&a);
	return r;
}
