/* The charging core shared by the hook files (interposer/cuda/hook_*.c): reserve on the quota before the driver
 * call, commit or roll back after, record and retire table entries. Owners: charge.c owns the per-thread id and the
 * refusal message's rate limit; the tables are tables.c's (globals.h); the hook files own nothing global but their
 * own rate limits. */
#ifndef VG_CHARGE_H
#define VG_CHARGE_H

#include <stdbool.h>
#include <stdint.h>

#include "interposer/base.h"
#include "accounting/quota.h"
#include "accounting/table.h"

/* One message a second at most (a framework retrying after freeing its cache, a loop destroying busy streams).
 * vg_rate_ok writes "; N more since the last message" into tail when some were suppressed; false: suppressed. */
struct vg_rate {
	_Atomic int64_t last_ns;
	_Atomic uint64_t suppressed;
};
bool vg_rate_ok(struct vg_rate *r, char *tail, size_t len);

/* Reserve bytes on dev before the driver call: CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY like a full GPU (counted,
 * and said in one rate-limited line). */
CUresult vg_reserve(int dev, uint64_t bytes, int hook);

/* Count and say a refusal of bytes on dev: why is -ENOSPC (own quota; used = its usage), -EDQUOT (shared budget;
 * used = the region's), or another reason vg_quota_reserve gives. */
void vg_refuse(int dev, uint64_t bytes, uint64_t used, int hook, int why);

/* A record for the tables (NULL: out of host memory), and its call site, time and thread. */
struct vg_alloc *vg_rec_new(uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind);
void vg_rec_stamp(struct vg_alloc *r, int hook);
/* Record a charged object; a stale entry under the same key is replaced and its charge returned. */
void vg_record(struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind);
/* The same for an allocation a pool served under device counting: the pool's reserve is what is charged. */
struct vg_pool;
void vg_record_pooled(struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind,
		      const struct vg_pool *pool);
/* After the driver answered an allocation we reserved for: record it, or give the reservation back. */
void vg_commit(CUresult rc, struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook,
	       int kind);
/* Give a removed record back to its table after the driver refused to free it. */
void vg_unremove(struct vg_table *t, struct vg_alloc *r);
/* A free the driver accepted: uncharge and drop the record. */
void vg_retire(struct vg_alloc *r);
/* Free-like calls: the record left the table before the real call; it goes or comes back by rc. */
void vg_free_end(CUresult rc, struct vg_table *t, struct vg_alloc *r);

/* Device counting: an allocation that takes pool p's live bytes to `live` past its charge charges the growth first
 * (CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY said like any refusal). After the driver call, vg_pool_grown (devmem.h)
 * settles with the driver's figure. */
CUresult vg_pool_grow(struct vg_pool *p, int dev, uint64_t live, int hook);

/* Fork child: the thread id is the child's own. */
void vg_charge_atfork_child(void);

#endif
