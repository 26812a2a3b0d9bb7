/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host->process_spawn's ABI 1.4 flags, 1.5's jail_fd_path and 1.6's file server
 * (core/hostspawn.c, core/local/hostjail.c):
 * CORDON_HOST_PROCESS_PDEATHSIG (the program dies with the host, not with the thread that
 * asked for it) and CORDON_HOST_PROCESS_JAIL, red-teamed from the VMM's side: a probe
 * program (tests/helpers/vmm-probe) started exactly as QEMU is reports what it sees.
 */
#include "config.h"

#include "testutil.h"

#include "context.h"
#include "local/hostids.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <glib.h>
#include <sys/ptrace.h>
#include <linux/nsfs.h>
#include <grp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const cordon_host *host = &cordon_host_services;

static char *read_all(int fd)
{
	GString *s = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		g_string_append_len(s, buf, n);
	close(fd);
	return g_string_free(s, FALSE);
}

/* Starts argv with flags; its stdout in *ret_out (a pipe's read end). */
static int start(const char *const *argv, uint32_t flags, const char *const *paths,
		 const char *const *envp, int extra, cordon_host_process **ret, int *ret_out,
		 cordon_plugin_error *err)
{
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = argv,
		.envp = envp,
		.stdin_fd = -1,
		.stdout_fd = p[1],
		.stderr_fd = p[1],
		.extra_fd = extra,
		.flags = flags,
		.jail_paths = paths,
	};
	int r = host->process_spawn(&spec, ret, err);
	close(p[1]);
	if (r < 0)
		close(p[0]);
	else
		*ret_out = p[0];
	return r;
}

static bool pid_alive(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	g_autofree char *s = NULL;
	if (!g_file_get_contents(path, &s, NULL, NULL))
		return false;
	const char *e = strrchr(s, ')');
	return e && e[1] == ' ' && e[2] != 'Z' && e[2] != 'X';
}

/* The host (a forked copy of this test) starts `sleep` and is SIGKILLed: with the flag the
 * program is gone within a second, and the launch from a thread that ended first still
 * lives until then. */
static pid_t host_that_dies(uint32_t flags, bool from_thread);

static void *spawn_thread(void *arg)
{
	uint32_t flags = *(uint32_t *)arg;
	const char *argv[] = { "sleep", "30", NULL };
	cordon_host_process *h = NULL;
	int out = -1;
	if (start(argv, flags, NULL, NULL, -1, &h, &out, NULL) < 0)
		return NULL;
	close(out);
	return h;
}

static pid_t host_that_dies(uint32_t flags, bool from_thread)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t host_pid = fork();
	ck_assert_int_ge(host_pid, 0);
	if (host_pid == 0) {
		close(p[0]);
		cordon_host_process *h = NULL;
		if (from_thread) {
			pthread_t t;
			pthread_create(&t, NULL, spawn_thread, &flags);
			pthread_join(t, (void **)&h); /* the thread is gone now */
			usleep(300 * 1000);
		} else {
			h = spawn_thread(&flags);
		}
		int32_t pid = h ? h->pid : -1;
		if (write(p[1], &pid, sizeof(pid)) != sizeof(pid))
			_exit(2);
		pause();
		_exit(0);
	}
	close(p[1]);
	int32_t pid = -1;
	ck_assert_int_eq(read(p[0], &pid, sizeof(pid)), (ssize_t)sizeof(pid));
	close(p[0]);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(pid_alive(pid), "the program died before its host");
	kill(host_pid, SIGKILL);
	waitpid(host_pid, NULL, 0);
	return pid;
}

static bool gone_within(pid_t pid, int ms)
{
	for (int waited = 0; waited < ms; waited += 20) {
		if (!pid_alive(pid))
			return true;
		usleep(20 * 1000);
	}
	return !pid_alive(pid);
}

START_TEST(test_pdeathsig)
{
	pid_t pid = host_that_dies(CORDON_HOST_PROCESS_PDEATHSIG, false);
	ck_assert_msg(gone_within(pid, 1000), "pid %d outlived its host by 1 s", pid);
	pid = host_that_dies(CORDON_HOST_PROCESS_PDEATHSIG, true);
	ck_assert_msg(gone_within(pid, 1000), "pid %d outlived its host by 1 s", pid);
	/* without the flag the orphan lives on: the test above can fail */
	pid = host_that_dies(0, false);
	ck_assert(!gone_within(pid, 300));
	kill(pid, SIGKILL);
}
END_TEST

START_TEST(test_jail_dies_with_host)
{
	pid_t pid = host_that_dies(CORDON_HOST_PROCESS_JAIL, true);
	ck_assert_msg(gone_within(pid, 1000), "jailed pid %d outlived its host by 1 s", pid);
}
END_TEST

