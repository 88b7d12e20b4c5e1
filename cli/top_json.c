/* `vramguard top --json`: one vramguard.top/1 document per snapshot, its keys the rows of cli/view_schema.h. */
#include "cli/top_json.h"
#include "cli/view_json.h"

static void top_json_regions(struct vg_strbuf *b, const struct vg_top_snap *sn)
{
	const char *esep = "";
	for (size_t i = 0; i < sn->scan.n; i++) {
		const struct vg_scan_region *sr = &sn->scan.v[i];
		struct vg_region_info info;
		if (sr->control)
			continue;
		vg_region_info_read(&sr->r, &info);
		vg_strbuf_str(b, esep);
		VG_CJ_OBJECT(VG_VIEW_REGION);
		esep = ", ";
	}
}

static void top_json_process_devices(struct vg_strbuf *b, const struct vg_scan_region *sr,
				     const struct vg_slot_view *p)
{
	const char *esep = "";
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view dev;
		if (!vg_slot_uses(&sr->r, p, d))
			continue;
		vg_dev_read(&sr->r, d, &dev);
		vg_strbuf_str(b, esep);
		VG_CJ_OBJECT(VG_VIEW_TOP_PROCESS_DEVICE);
		esep = ", ";
	}
}

static void top_json_processes(struct vg_strbuf *b, const struct vg_top_snap *sn)
{
	const char *esep = "";
	for (size_t i = 0; i < sn->scan.n; i++) {
		const struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			const struct vg_slot_view *p = &v;
			if (!vg_slot_read(&sr->r, k, &v))
				continue;
			vg_strbuf_str(b, esep);
			VG_CJ_OBJECT(VG_VIEW_TOP_PROCESS);
			esep = ", ";
		}
	}
}

static void top_json_budgets(struct vg_strbuf *b, const struct vg_top_snap *sn, const struct vg_top_gpu *g)
{
	const char *esep = "";
	struct vg_top_budget bu;
	for (size_t at = 0; vg_top_budget_next(sn, g, &at, &bu);) {
		vg_strbuf_str(b, esep);
		VG_CJ_OBJECT(VG_VIEW_TOP_BUDGET);
		esep = ", ";
	}
}

static void top_json_totals(struct vg_strbuf *b, const struct vg_top_snap *sn)
{
	const char *esep = "";
	for (size_t i = 0; i < sn->ngpu; i++) {
		const struct vg_top_gpu *g = &sn->gpu[i];
		vg_strbuf_str(b, esep);
		VG_CJ_OBJECT(VG_VIEW_TOP_GPU);
		esep = ", ";
	}
}

void vg_top_json(const struct vg_top_snap *sn, const struct vg_top_opts *o, struct vg_strbuf *b)
{
	VG_CJ_OBJECT(VG_VIEW_TOP);
	vg_strbuf_str(b, "\n");
}
