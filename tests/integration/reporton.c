/* VRAMGUARD_WARN_AT and VRAMGUARD_REPORT_ON under the preload, against the test double (run.sh sets the variables,
 * a 4 GiB quota and VRAMGUARD_REPORT_INTERVAL=1 so the rate bound is seen in a second). A threshold crossing makes
 * one `threshold` report, hovering none, a crossing within the interval none (it is counted in the next warning,
 * which run.sh checks); the first denial makes one `denial` report that names the live allocations' call site, a
 * burst no more, the next interval another. argv[1]: scenario; argv[2]: the directory the reports go to. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>

#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

#define NOINLINE __attribute__((noinline))

/* The whole of the one file in dir named prefix* (NULL if none); the caller frees it. */
static char *slurp_first(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096] = "";
	if (!d)
		return NULL;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && !strstr(e->d_name, ".vgtmp.")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			break;
		}
	closedir(d);
	FILE *f = path[0] ? fopen(path, "r") : NULL;
	if (!f)
		return NULL;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strdup(buf);
}

static bool has(const char *doc, const char *needle)
{
	return doc && strstr(doc, needle) != NULL;
}

/* VRAMGUARD_WARN_AT=75% of a 4 GiB quota: 3 GiB. */
static void t_threshold(const char *dir)
{
	CUdeviceptr a, b, c, d, s;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&a, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&b, GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&c, GiB), CUDA_SUCCESS);            /* 3 GiB: at the line, not above it */
	it_sleep_s(0.2);
	IT_CHECK(it_count_files(dir, "r-threshold-") == 0, "no threshold report at the line");
	IT_RC(cuMemAlloc_v2(&d, 256 * MiB), CUDA_SUCCESS);      /* the crossing */
	IT_CHECK(it_wait_files(dir, "r-threshold-", 1, 10) == 1, "the crossing wrote one threshold report");
	char *doc = slurp_first(dir, "r-threshold-");
	IT_CHECK(has(doc, "\"reason\": \"threshold\""), "its reason is threshold");
	IT_CHECK(has(doc, "\"soft_limit_source\": \"VRAMGUARD_WARN_AT\""), "it names VRAMGUARD_WARN_AT as the source");
	IT_CHECK(has(doc, "\"soft_limit_bytes\": 3221225472"), "its soft limit is 75%% of the quota");
	free(doc);
	/* Hovering between 3 GiB and 3.75 GiB, never below 90 % (2.7 GiB): no new crossing. */
	for (int i = 0; i < 20; i++) {
		IT_RC(cuMemFree_v2(d), CUDA_SUCCESS);
		IT_RC(cuMemAlloc_v2(&d, (i % 2 ? 768 : 128) * MiB), CUDA_SUCCESS);
	}
	it_sleep_s(0.3);
	IT_CHECK(it_count_files(dir, "r-threshold-") == 1, "hovering at the line made no second report");
	/* Below 90 %: re-armed (at the next charge: frees do not look). A crossing within the interval (1 s) is
	 * counted, not reported. */
	IT_RC(cuMemFree_v2(d), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(c), CUDA_SUCCESS);                   /* 2 GiB */
	IT_RC(cuMemAlloc_v2(&s, 64 * MiB), CUDA_SUCCESS);       /* seen below the line: re-armed */
	IT_RC(cuMemAlloc_v2(&c, GiB + 256 * MiB), CUDA_SUCCESS); /* 3.31 GiB: the second crossing */
	it_sleep_s(0.3);
	IT_CHECK(it_count_files(dir, "r-threshold-") == 1, "a second crossing within the interval made no report");
	it_sleep_s(1.0);
	IT_RC(cuMemFree_v2(c), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(s), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&s, 64 * MiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&c, GiB + 256 * MiB), CUDA_SUCCESS); /* the third, past the interval */
	IT_CHECK(it_wait_files(dir, "r-threshold-", 2, 10) == 2, "a crossing after the interval wrote the second report");
	IT_RC(cuMemFree_v2(c), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(s), CUDA_SUCCESS);
	(void)a;
	(void)b;
}

/* What holds the memory when the job is refused: its call site must be in the denial report. */
static NOINLINE void hold_memory(CUdeviceptr *p, CUdeviceptr *q)
{
	IT_RC(cuMemAlloc_v2(p, 2 * GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(q, GiB + 512 * MiB), CUDA_SUCCESS);
}

static void t_denial(const char *dir)
{
	CUdeviceptr p, q, r;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	hold_memory(&p, &q);
	struct sigaction old;
	IT_CHECK(sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO),
		 "without signal in VRAMGUARD_REPORT_ON, SIGUSR1 keeps its default disposition");
	it_sleep_s(0.2);
	IT_CHECK(it_count_files(dir, "r-") == 0, "no report before a denial");
	for (int i = 0; i < 10; i++)                            /* a burst of denials */
		IT_RC(cuMemAlloc_v2(&r, GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(it_wait_files(dir, "r-denial-", 1, 10) == 1, "the first denial wrote a denial report");
	it_sleep_s(0.3);
	IT_CHECK(it_count_files(dir, "r-denial-") == 1, "and the burst of ten only one");
	char *doc = slurp_first(dir, "r-denial-");
	IT_CHECK(has(doc, "\"reason\": \"denial\""), "its reason is denial");
	IT_CHECK(has(doc, "\"symbol\": \"hold_memory\""), "it names the call site holding the memory (hold_memory)");
	IT_CHECK(has(doc, "\"used_bytes\": 3758096384"), "it shows the 3.5 GiB held");
	free(doc);
	it_sleep_s(1.1);
	IT_RC(cuMemAlloc_v2(&r, GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(it_wait_files(dir, "r-denial-", 2, 10) == 2, "a denial after the interval wrote another");
}

/* Refused, then gone at once: the denial report is still written (by the exit handler if the thread was late). */
static void t_dies(const char *dir)
{
	CUdeviceptr p, r;
	(void)dir;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&p, 3 * GiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&r, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 2 ? argv[2] : NULL;
	if (dir && !strcmp(argv[1], "threshold"))
		t_threshold(dir);
	else if (dir && !strcmp(argv[1], "denial"))
		t_denial(dir);
	else if (dir && !strcmp(argv[1], "dies"))
		t_dies(dir);
	else {
		fprintf(stderr, "usage: reporton threshold|denial|dies DIR\n");
		return 2;
	}
	return it_failed;
}
