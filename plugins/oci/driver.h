/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OCI driver's internal state, shared by driver.c, engine.c, start.c, session.c, pool.c. */
#ifndef CORDON_OCI_DRIVER_H
#define CORDON_OCI_DRIVER_H

#include "oci.h"
#include "proc.h"

#include <pthread.h>
#include <sys/types.h>

/* Set by oci_plugin_init; each plugin module carries its own copy of the library. */
extern const cordon_host *oci_host CORDON_INTERNAL;

typedef struct oci_pool oci_pool;

/* Passive health: engine calls that just succeeded prove what a probe would
 * ask again. Separate (and mutable through a const tier) on purpose. */
#define OCI_HEALTH_TTL_MS 10000
typedef struct oci_health {
	pthread_mutex_t lock;
	bool probed;              /* a full probe found the tier available */
	int64_t ok_at;            /* monotonic ms of the last success */
	cordon_plugin_probe last; /* what that probe said */
} oci_health;

/* A configured tier. Immutable after configure except where noted. */
typedef struct oci_tier {
	const oci_engine_kind *kind;
	char *name;           /* the tier's name in the policy */
	char *engine_cfg;     /* configured absolute CLI path, or NULL: found on PATH */
	char *image;          /* pinned reference */
	char *runtime;        /* OCI runtime, or NULL: the engine's default */
	char *cgroup_manager; /* podman */
	char **runtime_flags; /* podman --runtime-flag values */
	char *host_url;       /* docker --host / podman --url, or NULL */
	char *user;
	char **ulimits;
	char *helper;     /* host path of cordon-oci-helper */
	char *network;    /* named network for governed egress, or NULL */
	uint16_t publish; /* container port published on loopback at open, or 0 */
	bool pull_missing;
	int64_t pool_size;
	uint64_t scratch;
	uint64_t cli_timeout_ms;
	cordon_plugin_limits limits;
	char *owner; /* cordon.owner label of this process */
	oci_health *health;

	pthread_mutex_t lock;  /* guards what follows */
	char *engine;          /* resolved CLI path (cached) */
	bool runtime_ok;       /* `info` found the runtime once */
	bool runtime_host_uds; /* and its runtimeArgs give runsc --host-uds (docker) */
	int trial;             /* gVisor trial run: 0 not yet, 1 passed */
	bool trial_seccomp;    /* ... and the work met cordon's seccomp profile */
	char trial_kernel[128];
	oci_pool *pool;
	char **reap;   /* closed (killed) containers the engine's --rm removes; */
	size_t n_reap; /* removed for certain at tier free (oci_reap_all) */
} oci_tier;

/* OOM notifications of a gVisor session's memory cgroup (oom.c). */
typedef struct oci_oom_watch {
	int ev;         /* eventfd, or -1: none (not gVisor, cgroup v2, no access) */
	char *dir;      /* the cgroup, to tell whether it was removed */
	uint64_t count; /* notifications seen */
} oci_oom_watch;

typedef struct oci_sandbox {
	oci_tier *tier;
	char *engine;
	char name[64];      /* the session container */
	uint64_t out_cap;   /* per stream, forwarded by the helper */
	uint16_t published; /* container port published at open, or 0 */
	int pidfd;          /* the container's pid 1 (pooled containers), or -1 */
	/* Unpooled containers are started attached (`run -i`): the CLI stays,
	 * its stdin and stdout are the session helper's request and answer
	 * streams. Held by the run using it; closed at close (EOF). */
	pthread_mutex_t chan_lock;
	bool chan_open;
	oci_proc chan;
	uint64_t chan_data_max; /* largest stdin or write data the channel carries */
	oci_oom_watch oom;      /* gVisor: whether the host's OOM killer ended it */
	char cid[65];           /* gVisor as root: the container's id (--cidfile), or "" */
	unsigned relays;        /* gVisor: relays started (each one's host socket's name) */
} oci_sandbox;

/* ---- engine CLI (engine.c) ------------------------------------------------------ */

/* The seccomp profile (oci_seccomp_profile, or gVisor's) in a sealed memfd,
 * one per process; a CLI gets it as OCI_PASS_FD and reads it as
 * OCI_SECCOMP_PASSED. Negative errno with r filled (container_seccomp). */
#define OCI_SECCOMP_PASSED "/proc/self/fd/3"
int oci_seccomp_fd(bool gvisor, oci_refusal *r) CORDON_INTERNAL;

typedef struct oci_cli_result {
	char *out, *err; /* host-allocated (oci_cli_result_clear) */
	int exit_code;   /* -1 on timeout */
	bool timed_out;
} oci_cli_result;

