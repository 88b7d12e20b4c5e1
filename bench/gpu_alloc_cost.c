/* What vramguard adds to real allocations: alloc+free pairs at several sizes, timed on the host from a 48-frame
 * stack (a framework called from Python is deeper than the default capture depth). Run by bench/run_gpu.sh in
 * alternating processes with and without the preload. Driver API (linked, so under LD_PRELOAD vramguard's exports
 * win) always; built by nvcc with -DVG_BENCH_CUDART, also the runtime (cudaMalloc, cudaMallocAsync: the runtime
 * reaches the driver through cuGetProcAddress, PyTorch's and CuPy's route). Runs against the test double too.
 *
 * Usage: gpu_alloc_cost PAIRS ROUNDS SIZES [APIS]
 *        gpu_alloc_cost interleave PAIRS BLOCKS SIZES
 *   SIZES  comma list, K/M/G suffixes (binary): 4K,1M,64M; the label of each row is the token as written
 *   APIS   comma list of rt, rt-async, drv, drv-async (default: all that are built)
 * Each round times PAIRS pairs of every (api, size) in turn (stream-ordered pairs: 10 x PAIRS, they are ~100 x
 * cheaper), so slow drift in the driver or the machine reaches every row alike. A warm-up round is not counted.
 * Prints "preload 0|1", "info ..." lines and, per (api, size), "figure NAME MEDIAN MIN": the median and the
 * minimum over the ROUNDS rounds of the mean time per pair, in microseconds. Exit status 1 on any CUDA error.
 *
 * interleave (under the preload only): the same process times cuMemAlloc_v2+cuMemFree_v2 through vramguard (the
 * exported symbols) and straight into the driver (the driver's own functions, found in libcuda's dynamic symbol
 * table: dlsym would hand back vramguard's), alternating blocks of PAIRS pairs (W R, R W, ...) for BLOCKS blocks
 * per size. No slow spell of the machine can fall on one side only. Per size it prints
 * "interleave NAME REAL_US VG_US RATIO LO HI ADDED_US SLOWER BLOCKS": the medians over the blocks of the real and the
 * wrapped time per pair, of their ratio (with the 95% confidence interval of that median, LO..HI, from order
 * statistics), of the time added, and in how many blocks the wrapped pairs were slower. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#ifdef VG_BENCH_CUDART
#include <cuda_runtime_api.h>
#endif

#include "gpu_bench.h"

enum api { RT, RT_ASYNC, DRV, DRV_ASYNC, NAPI };
static const char *const api_token[NAPI] = { "rt", "rt-async", "drv", "drv-async" };
static const char *const api_row[NAPI] = { "cudaMalloc+cudaFree", "cudaMallocAsync+cudaFreeAsync",
	"cuMemAlloc_v2+cuMemFree_v2", "cuMemAllocAsync+cuMemFreeAsync" };

#define MAX_SIZES 8
#define MAX_ROUNDS 99
#define STACK_DEPTH 48

static int nsizes, nrounds;
static long pairs;
static size_t sizes[MAX_SIZES];
static char labels[MAX_SIZES][16];
static int use[NAPI];
static double us[NAPI][MAX_SIZES][MAX_ROUNDS];
static CUstream dstream;
#ifdef VG_BENCH_CUDART
static cudaStream_t rstream;
#endif

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, int code)
{
	fprintf(stderr, "gpu_alloc_cost: %s failed: error %d\n", what, code);
	exit(1);
}

#define DRV_OK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) die(#call, (int)r_); } while (0)
#define RT_OK(call) do { int r_ = (int)(call); if (r_ != 0) die(#call, r_); } while (0)

/* Mean microseconds per pair over n pairs of one api and size. */
static __attribute__((noinline)) double time_pairs(enum api a, size_t size, long n)
{
	CUdeviceptr d;
	double t0 = now_us();
	switch (a) {
	case DRV:
		for (long i = 0; i < n; i++) {
			DRV_OK(cuMemAlloc_v2(&d, size));
			DRV_OK(cuMemFree_v2(d));
		}
		break;
	case DRV_ASYNC:
		for (long i = 0; i < n; i++) {
			DRV_OK(cuMemAllocAsync(&d, size, dstream));
			DRV_OK(cuMemFreeAsync(d, dstream));
		}
		DRV_OK(cuStreamSynchronize(dstream));
		break;
#ifdef VG_BENCH_CUDART
	case RT:
		for (long i = 0; i < n; i++) {
			void *p;
			RT_OK(cudaMalloc(&p, size));
			RT_OK(cudaFree(p));
		}
		break;
	case RT_ASYNC:
		for (long i = 0; i < n; i++) {
			void *p;
			RT_OK(cudaMallocAsync(&p, size, rstream));
			RT_OK(cudaFreeAsync(p, rstream));
		}
		RT_OK(cudaStreamSynchronize(rstream));
		break;
#endif
	default:
		die("api not built", 0);
	}
	return (now_us() - t0) / n;
}

