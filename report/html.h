/* The visual report (the command only): one self-contained HTML page per report (report/html.c), with inline SVG
 * charts (report/html_svg.c). Nothing is fetched: no external script, style, font or image, and the page's
 * Content-Security-Policy forbids any. The essentials (header, devices, timeline, icicle graph, tables) are plain
 * HTML and SVG; a small inline script only sorts tables and zooms the icicle graph. Every string taken from a
 * report is escaped for HTML, also inside SVG. docs/report-format.md, *The HTML report*, shows what is drawn. */
#ifndef VG_HTML_H
#define VG_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

#define VG_HTML_SITES 200               /* rows of the sites table (largest first); the JSON has them all */
#define VG_HTML_ICICLE_MIN 1000         /* icicle frames narrower than 1/this of the total are not drawn */

/* The whole page. 0, or -ENOMEM. */
int vg_report_render_html(const struct vg_report *r, struct vg_strbuf *out);

/* The pieces, for `vramguard diff --html`. */
void vg_html_begin(struct vg_strbuf *b, const char *title);     /* up to and including <body> */
void vg_html_end(struct vg_strbuf *b);                          /* the script and the end */
/* s (at most max bytes) as HTML text or attribute value: & < > " ' escaped, control characters and bytes that are
 * not UTF-8 replaced by U+FFFD. */
void vg_html_esc(struct vg_strbuf *b, const char *s, size_t max);
void vg_html_bytes(struct vg_strbuf *b, uint64_t v);           /* "1.50 GiB" */
void vg_html_time(struct vg_strbuf *b, uint64_t ns);           /* "2026-11-21 21:50:03 UTC" */
/* The report's header as a <dl>: command, pid, host, time, reason, versions, driver state. */
void vg_html_header(struct vg_strbuf *b, const struct vg_report *r);
/* A site's innermost frame worth reading (its innermost Python frame, else its first native frame past the CUDA
 * runtime), then its whole stack in a <details>. */
void vg_html_site_frames(struct vg_strbuf *b, const struct vg_report_site *s);
/* The streams section (nothing if the report has no streams). */
void vg_html_streams(struct vg_strbuf *b, const struct vg_report *r);

/* A device's usage timeline as an SVG chart: used and interval peak over time, the quota and soft limit as lines,
 * denials marked; since_ns (0: none) shades what came before it (`diff`: the old report's time). Says so in a <p>
 * when the device has no timeline. */
void vg_html_timeline(struct vg_strbuf *b, const struct vg_report_device *d, uint64_t since_ns,
		      const char *since_label);

/* An icicle graph (root at the top) of bytes by call site: each site's combined stack (report/flame.h) weighted
 * by bytes; count is the allocations behind them, for the tooltips. 0, or -ENOMEM. */
struct vg_html_weight {
	const struct vg_report_site *site;
	uint64_t bytes, count;
};
int vg_html_icicle(struct vg_strbuf *b, const struct vg_html_weight *w, size_t n, const char *root_label);

#endif
