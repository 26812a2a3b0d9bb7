/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The work's output on cordon's own stdout and stderr.
 *
 * Passthrough streams the output as it comes. On a terminal (unless --raw)
 * every byte a terminal would act on is shown instead as \xNN: C0 controls
 * but \n and \t, DEL, C1 controls (U+0080-U+009F in UTF-8) and bytes that
 * are not valid UTF-8 (a lone 0x9b is CSI to an 8-bit terminal), so that
 * work cannot set the clipboard (OSC 52), the title, or clear and redraw
 * what the user reads. A write that fails (the reader went away, the
 * descriptor was closed) marks the stream gone and stops the work.
 *
 * --json prints one object at the end; the strings go through the JSON
 * escaper shared with libcordon (jsonstr.h), valid whatever bytes they hold.
 */
#include "config.h"

#include "cli.h"
#include "jsonstr.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A UTF-8 sequence is at most this long. */
#define UTF8_MAX 4

bool cli_stdio_closed[3];

void cli_stdio_guard(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* Lower descriptors are open by now: this one lands on fd. */
		int n = open("/dev/null", O_RDWR);
		cli_stdio_closed[fd] = true;
		if (n >= 0 && n != fd)
			close(n);
	}
}

static bool is_shown(unsigned char c) { return c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f); }

static void append_hidden(GString *o, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g_string_append_printf(o, "\\x%02x", (unsigned char)p[i]);
}

/* Escapes len bytes at p into o. Returns how many bytes at the end are the
 * start of a UTF-8 sequence that the next chunk may complete. */
static size_t escape_controls(GString *o, const char *p, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x80) {
			if (is_shown(c))
				g_string_append_c(o, (char)c);
			else
				append_hidden(o, p + i, 1);
			i++;
			continue;
		}
		gunichar u = g_utf8_get_char_validated(p + i, (gssize)(len - i));
		if (u == (gunichar)-2 && len - i < UTF8_MAX)
			return len - i; /* incomplete at the end: wait for the rest */
		if (u == (gunichar)-1 || u == (gunichar)-2) {
			append_hidden(o, p + i, 1);
			i++;
			continue;
		}
		size_t n = (size_t)(g_utf8_next_char(p + i) - (p + i));
		if (u < 0xa0)
			append_hidden(o, p + i, n); /* a C1 control */
		else
			g_string_append_len(o, p + i, (gssize)n);
		i += n;
	}
	return 0;
}

/* Returns 0, -EINTR when a stop was asked for (the rest is not written: the
 * run is being cancelled), or the error that ends the stream. */
static int write_all(const cli_out *o, const char *p, size_t n)
{
	while (n) {
		if (*o->stop)
			return -EINTR;
		ssize_t w = write(o->fd, p, n);
		if (w < 0 && errno == EAGAIN) { /* someone made it non-blocking */
			struct pollfd pfd = { .fd = o->fd, .events = POLLOUT };
			poll(&pfd, 1, -1);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The write's outcome: a stop leaves the stream usable, an error ends it. */
static bool out_result(cli_out *o, int r)
{
	if (r < 0 && r != -EINTR)
		o->gone = true;
	return r == 0;
}

void cli_out_init(cli_out *o, int fd, bool raw, const volatile sig_atomic_t *stop)
{
	*o = (cli_out){
		.fd = fd, .escape = !raw && isatty(fd), .gone = cli_stdio_closed[fd], .stop = stop
	};
}

bool cli_out_write(cli_out *o, const char *data, size_t len)
{
	if (o->gone)
		return false;
	if (!o->escape)
		return out_result(o, write_all(o, data, len));
	g_autoptr(GString) in = g_string_new_len(o->held, (gssize)o->nheld);
	g_string_append_len(in, data, (gssize)len);
	g_autoptr(GString) esc = g_string_sized_new(in->len + 16);
	o->nheld = escape_controls(esc, in->str, in->len);
	memcpy(o->held, in->str + in->len - o->nheld, o->nheld);
	return out_result(o, write_all(o, esc->str, esc->len));
}

void cli_out_flush(cli_out *o)
{
	if (!o->nheld || o->gone)
		return;
	g_autoptr(GString) esc = g_string_new(NULL);
	append_hidden(esc, o->held, o->nheld); /* never completed: not UTF-8 */
	o->nheld = 0;
	out_result(o, write_all(o, esc->str, esc->len));
}

char *cli_json_string(const char *s, size_t len)
{
	GString *o = g_string_new(NULL);
	jsonstr_append(o, s ? s : "", s ? len : 0);
	return g_string_free(o, FALSE);
}

void cli_report_run(const cordon_result *res)
{
	if (cordon_result_truncated(res, 0))
		fprintf(stderr, "cordon: output was truncated at the tier's cap\n");
	if (cordon_result_timed_out(res))
		fprintf(stderr, "cordon: the work timed out and was killed\n");
	if (cordon_result_oom_killed(res))
		fprintf(stderr, "cordon: the work ran out of memory and was killed\n");
}

int cli_work_status(const cordon_result *res, bool say)
{
	int code = cordon_result_exit_code(res);
	if (cordon_result_signal(res) || code < 128)
		return code;
	if (say)
		fprintf(stderr,
			"cordon: the work exited with status %d (exit %d: a status of 128-255 the "
			"work returns itself, never a signal or cordon's own)\n",
			code, EXIT_WORK_HIGH);
	return EXIT_WORK_HIGH;
}

int cli_print_json(const cordon_result *res, const char *tier, cordon_containment c)
{
	size_t olen, elen;
	const char *out = cordon_result_output(res, 1, &olen);
	const char *err = cordon_result_output(res, 2, &elen);
	g_autofree char *jt = cli_json_string(tier, tier ? strlen(tier) : 0);
	g_autofree char *jo = cli_json_string(out, olen);
	g_autofree char *je = cli_json_string(err, elen);
	printf("{\"tier\":%s,\"containment\":\"%s\",\"exit_code\":%d,\"signal\":%d,"
	       "\"timed_out\":%s,\"oom_killed\":%s,\"truncated\":%s,\"stdout\":%s,\"stderr\":%s}\n",
	       jt, cordon_containment_to_string(c), cordon_result_exit_code(res),
	       cordon_result_signal(res), cordon_result_timed_out(res) ? "true" : "false",
	       cordon_result_oom_killed(res) ? "true" : "false",
	       cordon_result_truncated(res, 0) ? "true" : "false", jo, je);
	return cli_work_status(res, false);
}
