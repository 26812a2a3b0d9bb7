/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A service's proxy, started and ended by libcordon (service.h). */
#include "config.h"

#include "net/service.h"

#include "hostproc.h"
#include "filetrust.h"
#include "secret.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec/cordon"
#endif

#define READY_TIMEOUT_MS 10000
#define STOP_GRACE_MS 1000

#define LINE_MAX_LEN 4096 /* a report() line is under 1 KiB */

struct net_service {
	hostproc proc;
	net_service_audit_fn audit;
	void *user;
	GString *pending; /* the proxy's stdout not yet a whole line */
	GThread *reader;  /* of the proxy's stdout, after "ready" */
};

const char *net_service_helper(void)
{
	const char *p = g_getenv("CORDON_PROXY_HELPER");
	return p && p[0] == '/' ? p : CORDON_LIBEXECDIR "/cordon-proxy";
}

/* The injected value with the secret in it; NULL (why set) when the secret
 * would break the header line. */
static GString *injected_value(const policy_service *svc, int *ret_err, char *why, size_t whylen)
{
	char *secret = NULL;
	*ret_err = secret_resolve(svc->secret, true, &secret, why, whylen);
	if (*ret_err < 0)
		return NULL;
	*ret_err = -EINVAL;
	bool ok = true;
	for (const char *p = secret; ok && *p; p++)
		ok = (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f;
	GString *v = NULL;
	if (!ok) {
		snprintf(why, whylen, "secret %s holds a character a header cannot carry",
			 svc->secret_name);
	} else {
		v = g_string_new(svc->value_pre);
		g_string_append(v, secret);
		g_string_append(v, svc->value_post);
	}
	secret_free(secret);
	return v;
}

static void wipe(GString *s)
{
	explicit_bzero(s->str, s->allocated_len);
	g_string_free(s, TRUE);
}

static GString *config_text(const policy_service *svc, int *ret_err, char *why, size_t whylen)
{
	GString *value = injected_value(svc, ret_err, why, whylen);
	if (!value)
		return NULL;
	GString *c = g_string_new(NULL);
	g_string_append_printf(c, "host %s\nport %u\nheader %s\n", svc->host, (unsigned)svc->port,
			       svc->header);
	if (svc->prefix[0])
		g_string_append_printf(c, "prefix %s\n", svc->prefix);
	if (svc->ca_file)
		g_string_append_printf(c, "ca %s\n", svc->ca_file);
	g_string_append_printf(c, "value %s\nend\n", value->str);
	wipe(value);
	return c;
}

static int write_all(hostproc *p, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t k = hostproc_write(p, buf, len);
		if (k < 0 && errno == EAGAIN) {
			struct pollfd pf = { p->in, POLLOUT, 0 };
			poll(&pf, 1, READY_TIMEOUT_MS);
			continue;
		}
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k > 0)
			buf += k, len -= (size_t)k;
	}
	return 0;
}

/* The proxy's first line: "ready", or "error REASON"; what follows it stays in pending. */
static int await_ready(hostproc *p, GString *pending, char *why, size_t whylen)
{
	char line[512] = { 0 };
	size_t n = 0;
	int64_t deadline = hostproc_now_ms() + READY_TIMEOUT_MS;
	while (n < sizeof(line) - 1 && !memchr(line, '\n', n)) {
		int64_t left = deadline - hostproc_now_ms();
		struct pollfd pf = { p->out, POLLIN, 0 };
		if (left <= 0 || poll(&pf, 1, (int)left) == 0) {
			snprintf(why, whylen, "cordon-proxy did not start in time");
			return -ETIMEDOUT;
		}
		ssize_t k = read(p->out, line + n, sizeof(line) - 1 - n);
		if (k == 0)
			break;
		if (k > 0)
			n += (size_t)k;
	}
	line[n] = '\0';
	size_t first = strcspn(line, "\n");
	if (first < n)
		g_string_append_len(pending, line + first + 1, (gssize)(n - first - 1));
	line[first] = '\0';
	if (strcmp(line, "ready") == 0)
		return 0;
	snprintf(why, whylen, "cordon-proxy: %s",
		 g_str_has_prefix(line, "error ") ? line + 6 : "ended without a word");
	return -EPROTO;
}

/* One report() line of the proxy ("conn VERDICT STATUS METHOD PATH UP DOWN
 * REASON"), to the audit; a line of another form is dropped. */
