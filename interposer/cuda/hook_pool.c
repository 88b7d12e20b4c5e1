/* Stream-ordered allocation (cuMemAllocAsync, pools). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/cuda/hook.h"
#include "interposer/device.h"
#include "interposer/devmem.h"

/* ---- stream-ordered allocation ---- */

static bool vg_stream_capturing(CUstream s, bool ptsz)
{
	if (VG_LIKELY(!atomic_load_explicit(&vg_capture_begun, memory_order_relaxed)))
		return false;   /* no capture ever began in this process (hook_stream.c) */
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	PFN_cuStreamIsCapturing_v10000 f = ptsz ? vg_real.cuStreamIsCapturing_ptsz : vg_real.cuStreamIsCapturing;
	if (f && f(s, &st) == CUDA_SUCCESS)
		return st != CU_STREAM_CAPTURE_STATUS_NONE;
	return false;
}

/* The device (and context) an async allocation on stream s lands on. NULL, legacy and per-thread handles mean
 * the current context. A stream's context and device never change, so the thread keeps the last stream's: two
 * driver calls saved per allocation, until any stream is created (the handle may then be reused). */
static __thread struct vg_stream_memo {
	CUstream s;
	CUcontext ctx;
	int dev;
	unsigned gen;
} vg_stream_memo __attribute__((tls_model("initial-exec")));

