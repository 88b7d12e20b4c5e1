/* Saturating and max updates of a 64-bit counter, shared by the quota (accounting/quota.c) and the regions
 * (accounting/region_lock.c, region_slots.c, region_charge.c, where the counters are in shared memory). */
#ifndef VG_ATOMIC_H
#define VG_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>

/* *p = max(*p, v): a load unless v is larger. */
static inline void vg_atomic_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

/* *p -= v, never below 0 (a caller's bookkeeping may be wrong); a read-modify-write, so that an add racing with
 * it is never lost. */
static inline void vg_atomic_sub_sat(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(p, &cur, cur >= v ? cur - v : 0, memory_order_acq_rel,
						      memory_order_relaxed))
		;
}

#endif
