/* A bounded usage timeline of one device: at most VG_TIMELINE_POINTS points, whatever the run's length. Pure data
 * (no CUDA, no locks, no allocation): the interposer's sampler feeds it (interposer/timeline.c holds one per device,
 * each under its own mutex), a report copies it.
 *
 * The model. The caller samples at its own pace (the sampler's rounds). A sample becomes a point when it says
 * something new, at most once per minimum gap: usage moved by `significant` from the last point, or the interval's
 * peak rose that far above it, or a denial happened; and, whatever happens, once per coarse period, so a flat run is
 * still drawn. When the array is full it is compacted: adjacent pairs merge (the later one's time, usage and
 * cumulative denials, the higher peak), the first point (the run's start) and, when the count left is odd, the
 * newest point stay as they are, and the period and the gap double. So the whole run is always covered, at a resolution that coarsens as it grows; the highest peak
 * and the final denial counts are never lost (denials are cumulative, peaks merge by max).
 *
 * A point's peak_bytes is the highest usage within the interval that ends at it: exact when the process's lifetime
 * peak rose during the interval (that new lifetime peak is the interval's), otherwise the highest usage sampled. */
#ifndef VG_TIMELINE_H
#define VG_TIMELINE_H

#include <stdint.h>

#define VG_TIMELINE_POINTS 128
#define VG_TIMELINE_PERIOD_NS (10ull * 1000000000ull)  /* a point at least this often at first */
#define VG_TIMELINE_GAP_NS (1ull * 1000000000ull)      /* and at most this often at first */

struct vg_timeline_point {
	uint64_t time_ns;               /* CLOCK_REALTIME */
	uint64_t used_bytes, peak_bytes;
	uint64_t denied_count, denied_bytes;    /* cumulative */
};

struct vg_timeline {
	struct vg_timeline_point points[VG_TIMELINE_POINTS];
	uint32_t n;                     /* points held */
	uint32_t compactions;           /* times the array was halved */
	uint64_t period_ns;             /* a point at least this often (doubles with each compaction) */
	uint64_t gap_ns;                /* a point on change at most this often (doubles too) */
	uint64_t run_peak;              /* the highest usage since the last point */
	uint64_t last_lifetime_peak;    /* the lifetime peak at the last sample */
};

void vg_timeline_init(struct vg_timeline *t);
/* One sample: now (CLOCK_REALTIME ns, not decreasing), usage, the process's lifetime peak and cumulative denials. */
void vg_timeline_sample(struct vg_timeline *t, uint64_t now_ns, uint64_t used, uint64_t lifetime_peak,
			uint64_t denied_count, uint64_t denied_bytes, uint64_t significant);
/* The timeline as a report shows it: the points copied to out (room for VG_TIMELINE_POINTS + 1), then one more
 * for now from the figures given, so that it ends at the report with the final counts (merged into the last point
 * when the clock has not moved past it). Returns the number of points in out. */
uint32_t vg_timeline_finish(const struct vg_timeline *t, struct vg_timeline_point *out, uint64_t now_ns, uint64_t used,
			    uint64_t lifetime_peak, uint64_t denied_count, uint64_t denied_bytes);
/* The change worth a point: max(1 MiB, quota / 64); the device's total / 64 when unlimited (quota UINT64_MAX or
 * 0); 64 MiB when neither is known (total 0). */
uint64_t vg_timeline_significant(uint64_t quota, uint64_t total);

#endif
