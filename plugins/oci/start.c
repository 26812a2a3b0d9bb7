/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starting a session container: the checked spec and argv, the workspace opened and staged,
 * `ENGINE run -i --rm ... session` up to the agent's HELLO (pulling the image by digest when
 * it is absent), and ending one (END, then EOF). open (session.c) and the pool (pool.c) both
 * start containers here, so neither needs the other. The limits a container gets are the
 * ones it is started for (oci_start): open's are the core's, final (oci_start_for_open).
 */
#include "config.h"

#include "driver.h"
#include "proc.h"
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

void oci_start_for_open(const oci_tier *t, const cordon_plugin_open_spec *spec, oci_start *ret)
{
	*ret = (oci_start){
		.image = spec->image ? spec->image : t->image,
		.trust = spec->trust,
		.egress = spec->egress,
		.workspace = spec->workspace,
		/* as they came: the core merged the tier's, the rules' and the request's
		 * (admission.c); merging the tier's again here would be a second route */
		.limits = spec->limits,
	};
	/* the tier's egress rules come only with governed egress (sandbox.c); the
	 * core's proxy enforces them (CORDON_PLUGIN_DRIVER_EGRESS_PROXY) */
	ret->egress_proxied = spec->egress == CORDON_PLUGIN_EGRESS_GOVERNED &&
			      spec->size >= offsetof(cordon_plugin_open_spec, egress_audit) +
						    sizeof(void *) &&
			      spec->egress_allow;
	if (spec->size >= offsetof(cordon_plugin_open_spec, reserved2)) {
		ret->mounts = spec->mounts;
		ret->n_mounts = spec->n_mounts;
	}
}

/* ---- the spec and argv ------------------------------------------------------------ */

void oci_session_spec(const oci_tier *t, const oci_start *st, const char *name, oci_spec_buf *b)
{
	memset(b, 0, sizeof(*b));
	oci_spec *s = &b->spec;
	s->image = st->image;
	s->trust = st->trust;
	s->egress = st->egress;
	/* governed by cordon's proxy the container keeps --network none, and with the
	 * tier's network: as well the guarantees refuse it (the rules are cordon's) */
	s->network = st->egress == CORDON_PLUGIN_EGRESS_GOVERNED ? t->network : NULL;
	s->egress_proxied = st->egress_proxied;
	size_t n = 0;
	if (st->workspace) {
		/* untrusted work sees the workspace read-only (the guarantees insist) */
		b->mounts[n++] = (oci_mount){ st->workspace, AGENT_SANDBOX_ROOT,
					      st->trust != 1 && st->trust != 2 };
	}
	for (size_t i = 0; i < st->n_extra && i < OCI_MAX_MOUNTS; i++)
		b->mounts[n++] = st->extra[i];
	b->mounts[n++] = (oci_mount){ t->helper, AGENT_PATH, true };
	s->mounts = b->mounts;
	s->n_mounts = n;
	s->limits = st->limits;
	s->user = t->user;
	s->runtime = t->kind->runtime_is_global ? NULL : t->runtime;
	/* cordon's own profile, passed to the CLI that reads it (attach_once) */
	s->seccomp = oci_seccomp_profile_rules ? OCI_SECCOMP_PASSED : NULL;
	s->ulimits = (const char *const *)t->ulimits;
	s->scratch_size = t->scratch;
	s->root_tmpfs = st->workspace == NULL;
	const char *user = t->user ? t->user : "65534:65534";
	if (t->kind->tmpfs_owner_by_id) {
		const char *colon = strchr(user, ':');
		b->tmpfs_owner = xasprintf("uid=%.*s,gid=%s", (int)(colon - user), user, colon + 1);
	} else {
		b->tmpfs_owner = xstrdup("U");
	}
	s->tmpfs_owner = b->tmpfs_owner;
	s->pids_in_sandbox = oci_runtime_is_gvisor(t->runtime);
	s->publish_port = s->network ? t->publish : 0;
	s->name = name;
	b->labels[0] = xstrdup("cordon.managed=1");
	b->labels[1] = xasprintf("cordon.session=%s", name);
	b->labels[2] = xasprintf("cordon.tier=%s", t->name);
	b->labels[3] = xasprintf("cordon.owner=%s", t->owner);
	s->labels = (const char *const *)b->labels;
	s->extra = t->kind->run_extra;
	s->entrypoint = AGENT_PATH;
	s->workdir = AGENT_SANDBOX_ROOT;
	s->interactive = true;
	b->command[0] = xstrdup("session");
	s->command = (const char *const *)b->command;
	if (name && oci_relay_wanted(t)) { /* a session's, not the probe's trial */
		b->relay_dir = oci_relay_dir(name);
		s->relay_dir = b->relay_dir;
	}
}

