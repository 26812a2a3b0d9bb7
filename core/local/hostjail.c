/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Host programs with a parent-death signal, and jailed host programs (hostjail.h). */
#include "config.h"

#include "hostjail.h"
#include "child.h"
#include "elfcheck.h"
#include "landlock-abi.h"
#include "landlock.h"
#include "rawsys.h"
#include "seccomp.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where the jail's root is built before pivot_root: a directory every host has, which holds
 * no file a jail names (nothing is bound from /proc), covered by our tmpfs in our mount
 * namespace only. */
#define STAGE "/proc"
#define STAGE_OLD STAGE "/.old"
#define JAIL_HOSTNAME "cordon-jail"
/* The root's own tmpfs: directories and mount points only. */
#define ROOT_OPTS "size=64k,nr_inodes=4096,mode=0755"
/* A jail descriptor's number in the program and the link its path becomes. */
#define JAIL_FD_LINK "/proc/self/fd/4"
_Static_assert(SPAWN_EXTRA_FD + 1 == 4, "JAIL_FD_LINK names spawn's extra_fd2");

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "unknown"
#endif

/* ---- the launcher thread --------------------------------------------------------- */

typedef struct launch_job {
	spawn_plan *plan;
	spawn_child child;
	int report_fd;
	int r;
	bool pending, done;
} launch_job;

static pthread_mutex_t submit_lock = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cond = PTHREAD_COND_INITIALIZER;
static launch_job *job;
static pthread_once_t launcher_once = PTHREAD_ONCE_INIT;
static int launcher_err;

static void *launcher_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL); /* host signals go to the host's threads */
	pthread_mutex_lock(&job_lock);
	for (;;) {
		while (!job || !job->pending)
			pthread_cond_wait(&job_cond, &job_lock);
		launch_job *j = job;
		j->pending = false;
		pthread_mutex_unlock(&job_lock);
		j->r = spawn_begin(j->plan, &j->child, &j->report_fd);
		pthread_mutex_lock(&job_lock);
		j->done = true;
		pthread_cond_broadcast(&job_cond);
	}
	return NULL;
}

static void launcher_start(void)
{
	pthread_attr_t at;
	pthread_t t;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	launcher_err = pthread_create(&t, &at, launcher_main, NULL);
	pthread_attr_destroy(&at);
}

/* The clone on the launcher thread (the parent-death signal follows it), the wait for
 * the exec on ours: a launch stopped before its exec holds no other launch back. */
static int launch(spawn_plan *p, spawn_child *ret, spawn_failure *fail)
{
	pthread_once(&launcher_once, launcher_start);
	*fail = (spawn_failure){ "launch", 0 };
	if (launcher_err)
		return -launcher_err;
	launch_job j = { .plan = p, .pending = true, .report_fd = -1 };
	pthread_mutex_lock(&submit_lock);
	pthread_mutex_lock(&job_lock);
	job = &j;
	pthread_cond_broadcast(&job_cond);
	while (!j.done)
		pthread_cond_wait(&job_cond, &job_lock);
	job = NULL;
	pthread_mutex_unlock(&job_lock);
	pthread_mutex_unlock(&submit_lock);
	if (j.r < 0)
		return j.r;
	int r = spawn_end(p, &j.child, j.report_fd, fail);
	if (r == 0)
		*ret = j.child;
	return r;
}

/* ---- the jail's plan (read by the child on our memory) ------------------------------- */

enum jail_kind { JAIL_FILE, JAIL_DIR, JAIL_DEV };

typedef struct jail_entry {
	char *source; /* host path */
	char *target; /* STAGE + the same path */
	enum jail_kind kind;
	unsigned long remount; /* the read-only remount's flags (the source's locked ones kept) */
	dev_t rdev;
} jail_entry;

typedef struct jail_plan {
	bool privileged; /* root: no user namespace, a host id of its own */
	unsigned uid, gid;
	char uid_map[32], gid_map[32];
	char **dirs; /* under STAGE, parents first */
	size_t n_dirs;
	jail_entry *e;
	size_t n;
	bool devices_in_root; /* mknod'ed into the root tmpfs (root only) */
	char *fd_link;        /* STAGE + jail_fd_path (a link to JAIL_FD_LINK), or NULL */
	int parent_pidfd;
	int ll_abi; /* Landlock's ABI on this kernel, 0: none */
	struct ll_masks ll;
} jail_plan;

static RAWSYS_CHILD int step_nop(const spawn_plan *p, const void *arg)
{
	(void)p;
	(void)arg;
	return 0;
}

/* Not root: a user namespace (made by clone) that maps only our own ids. */
static RAWSYS_CHILD int step_userns(const spawn_plan *p, const void *arg)
{
	const jail_plan *j = arg;
	if (j->privileged)
		return 0;
	long r = child_write_file("/proc/self/setgroups", "deny");
	if (r >= 0)
		r = child_write_file("/proc/self/uid_map", j->uid_map);
	if (r >= 0)
		r = child_write_file("/proc/self/gid_map", j->gid_map);
	return r < 0 ? (int)r : 0;
}

