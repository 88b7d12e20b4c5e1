/* The wrappers: what each entry point charges, releases or reports (CUDA-NOTES §3, §4). Pattern: reserve on the
 * quota before the driver call, commit or roll back after; table entries leave before the real free/destroy
 * (handles and addresses are reused as soon as the driver has them back) and come back if the driver refuses.
 * No lock is ever held across a driver call. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interposer/interposer.h"
#include <sys/syscall.h>
#include <unistd.h>

#include "accounting/quota.h"
#include "accounting/region.h"
#include "accounting/sites.h"
#include "accounting/table.h"
#include "report/log.h"
#include "report/report.h"
#include "report/symbolize.h"

struct vg_table vg_ptrs;                /* device pointers: cuMemAlloc, pitch, managed, async */
struct vg_table vg_arrays;              /* CUarray and CUmipmappedArray handles */
struct vg_table vg_vmm;                 /* cuMemCreate handles (refs + maps) */
static struct vg_table vg_maps;         /* cuMemMap mappings by start address */
struct vg_table vg_streams;             /* live streams, with their creation sites */
struct vg_table vg_stream_events;       /* streams destroyed with work queued, by (create, destroy) site */
_Atomic uint64_t vg_streams_created, vg_streams_destroyed;

#define VG_REAL_CALL(name, ...) (vg_real.name ? vg_real.name(__VA_ARGS__) : CUDA_ERROR_NOT_FOUND)

/* Not active (a nested call, another copy of vramguard owns the process, or no driver): straight to the real
 * function. Invalid configuration: entry points that would give the process memory fail closed. */
#define VG_GATE(mode, fail_closed, name, ...)                                                                 \
	do {                                                                                                 \
		if ((mode) != VG_MODE_ACTIVE) {                                                              \
			rc = ((mode) == VG_MODE_BADCONFIG && (fail_closed)) ? CUDA_ERROR_NOT_PERMITTED        \
									     : VG_REAL_CALL(name, __VA_ARGS__); \
			goto out;                                                                            \
		}                                                                                            \
	} while (0)

static struct vg_table *const vg_all_tables[] = { &vg_ptrs, &vg_arrays, &vg_vmm, &vg_maps, &vg_streams,
						  &vg_stream_events };
#define VG_NTABLES (sizeof(vg_all_tables) / sizeof(vg_all_tables[0]))

VG_HIDDEN void vg_wrappers_init(void)
{
	for (size_t i = 0; i < VG_NTABLES; i++)
		vg_table_init(vg_all_tables[i]);
}

/* ---- rate-limited warnings ---- */

struct vg_rate {
	_Atomic int64_t last_ns;
	_Atomic uint64_t suppressed;
};

static int64_t vg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One message a second at most: a framework that retries after freeing its cache, or a loop destroying busy
 * streams, would otherwise flood stderr. Writes " (N more since the last message)" into tail when some were
 * suppressed. Returns false when this one is suppressed. */
