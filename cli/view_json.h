/* The JSON pieces `top` (vramguard.top/1) and `limit show` (vramguard.limits/1) both write, so that a region, a
 * device and a request read the same in both documents. Strings go through vg_json_str (report/report.h). */
#ifndef VG_CLI_VIEW_JSON_H
#define VG_CLI_VIEW_JSON_H

#include <stdint.h>

#include "cli/scan.h"
#include "report/report.h"

/* A size in bytes, or null for VG_REGION_NONE. */
void vg_cj_size(struct vg_strbuf *b, uint64_t v);
/* The start of region device d's JSON object, left open for the caller's members: sep, then {"index": d,
 * "uuid": "...", "ordinal": N */
void vg_cj_dev_open(struct vg_strbuf *b, const char *sep, const struct vg_region *r, int d);
/* A slot's last `limit set --pid` request as JSON members (no braces): "requested_limit": "SPEC" or null,
 * "applied": true/false. */
void vg_cj_request(struct vg_strbuf *b, const struct vg_slot_view *v);
/* A region's name as a JSON value (null for a control segment), then its "path" member. */
void vg_cj_label_path(struct vg_strbuf *b, const struct vg_scan_region *sr);
/* A region's header and device table as JSON members (no braces): "kind", "name", "path", ..., "devices": [...] */
void vg_cj_region(struct vg_strbuf *b, const struct vg_scan_region *sr);

#endif
