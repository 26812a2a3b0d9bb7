/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-agent as a microVM guest's /init (agent/guest.h). Everything the guest needs before
 * the session starts, done by the agent itself (no shell on the path):
 *
 *   /proc, /sys, /dev (devtmpfs)     what the session and the work need
 *   /dev/pts (devpts)                terminal runs' pseudo-terminals (TTY_RUN)
 *   /tmp, /work                      tmpfs, each capped at cordon.scratch= bytes: the guest
 *                                    has no disk, and its RAM is the VM's memory limit;
 *                                    with cordon.virtiofs=rw or =ro, /work is the host's
 *                                    workspace over virtio-fs instead (tag cordon.work)
 *   /lib/cordon/modules/NN-name.ko   loaded with finit_module in name order (the image
 *                                    builder numbers them in dependency order)
 *   the loopback                     up, for the work's own servers and for the relays
 *   the agent's port                 found by name (QEMU's virtserialport name=) in
 *                                    /sys/class/virtio-ports/<port>/name, opened as 0 and 1
 *   the network channel's port       the second one, kept open (close-on-exec) for the
 *                                    relay's multiplexer (agent/relay.c), never the work's
 *   the identity                     the host's first request (guest_identity): its random
 *                                    bytes mixed into the kernel's pool and the CRNG
 *                                    reseeded, /etc/machine-id, the hostname, the clock.
 *                                    A clone restored from a template shares the template's
 *                                    RNG state and clock until then; so the agent serves
 *                                    nothing before it
 *   the workspace                    a host workspace's files, if the next request is
 *                                    `unpack` (still root: /work is then remounted
 *                                    read-only when the host says so)
 *   the work's uid                   then the agent drops to AGENT_GUEST_UID for good, so
 *                                    the work can neither load modules nor keep the guest
 *                                    alive when the host is gone: EOF on the port ends the
 *                                    session, pid 1 exits, the kernel panics, and QEMU
 *                                    (-no-reboot, panic=-1) exits
 *   cordon.pids=N                    RLIMIT_NPROC of that uid (the agent and the work)
 *   cordon.nofile=N, cordon.fsize=N  RLIMIT_NOFILE, RLIMIT_FSIZE of the work (not of the
 *                                    agent: its own writes are the file operations')
 */
#include "config.h"

#include "guest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/random.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PORT_WAIT_MS 30000

/* TCG boots slowly; the host bounds the boot as a whole */
static uint64_t work_nofile, work_fsize, work_pids;

/* What the kernel's command line says of KEY= (a number), or dflt. */
static uint64_t cmdline_u64(const char *cmdline, const char *key, uint64_t dflt)
{
	size_t kl = strlen(key);
	for (const char *p = cmdline; (p = strstr(p, key)); p += kl) {
		if (p != cmdline && p[-1] != ' ')
			continue;
		char *end = NULL;
		uint64_t v = strtoull(p + kl, &end, 10);
		if (end != p + kl)
			return v;
	}
	return dflt;
}

/* Whether the command line has key followed by value and a space or its end. */
static bool cmdline_has(const char *cmdline, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);
	for (const char *p = cmdline; (p = strstr(p, key)); p += kl)
		if ((p == cmdline || p[-1] == ' ') && strncmp(p + kl, value, vl) == 0 &&
		    (p[kl + vl] == ' ' || p[kl + vl] == '\n' || p[kl + vl] == '\0'))
			return true;
	return false;
}

/* The host's workspace over virtio-fs as /work (AGENT_VIRTIOFS_ARG rw or ro), once the
 * modules are in; read-only here too for ro (the host's mount already is). */
static int mount_virtiofs(bool read_only)
{
	unsigned long fl = MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
	return mount(AGENT_VIRTIOFS_TAG, AGENT_SANDBOX_ROOT, "virtiofs", fl, NULL) < 0 ? -errno : 0;
}

