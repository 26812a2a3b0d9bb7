/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "result.h"

cordon_result *result_new(void)
{
	cordon_result *r = g_new0(cordon_result, 1);
	for (int i = 0; i < 3; i++)
		r->out[i] = g_string_new(NULL);
	return r;
}

void cordon_result_free(cordon_result *r)
{
	if (!r)
		return;
	for (int i = 0; i < 3; i++)
		g_string_free(r->out[i], TRUE);
	g_free(r);
}

int cordon_result_exit_code(const cordon_result *r)
{
	if (!r)
		return -1;
	if (r->status.flags & CORDON_PLUGIN_RUNSTATUS_SIGNALED)
		return 128 + r->status.signal;
	return r->status.exit_code;
}

int cordon_result_signal(const cordon_result *r)
{
	return r && (r->status.flags & CORDON_PLUGIN_RUNSTATUS_SIGNALED) ? r->status.signal : 0;
}

bool cordon_result_timed_out(const cordon_result *r)
{
	return r && (r->status.flags & CORDON_PLUGIN_RUNSTATUS_TIMED_OUT);
}

bool cordon_result_cancelled(const cordon_result *r)
{
	return r && (r->status.flags & CORDON_PLUGIN_RUNSTATUS_CANCELLED);
}

bool cordon_result_oom_killed(const cordon_result *r)
{
	return r && (r->status.flags & CORDON_PLUGIN_RUNSTATUS_OOM);
}

const char *cordon_result_output(const cordon_result *r, int stream, size_t *len)
{
	if (!r || stream < 0 || stream > 2) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = r->out[stream]->len;
	return r->out[stream]->str;
}

bool cordon_result_truncated(const cordon_result *r, int stream)
{
	if (!r || stream < 0 || stream > 2)
		return false;
	return stream ? r->truncated[stream] : (r->truncated[1] || r->truncated[2]);
}

cordon_result *result_copy(const cordon_result *src)
{
	cordon_result *r = result_new();
	r->status = src->status;
	return r;
}
