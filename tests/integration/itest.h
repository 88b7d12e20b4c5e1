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

/* The directory of the reports (VRAMGUARD_REPORT's), in buf; NULL when reports do not go to files. */
static inline const char *it_report_dir(char *buf, size_t size)
{
	const char *t = getenv("VRAMGUARD_REPORT");
	if (!t || !strchr(t, '/'))
		return NULL;
	snprintf(buf, size, "%s", t);
	*strrchr(buf, '/') = '\0';
	return buf[0] ? buf : "/";
}

/* The newest "time_ns" of this process's reports of a reason in dir (files "r-PID-*-REASON.json", the template
 * r-%p-%n-%r.json), 0 if none: when the newest such report was made (after the requests it answers were read). */
static inline unsigned long long it_newest_report_ns(const char *dir, const char *reason)
{
	char pre[32], suf[64];
	snprintf(pre, sizeof(pre), "r-%d-", (int)getpid());
	snprintf(suf, sizeof(suf), "-%s.json", reason);
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned long long newest = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name), m = strlen(suf);
		if (strncmp(e->d_name, pre, strlen(pre)) != 0 || n < m || strcmp(e->d_name + n - m, suf) != 0)
			continue;
		char path[4096], doc[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "r");
		size_t got = f ? fread(doc, 1, sizeof(doc) - 1, f) : 0;
		if (f)
			fclose(f);
		doc[got] = '\0';
		const char *t = strstr(doc, "\"time_ns\": ");
		unsigned long long ns = t ? strtoull(t + 11, NULL, 10) : 0;
		if (ns > newest)
			newest = ns;
	}
	closedir(d);
	return newest;
}

/* The first number after "KEY": in the JSON file path (a report's device figures), or -1 when it is not there. */
static inline long long it_json_number(const char *path, const char *key)
{
	static char doc[1 << 16];
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t got = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[got] = '\0';
	char needle[128];
	snprintf(needle, sizeof(needle), "\"%s\": ", key);
	const char *t = strstr(doc, needle);
	return t ? strtoll(t + strlen(needle), NULL, 10) : -1;
}

/* CLOCK_REALTIME in ns, the clock of a report's time_ns. */
static inline unsigned long long it_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
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
