/* fakecuda.c - test double of libcuda.so.1 for vramguard's CPU tests; never installed.
 * See fakecuda.h for the build command, environment variables and conventions.
 * Everything is bookkeeping in host memory: device pointers are fake addresses that must never be dereferenced. */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <uthash.h>

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakecuda.h"

#define FC_EXPORT __attribute__((visibility("default")))
#define MAXDEV 16
#define GRAN (2ull << 20)
#define MiB512 512ull

/* ------------------------------------------------------------------ entry point list */
#define FC_ENTRY_LIST(X)                                                                                            \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)                       \
	X(cuDeviceGetUuid) X(cuDeviceGetUuid_v2) X(cuDeviceTotalMem) X(cuDeviceTotalMem_v2) X(cuDeviceGetAttribute) \
	X(cuGetErrorName) X(cuGetErrorString)                                                                       \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRelease_v2)                    \
	X(cuDevicePrimaryCtxReset) X(cuDevicePrimaryCtxReset_v2) X(cuDevicePrimaryCtxGetState)                      \
	X(cuDevicePrimaryCtxSetFlags) X(cuDevicePrimaryCtxSetFlags_v2)                                              \
	X(cuCtxCreate) X(cuCtxCreate_v2) X(cuCtxCreate_v3) X(cuCtxCreate_v4) X(cuCtxDestroy) X(cuCtxDestroy_v2)     \
	X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxPushCurrent) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent)         \
	X(cuCtxPopCurrent_v2) X(cuCtxGetDevice) X(cuCtxGetDevice_v2) X(cuCtxSynchronize) X(cuCtxSynchronize_v2)     \
	X(cuMemAlloc) X(cuMemAlloc_v2) X(cuMemAllocPitch) X(cuMemAllocPitch_v2) X(cuMemFree) X(cuMemFree_v2)        \
	X(cuMemAllocManaged) X(cuMemGetInfo) X(cuMemGetInfo_v2) X(cuMemGetAddressRange) X(cuMemGetAddressRange_v2)  \
	X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz)       \
	X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemPoolCreate) X(cuMemPoolDestroy)                             \
	X(cuDeviceGetDefaultMemPool) X(cuDeviceGetMemPool) X(cuDeviceSetMemPool) X(cuMemPoolTrimTo)                 \
	X(cuMemPoolGetAttribute) X(cuMemPoolSetAttribute)                                                           \
	X(cuDeviceGetGraphMemAttribute) X(cuDeviceSetGraphMemAttribute) X(cuDeviceGraphMemTrim)                     \
	X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleLoadFatBinary) X(cuModuleUnload)        \
	X(cuLibraryLoadData) X(cuLibraryLoadFromFile) X(cuLibraryUnload)                                            \
	X(cuMemCreate) X(cuMemGetAllocationGranularity) X(cuMemRelease) X(cuMemRetainAllocationHandle)              \
	X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)                      \
	X(cuMemGetAllocationPropertiesFromHandle)                                                                   \
	X(cuArrayCreate) X(cuArrayCreate_v2) X(cuArray3DCreate) X(cuArray3DCreate_v2) X(cuMipmappedArrayCreate)     \
	X(cuArrayDestroy) X(cuMipmappedArrayDestroy)                                                                \
	X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuStreamDestroy) X(cuStreamDestroy_v2)                    \
	X(cuStreamQuery) X(cuStreamQuery_ptsz) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz)                   \
	X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz) X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz)     \
	X(cuStreamBeginCapture_v2) X(cuStreamBeginCapture_v2_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz) \
	X(cuStreamBeginCaptureToGraph) X(cuStreamBeginCaptureToGraph_ptsz)                                          \
	X(cuStreamGetCtx) X(cuStreamGetCtx_ptsz) X(cuStreamGetCtx_v2) X(cuStreamGetCtx_v2_ptsz)                     \
	X(cuStreamGetDevice) X(cuStreamGetDevice_ptsz) X(cuGraphDestroy) X(cuThreadExchangeStreamCaptureMode)       \
	X(cuGetProcAddress) X(cuGetProcAddress_v2)                                                                  \
	X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)                       \
	X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)       \
	X(cuEventCreate) X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventQuery) X(cuEventDestroy_v2)                \
	X(cuFuncGetName) X(cuStreamWaitEvent) X(cuStreamWaitEvent_ptsz)

enum {
#define X(n) FC_##n,
	FC_ENTRY_LIST(X)
#undef X
	FC__COUNT
};
static const char *const fc_names[FC__COUNT] = {
#define X(n) #n,
	FC_ENTRY_LIST(X)
#undef X
};

/* ------------------------------------------------------------------ compile-time signature checks */
#define SIGCHK(fn, pfn) _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), pfn), #fn " vs " #pfn)
SIGCHK(cuMemAlloc_v2, PFN_cuMemAlloc_v3020);
SIGCHK(cuMemAlloc, PFN_cuMemAlloc_v2000);
SIGCHK(cuMemFree_v2, PFN_cuMemFree_v3020);
SIGCHK(cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020);
SIGCHK(cuMemGetInfo, PFN_cuMemGetInfo_v2000);
SIGCHK(cuMemAllocPitch_v2, PFN_cuMemAllocPitch_v3020);
SIGCHK(cuDeviceTotalMem_v2, PFN_cuDeviceTotalMem_v3020);
SIGCHK(cuStreamQuery, PFN_cuStreamQuery_v2000);
SIGCHK(cuStreamQuery_ptsz, PFN_cuStreamQuery_v7000_ptsz);
SIGCHK(cuMemAllocAsync_ptsz, PFN_cuMemAllocAsync_v11020_ptsz);
SIGCHK(cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020);
SIGCHK(cuMemFreeAsync_ptsz, PFN_cuMemFreeAsync_v11020_ptsz);
SIGCHK(cuGetProcAddress, PFN_cuGetProcAddress_v11030);
SIGCHK(cuGetProcAddress_v2, PFN_cuGetProcAddress_v12000);
SIGCHK(cuCtxGetDevice_v2, PFN_cuCtxGetDevice_v13000);
SIGCHK(cuCtxSynchronize_v2, PFN_cuCtxSynchronize_v13000);
SIGCHK(cuStreamBeginCapture_v2_ptsz, PFN_cuStreamBeginCapture_v10010_ptsz);
SIGCHK(cuStreamGetCtx_v2, PFN_cuStreamGetCtx_v12050);
SIGCHK(cuStreamGetDevice_ptsz, PFN_cuStreamGetDevice_v12080_ptsz);
SIGCHK(cuCtxCreate_v4, PFN_cuCtxCreate_v12050);
SIGCHK(cuMemCreate, PFN_cuMemCreate_v10020);
SIGCHK(cuArray3DCreate_v2, PFN_cuArray3DCreate_v3020);
SIGCHK(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000);
SIGCHK(cuStreamDestroy_v2, PFN_cuStreamDestroy_v4000);
SIGCHK(cuMemPoolCreate, PFN_cuMemPoolCreate_v11020);
SIGCHK(cuMemPoolDestroy, PFN_cuMemPoolDestroy_v11020);
SIGCHK(cuDeviceGetMemPool, PFN_cuDeviceGetMemPool_v11020);
SIGCHK(cuDeviceSetMemPool, PFN_cuDeviceSetMemPool_v11020);
SIGCHK(cuMemPoolTrimTo, PFN_cuMemPoolTrimTo_v11020);
SIGCHK(cuMemPoolGetAttribute, PFN_cuMemPoolGetAttribute_v11020);
SIGCHK(cuMemPoolSetAttribute, PFN_cuMemPoolSetAttribute_v11020);
SIGCHK(cuDeviceGetGraphMemAttribute, PFN_cuDeviceGetGraphMemAttribute_v11040);
SIGCHK(cuDeviceSetGraphMemAttribute, PFN_cuDeviceSetGraphMemAttribute_v11040);
SIGCHK(cuDeviceGraphMemTrim, PFN_cuDeviceGraphMemTrim_v11040);
SIGCHK(cuModuleLoad, PFN_cuModuleLoad_v2000);
SIGCHK(cuModuleLoadData, PFN_cuModuleLoadData_v2000);
SIGCHK(cuModuleLoadDataEx, PFN_cuModuleLoadDataEx_v2010);
SIGCHK(cuModuleLoadFatBinary, PFN_cuModuleLoadFatBinary_v2000);
SIGCHK(cuModuleUnload, PFN_cuModuleUnload_v2000);
SIGCHK(cuLibraryLoadData, PFN_cuLibraryLoadData_v12000);
SIGCHK(cuLibraryLoadFromFile, PFN_cuLibraryLoadFromFile_v12000);
SIGCHK(cuLibraryUnload, PFN_cuLibraryUnload_v12000);

/* ------------------------------------------------------------------ state */
enum kind { K_MEM = 1, K_MANAGED, K_ASYNC, K_ASYNC_CAPTURE, K_ARRAY, K_MIPMAP };

struct CUctx_st {
	void *self;               /* hash key */
	int dev;
	int primary;
	int alive;
	unsigned flags;
	int refcount;             /* primary only */
	int activated;            /* exists on its device: created, or primary retained (again after a reset) */
	unsigned long long fp;    /* FAKECUDA_CTX_BYTES charged to the device while activated */
	UT_hash_handle hh;
};

struct CUstream_st {
	void *self;
	struct CUctx_st *ctx;
	unsigned flags;
	int priority;
	int pending;
	int capturing;
	int cap_invalidated;
	int queried_while_capturing;
	UT_hash_handle hh;
};

/* A stream-ordered pool: reserved = device memory it holds (charged to dev), used = what it has handed out
 * (<= reserved). A destroyed pool with allocations outstanding stays in g_pools (invisible to find_pool) until
 * the last one is freed. */
struct CUmemPoolHandle_st {
	void *self;
	int dev;                  /* -1: host pool, charges nothing */
	int is_default;
	int destroyed;
	unsigned long long reserved, used, reserved_high, used_high;
	unsigned long long threshold;   /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	int reuse[3];             /* CU_MEMPOOL_ATTR_REUSE_*: stored only */
	UT_hash_handle hh;
};

struct alloc {
	unsigned long long ptr;   /* key: device address or array handle */
	unsigned long long size;  /* charged / logical bytes */
	unsigned long long span;  /* address-space bytes */
	int dev;
	int kind;
	struct CUctx_st *ctx;
	struct CUmemPoolHandle_st *pool;  /* K_ASYNC: the pool it came from */
	UT_hash_handle hh;
};

/* A loaded module (ctx set) or library (ctx NULL): FAKECUDA_MODULE_BYTES on dev until unloaded. */
struct image {
	void *self;               /* key and handle */
	int dev;
	int is_lib;
	struct CUctx_st *ctx;
	unsigned long long bytes;
	UT_hash_handle hh;
};

struct vmmh {
	unsigned long long h;     /* key */
	unsigned long long size;
	int dev;                  /* -1: host memory */
	int refs;
	int maps;
	CUmemAllocationProp prop;
	UT_hash_handle hh;
};

struct resv {
	unsigned long long base;  /* key */
	unsigned long long size;
	UT_hash_handle hh;
};

struct mapping {
	unsigned long long va;    /* key */
	unsigned long long size;
	unsigned long long h;
	UT_hash_handle hh;
};

struct vaspace {
	unsigned long long base, size, bump;
	int wrapped;
	int (*busy)(unsigned long long a, unsigned long long len, unsigned long long *next);
};

/* used/peak/live are the logical books (fakecuda_used_bytes): async allocations at their requested size.
 * What the device holds (fakecuda_process_device_bytes, cuMemGetInfo, the room every charge is checked against)
 * counts pools by their reserve instead: phys() = used - async_used + pool_reserved + graph_reserved + driver. */
struct devstate {
	unsigned long long used, peak;
	long live;
	unsigned long long async_used;      /* part of used handed out by this device's pools */
	unsigned long long pool_reserved;   /* sum of the reserves of this device's pools */
	unsigned long long graph_reserved, graph_used, graph_reserved_high, graph_used_high;
	unsigned long long driver;          /* context and module footprints */
	struct CUctx_st primary;
	struct CUmemPoolHandle_st defpool;
	struct CUmemPoolHandle_st *curpool; /* cuDeviceSetMemPool; cuMemAllocAsync takes from it */
	struct vaspace va;
};

struct failrule {
	int idx;
	long n;
	int plus;
	CUresult code;
};

/* Adaptive: a contended lock spins briefly before sleeping, so that two threads allocating in a loop measure the
 * callers' cost, not futex sleeps (the real driver's locks are finer than this one global lock). */
static pthread_mutex_t g_mu = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ndev = 1;
static int g_uuid_base;     /* FAKECUDA_UUID_BASE: ordinal i is "physical GPU" i + base (a CUDA_VISIBLE_DEVICES stand-in) */
static unsigned long long g_total = 16ull << 30;
static unsigned long long g_ctx_bytes;      /* FAKECUDA_CTX_BYTES */
static unsigned long long g_module_bytes;   /* FAKECUDA_MODULE_BYTES */
static int g_drv = 13000;
static int g_autoctx = 1;
static int g_fork_ok = 0;
static atomic_int g_used_flag;       /* some entry point was called in this process */
static atomic_int g_forked_dead;     /* fork child without FAKECUDA_FORK_OK */
static atomic_long g_calls[FC__COUNT];             /* entry points with a fault rule: one exact global count */
/* The others count in per-thread shards (summed when read), so that threads calling in a loop do not fight over
 * one cache line the real driver does not have. */
#define FC_CALL_SHARDS 16
static struct { atomic_long n[FC__COUNT]; } __attribute__((aligned(64))) g_calls_sh[FC_CALL_SHARDS];
static atomic_int g_call_shard_next;
/* Thread state is initial-exec, as a real driver's (loaded with the program): a general-dynamic access costs a call
 * to __tls_get_addr, which a benchmark would charge to its caller. */
#define FC_TLS __attribute__((tls_model("initial-exec")))
static __thread int t_call_shard FC_TLS = -1;
static unsigned char g_has_rule[FC__COUNT];
static struct failrule g_rules[64];
static int g_nrules;
static atomic_long g_invalidations;

static struct devstate g_dev[MAXDEV];
static int g_auto_retained;           /* device 0's primary retained once for the automatic context */
static struct CUctx_st *g_ctxs;       /* every context ever made (dead ones stay, marked !alive) */
static struct CUstream_st *g_streams;
static struct CUmemPoolHandle_st *g_pools;
static struct alloc *g_allocs;
static struct image *g_images;
static struct vmmh *g_vmm;
static struct resv *g_resv;
static struct mapping *g_maps;
static unsigned long long g_next_vmm = 0x100001;
static struct vaspace g_lowva, g_hva, g_resva;