START_TEST(test_flags_checked)
{
	const char *argv[] = { "true", NULL };
	cordon_host_process *h = NULL;
	int out = -1;
	cordon_plugin_error err = { 0 };
	ck_assert_int_eq(start(argv, 1u << 7, NULL, NULL, -1, &h, &out, &err), -EINVAL);
	cordon_error_free(err.err);
	/* a spec of ABI 1.2 (no flags word) still starts a plain program */
	cordon_host_process_spec spec = { .size = 40,
					  .argv = argv,
					  .stdin_fd = -1,
					  .stdout_fd = -1,
					  .stderr_fd = -1,
					  .extra_fd = -1,
					  .flags = 0xffff };
	ck_assert_int_eq(host->process_spawn(&spec, &h, NULL), 0);
	int32_t st = -1;
	ck_assert_int_eq(h->wait(h, 5000, 0, &st), 0);
	ck_assert_int_eq(st, 0);
	h->release(h);
	/* jail paths must be clean and absolute; /proc is never given */
	const char *bad[][2] = { { "relative", NULL },
				 { "/usr/../etc", NULL },
				 { "/proc/1", NULL } };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		cordon_plugin_error e = { 0 };
		ck_assert_int_lt(
			start(argv, CORDON_HOST_PROCESS_JAIL, bad[i], NULL, -1, &h, &out, &e), 0);
		cordon_error_free(e.err);
	}
}
END_TEST

/* "key value" of the probe's output. */
static const char *value(GStrv lines, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; lines[i]; i++)
		if (strncmp(lines[i], key, kl) == 0 && lines[i][kl] == ' ')
			return lines[i] + kl + 1;
	ck_abort_msg("no '%s' in the probe's output", key);
	return NULL;
}

START_TEST(test_jail_red_team)
{
	g_autofree char *probe = testutil_build_path("tests/helpers/vmm-probe");
	/* a host canary beside a file the jail is given, and a listening host port */
	g_autofree char *dir = g_dir_make_tmp("hostjail-XXXXXX", NULL);
	ck_assert_ptr_nonnull(dir);
	chmod(dir, 0755);
	g_autofree char *given = g_build_filename(dir, "kernel", NULL);
	g_autofree char *canary = g_build_filename(dir, "canary", NULL);
	ck_assert(g_file_set_contents(given, "k", 1, NULL));
	ck_assert(g_file_set_contents(canary, "c", 1, NULL));
	chmod(given, 0666); /* writable by anyone: only the jail's read-only bind refuses */
	chmod(canary, 0644);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(ls, 1), 0);
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &al), 0);
	g_autofree char *port = g_strdup_printf("PROBE_PORT=%u", ntohs(a.sin_port));
	const char *envp[] = { port, NULL };
	const char *argv[] = { probe, given, canary, "/etc/passwd", NULL };
	const char *paths[] = { given, NULL };
	int extra = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cordon_host_process *h = NULL;
	int out = -1;
	cordon_plugin_error err = { 0 };
	int r = start(argv, CORDON_HOST_PROCESS_JAIL, paths, envp, extra, &h, &out, &err);
	ck_assert_msg(r == 0, "jail: %s", err.err ? cordon_error_get_message(err.err) : "?");
	close(extra);
	g_autofree char *text = read_all(out);
	int32_t st = -1;
	ck_assert_int_eq(h->wait(h, 10000, CORDON_HOST_WAIT_KILL_GROUP, &st), 0);
	h->release(h);
	close(ls);
	ck_assert_msg(st == 0, "probe: %d: %s", st, text);
	g_auto(GStrv) l = g_strsplit(text, "\n", -1);
	unsigned uid = 0, gid = 0;
	ck_assert_int_eq(sscanf(value(l, "ids"), "%u %u", &uid, &gid), 2);
	if (geteuid() == 0) /* a per-process host id, never root or nobody */
		ck_assert_msg(hostids_in_block(uid) && gid == uid, "uid %u", uid);
	else
		ck_assert_uint_eq(uid, geteuid());
	ck_assert_str_eq(value(l, "pid"), "1");  /* its own pid namespace */
	ck_assert_str_eq(value(l, "ppid"), "0"); /* its parent is outside it */
	ck_assert_str_eq(value(l, "hostname"), "cordon-jail");
	ck_assert_str_eq(value(l, "nnp"), "1");
	ck_assert_str_eq(value(l, "seccomp"), "2"); /* filter mode */
	/* the root holds the given file, the probe, its libraries, nothing else */
	g_autofree char *given_entry = g_strdup_printf(":%s:", given);
	g_autofree char *root = g_strdup_printf(":%s", value(l, "root"));
	ck_assert_msg(strstr(root, given_entry), "%s not in the jail: %s", given, root);
	ck_assert_msg(!strstr(root, "canary"), "the canary is in the jail: %s", root);
	ck_assert_msg(!strstr(root, ":/etc") && !strstr(root, ":/dev") && !strstr(root, ":/proc") &&
			      !strstr(root, ":/home") && !strstr(root, ":/root") &&
			      !strstr(root, ":/usr/bin"),
		      "host directories in the jail: %s", root);
	/* each file is the given one, the probe or a library; each directory leads to one */
	g_auto(GStrv) names = g_strsplit(root + 1, ":", -1);
	for (size_t i = 0; names[i] && *names[i]; i++) {
		const char *n = names[i];
		struct stat st2;
		ck_assert_msg(stat(n, &st2) == 0, "%s is in the jail but not on the host", n);
		bool lib = g_str_has_prefix(n, "/lib") || g_str_has_prefix(n, "/usr/lib");
		if (S_ISREG(st2.st_mode)) {
			ck_assert_msg(strcmp(n, given) == 0 || strcmp(n, probe) == 0 || lib,
				      "an unexpected file in the jail: %s", n);
			continue;
		}
		g_autofree char *prefix = g_strconcat(n, "/", NULL);
		ck_assert_msg(lib || g_str_has_prefix(given, prefix) ||
				      g_str_has_prefix(probe, prefix),
			      "an unexpected directory in the jail: %s", n);
	}
	g_autofree char *open_given = g_strdup_printf("%s 0", given);
	g_autofree char *open_canary = g_strdup_printf("%s %d", canary, ENOENT);
	g_autofree char *write_given = g_strdup_printf("%s %d", given, EROFS);
	ck_assert_str_eq(value(l, "open"), open_given);
	g_autofree char *open_canary_line = g_strdup_printf("open %s", open_canary);
	ck_assert(g_strv_contains((const char *const *)l, open_canary_line));
	ck_assert(g_strv_contains((const char *const *)l, "open /etc/passwd 2"));
	ck_assert_str_eq(value(l, "write"), write_given);
	ck_assert_str_eq(value(l, "net"), "101"); /* ENETUNREACH: only a loopback that is down */
	ck_assert_str_eq(value(l, "mount"), "1"); /* EPERM: the kernel tier's filter */
	ck_assert_str_eq(value(l, "unshare"), "1");
	ck_assert_str_eq(value(l, "chroot"), "1");
	ck_assert_str_eq(value(l, "fd3"), "1"); /* its channel */
	unlink(given);
	unlink(canary);
	rmdir(dir);
}
END_TEST

