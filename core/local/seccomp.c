/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier's seccomp deny list, built with libseccomp (seccomp.h). */
#include "config.h"

#include "seccomp.h"

#include <errno.h>
#include <glib.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Argument rules held as data (seccomp.h): what a container profile is
 * made of too. A mode with a set-id bit: the work would plant a set-uid
 * or set-gid file in a workspace the host runs from. */
#define SETID_CMP(arg, bit) \
	{ \
		arg, SCMP_CMP_MASKED_EQ, bit, bit \
	}
#define MODE_RULES(arg) \
	{ EPERM, 1, { SETID_CMP(arg, S_ISUID) } }, \
	{ \
		EPERM, 1, { SETID_CMP(arg, S_ISGID) } \
	}
/* open and openat take their mode only with O_CREAT or O_TMPFILE. */
#define CREATE_RULE(flags, flag, mode, bit) \
	{ \
		EPERM, 2, { { flags, SCMP_CMP_MASKED_EQ, flag, flag }, SETID_CMP(mode, bit) } \
	}
#define CREATE_RULES(flags, mode) \
	CREATE_RULE(flags, O_CREAT, mode, S_ISUID), CREATE_RULE(flags, O_CREAT, mode, S_ISGID), \
		CREATE_RULE(flags, O_TMPFILE, mode, S_ISUID), \
		CREATE_RULE(flags, O_TMPFILE, mode, S_ISGID)

static const seccomp_arg_rule setid_arg1[] = { MODE_RULES(1) };
static const seccomp_arg_rule setid_arg2[] = { MODE_RULES(2) };
static const seccomp_arg_rule open_setid[] = { CREATE_RULES(1, 2) };
static const seccomp_arg_rule openat_setid[] = { CREATE_RULES(2, 3) };

/* Namespace-creating flags; CLONE_NEWTIME shares its bit with CSIGNAL in
 * clone(2) (exit signals stay below 128), so it is refused there too. */
#define NS_FLAG(arg, f) \
	{ \
		EPERM, 1, \
		{ \
			{ \
				arg, SCMP_CMP_MASKED_EQ, f, f \
			} \
		} \
	}
#define NS_RULES(arg) \
	NS_FLAG(arg, CLONE_NEWNS), NS_FLAG(arg, CLONE_NEWUTS), NS_FLAG(arg, CLONE_NEWIPC), \
		NS_FLAG(arg, CLONE_NEWUSER), NS_FLAG(arg, CLONE_NEWPID), \
		NS_FLAG(arg, CLONE_NEWNET), NS_FLAG(arg, CLONE_NEWCGROUP), \
		NS_FLAG(arg, CLONE_NEWTIME)

/* clone's flags are its first argument except on s390. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

static const seccomp_arg_rule clone_ns[] = { NS_RULES(CLONE_FLAGS_ARG) };
static const seccomp_arg_rule unshare_ns[] = { NS_RULES(0) };

/* The kernel reads ioctl's request as 32 bits: compare only those, so high
 * bits set by the caller cannot slip past (CVE-2019-10063). */
static const seccomp_arg_rule ioctl_inject[] = {
	{ EPERM, 1, { { 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI } } },
	{ EPERM, 1, { { 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX } } },
};

#define RULES(t) t, G_N_ELEMENTS(t)

/* Every row says which attack it closes; docs/tiers/local.md is generated
 * from the same words. References: threat model §1 (Docker's blocked list)
 * and §3 (E-numbers). */
