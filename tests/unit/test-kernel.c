/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel tier's building blocks, below the driver: the seccomp deny list
 * (documented, built, sealed, and enforced by the kernel in a child), the
 * limits plan (which mechanism enforces what, refusals), the Landlock masks
 * per ABI. The tier end to end is tests/redteam/test-redteam.c.
 */
#include "config.h"

#include "testutil.h"
#include "local/hostids.h"
#include "local/landlock-abi.h"
#include "local/landlock.h"
#include "local/limits.h"
#include "local/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* ---- the deny list ---------------------------------------------------------------- */

static const seccomp_deny_entry *find_entry(const char *name)
{
	size_t n;
	const seccomp_deny_entry *list = seccomp_filter_deny_list(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].name, name) == 0)
			return &list[i];
	return NULL;
}

START_TEST(test_deny_list_covers_the_issue)
{
	size_t n;
	seccomp_filter_deny_list(&n);
	ck_assert_uint_ge(n, 41); /* at least the reference's list */
	static const char *const always[] = {
		"mount",
		"umount2",
		"pivot_root",
		"setns",
		"ptrace",
		"process_vm_readv",
		"process_vm_writev",
		"keyctl",
		"add_key",
		"request_key",
		"bpf",
		"perf_event_open",
		"userfaultfd",
		"io_uring_setup",
		"io_uring_enter",
		"io_uring_register",
		"open_by_handle_at",
		"name_to_handle_at",
		"init_module",
		"finit_module",
		"delete_module",
		"kexec_load",
		"kexec_file_load",
		"fsopen",
		"fsconfig",
		"fsmount",
		"move_mount",
		"open_tree",
		"mount_setattr",
		"reboot",
		"swapon",
		"swapoff",
		"acct",
		"iopl",
		"ioperm",
		"kcmp",
		"chroot",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(always); i++) {
		const seccomp_deny_entry *e = find_entry(always[i]);
		ck_assert_msg(e && e->kind == SECCOMP_DENY_ALWAYS, "%s is not refused", always[i]);
		ck_assert_msg(e->why && strlen(e->why) > 5, "%s has no reason", always[i]);
	}
	ck_assert_int_eq(find_entry("clone3")->kind, SECCOMP_DENY_ENOSYS);
	static const char *const args[] = { "clone",     "unshare", "ioctl",  "personality",
					    "socket",    "chmod",   "fchmod", "fchmodat",
					    "fchmodat2", "open",    "openat" };
	for (size_t i = 0; i < G_N_ELEMENTS(args); i++)
		ck_assert_int_eq(find_entry(args[i])->kind, SECCOMP_DENY_ARGS);
}
END_TEST

/* docs/tiers/local.md lists every entry, with its reason. */
START_TEST(test_deny_list_documented)
{
	g_autofree char *path = testutil_src_path("docs/tiers/local.md");
	g_autofree char *doc = NULL;
	ck_assert_msg(g_file_get_contents(path, &doc, NULL, NULL), "cannot read %s", path);
	size_t n;
	const seccomp_deny_entry *list = seccomp_filter_deny_list(&n);
	for (size_t i = 0; i < n; i++) {
		g_autofree char *row = g_strdup_printf("| `%s` |", list[i].name);
		ck_assert_msg(strstr(doc, row), "%s is missing from docs/tiers/local.md",
			      list[i].name);
		ck_assert_msg(strstr(doc, list[i].why), "the reason for %s is not documented",
			      list[i].name);
	}
}
END_TEST

