/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cordon audit: reads the audit trail (a JSON line per decision and per run, core/audit.c)
 * and prints the records that match, in file order, as text or (--json) one JSON array. */
#include "config.h"

#include "cli.h"
#include "units.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>

#define JSON_DEPTH_MAX 64

/* ---- a reader of one line's top-level members ------------------------------------------ */

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

static const char *skip_string(const char *p)
{
	if (*p != '"')
		return NULL;
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && !*++p)
			return NULL;
	return *p == '"' ? p + 1 : NULL;
}

static const char *skip_value(const char *p, int depth);

static const char *skip_container(const char *p, int depth, char close, bool object)
{
	p = skip_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (object) {
			if (!(p = skip_string(p)) || *(p = skip_ws(p)) != ':')
				return NULL;
			p = skip_ws(p + 1);
		}
		if (!(p = skip_value(p, depth + 1)))
			return NULL;
		p = skip_ws(p);
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
}

static const char *skip_value(const char *p, int depth)
{
	if (depth > JSON_DEPTH_MAX)
		return NULL;
	if (*p == '"')
		return skip_string(p);
	if (*p == '{')
		return skip_container(p, depth, '}', true);
	if (*p == '[')
		return skip_container(p, depth, ']', false);
	const char *s = p;
	while (*p && strchr("-+.0123456789eEtrufalsn", *p))
		p++;
	return p > s ? p : NULL;
}

/* The object's top-level members, name -> raw JSON text of the value; NULL when the line
 * is not one JSON object. */
static GHashTable *members(const char *line)
{
	g_autoptr(GHashTable) m = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	const char *p = skip_ws(line);
	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p != '}') {
		const char *k = p;
		if (!(p = skip_string(p)) || *(p = skip_ws(p)) != ':')
			return NULL;
		g_autofree char *key = g_strndup(k + 1, p - k - 2);
		const char *v = skip_ws(p + 1);
		if (!(p = skip_value(v, 1)))
			return NULL;
		g_hash_table_replace(m, g_steal_pointer(&key), g_strndup(v, p - v));
		p = skip_ws(p);
		if (*p == ',')
			p = skip_ws(p + 1);
		else if (*p != '}')
			return NULL;
	}
	return *skip_ws(p + 1) ? NULL : g_steal_pointer(&m);
}

/* A string member's value without its quotes (escapes kept as written: the members that
 * filters compare, ids and times, have none), or NULL when absent or not a string. */
static const char *str(GHashTable *m, const char *key, char **hold)
{
	const char *raw = g_hash_table_lookup(m, key);
	if (!raw || raw[0] != '"')
		return NULL;
	g_free(*hold);
	*hold = g_strndup(raw + 1, strlen(raw) - 2);
	return *hold;
}

/* ---- filters ------------------------------------------------------------------------ */

typedef struct filter {
	char *sandbox, *decision, *verdict, *event, *since, *until;
	GHashTable *decisions; /* --sandbox: the decisions of its runs */
} filter;

static bool match_time(const filter *f, const char *time)
{
	if (!time)
		return !f->since && !f->until;
	if (f->since && strcmp(time, f->since) < 0)
		return false;
	/* --until 2026-12-02 includes that day: compare as long as the bound is */
	return !f->until || strncmp(time, f->until, strlen(f->until)) <= 0;
}

static bool match(const filter *f, GHashTable *m)
{
	g_autofree char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	const char *event = str(m, "event", &a);
	const char *time = str(m, "time", &b);
	bool run = event && strcmp(event, "run") == 0;
	/* lines from before outcome records have no event: decisions */
	const char *ev = run ? "run" : "decision";
	const char *id = run ? str(m, "decision", &c) : str(m, "id", &c);
	const char *admitted = g_hash_table_lookup(m, "admitted");
	if (f->event && strcmp(f->event, ev) != 0)
		return false;
	if (!match_time(f, time))
		return false;
	if (f->decision && (!id || strcmp(id, f->decision) != 0))
		return false;
	if (f->sandbox) {
		const char *sb = run ? str(m, "sandbox", &d) : NULL;
		if (run ? !sb || strcmp(sb, f->sandbox) != 0
			: !id || !g_hash_table_contains(f->decisions, id))
			return false;
	}
	/* runs follow only admitted decisions */
	if (f->verdict && strcmp(f->verdict, "admitted") == 0)
		return run || (admitted && strcmp(admitted, "true") == 0);
	if (f->verdict)
		return !run && admitted && strcmp(admitted, "false") == 0;
	return true;
}

