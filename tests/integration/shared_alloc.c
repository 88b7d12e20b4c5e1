/* A CUDA process for the shared-region tests (tests/sections/shared.sh), driven one command per line on
 * stdin; every command answers exactly one line "= ..." on stdout, so a script can make several of them take turns
 * deterministically. Commands (sizes in MiB, answers in bytes):
 *   pid                      = pid PID
 *   init                     = init RC                      cuInit(0) (the test double makes device 0 current)
 *   dev N                    = dev RC                       make device N's primary context current
 *   alloc MIB                = alloc RC held BYTES          one cuMemAlloc_v2, kept until freed
 *   fill STEP                = fill RC held BYTES           cuMemAlloc_v2 STEP MiB until one fails (RC: its code)
 *   freeto MIB               = freeto RC held BYTES         cuMemFree_v2 the newest until at most MIB are held
 *   info                     = info RC FREE TOTAL           cuMemGetInfo_v2
 *   used                     = used HELD DRIVER             what we hold, what the test double holds on the device
 *   race DENIALS SEED GO     = race HELD allocs N denied D other O driver BYTES
 *                              wait for the file GO, then allocate random 1..7 MiB and never free, until DENIALS
 *                              allocations were refused (OUT_OF_MEMORY; any other failure counts in O)
 *   churn ITER SEED GO KEEP  = churn HELD allocs N denied D other O driver BYTES
 *                              wait for the file GO, then ITER times: free a random allocation made by this churn
 *                              (what was held before it stays held: a stake) or allocate 1..7 MiB; then free the
 *                              newest until at most KEEP MiB are held, so that a process whose churn starts after the
 *                              others' ended still finds room (a loaded machine may run them in turn)
 *   exitrace THREADS MS      = exitrace                     THREADS threads allocate and free 1 MiB (and call
 *                              cuMemGetInfo_v2) in a loop; after MS ms the main thread answers and exit()s under them
 *   fork MIB RELEASE         = fork PID                     the child allocates MIB, prints "child RC", waits for
 *                              the file RELEASE, frees and exit()s with RC (0 ok, 3 not initialised...)
 *   reap                     = reap STATUS                  wait for that child (128+N: killed by signal N)
 *   exec                     = exec                         (answered by the new image) exec this program again
 *   exit                     = exit                         exit(0) without freeing
 * End of input exits too. alarm(): never outlives a broken script by more than a minute. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "tests/fakecuda/fakecuda.h"

#define MiB (1024ull * 1024)
#define MAX_HELD 8192

static struct {
	CUdeviceptr p;
	size_t size;
} held[MAX_HELD];
static int nheld;
static unsigned long long held_bytes;
static pid_t child;

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("= ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	va_end(ap);
}

static CUresult alloc(size_t bytes)
{
	if (nheld == MAX_HELD)
		return CUDA_ERROR_UNKNOWN;
	CUdeviceptr p = 0;
	CUresult rc = cuMemAlloc_v2(&p, bytes);
	if (rc == CUDA_SUCCESS) {
		held[nheld].p = p;
		held[nheld].size = bytes;
		nheld++;
		held_bytes += bytes;
	}
	return rc;
}

static int current_device(void)
{
	CUdevice d = 0;
	return cuCtxGetDevice(&d) == CUDA_SUCCESS ? (int)d : 0;
}

static void wait_file(const char *path, int max_ms)
{
	for (int i = 0; i < max_ms && access(path, F_OK) != 0; i++)
		usleep(1000);
}

static void race(int denials, unsigned seed, const char *go)
{
	int allocs = 0, denied = 0, other = 0;
	wait_file(go, 10000);
	while (denied < denials && nheld < MAX_HELD) {
		size_t mib = 1 + rand_r(&seed) % 7;
		CUresult rc = alloc(mib * MiB);
		if (rc == CUDA_SUCCESS)
			allocs++;
		else if (rc == CUDA_ERROR_OUT_OF_MEMORY)
			denied++;
		else if (++other > 100)
			break;
	}
	reply("race %llu allocs %d denied %d other %d driver %llu", held_bytes, allocs, denied, other,
	      fakecuda_used_bytes(current_device()));
}

static void free_to(unsigned long long to, CUresult *rc)
{
	*rc = CUDA_SUCCESS;
	while (held_bytes > to && nheld > 0 && *rc == CUDA_SUCCESS) {
		*rc = cuMemFree_v2(held[nheld - 1].p);
		if (*rc == CUDA_SUCCESS)
			held_bytes -= held[--nheld].size;
	}
}

static void churn(int iter, unsigned seed, const char *go, unsigned long long keep)
{
	int allocs = 0, denied = 0, other = 0;
	int base = nheld;       /* held[0, base): held before the churn, never freed by it */
	wait_file(go, 10000);
	for (int i = 0; i < iter; i++) {
		if (nheld > base && rand_r(&seed) % 2) {
			int k = base + (int)(rand_r(&seed) % (unsigned)(nheld - base));
			if (cuMemFree_v2(held[k].p) != CUDA_SUCCESS) {
				other++;
				continue;
			}
			held_bytes -= held[k].size;
			held[k] = held[--nheld];
			continue;
		}
		CUresult rc = alloc((1 + rand_r(&seed) % 7) * MiB);
		if (rc == CUDA_SUCCESS)
			allocs++;
		else if (rc == CUDA_ERROR_OUT_OF_MEMORY)
			denied++;
		else
			other++;
	}
	CUresult rc;
	free_to(keep, &rc);
	other += rc != CUDA_SUCCESS;
	reply("churn %llu allocs %d denied %d other %d driver %llu", held_bytes, allocs, denied, other,
	      fakecuda_used_bytes(current_device()));
}