static RAWSYS_CHILD long mount_point(const jail_entry *e, bool privileged)
{
	if (e->kind == JAIL_DIR)
		return rsys3(SYS_mkdirat, AT_FDCWD, e->target, 0755);
	if (e->kind == JAIL_DEV && privileged)
		return rsys4(SYS_mknodat, AT_FDCWD, e->target, S_IFCHR | 0600, e->rdev);
	long fd = rsys4(SYS_openat, AT_FDCWD, e->target,
			O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd >= 0)
		rsys1(SYS_close, fd);
	return fd;
}

static RAWSYS_CHILD long bind_entry(const jail_plan *j, const jail_entry *e)
{
	long r = mount_point(e, j->privileged);
	if (r < 0 && r != -EEXIST)
		return r;
	if (e->kind == JAIL_DEV && j->privileged) /* our node, for our uid alone */
		return rsys5(SYS_fchownat, AT_FDCWD, e->target, j->uid, j->gid,
			     AT_SYMLINK_NOFOLLOW);
	r = rsys5(SYS_mount, e->source, e->target, NULL, MS_BIND | MS_REC, NULL);
	if (r < 0 || e->kind == JAIL_DEV)
		return r;
	return rsys5(SYS_mount, NULL, e->target, NULL, e->remount, NULL);
}

/* A read-only /proc of the jail's pid namespace with its processes only (subset=pid), made
 * while the host's /proc is still visible (a user namespace may mount a proc only then),
 * detached until it is moved into the root. */
