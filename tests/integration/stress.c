/* Stress and signal storms against a tight quota, run under the preload with the test double.
 *   stress race SECONDS   8 threads race every allocation kind, frees, streams (some busy), cuMemGetInfo_v2 and
 *                         report dumps (SIGUSR1) for SECONDS; never over the quota, no deadlock, exact zero at the end
 *   stress storm COUNT    COUNT SIGUSR1 (half from another process, half from a thread) while 4 threads allocate
 * Both ask for a report first, before anything is allocated (a report that lists no device yet), and wait for it.
 * The quota comes from NVIDIA_GPU_MEMORY_LIMITS (MiB); the report files are checked by tests/sections/reliability.sh
 * (report_check.py zero). */
#define _GNU_SOURCE
#include "interposer/hooks.h"   /* first: exact ABI names with their true types */

#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

static uint64_t Q;
static _Atomic int stop;
static _Atomic long n_ops, n_denied, n_bad, n_streams, n_busy_streams, n_info, n_dumps;
static _Atomic int bad_reported;
static CUmemoryPool pool;

/* An unexpected result: counted, the first few printed. */
static void unexpected(const char *what, CUresult rc)
{
	n_bad++;
	if (atomic_fetch_add(&bad_reported, 1) < 5)
		printf("# unexpected: %s -> %d\n", what, (int)rc);
}

/* A watchdog: a deadlock shows as one clear line instead of the outer timeout. */
static void *watchdog(void *arg)
{
	double limit = *(double *)arg, t0 = it_now_s();
	while (!stop) {
		if (it_now_s() - t0 > limit) {
			printf("not ok %d - deadlock: still running after %.0f s (%ld operations done)\n", ++it_seq, limit, (long)n_ops);
			fflush(stdout);
			_exit(3);
		}
		usleep(50 * 1000);
	}
	return NULL;
}

enum kind { K_MEM, K_PITCH, K_MANAGED, K_ASYNC, K_POOL, K_VMM_NCCL, K_VMM_EXPAND, K_ARRAY, K_ARRAY3D, K_MIPMAP,
	    K_NKINDS };

struct obj {
	enum kind kind;
	uint64_t key;
	CUdeviceptr va;
	size_t bytes;
};

#define SLOTS 12
#define SLOT_VA (32 * MiB)

struct worker {
	unsigned seed;
	CUstream stream;
	CUdeviceptr va;
	struct obj held[SLOTS];
	int used[SLOTS];
	long ops;
	int kinds;      /* how many kinds are in the mix */
};

static unsigned rnd(struct worker *w)
{
	w->seed = w->seed * 1103515245u + 12345u;
	return w->seed >> 8;
}

