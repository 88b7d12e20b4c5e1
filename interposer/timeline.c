/* The per-device timelines of the process: one struct vg_timeline and its mutex per device, in static memory that is
 * touched only for the devices sampled (about 5 KiB each; docs/report-format.md, *The usage timeline*). The sampler
 * thread writes them (holding nothing else), reports copy them (holding vg_report_lock): the mutex is a leaf of the
 * lock order (docs/LOCKS.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interposer/timeline.h"
#include "interposer/device.h"
#include "accounting/clock.h"
#include "accounting/lockorder.h"
#include "accounting/quota.h"
#include "accounting/timeline.h"

/* The timelines stay in .bss, their pages untouched until a device is sampled (period_ns 0: never sampled;
 * vg_timeline_init at the first sample). The locks are apart, so that a fork child re-makes them all cheaply.
 * PTHREAD_MUTEX_INITIALIZER is all zeroes. */
static struct vg_timeline vg_timelines[VG_MAX_DEVICES];
static pthread_mutex_t vg_timeline_locks[VG_MAX_DEVICES] = {
	[0 ... VG_MAX_DEVICES - 1] = PTHREAD_MUTEX_INITIALIZER,
};

void vg_timelines_sample(int dev)
{
	struct vg_quota_stats q;
	if (!vg_quota_stats(dev, &q))
		return;
	const struct vg_device_info *di = vg_device_info_cached(dev);
	uint64_t sig = vg_timeline_significant(q.limit, di ? di->total : 0), now = vg_clock_ns(CLOCK_REALTIME);
	struct vg_timeline *t = &vg_timelines[dev];
	vg_lock(&vg_timeline_locks[dev], VG_RANK_TIMELINE);
	/* The timeline starts at the device's first charge or denial: nothing to draw before. */
	if (!t->period_ns && (q.peak || q.used || q.denied_count))
		vg_timeline_init(t);
	if (t->period_ns)
		vg_timeline_sample(t, now, q.used, q.peak, q.denied_count, q.denied_bytes, sig);
	vg_unlock(&vg_timeline_locks[dev], VG_RANK_TIMELINE);
}

int vg_timelines_report(int dev, uint64_t now_ns, struct vg_report_device *o)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES)
		return 0;
	struct vg_timeline *t = &vg_timelines[dev];
	struct vg_timeline_point *pts = malloc((VG_TIMELINE_POINTS + 1) * sizeof(*pts));
	if (!pts)
		return -ENOMEM;
	uint32_t n = 0;
	vg_lock(&vg_timeline_locks[dev], VG_RANK_TIMELINE);
	if (t->period_ns && t->n) {
		n = vg_timeline_finish(t, pts, now_ns, o->used_bytes, o->peak_bytes, o->denied_count, o->denied_bytes);
		o->timeline_period_ms = t->period_ns / VG_NS_PER_MS;
		o->timeline_compactions = t->compactions;
	}
	vg_unlock(&vg_timeline_locks[dev], VG_RANK_TIMELINE);
	if (!n) {
		free(pts);
		return 0;
	}
	_Static_assert(sizeof(struct vg_report_timeline_point) == sizeof(struct vg_timeline_point) &&
			       offsetof(struct vg_report_timeline_point, denied_bytes) ==
				       offsetof(struct vg_timeline_point, denied_bytes),
		       "a report's timeline point is the timeline's");
	o->timeline_points = (struct vg_report_timeline_point *)(void *)pts;
	o->ntimeline_points = n;
	o->timeline_set = 1;
	return 0;
}

void vg_timelines_atfork_child(void)
{
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		pthread_mutex_init(&vg_timeline_locks[d], NULL);
		if (vg_timelines[d].period_ns)  /* only the devices sampled: the others' pages stay untouched */
			memset(&vg_timelines[d], 0, sizeof(vg_timelines[d]));
	}
}
