/* `vramguard diff`'s growth lines (cli/diff_growth.c), which cli/diff.c writes after the timeline's. */
#ifndef VG_DIFF_GROWTH_H
#define VG_DIFF_GROWTH_H

#include "cli/diff_compare.h"
#include "report/report.h"

/* For each device of both reports where a call site grows in either (revision 5 reports): each growing site with its
 * rate now, then, and the change of its live bytes between the two reports per hour; the sites that stopped; the
 * forecast now and then. Nothing when nothing grows; one line when a report is older than revision 5. */
void vg_diff_growth(const struct vg_diff *d, const struct vg_diff_dev *p, long np, struct vg_strbuf *out);

#endif