/* A bound given as a duration ("10m") means that long ago; anything else is a time
 * (a prefix of 2026-12-02T00:30:00Z), compared as text, as the trail writes it. */
static int resolve_time(char **bound, const char *opt)
{
	if (!*bound)
		return 0;
	uint64_t ms = 0;
	const char *why = NULL;
	if (units_parse_duration(*bound, &ms, &why) == 0) {
		g_autoptr(GDateTime) now = g_date_time_new_now_utc();
		g_autoptr(GDateTime) then = g_date_time_add(now, -(GTimeSpan)ms * 1000);
		g_free(*bound);
		*bound = g_date_time_format(then, "%Y-%m-%dT%H:%M:%S.%fZ");
		return 0;
	}
	if (!g_ascii_isdigit((*bound)[0]) || strlen(*bound) < 4)
		return cli_usage_error(
			"--%s takes a duration (10m) or a UTC time (2026-12-02T00:30)", opt);
	return 0;
}

/* ---- output --------------------------------------------------------------------------- */

static void print_text(GHashTable *m)
{
	g_autofree char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
	const char *event = str(m, "event", &a);
	const char *time = str(m, "time", &b);
	if (event && strcmp(event, "run") == 0) {
		const char *err = str(m, "error", &c);
		const char *sig = g_hash_table_lookup(m, "signal");
		g_autofree char *status = err ? g_strdup_printf("error=%s", err)
					  : sig && strcmp(sig, "null") != 0
						  ? g_strdup_printf("signal=%s", sig)
						  : g_strdup_printf("exit=%s",
								    (char *)g_hash_table_lookup(
									    m, "exit_code"));
		g_autofree char *line = g_strdup_printf(
			"%s run      sandbox=%s decision=%s %s %s %sms bytes_out=%s limits_hit=%s",
			time, str(m, "sandbox", &d), str(m, "decision", &e), str(m, "kind", &a),
			status, (char *)g_hash_table_lookup(m, "duration_ms"),
			(char *)g_hash_table_lookup(m, "bytes_out"),
			(char *)g_hash_table_lookup(m, "limits_hit"));
		g_autofree char *shown = cli_printable(line);
		puts(shown);
		return;
	}
	const char *admitted = g_hash_table_lookup(m, "admitted");
	bool yes = admitted && strcmp(admitted, "true") == 0;
	g_autofree char *line = g_strdup_printf(
		"%s decision id=%s %s trust=%s tier=%s%s%s", time, str(m, "id", &c) ? c : "-",
		yes ? "admitted" : "refused", str(m, "trust", &d), yes ? str(m, "tier", &e) : "-",
		yes ? "" : " code=", yes ? "" : (str(m, "code", &e) ? e : "?"));
	g_autofree char *shown = cli_printable(line);
	puts(shown);
}

/* ---- the command ------------------------------------------------------------------------- */

static int trail_path(const char *file, const char *policy, char **ret)
{
	if (file) {
		*ret = g_strdup(file);
		return 0;
	}
	cordon_context *ctx = NULL;
	int r = cli_open_context(policy, NULL, false, &ctx);
	if (r)
		return r;
	const char *p = cordon_context_audit_path(ctx);
	*ret = g_strdup(p);
	cordon_context_free(ctx);
	return p ? 0
		 : cli_usage_error("the policy keeps no audit trail (audit: {path: ...}); "
				   "name one with --file");
}

