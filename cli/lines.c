/* Source lines for `report --lines` and `diff --lines` (cli/lines.h): libdw's libdwfl, dlopen'ed here only, turns a
 * frame's module offset into file:line and its inlined callers. Each module of a report is looked up once, by the
 * build ID the report recorded: its own path, then /usr/lib/debug/.build-id/, then the --debug-dir directories;
 * the first file with that build ID and DWARF is used, and a module whose files all carry another build ID gets
 * no lines and one warning. The command is single-threaded: the state is this file's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/lines.h"
#include "report/srcline.h"

/* Where the system keeps debug files by build ID (Debian's -dbgsym and -dbg packages, debuginfod caches aside). */
#define VG_LINES_SYSTEM_DEBUG "/usr/lib/debug"

/* The libdw functions used, each resolved by dlsym and typed from elfutils' own declarations. */
#define VG_DW_FUNCS(X) \
	X(dwfl_begin) X(dwfl_end) X(dwfl_report_begin) X(dwfl_report_elf) X(dwfl_report_end) \
	X(dwfl_module_build_id) X(dwfl_module_getdwarf) X(dwfl_module_getsrc) X(dwfl_lineinfo) \
	X(dwfl_module_addrdie) X(dwarf_getscopes) X(dwarf_getscopes_die) X(dwarf_tag) X(dwarf_attr) \
	X(dwarf_attr_integrate) X(dwarf_formstring) X(dwarf_formudata) X(dwarf_getsrcfiles) X(dwarf_filesrc)

static struct {
	void *handle;
#define VG_DW_FIELD(name) __typeof__(name) *name;
	VG_DW_FUNCS(VG_DW_FIELD)
#undef VG_DW_FIELD
} vg_dw;

/* One module of a report, by path and build ID (a diff's two reports may name one path with two builds). */
struct vg_lines_mod {
	char path[256], build_id[80];
	Dwfl *dwfl;                     /* NULL: no lines for this module (and the reason was counted) */
	Dwfl_Module *mod;
};

static struct {
	const char *const *dirs;
	size_t ndirs;
	struct vg_lines_mod *mods;
	size_t nmods, cap;
	size_t nodebug, noid;           /* modules without debug information here / without a build ID in the report */
	char nodebug_names[256], noid_names[256];
} vg_lines;

/* ---- finding a module's debug information ---- */

