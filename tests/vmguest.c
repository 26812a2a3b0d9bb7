/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "testutil.h"
#include "vmguest.h"

#include <glib.h>
#include <string.h>
#include <unistd.h>

static char *kernel_deb(void)
{
	const char *state = g_getenv("CORDON_CI_STATE") ? g_getenv("CORDON_CI_STATE")
							 : "/var/lib/cordon-ci";
	return g_build_filename(state, "vm", "linux-image-cloud-amd64.deb", NULL);
}

char *vmguest_missing(void)
{
	g_autofree char *deb = kernel_deb();
	g_autofree char *qemu = g_find_program_in_path("qemu-system-x86_64");
	if (!qemu)
		return g_strdup("qemu-system-x86_64 is not installed (.ci/test-setup.sh)");
	if (access(deb, R_OK) != 0)
		return g_strdup_printf("no guest kernel package at %s (.ci/test-setup.sh)", deb);
	if (access("/bin/busybox", X_OK) != 0)
		return g_strdup("no static busybox at /bin/busybox (busybox-static)");
	if (!g_find_program_in_path("dpkg-deb"))
		return g_strdup("dpkg-deb is not installed");
	return NULL;
}

/* The value of "key: value" in the builder's output, or NULL. */
static char *line_value(const char *out, const char *key)
{
	g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
	g_autofree char *prefix = g_strconcat(key, ": ", NULL);
	for (size_t i = 0; lines[i]; i++)
		if (g_str_has_prefix(lines[i], prefix))
			return g_strdup(lines[i] + strlen(prefix));
	return NULL;
}

char *vmguest_build(const char *agent, vmguest *ret)
{
	g_autofree char *cordon = testutil_build_path("cordon");
	g_autofree char *own = testutil_build_path("agent/cordon-agent");
	g_autofree char *deb = kernel_deb();
	ret->dir = g_dir_make_tmp("cordon-test-XXXXXX", NULL);
	if (!ret->dir)
		return g_strdup("mkdtemp failed");
	const char *argv[] = { cordon, "vm", "build", "--kernel-deb", deb, "--agent",
			       agent ? agent : own, "--out", ret->dir, NULL };
	g_autofree char *out = NULL, *err = NULL;
	int status = 0;
	g_autoptr(GError) e = NULL;
	if (!g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out, &err, &status, &e))
		return g_strdup(e->message);
	if (!g_spawn_check_wait_status(status, NULL))
		return g_strdup_printf("cordon vm build failed: %s", err);
	ret->kernel = line_value(out, "kernel");
	ret->kernel_sha256 = line_value(out, "kernel_sha256");
	ret->initrd = line_value(out, "initrd");
	ret->initrd_sha256 = line_value(out, "initrd_sha256");
	if (!ret->kernel || !ret->kernel_sha256 || !ret->initrd || !ret->initrd_sha256)
		return g_strdup_printf("cordon vm build printed no pins: %s", out);
	return NULL;
}

char *vmguest_tier(const vmguest *g, const char *name, const char *extra)
{
	return g_strdup_printf("  %s:\n    driver: kvm\n    accel: tcg\n    kernel: %s\n"
			       "    kernel_sha256: %s\n    initrd: %s\n    initrd_sha256: %s\n%s",
			       name, g->kernel, g->kernel_sha256, g->initrd, g->initrd_sha256,
			       extra ? extra : "");
}

void vmguest_clear(vmguest *g)
{
	if (g->dir)
		testutil_rmtree(g->dir);
	g_free(g->dir);
	g_free(g->kernel);
	g_free(g->kernel_sha256);
	g_free(g->initrd);
	g_free(g->initrd_sha256);
	memset(g, 0, sizeof(*g));
}
