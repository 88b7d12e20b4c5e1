// accounting.cu: vramguard's books under thread churn and a busy sampler, on a real GPU (host code, driver API).
// Run under the preload by tests/gpu/run.sh (VG_ONLY=accounting); prints "ok"/"BAD" lines and a final "figures:" line.
//   accounting threadchurn   10 000 short-lived threads, 8 at a time, each allocating and freeing 64 KiB and 2 MiB:
//                            vramguard's usage comes back to what it was before them, and all of the quota left can
//                            then be had in one allocation.
//   accounting sampler DIR   a thread allocates and frees 2 MiB without a pause for 3 s while vramguard measures the
//                            driver's own memory every 50 ms (VRAMGUARD_DEVICE_POLL=50) and the main thread asks for a
//                            signal report every 100 ms (VRAMGUARD_REPORT=DIR/r-%p-%n-%r.json), waiting for each; then
//                            it stops, usage settles, and one more report is taken. Prints each report's charge to
//                            the driver (driver_bytes + driver_headroom_bytes): tests/gpu/run.sh compares them.
//   accounting pairs SECONDS a thread allocates and frees 2 MiB for SECONDS: "pairs_per_s=N" (bench/run_gpu_churn.sh)
#include <cuda.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <atomic>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024ull * 1024)

static int bad;
#define BAD(...) (bad = 1, printf("BAD "), printf(__VA_ARGS__), printf("\n"))

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

static CUcontext ctx;

static unsigned long long used_now(void)  // what vramguard counts (under the preload, total is the quota)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return (unsigned long long)(t - f);
}

static std::atomic<long> tc_failed;
static void *tc_worker(void *)
{
	CUdeviceptr small, big;
	cuCtxSetCurrent(ctx);
	if (cuMemAlloc_v2(&small, 64 << 10) != CUDA_SUCCESS || cuMemAlloc_v2(&big, 2 * MiB) != CUDA_SUCCESS ||
	    cuMemFree_v2(big) != CUDA_SUCCESS || cuMemFree_v2(small) != CUDA_SUCCESS)
		tc_failed++;
	return NULL;
}

static void threadchurn(void)
{
	CUdeviceptr p;
	// Warm up: the context's and the allocator's first memory, then a quiet moment for a measurement.
	cuMemAlloc_v2(&p, 2 * MiB);
	cuMemFree_v2(p);
	sleep_s(1.0);
	unsigned long long before = used_now();
	double t0 = now_s();
	int made = 0;
	for (int i = 0; i < 10000; i += 8) {
		pthread_t th[8];
		for (int k = 0; k < 8; k++)
			made += pthread_create(&th[k], NULL, tc_worker, NULL) == 0;
		for (int k = 0; k < 8; k++)
			pthread_join(th[k], NULL);
	}
	double secs = now_s() - t0;
	sleep_s(1.0);           // measurements of a quiet process again
	unsigned long long after = used_now();
	if (made != 10000 || tc_failed)
		BAD("%d threads made, %ld failed an allocation or a free", made, (long)tc_failed);
	else
		printf("ok 10000 threads allocated and freed 64 KiB and 2 MiB each in %.1f s\n", secs);
	if (after != before)
		BAD("usage %llu bytes before the threads, %llu after", before, after);
	else
		printf("ok usage back to %llu bytes exactly\n", after);
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	size_t want = f & ~(size_t)(2 * MiB - 1);
	CUresult rc = cuMemAlloc_v2(&p, want);
	if (rc != CUDA_SUCCESS)
		BAD("the %zu MiB left of the quota could not be had in one allocation (%d)", want >> 20, (int)rc);
	else {
		printf("ok the %zu MiB left of the %zu MiB quota had in one allocation\n", want >> 20, t >> 20);
		cuMemFree_v2(p);
	}
	printf("figures: threads=%d seconds=%.1f used_before_mib=%.1f used_after_mib=%.1f left_mib=%zu\n", made, secs,
	       before / (double)MiB, after / (double)MiB, want >> 20);
}

