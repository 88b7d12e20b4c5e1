/* The growth sampler as an application sees it (issue 29): cuMemAlloc_v2+cuMemFree_v2 pairs from 2 threads, with N
 * allocations live, vramguard preloaded against the test double (bench/run_growth.sh runs it with growth points
 * every 100 ms, VRAMGUARD_GROWTH_WINDOW=1s, and with none after the first, VRAMGUARD_GROWTH_WINDOW=168h).
 *
 *   bench_growth_app N SECS     fill N live 512-byte allocations from 8 call sites, wait 0.5 s (the first point),
 *                               then time every pair of both threads for SECS seconds: p50, p99, p99.9, max, how
 *                               many took over 100 us and over 1 ms; and the CPU time the sampler thread
 *                               (vramguard-mem) used meanwhile, from /proc/self/task/TID/schedstat */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_lat.h"

#include <cuda.h>

#define ALLOC_BYTES 512
#define SITES 8

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_growth_app: %s failed (%d)\n", what, rc);
	exit(1);
}

/* Call sites told apart by depth: the captured stack of an allocation depth frames down differs for each depth. */
static __attribute__((noinline)) void alloc_at(int depth, CUdeviceptr *p)
{
	if (depth > 0) {
		alloc_at(depth - 1, p);
		__asm__ volatile("" ::: "memory");
		return;
	}
	CUresult rc = cuMemAlloc_v2(p, ALLOC_BYTES);
	if (rc != CUDA_SUCCESS)
		die("cuMemAlloc_v2", rc);
}

/* The sampler thread's CPU time so far (ns), 0 if it is not found. */
static uint64_t sampler_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t ns = 0;
	while (d && (e = readdir(d))) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f) || strcmp(comm, "vramguard-mem\n") != 0) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		f = fopen(path, "r");
		unsigned long long run = 0;
		if (f && fscanf(f, "%llu", &run) == 1)
			ns = run;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return ns;
}

static atomic_int stop;
struct worker {
	uint64_t *lat;
	size_t n, cap;
};

static void *pairs(void *arg)
{
	struct worker *w = arg;
	while (!atomic_load(&stop) && w->n < w->cap) {
		CUdeviceptr p;
		uint64_t a = now_ns();
		alloc_at(0, &p);
		cuMemFree_v2(p);
		w->lat[w->n++] = now_ns() - a;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_growth_app N SECS\n");
		return 2;
	}
	long n = atol(argv[1]);
	double secs = atof(argv[2]);
	CUresult rc = cuInit(0);
	CUdevice dev;
	CUcontext ctx;          /* a context starts the sampler thread */
	if (rc != CUDA_SUCCESS || (rc = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
	    (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS || (rc = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
		die("cuInit/cuDeviceGet/cuDevicePrimaryCtxRetain/cuCtxSetCurrent", rc);
	for (long i = 0; i < n; i++) {
		CUdeviceptr p;
		alloc_at((int)(i % SITES), &p);
	}
	struct timespec settle = { 0, 500000000 };
	nanosleep(&settle, NULL);
	struct worker w[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		w[i] = (struct worker){ .cap = 100000000 };
		if (!(w[i].lat = malloc(w[i].cap * sizeof(uint64_t))))
			die("malloc", 0);
	}
	uint64_t cpu0 = sampler_cpu_ns(), t0 = now_ns();
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, pairs, &w[i]);
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	uint64_t cpu = sampler_cpu_ns() - cpu0, wall = now_ns() - t0;
	if (bench_lat_print(w[0].lat, w[0].n, w[1].lat, w[1].n, "") != 0)
		die("no pairs", 0);
	printf(" sampler_cpu_ms_per_s %.1f\n", cpu / 1e6 / (wall / 1e9));
	return 0;
}