static RAWSYS_CHILD long proc_make(void)
{
	long fs = rsys2(SYS_fsopen, "proc", FSOPEN_CLOEXEC);
	if (fs < 0)
		return fs;
	long r = rsys5(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "subset", "pid", 0);
	if (r >= 0)
		r = rsys5(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
	if (r >= 0)
		r = rsys3(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
			  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				  MOUNT_ATTR_NOEXEC);
	rsys1(SYS_close, fs);
	return r;
}

/* The jail descriptor's path: a link into that /proc. */
static RAWSYS_CHILD long fd_link_make(const jail_plan *j, long proc)
{
	long r = rsys3(SYS_mkdirat, AT_FDCWD, STAGE "/proc", 0555);
	if (r >= 0)
		r = rsys5(SYS_move_mount, proc, "", AT_FDCWD, STAGE "/proc",
			  MOVE_MOUNT_F_EMPTY_PATH);
	if (r >= 0)
		r = rsys3(SYS_symlinkat, JAIL_FD_LINK, AT_FDCWD, j->fd_link);
	return r;
}

/* The root: our tmpfs on STAGE, the entries bound into it, pivot_root, the host's tree
 * detached, the root read-only. */
static RAWSYS_CHILD int step_root(const spawn_plan *p, const void *arg)
{
	const jail_plan *j = arg;
	long proc = -1;
	long r = rsys5(SYS_mount, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	if (r >= 0 && j->fd_link)
		r = proc = proc_make();
	if (r >= 0)
		r = rsys5(SYS_mount, "tmpfs", STAGE, "tmpfs",
			  MS_NOSUID | MS_NOEXEC | (j->devices_in_root ? 0 : MS_NODEV), ROOT_OPTS);
	for (size_t i = 0; r >= 0 && i < j->n_dirs; i++) {
		r = rsys3(SYS_mkdirat, AT_FDCWD, j->dirs[i], 0755);
		if (r == -EEXIST)
			r = 0;
	}
	for (size_t i = 0; r >= 0 && i < j->n; i++)
		r = bind_entry(j, &j->e[i]);
	if (r >= 0 && j->fd_link)
		r = fd_link_make(j, proc);
	if (proc >= 0)
		rsys1(SYS_close, proc);
	if (r >= 0)
		r = rsys3(SYS_mkdirat, AT_FDCWD, STAGE_OLD, 0700);
	if (r >= 0)
		r = rsys2(SYS_pivot_root, STAGE, STAGE_OLD);
	if (r >= 0)
		r = rsys1(SYS_chdir, "/");
	if (r >= 0)
		r = rsys2(SYS_umount2, "/.old", MNT_DETACH);
	if (r >= 0)
		r = rsys3(SYS_unlinkat, AT_FDCWD, "/.old", AT_REMOVEDIR);
	if (r >= 0)
		r = rsys5(SYS_mount, NULL, "/", NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC |
				  (j->devices_in_root ? 0 : MS_NODEV),
			  NULL);
	return r < 0 ? (int)r : 0;
}

static RAWSYS_CHILD int step_hostname(const spawn_plan *p, const void *arg)
{
	long r = rsys2(SYS_sethostname, JAIL_HOSTNAME, sizeof(JAIL_HOSTNAME) - 1);
	return r < 0 ? (int)r : 0;
}

/* As root: the jail's own host id, no supplementary groups (raw calls: glibc's set*id
 * would signal every thread of the host). Capabilities go with uid 0. */
static RAWSYS_CHILD int step_ids(const spawn_plan *p, const void *arg)
{
	const jail_plan *j = arg;
	if (!j->privileged)
		return 0;
	long r = rsys2(SYS_setgroups, 0, NULL);
	if (r >= 0)
		r = rsys3(SYS_setresgid, j->gid, j->gid, j->gid);
	if (r >= 0)
		r = rsys3(SYS_setresuid, j->uid, j->uid, j->uid);
	return r < 0 ? (int)r : 0;
}

/* Landlock on top of the read-only root, with the kernel tier's masks (landlock-abi.h):
 * read and execute beneath "/", read, write and device ioctls on the named nodes only,
 * abstract unix sockets and signals scoped to the jail (ABI >= 6). Its own no_new_privs:
 * the uid change dropped the capability that could stand in for it. */
static RAWSYS_CHILD long ll_allow(long ruleset, const char *path, uint64_t access)
{
	long fd = rsys3(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return fd;
	struct ll_path_beneath_attr pb = { .allowed_access = access, .parent_fd = (int32_t)fd };
	long r = rsys4(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
	rsys1(SYS_close, fd);
	return r;
}

static RAWSYS_CHILD int step_landlock(const spawn_plan *p, const void *arg)
{
	const jail_plan *j = arg;
	if (j->ll_abi <= 0)
		return 0;
	long rs = rsys3(SYS_landlock_create_ruleset, &j->ll.handled, j->ll.handled_size, 0);
	if (rs < 0)
		return (int)rs;
	long r = ll_allow(rs, "/", j->ll.read_exec);
	for (size_t i = 0; r >= 0 && i < j->n; i++)
		if (j->e[i].kind == JAIL_DEV) /* its path inside: the target past STAGE */
			r = ll_allow(rs, j->e[i].target + sizeof(STAGE) - 1,
				     j->ll.write_file |
					     (j->ll.handled.handled_access_fs & LL_FS_IOCTL_DEV));
	if (r >= 0)
		r = rsys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (r >= 0)
		r = rsys2(SYS_landlock_restrict_self, rs, 0);
	rsys1(SYS_close, rs);
	return r < 0 ? (int)r : 0;
}

/* After the id change, which clears it. The parent is outside our pid namespace (getppid is
 * 0), so whether the host died before the signal was armed is asked of its pidfd: a host
 * that was gone already is readable; one that dies after this reparents us and signals. */
/* The parent-death signal, set again after an id change cleared it, and the parent checked
 * once more: it may have died before. */
static RAWSYS_CHILD int deathsig_after_ids(int parent_pidfd)
{
	long r = rsys5(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (r < 0)
		return (int)r;
	struct pollfd pf = { .fd = parent_pidfd, .events = POLLIN };
	struct timespec zero = { 0, 0 };
	r = rsys5(SYS_ppoll, &pf, 1, &zero, NULL, 8);
	return r != 0 ? -ESRCH : 0;
}

static RAWSYS_CHILD int step_deathsig(const spawn_plan *p, const void *arg)
{
	const jail_plan *j = arg;
	return deathsig_after_ids(j->parent_pidfd);
}

/* ---- building the plan (before the launch) ----------------------------------------- */

/* An absolute path without ".", ".." or empty components. */
static bool clean_path(const char *p)
{
	if (!p || p[0] != '/' || strlen(p) >= PATH_MAX)
		return false;
	g_auto(GStrv) parts = g_strsplit(p + 1, "/", -1);
	for (size_t i = 0; parts[i]; i++)
		if (!*parts[i] || strcmp(parts[i], ".") == 0 || strcmp(parts[i], "..") == 0)
			return false;
	return true;
}

typedef struct builder {
	GPtrArray *dirs;    /* char* under STAGE */
	GHashTable *seen;   /* host paths and dirs already in */
	GArray *entries;    /* jail_entry */
	GPtrArray *pending; /* ELF files whose libraries are still to add */
	char *why;
	size_t whylen;
} builder;

static int fail(builder *b, int errnum, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static int fail(builder *b, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->why, b->whylen, fmt, ap);
	va_end(ap);
	return -errnum;
}

static void add_parents(builder *b, const char *path)
{
	g_autofree char *dir = g_path_get_dirname(path);
	if (strcmp(dir, "/") == 0 || g_hash_table_contains(b->seen, dir))
		return;
	add_parents(b, dir);
	g_ptr_array_add(b->dirs, g_strconcat(STAGE, dir, NULL));
	g_hash_table_add(b->seen, g_steal_pointer(&dir));
}

/* The read-only remount of a bind of path: the flags the source's mount holds must stay
 * (a user namespace cannot clear them), nosuid and nodev are added. */
static unsigned long remount_flags(const char *path)
{
	struct statvfs sv;
	unsigned long f = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV;
	if (statvfs(path, &sv) == 0) {
		f |= sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0;
		f |= sv.f_flag & ST_NOATIME ? MS_NOATIME : 0;
		f |= sv.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0;
		f |= sv.f_flag & ST_RELATIME ? MS_RELATIME : 0;
	}
	return f;
}

static int add_path(builder *b, const char *path, bool device)
{
	if (!clean_path(path))
		return fail(b, EINVAL, "jail: '%s' is not a clean absolute path", path);
	if (strcmp(path, "/") == 0 || strncmp(path, "/proc", 5) == 0)
		return fail(b, EINVAL, "jail: '%s' cannot be given to a jail", path);
	if (g_hash_table_contains(b->seen, path))
		return 0;
	struct stat st;
	if (stat(path, &st) < 0)
		return fail(b, errno, "jail: %s: %s", path, g_strerror(errno));
	jail_entry e = { .source = g_strdup(path), .target = g_strconcat(STAGE, path, NULL) };
	if (device && !S_ISCHR(st.st_mode))
		return g_free(e.source), g_free(e.target),
		       fail(b, EINVAL, "jail: %s is not a character device", path);
	if (!device && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return g_free(e.source), g_free(e.target),
		       fail(b, EINVAL, "jail: %s is neither a file nor a directory", path);
	e.kind = device ? JAIL_DEV : S_ISDIR(st.st_mode) ? JAIL_DIR : JAIL_FILE;
	e.rdev = st.st_rdev;
	e.remount = remount_flags(path);
	add_parents(b, path);
	g_hash_table_add(b->seen, g_strdup(path));
	g_array_append_val(b->entries, e);
	if (e.kind == JAIL_FILE &&
	    (st.st_mode & 0111 || g_str_has_suffix(path, ".so") || strstr(path, ".so.")))
		g_ptr_array_add(b->pending, g_strdup(path));
	return 0;
}

/* Where the loader looks for a bare DT_NEEDED name without its cache (the jail has none):
 * glibc's system directories, multiarch first. */
static char *find_library(const char *name)
{
	static const char *const dirs[] = {
		"/lib/" MULTIARCH, "/usr/lib/" MULTIARCH, "/lib64", "/usr/lib64", "/lib", "/usr/lib"
	};
	if (strchr(name, '/'))
		return g_strdup(name);
	for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
		char *p = g_build_filename(dirs[i], name, NULL);
		if (access(p, R_OK) == 0)
			return p;
		g_free(p);
	}
	return NULL;
}

/* Adds what an ELF file asks the loader for; a file that is not ELF asks for nothing (a
 * script's interpreter is not followed: name it). */
static int add_libraries(builder *b, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return fail(b, e, "jail: %s: %s", path, g_strerror(e));
	}
	char magic[4] = { 0 };
	if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4) != 0) {
		close(fd);
		return 0;
	}
	g_autoptr(GPtrArray) needed = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *interp = NULL, *ewhy = NULL;
	int r = elfcheck_deps(fd, (uint64_t)st.st_size, &interp, needed, &ewhy);
	close(fd);
	if (r < 0)
		return fail(b, -r, "jail: %s: %s", path, ewhy ? ewhy : "bad ELF file");
	if (interp && (r = add_path(b, interp, false)) < 0)
		return r;
	for (guint i = 0; i < needed->len; i++) {
		g_autofree char *lib = find_library(needed->pdata[i]);
		if (!lib)
			return fail(b, ENOENT, "jail: %s needs %s, which is not found", path,
				    (char *)needed->pdata[i]);
		if ((r = add_path(b, lib, false)) < 0)
			return r;
	}
	return 0;
}

/* The jail descriptor's path: clean, outside /proc, no entry's, its parents made. */
static int add_fd_link(builder *b, const char *path, char **ret)
{
	if (!clean_path(path) || strcmp(path, "/") == 0 || strncmp(path, "/proc", 5) == 0)
		return fail(b, EINVAL, "jail: '%s' cannot hold the jail's descriptor", path);
	if (g_hash_table_contains(b->seen, path))
		return fail(b, EEXIST, "jail: '%s' is both a path and the descriptor's", path);
	add_parents(b, path);
	g_hash_table_add(b->seen, g_strdup(path));
	*ret = g_strconcat(STAGE, path, NULL);
	return 0;
}

static int build_entries(builder *b, const hostjail_spec *s, char **fd_link)
{
	int r = add_path(b, s->path, false);
	for (size_t i = 0; r >= 0 && s->paths && s->paths[i]; i++)
		r = add_path(b, s->paths[i], false);
	for (size_t i = 0; r >= 0 && s->devices && s->devices[i]; i++)
		r = add_path(b, s->devices[i], true);
	while (r >= 0 && b->pending->len) {
		g_autofree char *p = g_ptr_array_steal_index(b->pending, b->pending->len - 1);
		r = add_libraries(b, p);
	}
	if (r >= 0 && s->jail_fd_path) /* last: no library may hide behind it */
		r = add_fd_link(b, s->jail_fd_path, fd_link);
	return r;
}

static void jail_plan_clear(jail_plan *j)
{
	for (size_t i = 0; i < j->n_dirs; i++)
		g_free(j->dirs[i]);
	g_free(j->dirs);
	for (size_t i = 0; i < j->n; i++) {
		g_free(j->e[i].source);
		g_free(j->e[i].target);
	}
	g_free(j->e);
	g_free(j->fd_link);
	if (j->parent_pidfd >= 0)
		close(j->parent_pidfd);
}

static int jail_plan_make(const hostjail_spec *s, const hostids *ids, jail_plan *j, char *why,
			  size_t whylen)
{
	*j = (jail_plan){ .parent_pidfd = -1 };
	builder b = {
		.dirs = g_ptr_array_new(),
		.seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
		.entries = g_array_new(FALSE, TRUE, sizeof(jail_entry)),
		.pending = g_ptr_array_new_with_free_func(g_free),
		.why = why,
		.whylen = whylen,
	};
	int r = build_entries(&b, s, &j->fd_link);
	j->n_dirs = b.dirs->len;
	j->dirs = (char **)g_ptr_array_free(b.dirs, FALSE);
	j->n = b.entries->len;
	j->e = (jail_entry *)(void *)g_array_free(b.entries, FALSE);
	g_hash_table_unref(b.seen);
	g_ptr_array_unref(b.pending);
	j->privileged = geteuid() == 0;
	j->uid = j->privileged ? ids->uid : (unsigned)geteuid();
	j->gid = j->privileged ? ids->gid : (unsigned)getegid();
	snprintf(j->uid_map, sizeof(j->uid_map), "%u %u 1", j->uid, j->uid);
	snprintf(j->gid_map, sizeof(j->gid_map), "%u %u 1", j->gid, j->gid);
	for (size_t i = 0; i < j->n; i++)
		j->devices_in_root |= j->privileged && j->e[i].kind == JAIL_DEV;
	j->ll_abi = landlock_abi();
	ll_masks_for(j->ll_abi, &j->ll);
	if (r >= 0 && (j->parent_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0)) < 0)
		r = fail(&b, errno, "jail: pidfd_open: %s", g_strerror(errno));
	if (r < 0)
		jail_plan_clear(j);
	return r;
}

/* The kernel tier's seccomp program, mapped once from its sealed memfd. */
static struct sock_fprog jail_filter;
static pthread_once_t filter_once = PTHREAD_ONCE_INIT;
static int filter_err;

static void filter_load(void)
{
	const char *what = NULL;
	int fd = seccomp_filter_fd(&what);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0) {
		filter_err = fd < 0 ? -fd : EINVAL;
		return;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		filter_err = errno;
		return;
	}
	jail_filter.len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	jail_filter.filter = m;
}

