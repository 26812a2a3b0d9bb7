/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Probe results across processes (probecache.h). */
#include "config.h"

#include "probecache.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRY_MAGIC "cordon-probe-cache 3" /* 2: egress_enforced kept; 3: features */
#define ENTRY_MAX_BYTES (64 << 10)
#define CONTENT_MAX_BYTES 4096

static char *test_dir;
static gint64 test_now;

void probecache_test_set_dir(const char *dir)
{
	g_free(test_dir);
	test_dir = g_strdup(dir);
}

void probecache_test_set_now(gint64 unix_seconds) { test_now = unix_seconds; }

static gint64 now_s(void) { return test_now ? test_now : g_get_real_time() / G_USEC_PER_SEC; }

/* ---- what a probe looked at ------------------------------------------------------- */

static __thread GPtrArray *collecting;

void probecache_collect_begin(void)
{
	if (collecting)
		g_ptr_array_unref(collecting);
	collecting = g_ptr_array_new_with_free_func(g_free);
}

GPtrArray *probecache_collect_end(void) { return g_steal_pointer(&collecting); }

void probecache_note(const char *path)
{
	if (!collecting || !path || path[0] != '/' || strchr(path, '\n'))
		return;
	for (guint i = 0; i < collecting->len; i++)
		if (strcmp(collecting->pdata[i], path) == 0)
			return;
	if (collecting->len < PROBECACHE_MAX_DEPS)
		g_ptr_array_add(collecting, g_strdup(path));
}

/* A file's state as far as a probe could have seen it: the contents of a kernel file
 * (procfs and sysfs give no useful times), else what stat says of it. */
static char *fingerprint(const char *path)
{
	if (g_str_has_prefix(path, "/proc/") || g_str_has_prefix(path, "/sys/")) {
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			return g_strdup_printf("absent:%d", errno);
		char buf[CONTENT_MAX_BYTES];
		ssize_t n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n < 0)
			return g_strdup_printf("unreadable:%d", errno);
		g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (guchar *)buf,
								   (gsize)n);
		return g_strdup_printf("content:%s", sum);
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return g_strdup_printf("absent:%d", errno);
	return g_strdup_printf(
		"stat:%llx:%llx:%llx:%o:%u:%lld.%09ld:%lld.%09ld", (unsigned long long)st.st_dev,
		(unsigned long long)st.st_ino, (unsigned long long)st.st_size, (unsigned)st.st_mode,
		(unsigned)st.st_uid, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		(long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

/* ---- what names an entry ---------------------------------------------------------- */

typedef struct note_search {
	const void *addr;
	char hex[2 * 64 + 1];
} note_search;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	note_search *s = data;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || (uintptr_t)s->addr < lo ||
		    (uintptr_t)s->addr >= lo + ph->p_memsz)
			continue;
		for (int j = 0; j < info->dlpi_phnum; j++) {
			const ElfW(Phdr) *note = &info->dlpi_phdr[j];
			if (note->p_type != PT_NOTE)
				continue;
			const char *p = (const char *)(info->dlpi_addr + note->p_vaddr);
			const char *end = p + note->p_memsz;
			while (p + sizeof(ElfW(Nhdr)) <= end) {
				const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
				const char *name = p + sizeof(*nh);
				const unsigned char *desc = (const unsigned char *)name +
							    ((nh->n_namesz + 3) & ~3u);
				if ((const char *)desc + nh->n_descsz > end)
					break;
				if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
				    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= 64) {
					for (unsigned k = 0; k < nh->n_descsz; k++)
						snprintf(s->hex + 2 * k, 3, "%02x", desc[k]);
					return 1;
				}
				p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
			}
		}
		return 1; /* our object, without a build id */
	}
	return 0;
}

/* The build id of the object this code is in (libcordon, or the cordon program that
 * links it): a rebuilt cordon is another cordon. "" when it has none: no cache then. */
static const char *build_id(void)
{
	static gsize once;
	static note_search s;
	if (g_once_init_enter(&once)) {
		s.addr = (const void *)build_id;
		dl_iterate_phdr(find_build_id, &s);
		g_once_init_leave(&once, 1);
	}
	return s.hex;
}

static char *boot_id(void)
{
	g_autofree char *id = NULL;
	if (!g_file_get_contents("/proc/sys/kernel/random/boot_id", &id, NULL, NULL))
		return NULL;
	return g_strdup(g_strstrip(id));
}

static char *entry_name(const probecache_key *key)
{
	g_autofree char *boot = boot_id();
	if (!boot || !build_id()[0] || !key->policy_sha256 || !key->tier || !key->driver)
		return NULL;
	/* Fields are NUL-separated: none can hold a NUL, so no two keys collide by shifting. */
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	char uid[16];
	snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
	const char *const parts[] = {
		ENTRY_MAGIC,        boot,      uid,         build_id(),
		key->policy_sha256, key->tier, key->driver, key->plugin_path ? key->plugin_path : ""
	};
	for (size_t i = 0; i < G_N_ELEMENTS(parts); i++)
		g_checksum_update(sum, (const guchar *)parts[i], (gssize)strlen(parts[i]) + 1);
	return g_strdup(g_checksum_get_string(sum));
}

/* ---- where entries live ------------------------------------------------------------ */

/* Opens (making it if missing) one directory level below parent_fd, refusing one that is
 * not ours alone. */
