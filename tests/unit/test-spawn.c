/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The launcher of the local driver (core/local/spawn.c): the step list, how a
 * failing step or execve is reported, the exec deadline, seccomp installed last, descriptors
 * that collide with 0-2, and runs without pidfds (older kernels).
 */
#include "config.h"

#include "testutil.h"
#include "local/spawn.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char *const true_argv[] = { "/bin/true", NULL };
static char *const no_env[] = { NULL };

static void plan_for(spawn_plan *p, const char *path, char *const *argv, int null_fd)
{
	spawn_plan_init(p);
	p->path = path;
	p->argv = argv;
	p->envp = no_env;
	p->stdio[0] = p->stdio[1] = p->stdio[2] = null_fd;
}

static int open_null(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(spawn_fd_above_stdio(&fd), 0);
	return fd;
}

/* Waits for a launched child; returns its exit status or 128+signal. */
static int reap(const spawn_child *c)
{
	siginfo_t si = { 0 };
	ck_assert_int_eq(waitid(P_PID, (id_t)c->pid, &si, WEXITED | __WALL), 0);
	if (c->pidfd >= 0)
		close(c->pidfd);
	return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
}

static void assert_no_children(void)
{
	siginfo_t si = { 0 };
	ck_assert_int_eq(waitid(P_ALL, 0, &si, WEXITED | WNOHANG | __WALL), -1);
	ck_assert_int_eq(errno, ECHILD);
}

/* ---- the step list ------------------------------------------------------------- */

static int noop(const spawn_plan *p, const void *arg) { return 0; }

START_TEST(test_plan_insert)
{
	spawn_plan p;
	spawn_plan_init(&p);
	const char *defaults[] = { "signals", "session", "deathsig", "cwd", "stdio", "rlimits" };
	ck_assert_uint_eq(p.n_steps, G_N_ELEMENTS(defaults));
	for (size_t i = 0; i < G_N_ELEMENTS(defaults); i++)
		ck_assert_str_eq(p.steps[i].name, defaults[i]);
	spawn_step ns = { "namespaces", noop, NULL }, ll = { "landlock", noop, NULL };
	ck_assert_int_eq(spawn_plan_insert(&p, "cwd", &ns), 0);
	ck_assert_int_eq(spawn_plan_insert(&p, NULL, &ll), 0);
	ck_assert_str_eq(p.steps[3].name, "namespaces");
	ck_assert_str_eq(p.steps[4].name, "cwd");
	ck_assert_str_eq(p.steps[p.n_steps - 1].name, "landlock");
	ck_assert_int_eq(spawn_plan_insert(&p, "no-such-step", &ll), -ENOENT);
	while (p.n_steps < SPAWN_MAX_STEPS)
		ck_assert_int_eq(spawn_plan_insert(&p, NULL, &ll), 0);
	ck_assert_int_eq(spawn_plan_insert(&p, NULL, &ll), -E2BIG);
	for (int i = 0; i < SPAWN_MAX_RLIMITS; i++)
		ck_assert_int_eq(spawn_plan_add_rlimit(&p, RLIMIT_CORE, 0), 0);
	ck_assert_int_eq(spawn_plan_add_rlimit(&p, RLIMIT_CORE, 0), -E2BIG);
}
END_TEST

/* Steps share our memory until execve: they can leave a trace for the test. */
typedef struct trace {
	int order[4];
	int n;
	char cwd[256];
} trace;

static SPAWN_CHILD int step_record(const spawn_plan *p, const void *arg)
{
	trace *t = (trace *)arg;
	t->order[t->n++] = (int)syscall(SYS_getpid);
	if (syscall(SYS_getcwd, t->cwd, sizeof(t->cwd)) < 0)
		return -errno;
	return 0;
}

static SPAWN_CHILD int step_fail(const spawn_plan *p, const void *arg)
{
	return -(int)(intptr_t)arg;
}

