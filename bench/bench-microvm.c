/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kvm tier against raw QEMU, side by side in one run (interleaved, so load on a shared
 * machine hits both alike):
 *
 *   cold    cordon open + run /bin/true + close   vs  QEMU on the same argv (qemu_argv from
 *           plugins/qemu), the same kernel and initramfs, to the agent's HELLO, its IDENTITY
 *           (every guest's first request), one RUN of /bin/true, END and QEMU's exit
 *   hello   raw QEMU start to the agent's first frame
 *   run     cordon run /bin/true in an open sandbox vs one RUN round trip on the raw channel
 *   files   write_file (4 KiB), read_file in an open sandbox
 *   pooled  open + run /bin/true with `pool: 1` (a guest booted ahead)
 *   clone   `clone: true`: open + first run of /bin/true (a copy-on-write clone restored from
 *           the tier's template, its identity given, QEMU jailed) vs raw QEMU restoring the
 *           same template unjailed (the same argv and sealed memfd, QMP pipelined, one
 *           IDENTITY and one RUN on the raw channel): the difference is cordon's and the jail's;
 *           `clone: true, pool: 1` open + run; the memory of two idle sibling clones
 *           (/proc/PID/smaps_rollup of their QEMU: Pss, Private_Dirty, Pss_Anon)
 *
 * Wall time and CPU (ours plus our reaped children's: QEMU is one) for each. Emulated
 * (accel: tcg) unless --hw. Needs a guest: --kernel/--initrd, or it builds one with
 * `cordon vm build` from $CORDON_CI_STATE/vm/linux-image-cloud-amd64.deb. From the build
 * tree: bench/bench-microvm [-n N] [--hw]
 */
#include "config.h"

#include "benchutil.h"

#include "qemu/qemu.h"
#include "client.h"
#include "owner.h"

#include <cordon/cordon.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static char *kernel, *initrd;
static char *built; /* the guest this run built, removed at the end */
static bool hw;
static bool clones_only;         /* --clones: the clone figures alone */
static bool network_only;        /* --network: the network channel's figures alone */
static const char *egress_rules; /* the tier's egress: keys, or NULL */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench-microvm: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

typedef struct sample {
	double wall_ms, cpu_ms;
} sample;

static double cpu_now_ms(void)
{
	struct rusage s, c;
	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	double us = 0;
	struct timeval tv[4] = { s.ru_utime, s.ru_stime, c.ru_utime, c.ru_stime };
	for (int i = 0; i < 4; i++)
		us += (double)tv[i].tv_sec * 1e6 + (double)tv[i].tv_usec;
	return us / 1000.0;
}

static double wall_now_ms(void) { return (double)g_get_monotonic_time() / 1000.0; }

static char *sha256_of(const char *path)
{
	g_autofree char *data = NULL;
	gsize len = 0;
	if (!g_file_get_contents(path, &data, &len, NULL))
		die("cannot read %s", path);
	return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
}

static void build_guest(void)
{
	const char *state = g_getenv("CORDON_CI_STATE") ? g_getenv("CORDON_CI_STATE")
							: "/var/lib/cordon-ci";
	g_autofree char *deb = g_build_filename(state, "vm", "linux-image-cloud-amd64.deb", NULL);
	char *dir = built = g_dir_make_tmp("cordon-bench-vm-XXXXXX", NULL);
	const char *argv[] = {
		"./cordon", "vm", "build", "--kernel-deb", deb, "--agent", "agent/cordon-agent",
		"--out",    dir,  NULL
	};
	int status = 0;
	g_autofree char *out = NULL;
	if (!g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out, NULL, &status, NULL) ||
	    !g_spawn_check_wait_status(status, NULL))
		die("cordon vm build failed (run from the build tree, after .ci/vm-guest.sh)");
	kernel = g_build_filename(dir, "vmlinuz", NULL);
	initrd = g_build_filename(dir, "initrd.img", NULL);
}

/* ---- cordon --------------------------------------------------------------------------- */

static cordon_context *context_with(int pool, bool clone)
{
	g_autofree char *ks = sha256_of(kernel), *is = sha256_of(initrd);
	g_autofree char *dir = g_canonicalize_filename("plugins/kvm/.libs", NULL);
	g_autofree char *policy = g_strdup_printf(
		"cordon: 1\nplugins: {dir: %s, load: [kvm]}\ntiers:\n  vm:\n    driver: kvm\n%s"
		"    kernel: %s\n    kernel_sha256: %s\n    initrd: %s\n    initrd_sha256: %s\n"
		"    limits: {memory: 256MiB, wall: 60s}\n    pool: %d\n    clone: %s\n%s"
		"trust:\n  trusted: {require: process-jail, tiers: [vm]}\n",
		dir, hw ? "" : "    accel: tcg\n", kernel, ks, initrd, is, pool,
		clone ? "true" : "false", egress_rules ? egress_rules : "");
	cordon_options *o = cordon_options_new();
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	if (cordon_options_set_policy_text(o, policy, strlen(policy), "bench.yaml", &err) < 0 ||
	    cordon_context_new(o, &ctx, &err) < 0)
		die("context: %s", cordon_error_get_message(err));
	cordon_options_free(o);
	return ctx;
}

static cordon_context *context(int pool) { return context_with(pool, false); }

/* ---- the network channel (--network) ------------------------------------------------------ */

static cordon_sandbox *open_vm(cordon_context *ctx);

static char *sh_out(cordon_sandbox *sb, const char *line)
{
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_exec(sb, line, NULL, &res, &err) < 0)
		die("exec: %s", cordon_error_get_message(err));
	char *o = g_strdup(cordon_result_output(res, 1, NULL));
	cordon_result_free(res);
	return o;
}

/* One HTTP GET of / through address, connect to EOF, in ms. */
static double http_get_ms(const char *address)
{
	const char *colon = strrchr(address, ':');
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(colon + 1)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	double t = wall_now_ms();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	const char get[] = "GET / HTTP/1.0\r\n\r\n";
	char buf[4096];
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    write(fd, get, sizeof(get) - 1) != (ssize_t)sizeof(get) - 1)
		die("serve: connect");
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return wall_now_ms() - t;
}

