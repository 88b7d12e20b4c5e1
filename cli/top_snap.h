/* `vramguard top`'s snapshot (cli/top_snap.c): the scan of cli/scan.h with totals per GPU, and the options it was
 * taken with. The parts of top, bottom to top: this snapshot; its writers, cli/top_text.h and cli/top_json.h; the
 * command, cli/top.c (the options and the view: once, repeated, or on a terminal). */
#ifndef VG_CLI_TOP_SNAP_H
#define VG_CLI_TOP_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"
#include "cli/scan.h"
#include "report/report.h"

struct vg_top_opts {
	bool once, json, interval_set;
	double interval;
	char dir[VG_CLI_DIR_MAX];
	char **names;
	size_t nnames;
};

/* One GPU of all the regions, by UUID (a "ordinal:N" key stands for itself). */
struct vg_top_gpu {
	char uuid[VG_REGION_UUID_MAX];
	struct vg_dev_view first;       /* as the first region that has it says: for the label and the memory size */
	uint64_t used;
	int procs;
};

struct vg_top_snap {
	struct vg_scan scan;
	struct vg_top_gpu gpu[VG_REGION_DEVS * 4];
	size_t ngpu;
	int nproc, nexited, nunverifiable;
	uint64_t now_ns;
};

/* One region's budget on a GPU. */
struct vg_top_budget {
	const struct vg_scan_region *sr;
	uint64_t limit, used;
};

/* Scan o->dir (cleaning where writable) and add up every GPU. 0, or -EINVAL with err (an invalid name). */
int vg_top_take(struct vg_top_snap *sn, const struct vg_top_opts *o, char *err, size_t errlen);
/* The budgets on GPU g, one per call, in scan order (shared regions with a limit there): start with *at = 0; false
 * when there is no more. */
bool vg_top_budget_next(const struct vg_top_snap *sn, const struct vg_top_gpu *g, size_t *at,
			struct vg_top_budget *bu);
/* The quota a process meets on region device d: its own, or the region's budget when that is tighter. */
uint64_t vg_top_effective(const struct vg_scan_region *sr, const struct vg_slot_view *v, int d);

#endif
