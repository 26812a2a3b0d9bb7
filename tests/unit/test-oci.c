/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The OCI library's pure functions: image pinning, the container guarantees
 * (every refusal and its code), the hardened run argv (exactly), engine
 * output parsing, the helper protocol, and open taking the core's limits as final.
 */
#include "config.h"

#include "testutil.h"
#include "oci/driver.h"
#include "oci/oci.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define IMAGE "localhost:5000/cordon-busybox@" DIGEST

/* ---- images -------------------------------------------------------------------- */

static void assert_image_code(const char *ref, const char *code)
{
	oci_refusal r;
	int ret = oci_image_check(ref, &r);
	ck_assert_msg(ret == -EPERM, "%s: expected refusal %s", ref ? ref : "(null)", code);
	ck_assert_str_eq(r.code, code);
	ck_assert_uint_eq(r.cls, CORDON_PLUGIN_ERROR_FORBIDDEN);
}

START_TEST(test_image_pinned_accepted)
{
	ck_assert(oci_image_check(IMAGE, NULL) == 0);
	ck_assert(oci_image_check("busybox@" DIGEST, NULL) == 0);
	ck_assert(oci_image_check("docker.io/library/busybox:1.36@" DIGEST, NULL) == 0);
	ck_assert(oci_image_check("registry.example:443/a/b-c_d.e:Tag_1@" DIGEST, NULL) == 0);
}
END_TEST

