/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-agent: the small static program that serves runs and file operations inside a
 * sandbox, as its pid 1. The container tiers bind-mount it read-only into every session
 * container (AGENT_PATH); the microVM tiers will run it as the guest's init. Static, so any
 * image works, even one without a libc or a shell; it runs inside the sandbox, so file
 * operations are resolved by the sandbox's own mount namespace and never on the host. They
 * are the local driver's own code (common/pathres.c, common/fsops.c, common/fserror.c), so
 * every tier confines, lists, orders and refuses paths the same way.
 *
 *   idle                     pid 1 of the session container: reaps, exits on SIGTERM
 *   session                  pid 1 of a session container started attached (`run -i`):
 *                            reaps, and runs the work the host sends as request frames
 *                            on its stdin (protocol.h), one run at a time; EOF ends it
 *   run [opts] -- ARGV...    runs the work (protocol.h), kills its whole subtree at the
 *                            end, on timeout and on cancel; opts: --timeout-ms N,
 *                            --cap N (bytes per stream), --workdir REL
 *   kill PID                 asks the one-shot `run` agent PID to cancel its work
 *   read PATH MAX | write PATH | glob PATTERN | walk DIR
 *                            file operations beneath AGENT_SANDBOX_ROOT
 *   probe                    prints "kernel=RELEASE uid=N seccomp=0|1" as plain text (the
 *                            trial run; seccomp=1: the container's profile refuses calls)
 *
 * Everything it says goes out as frames on stdout; its exit code only says
 * whether the protocol was followed.
 */
#include "config.h"

#include "errcodes.h"
#include "fserror.h"
#include "guest.h"
#include "wsarc.h"
#include "fsops.h"
#include "pathres.h"
#include "protocol.h"
#include "relay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define KILL_MAX_PROCS 8192
/* A terminal run's end: how long its master stays quiet after the work is gone. */
#define TTY_QUIET_MS 100

extern char **environ;

/* pid 1 of a microVM guest (agent/guest.c): the channel is a virtio port */
static bool in_guest;
/* A second session of a guest's (extra_session_serve): no identity, no relays. */
static bool extra_session;
/* The guest's first request after its identity is the workspace's unpack, run as root. */
static bool unpack_allowed;

/* ---- frames ------------------------------------------------------------------- */

/* All of len bytes through read or write, across short transfers and
 * EINTR; false at EOF or on an error. */
static bool transfer_all(ssize_t (*op)(int, void *, size_t), int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = op(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static ssize_t write_op(int fd, void *buf, size_t len) { return write(fd, buf, len); }

static bool write_all(int fd, const void *buf, size_t len)
{
	return transfer_all(write_op, fd, (void *)buf, len);
}

static bool read_full(int fd, void *buf, size_t len) { return transfer_all(read, fd, buf, len); }

/* False when the host is gone (stdout broken): the caller stops the work. */
static bool frame(uint8_t type, const void *data, size_t len)
{
	const char *p = data;
	/* a virtio port's write blocks for ever once the host is gone (guest.h) */
	if (in_guest && !guest_port_writable(STDOUT_FILENO))
		return false;
	do {
		size_t n = len > AGENT_FRAME_MAX ? AGENT_FRAME_MAX : len;
		uint8_t hdr[AGENT_FRAME_HEADER];
		agent_frame_header(hdr, type, (uint32_t)n);
		struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)p, n } };
		size_t total = sizeof(hdr) + n;
		ssize_t w = writev(STDOUT_FILENO, iov, 2);
		if (w < 0 && errno != EINTR)
			return false;
		if (w < 0)
			w = 0;
		if ((size_t)w < total) {
			/* finish a short write byte-exactly */
			size_t done = (size_t)w;
			if (done < sizeof(hdr)) {
				if (!write_all(STDOUT_FILENO, hdr + done, sizeof(hdr) - done))
					return false;
				done = sizeof(hdr);
			}
			if (!write_all(STDOUT_FILENO, p + (done - sizeof(hdr)),
				       n - (done - sizeof(hdr))))
				return false;
		}
		p += n;
		len -= n;
	} while (len > 0);
	return true;
}

static void frame_text(uint8_t type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void frame_text(uint8_t type, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	/* ap is started on the line above: clang-analyzer reports it uninitialized with no path
	 * to show (a false positive, first seen once the relay's code joined this file) */
	int n = vsnprintf(buf, sizeof(buf), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	frame(type, buf, (size_t)n);
}

/* Reports a failed operation: "<code> <errno> <message>", exit status 1. */
static int fail(const char *code, int errnum, const char *what)
{
	frame_text(AGENT_FRAME_ERROR, "%s %d %s: %s", code, errnum, what, strerror(errnum));
	return 1;
}

/* ---- paths beneath the sandbox root --------------------------------------------- */

static int open_root(void) { return open(AGENT_SANDBOX_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

/* A failed file operation, described as the local driver describes it (common/fserror.c). */
static int fail_fs(int r, const char *op, const char *path)
{
	fserror e;
	fserror_describe(r, op, path, &e);
	frame_text(AGENT_FRAME_ERROR, "%s %d %s", e.code, e.errnum, e.message);
	return 1;
}

/* ---- idle: pid 1 ------------------------------------------------------------------ */

static int cmd_idle(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig == SIGCHLD) {
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		} else if (sig > 0) {
			return 0;
		}
	}
}

/* ---- run ---------------------------------------------------------------------------- */

typedef struct proc_entry {
	pid_t pid, ppid;
	bool live;
} proc_entry;

static size_t scan_procs(proc_entry *out, size_t max)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%.32s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* "pid (comm) state ppid ...": comm may hold spaces and parens */
		char *rp = strrchr(buf, ')');
		char state;
		int ppid;
		if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
			continue;
		out[n].pid = atoi(e->d_name);
		out[n].ppid = ppid;
		out[n].live = state != 'Z' && state != 'X';
		n++;
	}
	closedir(d);
	return n;
}

/* The session's relays (agent/relay.c): our children that outlive every run. */
#define RELAYS_MAX 16
static pid_t relay_pids[RELAYS_MAX];

static bool is_relay(pid_t pid)
{
	for (size_t i = 0; i < RELAYS_MAX; i++)
		if (relay_pids[i] == pid)
			return pid > 0;
	return false;
}

/* A relay that ended: its pid may be the work's next, which must not be spared. */
static void relay_reaped(pid_t pid)
{
	for (size_t i = 0; i < RELAYS_MAX; i++)
		if (relay_pids[i] == pid)
			relay_pids[i] = 0;
}

static void reap_children(void)
{
	pid_t w;
	while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
		relay_reaped(w);
}

/* SIGKILLs every live descendant of this process until none is left, except the
 * session's relays and their connections. As a subreaper we inherit orphans, so a
 * daemonising grandchild (double fork, setsid) is still our descendant; a process group
 * kill alone would miss it. */
