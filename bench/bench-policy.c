/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy benchmarks (issue 3 targets, printed, not asserted):
 *   - a decision with warm probes, 20 tiers and 50 rules: median < 20 us
 *   - parsing a 1 MiB policy: < 50 ms
 *   - refusing the billion-laughs document: < 100 ms
 * Tiers come from the in-process fake driver of the tests, so the figure is
 * the admission engine's own cost (no driver probe, no audit I/O), plus one
 * line with an audit trail on $TMPDIR for comparison.
 *   bench/bench-policy [ITERATIONS]   (default 20000 decisions) */
#include "config.h"

#include "admission.h"
#include "fakectx.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

static const char *const cont[] = { "process-jail",     "kernel",  "container",
				    "userspace-kernel", "microvm", "remote" };

static int cmp_i64(const void *a, const void *b)
{
	gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
	return x < y ? -1 : x > y;
}

/* Wall time and this thread's CPU time: on a shared machine the CPU time
 * is the better estimate of the cost, and both are printed. */
typedef struct sample {
	gint64 wall_ns;
	gint64 cpu_ns;
} sample;

static int cmp_wall(const void *a, const void *b)
{
	return cmp_i64(&((const sample *)a)->wall_ns, &((const sample *)b)->wall_ns);
}

static int cmp_cpu(const void *a, const void *b)
{
	return cmp_i64(&((const sample *)a)->cpu_ns, &((const sample *)b)->cpu_ns);
}

static void report(const char *what, sample *s, size_t n, double target_us)
{
	qsort(s, n, sizeof(*s), cmp_wall);
	double med = (double)s[n / 2].wall_ns / 1000.0,
	       p99 = (double)s[n * 99 / 100].wall_ns / 1000.0;
	qsort(s, n, sizeof(*s), cmp_cpu);
	double cpu = (double)s[n / 2].cpu_ns / 1000.0;
	printf("%-46s median %10.2f us (cpu %10.2f us)  p99 %10.2f us", what, med, cpu, p99);
	if (target_us > 0)
		printf("  target < %.0f us: %s\n", target_us,
		       med < target_us   ? "met"
		       : cpu < target_us ? "met in cpu time"
					 : "MISSED");
	else
		printf("  (for comparison)\n");
}

static gint64 clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void start(sample *s)
{
	s->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	s->wall_ns = clock_ns(CLOCK_MONOTONIC);
}

static void stop(sample *s)
{
	s->wall_ns = clock_ns(CLOCK_MONOTONIC) - s->wall_ns;
	s->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - s->cpu_ns;
}

/* 20 tiers of every containment, 50 rules that all have to be looked at. */
static char *decision_policy(const char *audit)
{
	GString *s = g_string_new("cordon: 1\nselect: strongest\ntiers:\n");
	for (int i = 0; i < 20; i++)
		g_string_append_printf(
			s, "  t%02d: {driver: tfake, containment: %s, available: %s%s}\n", i,
			cont[i % 6], i % 7 == 3 ? "false" : "true",
			i % 4 == 0 ? ", limits: {memory: 4GiB, pids: 512}" : "");
	g_string_append(s, "trust:\n");
	for (int t = 0; t < 3; t++) {
		static const char *const names[] = { "trusted", "semi-trusted", "untrusted" };
		g_string_append_printf(s, "  %s: {tiers: [", names[t]);
		for (int i = 0; i < 20; i++)
			g_string_append_printf(s, "%st%02d", i ? ", " : "", i);
		g_string_append(s, "]}\n");
	}
	g_string_append(s, "rules:\n");
	for (int r = 0; r < 50; r++) {
		switch (r % 5) {
		case 0: /* labels that do not match: looked at, never applied */
			g_string_append_printf(s,
					       "  - {name: r%02d, when: {labels: {team: t%d, env: "
					       "prod}}, deny: true}\n",
					       r, r);
			break;
		case 1:
			g_string_append_printf(s,
					       "  - {name: r%02d, when: {trust: [semi-trusted, "
					       "untrusted]}, limit: {memory: %dGiB, wall: %dm}}\n",
					       r, 8 + r, 10 + r);
			break;
		case 2:
			g_string_append_printf(s,
					       "  - {name: r%02d, when: {driver: [docker, "
					       "podman]}, require: {image: pinned}}\n",
					       r);
			break;
		case 3:
			g_string_append_printf(
				s, "  - {name: r%02d, when: {tier: [t%02d]}, deny: true}\n", r,
				r % 20);
			break;
		default:
			g_string_append_printf(s,
					       "  - {name: r%02d, when: {trust: semi-trusted}, "
					       "require: {egress: governed}}\n",
					       r);
		}
	}
	if (audit)
		g_string_append_printf(s, "audit: {path: %s}\n", audit);
	return g_string_free(s, FALSE);
}