/* The engine's path, resolving it once; NULL with r filled when missing. */
char *oci_tier_engine(oci_tier *t, oci_refusal *r) CORDON_INTERNAL;
/* engine + global flags + args. */
char **oci_engine_argv(const oci_tier *t, const char *engine,
		       const char *const *args) CORDON_INTERNAL;
/* The minimal environment every engine CLI gets. */
char **oci_engine_env(void) CORDON_INTERNAL;
/* The HOME it names (the user's from the password database, else "/"). */
char *oci_engine_home(void) CORDON_INTERNAL;
/* Runs one engine command to completion through host->spawn. */
int oci_cli(const oci_tier *t, const char *engine, const char *const *args, const void *in,
	    size_t in_len, uint64_t timeout_ms, uint64_t cap, oci_cli_result *ret) CORDON_INTERNAL;
void oci_cli_result_clear(oci_cli_result *r) CORDON_INTERNAL;
/* Describes a failed engine command as a refusal (daemon down, image missing, ...). */
int oci_cli_failure(const oci_tier *t, const char *what, const oci_cli_result *res,
		    oci_refusal *r) CORDON_INTERNAL;
bool oci_image_present(const oci_tier *t, const char *engine, const char *image) CORDON_INTERNAL;
/* The engine said image is absent (`run --pull never`): pulls it by digest when the tier
 * allows, else refuses as container_image_missing. */
int oci_image_pull(const oci_tier *t, const char *engine, const char *image,
		   oci_refusal *r) CORDON_INTERNAL;
/* Makes sure the named network exists (creates it when absent). */
int oci_network_ensure(const oci_tier *t, const char *engine, const char *name,
		       oci_refusal *r) CORDON_INTERNAL;
/* Removes a container (rm -f); never fails, logs. */
void oci_container_remove(const oci_tier *t, const char *engine, const char *name) CORDON_INTERNAL;
/* Ends a closed session: SIGKILL through the engine (`kill`, one round trip,
 * synchronous), so no process of it runs when this returns; its --rm removes
 * the stopped container asynchronously and the name is kept for oci_reap_all.
 * Falls back to a synchronous `rm -f` when the kill is not confirmed. */
void oci_container_end(oci_tier *t, const char *engine, const char *name,
		       int pidfd) CORDON_INTERNAL;
/* A pidfd of the container's pid 1 (its host pid read by `inspect`, checked
 * again after pidfd_open so a reused pid is never taken), or -1. With it,
 * oci_container_end signals and waits for pid 1 without an engine call. */
int oci_container_pidfd(const oci_tier *t, const char *engine, const char *name) CORDON_INTERNAL;
/* The host pid of a running container's pid 1 (`inspect`), or -1. */
int oci_container_pid(const oci_tier *t, const char *engine, const char *name) CORDON_INTERNAL;
/* Removes (rm -f) whatever oci_container_end left to --rm and still exists;
 * called when the tier is freed, and in batches when the list grows. */
void oci_reap_all(oci_tier *t) CORDON_INTERNAL;
/* Lists a container whose end was seen, for oci_reap_all. */
void oci_reap_note(oci_tier *t, const char *name) CORDON_INTERNAL;

/* ---- the workspace (workspace.c) ------------------------------------------------ */

/* A workspace directory opened without following links (DESIGN.md §8.9). */
typedef struct oci_workspace {
	int fd;       /* O_PATH descriptor of the directory, or -1 */
	char *real;   /* its canonical path: what the guarantees check */
	char *staged; /* root: the bind mount of fd the engine gets, or NULL */
	dev_t dev;
	ino_t ino;
} oci_workspace;

/* Root's directory for what the engine is handed by path (staged workspaces, container
 * id files): every level root's, this one 0700. Made when missing; 0 or -errno (not root,
 * or not safe). */
#define OCI_PRIVATE_DIR "/run/cordon/oci"
int oci_private_dir(void) CORDON_INTERNAL;

/* Opens path one component at a time with O_NOFOLLOW. Codes:
 * workspace_symlink (a link, or a non-directory, on the way),
 * container_workspace_invalid. */
int oci_workspace_open(const char *path, oci_workspace *ret, oci_refusal *r) CORDON_INTERNAL;
/* As root: bind-mounts the descriptor onto a staging directory of root's
 * (container_workspace_stage when that fails); otherwise does nothing. */
int oci_workspace_stage(oci_workspace *ws, const char *name, oci_refusal *r) CORDON_INTERNAL;
/* Takes an extra mount the core opened (ABI 1.4): its descriptor duplicated, its canonical
 * path and identity, as oci_workspace_open gives a workspace's. */
int oci_mount_adopt(const cordon_plugin_mount *m, oci_workspace *ret,
		    oci_refusal *r) CORDON_INTERNAL;
