/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Governed egress and services, checked on any tier (netcheck.h). */
#include "config.h"

#include "netcheck.h"
#include "testutil.h"

#include <check.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static GPid spawn_bg(const char *const *argv, const char *cwd, int *ret_stdout)
{
	GPid pid = 0;
	GError *e = NULL;
	ck_assert_msg(
		g_spawn_async_with_pipes(cwd, (char **)argv, NULL,
					 G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
						 (ret_stdout ? 0 : G_SPAWN_STDOUT_TO_DEV_NULL) |
						 G_SPAWN_STDERR_TO_DEV_NULL,
					 NULL, NULL, &pid, NULL, ret_stdout, NULL, &e),
		"%s: %s", argv[0], e ? e->message : "");
	return pid;
}

static void stop_bg(GPid pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* A test CA, and a certificate for localhost it signed, in dir (ca.pem, srv.pem, srv.key). */
static void make_ca(const char *dir)
{
	const char *script =
		"set -e; o() { openssl \"$@\" 2>/dev/null; }\n"
		"o req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
		"-subj /CN=cordon-test-ca\n"
		"o req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=localhost\n"
		"printf 'subjectAltName=DNS:localhost\\nextendedKeyUsage=serverAuth\\n' >ext\n"
		"o x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem "
		"-days 2 -extfile ext\n";
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	gint st = -1;
	ck_assert(g_spawn_sync(dir, (char **)argv, NULL, 0, NULL, NULL, NULL, NULL, &st, NULL));
	ck_assert_msg(st == 0, "openssl could not make the test CA");
}

/* Whether a line of text holds both needle and also (NULL: needle alone). */
static bool line_holds(const char *text, const char *needle, const char *also)
{
	for (const char *p = text; (p = strstr(p, needle)); p++) {
		const char *b = p, *e = strchr(p, '\n');
		while (b > text && b[-1] != '\n')
			b--;
		g_autofree char *line = e ? g_strndup(b, (gsize)(e - b)) : g_strdup(b);
		if (!also || strstr(line, also))
			return true;
	}
	return false;
}

/* Every connection is audited when it ends. */
char *netcheck_audit_holding(const char *path, const char *needle, const char *also)
{
	char *all = NULL;
	for (int i = 0; i < 500; i++) {
		g_free(all);
		all = NULL;
		if (g_file_get_contents(path, &all, NULL, NULL) && line_holds(all, needle, also))
			return all;
		g_usleep(10000);
	}
	ck_abort_msg("the audit trail %s lacks %s: %s", path, needle, all ? all : "(none)");
	return NULL;
}

unsigned netcheck_count_dir(const char *dir)
{
	unsigned n = 0;
	GDir *d = g_dir_open(dir, 0, NULL);
	ck_assert_ptr_nonnull(d);
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

/* The lines of text that hold needle (owned). */
static char *lines_with(const char *text, const char *needle)
{
	GString *o = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (size_t i = 0; lines[i]; i++)
		if (strstr(lines[i], needle))
			g_string_append_printf(o, "%s\n", lines[i]);
	return g_string_free(o, FALSE);
}

char *netcheck_sh(cordon_sandbox *sb, const char *line, int *ret_code)
{
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_exec(sb, line, NULL, &r, &err) == 0, "exec '%s': %s", line,
		      err ? cordon_error_get_message(err) : "?");
	*ret_code = cordon_result_exit_code(r);
	char *s = g_strdup_printf("%s%s", cordon_result_output(r, 1, NULL),
				  cordon_result_output(r, 2, NULL));
	cordon_result_free(r);
	return s;
}

static char *sh_out(cordon_sandbox *sb, const char *line)
{
	int code;
	return netcheck_sh(sb, line, &code);
}

/* ---- governed egress ---------------------------------------------------------------------- */

void netcheck_egress_start(netcheck_egress_env *g)
{
	g->dir = testutil_tmpdir();
	g_autofree char *www = g_build_filename(g->dir, "www", NULL);
	ck_assert_int_eq(g_mkdir(www, 0755), 0);
	g_autofree char *page = g_build_filename(www, "index.html", NULL);
	ck_assert(g_file_set_contents(page, "plain upstream page\n", -1, NULL));
	make_ca(g->dir);
	g->http = testutil_free_port();
	g->https = testutil_free_port();
	g_autofree char *hp = g_strdup_printf("%u", (unsigned)g->http);
	const char *http[] = { "python3", "-m", "http.server", "--bind", "127.0.0.1", hp, NULL };
	g->http_pid = spawn_bg(http, www, NULL);
	/* busybox's TLS client offers only SHA-1 signatures: security level 0 */
	g_autofree char *acc = g_strdup_printf("127.0.0.1:%u", (unsigned)g->https);
	const char *https[] = { "openssl", "s_server", "-quiet",  "-accept",
				acc,       "-cert",    "srv.pem", "-key",
				"srv.key", "-www",     "-cipher", "DEFAULT:@SECLEVEL=0",
				NULL };
	g->https_pid = spawn_bg(https, g->dir, NULL);
	testutil_wait_port(g->http);
	testutil_wait_port(g->https);
	g->audit = g_build_filename(g->dir, "audit.jsonl", NULL);
}

char *netcheck_egress_rules(const netcheck_egress_env *g)
{
	return g_strdup_printf("    egress:\n      allow: [\"localhost:%u\", "
			       "\"localhost:%u\", \"*.example.com\"]\n"
			       "      deny: [blocked.example.com]\n",
			       (unsigned)g->http, (unsigned)g->https);
}

void netcheck_egress_stop(netcheck_egress_env *g)
{
	stop_bg(g->http_pid);
	stop_bg(g->https_pid);
	testutil_rmtree(g->dir);
	g_free(g->dir);
	g_free(g->audit);
}

/* An HTTPS request through the proxy with what busybox has: CONNECT from the shell on
 * nc's socket, then its TLS client (ssl_client, the server name given) on the tunnel. */
#define CONNECT_SCRIPT \
	"p=${HTTPS_PROXY##*:}; printf 'GET / HTTP/1.0\\r\\nHost: %1$s:%2$u\\r\\n\\r\\n' " \
	">/tmp/req\n" \
	"nc 127.0.0.1 $p -e sh -c 'printf \"CONNECT %1$s:%2$u HTTP/1.1\\r\\nHost: " \
	"%1$s:%2$u\\r\\n\\r\\n\"; while read -r l; do echo \"proxy: $l\" >&2; " \
	"[ ${#l} -le 1 ] && break; done; ssl_client -s 3 -n %3$s 3<&0 </tmp/req >/tmp/resp'\n" \
	"cat /tmp/resp"

static void set_egress(cordon_sandbox *sb, const char *allow)
{
	const char *list[] = { allow, NULL };
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_set_egress(sb, allow ? list : NULL, NULL, &err) == 0, "%s",
		      err ? cordon_error_get_message(err) : "");
}

