/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kvm tier end to end, emulated (accel: tcg: this host's /dev/kvm is PVM), through the
 * public API: real QEMU, a real Debian guest kernel, the guest built by `cordon vm build`.
 * As few boots as the cases allow: the red-team and containment cases share one guest each.
 *
 *   probe        the emulated tier is available as `kernel`, never `microvm`; the hardware
 *                tier says exactly why not (PVM); hvf and hyperv say what they require
 *   red team     inside the guest: no network interface, another kernel, no host file, no
 *                host process, no host /dev node, never root, no module loading
 *   containment  the memory limit is the guest's RAM, output caps, a timeout kills the work
 *                and the guest serves on, the scratch is capped, a memory hog is reported
 *                as out-of-memory, pids are bounded
 *   image        `cordon vm build` is reproducible
 *   lifetime     close and a SIGKILL of the host leave no QEMU; gc kills a dead host's
 *                QEMU and removes its clone templates, never a live host's
 *   pool         a guest booted ahead opens fast, serves one sandbox only, ends with the tier
 *   clones       `clone: true`: copy-on-write clones of a template: siblings read other bytes
 *                from the guest RNG and have their own machine id, hostname, boot id and
 *                clock, run as uid 1000; no file crosses sandboxes; each clone's QEMU is
 *                jailed as a cold one is; the template's RAM is a sealed memfd (write(2)
 *                and a shared writable mapping fail) that never changes, its state 0400
 *                in a 0700 directory; a workspace is copied into a clone and back;
 *                close and the tier's end leave no QEMU and no file
 *   port         the agent waits for the host's end of its port (CK_RUN_CASE=port)
 *   tty          a terminal run: a pty inside the guest of the size asked, resized, typed
 *                input, the exit status (its own case: CK_RUN_CASE=tty)
 *   aarch64      the hvf family's guest end to end under qemu-system-aarch64 -accel tcg
 *   failures     a kernel whose hash differs, QEMU missing, an agent that never says hello
 *                (bounded), a guest that panics at boot, the VM killed from outside,
 *                /dev/kvm the caller may not open
 *   workspace    copied in (seen inside; a host link not carried), back at close only when
 *                writable (the guest's link and FIFO not carried), read-only inside for
 *                untrusted work and under a `workspace: read-only` rule, a compromised
 *                guest's copy-out (a name with "..", a link to /etc, a 10 GiB claim, a
 *                device) refused whole, as root the copy runs as the workspace's owner, a copy-out over the limit refused whole, a copy-in over it
 *                refused before the boot (its own case: CK_RUN_CASE=workspace)
 */
#include "config.h"

#include "netcheck.h"
#include "testutil.h"
#include "vmguest.h"
#include "owner.h"
#include "qemu/qemu.h"
#include "protocol.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static vmguest guest;
static char *plugin_dir;

#define LIMITS "    limits: {memory: 192MiB, pids: 64, output: 4096, wall: 120s}\n"

static char *policy_with(const char *tiers)
{
	return g_strdup_printf("cordon: 1\nplugins: {dir: %s, load: [kvm, hvf, hyperv]}\n"
			       "tiers:\n%s"
			       "trust:\n  trusted: {require: process-jail, tiers: [vm]}\n",
			       plugin_dir, tiers);
}

static cordon_context *ctx_vm(const char *extra)
{
	g_autofree char *tier = vmguest_tier(&guest, "vm", extra ? extra : LIMITS);
	g_autofree char *p = policy_with(tier);
	return testutil_context_from_text(p, "microvm.yaml");
}

/* The probe, past the core's own bound when a boot under load takes longer: the core keeps
 * the answer that came late. */
static cordon_probe_report *probe_settled(cordon_context *ctx, const char *tier)
{
	for (int i = 0; i < 60; i++) {
		cordon_probe_report *rep = NULL;
		cordon_error *err = NULL;
		ck_assert_msg(cordon_context_probe_tier(ctx, testutil_tier_index(ctx, tier), &rep,
							&err) == 0,
			      "%s", err ? cordon_error_get_message(err) : "?");
		if (!strstr(cordon_probe_report_reason(rep), "the probe timed out"))
			return rep;
		cordon_probe_report_free(rep);
		g_usleep(G_USEC_PER_SEC);
	}
	ck_abort_msg("the %s probe never answered", tier);
	return NULL;
}

/* A sandbox of tier at trust, once its probe has settled; egress and a granted decoy
 * (netcheck.h) when asked. */
static cordon_sandbox *open_vm_as(cordon_context *ctx, const char *tier, const char *trust,
				  cordon_egress egress, bool grant)
{
	cordon_probe_report_free(probe_settled(ctx, tier));
	cordon_request *req = cordon_request_new(trust);
	ck_assert_int_eq(cordon_request_set_tier(req, tier, NULL), 0);
	if (egress)
		ck_assert_int_eq(cordon_request_set_egress(req, egress, NULL), 0);
	if (grant)
		ck_assert_int_eq(cordon_request_grant_env(req, "TOKEN", NETCHECK_GRANT, NULL), 0);
	return testutil_open(ctx, req, tier);
}

static cordon_sandbox *open_vm(cordon_context *ctx)
{
	return open_vm_as(ctx, "vm", "trusted", CORDON_EGRESS_DENY, false);
}

static cordon_result *sh(cordon_sandbox *sb, const char *line, uint64_t timeout_ms)
{
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = timeout_ms;
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_exec(sb, line, &o, &r, &err) == 0, "%s: %s", line,
		      err ? cordon_error_get_message(err) : "?");
	return r;
}

static char *sh_out(cordon_sandbox *sb, const char *line)
{
	cordon_result *r = sh(sb, line, 0);
	size_t len;
	const char *out = cordon_result_output(r, 1, &len);
	char *s = g_strndup(out, len);
	cordon_result_free(r);
	return s;
}

/* The processes this process started whose comm starts with prefix (children:
 * process_spawn's are direct). */
static GArray *my_children(pid_t parent, const char *prefix)
{
	GArray *pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 0)
			continue;
		g_autofree char *stat_path = g_strdup_printf("/proc/%d/stat", pid);
		g_autofree char *stat = NULL;
		if (!g_file_get_contents(stat_path, &stat, NULL, NULL))
			continue;
		const char *close_paren = strrchr(stat, ')');
		int ppid = 0;
		if (close_paren && sscanf(close_paren + 2, "%*c %d", &ppid) == 1 &&
		    ppid == parent && strstr(stat, prefix))
			g_array_append_val(pids, pid);
	}
	if (d)
		closedir(d);
	return pids;
}

static GArray *my_qemus(pid_t parent) { return my_children(parent, "(qemu-system-"); }

static bool gone_within(pid_t pid, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		g_autofree char *p = g_strdup_printf("/proc/%d/stat", pid);
		g_autofree char *stat = NULL;
		/* gone, or a zombie of a parent that is gone too */
		if (!g_file_get_contents(p, &stat, NULL, NULL) || strstr(stat, ") Z "))
			return true;
		g_usleep(100 * 1000);
	}
	return false;
}

/* A tier of driver on the guest, with the hardware accelerator (no accel: tcg). */
static char *hw_tier(const char *name, const char *driver)
{
	return g_strdup_printf("  %s:\n    driver: %s\n    kernel: %s\n    kernel_sha256: %s\n"
			       "    initrd: %s\n    initrd_sha256: %s\n",
			       name, driver, guest.kernel, guest.kernel_sha256, guest.initrd,
			       guest.initrd_sha256);
}

/* ---- probe ------------------------------------------------------------------------------ */

START_TEST(test_probe)
{
	g_autofree char *tcg = vmguest_tier(&guest, "vm", LIMITS);
	g_autofree char *hw = hw_tier("hw", "kvm");
	g_autofree char *hvf = hw_tier("mac", "hvf");
	g_autofree char *hyperv = hw_tier("win", "hyperv");
	g_autofree char *tiers = g_strconcat(tcg, hw, hvf, hyperv, NULL);
	g_autofree char *p = policy_with(tiers);
	cordon_context *ctx = testutil_context_from_text(p, "microvm.yaml");

	cordon_probe_report *rep = probe_settled(ctx, "vm");
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_KERNEL);
	ck_assert_msg(strstr(cordon_probe_report_reason(rep), "trial boot reached the agent"), "%s",
		      cordon_probe_report_reason(rep));
	cordon_probe_report_free(rep);

	rep = probe_settled(ctx, "hw");
	if (access("/sys/module/kvm_pvm", F_OK) == 0) {
		ck_assert(!cordon_probe_report_available(rep));
		ck_assert_str_eq(
			cordon_probe_report_reason(rep),
			"/dev/kvm is PVM: needs a guest kernel built with CONFIG_PVM_GUEST");
	} else if (cordon_probe_report_available(rep)) {
		/* hardware KVM: the same guest as a microvm */
		ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_MICROVM);
	} else {
		ck_assert_msg(strstr(cordon_probe_report_reason(rep), "/dev/kvm"), "%s",
			      cordon_probe_report_reason(rep));
	}
	cordon_probe_report_free(rep);

	rep = probe_settled(ctx, "mac");
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_str_eq(cordon_probe_report_reason(rep), "requires macOS Hypervisor.framework");
	cordon_probe_report_free(rep);
	rep = probe_settled(ctx, "win");
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_str_eq(cordon_probe_report_reason(rep),
			 "requires the Windows Hypervisor Platform");
	cordon_probe_report_free(rep);
	cordon_context_free(ctx);
}
END_TEST

/* ---- red team, in one guest --------------------------------------------------------------- */

START_TEST(test_redteam_in_guest)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);

	g_autofree char *net = sh_out(sb, "ls /sys/class/net");
	ck_assert_str_eq(net, "lo\n"); /* no network device at all */

	struct utsname u;
	ck_assert_int_eq(uname(&u), 0);
	g_autofree char *rel = sh_out(sb, "uname -r");
	g_strstrip(rel);
	ck_assert_msg(*rel && strcmp(rel, u.release) != 0, "guest kernel %s, host %s", rel,
		      u.release);

	/* a host canary: not in the guest's files, by name or by content */
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *canary = g_build_filename(dir, "canary", NULL);
	g_autofree char *secret = g_strdup_printf("cordon-canary-%d-%u", (int)getpid(),
						  g_random_int());
	ck_assert(g_file_set_contents(canary, secret, -1, NULL));
	g_autofree char *probe = g_strdup_printf("cat %s 2>&1; grep -rl %s /tmp /work /root /home "
						 "2>/dev/null; echo end",
						 canary, secret);
	g_autofree char *seen = sh_out(sb, probe);
	ck_assert_msg(!strstr(seen, secret), "%s", seen);
	ck_assert_msg(strstr(seen, "No such file") && g_str_has_suffix(seen, "end\n"), "%s", seen);
	testutil_rmtree(dir);

	/* no host process: the guest's /proc holds its own few, none of them us */
	g_autofree char *comms = sh_out(sb, "cat /proc/[0-9]*/comm");
	ck_assert_msg(!strstr(comms, "test-microvm") && !strstr(comms, "dockerd") &&
			      !strstr(comms, "qemu-system"),
		      "%s", comms);
	g_autofree char *n = sh_out(sb, "ls -d /proc/[0-9]* | wc -l");
	ck_assert_msg(atoi(n) < 64, "%s processes in the guest", n);

	/* nothing of the host's /dev: no KVM, no disk, no host terminal */
	g_autofree char *dev = sh_out(sb, "ls /dev");
	ck_assert_msg(!strstr(dev, "kvm") && !strstr(dev, "sda") && !strstr(dev, "nvme") &&
			      !strstr(dev, "vda") && !strstr(dev, "vhost") && !strstr(dev, "pts/"),
		      "%s", dev);
	/* the one virtio device holds the agent's port and the network channel's, which the
	 * work cannot open (the agent's multiplexer holds it, as root opened it) */
	g_autofree char *ports = sh_out(sb, "cat /sys/class/virtio-ports/*/name");
	ck_assert_str_eq(ports, "org.cordon.agent\norg.cordon.net\n");
	g_autofree char *vport = sh_out(sb, "for d in /sys/class/virtio-ports/*; do "
					    "grep -q net $d/name && cat /dev/${d##*/} </dev/null; "
					    "done 2>&1; echo end");
	ck_assert_msg(strstr(vport, "Permission denied") || strstr(vport, "busy"), "%s", vport);

	/* never root, no new privileges, no modules */
	g_autofree char *id = sh_out(sb, "id -u; grep NoNewPrivs /proc/self/status");
	ck_assert_msg(g_str_has_prefix(id, "1000\n") && strstr(id, "NoNewPrivs:\t1"), "%s", id);
	cordon_result *r = sh(sb, "insmod /lib/cordon/modules/00-virtio_ring.ko", 0);
	ck_assert_int_ne(cordon_result_exit_code(r), 0);
	cordon_result_free(r);

	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* ---- containment, in one guest ------------------------------------------------------------- */