/* A named device node is usable (as root: a node of the jail's own, for its uid alone), with
 * its ioctls (Landlock's device-ioctl right, the seccomp filter); /dev is otherwise absent. */
START_TEST(test_jail_device)
{
	if (access("/dev/kvm", F_OK) != 0)
		return; /* the red team above holds on every host; this needs a device to name */
	g_autofree char *probe = testutil_build_path("tests/helpers/vmm-probe");
	const char *envp[] = { "PROBE_KVM=/dev/kvm", NULL };
	const char *argv[] = { probe, "/dev/null", NULL };
	const char *devices[] = { "/dev/kvm", NULL };
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = argv,
		.envp = envp,
		.stdin_fd = -1,
		.stdout_fd = p[1],
		.stderr_fd = p[1],
		.extra_fd = -1,
		.flags = CORDON_HOST_PROCESS_JAIL,
		.jail_devices = devices,
	};
	cordon_host_process *h = NULL;
	ck_assert_int_eq(host->process_spawn(&spec, &h, NULL), 0);
	close(p[1]);
	g_autofree char *text = read_all(p[0]);
	int32_t st = -1;
	ck_assert_int_eq(h->wait(h, 10000, CORDON_HOST_WAIT_KILL_GROUP, &st), 0);
	h->release(h);
	ck_assert_msg(st == 0, "probe: %d: %s", st, text);
	g_auto(GStrv) l = g_strsplit(text, "\n", -1);
	/* the host's own answer, for comparison (a host user without access gets EACCES both ways) */
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		g_autofree char *want = g_strdup_printf("%d 0", ioctl(fd, KVM_GET_API_VERSION, 0));
		close(fd);
		ck_assert_str_eq(value(l, "kvm"), want);
	}
	ck_assert(g_strv_contains((const char *const *)l, "open /dev/null 2")); /* ENOENT */
	ck_assert_msg(strstr(value(l, "root"), "/dev/kvm:"), "%s", value(l, "root"));
}
END_TEST

/* The probe with a memfd as the jail's descriptor at /cordon/ram (jail_fd_path, ABI 1.5):
 * its output's lines. */
static GStrv run_with_fd(int memfd, const char *fd_path)
{
	g_autofree char *probe = testutil_build_path("tests/helpers/vmm-probe");
	g_autofree char *env = g_strdup_printf("PROBE_FD_PATH=%s", fd_path);
	const char *envp[] = { env, NULL };
	const char *argv[] = { probe, NULL };
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = argv,
		.envp = envp,
		.stdin_fd = -1,
		.stdout_fd = p[1],
		.stderr_fd = p[1],
		.extra_fd = -1,
		.flags = CORDON_HOST_PROCESS_JAIL,
		.jail_fd_path = "/cordon/ram",
		.jail_fd = memfd,
	};
	cordon_host_process *h = NULL;
	cordon_plugin_error err = { 0 };
	int r = host->process_spawn(&spec, &h, &err);
	close(p[1]);
	ck_assert_msg(r == 0, "jail: %s", err.err ? cordon_error_get_message(err.err) : "?");
	g_autofree char *text = read_all(p[0]);
	int32_t st = -1;
	ck_assert_int_eq(h->wait(h, 10000, CORDON_HOST_WAIT_KILL_GROUP, &st), 0);
	h->release(h);
	ck_assert_msg(st == 0, "probe: %d: %s", st, text);
	return g_strsplit(text, "\n", -1);
}