static __thread struct CUctx_st *t_stack[64] FC_TLS;
static __thread int t_depth FC_TLS;
static __thread int t_touched FC_TLS;

#define LOCK() pthread_mutex_lock(&g_mu)
#define UNLOCK() pthread_mutex_unlock(&g_mu)

static unsigned long long round_up(unsigned long long v, unsigned long long a) { return (v + a - 1) / a * a; }

static int busy_allocs(unsigned long long a, unsigned long long len, unsigned long long *next)
{
	struct alloc *x, *tmp;
	HASH_ITER(hh, g_allocs, x, tmp) {
		if (x->ptr < a + len && a < x->ptr + x->span) { *next = x->ptr + x->span; return 1; }
	}
	return 0;
}

static int busy_resv(unsigned long long a, unsigned long long len, unsigned long long *next)
{
	struct resv *x, *tmp;
	HASH_ITER(hh, g_resv, x, tmp) {
		if (x->base < a + len && a < x->base + x->size) { *next = x->base + x->size; return 1; }
	}
	return 0;
}

/* Take [addr, addr+span) from v; unique until the window wraps, then probes around live objects. */
static int va_take(struct vaspace *v, unsigned long long span, unsigned long long align, unsigned long long *out)
{
	if (span == 0 || span > v->size) return -1;
	unsigned long long off = round_up(v->bump, align);
	if (!v->wrapped && off <= v->size && span <= v->size - off) {
		*out = v->base + off;
		v->bump = off + span;
		return 0;
	}
	v->wrapped = 1;
	for (int tries = 0; tries < 1000000; tries++) {
		if (off > v->size || span > v->size - off) off = 0;
		unsigned long long next;
		if (!v->busy(v->base + off, span, &next)) {
			*out = v->base + off;
			v->bump = off + span;
			return 0;
		}
		off = round_up(next - v->base, align);
	}
	return -1;
}

static unsigned long long parse_size(const char *s, unsigned long long dflt)
{
	if (!s || !*s) return dflt;
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (end == s) return dflt;
	switch (toupper((unsigned char)*end)) {
	case 'K': v <<= 10; break;
	case 'M': v <<= 20; break;
	case 'G': v <<= 30; break;
	case 'T': v <<= 40; break;
	default: break;
	}
	return v;
}

/* FAKECUDA_NULLMEM=1: allocations without books or lock (fakecuda.h). */
static int g_nullmem;
static atomic_uint g_null_threads;
static __thread unsigned long long t_null_next FC_TLS, t_null_free[64] FC_TLS;
static __thread int t_null_nfree FC_TLS;

static CUresult null_alloc(CUdeviceptr *p, size_t size)
{
	if (size == 0) return CUDA_ERROR_INVALID_VALUE;
	if (t_null_nfree) { *p = t_null_free[--t_null_nfree]; return CUDA_SUCCESS; }
	if (!t_null_next)
		t_null_next = 0x600000000000ull + ((unsigned long long)(atomic_fetch_add(&g_null_threads, 1) % 1024) << 36);
	*p = t_null_next;
	t_null_next += round_up(size, GRAN);
	return CUDA_SUCCESS;
}

static CUresult null_free(CUdeviceptr p)
{
	if (p && t_null_nfree < 64) t_null_free[t_null_nfree++] = p;
	return CUDA_SUCCESS;
}

static void reset_state_locked(void);
static void atfork_prepare(void) { LOCK(); }
static void atfork_parent(void) { UNLOCK(); }
static void atfork_child(void)
{
	pthread_mutex_init(&g_mu, NULL);
	if (!atomic_load(&g_used_flag)) return;
	if (g_fork_ok) {
		reset_state_locked();
		for (int i = 0; i < FC__COUNT; i++) {
			atomic_store(&g_calls[i], 0);
			for (int k = 0; k < FC_CALL_SHARDS; k++) atomic_store(&g_calls_sh[k].n[i], 0);
		}
		atomic_store(&g_invalidations, 0);
		atomic_store(&g_used_flag, 0);
	} else {
		atomic_store(&g_forked_dead, 1);
	}
	t_depth = 0;
	t_touched = 0;
}

static int name_index(const char *name)
{
	for (int i = 0; i < FC__COUNT; i++)
		if (strcmp(fc_names[i], name) == 0) return i;
	return -1;
}

static void parse_fail(const char *s)
{
	if (!s) return;
	char *copy = strdup(s), *save = NULL;
	if (!copy) return;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok)) tok++;
		char *colon = strchr(tok, ':');
		if (!colon) { fprintf(stderr, "fakecuda: bad FAKECUDA_FAIL item '%s'\n", tok); continue; }
		*colon = 0;
		int idx = name_index(tok);
		if (idx < 0) { fprintf(stderr, "fakecuda: FAKECUDA_FAIL names unknown entry point '%s'\n", tok); continue; }
		char *p = colon + 1, *end;
		long n = strtol(p, &end, 10);
		if (end == p || n < 1) { fprintf(stderr, "fakecuda: bad count in FAKECUDA_FAIL for '%s'\n", tok); continue; }
		int plus = 0;
		if (*end == '+') { plus = 1; end++; }
		CUresult code = CUDA_ERROR_OUT_OF_MEMORY;
		if (*end == '=') code = (CUresult)strtol(end + 1, NULL, 0);
		if (g_nrules < (int)(sizeof g_rules / sizeof g_rules[0])) {
			g_rules[g_nrules++] = (struct failrule){ idx, n, plus, code };
			g_has_rule[idx] = 1;
		}
	}
	free(copy);
}

static void pool_init(struct CUmemPoolHandle_st *p, int dev, int is_default)
{
	p->self = p;
	p->dev = dev;
	p->is_default = is_default;
	p->destroyed = 0;
	p->reserved = p->used = p->reserved_high = p->used_high = 0;
	p->threshold = 0;
	p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
}

/* A device's memory books and its default pool as at start (the default pool current again). */
static void dev_books_clear(struct devstate *ds, int d)
{
	ds->used = ds->peak = 0;
	ds->live = 0;
	ds->async_used = ds->pool_reserved = 0;
	ds->graph_reserved = ds->graph_used = ds->graph_reserved_high = ds->graph_used_high = 0;
	ds->driver = 0;
	pool_init(&ds->defpool, d, 1);
	ds->curpool = &ds->defpool;
}

static void init_devices_locked(void)
{
	for (int d = 0; d < MAXDEV; d++) {
		struct devstate *ds = &g_dev[d];
		dev_books_clear(ds, d);
		ds->primary.self = &ds->primary;
		ds->primary.dev = d;
		ds->primary.primary = 1;
		ds->primary.alive = 1;
		ds->primary.flags = 0;
		ds->primary.refcount = 0;
		ds->primary.activated = 0;
		ds->primary.fp = 0;
		ds->va.base = 0x700000000000ull + ((unsigned long long)d << 40);
		ds->va.size = 1ull << 40;
		ds->va.bump = 0;
		ds->va.wrapped = 0;
		ds->va.busy = busy_allocs;
		if (d < g_ndev) {
			HASH_ADD_PTR(g_ctxs, self, &ds->primary);
			HASH_ADD_PTR(g_pools, self, &ds->defpool);
		}
	}
	g_lowva = (struct vaspace){ 0x10000000ull, 0xE0000000ull, 0, 0, busy_allocs };
	g_hva = (struct vaspace){ 0x500000000000ull, 1ull << 40, 0, 0, busy_allocs };
	g_resva = (struct vaspace){ 0x100000000000ull, 0x400000000000ull, 0, 0, busy_resv };
}

static void init_once(void)
{
	const char *s = getenv("FAKECUDA_DEVICES");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		g_ndev = n < 1 ? 1 : n > MAXDEV ? MAXDEV : (int)n;
	}
	g_total = parse_size(getenv("FAKECUDA_MEM"), 16ull << 30);
	g_ctx_bytes = parse_size(getenv("FAKECUDA_CTX_BYTES"), 0);
	g_module_bytes = parse_size(getenv("FAKECUDA_MODULE_BYTES"), 0);
	s = getenv("FAKECUDA_DRIVER_VERSION");
	if (s && *s) g_drv = (int)strtol(s, NULL, 10);
	s = getenv("FAKECUDA_AUTOCTX");
	g_autoctx = !(s && strcmp(s, "0") == 0);
	s = getenv("FAKECUDA_FORK_OK");
	g_fork_ok = (s && strcmp(s, "1") == 0);
	s = getenv("FAKECUDA_UUID_BASE");
	if (s && *s) g_uuid_base = (int)strtol(s, NULL, 10);
	s = getenv("FAKECUDA_NULLMEM");
	g_nullmem = (s && strcmp(s, "1") == 0);
	parse_fail(getenv("FAKECUDA_FAIL"));
	init_devices_locked();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void ensure_init(void) { pthread_once(&g_once, init_once); }

/* Every entry point starts here: count, refuse after fork, inject faults. */
/* Like the real driver (measured under python with torch, CuPy and JAX): cuInit registers the driver's teardown
 * with atexit, after which every call returns CUDA_ERROR_DEINITIALIZED. A handler registered before cuInit runs
 * after the teardown. */
static atomic_int g_deinitialized;
static void fc_teardown(void) { atomic_store(&g_deinitialized, 1); }

static CUresult fc_enter(int idx, int fork_exempt)
{
	ensure_init();
	long n = 0;
	if (g_has_rule[idx]) {
		n = atomic_fetch_add(&g_calls[idx], 1) + 1;
	} else {
		if (t_call_shard < 0) t_call_shard = atomic_fetch_add(&g_call_shard_next, 1) % FC_CALL_SHARDS;
		atomic_fetch_add_explicit(&g_calls_sh[t_call_shard].n[idx], 1, memory_order_relaxed);
	}
	if (!fork_exempt && atomic_load(&g_forked_dead)) return CUDA_ERROR_NOT_INITIALIZED;
	if (!fork_exempt && atomic_load(&g_deinitialized)) return CUDA_ERROR_DEINITIALIZED;
	if (!atomic_load_explicit(&g_used_flag, memory_order_relaxed)) atomic_store(&g_used_flag, 1);
	if (g_has_rule[idx]) {
		for (int i = 0; i < g_nrules; i++) {
			struct failrule *r = &g_rules[i];
			if (r->idx == idx && (n == r->n || (r->plus && n > r->n))) return r->code;
		}
	}
	return CUDA_SUCCESS;
}

