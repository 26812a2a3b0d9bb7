/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Governed egress's rule set and destination check (egress.h). */
#include "config.h"

#include "net/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 253
#define PORT_ANY (-1) /* NAME:* */
#define PORT_WEB 0    /* no port given: 80 and 443 */

typedef enum rule_kind { RULE_NAME, RULE_SUFFIX, RULE_ADDR } rule_kind;

typedef struct rule {
	rule_kind kind;
	int port;         /* PORT_ANY, PORT_WEB, or 1..65535 */
	char *name;       /* RULE_NAME: the name; RULE_SUFFIX: ".example.com" */
	uint8_t addr[16]; /* RULE_ADDR: as addr16 */
	unsigned prefix;
	char *text; /* as written, for explain */
} rule;

struct net_egress {
	GArray *allow, *deny; /* rule */
};

/* An address as 16 bytes: IPv4 (and IPv4-mapped IPv6) as ::ffff:a.b.c.d, so
 * that one prefix comparison serves both families. */
typedef struct addr16 {
	uint8_t b[16];
	bool v4;
} addr16;

static bool parse_addr(const char *s, addr16 *a)
{
	struct in_addr v4;
	struct in6_addr v6;
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, &v4) == 1) {
		a->b[10] = a->b[11] = 0xff;
		memcpy(a->b + 12, &v4, 4);
		a->v4 = true;
		return true;
	}
	if (inet_pton(AF_INET6, s, &v6) != 1)
		return false;
	memcpy(a->b, &v6, 16);
	a->v4 = IN6_IS_ADDR_V4MAPPED(&v6);
	return true;
}

static bool from_sockaddr(const struct sockaddr *sa, addr16 *a)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		a->b[10] = a->b[11] = 0xff;
		memcpy(a->b + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		a->v4 = true;
		return true;
	}
	if (sa->sa_family != AF_INET6)
		return false;
	const struct in6_addr *v6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	memcpy(a->b, v6, 16);
	a->v4 = IN6_IS_ADDR_V4MAPPED(v6);
	return true;
}

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;
	if (memcmp(a, net, full) != 0)
		return false;
	return !rest || ((a[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* A host name as rules and targets compare it: lower case, no trailing dot,
 * labels of letters, digits and hyphens. False when it is none. */
static bool normalise_name(const char *in, char *out, size_t outlen)
{
	size_t n = strlen(in);
	if (n && in[n - 1] == '.')
		n--;
	if (n == 0 || n > NAME_MAX_LEN || n >= outlen)
		return false;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		char c = g_ascii_tolower(in[i]);
		if (c == '.') {
			if (label == 0 || in[i - 1] == '-')
				return false;
			label = 0;
		} else if (g_ascii_isalnum(c) || (c == '-' && label > 0)) {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
		out[i] = c;
	}
	out[n] = '\0';
	return label > 0 && in[n - 1] != '-';
}

/* "NAME[:PORT]", "[V6][:PORT]", "V4[:PORT]", "ADDR/LEN[:PORT]": the host
 * part into host, the port into *port. */
static bool split_port(const char *s, char *host, size_t hostlen, int *port)
{
	const char *colon = NULL;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || (end[1] && end[1] != ':'))
			return false;
		if ((size_t)(end - s - 1) >= hostlen)
			return false;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = '\0';
		colon = end[1] ? end + 1 : NULL;
	} else {
		/* A bare IPv6 rule has several colons and no port. */
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL;
		size_t n = colon ? (size_t)(colon - s) : strlen(s);
		if (n >= hostlen)
			return false;
		memcpy(host, s, n);
		host[n] = '\0';
	}
	*port = PORT_WEB;
	if (!colon)
		return true;
	if (strcmp(colon + 1, "*") == 0) {
		*port = PORT_ANY;
		return true;
	}
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (!g_ascii_isdigit(colon[1]) || *end || p < 1 || p > 65535)
		return false;
	*port = (int)p;
	return true;
}

static bool parse_addr_rule(const char *host, rule *r)
{
	char buf[64];
	const char *slash = strchr(host, '/');
	size_t n = slash ? (size_t)(slash - host) : strlen(host);
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, host, n);
	buf[n] = '\0';
	addr16 a;
	if (!parse_addr(buf, &a))
		return false;
	unsigned max = a.v4 ? 32 : 128, bits = max;
	if (slash) {
		char *end;
		long l = strtol(slash + 1, &end, 10);
		if (!g_ascii_isdigit(slash[1]) || *end || l < 0 || l > (long)max)
			return false;
		bits = (unsigned)l;
	}
	r->kind = RULE_ADDR;
	r->prefix = a.v4 ? 96 + bits : bits;
	memcpy(r->addr, a.b, 16);
	return true;
}

