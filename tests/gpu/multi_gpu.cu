/* multi_gpu.cu: per-device quotas with NVIDIA_GPU_MEMORY_LIMITS=0:2G,1:1G (driver API, linked with -lcuda).
 * Each device is charged on its own: cuMemAlloc* by the current context's device, cuMemCreate by
 * prop->location.id (whatever context is current). Needs two visible GPUs; run.sh skips it otherwise. */
#include <cuda.h>
#include "check.h"

static const unsigned long long QUOTA[2] = {2 * GiB, 1 * GiB};

static const char *ename(CUresult r)
{
	const char *s = NULL;
	return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "?";
}

static int expect(CUresult got, CUresult want, const char *what)
{
	check(got == want, "%s -> %d %s (want %d %s)", what, (int)got, ename(got), (int)want, ename(want));
	return got == want;
}

/* cuMemGetInfo_v2 answers for the current context's device. */
static void expect_used(int d, unsigned long long used, const char *when)
{
	size_t fr = 0, tot = 0;
	CUresult r = cuMemGetInfo_v2(&fr, &tot);
	check(r == CUDA_SUCCESS && tot == QUOTA[d] && fr == QUOTA[d] - used,
	      "GPU %d %s: cuMemGetInfo_v2 -> %d, free %.0f / total %.0f MiB (want %.0f / %.0f)", d, when, (int)r,
	      mib(fr), mib(tot), mib(QUOTA[d]) - mib(used), mib(QUOTA[d]));
}

static CUdeviceptr alloc(unsigned long long bytes, CUresult want, const char *what)
{
	CUdeviceptr p = 0;
	CUresult r = cuMemAlloc_v2(&p, bytes);
	expect(r, want, what);
	if (r == CUDA_SUCCESS && want != CUDA_SUCCESS) {
		cuMemFree_v2(p);
		p = 0;
	}
	return r == CUDA_SUCCESS ? p : 0;
}

/* cuMemCreate of 512 MiB on device `on`; returns the driver's answer, releasing any handle it made. */
static CUresult create_on(int on)
{
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle h = 0;
	CUresult r;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = on;
	r = cuMemCreate(&h, 512 * MiB, &prop, 0);
	if (r == CUDA_SUCCESS)
		cuMemRelease(h);
	return r;
}

int main(void)
{
	CUdevice dev[2] = {0, 1};
	CUcontext ctx[2] = {NULL, NULL};
	CUdeviceptr p0 = 0, p1 = 0;
	int n = 0;

	if (!expect(cuInit(0), CUDA_SUCCESS, "cuInit") || !expect(cuDeviceGetCount(&n), CUDA_SUCCESS, "cuDeviceGetCount"))
		return finish();
	check(n >= 2, "%d devices visible (want >= 2)", n);
	if (n < 2)
		return finish();
	for (int d = 0; d < 2; d++) {
		size_t tot = 0;
		expect(cuDeviceGet(&dev[d], d), CUDA_SUCCESS, "cuDeviceGet");
		expect(cuDevicePrimaryCtxRetain(&ctx[d], dev[d]), CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
		expect(cuDeviceTotalMem_v2(&tot, dev[d]), CUDA_SUCCESS, "cuDeviceTotalMem_v2");
		check(tot == QUOTA[d], "GPU %d cuDeviceTotalMem_v2 = %.0f MiB (want %.0f)", d, mib(tot), mib(QUOTA[d]));
		figure("GPU %d total %.0f MiB", d, mib(tot));
	}

	expect(cuCtxSetCurrent(ctx[0]), CUDA_SUCCESS, "cuCtxSetCurrent GPU 0");
	expect_used(0, 0, "start");
	p0 = alloc(GiB + GiB / 2, CUDA_SUCCESS, "GPU 0: cuMemAlloc 1.5 GiB (quota 2 GiB)");
	expect_used(0, GiB + GiB / 2, "1.5 GiB");

	expect(cuCtxSetCurrent(ctx[1]), CUDA_SUCCESS, "cuCtxSetCurrent GPU 1");
	expect_used(1, 0, "start (GPU 0's usage must not show here)");
	alloc(GiB + GiB / 2, CUDA_ERROR_OUT_OF_MEMORY, "GPU 1: cuMemAlloc 1.5 GiB (quota 1 GiB)");
	p1 = alloc(768 * MiB, CUDA_SUCCESS, "GPU 1: cuMemAlloc 768 MiB");
	expect_used(1, 768 * MiB, "768 MiB");

	/* With GPU 0's context current, cuMemCreate is charged where prop->location.id says. */
	expect(cuCtxSetCurrent(ctx[0]), CUDA_SUCCESS, "cuCtxSetCurrent GPU 0");
	expect(create_on(1), CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate 512 MiB on GPU 1 (256 MiB left there)");
	expect(create_on(0), CUDA_SUCCESS, "cuMemCreate 512 MiB on GPU 0 (512 MiB left there)");
	expect_used(0, GiB + GiB / 2, "after the cuMemCreate steps");

	if (p0)
		expect(cuMemFree_v2(p0), CUDA_SUCCESS, "cuMemFree GPU 0");
	expect_used(0, 0, "end");
	expect(cuCtxSetCurrent(ctx[1]), CUDA_SUCCESS, "cuCtxSetCurrent GPU 1");
	if (p1)
		expect(cuMemFree_v2(p1), CUDA_SUCCESS, "cuMemFree GPU 1");
	expect_used(1, 0, "end");
	return finish();
}