/* round < 0: the warm-up round, with few pairs and nothing recorded. */
static __attribute__((noinline)) void one_round(int round)
{
	for (int a = 0; a < NAPI; a++) {
		if (!use[a])
			continue;
		long n = (a == RT_ASYNC || a == DRV_ASYNC) ? 10 * pairs : pairs;
		for (int s = 0; s < nsizes; s++) {
			double t = time_pairs(a, sizes[s], round < 0 ? n / 10 + 1 : n);
			if (round >= 0)
				us[a][s][round] = t;
		}
	}
}

/* The warm-up round, then the recorded ones. */
static void all_rounds(void)
{
	one_round(-1);
	for (int r = 0; r < nrounds; r++)
		one_round(r);
}

/* Run fn below depth more frames of this program. */
static __attribute__((noinline)) void nest(int depth, void (*fn)(void))
{
	if (depth == 0) {
		fn();
		return;
	}
	nest(depth - 1, fn);
	__asm__ volatile("" ::: "memory");      /* not a tail call: every level stays on the stack */
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v. */
static double median_of(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_sizes(char *list)
{
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);
		int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
		if (shift)
			end++;
		if (end == tok || *end || v == 0 || nsizes == MAX_SIZES || strlen(tok) >= sizeof labels[0])
			return -1;
		sizes[nsizes] = (size_t)v << shift;
		strcpy(labels[nsizes++], tok);
	}
	return nsizes ? 0 : -1;
}

static int parse_apis(char *list)
{
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int a = 0;
		while (a < NAPI && strcmp(tok, api_token[a]))
			a++;
#ifndef VG_BENCH_CUDART
		if (a == RT || a == RT_ASYNC) {
			fprintf(stderr, "gpu_alloc_cost: api '%s' needs a build with nvcc -DVG_BENCH_CUDART\n", tok);
			return -1;
		}
#endif
		if (a == NAPI)
			return -1;
		use[a] = 1;
	}
	return 0;
}


/* The primary context of device 0, current on this thread: the one the runtime uses too. */
static void use_primary_context(void)
{
	CUdevice dev;
	CUcontext ctx;
	DRV_OK(cuInit(0));
	DRV_OK(cuDeviceGet(&dev, 0));
	DRV_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
	DRV_OK(cuCtxSetCurrent(ctx));
}

/* ---- interleave: wrapped and real calls in one process ---- */

static CUresult (*real_alloc)(CUdeviceptr *, size_t);
static CUresult (*real_free)(CUdeviceptr);
static long il_blocks;

struct sym_query {
	const char *name;
	void *addr;
};

/* The address of a function defined by libcuda.so*, from its dynamic symbol table (DT_HASH or DT_GNU_HASH gives
 * the number of symbols). Nothing here calls dlsym, which vramguard routes to its own wrappers. */