START_TEST(test_containment)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);

	/* memory: the guest's RAM is the limit (the kernel keeps some for itself) */
	g_autofree char *mem = sh_out(sb,
				      "sed -n 's/MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo");
	ck_assert_msg(atoi(mem) > 100 * 1024 && atoi(mem) <= 192 * 1024, "MemTotal %s kB", mem);

	/* output: capped at the limit, the cut reported */
	cordon_result *r = sh(sb, "yes | head -c 100000", 0);
	size_t len;
	cordon_result_output(r, 1, &len);
	ck_assert_uint_eq(len, 4096);
	ck_assert(cordon_result_truncated(r, 1));
	cordon_result_free(r);

	/* a timeout kills the work; the guest serves on */
	gint64 t0 = g_get_monotonic_time();
	r = sh(sb, "sleep 30", 1000);
	ck_assert(cordon_result_timed_out(r));
	ck_assert_msg(g_get_monotonic_time() - t0 < 15 * G_USEC_PER_SEC,
		      "the timeout took too long");
	cordon_result_free(r);
	g_autofree char *ok = sh_out(sb, "echo ok");
	ck_assert_str_eq(ok, "ok\n");

	/* the scratch is a capped tmpfs: filling it fails inside, not on the host */
	r = sh(sb, "head -c 100000000 /dev/zero > /tmp/fill", 0);
	ck_assert_int_ne(cordon_result_exit_code(r), 0);
	cordon_result_free(r);

	/* a memory hog: the guest's OOM killer ends it, reported as out-of-memory */
	r = sh(sb, "awk 'BEGIN { s = \"x\"; while (1) s = s s }'", 60000);
	ck_assert_msg(cordon_result_oom_killed(r), "exit %d signal %d", cordon_result_exit_code(r),
		      cordon_result_signal(r));
	cordon_result_free(r);
	g_autofree char *alive = sh_out(sb, "echo alive");
	ck_assert_str_eq(alive, "alive\n");

	/* pids: a fork bomb meets RLIMIT_NPROC */
	r = sh(sb, "i=0; while [ $i -lt 200 ]; do sleep 20 & i=$((i+1)); done 2>&1; echo forked $i",
	       20000);
	const char *out = cordon_result_output(r, 1, &len);
	ck_assert_msg(strstr(out, "fork") || strstr(out, "Resource"), "%.*s", (int)len, out);
	cordon_result_free(r);

	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* ---- a terminal ------------------------------------------------------------------------ */

/* What the host's side of a terminal run sees: the output so far, and the moment the work
 * says it is ready for the resize and the typed line. */
typedef struct tty_host {
	GString *out;
	int master;    /* the caller's terminal (openpty): what is typed into it is the input */
	int resize_fd; /* resize records */
	bool fed;
} tty_host;

static int tty_output(void *user, int stream, const void *data, size_t len)
{
	tty_host *h = user;
	ck_assert_int_eq(stream, 1); /* a terminal has one output */
	g_string_append_len(h->out, data, (gssize)len);
	if (!h->fed && strstr(h->out->str, "READY")) {
		h->fed = true;
		const uint16_t size[2] = { 50, 132 };
		ck_assert_int_eq(write(h->resize_fd, size, sizeof(size)), sizeof(size));
		ck_assert_int_eq(write(h->master, "typed-line\n", 11), 11);
	}
	return 0;
}

/* -t through the library on the kvm tier: the work's stdin, stdout and stderr are a
 * terminal inside the guest, of the size asked; a resize reaches it; what is typed into the
 * caller's terminal reaches it; its exit status passes. */
START_TEST(test_tty)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	int master, slave, rz[2];
	ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
	struct termios raw;
	ck_assert_int_eq(tcgetattr(slave, &raw), 0);
	cfmakeraw(&raw); /* the caller's terminal passes bytes as typed, as the CLI's does */
	ck_assert_int_eq(tcsetattr(slave, TCSANOW, &raw), 0);
	ck_assert_int_eq(pipe2(rz, O_CLOEXEC), 0);
	tty_host h = { .out = g_string_new(NULL), .master = master, .resize_fd = rz[1] };

	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.flags = CORDON_RUN_TTY;
	o.stdin_fd = slave;
	o.tty_rows = 30;
	o.tty_cols = 100;
	o.tty_resize_fd = rz[0];
	o.timeout_ms = 60000;
	/* the resize is waited for (bounded): it travels apart from the typed bytes */
	const char *argv[] = {
		"/bin/sh", "-c",
		"[ -t 0 ] && [ -t 1 ] && echo ISTTY; tty; echo size1=$(stty size); echo READY; "
		"i=0; while [ \"$(stty size)\" != '50 132' ] && [ $i -lt 300 ]; do sleep 0.1; "
		"i=$((i+1)); done; echo size2=$(stty size); read a; echo got=$a; exit 7",
		NULL
	};
	cordon_result *r = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_stream(sb, argv, &o, tty_output, &h, &r, &err) == 0, "%s",
		      err ? cordon_error_get_message(err) : "?");
	const char *out = h.out->str;
	ck_assert_msg(strstr(out, "ISTTY"), "%s", out);
	ck_assert_msg(strstr(out, "/dev/pts/"), "%s", out);
	ck_assert_msg(strstr(out, "size1=30 100"), "%s", out);
	ck_assert_msg(strstr(out, "size2=50 132"), "%s", out);
	ck_assert_msg(strstr(out, "got=typed-line"), "%s", out);
	ck_assert_int_eq(cordon_result_exit_code(r), 7);
	cordon_result_free(r);

	/* the guest serves on: a plain run after the terminal one */
	g_autofree char *after = sh_out(sb, "[ -t 0 ] || echo notty");
	ck_assert_str_eq(after, "notty\n");
	g_string_free(h.out, TRUE);
	close(master);
	close(slave);
	close(rz[0]);
	close(rz[1]);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* ---- the image --------------------------------------------------------------------------- */

/* The same inputs give the same bytes: a second build pins the same sha256s. */
START_TEST(test_build_reproducible)
{
	vmguest again = { 0 };
	g_autofree char *why = vmguest_build(NULL, &again);
	ck_assert_msg(!why, "%s", why);
	ck_assert_str_eq(again.kernel_sha256, guest.kernel_sha256);
	ck_assert_str_eq(again.initrd_sha256, guest.initrd_sha256);
	vmguest_clear(&again);
}
END_TEST

/* ---- lifetime ------------------------------------------------------------------------------ */

START_TEST(test_close_leaves_no_qemu)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	g_autoptr(GArray) pids = my_qemus(getpid());
	ck_assert_uint_eq(pids->len, 1);
	pid_t qemu = g_array_index(pids, pid_t, 0);
	cordon_sandbox_close(sb);
	ck_assert_msg(gone_within(qemu, 1), "QEMU %d survived close", (int)qemu);
	cordon_context_free(ctx);
}
END_TEST

START_TEST(test_host_killed)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(p[0]);
		cordon_context *ctx = ctx_vm(NULL);
		cordon_sandbox *sb = open_vm(ctx);
		g_autoptr(GArray) pids = my_qemus(getpid());
		pid_t q = pids->len == 1 ? g_array_index(pids, pid_t, 0) : -1;
		if (write(p[1], &q, sizeof(q)) != sizeof(q))
			_exit(1);
		/* a run in flight when the host dies */
		sh(sb, "sleep 100", 0);
		_exit(0);
	}
	close(p[1]);
	pid_t qemu = -1;
	ck_assert_int_eq(read(p[0], &qemu, sizeof(qemu)), sizeof(qemu));
	close(p[0]);
	ck_assert_int_gt(qemu, 0);
	g_usleep(500 * 1000);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_msg(gone_within(qemu, 15), "QEMU %d survived its host", (int)qemu);
}
END_TEST

/* A QEMU that outlived its host (a guest kernel taken over could keep it running): gc kills
 * it by its dead owner's token, and leaves a live owner's alone. Idle QEMUs (-M none) stand
 * in for guests. */
static pid_t idle_qemu(const char *token)
{
	g_autofree char *name = g_strconcat("cordon-vm-", token, NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/usr/bin/qemu-system-x86_64", "/usr/bin/qemu-system-x86_64", "-M", "none",
		      "-nodefaults", "-display", "none", "-name", name, (char *)NULL);
		_exit(127);
	}
	return pid;
}

START_TEST(test_gc_kills_orphans_only)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		char tok[OWNER_TOKEN_MAX];
		_exit(owner_token_self(tok) == 0 && write(p[1], tok, sizeof(tok)) == sizeof(tok)
			      ? 0
			      : 1);
	}
	char dead[OWNER_TOKEN_MAX] = "";
	ck_assert_int_eq(read(p[0], dead, sizeof(dead)), sizeof(dead));
	waitpid(child, NULL, 0);
	close(p[0]);
	close(p[1]);
	char live[OWNER_TOKEN_MAX];
	ck_assert_int_eq(owner_token_self(live), 0);
	pid_t orphan = idle_qemu(dead), ours = idle_qemu(live);
	/* clone templates (clone.c) of a dead host and of ours */
	g_autofree char *dead_tmpl = g_strdup_printf("/dev/shm/cordon-vm-%s-gctest", dead);
	g_autofree char *live_tmpl = g_strdup_printf("/dev/shm/cordon-vm-%s-gctest", live);
	const char *tmpls[] = { dead_tmpl, live_tmpl };
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(g_mkdir(tmpls[i], 0700), 0);
		g_autofree char *ram = g_build_filename(tmpls[i], "ram", NULL);
		g_autofree char *state = g_build_filename(tmpls[i], "state", NULL);
		ck_assert(g_file_set_contents(ram, "r", 1, NULL));
		ck_assert(g_file_set_contents(state, "s", 1, NULL));
	}
	/* the network channel's listener directories (net.c), in each a listener's socket and a
	 * serve socket's */
	g_autofree char *dead_net = g_strdup_printf("/dev/shm/cordon-vm-%s-net-gctest", dead);
	g_autofree char *live_net = g_strdup_printf("/dev/shm/cordon-vm-%s-net-gctest", live);
	const char *nets[] = { dead_net, live_net };
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(g_mkdir(nets[i], 0700), 0);
		for (int k = 0; k < 2; k++) {
			struct sockaddr_un a = { .sun_family = AF_UNIX };
			snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s", nets[i], k ? "s1" : "1");
			int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
			close(fd);
		}
	}
	g_usleep(500 * 1000); /* both exec'd */
	cordon_context *ctx = ctx_vm(NULL);
	cordon_error *err = NULL;
	int removed = cordon_context_gc(ctx, &err);
	ck_assert_msg(removed >= 1, "gc: %d %s", removed, err ? cordon_error_get_message(err) : "");
	int st;
	ck_assert_int_eq(waitpid(orphan, &st, 0), orphan);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	ck_assert_int_eq(waitpid(ours, &st, WNOHANG), 0); /* still running */
	kill(ours, SIGKILL);
	waitpid(ours, NULL, 0);
	ck_assert_msg(!g_file_test(dead_tmpl, G_FILE_TEST_EXISTS), "a dead host's template stays");
	ck_assert_msg(g_file_test(live_tmpl, G_FILE_TEST_IS_DIR), "gc removed a live template");
	ck_assert_msg(!g_file_test(dead_net, G_FILE_TEST_EXISTS), "a dead host's listeners stay");
	ck_assert_msg(g_file_test(live_net, G_FILE_TEST_IS_DIR), "gc removed live listeners");
	testutil_rmtree(live_tmpl);
	testutil_rmtree(live_net);
	cordon_context_free(ctx);
}
END_TEST

/* ---- pool ---------------------------------------------------------------------------------- */

/* pool: 1 hands out a guest booted ahead (an open in well under a boot's time), each to one
 * sandbox only: the next has another kernel boot (boot_id) and none of its files; the
 * context's end ends the ready guests. */
START_TEST(test_pool)
{
	cordon_context *ctx = ctx_vm("    pool: 1\n" LIMITS);
	cordon_probe_report_free(probe_settled(ctx, "vm")); /* starts the pool */
	gint64 best = G_MAXINT64;
	g_autofree char *first_boot = NULL;
	for (int i = 0; i < 6 && best > 500 * 1000; i++) {
		g_usleep(5 * G_USEC_PER_SEC); /* a boot under TCG here: 2-5 s */
		gint64 t0 = g_get_monotonic_time();
		cordon_sandbox *sb = open_vm(ctx);
		gint64 took = g_get_monotonic_time() - t0;
		best = took < best ? took : best;
		g_autofree char *boot = sh_out(sb, "cat /proc/sys/kernel/random/boot_id; "
						   "cat mark 2>/dev/null; echo > mark");
		if (first_boot)
			ck_assert_msg(strcmp(first_boot, boot) != 0, "two sandboxes, one guest: %s",
				      boot);
		else
			first_boot = g_strdup(boot);
		ck_assert_msg(strlen(boot) == 37, "a guest kept another sandbox's file: %s", boot);
		cordon_sandbox_close(sb);
	}
	ck_assert_msg(best < 500 * 1000, "no pooled open: the fastest took %lld us",
		      (long long)best);
	g_usleep(6 * G_USEC_PER_SEC); /* refilled */
	cordon_context_free(ctx);
	g_autoptr(GArray) pids = my_qemus(getpid());
	ck_assert_msg(pids->len == 0, "%u QEMU left after the context's end", pids->len);
}
END_TEST

