/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whether the host's OOM killer ended a gVisor sandbox. Under runc the helper
 * sees an OOM kill of the work from inside the container's memory cgroup and
 * says so in its status; under gVisor the host's memory cgroup holds the
 * whole sandbox, which the OOM killer takes at once, helper included, and
 * by the time the session's end is seen the engine has removed the container
 * (--rm) and its cgroup: neither `inspect` nor the cgroup's files can tell.
 *
 * So a gVisor session registers, while it runs, an eventfd for its memory
 * cgroup's OOM notifications (cgroup v1, memory.oom_control through
 * cgroup.event_control). The eventfd outlives the cgroup; the kernel also
 * signals it once when the cgroup is removed, so a removed cgroup's count
 * says OOM only above that one.
 */
#include "config.h"

#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEMCG_V1 "/sys/fs/cgroup/memory"
/* how long a removed cgroup's removal signal may take to arrive */
#define REMOVAL_WAIT_MS 300

/* The v1 memory cgroup of pid, or NULL (cgroup v2, or no such pid). */
static char *memcg_of(int pid)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	FILE *f = fopen(path, "re");
	char *dir = NULL;
	while (f && !dir && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *rel = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!rel)
			continue;
		*rel++ = '\0';
		rel[strcspn(rel, "\n")] = '\0';
		bool memory = false;
		char *save = NULL;
		for (char *c = strtok_r(ctl + 1, ",", &save); c && !memory;
		     c = strtok_r(NULL, ",", &save))
			memory = strcmp(c, "memory") == 0;
		if (memory && rel[0] == '/' && !strstr(rel, ".."))
			dir = xasprintf(MEMCG_V1 "%s", rel);
	}
	if (f)
		fclose(f);
	return dir;
}

static int register_event(const char *dir, int ev)
{
	char *oc = xasprintf("%s/memory.oom_control", dir);
	char *ec = xasprintf("%s/cgroup.event_control", dir);
	int ofd = open(oc, O_RDONLY | O_CLOEXEC), efd = open(ec, O_WRONLY | O_CLOEXEC);
	free(oc);
	free(ec);
	int ret = ofd < 0 || efd < 0 ? -errno : 0;
	if (ret == 0) {
		char line[32];
		int n = snprintf(line, sizeof(line), "%d %d", ev, ofd);
		if (write(efd, line, (size_t)n) != n)
			ret = -errno;
	}
	if (ofd >= 0)
		close(ofd);
	if (efd >= 0)
		close(efd);
	return ret;
}

/* The v1 memory cgroup whose directory's name holds the container's id (docker's
 * parent/<id>, podman's libpod_parent/libpod-<id>, systemd's SLICE/ENGINE-<id>.scope), at most
 * two levels down; runsc puts its sandbox there. NULL when there is none. */
static char *memcg_by_id(const char *cid)
{
	DIR *top = opendir(MEMCG_V1);
	char *found = NULL;
	for (struct dirent *d; top && !found && (d = readdir(top));) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		char *sub = xasprintf(MEMCG_V1 "/%s", d->d_name);
		if (strstr(d->d_name, cid)) {
			found = sub;
			break;
		}
		DIR *dd = opendir(sub);
		for (struct dirent *e; dd && !found && (e = readdir(dd));)
			if (e->d_type == DT_DIR && e->d_name[0] != '.' && strstr(e->d_name, cid))
				found = xasprintf("%s/%s", sub, e->d_name);
		if (dd)
			closedir(dd);
		free(sub);
	}
	if (top)
		closedir(top);
	return found;
}

void oci_oom_watch_start(const oci_tier *t, const char *engine, const char *name, const char *cid,
			 oci_oom_watch *w)
{
	*w = (oci_oom_watch){ .ev = -1 };
	char *dir = cid && cid[0] ? memcg_by_id(cid) : NULL;
	if (!dir) {
		int pid = oci_container_pid(t, engine, name);
		dir = pid > 0 ? memcg_of(pid) : NULL;
	}
	int ev = dir ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
	if (ev >= 0 && register_event(dir, ev) == 0) {
		*w = (oci_oom_watch){ .ev = ev, .dir = dir };
		return;
	}
	oci_host->log(CORDON_PLUGIN_LOG_DEBUG, t->kind->name,
		      "session %s: no OOM notification (%s)", name,
		      dir ? "the memory cgroup refused it" : "no cgroup v1 memory controller");
	if (ev >= 0)
		close(ev);
	free(dir);
}

static uint64_t drain(int ev)
{
	uint64_t v = 0;
	return read(ev, &v, sizeof(v)) == (ssize_t)sizeof(v) ? v : 0;
}

bool oci_oom_watch_fired(oci_oom_watch *w)
{
	if (w->ev < 0)
		return false;
	w->count += drain(w->ev);
	struct stat st;
	if (stat(w->dir, &st) == 0)
		return w->count >= 1;
	/* removed: one signal is the removal's, wait for it if it is not in */
	int64_t until = oci_now_ms() + REMOVAL_WAIT_MS;
	while (w->count < 2) {
		int64_t left = until - oci_now_ms();
		struct pollfd p = { w->ev, POLLIN, 0 };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		w->count += drain(w->ev);
	}
	return w->count >= 2;
}

void oci_oom_watch_clear(oci_oom_watch *w)
{
	if (w->ev >= 0)
		close(w->ev);
	free(w->dir);
	*w = (oci_oom_watch){ .ev = -1 };
}
