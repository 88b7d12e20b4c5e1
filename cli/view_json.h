/* Writing the live view's JSON (`top --json`, `limit show --json`) from the rows of cli/view_schema.h, so that a
 * region, a device and a process read the same in both documents and as docs/report-format.md says. Members go
 * through the writer of report/json_out.h; a document is written on one line. */
#ifndef VG_CLI_VIEW_JSON_H
#define VG_CLI_VIEW_JSON_H

#include <stdint.h>

#include "cli/scan.h"
#include "cli/view_schema.h"
#include "report/json_out.h"

/* One JSON object, {"key": value, ...}, its members the rows of a VG_VIEW_* list: written to the caller's
 * struct vg_strbuf *b, the values taken from the caller's variables that the list names, each checked at compile
 * time against its row's type (VG_VIEW_IS_<type>, as report/schema.c checks the report's members). */
#define VG_CJ_OBJECT(ROWS) \
	do { \
		const char *vg_cj_sep = ""; \
		vg_strbuf_str(b, "{"); \
		ROWS(VG_CJ_MEMBER) \
		vg_strbuf_str(b, "}"); \
	} while (0)
#define VG_CJ_MEMBER(key, type, value, doc) \
	_Static_assert(VG_VIEW_IS_##type(value), "cli/view_schema.h: " #key ": its value is not " #type); \
	VG_CJ_##type(b, vg_cj_sep, #key, value); \
	vg_cj_sep = ", ";

/* One member per type of view_schema.h. */
#define VG_CJ_INT(b, sep, key, v) vg_json_kint(b, sep, key, v)
#define VG_CJ_U64(b, sep, key, v) vg_json_ku64(b, sep, key, v)
#define VG_CJ_BOOL(b, sep, key, v) vg_json_kbool(b, sep, key, v)
#define VG_CJ_TRI(b, sep, key, v) vg_cj_tri(b, sep, key, v)
/* STR: the bound is the array's size (a pointer is refused by VG_VIEW_IS_STR). */
#define VG_CJ_STR(b, sep, key, s) vg_json_kstr(b, sep, key, s, sizeof(s))
#define VG_CJ_WORD(b, sep, key, s) vg_json_kstr(b, sep, key, s, SIZE_MAX)
#define VG_CJ_NSTR(b, sep, key, s) vg_cj_nstr(b, sep, key, s)
#define VG_CJ_LIMIT(b, sep, key, v) vg_cj_limit(b, sep, key, v)
#define VG_CJ_NZU64(b, sep, key, v) vg_cj_nzu64(b, sep, key, v)
#define VG_CJ_PUB(b, sep, key, v) vg_cj_limit(b, sep, key, v)  /* VG_REGION_NONE: not published yet */
#define VG_CJ_ARRAY(b, sep, key, call) \
	do { \
		vg_json_key(b, sep, key); \
		vg_strbuf_str(b, "["); \
		call; \
		vg_strbuf_str(b, "]"); \
	} while (0)

void vg_cj_tri(struct vg_strbuf *b, const char *sep, const char *key, int v);            /* < 0: null */
void vg_cj_nstr(struct vg_strbuf *b, const char *sep, const char *key, const char *s);  /* NULL: null */
void vg_cj_limit(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v);    /* VG_REGION_NONE: null */
void vg_cj_nzu64(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v);    /* 0: null */

/* A region's devices[] elements (VG_VIEW_REGION_DEVICE), for both documents. */
void vg_cj_region_devices(struct vg_strbuf *b, const struct vg_scan_region *sr);

#endif