/* clone.c's memfd name and the path QEMU finds it at in its jail */
#define CLONE_RAM_NAME "cordon-template-ram"
#define CLONE_RAM_PATH "/cordon/template-ram"

/* ---- the agent's port ----------------------------------------------------------------------- */

/* The guest's agent may open its port before the guest kernel knows the host's end is open
 * (QEMU's PORT_OPEN is handled after the port's name): then a read is EOF and a write
 * blocks. The agent waits for the host (agent/guest.c, open_port); before, it dropped its
 * HELLO and ended at its first read, a flake seen under load. Made certain here: the tier's
 * own argv with the agent's chardev a listening socket the host connects to only once the
 * guest has long booted; the first frame must be the HELLO. */
START_TEST(test_agent_waits_for_host)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *sock = g_build_filename(dir, "agent", NULL);
	qemu_config c = { .binary = "/usr/bin/qemu-system-x86_64",
			  .arch = QEMU_ARCH_X86_64,
			  .accel = QEMU_ACCEL_TCG,
			  .machine = "microvm",
			  .memory_mib = 192,
			  .cpus = 1,
			  .kernel = guest.kernel,
			  .initrd = guest.initrd,
			  .tsc_khz = qemu_host_tsc_khz(),
			  .scratch_bytes = 1 << 20 };
	char **argv = qemu_argv(&c);
	g_autofree char *listen = g_strdup_printf("socket,id=agent,path=%s,server=on,wait=off",
						  sock);
	bool swapped = false;
	for (size_t i = 0; argv[i]; i++) {
		bool agent = strcmp(argv[i], "socket,id=agent,fd=" G_STRINGIFY(QEMU_AGENT_FD)) == 0;
		bool net = strcmp(argv[i], "socket,id=net,fd=" G_STRINGIFY(QEMU_NET_FD)) == 0;
		if (agent || net) { /* the network channel unused here: no socket behind it */
			free(argv[i]);
			argv[i] = strdup(agent ? listen : "null,id=net");
			swapped |= agent;
		}
	}
	ck_assert(swapped);
	GPid qemu;
	g_autoptr(GError) gerr = NULL;
	ck_assert_msg(g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &qemu,
				    &gerr),
		      "%s", gerr ? gerr->message : "?");
	xstrv_free(argv);
	g_usleep(10 * G_USEC_PER_SEC); /* booted and at its port: about 2 s quiet, 5 s loaded */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	g_strlcpy(a.sun_path, sock, sizeof(a.sun_path));
	int cr = connect(fd, (struct sockaddr *)&a, sizeof(a));
	uint8_t hdr[AGENT_FRAME_HEADER] = { 0 };
	ssize_t got = 0;
	if (cr == 0) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 30000) == 1)
			got = recv(fd, hdr, sizeof(hdr), MSG_WAITALL);
	}
	close(fd);
	kill(qemu, SIGKILL);
	waitpid(qemu, NULL, 0);
	g_spawn_close_pid(qemu);
	unlink(sock);
	rmdir(dir);
	ck_assert_msg(cr == 0, "the guest was gone before the host connected: %s", strerror(errno));
	ck_assert_msg(got == AGENT_FRAME_HEADER && hdr[0] == AGENT_FRAME_HELLO,
		      "the first frame is not the HELLO (%zd bytes, type 0x%02x)", got, hdr[0]);
}
END_TEST

/* ---- the jail around QEMU ------------------------------------------------------------- */

/* "Key:\tvalue" of /proc/PID/status. */
static char *status_field(pid_t pid, const char *key)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
	g_autofree char *text = NULL;
	ck_assert(g_file_get_contents(path, &text, NULL, NULL));
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_autofree char *prefix = g_strconcat(key, ":", NULL);
	for (size_t i = 0; lines[i]; i++)
		if (g_str_has_prefix(lines[i], prefix))
			return g_strstrip(g_strdup(lines[i] + strlen(prefix)));
	ck_abort_msg("no %s in %s", key, path);
	return NULL;
}

/* Every path under dir (the jailed QEMU's root seen from the host), relative to it. */
static void walk_root(const char *dir, const char *rel, GPtrArray *ret)
{
	g_autofree char *path = g_strconcat(dir, rel, NULL);
	GDir *d = g_dir_open(path, 0, NULL);
	const char *name;
	while (d && (name = g_dir_read_name(d))) {
		char *r = g_strconcat(rel, "/", name, NULL);
		g_ptr_array_add(ret, r);
		g_autofree char *full = g_strconcat(dir, r, NULL);
		if (g_file_test(full, G_FILE_TEST_IS_DIR) &&
		    !g_file_test(full, G_FILE_TEST_IS_SYMLINK) && strcmp(r, "/proc") != 0)
			walk_root(dir, r, ret);
	}
	if (d)
		g_dir_close(d);
}

/* What may be in the jail: the guest's two files, QEMU, its firmware, libraries; and the
 * directories that lead to them; a clone's (or template's) RAM link and the /proc it goes
 * through. */
static bool jail_may_hold(const char *p, bool is_dir, bool ram)
{
	if (ram && (strcmp(p, "/proc") == 0 || strcmp(p, "/cordon") == 0 ||
		    strcmp(p, CLONE_RAM_PATH) == 0))
		return true;
	const char *allowed[] = { guest.kernel, guest.initrd, "/usr/bin/qemu-system-x86_64",
				  "/usr/share/qemu" };
	for (size_t i = 0; i < G_N_ELEMENTS(allowed); i++) {
		g_autofree char *dir = g_strconcat(p, "/", NULL);
		if (strcmp(p, allowed[i]) == 0 || (is_dir && g_str_has_prefix(allowed[i], dir)))
			return true;
	}
	return g_str_has_prefix(p, "/usr/share/qemu") || g_str_has_prefix(p, "/lib") ||
	       g_str_has_prefix(p, "/usr/lib");
}

/* The jailed QEMU q (docs/tiers/microvm.md, "The jail"): its own unprivileged uid (as root:
 * one of the per-sandbox host ids), no capabilities, no new privileges, two seccomp filters
 * (the kernel tier's and QEMU's -sandbox), five namespaces of its own, a root with only what
 * it was given. With ram >= 0 (a descriptor of the template's memfd) it is a template
 * (shared) or a clone: its RAM path links to its fd 4, which is that memfd, through a /proc
 * of the jail's processes, mapped shared (the template's) or privately (a clone's). */
static void assert_jailed(pid_t q, int ram, bool shared)
{
	g_autofree char *uid = status_field(q, "Uid");
	unsigned r = 0, e = 0, sv = 0, fs = 0;
	ck_assert_int_eq(sscanf(uid, "%u %u %u %u", &r, &e, &sv, &fs), 4);
	ck_assert(r == e && e == sv && sv == fs);
	if (geteuid() == 0)
		ck_assert_msg(r >= 0x7fff0000u && r < 0x7ffffffeu, "QEMU runs as uid %u", r);
	else
		ck_assert_uint_eq(r, geteuid());
	g_autofree char *capeff = status_field(q, "CapEff");
	ck_assert_str_eq(capeff, "0000000000000000");
	g_autofree char *nnp = status_field(q, "NoNewPrivs");
	ck_assert_str_eq(nnp, "1");
	g_autofree char *seccomp = status_field(q, "Seccomp");
	ck_assert_str_eq(seccomp, "2");
	g_autofree char *filters = status_field(q, "Seccomp_filters");
	ck_assert_int_ge(atoi(filters), 2);
	const char *ns[] = { "mnt", "pid", "net", "ipc", "uts" };
	for (size_t i = 0; i < G_N_ELEMENTS(ns); i++) {
		g_autofree char *mine = g_strdup_printf("/proc/self/ns/%s", ns[i]);
		g_autofree char *its = g_strdup_printf("/proc/%d/ns/%s", q, ns[i]);
		g_autofree char *a = g_file_read_link(mine, NULL);
		g_autofree char *b = g_file_read_link(its, NULL);
		ck_assert_ptr_nonnull(b);
		ck_assert_msg(strcmp(a, b) != 0, "QEMU shares our %s namespace", ns[i]);
	}
	g_autofree char *root = g_strdup_printf("/proc/%d/root", q);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	walk_root(root, "", names);
	ck_assert_uint_gt(names->len, 3);
	bool kernel_seen = false, ram_seen = false;
	for (guint i = 0; i < names->len; i++) {
		const char *n = names->pdata[i];
		g_autofree char *full = g_strconcat(root, n, NULL);
		bool is_dir = g_file_test(full, G_FILE_TEST_IS_DIR) &&
			      !g_file_test(full, G_FILE_TEST_IS_SYMLINK);
		ck_assert_msg(jail_may_hold(n, is_dir, ram >= 0), "the jail holds %s", n);
		kernel_seen |= strcmp(n, guest.kernel) == 0;
		ram_seen |= strcmp(n, CLONE_RAM_PATH) == 0;
	}
	ck_assert(kernel_seen);
	ck_assert(ram_seen == (ram >= 0));
	if (ram < 0)
		return;
	g_autofree char *link_path = g_strconcat(root, CLONE_RAM_PATH, NULL);
	g_autofree char *link = g_file_read_link(link_path, NULL);
	ck_assert_str_eq(link, "/proc/self/fd/4");
	/* its /proc: its own processes and the self links only */
	g_autofree char *proc = g_strconcat(root, "/proc", NULL);
	GDir *d = g_dir_open(proc, 0, NULL);
	ck_assert_ptr_nonnull(d);
	const char *name;
	while ((name = g_dir_read_name(d)))
		ck_assert_msg(strspn(name, "0123456789") == strlen(name) ||
				      strcmp(name, "self") == 0 || strcmp(name, "thread-self") == 0,
			      "the jail's /proc holds %s", name);
	g_dir_close(d);
	/* its fd 4 is the template's memfd, mapped privately (copy-on-write), never shared */
	g_autofree char *fd4 = g_strdup_printf("/proc/%d/fd/4", q);
	struct stat a, b;
	ck_assert_int_eq(stat(fd4, &a), 0);
	ck_assert_int_eq(fstat(ram, &b), 0);
	ck_assert(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	g_autofree char *maps_path = g_strdup_printf("/proc/%d/maps", q);
	g_autofree char *maps = NULL;
	ck_assert(g_file_get_contents(maps_path, &maps, NULL, NULL));
	g_auto(GStrv) lines = g_strsplit(maps, "\n", -1);
	bool mapped = false;
	for (size_t i = 0; lines[i]; i++) {
		if (!strstr(lines[i], "memfd:" CLONE_RAM_NAME))
			continue;
		bool is_shared = strstr(lines[i], " rw-s ") || strstr(lines[i], " r--s ");
		ck_assert_msg(shared || !is_shared, "a clone maps the template shared: %s",
			      lines[i]);
		mapped |= strstr(lines[i], shared ? " rw-s " : " rw-p ") != NULL;
	}
	ck_assert_msg(mapped, "no %s mapping of the template in %s", shared ? "shared" : "private",
		      maps_path);
}

/* ---- copy-on-write clones --------------------------------------------------------------- */

/* The template's RAM: our descriptor of clone.c's memfd (the only one), or -1. */
static int template_ram(void)
{
	int found = -1;
	GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
	const char *name;
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *p = g_build_filename("/proc/self/fd", name, NULL);
		g_autofree char *l = g_file_read_link(p, NULL);
		if (l && g_str_has_prefix(l, "/memfd:" CLONE_RAM_NAME " ")) {
			ck_assert_msg(found < 0, "two template memfds");
			found = atoi(name);
		}
	}
	if (d)
		g_dir_close(d);
	return found;
}

/* The sealed template: what QEMU does with it (an O_RDWR open, a private writable mapping)
 * works, and nothing can change it: write(2), a shared writable mapping, truncation,
 * another seal. */
