/* The report's symbolizer: return address -> module, ELF virtual address, function. It reads each module's own file
 * because static functions live only in .symtab, which dladdr never sees; a file that no longer matches what was
 * loaded is ignored, and every offset read from a file is checked against the file's size first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report/symbolize.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VG_ELFDATA ELFDATA2LSB
#else
#define VG_ELFDATA ELFDATA2MSB
#endif

#define VG_MAX_LOADS 16         /* PT_LOAD segments compared between the file and the loaded image */
#define VG_MAX_BUILD_ID 64

struct vg_sym {
	uint64_t start, end;    /* ELF virtual addresses, [start, end) */
	uint64_t maxend;        /* the largest end among this entry and all before it: bounds the backward scan */
	uint32_t name;          /* offset in the string table, checked < its size */
	uint32_t rank;          /* among aliases at one address the lowest wins: see vg_symtab_load */
};

struct vg_symtab {
	struct vg_sym *syms;    /* sorted by start, one entry per start */
	size_t n;
	const char *strs;       /* points into the module's mapping */
	size_t strsz;
};

struct vg_module {
	const void *key;        /* the struct link_map * of the loaded object */
	uintptr_t base;         /* its l_addr when cached (a reused link_map with another base is a new module) */
	char *path;             /* never NULL */
	void *map;              /* the whole file, PROT_READ, or NULL */
	size_t mapsz;
	struct vg_symtab tab;   /* .symtab, or .dynsym when .symtab has no functions */
};

struct vg_symbolizer {
	struct vg_module *mods; /* sorted by key */
	size_t n, cap;
};

/* The segments and build-id of an object as it is loaded, to check that its file on disk is still the same one. */
struct vg_image_id {
	size_t nloads;
	struct {
		uint64_t vaddr, memsz;
		uint32_t flags;
	} loads[VG_MAX_LOADS];
	size_t build_id_len;    /* 0: none */
	unsigned char build_id[VG_MAX_BUILD_ID];
};

/* ---- bounds-checked reads from an image ---- */

