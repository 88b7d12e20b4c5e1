/* `vramguard top --json` (cli/top_json.c): one vramguard.top/1 document per snapshot. */
#ifndef VG_CLI_TOP_JSON_H
#define VG_CLI_TOP_JSON_H

#include "cli/top_snap.h"

/* The snapshot as one document and a newline. */
void vg_top_json(const struct vg_top_snap *sn, const struct vg_top_opts *o, struct vg_strbuf *b);

#endif
