/* CPU benchmark programs for bench/run_cpu.sh: per-call cost, instruction counts, memory per live allocation,
 * report time and insert/free cost against the live count. Run against the test double (tests/fakecuda), with
 * and without vramguard preloaded: the double's own cost is in both runs, vramguard's is the difference.
 *
 *   bench_cpu calls OP THREADS ITERS [ROUNDS]
 *                                      ns per OP per thread, best of ROUNDS (5) (OP: pair getinfo stream gpa
 *                                      dlsym_libm dlsym_cu dlsym_libm_ab); dlsym_libm_ab prints "interposed real",
 *                                      alternated in one process (glibc's dlsym called directly for "real")
 *   bench_cpu count PAIRS              PAIRS alloc+free pairs in count_pairs() (for callgrind --toggle-collect)
 *   bench_cpu mem N                    heap bytes per live allocation: N live, one call site
 *   bench_cpu sites K                  heap bytes per live allocation made from K (<= 4096) distinct call sites
 *   bench_cpu report N                 ms from raise(SIGUSR1) to $VRAMGUARD_REPORT existing, N live allocations
 *   bench_cpu flat L PAIRS             ns per alloc+free pair with L allocations live, best of 5
 *
 * Every loop runs below NEST_FRAMES nested frames, so call-site capture unwinds its full default depth (16) as it
 * would inside a framework. Allocations are 512 bytes: the double reserves address space in 512-byte steps and
 * never wraps its 1 TiB window during a run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define NEST_FRAMES 24
#define ALLOC_BYTES 512
#define REPS 5                          /* timed rounds per process (calls: optional 5th argument) */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_cpu: %s failed (%d)\n", what, rc);
	exit(1);
}

static __attribute__((noinline)) void alloc_one(CUdeviceptr *p)
{
	CUresult rc = cuMemAlloc_v2(p, ALLOC_BYTES);
	if (rc != CUDA_SUCCESS)
		die("cuMemAlloc_v2", rc);
}

/* ---- run fn(arg) below NEST_FRAMES frames ---- */

typedef double (*body_fn)(void *arg);

static __attribute__((noinline)) double nest(int depth, body_fn fn, void *arg)
{
	if (depth == 0)
		return fn(arg);
	double r = nest(depth - 1, fn, arg);
	__asm__ volatile("" ::: "memory");      /* not a tail call: every level stays on the stack */
	return r;
}

/* ---- per-call loops ---- */

struct job {
	const char *op;
	long iters;
	void *libm, *libcuda;
	void *(*real_dlsym)(void *, const char *);
	pthread_barrier_t *bar;
	double ns;
};

static volatile void *sink;

static __attribute__((noinline)) double loop_body(void *arg)
{
	struct job *j = arg;
	const char *op = j->op;
	long n = j->iters;
	double t0 = now_ns();
	if (!strcmp(op, "pair")) {
		for (long i = 0; i < n; i++) {
			CUdeviceptr p;
			alloc_one(&p);
			cuMemFree_v2(p);
		}
	} else if (!strcmp(op, "getinfo")) {
		for (long i = 0; i < n; i++) {
			size_t f, t;
			cuMemGetInfo_v2(&f, &t);
		}
	} else if (!strcmp(op, "stream")) {
		for (long i = 0; i < n; i++) {
			CUstream s;
			CUresult rc = cuStreamCreate(&s, 0);
			if (rc != CUDA_SUCCESS)
				die("cuStreamCreate", rc);
			cuStreamDestroy_v2(s);
		}
	} else if (!strcmp(op, "gpa")) {
		for (long i = 0; i < n; i++) {
			void *fn = NULL;
			CUdriverProcAddressQueryResult st;
			cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
			sink = fn;
		}
	} else if (!strcmp(op, "dlsym_libm")) {
		for (long i = 0; i < n; i++)
			sink = dlsym(j->libm, "cos");
	} else if (!strcmp(op, "dlsym_libm_real")) {
		for (long i = 0; i < n; i++)
			sink = j->real_dlsym(j->libm, "cos");
	} else if (!strcmp(op, "dlsym_cu")) {
		for (long i = 0; i < n; i++)
			sink = dlsym(j->libcuda, "cuMemAlloc_v2");
	} else {
		fprintf(stderr, "bench_cpu: unknown op '%s'\n", op);
		exit(2);
	}
	return (now_ns() - t0) / n;
}

