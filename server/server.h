/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-server: an E2B-compatible API (the control plane and envd's subset)
 * whose sandboxes are cordon sandboxes chosen by the policy. A client of
 * libcordon's public API only (docs/server.md).
 */
#ifndef CORDON_SERVER_H
#define CORDON_SERVER_H

#include <cordon/cordon.h>
#include <glib.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

/* What the protocol promises the SDKs (e2b-protocol.md §1.3, §7.5). */
#define SRV_ENVD_VERSION "0.6.13"
#define SRV_CLIENT_ID "6532622b"
#define SRV_ENVD_PORT "49983"
/* The E2B home directory: the sandbox root stands for it. */
#define SRV_HOME "/home/user"
#define SRV_ID_LEN 21                /* "i" + 20 of [a-z0-9] */
#define SRV_TOKEN_LEN 32             /* hex */
#define SRV_DATA_CHUNK (32u * 1024u) /* envd's output chunk */
#define SRV_QUEUE_MAX (1u << 20)     /* bytes of events waiting for a slow reader */
#define SRV_JSON_DEPTH 16

/* ---- configuration (config.c) ------------------------------------------- */

typedef struct srv_template {
	char *name;
	char *trust; /* "trusted", "semi-trusted", "untrusted" */
	char *tier;  /* NULL: the policy chooses among the trust's tiers */
} srv_template;

typedef struct srv_config {
	GPtrArray *templates; /* srv_template* */
	unsigned sandboxes_per_key;
	uint64_t max_timeout_s;
	uint64_t max_body;
	GPtrArray *key_digests; /* 32-byte SHA-256 digests of the API keys */
} srv_config;

/* Reads the `server:` section of the policy text (already accepted by the
 * library). A missing section is the built-in mapping (base: semi-trusted). */
int srv_config_load(srv_config *cfg, const char *policy_text, size_t len, const char *name,
		    char **ret_error);
/* Reads the API keys, one a line; the file must be a regular file that only
 * its owner (this user or root) can read or write. */
int srv_keys_load(srv_config *cfg, const char *path, char **ret_error);
/* The index of the key, or -1; constant time in the key's value. */
int srv_key_find(const srv_config *cfg, const char *key);
const srv_template *srv_template_find(const srv_config *cfg, const char *name);
void srv_config_clear(srv_config *cfg);
/* Constant-time equality of two NUL-terminated strings (digests compared). */
bool srv_secret_equal(const char *a, const char *b);

/* ---- sandboxes (sandboxes.c) -------------------------------------------- */

typedef struct srv_sandbox srv_sandbox;
typedef struct srv_proc srv_proc;

struct srv_sandbox {
	int refs; /* under the server lock */
	char id[SRV_ID_LEN + 1];
	char token[SRV_TOKEN_LEN + 1];
	char *template_name;
	int key;
	cordon_sandbox *sb;
	char **env; /* envVars as "K=V", granted to every process */
	json_object *metadata;
	int64_t started; /* real time, µs */
	int64_t end;     /* real time, µs: killed then */
	bool dead;
	bool paused;         /* cordon_sandbox_pause: the time to live does not count */
	int64_t paused_left; /* µs of it left when paused */
	GHashTable *procs;   /* pid -> srv_proc*, under the server lock */
	uint32_t next_pid;
};

typedef struct server {
	cordon_context *ctx;
	srv_config cfg;
	GMutex lock;
	GCond cond;
	GHashTable *sandboxes; /* id -> srv_sandbox* (one reference) */
	unsigned *per_key;     /* live sandboxes of each key */
	unsigned open;         /* sandboxes not yet closed */
	bool stopping;
	GThread *reaper;
} server;

extern server srv;

/* Creates and registers a sandbox; on refusal *ret_status is the HTTP status
 * and *ret_error the message (with cordon's reason). */
srv_sandbox *srv_sandbox_create(int key, const srv_template *t, uint64_t timeout_s,
				json_object *env_vars, json_object *metadata, int *ret_status,
				char **ret_error, char **ret_code);
/* A new reference to the live sandbox id, NULL when gone. key < 0: any key. */
srv_sandbox *srv_sandbox_get(const char *id, int key);
void srv_sandbox_unref(srv_sandbox *s);
/* Removes it from the table and ends its processes; false when unknown. */
bool srv_sandbox_kill(const char *id, int key);
bool srv_sandbox_set_timeout(const char *id, int key, uint64_t timeout_s, bool extend_only);
/* The tier's pause (cordon_sandbox_pause), and the time to live stops counting: 0, 1 when
 * it was paused already, or the library's refusal. */
int srv_sandbox_pause(srv_sandbox *s, cordon_error **err);
/* The tier's resume, and the time to live counts again from where it stopped: 0, 1 when it
 * was running, or the library's refusal (it stays paused). */
int srv_sandbox_resume(srv_sandbox *s, cordon_error **err);
bool srv_sandbox_paused(srv_sandbox *s);
/* References to the key's live sandboxes. */
GPtrArray *srv_sandbox_list(int key);
void srv_reaper_start(void);
/* Refuses new sandboxes and kills every live one... */
void srv_shutdown_begin(void);
/* ...then waits until all are closed (once the HTTP daemon has stopped). */
void srv_shutdown_wait(void);

/* ---- HTTP (http.c) ------------------------------------------------------- */

typedef struct srv_req {
	struct MHD_Connection *conn;
	const char *method;
	const char *url;
	GByteArray *body;
	bool too_big;
	void *tunnel; /* a port tunnel answered 101 (tunnel.c) */
} srv_req;

enum MHD_Result srv_http_handler(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls);
void srv_http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			enum MHD_RequestTerminationCode toe);
const char *srv_header(const srv_req *r, const char *name);
const char *srv_query(const srv_req *r, const char *name);
/* Queues a JSON response; consumes obj (NULL: an empty body). */
enum MHD_Result srv_reply_json(srv_req *r, unsigned status, json_object *obj);
enum MHD_Result srv_reply_empty(srv_req *r, unsigned status);
/* {"code": status, "message": ...} (control plane and envd HTTP errors). */
enum MHD_Result srv_reply_error(srv_req *r, unsigned status, const char *code_name, const char *fmt,
				...) G_GNUC_PRINTF(4, 5);