static bool vg_rate_ok(struct vg_rate *r, char *tail, size_t len)
{
	int64_t now = vg_now_ns();
	int64_t last = atomic_load(&r->last_ns);
	if ((last != 0 && now - last < 1000000000) || !atomic_compare_exchange_strong(&r->last_ns, &last, now)) {
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
	struct vg_region *r = vg_shared_region();
	uint64_t avail = 0, rlim = 0;
	if (why == -EDQUOT)
		vg_log_plain(VG_LOG_WARN, "denied %s on GPU %d (%s): %s of the %s budget of shared region %s in use by "
			     "its processes (VRAMGUARD_SHARED; `vramguard top` shows who holds it)%s",
			     vg_format_bytes(bytes, a, sizeof(a)), dev, vg_hook_names[hook],
			     vg_format_bytes(used, b, sizeof(b)),
			     r && vg_region_avail(r, dev, &avail, &rlim) ? vg_format_bytes(rlim, c, sizeof(c)) : "changed",
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

/* Reserve bytes on dev before the driver call. CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY like a full GPU. */
static CUresult vg_reserve(int dev, uint64_t bytes, int hook)
{
	const struct vg_device_info *di = vg_device_info(dev);
	if (!di)
		return CUDA_SUCCESS;    /* no device (the driver will refuse) or an ordinal we do not track */
	vg_shared_poll(false);          /* a limit changed by `vramguard limit set` applies from this allocation */
	uint64_t used = 0;
	int rc = vg_shared_ready(dev);
	if (VG_LIKELY(rc == 0))
		rc = vg_quota_reserve(dev, bytes, &used);
	if (VG_LIKELY(rc == 0))
		return CUDA_SUCCESS;
	vg_quota_note_denied(dev, bytes);
	vg_region_note_denied(vg_shared_region());
	vg_deny_message(dev, bytes, used, hook, di, rc);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static __thread uint32_t vg_tid __attribute__((tls_model("initial-exec")));

static uint32_t vg_thread_id(void)
{
	if (VG_UNLIKELY(vg_tid == 0))
		vg_tid = (uint32_t)syscall(SYS_gettid);
	return vg_tid;
}

static uint64_t vg_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Records come from the pool's per-thread cache (accounting/table.c): malloc and free were a third of the cost of
 * an intercepted allocation, and a malloc'd record carried a 16-byte header. */
_Static_assert(VG_HOOK_COUNT <= UINT8_MAX + 1, "struct vg_alloc keeps the hook in 8 bits");
_Static_assert(VG_MAX_DEVICES <= INT16_MAX, "struct vg_alloc keeps the device in 16 bits");

static struct vg_alloc *vg_rec_new(uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind)
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
static void vg_rec_stamp(struct vg_alloc *r, int hook)
{
	r->site = vg_site_capture(hook);
	r->time_ns = vg_realtime_ns();
	r->tid = vg_thread_id();
}

static _Atomic int vg_nomem_warned;

/* Record a charged object. A stale entry under the same key (memory the driver released without telling us) is
 * replaced and its charge returned. If we cannot record it we cannot uncharge it later either, so give the
 * charge back now. */
static void vg_record(struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook, int kind)
{
	vg_table_prefetch(t, key);
	vg_quota_note_alloc(dev, bytes);
	struct vg_alloc *r = vg_rec_new(key, bytes, dev, ctx, hook, kind);
	if (r)
		vg_rec_stamp(r, hook);
	int rc = r ? vg_table_insert(t, r) : -ENOMEM;
	if (rc == -EEXIST) {
		struct vg_alloc *old = vg_table_remove(t, key);
		if (old) {
			vg_quota_release(old->dev, old->bytes);
			vg_alloc_free(old);
		}
		rc = vg_table_insert(t, r);
	}
	if (rc == 0) {
		vg_site_alloc(r->site, bytes);
		vg_reporter_arm_exit();
	} else {
		vg_alloc_free(r);
		vg_quota_release(dev, bytes);
		if (!atomic_exchange(&vg_nomem_warned, 1))
			vg_log(VG_LOG_WARN, "out of host memory for bookkeeping; some allocations are not counted");
	}
}

/* After the driver answered an allocation we reserved for. */
static void vg_commit(CUresult rc, struct vg_table *t, uint64_t key, uint64_t bytes, int dev, void *ctx, int hook,
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
static void vg_unremove(struct vg_table *t, struct vg_alloc *r)
{
	if (vg_table_insert(t, r) != 0) {
		vg_quota_release(r->dev, r->bytes);
		vg_alloc_free(r);
	}
}

/* A free the driver accepted: uncharge and drop the record. */
static void vg_retire(struct vg_alloc *r)
{
	vg_quota_release(r->dev, r->bytes);
	vg_quota_note_free(r->dev);
	vg_alloc_free(r);
}

/* Free-like calls: the record leaves the table before the real call and returns if the driver refuses. */
static void vg_free_end(CUresult rc, struct vg_table *t, struct vg_alloc *r)
{
	if (!r)
		return;
	if (rc == CUDA_SUCCESS)
		vg_retire(r);
	else
		vg_unremove(t, r);
}

/* ---- init ---- */

VG_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	VG_GATE(m, true, cuInit, Flags);
	rc = VG_REAL_CALL(cuInit, Flags);
	if (rc == CUDA_SUCCESS)
		vg_reporter_arm_exit();
out:
	vg_hook_leave();
	return rc;
}

/* ---- linear device memory ---- */

VG_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	VG_GATE(m, true, cuMemAlloc_v2, dptr, bytesize);
	CUcontext ctx;
	int dev = vg_current_device(&ctx);
	rc = vg_reserve(dev, bytesize, VG_HOOK_cuMemAlloc_v2);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = VG_REAL_CALL(cuMemAlloc_v2, dptr, bytesize);
	vg_commit(rc, &vg_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, bytesize, dev, ctx, VG_HOOK_cuMemAlloc_v2,
		  VG_KIND_MEM);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
					      unsigned int ElementSizeBytes)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	VG_GATE(m, true, cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	/* The pitch is known only afterwards: reserve the row width rounded to 512 bytes, then settle. */
	uint64_t est;
	if (__builtin_mul_overflow((uint64_t)((WidthInBytes + 511) & ~(size_t)511), (uint64_t)Height, &est)) {
		rc = VG_REAL_CALL(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
		goto out;
	}
	CUcontext ctx;
	int dev = vg_current_device(&ctx);
	rc = vg_reserve(dev, est, VG_HOOK_cuMemAllocPitch_v2);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = VG_REAL_CALL(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	uint64_t actual = est;
	if (rc == CUDA_SUCCESS && pPitch && vg_quota_tracked(dev)) {
		actual = (uint64_t)*pPitch * Height;
		if (actual > est) {
			if (vg_reserve(dev, actual - est, VG_HOOK_cuMemAllocPitch_v2) != CUDA_SUCCESS) {
				(void)VG_REAL_CALL(cuMemFree_v2, *dptr);
				vg_quota_release(dev, est);
				rc = CUDA_ERROR_OUT_OF_MEMORY;
				goto out;
			}
		} else if (actual < est) {
			vg_quota_release(dev, est - actual);
		}
	}
	vg_commit(rc, &vg_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, actual, dev, ctx, VG_HOOK_cuMemAllocPitch_v2,
		  VG_KIND_PITCH);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	VG_GATE(m, true, cuMemAllocManaged, dptr, bytesize, flags);
	if (vg_cfg.managed == VG_MANAGED_IGNORE) {
		rc = VG_REAL_CALL(cuMemAllocManaged, dptr, bytesize, flags);
		goto out;
	}
	CUcontext ctx;
	int dev = vg_current_device(&ctx);
	rc = vg_reserve(dev, bytesize, VG_HOOK_cuMemAllocManaged);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = VG_REAL_CALL(cuMemAllocManaged, dptr, bytesize, flags);
	vg_commit(rc, &vg_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, bytesize, dev, ctx, VG_HOOK_cuMemAllocManaged,
		  VG_KIND_MANAGED);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	if (m != VG_MODE_ACTIVE || dptr == 0) {         /* cuMemFree_v2(0) is legal: cudart calls it at init */
		rc = VG_REAL_CALL(cuMemFree_v2, dptr);
		goto out;
	}
	struct vg_alloc *r = vg_table_remove(&vg_ptrs, dptr);
	rc = VG_REAL_CALL(cuMemFree_v2, dptr);
	vg_free_end(rc, &vg_ptrs, r);
out:
	vg_hook_leave();
	return rc;
}

/* ---- stream-ordered allocation ---- */

static bool vg_stream_capturing(CUstream s, bool ptsz)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	PFN_cuStreamIsCapturing_v10000 f = ptsz ? vg_real.cuStreamIsCapturing_ptsz : vg_real.cuStreamIsCapturing;
	if (f && f(s, &st) == CUDA_SUCCESS)
		return st != CU_STREAM_CAPTURE_STATUS_NONE;
	return false;
}

/* The device (and context) an async allocation on stream s lands on. NULL, legacy and per-thread handles mean
 * the current context. */
static int vg_stream_device(CUstream s, CUcontext *ctx)
{
	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return vg_current_device(ctx);
	CUcontext c = NULL;
	CUdevice d;
	if (!vg_real.cuStreamGetCtx || vg_real.cuStreamGetCtx(s, &c) != CUDA_SUCCESS)
		c = NULL;
	*ctx = c;
	if (vg_real.cuStreamGetDevice && vg_real.cuStreamGetDevice(s, &d) == CUDA_SUCCESS)
		return (int)d;
	if (c && vg_real.cuCtxGetDevice_v2 && vg_real.cuCtxGetDevice_v2(&d, c) == CUDA_SUCCESS)
		return (int)d;
	CUcontext cur = NULL;
	int cd = vg_current_device(&cur);
	return c == cur ? cd : -1;
}

static CUresult vg_async_real(int hook, CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
	switch (hook) {
	case VG_HOOK_cuMemAllocAsync:
		return VG_REAL_CALL(cuMemAllocAsync, dptr, bytes, s);
	case VG_HOOK_cuMemAllocAsync_ptsz:
		return VG_REAL_CALL(cuMemAllocAsync_ptsz, dptr, bytes, s);
	case VG_HOOK_cuMemAllocFromPoolAsync:
		return VG_REAL_CALL(cuMemAllocFromPoolAsync, dptr, bytes, pool, s);
	default:
		return VG_REAL_CALL(cuMemAllocFromPoolAsync_ptsz, dptr, bytes, pool, s);
	}
}

/* Logical bytes are charged when the allocation is made and released at cuMemFreeAsync. During stream capture
 * nothing is allocated yet (the graph allocates at launch), so nothing is charged. */
static CUresult vg_alloc_async(int hook, bool ptsz, CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	if (m != VG_MODE_ACTIVE) {
		rc = m == VG_MODE_BADCONFIG ? CUDA_ERROR_NOT_PERMITTED : vg_async_real(hook, dptr, bytes, pool, s);
		goto out;
	}
	if (vg_stream_capturing(s, ptsz)) {
		rc = vg_async_real(hook, dptr, bytes, pool, s);
		goto out;
	}
	CUcontext ctx = NULL;
	int dev = vg_stream_device(s, &ctx);
	rc = vg_reserve(dev, bytes, hook);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = vg_async_real(hook, dptr, bytes, pool, s);
	vg_commit(rc, &vg_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, bytes, dev, ctx, hook, VG_KIND_ASYNC);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return vg_alloc_async(VG_HOOK_cuMemAllocAsync, false, dptr, bytesize, NULL, hStream);
}

VG_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return vg_alloc_async(VG_HOOK_cuMemAllocAsync_ptsz, true, dptr, bytesize, NULL, hStream);
}

VG_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
						   CUstream hStream)
{
	return vg_alloc_async(VG_HOOK_cuMemAllocFromPoolAsync, false, dptr, bytesize, pool, hStream);
}

VG_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
							CUstream hStream)
{
	return vg_alloc_async(VG_HOOK_cuMemAllocFromPoolAsync_ptsz, true, dptr, bytesize, pool, hStream);
}

static CUresult vg_free_async(bool ptsz, CUdeviceptr dptr, CUstream s)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	struct vg_alloc *r = NULL;
	if (m == VG_MODE_ACTIVE && dptr)
		r = vg_table_remove(&vg_ptrs, dptr);
	rc = ptsz ? VG_REAL_CALL(cuMemFreeAsync_ptsz, dptr, s) : VG_REAL_CALL(cuMemFreeAsync, dptr, s);
	vg_free_end(rc, &vg_ptrs, r);
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return vg_free_async(false, dptr, hStream);
}

