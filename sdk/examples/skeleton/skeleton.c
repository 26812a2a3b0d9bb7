/* SPDX-License-Identifier: MIT */
/*
 * skeleton: the smallest useful cordon driver, to copy when writing your own.
 *
 * Builds out of tree with nothing but the SDK header:
 *     make                      (cc $(pkg-config --cflags cordon-plugin) ...)
 *     make install              (into $(pkg-config --variable=plugindir cordon-plugin))
 * and is listed by `cordon plugins`. See docs/plugin-guide.md.
 *
 * Policy:  tiers: {demo: {driver: skeleton, greeting: "hello"}}
 *
 * It registers one driver, "skeleton", that reads one key from its policy
 * section and reports through probe that it cannot run work (it has no
 * isolation to offer). A real driver fills in open/run/close and the file
 * operations; every NULL operation means "unsupported" to the core.
 */
#include <cordon/plugin.h>

#include <stdio.h>

/* The services table the core hands to the entry point and to init. Named
 * so as not to shadow CORDON_PLUGIN_DEFINE's parameter. */
static const cordon_host *skeleton_host;

typedef struct skeleton_tier {
	char greeting[64];
} skeleton_tier;

/* The keys this driver accepts in its tier section. The core refuses any
 * other key (with file:line:column) before configure is called. */
static const cordon_plugin_config_key skeleton_keys[] = {
	{ "greeting", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ NULL, 0, 0 },
};

static int skeleton_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			      cordon_plugin_error *err)
{
	const char *greeting = "hello";
	skeleton_host->config_string(cfg, "greeting", &greeting);
	if (!greeting[0])
		return skeleton_host->config_error(cfg, "greeting", err, "must not be empty");
	skeleton_tier *t = skeleton_host->alloc(sizeof(*t));
	snprintf(t->greeting, sizeof(t->greeting), "%s", greeting);
	*ret_tier = t;
	return 0;
}

static void skeleton_unconfigure(void *tier) { skeleton_host->free(tier); }

/* Truthful probe: never claim more containment than you provide. */
static int skeleton_probe(void *tier, cordon_plugin_probe *ret)
{
	const skeleton_tier *t = tier;
	ret->available = 0;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL;
	snprintf(ret->reason, sizeof(ret->reason),
		 "skeleton says '%s' but runs nothing: it is an example", t->greeting);
	return 0;
}

static const cordon_plugin_driver skeleton_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "skeleton",
	.config_keys = skeleton_keys,
	.configure = skeleton_configure,
	.unconfigure = skeleton_unconfigure,
	.probe = skeleton_probe,
	/* .open, .run, .read_file, .write_file, .glob, .walk, .close, .gc:
	 * NULL = unsupported. */
};

static int skeleton_init(const cordon_host *host, cordon_plugin_registrar *reg,
			 cordon_plugin_error *err)
{
	skeleton_host = host;
	/* Refuse to load, with a reason, when the host lacks what you need:
	 * return host->error_set(err, -ENODEV, CORDON_PLUGIN_ERROR_TERMINAL,
	 *                        "skeleton_unsupported", "needs /dev/foo"); */
	return host->register_driver(reg, &skeleton_driver);
}

/* The plugin's identity and its one exported symbol. The name must equal
 * the file's base name: this builds skeleton.so. */
CORDON_PLUGIN_DEFINE("skeleton", "0.1", "an example driver that runs nothing", "MIT", skeleton_init)
