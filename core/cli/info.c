/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cordon probe | plugins | version, and output helpers. */
#include "config.h"

#include "cli.h"

#include <cordon/plugin.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int parse_simple(int *argc, char ***argv, const char *what, GOptionEntry *entries)
{
	g_autoptr(GOptionContext) oc = g_option_context_new(what);
	g_option_context_add_main_entries(oc, entries, NULL);
	g_autoptr(GError) gerr = NULL;
	if (!g_option_context_parse(oc, argc, argv, &gerr))
		return cli_usage_error("%s", gerr->message);
	if (*argc > 1)
		return cli_usage_error("unexpected argument '%s'", (*argv)[1]);
	return 0;
}

/* One tier's probe, run in a thread of its own. */
typedef struct probe_call {
	cordon_context *ctx;
	size_t i;
	cordon_probe_report *rep;
	cordon_error *err;
} probe_call;

static gpointer probe_call_run(gpointer data)
{
	probe_call *c = data;
	cordon_context_probe_tier(c->ctx, c->i, &c->rep, &c->err);
	return NULL;
}

static void print_probe(cordon_context *ctx, size_t i, const cordon_probe_report *rep, bool json)
{
	const char *name = cordon_context_tier_name(ctx, i);
	const char *drv = cordon_context_tier_driver(ctx, i);
	const char *reason = cordon_probe_report_reason(rep);
	const char *cont = cordon_containment_to_string(cordon_probe_report_containment(rep));
	bool ok = cordon_probe_report_available(rep);
	const char *origin = cordon_probe_report_origin(rep);
	cordon_containment cap = cordon_probe_report_max_containment(rep);
	const char *capped = cap && origin && cordon_probe_report_containment(rep) > cap
				     ? cordon_containment_to_string(cap)
				     : NULL;
	if (json) {
		g_autofree char *jr = cli_json_string(reason, strlen(reason));
		g_autofree char *jo = origin ? cli_json_string(origin, strlen(origin))
					     : g_strdup("null");
		printf("{\"tier\":\"%s\",\"driver\":\"%s\",\"available\":%s,\"containment\":\"%s\","
		       "\"origin\":%s,\"max_containment\":%s%s%s,\"reason\":%s}\n",
		       name, drv, ok ? "true" : "false", cont, jo, cap ? "\"" : "",
		       cap ? cordon_containment_to_string(cap) : "null", cap ? "\"" : "", jr);
	} else {
		/* The claim as the driver made it, and what admission takes it for. */
		printf("%-12s %-8s %-11s %-16s %s", name, drv, ok ? "available" : "unavailable",
		       cont, reason);
		if (capped)
			printf(" [claimed by %s%s; admission caps it to %s]",
			       strcmp(origin, "built-in") ? "plugin " : "", origin, capped);
		putchar('\n');
	}
}

