/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plugin loader (DESIGN §5, docs/plugin-guide.md).
 *
 * Every plugin file gets one plugin_record in ctx->plugins, loaded or with a
 * one-line reason and an errno. Checks run in a fixed order, cheapest and
 * safest first, so that a file is dlopen()ed (and its constructors run) only
 * after everything that can be decided from the file itself has passed:
 *
 *   name charset -> open(O_NOFOLLOW) -> regular file -> owner, mode and
 *   links -> ELF header, segments and search paths -> dlopen(RTLD_NOW) ->
 *   entry symbol -> descriptor (ABI major, minor, size and tail, strings,
 *   name) -> duplicate -> init (drivers registered)
 *
 * The file is opened once and everything, the load included, goes through
 * that descriptor (/proc/self/fd/N): what was checked is what is mapped.
 *
 * Symbols are all bound at load: libltdl's dlopen loader asks for lazy
 * binding, so a plugin with an undefined symbol would load and the first
 * call through it would kill the process ("symbol lookup error"). glibc
 * (2.36, measured) does not rebind an object already loaded lazily when it
 * is opened again with RTLD_NOW|RTLD_NOLOAD, so the object is opened with
 * RTLD_NOW first, which refuses it, constructors unrun, naming the symbol;
 * libltdl then finds it loaded.
 *
 * A plugin is trusted code, but one whose constructor (or entry, or init)
 * ends the process, by exit(), _exit(), quick_exit() or a crash, or loops,
 * must not make `cordon run -- echo RAN` exit 0 having run nothing, nor hang
 * for ever. So each plugin is loaded first in a short-lived child (the
 * probe, probe_load) that reports over a pipe once its load returned; a
 * child that ends without reporting, or does not report within
 * PROBE_TIMEOUT_MS, makes the load fail with a TERMINAL error naming the
 * plugin and what happened. Then it is loaded for real in this process: its
 * constructors run twice (docs/plugin-guide.md). An exit() in the real load
 * (code that behaves differently the second time) is still turned into a
 * failure that names the plugin (fail_closed_on_exit). Only root or we can
 * place a file where it is loaded from.
 */
#include "config.h"

#include "loader.h"

#include "elfcheck.h"
#include "filetrust.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ltdl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PLUGIN_NAME_MAX 64
#define PLUGIN_STRING_MAX 1024
/* A descriptor claiming more than this is garbage, not a newer ABI. */
#define DESCRIPTOR_SIZE_MAX 4096
/* The status of a process a plugin exit()s while loading: the CLI's own for
 * "could not run" (EX_SOFTWARE), never the plugin's choice. */
#define LOADER_EXIT_STATUS 70
/* How long the probe of one plugin may take: a load is milliseconds
 * (docs/decisions.md), a constructor that waits on the network is refused. */
#define PROBE_TIMEOUT_MS 2000

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

/* Refuses the plugin: one line, and the errno it maps to. Returns -errnum so
 * that refusing reads as `return refuse(...)`. */
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

/* ---- the file ------------------------------------------------------------- */

/* Everything decidable from the file before any of its code runs. Returns
 * the open file for the load, or -errno when refused. */
