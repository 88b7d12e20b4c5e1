/* JSON pieces shared by `top` and `limit show` (cli/view_json.h). */
#include <stdio.h>

#include "cli/view_json.h"

void vg_cj_size(struct vg_strbuf *b, uint64_t v)
{
	if (v == VG_REGION_NONE)
		vg_strbuf_str(b, "null");
	else
		vg_strbuf_printf(b, "%llu", (unsigned long long)v);
}

void vg_cj_dev_open(struct vg_strbuf *b, const char *sep, const struct vg_region *r, int d)
{
	struct vg_dev_view v;
	vg_dev_read(r, d, &v);
	vg_strbuf_printf(b, "%s{\"index\": %d, \"uuid\": ", sep, d);
	vg_json_str(b, v.uuid, sizeof(v.uuid));
	vg_strbuf_printf(b, ", \"ordinal\": %d", (int)v.ordinal);
}

void vg_cj_request(struct vg_strbuf *b, const struct vg_slot_view *v)
{
	vg_strbuf_str(b, "\"requested_limit\": ");
	if (v->limit_spec[0])
		vg_json_str(b, v->limit_spec, sizeof(v->limit_spec));
	else
		vg_strbuf_str(b, "null");
	vg_strbuf_printf(b, ", \"applied\": %s", v->pending ? "false" : "true");
}

void vg_cj_label_path(struct vg_strbuf *b, const struct vg_scan_region *sr)
{
	if (sr->control)
		vg_strbuf_str(b, "null");
	else
		vg_json_str(b, sr->label, sizeof(sr->label));
	vg_strbuf_str(b, ", \"path\": ");
	vg_json_str(b, sr->r.path, sizeof(sr->r.path));
}

void vg_cj_region(struct vg_strbuf *b, const struct vg_scan_region *sr)
{
	struct vg_region_info info;
	vg_region_info_read(&sr->r, &info);
	vg_strbuf_printf(b, "\"kind\": \"%s\", \"name\": ", sr->control ? "control" : "shared");
	vg_cj_label_path(b, sr);
	vg_strbuf_str(b, ", \"created_spec\": ");
	vg_json_str(b, info.created_spec, sizeof(info.created_spec));
	vg_strbuf_str(b, ", \"spec\": ");
	vg_json_str(b, info.spec, sizeof(info.spec));
	int members = vg_region_members(&sr->r);
	vg_strbuf_printf(b, ", \"writable\": %s, \"persistent\": %s, \"slots\": %u, \"members\": %d, \"reclaimed\": %llu, "
			 "\"evicted\": %llu, \"devices\": [", sr->r.writable ? "true" : "false",
			 info.persistent ? "true" : "false", sr->r.nslots, members, (unsigned long long)info.reclaimed,
			 (unsigned long long)info.evicted);
	const char *sep = "";
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view v;
		if (!vg_dev_read(&sr->r, d, &v))
			continue;
		vg_cj_dev_open(b, sep, &sr->r, d);
		vg_strbuf_printf(b, ", \"total_bytes\": %llu, \"limit_bytes\": ", (unsigned long long)v.total);
		vg_cj_size(b, v.limit);
		vg_strbuf_printf(b, ", \"used_bytes\": %llu, \"peak_bytes\": %llu, \"denied\": %llu}",
				 (unsigned long long)v.used, (unsigned long long)v.peak, (unsigned long long)v.denied);
		sep = ", ";
	}
	vg_strbuf_str(b, "]");
}