/* The bind source to hand the engine: the staged path, else the canonical one. */
const char *oci_workspace_source(const oci_workspace *ws) CORDON_INTERNAL;
/* Once the container runs, unstaged only: its /work must be the directory
 * opened (container_workspace_swapped, container_workspace_unverified). */
int oci_workspace_verify(const oci_workspace *ws, const oci_tier *t, const char *engine,
			 const char *name, oci_refusal *r) CORDON_INTERNAL;
/* Detaches the staging mount (the running container keeps its own). */
void oci_workspace_unstage(oci_workspace *ws) CORDON_INTERNAL;
void oci_workspace_close(oci_workspace *ws) CORDON_INTERNAL;

/* ---- gVisor's OOM kills (oom.c) ------------------------------------------------- */

/* Registers for the running container's memory cgroup OOM notifications: the cgroup
 * named by the container's id when cid is one (no engine call), else that of its pid 1
 * (`inspect`); w->ev stays -1 where that cannot be done (logged). */
void oci_oom_watch_start(const oci_tier *t, const char *engine, const char *name, const char *cid,
			 oci_oom_watch *w) CORDON_INTERNAL;
/* Whether the OOM killer acted on the cgroup (removed or not). */
bool oci_oom_watch_fired(oci_oom_watch *w) CORDON_INTERNAL;
void oci_oom_watch_clear(oci_oom_watch *w) CORDON_INTERNAL;

/* ---- starting containers (start.c) --------------------------------------------- */

/* How long ending a session (or killing a run's work) may take before it is forced. */
#define OCI_KILL_TIMEOUT_MS 10000

/* What a session container is started for (validated when it starts). */
/* The most extra mounts a container gets (the core's REQUEST_MOUNTS_MAX). */
#define OCI_MAX_MOUNTS 16

typedef struct oci_start {
	const char *image;
	uint32_t trust, egress;
	/* governed egress by cordon's proxy (the open's egress rules, no network: of the
	 * tier): the container keeps --network none, the core serves the listen op's socket */
	bool egress_proxied;
	const char *workspace;
	cordon_plugin_limits limits;
	/* open_spec.mounts (ABI 1.4), borrowed for the open */
	const cordon_plugin_mount *mounts;
	uint32_t n_mounts;
	/* filled by the start from mounts: each one's canonical path (what the guarantees
	 * check), its inside path and mode; the engine gets its staged path instead */
	oci_mount extra[OCI_MAX_MOUNTS];
	size_t n_extra;
} oci_start;

/* What open starts for spec: its image (else the tier's), trust, egress, workspace,
 * and its limits as they came. The core resolved those once, the tier's merged with
 * the rules' and the request's (admission.c): they are final, never merged again. */
void oci_start_for_open(const oci_tier *t, const cordon_plugin_open_spec *spec,
			oci_start *ret) CORDON_INTERNAL;
/* Starts sb's own container for st, attached (`run -i`), up to the session agent's
 * hello: sb->name is set, sb->chan is the CLI, whose stdin and stdout are the session
 * channel. The workspace staging is gone when this returns (the container holds its own
 * mount); a container that did not start is removed. */
int oci_session_start(oci_sandbox *sb, const oci_start *st, oci_refusal *r) CORDON_INTERNAL;
/* The same for a container no sandbox holds yet (the pool's). */
int oci_session_attach(oci_tier *t, const char *engine, const oci_start *st, char *ret_name,
		       size_t name_len, oci_proc *ret_chan, oci_refusal *r) CORDON_INTERNAL;
/* Ends an attached session: END and EOF on the agent's stdin, so the agent (pid 1)
 * exits, the container stops, and the CLI removes it (--rm) before exiting.
 * Waits for the CLI (bounded); true when all that happened in time and the CLI
 * confirmed the removal (exit 0, nothing on its stderr). */
bool oci_chan_close(const oci_tier *t, const char *name, oci_proc *chan) CORDON_INTERNAL;
/* Lets go of a channel that failed (kills the CLI); close then ends the container
 * through the engine. Returns the CLI's exit code. */
int oci_chan_drop(oci_sandbox *sb) CORDON_INTERNAL;
/* Fills a spec for st (validation is the caller's); frees with oci_spec_clear. */
typedef struct oci_spec_buf {
	oci_spec spec;
	oci_mount mounts[2 + OCI_MAX_MOUNTS];
	char *relay_dir; /* gVisor's relay directory, or NULL */
	char *labels[5];
	char *command[2];
	char *tmpfs_owner;
} oci_spec_buf;
void oci_session_spec(const oci_tier *t, const oci_start *st, const char *name,
		      oci_spec_buf *buf) CORDON_INTERNAL;
void oci_spec_clear(oci_spec_buf *buf) CORDON_INTERNAL;