static int find_in_libcuda(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct sym_query *q = data;
	const char *base = strrchr(info->dlpi_name ? info->dlpi_name : "", '/');
	base = base ? base + 1 : info->dlpi_name;
	if (!base || strncmp(base, "libcuda.so", 10) != 0)
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *hash = NULL, *gnu = NULL;
	/* ld.so relocates these entries in place on most targets; an unrelocated one is below the load address. */
#define DYN_PTR(v) ((v) < info->dlpi_addr ? (v) + info->dlpi_addr : (v))
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			symtab = (const ElfW(Sym) *)DYN_PTR(dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			strtab = (const char *)DYN_PTR(dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const uint32_t *)DYN_PTR(dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu = (const uint32_t *)DYN_PTR(dyn->d_un.d_ptr);
	}
#undef DYN_PTR
	if (!symtab || !strtab || (!hash && !gnu))
		return 0;
	uint32_t nsyms = 0;
	if (hash) {
		nsyms = hash[1];
	} else {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
		const uint32_t *buckets = gnu + 4 + bloom * (sizeof(ElfW(Addr)) / 4), *chain = buckets + nbuckets;
		uint32_t last = 0;
		for (uint32_t b = 0; b < nbuckets; b++)
			if (buckets[b] > last)
				last = buckets[b];
		if (last >= symoffset)
			while (!(chain[last - symoffset] & 1))
				last++;
		nsyms = last >= symoffset ? last + 1 : symoffset;
	}
	for (uint32_t i = 0; i < nsyms; i++) {
		const ElfW(Sym) *s = &symtab[i];
		if (s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) == STT_FUNC && !strcmp(strtab + s->st_name, q->name)) {
			q->addr = (void *)(info->dlpi_addr + s->st_value);
			return 1;
		}
	}
	return 0;
}

static void *real_function(const char *name)
{
	struct sym_query q = { name, NULL };
	dl_iterate_phdr(find_in_libcuda, &q);
	return q.addr;
}

/* Mean microseconds per pair over n pairs through alloc and release: both sides call through a pointer, as the
 * program's own calls go through the PLT. */
static __attribute__((noinline)) double time_with(CUresult (*alloc)(CUdeviceptr *, size_t),
						  CUresult (*release)(CUdeviceptr), size_t size, long n)
{
	CUdeviceptr d;
	double t0 = now_us();
	for (long i = 0; i < n; i++) {
		DRV_OK(alloc(&d, size));
		DRV_OK(release(d));
	}
	return (now_us() - t0) / n;
}

static double time_wrapped(size_t size, long n)
{
	return time_with(cuMemAlloc_v2, cuMemFree_v2, size, n);
}

static double time_real(size_t size, long n)
{
	return time_with(real_alloc, real_free, size, n);
}

static double *il_real[MAX_SIZES], *il_vg[MAX_SIZES];

static __attribute__((noinline)) void interleave_blocks(void)
{
	for (int s = 0; s < nsizes; s++) {     /* warm-up, not recorded */
		time_wrapped(sizes[s], pairs);
		time_real(sizes[s], pairs);
	}
	for (long b = 0; b < il_blocks; b++)
		for (int s = 0; s < nsizes; s++) {
			if (b % 2 == 0) {
				il_vg[s][b] = time_wrapped(sizes[s], pairs);
				il_real[s][b] = time_real(sizes[s], pairs);
			} else {
				il_real[s][b] = time_real(sizes[s], pairs);
				il_vg[s][b] = time_wrapped(sizes[s], pairs);
			}
		}
}

