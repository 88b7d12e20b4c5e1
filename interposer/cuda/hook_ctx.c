/* Driver initialisation and contexts: what the driver frees when a context goes, we uncharge. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/cuda/hook.h"
#include "interposer/devmem.h"
#include "interposer/reporter.h"

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
	VG_OPEN_EITHER(v2, cuCtxDestroy, _v2, ctx);
	struct vg_alloc *list = ctx ? vg_take_ctx(ctx) : NULL;
	rc = VG_REAL_EITHER(v2, cuCtxDestroy, _v2, ctx);
	vg_settle_ctx(list, rc == CUDA_SUCCESS);
	vg_devmem_kick(false);
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
	VG_OPEN_EITHER(v2, cuDevicePrimaryCtxReset, _v2, dev);
	CUcontext ctx = vg_primary_ctx(dev);
	struct vg_alloc *list = ctx ? vg_take_ctx(ctx) : NULL;
	rc = VG_REAL_EITHER(v2, cuDevicePrimaryCtxReset, _v2, dev);
	vg_settle_ctx(list, rc == CUDA_SUCCESS);
	vg_devmem_kick(false);
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
	VG_OPEN_EITHER(v2, cuDevicePrimaryCtxRelease, _v2, dev);
	CUcontext ctx = vg_primary_ctx(dev);
	rc = VG_REAL_EITHER(v2, cuDevicePrimaryCtxRelease, _v2, dev);
	if (rc == CUDA_SUCCESS && ctx) {
		unsigned int flags = 0;
		int active = 1;
		if (vg_real.cuDevicePrimaryCtxGetState &&
		    vg_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active) {
			vg_settle_ctx(vg_take_ctx(ctx), true);
			vg_devmem_kick(false);
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

/* ---- context and module creation: the driver's own memory grows; measure it ---- */

/* After a context was made: the driver's memory for it is measured soon (vg_devmem_context says who waits). */
static void vg_ctx_created(CUresult rc)
{
	if (rc != CUDA_SUCCESS)
		return;
	vg_devmem_context(vg_cfg.shared_path[0] != '\0');     /* VRAMGUARD_SHARED: a member of a shared region */
}

VG_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	VG_OPEN(cuDevicePrimaryCtxRetain, pctx, dev);
	rc = VG_REAL_CALL(cuDevicePrimaryCtxRetain, pctx, dev);
	vg_ctx_created(rc);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	VG_OPEN(cuCtxCreate_v2, pctx, flags, dev);
	rc = VG_REAL_CALL(cuCtxCreate_v2, pctx, flags, dev);
	vg_ctx_created(rc);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned int flags,
					  CUdevice dev)
{
	VG_OPEN(cuCtxCreate_v3, pctx, params, n, flags, dev);
	rc = VG_REAL_CALL(cuCtxCreate_v3, pctx, params, n, flags, dev);
	vg_ctx_created(rc);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
	VG_OPEN(cuCtxCreate_v4, pctx, params, flags, dev);
	rc = VG_REAL_CALL(cuCtxCreate_v4, pctx, params, flags, dev);
	vg_ctx_created(rc);
out:
	vg_hook_leave();
	return rc;
}

/* Module images, and their kernels as they load: measured by the next round of the sampler, started now. */
#define VG_MODULE_HOOK(name, params, ...)                                                                    \
	VG_EXPORT CUresult CUDAAPI name params                                                               \
	{                                                                                                    \
		VG_OPEN(name, __VA_ARGS__);                                                                  \
		rc = VG_REAL_CALL(name, __VA_ARGS__);                                                        \
		if (rc == CUDA_SUCCESS)                                                                      \
			vg_devmem_kick(false);                                                               \
	out:                                                                                                 \
		vg_hook_leave();                                                                             \
		return rc;                                                                                   \
	}

VG_MODULE_HOOK(cuModuleLoad, (CUmodule *m, const char *fname), m, fname)
VG_MODULE_HOOK(cuModuleLoadData, (CUmodule *m, const void *image), m, image)
VG_MODULE_HOOK(cuModuleLoadDataEx, (CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v), m,
	       image, n, o, v)
VG_MODULE_HOOK(cuModuleLoadFatBinary, (CUmodule *m, const void *fatCubin), m, fatCubin)
VG_MODULE_HOOK(cuLibraryLoadData, (CUlibrary *l, const void *code, CUjit_option *jo, void **jv, unsigned int nj,
				   CUlibraryOption *lo, void **lv, unsigned int nl), l, code, jo, jv, nj, lo, lv, nl)
VG_MODULE_HOOK(cuLibraryLoadFromFile, (CUlibrary *l, const char *file, CUjit_option *jo, void **jv, unsigned int nj,
				       CUlibraryOption *lo, void **lv, unsigned int nl), l, file, jo, jv, nj, lo, lv, nl)
