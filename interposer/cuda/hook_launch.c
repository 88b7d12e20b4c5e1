/* Launches and synchronizations: the compute share's hooks (interposer/compute.h). Without a compute limit each is
 * one predictable branch in front of the driver's function; with one, a launch may wait while the process is
 * ahead of its share, and launches and synchronizations tell compute.c when streams have work. */
#include "interposer/cuda/hook.h"
#include "interposer/compute.h"

#define VG_COMPUTE_OFF() VG_LIKELY(!atomic_load_explicit(&vg_compute_on, memory_order_relaxed))

/* A launch of f on stream s through hook `name` with the driver's arguments. */
#define VG_LAUNCH(name, f, s, ptsz, ...)                                                                    \
	do {                                                                                                 \
		if (VG_COMPUTE_OFF())                                                                        \
			return VG_REAL_CALL(name, __VA_ARGS__);                                              \
		VG_OPEN(name, __VA_ARGS__);                                                                  \
		struct vg_launch launch;                                                                     \
		bool measured = vg_compute_gate(&launch, (s), (f), (ptsz));                                  \
		rc = VG_REAL_CALL(name, __VA_ARGS__);                                                        \
		if (measured)                                                                                \
			vg_compute_launched(&launch, rc);                                                    \
	out:                                                                                                 \
		vg_hook_leave();                                                                             \
		return rc;                                                                                   \
	} while (0)

/* A synchronization of stream s (whole: of context ctx, NULL the current one) through hook `name`. */
#define VG_SYNC(name, ctx, s, ptsz, whole, ...)                                                             \
	do {                                                                                                 \
		if (VG_COMPUTE_OFF())                                                                        \
			return VG_REAL_CALL(name, __VA_ARGS__);                                              \
		VG_OPEN(name, __VA_ARGS__);                                                                  \
		uint64_t ticket = vg_compute_sync_ticket();                                                  \
		rc = VG_REAL_CALL(name, __VA_ARGS__);                                                        \
		vg_compute_synced((ctx), (s), (ptsz), (whole), ticket, rc);                                  \
	out:                                                                                                 \
		vg_hook_leave();                                                                             \
		return rc;                                                                                   \
	} while (0)

VG_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
					  unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm,
					  CUstream s, void **params, void **extra)
{
	VG_LAUNCH(cuLaunchKernel, f, s, false, f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}

VG_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
					       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm,
					       CUstream s, void **params, void **extra)
{
	VG_LAUNCH(cuLaunchKernel_ptsz, f, s, true, f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}

VG_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	VG_LAUNCH(cuLaunchKernelEx, f, config ? config->hStream : NULL, false, config, f, params, extra);
}

VG_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
						 void **extra)
{
	VG_LAUNCH(cuLaunchKernelEx_ptsz, f, config ? config->hStream : NULL, true, config, f, params, extra);
}

VG_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
						     unsigned int gz, unsigned int bx, unsigned int by,
						     unsigned int bz, unsigned int shm, CUstream s, void **params)
{
	VG_LAUNCH(cuLaunchCooperativeKernel, f, s, false, f, gx, gy, gz, bx, by, bz, shm, s, params);
}

VG_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
							  unsigned int gz, unsigned int bx, unsigned int by,
							  unsigned int bz, unsigned int shm, CUstream s,
							  void **params)
{
	VG_LAUNCH(cuLaunchCooperativeKernel_ptsz, f, s, true, f, gx, gy, gz, bx, by, bz, shm, s, params);
}

VG_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec g, CUstream s)
{
	VG_LAUNCH(cuGraphLaunch, NULL, s, false, g, s);
}

VG_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
	VG_LAUNCH(cuGraphLaunch_ptsz, NULL, s, true, g, s);
}

VG_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
	VG_SYNC(cuCtxSynchronize, NULL, NULL, false, true);
}

VG_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
	VG_SYNC(cuCtxSynchronize_v2, ctx, NULL, false, true, ctx);
}

VG_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
	VG_SYNC(cuStreamSynchronize, NULL, s, false, false, s);
}

VG_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s)
{
	VG_SYNC(cuStreamSynchronize_ptsz, NULL, s, true, false, s);
}

/* A cross-stream wait: where it may wait for a collective, compute.c stops charging the stream's later work until
 * the collectives are done; our event is recorded before the wait is enqueued. */
#define VG_WAIT_EVENT(name, s, ptsz, ...)                                                                   \
	do {                                                                                                 \
		if (VG_COMPUTE_OFF())                                                                        \
			return VG_REAL_CALL(name, __VA_ARGS__);                                              \
		VG_OPEN(name, __VA_ARGS__);                                                                  \
		vg_compute_stream_wait((s), (ptsz));                                                         \
		rc = VG_REAL_CALL(name, __VA_ARGS__);                                                        \
	out:                                                                                                 \
		vg_hook_leave();                                                                             \
		return rc;                                                                                   \
	} while (0)

VG_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
	VG_WAIT_EVENT(cuStreamWaitEvent, s, false, s, e, flags);
}

VG_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{
	VG_WAIT_EVENT(cuStreamWaitEvent_ptsz, s, true, s, e, flags);
}