int cli_cmd_probe(int argc, char **argv)
{
	g_autofree char *policy = NULL, *plugin_dir = NULL;
	gboolean json = FALSE, fresh = FALSE;
	GOptionEntry entries[] = {
		{ "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy, "Policy file", "FILE" },
		{ "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &plugin_dir, "Plugin directory",
		  "DIR" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "One JSON object per tier", NULL },
		{ "fresh", 0, 0, G_OPTION_ARG_NONE, &fresh,
		  "Probe every tier now, ignoring answers kept from earlier runs", NULL },
		{ NULL }
	};
	int r = parse_simple(&argc, &argv, "- report whether each tier can run work on this host",
			     entries);
	if (r)
		return r;
	cli_set_probe_fresh(fresh);
	cordon_context *ctx = NULL;
	if ((r = cli_open_context(policy, plugin_dir, false, &ctx)))
		return r;
	/* Every tier at once: each probe is bounded by the library, so a hung
	 * engine costs that bound once, not once per tier. */
	size_t n = cordon_context_tier_count(ctx);
	g_autofree probe_call *calls = g_new0(probe_call, n);
	g_autofree GThread **threads = g_new0(GThread *, n);
	for (size_t i = 0; i < n; i++) {
		calls[i] = (probe_call){ .ctx = ctx, .i = i };
		threads[i] = g_thread_new("probe", probe_call_run, &calls[i]);
	}
	for (size_t i = 0; i < n; i++)
		g_thread_join(threads[i]);
	for (size_t i = 0; i < n; i++) {
		if (calls[i].rep)
			print_probe(ctx, i, calls[i].rep, json);
		else if (!r)
			r = cli_report(g_steal_pointer(&calls[i].err));
		cordon_probe_report_free(calls[i].rep);
		cordon_error_free(calls[i].err);
	}
	cordon_context_free(ctx);
	return r;
}

int cli_cmd_plugins(int argc, char **argv)
{
	g_autofree char *plugin_dir = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = { { "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &plugin_dir,
				     "Plugin directory", "DIR" },
				   { "json", 0, 0, G_OPTION_ARG_NONE, &json,
				     "One JSON object per plugin", NULL },
				   { NULL } };
	int r = parse_simple(&argc, &argv,
			     "- list every plugin found: loaded, or why it was refused", entries);
	if (r)
		return r;
	cordon_context *ctx = NULL;
	if ((r = cli_open_context(NULL, plugin_dir, true, &ctx)))
		return r;
	size_t n = cordon_context_plugin_count(ctx);
	for (size_t i = 0; i < n; i++) {
		const char *name = cordon_context_plugin_name(ctx, i);
		const char *detail = cordon_context_plugin_detail(ctx, i);
		const char *drivers = cordon_context_plugin_drivers(ctx, i);
		bool loaded = cordon_context_plugin_loaded(ctx, i);
		if (json) {
			g_autofree char *jd = cli_json_string(detail, strlen(detail));
			printf("{\"plugin\":\"%s\",\"loaded\":%s,\"%s\":%s,\"drivers\":\"%s\"}\n",
			       name, loaded ? "true" : "false", loaded ? "version" : "reason", jd,
			       drivers);
		} else {
			printf("%-12s %-8s %s%s%s\n", name, loaded ? "loaded" : "refused", detail,
			       loaded ? "  drivers: " : "", loaded ? drivers : "");
		}
	}
	if (n == 0 && !json)
		printf("no plugins found\n");
	cordon_context_free(ctx);
	return 0;
}

int cli_cmd_version(int argc, char **argv)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = { { "json", 0, 0, G_OPTION_ARG_NONE, &json,
				     "Print the versions as one JSON object", NULL },
				   { NULL } };
	int r = parse_simple(&argc, &argv,
			     "- print cordon's version, its plugin ABI and plugin directory",
			     entries);
	if (r)
		return r;
	if (json) {
		g_autofree char *dir = cli_json_string(CORDON_PLUGINDIR, strlen(CORDON_PLUGINDIR));
		printf("{\"version\":\"%s\",\"plugin_abi\":\"%d.%d\",\"plugin_dir\":%s}\n",
		       PACKAGE_VERSION, CORDON_PLUGIN_ABI_MAJOR, CORDON_PLUGIN_ABI_MINOR, dir);
		return 0;
	}
	printf("cordon %s (plugin ABI %d.%d, default plugin directory %s)\n", PACKAGE_VERSION,
	       CORDON_PLUGIN_ABI_MAJOR, CORDON_PLUGIN_ABI_MINOR, CORDON_PLUGINDIR);
	return 0;
}

int cli_cmd_gc(int argc, char **argv)
{
	g_autofree char *policy = NULL, *plugin_dir = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = { { "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy,
				     "Policy file", "FILE" },
				   { "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &plugin_dir,
				     "Plugin directory", "DIR" },
				   { "json", 0, 0, G_OPTION_ARG_NONE, &json,
				     "Print {\"removed\": N} as one JSON object", NULL },
				   { NULL } };
	int r = parse_simple(&argc, &argv,
			     "- remove what crashed hosts left behind (containers, guests)",
			     entries);
	if (r)
		return r;
	cordon_context *ctx = NULL;
	if ((r = cli_open_context(policy, plugin_dir, false, &ctx)))
		return r;
	cordon_error *err = NULL;
	int removed = cordon_context_gc(ctx, &err);
	cordon_context_free(ctx);
	if (removed < 0)
		return cli_report(err);
	printf(json ? "{\"removed\":%d}\n" : "removed %d\n", removed);
	return 0;
}