static void assert_sealed(int ram)
{
	int seals = fcntl(ram, F_GET_SEALS);
	int want = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
	ck_assert_msg((seals & want) == want, "seals 0x%x", seals);
	g_autofree char *p = g_strdup_printf("/proc/self/fd/%d", ram);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	errno = 0;
	ck_assert_int_eq(pwrite(fd, "x", 1, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_msg(m == MAP_FAILED && errno == EPERM, "a shared writable mapping");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ck_assert(m != MAP_FAILED);
	munmap(m, 4096);
	ck_assert_int_eq(ftruncate(fd, 4096), -1);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
	close(fd);
}

/* The template directories of this process in /dev/shm (clone.c names them by our token). */
static GPtrArray *my_templates(void)
{
	char tok[OWNER_TOKEN_MAX];
	ck_assert_int_eq(owner_token_self(tok), 0);
	g_autofree char *prefix = g_strdup_printf("cordon-vm-%s-", tok);
	GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
	GDir *d = g_dir_open("/dev/shm", 0, NULL);
	const char *name;
	while (d && (name = g_dir_read_name(d)))
		if (g_str_has_prefix(name, prefix))
			g_ptr_array_add(dirs, g_build_filename("/dev/shm", name, NULL));
	if (d)
		g_dir_close(d);
	return dirs;
}

static char *file_sha256(const char *path)
{
	g_autoptr(GMappedFile) m = g_mapped_file_new(path, FALSE, NULL);
	ck_assert_msg(m, "%s", path);
	return g_compute_checksum_for_data(G_CHECKSUM_SHA256,
					   (const guchar *)g_mapped_file_get_contents(m),
					   g_mapped_file_get_length(m));
}

static void assert_mode(const char *path, mode_t want)
{
	struct stat st;
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == want, "%s is %o, not %o", path,
		      (unsigned)(st.st_mode & 07777), (unsigned)want);
}

/* What a clone says of itself right after its open: the RNG through /dev/urandom and
 * getrandom(2) (a static helper copied in), its identity, its clock, its uid. */
static char **clone_facts(cordon_sandbox *sb)
{
	g_autofree char *helper = testutil_build_path("tests/helpers/vm-getrandom");
	g_autofree char *bin = NULL;
	gsize len = 0;
	ck_assert(g_file_get_contents(helper, &bin, &len, NULL));
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_write_file(sb, "gr", bin, len, &err) == 0, "%s",
		      err ? cordon_error_get_message(err) : "?");
	g_autofree char *out = sh_out(sb, "od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; echo; "
					  "chmod +x gr && ./gr; cat /etc/machine-id; hostname; "
					  "cat /proc/sys/kernel/random/boot_id; date +%s; id -u; "
					  "cat mark 2>/dev/null || echo none");
	char **f = g_strsplit(out, "\n", -1);
	ck_assert_msg(g_strv_length(f) >= 8, "%s", out);
	return f;
}

typedef struct probe_job {
	cordon_context *ctx;
	cordon_probe_report *rep;
} probe_job;

/* A probe in a thread (no check assertions off the test's own thread). */
static void *probe_thread(void *arg)
{
	probe_job *j = arg;
	for (int i = 0; i < 60 && !j->rep; i++) {
		cordon_error *err = NULL;
		if (cordon_context_probe_tier(j->ctx, testutil_tier_index(j->ctx, "vm"), &j->rep,
					      &err) < 0) {
			cordon_error_free(err);
			return NULL;
		}
		if (strstr(cordon_probe_report_reason(j->rep), "the probe timed out")) {
			cordon_probe_report_free(j->rep);
			j->rep = NULL;
			g_usleep(G_USEC_PER_SEC);
		}
	}
	return NULL;
}

/* Whether QEMU q is past its start: its own -sandbox filter on, its RAM mapped. */
static bool qemu_set_up(pid_t q)
{
	g_autofree char *sp = g_strdup_printf("/proc/%d/status", q);
	g_autofree char *mp = g_strdup_printf("/proc/%d/maps", q);
	g_autofree char *status = NULL, *maps = NULL;
	if (!g_file_get_contents(sp, &status, NULL, NULL) ||
	    !g_file_get_contents(mp, &maps, NULL, NULL))
		return false;
	const char *f = strstr(status, "Seccomp_filters:");
	return f && atoi(f + strlen("Seccomp_filters:")) >= 2 &&
	       strstr(maps, "memfd:" CLONE_RAM_NAME);
}

/* The template's QEMU while it boots (its argv says share=on), once set up, within 60 s, or
 * -1. */
static pid_t template_qemu(void)
{
	for (int i = 0; i < 3000; i++) {
		g_autoptr(GArray) pids = my_qemus(getpid());
		for (guint k = 0; k < pids->len; k++) {
			pid_t q = g_array_index(pids, pid_t, k);
			g_autofree char *p = g_strdup_printf("/proc/%d/cmdline", q);
			g_autofree char *cmd = NULL;
			gsize n = 0;
			if (!g_file_get_contents(p, &cmd, &n, NULL))
				continue;
			for (gsize j = 0; j + 1 < n; j++)
				cmd[j] = cmd[j] ? cmd[j] : ' ';
			if (strstr(cmd, "share=on") && qemu_set_up(q))
				return q;
		}
		g_usleep(20 * 1000);
	}
	return -1;
}
static cordon_sandbox *open_ws_ok(cordon_context *ctx, const char *trust, const char *ws);
static char *host_file(const char *ws, const char *rel);
static void put_host_file(const char *ws, const char *rel, const char *text);
static char *ws_tmpdir(void);

START_TEST(test_clones)
{
	cordon_context *ctx = ctx_vm("    clone: true\n" LIMITS);
	/* the probe's trial makes the template: its QEMU is jailed too, its RAM the memfd
	 * (not sealed yet: it is the booting guest's), mapped shared */
	probe_job job = { .ctx = ctx };
	pthread_t prober;
	ck_assert_int_eq(pthread_create(&prober, NULL, probe_thread, &job), 0);
	pid_t tq = template_qemu();
	ck_assert_msg(tq > 0, "no template QEMU seen");
	int boot_ram = template_ram();
	ck_assert_int_ge(boot_ram, 0);
	ck_assert_int_eq(fcntl(boot_ram, F_GET_SEALS), 0);
	assert_jailed(tq, boot_ram, true);
	pthread_join(prober, NULL);
	cordon_probe_report *rep = job.rep;
	ck_assert_ptr_nonnull(rep);
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	/* clones run in the jail: the claim of a cold guest of the tier (tcg: the jail's) */
	ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_KERNEL);
	cordon_probe_report_free(rep);
	g_autoptr(GPtrArray) dirs = my_templates();
	ck_assert_uint_eq(dirs->len, 1);
	const char *dir = g_ptr_array_index(dirs, 0);
	g_autofree char *state = g_build_filename(dir, "state", NULL);
	g_autofree char *no_ram = g_build_filename(dir, "ram", NULL);
	assert_mode(dir, 0700);
	assert_mode(state, 0400);
	ck_assert(!g_file_test(no_ram, G_FILE_TEST_EXISTS)); /* RAM is a memfd now */
	int ram_fd = template_ram();
	ck_assert_msg(ram_fd >= 0, "no template memfd");
	g_autofree char *ram = g_strdup_printf("/proc/self/fd/%d", ram_fd);
	assert_sealed(ram_fd);
	g_autofree char *ram_sum = file_sha256(ram);

	gint64 t0 = g_get_monotonic_time();
	cordon_sandbox *a = open_vm(ctx);
	gint64 took = g_get_monotonic_time() - t0;
	cordon_sandbox *b = open_vm(ctx);
	g_autoptr(GArray) qemus = my_qemus(getpid());
	ck_assert_uint_eq(qemus->len, 2);
	for (guint i = 0; i < qemus->len; i++) {
		g_autofree char *p = g_strdup_printf("/proc/%d/cmdline",
						     g_array_index(qemus, pid_t, i));
		g_autofree char *cmd = NULL;
		gsize n = 0;
		ck_assert(g_file_get_contents(p, &cmd, &n, NULL));
		for (gsize j = 0; j + 1 < n; j++)
			cmd[j] = cmd[j] ? cmd[j] : ' ';
		ck_assert_msg(strstr(cmd, "share=off") && strstr(cmd, "-incoming defer") &&
				      strstr(cmd, "mem-path=" CLONE_RAM_PATH ","),
			      "not a clone: %s", cmd);
		assert_jailed(g_array_index(qemus, pid_t, i), ram_fd, false);
	}
	g_auto(GStrv) fa = clone_facts(a);
	g_auto(GStrv) fb = clone_facts(b);
	/* boot_id too: the kernel makes it on its first read, which is after the reseed */
	for (int i = 0; i < 5; i++)
		ck_assert_msg(strcmp(fa[i], fb[i]) != 0, "siblings share line %d: %s", i, fa[i]);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(strlen(fa[i]) == 64, "not 32 random bytes: %s", fa[i]);
	ck_assert_uint_eq(strlen(fa[2]), 32);
	ck_assert_msg(g_str_has_prefix(fa[3], "cordon-"), "hostname %s", fa[3]);
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	ck_assert_msg(llabs(g_ascii_strtoll(fa[5], NULL, 10) - now) < 30, "clock %s, host %lld",
		      fa[5], (long long)now);
	ck_assert_str_eq(fa[6], "1000");
	ck_assert_str_eq(fa[7], "none");
	printf("# clone open %lld ms\n", (long long)(took / 1000));

	/* a file and dirtied memory in one clone: absent from the next, the template intact */
	g_autofree char *w = sh_out(a, "echo secret > mark && dd if=/dev/urandom of=/tmp/fill "
				       "bs=1M count=16 2>/dev/null && cat mark");
	ck_assert_str_eq(w, "secret\n");
	cordon_sandbox_close(a);
	cordon_sandbox_close(b);
	cordon_sandbox *c = open_vm(ctx);
	g_auto(GStrv) fc = clone_facts(c);
	ck_assert_str_eq(fc[7], "none");
	ck_assert_msg(strcmp(fc[2], fa[2]) != 0 && strcmp(fc[2], fb[2]) != 0, "machine id reused");
	cordon_sandbox_close(c);
	/* a clone carries a workspace too: copied in after its identity, back at close */
	g_autofree char *ws = ws_tmpdir();
	put_host_file(ws, "seed", "clone-ws\n");
	cordon_sandbox *d = open_ws_ok(ctx, "trusted", ws);
	g_autofree char *seed = sh_out(d, "cat /work/seed && echo back > /work/ret");
	ck_assert_str_eq(seed, "clone-ws\n");
	cordon_sandbox_close(d);
	g_autofree char *ret = host_file(ws, "ret");
	ck_assert_str_eq(ret ? ret : "(none)", "back\n");
	testutil_rmtree(ws);
	g_autofree char *ram_after = file_sha256(ram);
	ck_assert_str_eq(ram_sum, ram_after);
	assert_sealed(ram_fd);
	g_autoptr(GArray) left = my_qemus(getpid());
	ck_assert_msg(left->len == 0, "%u QEMU left after close", left->len);
	cordon_context_free(ctx);
	ck_assert(!g_file_test(dir, G_FILE_TEST_EXISTS));
	ck_assert_int_eq(template_ram(), -1); /* the tier's end closed it */
}
END_TEST

/* ---- the hvf guest path, on Linux ------------------------------------------------------------ */

/* The hvf family's guest (aarch64, the agent cross-built static, the virt machine) end to
 * end under qemu-system-aarch64 -accel tcg: what a Mac runs under hvf, minus the
 * accelerator. Skipped (a failure under CORDON_REQUIRE=all) without the cross toolchain. */
START_TEST(test_aarch64_hvf_path)
{
	g_autofree char *missing = vmguest_missing_aarch64();
	if (missing) {
		ck_assert_msg(g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") != 0,
			      "CORDON_REQUIRE=all: %s", missing);
		printf("# skipped: %s\n", missing);
		return;
	}
	vmguest arm = { 0 };
	g_autofree char *why = vmguest_build_aarch64(&arm);
	ck_assert_msg(!why, "%s", why);
	g_autofree char *tier = g_strdup_printf("  mac:\n    driver: hvf\n    accel: tcg\n"
						"    arch: aarch64\n    kernel: %s\n"
						"    kernel_sha256: %s\n    initrd: %s\n"
						"    initrd_sha256: %s\n" LIMITS,
						arm.kernel, arm.kernel_sha256, arm.initrd,
						arm.initrd_sha256);
	g_autofree char *p = g_strdup_printf(
		"cordon: 1\nplugins: {dir: %s, load: [hvf]}\n"
		"tiers:\n%s"
		"trust:\n  trusted: {require: process-jail, tiers: [mac]}\n",
		plugin_dir, tier);
	cordon_context *ctx = testutil_context_from_text(p, "microvm.yaml");
	cordon_probe_report *rep = probe_settled(ctx, "mac");
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	ck_assert_int_eq(cordon_probe_report_containment(rep), CORDON_CONTAINMENT_KERNEL);
	cordon_probe_report_free(rep);
	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_request_set_tier(req, "mac", NULL), 0);
	cordon_sandbox *sb = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_open(ctx, req, &sb, &err) == 0, "%s",
		      err ? cordon_error_get_message(err) : "?");
	cordon_request_free(req);
	g_autofree char *m = sh_out(sb, "uname -m; id -u; ls /sys/class/net");
	ck_assert_str_eq(m, "aarch64\n1000\nlo\n");
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "a/b.txt", "arm", 3, NULL), 0);
	void *data = NULL;
	size_t len = 0;
	ck_assert_int_eq(cordon_sandbox_read_file(sb, "a/b.txt", &data, &len, NULL), 0);
	ck_assert(len == 3 && memcmp(data, "arm", 3) == 0);
	free(data);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	vmguest_clear(&arm);
}
END_TEST

