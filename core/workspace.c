/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Forbidden workspaces (workspace.h): one list for every tier. */
#include "config.h"

#include "workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How much of the host around a listed directory is refused. Every listed
 * directory is also refused through any directory that contains it: a
 * workspace of /var hands the work /var/lib/docker, and / everything. */
typedef enum forbidden_scope {
	FORBID_TREE, /* the directory and everything below it */
	FORBID_DIR,  /* the directory itself; its subdirectories are fine */
} forbidden_scope;

typedef struct forbidden_dir {
	const char *path; /* absolute, or relative to the invoking user's home */
	forbidden_scope scope;
} forbidden_dir;

/* What the host boots, executes, configures itself from or keeps its state,
 * sockets and engines in (docs/policy.md, "Forbidden workspaces"). Paths are
 * opened following links, so /var/run and a merged /lib are the same as
 * /run and /usr/lib. */
static const forbidden_dir system_dirs[] = {
	{ "/boot", FORBID_TREE },
	{ "/etc", FORBID_TREE },
	{ "/usr", FORBID_TREE },
	{ "/bin", FORBID_TREE },
	{ "/sbin", FORBID_TREE },
	{ "/lib", FORBID_TREE },
	{ "/lib32", FORBID_TREE },
	{ "/lib64", FORBID_TREE },
	{ "/libx32", FORBID_TREE },
	{ "/proc", FORBID_TREE },
	{ "/sys", FORBID_TREE },
	{ "/dev", FORBID_TREE },
	/* Runtime state and sockets: docker.sock, containerd, podman, dbus, users' runtime dirs. */
	{ "/run", FORBID_TREE },
	{ "/var/run", FORBID_TREE },
	/* Package, service and engine state (/var/lib/docker, /var/lib/containers, ...), cron. */
	{ "/var/lib", FORBID_TREE },
	{ "/var/spool", FORBID_TREE },
	{ "/var/lib/docker", FORBID_TREE },
	{ "/var/lib/containers", FORBID_TREE },
	{ "/var/lib/containerd", FORBID_TREE },
	{ "/run/containerd", FORBID_TREE },
	{ "/run/docker.sock", FORBID_TREE },
	/* Shared by every user (other users' sockets and files), or root's home. */
	{ "/root", FORBID_DIR },
	{ "/home", FORBID_DIR },
	{ "/tmp", FORBID_DIR },
	{ "/var/tmp", FORBID_DIR },
	{ "/var", FORBID_DIR },
	{ "/opt", FORBID_DIR },
	{ "/srv", FORBID_DIR },
	{ "/mnt", FORBID_DIR },
	{ "/media", FORBID_DIR },
};

/* Rootless engines keep their state and credentials in the user's home. */
static const forbidden_dir home_dirs[] = {
	{ ".local/share/containers", FORBID_TREE },
	{ ".local/share/docker", FORBID_TREE },
	{ ".config/containers", FORBID_TREE },
	{ ".docker", FORBID_TREE },
};

/* Deeper than this, a directory is not compared with the list's trees; a
 * chain holds at most this many directories, the mounts' routes included. */
#define MAX_DEPTH 256

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A mount as /proc/self/mountinfo shows it. */
typedef struct mount_entry {
	int id;
	unsigned int major, minor; /* its filesystem (mountinfo's, not st_dev: btrfs differs) */
	char *root;                /* the directory it shows, within that filesystem */
	char *point;               /* where it is mounted */
} mount_entry;

static void mount_entry_clear(gpointer p)
{
	mount_entry *m = p;
	g_free(m->root);
	g_free(m->point);
}

/* This process's mounts, read once per check; empty when /proc is not there
 * (then no mount's route is followed, as before). */
