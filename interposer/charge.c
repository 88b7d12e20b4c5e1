/* The charging core every hook file uses: reserve on the quota before the driver call, commit or roll back after;
 * table entries leave before the real free/destroy (handles and addresses are reused as soon as the driver has them
 * back) and come back if the driver refuses. Nothing here holds a lock across a driver call (docs/LOCKS.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "interposer/charge.h"
#include "interposer/device.h"
#include "interposer/devmem.h"
#include "interposer/reporter.h"
#include "interposer/shared.h"
#include "interposer/softlimit.h"
#include "accounting/clock.h"
#include "accounting/region.h"
#include "accounting/sites.h"
#include "report/log.h"

/* One message a second at most: a framework that retries after freeing its cache, or a loop destroying busy
 * streams, would otherwise flood stderr. Writes " (N more since the last message)" into tail when some were
 * suppressed. Returns false when this one is suppressed. */
bool vg_rate_ok(struct vg_rate *r, char *tail, size_t len)
{
	int64_t now = (int64_t)vg_clock_ns(CLOCK_MONOTONIC_COARSE);
	int64_t last = atomic_load(&r->last_ns);
	if ((last != 0 && now - last < VG_NS_PER_SEC) || !atomic_compare_exchange_strong(&r->last_ns, &last, now)) {
		atomic_fetch_add(&r->suppressed, 1);
		return false;
	}
	uint64_t more = atomic_exchange(&r->suppressed, 0);
	tail[0] = '\0';
	if (more)
		snprintf(tail, len, "; %llu more since the last message", (unsigned long long)more);
	return true;
}

static struct vg_rate vg_deny_rate;

static void vg_deny_message(int dev, uint64_t bytes, uint64_t used, int hook, const struct vg_device_info *di, int why)
{
	char a[32], b[32], c[32], tail[64];
	if (!vg_rate_ok(&vg_deny_rate, tail, sizeof(tail)))
		return;
	uint64_t avail = 0, rlim = 0;
	if (why == -EDQUOT)
		vg_log_plain(VG_LOG_WARN, "denied %s on GPU %d (%s): %s of the %s budget of shared region %s in use by "
			     "its processes (VRAMGUARD_SHARED; `vramguard top` shows who holds it)%s",
			     vg_format_bytes(bytes, a, sizeof(a)), dev, vg_hook_names[hook],
			     vg_format_bytes(used, b, sizeof(b)),
			     vg_device_budget(dev, &avail, &rlim) ? vg_format_bytes(rlim, c, sizeof(c)) : "changed",
			     vg_shared_label(), tail);
	else if (why == -ETIMEDOUT)
		vg_log_plain(VG_LOG_WARN, "denied %s on GPU %d (%s): the lock of shared region %s was held for more than "
			     "2 s by another process (stopped? see `vramguard top`)%s",
			     vg_format_bytes(bytes, a, sizeof(a)), dev, vg_hook_names[hook], vg_shared_label(), tail);
	else if (why == -EINPROGRESS)
		vg_log_plain(VG_LOG_WARN, "denied %s on GPU %d (%s): this process is not in shared region %s's budget yet: "
			     "its lock is held by another process (stopped? see `vramguard top`); retried at the next "
			     "allocation%s", vg_format_bytes(bytes, a, sizeof(a)), dev, vg_hook_names[hook],
			     vg_shared_label(), tail);
	else if (why == -EPERM)
		vg_log_plain(VG_LOG_WARN, "denied %s on GPU %d (%s): this process could not join shared region %s (see "
			     "the error above)%s", vg_format_bytes(bytes, a, sizeof(a)), dev, vg_hook_names[hook],
			     vg_shared_label(), tail);
	else if (why != -ENOSPC)
		vg_log_plain(VG_LOG_WARN, "denied %s on GPU %d (%s): shared region %s could not be charged: %s (see "
			     "`vramguard top`)%s", vg_format_bytes(bytes, a, sizeof(a)), dev, vg_hook_names[hook],
			     vg_shared_label(), strerror(-why), tail);
	else
		vg_log_plain(VG_LOG_WARN, "denied %s on GPU %d (%s): %s of %s quota in use (%s)%s",
			     vg_format_bytes(bytes, a, sizeof(a)), dev, vg_hook_names[hook],
			     vg_format_bytes(used, b, sizeof(b)), vg_format_bytes(di->limit, c, sizeof(c)),
			     di->source ? di->source : "quota", tail);
}

