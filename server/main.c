/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-server (run as `cordon server`): the options, the policy and the
 * keys, the HTTP daemon, and a clean stop on SIGTERM or SIGINT: new sandboxes
 * refused, every live one killed, the daemon stopped, and exit only once every
 * cordon sandbox is closed (nothing left running).
 */
#include "config.h"

#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define POLICY_MAX (1u << 20)
#define PEM_MAX (64u * 1024u)
#define CONNECTIONS_MAX 256

typedef struct args {
	char *listen, *policy, *keys, *cert, *key, *plugin_dir;
	gboolean quiet;
} args;

/* Reads a whole small file (policy, PEM) once; NULL and a message on error. */
static char *read_small(const char *path, size_t max, bool secret, size_t *ret_len, char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		*why = g_strdup_printf("%s: %s", path, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max || (secret && (st.st_mode & 077))) {
		close(fd);
		*why = g_strdup_printf(
			"%s: must be a regular file of at most %zu bytes%s", path, max,
			secret ? " that no group or other user can read (chmod 600)" : "");
		return NULL;
	}
	char *buf = g_malloc0(max + 1);
	size_t n = 0;
	for (ssize_t r; n < max && (r = read(fd, buf + n, max - n)) != 0;) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*why = g_strdup_printf("%s: %s", path, g_strerror(errno));
			close(fd);
			g_free(buf);
			return NULL;
		}
		n += (size_t)r;
	}
	close(fd);
	*ret_len = n;
	return buf;
}

static int open_context(const args *a, char **why)
{
	cordon_options *o = cordon_options_new();
	cordon_error *err = NULL;
	char *text = NULL;
	size_t len = 0;
	int r = 0;
	if (a->policy) {
		text = read_small(a->policy, POLICY_MAX, false, &len, why);
		if (!text)
			r = -EINVAL;
	} else {
		text = g_strdup(cordon_policy_default_text());
		len = strlen(text);
	}
	if (r >= 0)
		r = cordon_options_set_policy_text(o, text, len,
						   a->policy ? a->policy : "<default>", &err);
	if (r >= 0 && a->plugin_dir)
		r = cordon_options_set_plugin_dir(o, a->plugin_dir, &err);
	if (r >= 0)
		r = cordon_context_new(o, &srv.ctx, &err);
	if (r >= 0)
		r = srv_config_load(&srv.cfg, text, len, a->policy ? a->policy : "<default>", why);
	else if (!*why)
		*why = g_strdup(cordon_error_get_message(err));
	cordon_error_free(err);
	cordon_options_free(o);
	g_free(text);
	return r;
}

static bool parse_listen(const char *s, struct sockaddr_in *sa, char **why)
{
	const char *colon = strrchr(s, ':');
	char *end;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	g_autofree char *host = colon ? g_strndup(s, (gsize)(colon - s)) : g_strdup("127.0.0.1");
	unsigned long port = strtoul(colon ? colon + 1 : s, &end, 10);
	if (*end || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		*why = g_strdup_printf("--listen %s: expected [IPv4:]PORT", s);
		return false;
	}
	sa->sin_port = htons((uint16_t)port);
	return true;
}

static struct MHD_Daemon *start_daemon(const args *a, char **why)
{
	struct sockaddr_in sa;
	if (!parse_listen(a->listen ? a->listen : "127.0.0.1:3000", &sa, why))
		return NULL;
	if (sa.sin_addr.s_addr != htonl(INADDR_LOOPBACK) && !(a->cert && a->key))
		g_warning("listening on %s without TLS: API keys and files cross the network in "
			  "clear",
			  a->listen);
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
	char *cert = NULL, *key = NULL;
	size_t n;
	if ((a->cert != NULL) != (a->key != NULL)) {
		*why = g_strdup("--tls-cert and --tls-key go together");
		return NULL;
	}
	if (a->cert) {
		cert = read_small(a->cert, PEM_MAX, false, &n, why);
		key = cert ? read_small(a->key, PEM_MAX, true, &n, why) : NULL;
		if (!key) {
			g_free(cert);
			return NULL;
		}
		flags |= MHD_USE_TLS;
	}
	struct MHD_Daemon *d = MHD_start_daemon(
		flags, 0, NULL, NULL, srv_http_handler, NULL, MHD_OPTION_SOCK_ADDR, &sa,
		MHD_OPTION_NOTIFY_COMPLETED, srv_http_completed, NULL, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)CONNECTIONS_MAX, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
		/* Longer than the SDKs' keepalive interval (50 s) on a quiet stream. */
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
		cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert, MHD_OPTION_HTTPS_MEM_KEY,
		key, MHD_OPTION_END);
	if (key)
		explicit_bzero(key, strlen(key));
	g_free(key);
	g_free(cert);
	if (!d)
		*why = g_strdup_printf("cannot listen on %s (in use, or not this host's address)",
				       a->listen ? a->listen : "127.0.0.1:3000");
	return d;
}

