/* Stream-ordered allocation (cuMemAllocAsync, pools). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/charge.h"

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
	VG_OPEN_AS(hook, vg_async_real(hook, dptr, bytes, pool, s));
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
	VG_OPEN_AS(ptsz ? VG_HOOK_cuMemFreeAsync_ptsz : VG_HOOK_cuMemFreeAsync,
		   ptsz ? VG_REAL_CALL(cuMemFreeAsync_ptsz, dptr, s) : VG_REAL_CALL(cuMemFreeAsync, dptr, s));
	struct vg_alloc *r = dptr ? vg_table_remove(&vg_ptrs, dptr) : NULL;
	rc = ptsz ? VG_REAL_CALL(cuMemFreeAsync_ptsz, dptr, s) : VG_REAL_CALL(cuMemFreeAsync, dptr, s);
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
