/* The process's region (shared.c): join at init (-1: a shared region was asked for and cannot be had, fail
 * closed), register each device on first use, pick up live limit changes, leave at exit. The region itself is
 * accounting/region.h's. */
#ifndef VG_SHARED_H
#define VG_SHARED_H

#include <stdbool.h>
#include <stdint.h>

struct vg_region;
int vg_shared_attach(void);
struct vg_region *vg_shared_region(void);
/* VRAMGUARD_SHARED as messages quote it ('name', a long path cut short); "" before vg_shared_attach. */
const char *vg_shared_label(void);
void vg_shared_bind(int dev, const char *uuid, uint64_t total, uint64_t own_limit);
void vg_shared_poll(bool may_reclaim);
/* Before charging dev: 0, or why the allocation must be refused: -EINPROGRESS (the process has not joined its
 * shared region yet, or not registered dev with it, because the region's lock timed out: retried now and at each
 * allocation), -EPERM (joining failed for good). One load when nothing is pending. */
int vg_shared_ready(int dev);
void vg_shared_note_report(void);
/* Write dev's figures that no allocation keeps current (the allocations' logical bytes, the device parts) into the
 * process's slot, for `vramguard top`. The sampler thread calls it every round. */
void vg_shared_publish(int dev);
/* Write the process's counters over all its GPUs (allocations made, bytes refused, live allocations, streams
 * destroyed with work queued) into its slot. The sampler thread calls it every round, before vg_shared_publish. */
void vg_shared_publish_counts(void);
void vg_shared_atfork_child(void);

#endif
