/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <cordon/plugin.h>: the driver ABI of cordon. Self-contained on purpose:
 * a plugin needs only this header and `pkg-config --cflags cordon-plugin`.
 * Plugins never link libcordon; every core service reaches them through the
 * cordon_host table handed to their entry point.
 *
 * Rules (docs/plugin-guide.md):
 *  - Structs crossing the boundary start with `uint32_t size` (the limits
 *    carry theirs last, where ABI 1.1 had a reserved word). Tables are
 *    append-only; the reader uses min(size, its sizeof) and refuses a
 *    non-zero tail it does not know.
 *  - Enums cross as uint32_t. A NULL operation means "unsupported".
 *  - Operations return 0 (or a count) on success, a negative errno on
 *    failure, and describe failures through the cordon_plugin_error they
 *    were given (host->error_set).
 *  - Every operation on a tier or sandbox may be called from several threads
 *    at once; a driver serialises what it must.
 */
#ifndef CORDON_PLUGIN_H
#define CORDON_PLUGIN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A plugin built against MAJOR.MINOR loads into a core with the same MAJOR
 * and a MINOR at least as new. A plugin that uses something a later minor
 * added checks host->abi_minor first (docs/plugin-guide.md, "ABI rules"). */
#define CORDON_PLUGIN_ABI_MAJOR 1
#define CORDON_PLUGIN_ABI_MINOR 6

/* The minor a plugin declares (CORDON_PLUGIN_DEFINE): this header's, unless
 * the plugin defines an older one to load into older cores too, and then
 * checks host->abi_minor before it touches anything newer. */
#ifndef CORDON_PLUGIN_TARGET_MINOR
#define CORDON_PLUGIN_TARGET_MINOR CORDON_PLUGIN_ABI_MINOR
#endif

/* printf checking where the compiler has it (GCC, Clang); nothing elsewhere
 * (MSVC builds plugins too). */
#if defined(__GNUC__)
#define CORDON_PLUGIN_PRINTF(fmt_, args_) __attribute__((format(printf, fmt_, args_)))
#else
#define CORDON_PLUGIN_PRINTF(fmt_, args_)
#endif

/* The one symbol every plugin exports (CORDON_PLUGIN_DEFINE emits it). */
#define CORDON_PLUGIN_ENTRY_SYMBOL "cordon_plugin_entry"

/* Values shared with <cordon/cordon.h>. */
enum {
	CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL = 1,
	CORDON_PLUGIN_CONTAINMENT_KERNEL = 2,
	CORDON_PLUGIN_CONTAINMENT_CONTAINER = 3,
	CORDON_PLUGIN_CONTAINMENT_USERSPACE_KERNEL = 4,
	CORDON_PLUGIN_CONTAINMENT_MICROVM = 5,
	CORDON_PLUGIN_CONTAINMENT_REMOTE = 6,
};
enum {
	CORDON_PLUGIN_ERROR_TERMINAL = 1,
	CORDON_PLUGIN_ERROR_FORBIDDEN = 2,
	CORDON_PLUGIN_ERROR_TRANSIENT = 3,
	CORDON_PLUGIN_ERROR_CANCELLED = 4,
	CORDON_PLUGIN_ERROR_INVALID = 5,
};
enum {
	CORDON_PLUGIN_LOG_ERROR = 3,
	CORDON_PLUGIN_LOG_WARNING = 4,
	CORDON_PLUGIN_LOG_INFO = 6,
	CORDON_PLUGIN_LOG_DEBUG = 7,
};
/* Indexes of cordon_plugin_limits.value, as cordon_limit in <cordon/cordon.h>. */
enum {
	CORDON_PLUGIN_LIMIT_WALL_MS = 0,
	CORDON_PLUGIN_LIMIT_MEMORY = 1,
	CORDON_PLUGIN_LIMIT_PIDS = 2,
	CORDON_PLUGIN_LIMIT_CPU_MILLI = 3,
	CORDON_PLUGIN_LIMIT_OUTPUT = 4,
	CORDON_PLUGIN_LIMIT_NOFILE = 5,
	CORDON_PLUGIN_LIMIT_FSIZE = 6,
	CORDON_PLUGIN_LIMIT_COUNT = 7,
};
enum {
	CORDON_PLUGIN_EGRESS_DENY = 0,
	CORDON_PLUGIN_EGRESS_GOVERNED = 1,
	CORDON_PLUGIN_EGRESS_ALLOW = 2,
};
/* A mode's bit in cordon_plugin_probe.egress_enforced. */
#define CORDON_PLUGIN_EGRESS_BIT(mode) (1u << (mode))
/* cordon_plugin_open_spec.trust, as cordon_trust (ABI 1.2 names values 1.0
 * already sent). Anything else is untrusted: fail closed. */
