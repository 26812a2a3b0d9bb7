/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Build-time tool: the container tiers' seccomp profile, in the JSON that
 * `docker run --security-opt seccomp=FILE` and podman read, generated from
 * the kernel tier's deny list (seccomp.c) so that there is one list. Prints
 * it as C (plugins/oci/seccomp-profile.c, embedded in the oci library).
 *
 * The rules are the ones seccomp.c gives libseccomp, taken on their way
 * there: this program is linked with --wrap for seccomp_rule_add and
 * seccomp_rule_add_array, so every rule, argument comparisons included,
 * reaches the profile as it reaches the BPF program, whatever code adds it.
 * What JSON cannot say: calls libseccomp has no name for (and those newer
 * than the list, which the BPF program fails with ENOSYS) are not in it.
 *
 * gVisor gets a second profile without the rules that answer ENOSYS: runsc
 * (2022) ignores errnoRet and answers EPERM, and libc falls back from clone3
 * to clone only on ENOSYS (pthread_create failed); gVisor's Sentry answers
 * ENOSYS for clone3 itself.
 */
#include "config.h"

#include "seccomp.h"

#include <errno.h>
#include <glib.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* seccomp.c's run-time side refers to the embedded program; this tool runs
 * without one. */
const struct sock_filter seccomp_prebuilt[1];
const size_t seccomp_prebuilt_insns = 0;
const uint32_t seccomp_prebuilt_arch = 0;

#define MAX_ARGS 6

typedef struct rule {
	uint32_t action;
	int nr;
	unsigned n;
	struct scmp_arg_cmp args[MAX_ARGS];
} rule;

static GArray *rules;
static bool overflow;

static void record(uint32_t action, int nr, unsigned n, const struct scmp_arg_cmp *args)
{
	if (n > MAX_ARGS) {
		overflow = true;
		return;
	}
	rule r = { .action = action, .nr = nr, .n = n };
	for (unsigned i = 0; i < n; i++)
		r.args[i] = args[i];
	g_array_append_val(rules, r);
}

int __real_seccomp_rule_add_array(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n,
				  const struct scmp_arg_cmp *args);
int __wrap_seccomp_rule_add_array(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n,
				  const struct scmp_arg_cmp *args);
int __wrap_seccomp_rule_add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n, ...);

int __wrap_seccomp_rule_add_array(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n,
				  const struct scmp_arg_cmp *args)
{
	record(action, nr, n, args);
	return __real_seccomp_rule_add_array(ctx, action, nr, n, args);
}

int __wrap_seccomp_rule_add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n, ...)
{
	struct scmp_arg_cmp args[MAX_ARGS];
	va_list ap;
	va_start(ap, n);
	for (unsigned i = 0; i < n && i < MAX_ARGS; i++)
		args[i] = va_arg(ap, struct scmp_arg_cmp);
	va_end(ap);
	return __wrap_seccomp_rule_add_array(ctx, action, nr, n, args);
}

static const char *op_name(enum scmp_compare op)
{
	switch (op) {
	case SCMP_CMP_NE: return "SCMP_CMP_NE";
	case SCMP_CMP_LT: return "SCMP_CMP_LT";
	case SCMP_CMP_LE: return "SCMP_CMP_LE";
	case SCMP_CMP_EQ: return "SCMP_CMP_EQ";
	case SCMP_CMP_GE: return "SCMP_CMP_GE";
	case SCMP_CMP_GT: return "SCMP_CMP_GT";
	case SCMP_CMP_MASKED_EQ: return "SCMP_CMP_MASKED_EQ";
	default: return NULL;
	}
}

/* The engines' architecture names (docker's and podman's JSON). */
static const char *arch_name(uint32_t arch)
{
	switch (arch) {
	case SCMP_ARCH_X86_64: return "SCMP_ARCH_X86_64";
	case SCMP_ARCH_AARCH64: return "SCMP_ARCH_AARCH64";
	case SCMP_ARCH_PPC64LE: return "SCMP_ARCH_PPC64LE";
	case SCMP_ARCH_S390X: return "SCMP_ARCH_S390X";
	case SCMP_ARCH_RISCV64: return "SCMP_ARCH_RISCV64";
	default: return NULL;
	}
}