START_TEST(test_filter_built_and_sealed)
{
	const char *what = NULL;
	int fd = seccomp_filter_fd(&what);
	ck_assert_msg(fd >= 0, "%s: %s", what ? what : "?", g_strerror(-fd));
	ck_assert_int_eq(seccomp_filter_fd(NULL), fd); /* built once */
	size_t insns = seccomp_filter_insns();
	ck_assert_uint_gt(insns, 6);
	ck_assert_uint_le(insns, BPF_MAXINSNS);
	int seals = fcntl(fd, F_GET_SEALS);
	ck_assert_int_eq(seals & (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	ck_assert_int_lt(write(fd, "x", 1), 0);
	/* Close-on-exec: never inherited by anything the host starts. */
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}
END_TEST

/* Each check returns 0 or its own number; the child's exit status tells
 * which one failed. */
static int expect(int n, long r, int want_errno)
{
	if (want_errno == 0)
		return r >= 0 ? 0 : n;
	return r < 0 && errno == want_errno ? 0 : n;
}

static void x32_call(void)
{
#if defined(__x86_64__)
	syscall(0x40000000 | SYS_getpid);
#endif
	_exit(0);
}

static int checks_under_filter(void)
{
	char c = 'x';
	int r = 0;
	if ((r = expect(1, syscall(SYS_getpid), 0)) ||
	    (r = expect(2, ptrace(PTRACE_TRACEME, 0, 0, 0), EPERM)) ||
	    (r = expect(3, syscall(SYS_clone3, NULL, 0), ENOSYS)) ||
	    (r = expect(4, syscall(468, -1, "", NULL, 0, 0), ENOSYS)) ||
	    (r = expect(5, unshare(CLONE_NEWUSER), EPERM)) ||
	    (r = expect(6, unshare(CLONE_NEWNET), EPERM)) ||
	    (r = expect(7, unshare(CLONE_FILES), 0)) || /* not a namespace: allowed */
	    (r = expect(8, personality(0xffffffff), 0)) ||
	    (r = expect(9, personality(READ_IMPLIES_EXEC), EPERM)) ||
	    (r = expect(10, personality(PER_LINUX), 0)) ||
	    (r = expect(11, socket(AF_VSOCK, SOCK_STREAM, 0), EAFNOSUPPORT)) ||
	    (r = expect(12, socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0)) ||
	    (r = expect(13, ioctl(0, TIOCSTI, &c), EPERM)) ||
	    (r = expect(14, syscall(SYS_ioctl, 0, 0x100000000ul | TIOCSTI, &c), EPERM)) ||
	    (r = expect(15, syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL), EPERM)) ||
	    (r = expect(16, syscall(SYS_io_uring_setup, 1, NULL), EPERM)) ||
	    (r = expect(17, syscall(SYS_fsopen, "tmpfs", 0), EPERM)) ||
	    (r = expect(18, syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM)))
		return r;
#if defined(__x86_64__)
	pid_t pid = fork();
	if (pid == 0)
		x32_call();
	int st;
	waitpid(pid, &st, 0);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
		return 19;
#endif
	return 0;
}

/* The program embedded at build time is what libseccomp compiles from the
 * deny list here and now, instruction for instruction, and it is the one
 * in use: a stale or foreign build-time program would fail this. */
START_TEST(test_filter_prebuilt_matches_compile)
{
	ck_assert_msg(seccomp_filter_prebuilt_usable(),
		      "no build-time seccomp program for this architecture (cross build?)");
	g_autofree struct sock_filter *prog = NULL;
	size_t n = 0;
	const char *what = NULL;
	int r = seccomp_filter_compile(&prog, &n, &what);
	ck_assert_msg(r >= 0, "%s: %s", what ? what : "?", g_strerror(-r));
	ck_assert_uint_eq(n, seccomp_prebuilt_insns);
	ck_assert_mem_eq(prog, seccomp_prebuilt, n * sizeof(*prog));
	int fd = seccomp_filter_fd(NULL);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(seccomp_filter_insns(), n);
	g_autofree struct sock_filter *used = g_new(struct sock_filter, n);
	ck_assert_int_eq(pread(fd, used, n * sizeof(*used), 0), (ssize_t)(n * sizeof(*used)));
	ck_assert_mem_eq(used, prog, n * sizeof(*prog));
}
END_TEST

/* Runs checks in a child under the exported program, installed the way the
 * sandbox's init does; fails with the number of the first check that did. */
static void run_under_filter(int (*checks)(const char *dir), const char *dir)
{
	int fd = seccomp_filter_fd(NULL);
	ck_assert_int_ge(fd, 0);
	size_t insns = seccomp_filter_insns();
	g_autofree struct sock_filter *prog = g_new(struct sock_filter, insns);
	ck_assert_int_eq(pread(fd, prog, insns * sizeof(*prog), 0),
			 (ssize_t)(insns * sizeof(*prog)));
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sock_fprog fp = { .len = (unsigned short)insns, .filter = prog };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
			_exit(100);
		_exit(checks(dir));
	}
	int st;
	waitpid(pid, &st, 0);
	ck_assert_msg(WIFEXITED(st), "the child died of signal %d", WTERMSIG(st));
	ck_assert_msg(WEXITSTATUS(st) == 0, "check %d under the filter failed", WEXITSTATUS(st));
}

