/* CUDA arrays and mipmapped arrays. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/cuda/hook.h"
#include "interposer/device.h"

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
#define VG_ARRAY_REAL()                                                                                      \
	(hook == VG_HOOK_cuArrayCreate_v2     ? VG_REAL_CALL(cuArrayCreate_v2, pArr, desc)                \
	 : hook == VG_HOOK_cuArray3DCreate_v2 ? VG_REAL_CALL(cuArray3DCreate_v2, pArr, desc)              \
					      : VG_REAL_CALL(cuMipmappedArrayCreate, pMip, desc, levels))
	VG_OPEN_AS(hook, VG_ARRAY_REAL());
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
	VG_OPEN(cuArrayDestroy, hArray);
	struct vg_alloc *r = vg_table_remove(&vg_arrays, (uint64_t)(uintptr_t)hArray);
	if (r)
		vg_hook_inflight(r->dev);
	rc = VG_REAL_CALL(cuArrayDestroy, hArray);
	vg_free_end(rc, &vg_arrays, r);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	VG_OPEN(cuMipmappedArrayDestroy, hMipmappedArray);
	struct vg_alloc *r = vg_table_remove(&vg_arrays, (uint64_t)(uintptr_t)hMipmappedArray);
	if (r)
		vg_hook_inflight(r->dev);
	rc = VG_REAL_CALL(cuMipmappedArrayDestroy, hMipmappedArray);
	vg_free_end(rc, &vg_arrays, r);
out:
	vg_hook_leave();
	return rc;
}
