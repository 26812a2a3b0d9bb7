/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the policy parser: any bytes in, an error or a policy
 * out, never a crash, a leak, undefined behaviour or an unbounded cost.
 * Built and run by tests/fuzz/run.sh (clang -fsanitize=fuzzer,address). */
#include "config.h"

#include "policy.h"
#include "units.h"

#include <stdint.h>
#include <string.h>

static const cordon_plugin_config_key keys[] = {
	{ "confine", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "image", CORDON_PLUGIN_CONFIG_STRING, 0 },
	{ "rootless", CORDON_PLUGIN_CONFIG_BOOL, 0 },
	{ "nice", CORDON_PLUGIN_CONFIG_INT, 0 },
	{ "shm", CORDON_PLUGIN_CONFIG_SIZE, 0 },
	{ "stop", CORDON_PLUGIN_CONFIG_DURATION, 0 },
	{ "caps", CORDON_PLUGIN_CONFIG_STRING_LIST, 0 },
	{ "api_key", CORDON_PLUGIN_CONFIG_SECRET, 0 },
	{ NULL, 0, 0 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cordon_policy *p = NULL;
	cordon_error *err = NULL;
	if (policy_parse((const char *)data, size, "fuzz.yaml", &p, &err) == 0) {
		g_free(policy_describe(p));
		for (guint i = 0; i < p->tiers->len; i++) {
			cordon_error *e = NULL;
			policy_check_section(p, p->tiers->pdata[i], keys, "image", &e);
			cordon_error_free(e);
		}
		policy_free(p);
	} else {
		/* Every error names the source and a code. */
		if (!err || !err->code || strncmp(err->message, "fuzz.yaml", 9) != 0)
			__builtin_trap();
		cordon_error_free(err);
	}
	if (size < 64) {
		char s[64];
		memcpy(s, data, size);
		s[size] = '\0';
		uint64_t v;
		units_parse_size(s, &v, NULL);
		units_parse_duration(s, &v, NULL);
		units_parse_cpus(s, &v, NULL);
	}
	return 0;
}