static int template_memfd(void)
{
	int fd = memfd_create("test-template", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0666), 0); /* as root the probe runs as a uid of its own */
	ck_assert_int_eq(pwrite(fd, "template", 8, 0), 8);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	return fd;
}

/* What a template's and a clone's QEMU get: the memfd by name in the jail, through a
 * read-only /proc of the jail's pid namespace that shows nothing but the jail's processes.
 * Unsealed (a template's), the program's shared writes reach it; sealed, only its private
 * copy changes: write(2), a shared writable mapping and truncation fail, the bytes stay. */
START_TEST(test_jail_fd)
{
	int fd = template_memfd();
	g_auto(GStrv) l = run_with_fd(fd, "/cordon/ram");
	ck_assert_str_eq(value(l, "pid"), "1");
	/* MAP_SHARED took "X" at 1, pwrite "W" at 2, ftruncate emptied it */
	ck_assert_str_eq(value(l, "fdpath"), "0 0 0 0 0 0000000000000000");
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	close(fd);

	fd = template_memfd();
	ck_assert_int_eq(
		fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
		0);
	g_auto(GStrv) s = run_with_fd(fd, "/cordon/ram");
	/* opened read-write, privately writable; shared map, write, truncate refused (EPERM) */
	ck_assert_str_eq(value(s, "fdpath"), "0 0 1 1 1 74656d706c617465");
	char back[9] = { 0 };
	ck_assert_int_eq(pread(fd, back, 8, 0), 8);
	ck_assert_str_eq(back, "template");
	/* the root: the link and the /proc it goes through, the probe and its libraries */
	g_autofree char *root = g_strdup_printf(":%s", value(s, "root"));
	ck_assert_msg(strstr(root, ":/cordon:") && strstr(root, ":/cordon/ram:") &&
			      strstr(root, ":/proc:"),
		      "%s", root);
	/* /proc: the jail's own processes (the probe is 1) and the self links, nothing else */
	g_auto(GStrv) procs = g_strsplit(value(s, "proc"), ":", -1);
	for (size_t i = 0; procs[i] && *procs[i]; i++)
		ck_assert_msg(strcmp(procs[i], "1") == 0 || strcmp(procs[i], "self") == 0 ||
				      strcmp(procs[i], "thread-self") == 0,
			      "the jail's /proc holds %s", procs[i]);
	ck_assert_str_eq(value(s, "procwrite"), "30"); /* EROFS: mounted read-only */
	close(fd);
}
END_TEST

/* jail_fd_path only in a jail, with a descriptor, at a clean path no other entry takes. */
START_TEST(test_jail_fd_checked)
{
	int fd = template_memfd();
	const char *argv[] = { "true", NULL };
	const char *given[] = { "/etc/hostname", NULL };
	struct {
		uint32_t flags;
		const char *path;
		int fd;
		const char *const *paths;
	} bad[] = {
		{ 0, "/cordon/ram", fd, NULL },
		{ CORDON_HOST_PROCESS_PDEATHSIG, "/cordon/ram", fd, NULL },
		{ CORDON_HOST_PROCESS_JAIL, "/cordon/ram", -1, NULL },
		{ CORDON_HOST_PROCESS_JAIL, "cordon/ram", fd, NULL },
		{ CORDON_HOST_PROCESS_JAIL, "/proc/ram", fd, NULL },
		{ CORDON_HOST_PROCESS_JAIL, "/", fd, NULL },
		{ CORDON_HOST_PROCESS_JAIL, "/etc/hostname", fd, given },
		{ CORDON_HOST_PROCESS_JAIL, "/etc", fd, given },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		cordon_host_process_spec spec = {
			.size = sizeof(spec),
			.argv = argv,
			.stdin_fd = -1,
			.stdout_fd = -1,
			.stderr_fd = -1,
			.extra_fd = -1,
			.flags = bad[i].flags,
			.jail_paths = bad[i].paths,
			.jail_fd_path = bad[i].path,
			.jail_fd = bad[i].fd,
		};
		cordon_host_process *h = NULL;
		cordon_plugin_error e = { 0 };
		ck_assert_msg(host->process_spawn(&spec, &h, &e) < 0, "case %zu started", i);
		cordon_error_free(e.err);
	}
	close(fd);
}
END_TEST

