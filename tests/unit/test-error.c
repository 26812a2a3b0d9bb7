/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The error model: class, code, message, errno round-trip; NULL safety. */
#include "config.h"

#include "testutil.h"

#include <cordon/cordon.h>
#include <errno.h>
#include <string.h>

START_TEST(test_free_null)
{
	cordon_error_free(NULL);
	cordon_request_free(NULL);
	cordon_options_free(NULL);
	cordon_context_free(NULL);
	cordon_sandbox_close(NULL);
	cordon_result_free(NULL);
	cordon_decision_free(NULL);
	cordon_serve_free(NULL);
	cordon_strv_free(NULL);
	cordon_probe_report_free(NULL);
}
END_TEST

START_TEST(test_invalid_round_trip)
{
	cordon_error *err = NULL;
	cordon_options *o = cordon_options_new();
	int r = cordon_options_set_plugin_dir(o, "relative/dir", &err);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(cordon_error_get_class(err), CORDON_ERROR_INVALID);
	ck_assert_int_eq(cordon_error_get_errno(err), -EINVAL);
	ck_assert_str_eq(cordon_error_get_code(err), "invalid_argument");
	ck_assert_ptr_nonnull(strstr(cordon_error_get_message(err), "absolute"));
	ck_assert_str_eq(cordon_error_class_name(cordon_error_get_class(err)), "invalid");
	cordon_error_free(err);
	cordon_options_free(o);
}
END_TEST

START_TEST(test_reterr_optional)
{
	cordon_request *req = cordon_request_new("trusted");
	/* Without reterr the call still fails with its errno. */
	ck_assert_int_eq(cordon_request_set_workspace(req, "not/absolute", NULL), -EINVAL);
	cordon_request_free(req);
}
END_TEST

START_TEST(test_forbidden_env)
{
	cordon_error *err = NULL;
	cordon_request *req = cordon_request_new("trusted");
	ck_assert_int_eq(cordon_request_grant_env(req, "LD_PRELOAD", "/tmp/x.so", &err), -EPERM);
	ck_assert_cordon_error(err, CORDON_ERROR_FORBIDDEN, "env_forbidden");
	cordon_request_free(req);
}
END_TEST

START_TEST(test_class_names)
{
	ck_assert_str_eq(cordon_error_class_name(CORDON_ERROR_TERMINAL), "terminal");
	ck_assert_str_eq(cordon_error_class_name(CORDON_ERROR_FORBIDDEN), "forbidden");
	ck_assert_str_eq(cordon_error_class_name(CORDON_ERROR_TRANSIENT), "transient");
	ck_assert_str_eq(cordon_error_class_name(CORDON_ERROR_CANCELLED), "cancelled");
	ck_assert_str_eq(cordon_error_class_name(CORDON_ERROR_INVALID), "invalid");
}
END_TEST

START_TEST(test_trust_fails_closed)
{
	ck_assert_int_eq(cordon_trust_from_string("trusted"), CORDON_TRUST_TRUSTED);
	ck_assert_int_eq(cordon_trust_from_string("semi-trusted"), CORDON_TRUST_SEMI_TRUSTED);
	ck_assert_int_eq(cordon_trust_from_string("Trusted"), CORDON_TRUST_UNTRUSTED);
	ck_assert_int_eq(cordon_trust_from_string(""), CORDON_TRUST_UNTRUSTED);
	ck_assert_int_eq(cordon_trust_from_string(NULL), CORDON_TRUST_UNTRUSTED);
	ck_assert_int_eq(cordon_containment_from_string("hypervisor"), 0);
	ck_assert_str_eq(cordon_containment_to_string(99), "process-jail");
}
END_TEST

static Suite *error_suite(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("model");
	tcase_add_test(tc, test_free_null);
	tcase_add_test(tc, test_invalid_round_trip);
	tcase_add_test(tc, test_reterr_optional);
	tcase_add_test(tc, test_forbidden_env);
	tcase_add_test(tc, test_class_names);
	tcase_add_test(tc, test_trust_fails_closed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(error_suite()); }
