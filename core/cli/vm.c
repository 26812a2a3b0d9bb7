/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon vm build`: the microVM guest, a kernel and an initramfs, from a kernel package
 * (a Debian linux-image .deb, unpacked with dpkg-deb, never installed) or a kernel and a
 * module tree the admin names. The initramfs is a newc cpio written here, reproducibly:
 * fixed order, mtime 0, owner 0:0, inode numbers by position, so the same inputs give the
 * same bytes and the same sha256. It holds:
 *
 *   /init                           cordon-agent (static): it knows it is the guest's init
 *                                   by being pid 1 run as /init (agent/guest.c)
 *   /bin/busybox, /bin/<applet>     a static busybox for the work's shell and tools
 *   /lib/cordon/modules/NN-name.ko  the virtio modules, numbered in dependency order
 *   /dev/console, empty /proc /sys /dev /tmp /work
 *
 * An x86 bzImage is replaced by the ELF kernel inside it (extract_vmlinux: QEMU boots it
 * through the PVH entry, faster). It prints a line per step and the two sha256 pins the tier's policy names
 * (kernel_sha256:, initrd_sha256:), computed with the plugin's own code (common/sha256.c).
 */
#include "config.h"

#include "cli.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* In dependency order (modules.dep is not in the package: depmod writes it at install). */
static const char *const guest_modules[] = {
	"virtio_ring", "virtio", "virtio_mmio", "virtio_console", "fuse", "virtiofs", NULL
};

/* ---- newc ------------------------------------------------------------------------------ */

typedef struct cpio {
	GByteArray *out;
	unsigned ino;
} cpio;

static void pad4(GByteArray *b)
{
	static const guint8 zero[4] = { 0 };
	g_byte_array_append(b, zero, (4 - b->len % 4) % 4);
}

static void cpio_entry(cpio *c, const char *name, unsigned mode, unsigned rmaj, unsigned rmin,
		       const void *data, size_t len)
{
	char hdr[160];
	size_t nlen = strlen(name) + 1;
	snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
		 ++c->ino, mode, 0u, 0u, S_ISDIR(mode) ? 2u : 1u, 0u, len, 0u, 0u, rmaj, rmin, nlen,
		 0u);
	g_byte_array_append(c->out, (const guint8 *)hdr, 110);
	g_byte_array_append(c->out, (const guint8 *)name, (guint)nlen);
	pad4(c->out);
	if (len)
		g_byte_array_append(c->out, data, (guint)len);
	pad4(c->out);
}

static void cpio_dir(cpio *c, const char *name)
{
	cpio_entry(c, name, S_IFDIR | 0755, 0, 0, NULL, 0);
}

static void cpio_file(cpio *c, const char *name, unsigned perm, const char *data, size_t len)
{
	cpio_entry(c, name, S_IFREG | perm, 0, 0, data, len);
}

/* ---- the inputs ------------------------------------------------------------------------ */

static int fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *m = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "cordon vm build: %s\n", m);
	return EXIT_FAILED;
}

static bool run_tool(const char *const *argv, char **ret_out, GError **error)
{
	int status = 0;
	g_autofree char *err = NULL;
	if (!g_spawn_sync("/", (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, ret_out, &err,
			  &status, error))
		return false;
	if (!g_spawn_check_wait_status(status, error)) {
		g_prefix_error(error, "%s: %s", argv[0], err ? g_strstrip(err) : "");
		return false;
	}
	return true;
}

/* The one file below dir whose name starts with prefix (vmlinuz-...), or NULL. */
static char *find_kernel(const char *boot)
{
	g_autoptr(GDir) d = g_dir_open(boot, 0, NULL);
	const char *n;
	char *found = NULL;
	while (d && (n = g_dir_read_name(d))) {
		if (!g_str_has_prefix(n, "vmlinuz-"))
			continue;
		if (found) {
			g_free(found);
			return NULL; /* more than one: the admin names it */
		}
		found = g_build_filename(boot, n, NULL);
	}
	return found;
}

/* name.ko or name.ko.xz anywhere below dir (depth-first, sorted: deterministic). */
static char *find_module(const char *dir, const char *name)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	if (!d)
		return NULL;
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	const char *n;
	while ((n = g_dir_read_name(d)))
		g_ptr_array_add(names, g_strdup(n));
	g_ptr_array_sort(names, (GCompareFunc)g_strcmp0);
	g_autofree char *ko = g_strconcat(name, ".ko", NULL);
	g_autofree char *xz = g_strconcat(name, ".ko.xz", NULL);
	for (guint i = 0; i < names->len; i++) {
		const char *e = names->pdata[i];
		g_autofree char *p = g_build_filename(dir, e, NULL);
		if (strcmp(e, ko) == 0 || strcmp(e, xz) == 0)
			return g_steal_pointer(&p);
		if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK)) {
			char *r = find_module(p, name);
			if (r)
				return r;
		}
	}
	return NULL;
}

/* A module's bytes; .ko.xz decompressed here (finit_module in the guest takes plain ELF):
 * a copy decompressed in place by xz, binary-safe. */
static bool read_module(const char *path, char **ret, gsize *len, GError **error)
{
	if (!g_str_has_suffix(path, ".xz"))
		return g_file_get_contents(path, ret, len, error);
	g_autofree char *dir = g_dir_make_tmp("cordon-ko-XXXXXX", error);
	if (!dir)
		return false;
	g_autofree char *xz = g_build_filename(dir, "m.ko.xz", NULL);
	g_autofree char *ko = g_build_filename(dir, "m.ko", NULL);
	g_autofree char *data = NULL;
	gsize n = 0;
	const char *argv[] = { "xz", "-d", "--", xz, NULL };
	bool ok = g_file_get_contents(path, &data, &n, error) &&
		  g_file_set_contents(xz, data, (gssize)n, error) && run_tool(argv, NULL, error) &&
		  g_file_get_contents(ko, ret, len, error);
	g_unlink(xz);
	g_unlink(ko);
	g_rmdir(dir);
	return ok;
}

/* The uncompressed ELF kernel inside an x86 bzImage, for QEMU's PVH entry (about 0.8 s
 * faster to boot under TCG here than the bzImage's real-mode path). The payload is found by
 * its compressor's magic and decompressed by the compressor's own tool; the result is
 * taken only when it is an ELF file (QEMU then refuses one without the PVH note, so a
 * wrong guess fails at the trial boot, never silently). NULL: keep the bzImage. */
static char *extract_vmlinux(const char *kdata, gsize klen, gsize *ret_len)
{
	static const struct {
		const char *magic;
		size_t mlen;
		const char *tool, *suffix;
	} c[] = {
		{ "\x02\x21\x4c\x18", 4, "lz4", ".lz4" },
		{ "\x28\xb5\x2f\xfd", 4, "zstd", ".zst" },
		{ "\xfd\x37\x7a\x58\x5a\x00", 6, "xz", ".xz" },
		{ "\x1f\x8b\x08", 3, "gzip", ".gz" },
	};
	if (klen < 0x300 || memcmp(kdata + 0x202, "HdrS", 4) != 0)
		return NULL; /* not a bzImage */
	for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
		const char *at = memmem(kdata, klen, c[i].magic, c[i].mlen);
		if (!at)
			continue;
		g_autofree char *dir = g_dir_make_tmp("cordon-vmlinux-XXXXXX", NULL);
		if (!dir)
			return NULL;
		g_autofree char *in = g_strconcat(dir, "/k", c[i].suffix, NULL);
		g_autofree char *out = g_strconcat(dir, "/k", NULL);
		char *data = NULL;
		gsize len = 0;
		/* lz4 and zstd write where they are told; xz and gzip drop the suffix */
		const char *named[] = { c[i].tool, "-d", "-q", "-f", in, "-o", out, NULL };
		if (strcmp(c[i].tool, "lz4") == 0)
			named[5] = out, named[6] = NULL;
		else if (strcmp(c[i].tool, "zstd") != 0)
			named[5] = NULL;
		const char *const *argv = named;
		/* the tool complains of the bzImage's bytes after the stream: its output counts */
		if (g_file_set_contents(in, at, (gssize)(kdata + klen - at), NULL))
			run_tool(argv, NULL, NULL);
		bool ok = g_file_get_contents(out, &data, &len, NULL) && len > 4 &&
			  memcmp(data,
				 "\x7f"
				 "ELF",
				 4) == 0;
		g_unlink(in);
		g_unlink(out);
		g_rmdir(dir);
		if (ok) {
			*ret_len = len;
			return data;
		}
		g_free(data);
	}
	return NULL;
}

/* ---- the image ------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* busybox and a link per applet, in name order. */
static void add_busybox(cpio *c, const char *data, gsize len, const char *list)
{
	cpio_file(c, "bin/busybox", 0755, data, len);
	g_auto(GStrv) applets = g_strsplit(list, "\n", -1);
	for (size_t i = 0; applets[i]; i++)
		g_strstrip(applets[i]);
	size_t n = g_strv_length(applets);
	qsort(applets, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++) {
		const char *a = applets[i];
		if (!*a || strchr(a, '/') || strcmp(a, "busybox") == 0)
			continue;
		g_autofree char *name = g_strconcat("bin/", a, NULL);
		cpio_entry(c, name, S_IFLNK | 0777, 0, 0, "busybox", strlen("busybox"));
	}
}

/* The applets: busybox's own --list, or a file naming them (a busybox of another
 * architecture does not run here). */
static int applet_list(const char *busybox, const char *applets, char **ret)
{
	g_autoptr(GError) e = NULL;
	if (applets) {
		if (!g_file_get_contents(applets, ret, NULL, &e))
			return fail("%s", e->message);
		return 0;
	}
	const char *argv[] = { busybox, "--list", NULL };
	if (!run_tool(argv, ret, &e))
		return fail("%s --list: %s (another architecture's busybox needs --applets FILE)",
			    busybox, e->message);
	return 0;
}

static int build_initrd(const char *agent, const char *busybox, const char *applets,
			const char *moddir, GByteArray *out)
{
	g_autofree char *agent_data = NULL, *bb_data = NULL, *list = NULL;
	gsize agent_len = 0, bb_len = 0;
	g_autoptr(GError) e = NULL;
	if (!g_file_get_contents(agent, &agent_data, &agent_len, &e))
		return fail("the agent: %s", e->message);
	if (!g_file_get_contents(busybox, &bb_data, &bb_len, &e))
		return fail("busybox: %s", e->message);
	int lr = applet_list(busybox, applets, &list);
	if (lr)
		return lr;
	cpio c = { .out = out };
	cpio_dir(&c, "bin");
	add_busybox(&c, bb_data, bb_len, list);
	cpio_dir(&c, "dev");
	cpio_entry(&c, "dev/console", S_IFCHR | 0600, 5, 1, NULL, 0);
	cpio_file(&c, "init", 0755, agent_data, agent_len);
	cpio_dir(&c, "lib");
	cpio_dir(&c, "lib/cordon");
	cpio_dir(&c, "lib/cordon/modules");
	for (size_t i = 0; guest_modules[i]; i++) {
		g_autofree char *path = find_module(moddir, guest_modules[i]);
		g_autofree char *data = NULL;
		gsize len = 0;
		if (!path)
			return fail("no %s.ko below %s", guest_modules[i], moddir);
		if (!read_module(path, &data, &len, &e))
			return fail("%s: %s", path, e->message);
		g_autofree char *name = g_strdup_printf("lib/cordon/modules/%02zu-%s.ko", i,
							guest_modules[i]);
		cpio_file(&c, name, 0644, data, len);
		printf("cordon vm build: module %s (%zu bytes)\n", path, (size_t)len);
	}
	cpio_dir(&c, "proc");
	cpio_dir(&c, "sys");
	cpio_dir(&c, "tmp");
	cpio_dir(&c, "work");
	cpio_entry(&c, "TRAILER!!!", 0, 0, 0, NULL, 0);
	return 0;
}

static int write_pinned(const char *path, const void *data, size_t len, const char *key)
{
	g_autoptr(GError) e = NULL;
	if (!g_file_set_contents_full(path, data, (gssize)len, G_FILE_SET_CONTENTS_CONSISTENT, 0644,
				      &e))
		return fail("%s", e->message);
	sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, data, len);
	guint8 d[32];
	char hex[65];
	sha256_final(&c, d);
	sha256_hex(d, hex);
	printf("%s: %s\n%s_sha256: %s\n", key, path, key, hex);
	return 0;
}

static const char usage[] =
	"usage: cordon vm build --out DIR (--kernel-deb FILE | --kernel FILE --modules DIR)\n"
	"                       [--agent PATH] [--busybox PATH] [--applets FILE]\n";

static int cmd_build(int argc, char **argv)
{
	g_autofree char *deb = NULL, *kernel = NULL, *modules = NULL, *out = NULL;
	g_autofree char *agent = g_strdup(CORDON_LIBEXECDIR "/cordon-agent");
	g_autofree char *busybox = g_strdup("/bin/busybox");
	g_autofree char *applets = NULL;
	for (int i = 1; i < argc; i++) {
		char **slot = strcmp(argv[i], "--kernel-deb") == 0 ? &deb
			      : strcmp(argv[i], "--kernel") == 0   ? &kernel
			      : strcmp(argv[i], "--modules") == 0  ? &modules
			      : strcmp(argv[i], "--out") == 0      ? &out
			      : strcmp(argv[i], "--agent") == 0    ? &agent
			      : strcmp(argv[i], "--busybox") == 0  ? &busybox
			      : strcmp(argv[i], "--applets") == 0  ? &applets
								   : NULL;
		if (!slot || i + 1 >= argc)
			return cli_usage_error("%s", usage);
		g_free(*slot);
		*slot = g_strdup(argv[++i]);
	}
	if (!out || (!deb == !kernel) || (kernel && !modules))
		return cli_usage_error("%s", usage);
	g_autoptr(GError) e = NULL;
	g_autofree char *unpacked = NULL;
	if (deb) {
		unpacked = g_dir_make_tmp("cordon-vm-XXXXXX", &e);
		if (!unpacked)
			return fail("%s", e->message);
		printf("cordon vm build: unpacking %s\n", deb);
		const char *x[] = { "dpkg-deb", "-x", deb, unpacked, NULL };
		if (!run_tool(x, NULL, &e))
			return fail("%s", e->message);
		g_autofree char *boot = g_build_filename(unpacked, "boot", NULL);
		kernel = find_kernel(boot);
		modules = g_build_filename(unpacked, "lib", "modules", NULL);
		if (!kernel)
			return fail("%s holds no single boot/vmlinuz-*", deb);
	}
	g_autofree char *kdata = NULL;
	gsize klen = 0;
	if (!g_file_get_contents(kernel, &kdata, &klen, &e))
		return fail("%s", e->message);
	printf("cordon vm build: kernel %s (%zu bytes)\n", kernel, (size_t)klen);
	gsize elen = 0;
	char *elf = extract_vmlinux(kdata, klen, &elen);
	if (elf) {
		printf("cordon vm build: the uncompressed kernel for PVH boot (%zu bytes)\n",
		       (size_t)elen);
		g_free(kdata);
		kdata = elf;
		klen = elen;
	}
	g_autoptr(GByteArray) initrd = g_byte_array_new();
	int r = build_initrd(agent, busybox, applets, modules, initrd);
	if (unpacked) {
		const char *rm[] = { "rm", "-rf", "--", unpacked, NULL };
		run_tool(rm, NULL, NULL);
	}
	if (r != 0)
		return r;
	if (g_mkdir_with_parents(out, 0755) < 0)
		return fail("%s: %s", out, g_strerror(errno));
	g_autofree char *kout = g_build_filename(out, "vmlinuz", NULL);
	g_autofree char *iout = g_build_filename(out, "initrd.img", NULL);
	printf("cordon vm build: initramfs %u bytes\n", initrd->len);
	r = write_pinned(kout, kdata, klen, "kernel");
	return r ? r : write_pinned(iout, initrd->data, initrd->len, "initrd");
}

int cli_cmd_vm(int argc, char **argv)
{
	/* argv[0] is "vm" */
	if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "build") == 0)
		return cmd_build(argc - 1, argv + 1);
	return cli_usage_error("%s", usage);
}