/* Per request, ms, of n wgets of url inside the guest, one run timed from the host (its own
 * cost, about a run of /bin/true, spread over the n). */
static double guest_wget_ms(cordon_sandbox *sb, const char *url, int n)
{
	g_autofree char *line = g_strdup_printf(
		"i=0; while [ $i -lt %d ]; do wget -q -O /dev/null %s || exit 1; i=$((i+1)); done",
		n, url);
	double t = wall_now_ms();
	g_free(sh_out(sb, line));
	return (wall_now_ms() - t) / n;
}

/* serve through the channel: GETs from the host through cordon's listener, and the guest's
 * own wget of the same page over its loopback (exec included); governed egress: a guest
 * wget of 16 MiB through cordon's proxy over the channel, and of the same file from its
 * own httpd (loopback in the guest). */
static void bench_network(int n)
{
	g_autofree char *www = g_dir_make_tmp("cordon-bench-www-XXXXXX", NULL);
	g_autofree char *big = g_build_filename(www, "big", NULL);
	g_autofree char *zeros = g_malloc0(16 << 20);
	if (!g_file_set_contents(big, zeros, 16 << 20, NULL))
		die("%s", big);
	int port = 18000 + (int)(getpid() % 1000);
	g_autofree char *ps = g_strdup_printf("%d", port);
	const char *http[] = { "python3", "-m", "http.server", "--bind", "127.0.0.1", ps, NULL };
	GPid hpid;
	if (!g_spawn_async(www, (char **)http, NULL,
			   G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL |
				   G_SPAWN_STDERR_TO_DEV_NULL | G_SPAWN_DO_NOT_REAP_CHILD,
			   NULL, NULL, &hpid, NULL))
		die("python3 http.server");
	g_usleep(G_USEC_PER_SEC);
	g_autofree char *rules = g_strdup_printf("    egress: {allow: [\"localhost:%d\"]}\n", port);
	egress_rules = rules;
	cordon_context *ctx = context(0);
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_tier(req, "vm", NULL);
	cordon_request_set_egress(req, CORDON_EGRESS_GOVERNED, NULL);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	cordon_sandbox_close(open_vm(ctx)); /* the probe's trial boot, out of the figures */
	if (cordon_sandbox_open(ctx, req, &sb, &err) < 0)
		die("open: %s", cordon_error_get_message(err));
	cordon_request_free(req);
	const char *argv[] = {
		"sh", "-c",
		"mkdir -p /tmp/www && echo page >/tmp/www/index.html && "
		"head -c 16777216 /dev/zero >/tmp/www/big && exec httpd -f -p 8081 -h "
		"/tmp/www",
		NULL
	};
	cordon_serve *srv = NULL;
	if (cordon_sandbox_serve(sb, argv, 8081, NULL, &srv, &err) < 0)
		die("serve: %s", cordon_error_get_message(err));
	g_autofree char *addr = cordon_serve_address(srv);
	int m = 10 * n;
	g_autofree double *get = g_new(double, m);
	for (int i = 0; i < m; i++)
		get[i] = http_get_ms(addr);
	printf("%-22s %-8s %9.2f ms\n", "serve GET via channel", "cordon", bench_median(get, m));
	printf("%-22s %-8s %9.2f ms\n", "  guest wget, own lo", "guest",
	       guest_wget_ms(sb, "http://127.0.0.1:8081/", 20));
	g_autofree char *via = g_strdup_printf("http://localhost:%d/big", port);
	g_autofree double *t_proxy = g_new(double, n), *t_lo = g_new(double, n);
	for (int i = 0; i < n; i++) {
		t_proxy[i] = guest_wget_ms(sb, via, 1);
		t_lo[i] = guest_wget_ms(sb, "http://127.0.0.1:8081/big", 1);
	}
	double a = bench_median(t_proxy, n), b = bench_median(t_lo, n);
	printf("%-22s %-8s %9.2f ms (%.1f MiB/s)\n", "egress 16 MiB, proxy", "cordon", a,
	       16 / (a / 1000));
	printf("%-22s %-8s %9.2f ms (%.1f MiB/s; proxy %.2fx)\n", "  the same, own lo", "guest", b,
	       16 / (b / 1000), b / a);
	cordon_serve_stop(srv, NULL);
	cordon_serve_free(srv);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	egress_rules = NULL;
	kill(hpid, SIGTERM);
	waitpid(hpid, NULL, 0);
	g_unlink(big);
	g_rmdir(www);
}

