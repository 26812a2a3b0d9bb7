/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ELF checks on a plugin's descriptor, before the dynamic loader maps it.
 * glibc maps segments as the program headers say without comparing them to
 * the file's size, so a truncated plugin is "loaded" and the process dies of
 * SIGBUS when the missing pages are touched; and it follows RPATH/RUNPATH
 * wherever they point, so a plugin could pull code from a directory nobody
 * checked. Only the native class is read (the header check refuses others).
 */
#include "config.h"

#include "elfcheck.h"

#include <elf.h>
#include <errno.h>
#include <glib.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

/* More than any real object has: a bound on what a hostile file makes us read. */
#define PHNUM_MAX 512
#define DYNAMIC_MAX 4096
#define SEARCH_PATH_MAX 4096

typedef struct elf_file {
	int fd;
	uint64_t size;
	ElfW(Ehdr) eh;
	ElfW(Phdr) * ph;
	char **why;
} elf_file;

static int bad(elf_file *f, int errnum, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static int bad(elf_file *f, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	*f->why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return -errnum;
}

/* [off, off + len) inside the file, without overflow. */
static bool in_file(const elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

static bool read_at(const elf_file *f, void *buf, size_t len, uint64_t off)
{
	return in_file(f, off, len) && pread(f->fd, buf, len, (off_t)off) == (ssize_t)len;
}

static int check_header_type(elf_file *f, bool program);

static int check_header(elf_file *f) { return check_header_type(f, false); }

/* program: an executable (ET_EXEC or a PIE's ET_DYN) rather than a shared object. */
static int check_header_type(elf_file *f, bool program)
{
	ElfW(Ehdr) *eh = &f->eh;
	ssize_t n = pread(f->fd, eh, sizeof(*eh), 0);
	if (n < (ssize_t)EI_NIDENT || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return bad(f, ENOEXEC, "not a shared object (no ELF header)");
	unsigned char want_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
	if (eh->e_ident[EI_CLASS] != want_class)
		return bad(f, ENOEXEC, "not a shared object for this host (ELF class %u)",
			   eh->e_ident[EI_CLASS]);
	if (n < (ssize_t)sizeof(*eh))
		return bad(f, ENOEXEC, "truncated ELF header (%zd bytes)", n);
	if (eh->e_type != ET_DYN && !(program && eh->e_type == ET_EXEC))
		return bad(f, ENOEXEC, "not a shared object (ELF type is not ET_DYN)");
	if (eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phnum == 0 || eh->e_phnum > PHNUM_MAX)
		return bad(f, ENOEXEC, "bad program header table (%u entries of %u bytes)",
			   eh->e_phnum, eh->e_phentsize);
	uint64_t len = (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr));
	if (!in_file(f, eh->e_phoff, len))
		return bad(f, ENOEXEC,
			   "the program header table lies past the end of the file "
			   "(%" G_GUINT64_FORMAT " bytes): truncated",
			   f->size);
	f->ph = g_new(ElfW(Phdr), eh->e_phnum);
	if (!read_at(f, f->ph, len, eh->e_phoff))
		return bad(f, ENOEXEC, "cannot read the program header table");
	return 0;
}

static int check_segments(elf_file *f)
{
	unsigned loads = 0;
	for (unsigned i = 0; i < f->eh.e_phnum; i++) {
		const ElfW(Phdr) *p = &f->ph[i];
		if (p->p_type == PT_INTERP)
			return bad(f, ENOEXEC,
				   "a program (it names an interpreter), not a shared "
				   "object");
		if (p->p_type != PT_LOAD && p->p_type != PT_DYNAMIC)
			continue;
		loads += p->p_type == PT_LOAD;
		if (!in_file(f, p->p_offset, p->p_filesz))
			return bad(f, ENOEXEC,
				   "segment %u (bytes %" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT
				   ") lies past the end of the file (%" G_GUINT64_FORMAT
				   " bytes): truncated",
				   i, (uint64_t)p->p_offset, (uint64_t)p->p_filesz, f->size);
		if (p->p_type == PT_LOAD && p->p_filesz > p->p_memsz)
			return bad(f, ENOEXEC, "segment %u is larger in the file than in memory",
				   i);
	}
	if (!loads)
		return bad(f, ENOEXEC, "no loadable segment");
	return 0;
}

/* The file offset of the address vaddr, when a loadable segment holds it. */
static bool vaddr_offset(const elf_file *f, uint64_t vaddr, uint64_t *ret)
{
	for (unsigned i = 0; i < f->eh.e_phnum; i++) {
		const ElfW(Phdr) *p = &f->ph[i];
		if (p->p_type == PT_LOAD && vaddr >= p->p_vaddr &&
		    vaddr - p->p_vaddr < p->p_filesz) {
			*ret = p->p_offset + (vaddr - p->p_vaddr);
			return true;
		}
	}
	return false;
}

/* An absolute, normalised directory that is, or is under, a system library
 * directory, or is the plugin directory. $ORIGIN is refused: plugins are
 * loaded through /proc/self/fd/N, where it means nothing. */
static bool search_dir_allowed(const char *d, const char *plugin_dir)
{
	static const char *const system_dirs[] = { "/lib", "/lib64", "/usr/lib", "/usr/lib64" };
	if (d[0] != '/' || strchr(d, '$'))
		return false;
	g_auto(GStrv) parts = g_strsplit(d + 1, "/", -1);
	for (size_t i = 0; parts[i]; i++)
		if (!*parts[i] || strcmp(parts[i], ".") == 0 || strcmp(parts[i], "..") == 0)
			return false;
	if (strcmp(d, plugin_dir) == 0)
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(system_dirs); i++) {
		size_t n = strlen(system_dirs[i]);
		if (strncmp(d, system_dirs[i], n) == 0 && (d[n] == '\0' || d[n] == '/'))
			return true;
	}
	return false;
}

typedef struct dyn_strings {
	uint64_t strtab, strsz; /* address and size of the string table */
	GArray *refs;           /* ElfW(Dyn) of RPATH, RUNPATH, NEEDED */
} dyn_strings;

static int read_dynamic(elf_file *f, const ElfW(Phdr) * p, dyn_strings *ds)
{
	size_t n = MIN((size_t)(p->p_filesz / sizeof(ElfW(Dyn))), (size_t)DYNAMIC_MAX);
	g_autofree ElfW(Dyn) *dyn = g_new(ElfW(Dyn), n ? n : 1);
	if (!read_at(f, dyn, n * sizeof(ElfW(Dyn)), p->p_offset))
		return bad(f, ENOEXEC, "cannot read the dynamic section");
	for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
		if (dyn[i].d_tag == DT_STRTAB)
			ds->strtab = dyn[i].d_un.d_ptr;
		else if (dyn[i].d_tag == DT_STRSZ)
			ds->strsz = dyn[i].d_un.d_val;
		else if (dyn[i].d_tag == DT_RPATH || dyn[i].d_tag == DT_RUNPATH ||
			 dyn[i].d_tag == DT_NEEDED)
			g_array_append_val(ds->refs, dyn[i]);
	}
	return 0;
}

