/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Resource limits of the kernel tier (limits.h). */
#include "config.h"

#include "limits.h"
#include "nsinit-proto.h"
#include "owner.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const cg_names[LIMITS_CG_COUNT] = { "memory", "pids", "cpu" };

/* ---- host detection --------------------------------------------------------------- */

static bool is_octal(char c) { return c >= '0' && c <= '7'; }

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && is_octal(s[1]) && is_octal(s[2]) && is_octal(s[3])) {
			unsigned v = (unsigned)(s[1] - '0') << 6 | (unsigned)(s[2] - '0') << 3 |
				     (unsigned)(s[3] - '0');
			*d++ = (char)v;
			s += 3;
		} else {
			*d++ = *s;
		}
	}
}

static bool csv_has(const char *csv, const char *word)
{
	g_auto(GStrv) parts = g_strsplit(csv, ",", -1);
	return g_strv_contains((const char *const *)parts, word);
}

/* The process's cgroup path in the hierarchy that holds controller (v1), or
 * in the unified hierarchy (controller NULL). */
static char *own_cgroup(const char *controller)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/cgroup", &text, NULL, NULL))
		return NULL;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, ":", 3);
		if (g_strv_length(f) != 3)
			continue;
		if (controller ? csv_has(f[1], controller) : (strcmp(f[0], "0") == 0 && !f[1][0]))
			return g_strdup(f[2]);
	}
	return NULL;
}

/* Joins a mount (its root and mount point) with a cgroup path. */
static bool cg_dir(const char *mnt_root, const char *mnt_point, const char *path, char *ret)
{
	size_t rl = strlen(mnt_root);
	if (strcmp(mnt_root, "/") == 0)
		rl = 0;
	else if (strncmp(path, mnt_root, rl) != 0 || (path[rl] && path[rl] != '/'))
		return false; /* our group is outside what this mount shows */
	int n = snprintf(ret, PATH_MAX, "%s%s", mnt_point, path + rl);
	if (n <= 0 || n >= PATH_MAX)
		return false;
	size_t len = strlen(ret);
	while (len > 1 && ret[len - 1] == '/')
		ret[--len] = '\0';
	return true;
}

static bool file_lists(const char *dir, const char *file, const char *word)
{
	g_autofree char *p = g_build_filename(dir, file, NULL);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(p, &text, NULL, NULL))
		return false;
	g_auto(GStrv) words = g_strsplit_set(g_strstrip(text), " \n", -1);
	return g_strv_contains((const char *const *)words, word);
}

static void detect_mount(limits_host *h, char **f, int nf)
{
	int dash = -1;
	for (int i = 6; i < nf; i++)
		if (strcmp(f[i], "-") == 0) {
			dash = i;
			break;
		}
	if (dash < 0 || dash + 3 >= nf)
		return;
	const char *fstype = f[dash + 1], *superopts = f[dash + 3];
	unescape(f[3]);
	unescape(f[4]);
	if (strcmp(fstype, "cgroup2") == 0 && !h->v2) {
		g_autofree char *path = own_cgroup(NULL);
		if (!path || !cg_dir(f[3], f[4], path, h->v2_dir) || access(h->v2_dir, W_OK) < 0)
			return;
		for (int c = 0; c < LIMITS_CG_COUNT; c++)
			h->v2_has[c] = file_lists(h->v2_dir, "cgroup.subtree_control", cg_names[c]);
		h->v2 = h->v2_has[0] || h->v2_has[1] || h->v2_has[2];
		return;
	}
	if (strcmp(fstype, "cgroup") != 0)
		return;
	for (int c = 0; c < LIMITS_CG_COUNT; c++) {
		if (h->v1_has[c] || !csv_has(superopts, cg_names[c]))
			continue;
		g_autofree char *path = own_cgroup(cg_names[c]);
		if (path && cg_dir(f[3], f[4], path, h->v1_dir[c]) &&
		    access(h->v1_dir[c], W_OK) == 0)
			h->v1_has[c] = true;
	}
}

static limits_host host;
static gsize host_once;
static bool cgroups_disabled;

