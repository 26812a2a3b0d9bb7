/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plugin loader (DESIGN §5, docs/plugin-guide.md).
 *
 * Every plugin file gets one plugin_record in ctx->plugins, loaded or with a
 * one-line reason and an errno. Checks run in a fixed order, cheapest and
 * safest first, so that a file is dlopen()ed (and its constructors run) only
 * after everything that can be decided from the file itself has passed:
 *
 *   name charset -> open(O_NOFOLLOW) -> regular file -> owner and mode ->
 *   ELF header -> dlopen -> entry symbol -> descriptor (ABI major, minor,
 *   size and tail, strings, name) -> duplicate -> init (drivers registered)
 *
 * Residual race: the checks run on an fd, but dlopen() takes the path, so
 * the file could be swapped in between. Only someone who can write the
 * directory can do that, and the directory must be owned by root or by us
 * and not group/world-writable: such a writer can already run code as us.
 *
 * What cannot be survived: a plugin whose constructor (or entry, or init)
 * crashes takes the process down; in-process loading cannot contain that.
 * Only the directory's owner can place such a file there.
 */
#include "config.h"

#include "loader.h"

#include <elf.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ltdl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLUGIN_NAME_MAX 64
#define PLUGIN_STRING_MAX 1024
/* A descriptor claiming more than this is garbage, not a newer ABI. */
#define DESCRIPTOR_SIZE_MAX 4096

/* libltdl keeps global state and is not thread-safe: one load at a time. */
static GMutex loader_lock;

static int loader_init_ltdl(void)
{
	static int ltdl_status = 1; /* 1: not yet; 0: ready; <0: failed */
	if (ltdl_status == 1)
		ltdl_status = lt_dlinit() == 0 ? 0 : -ENOEXEC;
	return ltdl_status;
}

