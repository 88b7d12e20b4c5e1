/* The usage timeline under the preload, against the test double (run.sh sets a 4 GiB quota, JSON reports into a
 * directory and a short VRAMGUARD_DEVICE_POLL; report_check.py `timeline` reads the reports).
 *   phases DIR   a rise in steps a second apart, a signal report (sequence 1), a peak with two denials, a fall,
 *                then the exit report (sequence 2): its timeline shows them in order
 *   churn N      N alloc/free pairs as fast as they go, under a sampler every 50 ms: the exit report's
 *                timeline stays within its bound */
#define _GNU_SOURCE
#include <signal.h>

#include "tests/integration/itest.h"

static void ctx(void)
{
	CUcontext c;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);   /* starts the sampler, in either count mode */
	IT_RC(cuCtxSetCurrent(c), CUDA_SUCCESS);
}

static void t_phases(const char *dir)
{
	CUdeviceptr a[4], big, no;
	ctx();
	for (int i = 0; i < 4; i++) {                   /* the rise: 512 MiB a step */
		IT_RC(cuMemAlloc_v2(&a[i], 512 * MiB), CUDA_SUCCESS);
		it_sleep_s(1.1);
	}
	raise(SIGUSR1);
	IT_CHECK(it_wait_files(dir, "r-signal-", 1, 10) == 1, "the signal report was written");
	IT_RC(cuMemAlloc_v2(&big, 1536 * MiB), CUDA_SUCCESS);  /* the peak: 3.5 GiB */
	it_sleep_s(1.1);
	IT_RC(cuMemAlloc_v2(&no, 1 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(cuMemAlloc_v2(&no, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	it_sleep_s(1.1);
	IT_RC(cuMemFree_v2(big), CUDA_SUCCESS);         /* the fall: 1 GiB left */
	IT_RC(cuMemFree_v2(a[3]), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(a[2]), CUDA_SUCCESS);
	it_sleep_s(1.1);
}

static void t_churn(long n)
{
	CUdeviceptr p;
	long failed = 0;
	ctx();
	for (long i = 0; i < n; i++) {
		if (cuMemAlloc_v2(&p, (size_t)(1 + i % 64) * MiB) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS)
			failed++;
	}
	IT_CHECK(failed == 0, "%ld alloc/free pairs (%ld failed)", n, failed);
}

int main(int argc, char **argv)
{
	const char *t = argc > 2 ? argv[1] : "";
	if (!strcmp(t, "phases"))
		t_phases(argv[2]);
	else if (!strcmp(t, "churn"))
		t_churn(atol(argv[2]));
	else {
		printf("not ok %d - usage: timeline phases DIR | churn N\n", ++it_seq);
		return 2;
	}
	return it_failed;
}
