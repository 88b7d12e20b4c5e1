/* Writes the key tables of docs/report-format.md from the schemas: the report's (report/schema.h) and the live
 * view's, `top --json` and `limit show --json` (cli/view_schema.h), so the document cannot drift from the writers
 * and the reader. The prose stays in the document: each table sits between "<!-- schema:NAME -->" and
 * "<!-- /schema -->", NAME an object of VG_SCHEMA_OBJECTS or VG_VIEW_OBJECTS (scripts/doc_tables.h). A "${NAME}" in
 * a row's text is the value of the constant NAME (below): a number of a folder report/ may not include.
 *   gen-report-doc FILE        print FILE with its tables regenerated (`make test` compares it with FILE)
 *   gen-report-doc -i FILE     rewrite FILE in place
 * Build: make build/gen-report-doc (this file, scripts/doc_tables.c and report/schema.c). */
#include "accounting/growth.h"
#include "accounting/timeline.h"
#include "cli/view_schema.h"
#include "report/schema.h"
#include "scripts/doc_tables.h"

#include <stdio.h>
#include <string.h>

#define PROG "gen-report-doc"

/* The constants a row's text may name as ${NAME} (scripts/doc_tables.h). */
static const struct doc_number numbers[] = {
	DOC_NUMBER(VG_TIMELINE_POINTS),         /* the points a timeline keeps */
	DOC_NUMBER(VG_TIMELINE_POINTS + 1),     /* and in a report, with the report's own */
	DOC_NUMBER(VG_GROWTH_SITES),            /* the (site, device) pairs followed */
	DOC_NUMBER(VG_GROWTH_POINTS),           /* the points each keeps */
	DOC_NUMBER(VG_GROWTH_INTERVALS),        /* the intervals of a window */
};

VG_VIEW_OBJECTS(VG_VIEW_DEFINE)

/* Every object, each with the header its rows are in (for messages). */
static const struct object {
	const struct vg_schema_object *o;
	const char *source;
} objects[] = {
#define REPORT_OBJ(name, st, rows) { &vg_schema_##name, "report/schema.h" },
	VG_SCHEMA_OBJECTS(REPORT_OBJ)
#undef REPORT_OBJ
#define VIEW_OBJ(name, rows) { &vg_view_##name, "cli/view_schema.h" },
	VG_VIEW_OBJECTS(VIEW_OBJ)
#undef VIEW_OBJ
};
#define NOBJECTS (sizeof(objects) / sizeof(objects[0]))

/* One Markdown table; -1 if a row's text would break it. */
static int table(FILE *out, size_t k)
{
	const struct vg_schema_object *o = objects[k].o;
	size_t i;

	fputs("\n| key | type | meaning |\n|---|---|---|\n", out);
	for (i = 0; i < o->nfields; i++) {
		const struct vg_schema_field *f = &o->fields[i];
		char where[256];
		snprintf(where, sizeof(where), "%s: %s.%s", objects[k].source, o->name, f->key);
		if (doc_tables_cell(PROG, where, f->doc) != 0)
			return -1;
		fprintf(out, "| `%s` | %s | ", f->key, f->doc_type);
		if (doc_tables_text(out, PROG, where, f->doc, numbers, sizeof(numbers) / sizeof(numbers[0])) != 0)
			return -1;
		fputs(" |\n", out);
	}
	fputs("\n", out);
	return 0;
}

int main(int argc, char **argv)
{
	struct doc_table tables[NOBJECTS];
	struct doc_tables t = { PROG, "schema", "report/schema.h or cli/view_schema.h", tables, NOBJECTS };
	size_t i;

	for (i = 0; i < NOBJECTS; i++)
		tables[i] = (struct doc_table){ objects[i].o->name, table };
	return doc_tables_main(&t, argc, argv);
}
