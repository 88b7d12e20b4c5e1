/* `vramguard top` as text (cli/top_text.c): one row per process and GPU, then the totals per GPU with the budgets,
 * then what could not be seen. */
#ifndef VG_CLI_TOP_TEXT_H
#define VG_CLI_TOP_TEXT_H

#include <stdbool.h>

#include "cli/top_snap.h"

/* The snapshot as tables (screen: with the view's title line). */
void vg_top_text(const struct vg_top_snap *sn, const struct vg_top_opts *o, bool screen, struct vg_strbuf *out);

#endif
