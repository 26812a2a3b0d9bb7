/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A request's extra host directories (cordon_request_add_mount), opened once and judged as
 * the workspace is, for the driver's open (mounts.h). */
#include "config.h"

#include "mounts.h"
#include "error.h"
#include "workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path opened a component at a time from /, O_NOFOLLOW each: no symbolic link anywhere
 * on the way, and the descriptor is what was checked (a later swap of a component
 * does not move it). Returns the O_PATH descriptor or a negative errno. */
static int open_no_links(const char *path, cordon_error **reterr)
{
	g_auto(GStrv) parts = g_strsplit(path, "/", -1);
	int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (size_t i = 0; parts[i]; i++) {
		const char *c = parts[i];
		if (!c[0])
			continue;
		if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0) {
			close(cur);
			return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(mount_invalid),
					 "the mount %s holds a '.' or '..' component (name the "
					 "directory itself)",
					 path);
		}
		int next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		struct stat lst;
		bool link = next < 0 && (e == ENOTDIR || e == ELOOP) &&
			    fstatat(cur, c, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode);
		close(cur);
		if (link)
			return error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN,
					 ERRC(mount_forbidden),
					 "the mount %s passes through a symbolic link (%s): name "
					 "the directory itself",
					 path, c);
		if (next < 0)
			return error_set(reterr, e, CORDON_ERROR_INVALID, ERRC(mount_invalid),
					 "cannot open the mount %s: %s", path, g_strerror(e));
		cur = next;
	}
	return cur;
}

void open_mounts_free(open_mounts *o)
{
	if (!o)
		return;
	for (guint i = 0; o->m && i < o->n; i++)
		if (o->m[i].fd >= 0)
			close(o->m[i].fd);
	g_free(o->m);
	g_free(o);
}

int mounts_open(const cordon_request *req, const char *const *held, open_mounts **ret,
		cordon_error **reterr)
{
	guint n = req->mounts->len;
	g_autoptr(open_mounts) o = g_new0(open_mounts, 1);
	*ret = NULL;
	if (n == 0) {
		*ret = g_steal_pointer(&o);
		return 0;
	}
	cordon_plugin_mount *m = o->m = g_new0(cordon_plugin_mount, n);
	o->n = n;
	for (guint i = 0; i < n; i++)
		m[i].fd = -1;
	for (guint i = 0; i < n; i++) {
		const request_mount *rm = req->mounts->pdata[i];
		m[i] = (cordon_plugin_mount){ .size = sizeof(m[i]),
					      .flags = rm->rw ? CORDON_PLUGIN_MOUNT_RW : 0,
					      .fd = -1,
					      .host = rm->host,
					      .inside = rm->inside };
		int fd = open_no_links(rm->host, reterr);
		int r = fd < 0 ? fd : workspace_check_mount_fd(fd, rm->host, held, reterr);
		if (fd >= 0)
			m[i].fd = fd;
		if (r < 0)
			return r;
	}
	*ret = g_steal_pointer(&o);
	return 0;
}
