/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier's launcher: the embedded init, a sandbox's zygote (the
 * host's end of it) and the warm pool (zygote.h, confine.h). */
#include "config.h"

#include "child.h"
#include "confine.h"
#include "landlock.h"
#include "landlock-abi.h"
#include "nsinit-proto.h"
#include "seccomp.h"
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010u
#endif

/* The embedded init (nsinit-blob.c, generated from the freestanding cordon-nsinit). */
extern const unsigned char confine_nsinit_blob[] CORDON_INTERNAL;
extern const size_t confine_nsinit_blob_len CORDON_INTERNAL;

#define STACK_SIZE ((size_t)256 << 10)
#define NSTACKS 4 /* A, B, the self-test, B's helper */

/* Sizes of the private scratch mounts: at most these, and together within a scratch cap. */
#define TMP_BYTES ((uint64_t)512 << 20)
#define SHM_BYTES ((uint64_t)64 << 20)
#define SCRATCH_MIN_BYTES ((uint64_t)1 << 20)
#define TMP_OPTS "nr_inodes=65536,mode=1777"
#define SHM_OPTS "nr_inodes=4096,mode=1777"
#define DEV_SIZE "size=64k,nr_inodes=64,mode=755"

/* /tmp gets seven eighths of a cap, /dev/shm one eighth, each within its usual size. */
static uint64_t scratch_size(uint64_t usual, uint64_t cap, unsigned eighths)
{
	if (!cap)
		return usual;
	uint64_t share = cap / 8 * eighths;
	return MAX(MIN(usual, share), SCRATCH_MIN_BYTES);
}

static const char *const step_names[STEP_COUNT_] = {
	[STEP_NONE] = "setup",
	[STEP_CLONE] = "creating the namespaces",
	[STEP_SETGROUPS_DENY] = "writing setgroups",
	[STEP_UID_MAP] = "writing the uid map",
	[STEP_GID_MAP] = "writing the gid map",
	[STEP_SYNC] = "waiting for the launcher",
	[STEP_LIFELINE] = "checking the host is alive",
	[STEP_SELFTEST] = "starting the self-test",
	[STEP_CGROUPNS] = "creating the cgroup namespace",
	[STEP_RPRIVATE] = "making mounts private",
	[STEP_DEVNODES] = "opening the host device nodes",
	[STEP_HOSTDIRS] = "opening the host's /tmp and /dev",
	[STEP_TREE_RO] = "making the host read-only",
	[STEP_REMOUNT_RO] = "remounting a host mount read-only",
	[STEP_GROUPS] = "dropping supplementary groups",
	[STEP_IDS] = "switching to the sandbox user",
	[STEP_TMP] = "mounting /tmp",
	[STEP_DEV] = "building /dev",
	[STEP_SHM] = "mounting /dev/shm",
	[STEP_PROC] = "mounting /proc",
	[STEP_USERNS_MAX] = "forbidding nested user namespaces",
	[STEP_MASK] = "masking /proc, /sys and /run",
	[STEP_HOSTNAME] = "setting the hostname",
	[STEP_LOOPBACK] = "bringing up loopback",
	[STEP_SETSID] = "starting a session",
	[STEP_CAPS] = "limiting capabilities",
	[STEP_NNP] = "setting no_new_privs",
	[STEP_FDS] = "arranging file descriptors",
	[STEP_SIGNALS] = "resetting signals",
	[STEP_EXEC] = "starting the sandbox's init",
};

static const char *const run_step_names[NSINIT_STEP_COUNT] = {
	[NSINIT_STEP_EXEC] = "executing the command",
	[NSINIT_STEP_LANDLOCK] = "enforcing Landlock",
	[NSINIT_STEP_SECCOMP] = "installing the seccomp filter",
	[NSINIT_STEP_SETSID] = "starting a session",
	[NSINIT_STEP_FORK] = "forking",
	[NSINIT_STEP_BPF] = "loading the seccomp program",
	[NSINIT_STEP_CGROUP] = "joining the run's control groups",
	[NSINIT_STEP_PAYLOAD] = "reading the request",
	[NSINIT_STEP_IDS] = "switching to the sandbox user",
	[NSINIT_STEP_RLIMIT] = "setting resource limits",
	[NSINIT_STEP_WORKDIR] = "entering the working directory",
	[NSINIT_STEP_CAPS] = "dropping capabilities",
	[NSINIT_STEP_FDS] = "arranging file descriptors",
	[NSINIT_STEP_RULESET] = "building the Landlock ruleset",
	[NSINIT_STEP_WORKSPACE] = "mounting the workspace",
	[NSINIT_STEP_SOCKET] = "making a socket in the sandbox's network",
	[NSINIT_STEP_MOUNT] = "mounting a host directory (--mount)",
};

static bool force_remount_fallback;

void confine_test_force_remount_fallback(bool on) { force_remount_fallback = on; }

/* ---- host side: the embedded init ------------------------------------------------------ */

static pthread_once_t nsinit_once = PTHREAD_ONCE_INIT;
static int nsinit_memfd = -1;
static const char *nsinit_what;

static void nsinit_build(void)
{
	nsinit_what = "memfd_create";
	int fd = memfd_create("cordon-nsinit", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create("cordon-nsinit", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return;
	nsinit_what = "writing the sandbox's init";
	size_t off = 0;
	while (off < confine_nsinit_blob_len) {
		ssize_t n = write(fd, confine_nsinit_blob + off, confine_nsinit_blob_len - off);
		if (n <= 0) {
			close(fd);
			return;
		}
		off += (size_t)n;
	}
	nsinit_what = "sealing the sandbox's init";
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return;
	}
	nsinit_memfd = fd;
	nsinit_what = NULL;
}

static int nsinit_fd(const char **what)
{
	pthread_once(&nsinit_once, nsinit_build);
	if (nsinit_memfd < 0)
		*what = nsinit_what;
	return nsinit_memfd;
}

bool confine_kernel_has(long nr)
{
	/* An invalid call: ENOSYS only when the call itself is missing. */
	return syscall(nr, -1, NULL, 0, NULL, 0) < 0 && errno != ENOSYS;
}

/* The mount points of the host, parents first (the remount fallback for
 * kernels without mount_setattr). */
static char *host_mounts(void)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return NULL;
	GString *out = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, " ", 6);
		if (g_strv_length(f) < 5)
			continue;
		g_autofree char *mp = g_strcompress(f[4]); /* \040 and friends */
		g_string_append(out, mp);
		g_string_append_c(out, '\0');
	}
	g_string_append_c(out, '\0');
	return g_string_free(out, FALSE);
}

