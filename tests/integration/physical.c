/* Device counting (VRAMGUARD_COUNT=device, the default) against the test double, which models what a GPU holds:
 * stream-ordered pools with a reserve and a release threshold, graph memory, context and module footprints, and (with
 * the fake NVML) the process's own figure. Run with NVIDIA_GPU_MEMORY_LIMITS=1024 (1 GiB) on a 16 GiB double.
 * Scenarios: pools, graphs, driver, allocations (the same steps under VRAMGUARD_COUNT=allocations). */
#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

#include <stdint.h>

#define Q GiB

static size_t mem_free(void)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return f;
}

static void setup(CUstream *s)
{
	CUcontext ctx;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	IT_RC(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	IT_RC(cuStreamCreate(s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
}

/* The default pool: what it holds is charged, whatever has been handed out. */
static void t_pools(void)
{
	CUstream s;
	CUdeviceptr a, b, c;
	CUmemoryPool pool;
	setup(&s);
	IT_RC(cuDeviceGetMemPool(&pool, 0), CUDA_SUCCESS);

	IT_RC(cuMemAllocAsync(&a, 512 * MiB, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 512 * MiB, "the pool's growth is charged (free %zu)", mem_free());
	IT_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 512 * MiB, "freed to the pool, still held by it: still charged (free %zu)",
		 mem_free());
	IT_RC(cuMemAllocAsync(&a, 512 * MiB, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 512 * MiB, "served from what the pool holds: costs nothing more (free %zu)",
		 mem_free());
	IT_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	IT_RC(cuStreamSynchronize(s), CUDA_SUCCESS);
	IT_CHECK(fakecuda_pool_reserved(0) == 0, "threshold 0: the pool gave its memory back at the sync");
	IT_CHECK(mem_free() == Q, "and the charge went with it (free %zu)", mem_free());

	/* Threshold at the maximum (PyTorch's cudaMallocAsync backend): the pool keeps everything. */
	cuuint64_t max = UINT64_MAX;
	IT_RC(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max), CUDA_SUCCESS);
	IT_RC(cuMemAllocAsync(&a, 700 * MiB, s), CUDA_SUCCESS);
	IT_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	IT_RC(cuStreamSynchronize(s), CUDA_SUCCESS);
	IT_CHECK(fakecuda_pool_reserved(0) == 700 * MiB, "the pool keeps 700 MiB after free + sync");
	IT_CHECK(mem_free() == Q - 700 * MiB, "kept memory stays charged (free %zu)", mem_free());
	/* CuPy's test_free_all_blocks_large_chunk: a second 70 % must not fit next to what the pool keeps, unless the
	 * pool gives it back. A plain allocation past the quota trims the pool first and then fits. */
	IT_RC(cuMemAlloc_v2(&b, 700 * MiB), CUDA_SUCCESS);
	IT_CHECK(fakecuda_pool_reserved(0) == 0, "before refusing, the pool's unused memory was trimmed (%llu left)",
		 fakecuda_pool_reserved(0));
	IT_CHECK(mem_free() == Q - 700 * MiB, "the plain allocation is charged, the trimmed pool not (free %zu)",
		 mem_free());
	IT_RC(cuMemAllocAsync(&a, 400 * MiB, s), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(fakecuda_pool_reserved(0) + fakecuda_used_bytes(0) <= Q, "the driver never held more than the quota");
	IT_RC(cuMemFree_v2(b), CUDA_SUCCESS);

	/* A created pool, cuMemAllocFromPoolAsync, cuMemPoolTrimTo, cuMemPoolDestroy. */
	CUmemPoolProps props;
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CUmemoryPool mine;
	IT_RC(cuMemPoolCreate(&mine, &props), CUDA_SUCCESS);
	IT_RC(cuMemPoolSetAttribute(mine, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max), CUDA_SUCCESS);
	IT_RC(cuMemAllocFromPoolAsync(&c, 300 * MiB, mine, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 300 * MiB, "a created pool's growth is charged (free %zu)", mem_free());
	IT_RC(cuMemFreeAsync(c, s), CUDA_SUCCESS);
	IT_RC(cuStreamSynchronize(s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 300 * MiB, "its kept memory too (free %zu)", mem_free());
	IT_RC(cuMemPoolTrimTo(mine, 100 * MiB), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 100 * MiB, "cuMemPoolTrimTo gives the charge back with the memory (free %zu)",
		 mem_free());
	IT_RC(cuMemPoolDestroy(mine), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q, "cuMemPoolDestroy releases the rest (free %zu)", mem_free());

	/* A host pool is not device memory: its allocations are counted by their size, as before device counting,
	 * and never by a reserve the device does not hold. */
	props.location.type = CU_MEM_LOCATION_TYPE_HOST;
	props.location.id = 0;
	CUmemoryPool host;
	IT_RC(cuMemPoolCreate(&host, &props), CUDA_SUCCESS);
	IT_RC(cuMemAllocFromPoolAsync(&c, 64 * MiB, host, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 64 * MiB, "a host pool's allocation is counted by its size (free %zu)", mem_free());
	IT_RC(cuMemFreeAsync(c, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q, "and uncharged at its free (free %zu)", mem_free());
	IT_RC(cuMemPoolDestroy(host), CUDA_SUCCESS);

	/* Growth past the quota is refused before the driver is asked. */
	IT_RC(cuMemAllocAsync(&a, Q + 2 * MiB, s), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(fakecuda_pool_reserved(0) == 0, "the refused growth never reached the driver");
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

/* Graph memory: the device's reservation is charged when vramguard next looks (here: cuMemGetInfo). */
static void t_graphs(void)
{
	CUstream s;
	CUdeviceptr a;
	setup(&s);
	IT_CHECK(fakecuda_graph_mem(0, 256 * MiB, 256 * MiB) == 0, "graphs reserve 256 MiB (as a launch would)");
	IT_CHECK(mem_free() == Q - 256 * MiB, "graph memory is charged (free %zu)", mem_free());
	IT_RC(cuMemAlloc_v2(&a, 800 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(fakecuda_graph_mem(0, 256 * MiB, 0) == 0, "the graphs' allocations are freed (reserve kept)");
	IT_RC(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q, "cuDeviceGraphMemTrim gives it back (free %zu)", mem_free());
	IT_RC(cuMemAlloc_v2(&a, 800 * MiB), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

/* The driver's own memory (FAKECUDA_CTX_BYTES=300M, FAKECUDA_MODULE_BYTES=64M), measured through the fake NVML. */
static void t_driver(void)
{
	CUstream s;
	CUdeviceptr a;
	CUmodule m;
	setup(&s);
	/* The context's creation waited for a measurement: the first allocation already sees it. */
	IT_CHECK(mem_free() == Q - 300 * MiB, "the context's 300 MiB are charged before the first allocation (free %zu)",
		 mem_free());
	IT_RC(cuMemAlloc_v2(&a, 800 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(cuMemAlloc_v2(&a, 600 * MiB), CUDA_SUCCESS);
	IT_RC(cuModuleLoadData(&m, "image"), CUDA_SUCCESS);
	/* A module load wakes the sampler; it measures within a round. */
	size_t f = 0;
	for (int i = 0; i < 200 && (f = mem_free()) != Q - 964 * MiB; i++)
		it_sleep_s(0.01);
	IT_CHECK(f == Q - 964 * MiB, "a module's 64 MiB are charged soon after its load (free %zu)", f);
	CUdeviceptr b;
	IT_RC(cuMemAlloc_v2(&b, 100 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(fakecuda_process_device_bytes(0) <= Q, "the process never held more than the quota (%llu)",
		 fakecuda_process_device_bytes(0));
	IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
	IT_RC(cuModuleUnload(m), CUDA_SUCCESS);
	for (int i = 0; i < 200 && (f = mem_free()) != Q - 300 * MiB; i++) {
		IT_RC(cuModuleLoadData(&m, "x"), CUDA_SUCCESS);   /* a load is what wakes the sampler early */
		IT_RC(cuModuleUnload(m), CUDA_SUCCESS);
		it_sleep_s(0.02);
	}
	IT_CHECK(f == Q - 300 * MiB, "an unloaded module's charge goes at a later round (free %zu)", f);
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

/* VRAMGUARD_DRIVER_HEADROOM=100M with FAKECUDA_CTX_BYTES=300M, FAKECUDA_MODULE_BYTES=64M: the context is charged
 * 300 + 100 MiB; a module's growth is inside the headroom until it is used up. */
static void t_headroom(void)
{
	CUstream s;
	CUmodule m1, m2;
	setup(&s);
	IT_CHECK(mem_free() == Q - 400 * MiB, "the context is charged with 100 MiB of headroom (free %zu)", mem_free());
	IT_RC(cuModuleLoadData(&m1, "image"), CUDA_SUCCESS);
	it_sleep_s(0.1);
	IT_CHECK(mem_free() == Q - 400 * MiB, "a 64 MiB module fits in the headroom: no more is charged (free %zu)",
		 mem_free());
	IT_RC(cuModuleLoadData(&m2, "image"), CUDA_SUCCESS);
	size_t f = 0;
	for (int i = 0; i < 200 && (f = mem_free()) != Q - 428 * MiB; i++)
		it_sleep_s(0.01);
	IT_CHECK(f == Q - 428 * MiB, "past the headroom, what is measured is charged (free %zu)", f);
	IT_RC(cuModuleUnload(m1), CUDA_SUCCESS);
	IT_RC(cuModuleUnload(m2), CUDA_SUCCESS);
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

/* VRAMGUARD_COUNT=allocations: the bytes asked for, as before device counting. */
static void t_allocations(void)
{
	CUstream s;
	CUdeviceptr a;
	setup(&s);
	IT_RC(cuMemAllocAsync(&a, 512 * MiB, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q - 512 * MiB, "the allocation is charged (free %zu)", mem_free());
	IT_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	IT_CHECK(mem_free() == Q, "cuMemFreeAsync uncharges at once, pool or not (free %zu)", mem_free());
	IT_CHECK(fakecuda_pool_reserved(0) == 512 * MiB, "while the pool still holds it");
	IT_CHECK(fakecuda_graph_mem(0, 256 * MiB, 256 * MiB) == 0, "graph memory held");
	IT_CHECK(mem_free() == Q, "graph memory is not counted (free %zu)", mem_free());
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
	const char *t = argc > 1 ? argv[1] : "";
	if (!strcmp(t, "pools"))
		t_pools();
	else if (!strcmp(t, "graphs"))
		t_graphs();
	else if (!strcmp(t, "driver"))
		t_driver();
	else if (!strcmp(t, "headroom"))
		t_headroom();
	else if (!strcmp(t, "allocations"))
		t_allocations();
	else {
		printf("not ok %d - unknown scenario '%s'\n", ++it_seq, t);
		return 2;
	}
	return it_failed;
}
