/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * common/: the libc-only layer the core and the plugins share. Table tests of the pieces
 * whose copies used to disagree: the "is this image pinned" predicate (the policy, the CLI and
 * the container tiers each had their own) and the unit grammar (the CLI took a bare duration
 * the policy refused).
 */
#include "config.h"

#include "testutil.h"
#include "imageref.h"
#include "units.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(test_image_refs)
{
	static const struct { const char *ref; image_ref_verdict v; } cases[] = {
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
	static const struct { const char *text; int cpus_r; uint64_t milli; int uint_r; } cases[] = {
		{ "2", 0, 2000, 0 },     { "0.5", 0, 500, -EINVAL }, { "1.25", 0, 1250, -EINVAL },
		{ "0.0001", -EINVAL, 0, -EINVAL }, { "500m", -EINVAL, 0, -EINVAL },
		{ "", -EINVAL, 0, -EINVAL }, { "01", -EINVAL, 0, -EINVAL }, { "1e3", -EINVAL, 0, -EINVAL },
		{ ".inf", -EINVAL, 0, -EINVAL }, { "1_000", -EINVAL, 0, -EINVAL },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t v = 0;
		ck_assert_msg(units_parse_cpus(cases[i].text, &v, NULL) == cases[i].cpus_r, "cpus %s",
			      cases[i].text);
		if (cases[i].cpus_r == 0)
			ck_assert_uint_eq(v, cases[i].milli);
		ck_assert_msg(units_parse_uint(cases[i].text, &v, NULL) == cases[i].uint_r, "uint %s",
			      cases[i].text);
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
	return s;
}

int main(void)
{
	return testutil_run(common_suite());
}
