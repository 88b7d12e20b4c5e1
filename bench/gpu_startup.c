/* Process start-up to the first CUDA allocation, with or without the preload: the launcher (bench/gpu_stats.py
 * launch) reads CLOCK_MONOTONIC just before execve and passes it as argv[1]; this program reads the same clock at
 * main and right after each step returns. Built twice by bench/run_gpu.sh: with cc against libcuda (driver API:
 * cuInit, the primary context, cuMemAlloc_v2) and with nvcc -DVG_BENCH_CUDART (cudaMalloc, which initialises the
 * runtime and creates the context itself: what a CUDA program pays). vramguard's own set-up runs lazily inside
 * the first CUDA call, so it is inside every figure after "main".
 * Prints "preload 0|1" and "figure NAME MS" lines (milliseconds since the launcher's execve). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#ifdef VG_BENCH_CUDART
#include <cuda_runtime_api.h>
#define PREFIX "startup-rt:"
#else
#define PREFIX "startup-drv:"
#endif

#include "gpu_bench.h"

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long long t_main = now_ns(), t0;
	char *end;
	if (argc != 2 || (t0 = strtoll(argv[1], &end, 10)) <= 0 || *end) {
		fprintf(stderr, "usage: gpu_startup T0_NS  (run it through: python3 bench/gpu_stats.py launch)\n");
		return 2;
	}
#ifdef VG_BENCH_CUDART
	void *p = NULL;
	int r = (int)cudaMalloc(&p, 1 << 20);
	long long t_alloc = now_ns();
	if (r != 0) {
		fprintf(stderr, "gpu_startup: cudaMalloc failed: error %d\n", r);
		return 1;
	}
	printf("figure " PREFIX "exec-to-main %.3f\n", (t_main - t0) / 1e6);
	printf("figure " PREFIX "exec-to-cudaMalloc %.3f\n", (t_alloc - t0) / 1e6);
	cudaFree(p);
#else
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;
	CUresult r = cuInit(0);
	long long t_init = now_ns();
	if (r == CUDA_SUCCESS)
		r = cuDeviceGet(&dev, 0);
	if (r == CUDA_SUCCESS)
		r = cuDevicePrimaryCtxRetain(&ctx, dev);
	if (r == CUDA_SUCCESS)
		r = cuCtxSetCurrent(ctx);
	long long t_ctx = now_ns();
	if (r == CUDA_SUCCESS)
		r = cuMemAlloc_v2(&d, 1 << 20);
	long long t_alloc = now_ns();
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "gpu_startup: driver call failed: error %d\n", (int)r);
		return 1;
	}
	printf("figure " PREFIX "exec-to-main %.3f\n", (t_main - t0) / 1e6);
	printf("figure " PREFIX "exec-to-cuInit %.3f\n", (t_init - t0) / 1e6);
	printf("figure " PREFIX "exec-to-context %.3f\n", (t_ctx - t0) / 1e6);
	printf("figure " PREFIX "exec-to-cuMemAlloc %.3f\n", (t_alloc - t0) / 1e6);
	/* The same without the driver's context creation (tens of ms that vary by tens of ms from run to run, and in
	 * which vramguard does nothing): exec to the end of cuInit, plus the first allocation. Every piece of
	 * vramguard's own start-up is in there: loading, its constructor, its initialization at the first CUDA call,
	 * the first use of the device. */
	printf("figure " PREFIX "exec-to-cuMemAlloc-no-ctx %.3f\n", ((t_init - t0) + (t_alloc - t_ctx)) / 1e6);
	cuMemFree_v2(d);
#endif
	/* After the timed part: reading /proc/self/maps is not free. */
	printf("preload %d\n", preloaded());
	return 0;
}