static const seccomp_deny_entry deny_list[] = {
	/* Kernel keyring: not namespaced, shared with the host (E6). */
	{ "add_key", -1, SECCOMP_DENY_ALWAYS,
	  "kernel keyrings are not namespaced: host keys and refcount bugs (E6)" },
	{ "keyctl", -1, SECCOMP_DENY_ALWAYS,
	  "kernel keyrings are not namespaced: host keys and refcount bugs (E6)" },
	{ "request_key", -1, SECCOMP_DENY_ALWAYS,
	  "kernel keyrings are not namespaced: host keys and refcount bugs (E6)" },
	/* eBPF and tracing. */
	{ "bpf", -1, SECCOMP_DENY_ALWAYS,
	  "eBPF verifier bugs are a standing kernel-exploit path (E9)" },
	{ "perf_event_open", -1, SECCOMP_DENY_ALWAYS,
	  "host information leaks and a large kernel surface (E8)" },
	{ "lookup_dcookie", -1, SECCOMP_DENY_ALWAYS,
	  "kernel profiling interface, leaks host paths" },
	/* Time is not namespaced the way the work could change it. */
	{ "clock_adjtime", -1, SECCOMP_DENY_ALWAYS, "changes the host clock" },
	{ "clock_settime", -1, SECCOMP_DENY_ALWAYS, "changes the host clock" },
	{ "settimeofday", -1, SECCOMP_DENY_ALWAYS, "changes the host clock" },
	{ "stime", -1, SECCOMP_DENY_ALWAYS, "changes the host clock (32-bit ABIs)" },
	/* Namespaces: a nested user namespace hands the work CAP_SYS_ADMIN over
	 * large kernel surfaces (E10, flatpak CVE-2021-41133). */
	{ "setns", -1, SECCOMP_DENY_ALWAYS, "joins another namespace (E10)" },
	{ "unshare", -1, SECCOMP_DENY_ARGS,
	  "with a CLONE_NEW* flag: creates namespaces, nested user namespaces give CAP_SYS_ADMIN "
	  "over kernel surfaces (E10)",
	  RULES(unshare_ns) },
	{ "clone", -1, SECCOMP_DENY_ARGS, "with a CLONE_NEW* flag: as unshare (E10)",
	  RULES(clone_ns) },
	{ "clone3", -1, SECCOMP_DENY_ENOSYS,
	  "its flags sit behind a pointer seccomp cannot read; ENOSYS makes libc fall back to "
	  "clone (E10, moby#42681)" },
	/* Kernel modules (E12). */
	{ "init_module", -1, SECCOMP_DENY_ALWAYS, "loads kernel code (E12)" },
	{ "finit_module", -1, SECCOMP_DENY_ALWAYS, "loads kernel code (E12)" },
	{ "delete_module", -1, SECCOMP_DENY_ALWAYS, "unloads kernel code (E12)" },
	{ "create_module", -1, SECCOMP_DENY_ALWAYS, "obsolete module interface (E12)" },
	{ "query_module", -1, SECCOMP_DENY_ALWAYS, "obsolete module interface (E12)" },
	{ "get_kernel_syms", -1, SECCOMP_DENY_ALWAYS,
	  "obsolete module interface, leaks kernel addresses" },
	/* NUMA memory policy: host-wide effects without CAP_SYS_NICE. */
	{ "get_mempolicy", -1, SECCOMP_DENY_ALWAYS,
	  "NUMA policy: host memory topology, blocked by Docker's profile" },
	{ "set_mempolicy", -1, SECCOMP_DENY_ALWAYS, "NUMA policy: blocked by Docker's profile" },
	{ "mbind", -1, SECCOMP_DENY_ALWAYS, "NUMA policy: blocked by Docker's profile" },
	{ "move_pages", -1, SECCOMP_DENY_ALWAYS,
	  "moves other processes' pages between NUMA nodes" },
	{ "migrate_pages", -1, SECCOMP_DENY_ALWAYS,
	  "moves other processes' pages between NUMA nodes" },
	{ "set_mempolicy_home_node", -1, SECCOMP_DENY_ALWAYS, "NUMA policy: as set_mempolicy" },
	/* I/O privilege. */
	{ "ioperm", -1, SECCOMP_DENY_ALWAYS, "raw I/O port access" },
	{ "iopl", -1, SECCOMP_DENY_ALWAYS, "raw I/O port access" },
	/* Reaching into other processes (E5). */
	{ "ptrace", -1, SECCOMP_DENY_ALWAYS,
	  "inspects and controls other processes, historic seccomp bypass (E5)" },
	{ "process_vm_readv", -1, SECCOMP_DENY_ALWAYS, "reads another process's memory (E5)" },
	{ "process_vm_writev", -1, SECCOMP_DENY_ALWAYS, "writes another process's memory (E5)" },
	{ "kcmp", -1, SECCOMP_DENY_ALWAYS,
	  "compares other processes' kernel objects, leaks kernel pointers ordering (E5)" },
	{ "pidfd_getfd", -1, SECCOMP_DENY_ALWAYS, "steals a file descriptor from another process" },
	{ "process_madvise", -1, SECCOMP_DENY_ALWAYS, "acts on another process's memory" },
	/* Kexec and reboot. */
	{ "kexec_load", -1, SECCOMP_DENY_ALWAYS, "replaces the running kernel" },
	{ "kexec_file_load", -1, SECCOMP_DENY_ALWAYS, "replaces the running kernel" },
	{ "reboot", -1, SECCOMP_DENY_ALWAYS, "reboots the host, or the pid namespace" },
	/* Mounts, old and new API (E13; flatpak CVE-2021-41133 missed the new one). */
	{ "mount", -1, SECCOMP_DENY_ALWAYS, "changes the mount table (E13)" },
	{ "umount", -1, SECCOMP_DENY_ALWAYS, "uncovers masked paths (E13)" },
	{ "umount2", -1, SECCOMP_DENY_ALWAYS, "uncovers masked paths (E13)" },
	{ "pivot_root", -1, SECCOMP_DENY_ALWAYS, "changes the root (E13)" },
	{ "chroot", -1, SECCOMP_DENY_ALWAYS, "Landlock does not restrict it (E13)" },
	{ "fsopen", -1, SECCOMP_DENY_ALWAYS,
	  "new mount API (E13, CVE-2022-0185 was reached through fsconfig)" },
	{ "fsconfig", -1, SECCOMP_DENY_ALWAYS, "new mount API (E13, CVE-2022-0185)" },
	{ "fsmount", -1, SECCOMP_DENY_ALWAYS, "new mount API (E13)" },
	{ "fspick", -1, SECCOMP_DENY_ALWAYS,
	  "new mount API: reconfigures an existing superblock (E13)" },
	{ "move_mount", -1, SECCOMP_DENY_ALWAYS, "new mount API (E13)" },
	{ "open_tree", -1, SECCOMP_DENY_ALWAYS,
	  "new mount API: clones mounts, may reveal what masks cover (E13)" },
	{ "open_tree_attr", 467, SECCOMP_DENY_ALWAYS, "new mount API (Linux 6.15) (E13)" },
	{ "mount_setattr", -1, SECCOMP_DENY_ALWAYS, "new mount API: changes mount flags (E13)" },
	/* File handles: the "shocker" breakout (E14). */
	{ "open_by_handle_at", -1, SECCOMP_DENY_ALWAYS,
	  "opens files by handle, bypassing the mount view (E14)" },
	{ "name_to_handle_at", -1, SECCOMP_DENY_ALWAYS,
	  "produces handles for open_by_handle_at (E14)" },
	/* Quota and swap. */
	{ "quotactl", -1, SECCOMP_DENY_ALWAYS, "host quota administration" },
	{ "quotactl_fd", -1, SECCOMP_DENY_ALWAYS, "host quota administration" },
	{ "swapon", -1, SECCOMP_DENY_ALWAYS, "host swap administration" },
	{ "swapoff", -1, SECCOMP_DENY_ALWAYS, "host swap administration" },
	{ "acct", -1, SECCOMP_DENY_ALWAYS, "host process accounting" },
	/* Obsolete interfaces: poorly tested code. */
	{ "nfsservctl", -1, SECCOMP_DENY_ALWAYS, "obsolete" },
	{ "sysfs", -1, SECCOMP_DENY_ALWAYS, "obsolete" },
	{ "_sysctl", -1, SECCOMP_DENY_ALWAYS, "obsolete" },
	{ "uselib", -1, SECCOMP_DENY_ALWAYS, "obsolete, historic exploit vector" },
	{ "ustat", -1, SECCOMP_DENY_ALWAYS, "obsolete" },
	{ "vm86", -1, SECCOMP_DENY_ALWAYS, "obsolete, 32-bit only" },
	{ "vm86old", -1, SECCOMP_DENY_ALWAYS, "obsolete, 32-bit only" },
	/* Exploit helpers (E7, E11). */
	{ "userfaultfd", -1, SECCOMP_DENY_ALWAYS, "widens kernel race windows for exploits (E7)" },
	{ "io_uring_setup", -1, SECCOMP_DENY_ALWAYS,
	  "io_uring operations bypass seccomp; disabled by Google production (E11)" },
	{ "io_uring_enter", -1, SECCOMP_DENY_ALWAYS, "io_uring (E11)" },
	{ "io_uring_register", -1, SECCOMP_DENY_ALWAYS, "io_uring (E11)" },
	/* Host information and terminals. */
	{ "syslog", -1, SECCOMP_DENY_ALWAYS, "reads the host kernel log" },
	{ "vhangup", -1, SECCOMP_DENY_ALWAYS, "hangs up the terminal" },
	{ "fanotify_init", -1, SECCOMP_DENY_ALWAYS, "filesystem-wide event monitoring" },
	{ "ioctl", -1, SECCOMP_DENY_ARGS,
	  "TIOCSTI and TIOCLINUX inject input into a terminal (E4, CVE-2017-5226, CVE-2023-28100); "
	  "compared on 32 bits (CVE-2019-10063)",
	  RULES(ioctl_inject) },
	{ "personality", -1, SECCOMP_DENY_ARGS,
	  "anything but PER_LINUX, PER_LINUX32, UNAME26 and the query: READ_IMPLIES_EXEC and "
	  "ADDR_NO_RANDOMIZE weaken exploit mitigations (E15)" },
	/* Set-id bits: a set-uid file the work leaves in the workspace runs with
	 * its owner's rights on the host (issue 10). nosuid mounts keep the bits
	 * powerless inside; these keep them from being set at all. */
	{ "chmod", -1, SECCOMP_DENY_ARGS,
	  "a mode with S_ISUID or S_ISGID: plants a set-id file in the workspace",
	  RULES(setid_arg1) },
	{ "fchmod", -1, SECCOMP_DENY_ARGS, "a mode with S_ISUID or S_ISGID: as chmod",
	  RULES(setid_arg1) },
	{ "fchmodat", -1, SECCOMP_DENY_ARGS, "a mode with S_ISUID or S_ISGID: as chmod",
	  RULES(setid_arg2) },
	{ "fchmodat2", 452, SECCOMP_DENY_ARGS,
	  "a mode with S_ISUID or S_ISGID: as chmod (Linux 6.6)", RULES(setid_arg2) },
	{ "creat", -1, SECCOMP_DENY_ARGS, "a mode with S_ISUID or S_ISGID: creates a set-id file",
	  RULES(setid_arg1) },
	{ "open", -1, SECCOMP_DENY_ARGS,
	  "O_CREAT or O_TMPFILE with S_ISUID or S_ISGID in the mode: creates a set-id file",
	  RULES(open_setid) },
	{ "openat", -1, SECCOMP_DENY_ARGS,
	  "O_CREAT or O_TMPFILE with S_ISUID or S_ISGID in the mode: as open",
	  RULES(openat_setid) },
	{ "openat2", -1, SECCOMP_DENY_ENOSYS,
	  "its mode sits behind a pointer seccomp cannot read (O_CREAT with S_ISUID created set-id "
	  "files); ENOSYS: callers fall back to openat" },
	{ "mknod", -1, SECCOMP_DENY_ARGS, "a mode with S_ISUID or S_ISGID: creates a set-id file",
	  RULES(setid_arg1) },
	{ "mknodat", -1, SECCOMP_DENY_ARGS, "a mode with S_ISUID or S_ISGID: as mknod",
	  RULES(setid_arg2) },
	{ "socket", -1, SECCOMP_DENY_ARGS,
	  "families other than unix, inet, inet6 and netlink (fails EAFNOSUPPORT): rare families "
	  "autoload buggy modules (E12), vsock reaches a hypervisor past the network namespace" },
};

