/* The tables of a hand-written Markdown document, regenerated from rows: each table sits between a line
 * "<!-- PREFIX:NAME -->" and a line "<!-- /PREFIX -->", and everything between the two is replaced by what the
 * table's writer prints; the prose around stays as written. Every table the generator knows must be in the document
 * exactly once. Shared by the generators of docs/report-format.md (gen-report-doc) and docs/metrics.md
 * (gen-metrics-doc). */
#ifndef VG_DOC_TABLES_H
#define VG_DOC_TABLES_H

#include <stddef.h>
#include <stdio.h>

struct doc_table {
	const char *name;
	/* Print the table to out (without the marker lines): 0, or -1 with a message on stderr. */
	int (*write)(FILE *out, size_t i);
};

struct doc_tables {
	const char *prog;               /* "gen-report-doc", for messages */
	const char *prefix;             /* the markers' word: "schema" */
	const char *sources;            /* where the rows are, for messages: "report/schema.h or cli/view_schema.h" */
	const struct doc_table *v;
	size_t n;
};

/* PROG [-i] FILE: print FILE with its tables regenerated (`make test` compares it with FILE), or with -i rewrite
 * FILE in place. The exit status. */
int doc_tables_main(const struct doc_tables *t, int argc, char **argv);

/* A constant a row's text may name as "${NAME}", NAME the expression itself: DOC_NUMBER(VG_TIMELINE_POINTS + 1). For
 * the numbers of a folder the rows' header may not include. */
struct doc_number {
	const char *name;
	unsigned long long value;
};
#define DOC_NUMBER(expr) { #expr, (unsigned long long)(expr) }

/* Print text with each "${NAME}" replaced by the value of numbers[] of that name: 0, or -1 with a message naming
 * where (a NAME that is not there, or no closing brace). */
int doc_tables_text(FILE *out, const char *prog, const char *where, const char *text, const struct doc_number *numbers,
		    size_t n);

/* One Markdown table cell's text, refusing a '|' or a newline (they would break the table): 0, or -1 with a message
 * naming what (e.g. "report/schema.h: device.uuid"). */
int doc_tables_cell(const char *prog, const char *what, const char *text);

#endif