START_TEST(test_steps_run_in_order)
{
	int null_fd = open_null();
	int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root, 3);
	trace before = { 0 }, after = { 0 };
	spawn_plan p;
	plan_for(&p, "/bin/true", true_argv, null_fd);
	p.cwd_fd = root;
	spawn_step s1 = { "before-cwd", step_record, &before },
		   s2 = { "last", step_record, &after };
	ck_assert_int_eq(spawn_plan_insert(&p, "cwd", &s1), 0);
	ck_assert_int_eq(spawn_plan_insert(&p, NULL, &s2), 0);
	spawn_child c;
	spawn_failure f = { 0 };
	ck_assert_int_eq(spawn_start(&p, &c, &f), 0);
	ck_assert_int_eq(reap(&c), 0);
	/* both ran in the child (its pid), the first before fchdir, the last after */
	ck_assert_int_eq(before.n, 1);
	ck_assert_int_eq(after.n, 1);
	ck_assert_int_eq(before.order[0], c.pid);
	ck_assert_int_eq(after.order[0], c.pid);
	g_autofree char *here = g_get_current_dir();
	ck_assert_str_eq(before.cwd, here);
	ck_assert_str_eq(after.cwd, "/");
	close(root);
	close(null_fd);
}
END_TEST

START_TEST(test_step_failure_reported)
{
	int null_fd = open_null();
	spawn_plan p;
	plan_for(&p, "/bin/true", true_argv, null_fd);
	spawn_step bad = { "mounts", step_fail, (const void *)(intptr_t)EPERM };
	ck_assert_int_eq(spawn_plan_insert(&p, "stdio", &bad), 0);
	spawn_child c;
	spawn_failure f = { 0 };
	ck_assert_int_eq(spawn_start(&p, &c, &f), -EPERM);
	ck_assert_str_eq(f.step, "mounts");
	ck_assert_int_eq(f.errnum, EPERM);
	assert_no_children(); /* reaped by spawn_start */
	/* after "stdio" closed everything else, the report still arrives */
	spawn_plan_init(&p);
	plan_for(&p, "/bin/true", true_argv, null_fd);
	ck_assert_int_eq(spawn_plan_insert(&p, NULL, &bad), 0);
	ck_assert_int_eq(spawn_start(&p, &c, &f), -EPERM);
	ck_assert_str_eq(f.step, "mounts");
	assert_no_children();
	close(null_fd);
}
END_TEST

START_TEST(test_exec_failure_reported)
{
	int null_fd = open_null();
	spawn_plan p;
	char *const argv[] = { "/nonexistent/prog", NULL };
	plan_for(&p, "/nonexistent/prog", argv, null_fd);
	spawn_child c;
	spawn_failure f = { 0 };
	ck_assert_int_eq(spawn_start(&p, &c, &f), -ENOENT);
	ck_assert_str_eq(f.step, "execve");
	assert_no_children();
	/* a directory is not executable either */
	char *const dir[] = { "/", NULL };
	plan_for(&p, "/", dir, null_fd);
	ck_assert_int_eq(spawn_start(&p, &c, &f), -EACCES);
	ck_assert_str_eq(f.step, "execve");
	close(null_fd);
}
END_TEST

/* ---- a deadline on the exec (plan->exec_deadline_ms) ---------------------------- */

/* What a user whose ids the child took can do between its id change and its exec. */
static SPAWN_CHILD int step_stop_self(const spawn_plan *p, const void *arg)
{
	syscall(SYS_kill, syscall(SYS_getpid), SIGSTOP);
	return 0;
}

/* A child stopped before its exec does not park us: past the deadline it is killed and
 * reaped, and the failure is the deadline's. With a deadline the child has memory of its
 * own (a step's write is not ours), and an ordinary launch still execs. */
