/* Driver initialisation and contexts: what the driver frees when a context goes, we uncharge. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/charge.h"

/* ---- init ---- */

VG_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
	VG_OPEN(cuInit, Flags);
	rc = VG_REAL_CALL(cuInit, Flags);
	if (rc == CUDA_SUCCESS)
		vg_reporter_arm_exit();
out:
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
	VG_OPEN_AS(v2 ? VG_HOOK_cuCtxDestroy_v2 : VG_HOOK_cuCtxDestroy,
		   v2 ? VG_REAL_CALL(cuCtxDestroy_v2, ctx) : VG_REAL_CALL(cuCtxDestroy, ctx));
	struct vg_alloc *list = ctx ? vg_take_ctx(ctx) : NULL;
	rc = v2 ? VG_REAL_CALL(cuCtxDestroy_v2, ctx) : VG_REAL_CALL(cuCtxDestroy, ctx);
	vg_ctx_cache_invalidate();
	vg_settle_ctx(list, rc == CUDA_SUCCESS);
out:
	vg_ctx_cache_invalidate();
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
	VG_OPEN_AS(v2 ? VG_HOOK_cuDevicePrimaryCtxReset_v2 : VG_HOOK_cuDevicePrimaryCtxReset,
		   v2 ? VG_REAL_CALL(cuDevicePrimaryCtxReset_v2, dev) : VG_REAL_CALL(cuDevicePrimaryCtxReset, dev));
	CUcontext ctx = vg_primary_ctx(dev);
	struct vg_alloc *list = ctx ? vg_take_ctx(ctx) : NULL;
	rc = v2 ? VG_REAL_CALL(cuDevicePrimaryCtxReset_v2, dev) : VG_REAL_CALL(cuDevicePrimaryCtxReset, dev);
	vg_ctx_cache_invalidate();
	vg_settle_ctx(list, rc == CUDA_SUCCESS);
out:
	vg_ctx_cache_invalidate();
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
	VG_OPEN_AS(v2 ? VG_HOOK_cuDevicePrimaryCtxRelease_v2 : VG_HOOK_cuDevicePrimaryCtxRelease,
		   v2 ? VG_REAL_CALL(cuDevicePrimaryCtxRelease_v2, dev) : VG_REAL_CALL(cuDevicePrimaryCtxRelease, dev));
	CUcontext ctx = vg_primary_ctx(dev);
	rc = v2 ? VG_REAL_CALL(cuDevicePrimaryCtxRelease_v2, dev) : VG_REAL_CALL(cuDevicePrimaryCtxRelease, dev);
	vg_ctx_cache_invalidate();
	if (rc == CUDA_SUCCESS && ctx) {
		unsigned int flags = 0;
		int active = 1;
		if (vg_real.cuDevicePrimaryCtxGetState &&
		    vg_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active) {
			vg_settle_ctx(vg_take_ctx(ctx), true);
				}
	}
out:
	vg_ctx_cache_invalidate();
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
