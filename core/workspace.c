/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Forbidden workspaces (workspace.h): one list for every tier. */
#include "config.h"

#include "workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
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
	{ "/boot", FORBID_TREE }, { "/etc", FORBID_TREE }, { "/usr", FORBID_TREE },
	{ "/bin", FORBID_TREE },  { "/sbin", FORBID_TREE }, { "/lib", FORBID_TREE },
	{ "/lib32", FORBID_TREE }, { "/lib64", FORBID_TREE }, { "/libx32", FORBID_TREE },
	{ "/proc", FORBID_TREE }, { "/sys", FORBID_TREE }, { "/dev", FORBID_TREE },
	/* Runtime state and sockets: docker.sock, containerd, podman, dbus, users' runtime dirs. */
	{ "/run", FORBID_TREE },  { "/var/run", FORBID_TREE },
	/* Package, service and engine state (/var/lib/docker, /var/lib/containers, ...), cron. */
	{ "/var/lib", FORBID_TREE }, { "/var/spool", FORBID_TREE },
	{ "/var/lib/docker", FORBID_TREE }, { "/var/lib/containers", FORBID_TREE },
	{ "/var/lib/containerd", FORBID_TREE }, { "/run/containerd", FORBID_TREE },
	{ "/run/docker.sock", FORBID_TREE },
	/* Shared by every user (other users' sockets and files), or root's home. */
	{ "/root", FORBID_DIR }, { "/home", FORBID_DIR }, { "/tmp", FORBID_DIR },
	{ "/var/tmp", FORBID_DIR }, { "/var", FORBID_DIR }, { "/opt", FORBID_DIR },
	{ "/srv", FORBID_DIR },  { "/mnt", FORBID_DIR }, { "/media", FORBID_DIR },
};

/* Rootless engines keep their state and credentials in the user's home. */
static const forbidden_dir home_dirs[] = {
	{ ".local/share/containers", FORBID_TREE }, { ".local/share/docker", FORBID_TREE },
	{ ".config/containers", FORBID_TREE },      { ".docker", FORBID_TREE },
};

/* Deeper than this, a directory is not compared with the list's trees. */
#define MAX_DEPTH 256

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The identities of fd's directory and of each directory above it, up to
 * the root (whose ".." is itself). Returns how many, at most max; the
 * descriptor is not consumed. */
static int ancestors(int fd, struct stat *out, int max)
{
	int n = 0;
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	while (cur >= 0 && n < max && fstat(cur, &out[n]) == 0) {
		if (n > 0 && same_file(&out[n], &out[n - 1]))
			break;
		n++;
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = up;
	}
	if (cur >= 0)
		close(cur);
	return n;
}

static int forbidden(cordon_error **reterr, const char *path, const char *listed, bool inside)
{
	return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, ERRC(workspace_forbidden),
			 "the workspace %s %s %s, which no tier may hand to the work "
			 "(docs/policy.md, \"Forbidden workspaces\")",
			 path, inside ? "is inside" : "is or contains", listed);
}

/* Compares the workspace (its own chain of ancestors, ws[0] itself) with
 * one listed directory: equal to it or above it, or below a listed tree. */
static int check_one(const char *path, const struct stat *ws, int nws, const char *listed,
		     forbidden_scope scope, cordon_error **reterr)
{
	int fd = open(listed, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* not on this host (a socket path is no directory) */
	g_autofree struct stat *up = g_new(struct stat, MAX_DEPTH);
	int n = ancestors(fd, up, MAX_DEPTH);
	close(fd);
	for (int i = 0; i < n; i++)
		if (same_file(&up[i], &ws[0]))
			return forbidden(reterr, path, listed, false);
	if (scope == FORBID_TREE && n > 0)
		for (int i = 1; i < nws; i++)
			if (same_file(&ws[i], &up[0]))
				return forbidden(reterr, path, listed, true);
	return 0;
}

static int check_list(const char *path, const struct stat *ws, int nws, const char *home,
		      const forbidden_dir *list, size_t n, cordon_error **reterr)
{
	for (size_t i = 0; i < n; i++) {
		g_autofree char *listed = home ? g_build_filename(home, list[i].path, NULL)
					       : g_strdup(list[i].path);
		int r = check_one(path, ws, nws, listed, list[i].scope, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Refuses a workspace that is, or lies above, a directory in held: what cordon itself trusts
 * (the policy file's directory, the plugin directory) must not be the work's to rewrite. */
static int check_held(const char *path, const struct stat *ws, const char *const *held,
		      cordon_error **reterr)
{
	for (size_t i = 0; held && held[i]; i++) {
		int fd = open(held[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue; /* not there: nothing of it to protect */
		struct stat up[MAX_DEPTH];
		int n = ancestors(fd, up, MAX_DEPTH);
		close(fd);
		for (int k = 0; k < n; k++)
			if (same_file(&up[k], ws))
				return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN,
						 ERRC(workspace_forbidden),
						 "the workspace %s holds %s, which cordon itself trusts "
						 "(the policy or the plugins): the work could rewrite it",
						 path, held[i]);
	}
	return 0;
}

int workspace_check_held(const char *path, const char *const *held, cordon_error **reterr)
{
	int r = workspace_check(path, reterr);
	if (r < 0 || !held)
		return r;
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return workspace_check(path, reterr); /* gone since: its error */
	struct stat ws;
	r = fstat(fd, &ws) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return error_set(reterr, -r, CORDON_ERROR_INVALID, ERRC(workspace_invalid),
				 "cannot examine the workspace %s", path);
	return check_held(path, &ws, held, reterr);
}

int workspace_check(const char *path, cordon_error **reterr)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		struct stat lst;
		/* A link refuses O_DIRECTORY|O_NOFOLLOW with ENOTDIR (ELOOP without O_PATH); a
		 * directory seen now was swapped in since. The same code as a container tier's
		 * refusal of a link on the way. */
		bool swapped = (e == ENOTDIR || e == ELOOP) && lstat(path, &lst) == 0 &&
			       (S_ISLNK(lst.st_mode) || S_ISDIR(lst.st_mode));
		if (swapped)
			return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN,
					 ERRC(workspace_symlink),
					 "the workspace %s is a symbolic link, or was replaced by "
					 "one while it was opened (name the directory itself)", path);
		return error_set(reterr, e, CORDON_ERROR_INVALID, ERRC(workspace_invalid),
				 "cannot open the workspace %s: %s", path, g_strerror(e));
	}
	int r = workspace_check_fd(fd, path, reterr);
	close(fd);
	return r;
}

int workspace_check_fd(int fd, const char *path, cordon_error **reterr)
{
	g_autofree struct stat *ws = g_new(struct stat, MAX_DEPTH);
	int nws = ancestors(fd, ws, MAX_DEPTH);
	if (nws == 0)
		return error_set(reterr, EIO, CORDON_ERROR_INVALID, ERRC(workspace_invalid),
				 "cannot examine the workspace %s", path);
	int r = check_list(path, ws, nws, NULL, system_dirs, G_N_ELEMENTS(system_dirs), reterr);
	const char *home = g_get_home_dir();
	if (r == 0 && home && home[0] == '/')
		r = check_list(path, ws, nws, home, home_dirs, G_N_ELEMENTS(home_dirs), reterr);
	return r;
}
