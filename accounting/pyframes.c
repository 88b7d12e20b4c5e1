/* Python frames without the GIL. The allocating thread is inside a driver call made from its own Python code (or
 * from C code that Python called): its frame chain cannot change until the call returns, and every code object on
 * it is kept alive by the frame. So we read the chain in place, as out-of-process samplers do (py-spy, austin),
 * but from inside the process and only for the calling thread:
 *   thread state  PyGILState_GetThisThreadState(): a thread-specific key, callable without the GIL
 *   3.9, 3.10     tstate->frame -> PyFrameObject (f_back, f_code, f_lasti)
 *   3.11          tstate->cframe->current_frame -> _PyInterpreterFrame (previous, f_code, prev_instr)
 *   3.12          the same, skipping shim frames (owner FRAME_OWNED_BY_CSTACK)
 *   3.13          tstate->current_frame (previous, f_executable, instr_ptr), checked against _PyRuntime's
 *                 _Py_DebugOffsets, which 3.13 publishes for such readers
 * The numbers in vg_py_layouts[] are x86-64 offsets; docs/python.md says where each came from. Anything else (an
 * unknown version, another architecture, a free-threaded or Py_TRACE_REFS build, a check failing later) leaves
 * Python frames off with one info line. Pointers followed are checked for alignment, every code object for its
 * type (ob_type == &PyCode_Type), every string for its type and size, and loops are bounded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting/pyframes.h"

enum vg_py_chain { VG_PY_FRAMEOBJ, VG_PY_CFRAME, VG_PY_DIRECT };
enum vg_py_lines { VG_PY_LNOTAB, VG_PY_LINETABLE310, VG_PY_LOCATIONS };

struct vg_py_layout {
	int version;                    /* (major << 8) | minor */
	enum vg_py_chain chain;
	enum vg_py_lines lines;
	int ts_frame;                   /* PyThreadState: frame (3.9, 3.10), cframe (3.11, 3.12), current_frame (3.13) */
	int cf_current;                 /* _PyCFrame.current_frame (3.11, 3.12) */
	int fr_back, fr_code, fr_instr; /* the frame's previous, code and f_lasti / prev_instr / instr_ptr */
	int fr_owner;                   /* -1: none; shim frames (owner 3) are skipped */
	int lasti_units;                /* f_lasti counts 2-byte code units (3.10) rather than bytes (3.9) */
	int co_firstlineno, co_filename, co_name, co_qualname, co_lines, co_code;  /* co_qualname -1: none */
	int str_ascii_size, str_compact_size;       /* sizeof PyASCIIObject, PyCompactUnicodeObject */
};

/* Common to all: PyObject.ob_type 8, PyVarObject.ob_size 16, PyASCIIObject.length 16 and .state 32 (interned:2,
 * kind:3, compact:1, ascii:1 from bit 0), PyBytesObject.ob_sval 32. */
static const struct vg_py_layout vg_py_layouts[] = {
	{ 0x0309, VG_PY_FRAMEOBJ, VG_PY_LNOTAB, 24, 0, 24, 32, 104, -1, 0, 40, 104, 112, -1, 120, 0, 48, 72 },
	{ 0x030a, VG_PY_FRAMEOBJ, VG_PY_LINETABLE310, 24, 0, 24, 32, 96, -1, 1, 40, 104, 112, -1, 120, 0, 48, 72 },
	{ 0x030b, VG_PY_CFRAME, VG_PY_LOCATIONS, 56, 8, 48, 32, 56, -1, 0, 72, 112, 120, 128, 136, 184, 48, 72 },
	{ 0x030c, VG_PY_CFRAME, VG_PY_LOCATIONS, 56, 0, 8, 0, 56, 70, 0, 68, 112, 120, 128, 136, 192, 40, 56 },
	{ 0x030d, VG_PY_DIRECT, VG_PY_LOCATIONS, 72, 0, 8, 0, 56, 70, 0, 68, 112, 120, 128, 136, 200, 40, 56 },
};

#define VG_PY_OWNED_BY_CSTACK 3
#define VG_PY_STEPS_MAX 1024    /* frames visited at most per capture (shim frames included) */
#define VG_PY_STR_MAX (1 << 20) /* longer "strings" are not names: a layout problem */

static struct {
	const struct vg_py_layout *l;
	int (*initialized)(void);
	int (*finalizing)(void);
	void *(*tstate)(void);
	uintptr_t code_type, unicode_type, bytes_type;
	unsigned long version;
	void (*info)(const char *msg);
} vg_py;
static _Atomic int vg_py_on;
static _Atomic int vg_py_told;