static void report_line(net_service *s, const char *line)
{
	g_auto(GStrv) f = g_strsplit(line, " ", 8);
	guint64 st = 0, up = 0, down = 0;
	if (g_strv_length(f) < 7 || strcmp(f[0], "conn") != 0 ||
	    !g_ascii_string_to_unsigned(f[2], 10, 0, 999, &st, NULL) ||
	    !g_ascii_string_to_unsigned(f[5], 10, 0, G_MAXUINT64, &up, NULL) ||
	    !g_ascii_string_to_unsigned(f[6], 10, 0, G_MAXUINT64, &down, NULL))
		return;
	net_service_event ev = { .allowed = strcmp(f[1], "allowed") == 0,
				 .status = (int)st,
				 .method = f[3],
				 .path = f[4],
				 .reason = f[7] ? f[7] : "",
				 .bytes_up = up,
				 .bytes_down = down };
	if (s->audit)
		s->audit(s->user, &ev);
}

/* The proxy's stdout until its EOF (it ended), line by line. */
static gpointer read_reports(gpointer data)
{
	net_service *s = data;
	char buf[4096];
	for (;;) {
		char *nl;
		while ((nl = memchr(s->pending->str, '\n', s->pending->len))) {
			*nl = '\0';
			report_line(s, s->pending->str);
			g_string_erase(s->pending, 0, nl - s->pending->str + 1);
		}
		if (s->pending->len > LINE_MAX_LEN)
			g_string_truncate(s->pending, 0);
		struct pollfd pf = { s->proc.out, POLLIN, 0 };
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			break;
		ssize_t k = read(s->proc.out, buf, sizeof(buf));
		if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
			break;
		if (k > 0)
			g_string_append_len(s->pending, buf, k);
	}
	return NULL;
}

int net_service_start(const policy_service *svc, int listen_fd, net_service_audit_fn audit,
		      void *user, net_service **ret, char *why, size_t whylen)
{
	const char *helper = net_service_helper();
	/* The program gets the secret: it and every directory above it must be root's or
	 * ours and writable by no one else (CORDON_PROXY_HELPER included), as a plugin must. */
	int hfd = -1;
	g_autofree char *untrusted = NULL;
	int tr = filetrust_open(helper, &hfd, &untrusted);
	if (tr < 0) {
		snprintf(why, whylen, "%s", untrusted ? untrusted : g_strerror(-tr));
		return tr == -EPERM ? -EPERM : -ENOENT;
	}
	close(hfd);
	if (access(helper, X_OK) < 0) {
		snprintf(why, whylen, "%s: %s", helper, g_strerror(errno));
		return -ENOENT;
	}
	int r = 0;
	GString *conf = config_text(svc, &r, why, whylen);
	if (!conf)
		return r;
	const char *argv[] = { "cordon-proxy", NULL };
	const char *envp[] = { NULL };
	hostproc_spec spec = { .path = helper,
			       .argv = argv,
			       .envp = envp,
			       .fd = { HOSTPROC_PIPE, HOSTPROC_PIPE, HOSTPROC_DEVNULL },
			       .extra_fd = listen_fd };
	net_service *s = g_new0(net_service, 1);
	s->pending = g_string_new(NULL);
	r = hostproc_start(&spec, &s->proc);
	if (r < 0) {
		snprintf(why, whylen, "cannot start %s: %s", helper, g_strerror(-r));
		wipe(conf);
		g_string_free(s->pending, TRUE);
		g_free(s);
		return r;
	}
	r = write_all(&s->proc, conf->str, conf->len);
	wipe(conf);
	if (r < 0)
		snprintf(why, whylen, "cordon-proxy: %s", g_strerror(-r));
	else
		r = await_ready(&s->proc, s->pending, why, whylen);
	if (r == 0) {
		s->audit = audit;
		s->user = user;
		s->reader = g_thread_try_new("cordon-svc-audit", read_reports, s, NULL);
		if (!s->reader) {
			snprintf(why, whylen, "cannot start the service's audit reader");
			r = -EAGAIN;
		}
	}
	if (r < 0) {
		net_service_stop(s);
		return r;
	}
	*ret = s;
	return 0;
}

void net_service_stop(net_service *s)
{
	if (!s)
		return;
	hostproc_close_in(&s->proc); /* its EOF: the proxy ends */
	int status = 0;
	if (hostproc_wait(&s->proc, STOP_GRACE_MS, true, &status) == -ETIMEDOUT) {
		hostproc_kill(&s->proc);
		hostproc_wait(&s->proc, -1, true, &status);
	}
	if (s->reader) /* the proxy is gone: its stdout's EOF ends the reader */
		g_thread_join(s->reader);
	hostproc_close(&s->proc);
	g_string_free(s->pending, TRUE);
	g_free(s);
}
