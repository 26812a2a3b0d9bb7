/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `secrets:` and `services:` (docs/policy.md): their reading, each error
 * positioned, and the resolving of a secret grant (secret.h), a file's
 * owner and mode checked. */
#include "config.h"

#include "testutil.h"
#include "policy.h"
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define V1 "cordon: 1\n"
#define GOOD_SECRETS "secrets:\n  MODEL_KEY: {env: CORDON_TEST_MODEL_KEY}\n"

static cordon_policy *parse(const char *text, cordon_error **err)
{
	cordon_policy *p = NULL;
	*err = NULL;
	if (policy_parse(text, strlen(text), "t.yaml", &p, err) < 0)
		return NULL;
	return p;
}

/* The policy is refused, with code and every one of the messages. */
static void expect(const char *text, const char *code, const char *const *messages)
{
	cordon_error *err = NULL;
	cordon_policy *p = parse(text, &err);
	ck_assert_msg(!p, "parsed but should not: <<%s>>", text);
	ck_assert_str_eq(err->code, code);
	for (int i = 0; messages[i]; i++)
		ck_assert_msg(strstr(err->message, messages[i]), "<<%s>> lacks <<%s>>",
			      err->message, messages[i]);
	cordon_error_free(err);
}

START_TEST(test_service_read)
{
	const char *text = V1 GOOD_SECRETS
		"services:\n"
		"  - name: model-api\n"
		"    upstream: \"https://api.example.com:8443/v1/\"\n"
		"    ca: /etc/cordon/ca.pem\n"
		"    inject: {header: Authorization, value: \"Bearer ${secret:MODEL_KEY}!\"}\n"
		"  - {name: b, upstream: \"https://[::1]\", inject: {header: X-Key, value: "
		"\"${secret:MODEL_KEY}\"}}\n";
	cordon_error *err = NULL;
	g_autoptr(cordon_policy) p = parse(text, &err);
	ck_assert_msg(p, "%s", err ? err->message : "?");
	ck_assert_uint_eq(p->services->len, 2);
	const policy_service *s = p->services->pdata[0];
	ck_assert_str_eq(s->name, "model-api");
	ck_assert_str_eq(s->env, "MODEL_API_BASE_URL");
	ck_assert_str_eq(s->host, "api.example.com");
	ck_assert_uint_eq(s->port, 8443);
	ck_assert_str_eq(s->prefix, "/v1");
	ck_assert_str_eq(s->ca_file, "/etc/cordon/ca.pem");
	ck_assert_str_eq(s->header, "Authorization");
	ck_assert_str_eq(s->value_pre, "Bearer ");
	ck_assert_str_eq(s->value_post, "!");
	ck_assert_str_eq(s->secret_name, "MODEL_KEY");
	ck_assert_ptr_nonnull(s->secret);
	s = p->services->pdata[1];
	ck_assert_str_eq(s->host, "::1");
	ck_assert_uint_eq(s->port, 443);
	ck_assert_str_eq(s->prefix, "");
	ck_assert_ptr_null(s->ca_file);
	/* The summary names the service and the secret, never a value. */
	g_autofree char *d = policy_describe(p);
	ck_assert_ptr_nonnull(strstr(d, "model-api: MODEL_API_BASE_URL -> "
					"https://api.example.com:8443/v1 (Authorization from "
					"secret MODEL_KEY)"));
}
END_TEST

