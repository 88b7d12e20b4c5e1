/* Leaks and streams for the report tests, against the test double. Static, noinline functions with names the
 * report must show (the binary is not linked with -rdynamic: names come from its .symtab). argv[1] picks the
 * scenario. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

#define NOINLINE __attribute__((noinline))

static CUdeviceptr kept[8];

static NOINLINE void leak_buffers(void)
{
	for (int i = 0; i < 3; i++)
		IT_RC(cuMemAlloc_v2(&kept[i], 64 * MiB), CUDA_SUCCESS);
	__asm__ volatile("" ::: "memory");      /* keep the calls from being tail calls */
}

static NOINLINE void balanced(void)
{
	CUdeviceptr p;
	IT_RC(cuMemAlloc_v2(&p, 32 * MiB), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(p), CUDA_SUCCESS);
	__asm__ volatile("" ::: "memory");
}

static NOINLINE CUstream make_stream(void)
{
	CUstream s = NULL;
	IT_RC(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	__asm__ volatile("" ::: "memory");
	return s;
}

static NOINLINE void finish(CUstream s)
{
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	__asm__ volatile("" ::: "memory");
}

/* A leak, a balanced allocation, a busy stream destroyed, an idle one destroyed, one left alive. */
static void t_leaks(void)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	leak_buffers();
	balanced();
	CUstream busy = make_stream(), idle = make_stream();
	make_stream();                                  /* never destroyed */
	fakecuda_stream_set_pending(busy, 1);
	long q0 = fakecuda_calls("cuStreamQuery"), s0 = fakecuda_calls("cuStreamSynchronize");
	finish(busy);
	finish(idle);
	const char *check = getenv("VRAMGUARD_STREAM_CHECK");
	long q = fakecuda_calls("cuStreamQuery") - q0, sy = fakecuda_calls("cuStreamSynchronize") - s0;
	if (check && !strcmp(check, "off"))
		IT_CHECK(q == 0, "VRAMGUARD_STREAM_CHECK=off: destroy never queries (%ld)", q);
	else
		IT_CHECK(q == 2, "each destroy queried its stream once (%ld)", q);
	if (check && !strcmp(check, "sync"))
		IT_CHECK(sy == 1, "VRAMGUARD_STREAM_CHECK=sync waited for the busy stream (%ld)", sy);
	else
		IT_CHECK(sy == 0, "no synchronisation unless asked (%ld)", sy);
}

/* Destroying a capturing stream: the check must not query it (that would invalidate the capture). */
static void t_capture(void)
{
	CUstream s;
	CUgraph g;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	IT_RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	raise(SIGUSR1);                 /* a report while capturing: live streams are listed, not queried */
	char dir[4096];                 /* the capture ends once that report is written, however long it takes */
	IT_CHECK(it_report_dir(dir, sizeof(dir)) && it_wait_files(dir, "capture-1", 1, 30) == 1,
		 "the signal report was written while the stream was capturing");
	IT_RC(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	IT_RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	cuStreamDestroy_v2(s);
	IT_CHECK(fakecuda_capture_invalidations() == 0, "no capturing stream was ever queried");
}

/* Reports on SIGUSR1 while 4 threads allocate and free: no deadlock, no crash. */
static _Atomic int storm_stop;

static void *storm_worker(void *arg)
{
	(void)arg;
	CUcontext c;
	cuDevicePrimaryCtxRetain(&c, 0);
	cuCtxSetCurrent(c);
	while (!storm_stop) {
		CUdeviceptr p;
		if (cuMemAlloc_v2(&p, MiB) == CUDA_SUCCESS)
			cuMemFree_v2(p);
	}
	return NULL;
}

static void t_storm(int spaced)
{
	pthread_t th[4];
	char dir[4096];
	IT_RC(cuInit(0), CUDA_SUCCESS);
	leak_buffers();
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, storm_worker, NULL);
	/* A storm (coalesced into few reports), then spaced signals. No signal goes unanswered: after each, a signal
	 * report made after it was sent appears (waited for, 30 s at most: a bound on a hang, not on speed). */
	for (int i = 0; i < 500; i++)
		kill(getpid(), SIGUSR1);
	int answered = 0;
	for (int i = 0; i < spaced && it_report_dir(dir, sizeof(dir)); i++) {
		unsigned long long sent = it_realtime_ns();
		kill(getpid(), SIGUSR1);
		double end = it_now_s() + 30;
		while (it_newest_report_ns(dir, "signal") < sent && it_now_s() < end)
			it_sleep_s(0.02);
		answered += it_newest_report_ns(dir, "signal") >= sent;
	}
	storm_stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	IT_CHECK(answered == spaced, "each of %d spaced signals answered by a signal report made after it (%d)", spaced,
		 answered);
	IT_CHECK(1, "the process survived a storm of 500 signals and %d spaced ones", spaced);
}