static bool plugin_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > PLUGIN_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!(g_ascii_islower(*s) || g_ascii_isdigit(*s) || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* Refuses the plugin: one line, and the errno it maps to. Returns 0 so that
 * refusing reads as `return refuse(...)` in functions that keep going. */
static int refuse(plugin_record *rec, int errnum, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static int refuse(plugin_record *rec, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	/* One line, whatever a plugin or libltdl put into the message. */
	g_strdelimit(msg, "\r\n", ' ');
	g_free(rec->detail);
	rec->detail = g_steal_pointer(&msg);
	rec->errnum = errnum;
	rec->loaded = false;
	g_debug("plugin %s refused: %s", rec->name, rec->detail);
	return -errnum;
}

static bool owner_trusted(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* ---- the file ------------------------------------------------------------- */

static bool elf_header_ok(int fd, char *why, size_t why_len)
{
	Elf64_Ehdr eh; /* the 32-bit header is a prefix of this size or less */
	ssize_t n = pread(fd, &eh, sizeof(eh), 0);
	if (n < (ssize_t)EI_NIDENT || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		g_strlcpy(why, "not a shared object (no ELF header)", why_len);
		return false;
	}
	unsigned char want_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
	if (eh.e_ident[EI_CLASS] != want_class) {
		g_snprintf(why, why_len, "not a shared object for this host (ELF class %u)",
			   eh.e_ident[EI_CLASS]);
		return false;
	}
	/* e_type sits at the same offset in both classes. */
	if (n < (ssize_t)(offsetof(Elf64_Ehdr, e_type) + sizeof(eh.e_type)) || eh.e_type != ET_DYN) {
		g_strlcpy(why, "not a shared object (ELF type is not ET_DYN)", why_len);
		return false;
	}
	return true;
}

/* Everything decidable from the file before any of its code runs. */
static int check_file(plugin_record *rec, int dirfd, const char *file)
{
	/* O_NONBLOCK: a FIFO planted under a plugin's name must not hang us. */
	int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP)
			return refuse(rec, ELOOP, "%s is a symbolic link", rec->path);
		return refuse(rec, e, "cannot open %s: %s", rec->path, g_strerror(e));
	}
	struct stat st;
	char why[128] = "";
	int r = 0;
	if (fstat(fd, &st) < 0)
		r = refuse(rec, errno, "cannot stat %s: %s", rec->path, g_strerror(errno));
	else if (!S_ISREG(st.st_mode))
		r = refuse(rec, EINVAL, "%s is not a regular file", rec->path);
	else if (!owner_trusted(st.st_uid))
		r = refuse(rec, EPERM, "%s is owned by uid %u, not by root or by us", rec->path,
			   (unsigned)st.st_uid);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		r = refuse(rec, EPERM, "%s is group- or world-writable (mode %04o)", rec->path,
			   (unsigned)(st.st_mode & 07777));
	else if (!elf_header_ok(fd, why, sizeof(why)))
		r = refuse(rec, ENOEXEC, "%s: %s", rec->path, why);
	close(fd);
	return r;
}

/* ---- the descriptor --------------------------------------------------------- */

static bool string_ok(const char *s)
{
	if (!s || !*s || strlen(s) > PLUGIN_STRING_MAX)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static int check_descriptor(plugin_record *rec, const cordon_plugin_descriptor *d,
			    cordon_plugin_descriptor *ret)
{
	if (d->abi_major != CORDON_PLUGIN_ABI_MAJOR || d->abi_minor > CORDON_PLUGIN_ABI_MINOR)
		return refuse(rec, EPROTONOSUPPORT, "plugin ABI %u.%u, core supports %d.%d%s",
			      d->abi_major, d->abi_minor, CORDON_PLUGIN_ABI_MAJOR,
			      CORDON_PLUGIN_ABI_MINOR,
			      d->abi_major != CORDON_PLUGIN_ABI_MAJOR ? " (major differs)"
								      : " (minor is newer)");
	if (d->size < sizeof(cordon_plugin_descriptor) || d->size > DESCRIPTOR_SIZE_MAX)
		return refuse(rec, EPROTO, "descriptor has %u bytes, ABI %d.%d needs %zu",
			      d->size, CORDON_PLUGIN_ABI_MAJOR, CORDON_PLUGIN_ABI_MINOR,
			      sizeof(cordon_plugin_descriptor));
	/* A tail we do not know would be fields we silently ignore. */
	for (size_t i = sizeof(cordon_plugin_descriptor); i < d->size; i++)
		if (((const uint8_t *)d)[i])
			return refuse(rec, EPROTO, "descriptor has %u bytes, %zu known, and the "
				      "rest is not zero", d->size, sizeof(cordon_plugin_descriptor));
	memcpy(ret, d, sizeof(*ret));

	const struct { const char *field, *value; } strings[] = {
		{ "name", ret->name }, { "version", ret->version },
		{ "description", ret->description }, { "license", ret->license },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(strings); i++)
		if (!string_ok(strings[i].value))
			return refuse(rec, EINVAL, "descriptor %s is missing, empty, too long or "
				      "has control characters", strings[i].field);
	if (!ret->init)
		return refuse(rec, EINVAL, "descriptor has no init function");
	if (!plugin_name_valid(ret->name))
		return refuse(rec, EINVAL, "plugin name '%s' is not [a-z0-9_-]+ (at most %d)",
			      ret->name, PLUGIN_NAME_MAX);
	if (strcmp(ret->name, rec->name) != 0)
		return refuse(rec, EINVAL, "plugin name '%s' does not match its file name '%s'",
			      ret->name, rec->name);
	return 0;
}

static const plugin_record *find_loaded(const cordon_context *ctx, const char *name)
{
	for (guint i = 0; i < ctx->plugins->len; i++) {
		const plugin_record *p = ctx->plugins->pdata[i];
		if (p->loaded && strcmp(p->name, name) == 0)
			return p;
	}
	return NULL;
}

/* ---- init -------------------------------------------------------------------- */

static void drop_drivers(cordon_context *ctx, const plugin_record *rec)
{
	for (guint i = ctx->drivers->len; i-- > 0;) {
		const driver_entry *e = ctx->drivers->pdata[i];
		if (e->plugin == rec)
			g_ptr_array_remove_index(ctx->drivers, i);
	}
}

static char *driver_list(const cordon_context *ctx, const plugin_record *rec)
{
	GString *s = g_string_new(NULL);
	for (guint i = 0; i < ctx->drivers->len; i++) {
		const driver_entry *e = ctx->drivers->pdata[i];
		if (e->plugin != rec)
			continue;
		if (s->len)
			g_string_append_c(s, ',');
		g_string_append(s, e->ops.name);
	}
	return g_string_free(s, FALSE);
}

static int init_refused(plugin_record *rec, int r, const cordon_error *why, unsigned count)
{
	if (why)
		return refuse(rec, why->errnum, "init failed: %s", why->message);
	if (r < 0)
		return refuse(rec, -r, "init failed: %s", g_strerror(-r));
	if (r > 0)
		return refuse(rec, EIO, "init failed (returned %d)", r);
	if (count == 0)
		return refuse(rec, ENODEV, "init registered no driver");
	return 0;
}

static int run_init(cordon_context *ctx, plugin_record *rec, const cordon_plugin_descriptor *d)
{
	cordon_plugin_registrar reg = { .ctx = ctx, .plugin = rec };
	struct cordon_plugin_error perr = { 0 };
	int r = d->init(&cordon_host_services, &reg, &perr);
	/* The plugin's own words first; a registration failure refuses the plugin
	 * even if its init ignored it: a half-registered plugin would leave tiers
	 * silently unbacked. */
	r = init_refused(rec, r, perr.err ? perr.err : reg.err, reg.count);
	cordon_error_free(perr.err);
	cordon_error_free(reg.err);
	if (r < 0)
		drop_drivers(ctx, rec);
	return r;
}

/* ---- one plugin ------------------------------------------------------------------ */

static const cordon_plugin_descriptor *call_entry(plugin_record *rec)
{
	lt_dladvise advise;
	if (lt_dladvise_init(&advise) != 0) {
		refuse(rec, ENOMEM, "cannot initialise libltdl advice");
		return NULL;
	}
	/* Resident: plugin code stays mapped for as long as the process lives
	 * (drivers and their threads may outlive any one context). Local: a
	 * plugin's symbols never satisfy another's references. */
	lt_dladvise_resident(&advise);
	lt_dladvise_local(&advise);
	lt_dlhandle h = lt_dlopenadvise(rec->path, advise);
	lt_dladvise_destroy(&advise);
	if (!h) {
		const char *e = lt_dlerror();
		refuse(rec, ENOEXEC, "cannot load %s: %s", rec->path, e ? e : "unknown error");
		return NULL;
	}
	cordon_plugin_entry_fn entry = (cordon_plugin_entry_fn)lt_dlsym(h, CORDON_PLUGIN_ENTRY_SYMBOL);
	if (!entry) {
		refuse(rec, ENOENT, "no entry symbol %s (not built with CORDON_PLUGIN_DEFINE?)",
		       CORDON_PLUGIN_ENTRY_SYMBOL);
		return NULL;
	}
	const cordon_plugin_descriptor *d = entry(&cordon_host_services);
	if (!d)
		refuse(rec, ENODATA, "entry returned no descriptor");
	return d;
}

static void load_one(cordon_context *ctx, int dirfd, const char *dir, const char *name)
{
	plugin_record *rec = g_new0(plugin_record, 1);
	rec->name = g_strdup(name);
	g_ptr_array_add(ctx->plugins, rec);
	if (!plugin_name_valid(name)) {
		/* Never build a path from a name that could leave the directory. */
		rec->path = g_strdup("");
		refuse(rec, EINVAL, "'%s' is not a valid plugin name ([a-z0-9_-]+, at most %d)",
		       name, PLUGIN_NAME_MAX);
		return;
	}
	g_autofree char *file = g_strconcat(name, ".so", NULL);
	rec->path = g_build_filename(dir, file, NULL);
	if (check_file(rec, dirfd, file) < 0)
		return;
	const cordon_plugin_descriptor *raw = call_entry(rec);
	if (!raw)
		return;
	cordon_plugin_descriptor d;
	if (check_descriptor(rec, raw, &d) < 0)
		return;
	const plugin_record *other = find_loaded(ctx, d.name);
	if (other) {
		refuse(rec, EEXIST, "a plugin named '%s' is already loaded (from %s)", d.name,
		       other->path);
		return;
	}
	rec->abi_minor = d.abi_minor; /* before its drivers register */
	if (run_init(ctx, rec, &d) < 0)
		return;
	rec->loaded = true;
	rec->errnum = 0;
	rec->version = g_strdup(d.version);
	rec->description = g_strdup(d.description);
	rec->license = g_strdup(d.license);
	rec->detail = g_strdup(d.version);
	rec->drivers = driver_list(ctx, rec);
	g_debug("plugin %s %s loaded from %s: %s", rec->name, rec->version, rec->path,
		rec->drivers);
}

/* ---- the directory ------------------------------------------------------------------- */

static int open_dir(const char *dir, int *ret_fd, cordon_error **reterr)
{
	if (!dir || dir[0] != '/')
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, "plugin_dir_invalid",
				 "plugin directory '%s' is not an absolute path", dir ? dir : "");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return error_set(reterr, errno, CORDON_ERROR_INVALID, "plugin_dir_invalid",
				 "plugin directory %s: %s", dir, g_strerror(errno));
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0)
		r = error_set(reterr, errno, CORDON_ERROR_INVALID, "plugin_dir_invalid",
			      "plugin directory %s: %s", dir, g_strerror(errno));
	else if (!owner_trusted(st.st_uid))
		r = error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, "plugin_dir_insecure",
			      "plugin directory %s is owned by uid %u, not by root or by us", dir,
			      (unsigned)st.st_uid);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		r = error_set(reterr, EPERM, CORDON_ERROR_FORBIDDEN, "plugin_dir_insecure",
			      "plugin directory %s is group- or world-writable (mode %04o)", dir,
			      (unsigned)(st.st_mode & 07777));
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static gint compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every "<name>.so" in the directory, sorted so that listings are stable. */
static GPtrArray *list_dir(int dirfd)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return names;
	}
	struct dirent *ent;
	while ((ent = readdir(d))) {
		size_t n = strlen(ent->d_name);
		if (n > 3 && g_str_has_suffix(ent->d_name, ".so"))
			g_ptr_array_add(names, g_strndup(ent->d_name, n - 3));
	}
	closedir(d);
	g_ptr_array_sort(names, compare_names);
	return names;
}

