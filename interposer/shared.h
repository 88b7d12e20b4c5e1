/* The process's region (shared.c): join at init (-1: a shared region was asked for and cannot be had, fail
 * closed), register each device on first use, retry what timed out, leave at exit. The region itself is
 * accounting/region.h's; what it says of the quota in force is device.c's to read. */
#ifndef VG_SHARED_H
#define VG_SHARED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct vg_region;

/* Join the region the configuration names (VRAMGUARD_SHARED, else a control segment). follow: how this process's
 * quota follows the shared region's budget when NVIDIA_GPU_MEMORY_LIMITS made it (device.c's vg_device_follow),
 * called with the budget in force when the process joins such a region. 0, or -1: fail closed. */
int vg_shared_attach(int (*follow)(const char *budget));

/* The region this process is in (a shared region, else its control segment), NULL before it joined or without one.
 * Inline, read by the allocation path: shared.c alone writes these two (hidden: read directly, not through the GOT). */
extern struct vg_region vg_shared_self __attribute__((visibility("hidden")));
extern _Atomic int vg_shared_self_ready __attribute__((visibility("hidden")));
static inline struct vg_region *vg_shared_region(void)
{
	return atomic_load_explicit(&vg_shared_self_ready, memory_order_acquire) ? &vg_shared_self : NULL;
}

/* VRAMGUARD_SHARED as messages quote it ('name', a long path cut short); "" before vg_shared_attach. */
const char *vg_shared_label(void);

/* Register CUDA ordinal dev (UUID uuid, or NULL; total bytes) with the region at its first use, with the quota in
 * force as the quota counters hold it (device.c sets it first); later if the region cannot be had now. */
void vg_shared_bind(int dev, const char *uuid, uint64_t total);
/* The quota in force on dev changed (device.c's setter): into the process's slot, once dev is registered. */
void vg_shared_set_quota(int dev, uint64_t limit);

/* Does this process's quota follow its shared region's budget (NVIDIA_GPU_MEMORY_LIMITS made it)? Until a
 * `vramguard limit set --pid` aimed at it gives it a quota of its own (vg_shared_follow_stop). */
bool vg_shared_follows(void);
void vg_shared_follow_stop(void);

/* Before charging dev: 0, or why the allocation must be refused: -EINPROGRESS (the process has not joined its
 * shared region yet, or not registered dev with it, because the region's lock timed out: retried now and at each
 * allocation), -EPERM (joining failed for good). One load when nothing is pending. */
int vg_shared_ready(int dev);
/* Retry a pending join or registration now, if any (cuMemGetInfo). */
void vg_shared_retry(void);
/* At most once a second, reclaim the shares of r's processes that died without leaving (a shared region only). */
void vg_shared_reclaim(struct vg_region *r);

void vg_shared_note_report(void);
/* Write dev's figures that no allocation keeps current (the allocations' logical bytes, the driver's own memory
 * `driver`, the soft limit) into the process's slot, for `vramguard top`. The sampler thread calls it every round. */
void vg_shared_publish(int dev, uint64_t driver);
/* Write the process's counters over all its GPUs (allocations made, bytes refused, live allocations, streams
 * destroyed with work queued) into its slot. The sampler thread calls it every round, before vg_shared_publish. */
void vg_shared_publish_counts(void);
/* The compute share's figures of dev (per mille, the last minute's per mille, GPU time) into our slot: `top` and the
 * exporter read them. compute.c's thread calls it each second, holding no lock. */
void vg_shared_publish_compute(int dev, uint32_t pm, uint32_t recent_pm, uint64_t gpu_ns);
/* Our slot's quota forecast for dev (interposer/growth.c, each sampler round): has 0 when there is none. */
void vg_shared_publish_forecast(int dev, bool has, uint64_t seconds);
/* Leave the region at exit (lifecycle.c's destructor); a forked child never does. */
void vg_shared_leave_at_exit(void);
void vg_shared_atfork_child(void);

#endif
