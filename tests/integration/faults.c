/* Fault injection: every hook of interposer/hooks.h that the test double implements is driven through a scenario
 * while the double fails its Nth call (N = 1, 2, 3), once or from then on, with a realistic error code. After every
 * step vramguard's usage (cuMemGetInfo_v2 under the quota) must equal what the double holds; at the end each child
 * writes what its exit report must say (expect-PID.json), checked by tests/sections/reliability.sh.
 *   faults campaign DIR     run every (hook, N, once|persistent) in its own process, one line per hook
 *   faults one HOOK         one run; FAKECUDA_FAIL=HOOK:N[+]=CODE, FAULTS_DIR=DIR set by the campaign */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "interposer/hooks.h"   /* first: exact ABI names (cuMemAlloc_v2, ...) with their true types */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

static const char *const hook_names[] = {
#define X_NAME(name, ...) #name,
	VG_HOOKS(X_NAME)
#undef X_NAME
};
#define NHOOKS (sizeof(hook_names) / sizeof(hook_names[0]))

/* ---------------------------------------------------------------- one run */

static const char *H;           /* the hook under test */
static CUresult C;              /* the injected code */
static long FN;                 /* the Nth call fails ... */
static int FPLUS;               /* ... and every later one */
static uint64_t Q;              /* the quota, bytes */
static CUcontext probe_ctx, prim;
static long seen_faults;        /* calls of H that returned C */
static long charged;            /* successful charged allocations */
static long streams_ok, streams_destroyed, pending_destroyed;

static int is(const char *name) { return strcmp(H, name) == 0; }

/* The result of a call of `name`: success, or the injected code if name is the hook under test. */
static void rc_ok(const char *name, CUresult rc, const char *what)
{
	if (rc == CUDA_SUCCESS)
		return;
	if (strcmp(name, H) == 0 && rc == C) {
		seen_faults++;
		return;
	}
	IT_CHECK(0, "%s: %s -> %d: neither success nor the injected %d", what, name, (int)rc, (int)C);
}

/* vramguard's usage, seen through cuMemGetInfo_v2 in a context of its own: quota - free. */
static void balance(const char *what)
{
	size_t f = 0, t = 0;
	CUcontext x;
	cuCtxPushCurrent_v2(probe_ctx);
	CUresult rc = cuMemGetInfo_v2(&f, &t);
	cuCtxPopCurrent_v2(&x);
	unsigned long long used = fakecuda_used_bytes(0);
	if (rc != CUDA_SUCCESS) {
		rc_ok("cuMemGetInfo_v2", rc, what);
		return;
	}
	IT_CHECK(t == Q && f + used == Q, "%s: vramguard free %zu + driver used %llu == quota %llu (total %zu)", what, f,
		 used, (unsigned long long)Q, t);
}

/* ---- allocations of every kind, remembered until freed ---- */

enum kind { K_MEM, K_PITCH, K_MANAGED, K_ASYNC, K_ASYNC_PTSZ, K_POOL, K_POOL_PTSZ, K_VMM, K_ARRAY, K_ARRAY3D,
	    K_MIPMAP };
struct obj {
	enum kind kind;
	uint64_t key;           /* pointer, array handle or VMM handle */
	uint64_t bytes;
	CUcontext ctx;
	int refs, maps;         /* VMM */
	CUdeviceptr va;         /* VMM mapping */
	int live;
};
static struct obj objs[128];
static int nobjs;
static CUstream stream;
static CUmemoryPool pool;
static CUdeviceptr va_base;
static uint64_t va_next;

static const char *kind_api(enum kind k)
{
	static const char *const n[] = { "cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemAllocAsync",
					 "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
					 "cuMemAllocFromPoolAsync_ptsz", "cuMemCreate", "cuArrayCreate_v2",
					 "cuArray3DCreate_v2", "cuMipmappedArrayCreate" };
	return n[k];
}

/* Allocate about mib MiB of kind k; on success it is remembered. Checks that a failure charged nothing. */
static struct obj *alloc_kind(enum kind k, unsigned mib)
{
	unsigned long long before = fakecuda_used_bytes(0);
	struct obj o = { .kind = k, .bytes = (uint64_t)mib * MiB };
	CUresult rc;
	CUdeviceptr p = 0;
	CUcontext cur = NULL;
	cuCtxGetCurrent(&cur);
	o.ctx = cur;
	switch (k) {
	case K_MEM: rc = cuMemAlloc_v2(&p, o.bytes); break;
	case K_PITCH: {
		size_t pitch = 0;
		rc = cuMemAllocPitch_v2(&p, &pitch, 1000, (size_t)mib * 1024, 4);
		o.bytes = (uint64_t)pitch * mib * 1024;
		break;
	}
	case K_MANAGED: rc = cuMemAllocManaged(&p, o.bytes, CU_MEM_ATTACH_GLOBAL); break;
	case K_ASYNC: rc = cuMemAllocAsync(&p, o.bytes, stream); break;
	case K_ASYNC_PTSZ: rc = cuMemAllocAsync_ptsz(&p, o.bytes, stream); break;
	case K_POOL: rc = cuMemAllocFromPoolAsync(&p, o.bytes, pool, stream); break;
	case K_POOL_PTSZ: rc = cuMemAllocFromPoolAsync_ptsz(&p, o.bytes, pool, stream); break;
	case K_VMM: {
		CUmemAllocationProp pr;
		memset(&pr, 0, sizeof(pr));
		pr.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		pr.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		CUmemGenericAllocationHandle h = 0;
		o.bytes = (uint64_t)(mib + (mib & 1)) * MiB;      /* a multiple of the 2 MiB granularity */
		rc = cuMemCreate(&h, o.bytes, &pr, 0);
		p = h;
		o.refs = 1;
		break;
	}
	case K_ARRAY: {
		CUDA_ARRAY_DESCRIPTOR d = { .Width = 256, .Height = (size_t)mib * 1024, .Format = CU_AD_FORMAT_FLOAT,
					    .NumChannels = 1 };
		CUarray a = NULL;
		rc = cuArrayCreate_v2(&a, &d);
		p = (CUdeviceptr)(uintptr_t)a;
		break;
	}
	case K_ARRAY3D: {
		CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 256, .Height = 256, .Depth = (size_t)mib * 4,
					      .Format = CU_AD_FORMAT_HALF, .NumChannels = 2 };
		CUarray a = NULL;
		rc = cuArray3DCreate_v2(&a, &d);
		p = (CUdeviceptr)(uintptr_t)a;
		break;
	}
	default: {      /* K_MIPMAP: levels 1024^2 * mib/4 ... summed by both sides */
		CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 1024, .Height = 1024, .Depth = 0,
					      .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4 };
		CUmipmappedArray m = NULL;
		rc = cuMipmappedArrayCreate(&m, &d, 1 + mib % 8);
		p = (CUdeviceptr)(uintptr_t)m;
		break;
	}
	}
	char what[96];
	snprintf(what, sizeof(what), "%s #%d", kind_api(k), nobjs);
	rc_ok(kind_api(k), rc, what);
	unsigned long long after = fakecuda_used_bytes(0);
	if (rc != CUDA_SUCCESS) {
		IT_CHECK(after == before, "%s failed: the driver holds nothing more (%llu -> %llu)", what, before, after);
		balance(what);
		return NULL;
	}
	o.bytes = after - before;       /* arrays: the estimate, equal on both sides */
	o.key = p;
	o.live = 1;
	charged++;
	objs[nobjs] = o;
	balance(what);
	return &objs[nobjs++];
}

