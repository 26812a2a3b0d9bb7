/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The request fields a policy judges, as every command that builds a request takes them
 * (run, exec, shell, explain): --label, --limit (the policy's names and unit grammar,
 * common/units.c), --egress, --image, --mount, and who it is for (--caller, else $CORDON_CALLER: the
 * audit's caller label). One place, so that `explain` and `run` judge the same
 * request for the same words. */
#include "config.h"

#include "cli.h"
#include "units.h"

#include <cordon/cordon.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>

void cli_request_fields_clear(cli_request_fields *f)
{
	g_free(f->egress);
	g_free(f->image);
	g_free(f->caller);
	g_strfreev(f->labels);
	g_strfreev(f->limits);
	g_strfreev(f->mounts);
	*f = (cli_request_fields){ NULL };
}

GOptionEntry *cli_request_fields_entries(cli_request_fields *f)
{
	GOptionEntry e[] = {
		{ "label", 'l', 0, G_OPTION_ARG_STRING_ARRAY, &f->labels,
		  "A request label the policy's rules match (repeatable)", "K=V" },
		{ "limit", 0, 0, G_OPTION_ARG_STRING_ARRAY, &f->limits,
		  "A limit asked for, in the policy's units: wall=30s, memory=512MiB, pids=64, "
		  "cpus=1.5, output=1MiB, nofile=256, fsize=10MiB (repeatable)",
		  "K=V" },
		{ "egress", 0, 0, G_OPTION_ARG_STRING, &f->egress,
		  "Egress asked for: deny (default), governed, allow", "MODE" },
		{ "image", 0, 0, G_OPTION_ARG_STRING, &f->image,
		  "Image asked for (container tiers; the policy may require it pinned)", "REF" },
		{ "mount", 0, 0, G_OPTION_ARG_STRING_ARRAY, &f->mounts,
		  "A host directory the work sees at INSIDE, read-only unless :rw (repeatable; "
		  "not on the jail or microVM tiers)",
		  "HOST:INSIDE[:rw]" },
		{ "caller", 0, 0, G_OPTION_ARG_STRING, &f->caller,
		  "Who the work is for, recorded in the audit trail (default: $CORDON_CALLER)",
		  "LABEL" },
		{ NULL }
	};
	return g_memdup2(e, sizeof(e));
}

/* --limit KEY=VALUE with the policy's names and units. */
static int add_limit(cordon_request *req, const char *spec, cordon_error **reterr)
{
	static const struct {
		const char *name;
		cordon_limit which;
		int kind;
	} keys[] = {
		{ "wall", CORDON_LIMIT_WALL_MS, 0 },  { "memory", CORDON_LIMIT_MEMORY, 1 },
		{ "pids", CORDON_LIMIT_PIDS, 2 },     { "cpus", CORDON_LIMIT_CPU_MILLI, 3 },
		{ "output", CORDON_LIMIT_OUTPUT, 1 }, { "nofile", CORDON_LIMIT_NOFILE, 2 },
		{ "fsize", CORDON_LIMIT_FSIZE, 1 },
	};
	const char *eq = strchr(spec, '=');
	if (!eq)
		return cli_usage_error("--limit needs KEY=VALUE (e.g. memory=512MiB)");
	g_autofree char *key = g_strndup(spec, eq - spec);
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (strcmp(key, keys[i].name) != 0)
			continue;
		uint64_t v = 0;
		const char *why = NULL;
		int r = keys[i].kind == 0   ? units_parse_duration(eq + 1, &v, &why)
			: keys[i].kind == 1 ? units_parse_size(eq + 1, &v, &why)
			: keys[i].kind == 2 ? units_parse_uint(eq + 1, &v, &why)
					    : units_parse_cpus(eq + 1, &v, &why);
		if (r == 0 && v == 0)
			why = "a limit must be greater than 0";
		else if (r == 0 && keys[i].which == CORDON_LIMIT_CPU_MILLI &&
			 v > UNITS_CPUS_MAX_MILLI)
			why = "at most 4096 CPUs";
		if (why)
			return cli_usage_error("bad --limit value '%s': %s", spec, why);
		return cordon_request_set_limit(req, keys[i].which, v, reterr) < 0 ? -1 : 0;
	}
	return cli_usage_error(
		"unknown limit '%s': wall, memory, pids, cpus, output, nofile, fsize", key);
}

static int add_labels(cordon_request *req, char **labels, cordon_error **err)
{
	for (size_t i = 0; labels && labels[i]; i++) {
		const char *eq = strchr(labels[i], '=');
		if (!eq || eq == labels[i])
			return cli_usage_error("--label needs KEY=VALUE");
		g_autofree char *k = g_strndup(labels[i], eq - labels[i]);
		if (cordon_request_add_label(req, k, eq + 1, err) < 0)
			return -1;
	}
	return 0;
}

/* --mount HOST:INSIDE[:rw]: the mode last, then INSIDE after the last ':' (an inside path
 * never holds one; cordon_request_add_mount refuses it). */
static int add_mount(cordon_request *req, const char *spec, cordon_error **err)
{
	g_autofree char *s = g_strdup(spec);
	unsigned flags = 0;
	size_t n = strlen(s);
	if (n > 3 && (strcmp(s + n - 3, ":rw") == 0 || strcmp(s + n - 3, ":ro") == 0)) {
		flags = s[n - 2] == 'r' && s[n - 1] == 'w' ? CORDON_MOUNT_RW : 0;
		s[n - 3] = '\0';
	}
	char *colon = strrchr(s, ':');
	if (!colon || colon == s || !colon[1])
		return cli_usage_error("--mount needs HOST:INSIDE[:rw] (e.g. /srv/data:/data)");
	*colon = '\0';
	return cordon_request_add_mount(req, s, colon + 1, flags, err) < 0 ? -1 : 0;
}

static int set_egress(cordon_request *req, const char *mode, cordon_error **err)
{
	static const char *const names[] = { "deny", "governed", "allow" };
	for (size_t e = 0; e < G_N_ELEMENTS(names); e++)
		if (strcmp(mode, names[e]) == 0)
			return cordon_request_set_egress(req, (cordon_egress)e, err) < 0 ? -1 : 0;
	return cli_usage_error("--egress is deny, governed or allow");
}

int cli_request_fields_apply(const cli_request_fields *f, cordon_request *req, cordon_error **err)
{
	int r = add_labels(req, f->labels, err);
	for (size_t i = 0; r == 0 && f->limits && f->limits[i]; i++)
		r = add_limit(req, f->limits[i], err);
	for (size_t i = 0; r == 0 && f->mounts && f->mounts[i]; i++)
		r = add_mount(req, f->mounts[i], err);
	if (r == 0 && f->egress)
		r = set_egress(req, f->egress, err);
	if (r == 0 && f->image)
		r = cordon_request_set_image(req, f->image, err) < 0 ? -1 : 0;
	/* A host that runs cordon for others (an agent's sessions) labels them without
	 * rewriting every command line: the variable, unless the flag says otherwise. */
	const char *caller = f->caller ? f->caller : g_getenv("CORDON_CALLER");
	if (r == 0 && caller && *caller)
		r = cordon_request_set_caller(req, caller, err) < 0 ? -1 : 0;
	return r;
}