static int check_file(plugin_record *rec, int dirfd, const char *dir, const char *file)
{
	int fd = -1;
	struct stat st;
	g_autofree char *why = NULL;
	int r = filetrust_openat(dirfd, file, rec->path, &fd, &st, &why);
	if (r < 0)
		return refuse(rec, -r, "%s", why);
	if ((r = elfcheck_fd(fd, (uint64_t)st.st_size, dir, &why)) < 0) {
		close(fd);
		return refuse(rec, -r, "%s: %s", rec->path, why);
	}
	return fd;
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
		return refuse(rec, EPROTO, "descriptor has %u bytes, ABI %d.%d needs %zu", d->size,
			      CORDON_PLUGIN_ABI_MAJOR, CORDON_PLUGIN_ABI_MINOR,
			      sizeof(cordon_plugin_descriptor));
	/* A tail we do not know would be fields we silently ignore. */
	for (size_t i = sizeof(cordon_plugin_descriptor); i < d->size; i++)
		if (((const uint8_t *)d)[i])
			return refuse(rec, EPROTO,
				      "descriptor has %u bytes, %zu known, and the "
				      "rest is not zero",
				      d->size, sizeof(cordon_plugin_descriptor));
	memcpy(ret, d, sizeof(*ret));

	const struct {
		const char *field, *value;
	} strings[] = {
		{ "name", ret->name },
		{ "version", ret->version },
		{ "description", ret->description },
		{ "license", ret->license },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(strings); i++)
		if (!string_ok(strings[i].value))
			return refuse(rec, EINVAL,
				      "descriptor %s is missing, empty, too long or "
				      "has control characters",
				      strings[i].field);
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

/* Objects loaded so far, by file identity, each with the descriptor it was
 * loaded through. That descriptor stays open for the life of the process
 * (like the mapping: plugins are resident), because glibc and libltdl find
 * a loaded module by its name: a closed fd's number, reused for another
 * plugin, would hand back the first one. Guarded by loader_lock. */
typedef struct module_file {
	dev_t dev;
	ino_t ino;
	int fd;
} module_file;
static GArray *module_files;

/* The descriptor to load the file open at fd through: fd itself, or the one
 * the same file was loaded through before (fd is then closed). */
static int module_fd(int fd, bool *ret_new)
{
	struct stat st;
	if (!module_files)
		module_files = g_array_new(FALSE, FALSE, sizeof(module_file));
	*ret_new = true;
	if (fstat(fd, &st) < 0)
		return fd;
	for (guint i = 0; i < module_files->len; i++) {
		const module_file *m = &g_array_index(module_files, module_file, i);
		if (m->dev == st.st_dev && m->ino == st.st_ino) {
			close(fd);
			*ret_new = false;
			return m->fd;
		}
	}
	module_file m = { st.st_dev, st.st_ino, fd };
	g_array_append_val(module_files, m);
	return fd;
}

/* The file did not load (nothing of it is mapped): its name is free again. */
static void module_forget(int fd)
{
	for (guint i = 0; i < module_files->len; i++)
		if (g_array_index(module_files, module_file, i).fd == fd)
			g_array_remove_index_fast(module_files, i--);
	close(fd);
}

/* The loader's message with our name for the file instead of its fd path. */
static char *load_error(const char *msg, const char *via)
{
	if (!msg)
		return g_strdup("unknown error");
	size_t n = strlen(via);
	if (strncmp(msg, via, n) == 0 && msg[n] == ':')
		msg += n + 1;
	return g_strdup(msg + strspn(msg, " "));
}

/* Binds every symbol now (see the top of this file); the handle is never
 * closed. false when refused. */
static bool bind_now(plugin_record *rec, const char *via)
{
	if (dlopen(via, RTLD_NOW | RTLD_LOCAL))
		return true;
	g_autofree char *why = load_error(dlerror(), via);
	refuse(rec, ENOEXEC, "cannot load %s: %s", rec->path, why);
	return false;
}

static lt_dlhandle open_module(plugin_record *rec, const char *via)
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
	lt_dlhandle h = lt_dlopenadvise(via, advise);
	lt_dladvise_destroy(&advise);
	if (!h) {
		g_autofree char *why = load_error(lt_dlerror(), via);
		refuse(rec, ENOEXEC, "cannot load %s: %s", rec->path, why);
	}
	return h;
}

