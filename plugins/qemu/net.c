/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A guest's network, such as it is (docs/network.md, "The microVM tiers' network channel").
 * The guest has no network device. The listen op, for cordon's egress proxy and services, works as the gVisor
 * relay does (plugins/oci/relay.c), over the guest's second virtio-serial port instead of a
 * shared socket: the host binds a unix listener of its own (the core accepts on it), asks
 * the agent to `relay channel:N`, and the agent listens on the guest's 127.0.0.1 and hands
 * the listener to its multiplexer (agent/relay.c), which opens one stream per connection on
 * the channel. Here the host side of the multiplexer (common/netmux.h, the peer hostile)
 * connects each stream the guest opens on listener N to that unix listener, and nothing
 * else: a guest can reach only the listeners the core asked for, with as many streams as
 * the mux bounds.
 *
 * The listeners' sockets live in a directory of mode 0700 under /dev/shm named after this
 * host's owner token (QEMU_NAME_PREFIX<token>-net-XXXXXX), so gc removes a dead host's
 * (qemu_net_gc). The host's own streams go the other way: a served port's connections
 * (qemu_forward_*) and second sessions of the agent's (driver.c). One thread per sandbox
 * runs the mux, started by its first user.
 */
#include "config.h"

#include "net.h"

#include "netmux.h"
#include "owner.h"
#include "vm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NET_ROOT "/dev/shm"

/* How long the guest's multiplexer has to say it runs, once: a guest without one (an image
 * built before the channel) never does, and is then waited for on its first session. */
#define NET_HELLO_MS 3000

struct qemu_net {
	netmux *mux;
	pthread_t thread;
	bool running;
	int peer;             /* the guest's HELLO: 0 not yet asked, 1 came, -errno not */
	pthread_mutex_t lock; /* guards running (the start), peer, n, serves and dir */
	uint32_t n;           /* listeners made or being made: 1..n */
	uint32_t serves;      /* serve sockets made: SERVE_NAME 1..serves */
	char owner[OWNER_TOKEN_MAX];
	char dir[200]; /* NET_ROOT/prefix-token-net-XXXXXX, made by the first listener */
};

/* A listener's socket: the directory, at most NET_DIR_MAX long (listener_dir checks), and
 * the listener's number, so a name is never cut short. */
#define NET_DIR_MAX 95
/* A serve socket's name in that directory (a unix listener the host's clients connect to):
 * never a name open_stream resolves, so no stream of the guest's reaches it. */
#define SERVE_NAME "s"
_Static_assert(NET_DIR_MAX + sizeof("/" SERVE_NAME "4294967295") <=
		       sizeof(((struct sockaddr_un *)0)->sun_path),
	       "a listener's name fits a unix socket's");

static void listener_addr(const qemu_net *net, uint32_t id, struct sockaddr_un *a)
{
	*a = (struct sockaddr_un){ .sun_family = AF_UNIX };
	snprintf(a->sun_path, sizeof(a->sun_path), "%.*s/%u", NET_DIR_MAX, net->dir, (unsigned)id);
}

/* The guest opened a stream on listener id: a connection to that listener alone (one whose
 * socket is made: a connect to a name not bound yet fails). */