/* Free one object with its own entry point (VMM: releases and unmaps what is left). rc of the last call. */
static CUresult free_obj(struct obj *o)
{
	CUresult rc;
	const char *api;
	switch (o->kind) {
	case K_MEM: case K_PITCH: case K_MANAGED:
		api = "cuMemFree_v2";
		rc = cuMemFree_v2(o->key);
		break;
	case K_ASYNC: case K_POOL:
		api = "cuMemFreeAsync";
		rc = cuMemFreeAsync(o->key, stream);
		break;
	case K_ASYNC_PTSZ: case K_POOL_PTSZ:
		api = "cuMemFreeAsync_ptsz";
		rc = cuMemFreeAsync_ptsz(o->key, stream);
		break;
	case K_ARRAY: case K_ARRAY3D:
		api = "cuArrayDestroy";
		rc = cuArrayDestroy((CUarray)(uintptr_t)o->key);
		break;
	case K_MIPMAP:
		api = "cuMipmappedArrayDestroy";
		rc = cuMipmappedArrayDestroy((CUmipmappedArray)(uintptr_t)o->key);
		break;
	default:
		rc = CUDA_SUCCESS;
		api = "cuMemRelease";
		while (o->refs > 0 && (rc = cuMemRelease(o->key)) == CUDA_SUCCESS)
			o->refs--;
		if (rc == CUDA_SUCCESS && o->maps) {
			api = "cuMemUnmap";
			if ((rc = cuMemUnmap(o->va, o->bytes)) == CUDA_SUCCESS)
				o->maps = 0;
		}
		break;
	}
	rc_ok(api, rc, "free");
	if (rc == CUDA_SUCCESS)
		o->live = 0;
	return rc;
}

/* Free with up to 3 tries; between tries the record must still be charged (it came back). */
static void free_retry(struct obj *o)
{
	unsigned long long before = fakecuda_used_bytes(0);
	for (int t = 0; t < 3 && o->live; t++) {
		if (free_obj(o) == CUDA_SUCCESS)
			break;
		IT_CHECK(fakecuda_used_bytes(0) == before || o->kind == K_VMM,
			 "a refused free leaves the driver's memory (%llu)", fakecuda_used_bytes(0));
		balance("after a refused free: the record is back");
	}
	balance(o->live ? "after giving up the free" : "after the free");
}

static void free_all(void)
{
	for (int i = 0; i < nobjs; i++)
		if (objs[i].live)
			free_retry(&objs[i]);
}

/* Mark objects the driver dropped with a context (they answer INVALID_VALUE to a free now). */
static void forget_ctx_objs(CUcontext c)
{
	for (int i = 0; i < nobjs; i++)
		if (objs[i].live && objs[i].ctx == c && objs[i].kind != K_VMM)
			objs[i].live = 0;
}

/* ---- scenarios, one per hook family ---- */

static const enum kind alloc_kinds[] = { K_MEM, K_PITCH, K_MANAGED, K_ASYNC, K_ASYNC_PTSZ, K_POOL, K_POOL_PTSZ,
					 K_VMM, K_ARRAY, K_ARRAY3D, K_MIPMAP };

/* A mixed background: one of each kind, freed at the end. */
static void mixed(unsigned mib)
{
	for (size_t i = 0; i < sizeof(alloc_kinds) / sizeof(alloc_kinds[0]); i++)
		alloc_kind(alloc_kinds[i], mib);
}

static void sc_alloc(enum kind k)
{
	for (unsigned i = 1; i <= 5; i++)
		alloc_kind(k, 16 * i);
	free_all();
}

static void sc_free(enum kind k1, enum kind k2)
{
	for (unsigned i = 1; i <= 5; i++)
		alloc_kind(i & 1 ? k1 : k2, 8 * i);
	free_all();
}

static void vmm_map(struct obj *o)
{
	o->va = va_base + va_next;
	CUresult rc = cuMemMap(o->va, o->bytes, 0, o->key, 0);
	rc_ok("cuMemMap", rc, "cuMemMap");
	if (rc == CUDA_SUCCESS) {
		o->maps = 1;
		va_next += o->bytes;
	}
	balance("after cuMemMap");
}