static cordon_sandbox *open_vm(cordon_context *ctx)
{
	cordon_request *req = cordon_request_new("trusted");
	cordon_request_set_tier(req, "vm", NULL);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	int r = cordon_sandbox_open(ctx, req, &sb, &err);
	/* a first probe's trial boot can outlast the core's probe bound on a loaded host: the
	 * core keeps the answer that comes late */
	for (int i = 0; r < 0 && i < 120 && strstr(cordon_error_get_message(err), "timed out");
	     i++) {
		cordon_error_free(err);
		err = NULL;
		g_usleep(G_USEC_PER_SEC);
		r = cordon_sandbox_open(ctx, req, &sb, &err);
	}
	cordon_request_free(req);
	if (r < 0)
		die("open: %s", cordon_error_get_message(err));
	return sb;
}

static void run_true(cordon_sandbox *sb)
{
	const char *argv[] = { "/bin/true", NULL };
	cordon_result *res = NULL;
	cordon_error *err = NULL;
	if (cordon_sandbox_run(sb, argv, NULL, &res, &err) < 0 || cordon_result_exit_code(res) != 0)
		die("run: %s", err ? cordon_error_get_message(err) : "exit != 0");
	cordon_result_free(res);
}

static sample cordon_cold(cordon_context *ctx)
{
	double w = wall_now_ms(), c = cpu_now_ms();
	cordon_sandbox *sb = open_vm(ctx);
	run_true(sb);
	cordon_sandbox_close(sb);
	return (sample){ wall_now_ms() - w, cpu_now_ms() - c };
}

