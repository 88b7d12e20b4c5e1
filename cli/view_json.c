/* The live view's JSON members that are not one json_out.h call, and a region's devices (cli/view_json.h). */
#include "cli/view_json.h"

void vg_cj_tri(struct vg_strbuf *b, const char *sep, const char *key, int v)
{
	if (v < 0)
		vg_json_knull(b, sep, key);
	else
		vg_json_kbool(b, sep, key, v);
}

void vg_cj_nstr(struct vg_strbuf *b, const char *sep, const char *key, const char *s)
{
	if (s)
		vg_json_kstr(b, sep, key, s, SIZE_MAX);
	else
		vg_json_knull(b, sep, key);
}

void vg_cj_limit(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v)
{
	if (v == VG_REGION_NONE)
		vg_json_knull(b, sep, key);
	else
		vg_json_ku64(b, sep, key, v);
}

void vg_cj_nzu64(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v)
{
	if (v)
		vg_json_ku64(b, sep, key, v);
	else
		vg_json_knull(b, sep, key);
}

void vg_cj_region_devices(struct vg_strbuf *b, const struct vg_scan_region *sr)
{
	const char *esep = "";
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view dev;
		if (!vg_dev_read(&sr->r, d, &dev))
			continue;
		vg_strbuf_str(b, esep);
		VG_CJ_OBJECT(VG_VIEW_REGION_DEVICE);
		esep = ", ";
	}
}
