/* The SVG charts of the visual report (report/html_svg.c): a device's usage timeline and the icicle graph of bytes
 * by call site, drawn into the page of report/html.c and into `vramguard diff --html`'s. */
#ifndef VG_HTML_SVG_H
#define VG_HTML_SVG_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

#define VG_HTML_ICICLE_MIN 1000         /* icicle frames narrower than 1/this of the total are not drawn */

/* A device's usage timeline as an SVG chart: used and interval peak over time, the quota and soft limit as lines,
 * denials marked; since_ns (0: none) shades what came before it (`diff`: the old report's time). Where call sites
 * grow there (revision 5), a line where growth started (the first growing site named in its title, from r's sites;
 * r may be NULL) and, with a forecast, a dashed projection from the last point to the quota, the time axis made
 * longer for it up to twice the observed span. Says so in a <p> when the device has no timeline. */
void vg_html_timeline(struct vg_strbuf *b, const struct vg_report *r, const struct vg_report_device *d,
		      uint64_t since_ns, const char *since_label);

/* A device's growing call sites (revision 5) as an SVG chart under its timeline: each one's live bytes over its
 * recent points as a thin line of its own colour (at most 8, fastest first), a legend with its name and rate, and
 * the forecast. Nothing when nothing grows there. */
void vg_html_growth(struct vg_strbuf *b, const struct vg_report *r, const struct vg_report_device *d);

/* An icicle graph (root at the top) of bytes by call site: each site's combined stack (report/flame.h) weighted
 * by bytes; count is the allocations behind them, for the tooltips. 0, or -ENOMEM. */
struct vg_html_weight {
	const struct vg_report_site *site;
	uint64_t bytes, count;
	const struct vg_report *r;              /* site's report (for source lines) */
};
int vg_html_icicle(struct vg_strbuf *b, const struct vg_html_weight *w, size_t n, const char *root_label);

#endif