VG_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return vg_free_async(true, dptr, hStream);
}

/* ---- virtual memory management (cuMemCreate and friends) ----
 * Physical memory lives while the handle has references or is mapped anywhere; it is uncharged when both reach 0.
 * NCCL frees as Retain, Unmap, Release, Release: uncharging at each Release would count it twice. */

VG_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				       const CUmemAllocationProp *prop, unsigned long long flags)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	VG_GATE(m, true, cuMemCreate, handle, size, prop, flags);
	if (!prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {  /* host / host NUMA: not VRAM */
		rc = VG_REAL_CALL(cuMemCreate, handle, size, prop, flags);
		goto out;
	}
	int dev = prop->location.id;
	rc = vg_reserve(dev, size, VG_HOOK_cuMemCreate);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = VG_REAL_CALL(cuMemCreate, handle, size, prop, flags);
	vg_commit(rc, &vg_vmm, rc == CUDA_SUCCESS ? *handle : 0, size, dev, NULL, VG_HOOK_cuMemCreate, VG_KIND_VMM);
out:
	vg_hook_leave();
	return rc;
}

static bool vg_vmm_unref(struct vg_alloc *r, void *arg)
{
	(void)arg;
	if (r->refs > 0)
		r->refs--;
	return r->refs == 0 && r->maps == 0;
}

