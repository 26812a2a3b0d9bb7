/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon image pin REF`: prints the digest form (NAME@sha256:<64 hex>) of an
 * image present in a local engine, for a container tier's `image:` key. The
 * digests come from the engine's RepoDigests (manifest digests the engine
 * verifies content against); an image without any is refused (its local ID is
 * not a manifest digest).
 */
#include "config.h"

#include "cli.h"
#include "hostproc.h"
#include "imageref.h"

#include <glib.h>
#include <stdio.h>
#include <string.h>

/* `engine image inspect` of one image: an engine that hangs must not hang the command. */
#define ENGINE_TIMEOUT_MS 60000
#define ENGINE_OUTPUT_CAP (1024 * 1024)

/* The repository part of a reference: no digest, no tag (a colon after the
 * last slash), docker.io's implicit prefixes removed so references compare. */
static char *repo_of(const char *ref)
{
	g_autofree char *r = g_strdup(ref);
	char *at = strchr(r, '@');
	if (at)
		*at = '\0';
	char *slash = strrchr(r, '/');
	char *colon = strrchr(slash ? slash : r, ':');
	if (colon)
		*colon = '\0';
	const char *s = r;
	if (g_str_has_prefix(s, "docker.io/library/"))
		s += strlen("docker.io/library/");
	else if (g_str_has_prefix(s, "docker.io/"))
		s += strlen("docker.io/");
	return g_strdup(s);
}

static gint cmp_strp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* RepoDigests (one per line) of the reference's repository, sorted; when none
 * matches the repository but exactly one digest exists, that one. */
static GPtrArray *choose_digests(const char *ref, const char *lines)
{
	g_autofree char *want = repo_of(ref);
	g_auto(GStrv) all = g_strsplit(lines, "\n", -1);
	GPtrArray *match = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) any = g_ptr_array_new_with_free_func(g_free);
	for (size_t i = 0; all[i]; i++) {
		g_strstrip(all[i]);
		if (!image_ref_is_pinned(all[i]))
			continue;
		g_autofree char *repo = repo_of(all[i]);
		g_ptr_array_add(strcmp(repo, want) == 0 ? match : any, g_strdup(all[i]));
	}
	if (match->len == 0 && any->len == 1)
		g_ptr_array_add(match, g_strdup(any->pdata[0]));
	g_ptr_array_sort(match, cmp_strp);
	return match;
}

/* An absolute path: the spawner runs no relative one. */
static char *find_engine(const char *flag)
{
	if (flag && flag[0] == '/')
		return g_strdup(flag);
	g_autofree char *p = g_find_program_in_path(flag ? flag : "podman");
	if (!p && !flag)
		p = g_find_program_in_path("docker");
	if (p && p[0] != '/')
		return g_canonicalize_filename(p, NULL);
	return g_steal_pointer(&p);
}

/* The one digest to pin: an already pinned reference the engine knows is confirmed as it
 * is; else the first in order. Several: the engine knows the image under more than one
 * manifest (a local build and what a registry served after a format conversion, say);
 * each pins the same content locally, a tier that pulls needs the one its registry serves
 * (--all lists them). */
static const char *chosen_pin(const char *ref, GPtrArray *pins)
{
	for (guint i = 0; image_ref_is_pinned(ref) && i < pins->len; i++)
		if (strcmp(pins->pdata[i], ref) == 0)
			return pins->pdata[i];
	return pins->pdata[0];
}

static void print_pins(const char *ref, GPtrArray *pins, bool all)
{
	const char *pin = chosen_pin(ref, pins);
	if (cli_json) {
		g_autofree char *jr = cli_json_string(ref, strlen(ref));
		g_autofree char *jp = cli_json_string(pin, strlen(pin));
		printf("{\"image\":%s,\"pinned\":%s,\"all\":[", jr, jp);
		for (guint i = 0; i < pins->len; i++) {
			g_autofree char *j = cli_json_string(pins->pdata[i],
							     strlen(pins->pdata[i]));
			printf("%s%s", i ? "," : "", j);
		}
		printf("]}\n");
		return;
	}
	if (!all && pins->len > 1)
		fprintf(stderr,
			"cordon: %u digests name %s locally, printed the first; a tier that "
			"pulls needs the one its registry serves (--all lists them)\n",
			pins->len, ref);
	for (guint i = 0; i < (all ? pins->len : 1); i++)
		printf("%s\n", all ? (const char *)pins->pdata[i] : pin);
}

int cli_cmd_image(int argc, char **argv)
{
	g_autofree char *engine_flag = NULL;
	gboolean all = FALSE, json = FALSE;
	GOptionEntry entries[] = {
		{ "engine", 0, 0, G_OPTION_ARG_STRING, &engine_flag,
		  "podman, docker, or an absolute path (default: podman, else docker)", "ENGINE" },
		{ "all", 0, 0, G_OPTION_ARG_NONE, &all,
		  "Print every digest the engine knows the image by", NULL },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "Print {\"image\",\"pinned\",\"all\"} as one JSON object", NULL },
		{ NULL },
	};
	g_autoptr(GOptionContext)
		oc = g_option_context_new("pin REF - print an image's pinned digest form");
	g_option_context_add_main_entries(oc, entries, NULL);
	g_autoptr(GError) gerr = NULL;
	if (!g_option_context_parse(oc, &argc, &argv, &gerr))
		return cli_usage_error("%s", gerr->message);
	if (argc != 3 || strcmp(argv[1], "pin") != 0)
		return cli_usage_error("usage: cordon image pin REF [--engine ENGINE]");
	const char *ref = argv[2];
	if (!*ref || ref[0] == '-')
		return cli_usage_error("'%s' is not an image reference", ref);
	g_autofree char *engine = find_engine(engine_flag);
	if (!engine)
		return cli_fail("no container engine found (podman, docker)");
	/* the engine gets a minimal environment, like the plugins give it */
	g_autofree char *home = g_strdup_printf("HOME=%s", g_get_home_dir());
	const char *env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			      "LC_ALL=C", home, NULL };
	const char *args[] = { engine,
			       "image",
			       "inspect",
			       "--format",
			       "{{range .RepoDigests}}{{println .}}{{end}}",
			       "--",
			       ref,
			       NULL };
	/* the one host program spawner (common/hostproc.c), as the plugins' engine CLIs */
	hostproc_result res;
	int r = hostproc_run(engine, args, env, NULL, 0, ENGINE_TIMEOUT_MS, ENGINE_OUTPUT_CAP,
			     &res);
	if (r < 0)
		return cli_fail("%s: %s", engine, g_strerror(-r));
	g_autofree char *out = res.out, *err = res.err;
	if (res.timed_out)
		return cli_fail("%s did not answer within %d s", engine, ENGINE_TIMEOUT_MS / 1000);
	if (res.exit_code != 0)
		return cli_fail("%s has no image %s: %s", engine, ref, g_strstrip(err));
	g_autoptr(GPtrArray) pins = choose_digests(ref, out);
	if (pins->len == 0)
		return cli_fail("%s has no registry digest for %s: push it to a registry (or pull "
				"it) first; a local image ID is not a digest a registry can verify",
				engine, ref);
	print_pins(ref, pins, all);
	return 0;
}