static int vg_lines_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
				 const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
				 char **debuginfo_file_name)
{
	/* The candidates are chosen by vg_lines_find and checked by build ID: libdwfl must not look elsewhere. */
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
	(void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks vg_lines_callbacks = {
	.find_debuginfo = vg_lines_no_debuginfo,
};

enum vg_lines_try { VG_TRY_ABSENT, VG_TRY_OTHER_ID, VG_TRY_NO_DWARF, VG_TRY_OK };

/* Open file as the module, at load bias 0 so that a frame's module_offset is the address to look up. On
 * VG_TRY_OK, *dwflp and *modp hold it; on VG_TRY_OTHER_ID, got holds the file's build ID ("" if none). */
static enum vg_lines_try vg_lines_try(const char *file, const char *want, Dwfl **dwflp, Dwfl_Module **modp,
				      char *got, size_t gotcap)
{
	if (access(file, R_OK) != 0)
		return VG_TRY_ABSENT;
	Dwfl *dwfl = vg_dw.dwfl_begin(&vg_lines_callbacks);
	if (!dwfl)
		return VG_TRY_ABSENT;
	vg_dw.dwfl_report_begin(dwfl);
	Dwfl_Module *mod = vg_dw.dwfl_report_elf(dwfl, file, file, -1, 0, false);
	vg_dw.dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		vg_dw.dwfl_end(dwfl);
		return VG_TRY_ABSENT;   /* not ELF: as if not there */
	}
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int n = vg_dw.dwfl_module_build_id(mod, &bits, &vaddr);
	char hex[sizeof(((struct vg_report_module *)0)->build_id)] = "";
	for (int i = 0; n > 0 && bits && i < n && 2 * (size_t)i + 2 < sizeof(hex); i++)
		snprintf(hex + 2 * i, 3, "%02x", bits[i]);
	if (strcmp(hex, want) != 0) {
		snprintf(got, gotcap, "%s", hex);
		vg_dw.dwfl_end(dwfl);
		return VG_TRY_OTHER_ID;
	}
	Dwarf_Addr bias;
	if (!vg_dw.dwfl_module_getdwarf(mod, &bias)) {
		vg_dw.dwfl_end(dwfl);
		return VG_TRY_NO_DWARF;
	}
	*dwflp = dwfl;
	*modp = mod;
	return VG_TRY_OK;
}

/* "libc.so.6, libcuda.so.1" grows by name, bounded (the count says how many there were). */
static void vg_lines_name_add(char *list, size_t cap, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t len = strlen(list);
	base = base ? base + 1 : path;
	if (len + strlen(base) + 8 >= cap) {
		if (len + 6 < cap && !strstr(list, ", ..."))
			snprintf(list + len, cap - len, ", ...");
		return;
	}
	snprintf(list + len, cap - len, "%s%s", len ? ", " : "", base);
}

/* The candidates in order (cli/lines.h); the first with the report's build ID and DWARF is kept. */
static void vg_lines_find(struct vg_lines_mod *m)
{
	char cand[2 + 3 * VG_LINES_MAX_DIRS][768];
	size_t n = 0;
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;

	snprintf(cand[n++], sizeof(cand[0]), "%s", m->path);
	if (strlen(m->build_id) > 2) {
		snprintf(cand[n++], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug", VG_LINES_SYSTEM_DEBUG, m->build_id,
			 m->build_id + 2);
		for (size_t d = 0; d < vg_lines.ndirs; d++)
			snprintf(cand[n++], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug", vg_lines.dirs[d],
				 m->build_id, m->build_id + 2);
	}
	for (size_t d = 0; d < vg_lines.ndirs; d++) {
		snprintf(cand[n++], sizeof(cand[0]), "%s/%s.debug", vg_lines.dirs[d], base);
		snprintf(cand[n++], sizeof(cand[0]), "%s/%s", vg_lines.dirs[d], base);
	}
	char other_path[sizeof(cand[0])] = "", other_id[80] = "";
	for (size_t i = 0; i < n; i++) {
		char got[80];
		switch (vg_lines_try(cand[i], m->build_id, &m->dwfl, &m->mod, got, sizeof(got))) {
		case VG_TRY_OK:
			return;
		case VG_TRY_OTHER_ID:
			if (!other_path[0]) {
				memcpy(other_path, cand[i], sizeof(other_path));
				snprintf(other_id, sizeof(other_id), "%s", got);
			}
			break;
		default:
			break;
		}
	}
	if (other_path[0])
		fprintf(stderr, "vramguard: warning: no source lines for %s: the report's build ID is %s, but %s has %s "
			"(another build; pass --debug-dir with the debug file of the build that ran)\n", vg_cli_q(m->path),
			m->build_id, vg_cli_q(other_path), other_id[0] ? other_id : "none");
	else {
		vg_lines.nodebug++;
		vg_lines_name_add(vg_lines.nodebug_names, sizeof(vg_lines.nodebug_names), m->path);
	}
}

static struct vg_lines_mod *vg_lines_mod(const struct vg_report_module *rm)
{
	for (size_t i = 0; i < vg_lines.nmods; i++)
		if (!strcmp(vg_lines.mods[i].path, rm->path) && !strcmp(vg_lines.mods[i].build_id, rm->build_id))
			return &vg_lines.mods[i];
	if (vg_lines.nmods == vg_lines.cap) {
		size_t cap = vg_lines.cap ? 2 * vg_lines.cap : 16;
		struct vg_lines_mod *v = realloc(vg_lines.mods, cap * sizeof(*v));
		if (!v)
			return NULL;
		vg_lines.mods = v;
		vg_lines.cap = cap;
	}
	struct vg_lines_mod *m = &vg_lines.mods[vg_lines.nmods++];
	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", rm->path);
	snprintf(m->build_id, sizeof(m->build_id), "%s", rm->build_id);
	if (!m->build_id[0]) {
		/* Nothing to check a file against: a rebuilt binary would give wrong lines. */
		vg_lines.noid++;
		vg_lines_name_add(vg_lines.noid_names, sizeof(vg_lines.noid_names), m->path);
	} else {
		vg_lines_find(m);
	}
	return m;
}

/* ---- a frame ---- */

/* A source path as people read it: relative to the compile directory when within it. */
static void vg_lines_path(char *dst, size_t cap, const char *file, const char *compdir)
{
	size_t n = compdir ? strlen(compdir) : 0;
	if (n && !strncmp(file, compdir, n) && file[n] == '/')
		file += n + 1;
	snprintf(dst, cap, "%s", file);
}

static const char *vg_lines_die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s = vg_dw.dwarf_formstring(vg_dw.dwarf_attr_integrate(die, DW_AT_name, &a));
	return s ? s : "??";
}

