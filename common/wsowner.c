/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A writable workspace's owner as root (wsowner.h). */
#include "config.h"

#include "wsowner.h"

#include <errno.h>
#include <stdio.h>

int wsowner_check(const struct stat *st, bool privileged, char *why, size_t whylen)
{
	if (!privileged || (st->st_uid != 0 && st->st_gid != 0))
		return 0;
	snprintf(why, whylen,
		 "the workspace is owned by %s (uid %u, gid %u): as root the work's "
		 "files take the workspace owner's ids on the host, and a root-owned one would "
		 "let the work plant root's files; give the directory to an unprivileged user "
		 "and group (chown) first",
		 st->st_uid == 0 ? "root" : "root's group", (unsigned)st->st_uid,
		 (unsigned)st->st_gid);
	return -EPERM;
}
