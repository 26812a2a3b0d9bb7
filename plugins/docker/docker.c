/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `docker` driver: the Docker CLI against a daemon. Everything but the
 * engine's name and how it is detected lives in plugins/oci.
 */
#include "config.h"

#include "oci/oci.h"

static const cordon_plugin_config_key docker_keys[] = {
	{ "image", CORDON_PLUGIN_CONFIG_STRING, 1 },
	{ "engine", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "host", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "runtime", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "pull", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "pool", CORDON_PLUGIN_CONFIG_INT, 0 },
	{ "user", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "ulimits", CORDON_PLUGIN_CONFIG_STRING_LIST, 0 },
	{ "helper", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "network", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "publish", CORDON_PLUGIN_CONFIG_INT, 0 },
	{ "scratch", CORDON_PLUGIN_CONFIG_SIZE, 0 },
	{ "engine_timeout", CORDON_PLUGIN_CONFIG_DURATION, 0 },
	{ NULL, 0, 0 },
};

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
	.config_keys = docker_keys,
};

static int docker_init(const cordon_host *host, cordon_plugin_registrar *reg,
		       cordon_plugin_error *err)
{
	return oci_plugin_init(host, reg, err, &docker_kind);
}

CORDON_PLUGIN_DEFINE("docker", PACKAGE_VERSION, "Containers through the Docker engine",
		     "LGPL-2.1-or-later", docker_init)