static bool already_listed(GPtrArray *names, const char *name)
{
	for (guint i = 0; i < names->len; i++)
		if (strcmp(names->pdata[i], name) == 0)
			return true;
	return false;
}

int loader_load(cordon_context *ctx, const char *dir, const char *const *names, bool load_all,
		cordon_error **reterr)
{
	int dirfd = -1;
	int r = open_dir(dir, &dirfd, reterr);
	if (r < 0)
		return r;
	g_autoptr(GPtrArray) todo = load_all ? list_dir(dirfd)
					     : g_ptr_array_new_with_free_func(g_free);
	/* The policy and the options may both name a plugin: load it once. */
	for (size_t i = 0; names && names[i]; i++)
		if (!already_listed(todo, names[i]))
			g_ptr_array_add(todo, g_strdup(names[i]));

	g_mutex_lock(&loader_lock);
	r = loader_init_ltdl();
	if (r < 0) {
		g_mutex_unlock(&loader_lock);
		close(dirfd);
		return error_set(reterr, -r, CORDON_ERROR_TERMINAL, "plugin_loader_failed",
				 "cannot initialise libltdl");
	}
	for (guint i = 0; i < todo->len; i++)
		load_one(ctx, dirfd, dir, todo->pdata[i]);
	g_mutex_unlock(&loader_lock);
	close(dirfd);
	return 0;
}
