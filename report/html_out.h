/* The HTML text both parts of the visual report write (report/html.c's page, report/html_svg.c's charts): every
 * string taken from a report goes through vg_html_esc, also inside SVG. */
#ifndef VG_HTML_OUT_H
#define VG_HTML_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

/* s (at most max bytes) as HTML text or attribute value: & < > " ' escaped, control characters and bytes that are
 * not UTF-8 replaced by U+FFFD. */
void vg_html_esc(struct vg_strbuf *b, const char *s, size_t max);
void vg_html_bytes(struct vg_strbuf *b, uint64_t v);           /* "1.50 GiB" */
void vg_html_time(struct vg_strbuf *b, uint64_t ns);           /* "2026-11-21 21:50:03 UTC" */

#endif
