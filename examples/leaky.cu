/* leaky: a CUDA program with two bugs for vramguard's report to find.
 *
 *   1. leak_buffers() allocates 3 x 64 MiB with cudaMalloc and never frees them (a leak of 192 MiB).
 *   2. make_stream() creates a stream, submit_work() queues a kernel that spins for ~1.5 s on it, and finish()
 *      destroys the stream at once, while that work is still queued (legal, but usually a missing synchronize).
 *
 * scratch_roundtrip() allocates 16 MiB and frees it: not a leak, so it must not show up as outstanding.
 *
 * It uses the runtime API (cudart), which reaches the driver through cuGetProcAddress, as most programs do.
 * The helpers are `static` (internal linkage) and named in the report without -rdynamic: vramguard reads the
 * executable's .symtab. They sit in an extern "C" block so that both report forms show plain names (the text form
 * demangles C++ names, the JSON keeps them mangled), and are noinline and noclone so that -O2 keeps each one a frame of its own under its own
 * name (not inlined into main, not "leak_buffers.constprop.0").
 *
 * Build and run (from the repository root):
 *   nvcc -O2 -g -o build/leaky examples/leaky.cu
 *   LD_PRELOAD=$PWD/build/libvramguard.so ./build/leaky
 *       the text report goes to stderr at exit (see examples/leaky.expected.txt)
 *   VRAMGUARD_REPORT=/tmp/leaky-%p-%r.json VRAMGUARD_REPORT_FORMAT=json LD_PRELOAD=$PWD/build/libvramguard.so ./build/leaky
 *       the same report as JSON in /tmp/leaky-<pid>-exit.json
 *   VRAMGUARD_STREAM_CHECK=sync LD_PRELOAD=$PWD/build/libvramguard.so ./build/leaky
 *       vramguard waits for the busy stream before destroying it (finish() then takes ~1.5 s)
 * Options: leaky [seconds of kernel work, default 1.5]
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <cuda_runtime.h>

#define MiB (1024ull * 1024ull)

#define CHECK(call)                                                                                  \
	do {                                                                                         \
		cudaError_t err_ = (call);                                                           \
		if (err_ != cudaSuccess) {                                                           \
			fprintf(stderr, "leaky: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One thread spins until `cycles` SM clock cycles have passed. */
__global__ void spin(long long cycles, int *done)
{
	long long start = clock64();
	while (clock64() - start < cycles)
		;
	*done = 1;
}

extern "C" {

/* Bug 1: the pointers are dropped on the floor. */
static __attribute__((noinline, noclone)) void leak_buffers(int n, size_t bytes)
{
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		CHECK(cudaMalloc(&p, bytes));
		CHECK(cudaMemset(p, 0, bytes));
		printf("leak_buffers: cudaMalloc(%llu MiB) = %p, never freed\n", (unsigned long long)(bytes / MiB), p);
	}
}

/* Not a bug: allocated and freed. */
static __attribute__((noinline, noclone)) void scratch_roundtrip(size_t bytes)
{
	void *p = NULL;
	CHECK(cudaMalloc(&p, bytes));
	CHECK(cudaMemset(p, 0, bytes));
	CHECK(cudaFree(p));
	printf("scratch_roundtrip: cudaMalloc(%llu MiB) and cudaFree: not a leak\n", (unsigned long long)(bytes / MiB));
}

static __attribute__((noinline, noclone)) cudaStream_t make_stream(void)
{
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	printf("make_stream: created stream %p\n", (void *)s);
	return s;
}

static __attribute__((noinline, noclone)) void submit_work(cudaStream_t s, double seconds, int *done)
{
	int khz = 0;
	CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));   /* peak SM clock */
	long long cycles = (long long)(seconds * khz * 1e3);
	spin<<<1, 1, 0, s>>>(cycles, done);
	CHECK(cudaGetLastError());
	printf("submit_work: queued %.1f s of kernel work on stream %p (%lld cycles at %d MHz)\n", seconds, (void *)s,
	       cycles, khz / 1000);
}

/* Bug 2: no cudaStreamSynchronize(s) before the destroy. */
static __attribute__((noinline, noclone)) double finish(cudaStream_t s)
{
	double t0 = now_ms();
	CHECK(cudaStreamDestroy(s));
	double ms = now_ms() - t0;
	printf("finish: cudaStreamDestroy returned after %.1f ms (the work was still queued)\n", ms);
	return ms;
}

} /* extern "C" */

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.5;
	volatile int nleak = 3;     /* volatile: -O2 must not unroll the loop into three call sites */
	int *done = NULL, host_done = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	double t0 = now_ms();
	CHECK(cudaMalloc(&done, sizeof(int)));      /* freed below */
	CHECK(cudaMemset(done, 0, sizeof(int)));

	leak_buffers(nleak, 64 * MiB);
	scratch_roundtrip(16 * MiB);
	cudaStream_t s = make_stream();
	submit_work(s, seconds, done);
	double destroy_ms = finish(s);

	CHECK(cudaDeviceSynchronize());             /* the kernel ran on after the destroy: wait for it here */
	CHECK(cudaMemcpy(&host_done, done, sizeof(int), cudaMemcpyDeviceToHost));
	CHECK(cudaFree(done));
	double total_ms = now_ms() - t0;
	printf("main: kernel finished (done=%d), exiting with 192 MiB still allocated\n", host_done);
	printf("figures: destroy_ms=%.1f total_ms=%.1f kernel_s=%.1f\n", destroy_ms, total_ms, seconds);
	return host_done == 1 ? 0 : 2;
}
