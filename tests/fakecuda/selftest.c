/* selftest.c - checks the fake driver itself (tests/fakecuda/fakecuda.c); never installed.
 * `make test` builds it (build/tests/fakecuda_selftest) and runs it before tests/run.sh; by hand:
 *   cc -std=gnu11 -O1 -g -Wall -Wextra -pthread -I/usr/local/cuda/include -o build/tests/fakecuda_selftest \
 *      tests/fakecuda/selftest.c -Lbuild/tests -l:libcuda.so.1 -Wl,-rpath,'$ORIGIN' -ldl
 *   build/tests/fakecuda_selftest
 * One "ok N - ..." / "not ok N - ..." line per check, the last line "N passed, N failed" (as the unit tests).
 * It sets its own FAKECUDA_* environment (must happen before the first driver call) and re-executes itself
 * for the FAKECUDA_FORK_OK=1 case and for the context and module footprints (FAKECUDA_CTX_BYTES,
 * FAKECUDA_MODULE_BYTES), which the other checks must not see.
 * Mode "gpa-identity" (used under LD_PRELOAD of another library defining cuMemAlloc_v2): checks that the fake's
 * cuGetProcAddress still hands out the fake's own functions. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakecuda.h"

/* Output: the protocol of every suite here (docs/TESTING.md): "ok N - condition", or "not ok N - condition" and
 * "# at FILE:LINE"; the last line "N passed, N failed". A re-executed mode (below) prints only its failures and
 * one "# fakecuda selftest MODE: ok|FAILED" line: its parent counts it as one check. */
static int checks, failures;
static const char *sub_mode;
static void check_line(int ok, const char *cond, const char *file, int line)
{
	checks++;
	if (!ok)
		failures++;
	if (sub_mode && !ok)
		printf("# %s: not ok - %s at %s:%d\n", sub_mode, cond, file, line);
	else if (!sub_mode && ok)
		printf("ok %d - %s\n", checks, cond);
	else if (!sub_mode)
		printf("not ok %d - %s\n# at %s:%d\n", checks, cond, file, line);
	fflush(stdout);
}
#define CHECK(cond) check_line(!!(cond), #cond, __FILE__, __LINE__)
#define CK(call, want) CHECK((call) == (want))

static void *fake_sym(const char *name)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	return h ? dlsym(h, name) : NULL;
}

static void *gpa2(const char *name, int ver, cuuint64_t flags, CUresult *rc, CUdriverProcAddressQueryResult *st)
{
	void *p = (void *)0x1234;
	*rc = cuGetProcAddress_v2(name, &p, ver, flags, st);
	return p;
}