static int read_cmdline(char *buf, size_t len)
{
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int mount_tmpfs(const char *dir, uint64_t size, const char *mode)
{
	char opts[128];
	snprintf(opts, sizeof(opts), "size=%" PRIu64 ",mode=%s,uid=%d,gid=%d", size, mode,
		 AGENT_GUEST_UID, AGENT_GUEST_UID);
	mkdir(dir, 0755);
	return mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 ? -errno : 0;
}

static int mount_base(void)
{
	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	mkdir("/dev", 0755);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
	    mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
	    mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") < 0)
		return -errno;
	/* Terminal runs' pseudo-terminals: mounted now, while we may (the agent drops to the
	 * work's uid before it serves). Without it only terminal runs fail, with the reason. */
	if (mkdir("/dev/pts", 0755) == 0 || errno == EEXIST)
		(void)mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
			    "mode=0620,ptmxmode=0666");
	return 0;
}

static int load_modules(void)
{
	struct dirent **names = NULL;
	int n = scandir(AGENT_GUEST_MODULES, &names, NULL, alphasort);
	if (n < 0)
		return errno == ENOENT ? 0 : -errno; /* a kernel with virtio built in */
	int r = 0;
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		size_t len = strlen(name);
		if (r == 0 && len > 3 && strcmp(name + len - 3, ".ko") == 0) {
			char path[512];
			snprintf(path, sizeof(path), "%s/%s", AGENT_GUEST_MODULES, name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
				r = -errno;
			if (r < 0)
				fprintf(stderr, "cordon-agent: loading %s: %s\n", path,
					strerror(-r));
			if (fd >= 0)
				close(fd);
		}
		free(names[i]);
	}
	free(names);
	return r;
}

/* The /dev node of the virtio port named name, or -ENOENT (not there yet). */
static int find_port(const char *name, char *dev, size_t len)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	if (!d)
		return -ENOENT;
	struct dirent *e;
	int r = -ENOENT;
	while (r < 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], got[128] = "";
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, got, sizeof(got) - 1);
		close(fd);
		if (n > 0 && got[n - 1] == '\n')
			got[n - 1] = '\0';
		if (n > 0 && strcmp(got, name) == 0) {
			snprintf(dev, len, "/dev/%s", e->d_name);
			r = 0;
		}
	}
	closedir(d);
	return r;
}

/* Whether the kernel knows the host's end is open. QEMU says so (PORT_OPEN) after the
 * port's name, and the kernel handles it in a work item of its own, so the name can be seen
 * and the port opened before: until then a read is EOF and a write blocks (poll: POLLHUP
 * without POLLOUT), so the HELLO would be dropped (guest_port_writable) and the identity's
 * read would end the session (a race seen under load, as an ERROR where the host awaited the
 * HELLO). */
static bool host_connected(int fd)
{
	struct pollfd p = { fd, POLLOUT, 0 };
	return poll(&p, 1, 0) > 0 && (p.revents & POLLOUT) && !(p.revents & POLLHUP);
}

/* The port appears once virtio_console has probed the device, and its /dev node once
 * devtmpfs made it, and the host's end is known open later still: all asynchronously. */
