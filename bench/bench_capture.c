/* What does call-site capture cost on the alloc/free path? Allocate and free in a loop from inside a deep stack
 * (stack_depth nested frames, like a framework called from Python), through vramguard against the test double,
 * whose own alloc/free costs about a hundred nanoseconds: the difference between VRAMGUARD_BACKTRACE settings is
 * vramguard's. Run by bench/run_capture.sh; prints "ns per alloc+free pair" for one setting. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

static long iters = 200000;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noinline)) double loop(int async)
{
	CUdeviceptr p;
	double t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		if (async) {
			cuMemAllocAsync(&p, 1 << 20, NULL);
			cuMemFreeAsync(p, NULL);
		} else {
			cuMemAlloc_v2(&p, 1 << 20);
			cuMemFree_v2(p);
		}
	}
	return (now_ns() - t0) / iters;
}

static __attribute__((noinline)) double nest(int depth, int async)
{
	if (depth == 0)
		return loop(async);
	double r = nest(depth - 1, async);
	__asm__ volatile("" ::: "memory");      /* not a tail call: every level stays on the stack */
	return r;
}

int main(int argc, char **argv)
{
	int stack_depth = argc > 1 ? atoi(argv[1]) : 48;
	if (argc > 2)
		iters = atol(argv[2]);
	cuInit(0);
	nest(stack_depth, 0);           /* warm-up: sites interned, tables grown */
	double best_sync = 1e30, best_async = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		double s = nest(stack_depth, 0), a = nest(stack_depth, 1);
		best_sync = s < best_sync ? s : best_sync;
		best_async = a < best_async ? a : best_async;
	}
	printf("%.0f %.0f\n", best_sync, best_async);
	return 0;
}