static int interleave_main(int argc, char **argv)
{
	if (argc != 5 || (pairs = atol(argv[2])) <= 0 || (il_blocks = atol(argv[3])) < 10 || il_blocks > 100000 ||
	    parse_sizes(argv[4])) {
		fprintf(stderr, "usage: gpu_alloc_cost interleave PAIRS BLOCKS(10-100000) SIZE[,SIZE...]\n");
		return 2;
	}
	if (!preloaded()) {
		printf("skip interleave: needs the preload (it compares vramguard's exports with the driver's own)\n");
		return 0;
	}
	printf("preload 1\n");
	real_alloc = (CUresult(*)(CUdeviceptr *, size_t))real_function("cuMemAlloc_v2");
	real_free = (CUresult(*)(CUdeviceptr))real_function("cuMemFree_v2");
	if (!real_alloc || !real_free || (void *)real_alloc == (void *)cuMemAlloc_v2) {
		printf("skip interleave: cuMemAlloc_v2/cuMemFree_v2 not found in libcuda's symbol table\n");
		return 0;
	}
	use_primary_context();
	for (int s = 0; s < nsizes; s++) {
		il_real[s] = malloc(sizeof(double) * (size_t)il_blocks);
		il_vg[s] = malloc(sizeof(double) * (size_t)il_blocks);
		if (!il_real[s] || !il_vg[s])
			die("malloc", 0);
	}
	nest(STACK_DEPTH, interleave_blocks);
	double *ratio = malloc(sizeof(double) * (size_t)il_blocks), *added = malloc(sizeof(double) * (size_t)il_blocks);
	if (!ratio || !added)
		die("malloc", 0);
	/* 95% interval for a median from order statistics: ranks n/2 -+ 0.98 sqrt(n) (normal approximation). */
	long lo = (long)floor(il_blocks / 2.0 - 0.98 * sqrt((double)il_blocks));
	long hi = (long)ceil(il_blocks / 2.0 + 0.98 * sqrt((double)il_blocks));
	if (lo < 0)
		lo = 0;
	if (hi > il_blocks - 1)
		hi = il_blocks - 1;
	for (int s = 0; s < nsizes; s++) {
		long slower = 0;
		for (long b = 0; b < il_blocks; b++) {
			ratio[b] = il_vg[s][b] / il_real[s][b];
			added[b] = il_vg[s][b] - il_real[s][b];
			slower += il_vg[s][b] > il_real[s][b];
		}
		double r = median_of(ratio, il_blocks), a = median_of(added, il_blocks);
		printf("interleave %s:%s %.4f %.4f %.5f %.5f %.5f %.4f %ld %ld\n", api_row[DRV], labels[s],
		       median_of(il_real[s], il_blocks), median_of(il_vg[s], il_blocks), r, ratio[lo], ratio[hi], a,
		       slower, il_blocks);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "interleave"))
		return interleave_main(argc, argv);
#ifdef VG_BENCH_CUDART
	char apis[] = "rt,rt-async,drv,drv-async";
#else
	char apis[] = "drv,drv-async";
#endif
	if (argc < 4 || argc > 5 || (pairs = atol(argv[1])) <= 0 || (nrounds = atoi(argv[2])) <= 0 ||
	    nrounds > MAX_ROUNDS || parse_sizes(argv[3]) || parse_apis(argc > 4 ? argv[4] : apis)) {
		fprintf(stderr, "usage: gpu_alloc_cost PAIRS ROUNDS(1-%d) SIZE[,SIZE...] [rt,rt-async,drv,drv-async]\n",
			MAX_ROUNDS);
		return 2;
	}
	printf("preload %d\n", preloaded());

	use_primary_context();
	if (use[DRV_ASYNC])
		DRV_OK(cuStreamCreate(&dstream, CU_STREAM_NON_BLOCKING));
#ifdef VG_BENCH_CUDART
	RT_OK(cudaSetDevice(0));
	RT_OK(cudaFree(NULL));
	if (use[RT_ASYNC])
		RT_OK(cudaStreamCreateWithFlags(&rstream, cudaStreamNonBlocking));
#endif
	size_t fr = 0, tot = 0;
	DRV_OK(cuMemGetInfo_v2(&fr, &tot));
	/* Under vramguard the total is the quota: proof that its exports are the ones called. */
	printf("info cuMemGetInfo_v2 total %.1f GiB\n", tot / 1073741824.0);

	nest(STACK_DEPTH, all_rounds);

	for (int a = 0; a < NAPI; a++) {
		for (int s = 0; use[a] && s < nsizes; s++) {
			double med = median_of(us[a][s], nrounds);     /* sorted: [0] is the best round */
			printf("figure %s:%s %.4f %.4f\n", api_row[a], labels[s], med, us[a][s][0]);
		}
	}
	return 0;
}
