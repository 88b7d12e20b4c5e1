/* `vramguard top --json`: one vramguard.top/1 document per snapshot (docs/report-format.md). */
#include "cli/top.h"
#include "cli/view_json.h"

void vg_top_json(const struct vg_top_snap *sn, const struct vg_top_opts *o, struct vg_strbuf *b)
{
	vg_strbuf_printf(b, "{\"schema\": \"vramguard.top/1\", \"time_ns\": %llu, \"dir\": ",
			 (unsigned long long)sn->now_ns);
	vg_json_str(b, o->dir, sizeof(o->dir));
	vg_strbuf_str(b, ", \"regions\": [");
	const char *sep = "";
	for (size_t i = 0; i < sn->scan.n; i++) {
		if (sn->scan.v[i].control)
			continue;
		vg_strbuf_printf(b, "%s{", sep);
		vg_cj_region(b, &sn->scan.v[i]);
		vg_strbuf_str(b, "}");
		sep = ", ";
	}
	vg_strbuf_str(b, "], \"processes\": [");
	sep = "";
	for (size_t i = 0; i < sn->scan.n; i++) {
		const struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			if (!vg_slot_read(&sr->r, k, &v))
				continue;
			vg_strbuf_printf(b, "%s{\"pid\": %d, \"command\": ", sep, (int)v.pid);
			vg_json_str(b, v.cmd, sizeof(v.cmd));
			vg_strbuf_printf(b, ", \"alive\": %s, \"state\": \"%s\", \"region\": ",
					 v.life == VG_LIFE_ALIVE ? "true" : v.alive ? "null" : "false", vg_life_name(v.life));
			vg_cj_label_path(b, sr);
			vg_strbuf_printf(b, ", \"slot\": %u, \"denied\": %llu, \"last_report_ns\": ", k,
					 (unsigned long long)v.denied);
			if (v.last_report_ns)
				vg_strbuf_printf(b, "%llu", (unsigned long long)v.last_report_ns);
			else
				vg_strbuf_str(b, "null");
			vg_strbuf_str(b, ", ");
			vg_cj_request(b, &v);
			vg_strbuf_str(b, ", \"devices\": [");
			const char *dsep = "";
			for (int d = 0; d < VG_REGION_DEVS; d++) {
				if (!vg_slot_uses(&sr->r, &v, d))
					continue;
				vg_cj_dev_open(b, dsep, &sr->r, d);
				vg_strbuf_printf(b, ", \"used_bytes\": %llu, \"allocated_bytes\": %llu, \"driver_bytes\": %llu, "
						 "\"count\": %s, \"peak_bytes\": %llu, \"quota_bytes\": ",
						 (unsigned long long)v.used[d], (unsigned long long)v.alloc[d],
						 (unsigned long long)v.driver[d],
						 v.count_mode == 1 ? "\"device\"" : v.count_mode == 2 ? "\"allocations\"" : "null",
						 (unsigned long long)v.peak[d]);
				vg_cj_size(b, vg_top_effective(sr, &v, d));
				vg_strbuf_str(b, ", \"own_quota_bytes\": ");
				vg_cj_size(b, v.quota[d]);
				vg_strbuf_str(b, ", \"region_limit_bytes\": ");
				vg_cj_size(b, vg_dev_limit(&sr->r, d));
				vg_strbuf_str(b, "}");
				dsep = ", ";
			}
			vg_strbuf_str(b, "]}");
			sep = ", ";
		}
	}
	vg_strbuf_str(b, "], \"totals\": [");
	sep = "";
	for (size_t g = 0; g < sn->ngpu; g++) {
		const struct vg_top_gpu *G = &sn->gpu[g];
		vg_strbuf_printf(b, "%s{\"uuid\": ", sep);
		vg_json_str(b, G->uuid, sizeof(G->uuid));
		vg_strbuf_printf(b, ", \"ordinal\": %d, \"total_bytes\": %llu, \"used_bytes\": %llu, \"processes\": %d, "
				 "\"budgets\": [", (int)G->first.ordinal, (unsigned long long)G->first.total,
				 (unsigned long long)G->used, G->procs);
		const char *bsep = "";
		struct vg_top_budget bu;
		for (size_t at = 0; vg_top_budget_next(sn, G, &at, &bu);) {
			vg_strbuf_printf(b, "%s{\"region\": ", bsep);
			vg_json_str(b, bu.sr->label, sizeof(bu.sr->label));
			vg_strbuf_printf(b, ", \"limit_bytes\": %llu, \"used_bytes\": %llu}",
					 (unsigned long long)bu.limit, (unsigned long long)bu.used);
			bsep = ", ";
		}
		vg_strbuf_str(b, "]}");
		sep = ", ";
	}
	vg_strbuf_printf(b, "], \"exited\": %d, \"unverifiable\": %d, \"unreadable\": %d, \"skipped\": %d, "
			 "\"missing\": %d, \"removed\": %d, \"removed_regions\": %d, \"reclaimed\": %d}\n", sn->nexited,
			 sn->nunverifiable, sn->scan.denied, sn->scan.bad, sn->scan.missing, sn->scan.removed,
			 sn->scan.removed_regions, sn->scan.reclaimed);
}