/* The one info line (a macro so that each format is a literal the compiler checks). */
#define vg_py_note(...) do {                                                                          \
		char msg_[256];                                                                       \
		if (!atomic_exchange(&vg_py_told, 1) && vg_py.info) {                                 \
			snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                    \
			vg_py.info(msg_);                                                             \
		}                                                                                     \
	} while (0)

static inline uintptr_t vg_rd_ptr(uintptr_t base, int off)
{
	return *(const uintptr_t *)(base + (uintptr_t)off);
}

static inline int vg_aligned(uintptr_t p)
{
	return p != 0 && (p & 7) == 0;
}

static inline int vg_is_type(uintptr_t obj, uintptr_t type)
{
	return vg_aligned(obj) && vg_rd_ptr(obj, 8) == type;
}

/* 3.13: the layout the interpreter publishes must be the one in our table (else it is a build we do not know:
 * free-threaded, or a later change). Offsets into _Py_DebugOffsets, from CPython 3.13's pycore_runtime.h. */
static int vg_py_check_debug_offsets(void)
{
	const unsigned char *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
	if (!rt || memcmp(rt, "xdebugpy", 8) != 0)
		return -EPROTO;
	uint64_t v[64];
	memcpy(v, rt, sizeof(v));
	if ((v[1] >> 16) != 0x030d)
		return -EPROTO;
	if (v[2] != 0)
		return -EOPNOTSUPP;     /* free_threaded */
	static const struct { int word; int want; } chk[] = {
		{ 184 / 8, 72 }, { 232 / 8, 8 }, { 240 / 8, 0 }, { 248 / 8, 56 }, { 264 / 8, 70 },
		{ 280 / 8, 112 }, { 288 / 8, 120 }, { 296 / 8, 128 }, { 304 / 8, 136 }, { 312 / 8, 68 },
		{ 344 / 8, 200 }, { 360 / 8, 8 },
	};
	for (size_t i = 0; i < sizeof(chk) / sizeof(chk[0]); i++)
		if (v[chk[i].word] != (uint64_t)chk[i].want)
			return -EPROTO;
	return 0;
}

void vg_py_configure(int on, void (*info)(const char *msg))
{
	atomic_store(&vg_py_on, 0);
	vg_py.info = info;
	vg_py.l = NULL;
	vg_py.version = 0;
	if (!on)
		return;
	const char *(*getversion)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	vg_py.initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	vg_py.tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	if (!getversion || !vg_py.initialized || !vg_py.tstate)
		return;         /* no CPython in this process: nothing to say */
	vg_py.finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
	if (!vg_py.finalizing)
		vg_py.finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
	const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version");       /* 3.11 and later */
	unsigned maj = 0, min = 0;
	if (hex && *hex) {
		vg_py.version = *hex;
		maj = (unsigned)(*hex >> 24);
		min = (unsigned)(*hex >> 16) & 0xff;
	} else {
		const char *s = getversion();   /* "3.9.18 (main, ...": a static string, no Python code runs */
		if (!s || sscanf(s, "%u.%u", &maj, &min) != 2)
			maj = min = 0;
		vg_py.version = ((unsigned long)maj << 24) | ((unsigned long)min << 16);
	}
	int ver = (int)((maj << 8) | min);
#if defined(__x86_64__)
	for (size_t i = 0; i < sizeof(vg_py_layouts) / sizeof(vg_py_layouts[0]); i++)
		if (vg_py_layouts[i].version == ver)
			vg_py.l = &vg_py_layouts[i];
#endif
	if (!vg_py.l) {
		vg_py_note("python frames: CPython %u.%u has no frame layout in this vramguard (3.9 to 3.13 on x86-64); "
			   "call sites show native frames only", maj, min);
		return;
	}
	/* 3.13 publishes its layout: check it first (a free-threaded build fails the header check below too, and
	 * should say what it is). */
	if (ver == 0x030d) {
		int rc = vg_py_check_debug_offsets();
		if (rc != 0) {
			if (rc == -EOPNOTSUPP)
				vg_py_note("python frames: CPython %u.%u is a free-threaded build, not supported yet; call "
					   "sites show native frames only", maj, min);
			else
				vg_py_note("python frames: CPython %u.%u's published debug offsets differ from the layout "
					   "vramguard knows; call sites show native frames only", maj, min);
			vg_py.l = NULL;
			return;
		}
	}
	vg_py.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	vg_py.unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	vg_py.bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
	uintptr_t type_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyType_Type");
	/* Static type objects point at PyType_Type at offset 8 unless the object header is not the usual one
	 * (Py_TRACE_REFS, a free-threaded build). */
	if (!vg_py.code_type || !vg_py.unicode_type || !vg_py.bytes_type || !type_type ||
	    !vg_is_type(vg_py.code_type, type_type) || !vg_is_type(vg_py.unicode_type, type_type)) {
		vg_py_note("python frames: CPython %u.%u's object layout is not the standard one (a debug build?); "
			   "call sites show native frames only", maj, min);
		vg_py.l = NULL;
		return;
	}
	atomic_store(&vg_py_on, 1);
}