/* The decisions that opened the sandbox's runs, so that --sandbox shows them too. */
static void collect_decisions(filter *f, GStrv lines)
{
	f->decisions = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (size_t i = 0; f->sandbox && lines[i]; i++) {
		g_autoptr(GHashTable) m = members(lines[i]);
		g_autofree char *a = NULL, *b = NULL;
		const char *sb = m ? str(m, "sandbox", &a) : NULL;
		const char *d = m ? str(m, "decision", &b) : NULL;
		if (sb && d && strcmp(sb, f->sandbox) == 0)
			g_hash_table_add(f->decisions, g_strdup(d));
	}
}

static int print_matches(filter *f, GStrv lines, bool json)
{
	int bad = 0;
	bool first = true;
	if (json)
		fputs("[", stdout);
	for (size_t i = 0; lines[i]; i++) {
		if (!lines[i][0])
			continue;
		g_autoptr(GHashTable) m = members(lines[i]);
		if (!m) {
			fprintf(stderr, "cordon: audit: line %zu is not a JSON object; skipped\n",
				i + 1);
			bad++;
			continue;
		}
		if (!match(f, m))
			continue;
		if (json)
			printf("%s\n%s", first ? "" : ",", lines[i]);
		else
			print_text(m);
		first = false;
	}
	if (json)
		fputs(first ? "]\n" : "\n]\n", stdout);
	return bad ? 1 : 0;
}

int cli_cmd_audit(int argc, char **argv)
{
	filter f = { 0 };
	g_autofree char *file = NULL, *policy = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy, "Policy whose trail to read",
		  "FILE" },
		{ "file", 'f', 0, G_OPTION_ARG_FILENAME, &file, "The trail itself", "FILE" },
		{ "sandbox", 0, 0, G_OPTION_ARG_STRING, &f.sandbox,
		  "Runs of this sandbox, and its decision", "ID" },
		{ "decision", 0, 0, G_OPTION_ARG_STRING, &f.decision, "This decision and its runs",
		  "ID" },
		{ "verdict", 0, 0, G_OPTION_ARG_STRING, &f.verdict,
		  "admitted (and runs) or refused", "V" },
		{ "event", 0, 0, G_OPTION_ARG_STRING, &f.event, "decision or run", "E" },
		{ "since", 0, 0, G_OPTION_ARG_STRING, &f.since,
		  "From this UTC time, or this long ago (1h)", "T" },
		{ "until", 0, 0, G_OPTION_ARG_STRING, &f.until,
		  "Up to this UTC time, or this long ago", "T" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "One JSON array of the records", NULL },
		{ NULL }
	};
	g_autoptr(GOptionContext)
		oc = g_option_context_new("- read the audit trail: decisions and runs");
	g_option_context_add_main_entries(oc, entries, NULL);
	g_autoptr(GError) gerr = NULL;
	int r = 0;
	if (!g_option_context_parse(oc, &argc, &argv, &gerr))
		r = cli_usage_error("%s", gerr->message);
	else if (argc > 1)
		r = cli_usage_error("unexpected argument '%s'", argv[1]);
	else if (f.verdict && strcmp(f.verdict, "admitted") != 0 &&
		 strcmp(f.verdict, "refused") != 0)
		r = cli_usage_error("--verdict is admitted or refused");
	else if (f.event && strcmp(f.event, "decision") != 0 && strcmp(f.event, "run") != 0)
		r = cli_usage_error("--event is decision or run");
	if (!r && !(r = resolve_time(&f.since, "since")))
		r = resolve_time(&f.until, "until");
	g_autofree char *path = NULL;
	if (!r)
		r = trail_path(file, policy, &path);
	g_autofree char *text = NULL;
	if (!r && !g_file_get_contents(path, &text, NULL, &gerr))
		r = cli_fail("cannot read the audit trail: %s", gerr->message);
	if (!r) {
		g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
		collect_decisions(&f, lines);
		r = print_matches(&f, lines, json);
	}
	if (f.decisions)
		g_hash_table_unref(f.decisions);
	g_free(f.sandbox);
	g_free(f.decision);
	g_free(f.verdict);
	g_free(f.event);
	g_free(f.since);
	g_free(f.until);
	return r;
}
