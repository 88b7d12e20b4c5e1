/* Inside `vramguard diff`: the comparison of two reports (cli/diff_compare.c), which cli/diff.c renders. Sites
 * are paired and sorted into rows by section; devices are paired; streams are summed by site. */
#ifndef VG_DIFF_COMPARE_H
#define VG_DIFF_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "report/report.h"

#define VG_DIFF_NONE SIZE_MAX   /* "no match" in the match arrays */

/* Sections, in the order they are printed. */
enum vg_diff_kind { VG_DIFF_GREW, VG_DIFF_NEW, VG_DIFF_SHRANK, VG_DIFF_GONE, VG_DIFF_SAME, VG_DIFF_NKINDS };

struct vg_diff_row {
	enum vg_diff_kind kind;
	const struct vg_report_site *o, *n;     /* o NULL: new; n NULL: gone */
	uint64_t dbytes, dcount;                /* magnitude of the change; its sign comes from kind */
	uint64_t sortbytes;                     /* dbytes, or the live bytes of an unchanged site */
};

struct vg_diff {
	const struct vg_report *o, *n;
	int by_id;                              /* one process: sites matched by id */
	uint32_t depth;                         /* by stack: frames compared (0: all) */
	size_t no, nn;                          /* sites in each report */
	size_t *omatch, *nmatch;                /* index of the matching site in the other report, or VG_DIFF_NONE */
	struct vg_diff_row *rows;               /* sorted by section, then change */
	size_t nrows;
	size_t count[VG_DIFF_NKINDS];
	uint64_t bytes[VG_DIFF_NKINDS];
	size_t first[VG_DIFF_NKINDS];           /* index of the section's first row */
};

/* Match the sites of o and n and sort them into rows: 0, or -ENOMEM (then nothing is left to free). */
int vg_diff_init(struct vg_diff *d, const struct vg_report *o, const struct vg_report *n);
void vg_diff_fini(struct vg_diff *d);

/* The site with this id in r (and its index), or NULL. */
const struct vg_report_site *vg_diff_find(const struct vg_report *r, uint32_t id, size_t *index);

struct vg_diff_dev {
	const struct vg_report_device *o, *n;   /* o NULL: new device; n NULL: gone */
};

/* New devices in their order, each with its old twin (same uuid; else same ordinal unless both have different
 * uuids), then the old devices left over: *pairs (malloc'd). Returns the number of pairs, or -ENOMEM. */
long vg_diff_devices_match(const struct vg_report *o, const struct vg_report *n, struct vg_diff_dev **pairs);

/* Anything different in live memory, by device or by site. */
bool vg_diff_any_change(const struct vg_diff *d, const struct vg_diff_dev *p, long np);

struct vg_diff_srow {
	uint64_t key[2];                        /* creation site (and destroy site, for events) */
	uint64_t oc, nc;                        /* streams in each report */
	int synchronized;
};

/* The streams of both reports summed by site (live: by creation site; events: by creation and destroy site), each
 * list sorted by the size of its change; and the totals. */
struct vg_diff_streams {
	struct vg_diff_srow *live, *ev;
	size_t nlive, nev;
	uint64_t olive, nlive_total;            /* live streams in each report */
	uint64_t oev, nev_total;                /* streams destroyed with work queued in each report */
};
/* 0, or -ENOMEM; free with vg_diff_streams_fini. */
int vg_diff_streams_init(const struct vg_diff *d, struct vg_diff_streams *s);
void vg_diff_streams_fini(struct vg_diff_streams *s);

static inline uint64_t vg_absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

#endif
