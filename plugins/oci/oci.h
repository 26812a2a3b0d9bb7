/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The OCI convenience library shared by the `docker` and `podman` plugins:
 * guarantees, the hardened argv, engine CLI parsing (pure, unit-tested in
 * tests/unit/test-oci.c) and the driver itself (probe, session containers,
 * runs through `engine exec` and cordon-agent, pools, gc). The agent's protocol and its
 * host-side client are agent/'s, shared with every plugin family that runs the agent.
 *
 * Plain C on purpose: plugins use only <cordon/plugin.h> and the host
 * services table, never glib or libcordon. Memory here is malloc'd (oci_*
 * free functions); what crosses into the core goes through host->alloc.
 */
#ifndef CORDON_OCI_H
#define CORDON_OCI_H

#include <cordon/plugin.h>

#include "errcodes.h"
#include "xalloc.h" /* ERRC(code): the codes these plugins report are the core's registry's */
#include "client.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

/* ---- small utilities ---------------------------------------------------------- */

/* A growable NULL-terminated string vector. */
typedef struct oci_strv {
	char **v;
	size_t n, cap;
} oci_strv;

void oci_strv_add(oci_strv *s, const char *str) CORDON_INTERNAL;
void oci_strv_addf(oci_strv *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3))) CORDON_INTERNAL;
void oci_strv_clear(oci_strv *s) CORDON_INTERNAL;
/* Hands the vector over (NULL-terminated, free with xstrv_free). */
char **oci_strv_steal(oci_strv *s) CORDON_INTERNAL;
size_t oci_strv_length(const char *const *v) CORDON_INTERNAL;

/* A refusal or failure described without the host (pure functions fill it;
 * the driver turns it into host->error_set). The agent's refusals are the same
 * record (agent_error_parse), so they pass through unchanged. */
typedef agent_error oci_refusal;

#define oci_refuse agent_refuse

/* ---- images ------------------------------------------------------------------- */

/* Validates ref (the predicate: common/imageref.h): a pinned image, nothing an engine could read as a flag.
 * Codes: container_unpinned_image (a tag or name alone), container_image_invalid. */
int oci_image_check(const char *ref, oci_refusal *r) CORDON_INTERNAL;

/* ---- the seccomp profile --------------------------------------------------------- */

/* The container tiers' seccomp profile, docker's and podman's JSON, generated
 * at build time from the kernel tier's deny list (core/local/gen-seccomp-oci.c).
 * Empty (no rules) where the build could not generate it (a cross build).
 * gVisor's lacks the rules that answer ENOSYS (runsc would answer EPERM:
 * core/local/gen-seccomp-oci.c). */
extern const char oci_seccomp_profile[] CORDON_INTERNAL;
extern const size_t oci_seccomp_profile_rules CORDON_INTERNAL;
extern const char oci_seccomp_profile_gvisor[] CORDON_INTERNAL;

/* ---- guarantees and the hardened argv ------------------------------------------ */

#define OCI_DEFAULT_PIDS 256
#define OCI_DEFAULT_SCRATCH (64ull << 20)
#define OCI_MIN_MEMORY (6ull << 20) /* the engines' own floor */

typedef struct oci_mount {
	const char *source; /* absolute host path */
	const char *target; /* absolute container path */
	bool readonly;
} oci_mount;

/* Everything that decides how a container is started. Borrowed strings. */
typedef struct oci_spec {
	const char *image;   /* pinned ref */
	uint32_t trust;      /* CORDON_PLUGIN_TRUST_* (anything else: untrusted) */
	uint32_t egress;     /* CORDON_PLUGIN_EGRESS_* */
	const char *network; /* NULL: none; a named network only for governed egress */
	/* governed egress through cordon's proxy on the container's own loopback: network
	 * none (the only way governed egress runs without a named network) */
	bool egress_proxied;
	const oci_mount *mounts;
	size_t n_mounts;
	const char *relay_dir;  /* gVisor: bound read-only at AGENT_RELAY_DIR; NULL: none */
	const char *const *env; /* container-level "KEY=VALUE", any order; may be NULL */
	cordon_plugin_limits limits;
	const char *user;    /* numeric "uid:gid"; NULL: 65534:65534 */
	const char *runtime; /* per-run --runtime (docker); NULL: the engine's default */
	const char *seccomp; /* the path the CLI reads cordon's seccomp profile from; NULL: none */
	const char *const *ulimits; /* "name=soft[:hard]" */
	uint64_t scratch_size;      /* bytes of the /tmp and root tmpfs; 0: OCI_DEFAULT_SCRATCH */
	bool root_tmpfs;            /* no workspace: the sandbox root is a tmpfs */
	const char *tmpfs_owner; /* engine's tmpfs option making the user own it ("U", "uid=..") */
	bool pids_in_sandbox;  /* gVisor: the pids limit is RLIMIT_NPROC inside (see add_limits) */
	uint16_t publish_port; /* serve: container port published on 127.0.0.1, or 0 */
	const char *name;      /* container name */
	const char *cidfile;   /* --cidfile: where the CLI writes the container's id; NULL: none */
	const char *const *labels; /* "key=value" */
	const char *const
		*extra; /* engine-specific run flags (e.g. podman's --read-only-tmpfs=false) */
	const char *entrypoint;     /* NULL: the image's */
	const char *workdir;        /* absolute, or NULL */
	bool detach;                /* session container: -d */
	bool interactive;           /* attached session container: -i (stdin kept open) */
	const char *const *command; /* argv after the image; may be NULL */
} oci_spec;