START_TEST(test_service_errors)
{
	/* Every error of one policy, each at its line and column. */
	expect(V1
	       "secrets:\n  MODEL_KEY: \"sk-plain\"\n  bad name: {env: X}\n"
	       "services:\n"
	       "  - name: Model\n"
	       "    upstream: \"http://api.example.com\"\n"
	       "    inject: {header: Host, value: \"Bearer ${secret:OTHER}\"}\n"
	       "  - name: x\n"
	       "    upstream: \"https://u:p@h/?q\"\n"
	       "    inject: {header: \"X Key\", value: "
	       "\"${secret:MODEL_KEY}${secret:MODEL_KEY}\"}\n"
	       "  - {name: x, upstream: \"https://h\", ca: rel/ca.pem, inject: {header: A, value: "
	       "plain}}\n"
	       "  - {upstream: \"https://h\", inject: {header: A}, extra: 1}\n",
	       "policy_type",
	       (const char *const[]){
		       "t.yaml:3:14: secrets.MODEL_KEY: a secret is {env: NAME} or {file: /path}",
		       "t.yaml:4:3: secrets: 'bad name' is not a valid secret name",
		       "t.yaml:6:11: services[0].name: 'Model' is not a valid service name",
		       "t.yaml:7:15: services[0].upstream: 'http://api.example.com': the upstream "
		       "must be https://",
		       "t.yaml:8:22: services[0].inject.header: 'Host' cannot be injected",
		       "t.yaml:8:35: services[0].inject.value: ${secret:OTHER} is not a key",
		       "services[1].upstream: 'https://u:p@h/?q': the upstream takes no user info",
		       "services[1].inject.header: 'X Key' cannot be injected",
		       "services[1].inject.value: the injected value names more than one secret",
		       "services[2].name: service name 'x' is used twice",
		       "services[2].ca: path 'rel/ca.pem' must be absolute",
		       "services[2].inject.value: the injected value names no secret",
		       "services[3]: missing required key 'name'",
		       "services[3].inject: inject takes a header and a value",
		       "unknown key 'extra'", NULL });
	expect(V1 GOOD_SECRETS "services: {name: a}\n", "policy_type",
	       (const char *const[]){ "services:", NULL });
}
END_TEST

/* A file of mode, owned by us, holding text. */
static char *secret_file(const char *dir, const char *text, mode_t mode)
{
	char *path = g_build_filename(dir, "key", NULL);
	g_unlink(path);
	ck_assert(g_file_set_contents(path, text, -1, NULL));
	ck_assert_int_eq(chmod(path, mode), 0);
	return path;
}

static int resolve(const char *how, const char *what, bool private_file, char **ret, char *why)
{
	g_autofree char *text = g_strdup_printf(V1 "secrets:\n  K: {%s: \"%s\"}\n", how, what);
	cordon_error *err = NULL;
	g_autoptr(cordon_policy) p = parse(text, &err);
	ck_assert_msg(p, "%s", err ? err->message : "?");
	const cfg_node *grant = cfg_map_get(cfg_map_get(p->root, "secrets"), "K");
	return secret_resolve(grant, private_file, ret, why, 256);
}

START_TEST(test_secret_resolve)
{
	g_autofree char *dir = testutil_tmpdir();
	char why[256];
	char *v = NULL;
	g_autofree char *path = secret_file(dir, "sk-test-1\n", 0600);
	ck_assert_int_eq(resolve("file", path, true, &v, why), 0);
	ck_assert_str_eq(v, "sk-test-1"); /* the editor's newline dropped */
	secret_free(v);
	/* A file others could read is refused for the core's secrets, and the
	 * message never holds the content. */
	g_free(path);
	path = secret_file(dir, "sk-test-2", 0644);
	ck_assert_int_eq(resolve("file", path, true, &v, why), -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "mode 0600"));
	ck_assert_ptr_null(strstr(why, "sk-test"));
	ck_assert_int_eq(resolve("file", path, false, &v, why), 0); /* the plugins' rule */
	secret_free(v);
	g_free(path);
	path = secret_file(dir, "", 0600);
	ck_assert_int_eq(resolve("file", path, true, &v, why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "empty"));
	g_autofree char *missing = g_build_filename(dir, "none", NULL);
	ck_assert_int_eq(resolve("file", missing, true, &v, why), -ENOENT);
	g_setenv("CORDON_TEST_MODEL_KEY", "sk-env", TRUE);
	ck_assert_int_eq(resolve("env", "CORDON_TEST_MODEL_KEY", true, &v, why), 0);
	ck_assert_str_eq(v, "sk-env");
	secret_free(v);
	g_unsetenv("CORDON_TEST_MODEL_KEY");
	ck_assert_int_eq(resolve("env", "CORDON_TEST_MODEL_KEY", true, &v, why), -ENOENT);
	ck_assert_str_eq(why, "environment variable CORDON_TEST_MODEL_KEY is not set");
	testutil_rmtree(dir);
}
END_TEST

static Suite *services_suite(void)
{
	Suite *s = suite_create("services");
	TCase *tc = tcase_create("policy");
	tcase_add_test(tc, test_service_read);
	tcase_add_test(tc, test_service_errors);
	tcase_add_test(tc, test_secret_resolve);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(services_suite()); }
