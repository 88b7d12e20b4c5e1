/* Soft limits under the preload, against the test double: a 4 GiB quota and a 3 GiB request (run.sh sets them).
 * Crossing the request denies nothing, logs one warning (run.sh counts the lines) and makes the reporter thread
 * write one report with reason soft-limit; usage hovering above 90 % of the request does not cross again.
 * argv[1]: scenario; argv[2]: the directory the reports go to, or "-" when none is expected there. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>

#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

static void t_cross(const char *dir)
{
	CUdeviceptr a, b, c, d, e;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&a, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&b, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&c, GiB), CUDA_SUCCESS);            /* 3 GiB: at the request, not above it */
	if (strcmp(dir, "-") != 0) {
		it_sleep_s(0.2);
		IT_CHECK(it_count_files(dir, "r-soft-limit-") == 0, "no soft-limit report at the line");
	}
	IT_RC(cuMemAlloc_v2(&d, 256 * MiB), CUDA_SUCCESS);      /* 3.25 GiB: the crossing; not denied */
	if (strcmp(dir, "-") != 0)
		IT_CHECK(it_wait_files(dir, "r-soft-limit-", 1, 10) == 1, "the reporter thread wrote the soft-limit report");
	/* Hovering between 3 GiB and 3.75 GiB, never below 90 % (2.7 GiB): no new crossing. */
	for (int i = 0; i < 20; i++) {
		IT_RC(cuMemFree_v2(d), CUDA_SUCCESS);
		IT_RC(cuMemAlloc_v2(&d, (i % 2 ? 768 : 128) * MiB), CUDA_SUCCESS);
	}
	IT_RC(cuMemAlloc_v2(&e, 128 * MiB), CUDA_SUCCESS);      /* up to the quota: still nothing denied */
	IT_CHECK(fakecuda_used_bytes(0) == 3 * GiB + 896 * MiB, "every allocation reached the driver (%llu)",
		 fakecuda_used_bytes(0));
	if (strcmp(dir, "-") != 0) {
		it_sleep_s(0.3);
		IT_CHECK(it_count_files(dir, "r-soft-limit-") == 1, "hovering made no second soft-limit report");
	}
	IT_RC(cuMemFree_v2(e), CUDA_SUCCESS);                   /* 3.75 GiB live at exit */
	(void)a;
	(void)b;
	(void)c;
}

/* Eight threads cross together: 8 x 512 MiB against a 3 GiB request (and an 8 GiB quota). One crossing. */
static pthread_barrier_t bar;

static void *racer(void *arg)
{
	CUdeviceptr p;
	(void)arg;
	pthread_barrier_wait(&bar);
	CUresult rc = cuMemAlloc_v2(&p, 512 * MiB);
	return (void *)(uintptr_t)rc;
}

static void t_threads(const char *dir)
{
	pthread_t th[8];
	int bad = 0;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	pthread_barrier_init(&bar, NULL, 8);
	for (int i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, racer, NULL);
	for (int i = 0; i < 8; i++) {
		void *rc;
		pthread_join(th[i], &rc);
		bad += rc != (void *)(uintptr_t)CUDA_SUCCESS;
	}
	IT_CHECK(bad == 0, "8 threads allocated 512 MiB each across the request (%d failed)", bad);
	if (strcmp(dir, "-") != 0) {
		IT_CHECK(it_wait_files(dir, "r-soft-limit-", 1, 10) == 1, "one soft-limit report");
		it_sleep_s(0.3);
		IT_CHECK(it_count_files(dir, "r-soft-limit-") == 1, "and only one");
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 2 ? argv[2] : "-";
	if (argc > 1 && !strcmp(argv[1], "cross"))
		t_cross(dir);
	else if (argc > 1 && !strcmp(argv[1], "threads"))
		t_threads(dir);
	else {
		fprintf(stderr, "usage: softlimit cross|threads DIR|-\n");
		return 2;
	}
	return it_failed;
}
