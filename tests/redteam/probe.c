/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-probe: runs inside a sandbox and tries to get out.
 *
 *   cordon-probe escapes     every escape of issue 4's red-team list, one
 *                            line each: "PASS <name>: <what happened>" when
 *                            refused as documented, "FAIL ..." otherwise;
 *                            exit status = number of FAILs
 *   cordon-probe surface     the kernel surface the seccomp list closes (new
 *                            namespaces, keyrings, io_uring, rare sockets...),
 *                            as escapes reports it (the container tiers)
 *   cordon-probe daemon F    leaves a double-forked, setsid'd process that
 *                            holds an flock on F, then exits
 *   cordon-probe hold F      holds an flock on F and sleeps (for timeouts)
 *   cordon-probe forkbomb    forks until refused; prints the count
 *   cordon-probe threads N   starts and joins N threads; "threads N ok"
 *   cordon-probe memhog MiB  allocates and touches MiB of memory
 *
 * Parameters come from the environment (set by the test):
 *   PROBE_HOME      the host user's home directory
 *   PROBE_SIBLING   a host directory next to the workspace, mode 0777
 *   PROBE_HOSTPID   the test process's pid on the host
 *   PROBE_PORT      a TCP port listening on the host's 127.0.0.1
 *   PROBE_FD        a file descriptor the test left open without CLOEXEC
 *   PROBE_SUID      a setuid-root copy of this program, or unset
 *   PROBE_TMPNAME   a unique name to create in /tmp (must not reach the host)
 *   PROBE_LANDLOCK  the Landlock ABI the host offers (0: none)
 * Like bubblewrap's try-syscall.c, each attempt reports the errno it got.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/openat2.h>
#include <termios.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static int failures;