const seccomp_deny_entry *seccomp_filter_deny_list(size_t *ret_n)
{
	*ret_n = sizeof(deny_list) / sizeof(deny_list[0]);
	return deny_list;
}

typedef int (*rule_fn)(void *arg, const seccomp_arg_rule *rule);

static int emit1(rule_fn fn, void *arg, int err, struct scmp_arg_cmp c)
{
	seccomp_arg_rule rule = { err, 1, { c } };
	return fn(arg, &rule);
}

/* personality: allowed are 0 (PER_LINUX), 8 (PER_LINUX32), 0x20000
 * (UNAME26), 0x20008 and the query 0xffffffff. libseccomp takes one
 * comparison per argument and rule, so the complement is spelled out:
 *  - any of bits 32..63 set (the kernel truncates; refuse rather than guess);
 *  - with bit 31 clear, any bit other than 3 and 17 set;
 *  - with bit 31 set, any of bits 0..30 clear (only the query has bit 31). */
static int personality_rules(rule_fn fn, void *arg)
{
	const uint64_t b31 = 1ull << 31;
	int r = emit1(fn, arg, EPERM, (struct scmp_arg_cmp){ 0, SCMP_CMP_GT, 0xffffffffu, 0 });
	for (unsigned b = 0; r >= 0 && b < 31; b++) {
		uint64_t bit = 1ull << b;
		if (b != 3 && b != 17)
			r = emit1(fn, arg, EPERM,
				  (struct scmp_arg_cmp){ 0, SCMP_CMP_MASKED_EQ, bit | b31, bit });
		if (r >= 0)
			r = emit1(fn, arg, EPERM,
				  (struct scmp_arg_cmp){ 0, SCMP_CMP_MASKED_EQ, bit | b31, b31 });
	}
	return r;
}