static bool need_remount_fallback(void)
{
	static gsize once;
	static bool missing;
	if (g_once_init_enter(&once)) {
		missing = !confine_kernel_has(SYS_mount_setattr);
		g_once_init_leave(&once, 1);
	}
	return missing || force_remount_fallback;
}

void confine_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
}

/* ---- host side: a zygote ----------------------------------------------------------------- */

/* EOF on the control socket makes it end the sandbox; the kill makes sure,
 * and the pid namespace takes everything with it. Does not wait. */
void zygote_kill(zygote *z)
{
	confine_close_fd(&z->control);
	if (z->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, z->pidfd, SIGKILL, NULL, 0);
}

void confine_wait_hangup(int fd, short events)
{
	struct pollfd pfd = { fd, events, 0 };
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
}

/* Killed with no run alive, the zygote is the sandbox's last process: it
 * can run no more code, and its namespaces' teardown (a millisecond: the
 * mount tree's) need not hold up the host. With runs alive we wait for it:
 * the kernel kills their processes in that teardown. */
void zygote_free(zygote *z)
{
	if (!z)
		return;
	zygote_kill(z);
	if (z->pidfd >= 0 && g_atomic_int_get(&z->live_runs) > 0)
		confine_wait_hangup(z->pidfd, POLLIN);
	confine_close_fd(&z->pidfd);
	/* No process with the ids is left: a run's init reaps its own before it reports, and
	 * the zygote itself keeps the caller's ids. */
	hostids_release(&z->ids);
	g_mutex_clear(&z->lock);
	g_free(z);
}

static bool zygote_alive(const zygote *z)
{
	struct pollfd pfd = { z->pidfd, POLLIN, 0 };
	return poll(&pfd, 1, 0) == 0;
}

