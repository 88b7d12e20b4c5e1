/* The resolver of `--lines` (cli/lines_dw.h): libdw's libdwfl, dlopen'ed by the command, turns a frame's module
 * offset into file:line and its inlined callers. Each module of a report is looked up once, by the build ID the
 * report recorded: its own path, then /usr/lib/debug/.build-id/, then the --debug-dir directories; the first file
 * with that build ID and DWARF is used. Every candidate is opened here (vg_lines_dw_open) and handed to libdw as a
 * descriptor: a report is written by anyone, and names any path. Runs in the child of cli/lines.c, single-threaded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cli/lines_dw.h"
#include "config/stat.h"

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
struct vg_lines_cmod {
	char path[256], build_id[80];
	enum vg_lines_verdict verdict;
	char file[768], why[96];        /* as in struct vg_lines_ans */
	Dwfl *dwfl;
	Dwfl_Module *mod;
};

static struct {
	const char *const *dirs;
	size_t ndirs;
	struct vg_lines_cmod *mods;
	size_t nmods, cap;
} vg_res;

int vg_lines_dw_begin(const char *name, const char *const *dirs, size_t ndirs, char *err, size_t errlen)
{
	vg_res.dirs = dirs;
	vg_res.ndirs = ndirs;
	vg_dw.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!vg_dw.handle) {
		snprintf(err, errlen, "cannot be loaded");
		return -1;
	}
	const char *missing = NULL;
#define VG_DW_LOAD(fn) \
	if (!missing && !(vg_dw.fn = (__typeof__(fn) *)dlsym(vg_dw.handle, #fn))) \
		missing = #fn;
	VG_DW_FUNCS(VG_DW_LOAD)
#undef VG_DW_LOAD
	if (missing) {
		snprintf(err, errlen, "has no %s", missing);
		vg_dw.handle = NULL;    /* left loaded: no dlclose, which the command would need at GLIBC_2.34 */
		return -1;
	}
	return 0;
}

/* ---- opening a file ---- */

/* Kernel file systems whose "regular files" are not files: reading one can block (/proc/kmsg), have effects, or
 * never end. A module or debug file never lives there. */
static const char *vg_lines_pseudo_fs(int fd)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) != 0)
		return NULL;
	switch ((unsigned long)sf.f_type) {
	case 0x9fa0: return "/proc";
	case 0x62656572: return "/sys";
	case 0x64626720: return "debugfs";
	case 0x74726163: return "tracefs";
	case 0x73636673: return "securityfs";
	case 0x62656570: return "configfs";
	case 0x27e0eb: case 0x63677270: return "a cgroup file system";
	case 0xcafe4a11: return "bpffs";
	case 0xde5e81e4: return "efivarfs";
	case 0x6165676c: return "pstore";
	}
	return NULL;
}