static void *thread_main(void *arg)
{
	struct job *j = arg;
	pthread_barrier_wait(j->bar);
	j->ns = nest(NEST_FRAMES, loop_body, j);
	return NULL;
}

/* One timed round on nthreads threads started together: the slowest thread's ns per call. */
static double round_ns(const struct job *proto, int nthreads)
{
	struct job jobs[8];
	pthread_t th[8];
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		jobs[i] = *proto;
		jobs[i].bar = &bar;
		pthread_create(&th[i], NULL, thread_main, &jobs[i]);
	}
	double worst = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		worst = jobs[i].ns > worst ? jobs[i].ns : worst;
	}
	pthread_barrier_destroy(&bar);
	return worst;
}

static int cmd_calls(const char *op, int nthreads, long iters, int rounds)
{
	if (rounds < 1)
		rounds = REPS;
	if (nthreads < 1 || nthreads > 8)
		nthreads = 1;
	struct job j = { .op = op, .iters = iters };
	j.libm = dlopen("libm.so.6", RTLD_NOW);
	j.libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	/* glibc's own dlsym, bypassing any interposed one: a handle-scoped lookup does not depend on the caller. */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	j.real_dlsym = (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.34");
	if (!j.real_dlsym)
		j.real_dlsym = (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.2.5");
	if (!j.libm || !j.libcuda || !j.real_dlsym)
		die("dlopen", 0);
	struct job warm = j;
	warm.iters = iters / 10 + 1;
	if (!strcmp(op, "dlsym_libm_ab"))
		warm.op = "dlsym_libm";
	(void)round_ns(&warm, nthreads);        /* sites interned, tables grown, threads' contexts bound */
	if (!strcmp(op, "dlsym_libm_ab")) {
		/* Interposed and real dlsym alternated in one process: the difference is free of run-to-run noise. */
		double a = 1e30, b = 1e30;
		struct job ja = j, jb = j;
		ja.op = "dlsym_libm";
		jb.op = "dlsym_libm_real";
		for (int r = 0; r < rounds; r++) {
			double x = round_ns(&ja, nthreads), y = round_ns(&jb, nthreads);
			a = x < a ? x : a;
			b = y < b ? y : b;
		}
		printf("%.1f %.1f\n", a, b);
		return 0;
	}
	double best = 1e30;
	for (int r = 0; r < rounds; r++) {
		double x = round_ns(&j, nthreads);
		best = x < best ? x : best;
	}
	printf("%.1f\n", best);
	return 0;
}

/* ---- instruction counts ---- */

static __attribute__((noinline)) double count_pairs(void *arg)
{
	long n = *(long *)arg;
	for (long i = 0; i < n; i++) {
		CUdeviceptr p;
		alloc_one(&p);
		cuMemFree_v2(p);
	}
	return 0;
}

static double pairs_body(void *arg);

static int cmd_count(long pairs)
{
	long warm = 100;
	nest(NEST_FRAMES, pairs_body, &warm);   /* outside count_pairs: not counted */
	nest(NEST_FRAMES, count_pairs, &pairs);
	return 0;
}

/* ---- memory ---- */

static size_t heap_used(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;           /* small chunks in use + mmapped chunks (large bucket arrays) */
}

struct many {
	CUdeviceptr *p;
	long n;
};

static __attribute__((noinline)) double alloc_many(void *arg)
{
	struct many *m = arg;
	for (long i = 0; i < m->n; i++)
		alloc_one(&m->p[i]);
	return 0;
}

static CUdeviceptr *ptr_array(long n)
{
	CUdeviceptr *p = calloc((size_t)n, sizeof(*p));
	if (!p)
		die("calloc", 0);
	return p;
}

static void warm_up(void)
{
	CUdeviceptr p;
	alloc_one(&p);                          /* vramguard initialized, device resolved, a first site interned */
	cuMemFree_v2(p);
}

static int cmd_mem(long n)
{
	struct many m = { ptr_array(n), n };
	warm_up();
	size_t before = heap_used();
	nest(NEST_FRAMES, alloc_many, &m);
	size_t after = heap_used();
	printf("%.1f\n", (double)(after - before) / n);
	return 0;
}

/* 64 x 64 distinct call paths: each case calls from its own address (the asm after each call keeps the compiler
 * from merging the identical calls into one). */
#define C8(f, b) f(b + 0) f(b + 1) f(b + 2) f(b + 3) f(b + 4) f(b + 5) f(b + 6) f(b + 7)
#define C64(f) C8(f, 0) C8(f, 8) C8(f, 16) C8(f, 24) C8(f, 32) C8(f, 40) C8(f, 48) C8(f, 56)

static __attribute__((noinline)) void site_leaf(int j, CUdeviceptr *p)
{
	switch (j) {
#define LEAF_CASE(k)                                             \
	case k:                                                  \
		alloc_one(p);                                    \
		__asm__ volatile("# leaf %0" ::"i"(k) : "memory"); \
		break;
		C64(LEAF_CASE)
#undef LEAF_CASE
	}
}

static __attribute__((noinline)) void site_mid(int i, int j, CUdeviceptr *p)
{
	switch (i) {
#define MID_CASE(k)                                             \
	case k:                                                 \
		site_leaf(j, p);                                \
		__asm__ volatile("# mid %0" ::"i"(k) : "memory"); \
		break;
		C64(MID_CASE)
#undef MID_CASE
	}
}

static __attribute__((noinline)) double alloc_sites(void *arg)
{
	struct many *m = arg;
	for (long k = 0; k < m->n; k++)
		site_mid((int)(k / 64), (int)(k % 64), &m->p[k]);
	return 0;
}

static int cmd_sites(long k)
{
	if (k > 4096)
		k = 4096;
	struct many m = { ptr_array(k), k };
	warm_up();
	size_t before = heap_used();
	nest(NEST_FRAMES, alloc_sites, &m);
	size_t after = heap_used();
	printf("%.1f\n", (double)(after - before) / k);
	return 0;
}

/* ---- report ---- */

static int cmd_report(long n)
{
	const char *path = getenv("VRAMGUARD_REPORT");
	if (!path || path[0] != '/')
		die("VRAMGUARD_REPORT (an absolute file path) check", 0);
	struct many m = { ptr_array(n), n };
	warm_up();
	nest(NEST_FRAMES, alloc_many, &m);
	struct stat st;
	double t0 = now_ns();
	raise(SIGUSR1);
	while (stat(path, &st) != 0) {
		if (now_ns() - t0 > 60e9)
			die("waiting for the report", 0);
		struct timespec ms = { 0, 200000 };
		nanosleep(&ms, NULL);
	}
	printf("%.1f %lld\n", (now_ns() - t0) / 1e6, (long long)st.st_size);
	fflush(stdout);
	_exit(0);                               /* no second report at exit */
}

/* ---- insert/free cost against the live count ---- */

static __attribute__((noinline)) double pairs_body(void *arg)
{
	long n = *(long *)arg;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		CUdeviceptr p;
		alloc_one(&p);
		cuMemFree_v2(p);
	}
	return (now_ns() - t0) / n;
}

static int cmd_flat(long live, long pairs)
{
	struct many m = { ptr_array(live), live };
	warm_up();
	nest(NEST_FRAMES, alloc_many, &m);
	double best = 1e30;
	for (int r = 0; r < REPS; r++) {
		double x = nest(NEST_FRAMES, pairs_body, &pairs);
		best = x < best ? x : best;
	}
	printf("%.1f\n", best);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_cpu calls OP THREADS ITERS [ROUNDS] | count PAIRS | mem N | sites K | report N | "
				"flat LIVE PAIRS\n");
		return 2;
	}
	CUresult rc = cuInit(0);
	if (rc != CUDA_SUCCESS)
		die("cuInit", rc);
	const char *cmd = argv[1];
	long a = atol(argv[2]);
	if (!strcmp(cmd, "calls") && argc >= 5)
		return cmd_calls(argv[2], atoi(argv[3]), atol(argv[4]), argc > 5 ? atoi(argv[5]) : REPS);
	if (!strcmp(cmd, "count"))
		return cmd_count(a);
	if (!strcmp(cmd, "mem"))
		return cmd_mem(a);
	if (!strcmp(cmd, "sites"))
		return cmd_sites(a);
	if (!strcmp(cmd, "report"))
		return cmd_report(a);
	if (!strcmp(cmd, "flat") && argc >= 4)
		return cmd_flat(a, atol(argv[3]));
	fprintf(stderr, "bench_cpu: unknown command '%s'\n", cmd);
	return 2;
}