static void sc_vmm_release(void)
{
	/* NCCL order on odd ones (map, retain, unmap, release, release), plain release on even ones. */
	for (unsigned i = 1; i <= 5; i++) {
		struct obj *o = alloc_kind(K_VMM, 4 * i);
		if (!o || !(i & 1))
			continue;
		vmm_map(o);
		CUmemGenericAllocationHandle h2;
		if (o->maps && cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)o->va) == CUDA_SUCCESS)
			o->refs++;
		if (o->maps && cuMemUnmap(o->va, o->bytes) == CUDA_SUCCESS)
			o->maps = 0;
		balance("NCCL order: unmapped, still referenced");
	}
	free_all();
}

static void sc_vmm_retain(void)
{
	struct obj *o = alloc_kind(K_VMM, 64);
	if (!o)
		return;
	vmm_map(o);
	for (int i = 0; i < 5 && o->maps; i++) {
		CUmemGenericAllocationHandle h2 = 0;
		CUresult rc = cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)o->va);
		rc_ok("cuMemRetainAllocationHandle", rc, "retain");
		if (rc == CUDA_SUCCESS) {
			IT_CHECK(h2 == o->key, "retain returns the handle");
			o->refs++;
		}
		balance("after a retain");
	}
	if (o->maps && cuMemUnmap(o->va, o->bytes) == CUDA_SUCCESS)
		o->maps = 0;
	while (o->refs > 0) {
		IT_RC(cuMemRelease(o->key), CUDA_SUCCESS);
		o->refs--;
		balance(o->refs ? "released, references left" : "last reference released");
	}
	o->live = 0;
	free_all();
}

static void sc_vmm_map(void)
{
	for (unsigned i = 1; i <= 5; i++) {
		struct obj *o = alloc_kind(K_VMM, 2 * i);
		if (o)
			vmm_map(o);
	}
	/* Expandable-segment order: release while mapped (kept alive by the mapping), unmap later. */
	for (int i = 0; i < nobjs; i++) {
		struct obj *o = &objs[i];
		if (o->live && cuMemRelease(o->key) == CUDA_SUCCESS)
			o->refs = 0;
		balance(o->maps ? "released while mapped: still charged" : "released unmapped: uncharged");
		if (!o->maps)
			o->live = 0;
	}
	free_all();
}

static void sc_vmm_unmap(void)
{
	for (unsigned i = 1; i <= 5; i++) {
		struct obj *o = alloc_kind(K_VMM, 2 * i);
		if (!o)
			continue;
		vmm_map(o);
		if (cuMemRelease(o->key) == CUDA_SUCCESS)
			o->refs = 0;
	}
	free_all();
}

static void sc_meminfo(void)
{
	for (unsigned i = 1; i <= 3; i++) {
		alloc_kind(K_MEM, 8 * i);
		balance("extra probe");
	}
	free_all();
}

static void sc_totalmem(void)
{
	for (int i = 0; i < 5; i++) {
		size_t tot = 0;
		CUresult rc = cuDeviceTotalMem_v2(&tot, 0);
		rc_ok("cuDeviceTotalMem_v2", rc, "cuDeviceTotalMem_v2");
		if (rc == CUDA_SUCCESS)
			IT_CHECK(tot == Q, "cuDeviceTotalMem_v2 #%d reports the quota (%zu)", i, tot);
		alloc_kind(K_MEM, 8 + i);
		CUdeviceptr x;
		unsigned long long before = fakecuda_used_bytes(0);
		CUresult big = cuMemAlloc_v2(&x, Q + MiB);
		IT_CHECK(big == CUDA_ERROR_OUT_OF_MEMORY && fakecuda_used_bytes(0) == before,
			 "#%d: an allocation over the quota is denied (rc %d, driver used %llu -> %llu)", i, (int)big,
			 before, fakecuda_used_bytes(0));
		if (big == CUDA_SUCCESS)
			cuMemFree_v2(x);
	}
	free_all();
}

static void sc_init(void)
{
	for (int i = 0; i < 5; i++) {
		rc_ok("cuInit", cuInit(0), "cuInit");
		alloc_kind(alloc_kinds[i * 2], 8);
	}
	free_all();
}

static void sc_gpa(int v2)
{
	for (int i = 0; i < 5; i++) {
		void *fn = NULL;
		CUdriverProcAddressQueryResult st;
		CUresult rc = v2 ? cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &st)
				 : cuGetProcAddress("cuMemAlloc", &fn, 12000, 0);
		rc_ok(H, rc, "lookup");
		if (rc != CUDA_SUCCESS)
			continue;
		IT_CHECK(fn == (void *)&cuMemAlloc_v2, "the lookup of cuMemAlloc gives vramguard's cuMemAlloc_v2");
		CUdeviceptr p;
		unsigned long long before = fakecuda_used_bytes(0);
		if (fn && ((PFN_cuMemAlloc_v3020)fn)(&p, 8 * MiB) == CUDA_SUCCESS) {
			charged++;
			objs[nobjs++] = (struct obj){ .kind = K_MEM, .key = p, .bytes = fakecuda_used_bytes(0) - before,
						      .live = 1 };
		}
		balance("allocated through the looked-up pointer");
	}
	free_all();
}