/* ---- failures ------------------------------------------------------------------------------ */

static cordon_probe_report *probe_policy(const char *tier_text, const char *tier)
{
	g_autofree char *p = policy_with(tier_text);
	cordon_context *ctx = testutil_context_from_text(p, "microvm.yaml");
	cordon_probe_report *rep = probe_settled(ctx, tier);
	cordon_context_free(ctx);
	return rep;
}

START_TEST(test_kernel_hash_mismatch)
{
	vmguest wrong = guest;
	wrong.kernel_sha256 = g_strdup(guest.kernel_sha256);
	wrong.kernel_sha256[0] = wrong.kernel_sha256[0] == '0' ? '1' : '0';
	g_autofree char *t = vmguest_tier(&wrong, "vm", LIMITS);
	g_free(wrong.kernel_sha256);
	cordon_probe_report *rep = probe_policy(t, "vm");
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_msg(strstr(cordon_probe_report_reason(rep), "has sha256") &&
			      strstr(cordon_probe_report_reason(rep), "the policy pins"),
		      "%s", cordon_probe_report_reason(rep));
	cordon_probe_report_free(rep);
}
END_TEST

START_TEST(test_qemu_missing)
{
	g_autofree char *t = vmguest_tier(&guest, "vm",
					  "    qemu: /nonexistent/qemu-system-x86_64\n" LIMITS);
	cordon_probe_report *rep = probe_policy(t, "vm");
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_str_eq(cordon_probe_report_reason(rep),
			 "QEMU (/nonexistent/qemu-system-x86_64) is not installed");
	cordon_probe_report_free(rep);
}
END_TEST

/* A guest whose /init is not the agent (busybox's init): the boot is bounded, and nothing
 * is left of it. */
START_TEST(test_agent_never_says_hello)
{
	vmguest mute = { 0 };
	g_autofree char *why = vmguest_build("/bin/busybox", &mute);
	ck_assert_msg(!why, "%s", why);
	g_autofree char *t = vmguest_tier(&mute, "vm", "    boot_timeout: 3s\n" LIMITS);
	gint64 t0 = g_get_monotonic_time();
	cordon_probe_report *rep = probe_policy(t, "vm");
	gint64 took = g_get_monotonic_time() - t0;
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_msg(strstr(cordon_probe_report_reason(rep),
			     "the guest's agent did not say hello within 3000 ms"),
		      "%s", cordon_probe_report_reason(rep));
	ck_assert_msg(took < 10 * G_USEC_PER_SEC, "the bounded boot took %lld us", (long long)took);
	cordon_probe_report_free(rep);
	g_autoptr(GArray) pids = my_qemus(getpid());
	ck_assert_uint_eq(pids->len, 0);
	vmguest_clear(&mute);
}
END_TEST

/* A guest whose kernel panics at boot (its /init exits at once: "Attempted to kill init"):
 * QEMU ends with it (panic=-1, -no-reboot), the probe says so at once instead of waiting out
 * the boot's bound, and nothing is left. */
START_TEST(test_guest_panics)
{
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *init = g_build_filename(dir, "init", NULL);
	ck_assert(g_file_set_contents(init, "#!/bin/busybox false\n", -1, NULL));
	ck_assert_int_eq(chmod(init, 0755), 0);
	vmguest dying = { 0 };
	g_autofree char *why = vmguest_build(init, &dying);
	ck_assert_msg(!why, "%s", why);
	g_autofree char *t = vmguest_tier(&dying, "vm", "    boot_timeout: 120s\n" LIMITS);
	gint64 t0 = g_get_monotonic_time();
	cordon_probe_report *rep = probe_policy(t, "vm");
	gint64 took = g_get_monotonic_time() - t0;
	ck_assert(!cordon_probe_report_available(rep));
	ck_assert_msg(g_str_has_prefix(cordon_probe_report_reason(rep),
				       "QEMU ended before the guest's agent said hello"),
		      "%s", cordon_probe_report_reason(rep));
	ck_assert_msg(took < 60 * G_USEC_PER_SEC, "the panicked boot took %lld us",
		      (long long)took);
	cordon_probe_report_free(rep);
	g_autoptr(GArray) pids = my_qemus(getpid());
	ck_assert_uint_eq(pids->len, 0);
	vmguest_clear(&dying);
	testutil_rmtree(dir);
}
END_TEST

/* The VM killed from outside while its sandbox is open: each run after says the guest is
 * gone (a terminal error, at once), close still works, and nothing is left. */
START_TEST(test_vm_killed_from_outside)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	g_autoptr(GArray) pids = my_qemus(getpid());
	ck_assert_uint_eq(pids->len, 1);
	pid_t qemu = g_array_index(pids, pid_t, 0);
	ck_assert_int_eq(kill(qemu, SIGKILL), 0);
	ck_assert(gone_within(qemu, 5));
	for (int i = 0; i < 2; i++) {
		const char *argv[] = { "true", NULL };
		cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
		o.timeout_ms = 30000;
		cordon_result *res = NULL;
		cordon_error *err = NULL;
		gint64 t0 = g_get_monotonic_time();
		ck_assert_int_lt(cordon_sandbox_run(sb, argv, &o, &res, &err), 0);
		ck_assert_msg(g_get_monotonic_time() - t0 < 5 * G_USEC_PER_SEC, "run %d waited", i);
		ck_assert_ptr_null(res);
		ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "vm_failed");
		cordon_error_free(err);
	}
	cordon_sandbox_close(sb);
	g_autoptr(GArray) after = my_qemus(getpid());
	ck_assert_uint_eq(after->len, 0);
	cordon_context_free(ctx);
}
END_TEST

/* /dev/kvm that the caller may not open: the hardware tier says exactly that (as nobody;
 * /dev/kvm is root's, or the kvm group's, on Debian). */
START_TEST(test_kvm_not_permitted)
{
	struct stat st;
	bool others_may = stat("/dev/kvm", &st) == 0 && (st.st_mode & 0006) == 0006;
	/* nobody reads the plugins there (root's, and writable by no one else still) */
	ck_assert_int_eq(chmod(plugin_dir, 0755), 0);
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(fds[0]);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		g_autofree char *vm = vmguest_tier(&guest, "vm", LIMITS);
		g_autofree char *hw = hw_tier("hw", "kvm");
		g_autofree char *tiers = g_strconcat(vm, hw, NULL);
		g_autofree char *p = policy_with(tiers);
		cordon_context *ctx = testutil_context_from_text(p, "microvm.yaml");
		cordon_probe_report *rep = probe_settled(ctx, "hw");
		const char *why = cordon_probe_report_reason(rep);
		ssize_t n = write(fds[1], why, strlen(why));
		_exit(n > 0 && !cordon_probe_report_available(rep) ? 0 : 4);
	}
	close(fds[1]);
	char why[512] = { 0 };
	ssize_t n = read(fds[0], why, sizeof(why) - 1);
	close(fds[0]);
	int status = 0;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 && n > 0, "status %d: %s",
		      status, why);
	if (others_may)
		ck_assert_msg(!strstr(why, "Permission denied"), "%s", why);
	else
		ck_assert_str_eq(why, "/dev/kvm does not open: Permission denied");
}
END_TEST

/* ---- workspaces, by copy (issue 12, item 4) ------------------------------------------------ */

static gint compare_strings(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define WS_TIER_EXTRA "    workspace_max_size: 12MiB\n    workspace_max_files: 200\n" LIMITS

static cordon_context *ctx_ws(const char *extra)
{
	g_autofree char *tier = vmguest_tier(&guest, "vm", extra);
	g_autofree char *p = g_strdup_printf(
		"cordon: 1\nplugins: {dir: %s, load: [kvm]}\ntiers:\n%s"
		"trust:\n  trusted: {require: process-jail, tiers: [vm]}\n"
		"  untrusted: {require: kernel, relax: true, tiers: [vm]}\n"
		"  semi-trusted: {require: kernel, relax: true, tiers: [vm]}\n"
		"rules:\n  - name: ro-workspace\n    when: {trust: semi-trusted}\n"
		"    require: {workspace: read-only}\n",
		plugin_dir, tier);
	return testutil_context_from_text(p, "microvm-ws.yaml");
}

/* A sandbox of trust on ws; NULL with *err when refused. */
static cordon_sandbox *open_ws(cordon_context *ctx, const char *trust, const char *ws,
			       cordon_error **err)
{
	cordon_request *req = cordon_request_new(trust);
	ck_assert_int_eq(cordon_request_set_tier(req, "vm", NULL), 0);
	ck_assert_int_eq(cordon_request_set_workspace(req, ws, NULL), 0);
	cordon_sandbox *sb = NULL;
	int r = cordon_sandbox_open(ctx, req, &sb, err);
	cordon_request_free(req);
	return r == 0 ? sb : NULL;
}

static cordon_sandbox *open_ws_ok(cordon_context *ctx, const char *trust, const char *ws)
{
	cordon_error *err = NULL;
	cordon_sandbox *sb = open_ws(ctx, trust, ws, &err);
	ck_assert_msg(sb, "open %s: %s: %s", trust, err ? cordon_error_get_code(err) : "?",
		      err ? cordon_error_get_message(err) : "?");
	return sb;
}

static char *host_file(const char *ws, const char *rel)
{
	g_autofree char *p = g_build_filename(ws, rel, NULL);
	char *text = NULL;
	return g_file_get_contents(p, &text, NULL, NULL) ? text : NULL;
}

/* A file in ws, its owner's (as root a copy runs as the workspace's owner). */
static void put_host_file(const char *ws, const char *rel, const char *text)
{
	g_autofree char *p = g_build_filename(ws, rel, NULL);
	ck_assert(g_file_set_contents(p, text, -1, NULL));
	struct stat st;
	ck_assert_int_eq(stat(ws, &st), 0);
	ck_assert_int_eq(chown(p, st.st_uid, st.st_gid), 0);
}

/* A writable workspace: as root, nobody's (a root-owned one is refused, workspace_forbidden). */
static char *ws_tmpdir(void)
{
	char *ws = testutil_tmpdir();
	if (geteuid() == 0)
		ck_assert_int_eq(chown(ws, 65534, 65534), 0);
	return ws;
}

/* The names in ws, sorted, space-joined (no staging directory may be left). */
static char *host_names(const char *ws)
{
	g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
	walk_root(ws, "", all);
	g_ptr_array_sort(all, compare_strings);
	g_ptr_array_add(all, NULL);
	return g_strjoinv(" ", (char **)all->pdata);
}

static void assert_no_qemu_left(void)
{
	g_autoptr(GArray) left = my_qemus(getpid());
	ck_assert_msg(left->len == 0, "%u QEMU left after close", left->len);
}

START_TEST(test_workspace_copy)
{
	cordon_context *ctx = ctx_ws(WS_TIER_EXTRA);
	cordon_probe_report *rep = probe_settled(ctx, "vm");
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	ck_assert_msg(strstr(cordon_probe_report_reason(rep),
			     "a workspace is copied in (at most 200 entries, 12582912 bytes)"),
		      "%s", cordon_probe_report_reason(rep));
	cordon_probe_report_free(rep);
	g_autofree char *ws = ws_tmpdir();
	put_host_file(ws, "in.txt", "from the host\n");
	g_autofree char *sub = g_build_filename(ws, "sub", NULL);
	ck_assert_int_eq(g_mkdir(sub, 0755), 0);
	ck_assert_int_eq(geteuid() == 0 ? chown(sub, 65534, 65534) : 0, 0);
	put_host_file(ws, "sub/deep.txt", "deep\n");
	g_autofree char *link = g_build_filename(ws, "etc-link", NULL);
	ck_assert_int_eq(symlink("/etc", link), 0);

	/* writable (trusted): seen inside; what the guest writes reaches the host at close */
	cordon_sandbox *sb = open_ws_ok(ctx, "trusted", ws);
	g_autofree char *seen = sh_out(sb, "cat /work/in.txt /work/sub/deep.txt; "
					   "test -e /work/etc-link || echo no-link; id -u");
	ck_assert_str_eq(seen, "from the host\ndeep\nno-link\n1000\n");
	g_autofree char *wrote = sh_out(
		sb, "echo guest > /work/out.txt && mkdir /work/newd && echo y > /work/newd/y && "
		    "echo changed > /work/in.txt && ln -s /etc /work/evil && mkfifo /work/fifo && "
		    "echo ok");
	ck_assert_str_eq(wrote, "ok\n");
	g_autofree char *before_close = host_file(ws, "out.txt");
	ck_assert_ptr_null(before_close); /* copy mode: nothing reaches the host before close */
	cordon_sandbox_close(sb);
	g_autofree char *out = host_file(ws, "out.txt"), *y = host_file(ws, "newd/y"),
			*in = host_file(ws, "in.txt");
	ck_assert_str_eq(out ? out : "(none)", "guest\n");
	ck_assert_str_eq(y ? y : "(none)", "y\n");
	ck_assert_str_eq(in ? in : "(none)", "changed\n");
	g_autofree char *names = host_names(ws);
	/* the guest's link and FIFO did not come back; the host's own link is untouched */
	ck_assert_str_eq(names, "/etc-link /in.txt /newd /newd/y /out.txt /sub /sub/deep.txt");
	ck_assert(g_file_test(link, G_FILE_TEST_IS_SYMLINK));
	assert_no_qemu_left();

	/* untrusted: copy-in only, and /work is read-only inside */
	sb = open_ws_ok(ctx, "untrusted", ws);
	g_autofree char *ro = sh_out(sb, "cat /work/out.txt; echo x > /work/new 2>/dev/null; "
					 "echo rc=$?; rm /work/in.txt 2>/dev/null; echo rm=$?");
	ck_assert_str_eq(ro, "guest\nrc=1\nrm=1\n");
	cordon_sandbox_close(sb);
	g_autofree char *names_ro = host_names(ws);
	ck_assert_str_eq(names_ro, names);

	/* a `workspace: read-only` rule (semi-trusted here): admitted, and the same as
	 * untrusted: copy-in only, read-only inside */
	sb = open_ws_ok(ctx, "semi-trusted", ws);
	g_autofree char *rule_ro = sh_out(sb, "cat /work/out.txt; echo x > /work/new 2>/dev/null; "
					      "echo rc=$?");
	ck_assert_str_eq(rule_ro, "guest\nrc=1\n");
	cordon_sandbox_close(sb);
	g_autofree char *names_rule = host_names(ws);
	ck_assert_str_eq(names_rule, names);

	/* a copy-out over the limit (13 MiB written, 12 MiB allowed) is refused whole: the
	 * small change beside it does not land either, and nothing on the host is lost */
	sb = open_ws_ok(ctx, "trusted", ws);
	g_autofree char *big = sh_out(sb, "echo lost > /work/in.txt && dd if=/dev/zero "
					  "of=/work/big bs=1M count=13 2>/dev/null; echo done");
	ck_assert_str_eq(big, "done\n");
	cordon_sandbox_close(sb);
	g_autofree char *names_big = host_names(ws), *in_big = host_file(ws, "in.txt");
	ck_assert_str_eq(names_big, names);
	ck_assert_str_eq(in_big, "changed\n");
	assert_no_qemu_left();

	/* as root, a workspace of root's or root's group is refused writable before any boot
	 * (the copy-out would plant root's files, as on the kernel tier); copy-in only is not */
	if (geteuid() == 0) {
		const uid_t owners[][2] = { { 0, 65534 }, { 65534, 0 } };
		for (size_t i = 0; i < G_N_ELEMENTS(owners); i++) {
			cordon_error *e = NULL;
			ck_assert_int_eq(chown(ws, owners[i][0], owners[i][1]), 0);
			ck_assert_ptr_null(open_ws(ctx, "trusted", ws, &e));
			ck_assert_cordon_error(e, CORDON_ERROR_FORBIDDEN, "workspace_forbidden");
			assert_no_qemu_left();
		}
		sb = open_ws_ok(ctx, "untrusted", ws);
		g_autofree char *root_ro = sh_out(sb, "cat /work/in.txt");
		ck_assert_str_eq(root_ro, "changed\n");
		cordon_sandbox_close(sb);
		ck_assert_int_eq(chown(ws, 65534, 65534), 0);
	}

	/* a copy-in over the limit is refused before any boot */
	for (int i = 0; i < 200; i++) {
		g_autofree char *n = g_strdup_printf("many-%03d", i);
		put_host_file(ws, n, "");
	}
	cordon_error *err = NULL;
	ck_assert_ptr_null(open_ws(ctx, "trusted", ws, &err));
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "vm_workspace_too_large");
	assert_no_qemu_left();
	testutil_rmtree(ws);
	cordon_context_free(ctx);
}
END_TEST

