/* fakecuda.h - test double of libcuda.so.1 for vramguard's CPU tests; never installed.
 *
 * Build (soname libcuda.so.1, so it can stand in for the driver via LD_LIBRARY_PATH or dlopen):
 *   cc -std=gnu11 -O1 -g -Wall -Wextra -fPIC -shared -pthread -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 \
 *      -I/usr/local/cuda/include -o build/tests/libcuda.so.1 tests/fakecuda/fakecuda.c
 *
 * Environment (read once, at the first call of anything):
 *   FAKECUDA_DEVICES          number of devices, 1..16 (default 1)
 *   FAKECUDA_MEM              bytes per device; plain number or suffix K/M/G/T (binary) (default 16G)
 *   FAKECUDA_DRIVER_VERSION   cuDriverGetVersion / cuGetProcAddress limit (default 13000)
 *   FAKECUDA_FAIL             fault injection: comma list of  name:N  (Nth call of that exact entry point fails),
 *                             name:N+  (Nth and every later call fails), optional =CODE (default 2, OUT_OF_MEMORY),
 *                             e.g. "cuMemAlloc_v2:3,cuMemCreate:1=800". A failing call has no side effect
 *                             (it is still counted by fakecuda_calls).
 *   FAKECUDA_AUTOCTX          "0" disables the automatic context: otherwise cuInit and the first context-needing
 *                             call of a thread that never touched its context stack make device 0's primary context
 *                             current (device 0's primary is retained once per process for that).
 *   FAKECUDA_FORK_OK          "1": a fork child works on with a fresh, empty state (used = 0, no allocations,
 *                             no streams, counters 0). Otherwise, like the real driver, every entry point in the
 *                             child of a process that used the fake returns CUDA_ERROR_NOT_INITIALIZED (3)
 *                             (except cuGetErrorName/String, cuDriverGetVersion, cuGetProcAddress[_v2]).
 *   FAKECUDA_UUID_BASE        N: ordinal i reports the UUID of "physical" device i + N (as if CUDA_VISIBLE_DEVICES
 *                             hid the first N GPUs), so two processes can see one GPU under different ordinals.
 *   FAKECUDA_NULLMEM          "1" (benchmarks only): cuMemAlloc_v2 and cuMemFree_v2 keep no books and take no lock;
 *                             each thread reuses the addresses it freed last, from a range of its own (0x600000000000
 *                             + thread << 36). Threads allocating at once then measure their caller's cost, not this
 *                             double's global lock. Nothing else sees those allocations.
 *   FAKECUDA_CTX_BYTES        size (as FAKECUDA_MEM) of device memory a context takes while it exists (default 0):
 *                             cuCtxCreate* and a primary context's first retain (FAKECUDA_AUTOCTX's included) take
 *                             it, or fail with CUDA_ERROR_OUT_OF_MEMORY; cuCtxDestroy, the primary's last release
 *                             and cuDevicePrimaryCtxReset give it back (a reset primary that is still retained takes
 *                             it again at its next use).
 *   FAKECUDA_MODULE_BYTES     size taken by each module or library load (default 0): cuModuleLoad, cuModuleLoadData,
 *                             cuModuleLoadDataEx, cuModuleLoadFatBinary need a current context and charge its device
 *                             (unloaded with the context); cuLibraryLoadData / cuLibraryLoadFromFile charge the
 *                             device of the thread's current context, device 0 if none. Nothing is read or compiled:
 *                             a load succeeds with a fresh handle, or fails with CUDA_ERROR_OUT_OF_MEMORY.
 *                             cuModuleUnload / cuLibraryUnload give it back.
 *
 * What a device holds (the driver's documented model, simplified). Every charge below is checked against
 * FAKECUDA_MEM minus everything the device holds, and cuMemGetInfo's free is FAKECUDA_MEM minus that sum:
 *   allocations (cuMemAlloc*, managed, arrays, cuMemCreate) + pool reserves + graph reserve + context and module
 *   footprints  ==  fakecuda_process_device_bytes(dev).
 * Stream-ordered pools: each pool (the default pool of each device, and those of cuMemPoolCreate) has reserved
 *   (device memory it holds) and used (handed out) bytes. cuMemAllocAsync / cuMemAllocFromPoolAsync of n: taken from
 *   the reserve if reserved - used >= n, else the pool grows by n rounded up to 2 MiB (CUDA_ERROR_OUT_OF_MEMORY if
 *   the device has no room for that). cuMemFreeAsync (or cuMemFree of such a pointer): used -= n, the reserve stays.
 *   At each synchronization (cuStreamSynchronize of any stream, cuCtxSynchronize, and the teardown of a context:
 *   cuCtxDestroy, a primary's last release, cuDevicePrimaryCtxReset), every pool of that device (and every host pool)
 *   holding more than its CU_MEMPOOL_ATTR_RELEASE_THRESHOLD releases its unused reserve down to max(threshold, used).
 *   cuMemPoolTrimTo(pool, keep) releases down to max(keep, used). cuMemPoolDestroy releases the unused reserve at once
 *   and the rest with the last outstanding free; a destroyed current pool leaves its device's default pool current.
 *   Allocations made while a stream captures are graph memory and touch no pool (and charge nothing, as before).
 *   Host pools (location HOST*) keep the same books but charge no device.
 *   cuMemPoolGetAttribute / cuMemPoolSetAttribute: RELEASE_THRESHOLD (cuuint64_t, default 0; takes effect at the
 *   next sync); RESERVED_MEM_CURRENT, RESERVED_MEM_HIGH, USED_MEM_CURRENT, USED_MEM_HIGH (cuuint64_t, read; the
 *   CURRENT ones are read-only, the HIGH ones accept only 0, which resets them to the current value, as the CUDA
 *   Programming Guide says; anything else is CUDA_ERROR_INVALID_VALUE); the three REUSE_* (int, default 1) are only
 *   stored. cuDeviceSetMemPool(dev, pool) makes a pool of that device current (CUDA_ERROR_INVALID_VALUE for a pool
 *   of another device or a host pool); cuMemAllocAsync takes from the current pool of its stream's device and
 *   cuDeviceGetMemPool returns it; cuDeviceGetDefaultMemPool still returns the default pool.
 * Graph memory: per device graph reserved / used bytes, set only by fakecuda_graph_mem (nothing executes graphs
 *   here). cuDeviceGetGraphMemAttribute: CU_GRAPH_MEM_ATTR_{USED,RESERVED}_MEM_{CURRENT,HIGH} (cuuint64_t);
 *   cuDeviceSetGraphMemAttribute: the two HIGH ones, value 0 only, reset to the current value;
 *   cuDeviceGraphMemTrim: reserved = used.
 *
 * Device i (0-based; i + FAKECUDA_UUID_BASE) has UUID bytes {0,0,0,i, 0,0, 0,0, 0,0, 0,0,0,0,0,i}, i.e. in the usual form
 *   "GPU-%08x-0000-0000-0000-%012x" with i:  device 0 -> GPU-00000000-0000-0000-0000-000000000000,
 *   device 3 -> GPU-00000003-0000-0000-0000-000000000003, device 10 -> GPU-0000000a-0000-0000-0000-00000000000a.
 * cuDeviceGetName gives "Fake GPU i".
 *
 * Device pointers: 0x700000000000 + (dev << 40) + bump (512-aligned, unique until a 1 TiB window wraps);
 * legacy 32-bit cuMemAlloc/cuMemAllocPitch pointers come from a window below 4 GiB.
 * cuMemAddressReserve ranges come from 0x100000000000..0x500000000000; array/graph handles from 0x500000000000.
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes currently charged on device dev (exact requested sizes; pitch*height for pitched). 0 for a bad dev.
 * Logical: a stream-ordered allocation counts at its requested size while it is live, whatever its pool reserves,
 * and pool reserves, graph memory and footprints do not count (fakecuda_process_device_bytes counts those). */