static bool vg_vmm_ref(struct vg_alloc *r, void *arg)
{
	(void)arg;
	r->refs++;
	return false;
}

static bool vg_vmm_map(struct vg_alloc *r, void *arg)
{
	(void)arg;
	r->maps++;
	return false;
}

static bool vg_vmm_unmap(struct vg_alloc *r, void *arg)
{
	(void)arg;
	if (r->maps > 0)
		r->maps--;
	return r->refs == 0 && r->maps == 0;
}

VG_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	if (m != VG_MODE_ACTIVE) {
		rc = VG_REAL_CALL(cuMemRelease, handle);
		goto out;
	}
	struct vg_alloc *gone = NULL;
	int found = vg_table_update(&vg_vmm, handle, vg_vmm_unref, NULL, &gone) == 0;
	rc = VG_REAL_CALL(cuMemRelease, handle);
	if (rc == CUDA_SUCCESS) {
		if (gone)
			vg_retire(gone);
	} else if (gone) {
		gone->refs = 1;
		vg_unremove(&vg_vmm, gone);
	} else if (found) {
		vg_table_update(&vg_vmm, handle, vg_vmm_ref, NULL, &gone);
	}
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	rc = VG_REAL_CALL(cuMemRetainAllocationHandle, handle, addr);
	if (m == VG_MODE_ACTIVE && rc == CUDA_SUCCESS && handle) {
		struct vg_alloc *gone;
		vg_table_update(&vg_vmm, *handle, vg_vmm_ref, NULL, &gone);
	}
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
				    unsigned long long flags)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	rc = VG_REAL_CALL(cuMemMap, ptr, size, offset, handle, flags);
	if (m == VG_MODE_ACTIVE && rc == CUDA_SUCCESS) {
		struct vg_alloc *gone;
		if (vg_table_update(&vg_vmm, handle, vg_vmm_map, NULL, &gone) == 0) {
			struct vg_alloc *mr = vg_rec_new(ptr, size, -1, NULL, VG_HOOK_cuMemMap, VG_KIND_MAPPING);
			if (mr) {
				mr->aux = handle;
				if (vg_table_insert(&vg_maps, mr) != 0) {
					vg_alloc_free(mr);
					vg_table_update(&vg_vmm, handle, vg_vmm_unmap, NULL, &gone);
					if (gone)
						vg_retire(gone);
				}
			}
		}
	}
	vg_hook_leave();
	return rc;
}

struct vg_range {
	uint64_t lo, hi;
};

static bool vg_in_range(const struct vg_alloc *r, void *arg)
{
	const struct vg_range *g = arg;
	return r->key >= g->lo && r->key < g->hi;
}

/* Take the mappings that start inside [ptr, ptr+size) out of the table. Unmap ranges are normally whole mappings
 * laid end to end, so follow them by address; fall back to a scan only if there is a gap. */
static struct vg_alloc *vg_take_mappings(uint64_t ptr, uint64_t size)
{
	struct vg_alloc *list = NULL;
	uint64_t end = ptr + size < ptr ? UINT64_MAX : ptr + size;
	uint64_t at = ptr;
	while (at < end) {
		struct vg_alloc *r = vg_table_remove(&vg_maps, at);
		if (!r) {
			struct vg_range g = { at, end };
			struct vg_alloc *rest = vg_table_remove_if(&vg_maps, vg_in_range, &g);
			while (rest) {
				struct vg_alloc *n = rest->next;
				rest->next = list;
				list = rest;
				rest = n;
			}
			break;
		}
		r->next = list;
		list = r;
		if (r->bytes == 0 || at + r->bytes < at)
			break;
		at += r->bytes;
	}
	return list;
}

VG_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	if (m != VG_MODE_ACTIVE) {
		rc = VG_REAL_CALL(cuMemUnmap, ptr, size);
		goto out;
	}
	struct vg_alloc *list = vg_take_mappings(ptr, size);
	rc = VG_REAL_CALL(cuMemUnmap, ptr, size);
	while (list) {
		struct vg_alloc *mr = list;
		list = mr->next;
		if (rc != CUDA_SUCCESS) {
			if (vg_table_insert(&vg_maps, mr) != 0)
				vg_alloc_free(mr);
			continue;
		}
		struct vg_alloc *gone = NULL;
		vg_table_update(&vg_vmm, mr->aux, vg_vmm_unmap, NULL, &gone);
		if (gone)
			vg_retire(gone);
		vg_alloc_free(mr);
	}
out:
	vg_hook_leave();
	return rc;
}

/* ---- arrays (an estimate: the driver's real footprint includes padding and tiling we cannot see) ---- */

/* Bytes per element x 16 (so 4:2:0 and block-compressed formats, under a byte per pixel, stay exact), and whether
 * NumChannels multiplies it. */