static int wait_for_signal(void)
{
	sigset_t set;
	int sig = 0;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	while (sigwait(&set, &sig) != 0)
		;
	return sig;
}

static bool parse_args(int argc, char **argv, args *a)
{
	GOptionEntry entries[] = {
		{ "listen", 'l', 0, G_OPTION_ARG_STRING, &a->listen,
		  "Address to listen on (default 127.0.0.1:3000)", "[IPv4:]PORT" },
		{ "policy", 'p', 0, G_OPTION_ARG_FILENAME, &a->policy,
		  "Policy file (its server: section)", "FILE" },
		{ "api-keys", 'k', 0, G_OPTION_ARG_FILENAME, &a->keys,
		  "API keys, one a line (mode 600)", "FILE" },
		{ "tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &a->cert, "TLS certificate (PEM)",
		  "FILE" },
		{ "tls-key", 0, 0, G_OPTION_ARG_FILENAME, &a->key,
		  "TLS private key (PEM, mode 600)", "FILE" },
		{ "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &a->plugin_dir,
		  "Plugin directory (absolute)", "DIR" },
		{ "quiet", 'q', 0, G_OPTION_ARG_NONE, &a->quiet, "Log only warnings", NULL },
		{ NULL },
	};
	GOptionContext *oc = g_option_context_new("- serve E2B's API on this host's cordon tiers");
	GError *e = NULL;
	g_option_context_add_main_entries(oc, entries, NULL);
	bool ok = g_option_context_parse(oc, &argc, &argv, &e) && argc == 1 && a->keys;
	if (!ok)
		fprintf(stderr, "cordon server: %s\n",
			e          ? e->message
			: !a->keys ? "--api-keys FILE is required"
				   : "unexpected arguments");
	g_clear_error(&e);
	g_option_context_free(oc);
	return ok;
}

static void args_clear(args *a)
{
	g_free(a->listen);
	g_free(a->policy);
	g_free(a->keys);
	g_free(a->cert);
	g_free(a->key);
	g_free(a->plugin_dir);
}

static void log_quiet(const gchar *domain, GLogLevelFlags level, const gchar *msg, gpointer data)
{
	if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
		g_log_default_handler(domain, level, msg, data);
}

int main(int argc, char **argv)
{
	args a = { 0 };
	char *why = NULL;
	signal(SIGPIPE, SIG_IGN);
	if (!parse_args(argc, argv, &a))
		return 64;
	if (a.quiet)
		g_log_set_default_handler(log_quiet, NULL);
	/* Signals are taken by sigwait on this thread alone; every thread the
	 * daemon and the library start inherits the mask. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	g_mutex_init(&srv.lock);
	g_cond_init(&srv.cond);
	srv.sandboxes = g_hash_table_new(g_str_hash, g_str_equal);
	if (open_context(&a, &why) < 0 || srv_keys_load(&srv.cfg, a.keys, &why) < 0) {
		fprintf(stderr, "cordon server: %s\n", why);
		return 1;
	}
	srv.per_key = g_new0(unsigned, srv.cfg.key_digests->len);
	srv_reaper_start();
	struct MHD_Daemon *d = start_daemon(&a, &why);
	if (!d) {
		fprintf(stderr, "cordon server: %s\n", why);
		srv_shutdown_begin();
		srv_shutdown_wait();
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	/* One line a supervisor (or a test) can wait for. */
	printf("cordon server: listening on %s port %u (%u API keys, %u templates)\n",
	       a.listen ? a.listen : "127.0.0.1:3000", info ? info->port : 0,
	       srv.cfg.key_digests->len, srv.cfg.templates->len);
	fflush(stdout);
	int sig = wait_for_signal();
	g_message("signal %d: killing every sandbox and stopping", sig);
	srv_shutdown_begin();
	srv_tunnels_end(); /* before the daemon stops: it waits for upgraded connections */
	srv_tunnels_wait();
	MHD_stop_daemon(d);
	srv_shutdown_wait();
	cordon_context_free(srv.ctx);
	srv_config_clear(&srv.cfg);
	g_hash_table_unref(srv.sandboxes);
	g_free(srv.per_key);
	args_clear(&a);
	printf("cordon server: stopped, no sandbox left\n");
	return 0;
}