void vg_refuse(int dev, uint64_t bytes, uint64_t used, int hook, int why)
{
	const struct vg_device_info *di = vg_device_info(dev);
	vg_quota_note_denied(dev, bytes);
	vg_region_note_denied(vg_shared_region());
	if (di)
		vg_deny_message(dev, bytes, used, hook, di, why);
	vg_denial_report_check();       /* after the line: the report comes after it on stderr too */
}

/* Reserve bytes on dev before the driver call. CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY like a full GPU. */
CUresult vg_reserve(int dev, uint64_t bytes, int hook)
{
	const struct vg_device_info *di = vg_device_info(dev);
	if (!di)
		return CUDA_SUCCESS;    /* no device (the driver will refuse) or an ordinal we do not track */
	vg_device_poll(false);          /* a limit changed by `vramguard limit set` applies from this allocation */
	uint64_t used = 0;
	vg_devmem_fresh(dev, bytes);    /* near the limit only: the driver's part measured just now */
	int rc = vg_shared_ready(dev);
	vg_hook_inflight(dev);          /* after the fresh measurement above: it would wait on its own allocation */
	if (VG_LIKELY(rc == 0))
		rc = vg_quota_reserve(dev, bytes, &used);
	if (VG_LIKELY(rc == 0))
		goto charged;
	/* Device counting: a pool's or the graphs' figure may be stale (memory released at a synchronization), and a
	 * pool may hold memory it has not handed out. Bring them up to date, trim, and look once more. */
	if ((rc == -ENOSPC || rc == -EDQUOT) && vg_devmem_reclaim(dev)) {
		rc = vg_quota_reserve(dev, bytes, &used);
		if (rc == 0)
			goto charged;
	}
	vg_refuse(dev, bytes, used, hook, rc);
	return CUDA_ERROR_OUT_OF_MEMORY;
charged:
	vg_soft_limit_check(dev);
	return CUDA_SUCCESS;
}

/* Device counting: pools grow in 2 MiB pages at least; the growth is charged in those steps. */
#define VG_POOL_GRAIN ((uint64_t)2 << 20)

static inline uint64_t vg_round_grain(uint64_t n)
{
	return n > UINT64_MAX - (VG_POOL_GRAIN - 1) ? UINT64_MAX : (n + VG_POOL_GRAIN - 1) & ~(VG_POOL_GRAIN - 1);
}

CUresult vg_pool_grow(struct vg_pool *p, int dev, uint64_t live, int hook)
{
	atomic_fetch_add(&p->growing, 1);
	uint64_t c = atomic_load(&p->charged);
	uint64_t need = live > c ? vg_round_grain(live - c) : 0;
	if (need) {
		CUresult rc = vg_reserve(dev, need, hook);
		if (rc != CUDA_SUCCESS) {
			atomic_fetch_sub(&p->growing, 1);
			return rc;
		}
		atomic_fetch_add(&p->charged, need);
	}
	return CUDA_SUCCESS;
}

static __thread uint32_t vg_tid __attribute__((tls_model("initial-exec")));

static uint32_t vg_thread_id(void)
{
	if (VG_UNLIKELY(vg_tid == 0))
		vg_tid = (uint32_t)syscall(SYS_gettid);
	return vg_tid;
}

/* Records come from the record store's per-thread cache (accounting/table.c): malloc and free were a third of the
 * cost of an intercepted allocation, and a malloc'd record carried a 16-byte header. */
_Static_assert(VG_HOOK_COUNT <= UINT8_MAX + 1, "struct vg_alloc keeps the hook in 8 bits");
_Static_assert(VG_MAX_DEVICES <= INT16_MAX, "struct vg_alloc keeps the device in 16 bits");