START_TEST(test_image_refusals)
{
	assert_image_code(NULL, "container_image_invalid");
	assert_image_code("", "container_image_invalid");
	assert_image_code("busybox", "container_unpinned_image");
	assert_image_code("busybox:latest", "container_unpinned_image");
	assert_image_code("localhost:5000/cordon-busybox:ci", "container_unpinned_image");
	assert_image_code("busybox@md5:0123", "container_unpinned_image");
	assert_image_code("busybox@sha256:0123", "container_image_invalid");
	assert_image_code(
		"busybox@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		"container_image_invalid");
	assert_image_code("busybox@" DIGEST "0", "container_image_invalid");
	/* anything an engine could read as a flag, or that is not a name */
	assert_image_code("--privileged@" DIGEST, "container_image_invalid");
	assert_image_code("-v@" DIGEST, "container_image_invalid");
	assert_image_code("busy box@" DIGEST, "container_image_invalid");
	assert_image_code("Busybox@" DIGEST, "container_image_invalid");
	assert_image_code("a//b@" DIGEST, "container_image_invalid");
	assert_image_code("a/@" DIGEST, "container_image_invalid");
	assert_image_code("@" DIGEST, "container_image_invalid");
	assert_image_code("busybox:@" DIGEST, "container_image_invalid");
}
END_TEST

/* ---- guarantees -------------------------------------------------------------------- */

static oci_spec base_spec(void)
{
	oci_spec s = { .image = IMAGE, .trust = 3, .egress = CORDON_PLUGIN_EGRESS_DENY };
	s.limits.set = 1u << CORDON_PLUGIN_LIMIT_MEMORY;
	s.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 256ull << 20;
	return s;
}

static void assert_refused(const oci_spec *s, const char *code)
{
	oci_refusal r = { 0 };
	int ret = oci_guarantees_check(s, &r);
	ck_assert_msg(ret == -EPERM, "expected refusal %s, got %d", code, ret);
	ck_assert_str_eq(r.code, code);
	ck_assert_uint_eq(r.cls, CORDON_PLUGIN_ERROR_FORBIDDEN);
	ck_assert(r.message[0]);
}

static void assert_ok(const oci_spec *s)
{
	oci_refusal r = { 0 };
	int ret = oci_guarantees_check(s, &r);
	ck_assert_msg(ret == 0, "refused: %s: %s", r.code, r.message);
}

START_TEST(test_guarantees_base_ok)
{
	oci_spec s = base_spec();
	assert_ok(&s);
}
END_TEST

START_TEST(test_guarantees_image)
{
	oci_spec s = base_spec();
	s.image = "localhost:5000/cordon-busybox:ci";
	assert_refused(&s, "container_unpinned_image");
	s.image = NULL;
	assert_refused(&s, "container_image_invalid");
}
END_TEST

START_TEST(test_guarantees_memory_cap)
{
	oci_spec s = base_spec();
	s.limits.set = 0;
	assert_refused(&s, "container_no_memory_cap");
	s.limits.set = 1u << CORDON_PLUGIN_LIMIT_MEMORY;
	s.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 0;
	assert_refused(&s, "container_no_memory_cap");
	s.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 1 << 20;
	assert_refused(&s, "container_limit_invalid");
	s = base_spec();
	s.limits.set |= 1u << CORDON_PLUGIN_LIMIT_PIDS;
	s.limits.value[CORDON_PLUGIN_LIMIT_PIDS] = 0;
	assert_refused(&s, "container_limit_invalid");
	s = base_spec();
	s.limits.set |= 1u << CORDON_PLUGIN_LIMIT_CPU_MILLI;
	assert_refused(&s, "container_limit_invalid");
}
END_TEST

START_TEST(test_guarantees_mounts)
{
	oci_spec s = base_spec();
	oci_mount m = { "/srv/models", "/models", true };
	s.mounts = &m;
	s.n_mounts = 1;
	assert_ok(&s);

	/* writable host mounts: only below untrusted */
	m.readonly = false;
	assert_refused(&s, "container_mount_writable");
	s.trust = 0; /* unknown trust fails closed */
	assert_refused(&s, "container_mount_writable");
	s.trust = 99;
	assert_refused(&s, "container_mount_writable");
	s.trust = 2;
	assert_ok(&s);
	s.trust = 1;
	assert_ok(&s);
	s.trust = 3;
	m.readonly = true;

	static const char *const bad_paths[] = { "relative/dir", "/a,b", "/a=b",
						 "/a/../etc",    "/..",  "/a/..",
						 "/line\nbreak", "",     NULL };
	for (size_t i = 0; bad_paths[i]; i++) {
		m = (oci_mount){ bad_paths[i], "/models", true };
		assert_refused(&s, "container_mount_path_invalid");
		m = (oci_mount){ "/srv/models", bad_paths[i], true };
		assert_refused(&s, "container_mount_path_invalid");
	}
	m = (oci_mount){ NULL, "/models", true };
	assert_refused(&s, "container_mount_path_invalid");
	/* "..." and "a..b" are names, not parent references */
	m = (oci_mount){ "/srv/a..b/...", "/models", true };
	assert_ok(&s);

	static const char *const bad_sources[] = { "/",
						   "/proc",
						   "/proc/1/root",
						   "/sys",
						   "/dev/sda",
						   "/run",
						   "/var/run/docker.sock",
						   "/run/podman/podman.sock",
						   "/home/u/agent.sock",
						   "/var/lib/docker",
						   NULL };
	for (size_t i = 0; bad_sources[i]; i++) {
		m = (oci_mount){ bad_sources[i], "/models", true };
		assert_refused(&s, "container_mount_forbidden");
	}
	static const char *const bad_targets[] = { "/",    "/proc",          "/sys/fs",
						   "/dev", "/.cordon-agent", NULL };
	for (size_t i = 0; bad_targets[i]; i++) {
		m = (oci_mount){ "/srv/models", bad_targets[i], true };
		assert_refused(&s, "container_mount_forbidden");
	}
	/* /procfs is not /proc */
	m = (oci_mount){ "/procfs", "/devices", true };
	assert_ok(&s);
}
END_TEST

START_TEST(test_guarantees_network)
{
	oci_spec s = base_spec();
	s.network = "none";
	assert_ok(&s);
	static const char *const reserved[] = { "host",
						"bridge",
						"default",
						"container:abc",
						"ns:/proc/1/ns/net",
						"slirp4netns",
						"pasta",
						"private",
						"-x",
						"a b",
						NULL };
	for (size_t i = 0; reserved[i]; i++) {
		s.network = reserved[i];
		s.egress = CORDON_PLUGIN_EGRESS_GOVERNED;
		assert_refused(&s, "container_network_forbidden");
		s.egress = CORDON_PLUGIN_EGRESS_DENY;
		assert_refused(&s, "container_network_forbidden");
	}
	/* egress denied: no network at all */
	s.network = "cordon-governed";
	s.egress = CORDON_PLUGIN_EGRESS_DENY;
	assert_refused(&s, "container_network_forbidden");
	/* governed: only through a named network */
	s.egress = CORDON_PLUGIN_EGRESS_GOVERNED;
	assert_ok(&s);
	s.network = NULL;
	assert_refused(&s, "container_network_forbidden");
	/* governed by cordon's proxy (the tier's egress: rules): --network none only, never
	 * a named network beside it (a second route out) */
	s.egress_proxied = true;
	assert_ok(&s);
	s.network = "cordon-governed";
	assert_refused(&s, "container_network_forbidden");
	s.network = NULL;
	s.publish_port = 8080; /* nothing can be published without a network */
	assert_refused(&s, "container_publish_invalid");
	s.publish_port = 0;
	s.egress_proxied = false;
	/* open egress is never run */
	s.egress = CORDON_PLUGIN_EGRESS_ALLOW;
	assert_refused(&s, "container_network_forbidden");
	s.network = "cordon-governed";
	assert_refused(&s, "container_network_forbidden");
	s.egress = 77;
	assert_refused(&s, "container_network_forbidden");
}
END_TEST

START_TEST(test_guarantees_publish)
{
	oci_spec s = base_spec();
	s.publish_port = 8080;
	assert_refused(&s, "container_publish_invalid");
	s.egress = CORDON_PLUGIN_EGRESS_GOVERNED;
	s.network = "cordon-governed";
	assert_ok(&s);
}
END_TEST

START_TEST(test_guarantees_user)
{
	oci_spec s = base_spec();
	static const char *const ok[] = { "65534:65534", "1000:1000", "1:2", NULL };
	for (size_t i = 0; ok[i]; i++) {
		s.user = ok[i];
		assert_ok(&s);
	}
	/* root in any spelling, and names (the image's passwd would resolve them) */
	static const char *const bad[] = {
		"0", "00", "root", "0:0", "1000:0", "0:1000", "00:5", "5:000", "root:root",
		"nobody", "nobody:nogroup", "1000", "1000:", ":1000", "", "-u", "1:2:3", "a b",
		/* past 32 bits, or 2^32 - 1 ("no id"): could wrap to root */
		"4294967296:65534", "65534:4294967296", "4294967295:1", "18446744073709551616:1",
		NULL
	};
	for (size_t i = 0; bad[i]; i++) {
		s.user = bad[i];
		assert_refused(&s, "container_root_user");
	}
}
END_TEST

START_TEST(test_guarantees_env_ulimits_runtime_names)
{
	oci_spec s = base_spec();
	const char *env_ok[] = { "A=1", "_X=", "PATH=/bin:/usr/bin", "K=v=w", NULL };
	s.env = env_ok;
	assert_ok(&s);
	const char *env_bad[][2] = { { "=x", NULL },
				     { "1A=x", NULL },
				     { "A-B=x", NULL },
				     { "NOEQ", NULL },
				     { "A=line\nbreak", NULL } };
	for (size_t i = 0; i < sizeof(env_bad) / sizeof(env_bad[0]); i++) {
		s.env = env_bad[i];
		assert_refused(&s, "container_env_invalid");
	}
	s = base_spec();
	const char *ul_ok[] = { "nofile=1024:1024", "nproc=512", NULL };
	s.ulimits = ul_ok;
	assert_ok(&s);
	const char *ul_bad[][2] = { { "nofile=2048:1024", NULL }, { "bogus=1", NULL },
				    { "nofile", NULL },           { "nofile=-1", NULL },
				    { "nofile=1:x", NULL },       { "nofile=1,2", NULL } };
	for (size_t i = 0; i < sizeof(ul_bad) / sizeof(ul_bad[0]); i++) {
		s.ulimits = ul_bad[i];
		assert_refused(&s, "container_ulimit_invalid");
	}
	/* a limit and a ulimit of the same name: one would silently win */
	s.ulimits = ul_ok;
	s.limits.set |= 1u << CORDON_PLUGIN_LIMIT_NOFILE;
	s.limits.value[CORDON_PLUGIN_LIMIT_NOFILE] = 64;
	assert_refused(&s, "container_ulimit_conflict");
	const char *ul_fsize[] = { "fsize=4096", NULL };
	s.ulimits = ul_fsize;
	assert_ok(&s);
	s.limits.set |= 1u << CORDON_PLUGIN_LIMIT_FSIZE;
	s.limits.value[CORDON_PLUGIN_LIMIT_FSIZE] = 4096;
	assert_refused(&s, "container_ulimit_conflict");
	/* under gVisor the pids limit is nproc: a tier's nproc would undo it */
	s = base_spec();
	const char *ul_nproc[] = { "nproc=4096", NULL };
	s.ulimits = ul_nproc;
	assert_ok(&s);
	s.pids_in_sandbox = true;
	assert_refused(&s, "container_ulimit_conflict");
	s = base_spec();
	static const char *const rt_ok[] = { "runc",           "runsc",
					     "crun",           "io.containerd.runc.v2",
					     "/usr/bin/runsc", NULL };
	for (size_t i = 0; rt_ok[i]; i++) {
		s.runtime = rt_ok[i];
		assert_ok(&s);
	}
	static const char *const rt_bad[] = {
		"-x", "run c", "rel/path", "/a/../b", "/a,b", "", NULL
	};
	for (size_t i = 0; rt_bad[i]; i++) {
		s.runtime = rt_bad[i];
		assert_refused(&s, "container_runtime_invalid");
	}
	s = base_spec();
	s.name = "-rm";
	assert_refused(&s, "container_name_invalid");
	s.name = "cordon-0a";
	const char *labels_bad[] = { "Key=v", NULL };
	s.labels = labels_bad;
	assert_refused(&s, "container_name_invalid");
	const char *labels_ok[] = { "cordon.managed=1", "cordon.owner=a:1:2", NULL };
	s.labels = labels_ok;
	assert_ok(&s);
	s.workdir = "relative";
	assert_refused(&s, "container_mount_path_invalid");
}
END_TEST

/* ---- the hardened argv ---------------------------------------------------------------- */

static void assert_argv(char **got, const char *const *want)
{
	size_t i = 0;
	for (; want[i]; i++) {
		ck_assert_msg(got[i] != NULL, "argv ends early at %zu (want %s)", i, want[i]);
		ck_assert_msg(strcmp(got[i], want[i]) == 0, "argv[%zu] = '%s', want '%s'", i,
			      got[i], want[i]);
	}
	ck_assert_msg(got[i] == NULL, "argv has extra '%s' at %zu", got[i] ? got[i] : "", i);
	xstrv_free(got);
}

START_TEST(test_argv_minimal)
{
	oci_spec s = base_spec();
	const char *want[] = {
		"run",
		"--rm",
		"--pull",
		"never",
		"--read-only",
		"--cap-drop",
		"ALL",
		"--security-opt",
		"no-new-privileges",
		"--user",
		"65534:65534",
		"--memory",
		"268435456",
		"--memory-swap",
		"268435456",
		"--pids-limit",
		"256",
		"--network",
		"none",
		"--tmpfs",
		"/tmp:rw,noexec,nosuid,nodev,size=67108864,mode=1777",
		"--",
		IMAGE,
		NULL,
	};
	assert_argv(oci_run_argv(&s), want);
}
END_TEST

START_TEST(test_argv_session)
{
	oci_spec s = base_spec();
	s.limits.set |= 1u << CORDON_PLUGIN_LIMIT_CPU_MILLI | 1u << CORDON_PLUGIN_LIMIT_PIDS |
			1u << CORDON_PLUGIN_LIMIT_NOFILE | 1u << CORDON_PLUGIN_LIMIT_FSIZE;
	s.limits.value[CORDON_PLUGIN_LIMIT_CPU_MILLI] = 1500;
	s.limits.value[CORDON_PLUGIN_LIMIT_PIDS] = 64;
	s.limits.value[CORDON_PLUGIN_LIMIT_NOFILE] = 512;
	s.limits.value[CORDON_PLUGIN_LIMIT_FSIZE] = 1048576;
	oci_mount m[2] = { { "/srv/ws", "/work", true },
			   { "/usr/libexec/h", "/.cordon-agent", true } };
	s.mounts = m;
	s.n_mounts = 2;
	const char *env[] = { "ZED=1", "A_B=2", "A=3", "PATH=/bin", NULL };
	s.env = env;
	const char *ulimits[] = { "core=0", NULL };
	s.ulimits = ulimits;
	const char *labels[] = { "cordon.managed=1", "cordon.session=cordon-ab", NULL };
	s.labels = labels;
	const char *extra[] = { "--read-only-tmpfs=false", NULL };
	s.extra = extra;
	const char *cmd[] = { "idle", NULL };
	s.command = cmd;
	s.name = "cordon-ab";
	s.user = "1000:1000";
	s.runtime = "runsc";
	s.scratch_size = 1 << 20;
	s.tmpfs_owner = "U";
	s.pids_in_sandbox = true;
	s.root_tmpfs = true;
	s.entrypoint = "/.cordon-agent";
	s.workdir = "/work";
	s.detach = true;
	/* the plugin's own helper mount targets a reserved path: checked apart */
	s.n_mounts = 1;
	assert_ok(&s);
	s.n_mounts = 2;
	const char *want[] = {
		"run",
		"-d",
		"--rm",
		"--pull",
		"never",
		"--name",
		"cordon-ab",
		"--label",
		"cordon.managed=1",
		"--label",
		"cordon.session=cordon-ab",
		"--read-only",
		"--cap-drop",
		"ALL",
		"--security-opt",
		"no-new-privileges",
		"--user",
		"1000:1000",
		"--memory",
		"268435456",
		"--memory-swap",
		"268435456",
		/* gVisor: 64 tasks of the work, 16 host threads each, and its own */
		"--cpus",
		"1.500",
		"--pids-limit",
		"1280",
		"--network",
		"none",
		"--runtime",
		"runsc",
		/* configured ulimits, then those the limits make (gVisor: pids as nproc) */
		"--ulimit",
		"core=0",
		"--ulimit",
		"nofile=512:512",
		"--ulimit",
		"fsize=1048576:1048576",
		"--ulimit",
		"nproc=64:64",
		"--tmpfs",
		"/tmp:rw,noexec,nosuid,nodev,size=1048576,mode=1777,U",
		"--tmpfs",
		"/work:rw,noexec,nosuid,nodev,size=1048576,mode=1777,U",
		"--mount",
		"type=bind,source=/srv/ws,target=/work,readonly",
		"--mount",
		"type=bind,source=/usr/libexec/h,target=/.cordon-agent,readonly",
		/* sorted by name: A < A_B < PATH < ZED */
		"--env",
		"A=3",
		"--env",
		"A_B=2",
		"--env",
		"PATH=/bin",
		"--env",
		"ZED=1",
		"--workdir",
		"/work",
		"--entrypoint",
		"/.cordon-agent",
		"--read-only-tmpfs=false",
		"--",
		IMAGE,
		"idle",
		NULL,
	};
	assert_argv(oci_run_argv(&s), want);
}
END_TEST

/* An attached session container: -i where -d would be, nothing else changes. */
START_TEST(test_argv_attached)
{
	oci_spec s = base_spec();
	s.interactive = true;
	const char *cmd[] = { "session", NULL };
	s.command = cmd;
	s.entrypoint = "/.cordon-agent";
	const char *want[] = {
		"run",
		"-i",
		"--rm",
		"--pull",
		"never",
		"--read-only",
		"--cap-drop",
		"ALL",
		"--security-opt",
		"no-new-privileges",
		"--user",
		"65534:65534",
		"--memory",
		"268435456",
		"--memory-swap",
		"268435456",
		"--pids-limit",
		"256",
		"--network",
		"none",
		"--tmpfs",
		"/tmp:rw,noexec,nosuid,nodev,size=67108864,mode=1777",
		"--entrypoint",
		"/.cordon-agent",
		"--",
		IMAGE,
		"session",
		NULL,
	};
	assert_argv(oci_run_argv(&s), want);
	/* detached wins: never both */
	s.detach = true;
	char **a = oci_run_argv(&s);
	ck_assert_str_eq(a[1], "-d");
	ck_assert_str_eq(a[2], "--rm");
	xstrv_free(a);
}
END_TEST

/* gVisor's id file (the OOM watch's cgroup without an inspect): after the labels, and
 * only an absolute path without what a CLI could read otherwise. */
START_TEST(test_argv_cidfile)
{
	oci_spec s = base_spec();
	s.interactive = true;
	s.name = "cordon-ab";
	s.cidfile = "/run/cordon/oci/cordon-ab.cid";
	assert_ok(&s);
	char **a = oci_run_argv(&s);
	ck_assert_str_eq(a[7], "--cidfile");
	ck_assert_str_eq(a[8], "/run/cordon/oci/cordon-ab.cid");
	ck_assert_str_eq(a[9], "--read-only");
	xstrv_free(a);
	const char *bad[] = { "cid", "/run/../etc/x", "/run/a,b", "/run/a=b", "/run/a\nb", NULL };
	for (size_t i = 0; bad[i]; i++) {
		s.cidfile = bad[i];
		assert_refused(&s, "container_mount_path_invalid");
	}
}
END_TEST

START_TEST(test_argv_root_tmpfs_publish_rw_mount)
{
	oci_spec s = base_spec();
	s.trust = 2;
	oci_mount m = { "/srv/ws", "/work", false };
	s.mounts = &m;
	s.n_mounts = 1;
	s.root_tmpfs = true;
	s.tmpfs_owner = "uid=65534,gid=65534";
	s.egress = CORDON_PLUGIN_EGRESS_GOVERNED;
	s.network = "cordon-governed";
	s.publish_port = 8080;
	const char *cmd[] = { "--not-a-flag", "x", NULL };
	s.command = cmd;
	assert_ok(&s);
	const char *want[] = {
		"run",
		"--rm",
		"--pull",
		"never",
		"--read-only",
		"--cap-drop",
		"ALL",
		"--security-opt",
		"no-new-privileges",
		"--user",
		"65534:65534",
		"--memory",
		"268435456",
		"--memory-swap",
		"268435456",
		"--pids-limit",
		"256",
		"--network",
		"cordon-governed",
		"--tmpfs",
		"/tmp:rw,noexec,nosuid,nodev,size=67108864,mode=1777,uid=65534,gid=65534",
		"--tmpfs",
		"/work:rw,noexec,nosuid,nodev,size=67108864,mode=1777,uid=65534,gid=65534",
		"--mount",
		"type=bind,source=/srv/ws,target=/work",
		"--publish",
		"127.0.0.1::8080",
		/* the command follows the image: never parsed as engine flags */
		"--",
		IMAGE,
		"--not-a-flag",
		"x",
		NULL,
	};
	assert_argv(oci_run_argv(&s), want);
}
END_TEST

/* Properties over many specs: whatever the inputs, the hardening is there. */
START_TEST(test_argv_invariants)
{
	for (unsigned seed = 0; seed < 200; seed++) {
		oci_spec s = base_spec();
		s.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = (8ull + seed) << 20;
		if (seed % 2) {
			s.limits.set |= 1u << CORDON_PLUGIN_LIMIT_PIDS;
			s.limits.value[CORDON_PLUGIN_LIMIT_PIDS] = 1 + seed;
		}
		s.detach = seed % 3 == 0;
		s.root_tmpfs = seed % 5 == 0;
		char **a = oci_run_argv(&s);
		size_t n = oci_strv_length((const char *const *)a);
		bool ro = false, capdrop = false, nnp = false, pids = false, net = false;
		const char *mem = NULL, *swap = NULL;
		for (size_t i = 0; i + 1 < n; i++) {
			ro |= strcmp(a[i], "--read-only") == 0;
			capdrop |= strcmp(a[i], "--cap-drop") == 0 && strcmp(a[i + 1], "ALL") == 0;
			nnp |= strcmp(a[i], "no-new-privileges") == 0;
			pids |= strcmp(a[i], "--pids-limit") == 0;
			net |= strcmp(a[i], "--network") == 0 && strcmp(a[i + 1], "none") == 0;
			if (strcmp(a[i], "--memory") == 0)
				mem = a[i + 1];
			if (strcmp(a[i], "--memory-swap") == 0)
				swap = a[i + 1];
		}
		ck_assert(ro && capdrop && nnp && pids && net && mem && swap);
		ck_assert_str_eq(mem, swap);
		ck_assert_str_eq(a[n - 1], IMAGE);
		ck_assert_str_eq(a[n - 2], "--");
		xstrv_free(a);
	}
}
END_TEST

/* ---- engine output -------------------------------------------------------------------- */

/* ---- open's limits: the core's, final ---------------------------------------------- */

static bool argv_has(char *const *argv, const char *flag, const char *value)
{
	for (size_t i = 0; argv[i]; i++)
		if (strcmp(argv[i], flag) == 0 &&
		    (!value || (argv[i + 1] && strcmp(argv[i + 1], value) == 0)))
			return true;
	return false;
}

/* The tier's limits reach open already merged by the core (admission.c): the plugin takes
 * open_spec.limits as they are. A tier that says more (pids 64, cpus 2, memory 256MiB)
 * adds nothing to a spec that says less, and never widens what the spec says. */
START_TEST(test_open_limits_are_final)
{
	static const oci_engine_kind kind = { .name = "docker", .tmpfs_owner_by_id = true };
	oci_tier t = { .kind = &kind,
		       .name = "c",
		       .image = (char *)IMAGE,
		       .helper = (char *)"/h",
		       .owner = (char *)"o",
		       .scratch = 1 << 20 };
	t.limits.set = 1u << CORDON_PLUGIN_LIMIT_MEMORY | 1u << CORDON_PLUGIN_LIMIT_PIDS |
		       1u << CORDON_PLUGIN_LIMIT_CPU_MILLI;
	t.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 256ull << 20;
	t.limits.value[CORDON_PLUGIN_LIMIT_PIDS] = 64;
	t.limits.value[CORDON_PLUGIN_LIMIT_CPU_MILLI] = 2000;
	cordon_plugin_open_spec spec = { .size = sizeof(spec),
					 .trust = 3,
					 .egress = CORDON_PLUGIN_EGRESS_DENY };
	spec.limits.size = sizeof(spec.limits);
	spec.limits.set = 1u << CORDON_PLUGIN_LIMIT_MEMORY;
	spec.limits.value[CORDON_PLUGIN_LIMIT_MEMORY] = 128ull << 20;

	oci_start st;
	oci_start_for_open(&t, &spec, &st);
	ck_assert_str_eq(st.image, IMAGE); /* the tier's, the spec naming none */
	ck_assert_int_eq(memcmp(&st.limits, &spec.limits, sizeof(st.limits)), 0);

	oci_spec_buf b;
	oci_session_spec(&t, &st, "cordon-x", &b);
	char **argv = oci_run_argv(&b.spec);
	oci_spec_clear(&b);
	ck_assert(argv_has(argv, "--memory", "134217728"));  /* the spec's 128MiB, once */
	ck_assert(!argv_has(argv, "--memory", "268435456")); /* never the tier's 256MiB */
	ck_assert(argv_has(argv, "--pids-limit", "256"));    /* the default: the spec has none */
	ck_assert(!argv_has(argv, "--cpus", NULL));          /* the tier's cpus do not come back */
	size_t memory_flags = 0;
	for (size_t i = 0; argv[i]; i++)
		memory_flags += strcmp(argv[i], "--memory") == 0;
	ck_assert_uint_eq(memory_flags, 1);
	xstrv_free(argv);

	/* a spec naming its image keeps it */
	spec.image = "busybox@" DIGEST;
	oci_start_for_open(&t, &spec, &st);
	ck_assert_str_eq(st.image, "busybox@" DIGEST);
	ck_assert(!st.egress_proxied);

	/* governed with the tier's rules: cordon's proxy, the container on --network none
	 * even where the tier names a network (the guarantees then refuse it) */
	const char *allow[] = { "pypi.org", NULL };
	spec.egress = CORDON_PLUGIN_EGRESS_GOVERNED;
	spec.egress_allow = allow;
	oci_start_for_open(&t, &spec, &st);
	ck_assert(st.egress_proxied);
	oci_session_spec(&t, &st, "cordon-x", &b);
	ck_assert(b.spec.egress_proxied && !b.spec.network);
	argv = oci_run_argv(&b.spec);
	oci_spec_clear(&b);
	ck_assert(argv_has(argv, "--network", "none"));
	xstrv_free(argv);
	/* governed without rules: the tier's named network (the administrator's), as before */
	spec.egress_allow = NULL;
	t.network = (char *)"cordon-governed";
	oci_start_for_open(&t, &spec, &st);
	ck_assert(!st.egress_proxied);
	oci_session_spec(&t, &st, "cordon-x", &b);
	ck_assert_str_eq(b.spec.network, "cordon-governed");
	oci_spec_clear(&b);
}
END_TEST

START_TEST(test_parse_engine_texts)
{
	ck_assert(oci_output_says_daemon_down(
		"Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker "
		"daemon running?\n"));
	ck_assert(oci_output_says_daemon_down("error during connect: Get ...: dial unix: "
					      "connect: connection refused"));
	ck_assert(!oci_output_says_daemon_down("Error: no container with name or ID x"));
	ck_assert(!oci_output_says_daemon_down(NULL));
	ck_assert(oci_output_says_no_image("Error response from daemon: No such image: "
					   "localhost:5000/x@sha256:00"));
	ck_assert(oci_output_says_no_image("Error: localhost:5000/x@sha256:00: image not known"));
	ck_assert(oci_output_says_no_image("Error response from daemon: manifest unknown"));
	ck_assert(!oci_output_says_no_image("permission denied"));
	ck_assert(oci_output_says_no_container("Error: no container with name or ID \"x\" found: "
					       "no such container"));
	ck_assert(oci_output_says_no_container("Error: No such container: cordon-x"));
	ck_assert(oci_output_says_no_container("Error response from daemon: Container abc is not "
					       "running"));
	ck_assert(!oci_output_says_no_container("OCI runtime error"));
}
END_TEST

START_TEST(test_parse_runtimes_json)
{
	const char *j =
		"{\"io.containerd.runc.v2\":{\"path\":\"runc\"},\"runc\":{\"path\":\"runc\"},"
		"\"runsc\":{\"path\":\"/usr/bin/runsc\",\"runtimeArgs\":[\"--oci-seccomp\"]}}";
	ck_assert(oci_runtimes_json_has(j, "runsc"));
	ck_assert(oci_runtimes_json_has(j, "runc"));
	ck_assert(oci_runtimes_json_has(j, "io.containerd.runc.v2"));
	ck_assert(!oci_runtimes_json_has(j, "run"));
	ck_assert(!oci_runtimes_json_has(j, "path"));           /* a nested key */
	ck_assert(!oci_runtimes_json_has(j, "/usr/bin/runsc")); /* a value */
	ck_assert(!oci_runtimes_json_has(j, "crun"));
	ck_assert(!oci_runtimes_json_has("{", "runc"));
	ck_assert(!oci_runtimes_json_has(NULL, "runc"));
	/* a runtime's flags: runsc-uds's host-uds, none of runsc's nor a key's */
	const char *u = "{\"runsc\":{\"path\":\"runsc\",\"runtimeArgs\":[\"--network=none\"]},"
			"\"runsc-uds\":{\"path\":\"/usr/bin/runsc\",\"runtimeArgs\":"
			"[\"--oci-seccomp\",\"--host-uds=open\"]},\"x\":{\"host-uds=all\":1}}";
	ck_assert(oci_runtimes_json_arg(u, "runsc-uds", oci_runsc_host_uds_flag));
	ck_assert(!oci_runtimes_json_arg(u, "runsc", oci_runsc_host_uds_flag));
	ck_assert(!oci_runtimes_json_arg(u, "crun", oci_runsc_host_uds_flag));
	ck_assert(!oci_runtimes_json_arg("{\"runsc\":{\"a\":\"\\\"--host-uds=open\"}}", "runsc",
					 oci_runsc_host_uds_flag));
	ck_assert(oci_runsc_host_uds_flag("host-uds=all") &&
		  oci_runsc_host_uds_flag("-host-uds=open"));
	ck_assert(!oci_runsc_host_uds_flag("host-uds=create") &&
		  !oci_runsc_host_uds_flag("host-uds"));
	ck_assert(oci_runtime_is_gvisor("runsc-uds") && oci_runtime_is_gvisor("/usr/bin/runsc"));
	ck_assert(!oci_runtime_is_gvisor("runscx") && !oci_runtime_is_gvisor("runc"));
}
END_TEST

START_TEST(test_parse_first_line)
{
	char buf[16];
	oci_first_line("  \nError: boom\nmore", buf, sizeof(buf));
	ck_assert_str_eq(buf, "Error: boom");
	oci_first_line("a very long line that is cut", buf, sizeof(buf));
	ck_assert_str_eq(buf, "a very long lin");
	oci_first_line(NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_parse_owner)
{
	char *me = oci_owner_label();
	ck_assert(!oci_owner_is_dead(me));
	char boot[64];
	unsigned long ns;
	long pid;
	unsigned long long st;
	ck_assert_int_eq(sscanf(me, "%32[0-9a-f]-%lu-%ld-%llu", boot, &ns, &pid, &st), 4);
	ck_assert_int_eq(pid, getpid());
	char other[256];
	snprintf(other, sizeof(other), "%s-%lu-%ld-%llu", boot, ns, pid, st + 1); /* a reused pid */
	ck_assert(oci_owner_is_dead(other));
	snprintf(other, sizeof(other), "00000000000000000000000000000000-%lu-%ld-%llu", ns, pid,
		 st);
	ck_assert(oci_owner_is_dead(other)); /* another boot */
	snprintf(other, sizeof(other), "%s-%lu-%d-%llu", boot, ns, 999999999, st);
	ck_assert(oci_owner_is_dead(other));
	/* a host of another pid namespace sharing the engine: not ours to judge */
	snprintf(other, sizeof(other), "%s-%lu-%ld-%llu", boot, ns + 1, pid, st + 1);
	ck_assert(!oci_owner_is_dead(other));
	snprintf(other, sizeof(other), "%s-%lu-%ld-%llu-more", boot, ns, pid, st);
	ck_assert(oci_owner_is_dead(other)); /* not one token */
	ck_assert(oci_owner_is_dead(""));
	ck_assert(oci_owner_is_dead(NULL));
	ck_assert(oci_owner_is_dead("garbage"));
	free(me);
}
END_TEST

START_TEST(test_runtime_is_gvisor)
{
	ck_assert(oci_runtime_is_gvisor("runsc"));
	ck_assert(oci_runtime_is_gvisor("/usr/local/bin/runsc"));
	ck_assert(!oci_runtime_is_gvisor("runc"));
	ck_assert(!oci_runtime_is_gvisor("runsc-wrapper"));
	ck_assert(!oci_runtime_is_gvisor(NULL));
}
END_TEST

/* The embedded profile is the kernel tier's list in the engines' JSON,
 * argument comparisons included; gVisor's lacks the ENOSYS rule (clone3). */
START_TEST(test_seccomp_profile_embedded)
{
	ck_assert_uint_gt(oci_seccomp_profile_rules, 100);
	static const char *const in_both[] = {
		"\"defaultAction\": \"SCMP_ACT_ALLOW\"",
		"{\"names\": [\"keyctl\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}",
		"{\"names\": [\"io_uring_setup\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": "
		"1}",
		/* CLONE_NEWUSER through unshare's flags */
		"{\"names\": [\"unshare\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1, "
		"\"args\": [{\"index\": 0, \"value\": 268435456, \"valueTwo\": 268435456, "
		"\"op\": \"SCMP_CMP_MASKED_EQ\"}]}",
		/* AF_VSOCK (40) is one of the families >= 17 */
		"{\"names\": [\"socket\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 97, "
		"\"args\": [{\"index\": 0, \"value\": 17, \"valueTwo\": 0, \"op\": "
		"\"SCMP_CMP_GE\"}]}",
	};
	for (size_t i = 0; i < sizeof(in_both) / sizeof(in_both[0]); i++) {
		ck_assert_msg(strstr(oci_seccomp_profile, in_both[i]), "missing: %s", in_both[i]);
		ck_assert_msg(strstr(oci_seccomp_profile_gvisor, in_both[i]), "gVisor's lacks: %s",
			      in_both[i]);
	}
	const char *clone3 =
		"{\"names\": [\"clone3\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 38}";
	ck_assert_ptr_nonnull(strstr(oci_seccomp_profile, clone3));
	ck_assert_ptr_null(strstr(oci_seccomp_profile_gvisor, "\"clone3\""));
}
END_TEST

/* The profile path, when given, follows no-new-privileges. */
START_TEST(test_argv_seccomp)
{
	oci_spec s = base_spec();
	s.seccomp = "/proc/self/fd/3";
	char **argv = oci_run_argv(&s);
	size_t i = 0;
	while (argv[i] && strcmp(argv[i], "no-new-privileges") != 0)
		i++;
	ck_assert_ptr_nonnull(argv[i]);
	ck_assert_str_eq(argv[i + 1], "--security-opt");
	ck_assert_str_eq(argv[i + 2], "seccomp=/proc/self/fd/3");
	xstrv_free(argv);
}
END_TEST

/* The workspace is opened without following a link anywhere in its path,
 * and what the guarantees see is the descriptor's own path. */
START_TEST(test_workspace_open_nofollow)
{
	char *dir = testutil_tmpdir();
	char *ws = xasprintf("%s/ws", dir), *link = xasprintf("%s/link", dir);
	char *via = xasprintf("%s/via", dir), *file = xasprintf("%s/ws/f", dir);
	char *through = xasprintf("%s/via/ws", dir), *dotted = xasprintf("%s/./ws/", dir);
	char *dotdot = xasprintf("%s/ws/../ws", dir);
	ck_assert_int_eq(mkdir(ws, 0700), 0);
	ck_assert_int_eq(symlink(ws, link), 0);
	ck_assert_int_eq(symlink(dir, via), 0);
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	oci_workspace w;
	oci_refusal r;
	const char *links[] = { link, through, file, "/proc/self/cwd" };
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		ck_assert_int_eq(oci_workspace_open(links[i], &w, &r), -EPERM);
		ck_assert_str_eq(r.code, "workspace_symlink");
		ck_assert_int_eq(w.fd, -1);
	}
	ck_assert_int_lt(oci_workspace_open(dotdot, &w, &r), 0);
	ck_assert_int_lt(oci_workspace_open("rel/ws", &w, &r), 0);
	ck_assert_int_eq(oci_workspace_open(dotted, &w, &r), 0);
	struct stat st;
	ck_assert_int_eq(stat(ws, &st), 0);
	ck_assert_str_eq(w.real, ws);
	ck_assert(w.dev == st.st_dev && w.ino == st.st_ino);
	ck_assert_str_eq(oci_workspace_source(&w), ws);
	oci_workspace_close(&w);
	ck_assert_int_eq(w.fd, -1);
	testutil_rmtree(dir);
	char *all[] = { dir, ws, link, via, file, through, dotted, dotdot };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]);
}
END_TEST

