/* Each device's usage timeline (accounting/timeline.h has the model): sampled by the sampler thread's rounds
 * (interposer/devmem.c), copied into reports (interposer/snapshot.c). Nothing here runs on the allocation path. */
#ifndef VG_INTERPOSER_TIMELINE_H
#define VG_INTERPOSER_TIMELINE_H

#include <stdint.h>

#include "report/report.h"

/* One sample of dev from the quota's figures, at CLOCK_REALTIME now (the sampler thread, holding no lock). */
void vg_timelines_sample(int dev);
/* Give o (a device of a report at now_ns, its figures filled in) the device's timeline, ending with one point at
 * now_ns from o's figures; nothing when the device was never sampled. 0, or -ENOMEM (then o has none). Called under
 * vg_report_lock. */
int vg_timelines_report(int dev, uint64_t now_ns, struct vg_report_device *o);
/* Fork child: the sampler is not there; the usage is zeroed: each timeline starts again. */
void vg_timelines_atfork_child(void);

#endif