static void verdict(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void verdict(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s %s: ", ok ? "PASS" : "FAIL", name);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	if (!ok)
		failures++;
}

/* A call that must fail with one of the expected errors. r < 0 with errno. */
static void refused(const char *name, long r, int e, int want1, int want2)
{
	if (r >= 0)
		verdict(false, name, "succeeded (returned %ld)", r);
	else
		verdict(e == want1 || (want2 && e == want2), name, "%s",
			strerrorname_np(e) ? strerrorname_np(e) : "?");
}

#define TRY(name, call, want1, want2) \
	do { \
		errno = 0; \
		long r_ = (long)(call); \
		refused((name), r_, errno, (want1), (want2)); \
	} while (0)

/* ---- filesystem --------------------------------------------------------------- */

static void try_write(const char *name, const char *dir)
{
	if (!dir || !*dir) {
		verdict(false, name, "no directory given");
		return;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/cordon-probe-%d", dir, (int)getpid());
	errno = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0) {
		close(fd);
		unlink(path);
		verdict(false, name, "created %s", path);
		return;
	}
	int e = errno;
	verdict(e == EROFS || e == EACCES || e == EPERM, name, "%s", strerrorname_np(e));
}

static void filesystem(void)
{
	try_write("write-host-home", getenv("PROBE_HOME"));
	try_write("write-etc", "/etc");
	try_write("write-usr", "/usr");
	/* The sibling is mode 0777 on the host: only the mount can refuse. */
	const char *sib = getenv("PROBE_SIBLING");
	char path[4096];
	snprintf(path, sizeof(path), "%s/x", sib ? sib : "/nonexistent");
	errno = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	verdict(fd < 0 && errno == EROFS, "write-sibling", "%s",
		fd >= 0 ? "created" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	/* Positive controls: the workspace and the private scratch work. */
	fd = open("probe-ws-file", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	verdict(fd >= 0, "write-workspace", "%s", fd >= 0 ? "ok" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	const char *tmpname = getenv("PROBE_TMPNAME");
	snprintf(path, sizeof(path), "/tmp/%s", tmpname ? tmpname : "cordon-probe-tmp");
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	verdict(fd >= 0, "write-private-tmp", "%s", fd >= 0 ? "ok" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	fd = open("/dev/shm/probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	verdict(fd >= 0, "write-private-shm", "%s", fd >= 0 ? "ok" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	verdict(fd >= 0 && write(fd, "x", 1) == 1, "write-dev-null", "%s",
		fd >= 0 ? "ok" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	struct stat st;
	verdict(stat("/dev/sda", &st) < 0 && stat("/dev/kmsg", &st) < 0 &&
			stat("/dev/mem", &st) < 0,
		"dev-minimal", "no disks, kmsg or mem in /dev");
	/* Masked and read-only kernel interfaces. */
	fd = open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC);
	verdict(fd < 0, "write-proc-sys", "%s",
		fd >= 0 ? "opened for write" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	char buf[64];
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	verdict(n <= 0, "proc-kallsyms-masked", "%zd bytes", n);
	if (fd >= 0)
		close(fd);
	/* /proc is a writable mount: only Landlock (read and execute beneath
	 * "/") refuses this write, so EACCES shows Landlock in force. */
	const char *ll = getenv("PROBE_LANDLOCK");
	if (ll && atoi(ll) > 0) {
		fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
		verdict(fd < 0 && errno == EACCES, "landlock-enforced", "%s",
			fd >= 0 ? "opened /proc/self/comm for write" : strerrorname_np(errno));
		if (fd >= 0)
			close(fd);
	} else {
		verdict(true, "landlock-enforced", "skipped: no Landlock on this kernel");
	}
	fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
	verdict(fd < 0, "write-max-user-namespaces", "%s",
		fd >= 0 ? "opened for write" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
}

/* ---- mounts and namespaces ------------------------------------------------------ */

static void new_namespaces(void);

static void namespaces(void)
{
	TRY("mount", mount("none", "/tmp", "tmpfs", 0, NULL), EPERM, 0);
	TRY("mount-bind", mount("/tmp", "/mnt", NULL, MS_BIND, NULL), EPERM, 0);
	TRY("mount-remount-rw", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL), EPERM, 0);
	TRY("umount2", umount2("/proc/kallsyms", MNT_DETACH), EPERM, 0);
	TRY("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"), EPERM, 0);
	TRY("chroot", chroot("/tmp"), EPERM, 0);
	TRY("fsopen", syscall(SYS_fsopen, "tmpfs", 0), EPERM, 0);
	TRY("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */), EPERM, 0);
	TRY("move_mount", syscall(SYS_move_mount, -1, "", AT_FDCWD, "/", 0), EPERM, 0);
	TRY("mount_setattr", syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, NULL, 0), EPERM, 0);
	new_namespaces();
	/* Calls newer than the filter's list fail as if the kernel lacked them
	 * (468, file_getattr in Linux 6.17, would say EBADF here otherwise). */
	TRY("unknown-syscall", syscall(468, -1, "", NULL, 0, 0), ENOSYS, 0);
}

/* Namespaces the work would create or join: what the seccomp list refuses
 * whatever the capabilities (a container's too). */
static void new_namespaces(void)
{
	TRY("unshare-user", unshare(CLONE_NEWUSER), EPERM, 0);
	TRY("unshare-mount", unshare(CLONE_NEWNS), EPERM, 0);
	TRY("unshare-net", unshare(CLONE_NEWNET), EPERM, 0);
	int nsfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	TRY("setns", setns(nsfd, 0), EPERM, 0);
	if (nsfd >= 0)
		close(nsfd);
	TRY("clone-newuser", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM, 0);
	TRY("clone-newpid", syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0), EPERM, 0);
	TRY("clone3", syscall(SYS_clone3, NULL, 0), ENOSYS, 0);
}

/* ---- other processes ------------------------------------------------------------- */

static void processes(void)
{
	pid_t sib = fork();
	if (sib == 0) {
		pause();
		_exit(0);
	}
	TRY("ptrace-sibling", ptrace(PTRACE_ATTACH, sib, 0, 0), EPERM, 0);
	char buf[16];
	struct iovec local = { buf, sizeof(buf) }, remote = { buf, sizeof(buf) };
	TRY("process_vm_readv", process_vm_readv(sib, &local, 1, &remote, 1, 0), EPERM, 0);
	TRY("process_vm_writev", process_vm_writev(sib, &local, 1, &remote, 1, 0), EPERM, 0);
	TRY("kcmp", syscall(SYS_kcmp, getpid(), sib, 0, 0, 0), EPERM, 0);
	kill(sib, SIGKILL);
	waitpid(sib, NULL, 0);

	/* pid 1 is the namespace init: its environment is not ours to read. */
	int fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
	verdict(fd < 0, "read-init-environ", "%s", fd >= 0 ? "opened" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	/* The host's processes are not in our pid namespace. */
	const char *hp = getenv("PROBE_HOSTPID");
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/environ", hp ? hp : "0");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	char env[256] = "";
	ssize_t n = fd >= 0 ? read(fd, env, sizeof(env) - 1) : -1;
	verdict(n < 0 || !strstr(env, "PROBE_HOSTPID"), "read-host-environ", "%s",
		fd >= 0 ? "opened a process of that pid (not the host's)" : strerrorname_np(errno));
	if (fd >= 0)
		close(fd);
	verdict(getpid() > 1 && getpid() < 100, "pid-namespace", "pid %d", (int)getpid());
}

/* ---- kernel attack surface ------------------------------------------------------------ */

static void kernel_surface(void)
{
	TRY("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0),
	    EPERM, 0);
	TRY("add_key", syscall(SYS_add_key, "user", "probe", "x", 1, KEY_SPEC_SESSION_KEYRING),
	    EPERM, 0);
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	TRY("bpf", syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)), EPERM, 0);
	struct perf_event_attr pe;
	memset(&pe, 0, sizeof(pe));
	pe.size = sizeof(pe);
	pe.type = PERF_TYPE_SOFTWARE;
	pe.config = PERF_COUNT_SW_CPU_CLOCK;
	TRY("perf_event_open", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0), EPERM, 0);
	TRY("userfaultfd", syscall(SYS_userfaultfd, 0), EPERM, 0);
	char params[120] = { 0 };
	TRY("io_uring_setup", syscall(SYS_io_uring_setup, 1, params), EPERM, 0);
	TRY("io_uring_enter", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0), EPERM, 0);
	TRY("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), EPERM, 0);
	TRY("init_module", syscall(SYS_init_module, NULL, 0, ""), EPERM, 0);
	TRY("finit_module", syscall(SYS_finit_module, -1, "", 0), EPERM, 0);
	TRY("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM, 0);
	TRY("reboot", syscall(SYS_reboot, 0, 0, 0, NULL), EPERM, 0);
	TRY("personality-read-implies-exec", personality(READ_IMPLIES_EXEC), EPERM, 0);
	TRY("personality-addr-no-randomize", personality(ADDR_NO_RANDOMIZE), EPERM, 0);
	TRY("personality-high-bits", syscall(SYS_personality, 0x100000000ul), EPERM, 0);
	errno = 0;
	long p = syscall(SYS_personality, 0xffffffffu);
	verdict(p >= 0, "personality-query-allowed", "%ld", p);
	/* Terminal injection: the filter answers before the tty layer does. */
	char c = 'x';
	TRY("ioctl-tiocsti", ioctl(0, TIOCSTI, &c), EPERM, 0);
	TRY("ioctl-tiocsti-high-bits", syscall(SYS_ioctl, 0, 0x100000000ul | TIOCSTI, &c), EPERM,
	    0);
	TRY("ioctl-tioclinux", ioctl(0, TIOCLINUX, &c), EPERM, 0);
	int tty = open("/dev/tty", O_RDWR | O_CLOEXEC);
	verdict(tty < 0, "no-controlling-tty", "%s",
		tty >= 0 ? "opened /dev/tty" : strerrorname_np(errno));
	if (tty >= 0)
		close(tty);
	/* Rare socket families autoload modules; vsock reaches the hypervisor. */
	TRY("socket-vsock", socket(AF_VSOCK, SOCK_STREAM, 0), EAFNOSUPPORT, 0);
	TRY("socket-packet", socket(AF_PACKET, SOCK_RAW, 0), EAFNOSUPPORT, 0);
	TRY("socket-alg", socket(AF_ALG, SOCK_SEQPACKET, 0), EAFNOSUPPORT, 0);
	TRY("socket-family-high-bits", syscall(SYS_socket, 0x100000002ul, SOCK_STREAM, 0),
	    EAFNOSUPPORT, 0);
}

/* Runs fn in a child; returns the signal that killed it, or 0. */
static int in_child(void (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0) {
		fn();
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void x32_getpid(void)
{
#if defined(__x86_64__)
	syscall(0x40000000 | SYS_getpid);
#endif
}

static void i386_getpid(void)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	(void)r;
#endif
}

static void foreign_abis(void)
{
#if defined(__x86_64__)
	int sig = in_child(x32_getpid);
	verdict(sig == SIGSYS, "x32-syscall", "child ended by signal %d (%s)", sig,
		sig ? strsignal(sig) : "none");
	sig = in_child(i386_getpid);
	/* Without ia32 emulation int 0x80 faults before seccomp sees it. */
	verdict(sig == SIGSYS || sig == SIGSEGV, "i386-syscall", "child ended by signal %d (%s)",
		sig, sig ? strsignal(sig) : "none");
#else
	verdict(true, "x32-syscall", "not an x86_64 host");
	verdict(true, "i386-syscall", "not an x86_64 host");
#endif
}

/* ---- privileges ---------------------------------------------------------------------- */

static void *thread_fn(void *arg) { return arg; }

static void privileges(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	bool cap0 = false, nnp = false, filt = false;
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "CapEff:\t0000000000000000", 24) == 0)
			cap0 = true;
		if (strncmp(line, "NoNewPrivs:\t1", 13) == 0)
			nnp = true;
		if (strncmp(line, "Seccomp:\t2", 10) == 0)
			filt = true;
	}
	if (f)
		fclose(f);
	verdict(cap0, "capabilities-none", "CapEff %s", cap0 ? "0" : "not 0");
	verdict(nnp, "no-new-privs", "%d", nnp);
	verdict(filt, "seccomp-filter", "%s", filt ? "mode 2" : "absent");
	verdict(getuid() != 0 && geteuid() != 0, "not-root-inside", "uid %d", (int)getuid());
	/* libc's pthread_create tries clone3 first: ENOSYS must make it fall back. */
	pthread_t t;
	int r = pthread_create(&t, NULL, thread_fn, NULL);
	if (r == 0)
		pthread_join(t, NULL);
	verdict(r == 0, "threads-work", "%s", r == 0 ? "ok" : strerror(r));
	const char *suid = getenv("PROBE_SUID");
	if (suid && *suid) {
		int pipefd[2];
		if (pipe(pipefd) == 0) {
			pid_t pid = fork();
			if (pid == 0) {
				dup2(pipefd[1], 1);
				execl(suid, suid, "whoami", NULL);
				_exit(127);
			}
			close(pipefd[1]);
			char out[64] = "";
			ssize_t n = read(pipefd[0], out, sizeof(out) - 1);
			close(pipefd[0]);
			waitpid(pid, NULL, 0);
			int euid = n > 0 ? atoi(out) : -1;
			verdict(euid > 0, "setuid-binary", "ran with euid %d", euid);
		}
	} else {
		verdict(true, "setuid-binary", "skipped: no setuid-root binary provided");
	}
}

/* ---- network --------------------------------------------------------------------------- */

static void network(void)
{
	const char *port = getenv("PROBE_PORT");
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port ? atoi(port) : 1) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	errno = 0;
	int r = s >= 0 ? connect(s, (struct sockaddr *)&a, sizeof(a)) : -1;
	/* Refused by the network namespace (the host's listener is not in it),
	 * not by a rule that would refuse the sandbox's own loopback too. */
	verdict(r < 0 && errno == ECONNREFUSED, "connect-host-loopback", "%s",
		r == 0 ? "connected" : strerrorname_np(errno));
	if (s >= 0)
		close(s);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	a.sin_port = htons(53);
	inet_pton(AF_INET, "8.8.8.8", &a.sin_addr);
	static const char query[] = "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
				    "\x07"
				    "example"
				    "\x03"
				    "com"
				    "\x00\x00\x01\x00\x01";
	errno = 0;
	ssize_t n = s >= 0 ? sendto(s, query, sizeof(query) - 1, 0, (struct sockaddr *)&a,
				    sizeof(a))
			   : -1;
	verdict(n < 0, "dns-udp", "%s", n >= 0 ? "sent" : strerrorname_np(errno));
	if (s >= 0)
		close(s);
	FILE *f = fopen("/proc/net/dev", "re");
	char line[256];
	int ifaces = 0;
	bool only_lo = true;
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		ifaces++;
		char *name = line;
		while (*name == ' ')
			name++;
		if (strncmp(name, "lo:", 3) != 0)
			only_lo = false;
	}
	if (f)
		fclose(f);
	verdict(only_lo, "no-network-interfaces", "%d interface(s), loopback only: %d", ifaces,
		only_lo);
}

