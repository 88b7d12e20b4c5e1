/* Writes the tables of docs/metrics.md and the contract docs/metrics.json from the exporter's metrics table
 * (cli/metrics_table.h), so neither can drift from the exposition. The prose stays in the document: each table sits
 * between "<!-- metrics:NAME -->" and "<!-- /metrics -->" (scripts/doc_tables.h): labels, metrics, example.
 *   gen-metrics-doc FILE        print FILE with its tables regenerated (`make test` compares it with FILE)
 *   gen-metrics-doc -i FILE     rewrite FILE in place
 *   gen-metrics-doc --json      print the contract: every metric with its type, labels and help, as Prometheus
 *                               stores it (tests/lint/check_prometheus.py reads it; `make test` compares it)
 * Build: make build/gen-metrics-doc; `make metrics-doc` rewrites both files. */
#include "accounting/region.h"
#include "cli/metrics_table.h"
#include "scripts/doc_tables.h"

#include <stdio.h>
#include <string.h>

#define PROG "gen-metrics-doc"

/* The constants a row's text may name as ${NAME} (scripts/doc_tables.h). */
static const struct doc_number numbers[] = {
	DOC_NUMBER(VG_REGION_CMD_MAX - 1),      /* the bytes of a command line a slot keeps */
};
#define NNUMBERS (sizeof(numbers) / sizeof(numbers[0]))

static const struct metric {
	const char *id, *type, *help, *doc;
	unsigned labels;
	int counter;
} metrics[VG_METRIC_COUNT] = {
#define METRIC(id, ty, ls, hp, dc) \
	{ #id, VG_METRIC_TYPE_##ty, hp, dc, VG_METRIC_LABELS_##ls, VG_METRIC_IS_COUNTER_##ty },
	VG_METRICS(METRIC)
#undef METRIC
};

static const struct label {
	const char *name, *on, *doc;
} labels[VG_METRIC_NLABELS] = {
#define LABEL(name, on, doc) { #name, on, doc },
	VG_METRIC_LABELS(LABEL)
#undef LABEL
};

/* The document's example: these samples, with these label values. */
static const char *const example_label[VG_METRIC_NLABELS] = {
	[VG_METRIC_LABEL_pid] = "14861", [VG_METRIC_LABEL_command] = "python train.py",
	[VG_METRIC_LABEL_region] = "team", [VG_METRIC_LABEL_gpu] = "0",
	[VG_METRIC_LABEL_gpu_uuid] = "GPU-8f3a2c1d-...", [VG_METRIC_LABEL_container] = "",
	[VG_METRIC_LABEL_pod] = "", [VG_METRIC_LABEL_reason] = "permission",
};
static const struct {
	enum vg_metric_id id;
	unsigned long long value;
} example[] = {
	{ VG_METRIC_process_used_bytes, 1ull << 30 },
	{ VG_METRIC_process_quota_bytes, 4ull << 30 },
	{ VG_METRIC_process_denials_total, 3 },
	{ VG_METRIC_region_budget_bytes, 8ull << 30 },
	{ VG_METRIC_up, 1 },
};

/* Each row's texts as its table and the exposition need them; -1 with a message if one would break either. */
static int check_rows(void)
{
	char where[128];
	size_t i, n;

	for (i = 0; i < VG_METRIC_COUNT; i++) {
		const struct metric *m = &metrics[i];
		n = strlen(m->id);
		snprintf(where, sizeof(where), "cli/metrics_table.h: %s", m->id);
		if (doc_tables_cell(PROG, where, m->doc) != 0)
			return -1;
		if (strpbrk(m->help, "\\\n")) {
			fprintf(stderr, PROG ": %s: the help has a backslash or a newline (the exposition escapes none)\n",
				where);
			return -1;
		}
		if (m->counter != (n > 6 && !strcmp(m->id + n - 6, "_total"))) {
			fprintf(stderr, PROG ": %s: a counter's name ends in _total, and only a counter's\n", where);
			return -1;
		}
	}
	for (i = 0; i < VG_METRIC_NLABELS; i++) {
		snprintf(where, sizeof(where), "cli/metrics_table.h: label %s", labels[i].name);
		if (doc_tables_cell(PROG, where, labels[i].on) != 0 || doc_tables_cell(PROG, where, labels[i].doc) != 0)
			return -1;
	}
	return 0;
}

/* "pid, command, region" (sep ", "), or as JSON strings (sep "\", \"", within quotes the caller writes). */
static void label_list(FILE *out, unsigned set, const char *sep)
{
	const char *s = "";
	for (int l = 0; l < VG_METRIC_NLABELS; l++)
		if (set & (1u << l)) {
			fprintf(out, "%s%s", s, labels[l].name);
			s = sep;
		}
}

static int table_labels(FILE *out, size_t k)
{
	(void)k;
	fputs("\n| label | on | value |\n|---|---|---|\n", out);
	for (size_t i = 0; i < VG_METRIC_NLABELS; i++) {
		char where[128];
		snprintf(where, sizeof(where), "cli/metrics_table.h: label %s", labels[i].name);
		fprintf(out, "| `%s` | %s | ", labels[i].name, labels[i].on);
		if (doc_tables_text(out, PROG, where, labels[i].doc, numbers, NNUMBERS) != 0)
			return -1;
		fputs(" |\n", out);
	}
	fputs("\n", out);
	return 0;
}

static int table_metrics(FILE *out, size_t k)
{
	(void)k;
	fputs("\n| metric | type | labels | meaning |\n|---|---|---|---|\n", out);
	for (size_t i = 0; i < VG_METRIC_COUNT; i++) {
		fprintf(out, "| `vramguard_%s` | %s | ", metrics[i].id, metrics[i].type);
		label_list(out, metrics[i].labels, ", ");
		fputs(" | ", out);
		char where[128];
		snprintf(where, sizeof(where), "cli/metrics_table.h: %s", metrics[i].id);
		if (doc_tables_text(out, PROG, where, metrics[i].doc, numbers, NNUMBERS) != 0)
			return -1;
		fputs(" |\n", out);
	}
	fputs("\n", out);
	return 0;
}

/* The example exposition, as the exporter writes it in the text format. */
static int table_example(FILE *out, size_t k)
{
	(void)k;
	fputs("\n```\n", out);
	for (size_t i = 0; i < sizeof(example) / sizeof(example[0]); i++) {
		const struct metric *m = &metrics[example[i].id];
		const char *sep = "{";
		fprintf(out, "# HELP vramguard_%s %s\n# TYPE vramguard_%s %s\nvramguard_%s", m->id, m->help, m->id,
			m->type, m->id);
		for (int l = 0; l < VG_METRIC_NLABELS; l++)
			if (m->labels & (1u << l)) {
				fprintf(out, "%s%s=\"%s\"", sep, labels[l].name, example_label[l]);
				sep = ",";
			}
		fprintf(out, "%s %llu\n", m->labels ? "}" : "", example[i].value);
	}
	fputs("```\n\n", out);
	return 0;
}

/* A JSON string: the help texts have no backslash or control character (check_rows), quotes are escaped. */
static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++)
		fputs(*s == '"' ? "\\\"" : (char[2]){ *s, 0 }, out);
	fputc('"', out);
}

