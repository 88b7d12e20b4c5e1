/* driver_api.cu: quota enforcement on the CUDA driver API, reached by direct calls to the exported names (linked
 * with -lcuda; under LD_PRELOAD vramguard's exports win). Run with NVIDIA_GPU_MEMORY_LIMITS=4096 (4 GiB).
 * The hardware free memory is far above 4 GiB, so cuMemGetInfo_v2 must read exactly free = quota - charged bytes.
 * "driver_api --expect-invalid" (NVIDIA_GPU_MEMORY_LIMITS=4XB) only checks that cuInit answers NOT_PERMITTED (800). */
#include <cuda.h>
#include "check.h"

static const unsigned long long QUOTA = 4 * GiB;

static const char *ename(CUresult r)
{
	const char *s = NULL;
	return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "?";
}

/* The exact result matters: a denial must be CUDA_ERROR_OUT_OF_MEMORY (2), which frameworks turn into clean OOMs. */
static int expect(CUresult got, CUresult want, const char *what)
{
	check(got == want, "%s -> %d %s (want %d %s)", what, (int)got, ename(got), (int)want, ename(want));
	return got == want;
}

static void expect_used(unsigned long long used, const char *when)
{
	size_t fr = 0, tot = 0;
	CUresult r = cuMemGetInfo_v2(&fr, &tot);
	check(r == CUDA_SUCCESS && tot == QUOTA && fr == QUOTA - used,
	      "%s: cuMemGetInfo_v2 -> %d, free %.2f / total %.2f MiB (want %.2f / %.2f)", when, (int)r, mib(fr),
	      mib(tot), mib(QUOTA) - mib(used), mib(QUOTA));
}

/* An allocation that should have been denied but was not is freed at once, so later steps see the usage they expect. */
static CUdeviceptr alloc(unsigned long long bytes, CUresult want, const char *why)
{
	char what[160];
	CUdeviceptr p = 0;
	CUresult r = cuMemAlloc_v2(&p, bytes);
	snprintf(what, sizeof what, "cuMemAlloc_v2 %.0f MiB (%s)", mib(bytes), why);
	expect(r, want, what);
	if (r != CUDA_SUCCESS)
		return 0;
	if (want != CUDA_SUCCESS) {
		cuMemFree_v2(p);
		return 0;
	}
	return p;
}

static void release(CUdeviceptr p)
{
	if (p)
		expect(cuMemFree_v2(p), CUDA_SUCCESS, "cuMemFree_v2");
}

static size_t round_up(size_t n, size_t g) { return (n + g - 1) / g * g; }

