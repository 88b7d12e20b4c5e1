/* Per-device state (init.c, next to the lazy init): each CUDA ordinal's limit, resolved on first use from the
 * configuration and the driver, changed live by `vramguard limit set --pid` and by the driver's own container
 * limit; and the device of the current context, cached per thread. */
#ifndef VG_DEVICE_H
#define VG_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

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
	char uuid[VG_UUID_MAX];
};
/* Returns NULL for an ordinal vramguard does not track (negative or >= VG_MAX_DEVICES). */
const struct vg_device_info *vg_device_info(int dev);
/* The same, but only if already resolved: never calls the driver (reports). */
const struct vg_device_info *vg_device_info_cached(int dev);

/* The device of the current context (and the context itself), or -1 if there is none. */
int vg_current_device(CUcontext *ctx);
/* A context may have died: forget every thread's cached context -> device pair. */
void vg_ctx_cache_invalidate(void);

/* Apply a per-process limit spec sent by `vramguard limit set` (NVIDIA_GPU_MEMORY_LIMITS syntax) to every device
 * now and to devices first used later. quiet = false: logs one line per changed device (the caller logs otherwise).
 * Returns the number of devices whose quota changed, or -1 for a spec that does not parse (logged, ignored). */
int vg_device_apply_limit_spec(const char *spec, bool quiet);

/* The driver enforces a container limit of hard bytes on dev (R615+): the tighter of it and ours applies; both are
 * shown (reports, check, top). */
void vg_device_apply_driver_limit(int dev, uint64_t hard);

#endif
