/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `docker` driver: the Docker CLI against a daemon. Everything but the
 * engine's name and how it is detected lives in plugins/oci.
 */
#include "config.h"

#include "../oci/oci.h"

static const cordon_plugin_config_key docker_keys[] = {
	OCI_CONFIG_KEYS_COMMON,
	{ NULL, 0, 0 },
};

/* the CLI's configuration: its current context names the daemon it talks to */
static const char *const docker_config[] = { "~/.docker/config.json", NULL };

static const oci_engine_kind docker_kind = {
	.name = "docker",
	/* a daemon answers: `version` asks the server, so a stopped daemon shows */
	.daemon = true,
	.runtime_is_global = false,
	.host_flag = "--host",
	.version_format = "{{.Server.Version}}",
	.run_extra = NULL,
	/* docker's --tmpfs takes uid=/gid= for the owner */
	.tmpfs_owner_by_id = true,
	/* the CLI's default endpoint (the plugin never passes DOCKER_HOST on); dockerd makes
	 * a new socket when it starts, so a restarted daemon is another dependency */
	.default_socket = "/var/run/docker.sock",
	.config_files = docker_config,
	.config_keys = docker_keys,
};

static int docker_init(const cordon_host *host, cordon_plugin_registrar *reg,
		       cordon_plugin_error *err)
{
	return oci_plugin_init(host, reg, err, &docker_kind);
}

CORDON_PLUGIN_DEFINE("docker", PACKAGE_VERSION, "Containers through the Docker engine",
		     "LGPL-2.1-or-later", docker_init)
