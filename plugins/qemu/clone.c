/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Copy-on-write clones (`clone: true`): a tier boots one template guest per guest shape
 * (memory, vCPUs, the limits on the kernel command line) with its RAM in a memfd of ours,
 * shared (memory-backend-file,share=on), waits for the agent's HELLO, and saves the device
 * state with x-ignore-shared (RAM is left out: it is the file). The template then ends and
 * the memfd is sealed (F_SEAL_WRITE, GROW, SHRINK, SEAL): nothing can change it again, while
 * a private mapping of it stays writable. The state stays in a directory made 0700 on tmpfs
 * (/dev/shm), 0400, until the tier ends (or gc finds its host dead); the memfd dies with us.
 *
 * Template and clones run in QEMU's jail (vm.c): QEMU 7.2 opens its RAM file by name and
 * read-write, and no bind mount can carry a memfd, so the jail gives QEMU the descriptor and
 * links TEMPLATE_RAM_PATH to it (process_spawn's jail_fd_path, ABI 1.5).
 *
 * Each open restores a clone from it: the same command line with share=off (the file
 * mapped MAP_PRIVATE: the guest's writes are copy-on-write pages of its own QEMU, never the
 * file's), `-incoming defer`, and the saved state fed over QMP: the host opens the state
 * file and passes the descriptor (getfd, SCM_RIGHTS), then migrate-incoming fd:. Nothing is
 * spawned (`-incoming exec:` dies under -sandbox spawn=deny) and no socket exists on the
 * host: QMP is a socket pair, QEMU's end its stdin.
 *
 * A clone starts as an exact copy of the template: the guest kernel's RNG state, its clock
 * and the agent's state. So before any work runs, the host sends the agent its identity
 * (qemu_vm_identity, agent/protocol.h): fresh bytes from the host's getrandom mixed into the
 * guest's pool and the CRNG reseeded, a machine id, a hostname, the host's clock; the agent
 * does it as root, then drops to the work's uid. Cold boots get the same (one code path).
 * What stays the template's: the guest kernel's layout (KASLR) and anything it derived from
 * its RNG at boot, and the agent's own address space (docs/tiers/microvm.md).
 */
#include "config.h"

#include "vm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEMPLATES_MAX 4      /* guest shapes per tier; another shape boots cold */
#define QMP_LINE_MAX 8192    /* longer is not QEMU's answer to one of our commands */
#define QMP_TIMEOUT_MS 10000 /* a save or a restore; TCG on a loaded host */
#define IDENTITY_ENTROPY 64
#define TEMPLATE_ROOT "/dev/shm"
/* Where QEMU finds the template's RAM in its jail (a link to the memfd) */
#define TEMPLATE_RAM_PATH "/cordon/template-ram"
#define TEMPLATE_SEALS (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)

/* ---- QMP: strict, bounded, over the socket pair ------------------------------------- */

typedef struct qmp {
	int fd;
	int64_t deadline_ms;
	char buf[QMP_LINE_MAX];
	size_t len;
} qmp;

static int qmp_refuse(agent_error *r, int e, const char *what)
{
	return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL,
			   e == ETIMEDOUT ? ERRC(vm_boot_timeout) : ERRC(vm_failed),
			   "QEMU's monitor: %s: %s", what, strerror(e));
}

/* The next line QEMU wrote (without its end), into line[QMP_LINE_MAX]. */
static int qmp_line(qmp *q, char *line)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		if (nl) {
			size_t n = (size_t)(nl - q->buf);
			memcpy(line, q->buf, n);
			line[n > 0 && line[n - 1] == '\r' ? n - 1 : n] = '\0';
			q->len -= n + 1;
			memmove(q->buf, nl + 1, q->len);
			return 0;
		}
		if (q->len == sizeof(q->buf))
			return -EPROTO;
		int64_t left = q->deadline_ms - agent_now_ms();
		struct pollfd p = { q->fd, POLLIN, 0 };
		int pr = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return pr < 0 ? -errno : -ETIMEDOUT;
		ssize_t got = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EPIPE;
		q->len += (size_t)got;
	}
}

