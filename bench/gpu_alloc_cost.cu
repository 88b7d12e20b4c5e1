// What vramguard adds to real allocations: cudaMalloc+cudaFree and cudaMallocAsync+cudaFreeAsync pairs (1 MiB)
// from a 48-frame stack, timed on the host. Run by bench/run_gpu.sh under several VRAMGUARD_BACKTRACE settings.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>

static double now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noinline)) void loop(int iters, cudaStream_t s, double *sync_ns, double *async_ns)
{
	void *p;
	double t0 = now_ns();
	for (int i = 0; i < iters; i++) {
		if (cudaMalloc(&p, 1 << 20) != cudaSuccess || cudaFree(p) != cudaSuccess)
			exit(1);
	}
	*sync_ns = (now_ns() - t0) / iters;
	t0 = now_ns();
	for (int i = 0; i < iters; i++) {
		if (cudaMallocAsync(&p, 1 << 20, s) != cudaSuccess || cudaFreeAsync(p, s) != cudaSuccess)
			exit(1);
	}
	cudaStreamSynchronize(s);
	*async_ns = (now_ns() - t0) / iters;
}

static __attribute__((noinline)) void nest(int depth, int iters, cudaStream_t s, double *a, double *b)
{
	if (depth == 0) {
		loop(iters, s, a, b);
		return;
	}
	nest(depth - 1, iters, s, a, b);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	cudaStream_t s;
	cudaStreamCreate(&s);
	double a, b, best_a = 1e30, best_b = 1e30;
	nest(48, 100, s, &a, &b);       // warm-up
	for (int rep = 0; rep < 5; rep++) {
		nest(48, iters, s, &a, &b);
		best_a = a < best_a ? a : best_a;
		best_b = b < best_b ? b : best_b;
	}
	printf("%.0f %.0f\n", best_a, best_b);
	return 0;
}