/* socket: only AF_UNIX (1), AF_INET (2), AF_INET6 (10), AF_NETLINK (16).
 * Every other value, upper bits included, matches one of these rules. */
static int socket_rules(rule_fn fn, void *arg)
{
	int r = emit1(fn, arg, EAFNOSUPPORT, (struct scmp_arg_cmp){ 0, SCMP_CMP_GE, 17, 0 });
	for (uint64_t f = 0; r >= 0 && f < 16; f++)
		if (f != AF_UNIX && f != AF_INET && f != AF_INET6)
			r = emit1(fn, arg, EAFNOSUPPORT,
				  (struct scmp_arg_cmp){ 0, SCMP_CMP_EQ, f, 0 });
	return r;
}

int seccomp_entry_rules(const seccomp_deny_entry *e, rule_fn fn, void *arg)
{
	if (e->kind != SECCOMP_DENY_ARGS)
		return -EINVAL;
	if (e->rules) {
		int r = 0;
		for (size_t i = 0; r >= 0 && i < e->nrules; i++)
			r = fn(arg, &e->rules[i]);
		return r;
	}
	if (strcmp(e->name, "personality") == 0)
		return personality_rules(fn, arg);
	if (strcmp(e->name, "socket") == 0)
		return socket_rules(fn, arg);
	return -EINVAL; /* an argument entry without rules: a bug, fail closed */
}