static int open_private_dir(int parent_fd, const char *name)
{
	if (mkdirat(parent_fd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The user's own runtime directory (root: /run), checked: ours, not writable by others. */
static int open_base(void)
{
	const char *base = test_dir;
	if (!base)
		base = geteuid() == 0 ? "/run" : g_getenv("XDG_RUNTIME_DIR");
	if (!base || base[0] != '/')
		return -ENOENT; /* no private place: no cache, never /tmp */
	int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	bool ok = fstat(fd, &st) == 0 &&
		  (geteuid() == 0 ? st.st_uid == 0 && !(st.st_mode & 022)
				  : st.st_uid == geteuid() && !(st.st_mode & 077));
	if (!ok) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int open_cache_dir(void)
{
	int base = open_base();
	if (base < 0)
		return base;
	int fd = open_private_dir(base, "cordon");
	close(base);
	if (fd < 0)
		return fd;
	int probes = open_private_dir(fd, "probes");
	close(fd);
	return probes;
}

/* ---- entries ---------------------------------------------------------------------- */

static char *read_entry(int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *text = NULL;
	/* Ours, private, one name, a plain file of a sane size: else not an entry we wrote. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 077) && st.st_nlink == 1 && st.st_size > 0 &&
	    st.st_size <= ENTRY_MAX_BYTES) {
		text = g_malloc((gsize)st.st_size + 1);
		ssize_t n = pread(fd, text, (size_t)st.st_size, 0);
		if (n != st.st_size)
			g_clear_pointer(&text, g_free);
		else
			text[n] = '\0';
	}
	close(fd);
	return text;
}

/* Parses an entry and checks it still holds: false on anything unexpected. */
static bool entry_holds(const char *text, cordon_plugin_probe *ret)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	cordon_plugin_probe pr = { .size = sizeof(pr) };
	gint64 created = -1;
	guint i = 0;
	if (!lines[0] || strcmp(lines[i++], ENTRY_MAGIC) != 0)
		return false;
	for (; lines[i] && lines[i][0]; i++) {
		const char *l = lines[i];
		if (g_str_has_prefix(l, "created ")) {
			created = g_ascii_strtoll(l + 8, NULL, 10);
		} else if (g_str_has_prefix(l, "containment ")) {
			pr.containment = (uint32_t)g_ascii_strtoull(l + 12, NULL, 10);
		} else if (g_str_has_prefix(l, "limits ")) {
			pr.limits = (uint32_t)g_ascii_strtoull(l + 7, NULL, 10);
		} else if (g_str_has_prefix(l, "features ")) {
			pr.features = (uint32_t)g_ascii_strtoull(l + 9, NULL, 10);
		} else if (g_str_has_prefix(l, "reason ")) {
			g_strlcpy(pr.reason, l + 7, sizeof(pr.reason));
		} else if (g_str_has_prefix(l, "egress_enforced ")) {
			pr.egress_enforced = (uint32_t)g_ascii_strtoull(l + 16, NULL, 10);
		} else if (g_str_has_prefix(l, "dep ")) {
			/* "dep <fingerprint> <path>": the path is last, it may hold spaces */
			const char *fp = l + 4, *sp = strchr(fp, ' ');
			if (!sp || sp[1] != '/')
				return false;
			g_autofree char *want = g_strndup(fp, (gsize)(sp - fp));
			g_autofree char *now = fingerprint(sp + 1);
			if (strcmp(want, now) != 0)
				return false;
		} else {
			return false;
		}
	}
	gint64 age = now_s() - created;
	if (created < 0 || age < 0 || age > PROBECACHE_MAX_AGE_S)
		return false;
	if (pr.containment < CORDON_PLUGIN_CONTAINMENT_PROCESS_JAIL ||
	    pr.containment > CORDON_PLUGIN_CONTAINMENT_REMOTE)
		return false;
	pr.available = 1;
	*ret = pr;
	return true;
}

bool probecache_lookup(const probecache_key *key, cordon_plugin_probe *ret)
{
	g_autofree char *name = entry_name(key);
	if (!name)
		return false;
	int dir = open_cache_dir();
	if (dir < 0)
		return false;
	g_autofree char *text = read_entry(dir, name);
	close(dir);
	return text && entry_holds(text, ret);
}

void probecache_store(const probecache_key *key, const cordon_plugin_probe *pr,
		      const GPtrArray *deps)
{
	g_autofree char *name = entry_name(key);
	if (!name || !pr->available)
		return;
	g_autoptr(GString) s = g_string_new(ENTRY_MAGIC "\n");
	g_autofree char *reason = g_strndup(pr->reason, sizeof(pr->reason));
	g_strdelimit(reason, "\r\n", ' ');
	g_string_append_printf(
		s,
		"created %" G_GINT64_FORMAT
		"\ncontainment %u\negress_enforced %u\nlimits %u\nfeatures %u\nreason "
		"%s\n",
		now_s(), pr->containment, pr->egress_enforced, pr->limits, pr->features, reason);
	if (key->plugin_path) {
		g_autofree char *fp = fingerprint(key->plugin_path);
		g_string_append_printf(s, "dep %s %s\n", fp, key->plugin_path);
	}
	for (guint i = 0; deps && i < deps->len; i++) {
		g_autofree char *fp = fingerprint(deps->pdata[i]);
		g_string_append_printf(s, "dep %s %s\n", fp, (const char *)deps->pdata[i]);
	}
	int dir = open_cache_dir();
	if (dir < 0)
		return;
	/* Written whole under a temporary name, then renamed: a reader sees all or nothing. */
	char tmp[96];
	snprintf(tmp, sizeof(tmp), ".%s.%d", name, (int)getpid());
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		bool ok = write(fd, s->str, s->len) == (ssize_t)s->len;
		close(fd);
		if (!ok || renameat(dir, tmp, dir, name) < 0)
			unlinkat(dir, tmp, 0);
	}
	close(dir);
}

void probecache_forget(const probecache_key *key)
{
	g_autofree char *name = entry_name(key);
	int dir = name ? open_cache_dir() : -1;
	if (dir < 0)
		return;
	unlinkat(dir, name, 0);
	close(dir);
}