/* The jail is built or nothing runs: a path that does not exist refuses the launch. */
START_TEST(test_jail_fails_closed)
{
	const char *argv[] = { "true", NULL };
	const char *paths[] = { "/nonexistent/cordon-kernel", NULL };
	cordon_host_process *h = NULL;
	int out = -1;
	cordon_plugin_error err = { 0 };
	ck_assert_int_eq(start(argv, CORDON_HOST_PROCESS_JAIL, paths, NULL, -1, &h, &out, &err),
			 -ENOENT);
	ck_assert_ptr_nonnull(
		strstr(cordon_error_get_message(err.err), "/nonexistent/cordon-kernel"));
	cordon_error_free(err.err);
}
END_TEST

/* ---- a file server (CORDON_HOST_PROCESS_FILE_SERVER, ABI 1.6) --------------------------- */

/* nobody and nogroup: a user of the host, in its own primary group */
#define SERVER_UID 65534
#define SERVER_GID 65534

/* A directory of SERVER_UID's with one file, opened; *ret_dir its path. */
static int server_dir(char **ret_dir)
{
	char *dir = g_dir_make_tmp("cordon-fs-XXXXXX", NULL);
	ck_assert_ptr_nonnull(dir);
	g_autofree char *f = g_build_filename(dir, "host-file", NULL);
	ck_assert(g_file_set_contents(f, "from the host\n", -1, NULL));
	ck_assert_int_eq(chown(f, SERVER_UID, SERVER_GID), 0);
	ck_assert_int_eq(chown(dir, SERVER_UID, SERVER_GID), 0);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	*ret_dir = dir;
	return fd;
}

static int start_server_as(const char *script, int dir_fd, uint32_t flags, const char *at,
			   uint32_t id, char **ret_out, cordon_error **ret_err)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = argv,
		.stdin_fd = -1,
		.stdout_fd = p[1],
		.stderr_fd = p[1],
		.extra_fd = -1,
		.flags = flags,
		.jail_fd_path = at,
		.jail_fd = dir_fd,
		.file_server_id = id,
	};
	cordon_host_process *h = NULL;
	cordon_plugin_error e = { 0 };
	int r = host->process_spawn(&spec, &h, &e);
	close(p[1]);
	*ret_err = e.err;
	if (r < 0) {
		close(p[0]);
		return r;
	}
	*ret_out = read_all(p[0]);
	int32_t st = -1;
	ck_assert_int_eq(h->wait(h, 10000, 0, &st), 0);
	h->release(h);
	return st;
}

static int start_server(const char *script, int dir_fd, uint32_t flags, const char *at,
			char **ret_out, cordon_error **ret_err)
{
	return start_server_as(script, dir_fd, flags, at, 0, ret_out, ret_err);
}

static void remove_tree(const char *dir)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* As root: the program is root of a user namespace that maps only the directory's owner; it
 * finds the directory at the mount point (the one it was opened as, though its path now
 * names a link to /etc), writes there as the owner, and is the owner elsewhere. */
START_TEST(test_file_server_as_owner)
{
	if (geteuid() != 0)
		return; /* test_file_server_refusals covers the refusal without root */
	g_autofree char *dir = NULL;
	int fd = server_dir(&dir);
	g_autofree char *moved = g_strconcat(dir, ".moved", NULL);
	ck_assert_int_eq(rename(dir, moved), 0);
	ck_assert_int_eq(symlink("/etc", dir), 0); /* the path swapped after the open */
	const char *script =
		"id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map; "
		"cat /mnt/host-file; echo made > /mnt/made && echo wrote; "
		"cat /etc/shadow >/dev/null 2>&1 || echo no-shadow; "
		"grep NoNewPrivs /proc/self/status; [ -e /proc/self/fd/4 ] || echo no-fd4; "
		"echo $$";
	char *out = NULL;
	cordon_error *err = NULL;
	int st = start_server(script, fd, CORDON_HOST_PROCESS_FILE_SERVER, "/mnt", &out, &err);
	ck_assert_msg(st == 0, "%d: %s %s", st, out ? out : "",
		      err ? cordon_error_get_message(err) : "");
	g_autofree char *want = g_strdup_printf(
		"0\n0\n%10d %10d %10d\n%10d %10d %10d\n"
		"from the host\nwrote\nno-shadow\nNoNewPrivs:\t1\nno-fd4\n1\n",
		0, SERVER_UID, 1, 0, SERVER_GID, 1);
	ck_assert_str_eq(out, want);
	g_free(out);
	g_autofree char *made = g_build_filename(moved, "made", NULL);
	struct stat st_made;
	ck_assert_int_eq(stat(made, &st_made), 0);
	ck_assert_uint_eq(st_made.st_uid, SERVER_UID);
	ck_assert_uint_eq(st_made.st_gid, SERVER_GID);
	/* the host's /mnt is untouched */
	ck_assert_int_ne(access("/mnt/made", F_OK), 0);
	close(fd);
	unlink(dir);
	remove_tree(moved);
}
END_TEST

