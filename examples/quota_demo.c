/* quota_demo: what a job sees under vramguard. It asks the driver for memory in 512 MiB pieces until the GPU (or
 * the quota) says no, the way a framework's caching allocator grows, then frees one piece and tries again.
 * It loads libcuda.so.1 with dlopen, like JAX and cudart do, so one binary runs on the real driver or on the test
 * double. Run it through scripts/demo.sh. */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#define MiB (1024.0 * 1024.0)

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);   /* keep our lines in order with vramguard's stderr */
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (!cuda) {
		/* The usual reason is a machine without an NVIDIA driver: say how to reach the test double instead. */
		fprintf(stderr, "quota_demo: cannot load libcuda.so.1: %s\n"
			"quota_demo: no NVIDIA driver here? `make try` opens a shell on the test double "
			"(or prefix LD_LIBRARY_PATH=build/tests)\n", dlerror());
		return 1;
	}
	PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(cuda, "cuInit");
	PFN_cuDeviceGet_v2000 dev_get = (PFN_cuDeviceGet_v2000)dlsym(cuda, "cuDeviceGet");
	PFN_cuDevicePrimaryCtxRetain_v7000 retain = (PFN_cuDevicePrimaryCtxRetain_v7000)dlsym(cuda, "cuDevicePrimaryCtxRetain");
	PFN_cuCtxSetCurrent_v4000 set_current = (PFN_cuCtxSetCurrent_v4000)dlsym(cuda, "cuCtxSetCurrent");
	PFN_cuMemGetInfo_v3020 get_info = (PFN_cuMemGetInfo_v3020)dlsym(cuda, "cuMemGetInfo_v2");
	PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)dlsym(cuda, "cuMemAlloc_v2");
	PFN_cuMemFree_v3020 mfree = (PFN_cuMemFree_v3020)dlsym(cuda, "cuMemFree_v2");
	if (!init || !dev_get || !retain || !set_current || !get_info || !alloc || !mfree) {
		fprintf(stderr, "quota_demo: libcuda.so.1 lacks a needed entry point\n");
		return 1;
	}
	CUdevice dev;
	CUcontext ctx;
	CUresult rc = init(0);
	if (rc == CUDA_SUCCESS)
		rc = dev_get(&dev, 0);
	if (rc == CUDA_SUCCESS)
		rc = retain(&ctx, dev);
	if (rc == CUDA_SUCCESS)
		rc = set_current(ctx);
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "quota_demo: CUDA initialisation failed with error %d\n", (int)rc);
		return 1;
	}
	size_t free_b = 0, total_b = 0;
	get_info(&free_b, &total_b);
	printf("cuMemGetInfo: total %.0f MiB, free %.0f MiB\n", total_b / MiB, free_b / MiB);

	enum { MAX = 4096 };
	static CUdeviceptr held[MAX];
	int n = 0;
	while (n < MAX && (rc = alloc(&held[n], 512 * 1024 * 1024)) == CUDA_SUCCESS)
		n++;
	printf("allocated %d x 512 MiB = %.0f MiB, then cuMemAlloc returned %d%s\n", n, n * 512.0, (int)rc,
	       rc == CUDA_ERROR_OUT_OF_MEMORY ? " (CUDA_ERROR_OUT_OF_MEMORY)" : "");
	get_info(&free_b, &total_b);
	printf("cuMemGetInfo: total %.0f MiB, free %.0f MiB\n", total_b / MiB, free_b / MiB);
	if (n > 0) {
		mfree(held[--n]);
		rc = alloc(&held[n], 256 * 1024 * 1024);
		printf("after freeing one piece, a 256 MiB allocation returned %d\n", (int)rc);
		if (rc == CUDA_SUCCESS)
			n++;
	}
	while (n > 0)
		mfree(held[--n]);
	get_info(&free_b, &total_b);
	printf("all freed: cuMemGetInfo free %.0f MiB\n", free_b / MiB);
	return 0;
}