/* The application's own SIGUSR1 handler is never replaced. */
static _Atomic int app_handler_ran;

static void app_handler(int sig)
{
	(void)sig;
	app_handler_ran = 1;
}

static void t_own_handler(void)
{
	signal(SIGUSR1, app_handler);
	IT_RC(cuInit(0), CUDA_SUCCESS);
	raise(SIGUSR1);
	IT_CHECK(app_handler_ran, "the application's handler still runs");
}

/* A forked child exits normally: it must not print the parent's report. */
static void t_fork(void)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	leak_buffers();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		exit(0);
	int st = 0;
	waitpid(pid, &st, 0);
	IT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exited");
}

/* The report file cannot be written whole (RLIMIT_FSIZE, like a full disk): one warning, exit code intact. SIGXFSZ
 * keeps its default disposition (it kills), as in a real job: vramguard's own writes must not raise it. */
static void t_fsize(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGXFSZ);
	signal(SIGXFSZ, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	struct rlimit rl = { 1024, 1024 };     /* the JSON report (> 1.5 KB) is larger; stderr lines are not */
	setrlimit(RLIMIT_FSIZE, &rl);
	IT_RC(cuInit(0), CUDA_SUCCESS);
	leak_buffers();
}

/* Run under fsize_exec with stderr a file and a limit smaller than one line: vramguard's denial line (written by this
 * thread) and its text report at exit fail quietly instead of raising SIGXFSZ, which would kill the job. The thread's
 * signal mask is the application's again afterwards, and no SIGXFSZ is left pending. */
static void t_stderr_full(void)
{
	CUdeviceptr p;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	leak_buffers();
	IT_RC(cuMemAlloc_v2(&p, 8 * GiB), CUDA_ERROR_OUT_OF_MEMORY);     /* a denial line on the full stderr */
	sigset_t mask, pend;
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	sigpending(&pend);
	IT_CHECK(!sigismember(&mask, SIGXFSZ), "SIGXFSZ is not left blocked in the thread that logged");
	IT_CHECK(!sigismember(&pend, SIGXFSZ), "no SIGXFSZ is left pending");
	struct sigaction sa;
	sigaction(SIGXFSZ, NULL, &sa);
	IT_CHECK(sa.sa_handler == SIG_DFL, "SIGXFSZ keeps its default disposition");
}

/* "many N DEPTH": N small live allocations spread over 4^DEPTH call stacks (each level calls through one of four
 * functions), for the size of the HTML report of a big process (docs/report-format.md, *The HTML report*). */
static NOINLINE void many_step(int depth, unsigned path);
static NOINLINE void many_a(int d, unsigned p) { many_step(d, p); __asm__ volatile("" ::: "memory"); }
static NOINLINE void many_b(int d, unsigned p) { many_step(d, p); __asm__ volatile("" ::: "memory"); }
static NOINLINE void many_c(int d, unsigned p) { many_step(d, p); __asm__ volatile("" ::: "memory"); }
static NOINLINE void many_d(int d, unsigned p) { many_step(d, p); __asm__ volatile("" ::: "memory"); }
static NOINLINE void many_step(int depth, unsigned path)
{
	static void (*const next[4])(int, unsigned) = { many_a, many_b, many_c, many_d };
	CUdeviceptr p;
	if (depth == 0) {
		IT_RC(cuMemAlloc_v2(&p, 1024), CUDA_SUCCESS);
		return;
	}
	next[path & 3](depth - 1, path >> 2);
	__asm__ volatile("" ::: "memory");
}

static void t_many(long n, int depth)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	for (long i = 0; i < n; i++)
		many_step(depth, (unsigned)i);
}

int main(int argc, char **argv)
{
	const char *t = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(t, "leaks"))
		t_leaks();
	else if (!strcmp(t, "capture"))
		t_capture();
	else if (!strcmp(t, "storm"))
		t_storm(argc > 2 ? atoi(argv[2]) : 0);
	else if (!strcmp(t, "own_handler"))
		t_own_handler();
	else if (!strcmp(t, "fork"))
		t_fork();
	else if (!strcmp(t, "fsize"))
		t_fsize();
	else if (!strcmp(t, "stderr_full"))
		t_stderr_full();
	else if (!strcmp(t, "many") && argc > 3)
		t_many(atol(argv[2]), atoi(argv[3]));
	else if (!strcmp(t, "fsize_free")) {       /* the same job without the file size limit */
		IT_RC(cuInit(0), CUDA_SUCCESS);
		leak_buffers();
	}
	else {
		printf("not ok %d - unknown scenario '%s'\n", ++it_seq, t);
		return 2;
	}
	return it_failed;
}