/* The same with cordon's code and message (error_code, detail) added. */
enum MHD_Result srv_reply_cordon_error(srv_req *r, unsigned status, const cordon_error *err,
				       const char *fmt, ...) G_GNUC_PRINTF(4, 5);
/* A Connect unary error: {"code": "<connect code>", "message": ...}. */
enum MHD_Result srv_reply_connect_error(srv_req *r, const char *code, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);
/* Parses the body as one JSON object, bounded in depth; NULL on error. */
json_object *srv_parse_object(const char *data, size_t len);
/* Iterates an object's members (json-c's iterator: no macro that declares variables). */
#define SRV_FOR_MEMBERS(obj_, it_, end_) \
	for (struct json_object_iterator it_ = json_object_iter_begin(obj_), \
					 end_ = json_object_iter_end(obj_); \
	     !json_object_iter_equal(&it_, &end_); json_object_iter_next(&it_))
/* NULL when every key of obj is in allowed, else the first unknown one. */
const char *srv_unknown_field(json_object *obj, const char *const *allowed);
/* The ISO 8601 UTC form of a real time in µs; owned by caller. */
char *srv_time_string(int64_t us);

/* ---- the API (control.c, envd.c, process.c) ----------------------------- */

enum MHD_Result srv_control(srv_req *r);
enum MHD_Result srv_envd(srv_req *r, srv_sandbox *s);
enum MHD_Result srv_process_rpc(srv_req *r, srv_sandbox *s, const char *method);
/* Maps an E2B path (absolute under /home/user, ~/..., or relative) to a path
 * relative to the sandbox root ("" for the root); NULL when it is outside. */
char *srv_map_path(const char *path);
/* The E2B form of a root-relative path. */
char *srv_e2b_path(const char *rel);
/* The address of the process serving port in s (Cordon-Serve-Port), or NULL. */
char *srv_serve_address(srv_sandbox *s, uint16_t port);
/* Ends a sandbox's processes (kill or shutdown). */
void srv_procs_cancel_all(srv_sandbox *s);
/* Connect code for a cordon error class. */
const char *srv_connect_code(const cordon_error *err);

/* ---- ports (tunnel.c) ------------------------------------------------------ */

/* The Upgrade protocol of a port tunnel (docs/server.md, "Ports"). */
#define SRV_TUNNEL_PROTOCOL "cordon-tcp"
/* Answers a request for port_s (E2b-Sandbox-Port) of s: 101 and a tunnel. */
enum MHD_Result srv_port_tunnel(srv_req *r, srv_sandbox *s, const char *port_s);
/* The request of a tunnel completed (srv_http_completed). */
void srv_tunnel_abandon(void *tunnel);
/* Shutdown: ends every tunnel, then waits (at most 5 s) until all are closed. */
void srv_tunnels_end(void);
void srv_tunnels_wait(void);

#endif