static int vg_range_ok(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

static void vg_copy_name(char *dst, size_t cap, const char *s, size_t maxlen)
{
	if (cap == 0)
		return;
	size_t lim = maxlen < cap - 1 ? maxlen : cap - 1;
	size_t n = 0;
	while (s && n < lim && s[n])     /* not strnlen: gcc -O2 warns on the SIZE_MAX bound some callers pass */
		n++;
	if (n)
		memcpy(dst, s, n);
	dst[n] = '\0';
}

struct vg_elf {
	const unsigned char *img;
	size_t size;
	Elf64_Ehdr eh;
	uint64_t shnum;         /* 0: no section headers */
};

static int vg_elf_open(struct vg_elf *e, const void *img, size_t size)
{
	memset(e, 0, sizeof(*e));
	e->img = img;
	e->size = size;
	if (!img || size < sizeof(Elf64_Ehdr))
		return -ENOEXEC;
	memcpy(&e->eh, img, sizeof(e->eh));
	if (memcmp(e->eh.e_ident, ELFMAG, SELFMAG) != 0 || e->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    e->eh.e_ident[EI_DATA] != VG_ELFDATA)
		return -ENOEXEC;
	if (e->eh.e_shoff == 0)
		return 0;       /* no section headers (sstrip): no symbols, not an error */
	if (e->eh.e_shentsize != sizeof(Elf64_Shdr))
		return -ENOEXEC;
	uint64_t shnum = e->eh.e_shnum;
	if (shnum == 0) {       /* extended numbering: the count is in section 0's sh_size */
		Elf64_Shdr sh0;
		if (!vg_range_ok(e->eh.e_shoff, sizeof(sh0), size))
			return -ENOEXEC;
		memcpy(&sh0, e->img + e->eh.e_shoff, sizeof(sh0));
		shnum = sh0.sh_size;
	}
	if (shnum > size / sizeof(Elf64_Shdr) || !vg_range_ok(e->eh.e_shoff, shnum * sizeof(Elf64_Shdr), size))
		return -ENOEXEC;
	e->shnum = shnum;
	return 0;
}

static void vg_elf_shdr(const struct vg_elf *e, uint64_t i, Elf64_Shdr *sh)
{
	memcpy(sh, e->img + e->eh.e_shoff + i * sizeof(*sh), sizeof(*sh));
}

/* ---- symbol tables ---- */

static int vg_sym_cmp(const void *a, const void *b)
{
	const struct vg_sym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;        /* the widest alias first */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Collect the function symbols of section sh (SHT_SYMTAB or SHT_DYNSYM). 0 with t->n == 0 when it has none. */
static int vg_symtab_load(const struct vg_elf *e, const Elf64_Shdr *sh, struct vg_symtab *t)
{
	Elf64_Shdr str;
	memset(t, 0, sizeof(*t));
	if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_link >= e->shnum ||
	    !vg_range_ok(sh->sh_offset, sh->sh_size, e->size))
		return -ENOEXEC;
	vg_elf_shdr(e, sh->sh_link, &str);
	if (str.sh_type != SHT_STRTAB || !vg_range_ok(str.sh_offset, str.sh_size, e->size))
		return -ENOEXEC;
	size_t count = sh->sh_size / sizeof(Elf64_Sym), n = 0;
	if (count == 0 || str.sh_size == 0)
		return 0;
	struct vg_sym *syms = malloc(count * sizeof(*syms));
	if (!syms)
		return -ENOMEM;
	const unsigned char *p = e->img + sh->sh_offset;
	for (size_t i = 0; i < count; i++) {
		Elf64_Sym s;
		memcpy(&s, p + i * sizeof(s), sizeof(s));
		unsigned type = ELF64_ST_TYPE(s.st_info), bind = ELF64_ST_BIND(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_size == 0 || s.st_shndx == SHN_UNDEF ||
		    s.st_name >= str.sh_size || s.st_value > UINT64_MAX - s.st_size)
			continue;
		syms[n].start = s.st_value;
		syms[n].end = s.st_value + s.st_size;
		syms[n].name = s.st_name;
		/* Aliases (cbrt, cbrtf64, __cbrt; malloc, __libc_malloc): prefer a non-local one, then the shortest
		 * name, which is the one people call. */
		size_t len = strnlen((const char *)e->img + str.sh_offset + s.st_name,
				     str.sh_size - s.st_name);
		syms[n].rank = (bind == STB_LOCAL ? 1u << 24 : 0) | (uint32_t)(len < 0xffffff ? len : 0xffffff);
		n++;
	}
	if (n == 0) {
		free(syms);
		return 0;
	}
	qsort(syms, n, sizeof(*syms), vg_sym_cmp);
	size_t k = 0;
	uint64_t maxend = 0;
	for (size_t i = 0; i < n; i++) {
		if (k > 0 && syms[k - 1].start == syms[i].start)
			continue;       /* an alias: the first (best-ranked) one stays */
		syms[k] = syms[i];
		if (syms[k].end > maxend)
			maxend = syms[k].end;
		syms[k].maxend = maxend;
		k++;
	}
	struct vg_sym *shrunk = realloc(syms, k * sizeof(*syms));
	t->syms = shrunk ? shrunk : syms;
	t->n = k;
	t->strs = (const char *)e->img + str.sh_offset;
	t->strsz = str.sh_size;
	return 0;
}

/* The innermost function containing vaddr: the last start <= vaddr, then back over any that still reach vaddr. */
static const struct vg_sym *vg_symtab_find(const struct vg_symtab *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo; j-- > 0;) {
		if (t->syms[j].maxend <= vaddr)
			break;
		if (vaddr < t->syms[j].end)
			return &t->syms[j];
	}
	return NULL;
}