static int read_string(elf_file *f, const dyn_strings *ds, uint64_t at, char **ret)
{
	uint64_t base;
	if (at >= ds->strsz || !vaddr_offset(f, ds->strtab, &base))
		return bad(f, ENOEXEC, "a dynamic string lies outside the string table");
	size_t len = (size_t)MIN(ds->strsz - at, (uint64_t)SEARCH_PATH_MAX);
	g_autofree char *s = g_malloc0(len + 1);
	if (!read_at(f, s, len, base + at) || !memchr(s, '\0', len))
		return bad(f, ENOEXEC, "a dynamic string is unreadable or too long");
	*ret = g_steal_pointer(&s);
	return 0;
}

static int check_reference(elf_file *f, const ElfW(Dyn) * d, const char *s, const char *plugin_dir)
{
	if (d->d_tag == DT_NEEDED) {
		/* A bare name is looked up in the system's directories. (s is read_string's, set
		 * whenever it returns 0: the analyzer does not follow the variadic bad().) */
		// NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker)
		g_autofree char *dir = strchr(s, '/') ? g_path_get_dirname(s) : NULL;
		if (dir && !search_dir_allowed(dir, plugin_dir))
			return bad(f, EPERM,
				   "it needs %s, outside the system library directories "
				   "and %s",
				   s, plugin_dir);
		return 0;
	}
	g_auto(GStrv) dirs = g_strsplit(s, ":", -1);
	for (size_t i = 0; dirs[i]; i++)
		if (!search_dir_allowed(dirs[i], plugin_dir))
			return bad(f, EPERM,
				   "its %s has '%s', outside the system library "
				   "directories and %s",
				   d->d_tag == DT_RPATH ? "RPATH" : "RUNPATH", dirs[i], plugin_dir);
	return 0;
}