typedef struct rule_target {
	scmp_filter_ctx ctx;
	int nr;
} rule_target;

static int add_rule(void *arg, const seccomp_arg_rule *rule)
{
	const rule_target *t = arg;
	if (rule->ncmp < 1 || rule->ncmp > SECCOMP_RULE_MAX_CMPS)
		return -EINVAL;
	return seccomp_rule_add_array(t->ctx, SCMP_ACT_ERRNO(rule->err), t->nr, rule->ncmp,
				      rule->cmp);
}

static int add_entry(scmp_filter_ctx ctx, const seccomp_deny_entry *e)
{
	int nr = seccomp_syscall_resolve_name(e->name);
	if (nr == __NR_SCMP_ERROR)
		nr = e->fallback_nr;
	if (nr == __NR_SCMP_ERROR)
		return 0; /* not a call of this architecture: nothing to refuse */
	switch (e->kind) {
	case SECCOMP_DENY_ALWAYS: return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	case SECCOMP_DENY_ENOSYS: return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	case SECCOMP_DENY_ARGS: break;
	}
	rule_target t = { ctx, nr };
	return seccomp_entry_rules(e, add_rule, &t);
}

/* The x32 ABI shares x86_64's audit architecture and sets bit 30 of the
 * call number. libseccomp sends those calls to the bad-architecture action
 * when x32 is not in the filter; check that the program really does, so a
 * libseccomp that stopped doing it fails the build instead of the sandbox. */