/* Sends one command line, with a descriptor (SCM_RIGHTS) when fd >= 0. */
static int qmp_send(qmp *q, const char *cmd, int fd)
{
	struct iovec iov = { (void *)cmd, strlen(cmd) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	/* a few dozen bytes into an empty socket buffer: one call or a broken monitor */
	ssize_t n = sendmsg(q->fd, &m, MSG_NOSIGNAL);
	return n == (ssize_t)iov.iov_len ? 0 : n < 0 ? -errno : -EIO;
}

/* The "desc" of a QMP error, printable characters only, into out. */
static void qmp_desc(const char *line, char *out, size_t len)
{
	const char *p = strstr(line, "\"desc\": \"");
	size_t n = 0;
	for (p = p ? p + 9 : ""; *p && *p != '"' && n + 1 < len; p++)
		if (*p >= 0x20 && *p < 0x7f)
			out[n++] = *p;
	out[n] = '\0';
}

/* Runs cmd (passing fd when >= 0); the "return" line into ret[QMP_LINE_MAX] (may be NULL).
 * Events on the way are skipped; anything else is a broken monitor. */
static int qmp_answer(qmp *q, const char *cmd, char *ret, agent_error *r)
{
	int e;
	char line[QMP_LINE_MAX];
	for (;;) {
		if ((e = qmp_line(q, line)) < 0)
			return qmp_refuse(r, -e, cmd);
		if (strncmp(line, "{\"timestamp\": ", 14) == 0)
			continue; /* an event */
		if (strncmp(line, "{\"return\": ", 11) == 0) {
			if (ret)
				memcpy(ret, line, strlen(line) + 1);
			return 0;
		}
		char desc[256];
		qmp_desc(line, desc, sizeof(desc));
		return qemu_refuse(r, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				   "QEMU's monitor refused %s: %s", cmd,
				   strncmp(line, "{\"error\": ", 10) == 0 ? desc
									  : "a malformed answer");
	}
}

static int qmp_call(qmp *q, const char *cmd, int fd, char *ret, agent_error *r)
{
	int e = qmp_send(q, cmd, fd);
	return e < 0 ? qmp_refuse(r, -e, cmd) : qmp_answer(q, cmd, ret, r);
}

static int qmp_greeting(qmp *q, agent_error *r)
{
	char line[QMP_LINE_MAX];
	int e = qmp_line(q, line);
	if (e < 0)
		return qmp_refuse(r, -e, "its greeting");
	return strncmp(line, "{\"QMP\": ", 8) == 0 ? 0 : qmp_refuse(r, EPROTO, "its greeting");
}

#define QMP_CAPABILITIES "{\"execute\": \"qmp_capabilities\"}\n"
#define QMP_IGNORE_SHARED \
	"{\"execute\": \"migrate-set-capabilities\", \"arguments\": {\"capabilities\": " \
	"[{\"capability\": \"x-ignore-shared\", \"state\": true}]}}\n"
#define QMP_GETFD_STATE "{\"execute\": \"getfd\", \"arguments\": {\"fdname\": \"state\"}}\n"

/* The greeting, the capabilities negotiation and x-ignore-shared (both sides need it: the
 * stream then names each block's address and carries no page of the shared ones). */
static int qmp_open(qmp *q, qemu_vm *vm, int64_t deadline_ms, agent_error *r)
{
	*q = (qmp){ .fd = vm->qmp, .deadline_ms = deadline_ms };
	int ret = qmp_greeting(q, r);
	if (ret == 0)
		ret = qmp_call(q, QMP_CAPABILITIES, -1, NULL, r);
	if (ret == 0)
		ret = qmp_call(q, QMP_IGNORE_SHARED, -1, NULL, r);
	return ret;
}

/* ---- the identity: every guest's first request --------------------------------------- */

static void kill_vm(void *ctx) { qemu_vm_kill(ctx); }

static agent_link vm_link(qemu_vm *vm)
{
	return (agent_link){ .in = &vm->chan,
			     .out = vm->chan,
			     .err = vm->err,
			     .session = true,
			     .ctx = vm,
			     .kill = kill_vm };
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int qemu_vm_identity(qemu_vm *vm, uint64_t ms, agent_error *r)
{
	uint8_t rnd[16 + 6 + IDENTITY_ENTROPY];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return qemu_refuse(r, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				   "getrandom: %s", strerror(errno));
	char id[33], host[13];
	hex(rnd, 16, id);
	hex(rnd + 16, 6, host);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint8_t req[AGENT_FRAME_HEADER + 160 + IDENTITY_ENTROPY];
	int n = snprintf((char *)req + AGENT_FRAME_HEADER, 160, "%s%ccordon-%s%c%" PRIu64 "%c", id,
			 0, host, 0, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, 0);
	memcpy(req + AGENT_FRAME_HEADER + n, rnd + 22, IDENTITY_ENTROPY);
	size_t len = (size_t)n + IDENTITY_ENTROPY;
	agent_frame_header(req, AGENT_REQ_IDENTITY, (uint32_t)len);
	agent_exchange x = { .kind = AGENT_ANSWER_FILE };
	agent_sink k = { 0 };
	x.sink = &k;
	agent_link link = vm_link(vm);
	bool deadline = false;
	int loop = agent_exchange_run(&x, &link, ms, -1, (const char *)req,
				      AGENT_FRAME_HEADER + len, &deadline);
	explicit_bzero(req, sizeof(req));
	explicit_bzero(rnd, sizeof(rnd));
	if (loop == 0 && x.done && x.file_done)
		return 0;
	if (loop == 0 && x.have_error)
		return qemu_refuse(r, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
				   "the guest's agent refused its identity: %s", x.error.message);
	size_t d = strcspn(x.diag, "\n");
	return qemu_refuse(r, deadline ? ETIMEDOUT : EIO, CORDON_PLUGIN_ERROR_TERMINAL,
			   deadline ? ERRC(vm_boot_timeout) : ERRC(vm_failed),
			   "the guest's agent did not take its identity%s%s%.*s",
			   deadline ? " in time" : "", d ? ": " : "", (int)(d > 200 ? 200 : d),
			   x.diag);
}

int qemu_vm_warm(qemu_vm *vm, uint64_t ms)
{
	const char *argv[] = { "/bin/true", NULL };
	const char *envp[] = { "PATH=/bin", NULL };
	size_t len;
	char *req = agent_run_request(argv, envp, ms, 4096, NULL, NULL, 0, &len);
	if (!req)
		return -ENOMEM;
	agent_exchange x = { .kind = AGENT_ANSWER_RUN };
	agent_sink k = { 0 };
	x.sink = &k;
	agent_link link = vm_link(vm);
	bool deadline = false;
	int loop = agent_exchange_run(&x, &link, ms, -1, req, len, &deadline);
	free(req);
	return loop == 0 && x.have_status && x.status.exited && x.status.code == 0 ? 0 : -EIO;
}

/* ---- templates ------------------------------------------------------------------------ */

typedef struct qemu_template {
	qemu_config c;             /* the template's own (binary, kernel, initrd: copies) */
	int ram;                   /* the guest's RAM: a memfd, sealed once the template ended */
	char dir[200], state[256]; /* TEMPLATE_ROOT/prefix-token-XXXXXX[/state] */
} qemu_template;

struct qemu_clones {
	pthread_mutex_t lock; /* held while a template is made: one boot per shape */
	qemu_template *t[TEMPLATES_MAX];
	size_t n;
};

qemu_clones *qemu_clones_new(void)
{
	qemu_clones *cl = xmalloc0(sizeof(*cl));
	pthread_mutex_init(&cl->lock, NULL);
	return cl;
}

static void template_free(qemu_template *tp)
{
	if (!tp)
		return;
	if (tp->dir[0]) {
		unlink(tp->state);
		rmdir(tp->dir);
	}
	if (tp->ram >= 0)
		close(tp->ram);
	free((char *)tp->c.binary);
	free((char *)tp->c.kernel);
	free((char *)tp->c.initrd);
	free(tp);
}

void qemu_clones_free(qemu_clones *cl)
{
	if (!cl)
		return;
	for (size_t i = 0; i < cl->n; i++)
		template_free(cl->t[i]);
	pthread_mutex_destroy(&cl->lock);
	free(cl);
}

static bool same_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* Whether a guest of config c is the template's (everything its command line says). */
static bool same_shape(const qemu_config *a, const qemu_config *b)
{
	return same_str(a->binary, b->binary) && same_str(a->kernel, b->kernel) &&
	       same_str(a->initrd, b->initrd) && same_str(a->machine, b->machine) &&
	       a->arch == b->arch && a->accel == b->accel && a->memory_mib == b->memory_mib &&
	       a->cpus == b->cpus && a->scratch_bytes == b->scratch_bytes && a->pids == b->pids &&
	       a->nofile == b->nofile && a->fsize == b->fsize;
}

/* Saves the paused template's device state into tp->state, through a descriptor. */
static int save(qemu_vm *vm, qemu_template *tp, agent_error *r)
{
	qmp q;
	int ret = qmp_open(&q, vm, agent_now_ms() + QMP_TIMEOUT_MS, r);
	if (ret < 0)
		return ret;
	/* Not stopped first: the migration stops the guest itself before it saves the devices
	 * (the RAM in the file is then the RAM the state goes with), and the state records a
	 * running guest, so a clone runs as soon as it is loaded. */
	int fd = open(tp->state, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return qemu_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error), "%s: %s",
				   tp->state, strerror(errno));
	ret = qmp_call(&q, QMP_GETFD_STATE, fd, NULL, r);
	close(fd);
	if (ret == 0)
		ret = qmp_call(
			&q, "{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"fd:state\"}}\n",
			-1, NULL, r);
	char line[QMP_LINE_MAX];
	while (ret == 0) {
		ret = qmp_call(&q, "{\"execute\": \"query-migrate\"}\n", -1, line, r);
		if (ret == 0 && strstr(line, "\"status\": \"completed\""))
			break;
		if (ret == 0 && (strstr(line, "\"status\": \"failed\"") ||
				 strstr(line, "\"status\": \"cancelled\"")))
			ret = qemu_refuse(r, EIO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(vm_failed),
					  "saving the template's state failed");
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	/* the template never runs again: its guest must not change the file under a clone */
	qmp_call(&q, "{\"execute\": \"quit\"}\n", -1, NULL, r);
	return ret;
}

/* The template's RAM: a memfd of the guest's size that can be sealed, not executable. */
static int ram_make(const qemu_config *c, agent_error *r)
{
	int fd = memfd_create("cordon-template-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0 && (fchmod(fd, 0666) < 0 || ftruncate(fd, (off_t)(c->memory_mib << 20)) < 0)) {
		int e = errno;
		close(fd);
		errno = e;
		fd = -1;
	}
	return fd >= 0 ? fd
		       : qemu_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				     "the template's memory (memfd): %s", strerror(errno));
}

/* Once the template's QEMU is gone (no mapping of it is left), the RAM never changes again:
 * write(2), a shared writable mapping, truncation and new seals all fail from now on. Its
 * size is checked after the seal: the template's QEMU could have changed it before. */
static int ram_seal(int fd, const qemu_config *c, agent_error *r)
{
	struct stat st;
	errno = 0;
	if (fcntl(fd, F_ADD_SEALS, TEMPLATE_SEALS) < 0 ||
	    (fcntl(fd, F_GET_SEALS) & TEMPLATE_SEALS) != TEMPLATE_SEALS || fstat(fd, &st) < 0 ||
	    (uint64_t)st.st_size != c->memory_mib << 20)
		return qemu_refuse(r, errno ? errno : EIO, CORDON_PLUGIN_ERROR_TERMINAL,
				   ERRC(io_error), "sealing the template's memory: %s",
				   errno ? strerror(errno) : "not sealed, or not the guest's size");
	return 0;
}

/* Boots the template of cold config c and saves it. */
static int template_make(qemu_tier *t, const qemu_config *c, qemu_template **ret, agent_error *r)
{
	qemu_template *tp = xmalloc0(sizeof(*tp));
	tp->ram = -1;
	tp->c = *c;
	tp->c.binary = qemu_xstrdup(c->binary);
	tp->c.kernel = qemu_xstrdup(c->kernel);
	tp->c.initrd = qemu_xstrdup(c->initrd);
	snprintf(tp->dir, sizeof(tp->dir), TEMPLATE_ROOT "/" QEMU_NAME_PREFIX "%s-XXXXXX",
		 t->owner);
	if (!mkdtemp(tp->dir)) { /* 0700 */
		int e = errno;
		tp->dir[0] = '\0';
		template_free(tp);
		return qemu_refuse(r, e, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				   "a template directory in " TEMPLATE_ROOT ": %s", strerror(e));
	}
	snprintf(tp->state, sizeof(tp->state), "%s/state", tp->dir);
	int64_t t0 = agent_now_ms();
	tp->ram = ram_make(c, r);
	qemu_config tc = tp->c;
	tc.mem_path = TEMPLATE_RAM_PATH;
	tc.mem_fd = tp->ram;
	tc.mem_shared = true;
	tc.qmp = true;
	qemu_vm vm;
	int e = tp->ram < 0 ? tp->ram : qemu_vm_start(&tc, t->boot_timeout_ms, &vm, r);
	if (e == 0) {
		e = save(&vm, tp, r);
		qemu_vm_stop(&vm); /* reaped: its shared mapping is gone */
	}
	if (e == 0)
		e = ram_seal(tp->ram, c, r);
	if (e == 0 && chmod(tp->state, 0400) < 0)
		e = qemu_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error),
				"the template's state: %s", strerror(errno));
	if (e < 0) {
		template_free(tp);
		return e;
	}
	qemu_host->log(CORDON_PLUGIN_LOG_DEBUG, "qemu",
		       "%s: template of %" PRIu64 " MiB in %lld ms", t->name, c->memory_mib,
		       (long long)(agent_now_ms() - t0));
	*ret = tp;
	return 0;
}

