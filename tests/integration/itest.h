/* Integration-test helpers: programs run under the preload against the test double. Each check prints
 * "ok - what" or "not ok - what (details)"; tests/run.sh counts them. The exit code is 1 if any check failed. */
#ifndef VG_ITEST_H
#define VG_ITEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

static int it_failed;

#define IT_CHECK(cond, ...)                                                              \
	do {                                                                              \
		if (cond) {                                                               \
			printf("ok - ");                                                  \
			printf(__VA_ARGS__);                                              \
			printf("\n");                                                     \
		} else {                                                                  \
			it_failed = 1;                                                    \
			printf("not ok - ");                                              \
			printf(__VA_ARGS__);                                              \
			printf("  [%s:%d: %s]\n", __FILE__, __LINE__, #cond);             \
		}                                                                         \
		fflush(stdout);                                                           \
	} while (0)

#define IT_RC(call, want)                                                                 \
	do {                                                                              \
		CUresult it_rc_ = (call);                                                 \
		IT_CHECK(it_rc_ == (want), "%s -> %d (want %d)", #call, (int)it_rc_, (int)(want)); \
	} while (0)

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

static inline double it_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep through signals (a report signal interrupts nanosleep). */
static inline void it_sleep_s(double secs)
{
	double end = it_now_s() + secs;
	for (double left; (left = end - it_now_s()) > 0;)
		usleep((useconds_t)(left * 1e6) + 1);
}

#endif
