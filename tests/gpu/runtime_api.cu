/* runtime_api.cu: quota enforcement seen through the CUDA runtime only (no -lcuda): cudart reaches the driver through
 * dlsym + cuGetProcAddress, the route most programs and frameworks take. Run with NVIDIA_GPU_MEMORY_LIMITS=4096.
 * "runtime_api --expect-invalid" (NVIDIA_GPU_MEMORY_LIMITS=4XB): the first cudaMalloc must fail. */
#include <cuda_runtime.h>
#include "check.h"

static const unsigned long long QUOTA = 4 * GiB;

static int expect(cudaError_t got, cudaError_t want, const char *what)
{
	check(got == want, "%s -> %d %s (want %s)", what, (int)got, cudaGetErrorName(got), cudaGetErrorName(want));
	cudaGetLastError(); /* a denial is not sticky; clear it so later calls report their own result */
	return got == want;
}

/* The hardware free memory is far above 4 GiB, so cudaMemGetInfo must read exactly free = quota - charged bytes. */
static void expect_used(unsigned long long used, const char *when)
{
	size_t fr = 0, tot = 0;
	cudaError_t r = cudaMemGetInfo(&fr, &tot);
	check(r == cudaSuccess && tot == QUOTA && fr == QUOTA - used,
	      "%s: cudaMemGetInfo -> %s, free %.2f / total %.2f MiB (want %.2f / %.2f)", when, cudaGetErrorName(r),
	      mib(fr), mib(tot), mib(QUOTA) - mib(used), mib(QUOTA));
}

/* An allocation that should have been denied but was not is freed at once, so later steps see the usage they expect. */
static void *alloc(unsigned long long bytes, cudaError_t want, const char *why)
{
	char what[160];
	void *p = NULL;
	cudaError_t r = cudaMalloc(&p, bytes);
	snprintf(what, sizeof what, "cudaMalloc %.0f MiB (%s)", mib(bytes), why);
	expect(r, want, what);
	if (r != cudaSuccess)
		return NULL;
	if (want != cudaSuccess) {
		cudaFree(p);
		return NULL;
	}
	return p;
}

static void release(void *p)
{
	if (p)
		expect(cudaFree(p), cudaSuccess, "cudaFree");
}

static void fill_quota(void)
{
	void *chunk[64];
	int n = 0;
	cudaError_t r = cudaSuccess;
	while (n < 64 && (r = cudaMalloc(&chunk[n], 256 * MiB)) == cudaSuccess)
		n++;
	cudaGetLastError();
	check(n == 16 && r == cudaErrorMemoryAllocation, "cudaMalloc 256 MiB chunks: %d fit, then %s (want 16, then "
	      "cudaErrorMemoryAllocation)", n, cudaGetErrorName(r));
	figure("cudaMalloc 256 MiB x %d then %s", n, cudaGetErrorName(r));
	expect_used(n * 256 * MiB, "chunks allocated");
	while (n > 0)
		release(chunk[--n]);
	expect_used(0, "chunks freed");
}

static void async_alloc(cudaStream_t s)
{
	void *p = NULL, *q = NULL;
	cudaError_t r = cudaMallocAsync(&p, 3 * GiB, s);
	if (!expect(r, cudaSuccess, "cudaMallocAsync 3 GiB"))
		return;
	expect_used(3 * GiB, "cudaMallocAsync 3 GiB");
	r = cudaMallocAsync(&q, 2 * GiB, s);
	expect(r, cudaErrorMemoryAllocation, "cudaMallocAsync 2 GiB more");
	if (r == cudaSuccess)
		cudaFreeAsync(q, s);
	expect(cudaFreeAsync(p, s), cudaSuccess, "cudaFreeAsync");
	expect(cudaStreamSynchronize(s), cudaSuccess, "cudaStreamSynchronize");
	expect_used(0, "async freed");
}

static void managed_and_pitch(void)
{
	void *m = NULL, *p = NULL;
	size_t pitch = 0, height = 1 << 20;
	if (expect(cudaMallocManaged(&m, 3 * GiB), cudaSuccess, "cudaMallocManaged 3 GiB")) {
		expect_used(3 * GiB, "managed memory is charged by default");
		alloc(2 * GiB, cudaErrorMemoryAllocation, "3 GiB managed + 2 GiB");
		release(m);
	}
	expect_used(0, "managed freed");
	if (expect(cudaMallocPitch(&p, &pitch, 1000, height), cudaSuccess, "cudaMallocPitch 1000 B x 1 Mi rows")) {
		figure("cudaMallocPitch pitch %zu B = %.2f MiB charged", pitch, mib((unsigned long long)pitch * height));
		expect_used((unsigned long long)pitch * height, "pitched allocation charged pitch x height");
		release(p);
	}
	expect_used(0, "pitch freed");
}

