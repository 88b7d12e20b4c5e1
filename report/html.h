/* The visual report (the command only): one self-contained HTML page per report (report/html.c), with inline SVG
 * charts (report/html_svg.h), both writing through report/html_out.h. Nothing is fetched: no external script,
 * style, font or image, and the page's Content-Security-Policy forbids any. The essentials (header, devices, timeline, icicle graph, tables) are plain
 * HTML and SVG; a small inline script only sorts tables and zooms the icicle graph. Every string taken from a
 * report is escaped for HTML, also inside SVG. docs/report-format.md, *The HTML report*, shows what is drawn. */
#ifndef VG_HTML_H
#define VG_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "report/html_out.h"
#include "report/html_svg.h"
#include "report/report.h"

#define VG_HTML_SITES 200               /* rows of the sites table (largest first); the JSON has them all */

/* The whole page. 0, or -ENOMEM. */
int vg_report_render_html(const struct vg_report *r, struct vg_strbuf *out);

/* The pieces, for `vramguard diff --html` (with the escapes of html_out.h and the charts of html_svg.h). */
void vg_html_begin(struct vg_strbuf *b, const char *title);     /* up to and including <body> */
void vg_html_end(struct vg_strbuf *b);                          /* the script and the end */
/* The report's header as a <dl>: command, pid, host, time, reason, versions, driver state. */
void vg_html_header(struct vg_strbuf *b, const struct vg_report *r);
/* A site's innermost frame worth reading (its innermost Python frame, else its first native frame past the CUDA
 * runtime), then its whole stack in a <details>. */
void vg_html_site_frames(struct vg_strbuf *b, const struct vg_report *r, const struct vg_report_site *s);
/* The streams section (nothing if the report has no streams). */
void vg_html_streams(struct vg_strbuf *b, const struct vg_report *r);

#endif
