/* Process lifecycle under the preload, against the test double: fork and exec while threads allocate, exit() while
 * threads are inside the driver, the application's own SIGUSR1 handler before and after the first CUDA use, and a
 * second preload library. argv[1] picks the scenario; argv[2] is a directory for pid lists where one is needed.
 * The quota is NVIDIA_GPU_MEMORY_LIMITS (MiB); report files are checked by reliability.sh. */
#define _GNU_SOURCE
#include "interposer/hooks.h"   /* first: exact ABI names with their true types */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

static uint64_t Q;
static _Atomic int stop;
static _Atomic long n_ops;

static size_t mem_free(CUresult *rc)
{
	size_t f = 0, t = 0;
	CUresult r = cuMemGetInfo_v2(&f, &t);
	if (rc)
		*rc = r;
	return f;
}

/* Allocate and free in a loop (linear, async, a stream now and then) until stop. Errors are ignored: after exit()
 * or in a child the driver refuses, and that is the point. */
static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!stop) {
		seed = seed * 1103515245u + 12345u;
		CUdeviceptr p;
		size_t sz = ((seed >> 8) % 32 + 1) * MiB;
		if (cuMemAlloc_v2(&p, sz) == CUDA_SUCCESS)
			cuMemFree_v2(p);
		if (cuMemAllocAsync(&p, sz, NULL) == CUDA_SUCCESS)
			cuMemFreeAsync(p, NULL);
		if ((seed >> 4) % 16 == 0) {
			CUstream s;
			if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS)
				cuStreamDestroy_v2(s);
		}
		mem_free(NULL);
		n_ops++;
	}
	return NULL;
}

static void append_pid(const char *dir, const char *list, pid_t pid)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, list);
	FILE *f = fopen(path, "a");
	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
}

/* ---- fork while 4 threads allocate: plain children (exit(), atexit handlers run) and exec'd ones ---- */

static void child_plain(int fork_ok)
{
	CUresult rc;
	size_t f = mem_free(&rc);
	CUdeviceptr p;
	if (fork_ok) {
		int ok = rc == CUDA_SUCCESS && f == Q && cuMemAlloc_v2(&p, Q) == CUDA_SUCCESS;
		printf("%s - forked child %d: empty tables, the whole quota (free %zu), kept it and called exit(0)\n",
		       ok ? "ok" : "not ok", (int)getpid(), f);
	} else {
		CUresult ra = cuMemAlloc_v2(&p, MiB);
		int ok = rc == CUDA_ERROR_NOT_INITIALIZED && ra == CUDA_ERROR_NOT_INITIALIZED;
		printf("%s - forked child %d: the driver's refusal passes through (cuMemGetInfo_v2 %d, cuMemAlloc_v2 %d)\n",
		       ok ? "ok" : "not ok", (int)getpid(), (int)rc, (int)ra);
	}
	fflush(stdout);
	exit(0);        /* not _exit: atexit handlers run, and must not write the parent's report */
}

static void t_fork(const char *dir, const char *self)
{
	int fork_ok = getenv("FAKECUDA_FORK_OK") && !strcmp(getenv("FAKECUDA_FORK_OK"), "1");
	IT_RC(cuInit(0), CUDA_SUCCESS);
	CUdeviceptr mine;
	IT_RC(cuMemAlloc_v2(&mine, 512 * MiB), CUDA_SUCCESS);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 1));
	int plain = 0, exec_ok = 0, forks = 20;
	double t0 = it_now_s();
	for (int i = 0; i < forks; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			if (i % 2 == 0)
				child_plain(fork_ok);
			execl(self, self, "execchild", (char *)NULL);
			_exit(127);
		}
		append_pid(dir, i % 2 == 0 ? "plain-pids" : "exec-pids", pid);
		int st = 0;
		waitpid(pid, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			*(i % 2 == 0 ? &plain : &exec_ok) += 1;
		else
			printf("# child %d status 0x%x\n", (int)pid, st);
	}
	double el = it_now_s() - t0;
	stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	IT_CHECK(plain == forks / 2 && exec_ok == forks / 2, "%d forks in %.2f s while 4 threads did %ld operations: "
		 "%d plain children and %d exec'd ones exited 0", forks, el, (long)n_ops, plain, exec_ok);
	IT_CHECK(mem_free(NULL) == Q - 512 * MiB, "the parent's accounting is untouched (free %zu)", mem_free(NULL));
	IT_CHECK(fakecuda_used_bytes(0) == 512 * MiB, "the parent's driver holds its 512 MiB (%llu)",
		 fakecuda_used_bytes(0));
	IT_RC(cuMemFree_v2(mine), CUDA_SUCCESS);
}

/* An exec'd child is a fresh process: a whole quota, its own exit report (3 x 64 MiB kept). */
static void t_execchild(void)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_CHECK(mem_free(NULL) == Q, "exec'd child %d starts fresh (free %zu)", (int)getpid(), mem_free(NULL));
	CUdeviceptr p;
	for (int i = 0; i < 3; i++)
		IT_RC(cuMemAlloc_v2(&p, 64 * MiB), CUDA_SUCCESS);
}

/* ---- exit() while threads are inside the driver ---- */

static void t_exitnow(void)
{
	cuInit(0);
	CUdeviceptr p;
	cuMemAlloc_v2(&p, 64 * MiB);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 7));
	while (n_ops < 2000)
		sched_yield();
	exit(7);        /* the threads are still calling the driver */
}