static bool bpf_refuses_x32(const struct sock_filter *f, size_t n)
{
#if defined(__x86_64__)
	for (size_t i = 0; i < n; i++)
		if (f[i].code == (BPF_JMP | BPF_JGE | BPF_K) && f[i].k == 0x40000000u)
			return true;
	return false;
#else
	return true;
#endif
}

static size_t built_insns;

/* Calls newer than this list fail with ENOSYS, as on a kernel that lacks
 * them, so an unknown kernel feature fails closed (E21). libseccomp matches
 * numbers one by one; a range is a few instructions of our own, put in
 * front of its program (whose jumps are relative, so they still hold):
 *   native arch and SECCOMP_FILTER_UNKNOWN_FIRST <= nr < x32's bit -> ENOSYS,
 *   everything else -> libseccomp's program (x32 and -1 included). */
static size_t unknown_prefix(struct sock_filter *out)
{
	const struct sock_filter prefix[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SECCOMP_FILTER_UNKNOWN_FIRST, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};
	memcpy(out, prefix, sizeof(prefix));
	return sizeof(prefix) / sizeof(prefix[0]);
}

static int export_program(scmp_filter_ctx ctx, struct sock_filter **ret_prog, size_t *ret_n,
			  const char **what)
{
	int tmp = memfd_create("cordon-seccomp-export", MFD_CLOEXEC);
	if (tmp < 0) {
		*what = "memfd_create";
		return -errno;
	}
	int r = seccomp_export_bpf(ctx, tmp);
	off_t len = r < 0 ? 0 : lseek(tmp, 0, SEEK_END);
	size_t n = len > 0 ? (size_t)len / sizeof(struct sock_filter) : 0;
	g_autofree struct sock_filter *prog = g_new(struct sock_filter, n + 8);
	size_t pre = unknown_prefix(prog);
	bool read_ok = n > 0 && n + pre <= BPF_MAXINSNS &&
		       pread(tmp, prog + pre, (size_t)len, 0) == len;
	close(tmp);
	if (r < 0) {
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc): g_autofree frees prog (the analyzer ignores cleanup attributes)
		*what = "seccomp_export_bpf";
		return r;
	}
	if (!read_ok) {
		*what = "seccomp program size";
		return -E2BIG;
	}
	if (!bpf_refuses_x32(prog + pre, n)) {
		*what = "libseccomp did not refuse x32 system calls";
		return -EPROTO;
	}
	*ret_n = n + pre;
	*ret_prog = g_steal_pointer(&prog);
	return 0;
}

/* The rows a file server's filter holds: the set-id rules, openat2 (its mode is out of the
 * filter's sight) and io_uring (whose operations no filter sees). */
static const char *const setid_rows[] = {
	"chmod",          "fchmod",         "fchmodat",         "fchmodat2", "creat",
	"open",           "openat",         "openat2",          "mknod",     "mknodat",
	"io_uring_setup", "io_uring_enter", "io_uring_register"
};

static bool setid_row(const seccomp_deny_entry *e)
{
	for (size_t i = 0; i < sizeof(setid_rows) / sizeof(setid_rows[0]); i++)
		if (strcmp(e->name, setid_rows[i]) == 0)
			return true;
	return false;
}