enum {
	CORDON_PLUGIN_TRUST_TRUSTED = 1,
	CORDON_PLUGIN_TRUST_SEMI_TRUSTED = 2,
	CORDON_PLUGIN_TRUST_UNTRUSTED = 3,
};

/* Opaque handles owned by the core. */
typedef struct cordon_plugin_error cordon_plugin_error;
typedef struct cordon_plugin_registrar cordon_plugin_registrar;
typedef struct cordon_plugin_config cordon_plugin_config;

/* ---- a driver's policy section ----------------------------------------- */

/* Value types a driver may declare for its keys. The core checks type and
 * refuses unknown keys (with file:line:column and key path) before configure. */
enum {
	CORDON_PLUGIN_CONFIG_STRING = 1,
	CORDON_PLUGIN_CONFIG_BOOL = 2,
	CORDON_PLUGIN_CONFIG_INT = 3,      /* int64 */
	CORDON_PLUGIN_CONFIG_SIZE = 4,     /* bytes, "512MiB" */
	CORDON_PLUGIN_CONFIG_DURATION = 5, /* milliseconds, "30s" */
	CORDON_PLUGIN_CONFIG_STRING_LIST = 6,
	CORDON_PLUGIN_CONFIG_SECRET = 7, /* {env: NAME} or {file: PATH}; value never logged */
	/* ABI 1.2: a STRING that names the image the tier runs; admission's
	 * `require: {image: pinned}` rules check it. At most one per driver. (A
	 * 1.1 driver's STRING key named "image" counts as this.) */
	CORDON_PLUGIN_CONFIG_IMAGE = 8,
};

typedef struct cordon_plugin_config_key {
	const char *name; /* NULL ends the array */
	uint32_t type;
	uint32_t required; /* non-zero: the key must be present */
} cordon_plugin_config_key;

/* ---- probe -------------------------------------------------------------- */

#define CORDON_PLUGIN_REASON_MAX 512

typedef struct cordon_plugin_probe {
	uint32_t size;
	uint32_t available;   /* non-zero when the tier can run work now */
	uint32_t containment; /* what it provides on this host, never more */
	/* The egress modes the tier enforces itself on this host, each as
	 * CORDON_PLUGIN_EGRESS_BIT(mode): a rule that requires egress refuses a
	 * tier that does not enforce the request's mode. 0 (what a plugin that
	 * sets nothing says, as this word's older "reserved"): none. */
	uint32_t egress_enforced;
	char reason[CORDON_PLUGIN_REASON_MAX]; /* plain language, NUL-terminated */
	/* ABI 1.3, appended, read only from a driver that declares CORDON_PLUGIN_DRIVER_LIMITS:
	 * the limits the tier enforces now, bit 1u << CORDON_PLUGIN_LIMIT_*. Admission passes
	 * over a tier that cannot enforce a limit the request gets. */
	uint32_t limits;
	/* ABI 1.4, appended: what the tier's sandboxes can do beyond runs now,
	 * CORDON_PLUGIN_PROBE_*; each bit is read only from a driver that has the matching op
	 * or flag (listen, CORDON_PLUGIN_DRIVER_MOUNTS). A driver may have tiers that cannot. */
	uint32_t features;
} cordon_plugin_probe;

/* cordon_plugin_probe.features (ABI 1.4). */
enum {
	/* The listen op works in this tier's sandboxes (each has a network of its own):
	 * without it admission passes the tier over for a policy with services:, as open
	 * would refuse it. */
	CORDON_PLUGIN_PROBE_LISTEN = 1u << 0,
	/* The tier gives open_spec.mounts: without it admission passes the tier over for a
	 * request with mounts. */
	CORDON_PLUGIN_PROBE_MOUNTS = 1u << 1,
};

/* ---- open --------------------------------------------------------------- */

/* The one struct whose size is not first: ABI 1.1 had value[] there, and
 * the size took the place of its reserved word. A later limit is appended
 * after size, never in value[], so the first 64 bytes keep their layout. */
typedef struct cordon_plugin_limits {
	uint64_t value[CORDON_PLUGIN_LIMIT_COUNT];
	uint32_t set; /* bit i set: value[i] applies */
	/* ABI 1.2. Set by whoever owns the memory: a plugin calling
	 * host->config_limits sets sizeof(cordon_plugin_limits), and the core
	 * fills no more than that (nor than its own), writing back what it
	 * filled; in an open spec the core sets it. A plugin reads a field only
	 * when size covers it. */
	uint32_t size;
} cordon_plugin_limits;