const limits_host *limits_host_get(void)
{
	static const limits_host none;
	if (g_once_init_enter(&host_once)) {
		g_autofree char *text = NULL;
		if (g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL)) {
			g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
			for (char **l = lines; *l; l++) {
				g_auto(GStrv) f = g_strsplit(*l, " ", -1);
				detect_mount(&host, f, (int)g_strv_length(f));
			}
		}
		g_once_init_leave(&host_once, 1);
	}
	return cgroups_disabled ? &none : &host;
}

void limits_host_disable_cgroups(bool disable) { cgroups_disabled = disable; }

/* ---- the plan ----------------------------------------------------------------------- */

const char *limits_via_name(limit_via v)
{
	switch (v) {
	case LIMIT_VIA_HOST_TIMER: return "host timer, kills the pid namespace";
	case LIMIT_VIA_CORE: return "capped capture";
	case LIMIT_VIA_CGROUP2: return "cgroup v2";
	case LIMIT_VIA_CGROUP1: return "cgroup v1";
	case LIMIT_VIA_RLIMIT: return "rlimit";
	case LIMIT_VIA_IMPOSSIBLE: return "not enforceable here";
	case LIMIT_VIA_UNSET: break;
	}
	return "unset";
}

static const char *const limit_names[CORDON_PLUGIN_LIMIT_COUNT] = {
	"wall", "memory", "pids", "cpu", "output", "nofile", "fsize",
};

/* An rlimit above the host's hard limit cannot be raised without privilege;
 * the host's lower limit then holds, which is stricter. */
static void add_rlimit(limits_plan *p, int resource, uint64_t value)
{
	struct rlimit cur;
	if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && value > cur.rlim_max)
		value = cur.rlim_max;
	p->rlimits[p->nrlimits].resource = resource;
	p->rlimits[p->nrlimits].value = value;
	p->nrlimits++;
}

/* A cgroup controller's mechanism: v2 when delegated, else v1, else none. */
static limit_via cg_via(const limits_host *h, int c, limits_plan *p)
{
	if (h->v2 && h->v2_has[c]) {
		p->cgroup2 = true;
		return LIMIT_VIA_CGROUP2;
	}
	if (h->v1_has[c]) {
		p->cgroup1[c] = true;
		return LIMIT_VIA_CGROUP1;
	}
	return LIMIT_VIA_UNSET;
}

static void set_default(limits_plan *p, int which, uint64_t value)
{
	if (!(p->set & (1u << which))) {
		p->value[which] = value;
		p->set |= 1u << which;
	}
}

uint64_t limits_plan_scratch_cap(const limits_plan *p)
{
	return p->via[CORDON_PLUGIN_LIMIT_MEMORY] == LIMIT_VIA_RLIMIT
		       ? p->value[CORDON_PLUGIN_LIMIT_MEMORY]
		       : 0;
}

bool limits_plan_equal(const limits_plan *a, const limits_plan *b)
{
	if (a->set != b->set || a->cgroup2 != b->cgroup2 || a->nrlimits != b->nrlimits ||
	    memcmp(a->value, b->value, sizeof(a->value)) != 0 ||
	    memcmp(a->via, b->via, sizeof(a->via)) != 0 ||
	    memcmp(a->cgroup1, b->cgroup1, sizeof(a->cgroup1)) != 0)
		return false;
	for (int i = 0; i < a->nrlimits; i++)
		if (a->rlimits[i].resource != b->rlimits[i].resource ||
		    a->rlimits[i].value != b->rlimits[i].value)
			return false;
	return true;
}

int limits_nofile_check(const cordon_plugin_limits *l, char *why, size_t whylen)
{
	if (!l || !(l->set & (1u << CORDON_PLUGIN_LIMIT_NOFILE)) ||
	    l->value[CORDON_PLUGIN_LIMIT_NOFILE] >= NSINIT_NOFILE_FLOOR)
		return 0;
	snprintf(why, whylen,
		 "nofile %" PRIu64 " is below %d, the least the kernel tier's "
		 "launcher needs (it moves a run's descriptors to %d and up under the work's limit "
		 "before it starts the work)",
		 l->value[CORDON_PLUGIN_LIMIT_NOFILE], NSINIT_NOFILE_FLOOR, NSINIT_FD_MOVE_BASE);
	return -EPERM;
}