/* ---- raw QEMU --------------------------------------------------------------------------- */

typedef struct raw_vm {
	pid_t pid;
	int chan;
	int net; /* the network channel's socket pair: held, never read (as cordon's when idle) */
	agent_decoder dec;
	uint8_t last;
} raw_vm;

static int on_frame(void *ctx, uint8_t type, const char *payload, uint32_t len)
{
	(void)payload;
	(void)len;
	((raw_vm *)ctx)->last = type;
	return 0;
}

/* Reads frames until one of type want. */
static void wait_frame(raw_vm *vm, uint8_t want)
{
	vm->last = 0;
	while (vm->last != want) {
		char buf[4096];
		ssize_t n = read(vm->chan, buf, sizeof(buf));
		if (n <= 0)
			die("the raw guest's channel ended");
		if (agent_decoder_feed(&vm->dec, buf, (size_t)n, on_frame, vm) < 0)
			die("the raw guest's frames are malformed");
	}
}

static void raw_start(raw_vm *vm)
{
	qemu_config c = {
		.binary = "/usr/bin/qemu-system-x86_64",
		.arch = QEMU_ARCH_X86_64,
		.accel = hw ? QEMU_ACCEL_KVM : QEMU_ACCEL_TCG,
		.machine = "microvm",
		.memory_mib = 256,
		.cpus = 1,
		.kernel = kernel,
		.initrd = initrd,
		.tsc_khz = hw ? 0 : qemu_host_tsc_khz(),
		.scratch_bytes = 64 << 20,
	};
	char **argv = qemu_argv(&c);
	int sp[2], np[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, np) < 0)
		die("socketpair");
	*vm = (raw_vm){ .chan = sp[0], .net = np[0] };
	vm->pid = fork();
	if (vm->pid == 0) {
		dup2(sp[1], QEMU_AGENT_FD); /* dup2 clears close-on-exec */
		dup2(np[1], QEMU_NET_FD);
		execv(argv[0], argv);
		_exit(127);
	}
	close(sp[1]);
	close(np[1]);
	xstrv_free(argv);
}

/* The identity every guest's agent takes first (agent/protocol.h), up to its answer. */
static void raw_identity(raw_vm *vm)
{
	uint8_t req[AGENT_FRAME_HEADER + 128 + 64];
	int n = snprintf((char *)req + AGENT_FRAME_HEADER, 128, "%032x%ccordon-raw%c%lld%c", 1, 0,
			 0, (long long)g_get_real_time() * 1000, 0);
	if (getrandom(req + AGENT_FRAME_HEADER + n, 64, 0) != 64)
		die("getrandom");
	agent_frame_header(req, AGENT_REQ_IDENTITY, (uint32_t)n + 64);
	if (write(vm->chan, req, AGENT_FRAME_HEADER + (size_t)n + 64) < 0)
		die("identity");
	wait_frame(vm, AGENT_FRAME_STATUS);
}

static void raw_round_trip(raw_vm *vm)
{
	const char *argv[] = { "/bin/true", NULL };
	const char *envp[] = { "PATH=/bin", NULL };
	size_t len;
	char *req = agent_run_request(argv, envp, 10000, 1 << 20, NULL, NULL, 0, &len);
	if (write(vm->chan, req, len) != (ssize_t)len)
		die("write to the raw guest");
	free(req);
	wait_frame(vm, AGENT_FRAME_STATUS);
}

static void raw_stop(raw_vm *vm)
{
	uint8_t end[AGENT_FRAME_HEADER];
	agent_end_frame(end);
	if (write(vm->chan, end, sizeof(end)) != sizeof(end))
		die("END");
	waitpid(vm->pid, NULL, 0);
	close(vm->chan);
	close(vm->net);
	agent_decoder_clear(&vm->dec);
}

