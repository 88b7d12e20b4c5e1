/* The flame-graph views of a report's call sites (the command only): a site's combined stack, root first, as the
 * folded export (flame.c), the speedscope export (speedscope.c) and the HTML icicle (html_svg.c) show it.
 *
 * Root = the outermost frame. A site with Python frames (sites[].python) is shown as its Python frames, outermost
 * first, then the native frames below the interpreter: those between the CUDA entry point and the innermost frame
 * of the interpreter itself (a module named python3* or libpython*), which stand for the Python frames above them.
 * When no native frame is the interpreter's (an embedded or truncated stack), every native frame is kept. A site
 * without Python frames shows its native frames, outermost first.
 *
 * Process and thread start-up frames at the root of a stack whose native frames are all kept fold into the
 * graph's root: every stack of a program begins with them and they say nothing about it. They are
 * the outermost frames named _start, __libc_start_main, __libc_start_main_impl, __libc_start_call_main,
 * libc_start_main_stage2, _dl_start_user, start_thread, clone, clone3, __clone, __clone3 or __clone_internal, or
 * of libc without a name (glibc's start-up functions are static); the innermost frame is always kept. */
#ifndef VG_FLAME_H
#define VG_FLAME_H

#include <stddef.h>

#include "report/report.h"

#define VG_FLAME_MAX (VG_REPORT_MAX_FRAMES + VG_REPORT_MAX_PYFRAMES)

struct vg_flame_frame {
	const struct vg_report_pyframe *py;     /* a Python frame, or */
	const struct vg_report_frame *native;   /* a native one (both NULL: the site has no frames at all) */
	const struct vg_report *r;              /* the report of a native frame, for its source line (or NULL) */
};

/* The frames of site s of report r, root first, into out[VG_FLAME_MAX]; returns how many (at least 1). */
size_t vg_flame_stack(const struct vg_report *r, const struct vg_report_site *s, struct vg_flame_frame *out);

/* A frame as people read it, unescaped but without control characters: "train.py:12 in step" for a Python frame,
 * "at::empty (libtorch_cuda.so)" for a native one (demangled where the text form demangles, without the offset,
 * so that calls from one function merge), "libfoo.so+0x1a2b" (where it is) when the symbol is unknown, "(no call
 * site)". Returns 1 for a native frame without a name (shown grey in the HTML), else 0.
 * With --lines (report/srcline.h) a native frame whose line is found shows it: "leak_buffers leaky.c:24 (leaky)",
 * named by the debug information where the symbol is unknown; code inlined into its callers shows them first,
 * "main leaky.c:77 > fill leaky.c:30 (leaky)". */
int vg_flame_label(struct vg_strbuf *b, const struct vg_flame_frame *f);

/* A native frame's function alone ("at::empty", "??"), for formats with a separate file field. */
void vg_flame_symbol(struct vg_strbuf *b, const struct vg_report_frame *f);

/* The last path component of a module or file. */
const char *vg_flame_basename(const char *path, size_t max, size_t *len);

/* The exports. Folded: one line per site with live memory, "root;...;leaf BYTES" (flamegraph.pl, inferno,
 * speedscope); ';' inside a frame becomes ','. Speedscope: its JSON file format
 * (https://www.speedscope.app/file-format-schema.json), two sampled profiles in bytes: live memory by site, and
 * all memory ever allocated by site. Both return 0, or -ENOMEM. */
int vg_report_render_folded(const struct vg_report *r, struct vg_strbuf *out);
int vg_report_render_speedscope(const struct vg_report *r, const char *name, struct vg_strbuf *out);

#endif
