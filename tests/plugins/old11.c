/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A plugin built against ABI 1.1 (tests/plugins/abi-1.1, the frozen header):
 * driver "old11". It must load into a newer core and work as it did, old
 * names and old layout included (tests/unit/test-loader.c):
 *  - its config_limits buffer is the 1.1 struct, whose last word was
 *    "reserved" and holds garbage here: the core must fill 64 bytes, no more;
 *  - its STRING key named "image" is the tier's image for admission;
 *  - run reports CORDON_PLUGIN_RUN_EXITED and prints the request flags and
 *    the open spec's reserved word as it saw them ("flags=1 reserved=0").
 */
#include <cordon/plugin.h>

#if CORDON_PLUGIN_ABI_MINOR != 1
#error "old11 must be built against the frozen ABI 1.1 header"
#endif

#include <stdio.h>
#include <string.h>

static const cordon_host *old_host;

typedef struct old_tier {
	char reason[CORDON_PLUGIN_REASON_MAX];
} old_tier;

typedef struct old_sandbox {
	uint32_t limits_reserved;
} old_sandbox;

static const cordon_plugin_config_key old_keys[] = {
	{ "image", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ NULL, 0, 0 },
};

/* The limits in a buffer with a canary right after the 1.1 struct. */
struct limits_and_canary {
	cordon_plugin_limits l;
	uint64_t canary;
};

static int old_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			 cordon_plugin_error *err)
{
	struct limits_and_canary b;
	memset(&b, 0xa5, sizeof(b));
	old_host->config_limits(cfg, &b.l);
	old_tier *t = old_host->alloc(sizeof(*t));
	snprintf(t->reason, sizeof(t->reason), "memory=%llu set=%u canary=%s",
		 (unsigned long long)b.l.value[CORDON_PLUGIN_LIMIT_MEMORY], b.l.set,
		 b.canary == 0xa5a5a5a5a5a5a5a5ull ? "intact" : "overwritten");
	*ret_tier = t;
	return 0;
}

static void old_unconfigure(void *tier) { old_host->free(tier); }

static int old_probe(void *tier, cordon_plugin_probe *ret)
{
	const old_tier *t = tier;
	ret->available = 1;
	ret->containment = CORDON_PLUGIN_CONTAINMENT_CONTAINER;
	snprintf(ret->reason, sizeof(ret->reason), "%s", t->reason);
	return 0;
}

static int old_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		    cordon_plugin_error *err)
{
	old_sandbox *sb = old_host->alloc(sizeof(*sb));
	sb->limits_reserved = spec->limits.reserved;
	*ret_sandbox = sb;
	return 0;
}

static int old_run(void *sandbox, const cordon_plugin_run_spec *spec,
		   const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		   cordon_plugin_error *err)
{
	const old_sandbox *sb = sandbox;
	char line[64];
	int n = snprintf(line, sizeof(line), "flags=%u reserved=%u", spec->flags,
			 sb->limits_reserved);
	sink->output(sink->ctx, 1, line, (size_t)n);
	ret->flags = CORDON_PLUGIN_RUN_EXITED;
	ret->exit_code = (spec->flags & CORDON_PLUGIN_RUN_LAST) ? 3 : 0;
	return 0;
}

static void old_close(void *sandbox) { old_host->free(sandbox); }

static const cordon_plugin_driver old_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = "old11",
	.config_keys = old_keys,
	.configure = old_configure,
	.unconfigure = old_unconfigure,
	.probe = old_probe,
	.open = old_open,
	.run = old_run,
	.close = old_close,
};

static int old_init(const cordon_host *host, cordon_plugin_registrar *reg, cordon_plugin_error *err)
{
	old_host = host;
	return host->register_driver(reg, &old_driver);
}

CORDON_PLUGIN_DEFINE("old11", "1.1.0", "corpus: a plugin built against ABI 1.1", "MIT", old_init)
