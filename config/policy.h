/* One GPU's policy from the configuration: its quota, its request and warning threshold, the one soft limit they
 * make, and its compute share. Written once here (config/policy.c) and used by everyone who needs it: the library when it first uses a
 * device (interposer/device.c), the NVML view for a GPU the process has not used through CUDA
 * (interposer/nvml/nvml_hooks.c), and `vramguard check`. Pure: a configuration and what the driver says of the
 * device go in, the policy comes out; no state of the library is read. */
#ifndef VG_CONFIG_POLICY_H
#define VG_CONFIG_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

/* Each figure is bytes, or UINT64_MAX for none (unlimited); each source the variable that decided it, or NULL. */
struct vg_device_policy {
	uint64_t limit;                 /* the quota (vg_config_limit_for's precedence) */
	const char *limit_source;
	uint64_t request;               /* NVIDIA_GPU_MEMORY_REQUESTS / _REQUEST (vg_config_request_for) */
	const char *request_source;
	uint64_t warn;                  /* VRAMGUARD_WARN_AT; a percentage is of the quota above (of the device's
					 * total memory when there is none) */
	const char *warn_source;
	/* The device's one soft limit: the lower of the request and the warning threshold (a tie keeps the
	 * request's, as before VRAMGUARD_WARN_AT existed). soft_reason is the reason its reports give: "soft-limit"
	 * (a request, or none) or "threshold" (VRAMGUARD_WARN_AT). */
	uint64_t soft;
	const char *soft_source;
	const char *soft_reason;
	/* The compute share (vg_config_compute_for's precedence): whole percents of the GPU's time, 1..100 (100:
	 * measured, never delayed), or 0 for no limit; its source the variable that decided, or NULL. */
	unsigned compute_pct;
	const char *compute_source;
};

/* The policy of the GPU with CUDA ordinal `ordinal` (-1 unknown) and UUID `uuid` (NULL or "": unknown), whose total
 * memory is `total` bytes, for percentages: a percentage of 0 bytes is none (no quota, no request); the library
 * passes 1 for a size it cannot read, so that a percentage quota allows nothing. An invalid cfg gives no limit at
 * all (callers check cfg->valid first). */
void vg_config_device_policy(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t total,
			     struct vg_device_policy *out);

/* Does a limit that decides a quota (NVIDIA_GPU_MEMORY_LIMITS, CUDA_DEVICE_MEMORY_LIMIT[_<i>], or the shared
 * region's budget) key some GPU by CUDA ordinal ("0:4G")? Then resolving a GPU known only by its UUID needs its
 * ordinal from the driver. */
bool vg_config_keys_ordinals(const struct vg_config *cfg);

/* Does the configuration set a compute limit for some GPU (VRAMGUARD_COMPUTE_LIMIT, CUDA_DEVICE_SM_LIMIT[_<i>])? */
bool vg_config_compute_any(const struct vg_config *cfg);

#endif