static int open_port(void)
{
	char dev[300];
	int fd = -1;
	for (int waited = 0; waited < PORT_WAIT_MS; waited += 2) {
		if (fd < 0 && find_port(AGENT_GUEST_PORT, dev, sizeof(dev)) == 0)
			fd = open(dev, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (fd >= 0 && host_connected(fd))
			return fd;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	if (fd >= 0)
		close(fd);
	return -ETIMEDOUT;
}

/* The network channel's port, once found, opened without waiting for the host's end (no
 * stream comes before the identity, and a template's never carries any). It appears with
 * the agent's, on the same device: a short wait covers its /dev node. */
#define NET_PORT_WAIT_MS 2000
static int net_port = -1;

static void open_net_port(void)
{
	char dev[300];
	for (int waited = 0; waited < NET_PORT_WAIT_MS; waited += 2) {
		if (find_port(AGENT_GUEST_NET_PORT, dev, sizeof(dev)) == 0) {
			net_port = open(dev, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
			return;
		}
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
}

int guest_net_port_take(void)
{
	int fd = net_port;
	net_port = -1;
	return fd;
}

/* lo up: the kernel gives it 127.0.0.1 then (the only interface the guest has). */
static int loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	int r = 0;
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		r = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (r == 0 && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		r = -errno;
	if (s >= 0)
		close(s);
	return r;
}

static int drop_to_work_uid(uint64_t pids)
{
	gid_t g = AGENT_GUEST_UID;
	if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
	    setresuid(AGENT_GUEST_UID, AGENT_GUEST_UID, AGENT_GUEST_UID) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (pids) {
		struct rlimit rl = { pids, pids };
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			return -errno;
	}
	return 0;
}

static int fail(const char *what, int r)
{
	fprintf(stderr, "cordon-agent: guest init: %s: %s\n", what, strerror(-r));
	return r;
}

int guest_init(void)
{
	int r = mount_base();
	if (r < 0)
		return fail("mounting /proc, /sys, /dev", r);
	/* the kernel's console, if any, for what goes wrong before the port is open */
	int con = open("/dev/console", O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (con >= 0) {
		dup2(con, STDERR_FILENO);
		close(con);
	}
	char cmdline[4096];
	if ((r = read_cmdline(cmdline, sizeof(cmdline))) < 0)
		return fail("/proc/cmdline", r);
	uint64_t scratch = cmdline_u64(cmdline, "cordon.scratch=", 64ull << 20);
	bool vfs_rw = cmdline_has(cmdline, AGENT_VIRTIOFS_ARG, "rw");
	bool vfs_ro = cmdline_has(cmdline, AGENT_VIRTIOFS_ARG, "ro");
	if ((r = mount_tmpfs(AGENT_SCRATCH_PATH, scratch, "1777")) < 0 ||
	    (!vfs_rw && !vfs_ro && (r = mount_tmpfs(AGENT_SANDBOX_ROOT, scratch, "0755")) < 0))
		return fail("mounting the scratch tmpfs", r);
	if ((r = load_modules()) < 0)
		return fail("loading the virtio modules", r);
	if ((vfs_rw || vfs_ro) && (r = mount_virtiofs(vfs_ro)) < 0)
		return fail("mounting the workspace (virtio-fs)", r);
	if ((r = loopback_up()) < 0)
		return fail("bringing up lo", r);
	int port = open_port();
	if (port < 0)
		return fail("opening the agent's port " AGENT_GUEST_PORT, port);
	if (dup2(port, STDIN_FILENO) < 0 || dup2(port, STDOUT_FILENO) < 0)
		return fail("the agent's port as stdio", -errno);
	close(port);
	open_net_port(); /* without it only relays fail, with the reason */
	work_nofile = cmdline_u64(cmdline, "cordon.nofile=", 0);
	work_fsize = cmdline_u64(cmdline, "cordon.fsize=", 0);
	work_pids = cmdline_u64(cmdline, "cordon.pids=", 0);
	if (chdir(AGENT_SANDBOX_ROOT) < 0)
		return fail("chdir " AGENT_SANDBOX_ROOT, -errno);
	/* the work's environment is the host's to give; execvp needs a PATH until then */
	setenv("PATH", "/bin", 1);
	return 0;
}

/* The fields of an IDENTITY payload (agent/protocol.h), checked strictly. */
typedef struct identity {
	const char *machine_id, *hostname;
	struct timespec now;
	const uint8_t *entropy;
	size_t entropy_len;
} identity;

static bool all_of(const char *s, const char *set, size_t min, size_t max)
{
	size_t n = strlen(s);
	return n >= min && n <= max && strspn(s, set) == n;
}

static int parse_identity(const char *p, size_t len, identity *id)
{
	const char *end = p + len, *f[3];
	for (int i = 0; i < 3; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			return -EPROTO;
		f[i] = p;
		p = nul + 1;
	}
	char *e = NULL;
	unsigned long long ns = strtoull(f[2], &e, 10);
	id->machine_id = f[0];
	id->hostname = f[1];
	id->now = (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	id->entropy = (const uint8_t *)p;
	id->entropy_len = (size_t)(end - p);
	if (!all_of(id->machine_id, "0123456789abcdef", 32, 32) ||
	    !all_of(id->hostname, "abcdefghijklmnopqrstuvwxyz0123456789-", 1, 63) || !e || *e ||
	    e == f[2] || id->entropy_len < AGENT_IDENTITY_ENTROPY_MIN ||
	    id->entropy_len > AGENT_IDENTITY_ENTROPY_MAX)
		return -EPROTO;
	return 0;
}

/* Mixes the host's bytes into the input pool, credited, and reseeds the CRNG from it at
 * once: getrandom and /dev/urandom answer from the new key, not the template's. */
static int reseed(const uint8_t *bytes, size_t len)
{
	struct {
		struct rand_pool_info info;
		uint8_t buf[AGENT_IDENTITY_ENTROPY_MAX];
	} pool;
	pool.info.entropy_count = (int)(len * 8);
	pool.info.buf_size = (int)len;
	memcpy(pool.info.buf, bytes, len);
	int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	int r = 0;
	if (fd < 0 || ioctl(fd, RNDADDENTROPY, &pool.info) < 0 || ioctl(fd, RNDRESEEDCRNG) < 0)
		r = -errno;
	explicit_bzero(&pool, sizeof(pool));
	if (fd >= 0)
		close(fd);
	return r;
}

static int write_machine_id(const char *id)
{
	char line[40];
	int n = snprintf(line, sizeof(line), "%s\n", id);
	mkdir("/etc", 0755);
	unlink("/etc/machine-id");
	int fd = open("/etc/machine-id", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0444);
	if (fd < 0)
		return -errno;
	int r = write(fd, line, (size_t)n) == n ? 0 : -EIO;
	close(fd);
	return r;
}

static int errno_or_zero(int syscall_result) { return syscall_result < 0 ? -errno : 0; }

int guest_identity(const char *payload, size_t len, const char **ret_what)
{
	identity id;
	int r = parse_identity(payload, len, &id);
	*ret_what = "the identity request";
	if (r == 0 && (r = reseed(id.entropy, id.entropy_len)) < 0)
		*ret_what = "reseeding the guest's RNG";
	if (r == 0 && (r = write_machine_id(id.machine_id)) < 0)
		*ret_what = "/etc/machine-id";
	if (r == 0 && (r = errno_or_zero(sethostname(id.hostname, strlen(id.hostname)))) < 0)
		*ret_what = "sethostname";
	/* a clone's clock is the template's until now */
	if (r == 0 && (r = errno_or_zero(clock_settime(CLOCK_REALTIME, &id.now))) < 0)
		*ret_what = "setting the clock";
	return r;
}

int guest_drop(void) { return drop_to_work_uid(work_pids); }

int guest_seal_work(void)
{
	return mount(NULL, AGENT_SANDBOX_ROOT, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		     NULL) < 0
		       ? -errno
		       : 0;
}

bool guest_is_init(int argc, char **argv)
{
	/* The kernel runs /init with no arguments (the command line has none of ours that
	 * would become one); a container runs the agent with a command, always. */
	return getpid() == 1 && argc == 1 && strcmp(argv[0], "/init") == 0;
}

int guest_work_limits(void)
{
	struct rlimit n = { work_nofile, work_nofile }, f = { work_fsize, work_fsize };
	if ((work_nofile && setrlimit(RLIMIT_NOFILE, &n) < 0) ||
	    (work_fsize && setrlimit(RLIMIT_FSIZE, &f) < 0))
		return -errno;
	return 0;
}

bool guest_port_writable(int fd)
{
	struct pollfd p = { fd, POLLOUT, 0 };
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return false;
	return (p.revents & POLLOUT) != 0;
}
