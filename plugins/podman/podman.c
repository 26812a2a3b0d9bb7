/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `podman` driver: the daemonless Podman CLI. Everything but the
 * engine's name and how it is detected lives in plugins/oci.
 */
#include "config.h"

#include "../oci/oci.h"

static const cordon_plugin_config_key podman_keys[] = {
	OCI_CONFIG_KEYS_COMMON,
	{ "runtime_flags", CORDON_PLUGIN_CONFIG_STRING_LIST, 0 },
	{ "cgroup_manager", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ NULL, 0, 0 },
};

/* With --read-only, podman would add writable tmpfs of its own on /run, /tmp
 * and /var/tmp (exec allowed); the tier mounts its own scratch instead. */
static const char *const podman_run_extra[] = { "--read-only-tmpfs=false", NULL };

/* kill at once: `rm -f` would otherwise wait 10 s for a SIGTERM to work */
static const char *const podman_rm_extra[] = { "--time", "0", NULL };

/* containers.conf decides the runtimes' paths, storage.conf the image store */
static const char *const podman_config[] = { "/usr/share/containers/containers.conf",
					     "/etc/containers/containers.conf",
					     "/usr/share/containers/storage.conf",
					     "/etc/containers/storage.conf",
					     "~/.config/containers/containers.conf",
					     "~/.config/containers/storage.conf",
					     NULL };

static const oci_engine_kind podman_kind = {
	.name = "podman",
	/* no daemon: `version` answers whenever the binary runs */
	.daemon = false,
	/* --runtime, --runtime-flag and --cgroup-manager are global options */
	.runtime_is_global = true,
	.host_flag = "--url",
	.version_format = "{{.Client.Version}}",
	.run_extra = podman_run_extra,
	.rm_extra = podman_rm_extra,
	.config_files = podman_config,
	.config_keys = podman_keys,
};

static int podman_init(const cordon_host *host, cordon_plugin_registrar *reg,
		       cordon_plugin_error *err)
{
	return oci_plugin_init(host, reg, err, &podman_kind);
}

CORDON_PLUGIN_DEFINE("podman", PACKAGE_VERSION, "Containers through Podman", "LGPL-2.1-or-later",
		     podman_init)