static int alloc_obj(struct worker *w, int slot)
{
	struct obj *o = &w->held[slot];
	unsigned mib = 1 + rnd(w) % 16;
	o->kind = (enum kind)(rnd(w) % (unsigned)w->kinds);
	o->bytes = (size_t)mib * MiB;
	CUdeviceptr p = 0;
	CUresult rc;
	switch (o->kind) {
	case K_MEM: rc = cuMemAlloc_v2(&p, o->bytes); break;
	case K_PITCH: {
		size_t pitch;
		rc = cuMemAllocPitch_v2(&p, &pitch, 1000, (size_t)mib * 1024, 4);
		break;
	}
	case K_MANAGED: rc = cuMemAllocManaged(&p, o->bytes, CU_MEM_ATTACH_GLOBAL); break;
	case K_ASYNC: rc = (rnd(w) & 1) ? cuMemAllocAsync(&p, o->bytes, w->stream)
				       : cuMemAllocAsync_ptsz(&p, o->bytes, w->stream); break;
	case K_POOL: rc = (rnd(w) & 1) ? cuMemAllocFromPoolAsync(&p, o->bytes, pool, w->stream)
				      : cuMemAllocFromPoolAsync_ptsz(&p, o->bytes, pool, w->stream); break;
	case K_VMM_NCCL: case K_VMM_EXPAND: {
		CUmemAllocationProp pr;
		memset(&pr, 0, sizeof(pr));
		pr.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		pr.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		o->bytes = (size_t)(mib + (mib & 1)) * MiB;
		CUmemGenericAllocationHandle h;
		rc = cuMemCreate(&h, o->bytes, &pr, 0);
		if (rc != CUDA_SUCCESS)
			break;
		p = h;
		o->va = w->va + (CUdeviceptr)slot * SLOT_VA;
		CUresult m = cuMemMap(o->va, o->bytes, 0, h, 0);
		if (m != CUDA_SUCCESS)
			unexpected("cuMemMap", m);
		if (o->kind == K_VMM_NCCL) {                    /* one more reference, by address */
			CUmemGenericAllocationHandle h2;
			CUresult r2 = cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)o->va);
			if (r2 != CUDA_SUCCESS || h2 != h)
				unexpected("cuMemRetainAllocationHandle", r2);
		} else {                                        /* expandable segments: kept alive by the mapping */
			CUresult r2 = cuMemRelease(h);
			if (r2 != CUDA_SUCCESS)
				unexpected("cuMemRelease (mapped)", r2);
		}
		break;
	}
	case K_ARRAY: {
		CUDA_ARRAY_DESCRIPTOR d = { .Width = 256, .Height = (size_t)mib * 1024, .Format = CU_AD_FORMAT_FLOAT,
					    .NumChannels = 1 };
		CUarray a;
		rc = cuArrayCreate_v2(&a, &d);
		p = (CUdeviceptr)(uintptr_t)a;
		break;
	}
	case K_ARRAY3D: {
		CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 256, .Height = 256, .Depth = (size_t)mib * 4,
					      .Format = CU_AD_FORMAT_HALF, .NumChannels = 2 };
		CUarray a;
		rc = cuArray3DCreate_v2(&a, &d);
		p = (CUdeviceptr)(uintptr_t)a;
		break;
	}
	default: {
		CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
					      .NumChannels = 4 };
		CUmipmappedArray m;
		rc = cuMipmappedArrayCreate(&m, &d, 1 + mib % 8);
		p = (CUdeviceptr)(uintptr_t)m;
		break;
	}
	}
	if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
		n_denied++;
		return 0;
	}
	if (rc != CUDA_SUCCESS) {
		unexpected("allocation", rc);
		return 0;
	}
	o->key = p;
	return 1;
}

static void free_obj(struct worker *w, struct obj *o)
{
	CUresult rc = CUDA_SUCCESS;
	switch (o->kind) {
	case K_MEM: case K_PITCH: case K_MANAGED: rc = cuMemFree_v2(o->key); break;
	case K_ASYNC: case K_POOL: rc = (rnd(w) & 1) ? cuMemFreeAsync(o->key, w->stream)
						    : cuMemFreeAsync_ptsz(o->key, w->stream); break;
	case K_VMM_NCCL:        /* NCCL's order: unmap, release, release */
		rc = cuMemUnmap(o->va, o->bytes);
		if (rc == CUDA_SUCCESS)
			rc = cuMemRelease(o->key);
		if (rc == CUDA_SUCCESS)
			rc = cuMemRelease(o->key);
		break;
	case K_VMM_EXPAND: rc = cuMemUnmap(o->va, o->bytes); break;
	case K_ARRAY: case K_ARRAY3D: rc = cuArrayDestroy((CUarray)(uintptr_t)o->key); break;
	default: rc = cuMipmappedArrayDestroy((CUmipmappedArray)(uintptr_t)o->key); break;
	}
	if (rc != CUDA_SUCCESS)
		unexpected("free", rc);
}

