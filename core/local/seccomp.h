/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's seccomp filter (docs/tiers/local.md, "The seccomp deny
 * list"). Compiled with libseccomp at build time (seccomp-prebuilt.c, made
 * by gen-seccomp-bpf; at run time where the build could not run it),
 * put into a sealed memfd once per process, and handed to the namespace init, which
 * installs it in the work as the last step before execve. Default: allow;
 * listed calls fail with EPERM (the work continues), clone3 with ENOSYS (so
 * libc falls back to clone, whose flags the filter can see), calls newer than
 * this list with ENOSYS, foreign architectures and x32 kill the process.
 */
#pragma once

#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

/* How a listed call is refused. */
typedef enum seccomp_deny_kind {
	SECCOMP_DENY_ALWAYS = 0, /* every call, EPERM */
	SECCOMP_DENY_ENOSYS = 1, /* every call, ENOSYS */
	SECCOMP_DENY_ARGS = 2,   /* only some argument values, EPERM */
} seccomp_deny_kind;

/* One argument rule of a SECCOMP_DENY_ARGS entry: the call fails with
 * err when every comparison holds (AND); an entry's rules are alternatives
 * (OR). The comparisons are libseccomp's own, which are also the OCI /
 * Docker profile's "args": arg is "index", op "op" (SCMP_CMP_MASKED_EQ:
 * (argument & datum_a) == datum_b), datum_a "value", datum_b "valueTwo". */
#define SECCOMP_RULE_MAX_CMPS 2
typedef struct seccomp_arg_rule {
	int err;       /* positive errno */
	unsigned ncmp; /* 1..SECCOMP_RULE_MAX_CMPS */
	struct scmp_arg_cmp cmp[SECCOMP_RULE_MAX_CMPS];
} seccomp_arg_rule;

/* One row of the deny list, for the documentation and the tests. */
typedef struct seccomp_deny_entry {
	const char *name; /* system call name */
	int fallback_nr;  /* its number where libseccomp may not know it; -1: resolve by name */
	seccomp_deny_kind kind;
	const char *why; /* one line: the attack it closes */
	/* SECCOMP_DENY_ARGS: the argument rules, a static table (NULL where
	 * the rules are computed: seccomp_entry_rules expands those). */
	const seccomp_arg_rule *rules;
	size_t nrules;
} seccomp_deny_entry;

/* The deny list; *ret_n receives its length. Static data. */
const seccomp_deny_entry *seccomp_filter_deny_list(size_t *ret_n) CORDON_INTERNAL;

/* Calls fn with each argument rule of a SECCOMP_DENY_ARGS entry, in the
 * order the filter adds them, whether the entry holds them as a table or
 * they are computed (personality, socket). Stops at fn's first negative
 * return and returns it; -EINVAL for an argument entry without rules. This
 * is what the kernel tier compiles and what a container profile is made of. */
int seccomp_entry_rules(const seccomp_deny_entry *e,
			int (*fn)(void *arg, const seccomp_arg_rule *rule),
			void *arg) CORDON_INTERNAL;

/* First system call number the list does not know: this one and every
 * newer call fail with ENOSYS (numbers are shared by all architectures
 * since Linux 5.1's 424). */
#define SECCOMP_FILTER_UNKNOWN_FIRST 468

/* The process-wide sealed memfd holding the program (close-on-exec; the
 * caller must not close it), built on first use. Returns the fd or a negative
 * errno; *ret_what (may be NULL) names the failing step. Thread-safe. */
int seccomp_filter_fd(const char **ret_what) CORDON_INTERNAL;

/* Instructions in the program (0 before the first successful build). */
size_t seccomp_filter_insns(void) CORDON_INTERNAL;

/* Builds the program into a new sealed memfd (what seccomp_filter_fd caches).
 * Returns the fd or a negative errno. */
int seccomp_filter_build(const char **ret_what) CORDON_INTERNAL;

/* Compiles the deny list with libseccomp: the whole program (our prefix
 * included) in *ret_prog (g_free), its length in *ret_n. On failure a
 * negative errno and, in *ret_what, the step that failed. */
int seccomp_filter_compile(struct sock_filter **ret_prog, size_t *ret_n,
			   const char **ret_what) CORDON_INTERNAL;

/* The same for a file server (virtiofsd serving a workspace to a guest, which asks for
 * the modes of the files it makes): only the deny list's set-id rows (chmod, open's and
 * mknod's modes), openat2 and io_uring, with the same architecture and newer-call rules.
 * Whatever else the server does is its own filter's to refuse. */
int seccomp_setid_filter_compile(struct sock_filter **ret_prog, size_t *ret_n,
				 const char **ret_what) CORDON_INTERNAL;

/* The program compiled at build time, for the audit architecture
 * seccomp_prebuilt_arch; seccomp_prebuilt_insns is 0 when the build could
 * not run its compiler (cross builds). */
extern const struct sock_filter seccomp_prebuilt[] CORDON_INTERNAL;
extern const size_t seccomp_prebuilt_insns CORDON_INTERNAL;
extern const uint32_t seccomp_prebuilt_arch CORDON_INTERNAL;

/* Whether the build-time program is for this architecture and used. */
bool seccomp_filter_prebuilt_usable(void) CORDON_INTERNAL;
