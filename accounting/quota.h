/* Per-device quota counters: reserve before the driver call, commit or roll back after. Lock-free (one CAS loop),
 * so two threads can never both pass the same check. No CUDA here. */
#ifndef VG_QUOTA_H
#define VG_QUOTA_H

#include <stdatomic.h>
#include <stdint.h>

#include "config/config.h"

#define VG_NO_LIMIT UINT64_MAX

struct vg_counters {
	_Atomic uint64_t limit;         /* VG_NO_LIMIT until set */
	_Atomic uint64_t used;          /* bytes charged now (reserved + committed) */
	_Atomic uint64_t peak;
	_Atomic uint64_t allocs, frees;
	_Atomic uint64_t denied_count, denied_bytes;
	_Atomic uint64_t largest;
};

extern struct vg_counters vg_quota[VG_MAX_DEVICES];

static inline int vg_quota_tracked(int dev)
{
	return dev >= 0 && dev < VG_MAX_DEVICES;
}

void vg_quota_set_limit(int dev, uint64_t limit);

/* Reserve bytes on dev. Returns 0, or -ENOSPC (nothing reserved) with *used_now set to the usage seen. Untracked
 * devices always succeed. */
int vg_quota_reserve(int dev, uint64_t bytes, uint64_t *used_now);
/* Charge without a check (rolling back a failed release). */
void vg_quota_force(int dev, uint64_t bytes);
/* Give bytes back (a failed driver call after reserve, or a free). */
void vg_quota_release(int dev, uint64_t bytes);
/* Count a committed allocation / a free / a denial (statistics only). */
void vg_quota_note_alloc(int dev, uint64_t bytes);
void vg_quota_note_free(int dev);
void vg_quota_note_denied(int dev, uint64_t bytes);

uint64_t vg_quota_used(int dev);
uint64_t vg_quota_limit(int dev);

/* Zero every counter (fork child, tests). Limits stay. */
void vg_quota_reset_usage(void);

#endif