START_TEST(test_exec_deadline)
{
	int null_fd = open_null();
	spawn_plan p;
	plan_for(&p, "/bin/true", true_argv, null_fd);
	p.exec_deadline_ms = 300;
	spawn_step stop = { "server-ids", step_stop_self, NULL };
	ck_assert_int_eq(spawn_plan_insert(&p, NULL, &stop), 0);
	spawn_child c;
	spawn_failure f = { 0 };
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_eq(spawn_start(&p, &c, &f), -ETIMEDOUT);
	gint64 ms = (g_get_monotonic_time() - t0) / 1000;
	ck_assert_msg(ms >= 290 && ms < 2000, "returned after %" G_GINT64_FORMAT " ms", ms);
	ck_assert_str_eq(f.step, "deadline");
	ck_assert_int_eq(f.errnum, ETIMEDOUT);
	assert_no_children(); /* killed and reaped by spawn_start */

	/* in halves: the clone returns at once, and while the stopped child's wait goes on
	 * another launch starts and ends (a launcher thread is not held) */
	int report = -1;
	t0 = g_get_monotonic_time();
	ck_assert_int_eq(spawn_begin(&p, &c, &report), 0);
	ck_assert_int_lt((g_get_monotonic_time() - t0) / 1000, 250);
	spawn_plan other;
	plan_for(&other, "/bin/true", true_argv, null_fd);
	spawn_child oc;
	ck_assert_int_eq(spawn_start(&other, &oc, &f), 0);
	ck_assert_int_eq(reap(&oc), 0);
	ck_assert_int_eq(spawn_end(&p, &c, report, &f), -ETIMEDOUT);
	ck_assert_str_eq(f.step, "deadline");
	assert_no_children();

	trace t = { 0 };
	plan_for(&p, "/bin/true", true_argv, null_fd);
	p.exec_deadline_ms = 5000;
	spawn_step rec = { "record", step_record, &t };
	ck_assert_int_eq(spawn_plan_insert(&p, NULL, &rec), 0);
	ck_assert_int_eq(spawn_start(&p, &c, &f), 0);
	ck_assert_int_eq(reap(&c), 0);
	ck_assert_int_eq(t.n, 0); /* the step wrote to its own copy */
	close(null_fd);
}
END_TEST

/* ---- seccomp is installed last ------------------------------------------------- */

static struct sock_filter deny_filter[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0 /* patched */, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static struct sock_fprog deny_one(int nr)
{
	deny_filter[1].k = (uint32_t)nr;
	return (struct sock_fprog){ G_N_ELEMENTS(deny_filter), deny_filter };
}

START_TEST(test_seccomp_last)
{
	int null_fd = open_null();
	spawn_plan p;
	spawn_child c;
	spawn_failure f = { 0 };
	/* denying setsid does not break the "session" step: the filter comes later */
	struct sock_fprog no_setsid = deny_one(SYS_setsid);
	plan_for(&p, "/bin/true", true_argv, null_fd);
	p.seccomp = &no_setsid;
	ck_assert_int_eq(spawn_start(&p, &c, &f), 0);
	ck_assert_int_eq(reap(&c), 0);
	/* denying execve shows the filter is in force when the program starts */
	struct sock_fprog no_exec = deny_one(SYS_execve);
	plan_for(&p, "/bin/true", true_argv, null_fd);
	p.seccomp = &no_exec;
	ck_assert_int_eq(spawn_start(&p, &c, &f), -EACCES);
	ck_assert_str_eq(f.step, "execve");
	/* and the launching process itself is not filtered */
	ck_assert_int_ge(syscall(SYS_getppid), 0);
	close(null_fd);
}
END_TEST

/* ---- descriptors ------------------------------------------------------------------ */

/* A host that closed its 0-2: our pipes land there and must not be clobbered
 * when the child sets up its own 0-2. */
START_TEST(test_closed_stdio_host)
{
	cordon_context *ctx = NULL;
	ck_assert_int_eq(cordon_context_new(NULL, &ctx, NULL), 0);
	cordon_request *req = cordon_request_new("trusted");
	cordon_sandbox *sb = NULL;
	ck_assert_int_eq(cordon_sandbox_open(ctx, req, &sb, NULL), 0);
	int saved[3];
	for (int i = 0; i < 3; i++) {
		saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
		close(i);
	}
	const char *argv[] = { "/bin/sh", "-c", "read x; echo out:$x; echo err >&2", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.stdin_data = "in\n";
	o.stdin_len = 3;
	cordon_result *res = NULL;
	int r = cordon_sandbox_run(sb, argv, &o, &res, NULL);
	for (int i = 0; i < 3; i++) {
		dup2(saved[i], i);
		close(saved[i]);
	}
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(cordon_result_output(res, 1, NULL), "out:in\n");
	ck_assert_str_eq(cordon_result_output(res, 2, NULL), "err\n");
	cordon_result_free(res);
	cordon_sandbox_close(sb);
	cordon_request_free(req);
	cordon_context_free(ctx);
}
END_TEST

/* ---- without pidfds ---------------------------------------------------------------- */

START_TEST(test_no_pidfd)
{
	spawn_set_pidfd_enabled(false);
	int null_fd = open_null();
	spawn_plan p;
	plan_for(&p, "/bin/true", true_argv, null_fd);
	spawn_child c;
	spawn_failure f = { 0 };
	ck_assert_int_eq(spawn_start(&p, &c, &f), 0);
	ck_assert_int_eq(c.pidfd, -1);
	ck_assert_int_eq(reap(&c), 0);
	close(null_fd);

	/* the driver's loop then polls for the exit: status, output, timeout */
	cordon_context *ctx = NULL;
	ck_assert_int_eq(cordon_context_new(NULL, &ctx, NULL), 0);
	cordon_request *req = cordon_request_new("trusted");
	cordon_sandbox *sb = NULL;
	ck_assert_int_eq(cordon_sandbox_open(ctx, req, &sb, NULL), 0);
	cordon_result *res = NULL;
	ck_assert_int_eq(cordon_sandbox_exec(sb, "sleep 0.1; echo done; exit 3", NULL, &res, NULL),
			 0);
	ck_assert_int_eq(cordon_result_exit_code(res), 3);
	ck_assert_str_eq(cordon_result_output(res, 1, NULL), "done\n");
	cordon_result_free(res);
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 200;
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_eq(cordon_sandbox_exec(sb, "sleep 30", &o, &res, NULL), 0);
	ck_assert(cordon_result_timed_out(res));
	ck_assert_int_lt(g_get_monotonic_time() - t0, 3 * G_USEC_PER_SEC);
	cordon_result_free(res);
	/* a host that reaps children itself: the loss is noticed at once */
	signal(SIGCHLD, SIG_IGN);
	t0 = g_get_monotonic_time();
	cordon_error *err = NULL;
	ck_assert_int_eq(cordon_sandbox_exec(sb, "exit 0", NULL, &res, &err), -ECHILD);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 3 * G_USEC_PER_SEC);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "status_lost");
	signal(SIGCHLD, SIG_DFL);
	cordon_sandbox_close(sb);
	cordon_request_free(req);
	cordon_context_free(ctx);
	spawn_set_pidfd_enabled(true);
}
END_TEST