static void egress_audited(const netcheck_egress_env *g, const char *tier)
{
	g_autofree char *tier_field = g_strdup_printf("\"tier\":\"%s\"", tier);
	g_autofree char *all = netcheck_audit_holding(g->audit, "\"egress_change\"", tier_field);
	g_autofree char *trail = lines_with(all, tier_field);
	g_autofree char *allowed = g_strdup_printf("\"host\":\"localhost\",\"port\":%u",
						   (unsigned)g->https);
	ck_assert_msg(strstr(trail, allowed) && strstr(trail, "\"verdict\":\"allowed\""), "%s",
		      trail);
	ck_assert_msg(strstr(trail, "\"host\":\"blocked.example.com\"") &&
			      strstr(trail, "\"host\":\"pypi.org\"") &&
			      strstr(trail, "\"verdict\":\"refused\""),
		      "%s", trail);
}

void netcheck_egress(const netcheck_egress_env *g, cordon_context *ctx, const char *tier,
		     netcheck_open_fn open)
{
	cordon_sandbox *sb = open(ctx, tier, CORDON_EGRESS_GOVERNED, false);
	int code = -1;

	g_autofree char *env = sh_out(sb, "env | grep -i _proxy= | sort");
	ck_assert_msg(strstr(env, "HTTPS_PROXY=http://127.0.0.1:") &&
			      strstr(env, "http_proxy=http://127.0.0.1:") &&
			      strstr(env, "NO_PROXY=localhost,127.0.0.1"),
		      "%s", env);
	g_autofree char *plain_cmd = g_strdup_printf("wget -q -O- http://localhost:%u/",
						     (unsigned)g->http);
	g_autofree char *plain = netcheck_sh(sb, plain_cmd, &code);
	ck_assert_msg(code == 0 && strstr(plain, "plain upstream page"), "%d: %s", code, plain);
	g_autofree char *tls_cmd = g_strdup_printf(CONNECT_SCRIPT, "localhost", (unsigned)g->https,
						   "localhost");
	g_autofree char *tls = netcheck_sh(sb, tls_cmd, &code);
	ck_assert_msg(strstr(tls, "200 Connection established") && strstr(tls, "HTTP/1.0 200 ok"),
		      "%d: %s", code, tls);
	/* a ClientHello naming another host than the CONNECT: the tunnel is closed */
	g_autofree char *sni_cmd = g_strdup_printf(CONNECT_SCRIPT, "localhost", (unsigned)g->https,
						   "other.example.com");
	g_autofree char *sni = netcheck_sh(sb, sni_cmd, &code);
	ck_assert_msg(!strstr(sni, "HTTP/1.0 200 ok"), "%s", sni);
	/* a denied name, a name no rule allows, an IP literal: 403 */
	const char *refused[] = { "http://blocked.example.com/", "http://pypi.org/",
				  "http://169.254.169.254/latest/" };
	for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
		g_autofree char *cmd = g_strdup_printf("wget -q -O- %s", refused[i]);
		g_autofree char *o = netcheck_sh(sb, cmd, &code);
		ck_assert_msg(code != 0 && strstr(o, "403"), "%s: %d: %s", refused[i], code, o);
	}
	/* no other route: the upstream's port on the sandbox's loopback is not the host's,
	 * an outside address is unreachable, no resolver answers */
	g_autofree char *direct_cmd = g_strdup_printf(
		"nc -w 3 127.0.0.1 %u </dev/null && echo reached-loopback; "
		"nc -w 3 192.0.2.1 80 </dev/null && echo reached-outside; "
		"timeout 5 nslookup example.com >/dev/null 2>&1 && echo resolved; echo done",
		(unsigned)g->http);
	g_autofree char *direct = sh_out(sb, direct_cmd);
	ck_assert_msg(strstr(direct, "done") && !strstr(direct, "reached") &&
			      !strstr(direct, "resolved"),
		      "%s", direct);
	/* narrowed at run time to the HTTPS upstream alone: plain HTTP refused, then back */
	g_autofree char *https_rule = g_strdup_printf("localhost:%u", (unsigned)g->https);
	set_egress(sb, https_rule);
	g_autofree char *narrowed = netcheck_sh(sb, plain_cmd, &code);
	ck_assert_msg(code != 0 && strstr(narrowed, "403"), "%d: %s", code, narrowed);
	set_egress(sb, NULL);
	g_free(netcheck_sh(sb, plain_cmd, &code));
	ck_assert_int_eq(code, 0);
	egress_audited(g, tier);
	cordon_sandbox_close(sb);
	/* a second sandbox, one connection, closed: its listener, its connections and the
	 * proxy's thread are gone (the first one warmed what a process keeps: an engine's
	 * seccomp memfd, GLib's resolver) */
	unsigned fds = netcheck_count_dir("/proc/self/fd");
	unsigned threads = netcheck_count_dir("/proc/self/task");
	sb = open(ctx, tier, CORDON_EGRESS_GOVERNED, false);
	g_free(netcheck_sh(sb, plain_cmd, &code));
	ck_assert_int_eq(code, 0);
	cordon_sandbox_close(sb);
	ck_assert_uint_eq(netcheck_count_dir("/proc/self/fd"), fds);
	ck_assert_uint_eq(netcheck_count_dir("/proc/self/task"), threads);
}

