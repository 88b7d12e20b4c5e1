/* Our own NVML access (interposer/nvml/nvml.c) against the real driver: allocates MIB through the driver API on GPU 0,
 * then prints what vg_nvml_process_used and vg_nvml_driver_limits say, and holds the memory until stdin closes.
 * Build: cc -std=gnu11 -I. -I/usr/local/cuda/include tests/gpu/nvml_sampler.c interposer/nvml/nvml.c -ldl
 * Usage: nvml_sampler MIB   (prints "uuid U", "load OK WHY", "used RC BYTES", "limits RC HARD SOFT", "cgroup RC PATH",
 * then "ready") */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#include "interposer/nvml/nvml.h"

void *(*vg_resolve_real_dlsym(void))(void *, const char *)
{
	return dlsym;   /* nothing is interposed in this program */
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	void *cu = dlopen("libcuda.so.1", RTLD_NOW);
	if (!cu) {
		printf("error no libcuda: %s\n", dlerror());
		return 1;
	}
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cu, "cuInit");
	CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(cu, "cuDevicePrimaryCtxRetain");
	CUresult (*setc)(CUcontext) = (CUresult(*)(CUcontext))dlsym(cu, "cuCtxSetCurrent");
	CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))dlsym(cu, "cuMemAlloc_v2");
	CUresult (*getuuid)(CUuuid *, CUdevice) = (CUresult(*)(CUuuid *, CUdevice))dlsym(cu, "cuDeviceGetUuid_v2");
	CUcontext ctx;
	CUdeviceptr p;
	CUuuid u;
	if (init(0) || retain(&ctx, 0) || setc(ctx) || alloc(&p, mib << 20) || getuuid(&u, 0)) {
		printf("error CUDA setup failed\n");
		return 1;
	}
	const unsigned char *b = (const unsigned char *)u.bytes;
	char uuid[64];
	snprintf(uuid, sizeof(uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	printf("uuid %s\n", uuid);
	bool ok = vg_nvml_load();
	printf("load %d %s\n", ok, vg_nvml_error());
	uint64_t used = 0, hard = 0, soft = 0;
	int rc = vg_nvml_process_used(uuid, &used);
	printf("used %d %llu\n", rc, (unsigned long long)used);
	rc = vg_nvml_driver_limits(uuid, &hard, &soft);
	printf("limits %d %llu %llu\n", rc, (unsigned long long)hard, (unsigned long long)soft);
	char cg[4096] = "";
	rc = vg_nvml_cgroup_path(cg, sizeof(cg));
	printf("cgroup %d %s\nready\n", rc, cg);
	fflush(stdout);
	char line[8];
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
