/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The QEMU library's driver state (driver.c, vm.c). */
#ifndef CORDON_QEMU_VM_H
#define CORDON_QEMU_VM_H

#include "qemu.h"
#include "wsarc.h"

#include "owner.h"

#include <pthread.h>
#include <sys/types.h>

extern const cordon_host *qemu_host CORDON_INTERNAL;

typedef struct qemu_pool qemu_pool;
typedef struct qemu_clones qemu_clones;

/* What a pinned file looked like when its hash was last found right. */
typedef struct qemu_pin {
	char *path;
	char sha256[65];
	bool ok;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns, ctime_ns;
} qemu_pin;

typedef struct qemu_tier {
	const qemu_family *family;
	char *name;
	char *qemu; /* configured binary, or NULL: found on PATH */
	qemu_arch arch;
	bool tcg; /* accel: tcg */
	bool pvm_kernel;
	uint64_t boot_timeout_ms;
	uint64_t scratch;
	int64_t cpus;
	int64_t pool_size; /* pool: guests kept booted (pool.c), or 0 */
	qemu_pool *pool;
	bool clone;          /* clone: opens restore copy-on-write clones (clone.c) */
	qemu_clones *clones; /* their templates, when clone */
	cordon_plugin_limits limits;
	wsarc_limits workspace;      /* what a workspace's copy in and out may carry */
	bool virtiofs;               /* workspace_share: virtiofs (cold boots; virtiofs.c) */
	char *virtiofsd;             /* its configured binary, or NULL: QEMU's */
	char owner[OWNER_TOKEN_MAX]; /* this host's, in every QEMU's -name */
	pthread_mutex_t lock;        /* guards the pins' cache and what follows */
	qemu_pin kernel, initrd;
	char *machine_ok; /* the QEMU binary found to have the machine type */
} qemu_tier;

/* A running guest and our end of its agent channel. */
typedef struct qemu_vm {
	cordon_host_process *proc;
	int chan;         /* our end of the socket pair, non-blocking; -1 once closed */
	int err;          /* QEMU's stderr, non-blocking; -1 once closed */
	int qmp;          /* a clone's QMP socket (clone.c), non-blocking, or -1 */
	int net;          /* our end of the network channel's socket pair (net.c), or -1 */
	int64_t hello_ms; /* from QEMU's start to the agent's HELLO */
} qemu_vm;

/* Starts QEMU on c (its QMP socket pair too when c->qmp), nothing awaited. */
int qemu_vm_spawn(const qemu_config *c, qemu_vm *vm, agent_error *r) CORDON_INTERNAL;
/* Starts QEMU on c and waits up to boot_ms for the agent's HELLO. */
int qemu_vm_start(const qemu_config *c, uint64_t boot_ms, qemu_vm *vm,
		  agent_error *r) CORDON_INTERNAL;
/* SIGKILLs QEMU (any thread, any time). */
void qemu_vm_kill(qemu_vm *vm) CORDON_INTERNAL;
/* Ends the guest: END on the channel, a bounded wait for QEMU to exit, then SIGKILL;
 * reaps it and closes everything. */
void qemu_vm_stop(qemu_vm *vm) CORDON_INTERNAL;

/* Whether path still holds the pinned bytes (re-hashed when its inode, size or times
 * changed), and that nobody but root or us can change it; r says why not. */
int qemu_pin_check(qemu_tier *t, qemu_pin *pin, const char *key, agent_error *r) CORDON_INTERNAL;

/* A cold boot's workspace over virtio-fs: QEMU's end of virtiofsd's socket (-1: none). */
typedef struct qemu_share {
	int fd;
	bool read_only;
} qemu_share;

/* Boots one guest of tier t under limits l (the pins checked first), with the workspace
 * share when share is not NULL (never on a clone tier). */
int qemu_boot(qemu_tier *t, const cordon_plugin_limits *l, const qemu_share *share, qemu_vm *vm,
	      agent_error *r) CORDON_INTERNAL;

/* pool: N (pool.c): guests booted ahead on the tier's limits, each taken once. */
qemu_pool *qemu_pool_new(qemu_tier *t, size_t want) CORDON_INTERNAL;
/* Starts the refill thread (once). */
void qemu_pool_start(qemu_pool *p) CORDON_INTERNAL;
/* A ready guest, or false: none ready now (the caller boots its own). */
bool qemu_pool_take(qemu_pool *p, qemu_vm *ret) CORDON_INTERNAL;
/* Stops the refill and ends every ready guest. */
void qemu_pool_free(qemu_pool *p) CORDON_INTERNAL;

