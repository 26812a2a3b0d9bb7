/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "fakectx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct fake_tier {
	cordon_containment containment;
	gint available;
	bool egress_enforced; /* the probe declares deny and governed enforced */
	char reason[128];
	uint32_t enforces; /* limits its probe reports and its open accepts */
	const char *fails; /* its open fails: "terminal" or "forbidden"; NULL: it opens */
	bool listens; /* its probe says listen works, and it does (else refused, as the jail) */
} fake_tier;

static uint32_t limit_bit(const char *name)
{
	static const char *const names[] = { "wall",   "memory", "pids", "cpus",
					     "output", "nofile", "fsize" };
	for (unsigned i = 0; i < G_N_ELEMENTS(names); i++)
		if (strcmp(name, names[i]) == 0)
			return 1u << i;
	return 0;
}

static gint probes;

static int fake_configure(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			  cordon_plugin_error *err)
{
	const cfg_node *sec = cfg->tier->section;
	fake_tier *t = g_new0(fake_tier, 1);
	const cfg_node *n = cfg_map_get(sec, "containment");
	t->containment = n ? cordon_containment_from_string(n->scalar)
			   : CORDON_CONTAINMENT_PROCESS_JAIL;
	n = cfg_map_get(sec, "available");
	t->available = !n || strcmp(n->scalar, "true") == 0;
	n = cfg_map_get(sec, "egress_enforced");
	t->egress_enforced = !n || strcmp(n->scalar, "true") == 0;
	n = cfg_map_get(sec, "reason");
	g_strlcpy(t->reason, n ? n->scalar : "fake tier", sizeof(t->reason));
	n = cfg_map_get(sec, "enforces");
	t->enforces = n ? 0 : (1u << CORDON_LIMIT_COUNT_) - 1;
	for (guint i = 0; n && i < n->items->len; i++)
		t->enforces |= limit_bit(((const cfg_node *)n->items->pdata[i])->scalar);
	n = cfg_map_get(sec, "open_fails");
	t->fails = n ? n->scalar : NULL; /* the policy outlives the tier */
	n = cfg_map_get(sec, "listens");
	t->listens = n && strcmp(n->scalar, "true") == 0;
	*ret_tier = t;
	return 0;
}

static void fake_unconfigure(void *tier) { g_free(tier); }

static int fake_probe(void *tier, cordon_plugin_probe *ret)
{
	fake_tier *t = tier;
	g_atomic_int_inc(&probes);
	ret->available = (uint32_t)g_atomic_int_get(&t->available);
	ret->containment = t->containment;
	ret->limits = t->enforces;
	ret->egress_enforced = t->egress_enforced
				       ? CORDON_PLUGIN_EGRESS_BIT(CORDON_PLUGIN_EGRESS_DENY) |
						 CORDON_PLUGIN_EGRESS_BIT(
							 CORDON_PLUGIN_EGRESS_GOVERNED)
				       : 0;
	g_strlcpy(ret->reason, t->reason, sizeof(ret->reason));
	ret->features = t->listens ? CORDON_PLUGIN_PROBE_LISTEN : 0;
	return 0;
}

static gint opens;

typedef struct fake_sandbox {
	const fake_tier *tier;
} fake_sandbox;

/* As a real driver: refuses a limit it cannot enforce, never runs without it. */
static int fake_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		     cordon_plugin_error *err)
{
	const fake_tier *t = tier;
	const cordon_host *h = &cordon_host_services;
	g_atomic_int_inc(&opens);
	if (spec->limits.set & ~t->enforces)
		return h->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				    "limit_unenforceable", "fake tier: a limit it cannot enforce");
	if (t->fails && strcmp(t->fails, "forbidden") == 0)
		return h->error_set(err, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN, "sandbox_denied",
				    "fake tier: refused at open");
	if (t->fails)
		return h->error_set(err, EIO, CORDON_PLUGIN_ERROR_TERMINAL, "engine_failed",
				    "fake tier: the engine is down");
	fake_sandbox *sb = g_new0(fake_sandbox, 1);
	sb->tier = t;
	*ret_sandbox = sb;
	return 0;
}

static int fake_run(void *sandbox, const cordon_plugin_run_spec *spec,
		    const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		    cordon_plugin_error *err)
{
	(void)sandbox, (void)spec, (void)sink, (void)err;
	ret->flags = CORDON_PLUGIN_RUNSTATUS_EXITED;
	ret->exit_code = 0;
	return 0;
}