/* .symtab if it has functions, else .dynsym. The tables point into e's image. */
static int vg_elf_symbols(const struct vg_elf *e, struct vg_symtab *t)
{
	static const uint32_t order[] = {SHT_SYMTAB, SHT_DYNSYM};
	int rc = 0;
	memset(t, 0, sizeof(*t));
	for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
		for (uint64_t i = 0; i < e->shnum; i++) {
			Elf64_Shdr sh;
			vg_elf_shdr(e, i, &sh);
			if (sh.sh_type != order[o])
				continue;
			int r = vg_symtab_load(e, &sh, t);
			if (r == 0 && t->n > 0)
				return 0;
			if (r < 0 && rc == 0)
				rc = r;
		}
	}
	return rc;
}

/* ---- checking that a file is the object that was loaded ---- */

static void vg_notes_build_id(const unsigned char *p, size_t len, uint64_t align, struct vg_image_id *id)
{
	align = align == 8 ? 8 : 4;
	size_t off = 0;
	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		memcpy(&nh, p + off, sizeof(nh));
		off += sizeof(nh);
		uint64_t namesz = ((uint64_t)nh.n_namesz + align - 1) & ~(align - 1);
		uint64_t descsz = ((uint64_t)nh.n_descsz + align - 1) & ~(align - 1);
		if (!vg_range_ok(off, namesz, len) || !vg_range_ok(off + namesz, descsz, len))
			return;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= VG_MAX_BUILD_ID) {
			memcpy(id->build_id, p + off + namesz, nh.n_descsz);
			id->build_id_len = nh.n_descsz;
			return;
		}
		off += namesz + descsz;
	}
}

static void vg_id_add_phdr(struct vg_image_id *id, const Elf64_Phdr *ph)
{
	if (ph->p_type != PT_LOAD)
		return;
	if (id->nloads < VG_MAX_LOADS) {
		id->loads[id->nloads].vaddr = ph->p_vaddr;
		id->loads[id->nloads].memsz = ph->p_memsz;
		id->loads[id->nloads].flags = ph->p_flags;
	}
	id->nloads++;
}

static int vg_file_id(const struct vg_elf *e, struct vg_image_id *id)
{
	memset(id, 0, sizeof(*id));
	uint64_t phnum = e->eh.e_phnum;
	if (e->eh.e_phentsize != sizeof(Elf64_Phdr) || phnum > e->size / sizeof(Elf64_Phdr) ||
	    !vg_range_ok(e->eh.e_phoff, phnum * sizeof(Elf64_Phdr), e->size))
		return -ENOEXEC;
	for (uint64_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, e->img + e->eh.e_phoff + i * sizeof(ph), sizeof(ph));
		vg_id_add_phdr(id, &ph);
		if (ph.p_type == PT_NOTE && !id->build_id_len && vg_range_ok(ph.p_offset, ph.p_filesz, e->size))
			vg_notes_build_id(e->img + ph.p_offset, ph.p_filesz, ph.p_align, id);
	}
	return 0;
}

struct vg_find_loaded {
	uintptr_t base, pc;
	int found;
	struct vg_image_id *id;
};

static int vg_find_loaded_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct vg_find_loaded *f = arg;
	(void)size;
	if (info->dlpi_addr != f->base)
		return 0;
	int holds = 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && f->pc >= lo && f->pc - lo < ph->p_memsz)
			holds = 1;
	}
	if (!holds)
		return 0;
	memset(f->id, 0, sizeof(*f->id));
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		vg_id_add_phdr(f->id, ph);
		/* A loaded PT_NOTE lies inside a PT_LOAD (the build-id note always does), so it is readable. */
		if (ph->p_type == PT_NOTE && !f->id->build_id_len)
			vg_notes_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz,
					  ph->p_align, f->id);
	}
	f->found = 1;
	return 1;
}