#define ENTER(NAME)                                      \
	do {                                             \
		CUresult fc_r_ = fc_enter(FC_##NAME, 0); \
		if (fc_r_ != CUDA_SUCCESS) return fc_r_; \
	} while (0)
#define ENTER_EXEMPT(NAME)                               \
	do {                                             \
		CUresult fc_r_ = fc_enter(FC_##NAME, 1); \
		if (fc_r_ != CUDA_SUCCESS) return fc_r_; \
	} while (0)

/* ------------------------------------------------------------------ bookkeeping helpers (lock held) */
static int dev_ok(CUdevice d) { return d >= 0 && d < g_ndev; }

/* Device memory this process holds on dev: what cuMemGetInfo takes from the total. */
static unsigned long long phys(int dev)
{
	const struct devstate *ds = &g_dev[dev];
	return ds->used - ds->async_used + ds->pool_reserved + ds->graph_reserved + ds->driver;
}

/* Whether dev can hold n more bytes. */
static int room(int dev, unsigned long long n)
{
	unsigned long long held = phys(dev);
	return held <= g_total && n <= g_total - held;
}

/* Context footprint (FAKECUDA_CTX_BYTES): taken when a context comes into existence on its device. */
static CUresult ctx_activate(struct CUctx_st *c)
{
	if (c->activated) return CUDA_SUCCESS;
	if (!room(c->dev, g_ctx_bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
	g_dev[c->dev].driver += g_ctx_bytes;
	c->fp = g_ctx_bytes;
	c->activated = 1;
	return CUDA_SUCCESS;
}

static void ctx_deactivate(struct CUctx_st *c)
{
	if (!c->activated) return;
	g_dev[c->dev].driver -= c->fp;
	c->fp = 0;
	c->activated = 0;
}

static struct CUctx_st *find_ctx(CUcontext c)
{
	struct CUctx_st *x = NULL;
	if (!c) return NULL;
	void *key = c;
	HASH_FIND_PTR(g_ctxs, &key, x);
	return x;
}

/* current context of this thread, binding device 0's primary lazily (FAKECUDA_AUTOCTX) */
/* This thread has not touched a context yet and gets device 0's primary on first use (FAKECUDA_AUTOCTX). */
static int autoctx_pending(void) { return t_depth == 0 && !t_touched && g_autoctx; }

static struct CUctx_st *cur_ctx(void)
{
	if (autoctx_pending()) {
		struct CUctx_st *p = &g_dev[0].primary;
		if (!g_auto_retained) { g_auto_retained = 1; p->refcount++; (void)ctx_activate(p); }
		t_stack[t_depth++] = p;
		t_touched = 1;
	}
	return t_depth ? t_stack[t_depth - 1] : NULL;
}

static CUresult cur_live_ctx(struct CUctx_st **out)
{
	struct CUctx_st *c = cur_ctx();
	if (!c || !c->alive) return CUDA_ERROR_INVALID_CONTEXT;
	/* A retained primary comes back into existence at its first use after a reset (or after the automatic
	 * context found no room for it). */
	if (c->primary && c->refcount > 0 && !c->activated) {
		CUresult r = ctx_activate(c);
		if (r != CUDA_SUCCESS) return r;
	}
	*out = c;
	return CUDA_SUCCESS;
}

static int is_special_stream(CUstream s) { return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

static CUresult resolve_stream(CUstream s, struct CUctx_st **ctx, struct CUstream_st **st)
{
	if (is_special_stream(s)) {
		*st = NULL;
		return cur_live_ctx(ctx);
	}
	struct CUstream_st *x = NULL;
	void *key = s;
	HASH_FIND_PTR(g_streams, &key, x);
	if (!x) return CUDA_ERROR_INVALID_HANDLE;
	if (!x->ctx->alive) return CUDA_ERROR_INVALID_CONTEXT;
	*ctx = x->ctx;
	*st = x;
	return CUDA_SUCCESS;
}

static int charges(int kind) { return kind != K_ASYNC_CAPTURE; }

/* The logical books of one live object (fakecuda_used_bytes, fakecuda_live_allocations). */
static void book(int dev, unsigned long long size)
{
	struct devstate *ds = &g_dev[dev];
	ds->used += size;
	if (ds->used > ds->peak) ds->peak = ds->used;
	ds->live++;
}

static void unbook(int dev, unsigned long long size)
{
	struct devstate *ds = &g_dev[dev];
	ds->used -= size;
	ds->live--;
}

/* An object that takes its own device memory (everything but pool allocations). */
static CUresult charge(int dev, unsigned long long size)
{
	if (!room(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
	book(dev, size);
	return CUDA_SUCCESS;
}

static void uncharge(int dev, unsigned long long size) { unbook(dev, size); }

/* ---- stream-ordered pools (the driver's documented model, simplified: no fragmentation, no per-stream reuse
 * rules). An allocation of n takes n from the free reserve if reserved - used >= n, else the pool grows by
 * round_up(n, 2 MiB) of device memory. A free gives n back to the pool, never to the device; the device gets
 * reserve back only from pool_release_to: at a synchronization (above the release threshold), cuMemPoolTrimTo,
 * cuMemPoolDestroy. */
static void pool_set_reserved(struct CUmemPoolHandle_st *p, unsigned long long reserved)
{
	if (p->dev >= 0) g_dev[p->dev].pool_reserved = g_dev[p->dev].pool_reserved - p->reserved + reserved;
	p->reserved = reserved;
	if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
}

static CUresult pool_take(struct CUmemPoolHandle_st *p, unsigned long long n, unsigned long long *grown)
{
	*grown = 0;
	if (p->reserved - p->used < n) {
		if (n > ULLONG_MAX - GRAN) return CUDA_ERROR_OUT_OF_MEMORY;
		unsigned long long g = round_up(n, GRAN);
		if (p->dev >= 0 && !room(p->dev, g)) return CUDA_ERROR_OUT_OF_MEMORY;
		if (p->dev < 0 && g > ULLONG_MAX - p->reserved) return CUDA_ERROR_OUT_OF_MEMORY;
		pool_set_reserved(p, p->reserved + g);
		*grown = g;
	}
	p->used += n;
	if (p->used > p->used_high) p->used_high = p->used;
	return CUDA_SUCCESS;
}

/* Unused reserve back to the device, down to max(keep, used). */
static void pool_release_to(struct CUmemPoolHandle_st *p, unsigned long long keep)
{
	unsigned long long target = keep > p->used ? keep : p->used;
	if (p->reserved > target) pool_set_reserved(p, target);
}

static void pool_free_struct(struct CUmemPoolHandle_st *p)
{
	pool_release_to(p, 0);
	HASH_DEL(g_pools, p);
	free(p);
}

static void pool_give(struct CUmemPoolHandle_st *p, unsigned long long n)
{
	p->used -= n;
	if (p->destroyed) {
		pool_release_to(p, 0);
		if (p->used == 0) pool_free_struct(p);
	}
}

/* A synchronization on dev: each of its pools (and each host pool) holding more than its release threshold
 * releases unused reserve down to max(threshold, used). */
static void sync_release(int dev)
{
	struct CUmemPoolHandle_st *p, *tmp;
	HASH_ITER(hh, g_pools, p, tmp) {
		if ((p->dev == dev || p->dev < 0) && p->reserved > p->threshold) pool_release_to(p, p->threshold);
	}
}

/* pool: set for K_ASYNC (charged through the pool's reserve), NULL otherwise. */
static CUresult new_alloc(unsigned long long *out, unsigned long long size, int dev, struct CUctx_st *ctx,
                          int kind, struct vaspace *va, struct CUmemPoolHandle_st *pool)
{
	if (size == 0) return CUDA_ERROR_INVALID_VALUE;
	struct alloc *a = calloc(1, sizeof *a);
	if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
	unsigned long long grown = 0;
	if (pool) {
		CUresult r = pool_take(pool, size, &grown);
		if (r != CUDA_SUCCESS) { free(a); return r; }
		if (dev >= 0) { book(dev, size); g_dev[dev].async_used += size; }
	} else if (dev >= 0 && charges(kind)) {
		CUresult r = charge(dev, size);
		if (r != CUDA_SUCCESS) { free(a); return r; }
	}
	unsigned long long span = round_up(size, MiB512), addr;
	if (va_take(va, span, MiB512, &addr) != 0) {
		if (pool) {
			if (dev >= 0) { unbook(dev, size); g_dev[dev].async_used -= size; }
			pool->used -= size;
			pool_set_reserved(pool, pool->reserved - grown);
		} else if (dev >= 0 && charges(kind)) {
			uncharge(dev, size);
		}
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->ptr = addr;
	a->size = size;
	a->span = span;
	a->dev = dev;
	a->kind = kind;
	a->ctx = ctx;
	a->pool = pool;
	HASH_ADD(hh, g_allocs, ptr, sizeof a->ptr, a);
	*out = addr;
	return CUDA_SUCCESS;
}

static struct alloc *find_alloc(unsigned long long p)
{
	struct alloc *a = NULL;
	HASH_FIND(hh, g_allocs, &p, sizeof p, a);
	return a;
}

static void drop_alloc(struct alloc *a)
{
	if (a->pool) {
		if (a->dev >= 0) { unbook(a->dev, a->size); g_dev[a->dev].async_used -= a->size; }
		pool_give(a->pool, a->size);
	} else if (a->dev >= 0 && charges(a->kind)) {
		uncharge(a->dev, a->size);
	}
	HASH_DEL(g_allocs, a);
	free(a);
}

static void drop_image(struct image *m)
{
	g_dev[m->dev].driver -= m->bytes;
	HASH_DEL(g_images, m);
	free(m);
}

/* Context destroyed / primary reset or fully released: free what was allocated and loaded in it, give back its
 * footprint, and, as the synchronization that comes with it, release pool reserve above the thresholds. */
static void free_ctx_resources(struct CUctx_st *c)
{
	struct alloc *a, *atmp;
	HASH_ITER(hh, g_allocs, a, atmp) {
		if (a->ctx == c) drop_alloc(a);
	}
	struct CUstream_st *s, *stmp;
	HASH_ITER(hh, g_streams, s, stmp) {
		if (s->ctx == c) { HASH_DEL(g_streams, s); free(s); }
	}
	struct image *m, *mtmp;
	HASH_ITER(hh, g_images, m, mtmp) {
		if (m->ctx == c) drop_image(m);
	}
	ctx_deactivate(c);
	sync_release(c->dev);
}

static void reset_state_locked(void)
{
	struct alloc *a, *atmp;
	HASH_ITER(hh, g_allocs, a, atmp) { HASH_DEL(g_allocs, a); free(a); }
	struct CUstream_st *s, *stmp;
	HASH_ITER(hh, g_streams, s, stmp) { HASH_DEL(g_streams, s); free(s); }
	struct vmmh *v, *vtmp;
	HASH_ITER(hh, g_vmm, v, vtmp) { HASH_DEL(g_vmm, v); free(v); }
	struct resv *r, *rtmp;
	HASH_ITER(hh, g_resv, r, rtmp) { HASH_DEL(g_resv, r); free(r); }
	struct mapping *m, *mtmp;
	HASH_ITER(hh, g_maps, m, mtmp) { HASH_DEL(g_maps, m); free(m); }
	struct image *im, *imtmp;
	HASH_ITER(hh, g_images, im, imtmp) { HASH_DEL(g_images, im); free(im); }
	struct CUmemPoolHandle_st *p, *ptmp;
	HASH_ITER(hh, g_pools, p, ptmp) {
		if (!p->is_default) { HASH_DEL(g_pools, p); free(p); }
	}
	struct CUctx_st *c, *ctmp;
	HASH_ITER(hh, g_ctxs, c, ctmp) {
		if (c->primary) { c->refcount = 0; c->flags = 0; }
		else c->alive = 0;
		c->activated = 0;
		c->fp = 0;
	}
	for (int d = 0; d < MAXDEV; d++) dev_books_clear(&g_dev[d], d);
	g_auto_retained = 0;
}

/* ================================================================== init, version, devices */
CUresult CUDAAPI cuInit(unsigned int Flags)
{
	ENTER(cuInit);
	if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
	static atomic_int teardown_registered;
	if (!atomic_exchange(&teardown_registered, 1))
		atexit(fc_teardown);
	LOCK();
	(void)cur_ctx();
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	ENTER_EXEMPT(cuDriverGetVersion);
	if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = g_drv;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	ENTER(cuDeviceGetCount);
	if (!count) return CUDA_ERROR_INVALID_VALUE;
	*count = g_ndev;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	ENTER(cuDeviceGet);
	if (!device) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	ENTER(cuDeviceGetName);
	if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "Fake GPU %d", dev);
	return CUDA_SUCCESS;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
	if (!uuid) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	memset(uuid->bytes, 0, sizeof uuid->bytes);
	uuid->bytes[3] = (char)(dev + g_uuid_base);
	uuid->bytes[15] = (char)(dev + g_uuid_base);
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { ENTER(cuDeviceGetUuid); return get_uuid(uuid, dev); }
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { ENTER(cuDeviceGetUuid_v2); return get_uuid(uuid, dev); }

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	ENTER(cuDeviceTotalMem_v2);
	if (!bytes) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	*bytes = g_total;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	ENTER(cuDeviceTotalMem);
	if (!bytes) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	*bytes = g_total > UINT_MAX ? UINT_MAX : (unsigned)g_total;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	ENTER(cuDeviceGetAttribute);
	if (!pi) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if ((int)attrib <= 0 || (int)attrib >= (int)CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
	int v = 0;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: v = 32; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = dev + 1; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
	default: v = 0; break;
	}
	*pi = v;
	return CUDA_SUCCESS;
}

static const struct { CUresult code; const char *name; } g_errs[] = {
#define E(n) { n, #n },
	E(CUDA_SUCCESS)
	E(CUDA_ERROR_INVALID_VALUE)
	E(CUDA_ERROR_OUT_OF_MEMORY)
	E(CUDA_ERROR_NOT_INITIALIZED)
	E(CUDA_ERROR_DEINITIALIZED)
	E(CUDA_ERROR_PROFILER_DISABLED)
	E(CUDA_ERROR_PROFILER_NOT_INITIALIZED)
	E(CUDA_ERROR_PROFILER_ALREADY_STARTED)
	E(CUDA_ERROR_PROFILER_ALREADY_STOPPED)
	E(CUDA_ERROR_STUB_LIBRARY)
	E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)
	E(CUDA_ERROR_DEVICE_UNAVAILABLE)
	E(CUDA_ERROR_NO_DEVICE)
	E(CUDA_ERROR_INVALID_DEVICE)
	E(CUDA_ERROR_DEVICE_NOT_LICENSED)
	E(CUDA_ERROR_INVALID_IMAGE)
	E(CUDA_ERROR_INVALID_CONTEXT)
	E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT)
	E(CUDA_ERROR_MAP_FAILED)
	E(CUDA_ERROR_UNMAP_FAILED)
	E(CUDA_ERROR_ARRAY_IS_MAPPED)
	E(CUDA_ERROR_ALREADY_MAPPED)
	E(CUDA_ERROR_NO_BINARY_FOR_GPU)
	E(CUDA_ERROR_ALREADY_ACQUIRED)
	E(CUDA_ERROR_NOT_MAPPED)
	E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY)
	E(CUDA_ERROR_NOT_MAPPED_AS_POINTER)
	E(CUDA_ERROR_ECC_UNCORRECTABLE)
	E(CUDA_ERROR_UNSUPPORTED_LIMIT)
	E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE)
	E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
	E(CUDA_ERROR_INVALID_PTX)
	E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT)
	E(CUDA_ERROR_NVLINK_UNCORRECTABLE)
	E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
	E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
	E(CUDA_ERROR_JIT_COMPILATION_DISABLED)
	E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY)
	E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC)
	E(CUDA_ERROR_CONTAINED)
	E(CUDA_ERROR_INVALID_SOURCE)
	E(CUDA_ERROR_FILE_NOT_FOUND)
	E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND)
	E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED)
	E(CUDA_ERROR_OPERATING_SYSTEM)
	E(CUDA_ERROR_INVALID_HANDLE)
	E(CUDA_ERROR_ILLEGAL_STATE)
	E(CUDA_ERROR_LOSSY_QUERY)
	E(CUDA_ERROR_NOT_FOUND)
	E(CUDA_ERROR_NOT_READY)
	E(CUDA_ERROR_ILLEGAL_ADDRESS)
	E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
	E(CUDA_ERROR_LAUNCH_TIMEOUT)
	E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING)
	E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
	E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
	E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)
	E(CUDA_ERROR_CONTEXT_IS_DESTROYED)
	E(CUDA_ERROR_ASSERT)
	E(CUDA_ERROR_TOO_MANY_PEERS)
	E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
	E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
	E(CUDA_ERROR_HARDWARE_STACK_ERROR)
	E(CUDA_ERROR_ILLEGAL_INSTRUCTION)
	E(CUDA_ERROR_MISALIGNED_ADDRESS)
	E(CUDA_ERROR_INVALID_ADDRESS_SPACE)
	E(CUDA_ERROR_INVALID_PC)
	E(CUDA_ERROR_LAUNCH_FAILED)
	E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
	E(CUDA_ERROR_TENSOR_MEMORY_LEAK)
	E(CUDA_ERROR_NOT_PERMITTED)
	E(CUDA_ERROR_NOT_SUPPORTED)
	E(CUDA_ERROR_SYSTEM_NOT_READY)
	E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
	E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
	E(CUDA_ERROR_MPS_CONNECTION_FAILED)
	E(CUDA_ERROR_MPS_RPC_FAILURE)
	E(CUDA_ERROR_MPS_SERVER_NOT_READY)
	E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED)
	E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED)
	E(CUDA_ERROR_MPS_CLIENT_TERMINATED)
	E(CUDA_ERROR_CDP_NOT_SUPPORTED)
	E(CUDA_ERROR_CDP_VERSION_MISMATCH)
	E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
	E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
	E(CUDA_ERROR_STREAM_CAPTURE_MERGE)
	E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)
	E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
	E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
	E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
	E(CUDA_ERROR_CAPTURED_EVENT)
	E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
	E(CUDA_ERROR_TIMEOUT)
	E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
	E(CUDA_ERROR_EXTERNAL_DEVICE)
	E(CUDA_ERROR_INVALID_CLUSTER_SIZE)
	E(CUDA_ERROR_FUNCTION_NOT_LOADED)
	E(CUDA_ERROR_INVALID_RESOURCE_TYPE)
	E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION)
	E(CUDA_ERROR_KEY_ROTATION)
	E(CUDA_ERROR_UNKNOWN)
