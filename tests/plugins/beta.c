/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Rejection corpus, good plugin: `beta` registers two drivers, and its
 * descriptor is larger than the core's with an all-zero tail (what a plugin
 * built against a future header with unused new fields looks like). */
#include <cordon/plugin.h>

#include <stdio.h>

static int beta_probe(void *tier, cordon_plugin_probe *ret)
{
	ret->available = 0;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_MICROVM;
	snprintf(ret->reason, sizeof(ret->reason), "beta needs hardware it pretends to lack");
	return 0;
}

static const cordon_plugin_driver beta_one = {
	.size = sizeof(cordon_plugin_driver),
	.name = "beta-one",
	.probe = beta_probe,
};

/* A driver table from a newer plugin: larger, with a zero tail. */
static const struct {
	cordon_plugin_driver d;
	uint64_t future[2];
} beta_two = {
	.d = { .size = sizeof(beta_two), .name = "beta_two", .probe = beta_probe },
};

static int beta_init(const cordon_host *host, cordon_plugin_registrar *reg,
		     cordon_plugin_error *err)
{
	int r = host->register_driver(reg, &beta_one);
	if (r < 0)
		return r;
	return host->register_driver(reg, &beta_two.d);
}

static const struct {
	cordon_plugin_descriptor d;
	uint64_t future[4];
} beta_descriptor = {
	.d = { sizeof(beta_descriptor), CORDON_PLUGIN_ABI_MAJOR, CORDON_PLUGIN_ABI_MINOR, 0, "beta",
	       "0.9", "corpus: a good plugin with two drivers", "MIT", beta_init },
};

CORDON_PLUGIN_EXPORT const cordon_plugin_descriptor *cordon_plugin_entry(const cordon_host *host);
const cordon_plugin_descriptor *cordon_plugin_entry(const cordon_host *host)
{
	return &beta_descriptor.d;
}