/* The template for c, made when there is none and room for one; NULL: boot cold. */
static int template_for(qemu_tier *t, const qemu_config *c, qemu_template **ret, agent_error *r)
{
	qemu_clones *cl = t->clones;
	int e = 0;
	*ret = NULL;
	pthread_mutex_lock(&cl->lock);
	for (size_t i = 0; i < cl->n && !*ret; i++)
		if (same_shape(&cl->t[i]->c, c))
			*ret = cl->t[i];
	if (!*ret && cl->n < TEMPLATES_MAX && (e = template_make(t, c, ret, r)) == 0)
		cl->t[cl->n++] = *ret;
	pthread_mutex_unlock(&cl->lock);
	return e;
}

/* Feeds a clone its state: the commands written at once, each answer read after (QMP
 * answers in order; one QEMU wake-up instead of four under a loaded host). */
static int restore_state(qemu_vm *vm, const char *state, int64_t deadline_ms, agent_error *r)
{
	static const char *const cmds[] = {
		QMP_CAPABILITIES,
		QMP_IGNORE_SHARED,
		QMP_GETFD_STATE,
		"{\"execute\": \"migrate-incoming\", \"arguments\": {\"uri\": \"fd:state\"}}\n",
	};
	qmp q = { .fd = vm->qmp, .deadline_ms = deadline_ms };
	int fd = open(state, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return qemu_refuse(r, errno, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(io_error), "%s: %s",
				   state, strerror(errno));
	int e = 0;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds) && e == 0; i++)
		e = qmp_send(&q, cmds[i], i == 2 ? fd : -1); /* getfd takes the descriptor */
	close(fd);
	if (e < 0)
		return qmp_refuse(r, -e, "the restore's commands");
	e = qmp_greeting(&q, r);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds) && e == 0; i++)
		e = qmp_answer(&q, cmds[i], NULL, r);
	return e;
}

