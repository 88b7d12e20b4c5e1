/* Per-site growth under the preload, against the test double (tests/sections/growth.sh sets the quota, a short
 * VRAMGUARD_GROWTH_WINDOW, a fast VRAMGUARD_DEVICE_POLL and JSON reports into a directory; report_check.py `growth`
 * reads them).
 *   leak STEP_MS      one steady site (32 MiB, then nothing) and one that gains 1 MiB every STEP_MS, on a schedule
 *                     of its own (a late step is caught up, so the rate holds on a busy machine), until the quota
 *                     refuses it; prints "denied at NS" (CLOCK_REALTIME), what the forecasts are checked against
 *   steady SECONDS    the steady site alone, held that long: never growing, never a forecast */
#define _GNU_SOURCE
#include "tests/integration/itest.h"

static void ctx(void)
{
	CUcontext c;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);   /* starts the sampler */
	IT_RC(cuCtxSetCurrent(c), CUDA_SUCCESS);
}

/* Each function is its own call site (named in the reports: external, so that nothing merges them). */
void hold_steady(void);
CUresult grow_one(void);

__attribute__((noinline)) void hold_steady(void)
{
	CUdeviceptr p;
	IT_RC(cuMemAlloc_v2(&p, 32 * MiB), CUDA_SUCCESS);
}

__attribute__((noinline)) CUresult grow_one(void)
{
	CUdeviceptr p;
	return cuMemAlloc_v2(&p, 1 * MiB);
}

static void t_leak(long step_ms)
{
	ctx();
	hold_steady();
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	long steps = 0;
	for (;;) {
		if (grow_one() != CUDA_SUCCESS)
			break;
		steps++;
		next.tv_nsec += step_ms * 1000000L;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
			;
	}
	printf("denied at %llu after %ld steps\n", it_realtime_ns(), steps);
	IT_CHECK(steps > 0, "the growing site grew %ld MiB until the quota refused it", steps);
}

static void t_steady(double secs)
{
	ctx();
	hold_steady();
	printf("ready\n");
	fflush(stdout);
	it_sleep_s(secs);
	IT_CHECK(1, "held 32 MiB for %.1f s", secs);
}

int main(int argc, char **argv)
{
	const char *t = argc > 2 ? argv[1] : "";
	if (!strcmp(t, "leak"))
		t_leak(atol(argv[2]));
	else if (!strcmp(t, "steady"))
		t_steady(atof(argv[2]));
	else {
		printf("not ok %d - usage: growth leak STEP_MS | steady SECONDS\n", ++it_seq);
		return 2;
	}
	return it_failed;
}
