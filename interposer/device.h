/* The quota in force on each device (device.c), and nothing else: this module alone decides it. Resolved on a device's
 * first use from the configuration (config/policy.h) and the driver (total memory, UUID); changed live by
 * `vramguard limit set` (--pid, or --shared when the process follows its region's budget) and by the driver's own
 * container limit. One setter writes it everywhere it is kept: the quota counters (accounting/quota.h: the
 * allocation check), the device's figures below (reports and messages) and the process's slot in its region
 * (`vramguard top`). */
#ifndef VG_DEVICE_H
#define VG_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

/* Per-device state, resolved lazily on first use (needs the driver: total memory, UUID). */
struct vg_device_info {
	_Atomic uint64_t limit; /* UINT64_MAX: unlimited; `vramguard limit set --pid` may change it at any time */
	uint64_t total;
	const char *_Atomic source;     /* variable the limit came from, or NULL */
	_Atomic uint64_t driver_limit;  /* the driver's own limit for the container (R615+ NVML), VG_NO_LIMIT: none */
	_Atomic uint64_t own_limit;     /* vramguard's own limit, before the driver's is applied */
	uint64_t soft;                  /* soft limit: the lower of NVIDIA_GPU_MEMORY_REQUEST[S] and VRAMGUARD_WARN_AT,
					 * VG_NO_LIMIT when none; set once */
	const char *soft_source;        /* variable it came from, or NULL */
	const char *soft_reason;        /* its reports' reason: "threshold" (VRAMGUARD_WARN_AT) or "soft-limit" */
	uint32_t compute_pm;            /* the compute share, per mille of the GPU's time (0: none); set once */
	const char *compute_source;     /* variable it came from, or NULL */
	char uuid[VG_UUID_MAX];
};
/* Returns NULL for an ordinal vramguard does not track (negative or >= VG_MAX_DEVICES). */
const struct vg_device_info *vg_device_info_resolve(int dev);
/* device.c's table, read inline on every allocation: resolved devices are read-only once vg_dev_ready says so. */
extern struct vg_device_info vg_dev[VG_MAX_DEVICES] __attribute__((visibility("hidden")));
extern _Atomic int vg_dev_ready[VG_MAX_DEVICES] __attribute__((visibility("hidden")));
static inline const struct vg_device_info *vg_device_info(int dev)
{
	if (__builtin_expect((unsigned)dev < VG_MAX_DEVICES &&
			     atomic_load_explicit(&vg_dev_ready[dev], memory_order_acquire), 1))
		return &vg_dev[dev];
	return vg_device_info_resolve(dev);     /* the first use of dev, or an ordinal we do not track */
}
/* The same, but only if already resolved: never calls the driver (reports). */
const struct vg_device_info *vg_device_info_cached(int dev);

/* The budget of dev's GPU in the shared region this process is in, and what of it is free now: false when no shared
 * budget applies to dev (no shared region, or none set for that GPU). */
bool vg_device_budget(int dev, uint64_t *avail, uint64_t *budget);

/* Pick up live changes of the quota in force: a limit `vramguard limit set --pid` sent this process, a new budget of
 * its shared region (followed when NVIDIA_GPU_MEMORY_LIMITS made it), the region having taken the process back after
 * an eviction. Called on the allocation path (two loads when nothing changed) and by cuMemGetInfo, which passes
 * may_reclaim: it also retries a pending join of the region and reclaims the shares of processes that died. */
void vg_device_poll(bool may_reclaim);

/* Apply a per-process limit spec sent by `vramguard limit set` (NVIDIA_GPU_MEMORY_LIMITS syntax) to every device
 * now and to devices first used later. quiet = false: logs one line per changed device (the caller logs otherwise).
 * Returns the number of devices whose quota changed, or -1 for a spec that does not parse (logged, ignored). */
int vg_device_apply_limit_spec(const char *spec, bool quiet);
/* The process follows its shared region's budget: apply it quietly (vg_device_apply_limit_spec). Given to
 * vg_shared_attach, which calls it when the process joins a region whose budget it follows. */
int vg_device_follow(const char *budget);

/* The driver enforces a container limit of hard bytes on dev (R615+): the tighter of it and ours applies; both are
 * shown (reports, check, top). */
void vg_device_apply_driver_limit(int dev, uint64_t hard);

/* Fork: the devices' lock is held across fork (prepare, parent) and re-made in the child. */
void vg_device_atfork_prepare(void);
void vg_device_atfork_parent(void);
void vg_device_atfork_child(void);

#endif
