/* `vramguard diff --html` (cli/diff_html.c): the comparison of cli/diff_compare.h as a page. */
#ifndef VG_CLI_DIFF_HTML_H
#define VG_CLI_DIFF_HTML_H

#include "report/report.h"

/* The page comparing two reports (named oname and nname) into out: 0, or -ENOMEM. */
int vg_report_diff_html(const struct vg_report *o, const struct vg_report *n, const char *oname, const char *nname,
			struct vg_strbuf *out);

#endif