static void sc_ctx_destroy(int v2)
{
	for (int i = 0; i < 5; i++) {
		CUcontext c, x;
		IT_RC(cuCtxCreate_v4(&c, NULL, 0, 0), CUDA_SUCCESS);
		alloc_kind(K_MEM, 8);
		alloc_kind(K_ARRAY, 4);
		cuCtxPopCurrent_v2(&x);
		CUresult rc = CUDA_ERROR_UNKNOWN;
		for (int t = 0; t < 3; t++) {
			rc = v2 ? cuCtxDestroy_v2(c) : cuCtxDestroy(c);
			rc_ok(H, rc, "context destroy");
			if (rc == CUDA_SUCCESS)
				break;
			balance("a refused context destroy: still charged");
		}
		if (rc == CUDA_SUCCESS) {
			forget_ctx_objs(c);
			balance("context destroyed: its allocations uncharged");
		} else {
			cuCtxPushCurrent_v2(c);
			free_all();
			cuCtxPopCurrent_v2(&x);
		}
	}
}

/* The primary context holds one reference from setup; a cycle retains once and releases twice (to zero). */
static void sc_primary_release(int v2)
{
	int refs = 1;
	for (int i = 0; i < 5; i++) {
		CUcontext c;
		IT_RC(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
		refs++;
		alloc_kind(K_MEM, 8);
		alloc_kind(K_MANAGED, 4);
		for (int r = 0; r < 2; r++) {
			CUresult rc = v2 ? cuDevicePrimaryCtxRelease_v2(0) : cuDevicePrimaryCtxRelease(0);
			rc_ok(H, rc, "primary release");
			if (rc == CUDA_SUCCESS)
				refs--;
			unsigned fl;
			int active = 1;
			cuDevicePrimaryCtxGetState(0, &fl, &active);
			if (!active) {
				forget_ctx_objs(prim);
				refs = 0;
			}
			balance(active ? "primary still referenced" : "primary released to zero: uncharged");
		}
		while (refs < 1) {
			IT_RC(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
			refs++;
		}
	}
	free_all();
}

static void sc_primary_reset(int v2)
{
	for (int i = 0; i < 5; i++) {
		alloc_kind(K_MEM, 8);
		alloc_kind(K_ARRAY3D, 2);
		CUresult rc = CUDA_ERROR_UNKNOWN;
		for (int t = 0; t < 3; t++) {
			rc = v2 ? cuDevicePrimaryCtxReset_v2(0) : cuDevicePrimaryCtxReset(0);
			rc_ok(H, rc, "primary reset");
			if (rc == CUDA_SUCCESS)
				break;
			balance("a refused reset: still charged");
		}
		if (rc == CUDA_SUCCESS)
			forget_ctx_objs(prim);
		balance(rc == CUDA_SUCCESS ? "primary reset: uncharged" : "reset refused three times");
	}
	free_all();
}

static void destroy_stream(CUstream s, int pending, int retries)
{
	CUresult rc = CUDA_ERROR_UNKNOWN;
	for (int t = 0; t < retries; t++) {
		rc = is("cuStreamDestroy") ? cuStreamDestroy(s) : cuStreamDestroy_v2(s);
		rc_ok(is("cuStreamDestroy") ? "cuStreamDestroy" : "cuStreamDestroy_v2", rc, "stream destroy");
		if (rc == CUDA_SUCCESS)
			break;
	}
	if (rc == CUDA_SUCCESS) {
		streams_destroyed++;
		pending_destroyed += pending;
	}
}

static void sc_streams(void)
{
	CUstream s[5];
	int ok[5];
	for (int i = 0; i < 5; i++) {
		CUresult rc = is("cuStreamCreateWithPriority") ? cuStreamCreateWithPriority(&s[i], CU_STREAM_NON_BLOCKING, -1)
							       : cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING);
		rc_ok(is("cuStreamCreateWithPriority") ? "cuStreamCreateWithPriority" : "cuStreamCreate", rc, "create");
		ok[i] = rc == CUDA_SUCCESS;
		streams_ok += ok[i];
		if (ok[i] && i % 2 == 0)
			fakecuda_stream_set_pending(s[i], 1);
		alloc_kind(K_ASYNC, 4);
	}
	for (int i = 0; i < 5; i++)
		if (ok[i])
			destroy_stream(s[i], i % 2 == 0, 3);
	free_all();
}

/* Stream-ordered pools: create, configure, allocate through as the device's current pool, trim, destroy. */
static void sc_pools(void)
{
	CUmemPoolProps props;
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	for (int i = 0; i < 5; i++) {
		CUmemoryPool p = NULL;
		CUresult rc = cuMemPoolCreate(&p, &props);
		rc_ok("cuMemPoolCreate", rc, "pool create");
		balance("after a pool create");
		if (rc != CUDA_SUCCESS)
			continue;
		cuuint64_t thr = i & 1 ? UINT64_MAX : 0;
		rc_ok("cuMemPoolSetAttribute", cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr),
		      "threshold");
		rc = cuDeviceSetMemPool(0, p);
		rc_ok("cuDeviceSetMemPool", rc, "set the current pool");
		alloc_kind(K_ASYNC, 4 + i);
		free_all();
		rc_ok("cuMemPoolTrimTo", cuMemPoolTrimTo(p, 0), "trim");
		balance("after a trim");
		if (rc == CUDA_SUCCESS)
			for (int t = 0; t < 3; t++) {
				CUresult r2 = cuDeviceSetMemPool(0, pool);
				rc_ok("cuDeviceSetMemPool", r2, "the default pool current again");
				if (r2 == CUDA_SUCCESS)
					break;
			}
		for (int t = 0; t < 3; t++) {
			rc = cuMemPoolDestroy(p);
			rc_ok("cuMemPoolDestroy", rc, "pool destroy");
			if (rc == CUDA_SUCCESS)
				break;
		}
		balance("after a pool destroy");
	}
}

/* Graph memory (not counted under allocations counting) and its trim. */
static void sc_graph_trim(void)
{
	for (int i = 0; i < 5; i++) {
		fakecuda_graph_mem(0, (unsigned long long)(i + 1) * 8 * MiB, 0);
		alloc_kind(K_MEM, 4);
		rc_ok("cuDeviceGraphMemTrim", cuDeviceGraphMemTrim(0), "graph trim");
		balance("after a graph memory trim");
	}
	fakecuda_graph_mem(0, 0, 0);
	free_all();
}