#undef E
};

static const char *err_desc(CUresult e)
{
	switch (e) {
	case CUDA_SUCCESS: return "no error";
	case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
	case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
	case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
	case CUDA_ERROR_DEINITIALIZED: return "driver shutting down";
	case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
	case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
	case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
	case CUDA_ERROR_ILLEGAL_STATE: return "the operation cannot be performed in the present state";
	case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
	case CUDA_ERROR_NOT_READY: return "device not ready";
	case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
	case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return "operation not permitted when stream is capturing";
	case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return "operation failed due to a previous error during capture";
	case CUDA_ERROR_UNKNOWN: return "unknown error";
	default: return NULL;
	}
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	ENTER_EXEMPT(cuGetErrorName);
	if (!pStr) return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof g_errs / sizeof g_errs[0]; i++)
		if (g_errs[i].code == error) { *pStr = g_errs[i].name; return CUDA_SUCCESS; }
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	ENTER_EXEMPT(cuGetErrorString);
	if (!pStr) return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof g_errs / sizeof g_errs[0]; i++)
		if (g_errs[i].code == error) {
			const char *d = err_desc(error);
			*pStr = d ? d : g_errs[i].name;
			return CUDA_SUCCESS;
		}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ================================================================== contexts */
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	ENTER(cuDevicePrimaryCtxRetain);
	if (!pctx) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	struct CUctx_st *p = &g_dev[dev].primary;
	CUresult r = ctx_activate(p);
	if (r == CUDA_SUCCESS) {
		p->refcount++;
		*pctx = p;
	}
	UNLOCK();
	return r;
}

static CUresult primary_release(CUdevice dev)
{
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *p = &g_dev[dev].primary;
	if (p->refcount <= 0) r = CUDA_ERROR_INVALID_CONTEXT;
	else if (--p->refcount == 0) {
		free_ctx_resources(p);
		if (dev == 0) g_auto_retained = 0;
	}
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { ENTER(cuDevicePrimaryCtxRelease); return primary_release(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) { ENTER(cuDevicePrimaryCtxRelease_v2); return primary_release(dev); }

static CUresult primary_reset(CUdevice dev)
{
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	free_ctx_resources(&g_dev[dev].primary);
	g_dev[dev].primary.flags = 0;
	UNLOCK();
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { ENTER(cuDevicePrimaryCtxReset); return primary_reset(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) { ENTER(cuDevicePrimaryCtxReset_v2); return primary_reset(dev); }

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	ENTER(cuDevicePrimaryCtxGetState);
	if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	*flags = g_dev[dev].primary.flags;
	*active = g_dev[dev].primary.refcount > 0;
	UNLOCK();
	return CUDA_SUCCESS;
}

static CUresult primary_setflags(CUdevice dev, unsigned int flags)
{
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	g_dev[dev].primary.flags = flags;
	UNLOCK();
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) { ENTER(cuDevicePrimaryCtxSetFlags); return primary_setflags(dev, flags); }
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) { ENTER(cuDevicePrimaryCtxSetFlags_v2); return primary_setflags(dev, flags); }

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	if (!pctx) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if (t_depth >= (int)(sizeof t_stack / sizeof t_stack[0])) return CUDA_ERROR_OUT_OF_MEMORY;
	struct CUctx_st *c = calloc(1, sizeof *c);
	if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
	c->self = c;
	c->dev = dev;
	c->alive = 1;
	c->flags = flags;
	LOCK();
	CUresult r = ctx_activate(c);
	if (r == CUDA_SUCCESS) HASH_ADD_PTR(g_ctxs, self, c);
	UNLOCK();
	if (r != CUDA_SUCCESS) { free(c); return r; }
	t_touched = 1;
	t_stack[t_depth++] = c;
	*pctx = c;
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) { ENTER(cuCtxCreate); return ctx_create(pctx, flags, dev); }
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) { ENTER(cuCtxCreate_v2); return ctx_create(pctx, flags, dev); }
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags, CUdevice dev)
{
	ENTER(cuCtxCreate_v3);
	(void)paramsArray; (void)numParams;
	return ctx_create(pctx, flags, dev);
}
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
{
	ENTER(cuCtxCreate_v4);
	(void)ctxCreateParams;
	return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = find_ctx(ctx);
	if (!c || !c->alive || c->primary) r = CUDA_ERROR_INVALID_CONTEXT;
	else {
		free_ctx_resources(c);
		c->alive = 0;
	}
	UNLOCK();
	if (r == CUDA_SUCCESS) {
		/* popped from this thread's stack if it is there */
		int j = 0;
		for (int i = 0; i < t_depth; i++)
			if (t_stack[i] != c) t_stack[j++] = t_stack[i];
		t_depth = j;
		t_touched = 1;
	}
	return r;
}
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { ENTER(cuCtxDestroy); return ctx_destroy(ctx); }
CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) { ENTER(cuCtxDestroy_v2); return ctx_destroy(ctx); }

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	ENTER(cuCtxSetCurrent);
	if (ctx) {
		LOCK();
		struct CUctx_st *c = find_ctx(ctx);
		int ok = c && c->alive;
		UNLOCK();
		if (!ok) return CUDA_ERROR_INVALID_CONTEXT;
		if (t_depth == 0) t_stack[t_depth++] = c;
		else t_stack[t_depth - 1] = c;
	} else if (t_depth > 0) {
		t_depth--;
	}
	t_touched = 1;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	ENTER(cuCtxGetCurrent);
	if (!pctx) return CUDA_ERROR_INVALID_VALUE;
	/* The context stack is per thread: like the real driver, reading it takes no lock (only the first touch of
	 * the automatic context changes shared state). */
	if (!autoctx_pending()) {
		*pctx = t_depth ? t_stack[t_depth - 1] : NULL;
		return CUDA_SUCCESS;
	}
	LOCK();
	*pctx = cur_ctx();
	UNLOCK();
	return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx)
{
	LOCK();
	struct CUctx_st *c = find_ctx(ctx);
	int ok = c && c->alive;
	UNLOCK();
	if (!ok) return CUDA_ERROR_INVALID_CONTEXT;
	if (t_depth >= (int)(sizeof t_stack / sizeof t_stack[0])) return CUDA_ERROR_OUT_OF_MEMORY;
	t_stack[t_depth++] = c;
	t_touched = 1;
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) { ENTER(cuCtxPushCurrent); return ctx_push(ctx); }
CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) { ENTER(cuCtxPushCurrent_v2); return ctx_push(ctx); }

static CUresult ctx_pop(CUcontext *pctx)
{
	LOCK();
	(void)cur_ctx();
	UNLOCK();
	t_touched = 1;
	if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
	struct CUctx_st *c = t_stack[--t_depth];
	if (pctx) *pctx = c;
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) { ENTER(cuCtxPopCurrent); return ctx_pop(pctx); }
CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx) { ENTER(cuCtxPopCurrent_v2); return ctx_pop(pctx); }

static CUresult ctx_device(CUdevice *device, CUcontext ctx)
{
	if (!device) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = NULL;
	if (ctx) {
		c = find_ctx(ctx);
		if (!c || !c->alive) r = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		r = cur_live_ctx(&c);
	}
	if (r == CUDA_SUCCESS) *device = c->dev;
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) { ENTER(cuCtxGetDevice); return ctx_device(device, NULL); }
CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) { ENTER(cuCtxGetDevice_v2); return ctx_device(device, ctx); }

static CUresult ctx_sync(CUcontext ctx)
{
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = NULL;
	if (ctx) {
		c = find_ctx(ctx);
		if (!c || !c->alive) r = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		r = cur_live_ctx(&c);
	}
	if (r == CUDA_SUCCESS) {
		struct CUstream_st *s, *tmp;
		HASH_ITER(hh, g_streams, s, tmp) {
			if (s->ctx == c && !s->capturing) s->pending = 0;
		}
		sync_release(c->dev);
	}
	UNLOCK();
	return r;
}
static void gpu_wait(CUcontext ctx);
CUresult CUDAAPI cuCtxSynchronize(void) { ENTER(cuCtxSynchronize); gpu_wait(NULL); return ctx_sync(NULL); }
CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) { ENTER(cuCtxSynchronize_v2); gpu_wait(ctx); return ctx_sync(ctx); }


/* ================================================================== kernels and events (a simulated GPU clock)
 * A launch is a kernel that keeps its device busy for gridDimX microseconds (a graph: FAKECUDA_GRAPH_US, default
 * 100), one after another on the device whatever the stream; an event completes when the device's clock passes
 * the point it was recorded at; a synchronization sleeps until the device is idle. A CUfunction the tests pass is
 * a pointer to its name (cuFuncGetName returns it). A launch on a capturing stream is captured: it runs nothing. */
static uint64_t g_gpu_until[MAXDEV];            /* CLOCK_MONOTONIC ns when the device's queued kernels end */
static _Atomic unsigned long long g_launches;

struct fake_event { int dev; int recorded; uint64_t done_at; uint64_t op; /* peer mode: its record op + 1 */ };

static uint64_t gpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


/* ---- peer mode (FAKECUDA_PEER_DIR and FAKECUDA_RANK 0 or 1): two processes, each one rank of a collective on a GPU
 * of its own, for the compute share's DDP pattern (tests/sections/compute.sh). Kernels are still serialized on the
 * device in launch order, except NCCL's (a function named nccl*, or _Z<n>ncclDevKernel*), which run beside them on their stream, taking no
 * compute time, and end no earlier than the peer's matching kernel (the k-th of each) began, plus their own
 * duration: a rank's collective spins until the other rank's arrives. Streams keep their order, and
 * cuStreamWaitEvent makes a stream's later work wait for an event. Each process writes the start of its k-th NCCL
 * kernel (its launch, where the start is not known yet) at offset 8 (k - 1) of PEER_DIR/rank<RANK>, and reads the
 * peer's file. A time that depends on a peer kernel not yet launched is unknown; queries and synchronizations
 * evaluate the work again each time they are asked. Off (the single device queue above) without FAKECUDA_PEER_DIR. */
#define FC_UNKNOWN UINT64_MAX
enum { OP_KERNEL, OP_NCCL, OP_RECORD, OP_WAIT };
struct fc_op {
	int kind, dev;
	void *stream;                   /* the handle (NULL: the legacy stream, whatever its name) */
	uint64_t launch, dur;
	uint64_t dep;                   /* OP_WAIT: the waited event's record op + 1 (0: an event never recorded) */
	unsigned k;                     /* OP_NCCL: which of the process's NCCL kernels */
	uint64_t start, end;            /* FC_UNKNOWN until known */
};
struct fc_sclock { void *stream; uint64_t until; };
enum { FC_PEER_STREAMS = 64 };
static int g_peer_on = -1;              /* -1: not read yet */
static int g_peer_rank, g_peer_out = -1, g_peer_in = -1;
static char g_peer_in_path[4096];
static uint64_t *g_peer_seen;           /* the peer's kernel starts read so far */
static unsigned g_peer_nseen, g_peer_capseen, g_nccl_count;
static struct fc_op *g_ops;
static size_t g_nops, g_capops, g_first;        /* ops[0, g_first) known, their effect in the base below */
static struct fc_sclock g_sbase[FC_PEER_STREAMS];
static uint64_t g_dbase[MAXDEV];

static int peer_mode(void)          /* under g_mu */
{
	if (g_peer_on >= 0) return g_peer_on;
	const char *dir = getenv("FAKECUDA_PEER_DIR"), *rank = getenv("FAKECUDA_RANK");
	g_peer_on = dir && *dir;
	if (!g_peer_on) return 0;
	g_peer_rank = rank && atoi(rank) == 1;
	char p[4096];
	snprintf(p, sizeof p, "%s/rank%d", dir, g_peer_rank);
	g_peer_out = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	snprintf(g_peer_in_path, sizeof g_peer_in_path, "%s/rank%d", dir, !g_peer_rank);
	if (g_peer_out < 0) fprintf(stderr, "fakecuda: cannot write %s\n", p);
	return 1;
}

/* When the peer's k-th NCCL kernel began (FC_UNKNOWN: not launched yet). */
static uint64_t peer_start(unsigned k)
{
	while (g_peer_nseen < k) {
		if (g_peer_in < 0 && (g_peer_in = open(g_peer_in_path, O_RDONLY | O_CLOEXEC)) < 0) return FC_UNKNOWN;
		uint64_t t;
		if (pread(g_peer_in, &t, sizeof t, (off_t)g_peer_nseen * 8) != (ssize_t)sizeof t || t == 0)
			return FC_UNKNOWN;
		if (g_peer_nseen == g_peer_capseen) {
			g_peer_capseen = g_peer_capseen ? 2 * g_peer_capseen : 256;
			g_peer_seen = realloc(g_peer_seen, g_peer_capseen * sizeof *g_peer_seen);
		}
		g_peer_seen[g_peer_nseen++] = t;
	}
	return g_peer_seen[k - 1];
}

static uint64_t umax(uint64_t a, uint64_t b) { return a == FC_UNKNOWN || b == FC_UNKNOWN ? FC_UNKNOWN : a > b ? a : b; }
static uint64_t uadd(uint64_t a, uint64_t b) { return a == FC_UNKNOWN ? FC_UNKNOWN : a + b; }

static uint64_t *sclock(struct fc_sclock *t, void *stream)
{
	for (int i = 0; i < FC_PEER_STREAMS; i++) {
		if (t[i].stream == stream && (stream || i == 0)) return &t[i].until;
		if (i > 0 && !t[i].stream) { t[i].stream = stream; return &t[i].until; }
	}
	return &t[FC_PEER_STREAMS - 1].until;   /* more streams than the tests use: share the last clock */
}

/* Every op's start and end, as far as the peer's file tells (under g_mu). Slot 0 of a stream table is the legacy
 * stream's. */
