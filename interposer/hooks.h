/* The one list of hooks. Every wrapped driver entry point is one row: its exact exported ABI name and the
 * cudaTypedefs.h type it must have. The real-function table, the export list, the pointer-identity routing of
 * dlsym / cuGetProcAddress and the compile-time type checks all expand from these rows. */
#ifndef VG_HOOKS_H
#define VG_HOOKS_H

#define __CUDA_API_VERSION_INTERNAL 1   /* declare every exact ABI name (v1, _v2, _ptsz) with its true type */
#include <cuda.h>
#include <cudaTypedefs.h>

/* X(exact exported name, PFN typedef) -- wrapped: we export it and route lookups that land on it to our wrapper */
#define VG_HOOKS(X) \
	X(cuInit,                       PFN_cuInit_v2000) \
	X(cuGetProcAddress,             PFN_cuGetProcAddress_v11030) \
	X(cuGetProcAddress_v2,          PFN_cuGetProcAddress_v12000) \
	X(cuMemAlloc_v2,                PFN_cuMemAlloc_v3020) \
	X(cuMemAllocPitch_v2,           PFN_cuMemAllocPitch_v3020) \
	X(cuMemFree_v2,                 PFN_cuMemFree_v3020) \
	X(cuMemAllocManaged,            PFN_cuMemAllocManaged_v6000) \
	X(cuMemAllocAsync,              PFN_cuMemAllocAsync_v11020) \
	X(cuMemAllocAsync_ptsz,         PFN_cuMemAllocAsync_v11020_ptsz) \
	X(cuMemAllocFromPoolAsync,      PFN_cuMemAllocFromPoolAsync_v11020) \
	X(cuMemAllocFromPoolAsync_ptsz, PFN_cuMemAllocFromPoolAsync_v11020_ptsz) \
	X(cuMemFreeAsync,               PFN_cuMemFreeAsync_v11020) \
	X(cuMemFreeAsync_ptsz,          PFN_cuMemFreeAsync_v11020_ptsz) \
	X(cuMemCreate,                  PFN_cuMemCreate_v10020) \
	X(cuMemRelease,                 PFN_cuMemRelease_v10020) \
	X(cuMemRetainAllocationHandle,  PFN_cuMemRetainAllocationHandle_v11000) \
	X(cuMemMap,                     PFN_cuMemMap_v10020) \
	X(cuMemUnmap,                   PFN_cuMemUnmap_v10020) \
	X(cuArrayCreate_v2,             PFN_cuArrayCreate_v3020) \
	X(cuArray3DCreate_v2,           PFN_cuArray3DCreate_v3020) \
	X(cuMipmappedArrayCreate,       PFN_cuMipmappedArrayCreate_v5000) \
	X(cuArrayDestroy,               PFN_cuArrayDestroy_v2000) \
	X(cuMipmappedArrayDestroy,      PFN_cuMipmappedArrayDestroy_v5000) \
	X(cuMemGetInfo_v2,              PFN_cuMemGetInfo_v3020) \
	X(cuDeviceTotalMem_v2,          PFN_cuDeviceTotalMem_v3020) \
	X(cuCtxDestroy,                 PFN_cuCtxDestroy_v2000) \
	X(cuCtxDestroy_v2,              PFN_cuCtxDestroy_v4000) \
	X(cuDevicePrimaryCtxRelease,    PFN_cuDevicePrimaryCtxRelease_v7000) \
	X(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000) \
	X(cuDevicePrimaryCtxReset,      PFN_cuDevicePrimaryCtxReset_v7000) \
	X(cuDevicePrimaryCtxReset_v2,   PFN_cuDevicePrimaryCtxReset_v11000) \
	X(cuStreamCreate,               PFN_cuStreamCreate_v2000) \
	X(cuStreamCreateWithPriority,   PFN_cuStreamCreateWithPriority_v5050) \
	X(cuGreenCtxStreamCreate,       PFN_cuGreenCtxStreamCreate_v12050) \
	X(cuStreamDestroy,              PFN_cuStreamDestroy_v2000) \
	X(cuStreamDestroy_v2,           PFN_cuStreamDestroy_v4000)

/* X(exact name, PFN typedef) -- called by us, never wrapped. Missing ones (older drivers) stay NULL. */
#define VG_REALS(X) \
	X(cuCtxGetCurrent,              PFN_cuCtxGetCurrent_v4000) \
	X(cuCtxGetDevice,               PFN_cuCtxGetDevice_v2000) \
	X(cuCtxGetDevice_v2,            PFN_cuCtxGetDevice_v13000) \
	X(cuStreamGetCtx,               PFN_cuStreamGetCtx_v9020) \
	X(cuStreamGetDevice,            PFN_cuStreamGetDevice_v12080) \
	X(cuStreamIsCapturing,          PFN_cuStreamIsCapturing_v10000) \
	X(cuStreamIsCapturing_ptsz,     PFN_cuStreamIsCapturing_v10000_ptsz) \
	X(cuDeviceGetUuid_v2,           PFN_cuDeviceGetUuid_v11040) \
	X(cuDeviceGetCount,             PFN_cuDeviceGetCount_v2000) \
	X(cuDevicePrimaryCtxGetState,   PFN_cuDevicePrimaryCtxGetState_v7000) \
	X(cuDevicePrimaryCtxRetain,     PFN_cuDevicePrimaryCtxRetain_v7000) \
	X(cuDriverGetVersion,           PFN_cuDriverGetVersion_v2020) \
	X(cuStreamQuery,                PFN_cuStreamQuery_v2000) \
	X(cuStreamSynchronize,          PFN_cuStreamSynchronize_v2000) \
	X(cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010)

/* Hook ids, for reports and messages: VG_HOOK_cuMemAlloc_v2, ... */
enum vg_hook_id {
#define VG_X_ID(name, pfn) VG_HOOK_##name,
	VG_HOOKS(VG_X_ID)
#undef VG_X_ID
	VG_HOOK_COUNT
};

/* The real driver functions: the only way vramguard calls the driver. */
struct vg_real_table {
#define VG_X_FIELD(name, pfn) pfn name;
	VG_HOOKS(VG_X_FIELD)
	VG_REALS(VG_X_FIELD)
#undef VG_X_FIELD
};

extern struct vg_real_table vg_real;
extern const char *const vg_hook_names[VG_HOOK_COUNT];

#endif