/* file_server_id: the owner is that id inside, with the namespace's capabilities kept
 * (ambient), which reach the owner's files only: a file of the owner's mode 0000 is read,
 * the host's shadow file still is not. */
START_TEST(test_file_server_other_id)
{
	if (geteuid() != 0)
		return;
	g_autofree char *dir = NULL;
	int fd = server_dir(&dir);
	g_autofree char *f = g_build_filename(dir, "host-file", NULL);
	ck_assert_int_eq(chmod(f, 0), 0);
	char *out = NULL;
	cordon_error *err = NULL;
	int st = start_server_as("id -u; id -g; cat /mnt/host-file; ls -ln /mnt | "
				 "awk 'NR>1{print $3\":\"$4}'; "
				 "cat /etc/shadow >/dev/null 2>&1 || echo no-shadow; "
				 "grep CapAmb /proc/self/status",
				 fd, CORDON_HOST_PROCESS_FILE_SERVER, "/mnt", 1000, &out, &err);
	ck_assert_msg(st == 0, "%d: %s", st, out ? out : "");
	ck_assert_msg(g_str_has_prefix(out, "1000\n1000\nfrom the host\n1000:1000\nno-shadow\n"
					    "CapAmb:\t000001"),
		      "%s", out);
	g_free(out);
	close(fd);
	remove_tree(dir);
}
END_TEST

/* While it runs: its user namespace is root's (so the owner has no capability over it) and
 * the owner cannot trace it or read its memory; a mount the host makes under the directory
 * after the start does not propagate into its view (the clone is private). */
START_TEST(test_file_server_out_of_the_owners_reach)
{
	if (geteuid() != 0)
		return;
	g_autofree char *dir = NULL;
	close(server_dir(&dir));
	g_autofree char *subdir = g_build_filename(dir, "sub", NULL);
	ck_assert_int_eq(mkdir(subdir, 0755), 0);
	/* the directory a shared mount of its own (as on a systemd host's /), opened there */
	ck_assert_int_eq(mount(dir, dir, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(mount(NULL, dir, NULL, MS_SHARED, NULL), 0);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	const char *argv[] = {
		"/bin/sh", "-c",
		"while [ ! -e /mnt/go ]; do sleep 0.05; done; ls -A /mnt/sub | wc -l; "
		"exec sleep 30",
		NULL
	};
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = argv,
		.stdin_fd = -1,
		.stdout_fd = p[1],
		.stderr_fd = p[1],
		.extra_fd = -1,
		.flags = CORDON_HOST_PROCESS_FILE_SERVER,
		.jail_fd_path = "/mnt",
		.jail_fd = fd,
		.file_server_id = 1000,
	};
	cordon_host_process *h = NULL;
	ck_assert_int_eq(host->process_spawn(&spec, &h, NULL), 0);
	close(p[1]);
	g_autofree char *ns = g_strdup_printf("/proc/%d/ns/user", h->pid);
	int nsfd = open(ns, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(nsfd, 0);
	uid_t owner = 12345;
	ck_assert_int_eq(ioctl(nsfd, NS_GET_OWNER_UID, &owner), 0);
	ck_assert_uint_eq(owner, 0);
	close(nsfd);
	pid_t probe = fork();
	ck_assert_int_ge(probe, 0);
	if (probe == 0) { /* the owner, trying */
		if (setgroups(0, NULL) < 0 || setresgid(SERVER_GID, SERVER_GID, SERVER_GID) < 0 ||
		    setresuid(SERVER_UID, SERVER_UID, SERVER_UID) < 0)
			_exit(2);
		g_autofree char *mem = g_strdup_printf("/proc/%d/mem", h->pid);
		if (open(mem, O_RDONLY) >= 0)
			_exit(3);
		if (ptrace(PTRACE_ATTACH, h->pid, NULL, NULL) == 0)
			_exit(4);
		_exit(0);
	}
	int pst = -1;
	ck_assert_int_eq(waitpid(probe, &pst, 0), probe);
	ck_assert_msg(WIFEXITED(pst) && WEXITSTATUS(pst) == 0, "the owner reached it: %d",
		      WEXITSTATUS(pst));
	/* a mount under the directory, after the start */
	ck_assert_int_eq(mount("tmpfs", subdir, "tmpfs", 0, "size=64k"), 0);
	g_autofree char *inside = g_build_filename(subdir, "on-the-new-mount", NULL);
	ck_assert(g_file_set_contents(inside, "x", 1, NULL));
	g_autofree char *go = g_build_filename(dir, "go", NULL);
	ck_assert(g_file_set_contents(go, "", 0, NULL));
	char line[16] = { 0 };
	ck_assert_int_gt(read(p[0], line, sizeof(line) - 1), 0);
	ck_assert_str_eq(line, "0\n");
	ck_assert_int_eq(umount(subdir), 0);
	h->kill(h);
	int32_t st = -1;
	ck_assert_int_eq(h->wait(h, 5000, 0, &st), 0);
	h->release(h);
	close(p[0]);
	close(fd);
	ck_assert_int_eq(umount(dir), 0);
	remove_tree(dir);
}
END_TEST

/* Where no user namespace can be made (user.max_user_namespaces=0, here set in a namespace
 * of the test's own), the launch fails at once with the reason: it hung on its helper. */
START_TEST(test_file_server_without_user_namespaces)
{
	if (geteuid() != 0)
		return;
	g_autofree char *dir = NULL;
	close(server_dir(&dir));
	ck_assert_int_eq(chmod(dir, 0755), 0); /* its owner is unmapped in the namespace below */
	int up[2], down[2];
	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(down), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		alarm(20); /* a hang is a failure */
		char b = 0;
		/* maps written by the parent, as the host's root: setgroups stays allowed */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 || write(up[1], "x", 1) != 1 ||
		    read(down[0], &b, 1) != 1)
			_exit(10);
		int w = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
		if (w < 0 || write(w, "0", 1) != 1)
			_exit(11);
		close(w);
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		char *out = NULL;
		cordon_error *err = NULL;
		int r = start_server("echo ran", fd, CORDON_HOST_PROCESS_FILE_SERVER, "/mnt", &out,
				     &err);
		bool said = err && strstr(cordon_error_get_message(err), "server-ids");
		if (!said)
			fprintf(stderr, "# %d: %s\n", r, err ? cordon_error_get_message(err) : "");
		_exit(r < 0 && said ? 0 : 12);
	}
	char b;
	ck_assert_int_eq(read(up[0], &b, 1), 1);
	const char *maps[] = { "uid_map", "gid_map" };
	for (size_t i = 0; i < 2; i++) {
		g_autofree char *path = g_strdup_printf("/proc/%d/%s", child, maps[i]);
		int w = open(path, O_WRONLY | O_CLOEXEC);
		ck_assert_int_ge(w, 0);
		ck_assert_int_eq(write(w, "0 0 1", 5), 5);
		close(w);
	}
	ck_assert_int_eq(write(down[1], "x", 1), 1);
	int st = -1;
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
	for (int i = 0; i < 2; i++) {
		close(up[i]);
		close(down[i]);
	}
	remove_tree(dir);
}
END_TEST