int limits_plan_make(const cordon_plugin_limits *want, limits_plan *ret, char *why, size_t whylen)
{
	int r = limits_nofile_check(want, why, whylen);
	if (r < 0)
		return r;
	const limits_host *h = limits_host_get();
	limits_plan p = { 0 };
	if (want) {
		p.set = want->set & ((1u << CORDON_PLUGIN_LIMIT_COUNT) - 1);
		memcpy(p.value, want->value, sizeof(p.value));
	}
	set_default(&p, CORDON_PLUGIN_LIMIT_MEMORY, LIMITS_DEFAULT_MEMORY);
	set_default(&p, CORDON_PLUGIN_LIMIT_PIDS, LIMITS_DEFAULT_PIDS);
	set_default(&p, CORDON_PLUGIN_LIMIT_NOFILE, LIMITS_DEFAULT_NOFILE);

	p.via[CORDON_PLUGIN_LIMIT_WALL_MS] = LIMIT_VIA_HOST_TIMER;
	p.via[CORDON_PLUGIN_LIMIT_OUTPUT] = LIMIT_VIA_CORE;

	p.via[CORDON_PLUGIN_LIMIT_MEMORY] = cg_via(h, LIMITS_CG_MEMORY, &p);
	if (!p.via[CORDON_PLUGIN_LIMIT_MEMORY]) {
		p.via[CORDON_PLUGIN_LIMIT_MEMORY] = LIMIT_VIA_RLIMIT;
		add_rlimit(&p, RLIMIT_AS, p.value[CORDON_PLUGIN_LIMIT_MEMORY]);
	}
	p.via[CORDON_PLUGIN_LIMIT_PIDS] = cg_via(h, LIMITS_CG_PIDS, &p);
	if (!p.via[CORDON_PLUGIN_LIMIT_PIDS]) {
		p.via[CORDON_PLUGIN_LIMIT_PIDS] = LIMIT_VIA_RLIMIT;
		add_rlimit(&p, RLIMIT_NPROC, p.value[CORDON_PLUGIN_LIMIT_PIDS]);
	}
	if (p.set & (1u << CORDON_PLUGIN_LIMIT_CPU_MILLI)) {
		p.via[CORDON_PLUGIN_LIMIT_CPU_MILLI] = cg_via(h, LIMITS_CG_CPU, &p);
		if (!p.via[CORDON_PLUGIN_LIMIT_CPU_MILLI]) {
			p.via[CORDON_PLUGIN_LIMIT_CPU_MILLI] = LIMIT_VIA_IMPOSSIBLE;
			snprintf(why, whylen,
				 "a cpu limit needs a cgroup cpu controller: no delegated "
				 "cgroup v2 and no writable cgroup v1 cpu hierarchy on this host");
			return -EPERM;
		}
	}
	p.via[CORDON_PLUGIN_LIMIT_NOFILE] = LIMIT_VIA_RLIMIT;
	add_rlimit(&p, RLIMIT_NOFILE, p.value[CORDON_PLUGIN_LIMIT_NOFILE]);
	if (p.set & (1u << CORDON_PLUGIN_LIMIT_FSIZE)) {
		p.via[CORDON_PLUGIN_LIMIT_FSIZE] = LIMIT_VIA_RLIMIT;
		add_rlimit(&p, RLIMIT_FSIZE, p.value[CORDON_PLUGIN_LIMIT_FSIZE]);
	}
	add_rlimit(&p, RLIMIT_CORE, 0); /* no core files: they write memory to disk */
	*ret = p;
	return 0;
}