static bool parse_rule(const char *s, rule *r)
{
	char host[NAME_MAX_LEN + 3], name[NAME_MAX_LEN + 3];
	memset(r, 0, sizeof(*r));
	if (!split_port(s, host, sizeof(host), &r->port))
		return false;
	if (parse_addr_rule(host, r)) {
		r->text = g_strdup(s);
		return true;
	}
	bool wild = g_str_has_prefix(host, "*.");
	if (!normalise_name(wild ? host + 2 : host, name, sizeof(name)))
		return false;
	r->kind = wild ? RULE_SUFFIX : RULE_NAME;
	r->name = wild ? g_strconcat(".", name, NULL) : g_strdup(name);
	r->text = g_strdup(s);
	return true;
}

static void rule_clear(gpointer p)
{
	g_free(((rule *)p)->name);
	g_free(((rule *)p)->text);
}

static int parse_list(const char *const *list, const char *what, GArray *out, char *why,
		      size_t whylen)
{
	for (size_t i = 0; list && list[i]; i++) {
		if (i >= NET_EGRESS_MAX_RULES) {
			snprintf(why, whylen, "egress %s: more than %d rules", what,
				 NET_EGRESS_MAX_RULES);
			return -EINVAL;
		}
		rule r;
		if (!parse_rule(list[i], &r)) {
			snprintf(why, whylen,
				 "egress %s: '%.200s' is not a host name, *.domain, address or "
				 "CIDR, with an optional :PORT or :*",
				 what, list[i]);
			return -EINVAL;
		}
		g_array_append_val(out, r);
	}
	return 0;
}

int net_egress_new(const char *const *allow, const char *const *deny, net_egress **ret, char *why,
		   size_t whylen)
{
	net_egress *e = g_new0(net_egress, 1);
	e->allow = g_array_new(FALSE, FALSE, sizeof(rule));
	e->deny = g_array_new(FALSE, FALSE, sizeof(rule));
	g_array_set_clear_func(e->allow, rule_clear);
	g_array_set_clear_func(e->deny, rule_clear);
	int r = parse_list(allow, "allow", e->allow, why, whylen);
	if (r == 0)
		r = parse_list(deny, "deny", e->deny, why, whylen);
	if (r < 0) {
		net_egress_free(e);
		return r;
	}
	*ret = e;
	return 0;
}

void net_egress_free(net_egress *e)
{
	if (!e)
		return;
	g_array_unref(e->allow);
	g_array_unref(e->deny);
	g_free(e);
}

static bool port_match(const rule *r, uint16_t port)
{
	return r->port == PORT_ANY ||
	       (r->port == PORT_WEB ? port == 80 || port == 443 : r->port == port);
}

/* name: normalised. exact_only: wildcards do not count. */
static bool name_match(const rule *r, const char *name, uint16_t port, bool exact_only)
{
	if (!port_match(r, port))
		return false;
	if (r->kind == RULE_NAME)
		return strcmp(r->name, name) == 0;
	return r->kind == RULE_SUFFIX && !exact_only && g_str_has_suffix(name, r->name) &&
	       strlen(name) > strlen(r->name);
}

static bool addr_match(const rule *r, const addr16 *a, uint16_t port)
{
	return r->kind == RULE_ADDR && port_match(r, port) &&
	       prefix_match(a->b, r->addr, r->prefix);
}

static const rule *find_name(const GArray *rules, const char *name, uint16_t port, bool exact_only)
{
	for (guint i = 0; i < rules->len; i++)
		if (name_match(&g_array_index(rules, rule, i), name, port, exact_only))
			return &g_array_index(rules, rule, i);
	return NULL;
}

static const rule *find_addr(const GArray *rules, const addr16 *a, uint16_t port)
{
	for (guint i = 0; i < rules->len; i++)
		if (addr_match(&g_array_index(rules, rule, i), a, port))
			return &g_array_index(rules, rule, i);
	return NULL;
}

bool net_egress_target_allowed(const net_egress *e, const char *host, uint16_t port, char *why,
			       size_t whylen)
{
	addr16 a;
	char name[NAME_MAX_LEN + 2];
	if (parse_addr(host, &a)) {
		if (find_addr(e->deny, &a, port) || !find_addr(e->allow, &a, port)) {
			snprintf(why, whylen, "%s port %u: no rule allows this address", host,
				 (unsigned)port);
			return false;
		}
		return true;
	}
	if (!normalise_name(host, name, sizeof(name))) {
		snprintf(why, whylen, "'%.200s' is not a host name", host);
		return false;
	}
	if (find_name(e->deny, name, port, false)) {
		snprintf(why, whylen, "%s port %u: denied by a rule", name, (unsigned)port);
		return false;
	}
	if (!find_name(e->allow, name, port, false)) {
		snprintf(why, whylen, "%s port %u: no rule allows it", name, (unsigned)port);
		return false;
	}
	return true;
}

