/* A long-running CUDA process for `vramguard dump` tests: initialises CUDA (or not, with "nocuda"), allocates,
 * says "ready" and sleeps until the file argv[1] exists (or argv[3] seconds pass, 20 by default; argv[2]: "cuda",
 * "nocuda", or "ctx": CUDA through device 0's primary context, which starts the interposer's sampler thread, and a
 * second allocation of 1 MiB freed at once: two allocations made, one live if the first was granted; or "busy": "ctx"
 * and a stream destroyed while the test double says work is queued on it). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "tests/fakecuda/fakecuda.h"

int main(int argc, char **argv)
{
	const char *stop = argc > 1 ? argv[1] : "/nonexistent";
	bool busy = argc > 2 && !strcmp(argv[2], "busy");
	bool ctx = busy || (argc > 2 && !strcmp(argv[2], "ctx"));
	if (!(argc > 2 && !strcmp(argv[2], "nocuda"))) {
		CUdeviceptr p, q;
		CUcontext c;
		cuInit(0);
		if (ctx && (cuDevicePrimaryCtxRetain(&c, 0) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS))
			return 1;
		cuMemAlloc_v2(&p, 64 << 20);
		if (ctx && cuMemAlloc_v2(&q, 1 << 20) == CUDA_SUCCESS)
			cuMemFree_v2(q);
		CUstream s;
		if (busy && cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS) {
			fakecuda_stream_set_pending(s, 1);
			cuStreamDestroy_v2(s);
		}
	}
	printf("ready\n");
	fflush(stdout);
	int ticks = argc > 3 ? atoi(argv[3]) * 20 : 400;
	for (int i = 0; i < ticks && access(stop, F_OK) != 0; i++)
		usleep(50 * 1000);
	return 0;
}