static int open_stream(void *ctx, uint32_t id)
{
	qemu_net *net = ctx;
	pthread_mutex_lock(&net->lock);
	bool known = id >= 1 && id <= net->n && net->dir[0];
	pthread_mutex_unlock(&net->lock);
	if (!known)
		return -ENOENT;
	struct sockaddr_un a;
	listener_addr(net, id, &a);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* a unix connect to a listener with room in its backlog completes at once */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static void *run_mux(void *arg)
{
	qemu_net *net = arg;
	int r = netmux_run(net->mux);
	if (r < 0)
		qemu_host->log(CORDON_PLUGIN_LOG_WARNING, "qemu",
			       "the guest's network channel ended: %s (every stream on it closed)",
			       r == -EPROTO ? "the guest broke its protocol" : strerror(-r));
	return NULL;
}

/* The mux on the VM's channel (taken from vm), and its thread. */
static int net_start(qemu_net *net, qemu_vm *vm)
{
	netmux_config c = {
		.transport = vm->net, .host = true, .open_stream = open_stream, .ctx = net
	};
	net->mux = netmux_new(&c);
	vm->net = -1; /* the mux's now, closed by it even when it could not start */
	if (!net->mux)
		return -errno;
	int r = pthread_create(&net->thread, NULL, run_mux, net);
	if (r != 0) {
		netmux_free(net->mux);
		net->mux = NULL;
		return -r;
	}
	net->running = true;
	return 0;
}

qemu_net *qemu_net_new(const char *owner)
{
	qemu_net *net = xmalloc0(sizeof(*net));
	pthread_mutex_init(&net->lock, NULL);
	snprintf(net->owner, sizeof(net->owner), "%s", owner);
	return net;
}

/* The listeners' directory, made once (net->lock held): mode 0700, the name never cut. */
static int listener_dir(qemu_net *net)
{
	if (net->dir[0])
		return 0;
	char dir[sizeof(net->dir)];
	snprintf(dir, sizeof(dir), NET_ROOT "/" QEMU_NAME_PREFIX "%s-net-XXXXXX", net->owner);
	if (strlen(dir) > NET_DIR_MAX)
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	memcpy(net->dir, dir, sizeof(dir));
	return 0;
}

/* The mux running on vm's channel (started by the first caller) and the guest's end
 * known to run (its HELLO, within NET_HELLO_MS, asked once). */
static int net_ensure(qemu_net *net, qemu_vm *vm, agent_error *r)
{
	pthread_mutex_lock(&net->lock);
	int e = net->running ? 0 : vm->net < 0 ? ENOTCONN : -net_start(net, vm);
	bool ask = e == 0 && net->peer == 0;
	pthread_mutex_unlock(&net->lock);
	if (ask) {
		int p = netmux_wait_peer(net->mux, NET_HELLO_MS);
		pthread_mutex_lock(&net->lock);
		net->peer = p == 0 ? 1 : p;
		pthread_mutex_unlock(&net->lock);
	}
	pthread_mutex_lock(&net->lock);
	if (e == 0 && net->peer < 0)
		e = ENOTCONN;
	pthread_mutex_unlock(&net->lock);
	if (e == ENOTCONN)
		return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(unsupported),
				   "the guest has no network channel (its image was built "
				   "before it, or its channel ended: `cordon vm build` anew)");
	if (e)
		return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				   "the guest's network channel: %s", strerror(e));
	return 0;
}

bool qemu_net_usable(qemu_net *net, qemu_vm *vm)
{
	agent_error r;
	return net_ensure(net, vm, &r) == 0;
}

int qemu_net_open(qemu_net *net, qemu_vm *vm, uint32_t target, int local, int timeout_ms,
		  agent_error *r)
{
	int e = net_ensure(net, vm, r);
	if (e < 0) {
		close(local);
		return e;
	}
	e = netmux_open(net->mux, target, local, timeout_ms);
	if (e == -ECONNREFUSED)
		return qemu_refuse(r, -e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(serve_not_ready),
				   "the guest refused the stream");
	if (e < 0)
		return qemu_refuse(r, -e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				   "a stream on the guest's network channel: %s", strerror(-e));
	return 0;
}