static void kill_tree(pid_t pgid)
{
	static proc_entry procs[KILL_MAX_PROCS];
	static bool desc[KILL_MAX_PROCS];
	if (pgid > 0)
		kill(-pgid, SIGKILL);
	pid_t self = getpid();
	for (int pass = 0; pass < 100; pass++) {
		size_t n = scan_procs(procs, KILL_MAX_PROCS);
		memset(desc, 0, sizeof(desc));
		bool grew = true;
		while (grew) {
			grew = false;
			for (size_t i = 0; i < n; i++) {
				if (desc[i])
					continue;
				if (is_relay(procs[i].pid))
					continue;
				bool d = procs[i].ppid == self;
				for (size_t j = 0; !d && j < n; j++)
					d = desc[j] && procs[j].pid == procs[i].ppid;
				if (d) {
					desc[i] = true;
					grew = true;
				}
			}
		}
		int killed = 0;
		for (size_t i = 0; i < n; i++)
			if (desc[i] && procs[i].live && kill(procs[i].pid, SIGKILL) == 0)
				killed++;
		if (!killed)
			return;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

/* A guest has no cgroup of its own: the kernel's count is the VM's alone (a container's
 * /proc/vmstat is the host's, hence the cgroup files first there). */
static long long oom_kills(void)
{
	static const char *const files[] = { "/sys/fs/cgroup/memory/memory.oom_control",
					     "/sys/fs/cgroup/memory.events", NULL };
	static const char *const guest_files[] = { "/proc/vmstat", NULL };
	const char *const *from = in_guest ? guest_files : files;
	for (size_t i = 0; from[i]; i++) {
		FILE *f = fopen(from[i], "re");
		if (!f)
			continue;
		char key[64];
		long long v;
		while (fscanf(f, "%63s %lld", key, &v) == 2) {
			if (strcmp(key, "oom_kill") == 0) {
				fclose(f);
				return v;
			}
		}
		fclose(f);
	}
	return -1;
}

/* The "KEY=VALUE" entries of NUL-separated strings in [p, end), pointing
 * into them (an entry without '=' is dropped, and so is a last one without
 * its NUL); NULL-terminated, or NULL without memory. */
static char **split_env(char *p, const char *end)
{
	size_t count = 0;
	for (const char *q = p; q < end; q++)
		count += *q == '\0';
	char **envp = calloc(count + 1, sizeof(char *));
	size_t n = 0;
	while (envp && p < end) {
		char *z = memchr(p, '\0', (size_t)(end - p));
		if (!z)
			break;
		if (strchr(p, '='))
			envp[n++] = p;
		p = z + 1;
	}
	return envp;
}

/* Reads "<n>\n" and n bytes of NUL-separated KEY=VALUE from stdin, byte-exactly:
 * everything after it is the work's stdin, which the work inherits. */
static char **read_env(void)
{
	char num[16];
	size_t i = 0;
	for (;;) {
		char c;
		ssize_t r = read(STDIN_FILENO, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 1 || i >= sizeof(num) - 1)
			return NULL;
		if (c == '\n')
			break;
		if (c < '0' || c > '9')
			return NULL;
		num[i++] = c;
	}
	num[i] = '\0';
	size_t len = strtoul(num, NULL, 10);
	if (i == 0 || len > AGENT_ENV_MAX)
		return NULL;
	char *block = calloc(1, len + 1);
	size_t got = 0;
	while (block && got < len) {
		ssize_t r = read(STDIN_FILENO, block + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(block);
			return NULL;
		}
		got += (size_t)r;
	}
	if (!block)
		return NULL;
	/* NUL-terminated (calloc'ed one longer): a last entry without its own
	 * NUL still counts, as it always did */
	char **envp = split_env(block, block + len + 1);
	if (!envp)
		free(block);
	/* envp points into block, which lives as long as this one-run process. */
	// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
	return envp;
}

typedef struct run_opts {
	long long timeout_ms; /* 0: none (the host always sets one) */
	long long cap;        /* bytes per stream forwarded; 0: unlimited */
	const char *workdir;
	char **argv;
	int tty_master; /* > 0: a terminal run (TTY_RUN), the pseudo-terminal's master */
} run_opts;

typedef struct stream {
	int fd;
	uint8_t type;
	long long sent;
	bool truncated;
} stream;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Forwards what the work wrote, up to the cap; beyond it, drains and drops so
 * the work never blocks on a full pipe (the core caps too; this spares the
 * engine's stream the flood). False at EOF. */
static bool pump(stream *s, long long cap, bool *host_gone)
{
	char buf[AGENT_FRAME_MAX];
	ssize_t n = read(s->fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	long long fwd = n;
	if (cap > 0 && s->sent + fwd > cap) {
		fwd = cap > s->sent ? cap - s->sent : 0;
		s->truncated = true;
	}
	s->sent += fwd;
	if (fwd > 0 && !*host_gone && !frame(s->type, buf, (size_t)fwd))
		*host_gone = true;
	return true;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
	p[0] = p[1] = -1;
}

static int tty_peer(int master);

/* The work's stdout and stderr: two pipes, or, for a terminal run, the terminal's peer twice
 * (out[1], err[1]; also its stdin) and a copy of the master to read (out[0]; err[0] -1). */
static int work_stdio(const run_opts *o, int out[2], int err[2])
{
	if (o->tty_master <= 0)
		return pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ? -1 : 0;
	out[1] = tty_peer(o->tty_master);
	err[1] = out[1] >= 0 ? fcntl(out[1], F_DUPFD_CLOEXEC, 3) : -1;
	out[0] = err[1] >= 0 ? fcntl(o->tty_master, F_DUPFD_CLOEXEC, 3) : -1;
	return out[0] < 0 ? -1 : 0;
}

/* in_fd: the work's stdin, or -1 to let it inherit ours (a terminal run: the terminal). */
static int spawn_work(const run_opts *o, char **envp, int wdfd, int in_fd, int out[2], int err[2],
		      pid_t *ret_pid)
{
	int ep[2] = { -1, -1 };
	out[0] = out[1] = err[0] = err[1] = -1;
	if (work_stdio(o, out, err) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		int e = errno;
		close_pair(out);
		close_pair(err);
		close_pair(ep);
		return -e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close_pair(out);
		close_pair(err);
		close_pair(ep);
		return -e;
	}
	if (pid == 0) {
		setsid();
		signal(SIGPIPE, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* a terminal run: the terminal is the new session's controlling terminal, and the
		 * work's the foreground group (Linux makes it so at TIOCSCTTY; gVisor does not) */
		if (o->tty_master > 0 &&
		    (ioctl(out[1], TIOCSCTTY, 0) < 0 || tcsetpgrp(out[1], getpid()) < 0))
			goto fail;
		if (o->tty_master > 0)
			in_fd = out[1];
		if (in_fd >= 0)
			dup2(in_fd, STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		if (fchdir(wdfd) < 0 || (in_guest && guest_work_limits() < 0))
			goto fail;
		/* execvp searches the work's PATH, not ours */
		environ = envp;
		execvp(o->argv[0], o->argv);
	fail:;
		int e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0) {
			/* nothing left to tell */
		}
		_exit(127);
	}
	close(out[1]);
	if (err[1] >= 0)
		close(err[1]);
	close(ep[1]);
	out[1] = err[1] = -1;
	int e = 0;
	ssize_t r;
	do
		r = read(ep[0], &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	close(ep[0]);
	*ret_pid = pid;
	return r == sizeof(e) ? -e : 0;
}

static int parse_run(int argc, char **argv, run_opts *o)
{
	int i = 0;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			return -1;
		if (strcmp(argv[i], "--timeout-ms") == 0)
			o->timeout_ms = atoll(argv[++i]);
		else if (strcmp(argv[i], "--cap") == 0)
			o->cap = atoll(argv[++i]);
		else if (strcmp(argv[i], "--workdir") == 0)
			o->workdir = argv[++i];
		else
			return -1;
	}
	if (i >= argc)
		return -1;
	o->argv = argv + i;
	return 0;
}

/* One request frame from the host (session mode). Returns 1 with the frame
 * (payload NUL-terminated, malloc'd), 0 at EOF between frames, -1 on a
 * malformed or oversized frame or a read error. */
static int read_request(int fd, uint8_t *ret_type, char **ret_payload, uint32_t *ret_len,
			uint32_t max)
{
	uint8_t hdr[AGENT_FRAME_HEADER];
	ssize_t n;
	do
		n = read(fd, hdr, 1);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	if (n < 0 || !read_full(fd, hdr + 1, sizeof(hdr) - 1))
		return -1;
	uint32_t len = agent_frame_length(hdr);
	if (len > max)
		return -1;
	char *payload = malloc((size_t)len + 1);
	if (!payload || !read_full(fd, payload, len)) {
		free(payload);
		return -1;
	}
	payload[len] = '\0';
	*ret_type = hdr[0];
	*ret_payload = payload;
	*ret_len = len;
	return 1;
}

/* An engine CLI whose exec'd process exits while the host still streams its stdin drops
 * output written just before the exit (podman: measured, 8 of 20 `yes | podman exec -i C sh
 * -c 'echo x'` print nothing), our last frames included. So after the answer we stay, reading
 * and dropping what the host still sends, until its EOF or for LINGER_MS: the frames are
 * forwarded meanwhile, and a host that gave all its input and closed costs nothing. */
#define LINGER_MS 250
static void linger_on_stdin(int fd)
{
	char buf[4096];
	long long until = now_ms() + LINGER_MS;
	for (long long left; (left = until - now_ms()) > 0;) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			break;
	}
	close(fd);
}

/* ---- a terminal run (TTY_RUN) ----------------------------------------------------- */

/* A pseudo-terminal of the sandbox's own, of size ws: its master (the peer is opened for
 * the work by tty_peer), or -errno. A guest's devpts is mounted at boot (guest.c), before
 * the agent drops to the work's uid: mounting it here, on the first terminal run, fails. */
static int tty_open(const struct winsize *ws)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ioctl(m, TIOCSWINSZ, ws) < 0) {
		int e = errno;
		close(m);
		return -e;
	}
	return m;
}

/* The terminal's peer, by the master itself (no path lookup), else by its name. */
static int tty_peer(int master)
{
	int s = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	char name[64];
	if (s < 0 && ptsname_r(master, name, sizeof(name)) == 0)
		s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	return s;
}

/* Input the host typed (TTY_IN frames) that the terminal has not taken yet: while some is
 * pending, no further request is read, so a work that reads no input backs up the host's
 * channel, not our memory. One run at a time: one buffer. */
static struct {
	char data[AGENT_FRAME_MAX];
	size_t len, off;
} tty_in;

/* The job control a terminal's line discipline does, where the agent has to do it: gVisor's
 * (runsc 20221219, measured) neither signals the foreground group for a typed signal
 * character (ISIG: ^C, ^\, ^Z) nor sends SIGWINCH on a resize, and its master cannot tell the
 * foreground group (TIOCGPGRP: ENOTTY). That is how it is told apart from Linux's, which does
 * both itself (doing it again would signal twice): on such a terminal the agent signals the
 * work's process group, the one it made foreground (a job-control shell inside that moves the
 * foreground to another group is not followed: its own group gets the signal; gVisor's
 * /proc/PID/stat has no tpgid to follow it by). */
static struct {
	bool emulate;
	pid_t pgrp;
} tty_job;

static void tty_job_begin(int master, pid_t work)
{
	tty_job.pgrp = work;
	tty_job.emulate = tcgetpgrp(master) < 0;
}

/* The signal a typed byte stands for on terminal t, 0 for none, -1 for a byte that is only
 * consumed: ^Z. The work's group is orphaned (the agent is in another session), where Linux
 * ignores a terminal stop by default and gVisor stops the group (measured: a setsid'd shell's
 * kill -TSTP $$ stops it under runsc, not under runc), which would hang the run. */
static int tty_signal_char(const struct termios *t, unsigned char c)
{
	static const struct {
		int cc, sig;
	} chars[] = { { VINTR, SIGINT }, { VQUIT, SIGQUIT }, { VSUSP, -1 } };
	for (size_t i = 0; i < sizeof(chars) / sizeof(chars[0]); i++)
		if (t->c_cc[chars[i].cc] != _POSIX_VDISABLE && c == t->c_cc[chars[i].cc])
			return chars[i].sig;
	return 0;
}

/* Typed bytes into tty_in: where the agent does the job control, a signal character signals
 * the work's group instead of reaching the terminal (as Linux's line discipline consumes it). */
static void tty_input_take(int master, const char *data, uint32_t len)
{
	struct termios t;
	bool signals = tty_job.emulate && tcgetattr(master, &t) == 0 && (t.c_lflag & ISIG);
	size_t n = 0;
	for (uint32_t i = 0; i < len; i++) {
		int sig = signals ? tty_signal_char(&t, (unsigned char)data[i]) : 0;
		if (sig > 0)
			kill(-tty_job.pgrp, sig);
		else if (sig == 0)
			tty_in.data[n++] = data[i];
	}
	tty_in.len = n;
	tty_in.off = 0;
}

static void tty_input_flush(int master)
{
	ssize_t w = write(master, tty_in.data + tty_in.off, tty_in.len - tty_in.off);
	if (w > 0)
		tty_in.off += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		tty_in.off = tty_in.len; /* the terminal is gone: the work ended */
}

/* "ROWS COLS": the work gets SIGWINCH from its terminal. */
static bool tty_resize(int master, const char *text)
{
	unsigned rows, cols;
	if (sscanf(text, "%u %u", &rows, &cols) != 2 || !rows || !cols || rows > 0xffff ||
	    cols > 0xffff)
		return false;
	struct winsize old = { 0 },
		       ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
	ioctl(master, TIOCGWINSZ, &old);
	ioctl(master, TIOCSWINSZ, &ws);
	/* Linux's terminal sends SIGWINCH on a change of size; where it does not, we do */
	if (tty_job.emulate && (old.ws_row != ws.ws_row || old.ws_col != ws.ws_col))
		kill(-tty_job.pgrp, SIGWINCH);
	return true;
}

/* One request on the control stream while the work runs: 1 a cancel, 0 terminal input or a
 * resize (a terminal run only), -1 the host hung up or spoke out of turn. */
static int ctl_request(const run_opts *o, int ctl_fd)
{
	uint8_t type = 0;
	char *payload = NULL;
	uint32_t len;
	bool tty = o->tty_master > 0;
	int q = read_request(ctl_fd, &type, &payload, &len, tty ? AGENT_FRAME_MAX : 0);
	int r = q > 0 && type == AGENT_REQ_CANCEL ? 1 : -1;
	if (q > 0 && tty && type == AGENT_REQ_TTY_IN) {
		tty_input_take(o->tty_master, payload, len);
		r = 0;
	} else if (q > 0 && tty && type == AGENT_REQ_TTY_RESIZE) {
		r = tty_resize(o->tty_master, payload) ? 0 : -1;
	}
	free(payload);
	return r;
}

/* Runs the work and reports its end (STATUS, or ERROR when it could not
 * start). in_fd: the work's stdin, or -1 (it inherits ours, and we then
 * let go of it). ctl_fd: the session's request stream, watched for CANCEL
 * and EOF (*ret_hangup: the host is gone), or -1. sfd: a signalfd of the
 * blocked set (SIGCHLD, and the cancel signals). */
static int run_job(const run_opts *o, char **envp, int in_fd, int ctl_fd, int sfd, bool *ret_hangup)
{
	int rootfd = open_root();
	if (rootfd < 0)
		return fail(ERRC(io_error), errno, AGENT_SANDBOX_ROOT);
	int wdfd = rootfd;
	if (o->workdir && *o->workdir && strcmp(o->workdir, ".") != 0) {
		wdfd = pathres_open(rootfd, o->workdir, O_PATH | O_DIRECTORY, 0);
		if (wdfd < 0) {
			close(rootfd);
			return fail_fs(wdfd, "workdir", o->workdir);
		}
	}
	long long oom_before = oom_kills();

	int out[2], err[2];
	pid_t pid = -1;
	int r = spawn_work(o, envp, wdfd, in_fd, out, err, &pid);
	if (wdfd != rootfd)
		close(wdfd);
	close(rootfd);
	if (r < 0) {
		kill_tree(pid);
		if (pid > 0)
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		if (out[0] >= 0)
			close(out[0]);
		if (err[0] >= 0)
			close(err[0]);
		frame_text(AGENT_FRAME_ERROR, "exec_failed %d %s: %s", -r, o->argv[0],
			   strerror(-r));
		return 1;
	}
	frame_text(AGENT_FRAME_STARTED, "%d", (int)pid);
	/* One-shot: the work's stdin is ours, which it holds now; we read nothing of it while
	 * it runs. A copy stays open until our answer is out (see linger_on_stdin). */
	int held_in = -1;
	if (in_fd < 0) {
		held_in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			close(devnull);
		}
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK); /* a terminal's master too: its copy shares the flag */
	if (err[0] >= 0)
		fcntl(err[0], F_SETFL, O_NONBLOCK);
	tty_in.len = tty_in.off = 0;
	if (o->tty_master > 0)
		tty_job_begin(o->tty_master, pid);

	stream st[2] = { { out[0], AGENT_FRAME_STDOUT, 0, false },
			 { err[0], AGENT_FRAME_STDERR, 0, false } };
	bool open_[2] = { true, err[0] >= 0 };
	bool exited = false, timed_out = false, cancelled = false, host_gone = false;
	int status = 0;
	long long deadline = o->timeout_ms > 0 ? now_ms() + o->timeout_ms : -1;

	while (open_[0] || open_[1] || !exited) {
		bool typing = tty_in.off < tty_in.len;
		struct pollfd pfd[5] = { { sfd, POLLIN, 0 },
					 { open_[0] ? out[0] : -1, POLLIN, 0 },
					 { open_[1] ? err[0] : -1, POLLIN, 0 },
					 { typing ? -1 : ctl_fd, POLLIN, 0 },
					 { typing ? o->tty_master : -1, POLLOUT, 0 } };
		int wait_ms = -1;
		if (deadline >= 0 && !timed_out) {
			long long left = deadline - now_ms();
			wait_ms = left < 0 ? 0 : (left > 60000 ? 60000 : (int)left);
		}
		/* A terminal's master need not report the end once its last peer is closed (gVisor's
		 * does not): after the work and all it started are gone, a quiet master is done. */
		bool tty_ended = o->tty_master > 0 && exited;
		if (tty_ended)
			wait_ms = TTY_QUIET_MS;
		int n = poll(pfd, 5, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (n == 0 && tty_ended && open_[0]) {
			open_[0] = false;
			close(st[0].fd);
		}
		if (deadline >= 0 && !timed_out && !exited && now_ms() >= deadline) {
			timed_out = true;
			kill_tree(pid);
		}
		if (pfd[4].revents)
			tty_input_flush(o->tty_master);
		int ctl = (pfd[3].revents & (POLLIN | POLLHUP | POLLERR)) ? ctl_request(o, ctl_fd)
									  : 0;
		if (ctl != 0) {
			if (ctl < 0) {
				/* the host hung up (or spoke out of turn): stop, then end */
				*ret_hangup = true;
				ctl_fd = -1;
			}
			if (!exited && !cancelled) {
				cancelled = true;
				kill_tree(pid);
			}
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo != SIGCHLD && !exited && !cancelled) {
					cancelled = true;
					kill_tree(pid);
				}
			}
			int ws;
			pid_t w;
			while ((w = waitpid(-1, &ws, WNOHANG)) > 0) {
				relay_reaped(w);
				if (w == pid) {
					exited = true;
					status = ws;
					/* nothing the work started outlives it */
					kill_tree(pid);
				}
			}
		}
		for (int i = 0; i < 2; i++) {
			if (!open_[i] || !(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!pump(&st[i], o->cap, &host_gone)) {
				open_[i] = false;
				close(st[i].fd);
			}
		}
		if (host_gone && !cancelled) {
			cancelled = true;
			kill_tree(pid);
		}
	}
	for (int i = 0; i < 2; i++)
		if (open_[i])
			close(st[i].fd);
	reap_children();
	if (!exited) {
		kill_tree(pid);
		waitpid(pid, &status, 0);
	}
	bool oom = false;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !timed_out && !cancelled) {
		long long after = oom_kills();
		oom = oom_before >= 0 && after > oom_before;
	}
	char flags[64] = "";
	snprintf(flags, sizeof(flags), "%s%s%s%s%s", timed_out ? " timeout" : "",
		 cancelled ? " cancelled" : "", oom ? " oom" : "",
		 st[0].truncated ? " truncated-stdout" : "",
		 st[1].truncated ? " truncated-stderr" : "");
	if (WIFSIGNALED(status))
		frame_text(AGENT_FRAME_STATUS, "signal %d%s", WTERMSIG(status), flags);
	else
		frame_text(AGENT_FRAME_STATUS, "exit %d%s", WEXITSTATUS(status), flags);
	if (held_in >= 0)
		linger_on_stdin(held_in);
	return 0;
}

