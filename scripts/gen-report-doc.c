/* Writes the key tables of docs/report-format.md from the schemas: the report's (report/schema.h) and the live
 * view's, `top --json` and `limit show --json` (cli/view_schema.h), so the document cannot drift from the writers
 * and the reader. The prose stays in the document: each table sits between "<!-- schema:NAME -->" and
 * "<!-- /schema -->", NAME an object of VG_SCHEMA_OBJECTS or VG_VIEW_OBJECTS, and everything between the two lines
 * is replaced. Every object must have exactly one table.
 *   gen-report-doc FILE        print FILE with its tables regenerated (`make test` compares it with FILE)
 *   gen-report-doc -i FILE     rewrite FILE in place
 * Build: cc -std=gnu11 -I. -o build/gen-report-doc scripts/gen-report-doc.c report/schema.c */
#include "cli/view_schema.h"
#include "report/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN "<!-- schema:"
#define END "<!-- /schema -->"

/* An object's table: its rows as the document shows them. */
struct row {
	const char *key, *type, *doc;
};
struct object {
	const char *name, *source;      /* source: the header its rows are in, for messages */
	const struct row *rows;
	size_t nrows;
	const struct vg_schema_object *report;  /* a report object: rows made from it by load_report */
};

/* The live view's rows, taken from the header as they are (their values are never expanded here). */
#define VIEW_ROW(key, type, value, doc) { #key, VG_VIEW_DOC_##type, doc },
#define VIEW_ROWS(name, rows) static const struct row view_##name[] = { rows(VIEW_ROW) };
VG_VIEW_OBJECTS(VIEW_ROWS)
#undef VIEW_ROWS