static void stream_churn(struct worker *w)
{
	CUstream s;
	CUresult rc = (rnd(w) & 1) ? cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)
				   : cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -1);
	if (rc != CUDA_SUCCESS) {
		unexpected("stream create", rc);
		return;
	}
	n_streams++;
	if (rnd(w) % 4 == 0) {
		fakecuda_stream_set_pending(s, 1);
		n_busy_streams++;
	}
	rc = (rnd(w) & 1) ? cuStreamDestroy(s) : cuStreamDestroy_v2(s);
	if (rc != CUDA_SUCCESS)
		unexpected("stream destroy", rc);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	CUresult rc = cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING);
	if (rc != CUDA_SUCCESS)
		unexpected("worker stream", rc);
	rc = cuMemAddressReserve(&w->va, SLOTS * SLOT_VA, 0, 0, 0);
	if (rc != CUDA_SUCCESS)
		unexpected("cuMemAddressReserve", rc);
	while (!stop) {
		unsigned r = rnd(w) % 100;
		int slot = (int)(rnd(w) % SLOTS);
		if (r < 55) {
			if (!w->used[slot])
				w->used[slot] = alloc_obj(w, slot);
			else {
				free_obj(w, &w->held[slot]);
				w->used[slot] = 0;
			}
		} else if (r < 85) {
			if (w->used[slot]) {
				free_obj(w, &w->held[slot]);
				w->used[slot] = 0;
			}
		} else if (r < 93 && w->kinds > 1) {
			stream_churn(w);
		} else {
			size_t f = 0, t = 0;
			rc = cuMemGetInfo_v2(&f, &t);
			if (rc != CUDA_SUCCESS || t != Q || f > Q)
				unexpected("cuMemGetInfo_v2 (total must be the quota, free within it)", rc);
			n_info++;
		}
		w->ops++;
	}
	for (int i = 0; i < SLOTS; i++)
		if (w->used[i])
			free_obj(w, &w->held[i]);
	cuMemAddressFree(w->va, SLOTS * SLOT_VA);
	cuStreamDestroy_v2(w->stream);
	n_ops += w->ops;
	return NULL;
}

static void *dumper(void *arg)
{
	(void)arg;
	struct sigaction cur;
	if (sigaction(SIGUSR1, NULL, &cur) != 0 || cur.sa_handler == SIG_DFL) {
		printf("# SIGUSR1 has no handler (not under vramguard?): no report signals\n");
		return NULL;
	}
	while (!stop) {
		kill(getpid(), SIGUSR1);
		n_dumps++;
		usleep(25 * 1000);
	}
	return NULL;
}

static size_t mem_free(void)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return f;
}

static void final_checks(void)
{
	IT_CHECK(n_bad == 0, "no unexpected driver result (%ld)", (long)n_bad);
	IT_CHECK(fakecuda_peak_bytes(0) <= Q, "the driver never held more than the quota (peak %llu MiB of %llu MiB)",
		 fakecuda_peak_bytes(0) / MiB, (unsigned long long)Q / MiB);
	IT_CHECK(mem_free() == Q, "exact zero at the end: vramguard's free is the quota (%zu)", mem_free());
	IT_CHECK(fakecuda_used_bytes(0) == 0 && fakecuda_live_allocations(0) == 0,
		 "the driver holds nothing (%llu bytes, %ld objects)", fakecuda_used_bytes(0),
		 fakecuda_live_allocations(0));
}

/* A signal report before the first allocation, as a dump that comes early does: the report then lists no device.
 * Waits until it is published in VRAMGUARD_REPORT's directory (r-PID-1-signal.json, the template's %p, %n, %r). */
static void report_before_any_allocation(void)
{
	const char *tmpl = getenv("VRAMGUARD_REPORT");
	if (!tmpl || tmpl[0] != '/')
		return;
	char dir[4096], prefix[64];
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(prefix, sizeof(prefix), "r-%d-1-signal", (int)getpid());
	kill(getpid(), SIGUSR1);
	IT_CHECK(it_wait_files(dirname(dir), prefix, 1, 30) == 1, "a signal report before any allocation (%s)", prefix);
}