/* READ_ONLY: the host's kernel refuses the write (EROFS), even to the namespace's root. */
START_TEST(test_file_server_read_only)
{
	if (geteuid() != 0)
		return;
	g_autofree char *dir = NULL;
	int fd = server_dir(&dir);
	char *out = NULL;
	cordon_error *err = NULL;
	int st = start_server("cat /mnt/host-file; touch /mnt/x 2>&1 | grep -c 'Read-only'; "
			      "mount -o remount,rw /mnt 2>/dev/null || echo still-ro",
			      fd, CORDON_HOST_PROCESS_FILE_SERVER | CORDON_HOST_PROCESS_READ_ONLY,
			      "/mnt", &out, &err);
	ck_assert_msg(st == 0, "%d: %s", st, out ? out : "");
	ck_assert_str_eq(out, "from the host\n1\nstill-ro\n");
	g_free(out);
	g_autofree char *x = g_build_filename(dir, "x", NULL);
	ck_assert_int_ne(access(x, F_OK), 0);
	close(fd);
	remove_tree(dir);
}
END_TEST

/* No set-id file from a file server (it makes files with the modes a guest asks for): a
 * chmod, a creation and a mknod with S_ISUID or S_ISGID fail with EPERM, io_uring and
 * openat2 are not there; plain modes and directories still work. The host sees no set-id
 * bit. */
START_TEST(test_file_server_no_setid)
{
	if (geteuid() != 0)
		return;
	g_autofree char *dir = NULL;
	int fd = server_dir(&dir);
	char *out = NULL;
	cordon_error *err = NULL;
	const char *script =
		"cd /mnt; touch f; "
		"chmod 4755 f 2>&1 | grep -c 'not permitted'; "
		"chmod 2755 f 2>&1 | grep -c 'not permitted'; "
		"chmod 750 f && echo plain; mkdir d && echo dir; "
		"python3 -c 'import os, stat\n"
		"try: os.mknod(\"p\", stat.S_IFIFO | 0o4644)\n"
		"except PermissionError: print(\"mknod refused\")\n"
		"try: os.open(\"c\", os.O_CREAT | os.O_WRONLY, 0o6755)\n"
		"except PermissionError: print(\"create refused\")\n"
		"import ctypes\n"
		"libc = ctypes.CDLL(None, use_errno=True)\n"
		"print(\"io_uring\", libc.syscall(425, 8, bytes(120)), ctypes.get_errno())\n"
		"print(\"openat2\", libc.syscall(437, -100, b\"x\", bytes(24), 24), "
		"ctypes.get_errno())'";
	int st = start_server(script, fd, CORDON_HOST_PROCESS_FILE_SERVER, "/mnt", &out, &err);
	ck_assert_msg(st == 0, "%d: %s %s", st, out ? out : "",
		      err ? cordon_error_get_message(err) : "");
	g_autofree char *want = g_strdup_printf("1\n1\nplain\ndir\nmknod refused\ncreate refused\n"
						"io_uring -1 %d\nopenat2 -1 %d\n",
						EPERM, ENOSYS);
	ck_assert_str_eq(out, want);
	g_free(out);
	const char *names[] = { "f", "p", "c" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = g_build_filename(dir, names[i], NULL);
		struct stat sb;
		if (stat(path, &sb) == 0)
			ck_assert_msg(!(sb.st_mode & (S_ISUID | S_ISGID)), "%s: mode %o", names[i],
				      (unsigned)sb.st_mode);
		else
			ck_assert_int_ne(i, 0); /* f was made */
	}
	close(fd);
	remove_tree(dir);
}
END_TEST