static const char *vg_lines_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" :
	       S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int vg_lines_dw_open(const char *file, char *why, size_t whylen)
{
	/* O_PATH opens nothing: no FIFO waits for a writer, no device driver sees an open. */
	int pfd = open(file, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -1;
	struct stat st, st2;
	const char *fs;
	if (vg_fstat(pfd, &st) != 0) {
		close(pfd);
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		snprintf(why, whylen, "is %s", vg_lines_kind(st.st_mode));
	else if ((fs = vg_lines_pseudo_fs(pfd)))
		snprintf(why, whylen, "is on %s (a kernel file system)", fs);
	else if ((unsigned long long)st.st_size > VG_LINES_MAX_FILE)
		snprintf(why, whylen, "is larger than %llu GiB", VG_LINES_MAX_FILE >> 30);
	else
		why[0] = '\0';
	if (why[0]) {
		close(pfd);
		return -2;
	}
	/* The file just checked, not whatever the path names by now: reopened through its descriptor where /proc
	 * allows it, else by path and compared. O_NONBLOCK all the same, until fstat says it is that regular file. */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return -1;
	int fl;
	if (vg_fstat(fd, &st2) != 0 || !S_ISREG(st2.st_mode) || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		close(fd);
		snprintf(why, whylen, "changed while it was opened");
		return -2;
	}
	if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- finding a module's debug information ---- */

static int vg_lines_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
				 const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
				 char **debuginfo_file_name)
{
	/* The candidates are chosen by vg_lines_find, opened by vg_lines_dw_open and checked by build ID: libdwfl must
	 * not look elsewhere (a .gnu_debuglink or .gnu_debugaltlink names any path the file's author chose). */
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
	(void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks vg_lines_callbacks = {
	.find_debuginfo = vg_lines_no_debuginfo,
};

enum vg_lines_try { VG_TRY_ABSENT, VG_TRY_REFUSED, VG_TRY_OTHER_ID, VG_TRY_NO_DWARF, VG_TRY_OK };

/* A descriptor given to libdw that libdw did not keep: closed, unless libdw closed it already. */
static void vg_lines_close_given(int fd)
{
	if (fcntl(fd, F_GETFD) != -1)
		close(fd);
}

/* Open file as the module, at load bias 0 so that a frame's module_offset is the address to look up. On
 * VG_TRY_OK, m->dwfl and m->mod hold it; on VG_TRY_OTHER_ID, got holds the file's build ID ("" if none); on
 * VG_TRY_REFUSED, got says why. */
static enum vg_lines_try vg_lines_try(const char *file, struct vg_lines_cmod *m, char *got, size_t gotcap)
{
	int fd = vg_lines_dw_open(file, got, gotcap);
	if (fd == -2)
		return VG_TRY_REFUSED;
	if (fd < 0)
		return VG_TRY_ABSENT;
	/* Only ELF: libdwfl would also unpack a gzip, bzip2, xz or zstd file into memory, whatever its size. */
	unsigned char magic[4];
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) || memcmp(magic, "\177ELF", 4) != 0) {
		close(fd);
		return VG_TRY_ABSENT;
	}
	Dwfl *dwfl = vg_dw.dwfl_begin(&vg_lines_callbacks);
	if (!dwfl) {
		close(fd);
		return VG_TRY_ABSENT;
	}
	vg_dw.dwfl_report_begin(dwfl);
	Dwfl_Module *mod = vg_dw.dwfl_report_elf(dwfl, file, file, fd, 0, false);
	vg_dw.dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		vg_lines_close_given(fd);
		vg_dw.dwfl_end(dwfl);
		return VG_TRY_ABSENT;   /* not an ELF file libdwfl takes: as if not there */
	}
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int n = vg_dw.dwfl_module_build_id(mod, &bits, &vaddr);
	char hex[sizeof(((struct vg_report_module *)0)->build_id)] = "";
	for (int i = 0; n > 0 && bits && i < n && 2 * (size_t)i + 2 < sizeof(hex); i++)
		snprintf(hex + 2 * i, 3, "%02x", bits[i]);
	if (strcmp(hex, m->build_id) != 0) {
		snprintf(got, gotcap, "%s", hex);
		vg_dw.dwfl_end(dwfl);
		return VG_TRY_OTHER_ID;
	}
	Dwarf_Addr bias;
	if (!vg_dw.dwfl_module_getdwarf(mod, &bias)) {
		vg_dw.dwfl_end(dwfl);
		return VG_TRY_NO_DWARF;
	}
	m->dwfl = dwfl;
	m->mod = mod;
	return VG_TRY_OK;
}

/* The candidates in order (cli/lines.h); the first with the report's build ID and DWARF is kept. Else the verdict
 * names the first file of another build, or the first file refused. */
static void vg_lines_find(struct vg_lines_cmod *m)
{
	char cand[2 + 3 * VG_LINES_MAX_DIRS][768];
	size_t n = 0;
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;

	snprintf(cand[n++], sizeof(cand[0]), "%s", m->path);
	if (strlen(m->build_id) > 2) {
		snprintf(cand[n++], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug", VG_LINES_SYSTEM_DEBUG, m->build_id,
			 m->build_id + 2);
		for (size_t d = 0; d < vg_res.ndirs; d++)
			snprintf(cand[n++], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug", vg_res.dirs[d],
				 m->build_id, m->build_id + 2);
	}
	for (size_t d = 0; d < vg_res.ndirs; d++) {
		snprintf(cand[n++], sizeof(cand[0]), "%s/%s.debug", vg_res.dirs[d], base);
		snprintf(cand[n++], sizeof(cand[0]), "%s/%s", vg_res.dirs[d], base);
	}
	m->verdict = VG_LINES_NODEBUG;
	for (size_t i = 0; i < n; i++) {
		char got[sizeof(m->why)];
		enum vg_lines_try t = vg_lines_try(cand[i], m, got, sizeof(got));
		if (t == VG_TRY_OK) {
			m->verdict = VG_LINES_OK;
			return;
		}
		if ((t == VG_TRY_OTHER_ID && m->verdict != VG_LINES_OTHER_ID) ||
		    (t == VG_TRY_REFUSED && m->verdict == VG_LINES_NODEBUG)) {
			m->verdict = t == VG_TRY_OTHER_ID ? VG_LINES_OTHER_ID : VG_LINES_REFUSED;
			memcpy(m->file, cand[i], sizeof(m->file));
			memcpy(m->why, got, sizeof(m->why));
		}
	}
}

static struct vg_lines_cmod *vg_lines_cmod(const char *path, const char *build_id)
{
	for (size_t i = 0; i < vg_res.nmods; i++)
		if (!strcmp(vg_res.mods[i].path, path) && !strcmp(vg_res.mods[i].build_id, build_id))
			return &vg_res.mods[i];
	if (vg_res.nmods == vg_res.cap) {
		size_t cap = vg_res.cap ? 2 * vg_res.cap : 16;
		struct vg_lines_cmod *v = realloc(vg_res.mods, cap * sizeof(*v));
		if (!v)
			return NULL;
		vg_res.mods = v;
		vg_res.cap = cap;
	}
	struct vg_lines_cmod *m = &vg_res.mods[vg_res.nmods++];
	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", path);
	snprintf(m->build_id, sizeof(m->build_id), "%s", build_id);
	vg_lines_find(m);
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

static int vg_lines_frame(struct vg_lines_cmod *m, uint64_t module_offset, struct vg_srcline *out)
{
	if (module_offset == 0)
		return -1;
	/* A return address: the call is the instruction before it. */
	Dwarf_Addr pc = module_offset - 1, bias = 0;
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

void vg_lines_dw_answer(const struct vg_lines_req *q, struct vg_lines_ans *a)
{
	memset(a, 0, sizeof(*a));
	struct vg_lines_cmod *m = vg_lines_cmod(q->path, q->build_id);
	a->verdict = m ? (int32_t)m->verdict : VG_LINES_NODEBUG;
	if (!m)
		return;
	memcpy(a->file, m->file, sizeof(a->file));
	memcpy(a->why, m->why, sizeof(a->why));
	a->found = m->verdict == VG_LINES_OK && vg_lines_frame(m, q->offset, &a->line) == 0;
}

/* ---- the child's loop ---- */

static int vg_lines_io(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;
	while (len) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void vg_lines_dw_serve(int fd)
{
	static struct vg_lines_req q;
	static struct vg_lines_ans a;
	while (vg_lines_io(fd, &q, sizeof(q), false) == 0) {
		q.path[sizeof(q.path) - 1] = q.build_id[sizeof(q.build_id) - 1] = '\0';
		vg_lines_dw_answer(&q, &a);
		if (vg_lines_io(fd, &a, sizeof(a), true) != 0)
			break;
	}
}