static bool vg_lines_is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

/* The inlined chain at pc: scopes from the innermost DIE outwards in the concrete tree (dwarf_getscopes_die;
 * dwarf_getscopes alone would continue in the abstract origin's scopes). */
static void vg_lines_inlined(Dwarf_Die *cu, Dwarf_Addr cupc, const char *compdir, struct vg_srcline *out)
{
	Dwarf_Die *scopes = NULL;
	int ns = vg_dw.dwarf_getscopes(cu, cupc, &scopes);
	if (ns <= 0) {
		free(scopes);
		return;
	}
	Dwarf_Die inner = scopes[0];
	free(scopes);
	scopes = NULL;
	ns = vg_dw.dwarf_getscopes_die(&inner, &scopes);
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (vg_dw.dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		files = NULL;
	int prev = -1;
	for (int i = 0; i < ns; i++) {
		int tag = vg_dw.dwarf_tag(&scopes[i]);
		if (!vg_lines_is_function(tag))
			continue;
		if (prev < 0) {
			if (tag == DW_TAG_inlined_subroutine)
				snprintf(out->function, sizeof(out->function), "%s", vg_lines_die_name(&scopes[i]));
		} else {
			/* scopes[prev] was inlined into this function, at its call_file:call_line. Past the bound the
			 * last slot is overwritten: the outermost function (the frame's symbol) stays last. */
			size_t k = out->ncallers < VG_SRCLINE_INLINED ? out->ncallers++ : VG_SRCLINE_INLINED - 1;
			Dwarf_Attribute a;
			Dwarf_Word fileno = 0, line = 0;
			const char *file = NULL;
			snprintf(out->callers[k].function, sizeof(out->callers[k].function), "%s",
				 vg_lines_die_name(&scopes[i]));
			if (files && vg_dw.dwarf_formudata(vg_dw.dwarf_attr(&scopes[prev], DW_AT_call_file, &a),
							   &fileno) == 0 && fileno < nfiles)
				file = vg_dw.dwarf_filesrc(files, fileno, NULL, NULL);
			vg_dw.dwarf_formudata(vg_dw.dwarf_attr(&scopes[prev], DW_AT_call_line, &a), &line);
			vg_lines_path(out->callers[k].file, sizeof(out->callers[k].file), file ? file : "", compdir);
			out->callers[k].line = line <= UINT32_MAX ? (uint32_t)line : 0;
		}
		if (tag != DW_TAG_inlined_subroutine) {
			snprintf(out->outer, sizeof(out->outer), "%s", vg_lines_die_name(&scopes[i]));
			break;
		}
		prev = i;
	}
	free(scopes);
}

static int vg_lines_frame(const struct vg_report *r, const struct vg_report_frame *f, struct vg_srcline *out)
{
	const struct vg_report_module *rm = NULL;
	for (size_t i = 0; r && r->modules && i < r->nmodules && !rm; i++)
		if (!strcmp(r->modules[i].path, f->module))
			rm = &r->modules[i];
	struct vg_lines_mod *m = rm ? vg_lines_mod(rm) : NULL;
	if (!m || !m->mod || f->module_offset == 0)
		return -1;
	/* A return address: the call is the instruction before it. */
	Dwarf_Addr pc = f->module_offset - 1, bias = 0;
	Dwfl_Line *line = vg_dw.dwfl_module_getsrc(m->mod, pc);
	int lineno = 0;
	const char *file = line ? vg_dw.dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (!file)
		return -1;
	memset(out, 0, sizeof(*out));
	Dwarf_Die *cu = vg_dw.dwfl_module_addrdie(m->mod, pc, &bias);
	Dwarf_Attribute a;
	const char *compdir = cu ? vg_dw.dwarf_formstring(vg_dw.dwarf_attr(cu, DW_AT_comp_dir, &a)) : NULL;
	vg_lines_path(out->file, sizeof(out->file), file, compdir);
	out->line = lineno > 0 ? (uint32_t)lineno : 0;
	if (cu)
		vg_lines_inlined(cu, pc - bias, compdir, out);
	return 0;
}

/* ---- public ---- */

int vg_lines_begin(const char *const *dirs, size_t ndirs)
{
	/* __VRAMGUARD_LIBDW: the tests' way to have libdw missing (tests/sections/lines.sh). */
	const char *name = getenv("__VRAMGUARD_LIBDW");
	name = name && name[0] ? name : "libdw.so.1";
	memset(&vg_lines, 0, sizeof(vg_lines));
	vg_lines.dirs = dirs;
	vg_lines.ndirs = ndirs;
	vg_dw.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!vg_dw.handle) {
		fprintf(stderr, "vramguard: note: --lines needs elfutils' libdw (%s), which cannot be loaded here: "
			"printing without source lines (install it: apt-get install libdw1, or dnf install elfutils-libs)\n",
			vg_cli_q(name));
		return -1;
	}
	const char *missing = NULL;
#define VG_DW_LOAD(fn) \
	if (!missing && !(vg_dw.fn = (__typeof__(fn) *)dlsym(vg_dw.handle, #fn))) \
		missing = #fn;
	VG_DW_FUNCS(VG_DW_LOAD)
#undef VG_DW_LOAD
	if (missing) {
		fprintf(stderr, "vramguard: note: --lines: %s has no %s (elfutils too old): printing without source "
			"lines\n", vg_cli_q(name), missing);
		vg_dw.handle = NULL;    /* left loaded: no dlclose, which the command would need at GLIBC_2.34 */
		return -1;
	}
	vg_report_srcline_hook = vg_lines_frame;
	return 0;
}

void vg_lines_check_report(const char *file, const struct vg_report *r)
{
	if (!vg_dw.handle || r->nmodules || !r->nsites)
		return;
	fprintf(stderr, "vramguard: note: %s lists no modules (report revision %u; build IDs came with revision 3): "
		"its frames get no source lines\n", vg_cli_q(file), (unsigned)r->schema_revision);
}

void vg_lines_end(void)
{
	if (vg_lines.nodebug)
		fprintf(stderr, "vramguard: note: no debug information found for %zu %s (%s): %s frames get no source lines "
			"(install %s debug package, or pass --debug-dir DIR with .build-id/xx/rest.debug or NAME.debug)\n",
			vg_lines.nodebug, vg_lines.nodebug == 1 ? "module" : "modules", vg_lines.nodebug_names,
			vg_lines.nodebug == 1 ? "its" : "their", vg_lines.nodebug == 1 ? "its" : "their");
	if (vg_lines.noid)
		fprintf(stderr, "vramguard: note: the report records no build ID for %zu %s (%s): without one a file "
			"cannot be checked against the build that ran, so %s frames get no source lines\n", vg_lines.noid,
			vg_lines.noid == 1 ? "module" : "modules", vg_lines.noid_names, vg_lines.noid == 1 ? "its" : "their");
	for (size_t i = 0; i < vg_lines.nmods; i++)
		if (vg_lines.mods[i].dwfl)
			vg_dw.dwfl_end(vg_lines.mods[i].dwfl);
	free(vg_lines.mods);
	memset(&vg_lines, 0, sizeof(vg_lines));
	vg_report_srcline_hook = NULL;
	/* libdw stays loaded until the command exits (it is about to): dlclose would need GLIBC_2.34 here. */
	vg_dw.handle = NULL;
}