static int checks_under_filter_any(const char *dir)
{
	(void)dir;
	return checks_under_filter();
}

/* The exported program refuses what it should and lets the rest through. */
START_TEST(test_filter_enforced) { run_under_filter(checks_under_filter_any, NULL); }
END_TEST

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

/* Nothing under the filter sets a set-id bit, by any of the calls that take
 * a mode (issue 10: set-uid files planted in the workspace). */
static int setid_checks(const char *dir)
{
	if (chdir(dir) < 0)
		return 99;
	int fd = open("f", O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
	int dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = 0;
	if ((r = expect(1, fd < 0 || dfd < 0 ? -1 : 0, 0)) ||
	    (r = expect(2, chmod("f", 04755), EPERM)) ||
	    (r = expect(3, chmod("f", 02755), EPERM)) ||
	    (r = expect(4, fchmod(fd, 04755), EPERM)) ||
	    (r = expect(5, fchmodat(dfd, "f", 06755, 0), EPERM)) ||
	    (r = expect(6, syscall(SYS_fchmodat2, dfd, "f", 04755, 0), EPERM)) ||
	    (r = expect(7, syscall(SYS_chmod, "f", 0x100000000ul | 04755), EPERM)) ||
	    (r = expect(8, open("g", O_CREAT | O_WRONLY | O_CLOEXEC, 04755), EPERM)) ||
	    (r = expect(9, openat(dfd, "g", O_CREAT | O_WRONLY | O_CLOEXEC, 02755), EPERM)) ||
	    (r = expect(10, openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 04755), EPERM)) ||
	    (r = expect(11, creat("g", 04755), EPERM)) ||
	    (r = expect(12, mknod("g", S_IFREG | 04755, 0), EPERM)) ||
	    (r = expect(13, mknodat(dfd, "g", S_IFREG | 02755, 0), EPERM)) ||
	    /* Ordinary modes still work, set-id bits aside. */
	    (r = expect(14, chmod("f", 01777) < 0 ? -1 : chmod("f", 0700), 0)) ||
	    (r = expect(15, fchmod(fd, 0755), 0)))
		return r;
	int h = open("h", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	struct stat st;
	if (h < 0 || fstat(fd, &st) < 0 || (st.st_mode & (S_ISUID | S_ISGID)))
		return 16;
	return access("g", F_OK) == 0 ? 17 : 0;
}

START_TEST(test_filter_refuses_setid)
{
	g_autofree char *dir = g_dir_make_tmp("cordon-setid-XXXXXX", NULL);
	ck_assert_ptr_nonnull(dir);
	run_under_filter(setid_checks, dir);
	testutil_rmtree(dir);
}
END_TEST

/* ---- limits ------------------------------------------------------------------------ */

static bool has_rlimit(const limits_plan *p, int resource, uint64_t *ret)
{
	for (int i = 0; i < p->nrlimits; i++)
		if (p->rlimits[i].resource == resource) {
			*ret = p->rlimits[i].value;
			return true;
		}
	return false;
}

START_TEST(test_limits_rlimit_floor)
{
	limits_host_disable_cgroups(true);
	cordon_plugin_limits want = { 0 };
	want.value[CORDON_PLUGIN_LIMIT_MEMORY] = 64u << 20;
	want.value[CORDON_PLUGIN_LIMIT_PIDS] = 32;
	want.value[CORDON_PLUGIN_LIMIT_FSIZE] = 1u << 20;
	want.set = (1u << CORDON_PLUGIN_LIMIT_MEMORY) | (1u << CORDON_PLUGIN_LIMIT_PIDS) |
		   (1u << CORDON_PLUGIN_LIMIT_FSIZE);
	limits_plan p;
	char why[256] = "";
	ck_assert_int_eq(limits_plan_make(&want, &p, why, sizeof(why)), 0);
	uint64_t v;
	ck_assert_int_eq(p.via[CORDON_PLUGIN_LIMIT_MEMORY], LIMIT_VIA_RLIMIT);
	ck_assert(has_rlimit(&p, RLIMIT_AS, &v) && v == 64u << 20);
	ck_assert_int_eq(p.via[CORDON_PLUGIN_LIMIT_PIDS], LIMIT_VIA_RLIMIT);
	ck_assert(has_rlimit(&p, RLIMIT_NPROC, &v) && v == 32);
	ck_assert(has_rlimit(&p, RLIMIT_FSIZE, &v) && v == 1u << 20);
	ck_assert(has_rlimit(&p, RLIMIT_CORE, &v) && v == 0);
	ck_assert_int_eq(p.via[CORDON_PLUGIN_LIMIT_WALL_MS], LIMIT_VIA_HOST_TIMER);
	ck_assert_int_eq(p.via[CORDON_PLUGIN_LIMIT_OUTPUT], LIMIT_VIA_CORE);
	ck_assert(!p.cgroup2 && !p.cgroup1[LIMITS_CG_MEMORY]);
	char desc[512];
	limits_plan_describe(&p, desc, sizeof(desc));
	ck_assert_msg(strstr(desc, "memory 67108864: rlimit") && strstr(desc, "pids 32: rlimit"),
		      "%s", desc);
	limits_host_disable_cgroups(false);
}
END_TEST

/* No run is unbounded: memory, pids and nofile have defaults. */
START_TEST(test_limits_defaults)
{
	limits_plan p;
	char why[256];
	ck_assert_int_eq(limits_plan_make(NULL, &p, why, sizeof(why)), 0);
	uint32_t must = (1u << CORDON_PLUGIN_LIMIT_MEMORY) | (1u << CORDON_PLUGIN_LIMIT_PIDS) |
			(1u << CORDON_PLUGIN_LIMIT_NOFILE);
	ck_assert_uint_eq(p.set & must, must);
	ck_assert_uint_eq(p.value[CORDON_PLUGIN_LIMIT_MEMORY], LIMITS_DEFAULT_MEMORY);
	ck_assert_uint_eq(p.value[CORDON_PLUGIN_LIMIT_PIDS], LIMITS_DEFAULT_PIDS);
	ck_assert_int_ne(p.via[CORDON_PLUGIN_LIMIT_MEMORY], LIMIT_VIA_UNSET);
	ck_assert_int_ne(p.via[CORDON_PLUGIN_LIMIT_PIDS], LIMIT_VIA_UNSET);
}
END_TEST

/* A rate no rlimit can express, without a cgroup: refused, with the reason. */
START_TEST(test_limits_cpu_needs_cgroup)
{
	limits_host_disable_cgroups(true);
	cordon_plugin_limits want = { .set = 1u << CORDON_PLUGIN_LIMIT_CPU_MILLI };
	want.value[CORDON_PLUGIN_LIMIT_CPU_MILLI] = 500;
	limits_plan p;
	char why[256] = "";
	ck_assert_int_eq(limits_plan_make(&want, &p, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "cpu") && strstr(why, "cgroup"), "%s", why);
	limits_host_disable_cgroups(false);
}
END_TEST

/* Asking for more than the host's hard limit gets the host's (stricter). */
START_TEST(test_limits_clamped_to_hard)
{
	struct rlimit cur;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &cur), 0);
	if (cur.rlim_max == RLIM_INFINITY)
		return; /* nothing to clamp to */
	cordon_plugin_limits want = { .set = 1u << CORDON_PLUGIN_LIMIT_NOFILE };
	want.value[CORDON_PLUGIN_LIMIT_NOFILE] = (uint64_t)cur.rlim_max + 1000;
	limits_plan p;
	char why[256];
	ck_assert_int_eq(limits_plan_make(&want, &p, why, sizeof(why)), 0);
	uint64_t v;
	ck_assert(has_rlimit(&p, RLIMIT_NOFILE, &v));
	ck_assert_uint_eq(v, cur.rlim_max);
}
END_TEST