static int contract(FILE *out)
{
	fputs("{\n  \"comment\": \"Generated by scripts/gen-metrics-doc.c from cli/metrics_table.h; do not edit by hand. "
	      "The metrics vramguard exporter serves, named as Prometheus stores them (counters with _total), and their "
	      "labels (Prometheus adds instance and job).\",\n  \"metrics\": [\n", out);
	for (size_t i = 0; i < VG_METRIC_COUNT; i++) {
		fprintf(out, "    {\"name\": \"vramguard_%s\", \"type\": \"%s\", \"labels\": [", metrics[i].id,
			metrics[i].type);
		if (metrics[i].labels) {
			fputc('"', out);
			label_list(out, metrics[i].labels, "\", \"");
			fputc('"', out);
		}
		fputs("], \"help\": ", out);
		json_str(out, metrics[i].help);
		fprintf(out, "}%s\n", i + 1 < VG_METRIC_COUNT ? "," : "");
	}
	fputs("  ]\n}\n", out);
	return fflush(out) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct doc_table tables[] = {
		{ "labels", table_labels }, { "metrics", table_metrics }, { "example", table_example },
	};
	struct doc_tables t = { PROG, "metrics", "cli/metrics_table.h", tables, sizeof(tables) / sizeof(tables[0]) };

	if (check_rows() != 0)
		return 1;
	if (argc == 2 && strcmp(argv[1], "--json") == 0)
		return contract(stdout);
	return doc_tables_main(&t, argc, argv);
}
