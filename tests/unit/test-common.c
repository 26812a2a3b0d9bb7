/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * common/: the libc-only layer the core and the plugins share. Table tests of the pieces
 * whose copies used to disagree: the "is this image pinned" predicate (the policy, the CLI and
 * the container tiers each had their own) and the unit grammar (the CLI took a bare duration
 * the policy refused).
 */
#include "config.h"

#include "testutil.h"
#include "hostproc.h"
#include "imageref.h"
#include "owner.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(test_image_refs)
{
	static const struct {
		const char *ref;
		image_ref_verdict v;
	} cases[] = {
		{ NULL, IMAGE_REF_EMPTY },
		{ "", IMAGE_REF_EMPTY },
		/* a tag alone, or nothing: movable */
		{ "busybox", IMAGE_REF_UNPINNED },
		{ "busybox:1.36", IMAGE_REF_UNPINNED },
		{ "localhost:5000/cordon-busybox:ci", IMAGE_REF_UNPINNED },
		/* digest, with and without tag and registry */
		{ "busybox@sha256:" HEX64, IMAGE_REF_PINNED },
		{ "busybox:1.36@sha256:" HEX64, IMAGE_REF_PINNED },
		{ "docker.io/library/busybox:1.36@sha256:" HEX64, IMAGE_REF_PINNED },
		{ "localhost:5000/cordon-busybox@sha256:" HEX64, IMAGE_REF_PINNED },
		{ "registry.example:443/a/b-c_d.e:Tag_1@sha256:" HEX64, IMAGE_REF_PINNED },
		/* the digest itself */
		{ "busybox@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		  IMAGE_REF_BAD_DIGEST },
		{ "busybox@sha256:0123", IMAGE_REF_BAD_DIGEST },
		{ "busybox@sha256:" HEX64 "0", IMAGE_REF_BAD_DIGEST },
		{ "busybox@sha256:", IMAGE_REF_BAD_DIGEST },
		{ "busybox@SHA256:" HEX64, IMAGE_REF_BAD_ALGO },
		{ "busybox@sha512:" HEX64 HEX64, IMAGE_REF_BAD_ALGO },
		{ "busybox@sha384:" HEX64, IMAGE_REF_BAD_ALGO },
		{ "busybox@md5:0123", IMAGE_REF_BAD_ALGO },
		/* the name: the policy's strstr took all of these as pinned */
		{ "@sha256:" HEX64, IMAGE_REF_BAD_NAME },
		{ "Busybox@sha256:" HEX64, IMAGE_REF_BAD_NAME },
		{ "--privileged@sha256:" HEX64, IMAGE_REF_BAD_NAME },
		{ "busy box@sha256:" HEX64, IMAGE_REF_BAD_NAME },
		{ "a//b@sha256:" HEX64, IMAGE_REF_BAD_NAME },
		{ "busybox:@sha256:" HEX64, IMAGE_REF_BAD_NAME },
		{ "a@b@sha256:" HEX64, IMAGE_REF_BAD_ALGO },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		image_ref_verdict v = image_ref_check(cases[i].ref);
		ck_assert_msg(v == cases[i].v, "%s: verdict %d, expected %d",
			      cases[i].ref ? cases[i].ref : "(null)", v, cases[i].v);
		ck_assert(image_ref_is_pinned(cases[i].ref) == (cases[i].v == IMAGE_REF_PINNED));
	}
}
END_TEST

START_TEST(test_units_bare_duration_refused)
{
	uint64_t v = 7;
	const char *why = NULL;
	ck_assert_int_eq(units_parse_duration("2", &v, &why), -EINVAL);
	ck_assert_uint_eq(v, 7); /* untouched on failure */
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, "needs a unit") && strstr(why, "2s"), "%s", why);
	why = NULL;
	ck_assert_int_eq(units_parse_duration("2s", &v, &why), 0);
	ck_assert_uint_eq(v, 2000);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(units_parse_duration("2", &v, NULL), -EINVAL); /* why is optional */
}
END_TEST

START_TEST(test_units_counts_and_cpus)
{
	static const struct {
		const char *text;
		int cpus_r;
		uint64_t milli;
		int uint_r;
	} cases[] = {
		{ "2", 0, 2000, 0 },
		{ "0.5", 0, 500, -EINVAL },
		{ "1.25", 0, 1250, -EINVAL },
		{ "0.0001", -EINVAL, 0, -EINVAL },
		{ "500m", -EINVAL, 0, -EINVAL },
		{ "", -EINVAL, 0, -EINVAL },
		{ "01", -EINVAL, 0, -EINVAL },
		{ "1e3", -EINVAL, 0, -EINVAL },
		{ ".inf", -EINVAL, 0, -EINVAL },
		{ "1_000", -EINVAL, 0, -EINVAL },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t v = 0;
		ck_assert_msg(units_parse_cpus(cases[i].text, &v, NULL) == cases[i].cpus_r,
			      "cpus %s", cases[i].text);
		if (cases[i].cpus_r == 0)
			ck_assert_uint_eq(v, cases[i].milli);
		ck_assert_msg(units_parse_uint(cases[i].text, &v, NULL) == cases[i].uint_r,
			      "uint %s", cases[i].text);
	}
	char buf[UNITS_FORMAT_MAX];
	units_format_size(3ull << 40, buf);
	ck_assert_str_eq(buf, "3TiB");
	units_format_duration(0, buf);
	ck_assert_str_eq(buf, "0ms");
	units_format_duration(7200000, buf);
	ck_assert_str_eq(buf, "2h");
}
END_TEST

