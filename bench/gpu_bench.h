/* Shared by the GPU benchmark programs (bench/gpu_alloc_cost.c, bench/gpu_startup.c), each built as one file by
 * bench/run_gpu.sh with nvcc or cc: "gpu_bench.h" is found beside them. */
#ifndef VG_GPU_BENCH_H
#define VG_GPU_BENCH_H

#include <stdio.h>
#include <string.h>

/* Whether libvramguard is mapped into this process: each program prints it, and bench/gpu_stats.py refuses a
 * comparison whose sides are not what they claim. */
static inline int preloaded(void)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && !found && fgets(line, sizeof line, f))
		found = strstr(line, "libvramguard") != NULL;
	if (f)
		fclose(f);
	return found;
}

#endif
