/* `vramguard diff OLD.json NEW.json`: what grew, shrank, appeared or went away between two reports, per device and
 * per call site, largest change first. Works on two vg_report models, however they were obtained. */
#ifndef VG_DIFF_H
#define VG_DIFF_H

#include <stddef.h>

#include "report/report.h"

#define VG_DIFF_ROWS_DEFAULT 20         /* rows per section when vg_diff_opts.max_rows is 0 */

struct vg_diff_opts {
	size_t max_rows;                /* per section, 0 = VG_DIFF_ROWS_DEFAULT */
	int all;                        /* list unchanged sites too */
};

/* Compare two reports (old first) and append the text to out. Sites are matched by id when both reports come from
 * one process (same pid and hostname, and new->sequence > old->sequence), otherwise by call stack: the frames as
 * (module basename, module_offset). Devices are matched by uuid when both have one, else by ordinal. o may be NULL
 * (defaults). Returns 0, or -ENOMEM. */
int vg_report_diff_text(const struct vg_report *old, const struct vg_report *new, const struct vg_diff_opts *o,
			struct vg_strbuf *out);

/* 1 if the new report holds more live bytes than the old on any device, or any call site grew or is new with live
 * memory (for an exit status); 0 if not; -ENOMEM if the sites could not be matched for lack of memory. */
int vg_report_diff_grew(const struct vg_report *old, const struct vg_report *new);

#endif