START_TEST(test_owner_tokens)
{
	char me[OWNER_TOKEN_MAX];
	ck_assert_int_eq(owner_token_self(me), 0);
	size_t len = 0;
	ck_assert_int_eq(owner_token_state(me, &len), OWNER_ALIVE);
	ck_assert_uint_eq(len, strlen(me));
	ck_assert_uint_eq(strspn(me, "0123456789abcdef-"), strlen(me)); /* fits any name */
	char boot[40];
	unsigned long ns;
	long pid;
	unsigned long long st;
	ck_assert_int_eq(sscanf(me, "%32[0-9a-f]-%lu-%ld-%llu", boot, &ns, &pid, &st), 4);
	ck_assert_uint_eq(strlen(boot), 32);
	ck_assert_int_eq(pid, getpid());
	char t[256];
	/* more after the token: its length says where it ends */
	snprintf(t, sizeof(t), "%s-00ff", me);
	ck_assert_int_eq(owner_token_state(t, &len), OWNER_ALIVE);
	ck_assert_uint_eq(len, strlen(me));
	snprintf(t, sizeof(t), "%s-%lu-%ld-%llu", boot, ns, (long)getppid(), 1ULL);
	ck_assert_int_eq(owner_token_state(t, NULL), OWNER_DEAD); /* a reused pid */
	snprintf(t, sizeof(t), "%s-%lu-%d-%llu", boot, ns, 999999999, st);
	ck_assert_int_eq(owner_token_state(t, NULL), OWNER_DEAD); /* no such pid */
	snprintf(t, sizeof(t), "00000000000000000000000000000000-%lu-%ld-%llu", ns, pid, st);
	ck_assert_int_eq(owner_token_state(t, NULL), OWNER_DEAD); /* an earlier boot */
	snprintf(t, sizeof(t), "%s-%lu-%ld-%llu", boot, ns + 1, pid, st + 1);
	ck_assert_int_eq(owner_token_state(t, NULL), OWNER_FOREIGN); /* another pid namespace */
	static const char *const bad[] = { "",
					   "garbage",
					   "cordon-1-2-3",
					   "0123-1-2-3",
					   "0123456789abcdef0123456789ABCDEF-1-2-3",
					   "0123456789abcdef0123456789abcdef-1-0-3",
					   "0123456789abcdef0123456789abcdef-1--2-3",
					   "0123456789abcdef0123456789abcdef-1-2",
					   "0123456789abcdef0123456789abcdef-1-99999999999-3" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		ck_assert_msg(owner_token_state(bad[i], NULL) == OWNER_INVALID, "%s", bad[i]);
	ck_assert_int_eq(owner_token_state(NULL, NULL), OWNER_INVALID);
}
END_TEST

/* The spawner with 0-2 of the host closed: the program's descriptors are still its own. */
START_TEST(test_hostproc_stdio_closed)
{
	int saved[3];
	for (int i = 0; i < 3; i++) {
		saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
		close(i);
	}
	const char *argv[] = { "/bin/sh", "-c", "read x; echo \"$x\"; echo e >&2; exit 4", NULL };
	const char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	hostproc_result res;
	int r = hostproc_run("/bin/sh", argv, envp, "in\n", 3, 5000, 1024, &res);
	for (int i = 0; i < 3; i++) {
		dup2(saved[i], i);
		close(saved[i]);
	}
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(res.out, "in\n");
	ck_assert_str_eq(res.err, "e\n");
	ck_assert_int_eq(res.exit_code, 4);
	ck_assert(!res.timed_out);
	free(res.out);
	free(res.err);
}
END_TEST

static Suite *common_suite(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("imageref");
	tcase_add_test(tc, test_image_refs);
	suite_add_tcase(s, tc);
	tc = tcase_create("units");
	tcase_add_test(tc, test_units_bare_duration_refused);
	tcase_add_test(tc, test_units_counts_and_cpus);
	suite_add_tcase(s, tc);
	tc = tcase_create("owner");
	tcase_add_test(tc, test_owner_tokens);
	suite_add_tcase(s, tc);
	tc = tcase_create("hostproc");
	tcase_add_test(tc, test_hostproc_stdio_closed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(common_suite()); }