/* ---- descriptors ------------------------------------------------------------------------- */

static void descriptors(void)
{
	const char *pfd = getenv("PROBE_FD");
	int fd = pfd ? atoi(pfd) : 77;
	errno = 0;
	int r = fcntl(fd, F_GETFD);
	verdict(r < 0 && errno == EBADF, "inherited-fd", "fd %d: %s", fd,
		r >= 0 ? "open" : strerrorname_np(errno));
	int open_fds = 0;
	for (int i = 3; i < 4096; i++)
		if (fcntl(i, F_GETFD) >= 0)
			open_fds++;
	verdict(open_fds == 0, "only-stdio-inherited", "%d descriptor(s) above 2", open_fds);
}

/* ---- other modes ----------------------------------------------------------------------------- */

static int lock_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		return -1;
	return fd;
}

static int daemon_mode(const char *path)
{
	char ready[4200];
	snprintf(ready, sizeof(ready), "%s.ready", path);
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		if (lock_file(path) < 0)
			_exit(1);
		int r = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (r >= 0)
			close(r);
		for (;;)
			pause();
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 500 && access(ready, F_OK) < 0; i++)
		usleep(10000);
	printf("daemon %s\n", access(ready, F_OK) == 0 ? "holding" : "failed");
	return access(ready, F_OK) == 0 ? 0 : 1;
}