/* clone: true (clone.c): templates per guest shape, made on first use, removed with the
 * tier; each start restores a clone of the template for c (a cold boot of c when every
 * template slot holds another shape) and gives it its identity. */
qemu_clones *qemu_clones_new(void) CORDON_INTERNAL;
void qemu_clones_free(qemu_clones *cl) CORDON_INTERNAL;
int qemu_clone_start(qemu_tier *t, const qemu_config *c, qemu_vm *vm,
		     agent_error *r) CORDON_INTERNAL;
/* The guest's first request, within ms: fresh randomness from the host for its RNG, a
 * machine id, a hostname, the clock (agent/protocol.h); the agent then drops to the work's
 * uid. Every guest gets it before any work runs; a template never does. */
int qemu_vm_identity(qemu_vm *vm, uint64_t ms, agent_error *r) CORDON_INTERNAL;
/* Runs /bin/true in the guest (a pooled clone, before it waits): under TCG a clone's first
 * exec translates the guest's exec path again (the template's translations died with it),
 * most of a first run's time; the sandbox that takes the clone then finds them made. */
int qemu_vm_warm(qemu_vm *vm, uint64_t ms) CORDON_INTERNAL;
/* Removes the template directories of hosts that died; the count. */
int qemu_clones_gc(void) CORDON_INTERNAL;

/* Kills the QEMUs of hosts that died (gc.c); the count. */
int qemu_gc(void *tier, cordon_plugin_error *err) CORDON_INTERNAL;
/* The owner token in a QEMU's command line (NUL-separated, len bytes), or NULL. */
const char *qemu_gc_token(const char *cmdline, size_t len) CORDON_INTERNAL;

/* A host workspace, carried by copy (workspace.c): in at open through the agent's unpack,
 * back at a clean close through its pack when writable. */
typedef struct qemu_workspace {
	int fd;        /* the directory, opened with no link on the way (O_RDONLY), or -1 */
	bool writable; /* the guest's /work comes back at close (else read-only inside) */
	uid_t uid;     /* its owner: as root a copy runs with these as its file system ids */
	gid_t gid;
} qemu_workspace;

/* Opens path, writable or read-only (copy-in only) for the work. */
int qemu_workspace_open(const char *path, bool writable, qemu_workspace *ws,
			agent_error *r) CORDON_INTERNAL;
/* The workspace as one stream (common/wsarc.h) in *ret (malloc'd), within lim. */
int qemu_workspace_pack(const qemu_workspace *ws, const wsarc_limits *lim, char **ret,
			size_t *ret_len, agent_error *r) CORDON_INTERNAL;
/* The guest's stream into the workspace: begin, feed what the agent sends (an emit
 * callback: non-zero stops), end (commits only a stream that ended well within lim). */
wsarc_unpack *qemu_workspace_unpack_begin(const qemu_workspace *ws,
					  const wsarc_limits *lim) CORDON_INTERNAL;
int qemu_workspace_unpack_emit(void *unpack, const void *data, size_t len) CORDON_INTERNAL;
void qemu_workspace_close(qemu_workspace *ws) CORDON_INTERNAL;
/* As root, this thread's file system ids and supplementary groups become the workspace
 * owner's (as_owner, keeping root's in *saved) and root's again (as_root), so that a copy
 * reads only what the owner may read and creates files of the owner's, as the kernel
 * tier's work would; a no-op otherwise. as_root follows every as_owner, even a failed one. */
typedef struct qemu_owner_ids {
	bool taken;
	int n_groups;
	gid_t *groups; /* root's supplementary groups, to put back */
} qemu_owner_ids;
int qemu_workspace_as_owner(const qemu_workspace *ws, qemu_owner_ids *saved) CORDON_INTERNAL;
int qemu_workspace_as_root(qemu_owner_ids *saved) CORDON_INTERNAL;

/* A cold boot's workspace shared by virtio-fs (virtiofs.c): virtiofsd serving ws (read-only
 * unless ws->writable) in *ret_proc, QEMU's end of its socket in *ret_qemu_fd (ours to close
 * once QEMU has its copy). */
int qemu_virtiofs_start(const qemu_tier *t, const qemu_workspace *ws,
			cordon_host_process **ret_proc, int *ret_qemu_fd,
			cordon_plugin_error *err) CORDON_INTERNAL;
/* Ends it (NULL is fine), after QEMU. */
void qemu_virtiofs_stop(cordon_host_process **proc) CORDON_INTERNAL;
/* The virtiofsd a tier runs. */
const char *qemu_virtiofsd_path(const qemu_tier *t) CORDON_INTERNAL;

#define qemu_refuse agent_refuse
int qemu_fail(cordon_plugin_error *err, const agent_error *r) CORDON_INTERNAL;

#endif