static uint64_t vg_format_size16(CUarray_format f, bool *per_channel)
{
	*per_channel = false;
	switch ((int)f) {
	case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8:
		*per_channel = true; return 16;
	case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF:
		*per_channel = true; return 32;
	case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT:
		*per_channel = true; return 64;
	case CU_AD_FORMAT_UNORM_INT8X1: case CU_AD_FORMAT_SNORM_INT8X1: return 16;
	case CU_AD_FORMAT_UNORM_INT8X2: case CU_AD_FORMAT_SNORM_INT8X2: return 32;
	case CU_AD_FORMAT_UNORM_INT8X4: case CU_AD_FORMAT_SNORM_INT8X4: return 64;
	case CU_AD_FORMAT_UNORM_INT16X1: case CU_AD_FORMAT_SNORM_INT16X1: return 32;
	case CU_AD_FORMAT_UNORM_INT16X2: case CU_AD_FORMAT_SNORM_INT16X2: return 64;
	case CU_AD_FORMAT_UNORM_INT16X4: case CU_AD_FORMAT_SNORM_INT16X4: return 128;
	case CU_AD_FORMAT_BC1_UNORM: case CU_AD_FORMAT_BC1_UNORM_SRGB: case CU_AD_FORMAT_BC4_UNORM:
	case CU_AD_FORMAT_BC4_SNORM:
		return 8;       /* 8 bytes per 4x4 block */
	case CU_AD_FORMAT_BC2_UNORM: case CU_AD_FORMAT_BC2_UNORM_SRGB: case CU_AD_FORMAT_BC3_UNORM:
	case CU_AD_FORMAT_BC3_UNORM_SRGB: case CU_AD_FORMAT_BC5_UNORM: case CU_AD_FORMAT_BC5_SNORM:
	case CU_AD_FORMAT_BC6H_UF16: case CU_AD_FORMAT_BC6H_SF16: case CU_AD_FORMAT_BC7_UNORM:
	case CU_AD_FORMAT_BC7_UNORM_SRGB:
		return 16;      /* 16 bytes per 4x4 block */
	case CU_AD_FORMAT_NV12: return 24;
	case CU_AD_FORMAT_P010: case CU_AD_FORMAT_P016: return 48;
	case CU_AD_FORMAT_NV16: case CU_AD_FORMAT_YUY2: return 32;
	case CU_AD_FORMAT_P210: case CU_AD_FORMAT_P216: case CU_AD_FORMAT_Y210: case CU_AD_FORMAT_Y216:
	case CU_AD_FORMAT_AYUV: case CU_AD_FORMAT_Y410: case CU_AD_FORMAT_UNORM_INT_101010_2:
		return 64;
	case CU_AD_FORMAT_Y416: return 128;
	case CU_AD_FORMAT_Y444_PLANAR8: case CU_AD_FORMAT_YUV444_8bit_SemiPlanar: return 48;
	case CU_AD_FORMAT_Y444_PLANAR10: case CU_AD_FORMAT_YUV444_16bit_SemiPlanar: return 96;
	default:
		*per_channel = true; return 64;  /* unknown: assume 4 bytes a channel */
	}
}

static uint64_t vg_array_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch, unsigned levels,
			       bool layered)
{
	bool per_channel;
	unsigned __int128 size16 = vg_format_size16(f, &per_channel);
	if (per_channel)
		size16 *= ch ? ch : 1;
	unsigned __int128 total = 0;
	if (levels == 0)
		levels = 1;
	for (unsigned l = 0; l < levels && l < 64; l++) {
		unsigned __int128 lw = w >> l ? w >> l : 1;
		unsigned __int128 lh = h ? (h >> l ? h >> l : 1) : 1;
		unsigned __int128 ld = d ? (layered ? d : (d >> l ? d >> l : 1)) : 1;
		total += lw * lh * ld;
		if (total > ((unsigned __int128)1 << 100))
			break;
	}
	total = (total * size16 + 15) / 16;
	return total > UINT64_MAX ? UINT64_MAX : (uint64_t)total;
}

static CUresult vg_array_create(int hook, CUarray *pArr, CUmipmappedArray *pMip, size_t w, size_t h, size_t d,
				CUarray_format f, unsigned ch, unsigned flags, unsigned levels, const void *desc)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
#define VG_ARRAY_REAL()                                                                                      \
	(hook == VG_HOOK_cuArrayCreate_v2     ? VG_REAL_CALL(cuArrayCreate_v2, pArr, desc)                \
	 : hook == VG_HOOK_cuArray3DCreate_v2 ? VG_REAL_CALL(cuArray3DCreate_v2, pArr, desc)              \
					      : VG_REAL_CALL(cuMipmappedArrayCreate, pMip, desc, levels))
	if (m != VG_MODE_ACTIVE) {
		rc = m == VG_MODE_BADCONFIG ? CUDA_ERROR_NOT_PERMITTED : VG_ARRAY_REAL();
		goto out;
	}
	/* Sparse and deferred-mapping arrays get their memory later, through calls we do not charge here. */
	if (!desc || (flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))) {
		rc = VG_ARRAY_REAL();
		goto out;
	}
	uint64_t bytes = vg_array_bytes(w, h, d, f, ch, levels, (flags & CUDA_ARRAY3D_LAYERED) != 0);
	CUcontext ctx;
	int dev = vg_current_device(&ctx);
	rc = vg_reserve(dev, bytes, hook);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = VG_ARRAY_REAL();
	uint64_t key = 0;
	if (rc == CUDA_SUCCESS)
		key = pMip ? (uint64_t)(uintptr_t)*pMip : (uint64_t)(uintptr_t)*pArr;
	vg_commit(rc, &vg_arrays, key, bytes, dev, ctx, hook, pMip ? VG_KIND_MIPMAP : VG_KIND_ARRAY);
#undef VG_ARRAY_REAL
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
	return vg_array_create(VG_HOOK_cuArrayCreate_v2, pHandle, NULL, d ? d->Width : 0, d ? d->Height : 0, 0,
			       d ? d->Format : 0, d ? d->NumChannels : 0, 0, 1, d);
}