static void test_gpa(void)
{
	CUresult rc;
	CUdriverProcAddressQueryResult st;
	void *p;
	for (int v = 0; v < 3; v++) {
		int ver = (int[]){ 3020, 12000, 13000 }[v];
		p = gpa2("cuMemAlloc", ver, 0, &rc, &st);
		CHECK(rc == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && p == fake_sym("cuMemAlloc_v2"));
	}
	p = gpa2("cuMemAlloc", 2000, 0, &rc, &st);
	CHECK(rc == CUDA_SUCCESS && p == fake_sym("cuMemAlloc") && p != fake_sym("cuMemAlloc_v2"));
	st = 77;
	p = gpa2("cuMemAlloc", 13010, 0, &rc, &st);
	CHECK(rc == CUDA_ERROR_INVALID_VALUE && p == (void *)0x1234 && st == 77);
	p = gpa2("cuMemAlloc_v2", 13000, 0, &rc, &st);
	CHECK(rc == CUDA_SUCCESS && p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	p = gpa2("cuStreamQuery_ptsz", 13000, 2, &rc, &st);
	CHECK(rc == CUDA_SUCCESS && p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	p = gpa2("cuNoSuchThing", 13000, 0, &rc, &st);
	CHECK(rc == CUDA_ERROR_NOT_FOUND && p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	p = gpa2("cuMemAllocAsync", 11000, 0, &rc, &st);
	CHECK(rc == CUDA_ERROR_NOT_FOUND && p == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	p = gpa2("cuStreamQuery", 12000, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuStreamQuery"));
	p = gpa2("cuStreamQuery", 12000, 1, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuStreamQuery"));
	p = gpa2("cuStreamQuery", 12000, 2, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuStreamQuery_ptsz"));
	p = gpa2("cuMemAllocAsync", 11020, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuMemAllocAsync"));
	p = gpa2("cuMemAllocAsync", 11020, 2, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuMemAllocAsync_ptsz"));
	p = gpa2("cuStreamDestroy", 3020, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuStreamDestroy"));
	p = gpa2("cuStreamDestroy", 4000, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuStreamDestroy_v2"));
	p = gpa2("cuCtxSynchronize", 13000, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuCtxSynchronize_v2"));
	p = gpa2("cuCtxSynchronize", 12090, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuCtxSynchronize"));
	p = gpa2("cuStreamBeginCapture", 12000, 2, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuStreamBeginCapture_v2_ptsz"));
	p = gpa2("cuGetProcAddress", 11030, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuGetProcAddress"));
	p = gpa2("cuGetProcAddress", 12000, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuGetProcAddress_v2"));
	p = gpa2("cuDevicePrimaryCtxRelease", 10000, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuDevicePrimaryCtxRelease"));
	p = gpa2("cuDevicePrimaryCtxRelease", 11000, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuDevicePrimaryCtxRelease_v2"));
	p = gpa2("cuCtxGetDevice", 12080, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuCtxGetDevice"));
	p = gpa2("cuCtxGetDevice", 13000, 0, &rc, &st);
	CHECK(rc == 0 && p == fake_sym("cuCtxGetDevice_v2"));
	/* v1 lookup, 4 args */
	PFN_cuGetProcAddress_v11030 v1 = (PFN_cuGetProcAddress_v11030)fake_sym("cuGetProcAddress");
	p = NULL;
	CK(v1("cuMemFree", &p, 11030, 0), CUDA_SUCCESS);
	CHECK(p == fake_sym("cuMemFree_v2"));
}

static void test_alloc(void)
{
	CUdeviceptr a = 0, b = 0;
	size_t fr, tot;
	CK(cuInit(0), CUDA_SUCCESS);
	CUcontext c = NULL;
	CK(cuCtxGetCurrent(&c), CUDA_SUCCESS);
	CHECK(c != NULL);
	CK(cuMemAlloc(&a, 1000), CUDA_SUCCESS); /* call 1 */
	CHECK(a % 512 == 0 && a >= 0x700000000000ull && a < 0x710000000000ull);
	CHECK(fakecuda_used_bytes(0) == 1000);
	CK(cuMemGetInfo(&fr, &tot), CUDA_SUCCESS);
	CHECK(tot == (1ull << 30) && fr == tot - 1000);
	CUdeviceptr b2 = 0;
	CK(cuMemAlloc(&b2, 24), CUDA_SUCCESS); /* call 2 */
	CK(cuMemAlloc(&b, 24), CUDA_ERROR_OUT_OF_MEMORY); /* call 3: injected */
	CHECK(fakecuda_used_bytes(0) == 1024 && fakecuda_live_allocations(0) == 2);
	CK(cuMemAlloc(&b, 24), CUDA_SUCCESS); /* call 4 */
	CHECK(fakecuda_calls("cuMemAlloc_v2") == 4);
	CHECK(fakecuda_calls("cuNoSuch") == -1);
	CK(cuMemFree(b), CUDA_SUCCESS);
	CK(cuMemFree(b), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemFree(b2), CUDA_SUCCESS);
	CK(cuMemFree(0), CUDA_SUCCESS);
	CK(cuMemAlloc(NULL, 5), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemAlloc(&b, 2ull << 30), CUDA_ERROR_OUT_OF_MEMORY);
	CUdeviceptr base; size_t sz;
	CK(cuMemGetAddressRange(&base, &sz, a + 10), CUDA_SUCCESS);
	CHECK(base == a && sz == 1000);
	size_t pitch;
	CK(cuMemAllocPitch(&b, &pitch, 100, 10, 4), CUDA_SUCCESS);
	CHECK(pitch == 512 && fakecuda_used_bytes(0) == 1000 + 5120);
	CK(cuMemAllocPitch(&base, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemFree(b), CUDA_SUCCESS);
	CK(cuMemFree(a), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 0 && fakecuda_peak_bytes(0) == 1000 + 5120);
	/* legacy 32-bit entry point through GPA */
	CUresult (*a1)(unsigned int *, unsigned int); /* legacy cuMemAlloc (CUdeviceptr_v1 is unsigned int) */
	CUresult (*f1)(unsigned int);
	CK(cuGetProcAddress("cuMemAlloc", (void **)&a1, 2000, 0, NULL), CUDA_SUCCESS);
	CK(cuGetProcAddress("cuMemFree", (void **)&f1, 2000, 0, NULL), CUDA_SUCCESS);
	unsigned int l = 0;
	CK(a1(&l, 4096), CUDA_SUCCESS);
	CHECK(l != 0 && fakecuda_used_bytes(0) == 4096);
	CK(f1(l), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 0 && fakecuda_calls("cuMemAlloc") == 1);
	/* device 1 */
	CUuuid u;
	CK(cuDeviceGetUuid(&u, 1), CUDA_SUCCESS);
	CHECK(u.bytes[3] == 1 && u.bytes[15] == 1 && u.bytes[0] == 0);
	char name[32];
	CK(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
	CHECK(strcmp(name, "Fake GPU 1") == 0);
	CK(cuDeviceGetName(name, sizeof name, 2), CUDA_ERROR_INVALID_DEVICE);
	CUcontext c1, popped;
	CK(cuCtxCreate(&c1, NULL, 0, 1), CUDA_SUCCESS);
	CK(cuMemAlloc(&a, 4096), CUDA_SUCCESS);
	CK(cuMemAllocManaged(&b, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 8192 && fakecuda_used_bytes(0) == 0);
	CUdevice d;
	CK(cuCtxGetDevice(&d), CUDA_SUCCESS);
	CHECK(d == 1);
	CK(cuCtxDestroy(c1), CUDA_SUCCESS); /* frees both */
	CHECK(fakecuda_used_bytes(1) == 0 && fakecuda_live_allocations(1) == 0);
	CK(cuCtxGetCurrent(&popped), CUDA_SUCCESS);
	CHECK(popped == c);
	CK(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
	CK(cuMemAlloc(&a, 10), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuCtxSetCurrent(c), CUDA_SUCCESS);
	/* primary release frees (auto context retained device 0's primary once) */
	CK(cuMemAlloc(&a, 10), CUDA_SUCCESS);
	CK(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 0);
	CK(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
	CUcontext pc;
	CK(cuDevicePrimaryCtxRetain(&pc, 0), CUDA_SUCCESS);
	CHECK(pc == c);
}

static void test_vmm(void)
{
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 1;
	size_t g;
	CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
	CHECK(g == (2u << 20));
	CUmemGenericAllocationHandle h1, h2, hr, hh;
	CK(cuMemCreate(&h1, g, &prop, 0), 800); /* injected: first cuMemCreate fails with 800 */
	CHECK(fakecuda_used_bytes(1) == 0);
	CK(cuMemCreate(&h1, g + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemCreate(&h1, 2 * g, &prop, 0), CUDA_SUCCESS);
	CK(cuMemCreate(&h2, g, &prop, 0), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 3 * g);
	prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	prop.location.id = 0;
	CK(cuMemCreate(&hh, g, &prop, 0), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 3 * g && fakecuda_used_bytes(0) == 0);
	CK(cuMemRelease(hh), CUDA_SUCCESS);
	CUdeviceptr va;
	CK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 3 * g);
	CK(cuMemMap(va, 2 * g, 0, h1, 0), CUDA_SUCCESS);
	CK(cuMemMap(va + 2 * g, g, 0, h2, 0), CUDA_SUCCESS);
	CK(cuMemMap(va + g, g, 0, h2, 0), CUDA_ERROR_INVALID_VALUE); /* overlap */
	CUmemAccessDesc ad = { { CU_MEM_LOCATION_TYPE_DEVICE, 1 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CK(cuMemSetAccess(va, 3 * g, &ad, 1), CUDA_SUCCESS);
	/* NCCL order on h1: Retain, Unmap, Release, Release */
	CK(cuMemRetainAllocationHandle(&hr, (void *)(va + 100)), CUDA_SUCCESS);
	CHECK(hr == h1);
	CK(cuMemUnmap(va, 2 * g), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 3 * g);
	CK(cuMemRelease(hr), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 3 * g);
	CK(cuMemRelease(h1), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == g);
	CK(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
	/* h2: release first while mapped, memory stays until unmapped */
	CK(cuMemRelease(h2), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == g);
	CK(cuMemUnmap(va + 2 * g, g), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 0 && fakecuda_live_allocations(1) == 0);
	CK(cuMemAddressFree(va, 4 * g), CUDA_SUCCESS);
	/* one unmap across two consecutive mappings */
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CK(cuMemCreate(&h1, g, &prop, 0), CUDA_SUCCESS);
	CK(cuMemCreate(&h2, g, &prop, 0), CUDA_SUCCESS);
	CK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0), CUDA_SUCCESS);
	CK(cuMemMap(va, g, 0, h1, 0), CUDA_SUCCESS);
	CK(cuMemMap(va + g, g, 0, h2, 0), CUDA_SUCCESS);
	CK(cuMemRelease(h1), CUDA_SUCCESS);
	CK(cuMemRelease(h2), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 2 * g);
	CK(cuMemUnmap(va, 2 * g), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 0);
	CK(cuMemAddressFree(va, 2 * g), CUDA_SUCCESS);
}

static void test_streams(void)
{
	CUstream s;
	CUdeviceptr p, q;
	CUgraph gr;
	CUstreamCaptureStatus cs;
	CK(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	CK(cuStreamQuery(s), CUDA_SUCCESS);
	CHECK(fakecuda_stream_set_pending(s, 1) == 0);
	CK(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	CK(cuStreamSynchronize(s), CUDA_SUCCESS);
	CK(cuStreamQuery(s), CUDA_SUCCESS);
	CK(cuMemAllocAsync(&p, 3000, s), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 3000);
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	CK(cuStreamIsCapturing(s, &cs), CUDA_SUCCESS);
	CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE);
	CK(cuMemAllocAsync(&q, 5000, s), CUDA_SUCCESS);
	CHECK(q != 0 && q != p && fakecuda_used_bytes(0) == 3000);
	CK(cuMemFreeAsync(q, s), CUDA_SUCCESS);
	CHECK(fakecuda_capture_invalidated(s) == 0);
	CK(cuStreamEndCapture(s, &gr), CUDA_SUCCESS);
	CHECK(gr != NULL);
	CK(cuGraphDestroy(gr), CUDA_SUCCESS);
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
	CK(cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CHECK(fakecuda_capture_invalidated(s) == 1 && fakecuda_capture_invalidations() == 1);
	CK(cuStreamIsCapturing(s, &cs), CUDA_SUCCESS);
	CHECK(cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	CK(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CK(cuMemFreeAsync(p, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 0);
	CUmemoryPool pool;
	CK(cuDeviceGetDefaultMemPool(&pool, 1), CUDA_SUCCESS);
	CK(cuMemAllocFromPoolAsync(&p, 4096, pool, s), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 4096);
	CK(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(1) == 0);
	CUdevice d;
	CK(cuStreamGetDevice(s, &d), CUDA_SUCCESS);
	CHECK(d == 0);
	CK(cuStreamDestroy(s), CUDA_SUCCESS);
	CK(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
	/* arrays: 2D float4 64x32, and a 3-level mipmap of 8-bit 1ch 16x16 */
	CUarray arr;
	CUDA_ARRAY3D_DESCRIPTOR d3 = { 64, 32, 0, CU_AD_FORMAT_FLOAT, 4, 0 };
	CK(cuArray3DCreate(&arr, &d3), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 64 * 32 * 16);
	CK(cuArrayDestroy(arr), CUDA_SUCCESS);
	CUmipmappedArray mm;
	CUDA_ARRAY3D_DESCRIPTOR dm = { 16, 16, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0 };
	CK(cuMipmappedArrayCreate(&mm, &dm, 3), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 256 + 64 + 16);
	CK(cuMipmappedArrayDestroy(mm), CUDA_SUCCESS);
	CHECK(fakecuda_used_bytes(0) == 0);
}

/* ---- what the device holds: stream-ordered pools, graph memory, footprints (fakecuda.h) ---- */
#define MiB (1ull << 20)

static cuuint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a)
{
	cuuint64_t v = 0xdeadbeef;
	CUresult rc = cuMemPoolGetAttribute(p, a, &v);
	return rc == CUDA_SUCCESS ? v : 0xbad;
}
#define RESERVED(p) pool_attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
#define USED(p) pool_attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)

static int set_attr(CUmemoryPool p, CUmemPool_attribute a, cuuint64_t v) { return cuMemPoolSetAttribute(p, a, &v); }

static size_t free_now(void)
{
	size_t f = 0, t = 0;
	return cuMemGetInfo(&f, &t) == CUDA_SUCCESS ? f : 0;
}

static void test_pools(void)
{
	const unsigned long long G = 1ull << 30;
	CUstream s;
	CUmemoryPool def, def1, cur, p, hp;
	CUdeviceptr a, b, c, x, y;
	cuuint64_t v;
	int iv;
	CK(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	CK(cuDeviceGetDefaultMemPool(&def, 0), CUDA_SUCCESS);
	CK(cuDeviceGetDefaultMemPool(&def1, 1), CUDA_SUCCESS);
	CK(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
	CHECK(cur == def); /* the default pool is current by default */
	/* earlier tests left the default pools' reserves (freed, never synchronized) */
	CK(cuCtxSynchronize(), CUDA_SUCCESS);
	CK(cuMemPoolTrimTo(def1, 0), CUDA_SUCCESS);
	CHECK(fakecuda_pool_reserved(0) == 0 && fakecuda_pool_reserved(1) == 0);
	CHECK(fakecuda_process_device_bytes(0) == 0 && fakecuda_process_device_bytes(1) == 0);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);

	/* growth: 3 MiB on an empty pool reserves 4 MiB (2 MiB steps) */
	CK(cuMemAllocAsync(&a, 3 * MiB, s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 4 * MiB && USED(def) == 3 * MiB);
	CHECK(fakecuda_pool_reserved(0) == 4 * MiB);
	CHECK(fakecuda_used_bytes(0) == 3 * MiB);              /* logical, as before */
	CHECK(fakecuda_process_device_bytes(0) == 4 * MiB);    /* by the reserve */
	CHECK(free_now() == G - 4 * MiB);
	/* reuse from the reserve: 1 MiB fits in the 1 MiB left */
	CK(cuMemAllocAsync(&b, MiB, s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 4 * MiB && USED(def) == 4 * MiB);
	/* 1 byte more does not fit: the pool grows by 2 MiB */
	CK(cuMemAllocAsync(&c, 1, s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 6 * MiB && USED(def) == 4 * MiB + 1);
	/* a free keeps the reserve */
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 6 * MiB && USED(def) == MiB + 1);
	CHECK(fakecuda_used_bytes(0) == MiB + 1 && fakecuda_process_device_bytes(0) == 6 * MiB);
	CHECK(free_now() == G - 6 * MiB);
	CK(cuMemAllocAsync(&a, 2 * MiB, s), CUDA_SUCCESS);     /* taken from what the free left */
	CHECK(RESERVED(def) == 6 * MiB && USED(def) == 3 * MiB + 1);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 6 * MiB);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 4 * MiB + 1);
	/* a sync releases above the threshold (0) down to what is used */
	CK(cuStreamSynchronize(s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 3 * MiB + 1 && USED(def) == 3 * MiB + 1);
	CHECK(fakecuda_process_device_bytes(0) == 3 * MiB + 1 && fakecuda_pool_reserved(0) == 3 * MiB + 1);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuMemFreeAsync(b, s), CUDA_SUCCESS);
	CK(cuMemFree(c), CUDA_SUCCESS);                        /* cuMemFree of a pool pointer goes back to its pool */
	CHECK(RESERVED(def) == 3 * MiB + 1 && USED(def) == 0 && fakecuda_used_bytes(0) == 0);
	CK(cuCtxSynchronize(), CUDA_SUCCESS);                  /* a context sync releases too */
	CHECK(RESERVED(def) == 0 && fakecuda_process_device_bytes(0) == 0 && free_now() == G);
	/* the high watermarks: only 0 is accepted, and it resets them to the current value */
	CK(set_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 5), CUDA_ERROR_INVALID_VALUE);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 6 * MiB);
	CK(set_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0), CUDA_SUCCESS);
	CK(set_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0), CUDA_SUCCESS);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 0 && pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 0);
	CK(set_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 0), CUDA_ERROR_INVALID_VALUE); /* read-only */
	CK(set_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, 0), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, NULL), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemPoolGetAttribute(def, (CUmemPool_attribute)99, &v), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemPoolGetAttribute((CUmemoryPool)&v, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &iv), CUDA_SUCCESS);
	CHECK(iv == 1);
	iv = 0;
	CK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &iv), CUDA_SUCCESS);
	iv = 7;
	CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &iv), CUDA_SUCCESS);
	CHECK(iv == 0);
	CK(cuMemAllocAsync(&a, 5 * MiB, s), CUDA_SUCCESS);    /* a reset high follows the current value up */
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 6 * MiB);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 5 * MiB);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuMemAllocAsync(&a, MiB, s), CUDA_SUCCESS);
	CK(cuMemPoolTrimTo(def, 2 * MiB), CUDA_SUCCESS);       /* reserved 2 MiB, used 1 MiB, highs 6 and 5 MiB */
	CK(set_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0), CUDA_SUCCESS);
	CK(set_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0), CUDA_SUCCESS);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 2 * MiB);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == MiB);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuMemPoolTrimTo(def, 0), CUDA_SUCCESS);
	CK(cuMemAllocAsync(&a, 5 * MiB, s), CUDA_SUCCESS);    /* back to reserved 6 MiB, used 5 MiB */
	CHECK(RESERVED(def) == 6 * MiB && USED(def) == 5 * MiB);

	/* threshold at the maximum (PyTorch's cudaMallocAsync): free + sync keeps everything */
	CK(set_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX), CUDA_SUCCESS);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == UINT64_MAX);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuStreamSynchronize(s), CUDA_SUCCESS);
	CK(cuCtxSynchronize(), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 6 * MiB && USED(def) == 0);
	CHECK(fakecuda_used_bytes(0) == 0 && fakecuda_process_device_bytes(0) == 6 * MiB && free_now() == G - 6 * MiB);
	/* a threshold in between: the next sync keeps exactly the threshold */
	CK(set_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 5 * MiB), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 6 * MiB);                       /* nothing before the sync */
	CK(cuStreamSynchronize(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 5 * MiB);
	CK(cuStreamSynchronize(s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 5 * MiB);                       /* at the threshold: nothing more */
	/* TrimTo: down to max(keep, used); a no-op below the keep */
	CK(cuMemPoolTrimTo(def, 3 * MiB), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 3 * MiB);
	CK(cuMemPoolTrimTo(def, 10 * MiB), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 3 * MiB);
	CK(cuMemAllocAsync(&a, MiB, s), CUDA_SUCCESS);
	CK(cuMemPoolTrimTo(def, 0), CUDA_SUCCESS);
	CHECK(RESERVED(def) == MiB && USED(def) == MiB);       /* outstanding memory stays */
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuMemPoolTrimTo(def, 0), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 0 && fakecuda_process_device_bytes(0) == 0);
	CK(cuMemPoolTrimTo(NULL, 0), CUDA_ERROR_INVALID_VALUE);

	/* the device's memory: a pool's growth fails when the device is full, and its reserve fills the device */
	CK(set_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX), CUDA_SUCCESS);
	CK(cuMemAlloc(&x, G / 2), CUDA_SUCCESS);
	CK(cuMemAllocAsync(&a, G / 2 + 1, s), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(RESERVED(def) == 0 && USED(def) == 0 && fakecuda_used_bytes(0) == G / 2);
	CK(cuMemAllocAsync(&a, 300 * MiB, s), CUDA_SUCCESS);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuStreamSynchronize(s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 300 * MiB && free_now() == G / 2 - 300 * MiB);
	CK(cuMemAlloc(&y, 300 * MiB), CUDA_ERROR_OUT_OF_MEMORY);   /* the reserve holds the room */
	CK(cuMemAllocAsync(&a, 300 * MiB, s), CUDA_SUCCESS);      /* ... which the pool reuses */
	CHECK(RESERVED(def) == 300 * MiB);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuMemPoolTrimTo(def, 0), CUDA_SUCCESS);
	CK(cuMemAlloc(&y, 300 * MiB), CUDA_SUCCESS);
	CK(cuMemFree(y), CUDA_SUCCESS);
	CK(cuMemFree(x), CUDA_SUCCESS);
	CK(set_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == 0 && free_now() == G);

	/* allocations while capturing are graph memory: no pool moves */
	CUgraph gr;
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	CK(cuMemAllocAsync(&a, MiB, s), CUDA_SUCCESS);
	CHECK(RESERVED(def) == 0 && USED(def) == 0 && fakecuda_process_device_bytes(0) == 0);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuStreamEndCapture(s, &gr), CUDA_SUCCESS);
	CK(cuGraphDestroy(gr), CUDA_SUCCESS);

	/* an explicit pool made current: cuMemAllocAsync takes from it, the default pool stays put */
	CUmemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CK(cuMemPoolCreate(&p, &props), CUDA_SUCCESS);
	CHECK(RESERVED(p) == 0 && pool_attr(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);
	CK(cuDeviceSetMemPool(0, p), CUDA_SUCCESS);
	CK(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
	CHECK(cur == p);
	CK(cuDeviceGetDefaultMemPool(&cur, 0), CUDA_SUCCESS);
	CHECK(cur == def);
	CK(cuDeviceSetMemPool(1, p), CUDA_ERROR_INVALID_VALUE);  /* not local to device 1 */
	CK(cuDeviceSetMemPool(0, NULL), CUDA_ERROR_INVALID_VALUE);
	CK(cuDeviceSetMemPool(5, p), CUDA_ERROR_INVALID_DEVICE);
	CK(cuMemAllocAsync(&a, MiB, s), CUDA_SUCCESS);
	CK(cuMemAllocFromPoolAsync(&b, 3 * MiB, def, s), CUDA_SUCCESS);
	CHECK(RESERVED(p) == 2 * MiB && USED(p) == MiB && RESERVED(def) == 4 * MiB && USED(def) == 3 * MiB);
	CHECK(fakecuda_pool_reserved(0) == 6 * MiB && fakecuda_process_device_bytes(0) == 6 * MiB);
	CK(cuMemFreeAsync(b, s), CUDA_SUCCESS);
	/* destroying the current pool with memory outstanding: the default pool is current again, the unused reserve
	 * goes now and the rest with the last free */
	CK(cuMemAllocAsync(&b, MiB / 2, s), CUDA_SUCCESS);      /* from p: reserved 2 MiB, used 1.5 MiB */
	CK(cuMemPoolDestroy(p), CUDA_SUCCESS);
	CK(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
	CHECK(cur == def);
	CK(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemPoolDestroy(p), CUDA_ERROR_INVALID_VALUE);
	CHECK(fakecuda_pool_reserved(0) == 4 * MiB + MiB + MiB / 2);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CHECK(fakecuda_pool_reserved(0) == 4 * MiB + MiB / 2);
	CK(cuMemFreeAsync(b, s), CUDA_SUCCESS);
	CHECK(fakecuda_pool_reserved(0) == 4 * MiB);
	CK(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);    /* a default pool cannot be destroyed */
	CK(cuStreamSynchronize(s), CUDA_SUCCESS);
	CHECK(fakecuda_pool_reserved(0) == 0 && fakecuda_process_device_bytes(0) == 0);
	/* a pool on device 1 used from a stream of device 0 charges device 1 */
	CK(cuMemAllocFromPoolAsync(&a, MiB, def1, s), CUDA_SUCCESS);
	CHECK(fakecuda_pool_reserved(1) == 2 * MiB && fakecuda_process_device_bytes(1) == 2 * MiB);
	CHECK(fakecuda_used_bytes(1) == MiB && fakecuda_pool_reserved(0) == 0);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuStreamSynchronize(s), CUDA_SUCCESS);              /* a sync of device 0 leaves device 1's pool */
	CHECK(fakecuda_pool_reserved(1) == 2 * MiB);
	CK(cuMemPoolTrimTo(def1, 0), CUDA_SUCCESS);
	CHECK(fakecuda_pool_reserved(1) == 0 && fakecuda_process_device_bytes(1) == 0);
	/* a host pool keeps books but charges no device; a host pool cannot be a device's current pool */
	props.location.type = CU_MEM_LOCATION_TYPE_HOST;
	CK(cuMemPoolCreate(&hp, &props), CUDA_SUCCESS);
	CK(cuDeviceSetMemPool(0, hp), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemAllocFromPoolAsync(&a, MiB, hp, s), CUDA_SUCCESS);
	CHECK(RESERVED(hp) == 2 * MiB && USED(hp) == MiB);
	CHECK(fakecuda_process_device_bytes(0) == 0 && fakecuda_used_bytes(0) == 0);
	CK(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CK(cuMemPoolDestroy(hp), CUDA_SUCCESS);
	CK(cuStreamDestroy(s), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(-1) == 0 && fakecuda_pool_reserved(99) == 0);
	CHECK(dlsym(RTLD_DEFAULT, "fakecuda_process_device_bytes") == (void *)fakecuda_process_device_bytes);
}

static cuuint64_t graph_attr(int dev, CUgraphMem_attribute a)
{
	cuuint64_t v = 0xdeadbeef;
	return cuDeviceGetGraphMemAttribute(dev, a, &v) == CUDA_SUCCESS ? v : 0xbad;
}

static void test_graph_mem(void)
{
	cuuint64_t v = 0;
	for (int a = CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT; a <= CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH; a++)
		CHECK(graph_attr(1, (CUgraphMem_attribute)a) == 0);
	CHECK(fakecuda_graph_mem(1, 64 * MiB, 40 * MiB) == 0);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 64 * MiB);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 40 * MiB);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 64 * MiB);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == 40 * MiB);
	CHECK(graph_attr(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);   /* per device */
	CHECK(fakecuda_process_device_bytes(1) == 64 * MiB && fakecuda_used_bytes(1) == 0);
	CHECK(fakecuda_graph_mem(1, 32 * MiB, 16 * MiB) == 0);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 64 * MiB);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == 40 * MiB);
	/* the HIGH ones reset (to the current value) with 0 only; the CURRENT ones are read-only */
	v = 1;
	CK(cuDeviceSetGraphMemAttribute(1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v), CUDA_ERROR_INVALID_VALUE);
	v = 0;
	CK(cuDeviceSetGraphMemAttribute(1, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
	CK(cuDeviceSetGraphMemAttribute(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
	CK(cuDeviceSetGraphMemAttribute(1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v), CUDA_SUCCESS);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == 16 * MiB);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 64 * MiB);
	CK(cuDeviceSetGraphMemAttribute(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &v), CUDA_SUCCESS);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 32 * MiB);
	/* trim: reserved down to used */
	CK(cuDeviceGraphMemTrim(1), CUDA_SUCCESS);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 16 * MiB);
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 16 * MiB);
	CHECK(fakecuda_process_device_bytes(1) == 16 * MiB);
	/* refusals change nothing */
	CHECK(fakecuda_graph_mem(1, MiB, 2 * MiB) == -1);
	CHECK(fakecuda_graph_mem(2, MiB, 0) == -1);
	CHECK(fakecuda_graph_mem(1, 2ull << 30, 0) == -1);     /* more than the device */
	CHECK(graph_attr(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 16 * MiB);
	CHECK(fakecuda_graph_mem(1, 1ull << 30, 0) == 0);      /* exactly the device (it holds nothing else) */
	CHECK(fakecuda_graph_mem(1, 0, 0) == 0);
	CHECK(fakecuda_process_device_bytes(1) == 0);
	CK(cuDeviceGetGraphMemAttribute(2, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_DEVICE);
	CK(cuDeviceSetGraphMemAttribute(-1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v), CUDA_ERROR_INVALID_DEVICE);
	CK(cuDeviceGraphMemTrim(2), CUDA_ERROR_INVALID_DEVICE);
	CK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, NULL), CUDA_ERROR_INVALID_VALUE);
	/* graph reserve counts against the device: cuMemGetInfo and allocations see it */
	CHECK(fakecuda_graph_mem(0, 1ull << 29, 0) == 0);
	CHECK(free_now() == (1ull << 29));
	CUdeviceptr p;
	CK(cuMemAlloc(&p, (1ull << 29) + 1), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(fakecuda_graph_mem(0, 0, 0) == 0);
	CHECK(free_now() == (1ull << 30));
}

/* Every name added for physical accounting is found by cuGetProcAddress, as the exported function. */
static void test_gpa_physical(void)
{
	static const struct { const char *name; int ver; } n[] = {
		{ "cuDeviceSetMemPool", 11020 }, { "cuMemPoolTrimTo", 11020 }, { "cuMemPoolGetAttribute", 11020 },
		{ "cuMemPoolSetAttribute", 11020 }, { "cuDeviceGetGraphMemAttribute", 11040 },
		{ "cuDeviceSetGraphMemAttribute", 11040 }, { "cuDeviceGraphMemTrim", 11040 }, { "cuModuleLoad", 2000 },
		{ "cuModuleLoadData", 2000 }, { "cuModuleLoadDataEx", 2010 }, { "cuModuleLoadFatBinary", 2000 },
		{ "cuModuleUnload", 2000 }, { "cuLibraryLoadData", 12000 }, { "cuLibraryLoadFromFile", 12000 },
		{ "cuLibraryUnload", 12000 },
	};
	for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) {
		CUresult rc;
		CUdriverProcAddressQueryResult st;
		void *p = gpa2(n[i].name, 13000, 0, &rc, &st);
		CHECK(rc == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && p && p == fake_sym(n[i].name));
		p = gpa2(n[i].name, n[i].ver - 10, 0, &rc, &st);
		CHECK(rc == CUDA_ERROR_NOT_FOUND && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
		CHECK(fakecuda_calls(n[i].name) >= 0);
	}
}

/* Mode "footprint": FAKECUDA_CTX_BYTES=64M FAKECUDA_MODULE_BYTES=8M FAKECUDA_MEM=1G, 2 devices, no automatic
 * context. */
static int footprint_mode(void)
{
	const unsigned long long C = 64 * MiB, M = 8 * MiB, G = 1ull << 30;
	CUcontext p0, p0b, c1, c;
	CUmodule m1, m2, m3, m4, mx;
	CUlibrary l1, l2;
	CUdeviceptr a, b;
	CK(cuInit(0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == 0 && fakecuda_process_device_bytes(1) == 0);
	/* a primary context takes its footprint at its first retain, once */
	CK(cuDevicePrimaryCtxRetain(&p0, 0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == C);
	CK(cuDevicePrimaryCtxRetain(&p0b, 0), CUDA_SUCCESS);
	CHECK(p0b == p0 && fakecuda_process_device_bytes(0) == C);
	CK(cuCtxSetCurrent(p0), CUDA_SUCCESS);
	CHECK(free_now() == G - C);
	CHECK(fakecuda_used_bytes(0) == 0);                    /* footprints are not allocations */
	CK(cuMemAlloc(&a, MiB), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == C + MiB && fakecuda_used_bytes(0) == MiB && free_now() == G - C - MiB);
	/* modules: each load takes M on the current context's device */
	CK(cuModuleLoad(&m1, "kernels.cubin"), CUDA_SUCCESS);
	CK(cuModuleLoadData(&m2, "image"), CUDA_SUCCESS);
	CK(cuModuleLoadDataEx(&m3, "image", 0, NULL, NULL), CUDA_SUCCESS);
	CK(cuModuleLoadFatBinary(&m4, "fatbin"), CUDA_SUCCESS);
	CHECK(m1 && m2 && m3 && m4 && m1 != m2 && m3 != m4);
	CHECK(fakecuda_process_device_bytes(0) == C + MiB + 4 * M && free_now() == G - C - MiB - 4 * M);
	CK(cuModuleUnload(m2), CUDA_SUCCESS);
	CK(cuModuleUnload(m2), CUDA_ERROR_INVALID_HANDLE);
	CK(cuModuleUnload(NULL), CUDA_ERROR_INVALID_HANDLE);
	CHECK(fakecuda_process_device_bytes(0) == C + MiB + 3 * M);
	CK(cuModuleLoadData(NULL, "image"), CUDA_ERROR_INVALID_VALUE);
	CK(cuModuleLoadData(&mx, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK(fakecuda_calls("cuModuleLoadData") == 3);
	/* libraries: the current context's device; a library handle is not a module */
	CK(cuLibraryLoadData(&l1, "image", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
	CK(cuLibraryLoadFromFile(&l2, "kernels.cubin", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == C + MiB + 5 * M);
	CK(cuModuleUnload((CUmodule)l1), CUDA_ERROR_INVALID_HANDLE);
	CK(cuLibraryUnload((CUlibrary)m1), CUDA_ERROR_INVALID_HANDLE);
	CK(cuLibraryUnload(l1), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == C + MiB + 4 * M);
	/* pool reserve adds to the rest */
	CK(cuMemAllocAsync(&b, MiB, NULL), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == C + MiB + 4 * M + 2 * MiB && fakecuda_pool_reserved(0) == 2 * MiB);
	CHECK(fakecuda_used_bytes(0) == 2 * MiB);
	/* a created context on device 1: footprint, module and allocation go when it is destroyed */
	CK(cuCtxCreate(&c1, NULL, 0, 1), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(1) == C);
	CK(cuModuleLoadData(&mx, "image"), CUDA_SUCCESS);
	CK(cuMemAlloc(&a, MiB), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(1) == C + M + MiB && free_now() == G - C - M - MiB);
	CK(cuCtxDestroy(c1), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(1) == 0);
	CK(cuModuleUnload(mx), CUDA_ERROR_INVALID_HANDLE);     /* unloaded with its context */
	/* no room: context creation, primary retain and module load fail with OUT_OF_MEMORY and take nothing */
	CHECK(fakecuda_graph_mem(1, G - C + 1, 0) == 0);
	CK(cuCtxCreate(&c, NULL, 0, 1), CUDA_ERROR_OUT_OF_MEMORY);
	CK(cuDevicePrimaryCtxRetain(&c, 1), CUDA_ERROR_OUT_OF_MEMORY);
	int active = 1;
	unsigned flags;
	CK(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
	CHECK(active == 0);
	CHECK(fakecuda_graph_mem(1, G - C, 0) == 0);
	CK(cuCtxCreate(&c1, NULL, 0, 1), CUDA_SUCCESS);        /* exactly enough */
	CK(cuModuleLoadData(&mx, "image"), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(fakecuda_process_device_bytes(1) == G && free_now() == 0);
	CK(cuCtxDestroy(c1), CUDA_SUCCESS);
	CHECK(fakecuda_graph_mem(1, 0, 0) == 0);
	CK(cuCtxGetCurrent(&c), CUDA_SUCCESS);
	CHECK(c == p0);
	/* the primary's last release takes its footprint, modules, allocations and (threshold 0) pool reserve; the
	 * library stays */
	CK(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == C + MiB + 4 * M + 2 * MiB);
	CK(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == M && fakecuda_pool_reserved(0) == 0 && fakecuda_used_bytes(0) == 0);
	CK(cuModuleUnload(m1), CUDA_ERROR_INVALID_HANDLE);
	CK(cuLibraryUnload(l2), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == 0);
	/* a reset gives everything back; a primary still retained exists again at its next use */
	CK(cuDevicePrimaryCtxRetain(&p0, 0), CUDA_SUCCESS);
	CK(cuModuleLoadData(&m1, "image"), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == C + M);
	CK(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == 0 && free_now() == G - C);  /* cuMemGetInfo is a use */
	CHECK(fakecuda_process_device_bytes(0) == C);
	CK(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == 0);
	printf("# fakecuda selftest footprint: %s\n", failures ? "FAILED" : "ok");
	return failures;
}

/* Mode "autoctx-footprint": the automatic context is a primary retain, so it takes the footprint too. */
static int autoctx_footprint_mode(void)
{
	CK(cuInit(0), CUDA_SUCCESS);
	CHECK(fakecuda_process_device_bytes(0) == 64 * MiB);
	CHECK(free_now() == (1ull << 30) - 64 * MiB);
	printf("# fakecuda selftest autoctx-footprint: %s\n", failures ? "FAILED" : "ok");
	return failures;
}

/* Threads allocating at once: odd ones with cuMemAlloc, even ones from the default pool with a sync now and then
 * (pools, reserves and releases under the one lock). Each returns its own failure count. */
static void *hammer(void *arg)
{
	long bad = 0;
	int pooled = (int)(long)arg % 2 == 0;
	for (int i = 0; i < 2000; i++) {
		CUdeviceptr p;
		size_t sz = 1 + (size_t)i * 997;
		if (!pooled) {
			if (cuMemAlloc(&p, sz) != CUDA_SUCCESS) { bad++; continue; }
			if (cuMemFree(p) != CUDA_SUCCESS) bad++;
			continue;
		}
		if (cuMemAllocAsync(&p, sz, CU_STREAM_PER_THREAD) != CUDA_SUCCESS) { bad++; continue; }
		if (cuMemFreeAsync(p, CU_STREAM_PER_THREAD) != CUDA_SUCCESS) bad++;
		if (i % 64 == 0 && cuStreamSynchronize(CU_STREAM_PER_THREAD) != CUDA_SUCCESS) bad++;
	}
	return (void *)bad;
}

static void test_threads(void)
{
	pthread_t t[8];
	for (long i = 0; i < 8; i++) pthread_create(&t[i], NULL, hammer, (void *)i);
	long bad = 0;
	for (int i = 0; i < 8; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += (long)r;
	}
	CHECK(bad == 0);
	CHECK(fakecuda_used_bytes(0) == 0 && fakecuda_live_allocations(0) == 0);
	CK(cuCtxSynchronize(), CUDA_SUCCESS);
	CHECK(fakecuda_pool_reserved(0) == 0 && fakecuda_process_device_bytes(0) == 0);
}

static void test_fork_dead(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		CUdeviceptr p;
		_exit(cuMemAlloc(&p, 10) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int forkok_mode(void)
{
	CUdeviceptr p;
	CK(cuMemAlloc(&p, 4096), CUDA_SUCCESS);
	pid_t pid = fork();
	if (pid == 0) {
		int ok = fakecuda_used_bytes(0) == 0 && cuMemAlloc(&p, 10) == CUDA_SUCCESS && fakecuda_used_bytes(0) == 10;
		_exit(ok ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(fakecuda_used_bytes(0) == 4096);
	return failures;
}

static int gpa_identity_mode(void)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	PFN_cuGetProcAddress_v12000 g = (PFN_cuGetProcAddress_v12000)fake_sym("cuGetProcAddress_v2");
	CHECK(g != NULL);
	CK(g("cuMemAlloc", &p, 12000, 0, &st), CUDA_SUCCESS);
	CHECK(p == fake_sym("cuMemAlloc_v2"));
	CHECK(p != dlsym(RTLD_DEFAULT, "cuMemAlloc_v2")); /* the preloaded one wins globally */
	Dl_info di;
	CHECK(dladdr(p, &di) && di.dli_fname && strstr(di.dli_fname, "libcuda.so.1") != NULL);
	return failures;
}

/* Runs this program again in MODE with the given FAKECUDA_* settings; one check: it exits 0. */
static void run_mode(const char *self, const char *mode, const char *const *envs)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (; envs && envs[0]; envs += 2) {
			if (envs[1]) setenv(envs[0], envs[1], 1);
			else unsetenv(envs[0]);
		}
		execl("/proc/self/exe", self, mode, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		sub_mode = argv[1];
	if (argc > 1 && strcmp(argv[1], "footprint") == 0) return footprint_mode() != 0;
	if (argc > 1 && strcmp(argv[1], "autoctx-footprint") == 0) return autoctx_footprint_mode() != 0;
	if (argc > 1 && strcmp(argv[1], "forkok") == 0) {
		int f = forkok_mode();
		printf("# fakecuda selftest forkok: %s\n", f ? "FAILED" : "ok");
		return f != 0;
	}
	if (argc > 1 && strcmp(argv[1], "gpa-identity") == 0) {
		int f = gpa_identity_mode();
		printf("# fakecuda selftest gpa-identity: %s\n", f ? "FAILED" : "ok");
		return f != 0;
	}
	setenv("FAKECUDA_DEVICES", "2", 1);
	setenv("FAKECUDA_MEM", "1G", 1);
	setenv("FAKECUDA_FAIL", "cuMemAlloc_v2:3,cuMemCreate:1=800", 1);
	static const char *const others[] = { "FAKECUDA_FORK_OK", "FAKECUDA_AUTOCTX", "FAKECUDA_DRIVER_VERSION",
	                                      "FAKECUDA_UUID_BASE", "FAKECUDA_NULLMEM", "FAKECUDA_CTX_BYTES",
	                                      "FAKECUDA_MODULE_BYTES" };
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) unsetenv(others[i]);
	test_gpa();
	test_gpa_physical();
	test_alloc();
	test_vmm();
	test_streams();
	test_pools();
	test_graph_mem();
	test_threads();
	test_fork_dead();
	/* FAKECUDA_FORK_OK=1 in a fresh process */
	run_mode(argv[0], "forkok", (const char *const[]){ "FAKECUDA_FORK_OK", "1", "FAKECUDA_FAIL", NULL, NULL });
	/* footprints, which the checks above must not see */
	run_mode(argv[0], "footprint", (const char *const[]){ "FAKECUDA_FAIL", NULL, "FAKECUDA_CTX_BYTES", "64M",
	                                                     "FAKECUDA_MODULE_BYTES", "8M", "FAKECUDA_AUTOCTX", "0",
	                                                     NULL });
	run_mode(argv[0], "autoctx-footprint", (const char *const[]){ "FAKECUDA_FAIL", NULL, "FAKECUDA_CTX_BYTES", "64M",
	                                                             NULL });
		printf("%d passed, %d failed\n", checks - failures, failures);
	return failures != 0;
}