/* The signals a run helper takes through its signalfd: SIGCHLD, and the
 * ones that cancel the work (SIGUSR1 from `kill`). */
static int block_signals(void)
{
	signal(SIGPIPE, SIG_IGN);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR1); /* `kill`: cancel */
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int cmd_run(int argc, char **argv)
{
	run_opts o = { 0 };
	if (parse_run(argc, argv, &o) < 0)
		return fail(ERRC(invalid_argument), EINVAL, "run");
	/* as in session: the work (our uid) cannot reach our stdin and stdout */
	prctl(PR_SET_DUMPABLE, 0);
	char **envp = read_env();
	if (!envp)
		return fail(ERRC(invalid_argument), EPROTO, "environment header");
	frame_text(AGENT_FRAME_HELLO, "%d", (int)getpid());
	/* Orphans of the work become ours, so kill_tree reaches them. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int sfd = block_signals();
	/* envp (and its block) live as long as this one-run process: never freed. */
	if (sfd < 0)
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
		return fail(ERRC(io_error), errno, "signalfd");
	bool hangup = false;
	return run_job(&o, envp, -1, -1, sfd, &hangup);
}

/* ---- session: pid 1 of an attached session container ------------------------------ */

/* Splits a RUN payload (protocol.h) into o and a NULL-terminated envp that
 * point into payload. */