static void peer_resolve(void)
{
	struct fc_sclock sw[FC_PEER_STREAMS];
	uint64_t dw[MAXDEV];
	memcpy(sw, g_sbase, sizeof sw);
	memcpy(dw, g_dbase, sizeof dw);
	int prefix = 1;
	for (size_t i = g_first; i < g_nops; i++) {
		struct fc_op *o = &g_ops[i];
		uint64_t *su = sclock(sw, o->stream);
		switch (o->kind) {
		case OP_KERNEL:
			o->start = umax(umax(o->launch, *su), dw[o->dev]);
			o->end = dw[o->dev] = *su = uadd(o->start, o->dur);
			break;
		case OP_NCCL:
			o->start = umax(o->launch, *su);
			o->end = *su = uadd(umax(o->start, peer_start(o->k)), o->dur);
			break;
		case OP_RECORD:
			o->start = o->end = umax(o->launch, *su);
			break;
		case OP_WAIT:
			o->start = o->end = *su = umax(*su, o->dep ? g_ops[o->dep - 1].end : 0);
			break;
		}
		if (prefix && o->end != FC_UNKNOWN) {
			memcpy(g_sbase, sw, sizeof sw);
			memcpy(g_dbase, dw, sizeof dw);
			g_first = i + 1;
		} else {
			prefix = 0;
		}
	}
}

/* Append an op (under g_mu); returns its index + 1. */
static uint64_t peer_op(int kind, int dev, void *stream, uint64_t dur, uint64_t dep)
{
	if (g_nops == g_capops) {
		g_capops = g_capops ? 2 * g_capops : 4096;
		g_ops = realloc(g_ops, g_capops * sizeof *g_ops);
		if (!g_ops) abort();
	}
	struct fc_op *o = &g_ops[g_nops++];
	*o = (struct fc_op){ kind, dev, stream, gpu_now(), dur, dep, 0, FC_UNKNOWN, FC_UNKNOWN };
	if (kind == OP_NCCL) {
		o->k = ++g_nccl_count;
		peer_resolve();
		uint64_t t = o->start != FC_UNKNOWN ? o->start : o->launch;
		if (g_peer_out >= 0 && pwrite(g_peer_out, &t, sizeof t, (off_t)(o->k - 1) * 8) != (ssize_t)sizeof t)
			fprintf(stderr, "fakecuda: cannot write the peer file\n");
	}
	return g_nops;
}

/* Sleep until everything launched before now (on every stream) has ended. */
static void peer_wait(void)
{
	LOCK();
	size_t n = g_nops;
	UNLOCK();
	for (;;) {
		LOCK();
		peer_resolve();
		uint64_t until = 0;
		for (int d = 0; d < MAXDEV; d++) until = umax(until, g_dbase[d]);
		for (int i = 0; i < FC_PEER_STREAMS; i++) until = umax(until, g_sbase[i].until);
		for (size_t i = g_first; i < n && until != FC_UNKNOWN; i++) until = umax(until, g_ops[i].end);
		UNLOCK();
		uint64_t now = gpu_now();
		if (until != FC_UNKNOWN && until <= now) return;
		uint64_t ns = until == FC_UNKNOWN || until - now > 50000 ? 50000 : until - now;
		struct timespec ts = { 0, (long)ns };
		nanosleep(&ts, NULL);
	}
}

static CUresult gpu_launch(CUstream h, unsigned long long us, CUfunction f)
{
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *st;
	CUresult r = resolve_stream(h, &c, &st);
	if (r == CUDA_SUCCESS && !(st && st->capturing) && peer_mode()) {
		int nccl = f && (strncmp((const char *)f, "nccl", 4) == 0 || strstr((const char *)f, "ncclDevKernel"));
		peer_op(nccl ? OP_NCCL : OP_KERNEL, c->dev, st ? (void *)h : NULL, us * 1000ull, 0);
		atomic_fetch_add(&g_launches, 1);
	} else if (r == CUDA_SUCCESS && !(st && st->capturing)) {
		uint64_t now = gpu_now(), start = g_gpu_until[c->dev] > now ? g_gpu_until[c->dev] : now;
		g_gpu_until[c->dev] = start + us * 1000ull;
		atomic_fetch_add(&g_launches, 1);
	}
	UNLOCK();
	return r;
}

static void gpu_wait(CUcontext ctx)
{
	LOCK();
	int peer = peer_mode();
	UNLOCK();
	if (peer) {
		peer_wait();
		return;
	}
	LOCK();
	struct CUctx_st *c = NULL;
	CUresult r = ctx ? ((c = find_ctx(ctx)) && c->alive ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT) : cur_live_ctx(&c);
	uint64_t until = r == CUDA_SUCCESS ? g_gpu_until[c->dev] : 0;
	UNLOCK();
	for (uint64_t now = gpu_now(); now < until; now = gpu_now()) {
		struct timespec ts = { (time_t)((until - now) / 1000000000ull), (long)((until - now) % 1000000000ull) };
		nanosleep(&ts, NULL);
	}
}

static unsigned long long graph_us(void)
{
	const char *e = getenv("FAKECUDA_GRAPH_US");
	return e && *e ? strtoull(e, NULL, 10) : 100;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
				unsigned int by, unsigned int bz, unsigned int shm, CUstream s, void **params, void **extra)
{
	ENTER(cuLaunchKernel);
	(void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shm; (void)params; (void)extra;
	return gpu_launch(s, gx, f);
}
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
				     unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm, CUstream s,
				     void **params, void **extra)
{
	ENTER(cuLaunchKernel_ptsz);
	(void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shm; (void)params; (void)extra;
	return gpu_launch(s, gx, f);
}
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	ENTER(cuLaunchKernelEx);
	(void)params; (void)extra;
	return config ? gpu_launch(config->hStream, config->gridDimX, f) : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	ENTER(cuLaunchKernelEx_ptsz);
	(void)params; (void)extra;
	return config ? gpu_launch(config->hStream, config->gridDimX, f) : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
					   unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm,
					   CUstream s, void **params)
{
	ENTER(cuLaunchCooperativeKernel);
	(void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shm; (void)params;
	return gpu_launch(s, gx, f);
}
CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
						unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm,
						CUstream s, void **params)
{
	ENTER(cuLaunchCooperativeKernel_ptsz);
	(void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shm; (void)params;
	return gpu_launch(s, gx, f);
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec g, CUstream s) { ENTER(cuGraphLaunch); (void)g; return gpu_launch(s, graph_us(), NULL); }
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) { ENTER(cuGraphLaunch_ptsz); (void)g; return gpu_launch(s, graph_us(), NULL); }

CUresult CUDAAPI cuEventCreate(CUevent *ev, unsigned int flags)
{
	ENTER(cuEventCreate);
	(void)flags;
	if (!ev) return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct CUctx_st *c;
	CUresult r = cur_live_ctx(&c);
	struct fake_event *e = r == CUDA_SUCCESS ? calloc(1, sizeof(*e)) : NULL;
	if (r == CUDA_SUCCESS && !e) r = CUDA_ERROR_OUT_OF_MEMORY;
	if (e) e->dev = c->dev;
	UNLOCK();
	*ev = (CUevent)e;
	return r;
}
static CUresult event_record(CUevent ev, CUstream h)
{
	struct fake_event *e = (struct fake_event *)ev;
	if (!e) return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *st;
	CUresult r = resolve_stream(h, &c, &st);
	if (r == CUDA_SUCCESS && c->dev != e->dev) r = CUDA_ERROR_INVALID_CONTEXT;
	if (r == CUDA_SUCCESS && peer_mode()) {
		e->recorded = 1;
		e->op = peer_op(OP_RECORD, c->dev, st ? (void *)h : NULL, 0, 0);
	} else if (r == CUDA_SUCCESS) {
		e->recorded = 1;
		e->done_at = g_gpu_until[e->dev];
	}
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuEventRecord(CUevent ev, CUstream s) { ENTER(cuEventRecord); return event_record(ev, s); }
CUresult CUDAAPI cuEventRecord_ptsz(CUevent ev, CUstream s) { ENTER(cuEventRecord_ptsz); return event_record(ev, s); }
CUresult CUDAAPI cuEventQuery(CUevent ev)
{
	ENTER(cuEventQuery);
	struct fake_event *e = (struct fake_event *)ev;
	if (!e) return CUDA_ERROR_INVALID_HANDLE;
	if (e->op) {
		LOCK();
		peer_resolve();
		uint64_t end = g_ops[e->op - 1].end;
		UNLOCK();
		return end != FC_UNKNOWN && gpu_now() >= end ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
	}
	return !e->recorded || gpu_now() >= e->done_at ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
/* A stream's later work waits for the event's (peer mode); else every kernel is in one device queue already. */
static CUresult stream_wait_event(CUstream h, CUevent ev)
{
	struct fake_event *e = (struct fake_event *)ev;
	if (!e) return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *st;
	CUresult r = resolve_stream(h, &c, &st);
	if (r == CUDA_SUCCESS && peer_mode())
		peer_op(OP_WAIT, c->dev, st ? (void *)h : NULL, 0, e->op);
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent ev, unsigned int flags)
{ ENTER(cuStreamWaitEvent); (void)flags; return stream_wait_event(s, ev); }
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent ev, unsigned int flags)
{ ENTER(cuStreamWaitEvent_ptsz); (void)flags; return stream_wait_event(s, ev); }
CUresult CUDAAPI cuEventDestroy_v2(CUevent ev) { ENTER(cuEventDestroy_v2); free(ev); return CUDA_SUCCESS; }
CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction f)
{
	ENTER(cuFuncGetName);
	if (!name || !f) return CUDA_ERROR_INVALID_VALUE;
	*name = (const char *)f;
	return CUDA_SUCCESS;
}

/* Kernels launched (not captured), for the tests. */
FC_EXPORT unsigned long long fakecuda_launches(void) { return atomic_load(&g_launches); }

/* ================================================================== classic allocations */
static CUresult mem_alloc(unsigned long long *out, unsigned long long size, int kind, struct vaspace *low)
{
	CUresult r;
	LOCK();
	struct CUctx_st *c;
	r = cur_live_ctx(&c);
	if (r == CUDA_SUCCESS) r = new_alloc(out, size, c->dev, c, kind, low ? low : &g_dev[c->dev].va, NULL);
	UNLOCK();
	return r;
}

static void (*_Atomic g_alloc_hook)(size_t);
void fakecuda_set_alloc_hook(void (*fn)(size_t bytes)) { atomic_store(&g_alloc_hook, fn); }

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	ENTER(cuMemAlloc_v2);
	if (!dptr) return CUDA_ERROR_INVALID_VALUE;
	void (*hook)(size_t) = atomic_load(&g_alloc_hook);
	if (hook) hook(bytesize);
	if (g_nullmem) return null_alloc(dptr, bytesize);
	unsigned long long p;
	CUresult r = mem_alloc(&p, bytesize, K_MEM, NULL);
	if (r == CUDA_SUCCESS) *dptr = p;
	return r;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
	ENTER(cuMemAlloc);
	if (!dptr) return CUDA_ERROR_INVALID_VALUE;
	unsigned long long p;
	CUresult r = mem_alloc(&p, bytesize, K_MEM, &g_lowva);
	if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr_v1)p;
	return r;
}

static CUresult pitch_args(unsigned long long w, unsigned long long h, unsigned elem, unsigned long long *pitch)
{
	if (w == 0 || h == 0 || (elem != 4 && elem != 8 && elem != 16)) return CUDA_ERROR_INVALID_VALUE;
	*pitch = round_up(w, 512);
	if (*pitch > ULLONG_MAX / h) return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes)
{
	ENTER(cuMemAllocPitch_v2);
	if (!dptr || !pPitch) return CUDA_ERROR_INVALID_VALUE;
	unsigned long long pitch, p;
	CUresult r = pitch_args(WidthInBytes, Height, ElementSizeBytes, &pitch);
	if (r == CUDA_SUCCESS) r = mem_alloc(&p, pitch * Height, K_MEM, NULL);
	if (r == CUDA_SUCCESS) { *dptr = p; *pPitch = pitch; }
	return r;
}

CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                 unsigned int Height, unsigned int ElementSizeBytes)
{
	ENTER(cuMemAllocPitch);
	if (!dptr || !pPitch) return CUDA_ERROR_INVALID_VALUE;
	unsigned long long pitch, p;
	CUresult r = pitch_args(WidthInBytes, Height, ElementSizeBytes, &pitch);
	if (r == CUDA_SUCCESS && pitch * Height > UINT_MAX) r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) r = mem_alloc(&p, pitch * Height, K_MEM, &g_lowva);
	if (r == CUDA_SUCCESS) { *dptr = (CUdeviceptr_v1)p; *pPitch = (unsigned)pitch; }
	return r;
}

static CUresult mem_free(unsigned long long p)
{
	if (p == 0) return CUDA_SUCCESS;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct alloc *a = find_alloc(p);
	if (!a || a->kind == K_ARRAY || a->kind == K_MIPMAP) r = CUDA_ERROR_INVALID_VALUE;
	else if (a->ctx && !a->ctx->alive) r = CUDA_ERROR_INVALID_CONTEXT;
	else drop_alloc(a);
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
	ENTER(cuMemFree_v2);
	return g_nullmem ? null_free(dptr) : mem_free(dptr);
}
CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr) { ENTER(cuMemFree); return mem_free(dptr); }

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	ENTER(cuMemAllocManaged);
	if (!dptr) return CUDA_ERROR_INVALID_VALUE;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
	unsigned long long p;
	CUresult r = mem_alloc(&p, bytesize, K_MANAGED, NULL);
	if (r == CUDA_SUCCESS) *dptr = p;
	return r;
}

static CUresult mem_info(unsigned long long *fr, unsigned long long *tot)
{
	LOCK();
	struct CUctx_st *c;
	CUresult r = cur_live_ctx(&c);
	if (r == CUDA_SUCCESS) {
		unsigned long long held = phys(c->dev);
		*tot = g_total;
		*fr = held < g_total ? g_total - held : 0;
	}
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_, size_t *total)
{
	ENTER(cuMemGetInfo_v2);
	if (!free_ || !total) return CUDA_ERROR_INVALID_VALUE;
	unsigned long long f, t;
	CUresult r = mem_info(&f, &t);
	if (r == CUDA_SUCCESS) { *free_ = f; *total = t; }
	return r;
}

CUresult CUDAAPI cuMemGetInfo(unsigned int *free_, unsigned int *total)
{
	ENTER(cuMemGetInfo);
	if (!free_ || !total) return CUDA_ERROR_INVALID_VALUE;
	unsigned long long f, t;
	CUresult r = mem_info(&f, &t);
	if (r == CUDA_SUCCESS) {
		*free_ = f > UINT_MAX ? UINT_MAX : (unsigned)f;
		*total = t > UINT_MAX ? UINT_MAX : (unsigned)t;
	}
	return r;
}