VG_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	return vg_array_create(VG_HOOK_cuArray3DCreate_v2, pHandle, NULL, d ? d->Width : 0, d ? d->Height : 0,
			       d ? d->Depth : 0, d ? d->Format : 0, d ? d->NumChannels : 0, d ? d->Flags : 0, 1, d);
}

VG_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
						  unsigned int numMipmapLevels)
{
	return vg_array_create(VG_HOOK_cuMipmappedArrayCreate, NULL, pHandle, d ? d->Width : 0, d ? d->Height : 0,
			       d ? d->Depth : 0, d ? d->Format : 0, d ? d->NumChannels : 0, d ? d->Flags : 0,
			       numMipmapLevels, d);
}

VG_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	struct vg_alloc *r = m == VG_MODE_ACTIVE ? vg_table_remove(&vg_arrays, (uint64_t)(uintptr_t)hArray) : NULL;
	rc = VG_REAL_CALL(cuArrayDestroy, hArray);
	vg_free_end(rc, &vg_arrays, r);
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	struct vg_alloc *r =
		m == VG_MODE_ACTIVE ? vg_table_remove(&vg_arrays, (uint64_t)(uintptr_t)hMipmappedArray) : NULL;
	rc = VG_REAL_CALL(cuMipmappedArrayDestroy, hMipmappedArray);
	vg_free_end(rc, &vg_arrays, r);
	vg_hook_leave();
	return rc;
}

/* ---- what the process is told about memory ---- */

VG_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	rc = VG_REAL_CALL(cuMemGetInfo_v2, free_b, total_b);
	if (m == VG_MODE_ACTIVE && rc == CUDA_SUCCESS && free_b && total_b) {
		int dev = vg_current_device(NULL);
		const struct vg_device_info *di = vg_device_info(dev);
		if (di)
			vg_shared_poll(true);
		uint64_t ravail = 0, rlim = 0;
		bool shared = di && vg_shared_region() && vg_region_avail(vg_shared_region(), dev, &ravail, &rlim);
		uint64_t q = di ? atomic_load(&di->limit) : VG_NO_LIMIT;
		if (di && (q != VG_NO_LIMIT || shared)) {
			/* The tighter of the process's quota and the shared region's budget, and never more than the GPU. */
			uint64_t used = vg_quota_used(dev);
			uint64_t total = *total_b, avail = *free_b;
			if (q != VG_NO_LIMIT) {
				uint64_t own = q > used ? q - used : 0;
				if (q < total)
					total = q;
				if (own < avail)
					avail = own;
			}
			if (shared) {
				if (rlim < total)
					total = rlim;
				if (ravail < avail)
					avail = ravail;
			}
			if (avail > total)
				avail = total;
			*total_b = (size_t)total;
			*free_b = (size_t)avail;
		}
	}
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	rc = VG_REAL_CALL(cuDeviceTotalMem_v2, bytes, dev);
	if (m == VG_MODE_ACTIVE && rc == CUDA_SUCCESS && bytes) {
		const struct vg_device_info *di = vg_device_info((int)dev);
		uint64_t ravail, rlim, lim = di ? atomic_load(&di->limit) : VG_NO_LIMIT;  /* `limit set` may change it */
		if (lim < *bytes)
			*bytes = (size_t)lim;
		if (di && vg_shared_region() && vg_region_avail(vg_shared_region(), (int)dev, &ravail, &rlim) &&
		    rlim < *bytes)
			*bytes = (size_t)rlim;
	}
	vg_hook_leave();
	return rc;
}

/* ---- contexts: what the driver frees when a context goes, we uncharge ---- */

static bool vg_in_ctx(const struct vg_alloc *r, void *ctx)
{
	return r->ctx == ctx;
}

/* Take every record bound to ctx out of the context-bound tables. */
static struct vg_alloc *vg_take_ctx(CUcontext ctx)
{
	struct vg_alloc *list = vg_table_remove_if(&vg_ptrs, vg_in_ctx, ctx);
	struct vg_alloc *arr = vg_table_remove_if(&vg_arrays, vg_in_ctx, ctx);
	while (arr) {
		struct vg_alloc *n = arr->next;
		arr->next = list;
		list = arr;
		arr = n;
	}
	return list;
}

static void vg_settle_ctx(struct vg_alloc *list, bool destroyed)
{
	while (list) {
		struct vg_alloc *r = list;
		list = r->next;
		if (destroyed)
			vg_retire(r);
		else
			vg_unremove(r->kind == VG_KIND_ARRAY || r->kind == VG_KIND_MIPMAP ? &vg_arrays : &vg_ptrs, r);
	}
}

static CUresult vg_ctx_destroy(bool v2, CUcontext ctx)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	struct vg_alloc *list = m == VG_MODE_ACTIVE && ctx ? vg_take_ctx(ctx) : NULL;
	rc = v2 ? VG_REAL_CALL(cuCtxDestroy_v2, ctx) : VG_REAL_CALL(cuCtxDestroy, ctx);
	vg_ctx_cache_invalidate();
	vg_settle_ctx(list, rc == CUDA_SUCCESS);
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	return vg_ctx_destroy(false, ctx);
}

VG_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
	return vg_ctx_destroy(true, ctx);
}

