/* The JSON form of a report: the versioned document for tools (docs/report-format.md), written by walking the
 * schema rows (report/schema.h). The layout: one top-level key per line; an array of objects has one element per
 * line, indented two more than the line it starts on; every other object is written on one line. */
#include "report/schema.h"

#include <string.h>

static void jw_members(struct vg_strbuf *b, const struct vg_schema_object *o, const void *obj, const char *first,
		       const char *sep, size_t indent);

static void jw_array(struct vg_strbuf *b, const struct vg_schema_field *f, const void *obj, size_t indent)
{
	const char *v = vg_schema_elems(f, obj);
	size_t i, n = vg_schema_nelems(f, obj);

	vg_strbuf_str(b, "[");
	for (i = 0; i < n; i++) {
		vg_strbuf_str(b, i ? ",\n" : "\n");
		vg_strbuf_spaces(b, indent + 2);
		vg_strbuf_str(b, "{");
		jw_members(b, f->sub, v + i * f->elem_size, "", ", ", indent + 2);
		vg_strbuf_str(b, "}");
	}
	if (n) {
		vg_strbuf_str(b, "\n");
		vg_strbuf_spaces(b, indent);
	}
	vg_strbuf_str(b, "]");
}

static void jw_field(struct vg_strbuf *b, const struct vg_schema_field *f, const void *obj, const char *sep,
		     size_t indent)
{
	const char *m = (const char *)obj + f->off;
	char when[96];
	uint64_t u64;
	uint32_t u32;
	int i;

	switch (f->type) {
	case VG_SCHEMA_U64:
		memcpy(&u64, m, sizeof(u64));
		vg_json_ku64(b, sep, f->key, u64);
		break;
	case VG_SCHEMA_U32:
		memcpy(&u32, m, sizeof(u32));
		vg_json_ku64(b, sep, f->key, u32);
		break;
	case VG_SCHEMA_INT:
		memcpy(&i, m, sizeof(i));
		vg_json_kint(b, sep, f->key, i);
		break;
	case VG_SCHEMA_BOOL:
		memcpy(&i, m, sizeof(i));
		vg_json_kbool(b, sep, f->key, i);
		break;
	case VG_SCHEMA_STR:
		vg_json_kstr(b, sep, f->key, m, f->size);
		break;
	case VG_SCHEMA_ISTR:
		vg_json_kstr(b, sep, f->key, *(const char *const *)(const void *)m, f->size);
		break;
	case VG_SCHEMA_STRD:
		vg_json_kstr(b, sep, f->key, m[0] ? m : f->dflt, f->size);
		break;
	case VG_SCHEMA_HEX:
		memcpy(&u64, m, sizeof(u64));
		vg_json_kaddr(b, sep, f->key, u64);
		break;
	case VG_SCHEMA_NU64:
	case VG_SCHEMA_NSTR:
		memcpy(&i, (const char *)obj + f->flag, sizeof(i));
		if (!i)
			vg_json_knull(b, sep, f->key);
		else if (f->type == VG_SCHEMA_NSTR)
			vg_json_kstr(b, sep, f->key, m, f->size);
		else
			vg_json_ku64(b, sep, f->key, (memcpy(&u64, m, sizeof(u64)), u64));
		break;
	case VG_SCHEMA_ARRAY:
		vg_json_key(b, sep, f->key);
		jw_array(b, f, obj, indent);
		break;
	case VG_SCHEMA_OBJECT:
	case VG_SCHEMA_NOBJECT:
		vg_json_key(b, sep, f->key);
		vg_strbuf_str(b, "{");
		jw_members(b, f->sub, obj, "", ", ", indent);
		vg_strbuf_str(b, "}");
		break;
	case VG_SCHEMA_COUNT:
		vg_json_ku64(b, sep, f->key, vg_schema_nelems(f, obj));
		break;
	case VG_SCHEMA_SCHEMA_ID:
		vg_json_kstr(b, sep, f->key, VG_REPORT_SCHEMA, sizeof(VG_REPORT_SCHEMA));
		break;
	case VG_SCHEMA_REVISION:
		vg_json_ku64(b, sep, f->key, VG_REPORT_REVISION);
		break;
	case VG_SCHEMA_TIME:
		memcpy(&u64, m, sizeof(u64));
		vg_report_time(u64, 1, when, sizeof(when));
		vg_json_kstr(b, sep, f->key, when, sizeof(when));
		break;
	}
}

/* The members of an object, first before the first and sep between the others; indent is the line's. */
static void jw_members(struct vg_strbuf *b, const struct vg_schema_object *o, const void *obj, const char *first,
		       const char *sep, size_t indent)
{
	size_t i, written = 0;
	int set;

	for (i = 0; i < o->nfields; i++) {
		if (o->fields[i].type == VG_SCHEMA_NOBJECT) {   /* absent unless its flag says it is there */
			memcpy(&set, (const char *)obj + o->fields[i].flag, sizeof(set));
			if (!set)
				continue;
		}
		jw_field(b, &o->fields[i], obj, written++ ? sep : first, indent);
	}
}

int vg_report_render_json(const struct vg_report *r, struct vg_strbuf *out)
{
	vg_strbuf_str(out, "{\n");
	jw_members(out, &vg_schema_report, r, "  ", ",\n  ", 2);
	vg_strbuf_str(out, "\n}\n");
	return vg_strbuf_result(out);
}