static void t_exitloop(const char *dir, const char *self)
{
	int runs = 10, good = 0;
	double worst = 0;
	for (int i = 0; i < runs; i++) {
		double t0 = it_now_s();
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			execl(self, self, "exitnow", (char *)NULL);
			_exit(127);
		}
		append_pid(dir, "exit-pids", pid);
		int st = 0;
		pid_t w;
		while ((w = waitpid(pid, &st, WNOHANG)) == 0 && it_now_s() - t0 < 20)
			usleep(2000);
		if (w == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			printf("# run %d hung, killed\n", i);
		}
		double el = it_now_s() - t0;
		if (el > worst)
			worst = el;
		if (w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7)
			good++;
		else
			printf("# run %d: status 0x%x\n", i, st);
	}
	IT_CHECK(good == runs, "exit(7) while 4 threads call the driver: %d of %d runs exited 7, no crash, no hang "
		 "(slowest %.2f s)", good, runs, worst);
}

/* ---- the application's SIGUSR1 handler ---- */

static _Atomic int app_handler_ran;

static void app_handler(int sig)
{
	(void)sig;
	app_handler_ran++;
}

static void *first_use(void *arg)
{
	(void)arg;
	CUdeviceptr p;
	if (cuMemAlloc_v2(&p, 16 * MiB) == CUDA_SUCCESS)
		cuMemFree_v2(p);
	return NULL;
}

/* Installed before the first CUDA use, which 8 threads make at once: kept; vramguard says so once. */
static void t_sig_before(void)
{
	struct sigaction sa, cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t th[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, first_use, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	sigaction(SIGUSR1, NULL, &cur);
	IT_CHECK(cur.sa_handler == app_handler, "after 8 racing first uses the application's handler is still installed");
	for (int i = 0; i < 10; i++)
		raise(SIGUSR1);
	IT_CHECK(app_handler_ran == 10, "the application's handler ran for each of 10 signals (%d)", (int)app_handler_ran);
	IT_CHECK(mem_free(NULL) == Q, "accounting back to zero (free %zu)", mem_free(NULL));
}

static struct sigaction vg_old;

static void chaining_handler(int sig)
{
	app_handler_ran++;
	if (!(vg_old.sa_flags & SA_SIGINFO) && vg_old.sa_handler != SIG_DFL && vg_old.sa_handler != SIG_IGN)
		vg_old.sa_handler(sig);
}

/* Installed after the first CUDA use: it replaces vramguard's; the application's handler runs, nothing breaks,
 * and an application that chains to the previous handler still gets a report (argv dir: the report directory). */
static void t_sig_after(const char *dir)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	CUdeviceptr keep;
	IT_RC(cuMemAlloc_v2(&keep, 64 * MiB), CUDA_SUCCESS);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &vg_old);
	IT_CHECK(vg_old.sa_handler != SIG_DFL, "vramguard had installed a SIGUSR1 handler at the first CUDA use");
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 3));
	for (int i = 0; i < 200; i++)
		raise(SIGUSR1);
	IT_CHECK(app_handler_ran == 200, "the application's handler ran for 200 signals while 4 threads allocate (%d)",
		 (int)app_handler_ran);
	/* Now chain: our handler calls the one we replaced. */
	sa.sa_handler = chaining_handler;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	char path[4096];
	int found = 0;
	for (int i = 0; i < 200 && !found; i++) {
		snprintf(path, sizeof(path), "%s/sigafter-%d-1-signal.json", dir, (int)getpid());
		found = access(path, F_OK) == 0;
		if (!found)
			it_sleep_s(0.01);
	}
	stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	IT_CHECK(found, "chaining to the replaced handler still produces a signal report (%s)", path);
	IT_RC(cuMemFree_v2(keep), CUDA_SUCCESS);
	IT_CHECK(mem_free(NULL) == Q, "accounting back to zero (free %zu)", mem_free(NULL));
}

/* ---- a second preload library (libnext: getppid through dlsym(RTLD_NEXT)) ---- */

static void t_next(void)
{
	CUdeviceptr a, b;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&a, Q - 512 * MiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&b, GiB), CUDA_ERROR_OUT_OF_MEMORY);
	pid_t pp = getppid();
	IT_CHECK(pp > 0, "getppid through the other library's RTLD_NEXT wrapper (%d)", (int)pp);
	IT_CHECK(mem_free(NULL) == 512 * MiB, "the quota holds with both libraries (free %zu)", mem_free(NULL));
	IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *lim = getenv("NVIDIA_GPU_MEMORY_LIMITS");
	Q = lim ? strtoull(lim, NULL, 10) * MiB : 0;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	const char *t = argc > 1 ? argv[1] : "", *dir = argc > 2 ? argv[2] : NULL;
	if (!Q) {
		printf("not ok %d - NVIDIA_GPU_MEMORY_LIMITS must be set (MiB)\n", ++it_seq);
		return 2;
	}
	if (!strcmp(t, "fork") && dir)
		t_fork(dir, self);
	else if (!strcmp(t, "execchild"))
		t_execchild();
	else if (!strcmp(t, "exitloop") && dir)
		t_exitloop(dir, self);
	else if (!strcmp(t, "exitnow"))
		t_exitnow();
	else if (!strcmp(t, "sig_before"))
		t_sig_before();
	else if (!strcmp(t, "sig_after") && dir)
		t_sig_after(dir);
	else if (!strcmp(t, "next"))
		t_next();
	else {
		printf("not ok %d - unknown scenario '%s'\n", ++it_seq, t);
		return 2;
	}
	return it_failed;
}
