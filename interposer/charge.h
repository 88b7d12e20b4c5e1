/* The charging core shared by the hook files (interposer/hook_*.c), and the one opening every hook has.
 * Owners: charge.c owns the allocation tables (interposer/globals.h) and the per-thread id; the hook files own
 * nothing global but their own rate limits. A hook file includes this header, and device.h, shared.h, devmem.h or
 * reporter.h for what else it calls. */
#ifndef VG_CHARGE_H
#define VG_CHARGE_H

#include <stdbool.h>
#include <stdint.h>

#include "interposer/globals.h"
#include "interposer/init.h"
#include "accounting/quota.h"
#include "accounting/table.h"

#define VG_REAL_CALL(name, ...) (vg_real.name ? vg_real.name(__VA_ARGS__) : CUDA_ERROR_NOT_FOUND)

/* True when a call made under mode m must fail closed: the configuration is invalid and the hook's row says
 * VG_CLOSED. Folded to a constant comparison for a constant id. */
static inline bool vg_fails_closed(enum vg_mode m, int id)
{
	return m == VG_MODE_BADCONFIG && vg_hook_policies[id] == VG_CLOSED;
}

/* The opening of a hook, from its row in hooks.h: declares rc and vg_m (the mode); when vramguard is not active in this call (a
 * nested call, another owner, no driver, invalid configuration) it answers from the policy (real_call, or
 * CUDA_ERROR_NOT_PERMITTED for a VG_CLOSED row under invalid configuration) and jumps to the hook's `out:`, which
 * must call vg_hook_leave(). VG_OPEN_AS serves helpers that implement several rows (pass that row's id and its
 * real call). */
#define VG_OPEN_AS(id, real_call)                                                                           \
	CUresult rc;                                                                                         \
	enum vg_mode vg_m = vg_hook_enter();                                                                 \
	if (VG_UNLIKELY(vg_m != VG_MODE_ACTIVE)) {                                                           \
		rc = vg_fails_closed(vg_m, (id)) ? CUDA_ERROR_NOT_PERMITTED : (real_call);                     \
		goto out;                                                                                    \
	}
#define VG_OPEN(name, ...) VG_OPEN_AS(VG_HOOK_##name, VG_REAL_CALL(name, __VA_ARGS__))
/* Two rows served by one helper, name and name##suffix (cuCtxDestroy / _v2, cuMemFreeAsync / _ptsz): the real call
 * of the one alt picks, and the opening for it. */
#define VG_REAL_EITHER(alt, name, suffix, ...)                                                               \
	((alt) ? VG_REAL_CALL(name##suffix, __VA_ARGS__) : VG_REAL_CALL(name, __VA_ARGS__))
#define VG_OPEN_EITHER(alt, name, suffix, ...)                                                               \
	VG_OPEN_AS((alt) ? VG_HOOK_##name##suffix : VG_HOOK_##name, VG_REAL_EITHER(alt, name, suffix, __VA_ARGS__))

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

/* hook_stream.c: bumped by every stream creation (a cached handle may now name another stream), and set when the
 * first stream capture begins. */
extern _Atomic unsigned vg_stream_gen;
extern _Atomic bool vg_capture_begun;

/* Query a stream without blocking: 1 work queued, 0 idle, -1 capturing, -2 unknown (hook_stream.c). */
int vg_stream_state(CUstream s);

/* charge.c's own life, driven by init.c: the tables made at init, and kept consistent across fork (prepare and
 * parent hold and release the tables' locks; the child starts from empty tables). */
void vg_wrappers_init(void);
void vg_wrappers_atfork_prepare(void);
void vg_wrappers_atfork_parent(void);
void vg_wrappers_atfork_child(void);

#endif