/* Contexts made by the entry point under test: allocations in them, then destroyed. */
static void sc_ctx_create(void)
{
	for (int i = 0; i < 5; i++) {
		CUcontext c = NULL, x;
		CUresult rc;
		if (is("cuDevicePrimaryCtxRetain")) {
			rc = cuDevicePrimaryCtxRetain(&c, 0);
			rc_ok(H, rc, "primary retain");
			if (rc == CUDA_SUCCESS)
				IT_RC(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
			alloc_kind(K_MEM, 4);
			continue;
		}
		rc = is("cuCtxCreate_v2") ? cuCtxCreate_v2(&c, 0, 0)
		     : is("cuCtxCreate_v3") ? cuCtxCreate_v3(&c, NULL, 0, 0, 0) : cuCtxCreate_v4(&c, NULL, 0, 0);
		rc_ok(H, rc, "context create");
		if (rc != CUDA_SUCCESS)
			continue;
		alloc_kind(K_MEM, 4);
		cuCtxPopCurrent_v2(&x);
		IT_RC(cuCtxDestroy_v2(c), CUDA_SUCCESS);
		forget_ctx_objs(c);
		balance("a context made under test, destroyed with its allocations");
	}
	free_all();
}

/* Module and library loads (FAKECUDA_MODULE_BYTES is 0 here: nothing to charge either way). */
static void sc_modules(void)
{
	for (int i = 0; i < 5; i++) {
		CUmodule m = NULL;
		CUlibrary l = NULL;
		CUresult rc;
		int lib = !strncmp(H, "cuLibrary", 9);
		if (is("cuModuleLoad"))
			rc = cuModuleLoad(&m, "/nonexistent.cubin");
		else if (is("cuModuleLoadData"))
			rc = cuModuleLoadData(&m, "image");
		else if (is("cuModuleLoadDataEx"))
			rc = cuModuleLoadDataEx(&m, "image", 0, NULL, NULL);
		else if (is("cuModuleLoadFatBinary"))
			rc = cuModuleLoadFatBinary(&m, "image");
		else if (is("cuLibraryLoadData"))
			rc = cuLibraryLoadData(&l, "image", NULL, NULL, 0, NULL, NULL, 0);
		else
			rc = cuLibraryLoadFromFile(&l, "/nonexistent.fatbin", NULL, NULL, 0, NULL, NULL, 0);
		rc_ok(H, rc, "load");
		if (rc == CUDA_SUCCESS)
			IT_RC(lib ? cuLibraryUnload(l) : cuModuleUnload(m), CUDA_SUCCESS);
		alloc_kind(K_MEM, 4);
	}
	free_all();
}

/* The capture hooks: a capture begun (or refused), then a stream-ordered allocation on the stream: the graph's
 * during a capture (nothing charged, nothing counted), charged, counted and given back as usual otherwise. Through
 * dlsym: the exact ABI names (v1 and _ptsz take no mode; ToGraph takes a graph, which the double ignores). */
static CUresult begin_capture(void *fn, CUstream s)
{
	if (strstr(H, "ToGraph"))
		return ((CUresult(*)(CUstream, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
				     CUstreamCaptureMode))fn)(s, NULL, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED);
	if (strstr(H, "_v2"))
		return ((CUresult(*)(CUstream, CUstreamCaptureMode))fn)(s, CU_STREAM_CAPTURE_MODE_RELAXED);
	return ((CUresult(*)(CUstream))fn)(s);
}

static void sc_capture(void)
{
	CUstream s;
	IT_RC(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	streams_ok++;
	void *fn = dlsym(RTLD_DEFAULT, H);
	IT_CHECK(fn != NULL, "dlsym finds %s", H);
	for (int i = 0; fn && i < 3; i++) {
		CUresult rc = begin_capture(fn, s);
		rc_ok(H, rc, "begin capture");
		CUdeviceptr p;
		IT_RC(cuMemAllocAsync(&p, 64 * MiB, s), CUDA_SUCCESS);
		IT_RC(cuMemFreeAsync(p, s), CUDA_SUCCESS);
		if (rc == CUDA_SUCCESS) {
			CUgraph g;
			IT_RC(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
		} else {
			charged++;
		}
		balance(rc == CUDA_SUCCESS ? "capture: the graph's allocation charged nothing"
					   : "capture refused: the allocation charged and given back");
	}
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	streams_destroyed++;
}

/* The compute share's hooks (the campaign runs with VRAMGUARD_COMPUTE_LIMIT=100%: every launch measured, none
 * held): kernels of 100 us and graph launches through the exact ABI name, then the synchronizations; each call's
 * result is the driver's (success or the injected code), and an allocation between them balances as always. */
static CUresult launch_via(void *fn, CUstream s)
{
	CUfunction f = (CUfunction)(void *)"fault_kernel";
	if (strstr(H, "Graph"))
		return ((CUresult(*)(CUgraphExec, CUstream))fn)((CUgraphExec)(void *)"graph", s);
	if (strstr(H, "KernelEx")) {
		CUlaunchConfig cfg = { .gridDimX = 100, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
				       .blockDimZ = 1, .hStream = s };
		return ((CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))fn)(&cfg, f, NULL, NULL);
	}
	if (strstr(H, "Cooperative"))
		return ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				     CUstream, void **))fn)(f, 100, 1, 1, 1, 1, 1, 0, s, NULL);
	return ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			     CUstream, void **, void **))fn)(f, 100, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
}