/* With the host's cgroups (this host: v1 controllers as root), memory and
 * pids use them, not the rlimit floor. */
START_TEST(test_limits_prefer_cgroups)
{
	const limits_host *h = limits_host_get();
	limits_plan p;
	char why[256];
	ck_assert_int_eq(limits_plan_make(NULL, &p, why, sizeof(why)), 0);
	uint64_t v;
	if (h->v2_has[LIMITS_CG_MEMORY])
		ck_assert_int_eq(p.via[CORDON_PLUGIN_LIMIT_MEMORY], LIMIT_VIA_CGROUP2);
	else if (h->v1_has[LIMITS_CG_MEMORY])
		ck_assert_int_eq(p.via[CORDON_PLUGIN_LIMIT_MEMORY], LIMIT_VIA_CGROUP1);
	else
		ck_assert(has_rlimit(&p, RLIMIT_AS, &v));
	if (p.via[CORDON_PLUGIN_LIMIT_MEMORY] != LIMIT_VIA_RLIMIT)
		ck_assert(!has_rlimit(&p, RLIMIT_AS, &v)); /* no AS cap on top of a cgroup */
}
END_TEST

/* A run's groups are joined by a single-threaded process writing "0" to the file
 * limits_cgroup_create opened: on v1 `tasks`, which moves the writer without the
 * kernel-wide threadgroup lock (whose write side, taken when idle, waits an RCU grace
 * period: 4-21 ms on every isolated run as root here with cgroup.procs); on v2
 * cgroup.procs. The joiner is then a member of every group. */