typedef struct cordon_plugin_open_spec {
	uint32_t size;
	uint32_t trust;  /* CORDON_PLUGIN_TRUST_* */
	uint32_t egress; /* CORDON_PLUGIN_EGRESS_* */
	uint32_t reserved;
	const char *workspace;       /* absolute host directory, or NULL */
	const char *image;           /* requested image, or NULL */
	cordon_plugin_limits limits; /* every limit the run must enforce */
	/* ABI 1.4, appended (present when size covers them): with egress governed, the
	 * tier's egress rules (docs/network.md), NULL-terminated lists, NULL for none: the
	 * driver enforces them or refuses the open (it never gives more). egress_audit is
	 * the sandbox's handle for host->egress_audit. */
	const char *const *egress_allow;
	const char *const *egress_deny;
	void *egress_audit;
	/* ABI 1.4, only to a driver that declares CORDON_PLUGIN_DRIVER_MOUNTS (admission passes
	 * over any other tier for a request with mounts, mount_unsupported): the extra host
	 * directories the work sees, n_mounts of them (mounts NULL when 0), judged by the core
	 * as the workspace is. Borrowed for the open call only: a driver keeps what it needs. */
	const struct cordon_plugin_mount *mounts;
	uint32_t n_mounts;
	uint32_t reserved2;
	/* ABI 1.5, appended: CORDON_PLUGIN_OPEN_*, set only for a driver that declares
	 * CORDON_PLUGIN_DRIVER_WORKSPACE_RO (0 otherwise). */
	uint32_t flags;
	uint32_t reserved3;
} cordon_plugin_open_spec;

/* cordon_plugin_open_spec.flags (ABI 1.5). */
enum {
	/* The work must see the workspace read-only (a `workspace: read-only` rule admitted
	 * it); untrusted work sees it read-only anyway. */
	CORDON_PLUGIN_OPEN_WORKSPACE_RO = 1u << 0,
};

/* cordon_plugin_mount.flags (ABI 1.4). */
enum {
	/* The work may write; without it the mount is read-only. */
	CORDON_PLUGIN_MOUNT_RW = 1u << 0,
};

/* One extra host directory (ABI 1.4). */
typedef struct cordon_plugin_mount {
	uint32_t size;
	uint32_t flags; /* CORDON_PLUGIN_MOUNT_* */
	/* The directory, opened by the core with O_PATH|O_DIRECTORY and no symbolic link on
	 * the way: a driver binds this descriptor (or /proc/self/fd/N of it), never `host`, which
	 * a second lookup could find swapped. Borrowed: dup it to keep it past open. */
	int32_t fd;
	uint32_t reserved;
	const char *host;   /* the path the request named, for messages only */
	const char *inside; /* absolute, normalised, where the work sees it */
} cordon_plugin_mount;

/* ---- run ---------------------------------------------------------------- */

/* Run request flags, run_spec.flags (ABI 1.1; a driver built against 1.0
 * never sees them). Named RUNREQ_ since ABI 1.2, so that a request flag
 * tested against a status (RUNSTATUS_) reads wrong in review. */
enum {
	/* The sandbox's last run: the core starts no other run in it, now or
	 * later, and closes it after (file operations may still come). The
	 * driver may spend the sandbox on this run. */
	CORDON_PLUGIN_RUNREQ_LAST = 1u << 0,
	/* ABI 1.4, to drivers with CORDON_PLUGIN_DRIVER_SERVE_UNIX only: the served port's
	 * listener is a unix socket in a directory of mode 0700 the driver makes (and removes
	 * when the run ends); sink->address gets "unix:/path". */
	CORDON_PLUGIN_RUNREQ_SERVE_UNIX = 1u << 1,
};

typedef struct cordon_plugin_run_spec {
	uint32_t size;
	uint32_t flags;          /* CORDON_PLUGIN_RUNREQ_* */
	const char *const *argv; /* NULL-terminated, no shell */
	const char *const *envp; /* the whole environment, computed by the core */
	const char *workdir;     /* relative to the sandbox root, or NULL */
	const void *stdin_data;
	uint64_t stdin_len;
	uint64_t timeout_ms; /* never 0: the core always bounds a run */
	int32_t cancel_fd;   /* readable => stop the work now; -1: none */
	uint16_t port;       /* serve: port inside the sandbox to expose, or 0 */
	uint16_t reserved;
	/* ABI 1.3, only to a driver that declares CORDON_PLUGIN_DRIVER_STDIN_FD (-1 otherwise,
	 * and always with stdin_data NULL when >= 0): the work's stdin, streamed. A pipe the
	 * core feeds (never a descriptor of the host's own), read to EOF: the driver hands it
	 * to the work as its stdin, or relays it. Borrowed: the core closes it after run. */
	int32_t stdin_fd;
	/* ABI 1.3, only to a driver that declares CORDON_PLUGIN_DRIVER_TTY (-1 otherwise; when
	 * >= 0, stdin_fd is -1 and stdin_data NULL): a pseudo-terminal's peer, the work's stdin,
	 * stdout and stderr and the controlling terminal of its session. The core holds the
	 * other side (input, output as stream 1, window size). Borrowed, as stdin_fd. */
	int32_t tty_fd;
} cordon_plugin_run_spec;

