/* `vramguard exporter`'s exposition: the regions of a directory (cli/scan.h, read-only copies, never a lock) as
 * Prometheus metrics, in the text format 0.0.4 or OpenMetrics 1.0.0. cli/exporter.c serves and writes it; the
 * metrics and their labels are the rows of cli/metrics_table.h, listed in docs/metrics.md. */
#ifndef VG_CLI_METRICS_H
#define VG_CLI_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/strbuf.h"

#define VG_METRICS_CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define VG_METRICS_CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* What the exporter keeps between scrapes: its counters, and the last skip message (said once, not per scrape). */
struct vg_metrics_state {
	uint64_t skipped_permission;    /* region files that could not be opened (permissions), summed over scrapes */
	uint64_t skipped_changed;       /* ... that changed while read (truncated or replaced by their owner) */
	uint64_t skipped_invalid;       /* files refused as not a region (corrupt, foreign, other version) */
	char last_note[1024];
};

/* One scrape of dir's regions (and the one VRAMGUARD_SHARED names, shared_name "" for none) into out; openmetrics
 * picks the format. A file skipped is counted, and said on stderr in one line when the reason is new. 0, or -1 with
 * err (the directory cannot be read: the exposition then says vramguard_up 0). */
int vg_metrics_build(struct vg_metrics_state *st, const char *dir, const char *shared_name, bool openmetrics,
		     struct vg_strbuf *out, char *err, size_t errlen);

/* A label value escaped for the exposition (\ " and newline), bytes that are not UTF-8 as U+FFFD, appended to b. */
void vg_metrics_escape(struct vg_strbuf *b, const char *s);
/* The same value as Prometheus reads it back (an alert's label): bytes that are not UTF-8 as U+FFFD, no escapes. */
void vg_metrics_label(struct vg_strbuf *b, const char *s);

#endif