START_TEST(test_find_program)
{
	char buf[64];
	char *const envp[] = { "PATH=relative:/nonexistent:/bin", NULL };
	ck_assert_int_eq(spawn_find_program("sh", envp, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/bin/sh");
	ck_assert_int_eq(spawn_find_program("./x", envp, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "./x"); /* with a '/': as given, no search */
	ck_assert_int_eq(spawn_find_program("cordon-no-such-prog", envp, buf, sizeof(buf)),
			 -ENOENT);
	ck_assert_int_eq(spawn_find_program("", envp, buf, sizeof(buf)), -ENOENT);
	/* relative PATH entries are never searched (they would mean the sandbox's cwd) */
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *prog = g_build_filename(dir, "cordon-local-prog", NULL);
	ck_assert(g_file_set_contents(prog, "#!/bin/sh\n", -1, NULL));
	ck_assert_int_eq(chmod(prog, 0755), 0);
	g_autofree char *old = g_get_current_dir();
	ck_assert_int_eq(chdir(dir), 0);
	char *const rel[] = { "PATH=.:", NULL };
	ck_assert_int_eq(spawn_find_program("cordon-local-prog", rel, buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(chdir(old), 0);
	testutil_rmtree(dir);
}
END_TEST

static Suite *spawn_suite(void)
{
	Suite *s = suite_create("spawn");
	TCase *tc = tcase_create("launcher");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_plan_insert);
	tcase_add_test(tc, test_steps_run_in_order);
	tcase_add_test(tc, test_step_failure_reported);
	tcase_add_test(tc, test_exec_failure_reported);
	tcase_add_test(tc, test_exec_deadline);
	tcase_add_test(tc, test_seccomp_last);
	tcase_add_test(tc, test_closed_stdio_host);
	tcase_add_test(tc, test_no_pidfd);
	tcase_add_test(tc, test_find_program);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(spawn_suite()); }