/* Where a driver delivers a run's output and events. */
typedef struct cordon_plugin_run_sink {
	uint32_t size;
	uint32_t reserved;
	void *ctx;
	/* stream 1 = stdout, 2 = stderr. The core enforces output caps. */
	void (*output)(void *ctx, uint32_t stream, const void *data, size_t len);
	/* The host loopback address of a served port, once known. */
	void (*address)(void *ctx, const char *host_port);
	/* ABI 1.4 (a driver checks size covers it): the work's pid once it runs, as seen inside
	 * the sandbox (a container's or a guest's own pid namespace). Optional: a driver that
	 * cannot tell calls nothing. */
	void (*started)(void *ctx, int64_t pid);
} cordon_plugin_run_sink;

/* Run status flags, run_status.flags: how the run ended. */
enum {
	CORDON_PLUGIN_RUNSTATUS_EXITED = 1u << 0,
	CORDON_PLUGIN_RUNSTATUS_SIGNALED = 1u << 1,
	CORDON_PLUGIN_RUNSTATUS_TIMED_OUT = 1u << 2,
	CORDON_PLUGIN_RUNSTATUS_CANCELLED = 1u << 3,
	CORDON_PLUGIN_RUNSTATUS_OOM = 1u << 4,
};

/* The ABI 1.1 names of both families, one prefix for two meanings. Kept so
 * that a third party's 1.1 plugin still compiles against this header;
 * deprecated, gone at ABI 2.0. Define CORDON_PLUGIN_NO_DEPRECATED to
 * refuse them (cordon's own tree does). */
#ifndef CORDON_PLUGIN_NO_DEPRECATED
#define CORDON_PLUGIN_RUN_LAST CORDON_PLUGIN_RUNREQ_LAST
#define CORDON_PLUGIN_RUN_EXITED CORDON_PLUGIN_RUNSTATUS_EXITED
#define CORDON_PLUGIN_RUN_SIGNALED CORDON_PLUGIN_RUNSTATUS_SIGNALED
#define CORDON_PLUGIN_RUN_TIMED_OUT CORDON_PLUGIN_RUNSTATUS_TIMED_OUT
#define CORDON_PLUGIN_RUN_CANCELLED CORDON_PLUGIN_RUNSTATUS_CANCELLED
#define CORDON_PLUGIN_RUN_OOM CORDON_PLUGIN_RUNSTATUS_OOM
#endif

typedef struct cordon_plugin_run_status {
	uint32_t size;
	uint32_t flags;    /* CORDON_PLUGIN_RUNSTATUS_* */
	int32_t exit_code; /* when EXITED */
	int32_t signal;    /* when SIGNALED */
} cordon_plugin_run_status;

/* ---- file operations ---------------------------------------------------- */

/* Receives file data (read_file) or one path (glob, walk; NUL-terminated,
 * len excludes it). Return non-zero to stop early; the op returns that. */
typedef int (*cordon_plugin_emit_fn)(void *ctx, const void *data, size_t len);

/* ---- a driver ------------------------------------------------------------ */

/* Driver flags, cordon_plugin_driver.flags (ABI 1.3). */
enum {
	/* The driver streams a run's stdin from run_spec.stdin_fd. Without the flag the core
	 * reads a streamed stdin whole (bounded) and hands it over as stdin_data. */
	CORDON_PLUGIN_DRIVER_STDIN_FD = 1u << 0,
	/* The driver gives the work run_spec.tty_fd as its terminal. Without the flag a run
	 * that asks for a terminal is refused (unsupported), never run without one. */
	CORDON_PLUGIN_DRIVER_TTY = 1u << 1,
	/* The driver's probe reports in probe.limits which limits the tier enforces. Without
	 * the flag every limit is taken as enforceable, and open refuses one that is not. */
	CORDON_PLUGIN_DRIVER_LIMITS = 1u << 2,
	/* ABI 1.4: the driver serves on a unix socket when asked (RUNREQ_SERVE_UNIX). Without
	 * the flag such a serve is refused by the core (unsupported). */
	CORDON_PLUGIN_DRIVER_SERVE_UNIX = 1u << 3,
	/* ABI 1.4: the driver's tiers whose probe sets probe.mounts give the work
	 * open_spec.mounts. Without the flag a request with mounts is never admitted on the
	 * driver's tiers (forbidden, mount_unsupported). */
	CORDON_PLUGIN_DRIVER_MOUNTS = 1u << 4,
	/* ABI 1.5: the core governs this driver's egress (docs/network.md): where its probe
	 * declares governed, a sandbox opened with egress governed and the tier's rules gets
	 * cordon's proxy on a listen op socket, HTTP(S)_PROXY in its runs, its connections
	 * audited and set_egress, all by the core; the driver's open gives the sandbox no
	 * route out but its own loopback (the rules still come in open_spec; the driver
	 * needs no set_egress). Needs the listen op. */
	CORDON_PLUGIN_DRIVER_EGRESS_PROXY = 1u << 5,
	/* ABI 1.5: open honours CORDON_PLUGIN_OPEN_WORKSPACE_RO. Without the flag a request with
	 * a workspace is refused by a `workspace: read-only` rule on the driver's tiers, never
	 * given write access. */
	CORDON_PLUGIN_DRIVER_WORKSPACE_RO = 1u << 6,
};

