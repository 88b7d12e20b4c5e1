/* Quota counters. The reserve is a compare-and-swap on `used`, so concurrent allocators can never exceed a limit
 * together; the driver call happens after the reserve and a failure rolls it back. */
#include <errno.h>

#include "accounting/quota.h"

struct vg_counters vg_quota[VG_MAX_DEVICES] = {
#define VG_Q1 { .limit = VG_NO_LIMIT }
#define VG_Q8 VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1
	VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8,
#undef VG_Q8
#undef VG_Q1
};
_Static_assert(VG_MAX_DEVICES == 64, "vg_quota initialiser assumes 64 devices");

static void vg_atomic_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

void vg_quota_set_limit(int dev, uint64_t limit)
{
	if (vg_quota_tracked(dev))
		atomic_store(&vg_quota[dev].limit, limit);
}

int vg_quota_reserve(int dev, uint64_t bytes, uint64_t *used_now)
{
	if (!vg_quota_tracked(dev))
		return 0;
	struct vg_counters *q = &vg_quota[dev];
	uint64_t limit = atomic_load_explicit(&q->limit, memory_order_relaxed);
	uint64_t used = atomic_load_explicit(&q->used, memory_order_relaxed);
	for (;;) {
		if (limit != VG_NO_LIMIT && (bytes > limit || used > limit - bytes)) {
			if (used_now)
				*used_now = used;
			return -ENOSPC;
		}
		if (used > UINT64_MAX - bytes) {        /* untracked overflow: cannot happen with real sizes */
			if (used_now)
				*used_now = used;
			return -ENOSPC;
		}
		if (atomic_compare_exchange_weak_explicit(&q->used, &used, used + bytes, memory_order_acq_rel,
							  memory_order_relaxed))
			break;
	}
	vg_atomic_max(&q->peak, used + bytes);
	if (used_now)
		*used_now = used + bytes;
	return 0;
}

void vg_quota_force(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	uint64_t now = atomic_fetch_add(&vg_quota[dev].used, bytes) + bytes;
	vg_atomic_max(&vg_quota[dev].peak, now);
}

void vg_quota_release(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	/* Never wrap below zero, even if a caller's bookkeeping were wrong. */
	uint64_t used = atomic_load_explicit(&vg_quota[dev].used, memory_order_relaxed);
	uint64_t next;
	do {
		next = used >= bytes ? used - bytes : 0;
	} while (!atomic_compare_exchange_weak_explicit(&vg_quota[dev].used, &used, next, memory_order_acq_rel,
							memory_order_relaxed));
}

void vg_quota_note_alloc(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	atomic_fetch_add_explicit(&vg_quota[dev].allocs, 1, memory_order_relaxed);
	vg_atomic_max(&vg_quota[dev].largest, bytes);
}

void vg_quota_note_free(int dev)
{
	if (vg_quota_tracked(dev))
		atomic_fetch_add_explicit(&vg_quota[dev].frees, 1, memory_order_relaxed);
}

void vg_quota_note_denied(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	atomic_fetch_add_explicit(&vg_quota[dev].denied_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&vg_quota[dev].denied_bytes, bytes, memory_order_relaxed);
}

uint64_t vg_quota_used(int dev)
{
	return vg_quota_tracked(dev) ? atomic_load(&vg_quota[dev].used) : 0;
}

uint64_t vg_quota_limit(int dev)
{
	return vg_quota_tracked(dev) ? atomic_load(&vg_quota[dev].limit) : VG_NO_LIMIT;
}

void vg_quota_reset_usage(void)
{
	for (int i = 0; i < VG_MAX_DEVICES; i++) {
		struct vg_counters *q = &vg_quota[i];
		atomic_store(&q->used, 0);
		atomic_store(&q->peak, 0);
		atomic_store(&q->allocs, 0);
		atomic_store(&q->frees, 0);
		atomic_store(&q->denied_count, 0);
		atomic_store(&q->denied_bytes, 0);
		atomic_store(&q->largest, 0);
	}
}
