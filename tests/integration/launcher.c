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
 *                                       EVERY of its launches (the compute share's lock-free path, raced)
 *   launcher ddp US N CPU               N steps of one rank of data-parallel training as PyTorch's DDP drives the
 *                                       driver (run two at once, FAKECUDA_PEER_DIR and FAKECUDA_RANK 0 and 1: the
 *                                       double's peer mode): 2 forward kernels of US us on the legacy stream; the
 *                                       backward on a second thread (the autograd engine's): per bucket (2), 2
 *                                       kernels there, an event the NCCL stream waits for, and the collective
 *                                       (_Z39ncclDevKernel_..., mangled as the driver names it; US/4 us) on a non-blocking stream of its own; then the
 *                                       legacy stream waits for the NCCL stream, the main thread launches the
 *                                       optimizer's kernel and synchronizes the context; CPU us of CPU work before
 *                                       each launch. Prints steps_per_s too */
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

/* One rank of DDP (launcher ddp): the autograd-like thread runs each step's backward when the main thread asks. */
struct it_ddp {
	CUcontext ctx;
	CUstream nccl;
	CUevent grad[2], reduced;
	unsigned us, n, cpu, bad;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned asked, done;
};

static void ddp_backward(struct it_ddp *d)
{
	/* NCCL's kernels are C++ functions: the driver names them by their mangled symbol (cuFuncGetName) */
	CUfunction bw = (CUfunction)(void *)"backward",
		   ar = (CUfunction)(void *)"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
	for (int b = 0; b < 2; b++) {
		for (int k = 0; k < 2; k++, cpu_work(d->cpu))
			d->bad += cuLaunchKernel(bw, d->us, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS;
		d->bad += cuEventRecord(d->grad[b], NULL) != CUDA_SUCCESS;
		d->bad += cuStreamWaitEvent(d->nccl, d->grad[b], 0) != CUDA_SUCCESS;
		cpu_work(d->cpu);
		d->bad += cuLaunchKernel(ar, d->us / 4 ? d->us / 4 : 1, 1, 1, 1, 1, 1, 0, d->nccl, NULL, NULL) !=
			  CUDA_SUCCESS;
	}
	d->bad += cuEventRecord(d->reduced, d->nccl) != CUDA_SUCCESS;
	d->bad += cuStreamWaitEvent(NULL, d->reduced, 0) != CUDA_SUCCESS;
}

static void *ddp_autograd(void *p)
{
	struct it_ddp *d = p;
	d->bad += cuCtxSetCurrent(d->ctx) != CUDA_SUCCESS;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (d->asked == d->done)
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->asked > d->n)
			break;
		pthread_mutex_unlock(&d->mu);
		ddp_backward(d);
		pthread_mutex_lock(&d->mu);
		d->done++;
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* The main thread's side of a step's backward (loss.backward()): ask the autograd thread, wait for it. */
static void ddp_ask(struct it_ddp *d)
{
	pthread_mutex_lock(&d->mu);
	d->asked++;
	pthread_cond_broadcast(&d->cv);
	while (d->done != d->asked && d->asked <= d->n)
		pthread_cond_wait(&d->cv, &d->mu);
	pthread_mutex_unlock(&d->mu);
}

static int ddp(unsigned us, unsigned n, unsigned cpu)
{
	struct it_ddp d = { .ctx = it_ctx(), .us = us, .n = n, .cpu = cpu, .mu = PTHREAD_MUTEX_INITIALIZER,
			    .cv = PTHREAD_COND_INITIALIZER };
	IT_RC(cuStreamCreate(&d.nccl, 1), CUDA_SUCCESS);        /* CU_STREAM_NON_BLOCKING, as NCCL's */
	for (int b = 0; b < 2; b++)
		IT_RC(cuEventCreate(&d.grad[b], CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
	IT_RC(cuEventCreate(&d.reduced, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
	pthread_t t;
	IT_CHECK(pthread_create(&t, NULL, ddp_autograd, &d) == 0, "the autograd-like thread started");
	CUfunction fw = (CUfunction)(void *)"forward", opt = (CUfunction)(void *)"optimizer";
	double t0 = it_now_s();
	unsigned bad = 0;
	for (unsigned i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++, cpu_work(cpu))
			bad += cuLaunchKernel(fw, us, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS;
		ddp_ask(&d);
		cpu_work(cpu);
		bad += cuLaunchKernel(opt, us, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS;
		bad += cuCtxSynchronize() != CUDA_SUCCESS;
	}
	double wall = it_now_s() - t0;
	ddp_ask(&d);                    /* asked > n: the thread ends */
	pthread_join(t, NULL);
	for (int b = 0; b < 2; b++)
		bad += cuEventDestroy(d.grad[b]) != CUDA_SUCCESS;
	bad += cuEventDestroy(d.reduced) != CUDA_SUCCESS;
	bad += cuStreamDestroy(d.nccl) != CUDA_SUCCESS;
	IT_CHECK(bad + d.bad == 0, "%u DDP steps' launches, waits and synchronizations succeeded", n);
	printf("steps_per_s %.1f\n", n / wall);
	figures((unsigned long long)us * n * 7, t0);
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
	if (argc > 1 && strcmp(argv[1], "ddp") == 0)
		return ddp(a, b, c);
	fprintf(stderr, "usage: launcher kernels|ex|graph|capture|fork|two|threads|ddp ...\n");
	return 2;
}