static CUresult addr_range(unsigned long long *base, unsigned long long *size, unsigned long long p)
{
	CUresult r = CUDA_ERROR_NOT_FOUND;
	LOCK();
	struct alloc *a = find_alloc(p), *tmp;
	if (a && (a->kind == K_ARRAY || a->kind == K_MIPMAP)) a = NULL;
	if (!a) {
		struct alloc *x;
		HASH_ITER(hh, g_allocs, x, tmp) {
			if (x->kind != K_ARRAY && x->kind != K_MIPMAP && p >= x->ptr && p < x->ptr + x->size) { a = x; break; }
		}
	}
	if (a) { *base = a->ptr; *size = a->size; r = CUDA_SUCCESS; }
	else {
		struct mapping *m, *mtmp;
		HASH_ITER(hh, g_maps, m, mtmp) {
			if (p >= m->va && p < m->va + m->size) { *base = m->va; *size = m->size; r = CUDA_SUCCESS; break; }
		}
	}
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	ENTER(cuMemGetAddressRange_v2);
	unsigned long long b, s;
	CUresult r = addr_range(&b, &s, dptr);
	if (r == CUDA_SUCCESS) { if (pbase) *pbase = b; if (psize) *psize = s; }
	return r;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize, CUdeviceptr_v1 dptr)
{
	ENTER(cuMemGetAddressRange);
	unsigned long long b, s;
	CUresult r = addr_range(&b, &s, dptr);
	if (r == CUDA_SUCCESS) { if (pbase) *pbase = (CUdeviceptr_v1)b; if (psize) *psize = (unsigned)s; }
	return r;
}

/* ================================================================== stream-ordered allocations and pools */
static struct CUmemPoolHandle_st *find_pool(CUmemoryPool p)
{
	struct CUmemPoolHandle_st *x = NULL;
	if (!p) return NULL;
	void *key = p;
	HASH_FIND_PTR(g_pools, &key, x);
	return x && !x->destroyed ? x : NULL;
}

/* use_pool == 0: the stream's device's current pool (cuDeviceSetMemPool). Allocations made while the stream
 * captures are graph memory, not pool memory: they charge nothing here. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, int use_pool, CUstream hStream)
{
	if (!dptr) return CUDA_ERROR_INVALID_VALUE;
	if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
	CUresult r;
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *st;
	r = resolve_stream(hStream, &c, &st);
	int dev = r == CUDA_SUCCESS ? c->dev : 0;
	struct CUmemPoolHandle_st *from = r == CUDA_SUCCESS ? g_dev[dev].curpool : NULL;
	if (r == CUDA_SUCCESS && use_pool) {
		from = find_pool(pool);
		if (!from) r = CUDA_ERROR_INVALID_VALUE;
		else dev = from->dev;
	}
	if (r == CUDA_SUCCESS && st && st->capturing && st->cap_invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (r == CUDA_SUCCESS) {
		int capture = st && st->capturing;
		struct vaspace *va = &g_dev[dev < 0 ? 0 : dev].va;
		unsigned long long p;
		r = new_alloc(&p, bytesize, dev, c, capture ? K_ASYNC_CAPTURE : K_ASYNC, va, capture ? NULL : from);
		if (r == CUDA_SUCCESS) *dptr = p;
	}
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{ ENTER(cuMemAllocAsync); return alloc_async(dptr, bytesize, NULL, 0, hStream); }
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{ ENTER(cuMemAllocAsync_ptsz); return alloc_async(dptr, bytesize, NULL, 0, hStream); }
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{ ENTER(cuMemAllocFromPoolAsync); return alloc_async(dptr, bytesize, pool, 1, hStream); }
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{ ENTER(cuMemAllocFromPoolAsync_ptsz); return alloc_async(dptr, bytesize, pool, 1, hStream); }

static CUresult free_async(CUdeviceptr dptr, CUstream hStream)
{
	CUresult r;
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *st;
	r = resolve_stream(hStream, &c, &st);
	if (r == CUDA_SUCCESS && dptr != 0) {
		struct alloc *a = find_alloc(dptr);
		if (!a || a->kind == K_ARRAY || a->kind == K_MIPMAP) r = CUDA_ERROR_INVALID_VALUE;
		else drop_alloc(a);
	}
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { ENTER(cuMemFreeAsync); return free_async(dptr, hStream); }
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { ENTER(cuMemFreeAsync_ptsz); return free_async(dptr, hStream); }

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	ENTER(cuMemPoolCreate);
	if (!pool || !poolProps) return CUDA_ERROR_INVALID_VALUE;
	int dev;
	switch (poolProps->location.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		if (!dev_ok(poolProps->location.id)) return CUDA_ERROR_INVALID_DEVICE;
		dev = poolProps->location.id;
		break;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		dev = -1;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
	if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
	pool_init(p, dev, 0);
	LOCK();
	HASH_ADD_PTR(g_pools, self, p);
	UNLOCK();
	*pool = p;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
	ENTER(cuMemPoolDestroy);
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = find_pool(pool);
	if (!p || p->is_default) r = CUDA_ERROR_INVALID_VALUE;
	else {
		/* "Destroying the current mempool of a device sets the default mempool of that device as the current" */
		for (int d = 0; d < MAXDEV; d++)
			if (g_dev[d].curpool == p) g_dev[d].curpool = &g_dev[d].defpool;
		if (p->used == 0) pool_free_struct(p);
		else { p->destroyed = 1; pool_release_to(p, 0); } /* the rest goes with the last outstanding free */
	}
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	ENTER(cuDeviceGetDefaultMemPool);
	if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	*pool_out = &g_dev[dev].defpool;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	ENTER(cuDeviceGetMemPool);
	if (!pool) return CUDA_ERROR_INVALID_VALUE;
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	*pool = g_dev[dev].curpool;
	UNLOCK();
	return CUDA_SUCCESS;
}

/* "The memory pool must be local to the specified device." */
CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	ENTER(cuDeviceSetMemPool);
	if (!dev_ok(dev)) return CUDA_ERROR_INVALID_DEVICE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = find_pool(pool);
	if (!p || p->dev != dev) r = CUDA_ERROR_INVALID_VALUE;
	else g_dev[dev].curpool = p;
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	ENTER(cuMemPoolTrimTo);
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = find_pool(pool);
	if (!p) r = CUDA_ERROR_INVALID_VALUE;
	else pool_release_to(p, minBytesToKeep);
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	ENTER(cuMemPoolGetAttribute);
	if (!value) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = find_pool(pool);
	if (!p) r = CUDA_ERROR_INVALID_VALUE;
	else switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *(int *)value = p->reuse[0]; break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *(int *)value = p->reuse[1]; break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = p->reuse[2]; break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->threshold; break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
	default: r = CUDA_ERROR_INVALID_VALUE; break;
	}
	UNLOCK();
	return r;
}

/* The high watermarks "can only be reset to zero", which makes them take the current value (CUDA Programming
 * Guide, stream-ordered allocator, resource usage statistics). The threshold takes effect at the next sync. */
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	ENTER(cuMemPoolSetAttribute);
	if (!value) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = find_pool(pool);
	if (!p) r = CUDA_ERROR_INVALID_VALUE;
	else switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: p->reuse[0] = *(int *)value; break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: p->reuse[1] = *(int *)value; break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: p->reuse[2] = *(int *)value; break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->threshold = *(cuuint64_t *)value; break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		if (*(cuuint64_t *)value != 0) r = CUDA_ERROR_INVALID_VALUE;
		else p->reserved_high = p->reserved;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (*(cuuint64_t *)value != 0) r = CUDA_ERROR_INVALID_VALUE;
		else p->used_high = p->used;
		break;
	default: r = CUDA_ERROR_INVALID_VALUE; break; /* the _CURRENT ones are read-only */
	}
	UNLOCK();
	return r;
}

/* ================================================================== graph memory
 * No graph runs here: fakecuda_graph_mem sets what graphs hold on a device; these read, reset and trim it. */
CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
	ENTER(cuDeviceGetGraphMemAttribute);
	if (!dev_ok(device)) return CUDA_ERROR_INVALID_DEVICE;
	if (!value) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct devstate *ds = &g_dev[device];
	switch (attr) {
	case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = ds->graph_used; break;
	case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = ds->graph_used_high; break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = ds->graph_reserved; break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = ds->graph_reserved_high; break;
	default: r = CUDA_ERROR_INVALID_VALUE; break;
	}
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
	ENTER(cuDeviceSetGraphMemAttribute);
	if (!dev_ok(device)) return CUDA_ERROR_INVALID_DEVICE;
	if (!value) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct devstate *ds = &g_dev[device];
	if (*(cuuint64_t *)value != 0) r = CUDA_ERROR_INVALID_VALUE;
	else if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) ds->graph_used_high = ds->graph_used;
	else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) ds->graph_reserved_high = ds->graph_reserved;
	else r = CUDA_ERROR_INVALID_VALUE;
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device)
{
	ENTER(cuDeviceGraphMemTrim);
	if (!dev_ok(device)) return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	g_dev[device].graph_reserved = g_dev[device].graph_used;
	UNLOCK();
	return CUDA_SUCCESS;
}

/* ================================================================== modules and libraries
 * Nothing is read or compiled: a load succeeds with a fresh handle and takes FAKECUDA_MODULE_BYTES of device
 * memory (a module on its context's device, unloaded with its context; a library on the current context's device,
 * or device 0 with none current). */
static CUresult image_load(void **out, int is_lib)
{
	if (!out) return CUDA_ERROR_INVALID_VALUE;
	struct image *m = calloc(1, sizeof *m);
	if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = NULL;
	if (!is_lib) {
		r = cur_live_ctx(&c);
	} else if (t_depth > 0 && t_stack[t_depth - 1]->alive) {
		c = t_stack[t_depth - 1];
	}
	int dev = c ? c->dev : 0;
	if (r == CUDA_SUCCESS && !room(dev, g_module_bytes)) r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS) {
		m->self = m;
		m->dev = dev;
		m->is_lib = is_lib;
		m->ctx = is_lib ? NULL : c;
		m->bytes = g_module_bytes;
		g_dev[dev].driver += m->bytes;
		HASH_ADD_PTR(g_images, self, m);
		*out = m;
	}
	UNLOCK();
	if (r != CUDA_SUCCESS) free(m);
	return r;
}

static CUresult image_unload(void *h, int is_lib)
{
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct image *m = NULL;
	if (h) HASH_FIND_PTR(g_images, &h, m);
	if (!m || m->is_lib != is_lib) r = CUDA_ERROR_INVALID_HANDLE;
	else drop_image(m);
	UNLOCK();
	return r;
}

#define MODULE_LOAD(NAME, arg)                                    \
	do {                                                      \
		ENTER(NAME);                                      \
		if (!(arg)) return CUDA_ERROR_INVALID_VALUE;      \
		void *h_;                                         \
		CUresult r_ = image_load(module ? &h_ : NULL, 0); \
		if (r_ == CUDA_SUCCESS) *module = (CUmodule)h_;   \
		return r_;                                        \
	} while (0)

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname) { MODULE_LOAD(cuModuleLoad, fname); }
CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) { MODULE_LOAD(cuModuleLoadData, image); }
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                                    void **optionValues)
{
	(void)numOptions; (void)options; (void)optionValues;
	MODULE_LOAD(cuModuleLoadDataEx, image);
}
CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{ MODULE_LOAD(cuModuleLoadFatBinary, fatCubin); }
CUresult CUDAAPI cuModuleUnload(CUmodule hmod) { ENTER(cuModuleUnload); return image_unload(hmod, 0); }

#define LIBRARY_LOAD(NAME, arg)                                                           \
	do {                                                                              \
		ENTER(NAME);                                                              \
		(void)jitOptions; (void)jitOptionsValues; (void)numJitOptions;            \
		(void)libraryOptions; (void)libraryOptionValues; (void)numLibraryOptions; \
		if (!(arg)) return CUDA_ERROR_INVALID_VALUE;                              \
		void *h_;                                                                 \
		CUresult r_ = image_load(library ? &h_ : NULL, 1);                        \
		if (r_ == CUDA_SUCCESS) *library = (CUlibrary)h_;                         \
		return r_;                                                                \
	} while (0)

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                   void **libraryOptionValues, unsigned int numLibraryOptions)
{ LIBRARY_LOAD(cuLibraryLoadData, code); }
CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                       void **jitOptionsValues, unsigned int numJitOptions,
                                       CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                       unsigned int numLibraryOptions)
{ LIBRARY_LOAD(cuLibraryLoadFromFile, fileName); }
CUresult CUDAAPI cuLibraryUnload(CUlibrary library) { ENTER(cuLibraryUnload); return image_unload(library, 1); }

/* ================================================================== virtual memory management */
static struct vmmh *find_vmm(unsigned long long h)
{
	struct vmmh *v = NULL;
	HASH_FIND(hh, g_vmm, &h, sizeof h, v);
	return v;
}