void oci_spec_clear(oci_spec_buf *b)
{
	for (size_t i = 0; i < sizeof(b->labels) / sizeof(b->labels[0]); i++)
		free(b->labels[i]);
	for (size_t i = 0; i < sizeof(b->command) / sizeof(b->command[0]); i++)
		free(b->command[i]);
	free(b->tmpfs_owner);
	free(b->relay_dir);
	memset(b, 0, sizeof(*b));
}

/* The agent mount is the plugin's own; it is checked like any other except
 * that its target is the reserved agent path. */
static int check_helper(const oci_tier *t, oci_refusal *r)
{
	if (access(t->helper, X_OK) != 0)
		return oci_refuse(r, ENOENT, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(helper_missing),
				  "cordon-agent is missing at %s", t->helper);
	return 0;
}

static void session_name(char *out, size_t len)
{
	uint8_t rnd[12];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		abort(); /* no entropy: never fall back to a guessable name */
	int n = snprintf(out, len, "cordon-");
	for (size_t i = 0; i < sizeof(rnd) && (size_t)n + 2 < len; i++)
		n += snprintf(out + n, len - (size_t)n, "%02x", rnd[i]);
}

/* The checked `run` argv of a session container: attached, the session
 * agent as pid 1. st->workspace is the opened workspace's canonical path,
 * which the guarantees check; the engine gets source (the staged path, or
 * that same path). */
static int start_args(oci_tier *t, const char *engine, const oci_start *st, const oci_workspace *ws,
		      const char *name, const char *cidfile, char ***ret_args, oci_refusal *r)
{
	oci_spec_buf b;
	oci_session_spec(t, st, name, &b);
	b.spec.cidfile = cidfile;
	/* the agent's mount target is reserved: check the caller's part alone */
	b.spec.n_mounts--;
	int ret = oci_guarantees_check(&b.spec, r);
	b.spec.n_mounts++;
	/* what the engine resolves: the staged binds of what was checked (ws[0] the
	 * workspace, ws[1 + i] extra mount i) */
	size_t k = 0;
	if (st->workspace)
		b.mounts[k++].source = oci_workspace_source(&ws[0]);
	for (size_t i = 0; i < st->n_extra; i++)
		b.mounts[k++].source = oci_workspace_source(&ws[1 + i]);
	if (ret == 0)
		ret = check_helper(t, r);
	if (ret == 0 && b.spec.network)
		ret = oci_network_ensure(t, engine, b.spec.network, r);
	*ret_args = ret == 0 ? oci_run_argv(&b.spec) : NULL;
	oci_spec_clear(&b);
	return ret;
}

/* ---- attaching ---------------------------------------------------------------------- */

static void kill_chan(void *ctx) { oci_proc_kill(ctx); }

/* The session agent's greeting on the CLI p (nothing is asked, nothing is cancelled). */
static int await_hello(const oci_tier *t, oci_proc *p, agent_exchange *x, bool *ret_deadline)
{
	*x = (agent_exchange){ .kind = AGENT_ANSWER_HELLO };
	agent_link link = { .in = &p->in,
			    .out = p->out,
			    .err = p->err,
			    .session = true,
			    .ctx = p,
			    .kill = kill_chan };
	return agent_exchange_run(x, &link, t->cli_timeout_ms, -1, NULL, 0, ret_deadline);
}

/* `ENGINE run -i --rm ... session`, up to the session agent's HELLO: from
 * then on the container runs and the CLI relays both ways. */
static int attach_once(oci_sandbox *sb, char *const *args, bool *ret_no_image, oci_refusal *r)
{
	oci_tier *t = sb->tier;
	*ret_no_image = false;
	char **argv = oci_engine_argv(t, sb->engine, (const char *const *)args);
	char **env = oci_engine_env();
	int64_t t0 = oci_now_ms();
	/* the seccomp profile the argv names (/proc/self/fd/OCI_PASS_FD) */
	int pass = oci_seccomp_profile_rules ? oci_seccomp_fd(oci_runtime_is_gvisor(t->runtime), r)
					     : -1;
	if (oci_seccomp_profile_rules && pass < 0) {
		xstrv_free(argv);
		xstrv_free(env);
		return pass; /* r says why */
	}
	int ret = oci_proc_spawn((const char *const *)argv, (const char *const *)env, pass,
				 &sb->chan);
	xstrv_free(argv);
	xstrv_free(env);
	if (ret < 0)
		return oci_refuse(r, -ret, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed),
				  "could not run %s: %s", t->kind->name, strerror(-ret));
	agent_exchange x;
	bool deadline = false;
	int loop = await_hello(t, &sb->chan, &x, &deadline);
	oci_host->log(CORDON_PLUGIN_LOG_DEBUG, t->kind->name, "%s run -i: %s in %lld ms",
		      t->kind->name, x.done && loop == 0 ? "session up" : "failed",
		      (long long)(oci_now_ms() - t0));
	if (x.done && loop == 0) {
		sb->chan_open = true;
		return 0;
	}
	/* Not up: the CLI may still run, and its agent wait on the stdin we
	 * hold for ever. */
	oci_proc_kill(&sb->chan);
	int code = oci_proc_wait(&sb->chan);
	oci_cli_result res = { .err = x.diag,
			       .exit_code = deadline ? -1 : code,
			       .timed_out = deadline };
	if (deadline || (t->kind->daemon && oci_output_says_daemon_down(x.diag)))
		oci_health_note(t, false);
	*ret_no_image = oci_output_says_no_image(x.diag);
	if (x.have_error) {
		*r = x.error;
		return -(r->errnum ? r->errnum : EPROTO);
	}
	if (loop < 0 && !deadline)
		return oci_refuse(r, EPROTO, CORDON_PLUGIN_ERROR_TERMINAL, ERRC(engine_failed),
				  "starting the session container: the agent's output was "
				  "malformed");
	return oci_cli_failure(t, "starting the session container", &res, r);
}