static sample raw_cold(double *hello_ms)
{
	double w = wall_now_ms(), c = cpu_now_ms();
	raw_vm vm;
	raw_start(&vm);
	wait_frame(&vm, AGENT_FRAME_HELLO);
	*hello_ms = wall_now_ms() - w;
	raw_identity(&vm);
	raw_round_trip(&vm);
	raw_stop(&vm);
	return (sample){ wall_now_ms() - w, cpu_now_ms() - c };
}

static void report(const char *what, double *a, double *b, size_t n, const char *an, const char *bn)
{
	double ma = bench_median(a, (int)n), mb = bench_median(b, (int)n);
	printf("%-22s %-8s %9.2f ms   %-8s %9.2f ms   ratio %.3f\n", what, an, ma, bn, mb,
	       mb > 0 ? ma / mb : 0);
}

/* ---- clones --------------------------------------------------------------------------------- */

/* The template directory the clone tier made (clone.c names it by our owner token). */
static char *template_dir(void)
{
	char tok[OWNER_TOKEN_MAX];
	if (owner_token_self(tok) < 0)
		die("owner token");
	g_autofree char *prefix = g_strdup_printf(QEMU_NAME_PREFIX "%s-", tok);
	GDir *d = g_dir_open("/dev/shm", 0, NULL);
	const char *name;
	char *found = NULL;
	while (d && !found && (name = g_dir_read_name(d)))
		if (g_str_has_prefix(name, prefix))
			found = g_build_filename("/dev/shm", name, NULL);
	if (d)
		g_dir_close(d);
	if (!found)
		die("no template in /dev/shm");
	return found;
}

static void qmp_write(int fd, const char *cmd, int pass)
{
	struct iovec iov = { (void *)cmd, strlen(cmd) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u = { { 0 } };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (pass >= 0) {
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass, sizeof(int));
	}
	if (sendmsg(fd, &m, MSG_NOSIGNAL) != (ssize_t)iov.iov_len)
		die("QMP write");
}

/* The template's RAM: our descriptor of the tier's sealed memfd (clone.c). */
static int template_ram(void)
{
	int found = -1;
	GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
	const char *name;
	while (d && found < 0 && (name = g_dir_read_name(d))) {
		g_autofree char *p = g_build_filename("/proc/self/fd", name, NULL);
		g_autofree char *l = g_file_read_link(p, NULL);
		if (l && g_str_has_prefix(l, "/memfd:cordon-template-ram "))
			found = atoi(name);
	}
	if (d)
		g_dir_close(d);
	if (found < 0)
		die("no template memfd");
	return found;
}

/* Raw QEMU restoring the tier's template: the clone's argv on the same sealed memfd, but
 * unjailed (its fd 4, opened as /proc/self/fd/4), the QMP commands written at once (replies
 * left unread), the identity the agent waits for, up to its answer. */
