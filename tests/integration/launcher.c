/* The compute share under the preload, against the test double's simulated GPU (a kernel keeps the device busy for
 * gridDimX microseconds; tests/fakecuda/fakecuda.c). Prints what it launched and how long it took, on a
 * "figures:" line; tests/sections/compute.sh judges that and the exit report.
 *   launcher kernels US N EVERY [NAME [CPU]]  N kernels of US us each (named NAME: a CUfunction of the double is its
 *                                       name; "-" the default), a cuCtxSynchronize after every EVERY, and CPU us of
 *                                       the CPU's own work before each launch (a Python loop's, for a launch-bound
 *                                       step)
 *   launcher ex US N EVERY              the same through cuLaunchKernelEx, on a stream of its own synchronized with
 *                                       cuStreamSynchronize
 *   launcher graph N EVERY              N cuGraphLaunch (FAKECUDA_GRAPH_US each), synchronized every EVERY
 *   launcher capture US N               N kernels launched while a stream captures: nothing runs, nothing waits
 *   launcher fork US N                  a child forked after the first launches launches too, then both exit
 *   launcher two US N EVERY CPU         N rounds of: 3 kernels of US us on a stream of its own, CPU us of CPU work,
 *                                       one kernel on the legacy stream; a cuCtxSynchronize after every EVERY rounds
 *                                       (a launch that waits on one stream while the other has launches after its
 *                                       last event)
 *   launcher threads US N EVERY T       T threads launch N kernels each, the odd ones on one stream they share, the
 *                                       even ones on the legacy stream, each synchronizing its stream after every
 *                                       EVERY of its launches (the compute share's lock-free path, raced) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>

#include "tests/integration/itest.h"

static CUcontext it_ctx(void)
{
	CUdevice dev;
	CUcontext ctx;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
	IT_RC(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	return ctx;
}

static void figures(unsigned long long gpu_us, double t0)
{
	double wall = it_now_s() - t0;
	printf("figures: gpu_us %llu wall_us %.0f share %.3f\n", gpu_us, wall * 1e6, gpu_us / (wall * 1e6));
}

/* Busy for us microseconds on the CPU. */
static void cpu_work(unsigned us)
{
	double until = it_now_s() + us * 1e-6;
	while (us && it_now_s() < until)
		;
}