/* `run --pull never` checks the image itself (no `image inspect` first): when it says the
 * image is absent, `pull: never` refuses as the probe's inspect would
 * (container_image_missing), `pull: missing` pulls by digest and tries once more. */
static int attach_or_pull(oci_sandbox *sb, const oci_start *st, char *const *args,
			  const char *cidfile, oci_refusal *r)
{
	bool no_image = false;
	int ret = attach_once(sb, args, &no_image, r);
	if (ret < 0 && no_image) {
		ret = oci_image_pull(sb->tier, sb->engine, st->image, r);
		if (ret == 0) {
			/* the name and id file again: whatever the failed start left goes first */
			oci_container_remove(sb->tier, sb->engine, sb->name);
			if (cidfile)
				unlink(cidfile);
			ret = attach_once(sb, args, &no_image, r);
		}
	}
	return ret;
}

/* gVisor, as root: where the CLI writes the container's id (--cidfile), in root's private
 * directory, so that the OOM watch finds the container's memory cgroup without an
 * `inspect` (oom.c). NULL otherwise: the watch asks the engine. */
static char *cid_path(const oci_sandbox *sb)
{
	if (!oci_runtime_is_gvisor(sb->tier->runtime) || geteuid() != 0 || oci_private_dir() < 0)
		return NULL;
	return xasprintf(OCI_PRIVATE_DIR "/%s.cid", sb->name);
}