static void raw_clone_start(raw_vm *vm, const char *dir, int *ret_qmp)
{
	int ram = template_ram();
	g_autofree char *state = g_build_filename(dir, "state", NULL);
	qemu_config c = {
		.binary = "/usr/bin/qemu-system-x86_64",
		.arch = QEMU_ARCH_X86_64,
		.accel = hw ? QEMU_ACCEL_KVM : QEMU_ACCEL_TCG,
		.machine = "microvm",
		.memory_mib = 256,
		.cpus = 1,
		.kernel = kernel,
		.initrd = initrd,
		.tsc_khz = hw ? 0 : qemu_host_tsc_khz(),
		.scratch_bytes = 64 << 20,
		.mem_path = "/proc/self/fd/4",
		.qmp = true,
		.incoming = true,
	};
	char **argv = qemu_argv(&c);
	int sp[2], qp[2], np[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qp) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, np) < 0)
		die("socketpair");
	*vm = (raw_vm){ .chan = sp[0], .net = np[0] };
	vm->pid = fork();
	if (vm->pid == 0) {
		int high = fcntl(ram, F_DUPFD, 10); /* above what the dup2s below overwrite */
		dup2(qp[1], QEMU_QMP_FD);
		dup2(np[1], QEMU_NET_FD);
		dup2(sp[1], QEMU_AGENT_FD);
		dup2(high, 4);
		execv(argv[0], argv);
		_exit(127);
	}
	close(sp[1]);
	close(qp[1]);
	close(np[1]);
	xstrv_free(argv);
	int fd = open(state, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s", state);
	qmp_write(qp[0], "{\"execute\": \"qmp_capabilities\"}\n", -1);
	qmp_write(qp[0],
		  "{\"execute\": \"migrate-set-capabilities\", \"arguments\": {\"capabilities\": "
		  "[{\"capability\": \"x-ignore-shared\", \"state\": true}]}}\n",
		  -1);
	qmp_write(qp[0], "{\"execute\": \"getfd\", \"arguments\": {\"fdname\": \"s\"}}\n", fd);
	qmp_write(qp[0],
		  "{\"execute\": \"migrate-incoming\", \"arguments\": {\"uri\": \"fd:s\"}}\n", -1);
	close(fd);
	*ret_qmp = qp[0];
	raw_identity(vm);
}

/* The QEMU processes that are our children. */
static size_t my_qemus(pid_t *out, size_t max)
{
	size_t n = 0;
	GDir *d = g_dir_open("/proc", 0, NULL);
	const char *name;
	while (d && n < max && (name = g_dir_read_name(d))) {
		g_autofree char *p = g_strdup_printf("/proc/%s/stat", name);
		g_autofree char *st = NULL;
		if (!g_ascii_isdigit(name[0]) || !g_file_get_contents(p, &st, NULL, NULL))
			continue;
		const char *cp = strrchr(st, ')');
		int ppid = 0;
		if (strstr(st, "(qemu-system-") && cp && sscanf(cp + 2, "%*c %d", &ppid) == 1 &&
		    ppid == getpid())
			out[n++] = (pid_t)atoi(name);
	}
	if (d)
		g_dir_close(d);
	return n;
}

/* The CPU time of our QEMU children so far (utime + stime), not yet in RUSAGE_CHILDREN. */
static double qemus_cpu_ms(void)
{
	pid_t pids[8];
	size_t n = my_qemus(pids, 8);
	double ms = 0;
	for (size_t i = 0; i < n; i++) {
		g_autofree char *p = g_strdup_printf("/proc/%d/stat", (int)pids[i]);
		g_autofree char *st = NULL;
		unsigned long ut = 0, stime = 0;
		const char *cp = g_file_get_contents(p, &st, NULL, NULL) ? strrchr(st, ')') : NULL;
		if (cp && sscanf(cp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
				 &stime) == 2)
			ms += (double)(ut + stime) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
	}
	return ms;
}

/* A line of /proc/PID/smaps_rollup, in MiB. */
static double rollup_mib(pid_t pid, const char *key)
{
	g_autofree char *p = g_strdup_printf("/proc/%d/smaps_rollup", (int)pid);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(p, &text, NULL, NULL))
		die("%s", p);
	g_autofree char *k = g_strdup_printf("\n%s:", key);
	const char *at = strstr(text, k);
	return at ? g_ascii_strtod(at + strlen(k), NULL) / 1024.0 : -1;
}

static void report_memory(const char *who, const pid_t *pids, size_t n)
{
	double pss = 0, dirty = 0, anon = 0;
	for (size_t i = 0; i < n; i++) {
		pss += rollup_mib(pids[i], "Pss");
		dirty += rollup_mib(pids[i], "Private_Dirty");
		anon += rollup_mib(pids[i], "Pss_Anon");
	}
	printf("%-22s %-8s Pss %6.1f MiB  Private_Dirty %6.1f MiB  Pss_Anon %6.1f MiB (mean of "
	       "%zu)\n",
	       "idle clone memory", who, pss / (double)n, dirty / (double)n, anon / (double)n, n);
}

