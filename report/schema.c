/* The schema rows of report/schema.h as data (one vg_schema_object per object), each member's type checked against
 * its struct at compile time, and the walks that every user of the rows shares, freeing a report (report.h's
 * vg_report_free) among them. */
#include "report/schema.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The element types, by object name, for the checks below. */
#define VG_SCHEMA_TYPEDEF(name, st, rows) typedef st vg_schema_t_##name;
VG_SCHEMA_OBJECTS(VG_SCHEMA_TYPEDEF)
#undef VG_SCHEMA_TYPEDEF

/* Whether member m of struct st has type t (VG_SCHEMA_CHECK names the row when it has not). */
#define VG_SCHEMA_IS(st, m, t) VG_SCHEMA_TYPE_IS(((st *)0)->m, t)
#define VG_SCHEMA_MEMBER(st, m, t) (offsetof(st, m) + VG_SCHEMA_CHECK(VG_SCHEMA_IS(st, m, t), #st "." #m ": not " #t))
#define VG_SCHEMA_CHARS(st, m) \
	(offsetof(st, m) + VG_SCHEMA_CHECK(VG_SCHEMA_IS(st, m, char[sizeof(((st *)0)->m)]), #st "." #m ": not a char array"))
#define VG_SCHEMA_COUNTER(st, m) \
	.count = offsetof(st, n##m) + VG_SCHEMA_CHECK(VG_SCHEMA_IS(st, n##m, size_t) || VG_SCHEMA_IS(st, n##m, uint32_t), \
						      #st ".n" #m ": not a size_t or uint32_t"), \
	.count_size = sizeof(((st *)0)->n##m)

/* One initializer fragment per type: VG_SCHEMA_F_<type>(struct, member, aux). */
#define VG_SCHEMA_F_U64(st, m, aux) .off = VG_SCHEMA_MEMBER(st, m, uint64_t)
#define VG_SCHEMA_F_U32(st, m, aux) .off = VG_SCHEMA_MEMBER(st, m, uint32_t)
#define VG_SCHEMA_F_INT(st, m, aux) .off = VG_SCHEMA_MEMBER(st, m, int)
#define VG_SCHEMA_F_BOOL(st, m, aux) .off = VG_SCHEMA_MEMBER(st, m, int)
#define VG_SCHEMA_F_HEX(st, m, aux) .off = VG_SCHEMA_MEMBER(st, m, uint64_t)
#define VG_SCHEMA_F_STR(st, m, aux) .off = VG_SCHEMA_CHARS(st, m), .size = sizeof(((st *)0)->m)
#define VG_SCHEMA_F_ISTR(st, m, aux) .off = VG_SCHEMA_MEMBER(st, m, const char *), .size = aux
#define VG_SCHEMA_F_STRD(st, m, aux) VG_SCHEMA_F_STR(st, m, aux), .dflt = aux
#define VG_SCHEMA_F_NU64(st, m, aux) VG_SCHEMA_F_U64(st, m, aux), .flag = VG_SCHEMA_MEMBER(st, aux, int)
#define VG_SCHEMA_F_NSTR(st, m, aux) VG_SCHEMA_F_STR(st, m, aux), .flag = VG_SCHEMA_MEMBER(st, aux, int)
#define VG_SCHEMA_F_ARRAY(st, m, aux) \
	.off = VG_SCHEMA_MEMBER(st, m, vg_schema_t_##aux *), VG_SCHEMA_COUNTER(st, m), \
	.elem_size = sizeof(vg_schema_t_##aux), .sub = &vg_schema_##aux
#define VG_SCHEMA_F_OBJECT(st, m, aux) \
	.off = VG_SCHEMA_CHECK(__builtin_types_compatible_p(st, vg_schema_t_##aux), #aux ": not an object of " #st), \
	.sub = &vg_schema_##aux
#define VG_SCHEMA_F_NOBJECT(st, m, aux) \
	.flag = VG_SCHEMA_MEMBER(st, m, int) + \
		VG_SCHEMA_CHECK(__builtin_types_compatible_p(st, vg_schema_t_##aux), #aux ": not an object of " #st), \
	.sub = &vg_schema_##aux
#define VG_SCHEMA_F_REVISION(st, m, aux) VG_SCHEMA_F_U32(st, m, aux)
#define VG_SCHEMA_F_COUNT(st, m, aux) .off = offsetof(st, m), VG_SCHEMA_COUNTER(st, m)
#define VG_SCHEMA_F_SCHEMA_ID(st, m, aux) .off = 0
#define VG_SCHEMA_F_TIME(st, m, aux) VG_SCHEMA_F_U64(st, m, aux)

#define VG_SCHEMA_ROW(k, t, m, aux, rd, text) \
	{ .key = #k, .type = VG_SCHEMA_##t, .optional = VG_SCHEMA_##rd, .doc = text, .doc_type = VG_SCHEMA_DOC_##t, \
	  VG_SCHEMA_F_##t(VG_SCHEMA_ST, m, aux) },

/* An object's rows with its struct as VG_SCHEMA_ST (a macro cannot carry it into the rows' expansion). */
#define VG_SCHEMA_DEFINE(name, rows) \
	static const struct vg_schema_field vg_schema_fields_##name[] = { rows(VG_SCHEMA_ROW) }; \
	_Static_assert(sizeof(vg_schema_fields_##name) / sizeof(vg_schema_fields_##name[0]) <= VG_SCHEMA_MAX_FIELDS, \
		       #name ": more keys than VG_SCHEMA_MAX_FIELDS"); \
	const struct vg_schema_object vg_schema_##name = { \
		#name, vg_schema_fields_##name, sizeof(vg_schema_fields_##name) / sizeof(vg_schema_fields_##name[0]) \
	};

#define VG_SCHEMA_ST vg_schema_t_report
VG_SCHEMA_DEFINE(report, VG_SCHEMA_REPORT)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_device
VG_SCHEMA_DEFINE(device, VG_SCHEMA_DEVICE)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_timeline
VG_SCHEMA_DEFINE(timeline, VG_SCHEMA_TIMELINE)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_timeline_point
VG_SCHEMA_DEFINE(timeline_point, VG_SCHEMA_TIMELINE_POINT)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_growth
VG_SCHEMA_DEFINE(growth, VG_SCHEMA_GROWTH)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_growth_site
VG_SCHEMA_DEFINE(growth_site, VG_SCHEMA_GROWTH_SITE)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_growth_point
VG_SCHEMA_DEFINE(growth_point, VG_SCHEMA_GROWTH_POINT)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_site
VG_SCHEMA_DEFINE(site, VG_SCHEMA_SITE)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_frame
VG_SCHEMA_DEFINE(frame, VG_SCHEMA_FRAME)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_pyframe
VG_SCHEMA_DEFINE(pyframe, VG_SCHEMA_PYFRAME)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_module
VG_SCHEMA_DEFINE(module, VG_SCHEMA_MODULE)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_allocations
VG_SCHEMA_DEFINE(allocations, VG_SCHEMA_ALLOCATIONS)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_alloc
VG_SCHEMA_DEFINE(alloc, VG_SCHEMA_ALLOC)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_streams
VG_SCHEMA_DEFINE(streams, VG_SCHEMA_STREAMS)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_stream_event
VG_SCHEMA_DEFINE(stream_event, VG_SCHEMA_STREAM_EVENT)
#undef VG_SCHEMA_ST
#define VG_SCHEMA_ST vg_schema_t_stream_live
VG_SCHEMA_DEFINE(stream_live, VG_SCHEMA_STREAM_LIVE)
#undef VG_SCHEMA_ST

/* ---- walks ---- */

void *vg_schema_elems(const struct vg_schema_field *f, const void *obj)
{
	void *p;
	memcpy(&p, (const char *)obj + f->off, sizeof(p));
	return p;
}

size_t vg_schema_nelems(const struct vg_schema_field *f, const void *obj)
{
	const char *c = (const char *)obj + f->count;
	uint32_t n32;
	size_t n;

	if (!vg_schema_elems(f, obj))
		return 0;
	if (f->count_size == sizeof(uint32_t)) {
		memcpy(&n32, c, sizeof(n32));
		return n32;
	}
	memcpy(&n, c, sizeof(n));
	return n;
}

void vg_schema_set_elems(const struct vg_schema_field *f, void *obj, void *elems, size_t n)
{
	char *c = (char *)obj + f->count;
	uint32_t n32 = (uint32_t)n;

	memcpy((char *)obj + f->off, &elems, sizeof(elems));
	if (f->count_size == sizeof(uint32_t))
		memcpy(c, &n32, sizeof(n32));
	else
		memcpy(c, &n, sizeof(n));
}

void vg_schema_free(const struct vg_schema_object *o, void *obj)
{
	size_t i, j;

	for (i = 0; i < o->nfields; i++) {
		const struct vg_schema_field *f = &o->fields[i];
		if (f->type == VG_SCHEMA_OBJECT || f->type == VG_SCHEMA_NOBJECT) {
			vg_schema_free(f->sub, obj);
		} else if (f->type == VG_SCHEMA_ARRAY) {
			char *v = vg_schema_elems(f, obj);
			size_t n = vg_schema_nelems(f, obj);
			for (j = 0; j < n; j++)
				vg_schema_free(f->sub, v + j * f->elem_size);
			free(v);
			vg_schema_set_elems(f, obj, NULL, 0);
		}
	}
}

void vg_report_free(struct vg_report *r)
{
	if (!r)
		return;
	vg_schema_free(&vg_schema_report, r);
	vg_strpool_free(r->strings);
	r->strings = NULL;
}

const char *vg_report_string(struct vg_report *r, const char *s, size_t size)
{
	if (!r->strings && !(r->strings = vg_strpool_new(VG_REPORT_STRINGS_MAX)))
		return NULL;
	return size ? vg_strpool_add(r->strings, s, strnlen(s, size - 1)) : NULL;
}