unsigned long long fakecuda_used_bytes(int dev);
/* Highest value fakecuda_used_bytes(dev) has had. */
unsigned long long fakecuda_peak_bytes(int dev);
/* Calls so far of that exact exported entry point (e.g. "cuMemAlloc_v2", "cuStreamQuery_ptsz");
 * -1 if the fake does not implement that name. */
long fakecuda_calls(const char *exact_name);
/* Mark a stream (created with cuStreamCreate*) busy: cuStreamQuery -> CUDA_ERROR_NOT_READY until a
 * cuStreamSynchronize / cuCtxSynchronize. Returns 0, or -1 for an unknown stream handle. */
int fakecuda_stream_set_pending(CUstream s, int pending);
/* Kernels (and graphs) launched and run, not captured (the simulated GPU: fakecuda.c). */
unsigned long long fakecuda_launches(void);
/* 1 if someone called cuStreamQuery on this stream while it was capturing (sticky), 0 if not, -1 unknown stream. */
int fakecuda_capture_invalidated(CUstream s);
/* Process-wide count of cuStreamQuery calls on capturing streams (survives cuStreamDestroy). */
long fakecuda_capture_invalidations(void);
/* Live objects holding memory on dev: cuMemAlloc*, managed, async (not capture-time), arrays,
 * and cuMemCreate handles whose physical memory on dev is still alive. */
long fakecuda_live_allocations(int dev);
/* Set peak to the current used value of dev. */
void fakecuda_reset_peak(int dev);
/* All device memory this process holds on dev, what a real NVML reports as the process's usedGpuMemory:
 * allocations as fakecuda_used_bytes counts them, except that stream-ordered ones count through their pools' reserves
 * instead of at their sizes, + graph reserve + context and module footprints. cuMemGetInfo's free is FAKECUDA_MEM
 * minus this. 0 for a bad dev. A fake NVML finds it with dlsym(RTLD_DEFAULT, ...): keep the name and signature. */
unsigned long long fakecuda_process_device_bytes(int dev);
/* A function cuMemAlloc_v2 calls first, before it makes the allocation (NULL: none): a test holds an allocation
 * "under way" there (vramguard has reserved it, the device does not hold it yet). */
void fakecuda_set_alloc_hook(void (*fn)(size_t bytes));
/* Sum of CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT over the pools located on dev (destroyed pools whose allocations
 * are still outstanding included). 0 for a bad dev. */
unsigned long long fakecuda_pool_reserved(int dev);
/* Set dev's graph memory (as if graphs with memory nodes had run): reserved counts against the device, used is
 * what CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT reports; the HIGH attributes follow. Returns 0, or -1 (nothing changed)
 * for a bad dev, used > reserved, or a device without room for reserved. */
int fakecuda_graph_mem(int dev, unsigned long long reserved, unsigned long long used);

#ifdef __cplusplus
}
#endif
#endif