/* The id the CLI wrote (64 lower-case hex digits), then the file is gone; "" when none. */
static void take_cid(const char *path, char *cid, size_t len)
{
	cid[0] = '\0';
	if (!path)
		return;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	char buf[128];
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	unlink(path);
	if (n < 64 || len < 65)
		return;
	for (int i = 0; i < 64; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f')))
			return;
	memcpy(cid, buf, 64);
	cid[64] = '\0';
}

/* The extra mounts (ABI 1.4), each the core's descriptor staged as the workspace is. Only
 * as root: unstaged, the engine would resolve a path a swap could redirect, and the probe
 * offers no mounts then (oci_probe). */
static int prepare_mounts(oci_sandbox *sb, oci_start *checked, oci_workspace *ws, oci_refusal *r)
{
	if (checked->n_mounts > OCI_MAX_MOUNTS || (checked->n_mounts && geteuid() != 0))
		return oci_refuse(r, EPERM, CORDON_PLUGIN_ERROR_FORBIDDEN, ERRC(mount_unsupported),
				  "container tiers give mounts only when cordon runs as root");
	for (uint32_t i = 0; i < checked->n_mounts; i++) {
		const cordon_plugin_mount *m = &checked->mounts[i];
		char *name = xasprintf("%s-m%u", sb->name, (unsigned)i);
		int ret = oci_mount_adopt(m, &ws[1 + i], r);
		if (ret == 0)
			ret = oci_workspace_stage(&ws[1 + i], name, r);
		free(name);
		if (ret < 0)
			return ret;
		checked->extra[i] = (oci_mount){ ws[1 + i].real, m->inside,
						 !(m->flags & CORDON_PLUGIN_MOUNT_RW) };
		checked->n_extra = i + 1;
	}
	return 0;
}

/* The workspace, opened once (workspace.c), and the extra mounts, staged (ws[0], ws[1..]),
 * and the checked argv that starts the container on what was opened. No engine call but
 * a governed network's. */
static int prepare(oci_sandbox *sb, const oci_start *st, oci_workspace *ws, const char *cidfile,
		   char ***ret_args, oci_refusal *r)
{
	oci_start checked = *st;
	if (st->workspace) {
		int ret = oci_workspace_open(st->workspace, &ws[0], r);
		if (ret == 0)
			ret = oci_workspace_stage(&ws[0], sb->name, r);
		if (ret < 0)
			return ret;
		checked.workspace = ws[0].real;
	}
	int ret = prepare_mounts(sb, &checked, ws, r);
	if (ret < 0)
		return ret;
	return start_args(sb->tier, sb->engine, &checked, ws, sb->name, cidfile, ret_args, r);
}

static void close_all(oci_workspace *ws)
{
	for (size_t i = 0; i < 1 + OCI_MAX_MOUNTS; i++)
		oci_workspace_close(&ws[i]);
}

int oci_session_start(oci_sandbox *sb, const oci_start *st, oci_refusal *r)
{
	oci_tier *t = sb->tier;
	session_name(sb->name, sizeof(sb->name));
	oci_workspace ws[1 + OCI_MAX_MOUNTS];
	for (size_t i = 0; i < 1 + OCI_MAX_MOUNTS; i++)
		ws[i] = (oci_workspace){ .fd = -1 };
	char **args = NULL;
	oci_runtime_learn(t);
	if (oci_relay_wanted(t) && oci_relay_prepare(t, sb->name, r) < 0)
		return -r->errnum;
	char *cidfile = cid_path(sb);
	int ret = prepare(sb, st, ws, cidfile, &args, r);
	if (ret < 0) {
		close_all(ws);
		free(cidfile);
		oci_relay_remove(t, sb->name);
		return ret;
	}
	ret = attach_or_pull(sb, st, args, cidfile, r);
	xstrv_free(args);
	take_cid(cidfile, sb->cid, sizeof(sb->cid));
	free(cidfile);
	if (ret == 0 && ws[0].fd >= 0 &&
	    (ret = oci_workspace_verify(&ws[0], t, sb->engine, sb->name, r)) < 0)
		oci_chan_drop(sb);
	close_all(ws);
	if (ret < 0) {
		/* a half-created container must not survive a failed start */
		oci_container_remove(t, sb->engine, sb->name);
		return ret;
	}
	oci_health_note(t, true);
	return 0;
}

/* ---- ending ------------------------------------------------------------------------- */

int oci_chan_drop(oci_sandbox *sb)
{
	oci_proc_kill(&sb->chan);
	sb->chan_open = false;
	return oci_proc_wait(&sb->chan);
}

bool oci_chan_close(const oci_tier *t, const char *name, oci_proc *p)
{
	int64_t t0 = oci_now_ms();
	/* END, then EOF: EOF alone would wait for every copy of our write end
	 * (a child this process forked holds one until it execs or exits) */
	uint8_t end[AGENT_FRAME_HEADER];
	agent_end_frame(end);
	if (oci_proc_write(p, end, sizeof(end)) != (ssize_t)sizeof(end))
		oci_host->log(CORDON_PLUGIN_LOG_DEBUG, t->kind->name,
			      "session %s: the CLI took no END (gone already)", name);
	oci_proc_close_in(p);
	bool out_open = true, err_open = true, said = false;
	while (out_open || err_open) {
		int64_t left = t0 + OCI_KILL_TIMEOUT_MS - oci_now_ms();
		if (left <= 0)
			break;
		struct pollfd pfd[2] = { { out_open ? p->out : -1, POLLIN, 0 },
					 { err_open ? p->err : -1, POLLIN, 0 } };
		if (poll(pfd, 2, (int)left) < 0 && errno != EINTR)
			break;
		char buf[4096];
		for (int i = 0; i < 2; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(i == 0 ? p->out : p->err, buf, sizeof(buf));
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				*(i == 0 ? &out_open : &err_open) = false;
			said = said || (i == 1 && n > 0);
		}
	}
	bool in_time = !out_open && !err_open;
	if (!in_time)
		oci_proc_kill(p);
	int code = oci_proc_wait(p);
	oci_host->log(CORDON_PLUGIN_LOG_DEBUG, t->kind->name,
		      "%s run -i: session %s ended (exit %d%s) in %lld ms", t->kind->name, name,
		      code, said ? ", with a message" : "", (long long)(oci_now_ms() - t0));
	/* docker's CLI waits for --rm's removal and fails when it fails; podman's logs a
	 * failed removal and keeps the container's exit code: anything it says at the end
	 * means the removal is not confirmed */
	return in_time && code == 0 && !said;
}

int oci_session_attach(oci_tier *t, const char *engine, const oci_start *st, char *ret_name,
		       size_t name_len, oci_proc *ret_chan, oci_refusal *r)
{
	oci_sandbox sb = { .tier = t, .engine = (char *)engine, .pidfd = -1 };
	int ret = oci_session_start(&sb, st, r);
	if (ret < 0)
		return ret;
	snprintf(ret_name, name_len, "%s", sb.name);
	*ret_chan = sb.chan;
	return 0;
}