/* A compromised guest's copy-out (the agent built with a hostile pack: a valid file, then
 * a name with "..", a symbolic link to /etc, a 10 GiB claim or a device): each is refused
 * whole, and nothing on the host changes or appears, beside the workspace either. */
START_TEST(test_workspace_hostile_guest)
{
	g_autofree char *agent = testutil_build_path("tests/helpers/vm-hostile-agent");
	vmguest bad = { 0 };
	g_autofree char *why = vmguest_build(agent, &bad);
	ck_assert_msg(!why, "%s", why);
	g_autofree char *tier = vmguest_tier(&bad, "vm", WS_TIER_EXTRA);
	g_autofree char *p = g_strdup_printf(
		"cordon: 1\nplugins: {dir: %s, load: [kvm]}\n"
		"tiers:\n%s"
		"trust:\n  trusted: {require: process-jail, tiers: [vm]}\n",
		plugin_dir, tier);
	cordon_context *ctx = testutil_context_from_text(p, "microvm-hostile.yaml");
	cordon_probe_report_free(probe_settled(ctx, "vm"));
	g_autofree char *parent = testutil_tmpdir();
	g_autofree char *ws = g_build_filename(parent, "ws", NULL);
	ck_assert_int_eq(g_mkdir(ws, 0755), 0);
	ck_assert_int_eq(geteuid() == 0 ? chown(ws, 65534, 65534) : 0, 0);
	put_host_file(ws, "in.txt", "host\n");
	g_autofree char *before = host_names(parent);
	const char *modes[] = { "dotdot", "symlink", "big", "device" };
	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		cordon_sandbox *sb = open_ws_ok(ctx, "trusted", ws);
		g_autofree char *line = g_strdup_printf(
			"echo %s > /work/hostile && echo guest > /work/in.txt && echo ok",
			modes[i]);
		g_autofree char *out = sh_out(sb, line);
		ck_assert_str_eq(out, "ok\n");
		cordon_sandbox_close(sb);
		g_autofree char *after = host_names(parent), *in = host_file(ws, "in.txt");
		ck_assert_msg(strcmp(after, before) == 0, "%s: %s, was %s", modes[i], after,
			      before);
		ck_assert_str_eq(in, "host\n");
	}
	assert_no_qemu_left();
	testutil_rmtree(parent);
	cordon_context_free(ctx);
	vmguest_clear(&bad);
}
END_TEST

/* As root a copy runs as the workspace's owner (nobody here) with none of root's groups: a
 * file the owner cannot read refuses the copy-in before any boot; what comes back is the
 * owner's. */
START_TEST(test_workspace_owner)
{
	if (geteuid() != 0) {
		printf("# not root: the copy runs as the caller, no owner to take\n");
		return;
	}
	cordon_context *ctx = ctx_ws(WS_TIER_EXTRA);
	cordon_probe_report_free(probe_settled(ctx, "vm"));
	g_autofree char *ws = testutil_tmpdir();
	put_host_file(ws, "mine", "nobody's\n");
	g_autofree char *mine = g_build_filename(ws, "mine", NULL);
	g_autofree char *secret = g_build_filename(ws, "secret", NULL);
	put_host_file(ws, "secret", "root's\n");
	ck_assert_int_eq(chmod(secret, 0600), 0);
	ck_assert_int_eq(chown(ws, 65534, 65534), 0);
	ck_assert_int_eq(chown(mine, 65534, 65534), 0);
	cordon_error *err = NULL;
	ck_assert_ptr_null(open_ws(ctx, "trusted", ws, &err));
	ck_assert_msg(
		err && strstr(cordon_error_get_message(err), "as root it is read as its owner"),
		"%s", err ? cordon_error_get_message(err) : "?");
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "io_error");
	assert_no_qemu_left();
	/* a group of root's may read it (0640): the copy has none of root's groups (the test
	 * gives itself one; glibc's setgroups sets every thread's) */
	const gid_t roots = 4242;
	ck_assert_int_eq(setgroups(1, &roots), 0);
	ck_assert_int_eq(chown(secret, 0, roots), 0);
	ck_assert_int_eq(chmod(secret, 0640), 0);
	ck_assert_ptr_null(open_ws(ctx, "trusted", ws, &err));
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "io_error");
	assert_no_qemu_left();
	ck_assert_int_eq(setgroups(0, NULL), 0);
	ck_assert_int_eq(unlink(secret), 0);
	cordon_sandbox *sb = open_ws_ok(ctx, "trusted", ws);
	g_autofree char *out = sh_out(sb, "cat /work/mine && echo new > /work/made && echo ok");
	ck_assert_str_eq(out, "nobody's\nok\n");
	cordon_sandbox_close(sb);
	g_autofree char *made = g_build_filename(ws, "made", NULL);
	struct stat st;
	ck_assert_int_eq(stat(made, &st), 0);
	ck_assert_uint_eq(st.st_uid, 65534);
	ck_assert_uint_eq(st.st_gid, 65534);
	testutil_rmtree(ws);
	cordon_context_free(ctx);
}
END_TEST

/* What a copy-in costs: 100 files of 100 KiB (about 10 MiB) against an empty workspace,
 * open + close, one run of each (printed, never asserted). */
START_TEST(test_workspace_cost)
{
	cordon_context *ctx = ctx_ws(WS_TIER_EXTRA);
	cordon_probe_report_free(probe_settled(ctx, "vm"));
	g_autofree char *empty = ws_tmpdir(), *full = ws_tmpdir();
	g_autofree char *blob = g_malloc0(100 * 1024);
	for (int i = 0; i < 100; i++) {
		g_autofree char *p = g_strdup_printf("%s/f%03d", full, i);
		ck_assert(g_file_set_contents(p, blob, 100 * 1024, NULL));
		ck_assert_int_eq(geteuid() == 0 ? chown(p, 65534, 65534) : 0, 0);
	}
	for (int round = 0; round < 2; round++) {
		const char *ws = round ? full : empty;
		gint64 t0 = g_get_monotonic_time();
		cordon_sandbox *sb = open_ws_ok(ctx, "trusted", ws);
		gint64 t1 = g_get_monotonic_time();
		g_autofree char *n = sh_out(sb, "ls /work | wc -l");
		gint64 t2 = g_get_monotonic_time();
		cordon_sandbox_close(sb);
		gint64 t3 = g_get_monotonic_time();
		printf("# workspace %s: open %lld ms, close (copy-out) %lld ms, %s",
		       ws == full ? "100 files, 10 MiB" : "empty", (long long)(t1 - t0) / 1000,
		       (long long)(t3 - t2) / 1000, n);
		ck_assert_str_eq(n, round ? "100\n" : "0\n");
	}
	/* the same files one file operation each, and as one, into an open guest */
	cordon_sandbox *sb = open_ws_ok(ctx, "trusted", empty);
	g_autofree char *ten = g_malloc0(10u << 20);
	gint64 t0 = g_get_monotonic_time();
	for (int i = 0; i < 100; i++) {
		g_autofree char *p = g_strdup_printf("w%03d", i);
		ck_assert_int_eq(cordon_sandbox_write_file(sb, p, blob, 100 * 1024, NULL), 0);
	}
	gint64 t1 = g_get_monotonic_time();
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "one", ten, 10u << 20, NULL), 0);
	gint64 t2 = g_get_monotonic_time();
	printf("# write_file: 100 x 100 KiB %lld ms, 1 x 10 MiB %lld ms\n",
	       (long long)(t1 - t0) / 1000, (long long)(t2 - t1) / 1000);
	cordon_sandbox_close(sb);
	testutil_rmtree(empty);
	testutil_rmtree(full);
	cordon_context_free(ctx);
}
END_TEST

/* ---- the workspace over virtio-fs (workspace_share: virtiofs) -------------------------- */

#define VFS_TIER_EXTRA "    workspace_share: virtiofs\n" LIMITS

static void assert_no_virtiofsd_left(void)
{
	g_autoptr(GArray) left = my_children(getpid(), "(virtiofsd)");
	ck_assert_msg(left->len == 0, "%u virtiofsd left after close", left->len);
	g_autoptr(GDir) d = g_dir_open("/tmp", 0, NULL);
	for (const char *n; d && (n = g_dir_read_name(d));)
		ck_assert_msg(!g_str_has_prefix(n, "cordon-vfs-"), "/tmp/%s left", n);
}