/* The primary context of dev, if it exists, without creating it (retain + release keeps its count). */
static CUcontext vg_primary_ctx(CUdevice dev)
{
	unsigned int flags = 0;
	int active = 0;
	CUcontext ctx = NULL;
	if (!vg_real.cuDevicePrimaryCtxGetState || vg_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) ||
	    !active)
		return NULL;
	if (!vg_real.cuDevicePrimaryCtxRetain || vg_real.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
		return NULL;
	if (vg_real.cuDevicePrimaryCtxRelease_v2)
		vg_real.cuDevicePrimaryCtxRelease_v2(dev);
	else if (vg_real.cuDevicePrimaryCtxRelease)
		vg_real.cuDevicePrimaryCtxRelease(dev);
	return ctx;
}

static CUresult vg_primary_reset(bool v2, CUdevice dev)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	CUcontext ctx = m == VG_MODE_ACTIVE ? vg_primary_ctx(dev) : NULL;
	struct vg_alloc *list = ctx ? vg_take_ctx(ctx) : NULL;
	rc = v2 ? VG_REAL_CALL(cuDevicePrimaryCtxReset_v2, dev) : VG_REAL_CALL(cuDevicePrimaryCtxReset, dev);
	vg_ctx_cache_invalidate();
	vg_settle_ctx(list, rc == CUDA_SUCCESS);
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	return vg_primary_reset(false, dev);
}

VG_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	return vg_primary_reset(true, dev);
}

/* Releasing the last reference destroys the primary context and everything in it. */
static CUresult vg_primary_release(bool v2, CUdevice dev)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	CUcontext ctx = m == VG_MODE_ACTIVE ? vg_primary_ctx(dev) : NULL;
	rc = v2 ? VG_REAL_CALL(cuDevicePrimaryCtxRelease_v2, dev) : VG_REAL_CALL(cuDevicePrimaryCtxRelease, dev);
	vg_ctx_cache_invalidate();
	if (rc == CUDA_SUCCESS && ctx) {
		unsigned int flags = 0;
		int active = 1;
		if (vg_real.cuDevicePrimaryCtxGetState &&
		    vg_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active)
			vg_settle_ctx(vg_take_ctx(ctx), true);
	}
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return vg_primary_release(false, dev);
}

VG_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return vg_primary_release(true, dev);
}

/* ---- streams: creation sites, destruction with work still queued (never charged) ---- */

static bool vg_special_stream(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

static void vg_stream_created(CUresult rc, CUstream *ph, int hook)
{
	if (rc != CUDA_SUCCESS || !ph || vg_special_stream(*ph))
		return;
	atomic_fetch_add(&vg_streams_created, 1);
	struct vg_alloc *r = vg_rec_new((uint64_t)(uintptr_t)*ph, 0, -1, NULL, hook, VG_KIND_STREAM);
	if (!r)
		return;
	vg_rec_stamp(r, hook);
	if (vg_table_insert(&vg_streams, r) == -EEXIST) {   /* a handle we missed the destruction of */
		vg_alloc_free(vg_table_remove(&vg_streams, r->key));
		if (vg_table_insert(&vg_streams, r) == 0)
			return;
	} else {
		return;
	}
	vg_alloc_free(r);
}

VG_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	enum vg_mode m = vg_hook_enter();
	CUresult rc = VG_REAL_CALL(cuStreamCreate, phStream, Flags);
	if (m == VG_MODE_ACTIVE)
		vg_stream_created(rc, phStream, VG_HOOK_cuStreamCreate);
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	enum vg_mode m = vg_hook_enter();
	CUresult rc = VG_REAL_CALL(cuStreamCreateWithPriority, phStream, flags, priority);
	if (m == VG_MODE_ACTIVE)
		vg_stream_created(rc, phStream, VG_HOOK_cuStreamCreateWithPriority);
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags,
						  int priority)
{
	enum vg_mode m = vg_hook_enter();
	CUresult rc = VG_REAL_CALL(cuGreenCtxStreamCreate, phStream, greenCtx, flags, priority);
	if (m == VG_MODE_ACTIVE)
		vg_stream_created(rc, phStream, VG_HOOK_cuGreenCtxStreamCreate);
	vg_hook_leave();
	return rc;
}

/* Query a stream without blocking: 1 work queued, 0 idle, -1 capturing (never queried: that would invalidate the
 * capture), -2 unknown. The thread is switched to relaxed capture mode for the calls, so a query made while
 * another thread captures in global mode is not an "unsafe call" that breaks that capture. */
int vg_stream_state(CUstream s)
{
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	bool swapped = vg_real.cuThreadExchangeStreamCaptureMode &&
		       vg_real.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
	int state = -2;
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	if (vg_real.cuStreamIsCapturing && vg_real.cuStreamIsCapturing(s, &st) == CUDA_SUCCESS) {
		if (st != CU_STREAM_CAPTURE_STATUS_NONE) {
			state = -1;
		} else if (vg_real.cuStreamQuery) {
			CUresult q = vg_real.cuStreamQuery(s);
			state = q == CUDA_ERROR_NOT_READY ? 1 : q == CUDA_SUCCESS ? 0 : -2;
		}
	}
	if (swapped)
		vg_real.cuThreadExchangeStreamCaptureMode(&mode);
	return state;
}

/* "func+0x1c (libfoo.so)" for the first application frame of a site, for warnings. Symbolizing reads the
 * modules' symbol tables; it runs only for a warning that passed the rate limit. */