/* ---- services ----------------------------------------------------------------------------- */

void netcheck_service_start(netcheck_service_env *s)
{
	s->dir = testutil_tmpdir();
	make_ca(s->dir);
	s->secret = g_strdup_printf("sk-cordon-%08x%08x", g_random_int(), g_random_int());
	s->key = g_build_filename(s->dir, "model-key", NULL);
	g_autofree char *keyline = g_strdup_printf("%s\n", s->secret);
	ck_assert(g_file_set_contents(s->key, keyline, -1, NULL));
	ck_assert_int_eq(chmod(s->key, 0600), 0);
	s->heads = g_build_filename(s->dir, "heads", NULL);
	g_autofree char *script = testutil_src_path("tests/integration/services-upstream.py");
	g_autofree char *cert = g_build_filename(s->dir, "srv.pem", NULL);
	g_autofree char *skey = g_build_filename(s->dir, "srv.key", NULL);
	const char *up[] = { "python3", script, cert, skey, s->heads, NULL };
	s->port_fd = -1;
	s->pid = spawn_bg(up, s->dir, &s->port_fd);
	char portbuf[16] = "";
	/* the whole line: python's print fails on a pipe closed before its newline */
	for (size_t n = 0; n < sizeof(portbuf) - 1 && !strchr(portbuf, '\n');) {
		ssize_t got = read(s->port_fd, portbuf + n, sizeof(portbuf) - 1 - n);
		ck_assert_int_gt(got, 0);
		n += (size_t)got;
	}
	s->port = (unsigned)atoi(portbuf);
	g_autofree char *proxy = testutil_build_path("core/net/cordon-proxy");
	g_setenv("CORDON_PROXY_HELPER", proxy, TRUE);
}