static void *exitrace_thread(void *arg)
{
	(void)arg;
	for (;;) {
		CUdeviceptr p = 0;
		size_t f, t;
		if (cuMemAlloc_v2(&p, MiB) == CUDA_SUCCESS)
			cuMemFree_v2(p);
		cuMemGetInfo_v2(&f, &t);
	}
	return NULL;
}

static void exitrace(int threads, int ms)
{
	pthread_t t;
	for (int i = 0; i < threads; i++)
		pthread_create(&t, NULL, exitrace_thread, NULL);
	usleep((useconds_t)ms * 1000);
	reply("exitrace");
	exit(0);                /* destructors run (vramguard leaves the region) while the threads allocate */
}

static void do_fork(size_t mib, const char *release)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		CUdeviceptr p = 0;
		CUresult rc = cuMemAlloc_v2(&p, mib * MiB);
		printf("child %d\n", (int)rc);        /* not an answer ("= "): a sign for the script */
		fflush(stdout);
		wait_file(release, 10000);
		if (rc == CUDA_SUCCESS)
			cuMemFree_v2(p);
		exit((int)rc & 0xff);   /* exit(), not _exit(): atexit handlers and destructors run as in a real child */
	}
	child = pid;
	reply("fork %d", (int)pid);
}

int main(int argc, char **argv)
{
	char line[512];
	setvbuf(stdin, NULL, _IONBF, 0);        /* read no further than the current line: exec keeps the rest */
	alarm(60);
	if (argc > 2 && !strcmp(argv[2], "--execd"))
		reply("exec");
	if (argc < 2 || strcmp(argv[1], "repl") != 0) {
		fprintf(stderr, "usage: shared_alloc repl (commands on stdin)\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[32] = "", a[256] = "", b[256] = "", c[256] = "", d[32] = "";
		if (sscanf(line, "%31s %255s %255s %255s %31s", cmd, a, b, c, d) < 1)
			continue;
		if (!strcmp(cmd, "pid")) {
			reply("pid %d", (int)getpid());
		} else if (!strcmp(cmd, "init")) {
			reply("init %d", (int)cuInit(0));
		} else if (!strcmp(cmd, "dev")) {
			CUcontext ctx = NULL;
			CUresult rc = cuDevicePrimaryCtxRetain(&ctx, atoi(a));
			if (rc == CUDA_SUCCESS)
				rc = cuCtxSetCurrent(ctx);
			reply("dev %d", (int)rc);
		} else if (!strcmp(cmd, "alloc")) {
			CUresult rc = alloc(strtoull(a, NULL, 10) * MiB);
			reply("alloc %d held %llu", (int)rc, held_bytes);
		} else if (!strcmp(cmd, "fill")) {
			size_t step = strtoull(a, NULL, 10) * MiB;
			CUresult rc;
			while ((rc = alloc(step)) == CUDA_SUCCESS)
				;
			reply("fill %d held %llu", (int)rc, held_bytes);
		} else if (!strcmp(cmd, "freeto")) {
			CUresult rc;
			free_to(strtoull(a, NULL, 10) * MiB, &rc);
			reply("freeto %d held %llu", (int)rc, held_bytes);
		} else if (!strcmp(cmd, "info")) {
			size_t f = 0, t = 0;
			CUresult rc = cuMemGetInfo_v2(&f, &t);
			reply("info %d %zu %zu", (int)rc, f, t);
		} else if (!strcmp(cmd, "used")) {
			reply("used %llu %llu", held_bytes, fakecuda_used_bytes(current_device()));
		} else if (!strcmp(cmd, "race")) {
			race(atoi(a), (unsigned)strtoul(b, NULL, 10), c);
		} else if (!strcmp(cmd, "churn")) {
			churn(atoi(a), (unsigned)strtoul(b, NULL, 10), c, strtoull(d, NULL, 10) * MiB);
		} else if (!strcmp(cmd, "exitrace")) {
			exitrace(atoi(a), atoi(b));
		} else if (!strcmp(cmd, "fork")) {
			do_fork(strtoull(a, NULL, 10), b);
		} else if (!strcmp(cmd, "reap")) {
			int st = 0;
			pid_t w;
			while ((w = waitpid(child, &st, 0)) < 0 && errno == EINTR)
				;
			reply("reap %d", w < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		} else if (!strcmp(cmd, "exec")) {
			fflush(stdout);
			execl("/proc/self/exe", argv[0], "repl", "--execd", (char *)NULL);
			reply("exec failed: %s", strerror(errno));
		} else if (!strcmp(cmd, "exit")) {
			reply("exit");
			exit(0);
		} else {
			reply("? %s", cmd);
		}
	}
	return 0;
}