/* Live both ways, as the owner, read-only for copy-in-only work; a link the guest reads is
 * resolved in the guest; root's ids are never the guest's; nothing left after close. */
START_TEST(test_workspace_virtiofs)
{
	if (geteuid() != 0) {
		printf("# not root: workspace_share: virtiofs is refused without root (probe)\n");
		return;
	}
	cordon_context *ctx = ctx_ws(VFS_TIER_EXTRA);
	cordon_probe_report *rep = probe_settled(ctx, "vm");
	ck_assert_msg(cordon_probe_report_available(rep), "%s", cordon_probe_report_reason(rep));
	ck_assert_msg(strstr(cordon_probe_report_reason(rep), "shared live by virtio-fs"), "%s",
		      cordon_probe_report_reason(rep));
	cordon_probe_report_free(rep);
	g_autofree char *ws = ws_tmpdir();
	put_host_file(ws, "hello", "from the host\n");
	g_autofree char *link = g_build_filename(ws, "shadow", NULL);
	ck_assert_int_eq(symlink("/etc/shadow", link), 0);

	cordon_sandbox *sb = open_ws_ok(ctx, "trusted", ws);
	g_autofree char *out = sh_out(sb, "cat /work/hello; id -u; stat -c %u:%g /work/hello; "
					  "echo made > /work/made && echo wrote; "
					  "cat /work/shadow >/dev/null 2>&1 || echo no-shadow; "
					  "chown 0:0 /work/made 2>/dev/null || echo no-chown; "
					  "chmod 4755 /work/made 2>/dev/null || echo no-setuid; "
					  "chmod 2755 /work/made 2>/dev/null || echo no-setgid");
	ck_assert_str_eq(out, "from the host\n1000\n1000:1000\nwrote\nno-shadow\nno-chown\n"
			      "no-setuid\nno-setgid\n");
	/* live: the host's write is seen at once, the guest's is on the host before close */
	g_autofree char *made = host_file(ws, "made");
	ck_assert_str_eq(made, "made\n");
	g_autofree char *made_path = g_build_filename(ws, "made", NULL);
	struct stat st;
	ck_assert_int_eq(stat(made_path, &st), 0);
	ck_assert_uint_eq(st.st_uid, 65534);
	ck_assert_uint_eq(st.st_gid, 65534);
	ck_assert_uint_eq(st.st_mode & (S_ISUID | S_ISGID), 0); /* virtiofsd's filter refused */
	put_host_file(ws, "live", "changed meanwhile\n");
	g_autofree char *live = sh_out(sb, "cat /work/live");
	ck_assert_str_eq(live, "changed meanwhile\n");
	g_autoptr(GArray) fsd = my_children(getpid(), "(virtiofsd)");
	ck_assert_uint_eq(fsd->len, 1);
	cordon_sandbox_close(sb);
	assert_no_qemu_left();
	assert_no_virtiofsd_left();

	/* untrusted: copy-in only, here the host's kernel's read-only mount */
	sb = open_ws_ok(ctx, "untrusted", ws);
	g_autofree char *ro = sh_out(sb, "cat /work/hello; (echo x > /work/ro) 2>&1 | "
					 "grep -c 'Read-only'; rm /work/hello 2>/dev/null || "
					 "echo kept");
	ck_assert_str_eq(ro, "from the host\n1\nkept\n");
	cordon_sandbox_close(sb);
	g_autofree char *ro_file = host_file(ws, "ro");
	ck_assert_ptr_null(ro_file);
	g_autofree char *still = host_file(ws, "hello");
	ck_assert_str_eq(still, "from the host\n");
	assert_no_virtiofsd_left();

	/* root's workspace: refused before the boot, saying why */
	g_autofree char *roots = testutil_tmpdir();
	cordon_error *err = NULL;
	ck_assert_ptr_null(open_ws(ctx, "untrusted", roots, &err));
	ck_assert_msg(err && strstr(cordon_error_get_message(err), "root's"), "%s",
		      err ? cordon_error_get_message(err) : "?");
	cordon_error_free(err);
	assert_no_qemu_left();
	assert_no_virtiofsd_left();
	testutil_rmtree(roots);
	testutil_rmtree(ws);
	cordon_context_free(ctx);
}
END_TEST

/* A host SIGKILLed mid-run with a virtio-fs workspace open leaves no virtiofsd and no QEMU. */
START_TEST(test_host_killed_virtiofsd_dies)
{
	if (geteuid() != 0)
		return;
	g_autofree char *ws = ws_tmpdir();
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(p[0]);
		cordon_context *ctx = ctx_ws(VFS_TIER_EXTRA);
		cordon_sandbox *sb = open_ws_ok(ctx, "trusted", ws);
		g_autoptr(GArray) q = my_qemus(getpid());
		g_autoptr(GArray) f = my_children(getpid(), "(virtiofsd)");
		pid_t pids[2] = { q->len == 1 ? g_array_index(q, pid_t, 0) : -1,
				  f->len == 1 ? g_array_index(f, pid_t, 0) : -1 };
		if (write(p[1], pids, sizeof(pids)) != sizeof(pids))
			_exit(1);
		sh(sb, "sleep 100", 0);
		_exit(0);
	}
	close(p[1]);
	pid_t pids[2] = { -1, -1 };
	ck_assert_int_eq(read(p[0], pids, sizeof(pids)), sizeof(pids));
	close(p[0]);
	g_usleep(300 * 1000);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_gt(pids[0], 0);
	ck_assert_int_gt(pids[1], 0);
	ck_assert_msg(gone_within(pids[0], 1), "QEMU %d survived its host", (int)pids[0]);
	ck_assert_msg(gone_within(pids[1], 1), "virtiofsd %d survived its host", (int)pids[1]);
	testutil_rmtree(ws);
}
END_TEST

/* What each way costs: open, a run that reads every file, close, for 100 files of 100 KiB,
 * copy against virtio-fs (printed, never asserted). */
START_TEST(test_workspace_virtiofs_cost)
{
	if (geteuid() != 0)
		return;
	g_autofree char *full = ws_tmpdir();
	g_autofree char *blob = g_malloc0(100 * 1024);
	for (int i = 0; i < 100; i++) {
		g_autofree char *p = g_strdup_printf("%s/f%03d", full, i);
		ck_assert(g_file_set_contents(p, blob, 100 * 1024, NULL));
		ck_assert_int_eq(chown(p, 65534, 65534), 0);
	}
	for (int round = 0; round < 4; round++) {
		bool vfs = round % 2;
		cordon_context *ctx = ctx_ws(vfs ? VFS_TIER_EXTRA : WS_TIER_EXTRA);
		cordon_probe_report_free(probe_settled(ctx, "vm"));
		gint64 t0 = g_get_monotonic_time();
		cordon_sandbox *sb = open_ws_ok(ctx, "trusted", full);
		gint64 t1 = g_get_monotonic_time();
		g_autofree char *n = sh_out(sb, "cat /work/* | wc -c");
		gint64 t2 = g_get_monotonic_time();
		cordon_sandbox_close(sb);
		gint64 t3 = g_get_monotonic_time();
		printf("# workspace 100 files, 10 MiB, %s: open %lld ms, read all %lld ms, close "
		       "%lld ms\n",
		       vfs ? "virtio-fs" : "copy", (long long)(t1 - t0) / 1000,
		       (long long)(t2 - t1) / 1000, (long long)(t3 - t2) / 1000);
		ck_assert_str_eq(n, "10240000\n");
		cordon_context_free(ctx);
	}
	testutil_rmtree(full);
}
END_TEST

/* ---- the jail around QEMU (issue 12, item 6) ------------------------------------------ */

START_TEST(test_qemu_jailed)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	g_autoptr(GArray) pids = my_qemus(getpid());
	ck_assert_uint_eq(pids->len, 1);
	pid_t q = g_array_index(pids, pid_t, 0);
	assert_jailed(q, -1, false);
	/* and the guest serves */
	g_autofree char *out = sh_out(sb, "echo jailed");
	ck_assert_str_eq(out, "jailed\n");
	cordon_sandbox_close(sb);
	ck_assert(gone_within(q, 1));
	cordon_context_free(ctx);
}
END_TEST

/* The host SIGKILLed while QEMU boots (the probe's trial) and while a run is in flight:
 * QEMU gets the parent-death signal, gone within a second (the guest's own EOF chain is not
 * needed, nor gc). */
static pid_t host_with_qemu(bool mid_run, pid_t *ret_qemu)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(p[0]);
		cordon_context *ctx = ctx_vm(NULL);
		if (!mid_run) {
			cordon_probe_report_free(probe_settled(ctx, "vm")); /* boots */
			_exit(0);
		}
		cordon_sandbox *sb = open_vm(ctx);
		g_autoptr(GArray) pids = my_qemus(getpid());
		pid_t qp = pids->len == 1 ? g_array_index(pids, pid_t, 0) : -1;
		if (write(p[1], &qp, sizeof(qp)) != sizeof(qp))
			_exit(1);
		sh(sb, "sleep 100", 0);
		_exit(0);
	}
	close(p[1]);
	pid_t qemu = -1;
	if (mid_run) {
		ck_assert_int_eq(read(p[0], &qemu, sizeof(qemu)), sizeof(qemu));
		g_usleep(300 * 1000);
	} else {
		for (int i = 0; i < 300 && qemu < 0;
		     i++) { /* the trial's QEMU, as soon as it runs */
			g_autoptr(GArray) pids = my_qemus(child);
			if (pids->len)
				qemu = g_array_index(pids, pid_t, 0);
			else
				g_usleep(20 * 1000);
		}
		g_usleep(200 * 1000); /* booting: long before the agent's hello under TCG */
	}
	close(p[0]);
	ck_assert_int_gt(qemu, 0);
	*ret_qemu = qemu;
	return child;
}

START_TEST(test_host_killed_qemu_dies)
{
	for (int mid_run = 0; mid_run < 2; mid_run++) {
		pid_t qemu = -1;
		pid_t child = host_with_qemu(mid_run, &qemu);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		ck_assert_msg(gone_within(qemu, 1), "QEMU %d survived its host by 1 s (%s)",
			      (int)qemu, mid_run ? "mid-run" : "mid-boot");
	}
}
END_TEST

/* ---- the network: loopback, serve, governed egress and services (issue 14) ---------------- */

/* Untrusted work's own servers: lo is up, a second process reaches the first. */
START_TEST(test_loopback_inside)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	g_autofree char *o = sh_out(sb, "nc -l -p 8080 >/tmp/got 2>&1 & sleep 1; "
					"echo over-loopback | nc -w 2 127.0.0.1 8080 2>&1; wait; "
					"cat /tmp/got");
	ck_assert_msg(strstr(o, "over-loopback"), "%s", o);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* A connection to a serve's address: "127.0.0.1:PORT" or "unix:/path". */