typedef struct cordon_plugin_driver {
	uint32_t size;
	uint32_t flags;                              /* CORDON_PLUGIN_DRIVER_* */
	const char *name;                            /* [a-z0-9_-]+, unique across plugins */
	const cordon_plugin_config_key *config_keys; /* the driver's policy keys */
	void *data;                                  /* handed back to configure */

	/* Validates and keeps a tier's section; *ret_tier is handed to every
	 * tier-level call. Positioned errors: host->config_error. */
	int (*configure)(void *data, const cordon_plugin_config *cfg, void **ret_tier,
			 cordon_plugin_error *err);
	void (*unconfigure)(void *tier);
	/* Reports without running work whether the tier can run now. */
	int (*probe)(void *tier, cordon_plugin_probe *ret);
	int (*open)(void *tier, const cordon_plugin_open_spec *spec, void **ret_sandbox,
		    cordon_plugin_error *err);
	/* Runs to completion (or timeout/cancel), killing everything it started
	 * before returning. Blocking; the core runs serve on a thread of its own. */
	int (*run)(void *sandbox, const cordon_plugin_run_spec *spec,
		   const cordon_plugin_run_sink *sink, cordon_plugin_run_status *ret,
		   cordon_plugin_error *err);
	int (*read_file)(void *sandbox, const char *path, uint64_t max_len,
			 cordon_plugin_emit_fn emit, void *ctx, cordon_plugin_error *err);
	int (*write_file)(void *sandbox, const char *path, const void *data, uint64_t len,
			  cordon_plugin_error *err);
	int (*glob)(void *sandbox, const char *pattern, cordon_plugin_emit_fn emit, void *ctx,
		    cordon_plugin_error *err);
	int (*walk)(void *sandbox, const char *dir, cordon_plugin_emit_fn emit, void *ctx,
		    cordon_plugin_error *err);
	/* Ends everything the sandbox started. Must not fail. */
	void (*close)(void *sandbox);
	/* Removes what a crashed host left behind (containers, guests). */
	int (*gc)(void *tier, cordon_plugin_error *err);
	/* ABI 1.4: a stream socket the core accepts on (a service's base URL,
	 * docs/network.md; with CORDON_PLUGIN_DRIVER_EGRESS_PROXY, ABI 1.5, governed
	 * egress's proxy too), whose connections are the work's to 127.0.0.1:*ret_port
	 * of the sandbox's own network, reachable by its work and by nothing else of
	 * the host's: a TCP listener in that network, or a unix socket that a relay
	 * inside connects to (gVisor).
	 * Returns the socket (close-on-exec; the core owns it) or a negative
	 * errno. NULL: the tier cannot carry services, and a policy with
	 * `services:` is refused on it. */
	int (*listen)(void *sandbox, uint16_t *ret_port, cordon_plugin_error *err);
	/* ABI 1.4: freezes everything the sandbox runs where it is (its processes stop; a
	 * remote tier's time to live stops counting, where the service says so), and thaws it.
	 * The core calls neither twice in a row, nor with a run or file operation of its own in
	 * progress on another thread unless the caller races it (runs then freeze too). NULL:
	 * the tier cannot pause; the core refuses (unsupported). */
	int (*pause)(void *sandbox, cordon_plugin_error *err);
	int (*resume)(void *sandbox, cordon_plugin_error *err);
	/* ABI 1.4, appended (NULL, or absent from an older driver: not supported): a governed
	 * sandbox's egress from now on is what both its open_spec rules and allow/deny
	 * (NULL-terminated) allow; allow NULL: the open_spec rules alone again. It never
	 * gives more than the open's rules. Connections already carried go on. */
	int (*set_egress)(void *sandbox, const char *const *allow, const char *const *deny,
			  cordon_plugin_error *err);
} cordon_plugin_driver;

/* ---- host services ------------------------------------------------------- */

/* A host program run to completion with a timeout (host->spawn). */
typedef struct cordon_host_spawn {
	uint32_t size;
	uint32_t reserved;
	const char *const *argv; /* argv[0] absolute, or found on the minimal PATH */
	const char *const *envp; /* NULL: the minimal host baseline only */
	const void *stdin_data;
	uint64_t stdin_len;
	uint64_t timeout_ms; /* 0: 30 s */
	uint64_t output_cap; /* per stream; 0: 1 MiB */
	/* Out: NUL-terminated captures owned by the plugin (host->free). */
	char *out;
	char *err;
	int32_t exit_code; /* 128+sig when signalled, -1 on timeout */
	uint32_t timed_out;
} cordon_host_spawn;