/* One entry of "syscalls"; false when the rule cannot be said in JSON. */
static bool print_rule(GString *j, const rule *r, bool gvisor, unsigned *n_printed)
{
	g_autofree char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, r->nr);
	if (!name)
		return true; /* a call libseccomp cannot name: the engines could not either */
	if ((r->action & 0xffff0000u) != SCMP_ACT_ERRNO(0))
		return false; /* the list only ever refuses with an errno */
	if (gvisor && r->action == SCMP_ACT_ERRNO(ENOSYS))
		return true;
	(*n_printed)++;
	g_string_append_printf(j,
			       "%s\n    {\"names\": [\"%s\"], \"action\": \"SCMP_ACT_ERRNO\", "
			       "\"errnoRet\": %u",
			       j->str[j->len - 1] == '[' ? "" : ",", name, r->action & 0xffffu);
	if (r->n)
		g_string_append(j, ", \"args\": [");
	for (unsigned i = 0; i < r->n; i++) {
		const char *op = op_name(r->args[i].op);
		if (!op)
			return false;
		g_string_append_printf(j,
				       "%s{\"index\": %u, \"value\": %llu, \"valueTwo\": %llu, "
				       "\"op\": \"%s\"}",
				       i ? ", " : "", r->args[i].arg,
				       (unsigned long long)r->args[i].datum_a,
				       (unsigned long long)r->args[i].datum_b, op);
	}
	g_string_append(j, r->n ? "]}" : "}");
	return true;
}

/* Allow by default, the list's refusals, only the native architecture: the
 * engines send other architectures' calls (i386, x32) to their bad-arch
 * action, as the kernel tier's program kills them. */
static char *profile_json(bool gvisor, unsigned *n_printed, const char **what)
{
	const char *arch = arch_name(seccomp_arch_native());
	if (!arch) {
		*what = "unknown native architecture";
		return NULL;
	}
	GString *j = g_string_new(NULL);
	g_string_append_printf(j,
			       "{\n  \"defaultAction\": \"SCMP_ACT_ALLOW\",\n"
			       "  \"architectures\": [\"%s\"],\n  \"syscalls\": [",
			       arch);
	for (guint i = 0; i < rules->len; i++) {
		if (!print_rule(j, &g_array_index(rules, rule, i), gvisor, n_printed)) {
			*what = "a rule JSON cannot express";
			g_string_free(j, TRUE);
			return NULL;
		}
	}
	g_string_append(j, "\n  ]\n}\n");
	return g_string_free(j, FALSE);
}

static void print_c_string(const char *s)
{
	printf("\t\"");
	for (; *s; s++) {
		if (*s == '\n')
			printf("\\n\"\n\t\"");
		else if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else
			putchar(*s);
	}
	printf("\"");
}

int main(void)
{
	rules = g_array_new(FALSE, TRUE, sizeof(rule));
	const char *what = NULL;
	g_autofree struct sock_filter *prog = NULL;
	size_t n = 0;
	int r = seccomp_filter_compile(&prog, &n, &what);
	g_autofree char *json = NULL, *json_gvisor = NULL;
	unsigned n_rules = 0, n_gvisor = 0;
	if (r >= 0 && overflow) {
		what = "a rule with too many argument comparisons";
		r = -E2BIG;
	}
	if (r >= 0 && (!(json = profile_json(false, &n_rules, &what)) ||
		       !(json_gvisor = profile_json(true, &n_gvisor, &what))))
		r = -EINVAL;
	if (r < 0) {
		fprintf(stderr, "gen-seccomp-oci: %s: %s\n", what ? what : "?", g_strerror(-r));
		return 1;
	}
	printf("/* Generated by gen-seccomp-oci from core/local/seccomp.c's deny list: do not\n"
	       " * edit. Declared in plugins/oci/oci.h. */\n#include <stddef.h>\n\n"
	       "const char oci_seccomp_profile[] =\n");
	print_c_string(json);
	printf(";\nconst size_t oci_seccomp_profile_rules = %u;\n\n"
	       "const char oci_seccomp_profile_gvisor[] =\n",
	       n_rules);
	print_c_string(json_gvisor);
	printf(";\n");
	return fflush(stdout) == 0 ? 0 : 1;
}