/* Addresses a name must not lead to unless a rule names them. */
static const char *special_class(const addr16 *a)
{
	static const struct {
		const char *net;
		unsigned bits;
		const char *what;
	} classes[] = {
		{ "0.0.0.0", 8, "an unspecified" },
		{ "127.0.0.0", 8, "a loopback" },
		{ "10.0.0.0", 8, "a private" },
		{ "172.16.0.0", 12, "a private" },
		{ "192.168.0.0", 16, "a private" },
		{ "100.64.0.0", 10, "a shared (CGNAT)" },
		{ "169.254.0.0", 16, "a link-local (cloud metadata)" },
		{ "224.0.0.0", 4, "a multicast" },
		{ "240.0.0.0", 4, "a reserved" },
		{ "::", 128, "an unspecified" },
		{ "::1", 128, "a loopback" },
		{ "fc00::", 7, "a private (unique local)" },
		{ "fe80::", 10, "a link-local" },
		{ "ff00::", 8, "a multicast" },
		{ "64:ff9b::", 96, "a NAT64 (maps IPv4)" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(classes); i++) {
		addr16 net;
		if (!parse_addr(classes[i].net, &net))
			continue;
		unsigned bits = net.v4 ? 96 + classes[i].bits : classes[i].bits;
		if (net.v4 == a->v4 && prefix_match(a->b, net.b, bits))
			return classes[i].what;
	}
	return NULL;
}

bool net_egress_address_allowed(const net_egress *e, const char *host, uint16_t port,
				const struct sockaddr *sa, char *why, size_t whylen)
{
	addr16 a;
	char text[INET6_ADDRSTRLEN] = "?", name[NAME_MAX_LEN + 2] = "";
	if (!from_sockaddr(sa, &a)) {
		snprintf(why, whylen, "%.200s: not an IP address", host);
		return false;
	}
	inet_ntop(a.v4 ? AF_INET : AF_INET6, a.v4 ? a.b + 12 : a.b, text, sizeof(text));
	if (find_addr(e->deny, &a, port)) {
		snprintf(why, whylen, "%.200s resolves to %s, denied by a rule", host, text);
		return false;
	}
	const char *cls = special_class(&a);
	if (!cls)
		return true;
	bool named = find_addr(e->allow, &a, port) || (normalise_name(host, name, sizeof(name)) &&
						       find_name(e->allow, name, port, true));
	if (!named)
		snprintf(why, whylen, "%.200s resolves to %s, %s address no rule names", host, text,
			 cls);
	return named;
}

/* ---- in words (cordon explain) ----------------------------------------------------------- */

static void describe_rule(GString *s, const char *text, const rule *r, bool allow)
{
	const char *ports = r->port == PORT_ANY   ? "any port"
			    : r->port == PORT_WEB ? "ports 80 and 443"
						  : NULL;
	g_string_append_printf(s, "%s %s: ", allow ? "allow" : "deny", text);
	if (r->kind == RULE_NAME)
		g_string_append(s, allow ? "a CONNECT or http:// request naming exactly that host"
					 : "that host refused");
	else if (r->kind == RULE_SUFFIX)
		g_string_append_printf(s, "%s names below %s (not %s itself)",
				       allow ? "requests for" : "refused:", r->name + 1,
				       r->name + 1);
	else
		g_string_append(s,
				allow ? "IP literal targets in that range (and an allowed name's "
					"addresses there, private ones included)"
				      : "those addresses refused, as a literal or resolved");
	if (ports)
		g_string_append_printf(s, ", %s", ports);
	else
		g_string_append_printf(s, ", port %d", r->port);
	if (allow && r->kind != RULE_ADDR)
		g_string_append(s,
				r->kind == RULE_NAME
					? "; resolved by the proxy, to any address it resolves to"
					: "; resolved by the proxy, loopback, private, link-local "
					  "and metadata addresses refused");
}

char *net_egress_explain(const net_egress *e)
{
	GString *s = g_string_new(NULL);
	for (int list = 0; list < 2; list++) {
		const GArray *a = list == 0 ? e->allow : e->deny;
		for (guint i = 0; i < a->len; i++) {
			const rule *r = &g_array_index(a, rule, i);
			if (s->len)
				g_string_append(s, "; ");
			describe_rule(s, r->text, r, list == 0);
		}
	}
	if (!s->len)
		g_string_append(s, "no rule: every destination refused");
	return g_string_free(s, FALSE);
}