/* A host program that runs beside the plugin (host->process_spawn, ABI 1.2): an engine CLI
 * that streams, a VMM. */
typedef struct cordon_host_process_spec {
	uint32_t size;
	uint32_t reserved;
	const char *const *argv; /* argv[0] absolute, or found on the minimal PATH */
	const char *const *envp; /* NULL: the minimal host baseline only */
	/* The plugin's descriptors the program gets as 0, 1, 2 (-1: /dev/null) and as 3 (-1:
	 * none). The program gets copies: they stay the plugin's, to close. */
	int32_t stdin_fd;
	int32_t stdout_fd;
	int32_t stderr_fd;
	int32_t extra_fd;
	/* ABI 1.4 (check host->abi_minor >= 4; a spec of an older plugin is smaller and reads
	 * as all zero here): CORDON_HOST_PROCESS_* flags. */
	uint32_t flags;
	uint32_t reserved2;
	/* CORDON_HOST_PROCESS_JAIL: absolute host paths the program sees read-only, at the
	 * same paths (files or directories; the program and the libraries it loads are added
	 * by the host), and device nodes it sees read-write (e.g. /dev/kvm); NULL-terminated,
	 * NULL for none. Nothing else of the host's file system exists in the jail. */
	const char *const *jail_paths;
	const char *const *jail_devices;
	/* ABI 1.5 (check host->abi_minor >= 5): CORDON_HOST_PROCESS_JAIL: one descriptor of the
	 * plugin's that the program opens by name at jail_fd_path (absolute; NULL: none), for a
	 * file no path can be bound for (a memfd). The program gets it as its fd 4 and
	 * jail_fd_path is a link to /proc/self/fd/4, through a read-only /proc of the jail's own
	 * pid namespace (only the program's processes). It may open the file anew with any
	 * access the file's mode and seals allow, whatever the descriptor's: hand it a memfd
	 * sealed against writing for a file it must not change. */
	const char *jail_fd_path;
	int32_t jail_fd;
	/* ABI 1.6, CORDON_HOST_PROCESS_FILE_SERVER: the id (uid and gid) the directory's owner
	 * has in the program's user namespace: 0, its root, or another (a guest's own uid, so
	 * that the guest sees its files as its own), and then the program keeps the
	 * namespace's capabilities as ambient ones. */
	uint32_t file_server_id;
} cordon_host_process_spec;

/* cordon_host_process_spec.flags (ABI 1.4). */
enum {
	/* The program gets SIGKILL when this process dies (PR_SET_PDEATHSIG, set from a
	 * thread of the host that lives as long as the process). */
	CORDON_HOST_PROCESS_PDEATHSIG = 1u << 0,
	/* The program runs confined by the host's kernel confinement (docs/plugin-guide.md):
	 * an unprivileged uid of its own (a per-process one as root, the caller's otherwise),
	 * its own mount, pid, network, IPC and UTS namespaces, a root that holds only
	 * jail_paths, jail_devices, the program and its libraries, no network but an unused
	 * loopback, no new privileges, the kernel tier's seccomp filter, and
	 * CORDON_HOST_PROCESS_PDEATHSIG. Fails closed: a jail that cannot be built is an
	 * error, never a plain spawn. */
	CORDON_HOST_PROCESS_JAIL = 1u << 1,
	/* ABI 1.6: the program serves the directory jail_fd to a guest (virtiofsd) and confines
	 * itself after its start (its own namespaces, a pivot_root into the directory, its own
	 * seccomp filter). It runs in a user namespace of root's that maps only the directory's
	 * owner (its uid, and its gid when the owner is in that group: a directory of root's,
	 * either id 0, or of another group is refused), at file_server_id, with the
	 * namespace's capabilities, so that it has the owner's access to files and no more,
	 * and the owner no power over it; it sees the directory mounted at jail_fd_path (an
	 * existing directory of the host's, covered in a mount namespace of the program's,
	 * private, nosuid, nodev: no path of the directory's is looked up again), never holds
	 * jail_fd itself, is the init of a pid namespace of its own (what it starts dies with
	 * it), with no new privileges, CORDON_HOST_PROCESS_PDEATHSIG and a seccomp filter
	 * under its own that refuses set-id modes (chmod, creation, mknod), openat2 and
	 * io_uring; a launch that has not reached its exec in 10 s is killed and the spawn
	 * fails. As root only (the mount is made as the host's root); not with
	 * CORDON_HOST_PROCESS_JAIL. */
	CORDON_HOST_PROCESS_FILE_SERVER = 1u << 2,
	/* ABI 1.6, with CORDON_HOST_PROCESS_FILE_SERVER: that mount is read-only, so the host's
	 * kernel refuses every write to the directory, whatever the program does. */
	CORDON_HOST_PROCESS_READ_ONLY = 1u << 3,
};

