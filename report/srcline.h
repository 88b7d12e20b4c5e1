/* Source lines of native frames (`vramguard report --lines`, `vramguard diff --lines`), in the text forms and the
 * flame-graph views. Only the command resolves them (cli/lines.c, with libdw loaded when --lines is asked): the
 * library, and the command without --lines, leave the hook NULL and frames print as before. The text renderers
 * (report/text.c, cli/diff.c) ask for each frame's text through vg_report_frame_text and print what it puts in
 * `more` under the frame; the flame-graph views (report/flame.h: the HTML page, folded, speedscope) ask
 * vg_report_srcline and label a frame with its line, the functions it was inlined into first. */
#ifndef VG_SRCLINE_H
#define VG_SRCLINE_H

#include "report/report.h"

#define VG_SRCLINE_INLINED 8    /* inlined levels shown per frame */

/* Where a frame's return address is in the source. With inlining, the code at the address belongs to the innermost
 * inlined function (function), which was called at callers[0] from callers[0].function, and so on out to the
 * function the code was compiled into (the last caller, which the frame's symbol names). */
struct vg_srcline {
	char file[256];                 /* as the renderers show it (relative to the compile directory when within it) */
	uint32_t line;
	char function[128];             /* the innermost function when it was inlined, else "" */
	char outer[128];                /* the function the code was compiled into, by the debug information: shown
					 * where the frame has no symbol (a static function of a stripped library) */
	size_t ncallers;
	struct {
		char function[128];
		char file[256];
		uint32_t line;
	} callers[VG_SRCLINE_INLINED];
};

/* Set by the command for --lines: fill out for frame f of report r; 0 when it did, else the frame has no line. */
extern int (*vg_report_srcline_hook)(const struct vg_report *r, const struct vg_report_frame *f,
				     struct vg_srcline *out);

/* Frame f's source line through the hook: 0 with out filled (at most VG_SRCLINE_INLINED callers), -1 when it has
 * none (no hook: --lines not asked; no module; not found). The flame-graph views (report/flame.h) ask here. */
int vg_report_srcline(const struct vg_report *r, const struct vg_report_frame *f, struct vg_srcline *out);

/* The frame's text for the symbol column: "leak_buffers+0x1c", with the hook set "leak_buffers+0x1c  leaky.c:42"
 * (for inlined code the inlined function: "fill  leaky.c:30"); and in more, one line per inlined level, each
 * "(inlined into main+0x1c at leaky.c:77)\n". */
void vg_report_frame_text(struct vg_strbuf *sym, struct vg_strbuf *more, const struct vg_report *r,
			  const struct vg_report_frame *f);
/* Append more's lines to out, each after indent spaces. */
void vg_report_frame_more(struct vg_strbuf *out, const struct vg_strbuf *more, size_t indent);

#endif