static void vmm_maybe_free(struct vmmh *v)
{
	if (v->refs == 0 && v->maps == 0) {
		if (v->dev >= 0) uncharge(v->dev, v->size);
		HASH_DEL(g_vmm, v);
		free(v);
	}
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags)
{
	ENTER(cuMemCreate);
	if (!handle || !prop || flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (size == 0 || size % GRAN != 0) return CUDA_ERROR_INVALID_VALUE;
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
	int dev;
	switch (prop->location.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		if (!dev_ok(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
		dev = prop->location.id;
		break;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		dev = -1;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct vmmh *v = calloc(1, sizeof *v);
	if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	if (dev >= 0) r = charge(dev, size);
	if (r == CUDA_SUCCESS) {
		v->h = g_next_vmm++;
		v->size = size;
		v->dev = dev;
		v->refs = 1;
		v->prop = *prop;
		HASH_ADD(hh, g_vmm, h, sizeof v->h, v);
		*handle = v->h;
	}
	UNLOCK();
	if (r != CUDA_SUCCESS) free(v);
	return r;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option)
{
	ENTER(cuMemGetAllocationGranularity);
	(void)option;
	if (!granularity || !prop) return CUDA_ERROR_INVALID_VALUE;
	*granularity = GRAN;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	ENTER(cuMemRelease);
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct vmmh *v = find_vmm(handle);
	if (!v || v->refs <= 0) r = CUDA_ERROR_INVALID_VALUE;
	else { v->refs--; vmm_maybe_free(v); }
	UNLOCK();
	return r;
}

static struct mapping *mapping_containing(unsigned long long a)
{
	struct mapping *m, *tmp;
	HASH_ITER(hh, g_maps, m, tmp) {
		if (a >= m->va && a < m->va + m->size) return m;
	}
	return NULL;
}

CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	ENTER(cuMemRetainAllocationHandle);
	if (!handle) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct mapping *m = mapping_containing((unsigned long long)(uintptr_t)addr);
	struct vmmh *v = m ? find_vmm(m->h) : NULL;
	if (v) { v->refs++; *handle = v->h; r = CUDA_SUCCESS; }
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags)
{
	ENTER(cuMemAddressReserve);
	(void)addr; (void)flags;
	if (!ptr || size == 0 || size % GRAN != 0) return CUDA_ERROR_INVALID_VALUE;
	if (alignment & (alignment - 1)) return CUDA_ERROR_INVALID_VALUE;
	unsigned long long align = alignment > GRAN ? alignment : GRAN, base;
	struct resv *rv = calloc(1, sizeof *rv);
	if (!rv) return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	if (va_take(&g_resva, size, align, &base) != 0) r = CUDA_ERROR_OUT_OF_MEMORY;
	else {
		rv->base = base;
		rv->size = size;
		HASH_ADD(hh, g_resv, base, sizeof rv->base, rv);
		*ptr = base;
	}
	UNLOCK();
	if (r != CUDA_SUCCESS) free(rv);
	return r;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	ENTER(cuMemAddressFree);
	CUresult r = CUDA_SUCCESS;
	unsigned long long key = ptr;
	LOCK();
	struct resv *rv = NULL;
	HASH_FIND(hh, g_resv, &key, sizeof key, rv);
	if (!rv || rv->size != size) r = CUDA_ERROR_INVALID_VALUE;
	else { HASH_DEL(g_resv, rv); free(rv); }
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags)
{
	ENTER(cuMemMap);
	if (flags != 0 || size == 0 || size % GRAN != 0 || ptr % GRAN != 0) return CUDA_ERROR_INVALID_VALUE;
	struct mapping *nm = calloc(1, sizeof *nm);
	if (!nm) return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct vmmh *v = find_vmm(handle);
	if (!v || offset > v->size || size > v->size - offset) r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) { /* inside one reservation */
		struct resv *rv, *tmp;
		int inside = 0;
		HASH_ITER(hh, g_resv, rv, tmp) {
			if (ptr >= rv->base && ptr + size <= rv->base + rv->size) { inside = 1; break; }
		}
		if (!inside) r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) { /* no overlap with an existing mapping */
		struct mapping *m, *tmp;
		HASH_ITER(hh, g_maps, m, tmp) {
			if (m->va < ptr + size && ptr < m->va + m->size) { r = CUDA_ERROR_INVALID_VALUE; break; }
		}
	}
	if (r == CUDA_SUCCESS) {
		nm->va = ptr;
		nm->size = size;
		nm->h = handle;
		HASH_ADD(hh, g_maps, va, sizeof nm->va, nm);
		v->maps++;
	}
	UNLOCK();
	if (r != CUDA_SUCCESS) free(nm);
	return r;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	ENTER(cuMemUnmap);
	if (size == 0) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	/* validate: [ptr, ptr+size) is exactly a run of consecutive whole mappings */
	unsigned long long cur = ptr, end = ptr + size;
	while (cur < end) {
		struct mapping *m = NULL;
		HASH_FIND(hh, g_maps, &cur, sizeof cur, m);
		if (!m || m->size > end - cur) { r = CUDA_ERROR_INVALID_VALUE; break; }
		cur += m->size;
	}
	if (r == CUDA_SUCCESS) {
		cur = ptr;
		while (cur < end) {
			struct mapping *m = NULL;
			HASH_FIND(hh, g_maps, &cur, sizeof cur, m);
			cur += m->size;
			struct vmmh *v = find_vmm(m->h);
			HASH_DEL(g_maps, m);
			free(m);
			if (v) { v->maps--; vmm_maybe_free(v); }
		}
	}
	UNLOCK();
	return r;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	ENTER(cuMemSetAccess);
	(void)ptr; (void)size;
	if (!desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
	ENTER(cuMemGetAllocationPropertiesFromHandle);
	if (!prop) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct vmmh *v = find_vmm(handle);
	if (v) { *prop = v->prop; r = CUDA_SUCCESS; }
	UNLOCK();
	return r;
}

/* ================================================================== arrays */
static unsigned format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
	default: return 4;
	}
}

static CUresult array_bytes(unsigned long long w, unsigned long long h, unsigned long long d, CUarray_format fmt,
                            unsigned ch, unsigned flags, unsigned levels, unsigned long long *out)
{
	if (w == 0 || levels == 0 || (ch != 1 && ch != 2 && ch != 4)) return CUDA_ERROR_INVALID_VALUE;
	unsigned __int128 total = 0;
	int layered = (flags & CUDA_ARRAY3D_LAYERED) != 0;
	for (unsigned l = 0; l < levels; l++) {
		total += (unsigned __int128)format_bytes(fmt) * ch * w * (h ? h : 1) * (d ? d : 1);
		w = w > 1 ? w / 2 : 1;
		if (h) h = h > 1 ? h / 2 : 1;
		if (d && !layered) d = d > 1 ? d / 2 : 1;
	}
	if (total > (unsigned __int128)ULLONG_MAX) return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (unsigned long long)total;
	return CUDA_SUCCESS;
}

static CUresult array_create(unsigned long long *handle, unsigned long long bytes, int kind)
{
	LOCK();
	struct CUctx_st *c;
	CUresult r = cur_live_ctx(&c);
	if (r == CUDA_SUCCESS) r = new_alloc(handle, bytes, c->dev, c, kind, &g_hva, NULL);
	UNLOCK();
	return r;
}

#define ARRAY_BODY(desc, depth, flags, levels, kind, out)                                         \
	do {                                                                                      \
		if (!(out) || !(desc)) return CUDA_ERROR_INVALID_VALUE;                           \
		unsigned long long bytes_, h_;                                                    \
		CUresult r_ = array_bytes((desc)->Width, (desc)->Height, (depth), (desc)->Format, \
		                          (desc)->NumChannels, (flags), (levels), &bytes_);       \
		if (r_ == CUDA_SUCCESS) r_ = array_create(&h_, bytes_, (kind));                   \
		if (r_ == CUDA_SUCCESS) *(out) = (void *)(uintptr_t)h_;                           \
		return r_;                                                                        \
	} while (0)

CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{ ENTER(cuArrayCreate_v2); ARRAY_BODY(pAllocateArray, 0, 0, 1, K_ARRAY, pHandle); }
CUresult CUDAAPI cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{ ENTER(cuArrayCreate); ARRAY_BODY(pAllocateArray, 0, 0, 1, K_ARRAY, pHandle); }
CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{ ENTER(cuArray3DCreate_v2); ARRAY_BODY(pAllocateArray, pAllocateArray->Depth, pAllocateArray->Flags, 1, K_ARRAY, pHandle); }
CUresult CUDAAPI cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{ ENTER(cuArray3DCreate); ARRAY_BODY(pAllocateArray, pAllocateArray->Depth, pAllocateArray->Flags, 1, K_ARRAY, pHandle); }
CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                        unsigned int numMipmapLevels)
{
	ENTER(cuMipmappedArrayCreate);
	ARRAY_BODY(pMipmappedArrayDesc, pMipmappedArrayDesc->Depth, pMipmappedArrayDesc->Flags, numMipmapLevels,
	           K_MIPMAP, pHandle);
}

static CUresult array_destroy(unsigned long long h, int kind)
{
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct alloc *a = h ? find_alloc(h) : NULL;
	if (!a || a->kind != kind) r = CUDA_ERROR_INVALID_HANDLE;
	else drop_alloc(a);
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuArrayDestroy(CUarray hArray) { ENTER(cuArrayDestroy); return array_destroy((uintptr_t)hArray, K_ARRAY); }
CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{ ENTER(cuMipmappedArrayDestroy); return array_destroy((uintptr_t)hMipmappedArray, K_MIPMAP); }

/* ================================================================== streams */
/* The last destroyed stream's block, handed out again by the next creation: as a real driver does, a new stream can
 * get a dead one's handle (vramguard must not mistake it for the old stream). */
static struct CUstream_st *g_stream_spare;

static CUresult stream_create(CUstream *ph, unsigned flags, int prio)
{
	if (!ph) return CUDA_ERROR_INVALID_VALUE;
	if (flags & ~1u) return CUDA_ERROR_INVALID_VALUE;
	struct CUstream_st *s = calloc(1, sizeof *s);
	if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	struct CUctx_st *c;
	CUresult r = cur_live_ctx(&c);
	if (r == CUDA_SUCCESS && g_stream_spare) {
		free(s);
		s = g_stream_spare;
		g_stream_spare = NULL;
		memset(s, 0, sizeof *s);
	}
	if (r == CUDA_SUCCESS) {
		s->self = s;
		s->ctx = c;
		s->flags = flags;
		s->priority = prio;
		HASH_ADD_PTR(g_streams, self, s);
		*ph = s;
	}
	UNLOCK();
	if (r != CUDA_SUCCESS) free(s);
	return r;
}
CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) { ENTER(cuStreamCreate); return stream_create(phStream, Flags, 0); }
CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{ ENTER(cuStreamCreateWithPriority); return stream_create(phStream, flags, priority); }

static CUresult stream_destroy(CUstream h)
{
	if (is_special_stream(h)) return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	struct CUstream_st *s = NULL;
	void *key = h;
	HASH_FIND_PTR(g_streams, &key, s);
	if (!s) r = CUDA_ERROR_INVALID_HANDLE;
	else {
		HASH_DEL(g_streams, s);
		free(g_stream_spare);
		g_stream_spare = s;
	}
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuStreamDestroy(CUstream hStream) { ENTER(cuStreamDestroy); return stream_destroy(hStream); }
CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) { ENTER(cuStreamDestroy_v2); return stream_destroy(hStream); }

static CUresult stream_query(CUstream h)
{
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = resolve_stream(h, &c, &s);
	if (r == CUDA_SUCCESS && s) {
		if (s->capturing) {
			s->cap_invalidated = 1;
			s->queried_while_capturing = 1;
			atomic_fetch_add(&g_invalidations, 1);
			r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		} else if (s->pending) {
			r = CUDA_ERROR_NOT_READY;
		}
	}
	UNLOCK();
	return r;
}
/* Per-thread capture interaction mode: recorded only (the fake does not model global-mode prohibitions). */
static __thread CUstreamCaptureMode fc_capture_mode FC_TLS = CU_STREAM_CAPTURE_MODE_GLOBAL;
CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	ENTER(cuThreadExchangeStreamCaptureMode);
	if (!mode) return CUDA_ERROR_INVALID_VALUE;
	CUstreamCaptureMode old = fc_capture_mode;
	fc_capture_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream) { ENTER(cuStreamQuery); return stream_query(hStream); }
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream) { ENTER(cuStreamQuery_ptsz); return stream_query(hStream); }

static CUresult stream_sync(CUstream h)
{
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = resolve_stream(h, &c, &s);
	if (r == CUDA_SUCCESS && s) {
		if (s->capturing) {
			s->cap_invalidated = 1;
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else {
			s->pending = 0;
		}
	}
	if (r == CUDA_SUCCESS) sync_release(c->dev);
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) { ENTER(cuStreamSynchronize); gpu_wait(NULL); return stream_sync(hStream); }
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) { ENTER(cuStreamSynchronize_ptsz); gpu_wait(NULL); return stream_sync(hStream); }

static CUresult stream_is_capturing(CUstream h, CUstreamCaptureStatus *st)
{
	if (!st) return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = resolve_stream(h, &c, &s);
	if (r == CUDA_SUCCESS) {
		if (!s || !s->capturing) *st = CU_STREAM_CAPTURE_STATUS_NONE;
		else *st = s->cap_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	}
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{ ENTER(cuStreamIsCapturing); return stream_is_capturing(hStream, captureStatus); }
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{ ENTER(cuStreamIsCapturing_ptsz); return stream_is_capturing(hStream, captureStatus); }

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode)
{
	(void)mode;
	if (is_special_stream(h)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = resolve_stream(h, &c, &s);
	if (r == CUDA_SUCCESS) {
		if (s->capturing) r = CUDA_ERROR_ILLEGAL_STATE;
		else { s->capturing = 1; s->cap_invalidated = 0; }
	}
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{ ENTER(cuStreamBeginCapture); return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL); }
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{ ENTER(cuStreamBeginCapture_ptsz); return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL); }
CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{ ENTER(cuStreamBeginCapture_v2); return begin_capture(hStream, mode); }
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{ ENTER(cuStreamBeginCapture_v2_ptsz); return begin_capture(hStream, mode); }

static CUresult end_capture(CUstream h, CUgraph *g)
{
	if (!g) return CUDA_ERROR_INVALID_VALUE;
	if (is_special_stream(h)) return CUDA_ERROR_ILLEGAL_STATE;
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = resolve_stream(h, &c, &s);
	if (r == CUDA_SUCCESS) {
		if (!s->capturing) r = CUDA_ERROR_ILLEGAL_STATE;
		else {
			s->capturing = 0;
			if (s->cap_invalidated) { *g = NULL; r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; }
			else {
				unsigned long long gh;
				if (va_take(&g_hva, 512, 512, &gh) != 0) r = CUDA_ERROR_OUT_OF_MEMORY;
				else *g = (CUgraph)(uintptr_t)gh;
			}
			s->cap_invalidated = 0;
		}
	}
	UNLOCK();
	return r;
}
/* Capturing into an existing graph: the double keeps no graphs, so it is a capture like any other. */
CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
					     const CUgraphEdgeData *dependencyData, size_t numDependencies,
					     CUstreamCaptureMode mode)
{ ENTER(cuStreamBeginCaptureToGraph); (void)hGraph; (void)dependencies; (void)dependencyData; (void)numDependencies;
  return begin_capture(hStream, mode); }
CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
						  const CUgraphEdgeData *dependencyData, size_t numDependencies,
						  CUstreamCaptureMode mode)
{ ENTER(cuStreamBeginCaptureToGraph_ptsz); (void)hGraph; (void)dependencies; (void)dependencyData;
  (void)numDependencies; return begin_capture(hStream, mode); }
CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) { ENTER(cuStreamEndCapture); return end_capture(hStream, phGraph); }
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) { ENTER(cuStreamEndCapture_ptsz); return end_capture(hStream, phGraph); }