/* process->wait flags. */
enum {
	/* Once the program exited, SIGKILL what it left in its process group before reaping it. */
	CORDON_HOST_WAIT_KILL_GROUP = 1u << 0,
};

/* A running host program, owned by the plugin until release. kill may be called from any
 * thread at any time, during a wait too; wait and release one at a time. */
typedef struct cordon_host_process cordon_host_process;
struct cordon_host_process {
	uint32_t size;
	int32_t pid;   /* leads a session and process group of its own; 0 once reaped */
	int32_t pidfd; /* readable once it exited: poll it beside your pipes, never close it
			* (the handle's); -1 on kernels without pidfds */
	uint32_t reserved;
	/* SIGKILLs its whole process group. Safe until wait reaped it: the pid cannot be
	 * reused before. */
	void (*kill)(cordon_host_process *p);
	/* Waits up to timeout_ms (negative: no limit) for it to exit, then reaps it: 0 and
	 * *ret_status (its exit code, 128+signal when killed), -ETIMEDOUT while it runs,
	 * -ECHILD once it was reaped. */
	int (*wait)(cordon_host_process *p, int64_t timeout_ms, uint32_t flags,
		    int32_t *ret_status);
	/* Ends the handle; a program still running is killed (its group) and reaped first. */
	void (*release)(cordon_host_process *p);
};

/* ABI 1.6: a served port's forwarder that the core runs (docs/network.md, "serve"), for a
 * driver whose sandbox has a network namespace of its own that the host can make sockets in:
 * a listener of the host's (127.0.0.1, on a port the host's kernel picks, or a unix socket
 * in a directory of mode 0700 with CORDON_HOST_FORWARD_UNIX), each connection carried to a
 * socket that the driver's socket callback makes in the sandbox's network and the core
 * connects to port there (127.0.0.1, else ::1). The kernel tier serves this way. */
typedef struct cordon_host_forward cordon_host_forward;

enum {
	CORDON_HOST_FORWARD_UNIX = 1u << 0,
};

typedef struct cordon_host_forward_spec {
	uint32_t size;
	uint32_t flags; /* CORDON_HOST_FORWARD_* */
	uint16_t port;  /* the port inside the sandbox's network */
	uint16_t reserved;
	uint32_t reserved2;
	/* A new TCP socket of family (AF_INET or AF_INET6; close-on-exec, not connected) made
	 * in the sandbox's network namespace, or a negative errno. Called on the forwarder's
	 * thread, once per connection and per readiness probe (every 10 ms until the port
	 * accepts). */
	int (*socket)(void *ctx, int family);
	/* Called once, on the forwarder's thread, when the port first accepts: the host
	 * listener's address, "127.0.0.1:PORT" or "unix:/path" (a run's sink->address). */
	void (*ready)(void *ctx, const char *address);
	void *ctx;
} cordon_host_forward_spec;