static CUresult sync_via(void *fn, CUstream s)
{
	if (is("cuCtxSynchronize"))
		return ((CUresult(*)(void))fn)();
	if (is("cuCtxSynchronize_v2"))
		return ((CUresult(*)(CUcontext))fn)(prim);
	return ((CUresult(*)(CUstream))fn)(s);
}

static void sc_launch(void)
{
	CUstream s;
	IT_RC(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	streams_ok++;
	void *fn = dlsym(RTLD_DEFAULT, H);
	IT_CHECK(fn != NULL, "dlsym finds %s", H);
	int sync = strstr(H, "Synchronize") != NULL;
	for (int i = 0; fn && i < 3; i++) {
		CUresult rc = sync ? cuLaunchKernel((CUfunction)(void *)"k", 100, 1, 1, 1, 1, 1, 0, s, NULL, NULL)
				   : launch_via(fn, s);
		rc_ok(sync ? "cuLaunchKernel" : H, rc, "launch");
		if (sync)
			rc_ok(H, sync_via(fn, s), "synchronize");
		alloc_kind(K_MEM, 1);
		balance("a launch and an allocation: the allocation charged");
	}
	rc_ok("cuStreamSynchronize", cuStreamSynchronize(s), "the last synchronization");
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	streams_destroyed++;
	free_all();
}

/* cuStreamWaitEvent (_ptsz): a stream made to wait for another's event between launches and allocations. */
static void sc_wait_event(void)
{
	CUstream s;
	CUevent ev;
	IT_RC(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	streams_ok++;
	IT_RC(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
	void *fn = dlsym(RTLD_DEFAULT, H);
	IT_CHECK(fn != NULL, "dlsym finds %s", H);
	for (int i = 0; fn && i < 3; i++) {
		rc_ok("cuLaunchKernel", cuLaunchKernel((CUfunction)(void *)"k", 100, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
		      "launch");
		rc_ok("cuEventRecord", cuEventRecord(ev, NULL), "record");
		rc_ok(H, ((CUresult(*)(CUstream, CUevent, unsigned))fn)(s, ev, 0), "wait");
		alloc_kind(K_MEM, 1);
		balance("a cross-stream wait and an allocation: the allocation charged");
	}
	rc_ok("cuStreamSynchronize", cuStreamSynchronize(s), "the last synchronization");
	IT_RC(cuEventDestroy_v2(ev), CUDA_SUCCESS);
	IT_RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	streams_destroyed++;
	free_all();
}

static void run_one(void)
{
	if (strstr(H, "Alloc") && strncmp(H, "cuMemFree", 9) != 0 && !is("cuMemRetainAllocationHandle")) {
		static const char *const names[] = { "cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged",
						     "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
						     "cuMemAllocFromPoolAsync_ptsz" };
		for (int k = 0; k < 7; k++)
			if (is(names[k])) {
				mixed(2);
				sc_alloc((enum kind)k);
				return;
			}
	}
	if (is("cuMemCreate")) { mixed(2); sc_alloc(K_VMM); }
	else if (is("cuArrayCreate_v2")) { mixed(2); sc_alloc(K_ARRAY); }
	else if (is("cuArray3DCreate_v2")) { mixed(2); sc_alloc(K_ARRAY3D); }
	else if (is("cuMipmappedArrayCreate")) { mixed(2); sc_alloc(K_MIPMAP); }
	else if (is("cuMemFree_v2")) { sc_free(K_MEM, K_PITCH); sc_free(K_MANAGED, K_MEM); }
	else if (is("cuMemFreeAsync")) sc_free(K_ASYNC, K_POOL);
	else if (is("cuMemFreeAsync_ptsz")) sc_free(K_ASYNC_PTSZ, K_POOL_PTSZ);
	else if (is("cuArrayDestroy")) sc_free(K_ARRAY, K_ARRAY3D);
	else if (is("cuMipmappedArrayDestroy")) sc_free(K_MIPMAP, K_MIPMAP);
	else if (is("cuMemRelease")) sc_vmm_release();
	else if (is("cuMemRetainAllocationHandle")) sc_vmm_retain();
	else if (is("cuMemMap")) sc_vmm_map();
	else if (is("cuMemUnmap")) sc_vmm_unmap();
	else if (is("cuMemGetInfo_v2")) sc_meminfo();
	else if (is("cuDeviceTotalMem_v2")) sc_totalmem();
	else if (is("cuInit")) sc_init();
	else if (is("cuGetProcAddress")) sc_gpa(0);
	else if (is("cuGetProcAddress_v2")) sc_gpa(1);
	else if (is("cuCtxDestroy")) sc_ctx_destroy(0);
	else if (is("cuCtxDestroy_v2")) sc_ctx_destroy(1);
	else if (is("cuDevicePrimaryCtxRelease")) sc_primary_release(0);
	else if (is("cuDevicePrimaryCtxRelease_v2")) sc_primary_release(1);
	else if (is("cuDevicePrimaryCtxReset")) sc_primary_reset(0);
	else if (is("cuDevicePrimaryCtxReset_v2")) sc_primary_reset(1);
	else if (is("cuStreamCreate") || is("cuStreamCreateWithPriority")) sc_streams();
	else if (is("cuMemPoolCreate") || is("cuMemPoolDestroy") || is("cuMemPoolTrimTo") ||
		 is("cuMemPoolSetAttribute") || is("cuDeviceSetMemPool")) sc_pools();
	else if (is("cuDeviceGraphMemTrim")) sc_graph_trim();
	else if (!strncmp(H, "cuStreamBeginCapture", 20)) sc_capture();
	else if (!strncmp(H, "cuStreamWaitEvent", 17)) sc_wait_event();
	else if (!strncmp(H, "cuLaunch", 8) || !strncmp(H, "cuGraphLaunch", 13) || strstr(H, "Synchronize")) sc_launch();
	else if (is("cuDevicePrimaryCtxRetain") || !strncmp(H, "cuCtxCreate_v", 13)) sc_ctx_create();
	else if (!strncmp(H, "cuModuleLoad", 12) || !strncmp(H, "cuLibraryLoad", 13)) sc_modules();
	else if (is("cuStreamDestroy") || is("cuStreamDestroy_v2")) {
		CUstream s[5];
		for (int i = 0; i < 5; i++) {
			IT_RC(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
			streams_ok++;
			if (i % 2 == 0)
				fakecuda_stream_set_pending(s[i], 1);
		}
		for (int i = 0; i < 5; i++)
			destroy_stream(s[i], i % 2 == 0, 3);
	} else
		IT_CHECK(0, "no fault scenario for hook %s (add one to tests/integration/faults.c)", H);
}

/* Hooks vramguard itself calls (their Nth call may be vramguard's own, never seen by the application). */
static int called_internally(const char *h)
{
	return !strcmp(h, "cuDeviceTotalMem_v2") || !strcmp(h, "cuDevicePrimaryCtxRelease_v2") ||
	       !strcmp(h, "cuDevicePrimaryCtxRetain") ||
	       !strcmp(h, "cuMemFree_v2") || !strcmp(h, "cuStreamSynchronize");
}

static int one(const char *hook)
{
	alarm(30);              /* a hang is killed by SIGALRM and shows as this run's status */
	H = hook;
	const char *spec = getenv("FAKECUDA_FAIL"), *dir = getenv("FAULTS_DIR"),
		   *lim = getenv("NVIDIA_GPU_MEMORY_LIMITS");
	const char *colon = spec ? strchr(spec, ':') : NULL;
	if (!colon || !dir || !lim) {
		printf("not ok %d - faults one: FAKECUDA_FAIL, FAULTS_DIR and NVIDIA_GPU_MEMORY_LIMITS must be set\n", ++it_seq);
		return 2;
	}
	char *end;
	FN = strtol(colon + 1, &end, 10);
	FPLUS = *end == '+';
	const char *eq = strchr(colon, '=');
	C = eq ? (CUresult)strtol(eq + 1, NULL, 0) : CUDA_ERROR_OUT_OF_MEMORY;
	Q = strtoull(lim, NULL, 10) * MiB;

	/* Explicit contexts (FAKECUDA_AUTOCTX=0): a probe context for cuMemGetInfo_v2 under the primary one. */
	rc_ok("cuInit", cuInit(0), "setup cuInit");
	/* Made with entry points not under test (the ones under test may fail from their first call on). */
	IT_RC(is("cuCtxCreate_v4") ? cuCtxCreate_v2(&probe_ctx, 0, 0) : cuCtxCreate_v4(&probe_ctx, NULL, 0, 0),
	      CUDA_SUCCESS);
	if (is("cuDevicePrimaryCtxRetain") || is("cuCtxCreate_v2"))
		IT_RC(cuCtxCreate_v3(&prim, NULL, 0, 0, 0), CUDA_SUCCESS);
	else
		IT_RC(cuDevicePrimaryCtxRetain(&prim, 0), CUDA_SUCCESS);
	IT_RC(cuCtxPushCurrent_v2(prim), CUDA_SUCCESS);
	/* the main stream (never destroyed) is made by the stream creator that is not under test */
	IT_RC(is("cuStreamCreate") ? cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0)
				   : cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	IT_RC(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
	IT_RC(cuMemAddressReserve(&va_base, 4 * GiB, 0, 0, 0), CUDA_SUCCESS);
	streams_ok = 1;
	balance("start");

	run_one();

	free_all();
	balance("end");
	long calls = fakecuda_calls(H);
	long want = calls < FN ? 0 : FPLUS ? calls - FN + 1 : 1;
	if (called_internally(H))
		IT_CHECK(seen_faults <= want, "%s: %ld injected faults reached the application (the double failed %ld "
			 "calls, some vramguard's own)", H, seen_faults, want);
	else
		IT_CHECK(seen_faults == want, "%s: every injected fault reached the application with its code %d "
			 "(%ld of %ld)", H, (int)C, seen_faults, want);
	unsigned long long used = fakecuda_used_bytes(0);
	long live = fakecuda_live_allocations(0);
	long left = 0;
	for (int i = 0; i < nobjs; i++)
		left += objs[i].live;
	IT_CHECK(live == left, "the driver's live allocations are the ones the test still holds (%ld, %ld)", live, left);
	printf("# faults %ld\n", want);

	char path[4096];
	snprintf(path, sizeof(path), "%s/expect-%d.json", dir, (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f) {
		IT_CHECK(0, "write %s", path);
		return 1;
	}
	/* The main stream (never destroyed) is one created, live stream. */
	fprintf(f, "{\"pid\": %d, \"hook\": \"%s\", \"fail\": \"%s\", \"used\": %llu, \"live\": %ld, \"allocs\": %ld, "
		"\"quota\": %llu, \"streams_created\": %ld, \"streams_destroyed\": %ld, \"pending_destroyed\": %ld}\n",
		(int)getpid(), H, spec, used, live, charged, (unsigned long long)Q, streams_ok, streams_destroyed,
		pending_destroyed);
	fclose(f);
	return it_failed;
}

/* FAKECUDA_FAIL=cuDeviceTotalMem_v2:1: vramguard's first sizing of device 0 fails, during an allocation. The quota
 * (an absolute 1024 MiB, which needs no device size) must still hold, and the books must balance afterwards. */
static int sizing(void)
{
	Q = strtoull(getenv("NVIDIA_GPU_MEMORY_LIMITS"), NULL, 10) * MiB;
	H = "cuDeviceTotalMem_v2";
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuCtxCreate_v4(&probe_ctx, NULL, 0, 0), CUDA_SUCCESS);
	CUdeviceptr a, b, c;
	CUresult ra = cuMemAlloc_v2(&a, Q / 2);         /* the first use of device 0: its sizing fails */
	IT_CHECK(ra == CUDA_SUCCESS || ra == CUDA_ERROR_OUT_OF_MEMORY, "first allocation while sizing fails -> %d", ra);
	IT_RC(cuMemAlloc_v2(&b, Q / 2), CUDA_SUCCESS);
	balance("two halves of the quota allocated");
	if (ra == CUDA_SUCCESS)
		IT_RC(cuMemFree_v2(a), CUDA_SUCCESS);
	balance("one half freed");
	CUresult rc = cuMemAlloc_v2(&c, Q);
	IT_CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "a whole quota more is denied while half is held (rc %d, driver holds "
		 "%llu MiB of a %llu MiB quota)", (int)rc, fakecuda_used_bytes(0) / MiB, (unsigned long long)Q / MiB);
	IT_CHECK(fakecuda_peak_bytes(0) <= Q, "the driver never held more than the quota (peak %llu MiB)",
		 fakecuda_peak_bytes(0) / MiB);
	if (rc == CUDA_SUCCESS)
		cuMemFree_v2(c);
	cuMemFree_v2(b);
	return it_failed;
}

/* ---------------------------------------------------------------- the campaign */

struct run_result {
	int ok, bad, status;
	long faults;
	char first_bad[1024];
};

static void run_child(const char *self, const char *hook, long n, int plus, int code, const char *dir,
		      struct run_result *res)
{
	char spec[160];
	snprintf(spec, sizeof(spec), "%s:%ld%s=%d", hook, n, plus ? "+" : "", code);
	int p[2];
	memset(res, 0, sizeof(*res));
	if (pipe(p) != 0) {
		res->bad = 1;
		snprintf(res->first_bad, sizeof(res->first_bad), "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		char rep[4096];
		snprintf(rep, sizeof(rep), "%s/exit-%%p.json", dir);
		setenv("FAKECUDA_FAIL", spec, 1);
		setenv("FAKECUDA_AUTOCTX", "0", 1);
		setenv("FAULTS_DIR", dir, 1);
		setenv("VRAMGUARD_REPORT", rep, 1);
		setenv("VRAMGUARD_REPORT_FORMAT", "json", 1);
		setenv("VRAMGUARD_STREAM_CHECK", "warn", 1);
		execl(self, self, "one", hook, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	FILE *in = fdopen(p[0], "r");
	char line[2048];
	while (in && fgets(line, sizeof(line), in)) {
		const char *what;
		if (it_tap(line, "ok "))
			res->ok++;
		else if ((what = it_tap(line, "not ok "))) {
			if (res->bad++ == 0)
				snprintf(res->first_bad, sizeof(res->first_bad), "[%s] %.700s", spec, what);
		} else if (!strncmp(line, "# faults ", 9))
			res->faults = atol(line + 9);
	}
	if (in)
		fclose(in);
	waitpid(pid, &res->status, 0);
	if (!(WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0) && res->bad == 0) {
		res->bad = 1;
		snprintf(res->first_bad, sizeof(res->first_bad), "[%s] child status 0x%x\n", spec, res->status);
	}
}

static int campaign(const char *dir)
{
	/* out of memory, invalid value, not permitted (what cuMemCreate answers without VMM rights), unknown */
	static const int codes[] = { CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_PERMITTED,
				     CUDA_ERROR_UNKNOWN };
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 2;
	self[n] = '\0';
	long total_faults = 0, runs = 0, checks = 0, skipped = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t h = 0; h < NHOOKS; h++) {
		if (fakecuda_calls(hook_names[h]) < 0) {
			printf("# %s: not implemented by the test double, skipped\n", hook_names[h]);
			skipped++;
			continue;
		}
		long hf = 0;
		int hok = 0, hbad = 0, hruns = 0;
		char first[1024] = "", codes_used[64] = "";
		for (long N = 1; N <= 3; N++)
			for (int plus = 0; plus <= 1; plus++) {
				int code = codes[(h + (size_t)N * 2 + (size_t)plus) % 4];
				struct run_result r;
				run_child(self, hook_names[h], N, plus, code, dir, &r);
				hruns++;
				hok += r.ok;
				hf += r.faults;
				if (r.bad && hbad++ == 0)
					snprintf(first, sizeof(first), "%s", r.first_bad);
				char c[8];
				snprintf(c, sizeof(c), "%d,", code);
				if (!strstr(codes_used, c))
					strncat(codes_used, c, sizeof(codes_used) - strlen(codes_used) - 1);
			}
		codes_used[strlen(codes_used) ? strlen(codes_used) - 1 : 0] = '\0';
		runs += hruns;
		checks += hok;
		total_faults += hf;
		IT_CHECK(hbad == 0 && hf > 0, "%-29s %d runs (N=1,2,3 once and from then on; codes %s): %ld faults injected, "
			 "%d balance checks%s%s", hook_names[h], hruns, codes_used, hf, hok, hbad ? "; first failure: " : "",
			 hbad ? first : "");
		if (hbad)
			printf("#   %d failing runs for %s\n", hbad, hook_names[h]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	IT_CHECK(runs > 0 && skipped <= 1, "campaign: %ld faults injected in %ld runs over %zu hooks (%ld not in the "
		 "double), %ld checks passed, %.1f s", total_faults, runs, NHOOKS - (size_t)skipped, skipped, checks, secs);
	return it_failed;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[1], "campaign"))
		return campaign(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "sizing"))
		return sizing();
	if (argc > 2 && !strcmp(argv[1], "one"))
		return one(argv[2]);
	printf("not ok %d - usage: faults campaign DIR | faults one HOOK | faults sizing\n", ++it_seq);
	return 2;
}