int vg_py_enabled(void)
{
	return atomic_load_explicit(&vg_py_on, memory_order_relaxed);
}

unsigned long vg_py_version(void)
{
	return vg_py.version;
}

static inline uintptr_t vg_py_first(const struct vg_py_layout *l, uintptr_t ts)
{
	uintptr_t f = vg_rd_ptr(ts, l->ts_frame);
	if (l->chain == VG_PY_CFRAME)
		f = vg_aligned(f) ? vg_rd_ptr(f, l->cf_current) : 0;
	return f;
}

int vg_py_capture(struct vg_pykey *out, int max)
{
	if (!atomic_load_explicit(&vg_py_on, memory_order_relaxed) || max <= 0)
		return 0;
	const struct vg_py_layout *l = vg_py.l;
	if (!vg_py.initialized() || (vg_py.finalizing && vg_py.finalizing()))
		return 0;
	uintptr_t ts = (uintptr_t)vg_py.tstate();
	if (!vg_aligned(ts))
		return 0;
	uintptr_t f = vg_py_first(l, ts);
	int n = 0;
	for (int steps = 0; n < max && vg_aligned(f) && steps < VG_PY_STEPS_MAX; steps++) {
		uintptr_t code = vg_rd_ptr(f, l->fr_code);
		uintptr_t next = vg_rd_ptr(f, l->fr_back);
		if (l->fr_owner >= 0 && *(const char *)(f + (uintptr_t)l->fr_owner) == VG_PY_OWNED_BY_CSTACK) {
			f = next;
			continue;
		}
		if (!vg_is_type(code, vg_py.code_type)) {
			if (l->chain == VG_PY_DIRECT) {  /* 3.13: f_executable may be something else (None) */
				f = next;
				continue;
			}
			break;
		}
		long off;
		if (l->chain == VG_PY_FRAMEOBJ) {
			off = *(const int *)(f + (uintptr_t)l->fr_instr);
			if (l->lasti_units)
				off *= 2;
		} else {
			off = (long)(vg_rd_ptr(f, l->fr_instr) - (code + (uintptr_t)l->co_code));
		}
		out[n].code = code;
		out[n].filename = vg_rd_ptr(code, l->co_filename);
		out[n].offset = off < 0 ? UINT32_MAX : (uint32_t)off;
		out[n].firstlineno = *(const int *)(code + (uintptr_t)l->co_firstlineno);
		n++;
		f = next;
	}
	return n;
}

/* ---- lines ---- */

static unsigned vg_varint(const uint8_t **p, const uint8_t *end)
{
	unsigned val = 0, shift = 0;
	while (*p < end && shift < 32) {
		unsigned b = *(*p)++;
		val |= (b & 63) << shift;
		if (!(b & 64))
			break;
		shift += 6;
	}
	return val;
}