START_TEST(test_limits_join_file)
{
	limits_plan p;
	char why[256];
	ck_assert_int_eq(limits_plan_make(NULL, &p, why, sizeof(why)), 0);
	limits_cgroup cg;
	ck_assert_msg(limits_cgroup_create(&p, &cg, why, sizeof(why)) == 0, "%s", why);
	if (cg.ndirs == 0) {
		/* Unprivileged here: the rlimit floor, no group to join. */
		ck_assert_msg(geteuid() != 0 || g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") != 0,
			      "CORDON_REQUIRE=all: root without control groups");
		printf("# no control groups for this user: nothing to join\n");
		return;
	}
	for (int i = 0; i < cg.ndirs; i++) {
		g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", cg.procs_fd[i]);
		g_autofree char *target = g_file_read_link(link, NULL);
		g_autofree char *tasks = g_build_filename(cg.dirs[i], "tasks", NULL);
		bool v1 = access(tasks, F_OK) == 0;
		ck_assert_msg(target && g_str_has_suffix(target, v1 ? "/tasks" : "/cgroup.procs"),
			      "%s joins through %s", cg.dirs[i], target ? target : "?");
	}
	int hold[2];
	ck_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		for (int i = 0; i < cg.ndirs; i++)
			if (write(cg.procs_fd[i], "0", 1) != 1)
				_exit(1);
		close(hold[1]);
		_exit(read(hold[0], &c, 1) < 0 ? 2 : 0);
	}
	ck_assert_int_gt(pid, 0);
	close(hold[0]);
	for (int i = 0; i < cg.ndirs; i++) {
		g_autofree char *procs = g_build_filename(cg.dirs[i], "cgroup.procs", NULL);
		g_autofree char *want = g_strdup_printf("%d\n", (int)pid);
		g_autofree char *inner = g_strdup_printf("\n%d\n", (int)pid);
		bool member = false;
		for (int tries = 0; tries < 2000 && !member; tries++) {
			g_autofree char *list = NULL;
			g_file_get_contents(procs, &list, NULL, NULL);
			member = list && (g_str_has_prefix(list, want) || strstr(list, inner));
			if (!member)
				g_usleep(1000);
		}
		ck_assert_msg(member, "pid %d is not in %s", (int)pid, cg.dirs[i]);
	}
	close(hold[1]);
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	limits_cgroup_destroy(&cg);
}
END_TEST

/* ---- Landlock ---------------------------------------------------------------------------- */

START_TEST(test_landlock_masks)
{
	struct ll_masks m;
	ll_masks_for(1, &m);
	ck_assert_uint_eq(m.handled.handled_access_fs, LL_FS_ABI1);
	ck_assert_uint_eq(m.handled.handled_access_net, 0);
	ck_assert_uint_eq(m.handled.scoped, 0);
	ck_assert_uint_eq(m.handled_size, 8);
	ll_masks_for(3, &m);
	ck_assert(m.handled.handled_access_fs & LL_FS_REFER);
	ck_assert(m.handled.handled_access_fs & LL_FS_TRUNCATE);
	ck_assert(m.write_file & LL_FS_TRUNCATE);
	ll_masks_for(4, &m);
	/* TCP is the network namespace's: the sandbox's loopback stays its own. */
	ck_assert_uint_eq(m.handled.handled_access_net, 0);
	ck_assert_uint_eq(m.handled_size, 16);
	ll_masks_for(7, &m);
	ck_assert(m.handled.handled_access_fs & LL_FS_IOCTL_DEV);
	ck_assert(!(m.write_dir & LL_FS_IOCTL_DEV)); /* device ioctls stay refused */
	ck_assert_uint_eq(m.handled.scoped, LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL);
	ck_assert_uint_eq(m.handled_size, 24);
	/* Read and execute only, beneath "/". */
	ck_assert_uint_eq(m.read_exec, LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR);
	ck_assert(!(m.read_exec & LL_FS_WRITE_FILE));
	/* File rules carry file rights only (the kernel refuses others). */
	ck_assert_uint_eq(m.write_file & ~(LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE), 0);
	ck_assert(!(m.handled.handled_access_fs & LL_FS_RESOLVE_UNIX));
	/* Review of issue 10: connecting to a pathname unix socket is handled
	 * (ABI 9) and allowed only where the work may write: never beneath
	 * "/", the host's services. */
	ll_masks_for(9, &m);
	ck_assert(m.handled.handled_access_fs & LL_FS_RESOLVE_UNIX);
	ck_assert(m.write_dir & LL_FS_RESOLVE_UNIX);
	ck_assert(!(m.read_exec & LL_FS_RESOLVE_UNIX));
	ck_assert_uint_eq(m.write_file & LL_FS_RESOLVE_UNIX, 0);
}
END_TEST