/* Loads the file open at fd (consumed) and calls its entry. */
static const cordon_plugin_descriptor *call_entry(plugin_record *rec, int fd)
{
	bool fresh;
	fd = module_fd(fd, &fresh);
	g_autofree char *via = g_strdup_printf("/proc/self/fd/%d", fd);
	if (!bind_now(rec, via)) {
		if (fresh)
			module_forget(fd);
		return NULL;
	}
	lt_dlhandle h = open_module(rec, via);
	if (!h)
		return NULL;
	cordon_plugin_entry_fn entry = (cordon_plugin_entry_fn)lt_dlsym(h,
									CORDON_PLUGIN_ENTRY_SYMBOL);
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

/* ---- exit() while loading ---------------------------------------------------------- */

/* A plugin's code calling exit() while it loads (a constructor, the entry,
 * init) would end the host with the plugin's status: `cordon run -- echo RAN`
 * exiting 0 having run nothing. While a plugin loads, an exit() from the
 * loading thread (atexit handlers run in the thread that calls exit) is
 * turned into a failure that names it. Written under loader_lock. */
static const char *volatile loading_path;
static pthread_t loading_thread;

static void fail_closed_on_exit(void)
{
	const char *path = loading_path;
	if (!path || !pthread_equal(pthread_self(), loading_thread))
		return;
	dprintf(STDERR_FILENO, "cordon: plugin %s called exit() while loading; failing\n", path);
	_exit(LOADER_EXIT_STATUS);
}

static void arm_exit_guard(const char *path)
{
	static gsize registered;
	if (g_once_init_enter(&registered)) {
		/* Without the handler an exit() cannot be caught: fail closed now. */
		if (atexit(fail_closed_on_exit) != 0)
			g_error("cannot register the loader's exit handler");
		g_once_init_leave(&registered, 1);
	}
	loading_thread = pthread_self();
	loading_path = path;
}

static void disarm_exit_guard(void) { loading_path = NULL; }

/* From dlopen to init: the plugin's code runs (checks 7 to 15). */
static void load_code(cordon_context *ctx, plugin_record *rec, int fd)
{
	const cordon_plugin_descriptor *raw = call_entry(rec, fd);
	if (!raw)
		return;
	cordon_plugin_descriptor d;
	if (check_descriptor(rec, raw, &d) < 0)
		return;
	/* check_descriptor writes d whenever it returns 0; the analyzer's path budget ends in
	 * the variadic refuse() before it can see that. */
	// NOLINTNEXTLINE(clang-analyzer-core.CallAndMessage)
	const plugin_record *other = find_loaded(ctx, d.name);
	if (other) {
		refuse(rec, EEXIST, "a plugin named '%s' is already loaded from %s; %s is another",
		       d.name, other->path, rec->path);
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

/* ---- the probe ----------------------------------------------------------------------- */

/* Why the probe child at pid ended without reporting, reaped. */
static char *probe_ended(pid_t pid)
{
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return g_strdup_printf("was killed by signal %d (%s) while loading",
				       WTERMSIG(status), g_strsignal(WTERMSIG(status)));
	return g_strdup_printf("ended the process while loading (exit status %d)",
			       WEXITSTATUS(status));
}

/* Loads the plugin open at fd in a child, which reports one byte once the
 * load returned, loaded or refused (the real load refuses it the same way).
 * Returns 0, or -errno with why the plugin would have ended or hung the
 * process in *ret_why. */
static int probe_load(cordon_context *ctx, plugin_record *rec, int fd, char **ret_why)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		*ret_why = g_strdup_printf("cannot create the probe's pipe: %s", g_strerror(errno));
		return -errno;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		*ret_why = g_strdup_printf("cannot fork the probe: %s", g_strerror(e));
		return -e;
	}
	if (pid == 0) {
		/* The child's copy of everything; _exit, so that nothing of the
		 * parent's (stdio buffers, atexit handlers) runs twice. */
		close(p[0]);
		int cfd = dup(fd);
		if (cfd >= 0) {
			arm_exit_guard(rec->path);
			load_code(ctx, rec, cfd);
			disarm_exit_guard();
			if (write(p[1], "", 1) == 1)
				_exit(0);
		}
		_exit(LOADER_EXIT_STATUS);
	}
	close(p[1]);
	struct pollfd pfd = { .fd = p[0], .events = POLLIN };
	gint64 deadline = g_get_monotonic_time() + PROBE_TIMEOUT_MS * G_TIME_SPAN_MILLISECOND;
	int n;
	do {
		int left = (int)MAX(0,
				    (deadline - g_get_monotonic_time()) / G_TIME_SPAN_MILLISECOND);
		n = poll(&pfd, 1, left);
	} while (n < 0 && errno == EINTR);
	char byte;
	ssize_t got = n > 0 ? read(p[0], &byte, 1) : -1;
	close(p[0]);
	if (n == 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		*ret_why = g_strdup_printf("did not finish loading within %d ms", PROBE_TIMEOUT_MS);
		return -ETIMEDOUT;
	}
	if (got != 1) {
		*ret_why = probe_ended(pid);
		return -ECHILD;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* Returns -errno only when the plugin would have ended or hung the process:
 * the whole load fails (reterr), not just this plugin. */
static int load_one(cordon_context *ctx, int dirfd, const char *dir, const char *name,
		    cordon_error **reterr)
{
	plugin_record *rec = g_new0(plugin_record, 1);
	rec->name = g_strdup(name);
	g_ptr_array_add(ctx->plugins, rec);
	if (!plugin_name_valid(name)) {
		/* Never build a path from a name that could leave the directory. */
		rec->path = g_strdup("");
		refuse(rec, EINVAL, "'%s' is not a valid plugin name ([a-z0-9_-]+, at most %d)",
		       name, PLUGIN_NAME_MAX);
		return 0;
	}
	g_autofree char *file = g_strconcat(name, ".so", NULL);
	rec->path = g_build_filename(dir, file, NULL);
	int fd = check_file(rec, dirfd, dir, file);
	if (fd < 0)
		return 0;
	g_autofree char *why = NULL;
	int r = probe_load(ctx, rec, fd, &why);
	if (r < 0) {
		close(fd);
		refuse(rec, -r, "%s %s", rec->path, why);
		return error_set(reterr, -r, CORDON_ERROR_TERMINAL, ERRC(plugin_load_aborted),
				 "plugin %s %s; nothing was run", rec->path, why);
	}
	arm_exit_guard(rec->path);
	load_code(ctx, rec, fd);
	disarm_exit_guard();
	return 0;
}

/* ---- the directory ------------------------------------------------------------------- */

/* The directory itself may not be writable by others even with the sticky
 * bit (anyone could add a plugin); above it, filetrust_check_dirs' rules. */
static int open_dir(const char *dir, int *ret_fd, cordon_error **reterr)
{
	if (!dir || dir[0] != '/')
		return error_set(reterr, EINVAL, CORDON_ERROR_INVALID, ERRC(plugin_dir_invalid),
				 "plugin directory '%s' is not an absolute path", dir ? dir : "");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return error_set(reterr, errno, CORDON_ERROR_INVALID, ERRC(plugin_dir_invalid),
				 "plugin directory %s: %s", dir, g_strerror(errno));
	struct stat st;
	g_autofree char *why = NULL;
	int r = 0;
	if (fstat(fd, &st) < 0)
		r = error_set(reterr, errno, CORDON_ERROR_INVALID, ERRC(plugin_dir_invalid),
			      "plugin directory %s: %s", dir, g_strerror(errno));
	else if ((r = filetrust_check_stat(&st, dir, false, &why)) < 0)
		r = error_set(reterr, -r, CORDON_ERROR_FORBIDDEN, ERRC(plugin_dir_insecure),
			      "plugin directory %s", why);
	else if ((r = filetrust_check_dirs(fd, dir, &why)) < 0)
		r = error_set(reterr, -r, CORDON_ERROR_FORBIDDEN, ERRC(plugin_dir_insecure),
			      "plugin directory %s: %s", dir, why);
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
		return error_set(reterr, -r, CORDON_ERROR_TERMINAL, ERRC(plugin_loader_failed),
				 "cannot initialise libltdl");
	}
	for (guint i = 0; r >= 0 && i < todo->len; i++)
		r = load_one(ctx, dirfd, dir, todo->pdata[i], reterr);
	g_mutex_unlock(&loader_lock);
	close(dirfd);
	return r;
}