static int check_search_paths(elf_file *f, const char *plugin_dir)
{
	g_autoptr(GArray) refs = g_array_new(FALSE, FALSE, sizeof(ElfW(Dyn)));
	dyn_strings ds = { .refs = refs };
	for (unsigned i = 0; i < f->eh.e_phnum; i++) {
		int r = f->ph[i].p_type == PT_DYNAMIC ? read_dynamic(f, &f->ph[i], &ds) : 0;
		if (r < 0)
			return r;
	}
	for (guint i = 0; i < refs->len; i++) {
		const ElfW(Dyn) *d = &g_array_index(refs, ElfW(Dyn), i);
		g_autofree char *s = NULL;
		int r = read_string(f, &ds, d->d_un.d_val, &s);
		if (r >= 0)
			r = check_reference(f, d, s, plugin_dir);
		if (r < 0)
			return r;
	}
	return 0;
}

int elfcheck_fd(int fd, uint64_t size, const char *plugin_dir, char **ret_why)
{
	elf_file f = { .fd = fd, .size = size, .why = ret_why };
	int r = check_header(&f);
	if (r >= 0)
		r = check_segments(&f);
	if (r >= 0)
		r = check_search_paths(&f, plugin_dir);
	g_free(f.ph);
	return r;
}

/* ---- what a program loads (the jailed host programs' roots, core/local/hostjail.c) ---- */

static int read_interp(elf_file *f, char **ret_interp)
{
	for (unsigned i = 0; i < f->eh.e_phnum; i++) {
		const ElfW(Phdr) *p = &f->ph[i];
		if (p->p_type != PT_INTERP)
			continue;
		if (p->p_filesz == 0 || p->p_filesz > SEARCH_PATH_MAX)
			return bad(f, ENOEXEC, "bad interpreter name");
		g_autofree char *s = g_malloc0(p->p_filesz + 1);
		if (!read_at(f, s, p->p_filesz, p->p_offset))
			return bad(f, ENOEXEC, "cannot read the interpreter name");
		*ret_interp = g_steal_pointer(&s);
	}
	return 0;
}

int elfcheck_deps(int fd, uint64_t size, char **ret_interp, GPtrArray *needed, char **ret_why)
{
	elf_file f = { .fd = fd, .size = size, .why = ret_why };
	g_autoptr(GArray) refs = g_array_new(FALSE, FALSE, sizeof(ElfW(Dyn)));
	dyn_strings ds = { .refs = refs };
	int r = check_header_type(&f, true);
	if (r >= 0 && ret_interp)
		r = read_interp(&f, ret_interp);
	for (unsigned i = 0; r >= 0 && i < f.eh.e_phnum; i++)
		r = f.ph[i].p_type == PT_DYNAMIC ? read_dynamic(&f, &f.ph[i], &ds) : 0;
	for (guint i = 0; r >= 0 && i < refs->len; i++) {
		const ElfW(Dyn) *d = &g_array_index(refs, ElfW(Dyn), i);
		char *s = NULL;
		if (d->d_tag == DT_NEEDED && (r = read_string(&f, &ds, d->d_un.d_val, &s)) >= 0)
			g_ptr_array_add(needed, s);
	}
	g_free(f.ph);
	return r;
}