static void bench_decisions(size_t n, const char *audit, const char *what, double target)
{
	g_autofree char *policy = decision_policy(audit);
	cordon_context *ctx = NULL;
	cordon_error *err = NULL;
	if (fakectx_open(policy, &ctx, &err) < 0) {
		fprintf(stderr, "bench-policy: %s\n", err->message);
		exit(1);
	}
	cordon_request *req = cordon_request_new("semi-trusted");
	cordon_request_add_label(req, "team", "ml", NULL);
	cordon_request_add_label(req, "origin", "ci", NULL);
	cordon_request_set_limit(req, CORDON_LIMIT_MEMORY, 2ull << 30, NULL);
	sample *ns = g_new(sample, n + 100);
	for (size_t i = 0; i < n + 100; i++) {
		cordon_decision *d = NULL;
		start(&ns[i]);
		int r = cordon_decide(ctx, req, &d, NULL);
		stop(&ns[i]);
		if (r < 0) {
			fprintf(stderr, "bench-policy: the benchmark request was refused\n");
			exit(1);
		}
		cordon_decision_free(d);
	}
	report(what, ns + 100, n, target); /* the first ones probe: warm up */
	g_free(ns);
	cordon_request_free(req);
	cordon_context_free(ctx);
}

/* A valid policy of about 1 MiB: many tiers, trust lists and rules. */
static char *big_policy(void)
{
	GString *s = g_string_new("cordon: 1\ntiers:\n");
	int tiers = 0;
	while (s->len < 300 * 1024)
		g_string_append_printf(s,
				       "  tier-%05d: {driver: local, confine: kernel, limits: "
				       "{memory: %dMiB, pids: %d, wall: %ds}}\n",
				       tiers, 256 + tiers % 512, 64 + tiers % 128, 30 + tiers % 60),
			tiers++;
	g_string_append(s, "trust:\n  trusted:\n    require: process-jail\n    tiers:\n");
	for (int i = 0; i < tiers && s->len < 450 * 1024; i++)
		g_string_append_printf(s, "      - tier-%05d\n", i);
	g_string_append(s, "rules:\n");
	for (int r = 0; s->len < 1024 * 1024 - 300; r++)
		g_string_append_printf(s,
				       "  - {name: rule-%05d, when: {trust: semi-trusted, labels: "
				       "{team: team-%d}}, limit: {memory: %dGiB, wall: %dm}}\n",
				       r, r, 1 + r % 8, 1 + r % 60);
	return g_string_free(s, FALSE);
}

static void bench_parse(size_t n)
{
	g_autofree char *text = big_policy();
	size_t len = strlen(text);
	sample *ns = g_new(sample, n);
	for (size_t i = 0; i < n; i++) {
		cordon_policy *p = NULL;
		cordon_error *err = NULL;
		start(&ns[i]);
		int r = policy_parse(text, len, "big.yaml", &p, &err);
		stop(&ns[i]);
		if (r < 0) {
			fprintf(stderr, "bench-policy: big policy: %s\n", err->message);
			exit(1);
		}
		policy_free(p);
	}
	g_autofree char *what = g_strdup_printf("parse a %zu-byte policy", len);
	report(what, ns, n, 50000);
	g_free(ns);
}

/* The floor: libyaml's event loop over the same text, building nothing. */
static void bench_libyaml_floor(size_t n)
{
	g_autofree char *text = big_policy();
	size_t len = strlen(text);
	sample *ns = g_new(sample, n);
	for (size_t i = 0; i < n; i++) {
		yaml_parser_t p;
		yaml_parser_initialize(&p);
		yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
		start(&ns[i]);
		for (bool done = false; !done;) {
			yaml_event_t ev;
			if (!yaml_parser_parse(&p, &ev))
				break;
			done = ev.type == YAML_STREAM_END_EVENT;
			yaml_event_delete(&ev);
		}
		stop(&ns[i]);
		yaml_parser_delete(&p);
	}
	report("  floor: libyaml's events alone, same text", ns, n, 0);
	g_free(ns);
}

static void bench_billion_laughs(size_t n)
{
	GString *s = g_string_new(
		"cordon: 1\na0: &a0 "
		"[\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
	for (int i = 1; i <= 9; i++) {
		g_string_append_printf(s, "a%d: &a%d [", i, i);
		for (int j = 0; j < 9; j++)
			g_string_append_printf(s, "%s*a%d", j ? "," : "", i - 1);
		g_string_append(s, "]\n");
	}
	sample *ns = g_new(sample, n);
	for (size_t i = 0; i < n; i++) {
		cordon_policy *p = NULL;
		cordon_error *err = NULL;
		start(&ns[i]);
		int r = policy_parse(s->str, s->len, "lol.yaml", &p, &err);
		stop(&ns[i]);
		if (r >= 0 || strcmp(err->code, "policy_alias") != 0) {
			fprintf(stderr,
				"bench-policy: billion laughs was not refused as an alias\n");
			exit(1);
		}
		cordon_error_free(err);
	}
	report("refuse the billion-laughs document", ns, n, 100000);
	g_free(ns);
	g_string_free(s, TRUE);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
	if (n < 100)
		n = 100;
	bench_decisions(n, NULL, "decide: 20 tiers, 50 rules, warm probes", 20);
	g_autofree char *dir = g_dir_make_tmp("cordon-bench-XXXXXX", NULL);
	g_autofree char *audit = g_build_filename(dir, "audit.jsonl", NULL);
	bench_decisions(n / 4, audit, "decide, plus its audit line on $TMPDIR", 0);
	g_unlink(audit);
	g_rmdir(dir);
	bench_parse(30);
	bench_libyaml_floor(30);
	bench_billion_laughs(1000);
	double load[3];
	if (getloadavg(load, 3) == 3)
		printf("(load average %.2f on %ld CPUs while measuring)\n", load[0],
		       sysconf(_SC_NPROCESSORS_ONLN));
	return 0;
}
