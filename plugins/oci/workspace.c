/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The workspace handed to a container (DESIGN.md §8.9): opened once, one
 * component at a time without following any symbolic link, checked on its
 * descriptor, and given to the engine in a form that cannot be swapped.
 *
 * An engine resolves a bind source by path, later, in another process (the
 * daemon): a symlink anywhere in the path, or a rename between our check and
 * its lookup, would mount whatever the path names by then (the host's root,
 * read-write). As root the opened directory itself is bind-mounted onto a
 * staging directory only root can reach (/run/cordon/oci/NAME, every level
 * 0700 and root's), and that path is what the engine gets; the staging mount
 * is detached as soon as the container runs (its own mount holds the
 * directory). Without the privilege to mount (rootless podman) the engine
 * gets the descriptor's canonical path and, once the container runs, its
 * /work must be the very directory we opened (device and inode, read through
 * its pid 1's root), or the container is ended.
 */
#include "config.h"

#include "driver.h"
#include "protocol.h"
#include "fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAGE_PARENT "/run/cordon"
#define STAGE_DIR OCI_PRIVATE_DIR

#define FORBID(r, code, ...) \
	oci_refuse((r), EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN, (code), __VA_ARGS__)

/* fd's canonical path and identity into *ret, which then owns fd; fd is closed on failure. */
static int adopt_fd(int fd, const char *path, oci_workspace *ret, oci_refusal *r)
{
	struct stat st;
	char link[64], real[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, sizeof(real) - 1);
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || n <= 0 || real[0] != '/') {
		close(fd);
		return oci_refuse(r, EIO, CORDON_PLUGIN_ERROR_TERMINAL,
				  ERRC(container_workspace_invalid),
				  "'%.200s' could not be checked on its descriptor", path);
	}
	real[n] = '\0';
	*ret = (oci_workspace){
		.fd = fd, .real = xstrdup(real), .dev = st.st_dev, .ino = st.st_ino
	};
	return 0;
}

int oci_mount_adopt(const cordon_plugin_mount *m, oci_workspace *ret, oci_refusal *r)
{
	*ret = (oci_workspace){ .fd = -1 };
	int fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return oci_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL,
				  ERRC(container_workspace_invalid), "mount '%.200s': %s", m->host,
				  strerror(errno));
	return adopt_fd(fd, m->host, ret, r);
}

int oci_workspace_open(const char *path, oci_workspace *ret, oci_refusal *r)
{
	*ret = (oci_workspace){ .fd = -1 };
	if (!path || path[0] != '/')
		return FORBID(r, ERRC(container_mount_path_invalid),
			      "the workspace must be an absolute path");
	int fd = fsops_open_dir_nofollow(path);
	if (fd == -ELOOP || fd == -ENOTDIR)
		return FORBID(r, ERRC(workspace_symlink),
			      "workspace '%.200s' is, or passes through, a symbolic link or a "
			      "non-directory: containers get no workspace a link could redirect",
			      path);
	if (fd < 0)
		return oci_refuse(r, -fd, CORDON_PLUGIN_ERROR_INVALID,
				  ERRC(container_workspace_invalid), "workspace '%.200s': %s", path,
				  strerror(-fd));
	return adopt_fd(fd, path, ret, r);
}

/* mkdir, or an existing one that is a real directory of root's with none
 * of the deny bits. */
static int stage_level(const char *dir, mode_t deny)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = open(dir, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int ret = fstat(fd, &st) < 0 ? -errno : 0;
	close(fd);
	if (ret == 0 && (st.st_uid != 0 || (st.st_mode & deny)))
		ret = -EPERM;
	return ret;
}

int oci_private_dir(void)
{
	/* /run/cordon may be shared with other parts of cordon; ours is 0700 */
	int ret = stage_level(STAGE_PARENT, 022);
	return ret == 0 ? stage_level(STAGE_DIR, 077) : ret;
}

int oci_workspace_stage(oci_workspace *ws, const char *name, oci_refusal *r)
{
	if (geteuid() != 0)
		return 0; /* verified after start instead (oci_workspace_verify) */
	char *staged = xasprintf(STAGE_DIR "/%s", name);
	char src[64];
	snprintf(src, sizeof(src), "/proc/self/fd/%d", ws->fd);
	int ret = oci_private_dir();
	if (ret == 0 && mkdir(staged, 0700) < 0)
		ret = -errno;
	/* the descriptor's directory itself, whatever its path names by now */
	if (ret == 0 && mount(src, staged, NULL, MS_BIND | MS_REC, NULL) < 0) {
		ret = -errno;
		rmdir(staged);
	}
	if (ret < 0) {
		free(staged);
		return oci_refuse(
			r, -ret, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(container_workspace_stage),
			"could not stage the workspace under " STAGE_DIR ": %s", strerror(-ret));
	}
	ws->staged = staged;
	return 0;
}

const char *oci_workspace_source(const oci_workspace *ws)
{
	return ws->staged ? ws->staged : ws->real;
}

void oci_workspace_unstage(oci_workspace *ws)
{
	if (!ws->staged)
		return;
	/* the container's own mount keeps the directory; nothing stays here */
	if (umount2(ws->staged, MNT_DETACH) < 0 || rmdir(ws->staged) < 0)
		oci_host->log(CORDON_PLUGIN_LOG_WARNING, "oci", "staged workspace %s: %s",
			      ws->staged, strerror(errno));
	free(ws->staged);
	ws->staged = NULL;
}

int oci_workspace_verify(const oci_workspace *ws, const oci_tier *t, const char *engine,
			 const char *name, oci_refusal *r)
{
	if (ws->staged)
		return 0; /* the engine never saw a path it could follow */
	/* gVisor's pid 1 on the host is its sandbox, whose root is not the
	 * container's: nothing to compare with, so no unstaged workspace */
	if (oci_runtime_is_gvisor(t->runtime))
		return FORBID(r, ERRC(container_workspace_unverified),
			      "without root the workspace given to gVisor cannot be checked to be "
			      "the directory cordon opened");
	int pid = oci_container_pid(t, engine, name);
	char *at = xasprintf("/proc/%d/root" AGENT_SANDBOX_ROOT, pid);
	struct stat st;
	bool same = pid > 0 && stat(at, &st) == 0 && st.st_dev == ws->dev && st.st_ino == ws->ino;
	free(at);
	if (!same)
		return FORBID(
			r, ERRC(container_workspace_swapped),
			"the container's %s is not the workspace directory cordon opened (it was "
			"renamed or replaced while the container started)",
			AGENT_SANDBOX_ROOT);
	return 0;
}

void oci_workspace_close(oci_workspace *ws)
{
	oci_workspace_unstage(ws);
	if (ws->fd >= 0)
		close(ws->fd);
	free(ws->real);
	*ws = (oci_workspace){ .fd = -1 };
}
