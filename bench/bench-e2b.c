/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The remote tier and cordon server, side by side with their floors (issue 13):
 *  1. the e2b plugin's cost per call against raw libcurl doing the same request to the
 *     same server (a file download: the plugin's read_file vs a GET /files);
 *  2. create + run `echo` + kill through cordon server (raw HTTP: the protocol's floor)
 *     against the same through the library (what `cordon run` does), on the kernel tier:
 *     the difference is what the HTTP layer costs;
 *  3. with node and E2B's SDK: 32 concurrent SDK clients, each create + run + kill, for
 *     BENCH_E2B_SECONDS (default 60): throughput, p50, p99, errors, and nothing left.
 * Usage: bench/bench-e2b [ITERATIONS]   (from the build tree; as root or not)
 */
#include "config.h"

#include "benchutil.h"

#include <cordon/cordon.h>
#include <curl/curl.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char key[] = "e2b_00000000000000000000000000000000be0cbe0c";
static unsigned port;
static GPid server;
static char *dir;

static double now_ms(void) { return (double)g_get_monotonic_time() / 1000.0; }

static void start_server(void)
{
	dir = g_dir_make_tmp("cordon-bench-e2b-XXXXXX", NULL);
	g_autofree char *keys = g_build_filename(dir, "keys", NULL);
	g_autofree char *pol = g_build_filename(dir, "server.yaml", NULL);
	g_file_set_contents(keys, key, -1, NULL);
	chmod(keys, 0600);
	g_file_set_contents(
		pol,
		"cordon: 1\ntiers:\n  kernel: {driver: local, confine: kernel}\n"
		"trust:\n  semi-trusted: {require: kernel, tiers: [kernel]}\nserver:\n"
		"  templates:\n    base: {trust: semi-trusted}\n  sandboxes_per_key: 64\n",
		-1, NULL);
	const char *argv[] = { "./cordon-server", "--listen", "127.0.0.1:0", "--api-keys", keys,
			       "--policy",        pol,        "--quiet",     NULL };
	int out;
	if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL,
				      NULL, &server, NULL, &out, NULL, NULL))
		exit(77);
	FILE *f = fdopen(out, "r");
	char line[256] = "";
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "cordon server: listening on %*s port %u", &port) != 1) {
		fprintf(stderr, "cordon server did not start: %s\n", line);
		exit(1);
	}
}

/* ---- raw libcurl ------------------------------------------------------------------------ */

typedef struct buf {
	char *data;
	size_t len;
} buf;

static size_t collect(char *d, size_t s, size_t n, void *ctx)
{
	buf *b = ctx;
	b->data = g_realloc(b->data, b->len + s * n + 1);
	memcpy(b->data + b->len, d, s * n);
	b->len += s * n;
	b->data[b->len] = '\0';
	return s * n;
}

/* One request as the plugin makes it: a fresh handle, the same headers. */
static long raw(const char *method, const char *path, const char *ctype, const char *body,
		size_t body_len, const char *sbx, const char *token, buf *out)
{
	CURL *h = curl_easy_init();
	char url[512], a[128], b[128], c[128], d[128];
	struct curl_slist *hdr = curl_slist_append(NULL, "Expect:");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	snprintf(a, sizeof(a), "X-API-Key: %s", key);
	hdr = curl_slist_append(hdr, a);
	if (sbx) {
		snprintf(b, sizeof(b), "E2b-Sandbox-Id: %s", sbx);
		snprintf(c, sizeof(c), "X-Access-Token: %s", token);
		hdr = curl_slist_append(curl_slist_append(curl_slist_append(hdr, b), c),
					"E2b-Sandbox-Port: 49983");
	}
	if (ctype) {
		snprintf(d, sizeof(d), "Content-Type: %s", ctype);
		hdr = curl_slist_append(hdr, d);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body_len);
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	long status = 0;
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return status;
}