struct vg_alloc *vg_rec_new(uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind)
{
	struct vg_alloc *r = vg_alloc_new();
	if (!r)
		return NULL;
	r->key = key;
	r->bytes = bytes;
	r->dev = (int16_t)dev;
	r->hook = (uint8_t)hook;
	r->kind = (uint8_t)kind;
	if (kind == VG_KIND_VMM)
		r->refs = 1;            /* refs and maps share ctx's word: VMM handles belong to no context */
	else
		r->ctx = ctx;
	return r;
}

/* Who made it, where and when: the call site, the time and the thread, for reports. */
void vg_rec_stamp(struct vg_alloc *r, int hook)
{
	r->site = vg_site_capture(hook);
	r->time_ns = vg_clock_ns(CLOCK_REALTIME_COARSE);
	r->tid = vg_thread_id();
}

static _Atomic int vg_nomem_warned;

/* Give back what a record holds on the quota: its bytes, or, for a pooled allocation, its share of the pool's live
 * bytes (the pool's reserve stays charged: the memory is still the pool's). */
static void vg_uncharge(const struct vg_alloc *r)
{
	if (r->flags & VG_ALLOC_POOLED)
		atomic_fetch_sub(&vg_pools[r->pool].live, r->bytes);
	else
		vg_quota_release(r->dev, r->bytes);
}

/* Record a charged object. A stale entry under the same key (memory the driver released without telling us) is
 * replaced and its charge returned. If we cannot record it we cannot uncharge it later either, so give the
 * charge back now. */
void vg_record(struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind)
{
	vg_record_pooled(t, key, bytes, dev, ctx, hook, kind, NULL);
}

void vg_record_pooled(struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind,
		      const struct vg_pool *pool)
{
	vg_table_prefetch(t, key);
	vg_quota_note_alloc(dev, bytes);
	struct vg_alloc *r = vg_rec_new(key, bytes, dev, ctx, hook, kind);
	if (r) {
		vg_rec_stamp(r, hook);
		if (pool) {
			r->flags |= VG_ALLOC_POOLED;
			r->pool = (uint8_t)(pool - vg_pools);
		}
	}
	int rc = r ? vg_table_insert(t, r) : -ENOMEM;
	if (rc == -EEXIST) {
		struct vg_alloc *old = vg_table_remove(t, key);
		if (old) {
			vg_uncharge(old);
			vg_quota_note_free(old->dev, old->bytes);
			vg_alloc_free(old);
		}
		rc = vg_table_insert(t, r);
	}
	if (rc == 0) {
		vg_site_alloc(r->site, bytes);
		vg_reporter_arm_exit();
	} else {
		vg_alloc_free(r);
		if (pool)
			atomic_fetch_sub(&vg_pools[pool - vg_pools].live, bytes);
		else
			vg_quota_release(dev, bytes);
		vg_quota_note_free(dev, bytes);
		if (!atomic_exchange(&vg_nomem_warned, 1))
			vg_log(VG_LOG_WARN, "out of host memory for bookkeeping; some allocations are not counted");
	}
}

/* After the driver answered an allocation we reserved for. */
void vg_commit(CUresult rc, struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook,
		      int kind)
{
	if (!vg_quota_tracked(dev))
		return;
	if (rc == CUDA_SUCCESS)
		vg_record(t, key, bytes, dev, ctx, hook, kind);
	else
		vg_quota_release(dev, bytes);
}

/* Give a removed record back to the table after the driver refused to free it. */
void vg_unremove(struct vg_table *t, struct vg_alloc *r)
{
	if (vg_table_insert(t, r) != 0) {
		vg_uncharge(r);
		vg_quota_note_free(r->dev, r->bytes);
		vg_alloc_free(r);
	}
}

/* A free the driver accepted: uncharge and drop the record. */
void vg_retire(struct vg_alloc *r)
{
	vg_uncharge(r);
	vg_quota_note_free(r->dev, r->bytes);
	vg_alloc_free(r);
}

/* Free-like calls: the record leaves the table before the real call and returns if the driver refuses. */
void vg_free_end(CUresult rc, struct vg_table *t, struct vg_alloc *r)
{
	if (!r)
		return;
	if (rc == CUDA_SUCCESS)
		vg_retire(r);
	else
		vg_unremove(t, r);
}

/* ---- fork ---- */

void vg_charge_atfork_child(void)
{
	vg_tid = 0;
}