/* 1 when the file's segments (and build-id, when the loaded object has one) are those of the loaded object. */
static int vg_file_matches(const struct vg_elf *e, uintptr_t base, uintptr_t pc)
{
	struct vg_image_id loaded, file;
	struct vg_find_loaded f = {.base = base, .pc = pc, .found = 0, .id = &loaded};
	dl_iterate_phdr(vg_find_loaded_cb, &f);
	if (!f.found || vg_file_id(e, &file) < 0)
		return 0;
	if (loaded.nloads != file.nloads || loaded.build_id_len != file.build_id_len ||
	    memcmp(loaded.build_id, file.build_id, loaded.build_id_len) != 0)
		return 0;
	for (size_t i = 0; i < loaded.nloads && i < VG_MAX_LOADS; i++)
		if (loaded.loads[i].vaddr != file.loads[i].vaddr || loaded.loads[i].memsz != file.loads[i].memsz ||
		    loaded.loads[i].flags != file.loads[i].flags)
			return 0;
	return 1;
}

/* ---- modules ---- */

static void vg_module_release(struct vg_module *m)
{
	free(m->tab.syms);
	if (m->map)
		munmap(m->map, m->mapsz);
	free(m->path);
	memset(m, 0, sizeof(*m));
}

/* Map the module's file and keep its symbol table if the file is the loaded object. Failures leave m->tab empty. */
static void vg_module_load(struct vg_module *m, const char *open_path, uintptr_t pc)
{
	/* No fstat: before glibc 2.33 it was not an exported symbol (config/glibc_compat.h). O_NONBLOCK keeps a
	 * FIFO planted at the path from blocking the open; lseek fails on anything that is not a file. */
	int fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	if (end < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return;
	}
	size_t size = (size_t)end;
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	struct vg_elf e;
	if (vg_elf_open(&e, map, size) == 0 && vg_file_matches(&e, m->base, pc) && vg_elf_symbols(&e, &m->tab) == 0 &&
	    m->tab.n > 0) {
		m->map = map;
		m->mapsz = size;
		return;
	}
	free(m->tab.syms);
	memset(&m->tab, 0, sizeof(m->tab));
	munmap(map, size);
}

static int vg_module_init(struct vg_module *m, const struct link_map *lm, const char *fname, uintptr_t pc)
{
	memset(m, 0, sizeof(*m));
	m->key = lm;
	m->base = lm->l_addr;
	const char *open_path;
	char exe[PATH_MAX];
	if (!lm->l_name || !lm->l_name[0]) {
		/* The main program: dli_fname is argv[0], so name it by /proc/self/exe, which also opens the file that
		 * was executed even if its path has since been replaced or removed. */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			m->path = strdup(exe);
		} else {
			m->path = strdup(fname ? fname : "");
		}
		open_path = "/proc/self/exe";
	} else {
		m->path = strdup(lm->l_name);
		open_path = lm->l_name;
	}
	if (!m->path)
		return -ENOMEM;
	vg_module_load(m, open_path, pc);
	return 0;
}

/* The cached module for lm, parsing it on first use. NULL only when out of memory. */
static struct vg_module *vg_module_get(struct vg_symbolizer *s, const struct link_map *lm, const char *fname,
				       uintptr_t pc)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)s->mods[mid].key < (uintptr_t)lm)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->n && s->mods[lo].key == lm) {
		struct vg_module *m = &s->mods[lo];
		if (m->base == lm->l_addr)
			return m;
		/* dlclose and dlopen reused the link_map for another object: parse it again. */
		struct vg_module fresh;
		if (vg_module_init(&fresh, lm, fname, pc) < 0) {
			vg_module_release(&fresh);
			return NULL;
		}
		vg_module_release(m);
		*m = fresh;
		return m;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct vg_module *mods = realloc(s->mods, cap * sizeof(*mods));
		if (!mods)
			return NULL;
		s->mods = mods;
		s->cap = cap;
	}
	struct vg_module m;
	if (vg_module_init(&m, lm, fname, pc) < 0) {
		vg_module_release(&m);
		return NULL;
	}
	memmove(&s->mods[lo + 1], &s->mods[lo], (s->n - lo) * sizeof(*s->mods));
	s->mods[lo] = m;
	s->n++;
	return &s->mods[lo];
}

/* ---- public ---- */