static int kernels(unsigned us, unsigned n, unsigned every, const char *name, int ex, unsigned cpu_us)
{
	it_ctx();
	CUstream s = NULL;
	if (ex)
		IT_RC(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	CUfunction f = (CUfunction)(void *)(name && strcmp(name, "-") != 0 ? name : "vg_test_kernel");
	CUlaunchConfig cfg = { .gridDimX = us, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
			       .blockDimZ = 1, .hStream = s };
	double t0 = it_now_s();
	unsigned bad = 0;
	for (unsigned i = 0; i < n; i++) {
		cpu_work(cpu_us);
		CUresult r = ex ? cuLaunchKernelEx(&cfg, f, NULL, NULL)
				: cuLaunchKernel(f, us, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		bad += r != CUDA_SUCCESS;
		if ((i + 1) % every == 0)
			bad += (ex ? cuStreamSynchronize(s) : cuCtxSynchronize()) != CUDA_SUCCESS;
	}
	bad += cuCtxSynchronize() != CUDA_SUCCESS;
	IT_CHECK(bad == 0, "%u launches of %u us and their synchronizations succeeded", n, us);
	figures((unsigned long long)us * n, t0);
	return it_failed;
}

static int two_streams(unsigned us, unsigned n, unsigned every, unsigned cpu_us)
{
	it_ctx();
	CUstream a;
	IT_RC(cuStreamCreate(&a, 0), CUDA_SUCCESS);
	CUfunction f = (CUfunction)(void *)"vg_test_kernel";
	double t0 = it_now_s();
	unsigned bad = 0;
	for (unsigned i = 0; i < n; i++) {
		for (int k = 0; k < 3; k++)
			bad += cuLaunchKernel(f, us, 1, 1, 1, 1, 1, 0, a, NULL, NULL) != CUDA_SUCCESS;
		cpu_work(cpu_us);
		bad += cuLaunchKernel(f, us, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS;
		if ((i + 1) % every == 0)
			bad += cuCtxSynchronize() != CUDA_SUCCESS;
	}
	bad += cuCtxSynchronize() != CUDA_SUCCESS;
	IT_CHECK(bad == 0, "%u rounds of 4 launches on two streams and their synchronizations succeeded", n);
	figures((unsigned long long)us * n * 4, t0);
	return it_failed;
}

static int graphs(unsigned n, unsigned every)
{
	it_ctx();
	const char *e = getenv("FAKECUDA_GRAPH_US");
	unsigned long long us = e ? strtoull(e, NULL, 10) : 100;
	double t0 = it_now_s();
	unsigned bad = 0;
	for (unsigned i = 0; i < n; i++) {
		bad += cuGraphLaunch((CUgraphExec)(void *)"graph", NULL) != CUDA_SUCCESS;
		if ((i + 1) % every == 0)
			bad += cuCtxSynchronize() != CUDA_SUCCESS;
	}
	bad += cuCtxSynchronize() != CUDA_SUCCESS;
	IT_CHECK(bad == 0, "%u graph launches succeeded", n);
	figures(us * n, t0);
	return it_failed;
}

static int capture(unsigned us, unsigned n)
{
	it_ctx();
	CUstream s;
	CUgraph g = NULL;
	IT_RC(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	IT_RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	double t0 = it_now_s();
	unsigned bad = 0;
	for (unsigned i = 0; i < n; i++)
		bad += cuLaunchKernel((CUfunction)(void *)"captured", us, 1, 1, 1, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS;
	IT_CHECK(bad == 0, "%u launches into a capture succeeded", n);
	IT_RC(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	figures(0, t0);
	return it_failed;
}

static int forked(unsigned us, unsigned n)
{
	it_ctx();
	for (unsigned i = 0; i < n; i++)
		cuLaunchKernel((CUfunction)(void *)"parent", us, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* The double serves a forked child (the real driver would not): its launches must not touch the
		 * parent's state or hang. */
		for (unsigned i = 0; i < n; i++)
			cuLaunchKernel((CUfunction)(void *)"child", us, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		cuCtxSynchronize();
		_exit(0);
	}
	int st = 0;
	IT_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "a forked child launches and exits (status %d)", st);
	IT_RC(cuCtxSynchronize(), CUDA_SUCCESS);
	return it_failed;
}

struct it_thread_arg {
	CUcontext ctx;
	CUstream s;
	unsigned us, n, every, bad;
};

static void *thread_launches(void *p)
{
	struct it_thread_arg *a = p;
	a->bad += cuCtxSetCurrent(a->ctx) != CUDA_SUCCESS;
	for (unsigned i = 0; i < a->n; i++) {
		a->bad += cuLaunchKernel((CUfunction)(void *)"threaded", a->us, 1, 1, 1, 1, 1, 0, a->s, NULL, NULL) !=
			  CUDA_SUCCESS;
		if ((i + 1) % a->every == 0)
			a->bad += cuStreamSynchronize(a->s) != CUDA_SUCCESS;
	}
	return NULL;
}

static int threads(unsigned us, unsigned n, unsigned every, unsigned nt)
{
	enum { MOST = 16 };
	CUcontext ctx = it_ctx();
	CUstream s;
	IT_RC(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	struct it_thread_arg a[MOST];
	pthread_t t[MOST];
	nt = nt < 1 ? 1 : nt > MOST ? MOST : nt;
	double t0 = it_now_s();
	for (unsigned i = 0; i < nt; i++) {
		a[i] = (struct it_thread_arg){ ctx, i % 2 ? s : NULL, us, n, every, 0 };
		IT_CHECK(pthread_create(&t[i], NULL, thread_launches, &a[i]) == 0, "thread %u started", i);
	}
	unsigned bad = 0;
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(t[i], NULL);
		bad += a[i].bad;
	}
	bad += cuCtxSynchronize() != CUDA_SUCCESS;
	IT_CHECK(bad == 0, "%u threads' launches and synchronizations succeeded", nt);
	figures((unsigned long long)us * n * nt, t0);
	return it_failed;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	unsigned a = argc > 2 ? (unsigned)atoi(argv[2]) : 100, b = argc > 3 ? (unsigned)atoi(argv[3]) : 10;
	unsigned c = argc > 4 ? (unsigned)atoi(argv[4]) : 10;
	if (argc > 1 && strcmp(argv[1], "kernels") == 0)
		return kernels(a, b, c ? c : 1, argc > 5 ? argv[5] : NULL, 0, argc > 6 ? (unsigned)atoi(argv[6]) : 0);
	if (argc > 1 && strcmp(argv[1], "ex") == 0)
		return kernels(a, b, c ? c : 1, NULL, 1, 0);
	if (argc > 1 && strcmp(argv[1], "graph") == 0)
		return graphs(a, b ? b : 1);
	if (argc > 1 && strcmp(argv[1], "capture") == 0)
		return capture(a, b);
	if (argc > 1 && strcmp(argv[1], "fork") == 0)
		return forked(a, b);
	if (argc > 1 && strcmp(argv[1], "two") == 0)
		return two_streams(a, b, c ? c : 1, argc > 5 ? (unsigned)atoi(argv[5]) : 0);
	if (argc > 1 && strcmp(argv[1], "threads") == 0)
		return threads(a, b, c ? c : 1, argc > 5 ? (unsigned)atoi(argv[5]) : 4);
	fprintf(stderr, "usage: launcher kernels|ex|graph|capture|fork|two|threads ...\n");
	return 2;
}
