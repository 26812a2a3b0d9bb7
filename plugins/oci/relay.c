/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gVisor's listen op (docs/network.md "Governed egress on gVisor"): its work
 * talks to the Sentry's own network stack, where no socket of the host's
 * kernel is seen, so the listener inside is cordon-agent's (`relay`,
 * agent/relay.c) and the host's end is a unix socket in a directory of the
 * container's own (OCI_PRIVATE_DIR/NAME.relay, mode 0700, owned by the
 * container's user so that the work's uid may connect), bind-mounted
 * read-only at AGENT_RELAY_DIR: the work can connect to what is there and
 * create nothing. runsc reaches a host socket only with --host-uds=open (or
 * all): a podman tier gives it in its runtime_flags (per container, no
 * daemon); docker's daemon registers a runtime's flags, which its probe reads
 * from `info` (runtime_host_uds). Without it gVisor tiers do not listen.
 * The directory goes with the container.
 */
#include "config.h"

#include "driver.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

bool oci_relay_wanted(const oci_tier *t)
{
	if (!oci_runtime_is_gvisor(t->runtime) || geteuid() != 0)
		return false;
	for (size_t i = 0; t->runtime_flags && t->runtime_flags[i]; i++)
		if (oci_runsc_host_uds_flag(t->runtime_flags[i]))
			return true;
	return __atomic_load_n(&t->runtime_host_uds, __ATOMIC_RELAXED); /* docker's probe's */
}

char *oci_relay_dir(const char *name) { return xasprintf(OCI_PRIVATE_DIR "/%s.relay", name); }

static int user_ids(const oci_tier *t, uid_t *uid, gid_t *gid)
{
	const char *user = t->user ? t->user : "65534:65534";
	unsigned long u, g;
	if (sscanf(user, "%lu:%lu", &u, &g) != 2)
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int oci_relay_prepare(const oci_tier *t, const char *name, oci_refusal *r)
{
	uid_t uid;
	gid_t gid;
	int ret = user_ids(t, &uid, &gid);
	if (ret == 0)
		ret = oci_private_dir();
	char *dir = oci_relay_dir(name);
	if (ret == 0 && mkdir(dir, 0700) < 0)
		ret = -errno;
	if (ret == 0 && lchown(dir, uid, gid) < 0) {
		ret = -errno;
		rmdir(dir);
	}
	free(dir);
	if (ret < 0)
		return oci_refuse(r, -ret, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				  "the relay directory under " OCI_PRIVATE_DIR ": %s",
				  strerror(-ret));
	return 0;
}

void oci_relay_remove(const oci_tier *t, const char *name)
{
	(void)t;
	/* whether or not this process knows the tier to relay (gc, a process whose probe came
	 * from the cache): what is there for this name goes; an engine's name holds no '/' and
	 * cordon's start with a letter, so a name that would leave OCI_PRIVATE_DIR is no
	 * container's */
	if (!name[0] || name[0] == '.' || strchr(name, '/'))
		return;
	char *dir = oci_relay_dir(name);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	for (struct dirent *e; d && (e = readdir(d));)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
	free(dir);
}

/* The host's end: a unix socket listening at DIR/N, the container's user its owner. */
static int host_listener(const oci_sandbox *sb, unsigned n, cordon_plugin_error *err)
{
	uid_t uid;
	gid_t gid;
	char *dir = oci_relay_dir(sb->name);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int len = snprintf(a.sun_path, sizeof(a.sun_path), "%s/%u", dir, n);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int e = fd < 0 ? errno : 0;
	if (!e && (len < 0 || (size_t)len >= sizeof(a.sun_path)))
		e = ENAMETOOLONG;
	if (!e && (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, SOMAXCONN) < 0))
		e = errno;
	if (!e && user_ids(sb->tier, &uid, &gid) == 0 && lchown(a.sun_path, uid, gid) < 0)
		e = errno;
	free(dir);
	if (!e)
		return fd;
	if (fd >= 0)
		close(fd);
	return oci_host->error_set(err, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				   "container %s: the relay's host socket: %s", sb->name,
				   strerror(e));
}

int oci_relay_listen(oci_sandbox *sb, uint16_t *ret_port, cordon_plugin_error *err)
{
	unsigned n = __atomic_fetch_add(&sb->relays, 1, __ATOMIC_RELAXED);
	int fd = host_listener(sb, n, err);
	if (fd < 0)
		return fd;
	char inside[64];
	snprintf(inside, sizeof(inside), AGENT_RELAY_DIR "/%u", n);
	const char *args[] = { "relay", inside, NULL };
	agent_port_answer p = { 0 };
	int r = oci_agent_file_op(sb, args, AGENT_FRAME_DATA, agent_port_collect, &p, err);
	uint16_t port = r == 0 ? agent_port_value(&p) : 0;
	if (r == 0 && !port)
		r = oci_host->error_set(
			err, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed),
			"container %s: the agent's relay answered no port", sb->name);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_port = port;
	return fd;
}