static std::atomic<int> sm_stop;
static std::atomic<long> sm_pairs;
static void *sm_worker(void *)
{
	cuCtxSetCurrent(ctx);
	while (!sm_stop) {
		CUdeviceptr p;
		if (cuMemAlloc_v2(&p, 2 * MiB) == CUDA_SUCCESS && cuMemFree_v2(p) == CUDA_SUCCESS)
			sm_pairs++;
	}
	return NULL;
}

// The first number after "KEY": in the file, or -1.
static long long json_number(const char *path, const char *key)
{
	static char doc[1 << 17];
	FILE *fp = fopen(path, "r");
	if (!fp)
		return -1;
	size_t got = fread(doc, 1, sizeof(doc) - 1, fp);
	fclose(fp);
	doc[got] = '\0';
	char needle[128];
	snprintf(needle, sizeof(needle), "\"%s\": ", key);
	const char *s = strstr(doc, needle);
	return s ? strtoll(s + strlen(needle), NULL, 10) : -1;
}

// Ask for signal report number k and wait for it (30 s at most); its charge to the driver, or -1.
static long long report(const char *dir, int k)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/r-%d-%d-signal.json", dir, (int)getpid(), k);
	raise(SIGUSR1);
	for (double end = now_s() + 30; access(path, F_OK) != 0 && now_s() < end;)
		sleep_s(0.005);
	long long d = json_number(path, "driver_bytes"), h = json_number(path, "driver_headroom_bytes");
	return d < 0 || h < 0 ? -1 : d + h;
}

static void sampler(const char *dir)
{
	CUdeviceptr p;
	cuMemAlloc_v2(&p, 2 * MiB);
	cuMemFree_v2(p);
	sleep_s(1.0);
	pthread_t th;
	pthread_create(&th, NULL, sm_worker, NULL);
	long long charge[30];
	int k = 0;
	for (; k < 30; k++) {
		sleep_s(0.1);
		charge[k] = report(dir, k + 1);
	}
	sm_stop = 1;
	pthread_join(th, NULL);
	sleep_s(1.0);
	long long settled = report(dir, k + 1);
	int above = 0;
	long long worst = 0;
	printf("charges during the churn (MiB):");
	for (int i = 0; i < k; i++) {
		printf(" %.0f", charge[i] / (double)MiB);
		if (charge[i] < 0 || charge[i] > settled) {
			above++;
			worst = charge[i] - settled > worst ? charge[i] - settled : worst;
		}
	}
	printf("; settled after it %.0f\n", settled / (double)MiB);
	if (settled < 0)
		BAD("no settled report");
	else if (above)
		BAD("%d of %d reports during the churn charged the driver more than it holds (up to %lld bytes more)",
		    above, k, worst);
	else
		printf("ok no report during the churn charged the driver more than the %.0f MiB it holds\n",
		       settled / (double)MiB);
	printf("figures: reports=%d above=%d worst_mib=%.0f settled_mib=%.0f pairs=%ld\n", k, above,
	       worst / (double)MiB, settled / (double)MiB, (long)sm_pairs);
}

static void pairs(double secs)
{
	pthread_t th;
	CUdeviceptr p;
	cuMemAlloc_v2(&p, 2 * MiB);
	cuMemFree_v2(p);
	double t0 = now_s();
	pthread_create(&th, NULL, sm_worker, NULL);
	sleep_s(secs);
	sm_stop = 1;
	pthread_join(th, NULL);
	printf("pairs_per_s=%.0f\n", sm_pairs / (now_s() - t0));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CUdevice dev;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
		printf("BAD no CUDA context\n");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "threadchurn"))
		threadchurn();
	else if (argc > 2 && !strcmp(argv[1], "sampler"))
		sampler(argv[2]);
	else if (argc > 2 && !strcmp(argv[1], "pairs"))
		pairs(atof(argv[2]));
	else {
		printf("BAD usage: accounting threadchurn | accounting sampler DIR\n");
		return 2;
	}
	return bad;
}