typedef struct cordon_host {
	uint32_t size;
	uint32_t abi_major;
	uint32_t abi_minor;
	uint32_t reserved;

	void (*log)(uint32_t level, const char *plugin, const char *fmt, ...)
		CORDON_PLUGIN_PRINTF(3, 4);
	/* Fills err; returns -errnum so `return host->error_set(...)` reads well. */
	int (*error_set)(cordon_plugin_error *err, int errnum, uint32_t cls, const char *code,
			 const char *fmt, ...) CORDON_PLUGIN_PRINTF(5, 6);
	void *(*alloc)(size_t n); /* zeroed; never NULL (aborts on exhaustion) */
	void (*free)(void *p);
	char *(*strdup)(const char *s);

	/* Registration, only during init. */
	int (*register_driver)(cordon_plugin_registrar *reg, const cordon_plugin_driver *drv);

	/* A tier's policy section. Getters return 1 when set, 0 when absent, and
	 * never fail for keys declared in config_keys. Values are borrowed from
	 * cfg and live as long as the tier. */
	const char *(*config_tier_name)(const cordon_plugin_config *cfg);
	int (*config_string)(const cordon_plugin_config *cfg, const char *key, const char **ret);
	int (*config_bool)(const cordon_plugin_config *cfg, const char *key, bool *ret);
	int (*config_int)(const cordon_plugin_config *cfg, const char *key, int64_t *ret);
	int (*config_u64)(const cordon_plugin_config *cfg, const char *key, uint64_t *ret);
	/* NULL-terminated list, borrowed. */
	int (*config_strv)(const cordon_plugin_config *cfg, const char *key,
			   const char *const **ret);
	/* Resolves a SECRET key into a string the plugin owns (host->free);
	 * wipe it when done. */
	int (*config_secret)(const cordon_plugin_config *cfg, const char *key, char **ret,
			     cordon_plugin_error *err);
	/* An error at key's position: "file:line:col: tiers.NAME.KEY: message". */
	int (*config_error)(const cordon_plugin_config *cfg, const char *key,
			    cordon_plugin_error *err, const char *fmt, ...)
		CORDON_PLUGIN_PRINTF(4, 5);
	/* The tier's own limits from the policy, for what a driver decides
	 * before any sandbox (probe, a warm pool). A sandbox's limits arrive
	 * only in open_spec.limits, the tier's already applied: the one route
	 * for what a run enforces. Set ret->size first (ABI 1.2). */
	void (*config_limits)(const cordon_plugin_config *cfg, cordon_plugin_limits *ret);

	/* Runs a host program with a minimal environment, a timeout and capped,
	 * captured output. Returns 0 when it ran (whatever its exit code). */
	int (*spawn)(cordon_host_spawn *spec, cordon_plugin_error *err);
	/* Finds an executable on the host's minimal PATH; owned by plugin. */
	char *(*find_program)(const char *name);
	/* Rejects paths that could escape a root: absolute, "..", NUL, empty. */
	bool (*path_is_confined)(const char *path);

	/* ABI 1.2 (check host->abi_minor >= 2): starts a host program on the plugin's
	 * descriptors, with spawn's session, environment and descriptor rules, and hands back
	 * a handle with its pidfd, kill and wait. */
	int (*process_spawn)(const cordon_host_process_spec *spec, cordon_host_process **ret,
			     cordon_plugin_error *err);

	/* ABI 1.3 (check host->abi_minor >= 3): called from a probe, names a file its answer
	 * depends on (an engine's socket, a device node such as /dev/kvm, a /proc/sys or /sys
	 * file), so that a probe answer the host keeps across processes is dropped when the
	 * file changes. Programs found with find_program during a probe count already. Other
	 * threads' calls, and calls outside a probe, are ignored. */
	void (*probe_depends)(const char *path);

	/* ABI 1.4 (check host->abi_minor >= 4): one governed connection's end, into the
	 * audit trail of the sandbox whose open_spec.egress_audit is handle: the target the
	 * work asked for (method "CONNECT", "GET", ...), the upstream address connected to
	 * ("" when none), allowed (carried) or refused with the reason, and the bytes each
	 * way. Any thread. */
	void (*egress_audit)(void *handle, const char *method, const char *host, uint32_t port,
			     const char *address, int allowed, const char *reason,
			     uint64_t bytes_up, uint64_t bytes_down);

	/* ABI 1.6 (check host->abi_minor >= 6): starts a forwarder (cordon_host_forward_spec;
	 * spec is read during the call only, its ctx kept): 0 and *ret, or a negative errno
	 * with the reason in err. */
	int (*forward_start)(const cordon_host_forward_spec *spec, cordon_host_forward **ret,
			     cordon_plugin_error *err);
	/* Ends it: its listener (a unix socket and its directory removed), every connection,
	 * its thread; no callback runs after it returns. NULL is fine. */
	void (*forward_stop)(cordon_host_forward *f);
} cordon_host;

/* ---- the plugin itself ---------------------------------------------------- */

typedef struct cordon_plugin_descriptor {
	uint32_t size;
	uint32_t abi_major;
	uint32_t abi_minor;
	uint32_t reserved;
	const char *name; /* equals the file's base name, [a-z0-9_-]+ */
	const char *version;
	const char *description;
	const char *license;
	/* Registers drivers with host->register_driver. Non-zero refuses the plugin
	 * (describe why with host->error_set). */
	int (*init)(const cordon_host *host, cordon_plugin_registrar *reg,
		    cordon_plugin_error *err);
} cordon_plugin_descriptor;

typedef const cordon_plugin_descriptor *(*cordon_plugin_entry_fn)(const cordon_host *host);

#if defined(__GNUC__)
#define CORDON_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CORDON_PLUGIN_EXPORT
#endif

/* Defines the plugin's identity and its one exported symbol. Use once per
 * plugin, at file scope:
 *   CORDON_PLUGIN_DEFINE("skeleton", "0.1", "An example driver", "MIT", skeleton_init)
 */
#define CORDON_PLUGIN_DEFINE(name_, version_, description_, license_, init_) \
	static const cordon_plugin_descriptor cordon_plugin_descriptor_ = { \
		sizeof(cordon_plugin_descriptor), \
		CORDON_PLUGIN_ABI_MAJOR, \
		CORDON_PLUGIN_TARGET_MINOR, \
		0, \
		(name_), \
		(version_), \
		(description_), \
		(license_), \
		(init_) \
	}; \
	CORDON_PLUGIN_EXPORT const cordon_plugin_descriptor *cordon_plugin_entry( \
		const cordon_host *host); \
	const cordon_plugin_descriptor *cordon_plugin_entry(const cordon_host *host) \
	{ \
		(void)host; \
		return &cordon_plugin_descriptor_; \
	}

#ifdef __cplusplus
}
#endif
#endif /* CORDON_PLUGIN_H */
