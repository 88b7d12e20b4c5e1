/* Integration-test helpers: programs run under the preload against the test double. Each check prints
 * "ok N - what", or "not ok N - what" and "# at FILE:LINE: condition" (the protocol of every suite here,
 * docs/TESTING.md); tests/run.sh counts them. The exit code is 1 if any check failed. */
#ifndef VG_ITEST_H
#define VG_ITEST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

static int it_failed, it_seq;

#define IT_CHECK(cond, ...)                                                              \
	do {                                                                              \
		if (cond) {                                                               \
			printf("ok %d - ", ++it_seq);                                     \
			printf(__VA_ARGS__);                                              \
			printf("\n");                                                     \
		} else {                                                                  \
			it_failed = 1;                                                    \
			printf("not ok %d - ", ++it_seq);                                 \
			printf(__VA_ARGS__);                                              \
			printf("\n# at %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
		}                                                                         \
		fflush(stdout);                                                           \
	} while (0)

#define IT_RC(call, want)                                                                 \
	do {                                                                              \
		CUresult it_rc_ = (call);                                                 \
		IT_CHECK(it_rc_ == (want), "%s -> %d (want %d)", #call, (int)it_rc_, (int)(want)); \
	} while (0)

/* A check's line read back (a program that runs another and counts its checks): with prefix "ok " or "not ok ",
 * the text after "N - ", else NULL. */
static inline const char *it_tap(const char *line, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(line, prefix, n) != 0)
		return NULL;
	line += n;
	while (*line >= '0' && *line <= '9')
		line++;
	if (*line == ' ')
		line++;
	return strncmp(line, "- ", 2) == 0 ? line + 2 : NULL;
}

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

/* Reports in dir whose name starts with prefix (a report being written is a ".vgtmp." file until published);
 * -1 if dir cannot be read. */
static inline int it_count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 && !strstr(e->d_name, ".vgtmp.");
	closedir(d);
	return n;
}

/* it_count_files until there are want of them, at most secs seconds; the last count. */
static inline int it_wait_files(const char *dir, const char *prefix, int want, double secs)
{
	double end = it_now_s() + secs;
	int n;
	while ((n = it_count_files(dir, prefix)) < want && it_now_s() < end)
		it_sleep_s(0.02);
	return n;
}

#endif