/* cuMemAllocPitch_v2 is charged pitch x height: the driver pads each row, and that padding is real memory. */
static void pitched(void)
{
	CUdeviceptr p = 0, q = 0;
	size_t pitch = 0, pitch2 = 0, height = 1 << 20;
	CUresult r = cuMemAllocPitch_v2(&p, &pitch, 1000, height, 4);
	if (!expect(r, CUDA_SUCCESS, "cuMemAllocPitch_v2 1000 B x 1 Mi rows"))
		return;
	figure("pitch %zu B x %zu rows = %.2f MiB charged", pitch, height, mib((unsigned long long)pitch * height));
	expect_used((unsigned long long)pitch * height, "pitched allocation");
	/* 4096 B x 896 Ki rows = 3.5 GiB: fits an empty quota, not one holding the first pitched block. */
	r = cuMemAllocPitch_v2(&q, &pitch2, 4096, 7 << 17, 4);
	expect(r, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocPitch_v2 3.5 GiB on top of it");
	if (r == CUDA_SUCCESS)
		cuMemFree_v2(q);
	release(p);
	expect_used(0, "pitched freed");
}

/* cuMemCreate on the device is charged; NCCL's free order (Retain, Unmap, Release, Release) gives it back once.
 * 1 GiB of cuMemAlloc stays live meanwhile, so a double uncharge would show (free is capped at the quota). */
static void vmm(CUdevice dev)
{
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle h = 0, h2 = 0;
	CUdeviceptr va = 0, keep = alloc(GiB, CUDA_SUCCESS, "kept during the VMM steps");
	size_t gran = 0, size;
	CUresult r;

	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = (int)dev;
	expect(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS,
	       "cuMemGetAllocationGranularity");
	if (!gran)
		gran = 2 * MiB;
	size = round_up(2 * GiB, gran);
	figure("VMM granularity %.2f MiB, cuMemCreate %.0f MiB", mib(gran), mib(size));
	r = cuMemCreate(&h, size, &prop, 0);
	if (expect(r, CUDA_SUCCESS, "cuMemCreate 2 GiB, location DEVICE")) {
		CUmemAccessDesc acc;
		expect_used(GiB + size, "after cuMemCreate");
		alloc(3 * GiB, CUDA_ERROR_OUT_OF_MEMORY, "1 GiB + 2 GiB cuMemCreate + 3 GiB");
		expect(cuMemAddressReserve(&va, size, 0, 0, 0), CUDA_SUCCESS, "cuMemAddressReserve");
		expect_used(GiB + size, "address reservation is not charged");
		expect(cuMemMap(va, size, 0, h, 0), CUDA_SUCCESS, "cuMemMap");
		memset(&acc, 0, sizeof acc);
		acc.location = prop.location;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		expect(cuMemSetAccess(va, size, &acc, 1), CUDA_SUCCESS, "cuMemSetAccess");
		expect(cuMemsetD8_v2(va, 0x5a, size), CUDA_SUCCESS, "cuMemsetD8 over the mapping");
		expect(cuStreamSynchronize(0), CUDA_SUCCESS, "cuStreamSynchronize");
		expect(cuMemRetainAllocationHandle(&h2, (void *)va), CUDA_SUCCESS, "cuMemRetainAllocationHandle(addr)");
		expect(cuMemUnmap(va, size), CUDA_SUCCESS, "cuMemUnmap");
		expect(cuMemRelease(h), CUDA_SUCCESS, "cuMemRelease (first)");
		expect_used(GiB + size, "NCCL order: unmapped, first Release, one handle ref left");
		expect(cuMemRelease(h2), CUDA_SUCCESS, "cuMemRelease (second)");
		expect_used(GiB, "NCCL order: second Release gives the 2 GiB back exactly once");
		expect(cuMemAddressFree(va, size), CUDA_SUCCESS, "cuMemAddressFree");
	}
	h = 0;
	r = cuMemCreate(&h, round_up(3 * GiB + GiB / 2, gran), &prop, 0);
	expect(r, CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate 3.5 GiB with 1 GiB in use");
	if (r == CUDA_SUCCESS)
		cuMemRelease(h);
	expect_used(GiB, "after the denied cuMemCreate");

	/* NCCL's host buffers: cuMemCreate on HOST_NUMA is host memory and must not be charged. */
	int numa = -1;
	cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev);
	prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	prop.location.id = numa;
	gran = 0;
	if (numa >= 0 && cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS &&
	    gran && cuMemCreate(&h, round_up(64 * MiB, gran), &prop, 0) == CUDA_SUCCESS) {
		expect_used(GiB, "cuMemCreate 64 MiB on HOST_NUMA is not charged");
		expect(cuMemRelease(h), CUDA_SUCCESS, "cuMemRelease (host)");
		expect_used(GiB, "host handle released");
	} else {
		printf("note: HOST_NUMA cuMemCreate unsupported here (numa id %d), step skipped\n", numa);
	}
	release(keep);
}

int main(int argc, char **argv)
{
	CUdevice dev = 0;
	CUcontext ctx = NULL;
	CUdeviceptr a[4] = {0}, half;
	size_t devtot = 0, fr = 0, tot = 0;

	if (argc > 1 && !strcmp(argv[1], "--expect-invalid")) {
		CUresult r = cuInit(0);
		expect(r, CUDA_ERROR_NOT_PERMITTED, "cuInit under an invalid NVIDIA_GPU_MEMORY_LIMITS");
		figure("cuInit -> %d %s", (int)r, ename(r));
		return finish();
	}
	if (!expect(cuInit(0), CUDA_SUCCESS, "cuInit") || !expect(cuDeviceGet(&dev, 0), CUDA_SUCCESS, "cuDeviceGet") ||
	    !expect(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS, "cuDevicePrimaryCtxRetain") ||
	    !expect(cuCtxSetCurrent(ctx), CUDA_SUCCESS, "cuCtxSetCurrent"))
		return finish();

	expect(cuDeviceTotalMem_v2(&devtot, dev), CUDA_SUCCESS, "cuDeviceTotalMem_v2");
	check(devtot == QUOTA, "cuDeviceTotalMem_v2 = %.2f MiB (want the quota, 4096)", mib(devtot));
	figure("cuDeviceTotalMem_v2 %.0f MiB", mib(devtot));
	expect_used(0, "start");

	/* Plain allocations: exactly the quota fits, one MiB more does not, a free restores headroom. */
	for (int i = 0; i < 3; i++)
		a[i] = alloc(GiB, CUDA_SUCCESS, "one of 3 x 1 GiB");
	expect_used(3 * GiB, "3 x 1 GiB");
	alloc(2 * GiB, CUDA_ERROR_OUT_OF_MEMORY, "3 + 2 GiB > quota");
	expect_used(3 * GiB, "after the denial nothing is charged");
	a[3] = alloc(GiB, CUDA_SUCCESS, "fills the quota exactly");
	expect_used(4 * GiB, "4 GiB in use");
	alloc(MiB, CUDA_ERROR_OUT_OF_MEMORY, "quota full");
	release(a[0]);
	a[0] = 0;
	half = alloc(GiB / 2, CUDA_SUCCESS, "after freeing 1 GiB");
	expect_used(3 * GiB + GiB / 2, "3.5 GiB in use");
	cuMemGetInfo_v2(&fr, &tot);
	figure("at 3.5 GiB used cuMemGetInfo free %.0f / total %.0f MiB", mib(fr), mib(tot));
	for (int i = 0; i < 4; i++)
		release(a[i]);
	release(half);
	expect_used(0, "all plain allocations freed");

	pitched();
	vmm(dev);

	expect_used(0, "end");
	cuMemGetInfo_v2(&fr, &tot);
	figure("end: used %.2f MiB (total - free)", mib(tot - fr));
	expect(cuDevicePrimaryCtxRelease_v2(dev), CUDA_SUCCESS, "cuDevicePrimaryCtxRelease");
	return finish();
}
