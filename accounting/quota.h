/* Per-device quota counters: reserve before the driver call, commit or roll back after. Lock-free (one CAS loop),
 * so two threads can never both pass the same check. No CUDA here. */
#ifndef VG_QUOTA_H
#define VG_QUOTA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

#define VG_NO_LIMIT UINT64_MAX

/* The figures every allocation must see (the check on `used`) live in vg_quota, one line for `used` and `peak`
 * (both written by a charge, so a charge costs one cache line) and one read-mostly line for `limit` that no charge
 * writes. The statistics every allocation and free bump (allocs, frees, largest) are per-thread shards
 * (vg_quota_stats sums them): two threads allocating would otherwise fight over one line for figures nobody checks. */
struct vg_counters {
	_Atomic uint64_t limit __attribute__((aligned(64)));   /* VG_NO_LIMIT until set; read-mostly */
	/* Where used and peak are counted: NULL for the two below, or the process's slot in its control segment
	 * (vg_quota_place). Read-mostly, next to the limit. */
	_Atomic uint64_t *_Atomic usedp, *_Atomic peakp;
	/* The soft limit (VG_NO_LIMIT: none) and its crossing detector (1: fired, waiting for usage to fall below
	 * 90 % of it). Read by every vg_quota_soft_check; written only when set and at a crossing or a re-arm, so
	 * they share the read-mostly line and a charge still writes one line. */
	_Atomic uint64_t soft;
	_Atomic uint32_t soft_fired;
	_Atomic uint64_t used __attribute__((aligned(64)));    /* bytes charged now (reserved + committed) */
	_Atomic uint64_t peak;          /* max of used: written only when it grows */
	_Atomic uint64_t denied_count __attribute__((aligned(64)));  /* the refusal path only */
	_Atomic uint64_t denied_bytes;
};

/* Every figure of a device, the shards summed (reports). */
struct vg_quota_stats {
	uint64_t limit, used, peak, allocs, frees, denied_count, denied_bytes, largest;
	uint64_t allocated;             /* live bytes of the allocations themselves (what VRAMGUARD_COUNT=allocations
					 * counts); `used` is what the quota counts */
	uint64_t soft;                  /* the soft limit, VG_NO_LIMIT when none */
};

extern struct vg_counters vg_quota[VG_MAX_DEVICES] __attribute__((visibility("hidden")));

/* The shared region whose budget this process charges besides its own counters, or NULL. Set once by the
 * interposer after joining; NULL again in a forked child. (A control segment is not set here: it has no budget,
 * and the quota's own counters are placed in it, see vg_quota_place.) */
struct vg_region;
extern struct vg_region *_Atomic vg_quota_region __attribute__((visibility("hidden")));

static inline int vg_quota_tracked(int dev)
{
	return dev >= 0 && dev < VG_MAX_DEVICES;
}

void vg_quota_set_limit(int dev, uint64_t limit);

/* The raw counter of dev (includes threads' small-allocation credit): a cheap upper bound of the usage. */
static inline uint64_t vg_quota_counter(int dev)
{
	_Atomic uint64_t *p = atomic_load_explicit(&vg_quota[dev].usedp, memory_order_acquire);
	return atomic_load_explicit(p ? p : &vg_quota[dev].used, memory_order_relaxed);
}

/* Reserve bytes on dev against the process's quota and then the shared region's budget. Returns 0, or, with nothing
 * reserved:
 *   -ENOSPC     the process's own quota is full; *used_now = the process's usage
 *   -EDQUOT     the shared budget is full; *used_now = the region's usage
 *   -ETIMEDOUT  the region's lock was held too long by another process (region.h)
 *   -EUSERS     the process was evicted from the region, which is full now
 *   other       the region's lock could not be taken (-errno)
 * used_now may be NULL; it is written on a failure only. Untracked devices always succeed. */
