/* The direct-link route: a program linked with -lcuda (the test double), whose cu* calls bind to vramguard's
 * exports under LD_PRELOAD. One scenario per argv[1]; tests/run.sh sets the environment for each. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

static size_t mem_free(void)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return f;
}

static size_t mem_total(void)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return t;
}

/* NVIDIA_GPU_MEMORY_LIMITS=4096 on a 16 GiB fake device. */
static void t_quota(void)
{
	CUdeviceptr a, b, c, d, e, x;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_CHECK(mem_total() == 4 * GiB, "cuMemGetInfo total is the quota (%zu)", mem_total());
	IT_CHECK(mem_free() == 4 * GiB, "cuMemGetInfo free is the quota before any allocation (%zu)", mem_free());
	size_t tot = 0;
	IT_RC(cuDeviceTotalMem_v2(&tot, 0), CUDA_SUCCESS);
	IT_CHECK(tot == 4 * GiB, "cuDeviceTotalMem_v2 reports the quota (%zu)", tot);
	IT_RC(cuMemAlloc_v2(&a, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&b, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&c, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&x, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(fakecuda_calls("cuMemAlloc_v2") == 3, "a denied allocation never reaches the driver (%ld calls)",
		 fakecuda_calls("cuMemAlloc_v2"));
	IT_CHECK(mem_free() == GiB, "free is quota - used after 3 GiB (%zu)", mem_free());
	IT_RC(cuMemAlloc_v2(&d, GiB), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 0, "free is 0 at the quota (%zu)", mem_free());
	IT_RC(cuMemAlloc_v2(&x, 1), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(cuMemFree_v2(b), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&e, 512 * MiB), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 512 * MiB, "a free restores headroom (%zu)", mem_free());
	IT_RC(cuMemFree_v2(0), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(0xdead000), CUDA_ERROR_INVALID_VALUE);
	IT_CHECK(mem_free() == 512 * MiB, "freeing unknown pointers changes nothing (%zu)", mem_free());
	cuMemFree_v2(a);
	cuMemFree_v2(c);
	cuMemFree_v2(d);
	cuMemFree_v2(e);
	IT_CHECK(mem_free() == 4 * GiB, "all freed: free is the quota again (%zu)", mem_free());
	IT_CHECK(fakecuda_used_bytes(0) == 0, "driver holds nothing");
}

/* No limit configured: everything passes through, sizes are the hardware's. */
static void t_unlimited(void)
{
	CUdeviceptr a;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_CHECK(mem_total() == 16 * GiB, "no quota: total is the device's (%zu)", mem_total());
	IT_RC(cuMemAlloc_v2(&a, 10 * GiB), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 6 * GiB, "no quota: free is the device's (%zu)", mem_free());
	IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
}

static void t_pitch_managed(int managed_counted)
{
	CUdeviceptr p, m, x;
	size_t pitch = 0;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuMemAllocPitch_v2(&p, &pitch, 1000, 1024 * 1024, 4), CUDA_SUCCESS);
	IT_CHECK(pitch == 1024, "pitch rounded by the driver (%zu)", pitch);
	IT_CHECK(mem_free() == 4 * GiB - pitch * 1024 * 1024, "pitch x height charged (free %zu)", mem_free());
	IT_RC(cuMemAllocPitch_v2(&x, &pitch, 4096, 1024 * 1024, 4), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(cuMemFree_v2(p), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "pitch freed (free %zu)", mem_free());
	IT_RC(cuMemAllocManaged(&m, 3 * GiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	if (managed_counted) {
		IT_CHECK(mem_free() == GiB, "managed memory counted by default (free %zu)", mem_free());
		IT_RC(cuMemAlloc_v2(&x, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	} else {
		IT_CHECK(mem_free() == 4 * GiB, "VRAMGUARD_MANAGED=ignore: managed not counted (free %zu)", mem_free());
	}
	IT_RC(cuMemFree_v2(m), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "managed freed (free %zu)", mem_free());
}

static void t_arrays(void)
{
	CUarray a1, a3;
	CUmipmappedArray mm;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	CUDA_ARRAY_DESCRIPTOR d = { .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4 };
	IT_RC(cuArrayCreate_v2(&a1, &d), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB - 16 * MiB, "2D float4 array 1024x1024 charged 16 MiB (free %zu)", mem_free());
	CUDA_ARRAY3D_DESCRIPTOR d3 = { .Width = 1024, .Height = 1024, .Depth = 256, .Format = CU_AD_FORMAT_HALF,
				       .NumChannels = 2 };
	IT_RC(cuArray3DCreate_v2(&a3, &d3), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB - 16 * MiB - GiB, "3D half2 array charged 1 GiB (free %zu)", mem_free());
	CUDA_ARRAY3D_DESCRIPTOR big = { .Width = 16384, .Height = 16384, .Depth = 0, .Format = CU_AD_FORMAT_FLOAT,
					.NumChannels = 4 };
	CUarray x;
	IT_RC(cuArray3DCreate_v2(&x, &big), CUDA_ERROR_OUT_OF_MEMORY);
	CUDA_ARRAY3D_DESCRIPTOR md = { .Width = 1024, .Height = 1024, .Depth = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				       .NumChannels = 1 };
	IT_RC(cuMipmappedArrayCreate(&mm, &md, 11), CUDA_SUCCESS);
	/* 1024^2 + 512^2 + ... + 1 = 1398101 bytes */
	IT_CHECK(mem_free() == 4 * GiB - 16 * MiB - GiB - 1398101, "mipmap levels summed (free %zu)", mem_free());
	IT_RC(cuArrayDestroy(a1), CUDA_SUCCESS);
	IT_RC(cuArrayDestroy(a3), CUDA_SUCCESS);
	IT_RC(cuMipmappedArrayDestroy(mm), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "arrays destroyed: all returned (free %zu)", mem_free());
}

static CUmemAllocationProp vmm_prop(CUmemLocationType type, int id)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = type;
	p.location.id = id;
	return p;
}

static void t_vmm(void)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	CUmemAllocationProp dp = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
	CUmemAllocationProp hp = vmm_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
	CUmemGenericAllocationHandle h, h2, hh, hx;
	/* PyTorch's first cuMemCreate may fail (FAKECUDA_FAIL=cuMemCreate:1=800); it retries: charge once. */
	IT_RC(cuMemCreate(&hx, 2 * GiB, &dp, 0), CUDA_ERROR_NOT_PERMITTED);
	IT_CHECK(mem_free() == 4 * GiB, "a failed cuMemCreate is rolled back (free %zu)", mem_free());
	IT_RC(cuMemCreate(&h, 2 * GiB, &dp, 0), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 2 * GiB, "device cuMemCreate charged (free %zu)", mem_free());
	IT_RC(cuMemCreate(&hh, 2 * GiB, &hp, 0), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 2 * GiB, "HOST_NUMA cuMemCreate not charged (free %zu)", mem_free());
	IT_RC(cuMemCreate(&hx, 4 * GiB, &dp, 0), CUDA_ERROR_OUT_OF_MEMORY);
	/* NCCL's sequence: reserve, map, set access, retain by address, unmap, release, release. */
	CUdeviceptr va;
	IT_RC(cuMemAddressReserve(&va, 4 * GiB, 0, 0, 0), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 2 * GiB, "address reservation not charged (free %zu)", mem_free());
	IT_RC(cuMemMap(va, 2 * GiB, 0, h, 0), CUDA_SUCCESS);
	IT_RC(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)va), CUDA_SUCCESS);
	IT_CHECK(h2 == h, "retain returns the same handle");
	IT_RC(cuMemUnmap(va, 2 * GiB), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 2 * GiB, "unmapped but referenced: still charged (free %zu)", mem_free());
	IT_RC(cuMemRelease(h2), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 2 * GiB, "one reference left: still charged (free %zu)", mem_free());
	IT_RC(cuMemRelease(h), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "NCCL order: uncharged exactly once (free %zu)", mem_free());
	/* PyTorch expandable segments: create, map, release (mapped keeps it alive), later unmap frees it. */
	CUmemGenericAllocationHandle p1, p2;
	IT_RC(cuMemCreate(&p1, 20 * 2 * MiB, &dp, 0), CUDA_SUCCESS);
	IT_RC(cuMemCreate(&p2, 20 * 2 * MiB, &dp, 0), CUDA_SUCCESS);
	IT_RC(cuMemMap(va, 40 * MiB, 0, p1, 0), CUDA_SUCCESS);
	IT_RC(cuMemMap(va + 40 * MiB, 40 * MiB, 0, p2, 0), CUDA_SUCCESS);
	IT_RC(cuMemRelease(p1), CUDA_SUCCESS);
	IT_RC(cuMemRelease(p2), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB - 80 * MiB, "released but mapped: still charged (free %zu)", mem_free());
	IT_RC(cuMemUnmap(va, 80 * MiB), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "one unmap over two mappings uncharges both (free %zu)", mem_free());
	IT_RC(cuMemAddressFree(va, 4 * GiB), CUDA_SUCCESS);
	IT_RC(cuMemRelease(hh), CUDA_SUCCESS);
	IT_CHECK(fakecuda_used_bytes(0) == 0, "driver holds nothing (%llu)", fakecuda_used_bytes(0));
}

static void t_async(void)
{
	CUstream s;
	CUdeviceptr a, b, c, g;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	IT_RC(cuMemAllocAsync(&a, 3 * GiB, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == GiB, "cuMemAllocAsync charged (free %zu)", mem_free());
	IT_RC(cuMemAllocAsync(&b, 2 * GiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "cuMemFreeAsync uncharged (free %zu)", mem_free());
	CUmemoryPool pool;
	IT_RC(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
	IT_RC(cuMemAllocFromPoolAsync(&c, GiB, pool, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 3 * GiB, "cuMemAllocFromPoolAsync charged (free %zu)", mem_free());
	/* During capture the allocation is a graph node, not memory: not charged, and the stream must not be
	 * queried (that would invalidate the capture). */
	IT_RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	IT_RC(cuMemAllocAsync(&g, 2 * GiB, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 3 * GiB, "capture-time allocation not charged (free %zu)", mem_free());
	IT_RC(cuMemFreeAsync(g, s), CUDA_SUCCESS);
	CUgraph graph;
	IT_RC(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
	IT_CHECK(fakecuda_capture_invalidations() == 0, "no capturing stream was queried");
	IT_CHECK(mem_free() == 3 * GiB, "capture-time free changes nothing (free %zu)", mem_free());
	IT_RC(cuMemFreeAsync(c, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "pool allocation returned (free %zu)", mem_free());
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

/* Stream-ordered allocations skip two driver questions when they can (hook_pool.c): the stream's device is kept per
 * thread until a stream is created, and "is it capturing" is asked only once a capture has begun. Both must stay
 * right: a handle reused by a stream of another device, and a capture begun through every entry point. Two devices
 * with quotas 2 GiB (0) and 1 GiB (1). */
static size_t dev_free(CUcontext c)
{
	return cuCtxSetCurrent(c) == CUDA_SUCCESS ? mem_free() : 0;
}

static void t_async_streams(void)
{
	CUdevice d0, d1;
	CUcontext c0, c1;
	CUstream s0, s1;
	CUdeviceptr a, b;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuDeviceGet(&d0, 0), CUDA_SUCCESS);
	IT_RC(cuDeviceGet(&d1, 1), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&c0, d0), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&c1, d1), CUDA_SUCCESS);
	IT_RC(cuCtxSetCurrent(c0), CUDA_SUCCESS);
	IT_RC(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	IT_RC(cuMemAllocAsync(&a, GiB, s0), CUDA_SUCCESS);
	IT_CHECK(dev_free(c0) == GiB, "device 0's stream: charged to device 0 (free %zu)", mem_free());
	IT_RC(cuMemFreeAsync(a, s0), CUDA_SUCCESS);
	IT_RC(cuStreamDestroy_v2(s0), CUDA_SUCCESS);
	/* The same handle, now a stream of device 1 (the double's streams are heap blocks: freed, then reused). */
	IT_RC(cuCtxSetCurrent(c1), CUDA_SUCCESS);
	IT_RC(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	IT_CHECK(s1 == s0, "precondition: the second stream reuses the first one's handle (%p, %p)", (void *)s1,
		 (void *)s0);
	IT_RC(cuCtxSetCurrent(c0), CUDA_SUCCESS);       /* the current context says device 0; the stream says 1 */
	IT_RC(cuMemAllocAsync(&b, 768 * MiB, s1), CUDA_SUCCESS);
	IT_CHECK(dev_free(c1) == 256 * MiB && dev_free(c0) == 2 * GiB,
		 "the reused handle is charged to its new device, 1 (free %zu / %zu)", dev_free(c1), dev_free(c0));
	IT_RC(cuMemAllocAsync(&a, 512 * MiB, s1), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(cuMemFreeAsync(b, s1), CUDA_SUCCESS);
	IT_RC(cuStreamDestroy_v2(s1), CUDA_SUCCESS);
}

/* Each way of beginning a capture, one per process (the first capture switches the check on for good): the
 * allocation during it is the graph's, never charged, and the capturing stream is never queried. The exact ABI
 * names through dlsym (what a program linked against them gets), the last through cuGetProcAddress_v2. */
static void t_async_capture(int i)
{
	static const char *const names[] = { "cuStreamBeginCapture", "cuStreamBeginCapture_ptsz",
					     "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz",
					     "cuStreamBeginCapture" };
	CUstream s;
	CUdeviceptr a;
	void *fn = NULL;
	CUdriverProcAddressQueryResult q;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	IT_RC(cuMemAllocAsync(&a, GiB, s), CUDA_SUCCESS);      /* the stream's device is now kept by the thread */
	IT_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	if (i < 4)
		fn = dlsym(RTLD_DEFAULT, names[i]);
	else if (cuGetProcAddress_v2(names[i], &fn, 10010, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS)
		fn = NULL;
	IT_CHECK(fn != NULL, "%s found", names[i]);
	if (!fn)
		return;
	if (i < 2)
		IT_RC(((CUresult(*)(CUstream))fn)(s), CUDA_SUCCESS);
	else
		IT_RC(((CUresult(*)(CUstream, CUstreamCaptureMode))fn)(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
	IT_RC(cuMemAllocAsync(&a, 3 * GiB, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "capture begun by %s%s: the allocation is not charged (free %zu)", names[i],
		 i == 4 ? " (from cuGetProcAddress_v2, 10010)" : "", mem_free());
	IT_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CUgraph g;
	IT_RC(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	IT_CHECK(fakecuda_capture_invalidations() == 0, "no capturing stream was queried");
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

/* Contexts: what the driver frees with a context, vramguard uncharges. */
static void t_ctx(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr a, b;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	IT_RC(cuCtxCreate_v4(&ctx, NULL, 0, dev), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&a, 3 * GiB), CUDA_SUCCESS);
	IT_CHECK(mem_free() == GiB, "allocation in a created context charged (free %zu)", mem_free());
	IT_RC(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
	CUcontext pctx;
	IT_RC(cuDevicePrimaryCtxRetain(&pctx, dev), CUDA_SUCCESS);
	IT_RC(cuCtxSetCurrent(pctx), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "cuCtxDestroy_v2 released its allocations (free %zu)", mem_free());
	IT_RC(cuMemAlloc_v2(&b, 2 * GiB), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxReset_v2(dev), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&pctx, dev), CUDA_SUCCESS);
	IT_RC(cuCtxSetCurrent(pctx), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "primary context reset released its allocations (free %zu)", mem_free());
	IT_CHECK(fakecuda_used_bytes(0) == 0, "driver agrees (%llu)", fakecuda_used_bytes(0));
}

/* FAKECUDA_FAIL=cuMemAlloc_v2:2: the driver itself fails the 2nd call; the reservation is rolled back. */
static void t_fault(void)
{
	CUdeviceptr a, b, c;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&a, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&b, GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(mem_free() == 3 * GiB, "driver failure rolled back (free %zu)", mem_free());
	IT_RC(cuMemAlloc_v2(&c, 3 * GiB), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(c), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "back to zero (free %zu)", mem_free());
}

/* FAKECUDA_DEVICES=2, per-device limits given in the environment by run.sh; argv[2..3] expected MiB. */
static void t_perdevice(long want0, long want1)
{
	CUdevice d0, d1;
	CUcontext c0, c1;
	CUdeviceptr a;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	cuDeviceGet(&d0, 0);
	cuDeviceGet(&d1, 1);
	cuDevicePrimaryCtxRetain(&c0, d0);
	cuDevicePrimaryCtxRetain(&c1, d1);
	long want[2] = { want0, want1 };
	CUcontext cs[2] = { c0, c1 };
	for (int i = 0; i < 2; i++) {
		cuCtxSetCurrent(cs[i]);
		uint64_t q = want[i] < 0 ? 16 * GiB : (uint64_t)want[i] * MiB;
		IT_CHECK(mem_total() == q, "device %d total %zu == %llu", i, mem_total(), (unsigned long long)q);
		if (want[i] > 0) {
			IT_RC(cuMemAlloc_v2(&a, q + 1), CUDA_ERROR_OUT_OF_MEMORY);
			IT_RC(cuMemAlloc_v2(&a, q), CUDA_SUCCESS);
			IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
		}
	}
}

/* FAKECUDA_FORK_OK=1: the child's tables start empty, the parent's are untouched. */
static void t_fork(void)
{
	CUdeviceptr a, b;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&a, 3 * GiB), CUDA_SUCCESS);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		cuInit(0);
		int ok = mem_free() == 4 * GiB && cuMemAlloc_v2(&b, 4 * GiB) == CUDA_SUCCESS;
		printf("%s - child starts with empty tables (free %zu)\n", ok ? "ok" : "not ok", mem_free());
		fflush(stdout);
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	IT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exited cleanly");
	IT_CHECK(mem_free() == GiB, "parent keeps its own usage (free %zu)", mem_free());
	IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
}

/* Threads racing alloc/free against a 1 GiB quota: the driver never holds more than the quota, and everything
 * returns to exactly zero. The threads contend whatever the scheduler does: they first fill the quota together
 * (8 x 256 MiB wanted, 1 GiB there: some are refused), meet at a barrier, race, and meet again before anyone
 * frees what it holds, so each one's race runs against the others' holdings even if the threads run one at a
 * time (a loaded machine did that, and the threads of the old version never met: no denial at all). */
#define ST_THREADS 8
#define ST_ITERS 4000
#define ST_FILL_CHUNK (32 * MiB)
#define ST_FILL_CHUNKS 8
static _Atomic long st_denied, st_ok, st_fill_denied;
static pthread_barrier_t st_filled, st_raced;

static void *st_worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
	CUdeviceptr held[16];
	int n = 0;
	cuCtxSetCurrent(NULL);
	CUcontext pctx;
	cuDevicePrimaryCtxRetain(&pctx, 0);
	cuCtxSetCurrent(pctx);
	while (n < ST_FILL_CHUNKS) {
		if (cuMemAlloc_v2(&held[n], ST_FILL_CHUNK) != CUDA_SUCCESS) {
			st_fill_denied++;
			break;
		}
		n++;
	}
	pthread_barrier_wait(&st_filled);
	for (int i = 0; i < ST_ITERS; i++) {
		seed = seed * 1103515245u + 12345u;
		if (n < 16 && (seed >> 16) % 3 != 0) {
			size_t sz = ((seed >> 8) % 64 + 1) * MiB;
			CUdeviceptr p;
			CUresult rc = (seed & 1) ? cuMemAlloc_v2(&p, sz) : cuMemAllocAsync(&p, sz, NULL);
			if (rc == CUDA_SUCCESS) {
				held[n++] = p;
				st_ok++;
			} else {
				st_denied++;
			}
		} else if (n > 0) {
			CUdeviceptr p = held[--n];
			if (seed & 2)
				cuMemFree_v2(p);
			else
				cuMemFreeAsync(p, NULL);
		}
	}
	pthread_barrier_wait(&st_raced);
	while (n > 0)
		cuMemFree_v2(held[--n]);
	return NULL;
}

static void t_stress(void)
{
	pthread_t th[ST_THREADS];
	IT_RC(cuInit(0), CUDA_SUCCESS);
	pthread_barrier_init(&st_filled, NULL, ST_THREADS);
	pthread_barrier_init(&st_raced, NULL, ST_THREADS);
	for (int i = 0; i < ST_THREADS; i++)
		pthread_create(&th[i], NULL, st_worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < ST_THREADS; i++)
		pthread_join(th[i], NULL);
	IT_CHECK(st_fill_denied >= ST_THREADS - (int)(GiB / (ST_FILL_CHUNKS * ST_FILL_CHUNK)),
		 "filling the quota together: %ld of %d threads refused before holding %llu MiB", (long)st_fill_denied,
		 ST_THREADS, ST_FILL_CHUNKS * ST_FILL_CHUNK / MiB);
	IT_CHECK(st_ok > 1000 && st_denied > 100, "racing from a full quota: both successes (%ld) and denials (%ld)",
		 (long)st_ok, (long)st_denied);
	IT_CHECK(fakecuda_peak_bytes(0) <= GiB, "driver never held more than the quota (peak %llu)",
		 fakecuda_peak_bytes(0));
	IT_CHECK(fakecuda_used_bytes(0) == 0, "driver holds nothing at the end (%llu)", fakecuda_used_bytes(0));
	IT_CHECK(mem_free() == GiB, "vramguard's usage back to exactly zero (free %zu)", mem_free());
}

/* The driver's own memory is measured (NVML's figure for the process less what vramguard counts) while a thread
 * allocates and frees 1 MiB, with a slow NVML (FAKENVML_PROCS_DELAY_US=5000). An allocation and a free during one
 * measurement left vramguard's figure where it was while NVML saw the allocation, and that 1 MiB was charged as the
 * driver's: "sampler churn" failed in 6 of 6 runs before the fix (1 to 4 of its 20 reports), and when it was the
 * first measurement it stayed for good (the headroom's floor: the storm's exit report 1 MiB above its
 * allocations). "sampler bursts" churns with quiet spells and loads a module of FAKECUDA_MODULE_BYTES=64M after the
 * 10th report: the driver's memory is still measured while the thread works. Run with VRAMGUARD_DEVICE_POLL=50. */
#define SM_MODULE (64 * MiB)
static _Atomic int sm_stop;
static void *sm_worker(void *arg)
{
	int bursts = arg != NULL;
	CUcontext c;
	cuDevicePrimaryCtxRetain(&c, 0);
	cuCtxSetCurrent(c);
	while (!sm_stop) {
		for (int i = 0; i < 2000; i++) {
			CUdeviceptr p;
			if (cuMemAlloc_v2(&p, MiB) == CUDA_SUCCESS)
				cuMemFree_v2(p);
		}
		if (bursts)
			it_sleep_s(0.02);       /* quiet spells, in which a measurement sees a process that is not freeing */
	}
	return NULL;
}

static void t_sampler(int bursts)
{
	pthread_t th;
	char dir[4096];
	IT_RC(cuInit(0), CUDA_SUCCESS);
	pthread_create(&th, NULL, sm_worker, bursts ? (void *)1 : NULL);
	/* 20 signal reports 50 ms apart, each waited for. The driver holds nothing of its own for the process (but the
	 * module, from the 11th report on with bursts): what the reports charge to the driver (measured, driver_bytes,
	 * and beyond it, driver_headroom_bytes) is 0 or the module, never anything else, the module once seen. */
	int reports = 0, wrong = 0, module_seen = 0;
	long long first_wrong = 0;
	CUmodule m = NULL;
	for (int k = 1; k <= 20 && it_report_dir(dir, sizeof(dir)); k++) {
		if (k == 11 && bursts)
			IT_RC(cuModuleLoadData(&m, "image"), CUDA_SUCCESS);
		it_sleep_s(0.05);
		raise(SIGUSR1);
		char prefix[64], path[4200];
		snprintf(prefix, sizeof(prefix), "r-%d-%d-signal", (int)getpid(), k);
		if (it_wait_files(dir, prefix, 1, 30) != 1)
			break;
		snprintf(path, sizeof(path), "%s/%s.json", dir, prefix);
		long long d = it_json_number(path, "driver_bytes") + it_json_number(path, "driver_headroom_bytes");
		reports++;
		if (d == (long long)SM_MODULE && m)
			module_seen = 1;
		else if (d != 0 || module_seen) {
			wrong++;
			first_wrong = first_wrong ? first_wrong : d;
		}
	}
	sm_stop = 1;
	pthread_join(th, NULL);
	IT_CHECK(reports == 20 && wrong == 0, "20 reports during the churn charge the driver nothing but what it holds "
		 "(%d reports, %d wrong, the first %lld bytes)", reports, wrong, first_wrong);
	if (bursts)
		IT_CHECK(module_seen, "the module loaded meanwhile was measured while the thread worked");
	IT_CHECK(fakecuda_used_bytes(0) == 0, "the driver holds none of the thread's memory once it is done (%llu)",
		 fakecuda_used_bytes(0));
	/* The next measurements see a quiet process: wait for the figure to settle (3 s at most, 60 rounds). */
	uint64_t want = GiB - (m ? SM_MODULE : 0);
	double end = it_now_s() + 3;
	while (mem_free() != want && it_now_s() < end)
		it_sleep_s(0.02);
	IT_CHECK(mem_free() == want, "after the churn usage is exactly what the driver holds (free %zu, want %llu)",
		 mem_free(), (unsigned long long)want);
}

/* 10 000 short-lived threads, 8 at a time: no usage is left behind by threads that come and go. Each allocates
 * 6 x 256 KiB (served from its credit when it owns a statistics shard, as the first 15 do: two refills of it), 4 KiB,
 * 2 MiB and a 100 KiB block it leaves for the next thread to free (a free by a thread that did not allocate: into
 * that thread's credit), frees the block the thread before it left, then everything else (which hands credit back
 * past 2 MiB), and exits with credit charged. Afterwards vramguard's usage is exactly zero and the whole quota can be
 * had in one allocation (the exited threads' credit is taken back). */
#define TC_THREADS 10000
#define TC_AT_ONCE 8
static _Atomic long tc_bad;
static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr tc_left;                     /* the block left for the next thread */

static void *tc_worker(void *arg)
{
	(void)arg;
	CUcontext c;
	CUdeviceptr small[6], tiny, big, mine, theirs;
	int ok = 1;
	cuDevicePrimaryCtxRetain(&c, 0);
	cuCtxSetCurrent(c);
	for (int i = 0; i < 6; i++)
		ok &= cuMemAlloc_v2(&small[i], 256 << 10) == CUDA_SUCCESS;
	ok &= cuMemAlloc_v2(&tiny, 4096) == CUDA_SUCCESS;
	ok &= cuMemAlloc_v2(&big, 2 * MiB) == CUDA_SUCCESS;
	ok &= cuMemAlloc_v2(&mine, 100 << 10) == CUDA_SUCCESS;
	pthread_mutex_lock(&tc_lock);
	theirs = tc_left;
	tc_left = mine;
	pthread_mutex_unlock(&tc_lock);
	if (theirs)
		ok &= cuMemFree_v2(theirs) == CUDA_SUCCESS;
	ok &= cuMemFree_v2(big) == CUDA_SUCCESS;
	ok &= cuMemFree_v2(tiny) == CUDA_SUCCESS;
	for (int i = 0; i < 6; i++)
		ok &= cuMemFree_v2(small[i]) == CUDA_SUCCESS;
	if (!ok)
		tc_bad++;
	return NULL;
}

static void t_thread_churn(void)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	int made = 0;
	for (int i = 0; i < TC_THREADS; i += TC_AT_ONCE) {
		pthread_t th[TC_AT_ONCE];
		for (int k = 0; k < TC_AT_ONCE; k++)
			made += pthread_create(&th[k], NULL, tc_worker, NULL) == 0;
		for (int k = 0; k < TC_AT_ONCE; k++)
			pthread_join(th[k], NULL);
	}
	IT_CHECK(made == TC_THREADS && tc_bad == 0, "%d threads each allocated and freed 6 x 256 KiB, 4 KiB, 2 MiB and "
		 "100 KiB (%ld failed)", made, (long)tc_bad);
	IT_CHECK(mem_free() == GiB - (100 << 10), "only the last thread's 100 KiB block is left (free %zu)",
		 mem_free());
	IT_RC(cuMemFree_v2(tc_left), CUDA_SUCCESS);
	IT_CHECK(fakecuda_used_bytes(0) == 0, "the driver holds nothing (%llu)", fakecuda_used_bytes(0));
	IT_CHECK(mem_free() == GiB, "vramguard's usage is exactly zero after they all exited (free %zu)", mem_free());
	CUdeviceptr all;
	IT_RC(cuMemAlloc_v2(&all, GiB), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(all), CUDA_SUCCESS);
}

/* Invalid configuration: fail closed. */
static void t_badconfig(void)
{
	CUdeviceptr a;
	IT_RC(cuInit(0), CUDA_ERROR_NOT_PERMITTED);
	IT_RC(cuMemAlloc_v2(&a, MiB), CUDA_ERROR_NOT_PERMITTED);
	IT_RC(cuMemAllocManaged(&a, MiB, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_NOT_PERMITTED);
	IT_RC(cuMemAllocAsync(&a, MiB, NULL), CUDA_ERROR_NOT_PERMITTED);
	CUmemAllocationProp dp = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
	CUmemGenericAllocationHandle h;
	IT_RC(cuMemCreate(&h, 2 * MiB, &dp, 0), CUDA_ERROR_NOT_PERMITTED);
	IT_CHECK(fakecuda_used_bytes(0) == 0, "the process got no GPU memory");
}

int main(int argc, char **argv)
{
	const char *t = argc > 1 ? argv[1] : "";
	if (!strcmp(t, "quota"))
		t_quota();
	else if (!strcmp(t, "unlimited"))
		t_unlimited();
	else if (!strcmp(t, "pitch_managed"))
		t_pitch_managed(1);
	else if (!strcmp(t, "managed_ignore"))
		t_pitch_managed(0);
	else if (!strcmp(t, "arrays"))
		t_arrays();
	else if (!strcmp(t, "vmm"))
		t_vmm();
	else if (!strcmp(t, "async"))
		t_async();
	else if (!strcmp(t, "async_streams"))
		t_async_streams();
	else if (!strcmp(t, "async_capture") && argc > 2 && atoi(argv[2]) >= 0 && atoi(argv[2]) < 5)
		t_async_capture(atoi(argv[2]));
	else if (!strcmp(t, "ctx"))
		t_ctx();
	else if (!strcmp(t, "fault"))
		t_fault();
	else if (!strcmp(t, "perdevice") && argc > 3)
		t_perdevice(atol(argv[2]), atol(argv[3]));
	else if (!strcmp(t, "fork"))
		t_fork();
	else if (!strcmp(t, "stress"))
		t_stress();
	else if (!strcmp(t, "threadchurn"))
		t_thread_churn();
	else if (!strcmp(t, "sampler"))
		t_sampler(argc > 2 && !strcmp(argv[2], "bursts"));
	else if (!strcmp(t, "badconfig"))
		t_badconfig();
	else {
		printf("not ok %d - unknown scenario '%s'\n", ++it_seq, t);
		return 2;
	}
	return it_failed;
}
