/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON string escaper (core/jsonstr.h), shared by libcordon and the CLI:
 * a property test. Random byte strings (biased towards controls, NUL,
 * continuation bytes and lead bytes) must always come out as one valid
 * JSON string, by tests/jsoncheck.h and by python3's strict parser, which
 * must also decode each to the input with every byte that is not part of a
 * valid UTF-8 sequence replaced by U+FFFD.
 */
#include "config.h"

#include "testutil.h"
#include "jsoncheck.h"
#include "jsonstr.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define SAMPLES 20000
#define SAMPLE_MAX 48
#define PYTHON "/usr/bin/python3"

/* Bytes where escapers go wrong, more often than uniform bytes would be. */
static guint8 random_byte(GRand *rng)
{
	static const guint8 edge[] = { 0x00, 0x1b, 0x7f, '"',  '\\', '\n', 0x80, 0x9b, 0xbf,
				       0xc0, 0xc2, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff };
	switch (g_rand_int_range(rng, 0, 4)) {
	case 0: return edge[g_rand_int_range(rng, 0, G_N_ELEMENTS(edge))];
	case 1: return (guint8)g_rand_int_range(rng, 0x20, 0x7f);
	case 2: return (guint8)g_rand_int_range(rng, 0x80, 0xc0);
	default: return (guint8)g_rand_int_range(rng, 0, 0x100);
	}
}

static char *escape(const guint8 *b, size_t n)
{
	GString *o = g_string_new(NULL);
	jsonstr_append(o, (const char *)b, n);
	return g_string_free(o, FALSE);
}

/* Each line: the input in hex, a tab, its JSON. */
static void add_line(GString *lines, const guint8 *b, size_t n, const char *json)
{
	for (size_t i = 0; i < n; i++)
		g_string_append_printf(lines, "%02x", b[i]);
	g_string_append_printf(lines, "\t%s\n", json);
}

static const char python_check[] =
	"import codecs, json, sys\n"
	"codecs.register_error('perbyte', lambda e: ('\\ufffd' * (e.end - e.start), e.end))\n"
	"bad = 0\n"
	"for line in open(sys.argv[1], encoding='utf-8'):\n"
	"    h, j = line.rstrip('\\n').split('\\t', 1)\n"
	"    want = bytes.fromhex(h).decode('utf-8', 'perbyte')\n"
	"    if json.loads(j) != want:\n"
	"        bad += 1\n"
	"        print('mismatch:', h, j)\n"
	"sys.exit(1 if bad else 0)\n";

START_TEST(test_random_bytes_give_valid_json)
{
	GRand *rng = g_rand_new_with_seed(0xc0d0);
	g_autoptr(GString) lines = g_string_new(NULL);
	guint8 b[SAMPLE_MAX];
	for (int s = 0; s < SAMPLES; s++) {
		size_t n = (size_t)g_rand_int_range(rng, 0, SAMPLE_MAX + 1);
		for (size_t i = 0; i < n; i++)
			b[i] = random_byte(rng);
		g_autofree char *json = escape(b, n);
		ck_assert_msg(json_is_valid(json), "not valid JSON: %s", json);
		/* Never a raw control character: not even the tab the lines below split on. */
		ck_assert_ptr_null(memchr(json, '\t', strlen(json)));
		add_line(lines, b, n, json);
	}
	g_rand_free(rng);
	if (!g_file_test(PYTHON, G_FILE_TEST_IS_EXECUTABLE))
		return; /* jsoncheck.h has checked every sample already */
	g_autofree char *dir = testutil_tmpdir();
	g_autofree char *path = g_build_filename(dir, "samples", NULL);
	ck_assert(g_file_set_contents(path, lines->str, (gssize)lines->len, NULL));
	const char *argv[] = { PYTHON, "-c", python_check, path, NULL };
	g_autofree char *out = NULL, *err = NULL;
	int status = -1;
	ck_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
			       &status, NULL));
	testutil_rmtree(dir);
	ck_assert_msg(g_spawn_check_wait_status(status, NULL), "python3 disagrees:\n%.2000s%.2000s",
		      out, err);
}
END_TEST

START_TEST(test_known_encodings)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{ "a\0b", 3, "\"a\\u0000b\"" },
		{ "\x1b[2J", 4, "\"\\u001b[2J\"" },
		{ "\xff", 1, "\"\\ufffd\"" },
		{ "\xe2\x82", 2, "\"\\ufffd\\ufffd\"" },            /* truncated */
		{ "\xc0\x80", 2, "\"\\ufffd\\ufffd\"" },            /* overlong NUL */
		{ "\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"" }, /* a surrogate */
		{ "\xc3\xa9\xe2\x82\xac", 5, "\"\xc3\xa9\xe2\x82\xac\"" },
		{ "\xe2\x80\xa8", 3, "\"\\u2028\"" },
		{ "\"\\\t", 3, "\"\\\"\\\\\\t\"" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *json = escape((const guint8 *)cases[i].in, cases[i].len);
		ck_assert_str_eq(json, cases[i].out);
	}
}
END_TEST

static Suite *jsonstr_suite(void)
{
	Suite *s = suite_create("jsonstr");
	TCase *tc = tcase_create("escaper");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_known_encodings);
	tcase_add_test(tc, test_random_bytes_give_valid_json);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return testutil_run(jsonstr_suite()); }