START_TEST(test_landlock_reported)
{
	int abi = landlock_abi();
	ck_assert_int_ge(abi, 0);
	ck_assert_int_eq(landlock_abi(), abi);
	ck_assert_str_eq(landlock_describe(0), "no Landlock");
	/* TCP is the network namespace's (landlock-abi.h): no TCP rule is claimed. */
	ck_assert(!strstr(landlock_describe(7), "TCP"));
	ck_assert(strstr(landlock_describe(6), "scoping"));
}
END_TEST

/* As root every sandbox's work gets host ids of its own: two claims held at once differ,
 * both lie in the block, the lock files sit in a root-only directory, and a released id's
 * lock is free again. (Unprivileged the work is the caller: no ids are claimed.) */
START_TEST(test_hostids_unique)
{
	if (geteuid() != 0)
		return;
	char why[256] = "";
	hostids a, b;
	ck_assert_msg(hostids_claim(&a, why, sizeof(why)) == 0, "%s", why);
	ck_assert_msg(hostids_claim(&b, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_ne(a.uid, b.uid);
	ck_assert(hostids_in_block(a.uid) && hostids_in_block(b.uid));
	ck_assert_uint_eq(a.uid, a.gid);
	ck_assert(!hostids_in_block(65534) && !hostids_in_block(0) &&
		  !hostids_in_block(0x7fffffffu));
	struct stat st;
	ck_assert_int_eq(stat(HOSTIDS_DIR, &st), 0);
	ck_assert_uint_eq(st.st_uid, 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	g_autofree char *path = g_strdup_printf(HOSTIDS_DIR "/%u", a.uid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(flock(fd, LOCK_EX | LOCK_NB), 0); /* held */
	hostids_release(&a);
	ck_assert_int_eq(a.lock_fd, -1);
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0); /* free again */
	close(fd);
	hostids_release(&b);
}
END_TEST

static Suite *kernel_suite(void)
{
	Suite *s = suite_create("kernel");
	TCase *tc = tcase_create("seccomp");
	tcase_add_test(tc, test_deny_list_covers_the_issue);
	tcase_add_test(tc, test_deny_list_documented);
	tcase_add_test(tc, test_filter_built_and_sealed);
	tcase_add_test(tc, test_filter_prebuilt_matches_compile);
	tcase_add_test(tc, test_filter_enforced);
	tcase_add_test(tc, test_filter_refuses_setid);
	suite_add_tcase(s, tc);
	tc = tcase_create("limits");
	tcase_add_test(tc, test_limits_rlimit_floor);
	tcase_add_test(tc, test_limits_defaults);
	tcase_add_test(tc, test_limits_cpu_needs_cgroup);
	tcase_add_test(tc, test_limits_clamped_to_hard);
	tcase_add_test(tc, test_limits_prefer_cgroups);
	tcase_add_test(tc, test_limits_join_file);
	suite_add_tcase(s, tc);
	tc = tcase_create("landlock");
	tcase_add_test(tc, test_landlock_masks);
	tcase_add_test(tc, test_landlock_reported);
	suite_add_tcase(s, tc);
	tc = tcase_create("hostids");
	tcase_add_test(tc, test_hostids_unique);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(kernel_suite()); }