void limits_plan_describe(const limits_plan *p, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int i = 0; i < CORDON_PLUGIN_LIMIT_COUNT && off < len; i++) {
		if (!p->via[i])
			continue;
		int n;
		/* RLIMIT_AS does not see tmpfs pages: the private tmpfs is sized within it. */
		const char *also = i == CORDON_PLUGIN_LIMIT_MEMORY && limits_plan_scratch_cap(p)
					   ? " (address space; /tmp and /dev/shm sized within it)"
					   : "";
		if (p->set & (1u << i))
			n = snprintf(buf + off, len - off, "%s%s %" PRIu64 ": %s%s",
				     off ? "; " : "", limit_names[i], p->value[i],
				     limits_via_name(p->via[i]), also);
		else
			n = snprintf(buf + off, len - off, "%s%s: %s", off ? "; " : "",
				     limit_names[i], limits_via_name(p->via[i]));
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

/* ---- per-run groups ---------------------------------------------------------------- */

static int write_value(const char *dir, const char *file, const char *value, bool optional)
{
	g_autofree char *p = g_build_filename(dir, file, NULL);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return optional && errno == ENOENT ? 0 : -errno;
	ssize_t n = write(fd, value, strlen(value));
	int r = n < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* Names carry our owner token (common/owner.h), a sequence and a random tag:
 * a group left behind by a process that died (its pid since reused) must not
 * collide with ours, and only groups whose creator is certainly gone are
 * ever collected. An empty leftover of that exact name is removed; a busy
 * one is never touched. */
static int make_group(limits_cgroup *cg, const char *base, char *why, size_t whylen)
{
	static gint seq;
	char owner[OWNER_TOKEN_MAX];
	int tok = owner_token_self(owner);
	if (tok < 0) {
		snprintf(why, whylen, "cannot tell this process's owner token from /proc: %s",
			 g_strerror(-tok));
		return tok;
	}
	char *dir = cg->dirs[cg->ndirs];
	int n = snprintf(dir, PATH_MAX, "%s/cordon-%s-%d-%08x", base, owner,
			 g_atomic_int_add(&seq, 1), g_random_int());
	if (n <= 0 || n >= PATH_MAX)
		return -ENAMETOOLONG;
	int r = mkdir(dir, 0755);
	if (r < 0 && errno == EEXIST && rmdir(dir) == 0)
		r = mkdir(dir, 0755);
	if (r < 0) {
		int e = errno;
		snprintf(why, whylen, "cannot create the control group %s: %s", dir, g_strerror(e));
		return -e;
	}
	cg->ndirs++;
	return cg->ndirs - 1;
}

/* The file a joiner writes "0" to. Every joiner is single-threaded (a run's
 * init, the work before its exec, the process jail's supervisor), so on v1
 * it is `tasks`, which moves the writing thread: the kernel then skips the
 * kernel-wide cgroup_threadgroup_rwsem (seen on 6.18), whose write lock, taken when it
 * has been idle, waits an RCU grace period (4-21 ms here) that the joiner
 * paid on the run's critical path with cgroup.procs. On v2 `tasks` does not
 * exist (cgroup.threads is for threaded groups only). */
static int open_procs(limits_cgroup *cg, int i, bool v1)
{
	g_autofree char *p = g_build_filename(cg->dirs[i], v1 ? "tasks" : "cgroup.procs", NULL);
	cg->procs_fd[i] = open(p, O_WRONLY | O_CLOEXEC);
	return cg->procs_fd[i] < 0 ? -errno : 0;
}

static int setup_v2(const limits_plan *p, const limits_host *h, limits_cgroup *cg, char *why,
		    size_t whylen)
{
	int i = make_group(cg, h->v2_dir, why, whylen);
	if (i < 0)
		return i;
	cg->v2 = true;
	char v[64];
	int r = 0;
	if (p->via[CORDON_PLUGIN_LIMIT_MEMORY] == LIMIT_VIA_CGROUP2) {
		snprintf(v, sizeof(v), "%" PRIu64, p->value[CORDON_PLUGIN_LIMIT_MEMORY]);
		r = write_value(cg->dirs[i], "memory.max", v, false);
		if (r >= 0)
			r = write_value(cg->dirs[i], "memory.swap.max", "0", true);
		if (r >= 0) {
			g_autofree char *e = g_build_filename(cg->dirs[i], "memory.events", NULL);
			cg->events_fd = open(e, O_RDONLY | O_CLOEXEC);
		}
	}
	if (r >= 0 && p->via[CORDON_PLUGIN_LIMIT_PIDS] == LIMIT_VIA_CGROUP2) {
		snprintf(v, sizeof(v), "%" PRIu64, p->value[CORDON_PLUGIN_LIMIT_PIDS]);
		r = write_value(cg->dirs[i], "pids.max", v, false);
	}
	if (r >= 0 && p->via[CORDON_PLUGIN_LIMIT_CPU_MILLI] == LIMIT_VIA_CGROUP2) {
		snprintf(v, sizeof(v), "%" PRIu64 " 100000",
			 p->value[CORDON_PLUGIN_LIMIT_CPU_MILLI] * 100);
		r = write_value(cg->dirs[i], "cpu.max", v, false);
	}
	if (r >= 0)
		r = open_procs(cg, i, false);
	if (r < 0)
		snprintf(why, whylen, "cannot configure the control group %s: %s", cg->dirs[i],
			 g_strerror(-r));
	return r;
}

static int setup_v1(const limits_plan *p, const limits_host *h, int c, limits_cgroup *cg, char *why,
		    size_t whylen)
{
	int i = make_group(cg, h->v1_dir[c], why, whylen);
	if (i < 0)
		return i;
	char v[64];
	int r = 0;
	switch (c) {
	case LIMITS_CG_MEMORY:
		snprintf(v, sizeof(v), "%" PRIu64, p->value[CORDON_PLUGIN_LIMIT_MEMORY]);
		r = write_value(cg->dirs[i], "memory.limit_in_bytes", v, false);
		/* No escape into swap: memory+swap gets the same bound. */
		if (r >= 0)
			r = write_value(cg->dirs[i], "memory.memsw.limit_in_bytes", v, true);
		if (r >= 0) {
			g_autofree char *e = g_build_filename(cg->dirs[i], "memory.oom_control",
							      NULL);
			cg->events_fd = open(e, O_RDONLY | O_CLOEXEC);
		}
		break;
	case LIMITS_CG_PIDS:
		snprintf(v, sizeof(v), "%" PRIu64, p->value[CORDON_PLUGIN_LIMIT_PIDS]);
		r = write_value(cg->dirs[i], "pids.max", v, false);
		break;
	case LIMITS_CG_CPU:
		r = write_value(cg->dirs[i], "cpu.cfs_period_us", "100000", false);
		snprintf(v, sizeof(v), "%" PRIu64, p->value[CORDON_PLUGIN_LIMIT_CPU_MILLI] * 100);
		if (r >= 0)
			r = write_value(cg->dirs[i], "cpu.cfs_quota_us", v, false);
		break;
	}
	if (r >= 0)
		r = open_procs(cg, i, true);
	if (r < 0)
		snprintf(why, whylen, "cannot configure the control group %s: %s", cg->dirs[i],
			 g_strerror(-r));
	return r;
}

/* Removes a control group once its last tasks have left: the tasks of a
 * killed namespace may take a moment to exit. Bounded (200 ms). */
static int rmdir_settled(const char *dir)
{
	for (int tries = 0; tries < 200; tries++) {
		if (rmdir(dir) == 0)
			return 0;
		if (errno != EBUSY)
			return -errno;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

/* Groups of ours whose creator is gone (a host that crashed or was killed
 * between a run's start and its end): removed when empty. */
static int gc_base(const char *base)
{
	GDir *d = g_dir_open(base, 0, NULL);
	if (!d)
		return 0;
	int removed = 0;
	const char *name;
	while ((name = g_dir_read_name(d))) {
		if (!g_str_has_prefix(name, "cordon-") ||
		    owner_token_state(name + strlen("cordon-"), NULL) != OWNER_DEAD)
			continue; /* alive, not ours to tell, or not one of ours: leave it */
		/* No waiting here: every process pays for this scan, and a
		 * group still busy is left for a later one. */
		g_autofree char *dir = g_build_filename(base, name, NULL);
		if (rmdir(dir) == 0)
			removed++;
	}
	g_dir_close(d);
	return removed;
}

int limits_gc(void)
{
	const limits_host *h = limits_host_get();
	int removed = 0;
	if (h->v2)
		removed += gc_base(h->v2_dir);
	for (int c = 0; c < LIMITS_CG_COUNT; c++)
		if (h->v1_has[c])
			removed += gc_base(h->v1_dir[c]);
	return removed;
}

int limits_cgroup_create(const limits_plan *p, limits_cgroup *cg, char *why, size_t whylen)
{
	const limits_host *h = limits_host_get();
	static gsize gc_once;
	if (g_once_init_enter(&gc_once)) {
		limits_gc();
		g_once_init_leave(&gc_once, 1);
	}
	memset(cg, 0, sizeof(*cg));
	cg->events_fd = -1;
	for (int c = 0; c < LIMITS_CG_COUNT; c++)
		cg->procs_fd[c] = -1;
	int r = 0;
	if (p->cgroup2)
		r = setup_v2(p, h, cg, why, whylen);
	for (int c = 0; r >= 0 && c < LIMITS_CG_COUNT; c++)
		if (p->cgroup1[c])
			r = setup_v1(p, h, c, cg, why, whylen);
	if (r < 0) {
		limits_cgroup_destroy(cg);
		return r;
	}
	return 0;
}

static uint64_t oom_kills(const limits_cgroup *cg)
{
	if (cg->events_fd < 0)
		return 0;
	char buf[1024];
	ssize_t n = pread(cg->events_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *k = strstr(buf, "oom_kill ");
	return k ? strtoull(k + 9, NULL, 10) : 0;
}

void limits_cgroup_begin(limits_cgroup *cg) { cg->oom_base = oom_kills(cg); }

bool limits_cgroup_oom_killed(const limits_cgroup *cg) { return oom_kills(cg) > cg->oom_base; }

void limits_cgroup_destroy(limits_cgroup *cg)
{
	for (int c = 0; c < LIMITS_CG_COUNT; c++)
		if (cg->procs_fd[c] >= 0) {
			close(cg->procs_fd[c]);
			cg->procs_fd[c] = -1;
		}
	if (cg->events_fd >= 0) {
		close(cg->events_fd);
		cg->events_fd = -1;
	}
	for (int i = cg->ndirs - 1; i >= 0; i--)
		rmdir_settled(cg->dirs[i]);
	cg->ndirs = 0;
}

int limits_jail_group(limits_cgroup *cg, char *why, size_t whylen)
{
	const limits_host *h = limits_host_get();
	memset(cg, 0, sizeof(*cg));
	cg->events_fd = -1;
	for (int c = 0; c < LIMITS_CG_COUNT; c++)
		cg->procs_fd[c] = -1;
	const char *base = h->v2 && h->v2_has[LIMITS_CG_PIDS] ? h->v2_dir
			   : h->v1_has[LIMITS_CG_PIDS]        ? h->v1_dir[LIMITS_CG_PIDS]
							      : NULL;
	if (!base) {
		snprintf(why, whylen, "no writable cgroup v2 nor v1 pids hierarchy");
		return -ENOTSUP;
	}
	cg->v2 = base == h->v2_dir;
	int i = make_group(cg, base, why, whylen);
	int r = i < 0 ? i : open_procs(cg, i, !cg->v2);
	if (i >= 0 && r < 0)
		snprintf(why, whylen, "cannot open %s/%s: %s", cg->dirs[i],
			 cg->v2 ? "cgroup.procs" : "tasks", g_strerror(-r));
	if (r < 0)
		limits_cgroup_destroy(cg);
	return r;
}

/* One pass over a group's cgroup.procs: SIGKILLs each pid listed; returns
 * how many were, or a negative errno. (A process listed, then reaped before
 * the kill, frees its pid: one reused within those microseconds would be
 * killed; pids are handed out in increasing order, so that needs a wrap.) */
static int kill_listed(const char *dir)
{
	g_autofree char *p = g_build_filename(dir, "cgroup.procs", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;
	if (!g_file_get_contents(p, &text, NULL, &e))
		return -EIO;
	int listed = 0;
	for (char *s = text, *end; *s; s = end) {
		long pid = strtol(s, &end, 10);
		if (end == s)
			break;
		if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
			listed++;
	}
	return listed;
}

int limits_cgroup_kill(const limits_cgroup *cg, int ms)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t until = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + ms;
	/* v2 (5.14+) kills the whole group at once, forks in flight included. */
	if (cg->v2 && cg->ndirs > 0)
		write_value(cg->dirs[0], "cgroup.kill", "1", true);
	for (;;) {
		int left = 0;
		for (int i = 0; i < cg->ndirs; i++) {
			int n = kill_listed(cg->dirs[i]);
			if (n < 0)
				return n;
			left += n;
		}
		if (left == 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 >= until)
			return -ETIMEDOUT;
		struct timespec tick = { 0, 1000000 };
		nanosleep(&tick, NULL);
	}
}