int vg_quota_reserve(int dev, uint64_t bytes, uint64_t *used_now);
/* Charge without a check (rolling back a failed release). */
void vg_quota_force(int dev, uint64_t bytes);
/* Give bytes back (a failed driver call after reserve, or a free). */
void vg_quota_release(int dev, uint64_t bytes);
/* Count a committed allocation / a free / a denial (statistics only; the bytes make the allocations' figure). */
void vg_quota_note_alloc(int dev, uint64_t bytes);
void vg_quota_note_free(int dev, uint64_t bytes);
void vg_quota_note_denied(int dev, uint64_t bytes);

uint64_t vg_quota_used(int dev);
uint64_t vg_quota_limit(int dev);
/* How many times usage on dev was given back (vg_quota_release), ever. Read before and after a look at something
 * outside that moves with usage (NVML's figure for the process), it says whether a release fell in between: usage
 * only ever exceeds what the driver holds for the process (a reserve comes before the driver's allocation, a
 * release after the driver's free), except across a release, so with none in between, usage read after the look is
 * at least what the driver held for it during the look. Acquire: call it after the reads it is to cover. */
uint64_t vg_quota_releases(int dev);
/* Allocations under way: vg_quota_begin before the reserve of an allocation the driver is then asked for,
 * vg_quota_end once it answered (made or refused). Between the two our usage counts memory the driver does not hold
 * yet, so a look at NVML's figure counts only if vg_quota_inflight says none was under way when it began (begun ==
 * done) and none began or ended until after the usage was read (both unchanged): the driver's part is then exact.
 * Acquire: call it after the reads it is to cover. */
void vg_quota_begin(int dev);
void vg_quota_end(int dev);
void vg_quota_inflight(int dev, uint64_t *begun, uint64_t *done);

/* Soft limits: usage above one denies nothing; the caller is told once per crossing and decides what to say.
 * vg_quota_set_soft sets dev's soft limit (VG_NO_LIMIT: none) and re-arms its detector; vg_quota_soft reads it.
 * vg_quota_soft_check returns 1 exactly once per upward crossing (vg_quota_used(dev) above the soft limit), and 0
 * otherwise; after a crossing it re-arms only once a call sees usage below 90 % of the soft limit, so usage
 * hovering around the line crosses once. It sees only what usage is when it is called: call it after every change
 * of usage (a charge, a release, a re-measurement), from any thread (two threads crossing at once: one of them gets
 * the 1). The state is read before the counter (acquire): a counter from before a crossing never pairs with its
 * fired state, so the detector is not re-armed in the middle of a crossing. Without a soft limit it is one relaxed
 * load of a read-mostly line; below the soft limit, two more (the state, and the counter, which bounds usage from
 * above); the exact usage (every thread's credit summed) only near the line. */
void vg_quota_set_soft(int dev, uint64_t bytes);
uint64_t vg_quota_soft(int dev);
int vg_quota_soft_judge(int dev, uint64_t soft);       /* the part of vg_quota_soft_check past its first load */

static inline int vg_quota_soft_check(int dev)
{
	if (!vg_quota_tracked(dev))
		return 0;
	uint64_t soft = atomic_load_explicit(&vg_quota[dev].soft, memory_order_relaxed);
	return __builtin_expect(soft == VG_NO_LIMIT, 1) ? 0 : vg_quota_soft_judge(dev, soft);
}
/* All figures of dev; false (and zeros, limit VG_NO_LIMIT) if dev is not tracked. */
bool vg_quota_stats(int dev, struct vg_quota_stats *out);

/* Count dev's usage and peak in *used and *peak from now on (the process's control segment, which `vramguard top`
 * reads) instead of in vg_quota: one atomic operation per allocation and free serves both, and no second counter
 * can drift. What was counted so far moves there. Only the process's own region slot may be given: nobody else
 * writes it. */
void vg_quota_place(int dev, _Atomic uint64_t *used, _Atomic uint64_t *peak);
/* Zero every counter and count in vg_quota again (fork child, tests). Limits and soft limits stay; the soft limits
 * re-arm. */
void vg_quota_reset_usage(void);

#endif