static int connect_to(const char *address)
{
	if (g_str_has_prefix(address, "unix:")) {
		struct sockaddr_un u = { .sun_family = AF_UNIX };
		ck_assert(g_strlcpy(u.sun_path, address + 5, sizeof(u.sun_path)) <
			  sizeof(u.sun_path));
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_eq(connect(fd, (struct sockaddr *)&u, sizeof(u)), 0);
		return fd;
	}
	const char *colon = strrchr(address, ':');
	ck_assert(g_str_has_prefix(address, "127.0.0.1:") && colon);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(colon + 1)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* An HTTP GET of / from address, the whole answer. */
static char *http_get(const char *address)
{
	int fd = connect_to(address);
	struct timeval tv = { 20, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	const char get[] = "GET / HTTP/1.0\r\n\r\n";
	ck_assert_int_eq(write(fd, get, sizeof(get) - 1), (ssize_t)sizeof(get) - 1);
	char buf[1024];
	size_t n = 0;
	for (ssize_t got;
	     n < sizeof(buf) - 1 && (got = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0;)
		n += (size_t)got;
	close(fd);
	return g_strndup(buf, n);
}

/* serve: the work's port reaches the host only through cordon's listener, never a host
 * program on the same port number; runs and file operations go on beside the server (a
 * second session over the network channel); the server's end closes the listener. */
START_TEST(test_serve)
{
	/* a host program on the port the work will use: never what cordon's address reaches */
	int decoy = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(8081),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	setsockopt(decoy, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(decoy, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(decoy, 8), 0);
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	const char *argv[] = { "sh", "-c",
			       "mkdir -p /tmp/www && echo from-the-guest >/tmp/www/index.html && "
			       "exec httpd -f -p 8081 -h /tmp/www",
			       NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 120000;
	cordon_serve *srv = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_serve(sb, argv, 8081, &o, &srv, &err) == 0, "serve: %s",
		      err ? cordon_error_get_message(err) : "?");
	g_autofree char *addr = cordon_serve_address(srv);
	ck_assert_msg(addr && g_str_has_prefix(addr, "127.0.0.1:") &&
			      strcmp(addr, "127.0.0.1:8081"),
		      "%s", addr ? addr : "(none)");
	for (int i = 0; i < 3; i++) {
		g_autofree char *page = http_get(addr);
		ck_assert_msg(strstr(page, "200 OK") && strstr(page, "from-the-guest"),
			      "connection %d: '%s'", i, page);
	}
	struct pollfd p = { decoy, POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, 0), 0); /* the host's program on 8081 saw nothing */
	/* beside the server: a run and a file operation */
	g_autofree char *beside = sh_out(sb, "echo beside-the-server");
	ck_assert_str_eq(beside, "beside-the-server\n");
	ck_assert_int_eq(cordon_sandbox_write_file(sb, "note", "n", 1, &err), 0);
	/* the work may kill the second session it runs in (its uid): that run fails, nothing
	 * else does */
	cordon_result *res = NULL;
	ck_assert_int_lt(cordon_sandbox_exec(sb, "kill -9 $PPID; sleep 30", NULL, &res, &err), 0);
	ck_assert_msg(strstr(cordon_error_get_message(err), "second session ended"), "%s",
		      cordon_error_get_message(err));
	cordon_error_free(err);
	err = NULL;
	g_autofree char *after = sh_out(sb, "echo after-the-kill");
	ck_assert_str_eq(after, "after-the-kill\n");
	g_autofree char *still = http_get(addr);
	ck_assert_msg(strstr(still, "from-the-guest"), "'%s'", still);
	ck_assert(cordon_serve_running(srv));
	ck_assert_int_eq(cordon_serve_stop(srv, &err), 0);
	cordon_serve_free(srv);
	/* the listener went with the server */
	const char *colon = strrchr(addr, ':');
	struct sockaddr_in b = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(colon + 1)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_lt(connect(fd, (struct sockaddr *)&b, sizeof(b)), 0);
	close(fd);
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	close(decoy);
}
END_TEST

/* serve on a unix socket on request (issue 14, item 2): "unix:/path" in a directory of mode
 * 0700 that only this user can enter, no TCP listener; the socket goes with the server. */
START_TEST(test_serve_unix)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	const char *argv[] = { "sh", "-c",
			       "mkdir -p /tmp/www && echo over-unix >/tmp/www/index.html && "
			       "exec httpd -f -p 8084 -h /tmp/www",
			       NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 120000;
	o.flags = CORDON_RUN_SERVE_UNIX;
	cordon_serve *srv = NULL;
	cordon_error *err = NULL;
	ck_assert_msg(cordon_sandbox_serve(sb, argv, 8084, &o, &srv, &err) == 0, "serve: %s",
		      err ? cordon_error_get_message(err) : "?");
	g_autofree char *addr = cordon_serve_address(srv);
	const char *path = testutil_assert_unix_listener(addr);
	for (int i = 0; i < 2; i++) {
		g_autofree char *page = http_get(addr);
		ck_assert_msg(strstr(page, "200 OK") && strstr(page, "over-unix"),
			      "connection %d: '%s'", i, page);
	}
	ck_assert_int_eq(cordon_serve_stop(srv, &err), 0);
	cordon_serve_free(srv);
	g_autofree char *dir = g_path_get_dirname(path);
	struct stat st;
	ck_assert_int_lt(lstat(path, &st), 0); /* the socket went with the server */
	cordon_sandbox_close(sb);
	ck_assert_int_lt(stat(dir, &st), 0); /* and the directory with the sandbox */
	cordon_context_free(ctx);
}
END_TEST

/* A port nothing listens on: serve fails with the reason once the server ends. */
START_TEST(test_serve_not_ready)
{
	cordon_context *ctx = ctx_vm(NULL);
	cordon_sandbox *sb = open_vm(ctx);
	const char *argv[] = { "sh", "-c", "sleep 2", NULL };
	cordon_run_options o = CORDON_RUN_OPTIONS_INIT;
	o.timeout_ms = 60000;
	cordon_serve *srv = NULL;
	cordon_error *err = NULL;
	ck_assert_int_lt(cordon_sandbox_serve(sb, argv, 8082, &o, &srv, &err), 0);
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "serve_not_ready");
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
}
END_TEST

/* A guest whose agent never starts the network channel (an image built before it, or a
 * compromised one: tests/helpers/vm-hostile-agent): serve is refused with the reason, within
 * the host's bound on the multiplexer's HELLO, and runs go on as before. */
START_TEST(test_guest_without_channel)
{
	g_autofree char *agent = testutil_build_path("tests/helpers/vm-hostile-agent");
	vmguest bad = { 0 };
	g_autofree char *why = vmguest_build(agent, &bad);
	ck_assert_msg(!why, "%s", why);
	g_autofree char *tier = vmguest_tier(&bad, "vm", LIMITS);
	g_autofree char *p = policy_with(tier);
	cordon_context *ctx = testutil_context_from_text(p, "microvm-nochannel.yaml");
	cordon_sandbox *sb = open_vm(ctx);
	const char *argv[] = { "sh", "-c", "exec httpd -f -p 8083 -h /tmp", NULL };
	cordon_serve *srv = NULL;
	cordon_error *err = NULL;
	gint64 t0 = g_get_monotonic_time();
	ck_assert_int_lt(cordon_sandbox_serve(sb, argv, 8083, NULL, &srv, &err), 0);
	ck_assert_msg(err && strstr(cordon_error_get_message(err), "no network channel"), "%s",
		      err ? cordon_error_get_message(err) : "(no error)");
	ck_assert_cordon_error(err, CORDON_ERROR_TERMINAL, "unsupported");
	ck_assert_int_lt(g_get_monotonic_time() - t0, 30 * G_USEC_PER_SEC);
	g_autofree char *o = sh_out(sb, "echo still-serves");
	ck_assert_str_eq(o, "still-serves\n");
	cordon_sandbox_close(sb);
	cordon_context_free(ctx);
	vmguest_clear(&bad);
}
END_TEST

static cordon_sandbox *open_vm_for_netcheck(cordon_context *ctx, const char *tier,
					    cordon_egress egress, bool grant)
{
	return open_vm_as(ctx, tier, "untrusted", egress, grant);
}

static char *policy_untrusted_vm(const char *head, const char *tier_extra, const char *tail)
{
	/* the services' search reads the whole guest: more output than LIMITS gives */
	g_autofree char *extra = g_strdup_printf(
		"    limits: {memory: 192MiB, pids: 64, output: 64MiB, wall: 120s}\n%s",
		tier_extra);
	g_autofree char *tier = vmguest_tier(&guest, "vm", extra);
	return g_strdup_printf(
		"cordon: 1\n%splugins: {dir: %s, load: [kvm, hvf, hyperv]}\n"
		"tiers:\n%s"
		"trust:\n  untrusted: {require: kernel, relax: true, tiers: [vm]}\n%s",
		head, plugin_dir, tier, tail);
}

/* Governed egress: cordon's proxy, reached through the agent's relay over the network
 * channel (tests/netcheck.c's checks, as on the container tiers). */
START_TEST(test_governed_egress)
{
	netcheck_egress_env g = { 0 };
	netcheck_egress_start(&g);
	g_autofree char *rules = netcheck_egress_rules(&g);
	g_autofree char *head = g_strdup_printf("audit: {path: %s}\n", g.audit);
	g_autofree char *text = policy_untrusted_vm(head, rules, "");
	cordon_context *ctx = testutil_context_from_text(text, "egress.yaml");
	netcheck_egress(&g, ctx, "vm", open_vm_for_netcheck);
	cordon_context_free(ctx);
	netcheck_egress_stop(&g);
	assert_no_qemu_left();
}
END_TEST

/* Services: the credential added on the host, never in the guest. */
START_TEST(test_services)
{
	netcheck_service_env sv = { 0 };
	netcheck_service_start(&sv);
	g_autofree char *svc = netcheck_service_policy(&sv);
	g_autofree char *text = policy_untrusted_vm("", "", svc);
	cordon_context *ctx = testutil_context_from_text(text, "services.yaml");
	netcheck_services(&sv, ctx, "vm", open_vm_for_netcheck);
	cordon_context_free(ctx);
	netcheck_service_stop(&sv);
	assert_no_qemu_left();
}
END_TEST

static void setup(void) { plugin_dir = testutil_plugin_dir("kvm", "hvf", "hyperv", NULL); }

static void teardown(void)
{
	testutil_rmtree(plugin_dir);
	g_clear_pointer(&plugin_dir, g_free); /* each case's setup makes another */
}

static Suite *microvm_suite(void)
{
	Suite *s = suite_create("microvm");
	TCase *tc = tcase_create("kvm-tcg");
	tcase_set_timeout(tc, 300);
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_probe);
	tcase_add_test(tc, test_redteam_in_guest);
	tcase_add_test(tc, test_containment);
	tcase_add_test(tc, test_build_reproducible);
	tcase_add_test(tc, test_close_leaves_no_qemu);
	tcase_add_test(tc, test_host_killed);
	tcase_add_test(tc, test_gc_kills_orphans_only);
	tcase_add_test(tc, test_pool);
	tcase_add_test(tc, test_aarch64_hvf_path);
	tcase_add_test(tc, test_kernel_hash_mismatch);
	tcase_add_test(tc, test_qemu_missing);
	tcase_add_test(tc, test_agent_never_says_hello);
	tcase_add_test(tc, test_qemu_jailed);
	tcase_add_test(tc, test_host_killed_qemu_dies);
	suite_add_tcase(s, tc);
	/* CK_RUN_CASE=port: the agent's port race alone */
	TCase *port = tcase_create("port");
	tcase_set_timeout(port, 120);
	tcase_add_unchecked_fixture(port, setup, teardown);
	tcase_add_test(port, test_agent_waits_for_host);
	suite_add_tcase(s, port);
	/* its own case: CK_RUN_CASE=workspace runs it alone */
	TCase *wsc = tcase_create("workspace");
	tcase_set_timeout(wsc, 600);
	tcase_add_unchecked_fixture(wsc, setup, teardown);
	tcase_add_test(wsc, test_workspace_copy);
	tcase_add_test(wsc, test_workspace_hostile_guest);
	tcase_add_test(wsc, test_workspace_owner);
	tcase_add_test(wsc, test_workspace_cost);
	tcase_add_test(wsc, test_workspace_virtiofs);
	tcase_add_test(wsc, test_host_killed_virtiofsd_dies);
	tcase_add_test(wsc, test_workspace_virtiofs_cost);
	suite_add_tcase(s, wsc);
	/* its own case: CK_RUN_CASE=clones runs it alone */
	TCase *clones = tcase_create("clones");
	tcase_set_timeout(clones, 300);
	tcase_add_unchecked_fixture(clones, setup, teardown);
	tcase_add_test(clones, test_clones);
	suite_add_tcase(s, clones);
	/* the guest's failures from outside (CK_RUN_CASE=failures) */
	TCase *fail = tcase_create("failures");
	tcase_set_timeout(fail, 300);
	tcase_add_unchecked_fixture(fail, setup, teardown);
	tcase_add_test(fail, test_guest_panics);
	tcase_add_test(fail, test_vm_killed_from_outside);
	tcase_add_test(fail, test_kvm_not_permitted);
	suite_add_tcase(s, fail);
	/* CK_RUN_CASE=network */
	TCase *net = tcase_create("network");
	tcase_set_timeout(net, 600);
	tcase_add_unchecked_fixture(net, setup, teardown);
	tcase_add_test(net, test_loopback_inside);
	tcase_add_test(net, test_serve);
	tcase_add_test(net, test_serve_unix);
	tcase_add_test(net, test_serve_not_ready);
	tcase_add_test(net, test_guest_without_channel);
	tcase_add_test(net, test_governed_egress);
	tcase_add_test(net, test_services);
	suite_add_tcase(s, net);
	TCase *tty = tcase_create("tty");
	tcase_set_timeout(tty, 300);
	tcase_add_unchecked_fixture(tty, setup, teardown);
	tcase_add_test(tty, test_tty);
	suite_add_tcase(s, tty);
	return s;
}

int main(void)
{
	bool required = g_strcmp0(g_getenv("CORDON_REQUIRE"), "all") == 0;
	g_autofree char *why = vmguest_missing();
	if (why) {
		if (required) {
			printf("Bail out! CORDON_REQUIRE=all: %s\n", why);
			return EXIT_FAILURE;
		}
		printf("1..0 # SKIP %s\n", why);
		return 0;
	}
	g_autofree char *failed = vmguest_build(NULL, &guest);
	if (failed) {
		printf("Bail out! %s\n", failed);
		return EXIT_FAILURE;
	}
	int r = testutil_run(microvm_suite());
	vmguest_clear(&guest);
	return r;
}