static GArray *mounts_read(void)
{
	GArray *a = g_array_new(FALSE, TRUE, sizeof(mount_entry));
	g_array_set_clear_func(a, mount_entry_clear);
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return a;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (size_t i = 0; lines[i]; i++) {
		g_auto(GStrv) f = g_strsplit(lines[i], " ", 6);
		int id;
		unsigned major, minor;
		if (g_strv_length(f) < 5 || sscanf(f[0], "%d", &id) != 1 ||
		    sscanf(f[2], "%u:%u", &major, &minor) != 2)
			continue;
		/* The array owns the entry's strings (mount_entry_clear). mountinfo writes a
		 * space, a tab, a newline and a backslash as \ooo. */
		g_array_set_size(a, a->len + 1);
		mount_entry *m = &g_array_index(a, mount_entry, a->len - 1);
		m->id = id;
		m->major = major;
		m->minor = minor;
		m->root = g_strcompress(f[3]);
		m->point = g_strcompress(f[4]);
	}
	return a;
}

/* The id mountinfo gives the mount fd's directory is on, or -1. */
static int mount_id(int fd)
{
	struct statx stx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID))
		return (int)stx.stx_mnt_id;
	/* Before Linux 5.8: the descriptor's fdinfo (3.15). */
	g_autofree char *info = g_strdup_printf("/proc/self/fdinfo/%d", fd);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(info, &text, NULL, NULL))
		return -1;
	const char *l = strstr(text, "mnt_id:");
	int id;
	return l && sscanf(l, "mnt_id: %d", &id) == 1 ? id : -1;
}

/* The directories a directory is known by, from itself up to the root, by
 * every route: its own chain of "..", and, where a directory on the way is
 * the root of a mount, the chain of what that mount shows where its
 * filesystem is mounted too (a bind mount of /etc/ssh on /tmp/b: ".." from
 * /tmp/b is /tmp, yet it is /etc/ssh, inside /etc). st[0] is the directory. */
typedef struct chain {
	struct stat st[MAX_DEPTH];
	const char *via[MAX_DEPTH]; /* the mounted directory it was reached through, or NULL */
	int n;
	GArray *mounts;       /* mountinfo (mounts_read), the caller's */
	GHashTable *followed; /* mount ids whose route was taken: nested binds end */
	GPtrArray *names;     /* owns via */
} chain;

static chain *chain_new(GArray *mounts)
{
	chain *c = g_new0(chain, 1);
	c->mounts = mounts;
	c->followed = g_hash_table_new(NULL, NULL);
	c->names = g_ptr_array_new_with_free_func(g_free);
	return c;
}

