/* The one list of hooks. Every wrapped driver entry point is one row: its exact exported ABI name and the
 * cudaTypedefs.h type it must have. The real-function table, the export list, the pointer-identity routing of
 * dlsym / cuGetProcAddress and the compile-time type checks all expand from these rows. */
#ifndef VG_HOOKS_H
#define VG_HOOKS_H

#define __CUDA_API_VERSION_INTERNAL 1   /* declare every exact ABI name (v1, _v2, _ptsz) with its true type */
#include <cuda.h>
#include <cudaTypedefs.h>

/* X(exact exported name, PFN typedef, policy, what it charges) -- wrapped: we export it and route lookups that land
 * on it to our wrapper. The policy says what the hook does when vramguard is not active in the call (a nested call,
 * another copy of vramguard owns the process, no driver: always the driver) and the configuration is invalid:
 *   VG_CLOSED  the entry point gives the process memory (or starts CUDA): it returns CUDA_ERROR_NOT_PERMITTED
 *   VG_PASS    it gives nothing: straight to the driver
 *   VG_ROUTE   an entry-point lookup: the driver's answer, with our wrappers substituted
 * The hook's opening (cuda/hook.h, VG_OPEN) is generated from the policy; the charge text is docs/hooks.md. */
enum vg_hook_policy { VG_PASS = 0, VG_CLOSED, VG_ROUTE };
#define VG_HOOKS(X) \
	X(cuInit,                       PFN_cuInit_v2000, VG_CLOSED, "nothing; fails closed on invalid configuration (every later call fails with it)") \
	X(cuGetProcAddress,             PFN_cuGetProcAddress_v11030, VG_ROUTE, "nothing; hands back our wrapper for every entry point in this list") \
	X(cuGetProcAddress_v2,          PFN_cuGetProcAddress_v12000, VG_ROUTE, "nothing; as cuGetProcAddress") \
	X(cuMemAlloc_v2,                PFN_cuMemAlloc_v3020, VG_CLOSED, "bytesize") \
	X(cuMemAllocPitch_v2,           PFN_cuMemAllocPitch_v3020, VG_CLOSED, "pitch x height (the row width rounded to 512 reserved first, settled after)") \
	X(cuMemFree_v2,                 PFN_cuMemFree_v3020, VG_PASS, "releases the allocation") \
	X(cuMemAllocManaged,            PFN_cuMemAllocManaged_v6000, VG_CLOSED, "bytesize (VRAMGUARD_MANAGED=ignore: nothing)") \
	X(cuMemAllocAsync,              PFN_cuMemAllocAsync_v11020, VG_CLOSED, "device mode: growth of the pool's reserved memory; allocations mode: bytesize") \
	X(cuMemAllocAsync_ptsz,         PFN_cuMemAllocAsync_v11020_ptsz, VG_CLOSED, "as cuMemAllocAsync") \
	X(cuMemAllocFromPoolAsync,      PFN_cuMemAllocFromPoolAsync_v11020, VG_CLOSED, "as cuMemAllocAsync, for the pool given") \
	X(cuMemAllocFromPoolAsync_ptsz, PFN_cuMemAllocFromPoolAsync_v11020_ptsz, VG_CLOSED, "as cuMemAllocAsync, for the pool given") \
	X(cuMemFreeAsync,               PFN_cuMemFreeAsync_v11020, VG_PASS, "device mode: nothing (the memory stays in the pool); allocations mode: releases it") \
	X(cuMemFreeAsync_ptsz,          PFN_cuMemFreeAsync_v11020_ptsz, VG_PASS, "as cuMemFreeAsync") \
	X(cuMemPoolCreate,              PFN_cuMemPoolCreate_v11020, VG_PASS, "nothing; device mode: the pool is registered, its reserve counted as it grows") \
	X(cuMemPoolDestroy,             PFN_cuMemPoolDestroy_v11020, VG_PASS, "releases the pool's reserve") \
	X(cuMemPoolTrimTo,              PFN_cuMemPoolTrimTo_v11020, VG_PASS, "device mode: settles the pool's charge with its reserve") \
	X(cuMemPoolSetAttribute,        PFN_cuMemPoolSetAttribute_v11020, VG_PASS, "device mode: settles the pool's charge with its reserve") \
	X(cuDeviceSetMemPool,           PFN_cuDeviceSetMemPool_v11020, VG_PASS, "nothing; device mode: cuMemAllocAsync on that device is counted by this pool") \
	X(cuDeviceGraphMemTrim,         PFN_cuDeviceGraphMemTrim_v11040, VG_PASS, "device mode: settles the graph memory charge with the device's reservation") \
	X(cuMemCreate,                  PFN_cuMemCreate_v10020, VG_CLOSED, "size, for device memory (host and host-NUMA handles: nothing)") \
	X(cuMemRelease,                 PFN_cuMemRelease_v10020, VG_PASS, "releases the handle's size once it has no references and no mappings") \
	X(cuMemRetainAllocationHandle,  PFN_cuMemRetainAllocationHandle_v11000, VG_PASS, "nothing (a reference)") \
	X(cuMemMap,                     PFN_cuMemMap_v10020, VG_PASS, "nothing (a mapping keeps the handle's memory charged)") \
	X(cuMemUnmap,                   PFN_cuMemUnmap_v10020, VG_PASS, "releases as cuMemRelease once the last reference and mapping are gone") \
	X(cuArrayCreate_v2,             PFN_cuArrayCreate_v3020, VG_CLOSED, "an estimate from the descriptor (format x extent)") \
	X(cuArray3DCreate_v2,           PFN_cuArray3DCreate_v3020, VG_CLOSED, "an estimate from the descriptor; sparse and deferred-mapping arrays: nothing") \
	X(cuMipmappedArrayCreate,       PFN_cuMipmappedArrayCreate_v5000, VG_CLOSED, "an estimate over every level") \
	X(cuArrayDestroy,               PFN_cuArrayDestroy_v2000, VG_PASS, "releases the array") \
	X(cuMipmappedArrayDestroy,      PFN_cuMipmappedArrayDestroy_v5000, VG_PASS, "releases the array") \
	X(cuMemGetInfo_v2,              PFN_cuMemGetInfo_v3020, VG_PASS, "nothing; reports the tighter of quota and shared budget") \
	X(cuDeviceTotalMem_v2,          PFN_cuDeviceTotalMem_v3020, VG_PASS, "nothing; reports the quota as the total") \
	X(cuCtxDestroy,                 PFN_cuCtxDestroy_v2000, VG_PASS, "releases everything the context held") \
	X(cuCtxDestroy_v2,              PFN_cuCtxDestroy_v4000, VG_PASS, "releases everything the context held") \
	X(cuDevicePrimaryCtxRelease,    PFN_cuDevicePrimaryCtxRelease_v7000, VG_PASS, "releases everything the primary context held when it goes") \
	X(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000, VG_PASS, "as cuDevicePrimaryCtxRelease") \
	X(cuDevicePrimaryCtxReset,      PFN_cuDevicePrimaryCtxReset_v7000, VG_PASS, "releases everything the primary context held") \
	X(cuDevicePrimaryCtxReset_v2,   PFN_cuDevicePrimaryCtxReset_v11000, VG_PASS, "as cuDevicePrimaryCtxReset") \
	X(cuDevicePrimaryCtxRetain,     PFN_cuDevicePrimaryCtxRetain_v7000, VG_PASS, "nothing; device mode: the driver's memory for the new context is measured a few ms later (waited for by the first cuMemGetInfo or allocation within 1 GiB of the quota; in a shared region, by the context)") \
	X(cuCtxCreate_v2,               PFN_cuCtxCreate_v3020, VG_PASS, "as cuDevicePrimaryCtxRetain") \
	X(cuCtxCreate_v3,               PFN_cuCtxCreate_v11040, VG_PASS, "as cuDevicePrimaryCtxRetain") \
	X(cuCtxCreate_v4,               PFN_cuCtxCreate_v12050, VG_PASS, "as cuDevicePrimaryCtxRetain") \
	X(cuModuleLoad,                 PFN_cuModuleLoad_v2000, VG_PASS, "nothing; device mode: the module's memory is measured soon after") \
	X(cuModuleLoadData,             PFN_cuModuleLoadData_v2000, VG_PASS, "as cuModuleLoad") \
	X(cuModuleLoadDataEx,           PFN_cuModuleLoadDataEx_v2010, VG_PASS, "as cuModuleLoad") \
	X(cuModuleLoadFatBinary,        PFN_cuModuleLoadFatBinary_v2000, VG_PASS, "as cuModuleLoad") \
	X(cuLibraryLoadData,            PFN_cuLibraryLoadData_v12000, VG_PASS, "as cuModuleLoad") \
	X(cuLibraryLoadFromFile,        PFN_cuLibraryLoadFromFile_v12000, VG_PASS, "as cuModuleLoad") \
	X(cuStreamCreate,               PFN_cuStreamCreate_v2000, VG_PASS, "nothing; records the creation site") \
	X(cuStreamCreateWithPriority,   PFN_cuStreamCreateWithPriority_v5050, VG_PASS, "nothing; records the creation site") \
	X(cuGreenCtxStreamCreate,       PFN_cuGreenCtxStreamCreate_v12050, VG_PASS, "nothing; records the creation site") \
	X(cuStreamDestroy,              PFN_cuStreamDestroy_v2000, VG_PASS, "nothing; checks for queued work") \
	X(cuStreamDestroy_v2,           PFN_cuStreamDestroy_v4000, VG_PASS, "nothing; checks for queued work") \
	X(cuStreamBeginCapture,         PFN_cuStreamBeginCapture_v10000, VG_PASS, "nothing; from the first capture on, a stream-ordered allocation asks whether its stream is capturing") \
	X(cuStreamBeginCapture_ptsz,    PFN_cuStreamBeginCapture_v10000_ptsz, VG_PASS, "as cuStreamBeginCapture") \
	X(cuStreamBeginCapture_v2,      PFN_cuStreamBeginCapture_v10010, VG_PASS, "as cuStreamBeginCapture") \
	X(cuStreamBeginCapture_v2_ptsz, PFN_cuStreamBeginCapture_v10010_ptsz, VG_PASS, "as cuStreamBeginCapture") \
	X(cuStreamBeginCaptureToGraph,  PFN_cuStreamBeginCaptureToGraph_v12030, VG_PASS, "as cuStreamBeginCapture") \
	X(cuStreamBeginCaptureToGraph_ptsz, PFN_cuStreamBeginCaptureToGraph_v12030_ptsz, VG_PASS, "as cuStreamBeginCapture") \
	X(cuLaunchKernel,               PFN_cuLaunchKernel_v4000, VG_PASS, "nothing; with a compute limit, waits while the process is ahead of its share of the GPU's time (docs/compute.md), and measures the stream's activity") \
	X(cuLaunchKernel_ptsz,          PFN_cuLaunchKernel_v7000_ptsz, VG_PASS, "as cuLaunchKernel") \
	X(cuLaunchKernelEx,             PFN_cuLaunchKernelEx_v11060, VG_PASS, "as cuLaunchKernel") \
	X(cuLaunchKernelEx_ptsz,        PFN_cuLaunchKernelEx_v11060_ptsz, VG_PASS, "as cuLaunchKernel") \
	X(cuLaunchCooperativeKernel,    PFN_cuLaunchCooperativeKernel_v9000, VG_PASS, "as cuLaunchKernel") \
	X(cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz, VG_PASS, "as cuLaunchKernel") \
	X(cuGraphLaunch,                PFN_cuGraphLaunch_v10000, VG_PASS, "as cuLaunchKernel, for the whole graph") \
	X(cuGraphLaunch_ptsz,           PFN_cuGraphLaunch_v10000_ptsz, VG_PASS, "as cuGraphLaunch") \
	X(cuCtxSynchronize,             PFN_cuCtxSynchronize_v2000, VG_PASS, "nothing; with a compute limit, the context's streams are idle once it returns") \
	X(cuCtxSynchronize_v2,          PFN_cuCtxSynchronize_v13000, VG_PASS, "as cuCtxSynchronize") \
	X(cuStreamSynchronize,          PFN_cuStreamSynchronize_v2000, VG_PASS, "nothing; with a compute limit, the stream is idle once it returns") \
	X(cuStreamSynchronize_ptsz,     PFN_cuStreamSynchronize_v7000_ptsz, VG_PASS, "as cuStreamSynchronize") \
	X(cuStreamWaitEvent,            PFN_cuStreamWaitEvent_v3020, VG_PASS, "nothing; with a compute limit, the stream's later work is not charged while it waits for an NCCL collective") \
	X(cuStreamWaitEvent_ptsz,       PFN_cuStreamWaitEvent_v7000_ptsz, VG_PASS, "as cuStreamWaitEvent")

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
	X(cuDriverGetVersion,           PFN_cuDriverGetVersion_v2020) \
	X(cuStreamQuery,                PFN_cuStreamQuery_v2000) \
	X(cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010) \
	X(cuDeviceGetMemPool,           PFN_cuDeviceGetMemPool_v11020) \
	X(cuMemPoolGetAttribute,        PFN_cuMemPoolGetAttribute_v11020) \
	X(cuDeviceGetGraphMemAttribute, PFN_cuDeviceGetGraphMemAttribute_v11040) \
	X(cuCtxSetCurrent,              PFN_cuCtxSetCurrent_v4000) \
	X(cuEventCreate,                PFN_cuEventCreate_v2000) \
	X(cuEventRecord,                PFN_cuEventRecord_v2000) \
	X(cuEventRecord_ptsz,           PFN_cuEventRecord_v7000_ptsz) \
	X(cuEventQuery,                 PFN_cuEventQuery_v2000) \
	X(cuFuncGetName,                PFN_cuFuncGetName_v12030)

/* Hook ids, for reports and messages: VG_HOOK_cuMemAlloc_v2, ... */
enum vg_hook_id {
#define VG_X_ID(name, ...) VG_HOOK_##name,
	VG_HOOKS(VG_X_ID)
#undef VG_X_ID
	VG_HOOK_COUNT
};

/* The real driver functions: the only way vramguard calls the driver. */
struct vg_real_table {
#define VG_X_FIELD(name, pfn, ...) pfn name;
	VG_HOOKS(VG_X_FIELD)
	VG_REALS(VG_X_FIELD)
#undef VG_X_FIELD
};

extern struct vg_real_table vg_real __attribute__((visibility("hidden")));  /* hidden: no GOT load in a hook */
extern const char *const vg_hook_names[VG_HOOK_COUNT];
extern const char *const vg_hook_charges[VG_HOOK_COUNT];

/* Each hook's policy, a constant the compiler folds into the hook's opening. */
static const unsigned char vg_hook_policies[VG_HOOK_COUNT] = {
#define VG_X_POLICY(name, pfn, policy, ...) policy,
	VG_HOOKS(VG_X_POLICY)
#undef VG_X_POLICY
};

#endif