/* What the driver says of s: its context, and its device (by the stream, else by the context). */
static int vg_stream_lookup(CUstream s, CUcontext *ctx)
{
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

static int vg_stream_device(CUstream s, CUcontext *ctx)
{
	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return vg_current_device(ctx);
	unsigned gen = atomic_load_explicit(&vg_stream_gen, memory_order_acquire);
	struct vg_stream_memo *m = &vg_stream_memo;
	if (VG_LIKELY(m->s == s && m->gen == gen)) {
		*ctx = m->ctx;
		return m->dev;
	}
	int dev = vg_stream_lookup(s, ctx);
	if (dev >= 0)
		*m = (struct vg_stream_memo){ s, *ctx, dev, gen };
	return dev;
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

/* The pool an allocation draws from: the given one, or the device's current pool. NULL: charge logical bytes. */
static struct vg_pool *vg_pool_of(CUmemoryPool pool, int dev)
{
	if (!vg_count_device())
		return NULL;
	struct vg_pool *p = pool ? vg_pool_register(pool, dev) : vg_pool_current(dev);
	return p && p->dev >= 0 ? p : NULL;     /* a host pool: its allocations by their size */
}

/* The pool grew past the quota between our charge and the driver's figure (fragmentation, or growth in bigger steps
 * than we charged): give the allocation back, let the stream reach the free, trim what the pool does not use and
 * refuse, as a full GPU would have. */
static CUresult vg_pool_undo(struct vg_pool *p, int dev, int hook, bool ptsz, CUdeviceptr ptr, size_t bytes,
			     CUstream s)
{
	(void)VG_REAL_EITHER(ptsz, cuMemFreeAsync, _ptsz, ptr, s);
	if (vg_real.cuStreamSynchronize)
		(void)vg_real.cuStreamSynchronize(s);
	atomic_fetch_sub(&p->live, bytes);
	vg_devmem_reclaim(dev);
	vg_refuse(dev, bytes, vg_quota_used(dev), hook, -ENOSPC);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Device counting (the default): the pool's reserve is charged, so an allocation the pool serves from memory it
 * holds costs nothing and one that makes it grow is charged the growth (vg_pool_grow) and settled with the driver's
 * figure after. Allocations counting: logical bytes charged at the allocation and released at cuMemFreeAsync.
 * During stream capture nothing is allocated yet (the graph allocates at launch; graph memory is counted then), so
 * nothing is charged. */
static CUresult vg_alloc_async(int hook, bool ptsz, CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
	VG_OPEN_AS(hook, vg_async_real(hook, dptr, bytes, pool, s));
	if (vg_stream_capturing(s, ptsz)) {
		rc = vg_async_real(hook, dptr, bytes, pool, s);
		goto out;
	}
	CUcontext ctx = NULL;
	int dev = vg_stream_device(s, &ctx);
	struct vg_pool *p = vg_pool_of(pool, dev);
	if (!p) {
		rc = vg_reserve(dev, bytes, hook);
		if (rc != CUDA_SUCCESS)
			goto out;
		rc = vg_async_real(hook, dptr, bytes, pool, s);
		vg_commit(rc, &vg_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, bytes, dev, ctx, hook, VG_KIND_ASYNC);
		goto out;
	}
	uint64_t live = atomic_fetch_add_explicit(&p->live, bytes, memory_order_relaxed) + bytes;
	if (VG_LIKELY(live <= atomic_load_explicit(&p->charged, memory_order_relaxed))) {
		rc = vg_async_real(hook, dptr, bytes, pool, s);
	} else {
		rc = vg_pool_grow(p, dev, live, hook);
		if (rc != CUDA_SUCCESS) {
			atomic_fetch_sub(&p->live, bytes);
			goto out;
		}
		rc = vg_async_real(hook, dptr, bytes, pool, s);
		if (!vg_pool_grown(p) && rc == CUDA_SUCCESS) {
			rc = vg_pool_undo(p, dev, hook, ptsz, *dptr, bytes, s);
			goto out;
		}
	}
	if (rc == CUDA_SUCCESS)
		vg_record_pooled(&vg_ptrs, *dptr, bytes, dev, ctx, hook, VG_KIND_ASYNC, p);
	else
		atomic_fetch_sub(&p->live, bytes);
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
	VG_OPEN_EITHER(ptsz, cuMemFreeAsync, _ptsz, dptr, s);
	struct vg_alloc *r = dptr ? vg_table_remove(&vg_ptrs, dptr) : NULL;
	if (r)
		vg_hook_inflight(r->dev);      /* the driver frees before we uncharge: under way until then */
	rc = VG_REAL_EITHER(ptsz, cuMemFreeAsync, _ptsz, dptr, s);
	vg_free_end(rc, &vg_ptrs, r);
out:
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

/* ---- pools and graph memory: what changes a pool's or the graphs' reserve outside an allocation ---- */

VG_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	VG_OPEN(cuMemPoolCreate, pool, props);
	rc = VG_REAL_CALL(cuMemPoolCreate, pool, props);
	if (rc == CUDA_SUCCESS && pool && props && vg_count_device())
		vg_pool_register(*pool, props->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? props->location.id : -1);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
	VG_OPEN(cuMemPoolDestroy, pool);
	rc = VG_REAL_CALL(cuMemPoolDestroy, pool);
	if (rc == CUDA_SUCCESS)
		vg_pool_forget(pool);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	VG_OPEN(cuMemPoolTrimTo, pool, minBytesToKeep);
	rc = VG_REAL_CALL(cuMemPoolTrimTo, pool, minBytesToKeep);
	if (rc == CUDA_SUCCESS)
		vg_pool_refresh(pool);
out:
	vg_hook_leave();
	return rc;
}

/* A lower release threshold gives memory back at the next synchronization; the sampler sees it then. Nothing is
 * released by the call itself, but a pool seen for the first time is registered here. */
VG_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	VG_OPEN(cuMemPoolSetAttribute, pool, attr, value);
	rc = VG_REAL_CALL(cuMemPoolSetAttribute, pool, attr, value);
	if (rc == CUDA_SUCCESS)
		vg_pool_refresh(pool);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	VG_OPEN(cuDeviceSetMemPool, dev, pool);
	rc = VG_REAL_CALL(cuDeviceSetMemPool, dev, pool);
	if (rc == CUDA_SUCCESS && vg_count_device())
		vg_pool_set_current((int)dev, pool);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice dev)
{
	VG_OPEN(cuDeviceGraphMemTrim, dev);
	rc = VG_REAL_CALL(cuDeviceGraphMemTrim, dev);
	if (rc == CUDA_SUCCESS)
		vg_devmem_refresh((int)dev);
out:
	vg_hook_leave();
	return rc;
}