static int hold_mode(const char *path)
{
	if (lock_file(path) < 0)
		return 1;
	printf("holding\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* Starts n threads and joins them (pthread_create takes clone3 first). */
static int threads_mode(long n)
{
	pthread_t t[256];
	long started = 0;
	int r = 0;
	while (started < n && started < 256 &&
	       (r = pthread_create(&t[started], NULL, thread_fn, NULL)) == 0)
		started++;
	for (long i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	printf("threads %ld %s\n", started, r ? strerrorname_np(r) : "ok");
	return started == n ? 0 : 1;
}

static int forkbomb(void)
{
	int count = 0, err = 0;
	for (;;) {
		pid_t pid = fork();
		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid < 0) {
			err = errno;
			break;
		}
		if (++count >= 100000)
			break;
	}
	printf("forks %d %s\n", count, err ? strerrorname_np(err) : "none");
	fflush(stdout);
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	return err ? 0 : 1;
}

static int memhog(long mib)
{
	long got = 0;
	for (; got < mib; got += 16) {
		char *p = malloc(16u << 20);
		if (!p) {
			printf("memhog refused after %ld MiB: ENOMEM\n", got);
			return 3;
		}
		memset(p, 1, 16u << 20);
		printf("memhog %ld MiB\n", got + 16);
		fflush(stdout);
	}
	printf("memhog got all %ld MiB\n", mib);
	return 0;
}

/* ---- set-id files (issue 10, item 1) ---------------------------------------------- */

/* One file in dir made set-id by each call that takes a mode: none may end
 * with a set-id bit on the file (refused, or the bit dropped). openat2's
 * mode sits in a struct, which a seccomp filter cannot read. */
static void setid_one(const char *dir, const char *name, int how)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/setid-%s", dir, name);
	unlink(path);
	long r = -1;
	errno = 0;
	if (how == 0) { /* chmod */
		close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755));
		r = syscall(SYS_chmod, path, 04755);
	} else if (how == 1) { /* open(O_CREAT) with the bits */
		r = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_CLOEXEC, 06755);
	} else if (how == 2 || how == 3) { /* openat2(O_CREAT), setuid or setgid */
		struct open_how oh = { .flags = O_WRONLY | O_CREAT | O_CLOEXEC,
				       .mode = how == 2 ? 04755 : 02775 };
		r = syscall(SYS_openat2, AT_FDCWD, path, &oh, sizeof(oh));
	} else { /* mknod */
		r = syscall(SYS_mknodat, AT_FDCWD, path, S_IFREG | 04755, 0);
	}
	int e = errno;
	if (r >= 0 && how >= 1 && how <= 3)
		close((int)r);
	struct stat st;
	if (lstat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		verdict(false, name, "%s is mode %04o", path, (unsigned)(st.st_mode & 07777));
	else
		verdict(true, name, "%s",
			r < 0 ? (strerrorname_np(e) ? strerrorname_np(e) : "?") : "bits dropped");
	unlink(path);
}