/* A clone of tp: restored, then given its identity. */
static int restore(const qemu_template *tp, uint64_t ms, qemu_vm *vm, agent_error *r)
{
	qemu_config c = tp->c;
	c.mem_path = TEMPLATE_RAM_PATH;
	c.mem_fd = tp->ram;
	c.mem_shared = false;
	c.qmp = true;
	c.incoming = true;
	int64_t t0 = agent_now_ms();
	int e = qemu_vm_spawn(&c, vm, r);
	if (e < 0)
		return e;
	e = restore_state(vm, tp->state, t0 + (int64_t)ms, r);
	/* the state loads, the guest runs (the template ran when saved): its agent answers */
	if (e == 0)
		e = qemu_vm_identity(vm, ms, r);
	vm->hello_ms = agent_now_ms() - t0;
	if (e < 0) {
		qemu_vm_kill(vm);
		qemu_vm_stop(vm);
		return e;
	}
	close(vm->qmp); /* QEMU goes on without its monitor */
	vm->qmp = -1;
	return 0;
}

int qemu_clone_start(qemu_tier *t, const qemu_config *c, qemu_vm *vm, agent_error *r)
{
	qemu_template *tp;
	int e = template_for(t, c, &tp, r);
	if (e < 0)
		return e;
	if (tp)
		return restore(tp, QMP_TIMEOUT_MS, vm, r);
	/* every template slot holds another shape: this one boots cold */
	if ((e = qemu_vm_start(c, t->boot_timeout_ms, vm, r)) == 0 &&
	    (e = qemu_vm_identity(vm, QMP_TIMEOUT_MS, r)) < 0)
		qemu_vm_stop(vm);
	return e;
}

/* ---- gc: the template directories of hosts that died ---------------------------------- */

int qemu_clones_gc(void)
{
	DIR *d = opendir(TEMPLATE_ROOT);
	if (!d)
		return 0;
	int removed = 0;
	size_t plen = strlen(QEMU_NAME_PREFIX);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t tlen = 0;
		struct stat st;
		if (strncmp(e->d_name, QEMU_NAME_PREFIX, plen) != 0 ||
		    owner_token_state(e->d_name + plen, &tlen) != OWNER_DEAD ||
		    e->d_name[plen + tlen] != '-' ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		int fd = openat(dirfd(d), e->d_name,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		unlinkat(fd, "ram", 0); /* a directory of a version before the memfd */
		unlinkat(fd, "state", 0);
		close(fd);
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