static char *json_field(const char *json, const char *name)
{
	g_autofree char *pat = g_strdup_printf("\"%s\":\"", name);
	const char *p = strstr(json, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	return g_strndup(p, strcspn(p, "\""));
}

/* ---- 1: the plugin per call vs raw libcurl -------------------------------------------------- */

static cordon_context *client_ctx(void)
{
	g_autofree char *keyfile = g_build_filename(dir, "key", NULL);
	g_file_set_contents(keyfile, key, -1, NULL);
	chmod(keyfile, 0600);
	g_autofree char *here = g_get_current_dir();
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\nplugins: {dir: %s/plugins/e2b/.libs, load: [e2b]}\ntiers:\n  remote:\n"
		"    driver: e2b\n    api_url: \"http://127.0.0.1:%u\"\n    sandbox_url: "
		"\"http://127.0.0.1:%u\"\n"
		"    api_key: {file: %s}\ntrust:\n  untrusted: {require: remote, tiers: "
		"[remote]}\n",
		here, port, port, keyfile);
	cordon_options *o = cordon_options_new();
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	cordon_options_set_policy_text(o, policy, strlen(policy), "bench.yaml", NULL);
	if (cordon_context_new(o, &ctx, &err) < 0) {
		fprintf(stderr, "context: %s\n", cordon_error_get_message(err));
		exit(1);
	}
	cordon_options_free(o);
	return ctx;
}

static void bench_per_call(int n)
{
	cordon_context *ctx = client_ctx();
	cordon_request *req = cordon_request_new("untrusted");
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_open(ctx, req, &sb, &err) < 0) {
		fprintf(stderr, "open: %s\n", cordon_error_get_message(err));
		exit(1);
	}
	cordon_sandbox_write_file(sb, "f.txt", "0123456789abcdef", 16, NULL);
	/* the raw side needs the sandbox's id and token: a sandbox of its own */
	buf cr = { 0 };
	raw("POST", "/sandboxes", "application/json", "{\"templateID\":\"base\",\"timeout\":300}",
	    35, NULL, NULL, &cr);
	g_autofree char *id = json_field(cr.data, "sandboxID");
	g_autofree char *tok = json_field(cr.data, "envdAccessToken");
	g_free(cr.data);
	buf w = { 0 };
	raw("POST", "/files?path=f.txt", "application/octet-stream", "0123456789abcdef", 16, id,
	    tok, &w);
	g_free(w.data);
	double *tp = g_new(double, n), *tr = g_new(double, n);
	for (int round = 0; round < 2; round++) /* interleaved, a warm-up round first */
		for (int i = 0; i < n; i++) {
			void *data = NULL;
			size_t len = 0;
			double t0 = now_ms();
			cordon_sandbox_read_file(sb, "f.txt", &data, &len, NULL);
			tp[i] = now_ms() - t0;
			free(data);
			buf b = { 0 };
			t0 = now_ms();
			raw("GET", "/files?path=%2Fhome%2Fuser%2Ff.txt", NULL, NULL, 0, id, tok,
			    &b);
			tr[i] = now_ms() - t0;
			g_free(b.data);
		}
	double mp = bench_median(tp, n), mr = bench_median(tr, n);
	printf("per call (read 16 B, %d calls): plugin %.3f ms, raw libcurl %.3f ms, ratio %.2fx "
	       "(target <= 1.10x)\n",
	       n, mp, mr, mp / mr);
	g_autofree char *kill = g_strdup_printf("/sandboxes/%s", id);
	buf k = { 0 };
	raw("DELETE", kill, NULL, NULL, 0, NULL, NULL, &k);
	g_free(k.data);
	cordon_sandbox_close(sb);
	cordon_request_free(req);
	cordon_context_free(ctx);
	g_free(tp);
	g_free(tr);
}

/* ---- 2: create + run + kill, the server vs the library -------------------------------------- */

static double server_cycle(void)
{
	static const char start[] =
		"{\"process\":{\"cmd\":\"/bin/echo\",\"args\":[\"hi\"]},\"stdin\":false}";
	char env[256];
	size_t n = strlen(start);
	env[0] = 0, env[1] = 0, env[2] = 0, env[3] = 0, env[4] = (char)n;
	memcpy(env + 5, start, n);
	double t0 = now_ms();
	buf cr = { 0 }, out = { 0 }, k = { 0 };
	raw("POST", "/sandboxes", "application/json", "{\"templateID\":\"base\"}", 21, NULL, NULL,
	    &cr);
	g_autofree char *id = json_field(cr.data, "sandboxID");
	g_autofree char *tok = json_field(cr.data, "envdAccessToken");
	raw("POST", "/process.Process/Start", "application/connect+json", env, 5 + n, id, tok,
	    &out);
	g_autofree char *kill = g_strdup_printf("/sandboxes/%s", id);
	raw("DELETE", kill, NULL, NULL, 0, NULL, NULL, &k);
	double t = now_ms() - t0;
	if (!out.data || !memmem(out.data, out.len, "aGkK", 4)) /* base64 "hi\n", among envelopes */
		fprintf(stderr, "server cycle: no output\n");
	g_free(cr.data);
	g_free(out.data);
	g_free(k.data);
	return t;
}