static void vg_site_brief(const struct vg_site *site, char *buf, size_t len)
{
	if (!site || site->nframes == 0) {
		snprintf(buf, len, "an unknown site (VRAMGUARD_BACKTRACE=0?)");
		return;
	}
	struct vg_report_frame f, first;
	struct vg_symbolizer *sym = vg_symbolizer_new();
	for (uint16_t i = 0; i < site->nframes; i++) {
		memset(&f, 0, sizeof(f));
		vg_symbolize(sym, (uint64_t)(uintptr_t)site->frames[i], &f);
		if (i == 0)
			first = f;
		if (!vg_report_frame_is_runtime(&f))
			break;
		if (i + 1 == site->nframes)
			f = first;
	}
	if (sym)
		vg_symbolizer_free(sym);
	const char *mod = strrchr(f.module, '/');
	mod = mod ? mod + 1 : f.module;
	if (f.symbol[0])
		snprintf(buf, len, "%s+0x%llx (%s)", f.symbol, (unsigned long long)f.symbol_offset, mod);
	else if (mod[0])
		snprintf(buf, len, "%s+0x%llx", mod, (unsigned long long)f.module_offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)f.address);
}

static bool vg_event_bump(struct vg_alloc *r, void *arg)
{
	(void)arg;
	r->bytes++;
	return false;
}

static struct vg_rate vg_stream_rate;

/* A stream that was destroyed with work still queued: legal (the work runs on), but usually a missing
 * synchronisation. Recorded with both sites and warned about only once the driver has accepted the destroy. */
static void vg_stream_pending_destroyed(CUstream s, struct vg_site *csite, struct vg_site *dsite, int hook, bool sync)
{
	uint64_t key = (uint64_t)(csite ? csite->id : 0) << 32 | (dsite ? dsite->id : 0);
	struct vg_alloc *gone;
	if (vg_table_update(&vg_stream_events, key, vg_event_bump, NULL, &gone) != 0) {
		struct vg_alloc *ev = vg_rec_new(key, 1, -1, NULL, hook, VG_KIND_STREAM_EVENT);
		if (ev) {
			ev->site = csite;
			ev->aux = (uint64_t)(uintptr_t)dsite;
			ev->flags = sync ? VG_ALLOC_SYNCED : 0;
			if (vg_table_insert(&vg_stream_events, ev) != 0) {
				vg_alloc_free(ev);
				vg_table_update(&vg_stream_events, key, vg_event_bump, NULL, &gone);
			}
		}
	}
	char tail[64], cs[640], ds[640];
	if (!vg_rate_ok(&vg_stream_rate, tail, sizeof(tail)))
		return;
	vg_site_brief(csite, cs, sizeof(cs));
	vg_site_brief(dsite, ds, sizeof(ds));
	if (sync)
		vg_log(VG_LOG_WARN, "waited for stream %p before destroying it: work was still queued (created at %s, "
		       "destroyed at %s; VRAMGUARD_STREAM_CHECK=sync)%s", (void *)s, cs, ds, tail);
	else
		vg_log(VG_LOG_WARN, "stream %p destroyed with work still queued (created at %s, destroyed at %s); the "
		       "work runs on, unsynchronized. Synchronize before destroying, or set VRAMGUARD_STREAM_CHECK=sync%s",
		       (void *)s, cs, ds, tail);
}

static CUresult vg_stream_destroy(bool v2, CUstream s)
{
	CUresult rc;
	enum vg_mode m = vg_hook_enter();
	int hook = v2 ? VG_HOOK_cuStreamDestroy_v2 : VG_HOOK_cuStreamDestroy;
	struct vg_alloc *r = NULL;
	struct vg_site *dsite = NULL;
	bool pending = false, sync = vg_cfg.stream_check == VG_STREAM_SYNC;
	if (m == VG_MODE_ACTIVE && !vg_special_stream(s)) {
		/* Out of the table before the real destroy: the driver hands the handle out again at once. */
		r = vg_table_remove(&vg_streams, (uint64_t)(uintptr_t)s);
		if (vg_cfg.stream_check != VG_STREAM_OFF && vg_stream_state(s) == 1) {
			pending = true;
			dsite = vg_site_capture(hook);
			if (sync && vg_real.cuStreamSynchronize)
				(void)vg_real.cuStreamSynchronize(s);
		}
	}
	rc = v2 ? VG_REAL_CALL(cuStreamDestroy_v2, s) : VG_REAL_CALL(cuStreamDestroy, s);
	if (m == VG_MODE_ACTIVE && rc == CUDA_SUCCESS && !vg_special_stream(s)) {
		atomic_fetch_add(&vg_streams_destroyed, 1);
		if (pending)
			vg_stream_pending_destroyed(s, r ? r->site : NULL, dsite, hook, sync);
	}
	if (r && (rc == CUDA_SUCCESS || vg_table_insert(&vg_streams, r) != 0))
		vg_alloc_free(r);
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	return vg_stream_destroy(false, hStream);
}

VG_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
	return vg_stream_destroy(true, hStream);
}

/* ---- fork ---- */

VG_HIDDEN void vg_wrappers_atfork_prepare(void)
{
	for (size_t i = 0; i < VG_NTABLES; i++)
		vg_table_lock_all(vg_all_tables[i]);
	vg_sites_lock_all();
	vg_alloc_lock();
}

VG_HIDDEN void vg_wrappers_atfork_parent(void)
{
	vg_alloc_unlock();
	vg_sites_unlock_all();
	for (size_t i = VG_NTABLES; i-- > 0;)
		vg_table_unlock_all(vg_all_tables[i]);
}

void vg_wrappers_atfork_child(void)
{
	for (size_t i = 0; i < VG_NTABLES; i++)
		vg_table_reset_child(vg_all_tables[i]);
	vg_alloc_reset_child();                 /* every record free again: the tables held them all */
	vg_sites_reset_child();
	atomic_store(&vg_streams_created, 0);
	atomic_store(&vg_streams_destroyed, 0);
	vg_tid = 0;
}