static CUresult stream_ctx(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen, CUdevice *pdev)
{
	LOCK();
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = resolve_stream(h, &c, &s);
	if (r == CUDA_SUCCESS) {
		if (pctx) *pctx = c;
		if (pgreen) *pgreen = NULL;
		if (pdev) *pdev = c->dev;
	}
	UNLOCK();
	return r;
}
CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{ ENTER(cuStreamGetCtx); if (!pctx) return CUDA_ERROR_INVALID_VALUE; return stream_ctx(hStream, pctx, NULL, NULL); }
CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{ ENTER(cuStreamGetCtx_ptsz); if (!pctx) return CUDA_ERROR_INVALID_VALUE; return stream_ctx(hStream, pctx, NULL, NULL); }
CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{ ENTER(cuStreamGetCtx_v2); if (!pCtx && !pGreenCtx) return CUDA_ERROR_INVALID_VALUE; return stream_ctx(hStream, pCtx, pGreenCtx, NULL); }
CUresult CUDAAPI cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{ ENTER(cuStreamGetCtx_v2_ptsz); if (!pCtx && !pGreenCtx) return CUDA_ERROR_INVALID_VALUE; return stream_ctx(hStream, pCtx, pGreenCtx, NULL); }
CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice *device)
{ ENTER(cuStreamGetDevice); if (!device) return CUDA_ERROR_INVALID_VALUE; return stream_ctx(hStream, NULL, NULL, device); }
CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{ ENTER(cuStreamGetDevice_ptsz); if (!device) return CUDA_ERROR_INVALID_VALUE; return stream_ctx(hStream, NULL, NULL, device); }

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	ENTER(cuGraphDestroy);
	return hGraph ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ================================================================== cuGetProcAddress */
struct gpa_row {
	const char *base;
	int ver;
	int ptsz;
	void *fn;
};

#define R(base, ver, sym) { #base, ver, 0, (void *)&sym }
#define P(base, ver, sym) { #base, ver, 1, (void *)&sym }
#define R1(sym, ver) R(sym, ver, sym)
static const struct gpa_row g_gpa[] = {
	R1(cuInit, 2000), R1(cuDriverGetVersion, 2020), R1(cuDeviceGetCount, 2000), R1(cuDeviceGet, 2000),
	R1(cuDeviceGetName, 2000), R(cuDeviceGetUuid, 9020, cuDeviceGetUuid), R(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2),
	R(cuDeviceTotalMem, 2000, cuDeviceTotalMem), R(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
	R1(cuDeviceGetAttribute, 2000), R1(cuGetErrorName, 6000), R1(cuGetErrorString, 6000),

	R1(cuDevicePrimaryCtxRetain, 7000),
	R(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease), R(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
	R(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset), R(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2),
	R1(cuDevicePrimaryCtxGetState, 7000),
	R(cuDevicePrimaryCtxSetFlags, 7000, cuDevicePrimaryCtxSetFlags), R(cuDevicePrimaryCtxSetFlags, 11000, cuDevicePrimaryCtxSetFlags_v2),
	R(cuCtxCreate, 2000, cuCtxCreate), R(cuCtxCreate, 3020, cuCtxCreate_v2), R(cuCtxCreate, 11040, cuCtxCreate_v3),
	R(cuCtxCreate, 12050, cuCtxCreate_v4),
	R(cuCtxDestroy, 2000, cuCtxDestroy), R(cuCtxDestroy, 4000, cuCtxDestroy_v2),
	R1(cuCtxSetCurrent, 4000), R1(cuCtxGetCurrent, 4000),
	R(cuCtxPushCurrent, 2000, cuCtxPushCurrent), R(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
	R(cuCtxPopCurrent, 2000, cuCtxPopCurrent), R(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2),
	R(cuCtxGetDevice, 2000, cuCtxGetDevice), R(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
	R(cuCtxSynchronize, 2000, cuCtxSynchronize), R(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),

	R(cuMemAlloc, 2000, cuMemAlloc), R(cuMemAlloc, 3020, cuMemAlloc_v2),
	R(cuMemAllocPitch, 2000, cuMemAllocPitch), R(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
	R(cuMemFree, 2000, cuMemFree), R(cuMemFree, 3020, cuMemFree_v2),
	R(cuMemGetInfo, 2000, cuMemGetInfo), R(cuMemGetInfo, 3020, cuMemGetInfo_v2),
	R(cuMemGetAddressRange, 2000, cuMemGetAddressRange), R(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2),
	R1(cuMemAllocManaged, 6000),

	R1(cuMemAllocAsync, 11020), P(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz),
	R1(cuMemAllocFromPoolAsync, 11020), P(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync_ptsz),
	R1(cuMemFreeAsync, 11020), P(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz),
	R1(cuMemPoolCreate, 11020), R1(cuMemPoolDestroy, 11020), R1(cuDeviceGetDefaultMemPool, 11020),
	R1(cuDeviceGetMemPool, 11020), R1(cuDeviceSetMemPool, 11020), R1(cuMemPoolTrimTo, 11020),
	R1(cuMemPoolGetAttribute, 11020), R1(cuMemPoolSetAttribute, 11020),
	R1(cuDeviceGetGraphMemAttribute, 11040), R1(cuDeviceSetGraphMemAttribute, 11040), R1(cuDeviceGraphMemTrim, 11040),

	R1(cuModuleLoad, 2000), R1(cuModuleLoadData, 2000), R1(cuModuleLoadDataEx, 2010), R1(cuModuleLoadFatBinary, 2000),
	R1(cuModuleUnload, 2000), R1(cuLibraryLoadData, 12000), R1(cuLibraryLoadFromFile, 12000),
	R1(cuLibraryUnload, 12000),

	R1(cuMemCreate, 10020), R1(cuMemGetAllocationGranularity, 10020), R1(cuMemRelease, 10020),
	R1(cuMemRetainAllocationHandle, 11000), R1(cuMemAddressReserve, 10020), R1(cuMemAddressFree, 10020),
	R1(cuMemMap, 10020), R1(cuMemUnmap, 10020), R1(cuMemSetAccess, 10020),
	R1(cuMemGetAllocationPropertiesFromHandle, 10020),

	R(cuArrayCreate, 2000, cuArrayCreate), R(cuArrayCreate, 3020, cuArrayCreate_v2),
	R(cuArray3DCreate, 2000, cuArray3DCreate), R(cuArray3DCreate, 3020, cuArray3DCreate_v2),
	R1(cuMipmappedArrayCreate, 5000), R1(cuArrayDestroy, 2000), R1(cuMipmappedArrayDestroy, 5000),

	R1(cuStreamCreate, 2000), R1(cuStreamCreateWithPriority, 5050), R1(cuThreadExchangeStreamCaptureMode, 10010),
	R(cuStreamDestroy, 2000, cuStreamDestroy), R(cuStreamDestroy, 4000, cuStreamDestroy_v2),
	R1(cuStreamQuery, 2000), P(cuStreamQuery, 7000, cuStreamQuery_ptsz),
	R1(cuStreamSynchronize, 2000), P(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz),
	R1(cuStreamIsCapturing, 10000), P(cuStreamIsCapturing, 10000, cuStreamIsCapturing_ptsz),
	R(cuStreamBeginCapture, 10000, cuStreamBeginCapture), P(cuStreamBeginCapture, 10000, cuStreamBeginCapture_ptsz),
	R(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2), P(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2_ptsz),
	R1(cuStreamEndCapture, 10000), P(cuStreamEndCapture, 10000, cuStreamEndCapture_ptsz),
	R1(cuStreamBeginCaptureToGraph, 12030), P(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph_ptsz),
	R(cuStreamGetCtx, 9020, cuStreamGetCtx), P(cuStreamGetCtx, 9020, cuStreamGetCtx_ptsz),
	R(cuStreamGetCtx, 12050, cuStreamGetCtx_v2), P(cuStreamGetCtx, 12050, cuStreamGetCtx_v2_ptsz),
	R1(cuStreamGetDevice, 12080), P(cuStreamGetDevice, 12080, cuStreamGetDevice_ptsz),
	R1(cuGraphDestroy, 10000),
	R1(cuLaunchKernel, 4000), P(cuLaunchKernel, 7000, cuLaunchKernel_ptsz),
	R1(cuLaunchKernelEx, 11060), P(cuLaunchKernelEx, 11060, cuLaunchKernelEx_ptsz),
	R1(cuLaunchCooperativeKernel, 9000), P(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel_ptsz),
	R1(cuGraphLaunch, 10000), P(cuGraphLaunch, 10000, cuGraphLaunch_ptsz),
	R1(cuEventCreate, 2000), R1(cuEventRecord, 2000), P(cuEventRecord, 7000, cuEventRecord_ptsz),
	R1(cuEventQuery, 2000), R(cuEventDestroy, 4000, cuEventDestroy_v2), R1(cuFuncGetName, 12030),
	R1(cuStreamWaitEvent, 3020), P(cuStreamWaitEvent, 7000, cuStreamWaitEvent_ptsz),

	R(cuGetProcAddress, 11030, cuGetProcAddress), R(cuGetProcAddress, 12000, cuGetProcAddress_v2),
};
#undef R
#undef P
#undef R1

static int is_versioned_name(const char *s)
{
	size_t n = strlen(s);
	if (n > 5 && (strcmp(s + n - 5, "_ptsz") == 0 || strcmp(s + n - 5, "_ptds") == 0)) return 1;
	const char *u = strrchr(s, '_');
	if (!u || u[1] != 'v' || !isdigit((unsigned char)u[2])) return 0;
	for (const char *p = u + 2; *p; p++)
		if (!isdigit((unsigned char)*p)) return 0;
	return 1;
}

static CUresult gpa(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                    CUdriverProcAddressQueryResult *status)
{
	if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
	if (cudaVersion > g_drv) return CUDA_ERROR_INVALID_VALUE;
	if (is_versioned_name(symbol)) {
		*pfn = NULL;
		if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_SUCCESS;
	}
	int want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	int found = 0;
	const struct gpa_row *best = NULL, *best_legacy = NULL;
	for (size_t i = 0; i < sizeof g_gpa / sizeof g_gpa[0]; i++) {
		const struct gpa_row *r = &g_gpa[i];
		if (strcmp(r->base, symbol) != 0) continue;
		found = 1;
		if (r->ver > cudaVersion) continue;
		if (r->ptsz) {
			if (want_ptsz && (!best || r->ver > best->ver)) best = r;
		} else if (!best_legacy || r->ver > best_legacy->ver) {
			best_legacy = r;
		}
	}
	if (!best) best = best_legacy;
	if (!best) {
		*pfn = NULL;
		if (status) *status = found ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_ERROR_NOT_FOUND;
	}
	*pfn = best->fn;
	if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	ENTER_EXEMPT(cuGetProcAddress);
	return gpa(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus)
{
	ENTER_EXEMPT(cuGetProcAddress_v2);
	return gpa(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* ================================================================== test helpers */
FC_EXPORT unsigned long long fakecuda_used_bytes(int dev)
{
	ensure_init();
	if (dev < 0 || dev >= MAXDEV) return 0;
	LOCK();
	unsigned long long v = g_dev[dev].used;
	UNLOCK();
	return v;
}

FC_EXPORT unsigned long long fakecuda_peak_bytes(int dev)
{
	ensure_init();
	if (dev < 0 || dev >= MAXDEV) return 0;
	LOCK();
	unsigned long long v = g_dev[dev].peak;
	UNLOCK();
	return v;
}

FC_EXPORT void fakecuda_reset_peak(int dev)
{
	ensure_init();
	if (dev < 0 || dev >= MAXDEV) return;
	LOCK();
	g_dev[dev].peak = g_dev[dev].used;
	UNLOCK();
}

FC_EXPORT long fakecuda_calls(const char *exact_name)
{
	if (!exact_name) return -1;
	int i = name_index(exact_name);
	if (i < 0) return -1;
	long n = atomic_load(&g_calls[i]);
	for (int k = 0; k < FC_CALL_SHARDS; k++) n += atomic_load(&g_calls_sh[k].n[i]);
	return n;
}

FC_EXPORT int fakecuda_stream_set_pending(CUstream s, int pending)
{
	ensure_init();
	int r = -1;
	LOCK();
	struct CUstream_st *x = NULL;
	void *key = s;
	if (!is_special_stream(s)) HASH_FIND_PTR(g_streams, &key, x);
	if (x) { x->pending = pending != 0; r = 0; }
	UNLOCK();
	return r;
}

FC_EXPORT int fakecuda_capture_invalidated(CUstream s)
{
	ensure_init();
	int r = -1;
	LOCK();
	struct CUstream_st *x = NULL;
	void *key = s;
	if (!is_special_stream(s)) HASH_FIND_PTR(g_streams, &key, x);
	if (x) r = x->queried_while_capturing;
	UNLOCK();
	return r;
}

FC_EXPORT long fakecuda_capture_invalidations(void) { return atomic_load(&g_invalidations); }

FC_EXPORT long fakecuda_live_allocations(int dev)
{
	ensure_init();
	if (dev < 0 || dev >= MAXDEV) return 0;
	LOCK();
	long v = g_dev[dev].live;
	UNLOCK();
	return v;
}

FC_EXPORT unsigned long long fakecuda_process_device_bytes(int dev)
{
	ensure_init();
	if (dev < 0 || dev >= MAXDEV) return 0;
	LOCK();
	unsigned long long v = phys(dev);
	UNLOCK();
	return v;
}

FC_EXPORT unsigned long long fakecuda_pool_reserved(int dev)
{
	ensure_init();
	if (dev < 0 || dev >= MAXDEV) return 0;
	LOCK();
	unsigned long long v = g_dev[dev].pool_reserved;
	UNLOCK();
	return v;
}

FC_EXPORT int fakecuda_graph_mem(int dev, unsigned long long reserved, unsigned long long used)
{
	ensure_init();
	if (!dev_ok(dev) || used > reserved) return -1;
	int r = -1;
	LOCK();
	struct devstate *ds = &g_dev[dev];
	unsigned long long others = phys(dev) - ds->graph_reserved;
	if (others <= g_total && reserved <= g_total - others) {
		ds->graph_reserved = reserved;
		ds->graph_used = used;
		if (reserved > ds->graph_reserved_high) ds->graph_reserved_high = reserved;
		if (used > ds->graph_used_high) ds->graph_used_high = used;
		r = 0;
	}
	UNLOCK();
	return r;
}
