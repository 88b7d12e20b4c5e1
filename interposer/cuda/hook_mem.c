/* Linear device memory (cuMemAlloc, pitched, managed) and what the process is told about memory (cuMemGetInfo,
 * cuDeviceTotalMem). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/cuda/hook.h"
#include "interposer/device.h"
#include "interposer/devmem.h"

/* ---- linear device memory ---- */

VG_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	VG_OPEN(cuMemAlloc_v2, dptr, bytesize);
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
	VG_OPEN(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
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
	VG_OPEN(cuMemAllocManaged, dptr, bytesize, flags);
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
	VG_OPEN(cuMemFree_v2, dptr);
	if (dptr == 0) {                /* cuMemFree_v2(0) is legal: cudart calls it at init */
		rc = VG_REAL_CALL(cuMemFree_v2, dptr);
		goto out;
	}
	struct vg_alloc *r = vg_table_remove(&vg_ptrs, dptr);
	if (r)
		vg_hook_inflight(r->dev);      /* the driver frees before we uncharge: under way until then */
	rc = VG_REAL_CALL(cuMemFree_v2, dptr);
	vg_free_end(rc, &vg_ptrs, r);
out:
	vg_hook_leave();
	return rc;
}

/* ---- what the process is told about memory ---- */

VG_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
	VG_OPEN(cuMemGetInfo_v2, free_b, total_b);
	rc = VG_REAL_CALL(cuMemGetInfo_v2, free_b, total_b);
	if (rc == CUDA_SUCCESS && free_b && total_b) {
		int dev = vg_current_device(NULL);
		const struct vg_device_info *di = vg_device_info(dev);
		if (di) {
			vg_device_poll(true);
			vg_devmem_settled(dev);         /* the context's memory measured once, before the first answer */
			vg_devmem_refresh(dev);         /* pools may have given memory back at a synchronization */
		}
		uint64_t ravail = 0, rlim = 0;
		bool shared = di && vg_device_budget(dev, &ravail, &rlim);
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
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	VG_OPEN(cuDeviceTotalMem_v2, bytes, dev);
	rc = VG_REAL_CALL(cuDeviceTotalMem_v2, bytes, dev);
	if (rc == CUDA_SUCCESS && bytes) {
		const struct vg_device_info *di = vg_device_info((int)dev);
		uint64_t ravail, rlim, lim = di ? atomic_load(&di->limit) : VG_NO_LIMIT;  /* `limit set` may change it */
		if (lim < *bytes)
			*bytes = (size_t)lim;
		if (di && vg_device_budget((int)dev, &ravail, &rlim) && rlim < *bytes)
			*bytes = (size_t)rlim;
	}
out:
	vg_hook_leave();
	return rc;
}
