/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel tier's launcher (confine.h): sandboxes, runs and the probe's
 * trial, on the zygotes of zygote.c. */
#include "config.h"

#include "child.h"
#include "confine.h"
#include "nsinit-proto.h"
#include "privroot.h"
#include "wsowner.h"
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/mount.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

/* The work's id inside when the caller's own id would be 0. */
#define INSIDE_USER 1000u

struct confine_sandbox {
	char ws_path[PATH_MAX]; /* canonical; the same path inside */
	dev_t ws_dev;
	ino_t ws_ino;
	limits_plan limits;
	char limits_desc[512];
	zygote *z;
	/* Control groups finished runs left empty, for the next runs: a
	 * group is made once, not per run. */
	GMutex cg_lock;
	limits_cgroup idle[4];
	int nidle;
	/* As root, the host ids the work's files take (a workspace's owner, or
	 * the work's own for our private root): the host's writes take them too. */
	bool file_ids;
	uid_t file_uid;
	gid_t file_gid;
};

/* ---- host side: id-mapping user namespaces -------------------------------------------- */

/* Root of the initial user namespace, with the capabilities to map ids. */
static bool is_privileged(void)
{
	if (geteuid() != 0)
		return false;
	g_autofree char *map = NULL;
	if (!g_file_get_contents("/proc/self/uid_map", &map, NULL, NULL))
		return false;
	g_auto(GStrv) f = g_strsplit_set(g_strstrip(map), " \t\n", -1);
	const char *w[3];
	guint n = 0;
	for (char **x = f; *x; x++)
		if (**x && n++ < 3)
			w[n - 1] = *x;
	return n == 3 && strcmp(w[0], "0") == 0 && strcmp(w[1], "0") == 0 &&
	       strcmp(w[2], "4294967295") == 0;
}

static int make_idmap_userns(uid_t owner_uid, gid_t owner_gid, unsigned out_uid, unsigned out_gid)
{
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -errno;
	void *stack = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		int e = -errno;
		close(sync[0]);
		close(sync[1]);
		return e;
	}
	int r = 0;
	pid_t pid = clone(child_idmap, (char *)stack + (64 << 10),
			  CLONE_VM | CLONE_NEWUSER | SIGCHLD, (void *)(intptr_t)sync[0]);
	if (pid < 0) {
		r = -errno;
	} else {
		char path[64], map[64];
		snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
		snprintf(map, sizeof(map), "%u %u 1", (unsigned)owner_uid, out_uid);
		if (child_write_file(path, map) < 0)
			r = -EPERM;
		snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
		snprintf(map, sizeof(map), "%u %u 1", (unsigned)owner_gid, out_gid);
		if (r == 0 && child_write_file(path, map) < 0)
			r = -EPERM;
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if (r == 0) {
			r = open(path, O_RDONLY | O_CLOEXEC);
			if (r < 0)
				r = -errno;
		}
		if (write(sync[1], "x", 1) < 0) {
			/* the child dies with the pipe anyway */
		}
		close(sync[1]);
		sync[1] = -1;
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	close(sync[0]);
	if (sync[1] >= 0)
		close(sync[1]);
	munmap(stack, 64 << 10);
	return r;
}

/* ---- host side: sandboxes ----------------------------------------------------------------- */

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

typedef struct identity {
	bool privileged;
	unsigned in_uid, in_gid, out_uid, out_gid;
} identity;

static identity our_identity(void)
{
	identity id = { .privileged = is_privileged() };
	if (id.privileged) {
		/* The host ids are the sandbox's own, claimed by its zygote (hostids.h). */
		id.in_uid = id.in_gid = INSIDE_USER;
	} else {
		id.out_uid = geteuid();
		id.out_gid = getegid();
		id.in_uid = id.out_uid ? id.out_uid : INSIDE_USER;
		id.in_gid = id.out_uid ? id.out_gid : INSIDE_USER;
	}
	return id;
}

static int get_zygote(const identity *id, confine_sandbox *s, char *why, size_t whylen)
{
	bool have_cg = false;
	s->z = zygote_pool_take(id->privileged, id->in_uid, id->in_gid, &s->limits, &s->idle[0],
				&have_cg);
	if (have_cg)
		s->nidle = 1;
	if (s->z)
		return 0;
	return zygote_start(id->privileged, id->in_uid, id->in_gid, id->out_uid, id->out_gid,
			    limits_plan_scratch_cap(&s->limits), NULL, &s->z, why, whylen);
}