/* cudaMallocArray / cudaMalloc3DArray land in cuArray3DCreate_v2, charged an estimate: 16 B x w x h x d for float4. */
static void arrays(void)
{
	cudaChannelFormatDesc desc = cudaCreateChannelDesc<float4>();
	cudaArray_t arr = NULL;
	cudaError_t r;
	void *big;

	/* 16384 x 20480 float4 = 5 GiB (a 4 GiB one would fit an empty 4 GiB quota exactly). */
	r = cudaMallocArray(&arr, &desc, 16384, 20480);
	expect(r, cudaErrorMemoryAllocation, "cudaMallocArray 16384 x 20480 float4 (5 GiB)");
	if (r == cudaSuccess)
		cudaFreeArray(arr);
	arr = NULL;
	if (expect(cudaMallocArray(&arr, &desc, 8192, 8192), cudaSuccess, "cudaMallocArray 8192 x 8192 float4 (1 GiB)")) {
		size_t fr = 0, tot = 0;
		cudaMemGetInfo(&fr, &tot);
		figure("1 GiB cudaArray charged %.2f MiB", mib(tot - fr));
		alloc(3 * GiB + GiB / 2, cudaErrorMemoryAllocation, "1 GiB array + 3.5 GiB");
		expect(cudaFreeArray(arr), cudaSuccess, "cudaFreeArray");
		big = alloc(3 * GiB + GiB / 2, cudaSuccess, "after cudaFreeArray");
		release(big);
	}
	arr = NULL;
	if (expect(cudaMalloc3DArray(&arr, &desc, make_cudaExtent(512, 512, 256), 0), cudaSuccess,
		   "cudaMalloc3DArray 512 x 512 x 256 float4 (1 GiB)")) {
		alloc(3 * GiB + GiB / 2, cudaErrorMemoryAllocation, "1 GiB 3D array + 3.5 GiB");
		expect(cudaFreeArray(arr), cudaSuccess, "cudaFreeArray (3D)");
	}
	expect_used(0, "arrays freed");
}

/* A cudaMallocAsync inside stream capture only records a graph node: no memory exists yet, so nothing is charged
 * (and the captured cudaFreeAsync must not uncharge either). 1 GiB stays live so a wrong uncharge would show. */
static void capture(cudaStream_t s)
{
	void *keep = alloc(GiB, cudaSuccess, "kept during capture"), *g = NULL;
	cudaGraph_t graph = NULL;
	cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

	if (!expect(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess, "cudaStreamBeginCapture"))
		goto out;
	expect(cudaMallocAsync(&g, GiB, s), cudaSuccess, "cudaMallocAsync 1 GiB while capturing");
	expect_used(GiB, "during capture the captured 1 GiB is not charged");
	expect(cudaMemsetAsync(g, 0, GiB, s), cudaSuccess, "cudaMemsetAsync (captured)");
	expect(cudaFreeAsync(g, s), cudaSuccess, "cudaFreeAsync while capturing");
	expect(cudaStreamIsCapturing(s, &st), cudaSuccess, "cudaStreamIsCapturing");
	check(st == cudaStreamCaptureStatusActive, "capture still active (status %d)", (int)st);
	expect(cudaStreamEndCapture(s, &graph), cudaSuccess, "cudaStreamEndCapture");
	expect_used(GiB, "after capture");
	if (graph)
		expect(cudaGraphDestroy(graph), cudaSuccess, "cudaGraphDestroy");
	expect_used(GiB, "graph destroyed");
out:
	release(keep);
}

int main(int argc, char **argv)
{
	cudaDeviceProp prop;
	cudaStream_t s = NULL;
	size_t fr = 0, tot = 0;

	if (argc > 1 && !strcmp(argv[1], "--expect-invalid")) {
		void *p = NULL;
		cudaError_t r = cudaMalloc(&p, MiB);
		check(r != cudaSuccess, "first cudaMalloc under an invalid NVIDIA_GPU_MEMORY_LIMITS -> %d %s", (int)r,
		      cudaGetErrorName(r));
		figure("first cudaMalloc -> %d %s", (int)r, cudaGetErrorName(r));
		return finish();
	}
	if (!expect(cudaSetDevice(0), cudaSuccess, "cudaSetDevice") || !expect(cudaFree(0), cudaSuccess, "cudaFree(0)"))
		return finish();

	cudaMemGetInfo(&fr, &tot);
	figure("cudaMemGetInfo free %.0f / total %.0f MiB", mib(fr), mib(tot));
	expect_used(0, "start");
	if (expect(cudaGetDeviceProperties(&prop, 0), cudaSuccess, "cudaGetDeviceProperties")) {
		check(prop.totalGlobalMem == QUOTA, "cudaGetDeviceProperties totalGlobalMem = %.0f MiB (want 4096; the "
		      "hardware size means cudart did not ask cuDeviceTotalMem_v2 through us)", mib(prop.totalGlobalMem));
		figure("%s totalGlobalMem %.0f MiB", prop.name, mib(prop.totalGlobalMem));
	}

	fill_quota();
	if (expect(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess, "cudaStreamCreate")) {
		async_alloc(s);
		capture(s);
		expect(cudaStreamDestroy(s), cudaSuccess, "cudaStreamDestroy");
	}
	managed_and_pitch();
	arrays();

	expect_used(0, "end");
	cudaMemGetInfo(&fr, &tot);
	figure("end: used %.2f MiB", mib(tot - fr));
	return finish();
}