static void bench_clones(int n)
{
	cordon_context *ctx = context_with(0, true);
	cordon_sandbox_close(open_vm(ctx)); /* the probe's trial makes the template */
	g_autofree char *dir = template_dir();
	g_autofree double *cw = g_new(double, n), *cc = g_new(double, n), *co = g_new(double, n);
	g_autofree double *rw = g_new(double, n), *rc = g_new(double, n), *ro = g_new(double, n);
	g_autofree double *coc = g_new(double, n), *roc = g_new(double, n);
	for (int i = 0; i < n; i++) {
		double w = wall_now_ms(), c = cpu_now_ms();
		cordon_sandbox *sb = open_vm(ctx);
		co[i] = wall_now_ms() - w, coc[i] = cpu_now_ms() - c + qemus_cpu_ms();
		run_true(sb);
		cw[i] = wall_now_ms() - w, cc[i] = cpu_now_ms() - c + qemus_cpu_ms();
		cordon_sandbox_close(sb);
		raw_vm vm;
		int qmp;
		w = wall_now_ms(), c = cpu_now_ms();
		raw_clone_start(&vm, dir, &qmp);
		ro[i] = wall_now_ms() - w, roc[i] = cpu_now_ms() - c + qemus_cpu_ms();
		raw_round_trip(&vm);
		rw[i] = wall_now_ms() - w, rc[i] = cpu_now_ms() - c + qemus_cpu_ms();
		raw_stop(&vm);
		close(qmp);
	}
	report("clone open", co, ro, (size_t)n, "cordon", "raw");
	report("  cpu (ours + QEMU's)", coc, roc, (size_t)n, "cordon", "raw");
	report("clone open+first run", cw, rw, (size_t)n, "cordon", "raw");
	report("  cpu (ours + QEMU's)", cc, rc, (size_t)n, "cordon", "raw");
	/* two idle siblings: what the template's file pages cost is shared between them */
	cordon_sandbox *a = open_vm(ctx), *b = open_vm(ctx);
	run_true(a);
	run_true(b);
	g_usleep(G_USEC_PER_SEC);
	pid_t pids[4];
	size_t k = my_qemus(pids, 4);
	report_memory("cordon", pids, k);
	cordon_sandbox_close(a);
	cordon_sandbox_close(b);
	raw_vm r1, r2;
	int q1, q2;
	raw_clone_start(&r1, dir, &q1);
	raw_clone_start(&r2, dir, &q2);
	raw_round_trip(&r1);
	raw_round_trip(&r2);
	g_usleep(G_USEC_PER_SEC);
	k = my_qemus(pids, 4);
	report_memory("raw", pids, k);
	raw_stop(&r1);
	raw_stop(&r2);
	close(q1);
	close(q2);
	cordon_context_free(ctx);

	ctx = context_with(1, true);
	cordon_sandbox_close(open_vm(ctx)); /* the probe starts the pool */
	g_autofree double *po = g_new(double, n);
	for (int i = 0; i < n; i++) {
		g_usleep(2 * G_USEC_PER_SEC); /* a refill: a restore */
		double t = wall_now_ms();
		cordon_sandbox *p = open_vm(ctx);
		run_true(p);
		po[i] = wall_now_ms() - t;
		cordon_sandbox_close(p);
	}
	printf("%-22s %-8s %9.2f ms\n", "pooled clone open+run", "cordon", bench_median(po, n));
	cordon_context_free(ctx);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	int n = 5;
	signal(SIGPIPE, SIG_IGN); /* a guest that died is a message, not a silent end */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (strcmp(argv[i], "--hw") == 0)
			hw = true;
		else if (strcmp(argv[i], "--clones") == 0)
			clones_only = true;
		else if (strcmp(argv[i], "--network") == 0)
			network_only = true;
		else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc)
			kernel = g_strdup(argv[++i]);
		else if (strcmp(argv[i], "--initrd") == 0 && i + 1 < argc)
			initrd = g_strdup(argv[++i]);
		else
			die("usage: bench-microvm [-n N] [--hw] [--clones|--network] [--kernel K "
			    "--initrd I]");
	}
	if (n < 1)
		n = 1;
	if (!kernel || !initrd)
		build_guest();
	printf("# %s, %d rounds, medians\n", hw ? "kvm" : "tcg (emulated)", n);
	if (network_only) {
		bench_network(n);
		return 0;
	}
	bench_clones(n);
	if (clones_only)
		return 0;
	cordon_context *ctx = context(0);
	/* the first open's probe boots a trial guest: kept out of the figures */
	cordon_sandbox_close(open_vm(ctx));

	g_autofree double *cw = g_new(double, n), *cc = g_new(double, n);
	g_autofree double *rw = g_new(double, n), *rc = g_new(double, n), *hello = g_new(double, n);
	for (int i = 0; i < n; i++) {
		sample a = cordon_cold(ctx);
		sample b = raw_cold(&hello[i]);
		cw[i] = a.wall_ms, cc[i] = a.cpu_ms, rw[i] = b.wall_ms, rc[i] = b.cpu_ms;
	}
	report("cold open+run+close", cw, rw, (size_t)n, "cordon", "raw");
	report("  cpu", cc, rc, (size_t)n, "cordon", "raw");
	printf("%-22s %-8s %9.2f ms\n", "raw start to hello", "raw", bench_median(hello, n));

	int m = 20;
	g_autofree double *run_c = g_new(double, m), *run_r = g_new(double, m);
	g_autofree double *wr = g_new(double, m), *rd = g_new(double, m);
	cordon_sandbox *sb = open_vm(ctx);
	raw_vm vm;
	raw_start(&vm);
	wait_frame(&vm, AGENT_FRAME_HELLO);
	raw_identity(&vm);
	char data[4096];
	memset(data, 'x', sizeof(data));
	for (int i = 0; i < m; i++) {
		double t = wall_now_ms();
		run_true(sb);
		run_c[i] = wall_now_ms() - t;
		t = wall_now_ms();
		raw_round_trip(&vm);
		run_r[i] = wall_now_ms() - t;
		t = wall_now_ms();
		if (cordon_sandbox_write_file(sb, "f", data, sizeof(data), NULL) < 0)
			die("write_file");
		wr[i] = wall_now_ms() - t;
		t = wall_now_ms();
		void *back = NULL;
		size_t len = 0;
		if (cordon_sandbox_read_file(sb, "f", &back, &len, NULL) < 0 || len != sizeof(data))
			die("read_file");
		free(back);
		rd[i] = wall_now_ms() - t;
	}
	raw_stop(&vm);
	cordon_sandbox_close(sb);
	report("run /bin/true (open)", run_c, run_r, (size_t)m, "cordon", "raw");
	printf("%-22s %-8s %9.2f ms\n", "write_file 4 KiB", "cordon", bench_median(wr, m));
	printf("%-22s %-8s %9.2f ms\n", "read_file 4 KiB", "cordon", bench_median(rd, m));
	cordon_context_free(ctx);

	/* pool: 1, a guest booted ahead: open to the first run's end, after a refill's time */
	ctx = context(1);
	cordon_sandbox_close(open_vm(ctx)); /* the probe starts the pool */
	g_autofree double *po = g_new(double, n);
	for (int i = 0; i < n; i++) {
		g_usleep(8 * G_USEC_PER_SEC);
		double t = wall_now_ms();
		cordon_sandbox *p = open_vm(ctx);
		run_true(p);
		po[i] = wall_now_ms() - t;
		cordon_sandbox_close(p);
	}
	printf("%-22s %-8s %9.2f ms\n", "pooled open+run", "cordon", bench_median(po, n));
	cordon_context_free(ctx);
	if (built) {
		g_unlink(kernel);
		g_unlink(initrd);
		g_rmdir(built);
	}
	return 0;
}