static int insert_steps(spawn_plan *p, jail_plan *j)
{
	/* the default deathsig step compares getppid with our pid: 0 in a new pid namespace,
	 * and the id change would clear it: ours runs after the ids instead */
	for (size_t i = 0; i < p->n_steps; i++)
		if (strcmp(p->steps[i].name, "deathsig") == 0)
			p->steps[i].fn = step_nop;
	const spawn_step steps[] = {
		{ "userns", step_userns, j },     { "root", step_root, j },
		{ "hostname", step_hostname, j }, { "ids", step_ids, j },
		{ "landlock", step_landlock, j }, { "jail-deathsig", step_deathsig, j },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
		int r = spawn_plan_insert(p, "cwd", &steps[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

static int launch_failed(int r, const spawn_failure *f, const char *path, char *why, size_t whylen)
{
	if (f->step && strcmp(f->step, "deadline") == 0) {
		snprintf(why, whylen,
			 "cannot run %s: its launch did not reach its exec in time (stopped from "
			 "outside?); killed",
			 path);
		return r;
	}
	snprintf(why, whylen, "cannot run %s%s: %s%s%s", path, f->step ? " (" : "",
		 f->step ? f->step : "", f->step ? ") " : "", g_strerror(-r));
	return r;
}

static int start_jailed(const hostjail_spec *s, spawn_plan *p, hostjail_proc *ret, char *why,
			size_t whylen)
{
	pthread_once(&filter_once, filter_load);
	if (filter_err) {
		snprintf(why, whylen, "jail: the seccomp filter: %s", g_strerror(filter_err));
		return -filter_err;
	}
	int r = 0;
	if (geteuid() == 0 && (r = hostids_claim(&ret->ids, why, whylen)) < 0)
		return r;
	jail_plan j;
	if ((r = jail_plan_make(s, &ret->ids, &j, why, whylen)) < 0) {
		hostids_release(&ret->ids);
		return r;
	}
	p->clone_flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
			 (j.privileged ? 0 : CLONE_NEWUSER);
	p->seccomp = &jail_filter;
	spawn_failure f = { NULL, 0 };
	spawn_child c;
	r = insert_steps(p, &j);
	if (r >= 0)
		r = launch(p, &c, &f);
	jail_plan_clear(&j);
	if (r < 0) {
		hostids_release(&ret->ids);
		return launch_failed(r, &f, s->path, why, whylen);
	}
	ret->pid = c.pid;
	ret->pidfd = c.pidfd;
	return 0;
}

/* ---- a file server (CORDON_HOST_PROCESS_FILE_SERVER) ----------------------------------- */

/* How long a file server's launch may take from its clone to its exec (a few milliseconds
 * when nothing stops it). */
#define FILE_SERVER_LAUNCH_MS 10000

/* A file server's filter (seccomp_setid_filter_compile): it makes files with the modes a
 * guest asks for, and a set-id file of the owner's in the workspace would run as the owner
 * for whoever on the host executes it. Compiled once, kept for the process's life. */
static struct sock_fprog server_filter;
static pthread_mutex_t server_filter_lock = PTHREAD_MUTEX_INITIALIZER;

/* The filter, compiled at the first file server; a failed compile (no memfd, no memory) is
 * tried again at the next. */
static int server_filter_get(const struct sock_fprog **ret, char *why, size_t whylen)
{
	pthread_mutex_lock(&server_filter_lock);
	int r = 0;
	if (!server_filter.filter) {
		struct sock_filter *prog = NULL;
		size_t n = 0;
		const char *what = "compile";
		r = seccomp_setid_filter_compile(&prog, &n, &what);
		if (r < 0)
			snprintf(why, whylen, "a file server's seccomp filter (%s): %s", what,
				 g_strerror(-r));
		else
			server_filter = (struct sock_fprog){ .len = (unsigned short)n,
							     .filter = prog };
	}
	pthread_mutex_unlock(&server_filter_lock);
	*ret = &server_filter;
	return r;
}

typedef struct server_plan {
	unsigned uid, gid; /* the directory's owner, and a group of the owner's */
	unsigned id;       /* the owner's uid and gid in the namespace */
	char uid_map[32], gid_map[32];
	int dir_fd; /* the directory (close-on-exec: the program never holds it) */
	const char *mount_at;
	bool read_only;
	int parent_pidfd;
} server_plan;

/* As the host's root: the directory's mount, cloned from its descriptor (never from a path),
 * private (no later mount of the host's propagates into it), nosuid, nodev, read-only on
 * request (the mount's own flag, locked in the program's later namespaces), moved over
 * mount_at in a mount namespace of the program's; its working directory that namespace's
 * root. */
static RAWSYS_CHILD int step_server_mount(const spawn_plan *p, const void *arg)
{
	const server_plan *sp = arg;
	long tree = rsys3(SYS_open_tree, sp->dir_fd, "",
			  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		return (int)tree;
	struct mount_attr ma = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					     (sp->read_only ? MOUNT_ATTR_RDONLY : 0),
				 .propagation = MS_PRIVATE };
	long r = rsys5(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &ma, sizeof(ma));
	if (r >= 0)
		r = rsys1(SYS_unshare, CLONE_NEWNS);
	if (r >= 0)
		r = rsys5(SYS_mount, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	if (r >= 0)
		r = rsys5(SYS_move_mount, tree, "", AT_FDCWD, sp->mount_at,
			  MOVE_MOUNT_F_EMPTY_PATH);
	rsys1(SYS_close, tree);
	if (r >= 0)
		r = rsys1(SYS_chdir, "/");
	return r < 0 ? (int)r : 0;
}

/* Not root in the namespace: its capabilities (all of them, over the namespace's objects
 * only), kept through the id change (KEEPCAPS), effective, inheritable and ambient again,
 * so that they survive the exec. */
static RAWSYS_CHILD long keep_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 }, { 0 } }; /* capget fills them */
	long r = rsys2(SYS_capget, &h, d);
	for (int i = 0; r >= 0 && i < 2; i++)
		d[i].effective = d[i].inheritable = d[i].permitted;
	if (r >= 0)
		r = rsys2(SYS_capset, &h, d);
	for (long cap = 0; r >= 0 && cap <= CAP_LAST_CAP; cap++)
		r = rsys5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
	return r;
}

/* In a fork of the launcher's child (memory of its own, still the host's root): once the
 * child has made its user namespace (a byte on ready), its maps, written through proc, its
 * /proc/self opened before the fork. Exits 0 or 1. */
static RAWSYS_CHILD void write_maps(const server_plan *sp, long proc_self, long ready, long ready_w)
{
	char b;
	rsys1(SYS_close, ready_w); /* so that the child's end closing is EOF here */
	long r = rsys3(SYS_read, ready, &b, 1) == 1 ? 0 : -EIO;
	const char *file[3] = { "setgroups", "uid_map", "gid_map" };
	const char *text[3] = { "deny", sp->uid_map, sp->gid_map };
	for (int i = 0; r >= 0 && i < 3; i++) {
		long fd = rsys4(SYS_openat, proc_self, file[i], O_WRONLY | O_CLOEXEC, 0);
		r = fd;
		if (fd >= 0) {
			size_t n = rs_strlen(text[i]);
			r = rsys3(SYS_write, fd, text[i], n) == (long)n ? 0 : -EIO;
			rsys1(SYS_close, fd);
		}
	}
	rsys1(SYS_exit, r < 0 ? 1 : 0);
}

/* A user namespace made by the host's root (so that the owner has no power over it, nor
 * over the program: it is never dumpable as the owner while it shares our memory), in which
 * only the owner is mapped, at id; maps written by a forked helper that stays the host's
 * root; then the owner's ids there, no supplementary groups, capabilities there reaching
 * only the owner's files; no new privileges. */
static RAWSYS_CHILD int step_server_ids(const spawn_plan *p, const void *arg)
{
	const server_plan *sp = arg;
	long pipefd[2] = { -1, -1 };
	int fds[2] = { -1, -1 };
	long r = rsys2(SYS_setgroups, 0, NULL);
	long proc_self = r >= 0 ? rsys4(SYS_openat, AT_FDCWD, "/proc/self",
					O_PATH | O_DIRECTORY | O_CLOEXEC, 0)
				: r;
	r = proc_self < 0 ? proc_self : rsys2(SYS_pipe2, fds, O_CLOEXEC);
	if (r >= 0) {
		pipefd[0] = fds[0];
		pipefd[1] = fds[1];
	}
	long helper = r >= 0 ? rsys5(SYS_clone, SIGCHLD, 0, 0, 0, 0) : r;
	if (helper == 0)
		write_maps(sp, proc_self, pipefd[0], pipefd[1]); /* does not return */
	r = helper < 0 ? helper : rsys1(SYS_unshare, CLONE_NEWUSER);
	if (helper > 0) {  /* the helper goes on only with our byte: EOF ends it */
		if (r < 0) /* and nothing is left to map */
			rsys2(SYS_kill, helper, SIGKILL);
		if (r >= 0 && rsys3(SYS_write, pipefd[1], "x", 1) != 1)
			r = -EIO;
		rsys1(SYS_close, pipefd[1]);
		pipefd[1] = -1;
		int st = 0;
		long w;
		while ((w = rsys4(SYS_wait4, helper, &st, __WALL, 0)) == -EINTR)
			;
		if (r >= 0 && (w != helper || !WIFEXITED(st) || WEXITSTATUS(st) != 0))
			r = -EPERM;
	}
	for (int i = 0; i < 2; i++)
		if (pipefd[i] >= 0)
			rsys1(SYS_close, pipefd[i]);
	if (proc_self >= 0)
		rsys1(SYS_close, proc_self);
	if (r >= 0 && sp->id != 0)
		r = rsys5(SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0);
	if (r >= 0)
		r = rsys3(SYS_setresgid, sp->id, sp->id, sp->id);
	if (r >= 0)
		r = rsys3(SYS_setresuid, sp->id, sp->id, sp->id);
	if (r >= 0 && sp->id != 0)
		r = keep_caps();
	if (r >= 0)
		r = rsys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	return r < 0 ? (int)r : 0;
}

static RAWSYS_CHILD int step_server_deathsig(const spawn_plan *p, const void *arg)
{
	const server_plan *sp = arg;
	return deathsig_after_ids(sp->parent_pidfd);
}

/* The group a file server runs as: the directory's, when its owner is a member of it (a
 * directory an admin gave another group, or one made in a set-group-id directory, must not
 * lend that group to the owner's server). */
static int owner_group(const struct stat *st, char *why, size_t whylen)
{
	char buf[4096];
	struct passwd pw, *found = NULL;
	if (getpwuid_r(st->st_uid, &pw, buf, sizeof(buf), &found) != 0 || !found) {
		snprintf(why, whylen,
			 "the directory's owner, uid %u, is no user of this host: its groups "
			 "cannot be told",
			 (unsigned)st->st_uid);
		return -EPERM;
	}
	if (pw.pw_gid == st->st_gid)
		return 0;
	gid_t groups[256];
	int n = (int)G_N_ELEMENTS(groups);
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) >= 0)
		for (int i = 0; i < n; i++)
			if (groups[i] == st->st_gid)
				return 0;
	snprintf(why, whylen,
		 "the directory's group, gid %u, is not one of its owner's (uid %u): a file "
		 "server runs as the owner, with the owner's groups only",
		 (unsigned)st->st_gid, (unsigned)st->st_uid);
	return -EPERM;
}