static double library_cycle(cordon_context *ctx)
{
	const char *argv[] = { "/bin/echo", "hi", NULL };
	double t0 = now_ms();
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_sandbox *sb = NULL;
	cordon_result *res = NULL;
	cordon_sandbox_open(ctx, req, &sb, NULL);
	cordon_sandbox_run(sb, argv, NULL, &res, NULL);
	cordon_sandbox_close(sb);
	double t = now_ms() - t0;
	cordon_result_free(res);
	cordon_request_free(req);
	return t;
}

static void bench_cycle(int n)
{
	cordon_context *ctx = NULL;
	cordon_context_new(NULL, &ctx, NULL);
	double *ts = g_new(double, n), *tl = g_new(double, n);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < n; i++) {
			ts[i] = server_cycle();
			tl[i] = library_cycle(ctx);
		}
	double ms = bench_median(ts, n), ml = bench_median(tl, n);
	printf("create + run echo + kill (%d each, kernel tier): server %.2f ms, library %.2f ms, "
	       "difference %.2f ms (target < 5 ms)\n",
	       n, ms, ml, ms - ml);
	cordon_context_free(ctx);
	g_free(ts);
	g_free(tl);
}

/* ---- 3: 32 SDK clients -------------------------------------------------------------------- */

static void bench_sdk(void)
{
	const char *sdk = NULL;
	static const char *const where[] = { "tests/e2b/node_modules",
					     "/var/lib/cordon-ci/e2b-sdk/node_modules" };
	g_autofree char *src = g_strdup(
		g_getenv("CORDON_TOP_SRCDIR") ? g_getenv("CORDON_TOP_SRCDIR") : ".");
	for (size_t i = 0; i < G_N_ELEMENTS(where) && !sdk; i++) {
		g_autofree char *p = where[i][0] == '/' ? g_strdup(where[i])
							: g_build_filename(src, where[i], NULL);
		g_autofree char *pkg = g_build_filename(p, "e2b", "package.json", NULL);
		if (g_file_test(pkg, G_FILE_TEST_EXISTS))
			sdk = g_steal_pointer(&p);
	}
	if (!sdk || !g_find_program_in_path("node")) {
		printf("32 SDK clients: skipped (node or E2B's SDK is not installed)\n");
		return;
	}
	g_autofree char *script = g_build_filename(src, "bench", "bench-e2b-sdk.mjs", NULL);
	g_autofree char *copy = g_build_filename(dir, "bench-e2b-sdk.mjs", NULL);
	g_autofree char *link = g_build_filename(dir, "node_modules", NULL);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(script, &text, NULL, NULL) ||
	    !g_file_set_contents(copy, text, -1, NULL) || symlink(sdk, link) < 0) {
		printf("32 SDK clients: skipped (cannot stage %s)\n", script);
		return;
	}
	g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u", port);
	g_setenv("E2B_API_URL", url, TRUE);
	g_setenv("E2B_SANDBOX_URL", url, TRUE);
	g_setenv("E2B_API_KEY", key, TRUE);
	g_autofree char *cmd = g_strdup_printf("node %s", copy);
	fflush(stdout);
	if (system(cmd) != 0)
		printf("32 SDK clients: the script failed\n");
	buf l = { 0 };
	raw("GET", "/sandboxes", NULL, NULL, 0, NULL, NULL, &l);
	printf("after the clients: the server lists %s\n",
	       l.data && strcmp(l.data, "[]") == 0 ? "no sandbox" : l.data);
	g_free(l.data);
	unlink(link);
	unlink(copy);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	if (access("./cordon-server", X_OK) != 0 || access("plugins/e2b/.libs/e2b.so", R_OK) != 0) {
		fprintf(stderr, "bench-e2b: run from the build tree, with cordon-server and the "
				"e2b plugin built\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	start_server();
	bench_per_call(n);
	bench_cycle(n / 4 > 10 ? n / 4 : 10);
	bench_sdk();
	int status = 0;
	kill(server, SIGTERM);
	waitpid(server, &status, 0);
	printf("cordon server: exit %d after SIGTERM\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return 0;
}
