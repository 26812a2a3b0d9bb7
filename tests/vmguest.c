/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "testutil.h"
#include "vmguest.h"

#include <glib.h>
#include <string.h>
#include <unistd.h>

static char *state_file(const char *name)
{
	const char *state = g_getenv("CORDON_CI_STATE") ? g_getenv("CORDON_CI_STATE")
							: "/var/lib/cordon-ci";
	return g_build_filename(state, "vm", name, NULL);
}

static char *kernel_deb(void) { return state_file("linux-image-cloud-amd64.deb"); }

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
	g_autofree char *dpkg_deb = g_find_program_in_path("dpkg-deb");
	if (!dpkg_deb)
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

static char *build(const char *const *extra, vmguest *ret);

char *vmguest_build(const char *agent, vmguest *ret)
{
	g_autofree char *own = testutil_build_path("agent/cordon-agent");
	g_autofree char *deb = kernel_deb();
	const char *extra[] = { "--kernel-deb", deb, "--agent", agent ? agent : own, NULL };
	return build(extra, ret);
}

char *vmguest_missing_aarch64(void)
{
	g_autofree char *deb = state_file("linux-image-cloud-arm64.deb");
	g_autofree char *bb = state_file("busybox-arm64");
	g_autofree char *agent = testutil_build_path("agent/cordon-agent-aarch64");
	g_autofree char *qemu = g_find_program_in_path("qemu-system-aarch64");
	if (!qemu)
		return g_strdup("qemu-system-aarch64 is not installed (.ci/vm-guest.sh)");
	if (access(deb, R_OK) != 0 || access(bb, X_OK) != 0)
		return g_strdup_printf("no arm64 guest kernel or busybox in %s (.ci/vm-guest.sh)",
				       deb);
	if (access(agent, X_OK) != 0)
		return g_strdup_printf("%s is not built (configure found no aarch64-linux-gnu-gcc)",
				       agent);
	return NULL;
}

char *vmguest_build_aarch64(vmguest *ret)
{
	g_autofree char *deb = state_file("linux-image-cloud-arm64.deb");
	g_autofree char *bb = state_file("busybox-arm64");
	g_autofree char *agent = testutil_build_path("agent/cordon-agent-aarch64");
	/* the arm64 busybox does not run here: the applets of the host's, the same version */
	g_autofree char *list = NULL;
	g_autofree char *applets = g_build_filename(g_get_tmp_dir(), "cordon-applets-XXXXXX", NULL);
	int fd = g_mkstemp(applets);
	const char *argv[] = { "/bin/busybox", "--list", NULL };
	if (fd < 0 ||
	    !g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &list, NULL, NULL, NULL) ||
	    write(fd, list, strlen(list)) != (ssize_t)strlen(list))
		return g_strdup("the applet list could not be written");
	close(fd);
	const char *extra[] = { "--kernel-deb", deb,     "--agent", agent, "--busybox", bb,
				"--applets",    applets, NULL };
	char *why = build(extra, ret);
	unlink(applets);
	return why;
}

static char *build(const char *const *extra, vmguest *ret)
{
	g_autofree char *cordon = testutil_build_path("cordon");
	ret->dir = g_dir_make_tmp("cordon-test-XXXXXX", NULL);
	if (!ret->dir)
		return g_strdup("mkdtemp failed");
	GPtrArray *a = g_ptr_array_new();
	g_ptr_array_add(a, cordon);
	g_ptr_array_add(a, (char *)"vm");
	g_ptr_array_add(a, (char *)"build");
	for (size_t i = 0; extra[i]; i++)
		g_ptr_array_add(a, (char *)extra[i]);
	g_ptr_array_add(a, (char *)"--out");
	g_ptr_array_add(a, ret->dir);
	g_ptr_array_add(a, NULL);
	char **argv = (char **)g_ptr_array_free(a, FALSE);
	g_autofree char *out = NULL, *err = NULL;
	int status = 0;
	g_autoptr(GError) e = NULL;
	bool ran = g_spawn_sync(NULL, argv, NULL, 0, NULL, NULL, &out, &err, &status, &e);
	g_free(argv);
	if (!ran)
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
	/* probe_timeout: the trial boot under emulation outlasts the core's 5 s on a loaded host */
	return g_strdup_printf("  %s:\n    driver: kvm\n    accel: tcg\n    probe_timeout: 60s\n"
			       "    kernel: %s\n"
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