static int start_file_server(const hostjail_spec *s, spawn_plan *p, hostjail_proc *ret, char *why,
			     size_t whylen)
{
	struct stat st, at;
	if (geteuid() != 0) {
		snprintf(why, whylen, "a file server is started as root only");
		return -EPERM;
	}
	if (s->jail_fd < 0 || fstat(s->jail_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "a file server's descriptor is not a directory");
		return -ENOTDIR;
	}
	if (st.st_uid == 0 || st.st_gid == 0) {
		snprintf(why, whylen,
			 "the directory is root's (uid %u, gid %u): a file server runs as its "
			 "owner, and root's ids are never mapped",
			 (unsigned)st.st_uid, (unsigned)st.st_gid);
		return -EPERM;
	}
	int r = owner_group(&st, why, whylen);
	if (r < 0)
		return r;
	const struct sock_fprog *filter;
	if ((r = server_filter_get(&filter, why, whylen)) < 0)
		return r;
	if (!clean_path(s->jail_fd_path) || lstat(s->jail_fd_path, &at) < 0 ||
	    !S_ISDIR(at.st_mode)) {
		snprintf(why, whylen, "a file server's mount point %s is not a directory",
			 s->jail_fd_path ? s->jail_fd_path : "(none)");
		return -EINVAL;
	}
	server_plan sp = { .uid = (unsigned)st.st_uid,
			   .gid = (unsigned)st.st_gid,
			   .id = s->file_server_id,
			   .dir_fd = s->jail_fd,
			   .mount_at = s->jail_fd_path,
			   .read_only = s->read_only,
			   .parent_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0) };
	if (sp.parent_pidfd < 0) {
		snprintf(why, whylen, "pidfd_open: %s", g_strerror(errno));
		return -errno;
	}
	snprintf(sp.uid_map, sizeof(sp.uid_map), "%u %u 1", sp.id, sp.uid);
	snprintf(sp.gid_map, sizeof(sp.gid_map), "%u %u 1", sp.id, sp.gid);
	for (size_t i = 0; i < p->n_steps; i++) /* as in insert_steps: ours follows the ids */
		if (strcmp(p->steps[i].name, "deathsig") == 0)
			p->steps[i].fn = step_nop;
	/* a pid namespace of its own: when the program (its init) dies, so does every process
	 * it made (virtiofsd's sandboxed child ignores the SIGTERM it asks for itself) */
	p->clone_flags = CLONE_NEWPID;
	p->cwd_fd = -1; /* step_server_mount's chdir: the new namespace's root */
	const spawn_step steps[] = { { "server-mount", step_server_mount, &sp },
				     { "server-ids", step_server_ids, &sp },
				     { "server-deathsig", step_server_deathsig, &sp } };
	for (size_t i = 0; r >= 0 && i < G_N_ELEMENTS(steps); i++)
		r = spawn_plan_insert(p, "cwd", &steps[i]);
	/* From its id change to its exec the child is the owner's to signal: stopped there, it
	 * would park the launcher thread for as long as the owner liked. So it has memory of
	 * its own (a copy, which the id change makes not dumpable: the owner can neither
	 * trace it nor read it) and a deadline, past which it is killed; the wait for its
	 * exec is on our thread, not the launcher's (launch). */
	p->exec_deadline_ms = FILE_SERVER_LAUNCH_MS;
	p->seccomp = filter; /* the last step before its exec */
	spawn_failure f = { NULL, 0 };
	spawn_child c;
	if (r >= 0)
		r = launch(p, &c, &f);
	close(sp.parent_pidfd);
	if (r < 0)
		return launch_failed(r, &f, s->path, why, whylen);
	ret->pid = c.pid;
	ret->pidfd = c.pidfd;
	return 0;
}