/* Checks the spec against the container guarantees before any engine call.
 * Every refusal is forbidden (class) with one of the codes:
 * container_unpinned_image, container_image_invalid, container_no_memory_cap,
 * container_limit_invalid, container_mount_path_invalid, container_mount_forbidden,
 * container_mount_writable, container_network_forbidden, container_root_user,
 * container_ulimit_invalid, container_ulimit_conflict, container_env_invalid, container_runtime_invalid,
 * container_publish_invalid, container_name_invalid. */
int oci_guarantees_check(const oci_spec *spec, oci_refusal *r) CORDON_INTERNAL;

/* The hardened `run` argv (without the engine binary and global flags), in a
 * fixed order; see the definition. Call only after oci_guarantees_check. */
char **oci_run_argv(const oci_spec *spec) CORDON_INTERNAL;

/* ---- engine output parsing -------------------------------------------------------- */

/* "Cannot connect to the Docker daemon", "connection refused", ... */
bool oci_output_says_daemon_down(const char *stderr_text) CORDON_INTERNAL;
/* "No such image", "image not known", "manifest unknown", ... */
bool oci_output_says_no_image(const char *stderr_text) CORDON_INTERNAL;
/* "No such container", "no container with name or ID", ... */
bool oci_output_says_no_container(const char *stderr_text) CORDON_INTERNAL;
/* Whether `docker info --format '{{json .Runtimes}}'` output lists runtime. */
bool oci_runtimes_json_has(const char *json, const char *runtime) CORDON_INTERNAL;
/* Whether a string of that runtime's entry (its path, its runtimeArgs) matches. */
bool oci_runtimes_json_arg(const char *json, const char *runtime,
			   bool (*match)(const char *)) CORDON_INTERNAL;
/* Whether a runsc flag is --host-uds=open or =all (any number of leading dashes). */
bool oci_runsc_host_uds_flag(const char *flag) CORDON_INTERNAL;
/* First line, trimmed, at most max-1 bytes, for messages. */
void oci_first_line(const char *text, char *out, size_t max) CORDON_INTERNAL;
/* Whether the runtime (a name or a path) is gVisor's runsc (or docker's runsc-uds). */
bool oci_runtime_is_gvisor(const char *runtime) CORDON_INTERNAL;
/* gVisor's host side in the pids cgroup: its own threads (about 44 here),
 * and about 10 host threads per task of the work (measured, runsc 2022). */
#define OCI_GVISOR_PIDS_OVERHEAD 256
#define OCI_GVISOR_PIDS_PER_TASK 16
/* A cordon.owner label: our owner token (common/owner.h); NULL when /proc
 * cannot tell it. */
char *oci_owner_label(void) CORDON_INTERNAL;
/* Whether the process that wrote owner is certainly gone (another boot, no such
 * pid, or a different start time). Unparseable labels count as gone; a host of
 * another pid namespace is not ours to tell, and alive. */
bool oci_owner_is_dead(const char *owner) CORDON_INTERNAL;

/* ---- the driver ----------------------------------------------------------------- */

/* The policy keys every container tier accepts; an engine adds its own after
 * them (see plugins/podman) and ends the array with { NULL, 0, 0 }. */
#define OCI_CONFIG_KEYS_COMMON \
	{ "image", CORDON_PLUGIN_CONFIG_IMAGE, 1 }, { "engine", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "host", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "runtime", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "pull", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "pool", CORDON_PLUGIN_CONFIG_INT, 0 }, \
		{ "user", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "ulimits", CORDON_PLUGIN_CONFIG_STRING_LIST, 0 }, \
		{ "helper", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "network", CORDON_PLUGIN_CONFIG_STRING, 0 }, \
		{ "publish", CORDON_PLUGIN_CONFIG_INT, 0 }, \
		{ "scratch", CORDON_PLUGIN_CONFIG_SIZE, 0 }, \
	{ \
		"engine_timeout", CORDON_PLUGIN_CONFIG_DURATION, 0 \
	}

/* What differs between engines. */
typedef struct oci_engine_kind {
	const char *name;             /* "docker", "podman": driver and default binary name */
	bool daemon;                  /* a server answers (docker): its absence is "not running" */
	bool runtime_is_global;       /* podman: --runtime before the subcommand */
	const char *host_flag;        /* "--host" (docker), "--url" (podman) */
	const char *version_format;   /* answers only when the engine (and its daemon) works */
	const char *const *run_extra; /* engine-specific hardening flags for `run` */
	bool tmpfs_owner_by_id;       /* docker: uid=,gid= options; podman: U */
	const char *const *rm_extra;  /* `rm -f` options: podman would wait 10 s for SIGTERM */
	/* What a probe's answer depends on besides the CLI itself (driver.c, probe_note_deps):
	 * the socket it reaches by default (NULL: none, a daemonless engine), and the
	 * configuration files that decide its daemon, runtimes and storage ("~/" is the
	 * HOME the CLI gets, oci_engine_env); an absent file counts too: creating it changes
	 * the answer's ground. */
	const char *default_socket;
	const char *const *config_files;
	const cordon_plugin_config_key *config_keys;
} oci_engine_kind;

/* Registers the kind's driver; call from the plugin's init. */
int oci_plugin_init(const cordon_host *host, cordon_plugin_registrar *reg, cordon_plugin_error *err,
		    const oci_engine_kind *kind) CORDON_INTERNAL;

#endif /* CORDON_OCI_H */