static Suite *oci_suite(void)
{
	Suite *s = suite_create("oci");
	TCase *tc = tcase_create("images");
	tcase_add_test(tc, test_image_pinned_accepted);
	tcase_add_test(tc, test_image_refusals);
	suite_add_tcase(s, tc);
	tc = tcase_create("guarantees");
	tcase_add_test(tc, test_guarantees_base_ok);
	tcase_add_test(tc, test_guarantees_image);
	tcase_add_test(tc, test_guarantees_memory_cap);
	tcase_add_test(tc, test_guarantees_mounts);
	tcase_add_test(tc, test_guarantees_network);
	tcase_add_test(tc, test_guarantees_publish);
	tcase_add_test(tc, test_guarantees_user);
	tcase_add_test(tc, test_guarantees_env_ulimits_runtime_names);
	tcase_add_test(tc, test_workspace_open_nofollow);
	tcase_add_test(tc, test_seccomp_profile_embedded);
	tcase_add_test(tc, test_argv_seccomp);
	suite_add_tcase(s, tc);
	tc = tcase_create("argv");
	tcase_add_test(tc, test_argv_minimal);
	tcase_add_test(tc, test_argv_session);
	tcase_add_test(tc, test_argv_attached);
	tcase_add_test(tc, test_argv_cidfile);
	tcase_add_test(tc, test_argv_root_tmpfs_publish_rw_mount);
	tcase_add_test(tc, test_argv_invariants);
	tcase_add_test(tc, test_open_limits_are_final);
	suite_add_tcase(s, tc);
	tc = tcase_create("parse");
	tcase_add_test(tc, test_parse_engine_texts);
	tcase_add_test(tc, test_parse_runtimes_json);
	tcase_add_test(tc, test_parse_first_line);
	tcase_add_test(tc, test_parse_owner);
	tcase_add_test(tc, test_runtime_is_gvisor);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(oci_suite()); }