int hostjail_start(const hostjail_spec *s, hostjail_proc *ret, char *why, size_t whylen)
{
	*ret = (hostjail_proc){ .pid = 0, .pidfd = -1, .ids = { .lock_fd = -1 } };
	spawn_plan p;
	spawn_plan_init(&p);
	p.path = s->path;
	p.argv = (char *const *)s->argv;
	p.envp = (char *const *)s->envp;
	for (int i = 0; i < 3; i++)
		p.stdio[i] = s->fd[i];
	p.extra_fd = s->extra_fd;
	p.extra_fd2 = s->jail && s->jail_fd_path ? s->jail_fd : -1;
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	p.cwd_fd = s->jail ? -1 : root;
	spawn_plan_add_rlimit(&p, RLIMIT_CORE, 0);
	int r;
	if (s->jail) {
		r = start_jailed(s, &p, ret, why, whylen);
	} else if (s->file_server) {
		r = start_file_server(s, &p, ret, why, whylen);
	} else {
		spawn_failure f = { NULL, 0 };
		spawn_child c;
		r = launch(&p, &c, &f);
		if (r < 0)
			launch_failed(r, &f, s->path, why, whylen);
		else
			*ret = (hostjail_proc){ .pid = c.pid,
						.pidfd = c.pidfd,
						.ids = { .lock_fd = -1 } };
	}
	if (root >= 0)
		close(root);
	return r;
}
