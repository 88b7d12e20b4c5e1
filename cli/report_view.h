/* The other forms of `vramguard report` and `vramguard diff` (cli/report_view.c, cli/diff_html.c): the HTML page,
 * the folded and speedscope exports, and where they go (-o FILE, or stdout). */
#ifndef VG_REPORT_VIEW_H
#define VG_REPORT_VIEW_H

#include "report/report.h"

enum vg_view_format { VG_VIEW_TEXT, VG_VIEW_HTML, VG_VIEW_FOLDED, VG_VIEW_SPEEDSCOPE };

/* "text", "html", "folded", "speedscope": 0 and *f, or -1. */
int vg_view_format_parse(const char *s, enum vg_view_format *f);

/* Render r (read from the file named in) in format f and write it to out_path ("-" or NULL: stdout). Exits with a
 * message on an error; returns 0, or 1 if stdout could not be written. */
int vg_view_report(const struct vg_report *r, const char *in, enum vg_view_format f, const char *out_path);

/* Write b to out_path ("-" or NULL: stdout), exiting with a message naming the file on an error. */
int vg_view_write(const struct vg_strbuf *b, const char *out_path);

/* `vramguard diff --html`: the page comparing two reports (cli/diff_html.c). 0, or -ENOMEM. */
int vg_report_diff_html(const struct vg_report *o, const struct vg_report *n, const char *oname, const char *nname,
			struct vg_strbuf *out);

#endif