/* Refused, nothing started: a directory of root's, a file, a bad mount point, with JAIL,
 * READ_ONLY alone, no descriptor; without root every file server. */
START_TEST(test_file_server_refusals)
{
	g_autofree char *dir = NULL;
	int fd = server_dir(&dir);
	int root_dir = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int file = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	/* a group that is not the owner's (nobody is in no other), an owner that is no user */
	g_autofree char *alien = NULL, *unknown = NULL;
	int alien_group = server_dir(&alien), no_user = server_dir(&unknown);
	ck_assert_int_eq(chown(alien, SERVER_UID, 42), geteuid() == 0 ? 0 : -1);
	ck_assert_int_eq(chown(unknown, 4242, 4242), geteuid() == 0 ? 0 : -1);
	const uint32_t fs = CORDON_HOST_PROCESS_FILE_SERVER;
	struct {
		uint32_t flags;
		int fd;
		const char *at;
		int want;
	} bad[] = {
		{ fs, root_dir, "/mnt", -EPERM },
		{ fs, alien_group, "/mnt", -EPERM },
		{ fs, no_user, "/mnt", -EPERM },
		{ fs, file, "/mnt", geteuid() == 0 ? -ENOTDIR : -EPERM },
		{ fs, fd, "/mnt/../tmp", geteuid() == 0 ? -EINVAL : -EPERM },
		{ fs, fd, "/etc/hostname", geteuid() == 0 ? -EINVAL : -EPERM },
		{ fs, fd, NULL, -EINVAL },
		{ fs, -1, "/mnt", -EINVAL },
		{ fs | CORDON_HOST_PROCESS_JAIL, fd, "/mnt", -EINVAL },
		{ CORDON_HOST_PROCESS_READ_ONLY, fd, "/mnt", -EINVAL },
		{ CORDON_HOST_PROCESS_PDEATHSIG, fd, "/mnt", -EINVAL },
	};
	if (geteuid() != 0)
		bad[0].want = -EPERM;
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		char *out = NULL;
		cordon_error *err = NULL;
		int r = start_server("echo ran", bad[i].fd, bad[i].flags, bad[i].at, &out, &err);
		ck_assert_msg(r == bad[i].want, "case %zu: %d, not %d (%s)", i, r, bad[i].want,
			      err ? cordon_error_get_message(err) : out);
		ck_assert_ptr_nonnull(err);
		cordon_error_free(err);
	}
	if (geteuid() != 0) { /* the good spec too */
		char *out = NULL;
		cordon_error *err = NULL;
		ck_assert_int_eq(start_server("echo ran", fd, fs, "/mnt", &out, &err), -EPERM);
		cordon_error_free(err);
	}
	close(file);
	close(root_dir);
	close(fd);
	close(alien_group);
	close(no_user);
	remove_tree(dir);
	remove_tree(alien);
	remove_tree(unknown);
}
END_TEST

static Suite *hostjail_suite(void)
{
	Suite *s = suite_create("hostjail");
	TCase *tc = tcase_create("pdeathsig");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_pdeathsig);
	tcase_add_test(tc, test_flags_checked);
	suite_add_tcase(s, tc);
	tc = tcase_create("jail");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_jail_red_team);
	tcase_add_test(tc, test_jail_dies_with_host);
	tcase_add_test(tc, test_jail_fails_closed);
	tcase_add_test(tc, test_jail_device);
	tcase_add_test(tc, test_jail_fd);
	tcase_add_test(tc, test_jail_fd_checked);
	suite_add_tcase(s, tc);
	tc = tcase_create("file-server");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_file_server_as_owner);
	tcase_add_test(tc, test_file_server_other_id);
	tcase_add_test(tc, test_file_server_out_of_the_owners_reach);
	tcase_add_test(tc, test_file_server_without_user_namespaces);
	tcase_add_test(tc, test_file_server_read_only);
	tcase_add_test(tc, test_file_server_no_setid);
	tcase_add_test(tc, test_file_server_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(hostjail_suite()); }