int confine_workspace_owner_check(int root_fd, char *why, size_t whylen)
{
	struct stat st;
	if (fstat(root_fd, &st) < 0) {
		snprintf(why, whylen, "cannot examine the workspace: %s", g_strerror(errno));
		return -errno;
	}
	return wsowner_check(&st, our_identity().privileged, why, whylen);
}

/* As root, the detached mount of root_fd the zygote attaches (nosuid,
 * nodev): idmapped so that the work owns the owner's files, or plain for a
 * root-owned extra mount (read-only: confine_sandbox_mount). Returns it or -errno. */
static int host_mount(int root_fd, const struct stat *st, const identity *id, bool idmap,
		      uint64_t attrs, char *why, size_t whylen)
{
	int userns = idmap ? make_idmap_userns(st->st_uid, st->st_gid, id->out_uid, id->out_gid)
			   : -1;
	if (idmap && userns < 0) {
		snprintf(why, whylen,
			 "cannot create a user namespace (the workspace's id "
			 "mapping): %s",
			 g_strerror(-userns));
		return userns;
	}
	int mnt = (int)syscall(SYS_open_tree, root_fd, "",
			       OPEN_TREE_CLONE | AT_EMPTY_PATH | OPEN_TREE_CLOEXEC);
	struct mount_attr ma = {
		.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | attrs |
			    (idmap ? MOUNT_ATTR_IDMAP : 0),
		.userns_fd = idmap ? (uint64_t)userns : 0,
	};
	int r = 0;
	if (mnt < 0 || syscall(SYS_mount_setattr, mnt, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0) {
		r = -errno;
		snprintf(why, whylen,
			 "cannot make %s mount of the workspace (as root the work runs "
			 "as an unprivileged id and needs one): %s",
			 idmap ? "an idmapped" : "a", g_strerror(-r));
		confine_close_fd(&mnt);
	}
	if (userns >= 0)
		close(userns);
	return r < 0 ? r : mnt;
}

/* Sends the zygote the workspace request for the sandbox's path: with mnt (a
 * detached mount of ours, as root) or without (the zygote finds the directory st
 * names). Sent ahead: the zygote mounts it while we return to the host, and the
 * first run reads the reply (and fails with its error). */
static int send_workspace(confine_sandbox *s, int mnt, const struct stat *st, char *why,
			  size_t whylen)
{
	size_t len = strlen(s->ws_path) + 1;
	struct nsinit_request req = {
		.magic = NSINIT_MAGIC,
		.kind = NSINIT_REQ_WORKSPACE,
		.payload_len = len,
		.ws_dev = ((uint64_t)major(st->st_dev) << 32) | minor(st->st_dev),
		.ws_ino = st->st_ino,
	};
	g_mutex_lock(&s->z->lock);
	int r = zygote_send(s->z, &req, s->ws_path, len, &mnt, mnt >= 0 ? 1 : 0);
	g_mutex_unlock(&s->z->lock);
	if (r < 0)
		snprintf(why, whylen, "kernel confinement failed mounting the workspace: %s",
			 g_strerror(-r));
	return r;
}

/* Mounts the workspace in the zygote: as root an idmapped mount we make
 * (the work, the sandbox's own host uid, then owns the owner's files); else the
 * zygote finds the directory by path and checks it is the one we hold. */
static int attach_workspace(confine_sandbox *s, const identity *id, int root_fd,
			    const struct stat *st, char *why, size_t whylen)
{
	int mnt = -1;
	if (id->privileged) {
		mnt = host_mount(root_fd, st, id, true, 0, why, whylen);
		if (mnt < 0)
			return mnt;
	}
	int r = send_workspace(s, mnt, st, why, whylen);
	confine_close_fd(&mnt);
	return r;
}

bool confine_can_mount(void) { return our_identity().privileged; }

int confine_sandbox_mount(confine_sandbox *s, int dir_fd, const char *inside, bool rw, char *why,
			  size_t whylen)
{
	identity id = our_identity();
	struct stat st;
	if (!id.privileged || fstat(dir_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "the mount at %s cannot be made here (%s)", inside,
			 id.privileged ? "not a directory" : "mounts need a privileged host");
		return id.privileged ? -ENOTDIR : -ENOTSUP;
	}
	/* Writable, its files take the owner's ids as the workspace's do, so not root's. */
	if (rw && confine_workspace_owner_check(dir_fd, why, whylen) < 0)
		return -EPERM;
	id.out_uid = s->z->out_uid;
	id.out_gid = s->z->out_gid;
	bool idmap = st.st_uid != 0 && st.st_gid != 0;
	int mnt = host_mount(dir_fd, &st, &id, idmap, rw ? 0 : MOUNT_ATTR_RDONLY, why, whylen);
	if (mnt < 0)
		return mnt;
	struct nsinit_request req = {
		.magic = NSINIT_MAGIC,
		.kind = NSINIT_REQ_MOUNT,
		.flags = rw ? NSINIT_MOUNT_RW : 0,
		.payload_len = strlen(inside) + 1,
	};
	int step = 0, none = -1;
	int r = zygote_call(s->z, &req, inside, req.payload_len, &mnt, 1, &none, &step);
	confine_close_fd(&mnt);
	confine_close_fd(&none);
	if (r < 0)
		snprintf(why, whylen,
			 "kernel confinement failed mounting a host directory at %s: %s%s", inside,
			 g_strerror(-r),
			 r == -ENOENT ? " (outside /tmp the inside path must exist)" : "");
	return r;
}

/* The private root of an unprivileged host, which cannot mount: a tmpfs
 * the zygote makes at the directory's path. *ret_fd: its root, for the
 * host's file operations. */
static int attach_private_tmpfs(confine_sandbox *s, uint64_t size, int *ret_fd, char *why,
				size_t whylen)
{
	size_t len = strlen(s->ws_path) + 1;
	struct nsinit_request req = {
		.magic = NSINIT_MAGIC,
		.kind = NSINIT_REQ_WORKSPACE,
		.flags = NSINIT_WS_TMPFS,
		.payload_len = len,
		.tmpfs_size = size,
	};
	int mnt = -1, step = 0;
	int r = zygote_call(s->z, &req, s->ws_path, len, NULL, 0, &mnt, &step);
	if (r == 0 && mnt < 0)
		r = -EPROTO;
	int fd = r < 0 ? -1 : openat(mnt, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r == 0 && fd < 0)
		r = -errno;
	confine_close_fd(&mnt);
	if (r < 0) {
		snprintf(why, whylen,
			 "kernel confinement failed making the private root's tmpfs: %s",
			 g_strerror(-r));
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* As root, our private root: a detached tmpfs of ours that only the sandbox
 * mounts (at the sandbox's root path), never the host's tree, so closing
 * has nothing to unmount (an umount waits for an RCU grace period) and a host
 * that dies leaves no mount behind. Given to the work's host ids outright, so
 * no idmapped mount is needed, and the host's writes take those ids too
 * (confine_sandbox_file_ids). *ret_fd: its root, for the host's file operations. */
static int own_private_root(confine_sandbox *s, const identity *id, const struct stat *st,
			    uint64_t size, int *ret_fd, char *why, size_t whylen)
{
	const char *what = NULL;
	int mnt = private_root_tmpfs(size, &what);
	if (mnt < 0) {
		snprintf(why, whylen, "%s: %s", what, g_strerror(-mnt));
		return mnt;
	}
	int fd = openat(mnt, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd < 0 ? -errno : 0;
	if (r == 0 && fchown(fd, id->out_uid, id->out_gid) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(why, whylen, "cannot give the private root to the sandbox's user: %s",
			 g_strerror(-r));
	} else {
		s->file_ids = true;
		s->file_uid = id->out_uid;
		s->file_gid = id->out_gid;
		r = send_workspace(s, mnt, st, why, whylen);
	}
	confine_close_fd(&mnt);
	if (r < 0) {
		confine_close_fd(&fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* The sandbox's root path: root_fd's (canonical), or private_path without one. */
static int name_root(confine_sandbox *s, int root_fd, const char *private_path, char *why,
		     size_t whylen)
{
	if (root_fd < 0) {
		if (!private_path || private_path[0] != '/' ||
		    g_strlcpy(s->ws_path, private_path, sizeof(s->ws_path)) >= sizeof(s->ws_path)) {
			snprintf(why, whylen, "no directory for the sandbox");
			return -EINVAL;
		}
		return 0;
	}
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
	ssize_t n = readlink(link, s->ws_path, sizeof(s->ws_path) - 1);
	if (n <= 0 || s->ws_path[0] != '/') {
		snprintf(why, whylen, "cannot name the workspace directory");
		return n < 0 ? -errno : -EINVAL;
	}
	s->ws_path[n] = '\0';
	return 0;
}

int confine_sandbox_new(int root_fd, const char *private_path, const cordon_plugin_limits *limits,
			uint64_t private_disk, int *ret_root_fd, confine_sandbox **ret, char *why,
			size_t whylen)
{
	if (!confine_kernel_has(SYS_open_tree) || !confine_kernel_has(SYS_move_mount)) {
		snprintf(why, whylen, "the kernel lacks open_tree/move_mount (Linux 5.2)");
		return -ENOSYS;
	}
	if (root_fd < 0 && !private_disk) {
		snprintf(why, whylen, "a workspace needs its directory");
		return -EINVAL;
	}
	g_autofree confine_sandbox *s = g_new0(confine_sandbox, 1);
	int r = limits_plan_make(limits, &s->limits, why, whylen);
	if (r < 0)
		return r;
	g_mutex_init(&s->cg_lock);
	limits_plan_describe(&s->limits, s->limits_desc, sizeof(s->limits_desc));
	r = name_root(s, root_fd, private_path, why, whylen);
	if (r < 0)
		return r;
	/* /run is masked in the sandbox (mask_dirs): nothing below it can be
	 * mounted there. */
	if (strcmp(s->ws_path, "/") == 0 || strcmp(s->ws_path, "/tmp") == 0 ||
	    strcmp(s->ws_path, "/dev") == 0 || path_under(s->ws_path, "/proc") ||
	    path_under(s->ws_path, "/sys") || path_under(s->ws_path, "/run") ||
	    strstr(s->ws_path, " (deleted)")) {
		snprintf(why, whylen,
			 "the workspace cannot be /, /tmp, /dev, under /proc, "
			 "/sys or /run, or deleted");
		return -EINVAL;
	}
	/* No host directory: nothing of the host to find or check (a tmpfs of our own). */
	struct stat st = { .st_mode = S_IFDIR };
	if (root_fd >= 0 && (fstat(root_fd, &st) < 0 || !S_ISDIR(st.st_mode))) {
		snprintf(why, whylen, "the workspace is not a directory");
		return -ENOTDIR;
	}
	s->ws_dev = st.st_dev;
	s->ws_ino = st.st_ino;
	identity id = our_identity();
	s->file_ids = id.privileged && st.st_uid != 0;
	s->file_uid = st.st_uid;
	s->file_gid = st.st_gid;
	r = get_zygote(&id, s, why, whylen);
	if (r < 0)
		return r;
	id.out_uid = s->z->out_uid;
	id.out_gid = s->z->out_gid;
	if (private_disk && !id.privileged)
		r = attach_private_tmpfs(s, private_disk, ret_root_fd, why, whylen);
	else if (private_disk)
		r = own_private_root(s, &id, &st, private_disk, ret_root_fd, why, whylen);
	else
		r = attach_workspace(s, &id, root_fd, &st, why, whylen);
	if (r < 0) {
		confine_sandbox_free(g_steal_pointer(&s));
		return r;
	}
	*ret = g_steal_pointer(&s);
	return 0;
}

void confine_sandbox_free(confine_sandbox *s)
{
	if (!s)
		return;
	/* The idle groups hold no process of the sandbox: they go while its
	 * namespaces are torn down on the other CPU; then we wait for that. */
	if (s->z)
		zygote_kill(s->z);
	for (int i = 0; i < s->nidle; i++)
		limits_cgroup_destroy(&s->idle[i]);
	zygote_free(s->z);
	g_mutex_clear(&s->cg_lock);
	g_free(s);
}

bool confine_sandbox_file_ids(const confine_sandbox *s, uid_t *ret_uid, gid_t *ret_gid)
{
	if (!s || !s->file_ids)
		return false;
	*ret_uid = s->file_uid;
	*ret_gid = s->file_gid;
	return true;
}

const char *confine_sandbox_limits(const confine_sandbox *s) { return s->limits_desc; }

int confine_sandbox_socket(confine_sandbox *s) { return confine_sandbox_socket_family(s, AF_INET); }

int confine_sandbox_socket_family(confine_sandbox *s, int family)
{
	struct nsinit_request req = { .magic = NSINIT_MAGIC,
				      .kind = NSINIT_REQ_SOCKET,
				      .flags = family == AF_INET6 ? NSINIT_SOCKET_INET6 : 0 };
	int fd = -1, step = 0;
	int r = zygote_call(s->z, &req, NULL, 0, NULL, 0, &fd, &step);
	if (r == 0 && fd < 0)
		r = -EPROTO;
	return r < 0 ? r : fd;
}

/* The init's socket, bound and listening by the host: a socket's namespace
 * is fixed when it is made, so bind() and listen() here act on the
 * sandbox's loopback, and the init needs no request of its own for it. */
int confine_sandbox_listen(confine_sandbox *s, uint16_t *ret_port)
{
	int fd = confine_sandbox_socket(s);
	if (fd < 0)
		return fd;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	*ret_port = ntohs(a.sin_port);
	return fd;
}

/* ---- host side: runs ---------------------------------------------------------------------- */

/* argv, envp and the workdir, NUL-terminated, as the zygote reads them. */
static GString *make_payload(const confine_request *req, uint32_t *argc, uint32_t *envc)
{
	GString *b = g_string_new(NULL);
	for (*argc = 0; req->argv[*argc]; (*argc)++)
		g_string_append_len(b, req->argv[*argc], (gssize)strlen(req->argv[*argc]) + 1);
	for (*envc = 0; req->envp && req->envp[*envc]; (*envc)++)
		g_string_append_len(b, req->envp[*envc], (gssize)strlen(req->envp[*envc]) + 1);
	const char *wd = req->workdir ? req->workdir : "";
	g_string_append_len(b, wd, (gssize)strlen(wd) + 1);
	return b;
}

/* A payload too large for the message goes in a memfd. */
static int payload_memfd(const GString *b)
{
	int fd = memfd_create("cordon-run", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < b->len) {
		ssize_t n = write(fd, b->str + off, b->len - off);
		if (n <= 0) {
			close(fd);
			return -EIO;
		}
		off += (size_t)n;
	}
	return fd;
}

/* A run's control groups: an idle set of the sandbox's, or new ones. */
static int cgroup_get(confine_sandbox *s, const limits_plan *lp, limits_cgroup *cg, char *why,
		      size_t whylen)
{
	if (s) {
		g_mutex_lock(&s->cg_lock);
		bool have = s->nidle > 0;
		if (have)
			*cg = s->idle[--s->nidle];
		g_mutex_unlock(&s->cg_lock);
		if (have)
			return 0;
	}
	return limits_cgroup_create(lp, cg, why, whylen);
}

static void cgroup_put(confine_sandbox *s, limits_cgroup *cg)
{
	if (s) {
		g_mutex_lock(&s->cg_lock);
		bool kept = s->nidle < (int)G_N_ELEMENTS(s->idle);
		if (kept)
			s->idle[s->nidle++] = *cg;
		g_mutex_unlock(&s->cg_lock);
		if (kept)
			return;
	}
	limits_cgroup_destroy(cg);
}

static int spawn_in(confine_sandbox *s, zygote *z, const limits_plan *lp,
		    const confine_request *req, confine_child *ret, char *why, size_t whylen)
{
	confine_child c = { .pidfd = -1, .status_fd = -1, .owner = s };
	int status[2] = { -1, -1 }, payload = -1;
	g_autoptr(GString) b = NULL;
	int r;
	if (req->workdir && g_path_is_absolute(req->workdir)) {
		snprintf(why, whylen, "the working directory must be relative");
		return -EINVAL;
	}
	if (pipe2(status, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(why, whylen, "pipe: %s", g_strerror(-r));
		goto out;
	}
	r = cgroup_get(s, lp, &c.cg, why, whylen);
	if (r < 0)
		goto out;
	c.have_cg = true;
	limits_cgroup_begin(&c.cg);
	struct nsinit_request q = {
		.magic = NSINIT_MAGIC,
		.kind = NSINIT_REQ_RUN,
		.flags = (req->last ? NSINIT_RUN_LAST : 0) | (req->ctty ? NSINIT_RUN_CTTY : 0),
		.ncgroups = (uint32_t)c.cg.ndirs,
	};
	b = make_payload(req, &q.argc, &q.envc);
	q.payload_len = b->len;
	int fds[NSINIT_MAX_FDS] = { req->stdin_fd, req->stdout_fd, req->stderr_fd, status[1] };
	int nfds = 4;
	for (int i = 0; i < c.cg.ndirs; i++)
		fds[nfds++] = c.cg.procs_fd[i];
	if (b->len > NSINIT_INLINE_MAX) {
		payload = payload_memfd(b);
		if (payload < 0) {
			r = payload;
			snprintf(why, whylen, "cannot pass the command: %s", g_strerror(-r));
			goto out;
		}
		q.flags |= NSINIT_RUN_PAYLOAD_FD;
		fds[nfds++] = payload;
	}
	for (int i = 0; i < lp->nrlimits && i < NSINIT_MAX_RLIMITS; i++) {
		q.rlimits[i].resource = (uint32_t)lp->rlimits[i].resource;
		q.rlimits[i].value = lp->rlimits[i].value;
		q.nrlimits++;
	}
	int step = 0;
	bool inline_payload = !(q.flags & NSINIT_RUN_PAYLOAD_FD);
	r = zygote_call(z, &q, inline_payload ? b->str : NULL, inline_payload ? b->len : 0, fds,
			nfds, req->last ? NULL : &c.pidfd, &step);
	if (r == 0 && req->last) {
		/* The zygote is the run's init now. */
		c.last = true;
		c.pidfd = fcntl(z->pidfd, F_DUPFD_CLOEXEC, 3);
		if (c.pidfd < 0) {
			r = -errno;
			zygote_kill(z);
			snprintf(why, whylen, "dup: %s", g_strerror(-r));
			goto out;
		}
	}
	if (r < 0) {
		if (r == -ECHILD)
			snprintf(why, whylen, "the sandbox's init is gone");
		else if (step == NSINIT_STEP_WORKSPACE)
			snprintf(why, whylen,
				 "kernel confinement failed mounting the workspace: %s",
				 r == -ESTALE ? "the directory changed under its path"
					      : g_strerror(-r));
		else
			snprintf(why, whylen, "the sandbox could not start the run (%s): %s",
				 zygote_run_step_name(step), g_strerror(-r));
		goto out;
	}
	c.status_fd = status[0];
	c.z = z;
	g_atomic_int_inc(&z->live_runs);
	status[0] = -1;
	*ret = c;
	c.have_cg = false;
out:
	confine_close_fd(&status[0]);
	confine_close_fd(&status[1]);
	confine_close_fd(&payload);
	if (c.have_cg)
		limits_cgroup_destroy(&c.cg);
	return r;
}

int confine_spawn(confine_sandbox *s, const confine_request *req, confine_child *ret, char *why,
		  size_t whylen)
{
	return spawn_in(s, s->z, &s->limits, req, ret, why, whylen);
}

int confine_child_end_fd(const confine_child *c)
{
	/* A last run's init reports the work's end once it has killed and
	 * reaped everything else: the record, not its own exit, ends the run. */
	return c->last ? c->status_fd : c->pidfd;
}

void confine_child_stop(confine_child *c, bool kill_it)
{
	if (c->pidfd < 0)
		return;
	if (kill_it)
		syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
	/* A last run not killed: the zygote closes the status pipe once it has
	 * swept its namespace; its own teardown need not hold up the run
	 * (finish waits for it when no end was reported). Else the init's exit,
	 * which comes after its namespace is empty. */
	if (c->last && !kill_it)
		confine_wait_hangup(c->status_fd, 0);
	else
		confine_wait_hangup(c->pidfd, POLLIN);
}

int confine_child_finish(confine_child *c, bool killed, cordon_plugin_run_status *st,
			 bool *ret_exec_failed, char *why, size_t whylen)
{
	struct nsinit_record rec;
	bool exited = false;
	int status = 0;
	*ret_exec_failed = false;
	fcntl(c->status_fd, F_SETFL, O_NONBLOCK);
	while (read(c->status_fd, &rec, sizeof(rec)) == (ssize_t)sizeof(rec)) {
		if (rec.magic != NSINIT_MAGIC)
			break;
		if (rec.kind == NSINIT_REC_EXITED) {
			exited = true;
			status = rec.value;
		} else if ((rec.kind == NSINIT_REC_EXEC_FAILED ||
			    rec.kind == NSINIT_REC_SETUP_FAILED) &&
			   !killed) {
			*ret_exec_failed = rec.kind == NSINIT_REC_EXEC_FAILED &&
					   rec.step == NSINIT_STEP_EXEC;
			if (*ret_exec_failed)
				snprintf(why, whylen, "cannot execute the command: %s",
					 g_strerror(rec.value));
			else
				snprintf(why, whylen, "kernel confinement failed %s: %s",
					 zygote_run_step_name(rec.step), g_strerror(rec.value));
			return rec.value > 0 ? -rec.value : -EIO;
		}
	}
	if (c->last && !exited)
		confine_wait_hangup(c->pidfd,
				    POLLIN); /* no sweep reported: wait for the kernel's */
	if (c->have_cg && limits_cgroup_oom_killed(&c->cg))
		st->flags |= CORDON_PLUGIN_RUNSTATUS_OOM;
	if (exited) {
		if (WIFSIGNALED(status)) {
			st->flags |= CORDON_PLUGIN_RUNSTATUS_SIGNALED;
			st->signal = WTERMSIG(status);
		} else {
			st->flags |= CORDON_PLUGIN_RUNSTATUS_EXITED;
			st->exit_code = WEXITSTATUS(status);
		}
		return 0;
	}
	if (killed) {
		st->flags |= CORDON_PLUGIN_RUNSTATUS_SIGNALED;
		st->signal = SIGKILL;
		return 0;
	}
	snprintf(why, whylen, "the run's init ended without reporting the work's status");
	return -ECHILD;
}

void confine_child_release(confine_child *c)
{
	confine_close_fd(&c->status_fd);
	confine_close_fd(&c->pidfd);
	if (c->z)
		g_atomic_int_add(&c->z->live_runs, -1);
	c->z = NULL;
	/* The run's processes are gone (stop waited for its init, or a last
	 * run's zygote had reaped them): its groups are empty. */
	if (c->have_cg)
		cgroup_put(c->owner, &c->cg);
	c->have_cg = false;
}

/* ---- the probe's trial -------------------------------------------------------------------- */

/* While the trial sandbox builds on the other CPU: the host's own checks
 * and limits, then what the first sandbox after a probe needs: the first
 * run's control groups (best effort: a failure there is met again, and
 * reported, where they are needed). */
typedef struct trial_warmup {
	const cordon_plugin_limits *limits;
	confine_precheck_fn precheck;
	limits_plan plan;
	limits_cgroup cg;
	bool have_cg;
} trial_warmup;

static int trial_check(trial_warmup *w, char *why, size_t whylen)
{
	if (w->precheck && w->precheck(why, whylen))
		return -ENOTSUP;
	return limits_plan_make(w->limits, &w->plan, why, whylen);
}

static int trial_warm(void *arg, char *why, size_t whylen)
{
	trial_warmup *w = arg;
	int r = trial_check(w, why, whylen);
	if (r < 0)
		return r;
	char ignored[256];
	w->have_cg = limits_cgroup_create(&w->plan, &w->cg, ignored, sizeof(ignored)) == 0;
	return 0;
}

int confine_trial(const cordon_plugin_limits *limits, confine_precheck_fn precheck, char *why,
		  size_t whylen)
{
	if (!confine_kernel_has(SYS_open_tree) || !confine_kernel_has(SYS_move_mount)) {
		snprintf(why, whylen, "the kernel lacks open_tree/move_mount (Linux 5.2)");
		return -ENOSYS;
	}
	/* A fresh sandbox: namespaces, read-only host, mounts, identity, and
	 * its self-test (Landlock enforced, the seccomp filter installed). It
	 * starts first; the host's checks run while it builds. */
	identity id = our_identity();
	trial_warmup warm = { .limits = limits, .precheck = precheck };
	zygote_overlap overlap = { trial_warm, &warm, false };
	zygote *z = NULL;
	/* The scratch sizes are the zygote's from its start (a failing plan is reported by
	 * the overlap's checks, with its reason). */
	limits_plan early;
	char ignored[256];
	uint64_t scratch = limits_plan_make(limits, &early, ignored, sizeof(ignored)) == 0
				   ? limits_plan_scratch_cap(&early)
				   : 0;
	int r = zygote_start(id.privileged, id.in_uid, id.in_gid, id.out_uid, id.out_gid, scratch,
			     &overlap, &z, why, whylen);
	/* A start that failed early: the checks name the cause better. */
	if (r < 0 && !overlap.ran) {
		char checked[512];
		if (trial_check(&warm, checked, sizeof(checked)) < 0)
			snprintf(why, whylen, "%s", checked);
	}
	if (r < 0) {
		if (warm.have_cg)
			limits_cgroup_destroy(&warm.cg);
		return r;
	}
	zygote_pool_put(z, &warm.plan, warm.have_cg ? &warm.cg : NULL);
	return 0;
}