/* Connects to a host's unix socket by path and says so: the host is
 * visible read-only, and a read-only mount does not stop connect(2). */
static int connect_mode(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		printf("connect %s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
		return 0;
	}
	(void)!write(fd, "from the sandbox", 16);
	printf("connect CONNECTED\n");
	close(fd);
	return 1;
}

static int setid_mode(const char *dir)
{
	umask(0);
	setid_one(dir, "chmod", 0);
	setid_one(dir, "open-creat", 1);
	setid_one(dir, "openat2-setuid", 2);
	setid_one(dir, "openat2-setgid", 3);
	setid_one(dir, "mknod", 4);
	printf("failures %d\n", failures);
	return failures;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "escapes") == 0) {
		privileges();
		filesystem();
		namespaces();
		processes();
		kernel_surface();
		foreign_abis();
		network();
		descriptors();
		printf("failures %d\n", failures);
		return failures > 100 ? 100 : failures;
	}
	/* the seccomp list's part, for the container tiers (whose profile is
	 * generated from it; calls newer than the list are the BPF's alone) */
	if (argc >= 2 && strcmp(argv[1], "surface") == 0) {
		new_namespaces();
		kernel_surface();
		printf("failures %d\n", failures);
		return failures > 100 ? 100 : failures;
	}
	if (argc >= 2 && strcmp(argv[1], "whoami") == 0) {
		printf("%d\n", (int)geteuid());
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "daemon") == 0)
		return daemon_mode(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "hold") == 0)
		return hold_mode(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "threads") == 0)
		return threads_mode(atol(argv[2]));
	if (argc >= 3 && strcmp(argv[1], "connect") == 0)
		return connect_mode(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "setid") == 0)
		return setid_mode(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "forkbomb") == 0)
		return forkbomb();
	if (argc >= 3 && strcmp(argv[1], "memhog") == 0)
		return memhog(atol(argv[2]));
	fprintf(stderr, "usage: cordon-probe escapes|surface|setid DIR|connect PATH|daemon "
			"FILE|hold FILE|forkbomb|memhog MIB\n");
	return 2;
}