/* ---- sandboxes (session.c) ------------------------------------------------------ */

int oci_op_open(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		cordon_plugin_error *err) CORDON_INTERNAL;
int oci_op_run(void *sandbox, const cordon_plugin_run_spec *spec,
	       const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
	       cordon_plugin_error *err) CORDON_INTERNAL;
int oci_op_read_file(void *sandbox, const char *path, uint64_t max_len, cordon_plugin_emit_fn emit,
		     void *ctx, cordon_plugin_error *err) CORDON_INTERNAL;
int oci_op_write_file(void *sandbox, const char *path, const void *data, uint64_t len,
		      cordon_plugin_error *err) CORDON_INTERNAL;
int oci_op_glob(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
		cordon_plugin_error *err) CORDON_INTERNAL;
int oci_op_walk(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
		cordon_plugin_error *err) CORDON_INTERNAL;
void oci_op_close(void *sandbox) CORDON_INTERNAL;

/* ---- a listener inside (netns.c) ------------------------------------------------ */

/* Whether the tier's sandboxes can have a listener on their own loopback made from the
 * host: runc (not gVisor), as root. */
bool oci_can_listen(const oci_tier *t) CORDON_INTERNAL;
/* The listen op: a socket listening on 127.0.0.1:*ret_port of the container's own
 * network namespace (close-on-exec, the caller's), or a negative errno with err set. */
int oci_op_listen(void *sandbox, uint16_t *ret_port, cordon_plugin_error *err) CORDON_INTERNAL;
/* Whether a serve on a unix socket can be had (a 1.6 core's forwarder, each connection a
 * socket made in the container's network namespace): runc, as root. */
bool oci_can_forward(const oci_tier *t) CORDON_INTERNAL;
/* serve with CORDON_PLUGIN_RUNREQ_SERVE_UNIX: the core's forwarder on a unix socket to port
 * on the container's loopback, sink->address once it accepts; stopped with oci_serve_stop
 * (NULL is fine) before the run returns. */
typedef struct oci_serve oci_serve;
int oci_serve_start(oci_sandbox *sb, uint16_t port, const cordon_plugin_run_sink *sink,
		    oci_serve **ret, cordon_plugin_error *err) CORDON_INTERNAL;
void oci_serve_stop(oci_serve *sv) CORDON_INTERNAL;

/* ---- gVisor's relay (relay.c) ----------------------------------------------------- */

/* The tier's containers get a relay directory (gVisor as root, runsc given host-uds). */
bool oci_relay_wanted(const oci_tier *t) CORDON_INTERNAL;
/* What oci_relay_wanted reads of docker's gVisor runtime (its --host-uds, from `info`) is
 * learnt by the probe; a probe answered from the core's cache (another process's) ran
 * nothing here, so a session start asks `info` once itself when it must know. */
void oci_runtime_learn(oci_tier *t) CORDON_INTERNAL;
/* OCI_PRIVATE_DIR/NAME.relay (malloc'ed), bind-mounted read-only at AGENT_RELAY_DIR. */
char *oci_relay_dir(const char *name) CORDON_INTERNAL;
int oci_relay_prepare(const oci_tier *t, const char *name, oci_refusal *r) CORDON_INTERNAL;
/* Removes the directory and its sockets, where the tier makes them. */
void oci_relay_remove(const oci_tier *t, const char *name) CORDON_INTERNAL;
/* The listen op on gVisor: the host's unix listener, the agent's port inside. */
int oci_relay_listen(oci_sandbox *sb, uint16_t *ret_port, cordon_plugin_error *err) CORDON_INTERNAL;
/* One agent file operation (session.c): its frames of type want go to emit. */
int oci_agent_file_op(oci_sandbox *sb, const char *const *args, uint8_t want,
		      cordon_plugin_emit_fn emit, void *ctx,
		      cordon_plugin_error *err) CORDON_INTERNAL;

/* ---- pools (pool.c) ----------------------------------------------------------- */

/* Takes a ready container when st matches what the pool starts (with its
 * pid 1's pidfd or -1, and its session channel); starts the filler on first
 * use. Returns false when the caller must start its own. */
bool oci_pool_take(oci_tier *t, const char *engine, const oci_start *st, char *ret_name,
		   size_t name_len, int *ret_pidfd, oci_proc *ret_chan) CORDON_INTERNAL;
/* Stops the filler and removes the ready containers. */
void oci_pool_destroy(oci_tier *t) CORDON_INTERNAL;

/* The engine answered (ok) or failed in a way a probe must see again. */
void oci_health_note(const oci_tier *t, bool ok) CORDON_INTERNAL;

/* Reports a refusal through the host. */
int oci_fail(cordon_plugin_error *err, const oci_refusal *r) CORDON_INTERNAL;

#endif