static void chain_free(chain *c)
{
	if (!c)
		return;
	g_hash_table_unref(c->followed);
	g_ptr_array_unref(c->names);
	g_free(c);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(chain, chain_free)

static void chain_walk(chain *c, int fd, const char *via);

/* root (within its filesystem) seen through a mount of prefix: the rest of
 * it, "" for prefix itself, or NULL when prefix does not hold it. */
static const char *below(const char *root, const char *prefix)
{
	if (strcmp(prefix, "/") == 0)
		return root[1] ? root : "";
	size_t n = strlen(prefix);
	if (strncmp(root, prefix, n) != 0 || (root[n] && root[n] != '/'))
		return NULL;
	return root + n;
}

/* st, the root of mount id, is also where another mount of the same
 * filesystem shows the directory id's mount shows: those places' chains
 * are the directory's as well. A mount whose filesystem is shown nowhere
 * else here (a tmpfs, an overlay, a volume of the host's seen from a
 * container) has no other route. */
static void chain_follow(chain *c, int id, const struct stat *st)
{
	if (g_hash_table_contains(c->followed, GINT_TO_POINTER(id)))
		return;
	g_hash_table_add(c->followed, GINT_TO_POINTER(id));
	const mount_entry *self = NULL;
	for (guint i = 0; i < c->mounts->len && !self; i++)
		if (g_array_index(c->mounts, mount_entry, i).id == id)
			self = &g_array_index(c->mounts, mount_entry, i);
	if (!self)
		return;
	for (guint i = 0; i < c->mounts->len && c->n < MAX_DEPTH; i++) {
		const mount_entry *o = &g_array_index(c->mounts, mount_entry, i);
		if (o == self || o->major != self->major || o->minor != self->minor)
			continue;
		const char *rest = below(self->root, o->root);
		if (!rest)
			continue;
		bool at_root = strcmp(o->point, "/") == 0 && *rest;
		g_autofree char *where = g_strconcat(at_root ? "" : o->point, rest, NULL);
		int fd = open(where, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat at;
		/* Another mount over that place hides it, or the mount itself covers its
		 * own source (a bind of /var/lib/docker on /var/lib/docker): no new route. */
		bool shown = fstat(fd, &at) == 0 && same_file(&at, st) && mount_id(fd) != id;
		if (shown) {
			g_ptr_array_add(c->names, g_steal_pointer(&where));
			chain_walk(c, fd, g_ptr_array_index(c->names, c->names->len - 1));
		}
		close(fd);
	}
}

/* Appends fd's directory and those above it, following every mount root on
 * the way; the descriptor is not consumed. */
static void chain_walk(chain *c, int fd, const char *via)
{
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	while (cur >= 0 && c->n < MAX_DEPTH) {
		struct stat st, upst;
		if (fstat(cur, &st) < 0)
			break;
		c->st[c->n] = st;
		c->via[c->n] = via;
		c->n++;
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		bool top = up < 0 || fstat(up, &upst) < 0 || same_file(&st, &upst);
		int id = mount_id(cur);
		if (id >= 0 && (top || mount_id(up) != id))
			chain_follow(c, id, &st);
		close(cur);
		cur = top ? -1 : up;
		if (top && up >= 0)
			close(up);
	}
	if (cur >= 0)
		close(cur);
}

/* fd's chain (chain), or NULL when fd cannot be examined. */
static chain *ancestors(int fd, GArray *mounts)
{
	chain *c = chain_new(mounts);
	chain_walk(c, fd, NULL);
	if (c->n == 0) {
		chain_free(c);
		return NULL;
	}
	return c;
}

/* through: the mounted directory that led there, if a mount's route did. */
static int forbidden(cordon_error **reterr, const char *what, const char *path, const char *listed,
		     bool inside, const char *through)
{
	bool ws = strcmp(what, "workspace") == 0;
	return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN,
			 ws ? ERRC(workspace_forbidden) : ERRC(mount_forbidden),
			 "the %s %s %s %s%s%s%s, which no tier may hand to the work "
			 "(docs/policy.md, \"Forbidden workspaces\")",
			 what, path, inside ? "is inside" : "is or contains", listed,
			 through ? " (through a mount of " : "", through ? through : "",
			 through ? ")" : "");
}

/* Compares the workspace (its chain, ws->st[0] itself) with one listed
 * directory: equal to it or above it, or below a listed tree. */
static int check_one(const char *what, const char *path, const chain *ws, GArray *mounts,
		     const char *listed, forbidden_scope scope, cordon_error **reterr)
{
	int fd = open(listed, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* not on this host (a socket path is no directory) */
	g_autoptr(chain) up = ancestors(fd, mounts);
	close(fd);
	for (int i = 0; up && i < up->n; i++)
		if (same_file(&up->st[i], &ws->st[0]))
			return forbidden(reterr, what, path, listed, false, up->via[i]);
	if (scope == FORBID_TREE && up)
		for (int i = 1; i < ws->n; i++)
			if (same_file(&ws->st[i], &up->st[0]))
				return forbidden(reterr, what, path, listed, true, ws->via[i]);
	return 0;
}

static int check_list(const char *what, const char *path, const chain *ws, GArray *mounts,
		      const char *home, const forbidden_dir *list, size_t n, cordon_error **reterr)
{
	for (size_t i = 0; i < n; i++) {
		g_autofree char *listed = home ? g_build_filename(home, list[i].path, NULL)
					       : g_strdup(list[i].path);
		int r = check_one(what, path, ws, mounts, listed, list[i].scope, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Refuses a workspace that is, or lies above, a directory in held: what cordon itself trusts
 * (the policy file's directory, the plugin directory) must not be the work's to rewrite. */
static int check_held(const char *what, const char *path, const struct stat *ws,
		      const char *const *held, cordon_error **reterr)
{
	g_autoptr(GArray) mounts = mounts_read();
	for (size_t i = 0; held && held[i]; i++) {
		int fd = open(held[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue; /* not there: nothing of it to protect */
		g_autoptr(chain) up = ancestors(fd, mounts);
		close(fd);
		for (int k = 0; up && k < up->n; k++)
			if (same_file(&up->st[k], ws))
				return error_set(
					reterr, EPERM, CORDON_ERROR_FORBIDDEN,
					strcmp(what, "workspace") == 0 ? ERRC(workspace_forbidden)
								       : ERRC(mount_forbidden),
					"the %s %s holds %s%s%s%s, which cordon itself "
					"trusts (the policy or the plugins): the work could "
					"rewrite it",
					what, path, held[i],
					up->via[k] ? " (through a mount of " : "",
					up->via[k] ? up->via[k] : "", up->via[k] ? ")" : "");
	}
	return 0;
}

/* The workspace's directory itself, never a link: a descriptor, or the error that says why
 * not. Every check after it works on that one descriptor, so a swap during the checks
 * cannot make them judge two different directories. */
static int workspace_open(const char *path, cordon_error **reterr)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	int e = errno;
	struct stat lst;
	/* A link refuses O_DIRECTORY|O_NOFOLLOW with ENOTDIR (ELOOP without O_PATH); a
	 * directory seen now was swapped in since. The same code as a container tier's
	 * refusal of a link on the way. */
	bool swapped = (e == ENOTDIR || e == ELOOP) && lstat(path, &lst) == 0 &&
		       (S_ISLNK(lst.st_mode) || S_ISDIR(lst.st_mode));
	if (swapped)
		return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, ERRC(workspace_symlink),
				 "the workspace %s is a symbolic link, or was replaced by "
				 "one while it was opened (name the directory itself)",
				 path);
	return error_set(reterr, e, CORDON_ERROR_INVALID, ERRC(workspace_invalid),
			 "cannot open the workspace %s: %s", path, g_strerror(e));
}

int workspace_check_held(const char *path, const char *const *held, cordon_error **reterr)
{
	int fd = workspace_open(path, reterr);
	if (fd < 0)
		return fd;
	int r = workspace_check_fd(fd, path, reterr);
	struct stat ws;
	if (r == 0 && held && fstat(fd, &ws) < 0)
		r = error_set(reterr, errno, CORDON_ERROR_INVALID, ERRC(workspace_invalid),
			      "cannot examine the workspace %s", path);
	else if (r == 0 && held)
		r = check_held("workspace", path, &ws, held, reterr);
	close(fd);
	return r;
}

int workspace_check(const char *path, cordon_error **reterr)
{
	return workspace_check_held(path, NULL, reterr);
}

static int check_dir_fd(const char *what, int fd, const char *path, cordon_error **reterr)
{
	g_autoptr(GArray) mounts = mounts_read();
	g_autoptr(chain) ws = ancestors(fd, mounts);
	if (!ws)
		return error_set(reterr, EIO, CORDON_ERROR_INVALID,
				 strcmp(what, "workspace") == 0 ? ERRC(workspace_invalid)
								: ERRC(mount_invalid),
				 "cannot examine the %s %s", what, path);
	int r = check_list(what, path, ws, mounts, NULL, system_dirs, G_N_ELEMENTS(system_dirs),
			   reterr);
	const char *home = g_get_home_dir();
	if (r == 0 && home && home[0] == '/')
		r = check_list(what, path, ws, mounts, home, home_dirs, G_N_ELEMENTS(home_dirs),
			       reterr);
	return r;
}

int workspace_check_fd(int fd, const char *path, cordon_error **reterr)
{
	return check_dir_fd("workspace", fd, path, reterr);
}

int workspace_check_mount_fd(int fd, const char *path, const char *const *held,
			     cordon_error **reterr)
{
	int r = check_dir_fd("mount", fd, path, reterr);
	if (r < 0 || !held)
		return r;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return error_set(reterr, errno, CORDON_ERROR_INVALID, ERRC(mount_invalid),
				 "cannot examine the mount %s", path);
	return check_held("mount", path, &st, held, reterr);
}
