/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cold boot's workspace shared by virtio-fs (docs/tiers/microvm.md, "Workspaces"):
 * QEMU's C virtiofsd serves the workspace's directory descriptor (opened with no link on
 * the way, workspace.c) to the guest's /work, live, with no copy.
 *
 * virtiofsd is started through the host services' file server (process_spawn's
 * CORDON_HOST_PROCESS_FILE_SERVER, ABI 1.6): in a user namespace of root's where only the
 * workspace's owner is mapped, as the guest's work uid (AGENT_GUEST_UID, so the work
 * sees its files as its own and a guest root maps to nothing), the directory mounted from
 * its descriptor at VFS_MOUNT_AT (virtiofsd never holds the descriptor), read-only by the
 * host's kernel for read-only work, the init of a pid namespace of its own. From
 * there it confines itself (-o sandbox=namespace: mount, pid and network namespaces, a
 * pivot_root into the directory, its own seccomp filter).
 *
 * Its vhost-user socket: a listener bound in a fresh 0700 directory, connected by us at
 * once and unlinked with its directory before virtiofsd runs, so no name of it is left for
 * anyone else to reach; the connected end is QEMU's (QEMU_VFS_FD).
 */
#include "config.h"

#include "vm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_VIRTIOFSD "/usr/lib/qemu/virtiofsd"
/* Where virtiofsd finds the workspace in its mount namespace: a directory every host has,
 * covered there only. */
#define VFS_MOUNT_AT "/tmp"

const char *qemu_virtiofsd_path(const qemu_tier *t)
{
	return t->virtiofsd ? t->virtiofsd : DEFAULT_VIRTIOFSD;
}

/* A listener and its connected peer, no name left: *listener for virtiofsd, *peer QEMU's. */
static int socket_pair_by_listener(int *listener, int *peer)
{
	char dir[] = "/tmp/cordon-vfs-XXXXXX";
	*listener = *peer = -1;
	if (!mkdtemp(dir))
		return -errno;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/s", dir);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r = l < 0 || c < 0 ? -errno : 0;
	if (r == 0 && (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
		       connect(c, (struct sockaddr *)&a, sizeof(a)) < 0))
		r = -errno;
	unlink(a.sun_path);
	rmdir(dir);
	if (r < 0) {
		if (l >= 0)
			close(l);
		if (c >= 0)
			close(c);
		return r;
	}
	*listener = l;
	*peer = c;
	return 0;
}

int qemu_virtiofs_start(const qemu_tier *t, const qemu_workspace *ws,
			cordon_host_process **ret_proc, int *ret_qemu_fd, cordon_plugin_error *err)
{
	*ret_proc = NULL;
	*ret_qemu_fd = -1;
	int listener, peer;
	int e = socket_pair_by_listener(&listener, &peer);
	if (e < 0)
		return qemu_host->error_set(err, -e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
					    "virtiofsd's socket: %s", strerror(-e));
	char fd_arg[32], source[64];
	snprintf(fd_arg, sizeof(fd_arg), "--fd=%d", 3); /* extra_fd */
	snprintf(source, sizeof(source), "source=%s", VFS_MOUNT_AT);
	/* --rlimit-nofile=0: ours stand (it would raise its own otherwise) */
	const char *argv[] = {
		qemu_virtiofsd_path(t), fd_arg, "-o",         source, "-o",
		"sandbox=namespace",    "-o",   "cache=auto", "-o",   "log_level=warn",
		"--rlimit-nofile=0",    NULL
	};
	cordon_host_process_spec spec = {
		.size = sizeof(spec),
		.argv = argv,
		.stdin_fd = -1,
		.stdout_fd = -1,
		.stderr_fd = -1,
		.extra_fd = listener,
		.flags = CORDON_HOST_PROCESS_FILE_SERVER | CORDON_HOST_PROCESS_PDEATHSIG |
			 (ws->writable ? 0 : CORDON_HOST_PROCESS_READ_ONLY),
		.jail_fd_path = VFS_MOUNT_AT,
		.jail_fd = ws->fd,
		.file_server_id = AGENT_GUEST_UID,
	};
	/* its refusal (a directory of root's, no root) is the core's, with the reason */
	int ret = qemu_host->process_spawn(&spec, ret_proc, err);
	close(listener);
	if (ret < 0) {
		close(peer);
		return ret;
	}
	*ret_qemu_fd = peer;
	return 0;
}

void qemu_virtiofs_stop(cordon_host_process **proc)
{
	if (*proc)
		(*proc)->release(*proc); /* kills it if QEMU's end did not end it */
	*proc = NULL;
}
