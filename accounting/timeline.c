/* The bounded usage timeline of one device (accounting/timeline.h has the model). */
#include "accounting/timeline.h"

#include <string.h>

#define VG_TL_MIB ((uint64_t)1 << 20)

_Static_assert(sizeof(struct vg_timeline_point) == 40, "docs/report-format.md states 40 bytes a point");

void vg_timeline_init(struct vg_timeline *t)
{
	memset(t, 0, sizeof(*t));
	t->period_ns = VG_TIMELINE_PERIOD_NS;
	t->gap_ns = VG_TIMELINE_GAP_NS;
}

uint64_t vg_timeline_significant(uint64_t quota, uint64_t total)
{
	uint64_t s;
	if (quota && quota != UINT64_MAX)
		s = quota / 64;
	else if (total)
		s = total / 64;
	else
		return 64 * VG_TL_MIB;
	return s > VG_TL_MIB ? s : VG_TL_MIB;
}

/* Halve the array: the first point (the run's start) stays, the pairs after it merge into their later point (its
 * time, usage and cumulative denials) with the higher of the two peaks; with an odd count left the newest point
 * stays as it is. Then points come half as often. */
static void vg_timeline_compact(struct vg_timeline *t)
{
	uint32_t pairs = (t->n - 1) / 2, i, o = 1;
	for (i = 0; i < pairs; i++) {
		struct vg_timeline_point a = t->points[1 + 2 * i], b = t->points[2 + 2 * i];
		if (a.peak_bytes > b.peak_bytes)
			b.peak_bytes = a.peak_bytes;
		t->points[o++] = b;
	}
	if ((t->n - 1) % 2)
		t->points[o++] = t->points[t->n - 1];
	t->n = o;
	t->compactions++;
	t->period_ns *= 2;
	t->gap_ns *= 2;
}

void vg_timeline_sample(struct vg_timeline *t, uint64_t now_ns, uint64_t used, uint64_t lifetime_peak,
			uint64_t denied_count, uint64_t denied_bytes, uint64_t significant)
{
	/* A lifetime peak that rose since the last sample was reached in this interval: it is the interval's peak. */
	uint64_t seen = used;
	if (lifetime_peak > t->last_lifetime_peak) {
		if (lifetime_peak > seen)
			seen = lifetime_peak;
		t->last_lifetime_peak = lifetime_peak;
	}
	if (seen > t->run_peak)
		t->run_peak = seen;
	if (t->n) {
		const struct vg_timeline_point *last = &t->points[t->n - 1];
		if (now_ns <= last->time_ns)    /* the same instant, or the wall clock stepped back */
			return;
		uint64_t dt = now_ns - last->time_ns;
		uint64_t moved = used > last->used_bytes ? used - last->used_bytes : last->used_bytes - used;
		int change = moved >= significant || t->run_peak >= last->used_bytes + significant ||
			     denied_count != last->denied_count;
		if (!(change && dt >= t->gap_ns) && dt < t->period_ns)
			return;
	}
	if (t->n == VG_TIMELINE_POINTS)
		vg_timeline_compact(t);
	t->points[t->n++] = (struct vg_timeline_point){ now_ns, used, t->run_peak, denied_count, denied_bytes };
	t->run_peak = used;     /* the next interval starts where this point is */
}

uint32_t vg_timeline_finish(const struct vg_timeline *t, struct vg_timeline_point *out, uint64_t now_ns, uint64_t used,
			    uint64_t lifetime_peak, uint64_t denied_count, uint64_t denied_bytes)
{
	uint32_t n = t->n <= VG_TIMELINE_POINTS ? t->n : VG_TIMELINE_POINTS;
	uint64_t peak = t->run_peak > used ? t->run_peak : used;
	if (lifetime_peak > t->last_lifetime_peak && lifetime_peak > peak)
		peak = lifetime_peak;
	memcpy(out, t->points, n * sizeof(*out));
	if (n && now_ns <= out[n - 1].time_ns) {
		struct vg_timeline_point *last = &out[n - 1];
		if (peak > last->peak_bytes)
			last->peak_bytes = peak;
		last->used_bytes = used;
		last->denied_count = denied_count;
		last->denied_bytes = denied_bytes;
		return n;
	}
	out[n] = (struct vg_timeline_point){ now_ns, used, peak, denied_count, denied_bytes };
	return n + 1;
}
