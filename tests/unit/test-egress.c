/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Governed egress's rule set (core/net/egress.c): the grammar, what each rule
 * covers, deny over allow, and the addresses a name must not lead to. */
#include "config.h"

#include "testutil.h"
#include "net/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <string.h>

static net_egress *rules(const char *const *allow, const char *const *deny)
{
	net_egress *e = NULL;
	char why[256] = "";
	ck_assert_msg(net_egress_new(allow, deny, &e, why, sizeof(why)) == 0, "%s", why);
	return e;
}

static bool target(const net_egress *e, const char *host, uint16_t port)
{
	char why[256];
	return net_egress_target_allowed(e, host, port, why, sizeof(why));
}

/* host resolved to the address text: allowed? (why into the buffer) */
static bool address(const net_egress *e, const char *host, uint16_t port, const char *text,
		    char *why, size_t whylen)
{
	struct sockaddr_storage ss = { 0 };
	if (strchr(text, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		ck_assert_int_eq(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		ck_assert_int_eq(inet_pton(AF_INET, text, &s4->sin_addr), 1);
	}
	return net_egress_address_allowed(e, host, port, (struct sockaddr *)&ss, why, whylen);
}

START_TEST(test_grammar)
{
	static const char *const bad[] = {
		"",        "*",       "*.",          "foo*.com", "-a.com",     "a-.com",
		"a..com",  "a.com:0", "a.com:65536", "a.com:x",  "a.com:",     "10.0.0.0/33",
		"::1/129", "[::1",    "[::1]x",      "a b.com",  "1.2.3.4/-1", "*.*.com",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		const char *allow[] = { bad[i], NULL };
		net_egress *e = NULL;
		char why[256] = "";
		ck_assert_msg(net_egress_new(allow, NULL, &e, why, sizeof(why)) == -EINVAL,
			      "'%s' was accepted", bad[i]);
		ck_assert_msg(strstr(why, "egress allow:"), "%s", why);
		ck_assert_ptr_null(e);
	}
	const char *deny[] = { "ok.com", "not ok", NULL };
	net_egress *e = NULL;
	char why[256] = "";
	ck_assert_int_eq(net_egress_new(NULL, deny, &e, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "egress deny: 'not ok'"), "%s", why);
	const char *good[] = { "pypi.org",
			       "*.githubusercontent.com",
			       "api.example.com:8443",
			       "files.example.com:*",
			       "10.0.0.0/8",
			       "192.0.2.7:22",
			       "2001:db8::/32",
			       "[2001:db8::1]:8080",
			       "::1",
			       "Mixed.Case.Org.",
			       NULL };
	net_egress_free(rules(good, NULL));
}
END_TEST

START_TEST(test_names_and_ports)
{
	const char *allow[] = { "pypi.org",
				"*.githubusercontent.com",
				"api.example.com:8443",
				"files.example.com:*",
				"Mixed.Case.Org.",
				NULL };
	net_egress *e = rules(allow, NULL);
	ck_assert(target(e, "pypi.org", 443));
	ck_assert(target(e, "pypi.org", 80));
	ck_assert(!target(e, "pypi.org", 22));        /* no port: 80 and 443 only */
	ck_assert(target(e, "PyPI.org.", 443));       /* case and the root's dot */
	ck_assert(!target(e, "files.pypi.org", 443)); /* a name is that name */
	ck_assert(!target(e, "pypi.org.evil.com", 443));
	ck_assert(target(e, "raw.githubusercontent.com", 443));
	ck_assert(target(e, "a.b.githubusercontent.com", 443));
	ck_assert(!target(e, "githubusercontent.com", 443)); /* *. is below, not the apex */
	ck_assert(!target(e, "evilgithubusercontent.com", 443));
	ck_assert(target(e, "api.example.com", 8443));
	ck_assert(!target(e, "api.example.com", 443));
	ck_assert(target(e, "files.example.com", 2121));
	ck_assert(target(e, "mixed.case.org", 443));
	ck_assert(!target(e, "not a name", 443));
	ck_assert(!target(e, "", 443));
	net_egress_free(e);
}
END_TEST

START_TEST(test_addresses_need_address_rules)
{
	const char *allow[] = { "example.com", "10.0.0.0/8", "192.0.2.7:22", "2001:db8::/32",
				NULL };
	net_egress *e = rules(allow, NULL);
	ck_assert(target(e, "10.1.2.3", 443));
	ck_assert(!target(e, "11.1.2.3", 443));
	ck_assert(target(e, "192.0.2.7", 22));
	ck_assert(!target(e, "192.0.2.7", 443));
	ck_assert(target(e, "2001:db8::5", 80));
	ck_assert(!target(e, "2001:db9::5", 80));
	ck_assert(!target(e, "93.184.216.34", 443)); /* example.com's address, asked for directly */
	net_egress_free(e);
}
END_TEST

START_TEST(test_deny_wins)
{
	const char *allow[] = { "*.example.com:*", "10.0.0.0/8:*", NULL };
	const char *deny[] = { "secret.example.com", "10.9.0.0/16:*", NULL };
	net_egress *e = rules(allow, deny);
	ck_assert(target(e, "www.example.com", 443));
	ck_assert(!target(e, "secret.example.com", 443));
	ck_assert(target(e, "secret.example.com", 8080)); /* the deny rule's ports only */
	ck_assert(target(e, "10.8.0.1", 5432));
	ck_assert(!target(e, "10.9.0.1", 5432));
	char why[256];
	ck_assert(!address(e, "www.example.com", 443, "10.9.1.1", why, sizeof(why)));
	ck_assert_msg(strstr(why, "denied by a rule"), "%s", why);
	net_egress_free(e);
}
END_TEST

/* A name may not lead where the work's host could not go: loopback, private,
 * link-local (metadata), shared, unspecified, multicast, unless named. */
START_TEST(test_special_addresses)
{
	const char *allow[] = { "*.example.com", "localhost:8080", "internal.corp", "172.16.5.0/24",
				NULL };
	net_egress *e = rules(allow, NULL);
	static const char *const refused[] = {
		"127.0.0.1",
		"127.255.0.1",
		"169.254.169.254",
		"10.0.0.1",
		"172.16.0.1",
		"172.31.255.255",
		"192.168.1.1",
		"100.64.0.1",
		"0.0.0.0",
		"224.0.0.1",
		"::1",
		"::",
		"fd00::1",
		"fc00::1",
		"fe80::1",
		"ff02::1",
		"::ffff:127.0.0.1",
		"::ffff:169.254.169.254",
		"64:ff9b::7f00:1",
	};
	char why[256];
	for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
		ck_assert_msg(!address(e, "www.example.com", 443, refused[i], why, sizeof(why)),
			      "%s was allowed", refused[i]);
		ck_assert_msg(strstr(why, "address no rule names"), "%s", why);
	}
	ck_assert(address(e, "www.example.com", 443, "93.184.216.34", why, sizeof(why)));
	ck_assert(address(e, "www.example.com", 443, "2606:2800:220:1::1", why, sizeof(why)));
	ck_assert(address(e, "www.example.com", 443, "172.32.0.1", why, sizeof(why)));
	/* Named: an exact host rule (never a wildcard), or an address rule. */
	ck_assert(address(e, "localhost", 8080, "127.0.0.1", why, sizeof(why)));
	ck_assert(!address(e, "localhost", 443, "127.0.0.1", why, sizeof(why)));
	ck_assert(address(e, "internal.corp", 443, "10.1.1.1", why, sizeof(why)));
	ck_assert(address(e, "www.example.com", 443, "172.16.5.9", why, sizeof(why)));
	ck_assert(!address(e, "www.example.com", 443, "172.16.6.9", why, sizeof(why)));
	ck_assert_msg(strstr(why, "www.example.com resolves to 172.16.6.9, a private address"),
		      "%s", why);
	ck_assert(!address(e, "www.example.com", 443, "169.254.169.254", why, sizeof(why)));
	ck_assert_msg(strstr(why, "link-local (cloud metadata)"), "%s", why);
	net_egress_free(e);
}
END_TEST

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, test_grammar);
	tcase_add_test(tc, test_names_and_ports);
	tcase_add_test(tc, test_addresses_need_address_rules);
	tcase_add_test(tc, test_deny_wins);
	tcase_add_test(tc, test_special_addresses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(egress_suite()); }