static int parse_request(char *payload, uint32_t len, run_opts *o, char ***ret_envp)
{
	char *p = payload, *end = payload + len;
	char *field[4];
	for (int i = 0; i < 4; i++) {
		char *z = memchr(p, '\0', (size_t)(end - p));
		if (!z)
			return -1;
		field[i] = p;
		p = z + 1;
	}
	o->timeout_ms = atoll(field[0]);
	o->cap = atoll(field[1]);
	o->workdir = *field[2] ? field[2] : NULL;
	long argc = atol(field[3]);
	if (argc < 1 || argc > 65536)
		return -1;
	char **argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!argv)
		return -1;
	for (long i = 0; i < argc; i++) {
		char *z = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;
		if (!z) {
			free(argv);
			return -1;
		}
		argv[i] = p;
		p = z + 1;
	}
	char **envp = split_env(p, end);
	if (!envp) {
		free(argv);
		return -1;
	}
	o->argv = argv;
	*ret_envp = envp;
	return 0;
}

/* Where the work's stdin is kept until it starts: memory (counted against
 * the container's own memory cap), or an unlinked file in the scratch. */
static int stdin_file(void)
{
	int fd = memfd_create("cordon-stdin", MFD_CLOEXEC);
	if (fd < 0)
		fd = open(AGENT_SCRATCH_PATH, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return fd;
}

/* Reads the STDIN frames that follow a request, up to its STDIN_END, into
 * in (if it is open; *ret_ok: every byte was kept). False when the host
 * broke the protocol or hung up. */
static bool read_stdin_frames(int in, bool *ret_ok)
{
	*ret_ok = true;
	for (;;) {
		uint8_t type;
		char *data = NULL;
		uint32_t n;
		int q = read_request(STDIN_FILENO, &type, &data, &n, AGENT_FRAME_MAX);
		if (q <= 0 || (type != AGENT_REQ_STDIN && type != AGENT_REQ_STDIN_END)) {
			free(data);
			return false;
		}
		if (type == AGENT_REQ_STDIN_END) {
			free(data);
			return true;
		}
		if (in >= 0 && !write_all(in, data, n))
			*ret_ok = false;
		free(data);
	}
}

/* A request's stdin frames, in a rewound file (*ret_in: -1 when none could
 * be made; *ret_ok false when it cannot serve). False when the session must
 * end (the host hung up, or broke the protocol). */
static bool session_stdin(int *ret_in, bool *ret_ok)
{
	int in = stdin_file();
	if (!read_stdin_frames(in, ret_ok)) {
		if (in >= 0)
			close(in);
		return false;
	}
	*ret_ok = *ret_ok && in >= 0 && lseek(in, 0, SEEK_SET) == 0;
	*ret_in = in;
	return true;
}

/* One RUN request (or TTY_RUN: ws is the terminal's size, else NULL): its stdin frames
 * follow it (none for a terminal, whose input comes as TTY_IN frames while it runs). Returns
 * false when the session must end (the host hung up, or broke the protocol). */
static bool session_run(char *payload, uint32_t len, int sfd, const struct winsize *ws)
{
	int in;
	bool ok;
	if (!session_stdin(&in, &ok))
		return false;
	run_opts o = { 0 };
	char **envp = NULL;
	bool hangup = false;
	int master = ws ? tty_open(ws) : 0;
	frame_text(AGENT_FRAME_HELLO, "%d", (int)getpid());
	if (parse_request(payload, len, &o, &envp) < 0)
		fail(ERRC(invalid_argument), EPROTO, "run request");
	else if (!ok)
		fail(ERRC(io_error), in < 0 ? EMFILE : EIO, "the work's stdin");
	else if (master < 0)
		fail(ERRC(io_error), -master, "a pseudo-terminal for the work");
	else
		run_job(&(run_opts){ o.timeout_ms, o.cap, o.workdir, o.argv, master }, envp, in,
			STDIN_FILENO, sfd, &hangup);
	if (in >= 0)
		close(in);
	if (master > 0)
		close(master);
	free(o.argv);
	free(envp);
	return !hangup;
}

/* A TTY_RUN request: "<rows>\0<cols>\0", then a RUN payload. */
static bool session_tty_run(char *payload, uint32_t len, int sfd)
{
	char *p = payload, *end = payload + len;
	unsigned long rc[2];
	for (int i = 0; i < 2; i++) {
		char *z = memchr(p, '\0', (size_t)(end - p));
		rc[i] = z ? strtoul(p, NULL, 10) : 0;
		if (!rc[i] || rc[i] > 0xffff) {
			bool ok;
			int in;
			if (!session_stdin(&in, &ok))
				return false;
			if (in >= 0)
				close(in);
			fail(ERRC(invalid_argument), EPROTO, "terminal run request");
			return true;
		}
		p = z + 1;
	}
	struct winsize ws = { .ws_row = (unsigned short)rc[0], .ws_col = (unsigned short)rc[1] };
	return session_run(p, (uint32_t)(end - p), sfd, &ws);
}

static int file_command(int argc, char **argv);

/* Splits a FILE payload ("OP\0ARG\0[ARG\0]") into argv[1..]; argv[0] is
 * ours. Returns argc, or -1 when it is malformed. */
static int parse_file_request(char *payload, uint32_t len, char *argv[5])
{
	if (len == 0 || payload[len - 1] != '\0')
		return -1;
	int argc = 1;
	argv[0] = (char *)AGENT_PATH;
	for (char *p = payload, *end = payload + len; p < end; p += strlen(p) + 1) {
		if (argc >= 4)
			return -1;
		argv[argc++] = p;
	}
	argv[argc] = NULL;
	return argc;
}

/* relay SOCKET (session only): the port of a listener on our loopback whose connections
 * go to the host's unix socket SOCKET (agent/relay.c), one DATA frame (decimal), then
 * DONE. The relay is our own child, which no run's end kills (kill_tree); over `exec` it
 * would be an orphan of the exec'd process, which the next run's end would kill, so exec
 * refuses it (file_command). */
static int session_relay(const char *path)
{
	size_t slot = 0;
	while (slot < RELAYS_MAX && relay_pids[slot] > 0)
		slot++;
	if (slot == RELAYS_MAX)
		return fail(ERRC(resource), EMFILE, "relay");
	uint16_t port = 0;
	bool channel = strncmp(path, AGENT_RELAY_CHANNEL, strlen(AGENT_RELAY_CHANNEL)) == 0;
	int r = !channel        ? agent_relay_start(path, &port, &relay_pids[slot])
		: extra_session ? -EPERM /* the first session's, which started the channel */
				: agent_relay_channel(path, &port);
	if (r == -ENODEV)
		return fail(ERRC(unsupported), ENODEV,
			    "relay: this sandbox has no network channel");
	if (r < 0)
		return fail(r == -EINVAL ? ERRC(invalid_argument) : ERRC(io_error), -r, "relay");
	frame_text(AGENT_FRAME_DATA, "%u", (unsigned)port);
	frame(AGENT_FRAME_DONE, "", 0);
	return 0;
}

/* One FILE request: its data (write) follows as stdin frames. The operation
 * is the one `exec` runs (file_command), in a child whose stdin holds the
 * data and whose stdout is ours: its frames go to the host as they would
 * from `exec`, and nothing it leaves open or allocated outlives it. Its end
 * is a STATUS frame, so the host knows where the answer stops. */
static bool session_file(char *payload, uint32_t len)
{
	int in;
	bool ok;
	if (!session_stdin(&in, &ok))
		return false;
	char *argv[5];
	int argc = parse_file_request(payload, len, argv);
	pid_t pid = -1;
	int status_rc = 1;
	if (argc < 0)
		fail(ERRC(invalid_argument), EPROTO, "file request");
	else if (ok && argc == 3 && strcmp(argv[1], "relay") == 0)
		status_rc = session_relay(argv[2]);
	else if (!ok)
		fail(ERRC(io_error), in < 0 ? EMFILE : EIO, "the operation's data");
	else if ((pid = fork()) < 0)
		fail(ERRC(io_error), errno, "fork");
	else if (pid == 0)
		_exit(dup2(in, STDIN_FILENO) < 0 ? fail(ERRC(io_error), errno, "stdin")
						 : file_command(argc, argv));
	int status = 0;
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	if (in >= 0)
		close(in);
	if (pid > 0 && WIFSIGNALED(status))
		frame_text(AGENT_FRAME_STATUS, "signal %d", WTERMSIG(status));
	else
		frame_text(AGENT_FRAME_STATUS, "exit %d",
			   pid > 0 ? WEXITSTATUS(status) : status_rc);
	return true;
}

/* A guest's first request: its identity (agent/guest.c), or the session ends. */
static void extra_session_serve(int fd);

/* A guest's network channel (agent/relay.c), started once the identity is taken (the host
 * waits for the multiplexer's HELLO before its first stream, and may ask for a relay as the
 * first request): the multiplexer drops to the work's uid itself and is one of our relays,
 * which no run's end kills. Without it relays and a second session fail, with the reason. */
static void channel_start(void)
{
	size_t slot = 0;
	while (slot < RELAYS_MAX && relay_pids[slot] > 0)
		slot++;
	if (!in_guest || extra_session || slot == RELAYS_MAX)
		return;
#ifdef CORDON_AGENT_HOSTILE_PACK
	return; /* the tests' compromised guest has no channel either: the host must notice */
#endif
	int r = agent_channel_start(guest_net_port_take(), guest_drop, extra_session_serve,
				    &relay_pids[slot]);
	if (r < 0 && r != -ENODEV)
		fprintf(stderr, "cordon-agent: the network channel: %s\n", strerror(-r));
}

static bool session_identity(void)
{
	uint8_t type = 0;
	char *payload = NULL;
	uint32_t len = 0;
	const char *what = "the first request is not the identity";
	int r = read_request(STDIN_FILENO, &type, &payload, &len, AGENT_FRAME_MAX);
	if (r > 0 && type == AGENT_REQ_IDENTITY)
		r = guest_identity(payload, len, &what);
	else
		r = r == 0 ? -EPIPE : -EPROTO;
	if (payload)
		explicit_bzero(payload, len);
	free(payload);
	if (r < 0) {
		fail(r == -EPROTO ? ERRC(invalid_argument) : ERRC(io_error), -r, what);
	} else {
		channel_start();
		frame(AGENT_FRAME_DONE, "", 0);
	}
	frame_text(AGENT_FRAME_STATUS, "exit %d", r < 0);
	return r == 0;
}

static int cmd_session(void)
{
	/* The work runs as our uid: undumpable, our /proc/1/fd (the channel,
	 * with the next runs' environments) is out of its reach. */
	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_CHILD_SUBREAPER, 1); /* pid 1 already; not under every runtime */
	int sfd = block_signals();
	if (sfd < 0)
		return fail(ERRC(io_error), errno, "signalfd");
	frame_text(AGENT_FRAME_HELLO, "%d", (int)getpid());
	if (in_guest && !extra_session && !session_identity())
		return 1;
	bool dropped = !in_guest || extra_session;
	for (;;) {
		struct pollfd pfd[2] = { { STDIN_FILENO, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return 1;
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGUSR1)
					return 0;
			reap_children();
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		uint8_t type;
		char *payload = NULL;
		uint32_t len;
		int q = read_request(STDIN_FILENO, &type, &payload, &len, AGENT_REQUEST_MAX);
		if (q <= 0)
			return q == 0 ? 0 : 1; /* EOF: the host closed the session */
		/* A guest is root until its first request after the identity, which may be the
		 * workspace's unpack; it drops before any other, and after that one. */
		if (!dropped) {
			unpack_allowed = type == AGENT_REQ_FILE && len >= 7 &&
					 memcmp(payload, "unpack", 7) == 0;
			if (!unpack_allowed && guest_drop() < 0)
				return fail(ERRC(io_error), errno, "dropping to the work's uid");
			dropped = !unpack_allowed;
		}
		bool more = true;
		if (type == AGENT_REQ_RUN)
			more = session_run(payload, len, sfd, NULL);
		else if (type == AGENT_REQ_TTY_RUN)
			more = session_tty_run(payload, len, sfd);
		else if (type == AGENT_REQ_FILE)
			more = session_file(payload, len);
		else if (type != AGENT_REQ_CANCEL) /* a cancel that came after its run ended */
			more = false;              /* END, or anything else */
		explicit_bzero(payload, len);      /* granted secrets */
		free(payload);
		if (!more)
			return 0;
		if (!dropped) {
			unpack_allowed = false;
			if (guest_drop() < 0)
				return fail(ERRC(io_error), errno, "dropping to the work's uid");
			dropped = true;
		}
	}
}

/* One more session, on a stream the host opened on the network channel (in a child of the
 * multiplexer's, already the work's uid): the same protocol, no identity (the guest has
 * it), no relay (the first session's). Its own reaper: the work's orphans are its own. */
static void extra_session_serve(int fd)
{
	signal(SIGCHLD, SIG_DFL); /* the multiplexer's is SIG_IGN: waitpid needs it back */
	if (dup2(fd, STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0)
		_exit(1);
	close(fd);
	for (int i = 3; i < 1024; i++)
		close(i); /* nothing of the multiplexer's: its channel, its other streams */
	extra_session = true;
	_exit(cmd_session());
}

/* ---- kill ---------------------------------------------------------------------------- */

static int cmd_kill(const char *arg)
{
	pid_t pid = (pid_t)atoi(arg);
	char path[64], comm[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pid <= 1 || fd < 0)
		return fail(ERRC(not_found), ESRCH, "run helper");
	ssize_t n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	/* Only ever signal a run helper (comm is the basename of the mount path):
	 * the pid came from the host, not from us. */
	const char *want = strrchr(AGENT_PATH, '/') + 1;
	if (n <= 0 || strncmp(comm, want, strlen(want)) != 0 || comm[strlen(want)] != '\n')
		return fail(ERRC(not_found), ESRCH, "run helper");
	if (kill(pid, SIGUSR1) < 0)
		return fail(ERRC(io_error), errno, "kill");
	frame(AGENT_FRAME_DONE, "", 0);
	return 0;
}

/* ---- file operations ------------------------------------------------------------------ */

/* Sends what an operation emits as frames of one type; a host that is gone stops it. */
static int emit_frame(void *ctx, const void *data, size_t len)
{
	const uint8_t *type = ctx;
	return frame(*type, data, len) ? 0 : -EPIPE;
}

static int cmd_read(const char *rel, const char *max_arg)
{
	long long max = atoll(max_arg);
	int rootfd = open_root();
	if (rootfd < 0)
		return fail(ERRC(io_error), errno, AGENT_SANDBOX_ROOT);
	uint8_t type = AGENT_FRAME_DATA;
	int r = fsops_read(rootfd, rel, max > 0 ? (uint64_t)max : UINT64_MAX, emit_frame, &type);
	close(rootfd);
	if (r == -EPIPE)
		return 1;
	if (r < 0)
		return fail_fs(r, "read", rel);
	frame(AGENT_FRAME_DONE, "", 0);
	return 0;
}

/* What is left of stdin, read and dropped: a write refused before (or while) its data was
 * read still reads the data to its end, since an engine whose `exec -i` cannot deliver
 * stdin drops the answer too (seen with podman under load), and the host would see no
 * refusal at all. */
static void drain_stdin(void)
{
	char buf[AGENT_FRAME_MAX];
	ssize_t n;
	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
}

/* write PATH: the data is our stdin, streamed into the file (never held in memory: it may
 * be as large as the container's memory limit). */
static int cmd_write(const char *rel)
{
	int rootfd = open_root();
	if (rootfd < 0) {
		int e = errno;
		drain_stdin();
		return fail(ERRC(io_error), e, AGENT_SANDBOX_ROOT);
	}
	int r = fsops_write_fd(rootfd, rel, STDIN_FILENO);
	close(rootfd);
	if (r < 0) {
		drain_stdin();
		return fail_fs(r, "write", rel);
	}
	frame(AGENT_FRAME_DONE, "", 0);
	return 0;
}

/* glob PATTERN, walk DIR: the paths as PATH frames, in the order the shared code finds
 * them (the core sorts them). */
static int cmd_list(const char *arg, bool glob)
{
	int rootfd = open_root();
	if (rootfd < 0)
		return fail(ERRC(io_error), errno, AGENT_SANDBOX_ROOT);
	uint8_t type = AGENT_FRAME_PATH;
	int r = glob ? fsops_glob(rootfd, arg, emit_frame, &type)
		     : fsops_walk(rootfd, arg, emit_frame, &type);
	close(rootfd);
	if (r == -EPIPE)
		return 1;
	if (r < 0)
		return fail_fs(r, glob ? "glob" : "walk", arg);
	frame(AGENT_FRAME_DONE, "", 0);
	return 0;
}

/* ---- the workspace stream (common/wsarc.h) ---------------------------------------------- */

/* unpack ro|rw: the host's workspace, a stream on our stdin, into /work, owned by the
 * work's uid (set-id bits are not in the stream); ro then remounts /work read-only. Only
 * in a guest, as its first request after the identity (still root). */
static int cmd_unpack(const char *mode)
{
	bool ro = strcmp(mode, "ro") == 0;
	if (!unpack_allowed || (!ro && strcmp(mode, "rw") != 0)) {
		drain_stdin();
		return fail(ERRC(invalid_argument), EPERM, "unpack");
	}
	int rootfd = open_root();
	wsarc_unpack_opts o = { .limits = { UINT64_MAX, UINT64_MAX },
				.mode_mask = 0777,
				.chown = true,
				.uid = AGENT_GUEST_UID,
				.gid = AGENT_GUEST_UID };
	wsarc_unpack *u = rootfd >= 0 ? wsarc_unpack_new(rootfd, &o) : NULL;
	int r = u ? 0 : -errno;
	char *buf = malloc(AGENT_FRAME_MAX);
	ssize_t n;
	while (r == 0 && buf && (n = read(STDIN_FILENO, buf, AGENT_FRAME_MAX)) != 0)
		r = n < 0 ? (errno == EINTR ? 0 : -errno) : wsarc_unpack_feed(u, buf, (size_t)n);
	wsarc_report rep = { 0 };
	if (r == 0)
		r = buf ? wsarc_unpack_finish(u, &rep) : -ENOMEM;
	wsarc_unpack_free(u);
	free(buf);
	if (rootfd >= 0)
		close(rootfd);
	if (r == 0 && ro)
		r = guest_seal_work();
	if (r < 0) {
		drain_stdin();
		return fail_fs(r, "unpack", ".");
	}
	frame_text(AGENT_FRAME_DONE, "files %" PRIu64 " dirs %" PRIu64 " bytes %" PRIu64, rep.files,
		   rep.dirs, rep.bytes);
	return 0;
}

/* What pack emits, gathered into DATA frames of up to AGENT_FRAME_MAX bytes. */
typedef struct pack_out {
	char buf[AGENT_FRAME_MAX];
	size_t len;
} pack_out;

static int pack_emit(void *ctx, const void *data, size_t len)
{
	pack_out *o = ctx;
	const char *p = data;
	while (len > 0) {
		size_t k = sizeof(o->buf) - o->len < len ? sizeof(o->buf) - o->len : len;
		memcpy(o->buf + o->len, p, k);
		o->len += k;
		p += k;
		len -= k;
		if (o->len == sizeof(o->buf)) {
			if (!frame(AGENT_FRAME_DATA, o->buf, o->len))
				return -EPIPE;
			o->len = 0;
		}
	}
	return 0;
}

#ifdef CORDON_AGENT_HOSTILE_PACK
/* The test build's pack (tests/helpers/vm-hostile-agent, tests/microvm.am): a compromised
 * guest's copy-out, a valid file then the record /work/hostile names (dotdot, symlink,
 * big, device), for the host to refuse whole. Never in cordon-agent itself. */
static void hostile_record(pack_out *o, char type, const char *name, uint64_t size)
{
	uint8_t h[WSARC_HEADER] = { (uint8_t)type, 0x01, 0xa4 /* 0644 */ };
	size_t n = strlen(name);
	h[3] = (uint8_t)(n >> 8);
	h[4] = (uint8_t)n;
	for (int i = 0; i < 8; i++)
		h[5 + i] = (uint8_t)(size >> (56 - 8 * i));
	pack_emit(o, h, sizeof(h));
	pack_emit(o, name, n);
}

static int cmd_pack(void)
{
	char mode[32] = "";
	int fd = open(AGENT_SANDBOX_ROOT "/hostile", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, mode, sizeof(mode) - 1) : 0;
	if (fd >= 0)
		close(fd);
	mode[n > 0 ? n : 0] = '\0';
	pack_out *o = calloc(1, sizeof(*o));
	if (!o)
		return fail(ERRC(io_error), ENOMEM, "pack");
	hostile_record(o, 'f', "ok.txt", 3);
	pack_emit(o, "ok\n", 3);
	if (strncmp(mode, "dotdot", 6) == 0) {
		hostile_record(o, 'f', "../escape", 4);
		pack_emit(o, "evil", 4);
	} else if (strncmp(mode, "symlink", 7) == 0) {
		hostile_record(o, 'l', "etc", 4);
		pack_emit(o, "/etc", 4);
	} else if (strncmp(mode, "big", 3) == 0) {
		hostile_record(o, 'f', "big", 10ull << 30); /* 10 GiB claimed, 64 KiB sent */
		char zero[4096] = { 0 };
		for (int i = 0; i < 16; i++)
			pack_emit(o, zero, sizeof(zero));
	} else {
		hostile_record(o, 'c', "null", 0); /* a device */
	}
	hostile_record(o, 'e', "", 0);
	bool ok = !o->len || frame(AGENT_FRAME_DATA, o->buf, o->len);
	free(o);
	if (!ok)
		return 1;
	frame(AGENT_FRAME_DONE, "", 0);
	return 0;
}
#else
/* pack: /work as a stream in DATA frames (the host bounds it: it trusts none of it); DONE
 * says what was left out. */
static int cmd_pack(void)
{
	int rootfd = open_root();
	if (rootfd < 0)
		return fail(ERRC(io_error), errno, AGENT_SANDBOX_ROOT);
	pack_out *o = calloc(1, sizeof(*o));
	wsarc_report rep;
	int r = o ? wsarc_pack(rootfd, &(wsarc_limits){ UINT64_MAX, UINT64_MAX }, pack_emit, o,
			       &rep)
		  : -ENOMEM;
	close(rootfd);
	if (r == 0 && o->len && !frame(AGENT_FRAME_DATA, o->buf, o->len))
		r = -EPIPE;
	free(o);
	if (r == -EPIPE)
		return 1;
	if (r < 0)
		return fail_fs(r, "pack", ".");
	frame_text(AGENT_FRAME_DONE,
		   "files %" PRIu64 " dirs %" PRIu64 " bytes %" PRIu64 " symlinks %" PRIu64
		   " special %" PRIu64 " mounts %" PRIu64,
		   rep.files, rep.dirs, rep.bytes, rep.symlinks, rep.special, rep.other_mounts);
	return 0;
}
#endif

/* ---- probe ---------------------------------------------------------------------------- */

/* Whether the seccomp profile the container was started with is in force
 * (the trial passes cordon's): two calls it refuses with EPERM that answer
 * otherwise without a filter (EFAULT for io_uring_setup's NULL parameters,
 * EINVAL or ENOKEY for a keyring id that does not exist). */
static int profile_applied(void)
{
	errno = 0;
	long a = syscall(SYS_io_uring_setup, 1, NULL);
	int ea = errno;
	errno = 0;
	long b = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -1000, 0);
	int eb = errno;
	return a < 0 && ea == EPERM && b < 0 && eb == EPERM;
}

static int cmd_probe(void)
{
	struct utsname u;
	if (uname(&u) < 0)
		return fail(ERRC(io_error), errno, "uname");
	/* plain text, not frames: the trial run reads it through a text capture */
	printf("kernel=%s uid=%d seccomp=%d\n", u.release, (int)getuid(), profile_applied());
	return fflush(stdout) == 0 ? 0 : 1;
}

/* The file operations, as `exec` and the session channel name them. */
static int file_command(int argc, char **argv)
{
	const char *cmd = argv[1];
	if (strcmp(cmd, "read") == 0 && argc == 4)
		return cmd_read(argv[2], argv[3]);
	if (strcmp(cmd, "write") == 0 && argc == 3)
		return cmd_write(argv[2]);
	if (strcmp(cmd, "glob") == 0 && argc == 3)
		return cmd_list(argv[2], true);
	if (strcmp(cmd, "walk") == 0 && argc == 3)
		return cmd_list(argv[2], false);
	if (strcmp(cmd, "unpack") == 0 && argc == 3)
		return cmd_unpack(argv[2]);
	if (strcmp(cmd, "pack") == 0 && argc == 3)
		return cmd_pack();
	return fail(ERRC(invalid_argument), EINVAL, cmd);
}

int main(int argc, char **argv)
{
	if (guest_is_init(argc, argv)) {
		/* a guest's /init: pid 1 returning ends the VM (the kernel panics, QEMU exits) */
		in_guest = true;
		return guest_init() < 0 ? 1 : cmd_session();
	}
	if (argc < 2) {
		fprintf(stderr, "usage: cordon-agent "
				"idle|session|run|kill|read|write|glob|walk|relay|probe\n");
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "idle") == 0)
		return cmd_idle();
	if (strcmp(cmd, "run") == 0)
		return cmd_run(argc - 2, argv + 2);
	if (strcmp(cmd, "session") == 0 && argc == 2)
		return cmd_session();
	if (strcmp(cmd, "kill") == 0 && argc == 3)
		return cmd_kill(argv[2]);
	if (strcmp(cmd, "probe") == 0)
		return cmd_probe();
	return file_command(argc, argv);
}