struct vg_symbolizer *vg_symbolizer_new(void)
{
	return calloc(1, sizeof(struct vg_symbolizer));
}

void vg_symbolizer_free(struct vg_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		vg_module_release(&s->mods[i]);
	free(s->mods);
	free(s);
}

/* name kept in r's strings, or "" where memory is short. */
static const char *vg_symbolize_keep(struct vg_report *r, const char *name)
{
	const char *kept = name[0] ? vg_report_string(r, name, VG_REPORT_FRAME_STR) : NULL;
	return kept ? kept : "";
}

void vg_symbolize(struct vg_symbolizer *s, struct vg_report *r, uint64_t addr, struct vg_report_frame *out)
{
	char name[VG_REPORT_FRAME_STR];

	out->address = addr;
	out->module = "";
	out->module_offset = addr;
	out->symbol = "";
	out->symbol_offset = 0;
	if (addr == 0)
		return;
	/* Everything is looked up at addr - 1: a call that ends its function (or its module) returns past it. */
	uintptr_t pc = (uintptr_t)(addr - 1);
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1((void *)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return;
	out->module_offset = addr - lm->l_addr;

	struct vg_module *m = s ? vg_module_get(s, lm, info.dli_fname, pc) : NULL;
	struct vg_module tmp;
	if (!m && !s && vg_module_init(&tmp, lm, info.dli_fname, pc) == 0)
		m = &tmp;
	const char *path = m ? m->path : lm->l_name && lm->l_name[0] ? lm->l_name : info.dli_fname;
	vg_copy_name(name, sizeof(name), path, SIZE_MAX);
	out->module = vg_symbolize_keep(r, name);

	const struct vg_sym *sym = m ? vg_symtab_find(&m->tab, pc - lm->l_addr) : NULL;
	if (sym) {
		vg_copy_name(name, sizeof(name), m->tab.strs + sym->name, m->tab.strsz - sym->name);
		out->symbol = vg_symbolize_keep(r, name);
		out->symbol_offset = addr - (sym->start + lm->l_addr);
	} else if (info.dli_sname && info.dli_saddr) {
		vg_copy_name(name, sizeof(name), info.dli_sname, SIZE_MAX);
		out->symbol = vg_symbolize_keep(r, name);
		out->symbol_offset = addr - (uintptr_t)info.dli_saddr;
	}
	if (m == &tmp)
		vg_module_release(&tmp);
}

size_t vg_symbolize_build_id(uint64_t base, uint64_t pc, char *hex, size_t cap)
{
	static const char digits[] = "0123456789abcdef";
	struct vg_image_id id;
	struct vg_find_loaded f = {.base = (uintptr_t)base, .pc = (uintptr_t)pc, .found = 0, .id = &id};
	if (cap)
		hex[0] = '\0';
	dl_iterate_phdr(vg_find_loaded_cb, &f);
	if (!f.found || !id.build_id_len || cap < 2 * id.build_id_len + 1)
		return 0;
	for (size_t i = 0; i < id.build_id_len; i++) {
		hex[2 * i] = digits[id.build_id[i] >> 4];
		hex[2 * i + 1] = digits[id.build_id[i] & 15];
	}
	hex[2 * id.build_id_len] = '\0';
	return id.build_id_len;
}

int vg_symbolize_image(const void *image, size_t size, uint64_t vaddr, char *name, size_t cap, uint64_t *start)
{
	struct vg_elf e;
	struct vg_symtab t;
	int rc = vg_elf_open(&e, image, size);
	if (rc < 0)
		return rc;
	rc = vg_elf_symbols(&e, &t);
	if (rc < 0 && t.n == 0)
		return rc;
	const struct vg_sym *sym = vg_symtab_find(&t, vaddr);
	rc = -ENOENT;
	if (sym) {
		vg_copy_name(name, cap, t.strs + sym->name, t.strsz - sym->name);
		*start = sym->start;
		rc = 0;
	}
	free(t.syms);
	return rc;
}