static void fake_close(void *sandbox) { g_free(sandbox); }

/* A service's listener: a real one on the host's loopback (the fake has no network of its
 * own), or refused as the process jail refuses it. */
static int fake_listen(void *sandbox, uint16_t *ret_port, cordon_plugin_error *err)
{
	const fake_tier *t = ((const fake_sandbox *)sandbox)->tier;
	const cordon_host *h = &cordon_host_services;
	if (!t->listens)
		return h->error_set(err, EOPNOTSUPP, CORDON_PLUGIN_ERROR_TERMINAL, "unsupported",
				    "fake tier: no network of its own for services");
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return h->error_set(err, e, CORDON_PLUGIN_ERROR_TERMINAL, "resource",
				    "fake tier: listen: %s", strerror(e));
	}
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static const cordon_plugin_config_key fake_keys[] = {
	{ "containment", CORDON_PLUGIN_CONFIG_STRING, 1 },
	{ "available", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "reason", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "egress_enforced", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "image", CORDON_PLUGIN_CONFIG_IMAGE, 0 },
	{ "enforces", CORDON_PLUGIN_CONFIG_STRING_LIST, 0 },
	{ "open_fails", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "listens", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ NULL, 0, 0 },
};

/* The same driver with its image under another name, and a plain string
 * key that happens to be called "image". */
static const cordon_plugin_config_key fake_template_keys[] = {
	{ "containment", CORDON_PLUGIN_CONFIG_STRING, 1 },
	{ "available", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "reason", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "egress_enforced", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "template", CORDON_PLUGIN_CONFIG_IMAGE, 0 },
	{ "image", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ NULL, 0, 0 },
};

#define FAKE_OPS \
	.configure = fake_configure, .unconfigure = fake_unconfigure, .probe = fake_probe, \
	.open = fake_open, .run = fake_run, .close = fake_close

static const cordon_plugin_driver fake_driver = {
	.size = sizeof(cordon_plugin_driver),
	.flags = CORDON_PLUGIN_DRIVER_LIMITS,
	.name = FAKECTX_DRIVER,
	.config_keys = fake_keys,
	FAKE_OPS,
	.listen = fake_listen, /* the template driver has none: a driver without the op */
};

/* ...which also gives a workspace read-only when a rule asks (ABI 1.5). */
static const cordon_plugin_driver fake_template_driver = {
	.size = sizeof(cordon_plugin_driver),
	.flags = CORDON_PLUGIN_DRIVER_LIMITS | CORDON_PLUGIN_DRIVER_WORKSPACE_RO,
	.name = FAKECTX_TEMPLATE_DRIVER,
	.config_keys = fake_template_keys,
	FAKE_OPS,
};

/* A driver that probes but cannot open a sandbox (and says nothing of limits). */
static const cordon_plugin_driver fake_noop_driver = {
	.size = sizeof(cordon_plugin_driver),
	.name = FAKECTX_NOOP_DRIVER,
	.config_keys = fake_keys,
	.configure = fake_configure,
	.unconfigure = fake_unconfigure,
	.probe = fake_probe,
};

int fakectx_open(const char *policy, cordon_context **ret, cordon_error **reterr)
{
	static const cordon_plugin_driver *const drivers[] = { &fake_driver, &fake_template_driver,
							       &fake_noop_driver, NULL };
	cordon_options *o = cordon_options_new();
	o->builtin_drivers = drivers;
	int r = cordon_options_set_policy_text(o, policy, strlen(policy), "test.yaml", reterr);
	if (r >= 0)
		r = cordon_context_new(o, ret, reterr);
	cordon_options_free(o);
	return r;
}

unsigned fakectx_open_count(void) { return (unsigned)g_atomic_int_get(&opens); }

unsigned fakectx_probe_count(void) { return (unsigned)g_atomic_int_get(&probes); }

void fakectx_set_available(cordon_context *ctx, const char *tier, bool available)
{
	tier_runtime *t = context_find_tier(ctx, tier);
	g_assert(t && t->state && t->driver->ops.probe == fake_probe);
	g_atomic_int_set(&((fake_tier *)t->state)->available, available);
}
