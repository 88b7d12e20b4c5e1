/* The text of a frame with its source line, shared by the report's text form and `vramguard diff`
 * (report/srcline.h). Without the hook it is the frame's symbol alone. */
#include "report/srcline.h"

#include <inttypes.h>
#include <string.h>

int (*vg_report_srcline_hook)(const struct vg_report *r, const struct vg_report_frame *f, struct vg_srcline *out);

static void vg_srcline_at(struct vg_strbuf *b, const char *file, uint32_t line)
{
	vg_text_str(b, file[0] ? file : "??", 256);
	if (line)
		vg_strbuf_printf(b, ":%" PRIu32, line);
}

/* The function the code is in: the frame's symbol with its offset, else the debug information's name. */
static void vg_srcline_symbol(struct vg_strbuf *b, const struct vg_report_frame *f, const struct vg_srcline *sl)
{
	if (!f->symbol[0] && sl->outer[0])
		vg_text_str(b, sl->outer, sizeof(sl->outer));
	else
		vg_report_frame_symbol_text(b, f);
}

int vg_report_srcline(const struct vg_report *r, const struct vg_report_frame *f, struct vg_srcline *out)
{
	if (!vg_report_srcline_hook || !f->module[0] || vg_report_srcline_hook(r, f, out) != 0)
		return -1;
	if (out->ncallers > VG_SRCLINE_INLINED)
		out->ncallers = VG_SRCLINE_INLINED;
	return 0;
}

void vg_report_frame_text(struct vg_strbuf *sym, struct vg_strbuf *more, const struct vg_report *r,
			  const struct vg_report_frame *f)
{
	struct vg_srcline sl;

	if (vg_report_srcline(r, f, &sl) != 0) {
		vg_report_frame_symbol_text(sym, f);
		return;
	}
	if (sl.ncallers && sl.function[0])
		vg_text_str(sym, sl.function, sizeof(sl.function));
	else
		vg_srcline_symbol(sym, f, &sl);
	if (sl.file[0]) {
		vg_strbuf_spaces(sym, 2);
		vg_srcline_at(sym, sl.file, sl.line);
	}
	for (size_t i = 0; i < sl.ncallers; i++) {
		vg_strbuf_str(more, "(inlined into ");
		if (i + 1 == sl.ncallers)       /* the function the code is in: the frame's symbol, with its offset */
			vg_srcline_symbol(more, f, &sl);
		else
			vg_text_str(more, sl.callers[i].function[0] ? sl.callers[i].function : "??",
				    sizeof(sl.callers[i].function));
		vg_strbuf_str(more, " at ");
		vg_srcline_at(more, sl.callers[i].file, sl.callers[i].line);
		vg_strbuf_str(more, ")\n");
	}
}

void vg_report_frame_more(struct vg_strbuf *out, const struct vg_strbuf *more, size_t indent)
{
	const char *p = more->data, *end = p ? p + more->len : p;

	if (more->failed)
		out->failed = 1;
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		vg_strbuf_spaces(out, indent);
		vg_strbuf_add(out, p, n);
		if (!nl)
			vg_strbuf_add(out, "\n", 1);
		p += n;
	}
}