/* Waits for the zygote's first record: STARTED, or why setup failed. */
static int wait_started(int pidfd, int status_fd, char *why, size_t whylen)
{
	struct pollfd pfd[2] = { { status_fd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
	for (;;) {
		int n = poll(pfd, 2, 30000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, whylen, "the sandbox did not start within 30 s");
			return -ETIMEDOUT;
		}
		if (pfd[0].revents || pfd[1].revents)
			break;
	}
	struct nsinit_record rec;
	ssize_t got = read(status_fd, &rec, sizeof(rec));
	if (got != (ssize_t)sizeof(rec) || rec.magic != NSINIT_MAGIC) {
		snprintf(why, whylen, "the sandbox's init died during setup");
		return -ECHILD;
	}
	if (rec.kind == NSINIT_REC_STARTED)
		return 0;
	int step = rec.step > 0 && rec.step < STEP_COUNT_ ? rec.step : 0;
	if (rec.step >= NSINIT_ZYGOTE_STEP)
		snprintf(why, whylen, "kernel confinement failed %s (the sandbox's self-test): %s",
			 zygote_run_step_name(rec.step - NSINIT_ZYGOTE_STEP),
			 g_strerror(rec.value));
	else
		snprintf(why, whylen, "kernel confinement failed %s: %s", step_names[step],
			 g_strerror(rec.value));
	return rec.value > 0 ? -rec.value : -EIO;
}

int zygote_start(bool privileged, unsigned in_uid, unsigned in_gid, unsigned out_uid,
		 unsigned out_gid, uint64_t scratch_cap, zygote_overlap *overlap, zygote **ret,
		 char *why, size_t whylen)
{
	const char *what = NULL;
	int bpf = seccomp_filter_fd(&what);
	if (bpf < 0) {
		snprintf(why, whylen, "cannot build the seccomp filter (%s): %s", what,
			 g_strerror(-bpf));
		return bpf;
	}
	int init = nsinit_fd(&what);
	if (init < 0) {
		snprintf(why, whylen, "cannot load the sandbox's init (%s)", what);
		return -EIO;
	}
	hostids ids = { .lock_fd = -1 };
	if (privileged) {
		int c = hostids_claim(&ids, why, whylen);
		if (c < 0)
			return c;
		out_uid = ids.uid;
		out_gid = ids.gid;
	}
	g_autofree child_plan *p = g_new0(child_plan, 1);
	int sync[2] = { -1, -1 }, status[2] = { -1, -1 }, control[2] = { -1, -1 };
	char *stacks = MAP_FAILED;
	g_autofree char *mounts = NULL;
	zygote *z = NULL;
	int r = 0;

	if (pipe2(sync, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) < 0) {
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc): g_autofree frees p (the analyzer ignores cleanup attributes)
		r = -errno;
		snprintf(why, whylen, "pipe: %s", g_strerror(-r));
		goto out;
	}
	p->privileged = privileged;
	p->in_uid = in_uid;
	p->in_gid = in_gid;
	snprintf(p->uid_map, sizeof(p->uid_map), "%u %u 1", in_uid, out_uid);
	snprintf(p->gid_map, sizeof(p->gid_map), "%u %u 1", in_gid, out_gid);
	snprintf(p->tmp_opts, sizeof(p->tmp_opts), "size=%" PRIu64 ",%s,uid=%u,gid=%u",
		 scratch_size(TMP_BYTES, scratch_cap, 7), TMP_OPTS, in_uid, in_gid);
	snprintf(p->shm_opts, sizeof(p->shm_opts), "size=%" PRIu64 ",%s,uid=%u,gid=%u",
		 scratch_size(SHM_BYTES, scratch_cap, 1), SHM_OPTS, in_uid, in_gid);
	snprintf(p->dev_opts, sizeof(p->dev_opts), "%s,uid=%u,gid=%u", DEV_SIZE, in_uid, in_gid);
	p->fd_sync_r = sync[0];
	p->fd_sync_w = sync[1];
	p->fd_status_w = status[1];
	p->fd_control = control[1];
	p->fd_host_control = control[0];
	p->fd_bpf = bpf;
	p->fd_nsinit = init;
	char abi[16], uid[16], gid[16];
	snprintf(abi, sizeof(abi), "Z%d", landlock_abi());
	snprintf(uid, sizeof(uid), "%u", in_uid);
	snprintf(gid, sizeof(gid), "%u", in_gid);
	char *argv[] = { "cordon-nsinit", abi, uid, gid, privileged ? "R" : "U", NULL };
	p->argv = argv;
	if (need_remount_fallback()) {
		mounts = host_mounts();
		if (!mounts) {
			r = -EIO;
			snprintf(why, whylen, "cannot read the host's mount table");
			goto out;
		}
		p->mounts = mounts;
	}
	stacks = mmap(NULL, NSTACKS * STACK_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stacks == MAP_FAILED) {
		r = -errno;
		snprintf(why, whylen, "mmap: %s", g_strerror(-r));
		goto out;
	}
	p->stack_a_top = stacks + STACK_SIZE;
	p->stack_b_top = stacks + 2 * STACK_SIZE;
	p->stack_c_top = stacks + 3 * STACK_SIZE;
	p->stack_d_top = stacks + 4 * STACK_SIZE;
	p->ll_abi = landlock_abi();
	ll_masks_for(p->ll_abi, &p->ll);

	/* No signal handler of the host may run on the children's stacks. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* A shares our fd table: B's pidfd lands in it. */
	p->pidfd = -1;
	pid_t a = clone(child_stage_a, p->stack_a_top,
			CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, p);
	int clone_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (a < 0) {
		r = -clone_errno;
		snprintf(why, whylen, "clone: %s", g_strerror(clone_errno));
		goto out;
	}
	reap(a);
	confine_close_fd(&sync[0]);
	confine_close_fd(&sync[1]);
	confine_close_fd(&status[1]);
	confine_close_fd(&control[1]);
	if (p->err < 0) {
		r = p->err;
		int step = p->step > 0 && p->step < STEP_COUNT_ ? p->step : 0;
		snprintf(why, whylen, "kernel confinement failed %s: %s", step_names[step],
			 g_strerror(-r));
		if (p->pidfd >= 0)
			confine_wait_hangup(p->pidfd, POLLIN); /* A killed it */
		confine_close_fd(&p->pidfd);
		goto out;
	}
	z = g_new0(zygote, 1);
	g_mutex_init(&z->lock);
	z->pidfd = p->pidfd;
	z->control = control[0];
	control[0] = -1;
	z->privileged = privileged;
	z->in_uid = in_uid;
	z->in_gid = in_gid;
	z->out_uid = out_uid;
	z->out_gid = out_gid;
	z->scratch_cap = scratch_cap;
	z->ids = ids;
	ids.lock_fd = -1;
	if (overlap) {
		overlap->ran = true;
		r = overlap->fn(overlap->arg, why, whylen);
		if (r < 0)
			goto out;
	}
	r = wait_started(z->pidfd, status[0], why, whylen);
	if (r < 0)
		goto out;
	*ret = g_steal_pointer(&z);
out:
	/* B runs on our stack until its execve: it is done, or dead once we
	 * waited for it. */
	if (r < 0 && z) {
		zygote_kill(z);
		confine_wait_hangup(z->pidfd, POLLIN);
		zygote_free(g_steal_pointer(&z));
	}
	hostids_release(&ids); /* not handed to a zygote: its child is gone or never was */
	if (stacks != MAP_FAILED)
		munmap(stacks, NSTACKS * STACK_SIZE);
	confine_close_fd(&sync[0]);
	confine_close_fd(&sync[1]);
	confine_close_fd(&status[0]);
	confine_close_fd(&status[1]);
	confine_close_fd(&control[0]);
	confine_close_fd(&control[1]);
	return r;
}

