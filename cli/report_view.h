/* The other forms of `vramguard report` (cli/report_view.c): the HTML page, the folded and speedscope exports, and
 * where they and `vramguard diff`'s go (-o FILE, or stdout). */
#ifndef VG_REPORT_VIEW_H
#define VG_REPORT_VIEW_H

#include "report/report.h"

enum vg_view_format { VG_VIEW_TEXT, VG_VIEW_HTML, VG_VIEW_FOLDED, VG_VIEW_SPEEDSCOPE };

/* "text", "html", "folded", "speedscope": 0 and *f, or -1. */
int vg_view_format_parse(const char *s, enum vg_view_format *f);

/* Render r (read from the file named in) in format f and write it to out_path ("-" or NULL: stdout). 0; 1 if stdout
 * could not be written; -1 after saying what failed (out of memory, the file): the exit status is 1 then too. */
int vg_view_report(const struct vg_report *r, const char *in, enum vg_view_format f, const char *out_path);

/* Write b to out_path ("-" or NULL: stdout): 0; 1 if stdout could not be written; -1 after a message naming the
 * file that could not be. */
int vg_view_write(const struct vg_strbuf *b, const char *out_path);

#endif