static bool every_row(const seccomp_deny_entry *e)
{
	(void)e;
	return true;
}

static int compile_rows(bool (*want)(const seccomp_deny_entry *), struct sock_filter **ret_prog,
			size_t *ret_n, const char **ret_what)
{
	const char *what = "seccomp_init";
	int r = -ENOMEM;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		goto out;
	/* Foreign architectures (i386 int 0x80, x32) end the process: no honest
	 * work in a 64-bit sandbox makes them, and EPERM would let an exploit
	 * probe. NNP is set by the launcher itself. */
	what = "seccomp attributes";
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r >= 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r >= 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	what = "seccomp rules";
	for (size_t i = 0; r >= 0 && i < sizeof(deny_list) / sizeof(deny_list[0]); i++) {
		if (!want(&deny_list[i]))
			continue;
		r = add_entry(ctx, &deny_list[i]);
		if (r < 0)
			what = deny_list[i].name;
	}
	if (r >= 0)
		r = export_program(ctx, ret_prog, ret_n, &what);
out:
	if (ctx)
		seccomp_release(ctx);
	if (r < 0 && ret_what)
		*ret_what = what;
	return r;
}

int seccomp_filter_compile(struct sock_filter **ret_prog, size_t *ret_n, const char **ret_what)
{
	return compile_rows(every_row, ret_prog, ret_n, ret_what);
}

int seccomp_setid_filter_compile(struct sock_filter **ret_prog, size_t *ret_n,
				 const char **ret_what)
{
	/* every name of setid_rows is a row of the deny list: a misspelt one would drop its
	 * rule without a word, so it fails the compile instead */
	size_t found = 0;
	for (size_t i = 0; i < sizeof(deny_list) / sizeof(deny_list[0]); i++)
		found += setid_row(&deny_list[i]);
	if (found != sizeof(setid_rows) / sizeof(setid_rows[0])) {
		if (ret_what)
			*ret_what = "a set-id row not in the deny list";
		return -EINVAL;
	}
	return compile_rows(setid_row, ret_prog, ret_n, ret_what);
}

/* The program in a sealed memfd: what the sandbox's init reads. */
static int seal_program(const struct sock_filter *prog, size_t n, const char **what)
{
	int fd = memfd_create("cordon-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		*what = "memfd_create";
		return -errno;
	}
	if (write(fd, prog, n * sizeof(*prog)) != (ssize_t)(n * sizeof(*prog)) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		*what = "sealing the seccomp program";
		int r = -errno;
		close(fd);
		return r ? r : -EIO;
	}
	built_insns = n;
	return fd;
}

int seccomp_filter_build(const char **ret_what)
{
	const char *what = NULL;
	g_autofree struct sock_filter *prog = NULL;
	size_t n = 0;
	int r = seccomp_filter_compile(&prog, &n, &what);
	if (r >= 0)
		r = seal_program(prog, n, &what);
	if (r < 0 && ret_what)
		*ret_what = what;
	return r;
}

bool seccomp_filter_prebuilt_usable(void)
{
	return seccomp_prebuilt_insns > 0 && seccomp_prebuilt_arch == seccomp_arch_native();
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int cached_fd = -ENOSYS;
static const char *cached_what;

/* The build compiled the same list with the same libseccomp (a test checks
 * they agree): a short-lived host saves the ~1.5 ms a compile costs. A
 * cross-compiled build has none and compiles here. */
static void build_once(void)
{
	if (seccomp_filter_prebuilt_usable())
		cached_fd = seal_program(seccomp_prebuilt, seccomp_prebuilt_insns, &cached_what);
	else
		cached_fd = seccomp_filter_build(&cached_what);
}

int seccomp_filter_fd(const char **ret_what)
{
	pthread_once(&once, build_once);
	if (cached_fd < 0 && ret_what)
		*ret_what = cached_what;
	return cached_fd;
}

size_t seccomp_filter_insns(void) { return built_insns; }
