/* Python frames for call sites: the CPython stack of the allocating thread, read from the process's own interpreter
 * without the GIL, without running Python code, without touching a reference count and without allocating
 * (docs/python.md). Capture records (code object, instruction offset) pairs; only a new call site turns them into
 * file, line and function strings, copied then. Internal (hidden) to the library. */
#ifndef VG_PYFRAMES_H
#define VG_PYFRAMES_H

#include <stdint.h>

/* One frame as a call site's key holds it: the code object, what makes a reused address unlikely to match a dead
 * one (its file name object and first line), and the offset of the instruction executing, in bytes. */
struct vg_pykey {
	uintptr_t code;
	uintptr_t filename;
	uint32_t offset;
	int32_t firstlineno;
};

/* One frame resolved: strings copied (malloc'd by vg_py_resolve, freed with vg_py_free). */
struct vg_pyframe {
	uint32_t line;                  /* 0 if unknown */
	char *file;
	char *function;
};

/* Look for CPython in the process (dlsym, no link-time dependency) and check that its layout is one we know. on=0:
 * off. info(msg) receives the one line that says why Python frames are off where CPython is present (an unknown
 * version, a free-threaded build, a layout that fails a check later), at most once. Call once, before any capture,
 * outside any hook. */
void vg_py_configure(int on, void (*info)(const char *msg));

/* 1 when captures may return Python frames. */
int vg_py_enabled(void);
/* The CPython version found (0x030b07f0 style), 0 if none. */
unsigned long vg_py_version(void);

/* The calling thread's Python frames, innermost first, at most max: 0 when it has none, when Python is absent, off,
 * initializing or finalizing. Allocation-free; reads only the thread's own frames. */
int vg_py_capture(struct vg_pykey *out, int max);

/* Strings and lines of frames the calling thread captured and is still inside of (their code objects are alive).
 * Returns how many of out[] were filled (a frame whose code looks wrong stops it and turns capture off, with the
 * info line). */
int vg_py_resolve(const struct vg_pykey *k, int n, struct vg_pyframe *out);
void vg_py_free(struct vg_pyframe *f, int n);

/* For tests and the benchmark: decode a line table of the given version ((major << 8) | minor, e.g. 0x030b) for
 * a byte offset, as CPython's PyCode_Addr2Line does. */
int vg_py_addr2line(int version, const uint8_t *table, long len, int firstlineno, long offset);

#endif