static int zygote_errno(int r) { return r == -EPIPE || r == -ECONNRESET ? -ECHILD : r; }

/* Sends one request (under z->lock); its reply is read later, in order. */
int zygote_send(zygote *z, const struct nsinit_request *req, const void *inline_data,
		size_t inline_len, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * NSINIT_MAX_FDS)];
	} c;
	struct iovec iov[2] = { { (void *)req, sizeof(*req) },
				{ (void *)inline_data, inline_len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = inline_len ? 2 : 1 };
	if (nfds > 0) {
		mh.msg_control = c.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	while ((n = sendmsg(z->control, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return zygote_errno(-errno);
	z->pending++;
	return 0;
}

/* Reads the oldest unread reply (under z->lock): its error and step, and
 * the fd that may come with it (closed when ret_fd is NULL). */
static int zygote_recv(zygote *z, int *ret_fd, int *ret_step)
{
	struct nsinit_reply rep;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} rc;
	struct iovec riov = { &rep, sizeof(rep) };
	struct msghdr rmh = { .msg_iov = &riov,
			      .msg_iovlen = 1,
			      .msg_control = rc.buf,
			      .msg_controllen = sizeof(rc.buf) };
	ssize_t n;
	while ((n = recvmsg(z->control, &rmh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return zygote_errno(-errno);
	z->pending--;
	if (n != (ssize_t)sizeof(rep) || rep.magic != NSINIT_MAGIC)
		return -ECHILD; /* EOF: the init is gone */
	int fd = -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&rmh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	*ret_step = rep.step;
	if (rep.err || !ret_fd) {
		if (fd >= 0)
			close(fd);
		return -rep.err;
	}
	*ret_fd = fd;
	return 0;
}

/* One request and its reply (and the fd that may come with it). It goes
 * out at once, behind any sent ahead, whose replies come first: the first
 * of those that failed (a workspace that did not mount) stays the zygote's
 * error, this call's and every later one's. (A run queued behind a failed
 * workspace fails on its own, at its working directory.) */
int zygote_call(zygote *z, const struct nsinit_request *req, const void *inline_data,
		size_t inline_len, const int *fds, int nfds, int *ret_fd, int *ret_step)
{
	g_mutex_lock(&z->lock);
	/* After a last run the zygote is that run's init and answers nothing. */
	int r = z->failed  ? z->failed
		: z->spent ? -EPIPE
			   : zygote_send(z, req, inline_data, inline_len, fds, nfds);
	if (r == 0 && req->kind == NSINIT_REQ_RUN && (req->flags & NSINIT_RUN_LAST))
		z->spent = true;
	while (r == 0 && z->pending > 1) {
		int e = zygote_recv(z, NULL, &z->failed_step);
		if (e < 0)
			r = z->failed = e;
	}
	if (r == 0)
		r = zygote_recv(z, ret_fd, ret_step);
	else
		*ret_step = z->failed_step;
	g_mutex_unlock(&z->lock);
	return r;
}

const char *zygote_run_step_name(int step)
{
	return step >= 0 && step < NSINIT_STEP_COUNT && run_step_names[step] ? run_step_names[step]
									     : "setup";
}

/* ---- host side: the warm pool -------------------------------------------------------------- */

/* The probe's trial zygote, kept for the next sandbox of the same identity,
 * with the control groups its first run will use (made while it started). */
static GMutex pool_lock;
static zygote *pool;
static limits_plan pool_plan;
static limits_cgroup pool_cg;
static bool pool_has_cg;

/* Takes the pooled zygote when it fits; its groups go to *ret_cg when they
 * were made for plan (else they are removed). */
zygote *zygote_pool_take(bool privileged, unsigned in_uid, unsigned in_gid, const limits_plan *plan,
			 limits_cgroup *ret_cg, bool *ret_have_cg)
{
	g_mutex_lock(&pool_lock);
	zygote *z = NULL;
	limits_cgroup cg = pool_cg;
	bool have_cg = false;
	if (pool && pool->privileged == privileged && pool->in_uid == in_uid &&
	    pool->in_gid == in_gid && plan && pool->scratch_cap == limits_plan_scratch_cap(plan) &&
	    zygote_alive(pool)) {
		z = g_steal_pointer(&pool);
		have_cg = pool_has_cg;
		pool_has_cg = false;
	}
	g_mutex_unlock(&pool_lock);
	*ret_have_cg = false;
	if (have_cg && plan && limits_plan_equal(plan, &pool_plan)) {
		*ret_cg = cg;
		*ret_have_cg = true;
	} else if (have_cg) {
		limits_cgroup_destroy(&cg);
	}
	return z;
}

void zygote_pool_put(zygote *z, const limits_plan *plan, limits_cgroup *cg)
{
	g_mutex_lock(&pool_lock);
	zygote *old = pool;
	limits_cgroup old_cg = pool_cg;
	bool old_has_cg = pool_has_cg;
	pool = z;
	pool_has_cg = cg != NULL;
	if (cg) {
		pool_plan = *plan;
		pool_cg = *cg;
	}
	g_mutex_unlock(&pool_lock);
	zygote_free(old);
	if (old_has_cg)
		limits_cgroup_destroy(&old_cg);
}

void confine_release_warm(void) { zygote_pool_put(NULL, NULL, NULL); }
