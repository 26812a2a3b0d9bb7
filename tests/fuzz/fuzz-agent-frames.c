/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the host's side of the agent protocol (agent/client.c): the agent
 * lives inside the sandbox, so after a compromise every byte it sends is the attacker's.
 * The first byte picks the answer being read (bits 0-1: a greeting, a run, a file
 * operation's; bits 2-3: the data frame a file operation wants; bit 4: over a session
 * channel or a one-shot exec) and how the rest is cut into reads (bits 5-7); whatever the
 * bytes, the decoder and the answers' state machines give an answer or -EPROTO, never a
 * crash, a leak, undefined behaviour, or memory beyond one frame.
 * Built and run by tests/fuzz/run.sh (clang -fsanitize=fuzzer,address). */
#include "config.h"

#include "client.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void on_hello(void *ctx, long pid)
{
	(void)ctx;
	(void)pid;
}

static void on_started(void *ctx, long pid)
{
	(void)ctx;
	if (pid <= 0)
		abort(); /* the client refuses a pid the agent's kernel could not give */
}

static void on_output(void *ctx, int stream, const char *data, size_t len)
{
	size_t *total = ctx;
	if ((stream != 1 && stream != 2) || (len && !data))
		abort();
	*total += len;
}

static int on_emit(void *ctx, const void *data, size_t len)
{
	size_t *total = ctx;
	if (len && !data)
		abort();
	*total += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	static const agent_answer_kind kinds[] = { AGENT_ANSWER_HELLO, AGENT_ANSWER_RUN,
						   AGENT_ANSWER_FILE };
	static const uint8_t wants[] = { 0, AGENT_FRAME_DATA, AGENT_FRAME_PATH };
	size_t total = 0;
	agent_sink k = { .ctx = &total,
			 .hello = on_hello,
			 .started = on_started,
			 .output = on_output,
			 .emit = on_emit };
	agent_exchange x = { .kind = kinds[(mode & 3) % 3],
			     .want = wants[((mode >> 2) & 3) % 3],
			     .sink = &k };
	bool session = mode & 0x10;
	size_t chunk = (size_t)(mode >> 5) * 3 + 1; /* 1..22 bytes a read */
	agent_decoder d = { 0 };
	int r = 0;
	for (size_t off = 1; off < size && r == 0; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		r = agent_exchange_feed(&x, session, &d, data + off, n);
	}
	if (r != 0 && r != -EPROTO)
		abort();
	/* nothing is kept but the frame being read: at most one payload */
	if (d.payload && d.want > AGENT_FRAME_MAX)
		abort();
	agent_decoder_clear(&d);
	return 0;
}