char *netcheck_service_policy(const netcheck_service_env *s)
{
	return g_strdup_printf(
		"secrets:\n  MODEL_KEY: {file: %s}\n"
		"services:\n  - name: model-api\n"
		"    upstream: \"https://localhost:%u/v1\"\n    ca: %s/ca.pem\n"
		"    inject: {header: Authorization, value: \"Bearer ${secret:MODEL_KEY}\"}\n",
		s->key, s->port, s->dir);
}

void netcheck_service_stop(netcheck_service_env *s)
{
	stop_bg(s->pid);
	close(s->port_fd);
	testutil_rmtree(s->dir);
	g_free(s->dir);
	g_free(s->heads);
	g_free(s->secret);
	g_free(s->key);
}

void netcheck_services(const netcheck_service_env *s, cordon_context *ctx, const char *tier,
		       netcheck_open_fn open)
{
	ck_assert(g_file_set_contents(s->heads, "", 0, NULL)); /* this tier's requests alone */
	cordon_sandbox *sb = open(ctx, tier, CORDON_EGRESS_DENY, true);
	int code = -1;
	g_autofree char *answer = netcheck_sh(
		sb,
		"wget -q -O- \"$MODEL_API_BASE_URL/models?q=1\"; echo; echo $MODEL_API_BASE_URL",
		&code);
	ck_assert_msg(strstr(answer, "upstream saw /v1/models?q=1") &&
			      strstr(answer, "http://127.0.0.1:"),
		      "%s", answer);
	g_autofree char *seen = NULL;
	ck_assert(g_file_get_contents(s->heads, &seen, NULL, NULL));
	g_autofree char *bearer = g_strdup_printf("Authorization: Bearer %s\n", s->secret);
	ck_assert_msg(strstr(seen, bearer), "the upstream saw: %s", seen);
	/* everything the work can read, searched on the host (the search never holds the
	 * secret inside): environments and command lines of its processes, every file */
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	ck_assert_int_eq(
		cordon_sandbox_exec(
			sb,
			"env; for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; done; "
			"find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o "
			"-type f -print 2>/dev/null | while read -r f; do cat \"$f\"; done "
			"2>/dev/null; echo searched",
			NULL, &r, &err),
		0);
	size_t len = 0;
	const char *all = cordon_result_output(r, 1, &len);
	ck_assert_msg(len > 1000000 && len > 16 && memmem(all + len - 16, 16, "searched\n", 9),
		      "the search read %zu bytes", len);
	ck_assert_msg(!memmem(all, len, s->secret, strlen(s->secret)),
		      "the secret is in the sandbox");
	ck_assert_msg(memmem(all, len, NETCHECK_GRANT, strlen(NETCHECK_GRANT)),
		      "the search does not find the granted decoy");
	cordon_result_free(r);
	cordon_sandbox_close(sb);
}