static struct object objects[] = {
#define REPORT_OBJ(name, st, rows) { #name, "report/schema.h", NULL, 0, &vg_schema_##name },
	VG_SCHEMA_OBJECTS(REPORT_OBJ)
#undef REPORT_OBJ
#define VIEW_OBJ(name, rows) \
	{ #name, "cli/view_schema.h", view_##name, sizeof(view_##name) / sizeof(view_##name[0]), NULL },
	VG_VIEW_OBJECTS(VIEW_OBJ)
#undef VIEW_OBJ
};
#define NOBJECTS (sizeof(objects) / sizeof(objects[0]))

static const char *json_type(enum vg_schema_type t)
{
	switch (t) {
	case VG_SCHEMA_U64: case VG_SCHEMA_U32: case VG_SCHEMA_INT: case VG_SCHEMA_COUNT: case VG_SCHEMA_REVISION:
		return "integer";
	case VG_SCHEMA_BOOL:
		return "boolean";
	case VG_SCHEMA_STR: case VG_SCHEMA_STRD: case VG_SCHEMA_HEX: case VG_SCHEMA_SCHEMA_ID: case VG_SCHEMA_TIME:
		return "string";
	case VG_SCHEMA_NU64:
		return "integer or `null`";
	case VG_SCHEMA_NSTR:
		return "string or `null`";
	case VG_SCHEMA_ARRAY:
		return "array";
	case VG_SCHEMA_OBJECT:
		return "object";
	case VG_SCHEMA_NOBJECT:
		return "object (or absent)";
	}
	return "?";
}

/* A report object's rows, from its schema fields; -1 when out of memory. */
static int load_report(struct object *o)
{
	struct row *rows = calloc(o->report->nfields, sizeof(*rows));
	size_t i;

	if (!rows)
		return -1;
	for (i = 0; i < o->report->nfields; i++) {
		const struct vg_schema_field *f = &o->report->fields[i];
		rows[i] = (struct row){ f->key, json_type(f->type), f->doc };
	}
	o->rows = rows;
	o->nrows = o->report->nfields;
	return 0;
}

/* One Markdown table; -1 if a row's text would break it. */
static int table(FILE *out, const struct object *o)
{
	size_t i;

	fputs("\n| key | type | meaning |\n|---|---|---|\n", out);
	for (i = 0; i < o->nrows; i++) {
		const struct row *r = &o->rows[i];
		if (strpbrk(r->doc, "|\n")) {
			fprintf(stderr, "gen-report-doc: %s: the text of %s.%s has a '|' or a newline\n", o->source,
				o->name, r->key);
			return -1;
		}
		fprintf(out, "| `%s` | %s | %s |\n", r->key, r->type, r->doc);
	}
	fputs("\n", out);
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, k;

	if (!f)
		return NULL;
	do {
		if (cap - n < 4096) {
			char *nb = realloc(buf, cap += 65536);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		k = fread(buf + n, 1, cap - n - 1, f);
		n += k;
	} while (k > 0);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The document with its tables regenerated, to out; 0, or -1 with a message on stderr. */
static int generate(const char *path, const char *doc, FILE *out)
{
	int seen[NOBJECTS] = { 0 };
	const char *s = doc;
	size_t i;

	while (*s) {
		const char *eol = strchr(s, '\n'), *name, *close;
		size_t len = eol ? (size_t)(eol - s) + 1 : strlen(s);

		fwrite(s, 1, len, out);
		if (strncmp(s, BEGIN, strlen(BEGIN)) != 0) {
			s += len;
			continue;
		}
		name = s + strlen(BEGIN);
		close = strstr(name, " -->");
		for (i = 0; close && i < NOBJECTS; i++)
			if (strlen(objects[i].name) == (size_t)(close - name) &&
			    strncmp(name, objects[i].name, (size_t)(close - name)) == 0)
				break;
		if (!close || i == NOBJECTS) {
			fprintf(stderr, "gen-report-doc: %s: '%.*s' names no object of report/schema.h or cli/view_schema.h\n", path,
				(int)(len - (eol ? 1 : 0)), s);
			return -1;
		}
		if (seen[i]++) {
			fprintf(stderr, "gen-report-doc: %s: two tables for '%s'\n", path, objects[i].name);
			return -1;
		}
		if (table(out, &objects[i]) != 0)
			return -1;
		s += len;
		while (*s && strncmp(s, END, strlen(END)) != 0) {
			if (strncmp(s, BEGIN, strlen(BEGIN)) == 0)
				break;
			eol = strchr(s, '\n');
			s = eol ? eol + 1 : s + strlen(s);
		}
		if (strncmp(s, END, strlen(END)) != 0) {
			fprintf(stderr, "gen-report-doc: %s: the table for '%s' has no '" END "' line\n", path,
				objects[i].name);
			return -1;
		}
	}
	for (i = 0; i < NOBJECTS; i++)
		if (!seen[i]) {
			fprintf(stderr, "gen-report-doc: %s: no table for '%s' (add '" BEGIN "%s -->' and '" END "')\n",
				path, objects[i].name, objects[i].name);
			return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	int inplace = argc == 3 && strcmp(argv[1], "-i") == 0;
	const char *path = argv[argc - 1];
	char *doc, *buf = NULL;
	size_t len = 0, i;
	FILE *out;

	if (argc != 2 + inplace || path[0] == '-') {
		fprintf(stderr, "usage: gen-report-doc [-i] docs/report-format.md\n");
		return 2;
	}
	for (i = 0; i < NOBJECTS; i++)
		if (objects[i].report && load_report(&objects[i]) != 0) {
			fprintf(stderr, "gen-report-doc: out of memory\n");
			return 1;
		}
	doc = slurp(path);
	if (!doc) {
		fprintf(stderr, "gen-report-doc: cannot read %s: %s\n", path, strerror(errno));
		return 1;
	}
	out = inplace ? open_memstream(&buf, &len) : stdout;
	if (!out || generate(path, doc, out) != 0) {
		free(doc);
		return 1;
	}
	free(doc);
	if (!inplace)
		return fflush(stdout) == 0 ? 0 : 1;
	fclose(out);
	out = fopen(path, "wb");
	if (!out || fwrite(buf, 1, len, out) != len || fclose(out) != 0) {
		fprintf(stderr, "gen-report-doc: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	free(buf);
	return 0;
}
