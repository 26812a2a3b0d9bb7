/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A host workspace carried into a microVM guest by copy (docs/tiers/microvm.md,
 * "Workspaces"): opened once with no symbolic link on the way and held as a descriptor;
 * packed from it at open (common/wsarc.c: regular files and directories of its own file
 * system only) for the agent's `unpack`; for a writable workspace, the agent's `pack` of
 * the guest's /work at a clean close, unpacked into the same descriptor through a staging
 * directory, hostile stream and all. The path is never looked up again: a workspace
 * renamed or swapped meanwhile does not redirect the copy.
 */
#include "config.h"

#include "vm.h"

#include "fsops.h"
#include "wsowner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int qemu_workspace_open(const char *path, bool writable, qemu_workspace *ws, agent_error *r)
{
	*ws = (qemu_workspace){ .fd = -1 };
	if (!path || path[0] != '/')
		return qemu_refuse(r, EINVAL, CORDON_PLUGIN_ERROR_INVALID, ERRC(workspace_invalid),
				   "the workspace must be an absolute path");
	int at = fsops_open_dir_nofollow(path);
	if (at == -ELOOP || at == -ENOTDIR)
		return qemu_refuse(r, -at, CORDON_PLUGIN_ERROR_FORBIDDEN, ERRC(workspace_symlink),
				   "workspace '%.200s' is, or passes through, a symbolic link or "
				   "a non-directory",
				   path);
	int fd = at < 0 ? at : openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int e = fd < 0 && at >= 0 ? errno : -at;
	if (at >= 0)
		close(at);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0) {
			e = errno;
			close(fd);
		}
		return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_INVALID, ERRC(workspace_invalid),
				   "workspace '%.200s': %s", path, strerror(e));
	}
	/* As the kernel tier: as root a copy-out runs as the workspace's owner (wsowner.h).
	 * Copy-in only (read-only work) is harmless. */
	char why[400];
	if (writable && wsowner_check(&st, geteuid() == 0, why, sizeof(why)) < 0) {
		close(fd);
		return qemu_refuse(r, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN,
				   ERRC(workspace_forbidden), "workspace '%.200s': %s", path, why);
	}
	*ws = (qemu_workspace){ .fd = fd, .writable = writable, .uid = st.st_uid, .gid = st.st_gid };
	return 0;
}

/* Every id here is the calling thread's own: setfsuid, setfsgid and the raw setgroups
 * call are not broadcast to the process's other threads (glibc's setgroups() would be).
 * With a non-zero file system uid the thread's DAC-overriding capabilities are off until it
 * is 0 again; CAP_SETGID is not among them, so the groups are set first and put back last. */
int qemu_workspace_as_owner(const qemu_workspace *ws, qemu_owner_ids *saved)
{
	*saved = (qemu_owner_ids){ 0 };
	if (geteuid() != 0 || ws->uid == 0)
		return 0;
	int n = getgroups(0, NULL);
	gid_t *groups = n > 0 ? calloc((size_t)n, sizeof(*groups)) : NULL;
	if (n < 0 || (n > 0 && (!groups || getgroups(n, groups) != n))) {
		free(groups);
		return -EPERM;
	}
	*saved = (qemu_owner_ids){ .taken = true, .groups = groups, .n_groups = n };
	/* root's supplementary groups would let the copy read what only they may */
	if (syscall(SYS_setgroups, 1, &ws->gid) < 0)
		return -errno;
	syscall(SYS_setfsgid, ws->gid);
	syscall(SYS_setfsuid, ws->uid);
	bool took = (uid_t)syscall(SYS_setfsuid, -1) == ws->uid &&
		    (gid_t)syscall(SYS_setfsgid, -1) == ws->gid;
	return took ? 0 : -EPERM;
}

int qemu_workspace_as_root(qemu_owner_ids *saved)
{
	if (!saved->taken)
		return 0;
	syscall(SYS_setfsgid, 0);
	syscall(SYS_setfsuid, 0);
	bool back = syscall(SYS_setfsuid, -1) == 0 && syscall(SYS_setfsgid, -1) == 0 &&
		    syscall(SYS_setgroups, (size_t)saved->n_groups, saved->groups) == 0;
	free(saved->groups);
	*saved = (qemu_owner_ids){ 0 };
	return back ? 0 : -EPERM;
}

typedef struct growbuf {
	char *data;
	size_t len, cap;
} growbuf;

static int grow_emit(void *ctx, const void *data, size_t len)
{
	growbuf *b = ctx;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 1u << 16;
		while (cap < b->len + len)
			cap *= 2;
		char *p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

int qemu_workspace_pack(const qemu_workspace *ws, const wsarc_limits *lim, char **ret,
			size_t *ret_len, agent_error *r)
{
	growbuf b = { 0 };
	wsarc_report rep = { 0 };
	qemu_owner_ids saved;
	int e = qemu_workspace_as_owner(ws, &saved);
	if (e == 0)
		e = wsarc_pack(ws->fd, lim, grow_emit, &b, &rep);
	if (qemu_workspace_as_root(&saved) < 0)
		abort(); /* a thread left with another's ids: nothing after it could be trusted */
	if (e == -EFBIG || e == -E2BIG) {
		free(b.data);
		return qemu_refuse(r, -e, CORDON_PLUGIN_ERROR_FORBIDDEN,
				   ERRC(vm_workspace_too_large),
				   "the workspace has more %s than the tier copies into a guest "
				   "(workspace_max_files %llu, workspace_max_size %llu bytes)",
				   rep.over, (unsigned long long)lim->max_files,
				   (unsigned long long)lim->max_bytes);
	}
	if (e < 0) {
		free(b.data);
		return qemu_refuse(r, -e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				   "could not read the workspace to copy it in: %s%s", strerror(-e),
				   e == -EACCES && geteuid() == 0
					   ? " (as root it is read as its owner: a file its owner "
					     "cannot read refuses the copy)"
					   : "");
	}
	if (rep.symlinks || rep.special || rep.other_mounts || rep.setid)
		qemu_host->log(CORDON_PLUGIN_LOG_DEBUG, "qemu",
			       "workspace copy-in left out %llu symbolic links, %llu devices, "
			       "FIFOs or sockets, %llu entries on other mounts; dropped the set-id "
			       "bits of %llu",
			       (unsigned long long)rep.symlinks, (unsigned long long)rep.special,
			       (unsigned long long)rep.other_mounts, (unsigned long long)rep.setid);
	*ret = b.data;
	*ret_len = b.len;
	return 0;
}

wsarc_unpack *qemu_workspace_unpack_begin(const qemu_workspace *ws, const wsarc_limits *lim)
{
	/* Group and others never get write (the guest claims the modes). The caller runs this
	 * as the owner (qemu_workspace_as_owner): what is created is the owner's. */
	wsarc_unpack_opts o = { .limits = *lim, .mode_mask = 0755 };
	return wsarc_unpack_new(ws->fd, &o);
}

int qemu_workspace_unpack_emit(void *unpack, const void *data, size_t len)
{
	return wsarc_unpack_feed(unpack, data, len);
}

void qemu_workspace_close(qemu_workspace *ws)
{
	if (ws->fd >= 0)
		close(ws->fd);
	ws->fd = -1;
}