int vg_py_addr2line(int version, const uint8_t *t, long len, int line, long addr)
{
	const uint8_t *p = t, *end = t + (len > 0 ? len : 0);
	if (addr < 0)
		return line;
	if (version == 0x0309) {        /* co_lnotab: (byte delta, signed line delta) pairs (Objects/lnotab_notes.txt) */
		long a = 0;
		for (; p + 1 < end; p += 2) {
			a += p[0];
			if (a > addr)
				break;
			line += (signed char)p[1];
		}
		return line;
	}
	if (version == 0x030a) {        /* co_linetable: (byte delta, line delta or -128 for none) pairs */
		long start = 0;
		for (; p + 1 < end; p += 2) {
			long stop = start + p[0];
			int none = (signed char)p[1] == -128;
			if (!none)
				line += (signed char)p[1];
			if (addr >= start && addr < stop)
				return none ? 0 : line;
			start = stop;
		}
		return 0;
	}
	/* 3.11+: the location table (Objects/locations.md): an entry opens with a byte 1cccclll, length lll+1 code
	 * units, code cccc the form; the line delta comes from the form. */
	long start = 0;
	while (p < end) {
		uint8_t b = *p;
		if (!(b & 0x80))
			return 0;
		int code = (b >> 3) & 15, delta = 0;
		long stop = start + ((b & 7) + 1) * 2;
		const uint8_t *q = p + 1;
		if (code == 14 || code == 13) {
			unsigned u = vg_varint(&q, end);
			delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		line += delta;
		if (addr >= start && addr < stop)
			return code == 15 ? 0 : line;
		start = stop;
		do
			p++;
		while (p < end && !(*p & 0x80));
	}
	return 0;
}

/* ---- strings ---- */

static size_t vg_utf8(char *dst, size_t cap, size_t n, uint32_t c)
{
	char b[4];
	size_t k;
	if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		c = '?';        /* a lone surrogate (surrogateescape'd bytes) is not UTF-8: the JSON must stay valid */
	if (c < 0x80) {
		b[0] = (char)c;
		k = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | (c >> 6));
		b[1] = (char)(0x80 | (c & 63));
		k = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | (c >> 12));
		b[1] = (char)(0x80 | ((c >> 6) & 63));
		b[2] = (char)(0x80 | (c & 63));
		k = 3;
	} else {
		b[0] = (char)(0xf0 | (c >> 18));
		b[1] = (char)(0x80 | ((c >> 12) & 63));
		b[2] = (char)(0x80 | ((c >> 6) & 63));
		b[3] = (char)(0x80 | (c & 63));
		k = 4;
	}
	if (n + k >= cap)
		return 0;
	memcpy(dst + n, b, k);
	return k;
}

/* A str object's text as UTF-8, cut to cap-1 bytes at a character boundary. -EPROTO if it is not a str (a layout
 * we misread), -EOPNOTSUPP for a str we do not read (a legacy, non-compact one: "?"). */
static int vg_py_str(uintptr_t s, char *dst, size_t cap)
{
	const struct vg_py_layout *l = vg_py.l;
	dst[0] = '\0';
	if (!vg_is_type(s, vg_py.unicode_type))
		return -EPROTO;
	long len = *(const long *)(s + 16);
	uint32_t state = *(const uint32_t *)(s + 32);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (len < 0 || len > VG_PY_STR_MAX)
		return -EPROTO;
	if (!compact || (kind != 1 && kind != 2 && kind != 4)) {
		snprintf(dst, cap, "?");
		return -EOPNOTSUPP;
	}
	const uint8_t *data = (const uint8_t *)(s + (uintptr_t)(ascii ? l->str_ascii_size : l->str_compact_size));
	size_t n = 0;
	for (long i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? data[i] : kind == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
		size_t k = vg_utf8(dst, cap, n, c);
		if (!k)
			break;
		n += k;
	}
	dst[n] = '\0';
	return 0;
}

int vg_py_resolve(const struct vg_pykey *k, int n, struct vg_pyframe *out)
{
	const struct vg_py_layout *l = vg_py.l;
	char file[256], fn[128];
	int i;
	if (!l)
		return 0;
	for (i = 0; i < n; i++) {
		uintptr_t code = k[i].code;
		uintptr_t name = vg_rd_ptr(code, l->co_qualname >= 0 ? l->co_qualname : l->co_name);
		uintptr_t lines = vg_rd_ptr(code, l->co_lines);
		if (vg_py_str(k[i].filename, file, sizeof(file)) == -EPROTO || vg_py_str(name, fn, sizeof(fn)) == -EPROTO ||
		    !vg_is_type(lines, vg_py.bytes_type) || *(const long *)(lines + 16) < 0) {
			atomic_store(&vg_py_on, 0);
			vg_py_note("python frames: a code object of CPython %lu.%lu does not look as expected; Python "
				   "frames are off from now on (native frames only)", vg_py.version >> 24,
				   (vg_py.version >> 16) & 0xff);
			break;
		}
		long len = *(const long *)(lines + 16);
		out[i].line = (uint32_t)vg_py_addr2line(l->version, (const uint8_t *)(lines + 32), len,
							k[i].firstlineno, k[i].offset == UINT32_MAX ? -1 : (long)k[i].offset);
		out[i].file = strdup(file);
		out[i].function = strdup(fn);
		if (!out[i].file || !out[i].function) {
			free(out[i].file);
			free(out[i].function);
			break;
		}
	}
	return i;
}

void vg_py_free(struct vg_pyframe *f, int n)
{
	for (int i = 0; i < n; i++) {
		free(f[i].file);
		free(f[i].function);
	}
}