int qemu_net_listener(qemu_net *net, qemu_vm *vm, uint32_t *ret_id, agent_error *r)
{
	int e = net_ensure(net, vm, r);
	if (e < 0)
		return e;
	pthread_mutex_lock(&net->lock);
	e = -listener_dir(net);
	uint32_t id = e ? 0 : ++net->n; /* reserved: a second caller binds another name */
	pthread_mutex_unlock(&net->lock);
	if (e)
		return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				   "a directory for the guest's listeners in " NET_ROOT ": %s",
				   strerror(e));
	struct sockaddr_un a;
	listener_addr(net, id, &a);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool bound = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (!bound || listen(fd, SOMAXCONN) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		if (bound)
			unlink(a.sun_path); /* ours: never a name another bound */
		return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
				   "a listener for the guest: %s", strerror(e));
	}
	*ret_id = id;
	return fd;
}

static bool digits(const char *s) { return *s && strspn(s, "0123456789") == strlen(s); }

/* The names this file binds: the guest's listeners' ("N") and serve sockets' ("sN"). */
static bool our_socket_name(const char *name)
{
	return digits(name) || (strncmp(name, SERVE_NAME, strlen(SERVE_NAME)) == 0 &&
				digits(name + strlen(SERVE_NAME)));
}

/* Removes the directory's sockets (our_socket_name) and the directory. */
static int remove_dir(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	for (struct dirent *e; (e = readdir(d));)
		if (our_socket_name(e->d_name))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	return unlinkat(parent, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

void qemu_net_free(qemu_net *net)
{
	if (!net)
		return;
	if (net->running) {
		netmux_stop(net->mux);
		pthread_join(net->thread, NULL);
	}
	netmux_free(net->mux);
	const char *slash = strrchr(net->dir, '/');
	int root = slash ? open(NET_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (root >= 0) {
		remove_dir(root, slash + 1);
		close(root);
	}
	pthread_mutex_destroy(&net->lock);
	free(net);
}

int qemu_net_gc(void)
{
	DIR *d = opendir(NET_ROOT);
	if (!d)
		return 0;
	int removed = 0;
	size_t plen = strlen(QEMU_NAME_PREFIX);
	for (struct dirent *e; (e = readdir(d));) {
		size_t tlen = 0;
		struct stat st;
		if (strncmp(e->d_name, QEMU_NAME_PREFIX, plen) != 0 ||
		    owner_token_state(e->d_name + plen, &tlen) != OWNER_DEAD ||
		    strncmp(e->d_name + plen + tlen, "-net-", 5) != 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		removed += remove_dir(dirfd(d), e->d_name) == 0;
	}
	closedir(d);
	return removed;
}

/* ---- serve: the host's listener for a port of the guest's ----------------------------------- */

#define FORWARD_PROBE_MS 25    /* between tries of a port that does not accept yet */
#define FORWARD_ANSWER_MS 1000 /* the guest's answer to a probe's stream */
#define FORWARD_BACKOFF_MS 100 /* out of descriptors: the listener stays readable */

struct qemu_forward {
	qemu_net *net;
	qemu_vm *vm;
	uint16_t port;
	int lsn;     /* 127.0.0.1:0, or a unix socket at path */
	int stop[2]; /* a pipe: readable once the run ended */
	void (*ready)(void *ctx, const char *address);
	void *ctx;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* the unix listener's, or "" */
	char address[sizeof("unix:") + sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
};

/* The listener closed (its socket's name removed), the pipe's ends closed; f freed. */
static void forward_free(qemu_forward *f)
{
	if (f->lsn >= 0)
		close(f->lsn);
	if (f->path[0])
		unlink(f->path);
	for (int i = 0; i < 2; i++)
		if (f->stop[i] >= 0)
			close(f->stop[i]);
	free(f);
}

/* Whether the guest's port accepts now: a stream opened and closed (the server sees a
 * connection with no bytes). */
static bool port_accepts(qemu_forward *f)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return false;
	agent_error r;
	bool ok = qemu_net_open(f->net, f->vm, f->port, sp[1], FORWARD_ANSWER_MS, &r) == 0;
	close(sp[0]);
	return ok;
}

static bool stopped(qemu_forward *f, int wait_ms, bool *ret_client)
{
	struct pollfd p[2] = { { f->stop[0], POLLIN, 0 }, { f->lsn, POLLIN, 0 } };
	int n = poll(p, ret_client ? 2 : 1, wait_ms);
	if (ret_client)
		*ret_client = n > 0 && (p[1].revents & POLLIN);
	return n > 0 && (p[0].revents & (POLLIN | POLLHUP));
}

static void *forward_thread(void *arg)
{
	qemu_forward *f = arg;
	while (!port_accepts(f))
		if (stopped(f, FORWARD_PROBE_MS, NULL))
			return NULL;
	f->ready(f->ctx, f->address);
	/* each connection a stream nobody waits for: a guest slow to answer one holds up no
	 * other (a refused one's client sees its connection closed) */
	for (bool client = false; !stopped(f, -1, &client);) {
		if (!client)
			continue;
		int c = accept4(f->lsn, NULL, NULL, SOCK_CLOEXEC);
		agent_error r;
		bool out_of_fds = c < 0 && (errno == EMFILE || errno == ENFILE ||
					    errno == ENOBUFS || errno == ENOMEM);
		if (out_of_fds && stopped(f, FORWARD_BACKOFF_MS, NULL))
			break;
		if (c >= 0 && qemu_net_open(f->net, f->vm, f->port, c, -1, &r) < 0)
			qemu_host->log(CORDON_PLUGIN_LOG_DEBUG, "qemu", "serve: %s", r.message);
	}
	return NULL;
}

/* A serve socket of the host's in the listeners' directory (mode 0700: only this user,
 * and root, can connect), its path in f->path. */
static int serve_unix_listener(qemu_forward *f)
{
	qemu_net *net = f->net;
	pthread_mutex_lock(&net->lock);
	int e = -listener_dir(net);
	uint32_t id = e ? 0 : ++net->serves;
	pthread_mutex_unlock(&net->lock);
	if (e)
		return -e;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%.*s/" SERVE_NAME "%u", NET_DIR_MAX, net->dir,
		 (unsigned)id);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool bound = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (!bound || listen(fd, SOMAXCONN) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		if (bound)
			unlink(a.sun_path);
		return -e;
	}
	snprintf(f->path, sizeof(f->path), "%s", a.sun_path);
	snprintf(f->address, sizeof(f->address), "unix:%s", a.sun_path);
	return fd;
}

/* The host's 127.0.0.1:0, the port the kernel picked in f->address. */
static int serve_tcp_listener(qemu_forward *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	snprintf(f->address, sizeof(f->address), "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
	return fd;
}

qemu_forward *qemu_forward_start(qemu_net *net, qemu_vm *vm, uint16_t port, bool unix_socket,
				 void (*ready)(void *ctx, const char *address), void *ctx,
				 agent_error *r)
{
	if (net_ensure(net, vm, r) < 0)
		return NULL;
	qemu_forward *f = xmalloc0(sizeof(*f));
	*f = (qemu_forward){
		.net = net, .vm = vm, .port = port, .ready = ready, .ctx = ctx, .stop = { -1, -1 }
	};
	f->lsn = unix_socket ? serve_unix_listener(f) : serve_tcp_listener(f);
	int e = f->lsn < 0 ? -f->lsn : 0;
	if (!e && pipe2(f->stop, O_CLOEXEC) < 0)
		e = errno;
	if (!e)
		e = pthread_create(&f->thread, NULL, forward_thread, f);
	if (e) {
		forward_free(f);
		qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(resource),
			    "the served port's host listener (%s): %s",
			    unix_socket ? "a unix socket" : "127.0.0.1", strerror(e));
		return NULL;
	}
	return f;
}

void qemu_forward_stop(qemu_forward *f)
{
	if (!f)
		return;
	close(f->stop[1]);
	f->stop[1] = -1;
	pthread_join(f->thread, NULL);
	forward_free(f); /* streams already carried go on until the guest ends */
}