static void race(double secs)
{
	enum { NT = 8 };
	pthread_t th[NT], dt, wd;
	struct worker w[NT];
	double limit = secs + 30;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	report_before_any_allocation();
	IT_RC(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
	pthread_create(&wd, NULL, watchdog, &limit);
	memset(w, 0, sizeof(w));
	double t0 = it_now_s();
	for (int i = 0; i < NT; i++) {
		w[i].seed = 0x9e3779b9u * (unsigned)(i + 1);
		w[i].kinds = K_NKINDS;
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	pthread_create(&dt, NULL, dumper, NULL);
	it_sleep_s(secs);
	stop = 1;
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	pthread_join(dt, NULL);
	double el = it_now_s() - t0;
	pthread_join(wd, NULL);
	printf("# %d threads x %ld operations = %ld in %.1f s; %ld denied, %ld streams (%ld busy), %ld cuMemGetInfo, "
	       "%ld SIGUSR1\n", NT, (long)n_ops / NT, (long)n_ops, el, (long)n_denied, (long)n_streams,
	       (long)n_busy_streams, (long)n_info, (long)n_dumps);
	IT_CHECK(n_ops > 10000 && n_denied > 100 && n_streams > 100,
		 "%d threads x %ld operations (%ld denials, %ld streams, %ld report signals) in %.1f s", NT,
		 (long)n_ops / NT, (long)n_denied, (long)n_streams, (long)n_dumps, el);
	final_checks();
	it_sleep_s(0.2);           /* let the last signal report finish before the exit one */
}

static void *storm_sender(void *arg)
{
	long n = *(long *)arg;
	for (long i = 0; i < n; i++) {
		kill(getpid(), SIGUSR1);
		if (i % 250 == 249)
			usleep(2000);   /* bursts, so that reports are being written while signals arrive */
	}
	return NULL;
}

static void storm(long count)
{
	enum { NT = 4 };
	int go[2];
	if (pipe(go) != 0)
		return;
	/* The other process is forked before any CUDA use and waits for the word. */
	pid_t sender = fork();
	if (sender == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) == 1)
			for (long i = 0; i < count / 2; i++) {
				kill(getppid(), SIGUSR1);
				if (i % 250 == 249)
					usleep(2000);
			}
		_exit(0);
	}
	close(go[0]);
	pthread_t th[NT], st, wd;
	struct worker w[NT];
	double limit = 60;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	report_before_any_allocation();
	IT_RC(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
	pthread_create(&wd, NULL, watchdog, &limit);
	memset(w, 0, sizeof(w));
	for (int i = 0; i < NT; i++) {
		w[i].seed = 0x85ebca6bu * (unsigned)(i + 1);
		w[i].kinds = K_VMM_NCCL;        /* linear, pitch, managed, async, pool */
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	it_sleep_s(0.05);
	double t0 = it_now_s();
	long half = count - count / 2;
	(void)!write(go[1], "g", 1);
	pthread_create(&st, NULL, storm_sender, &half);
	pthread_join(st, NULL);
	int status = 0;
	waitpid(sender, &status, 0);
	double el = it_now_s() - t0;
	it_sleep_s(0.3);           /* the coalesced reports are written while the threads go on */
	stop = 1;
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	pthread_join(wd, NULL);
	IT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the sending process finished");
	IT_CHECK(1, "survived %ld SIGUSR1 (%ld from another process, %ld from a thread) in %.2f s while %d threads did "
		 "%ld operations", count, count / 2, half, el, NT, (long)n_ops);
	final_checks();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *lim = getenv("NVIDIA_GPU_MEMORY_LIMITS");
	Q = lim ? strtoull(lim, NULL, 10) * MiB : 0;
	if (!Q) {
		printf("not ok %d - NVIDIA_GPU_MEMORY_LIMITS must be set (MiB)\n", ++it_seq);
		return 2;
	}
	if (argc > 2 && !strcmp(argv[1], "race"))
		race(atof(argv[2]));
	else if (argc > 2 && !strcmp(argv[1], "storm"))
		storm(atol(argv[2]));
	else {
		printf("not ok %d - usage: stress race SECONDS | stress storm COUNT\n", ++it_seq);
		return 2;
	}
	return it_failed;
}
