/* The dlopen routes, as JAX/XLA, cuBLAS and every cudart take them: dlopen("libcuda.so.1") + dlsym, and cudart's
 * exact cuGetProcAddress pattern. Not linked with libcuda: everything comes through dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include <cudaTypedefs.h>

#include "tests/integration/itest.h"

/* dlsym as an old binary imports it (pip's libcudart.so.13 references dlsym@GLIBC_2.2.5) and as a new one does. */
#if defined(__x86_64__)
__asm__(".symver dlsym_old, dlsym@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver dlsym_old, dlsym@GLIBC_2.17");
#endif
extern void *dlsym_old(void *, const char *);

static void *cuda;
static PFN_cuMemGetInfo_v3020 get_info;

static size_t mem_free(void)
{
	size_t f = 0, t = 0;
	get_info(&f, &t);
	return f;
}

static int in_vramguard(void *fn)
{
	Dl_info di;
	return fn && dladdr(fn, &di) && di.dli_fname && strstr(di.dli_fname, "libvramguard") != NULL;
}

int main(void)
{
	cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	IT_CHECK(cuda != NULL, "dlopen libcuda.so.1 (the test double)");
	if (!cuda)
		return 1;
	PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(cuda, "cuInit");
	PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)dlsym(cuda, "cuMemAlloc_v2");
	PFN_cuMemFree_v3020 mfree = (PFN_cuMemFree_v3020)dlsym(cuda, "cuMemFree_v2");
	get_info = (PFN_cuMemGetInfo_v3020)dlsym(cuda, "cuMemGetInfo_v2");
	IT_CHECK(in_vramguard((void *)alloc) && in_vramguard((void *)get_info),
		 "handle-scoped dlsym of a wrapped name returns vramguard's wrapper");
	IT_CHECK(!in_vramguard(dlsym(cuda, "cuDeviceGetName")), "dlsym of an unwrapped cu* name returns the driver's");
	IT_CHECK(dlsym(cuda, "cuNoSuchFunction") == NULL && dlerror() != NULL, "unknown names still fail with dlerror");
	IT_CHECK(in_vramguard(dlsym_old(cuda, "cuMemAlloc_v2")), "dlsym@GLIBC_2.2.5 callers reach the wrapper too");
	IT_RC(init(0), CUDA_SUCCESS);

	CUdeviceptr a, b;
	IT_RC(alloc(&a, 3 * GiB), CUDA_SUCCESS);
	IT_RC(alloc(&b, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_CHECK(mem_free() == GiB, "dlsym route: charged and virtualised (free %zu)", mem_free());

	/* cudart: dlsym("cuGetProcAddress_v2"), then ask it for "cuGetProcAddress" itself, then everything else
	 * through the pointer it got back. */
	PFN_cuGetProcAddress_v12000 gpa0 = (PFN_cuGetProcAddress_v12000)dlsym(cuda, "cuGetProcAddress_v2");
	IT_CHECK(in_vramguard((void *)gpa0), "dlsym(cuGetProcAddress_v2) is vramguard's");
	PFN_cuGetProcAddress_v12000 gpa = NULL;
	CUdriverProcAddressQueryResult st = -1;
	IT_RC(gpa0("cuGetProcAddress", (void **)&gpa, 12000, 0, &st), CUDA_SUCCESS);
	IT_CHECK(in_vramguard((void *)gpa) && st == CU_GET_PROC_ADDRESS_SUCCESS,
		 "GPA(\"cuGetProcAddress\", 12000) hands back vramguard's cuGetProcAddress_v2");
	PFN_cuGetProcAddress_v11030 gpa1 = NULL;
	IT_RC(gpa0("cuGetProcAddress", (void **)&gpa1, 11030, 0, &st), CUDA_SUCCESS);
	IT_CHECK(in_vramguard((void *)gpa1), "GPA(\"cuGetProcAddress\", 11030) hands back vramguard's v1");
	PFN_cuMemAlloc_v3020 alloc2 = NULL;
	IT_RC(gpa("cuMemAlloc", (void **)&alloc2, 3020, 0, &st), CUDA_SUCCESS);
	IT_CHECK(alloc2 == alloc, "GPA(\"cuMemAlloc\", 3020) is the cuMemAlloc_v2 wrapper");
	IT_RC(alloc2(&b, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	PFN_cuMemAlloc_v3020 alloc3 = NULL;
	IT_RC(gpa1("cuMemAlloc", (void **)&alloc3, 12000, 0), CUDA_SUCCESS);
	IT_CHECK(alloc3 == alloc, "v1 GPA(\"cuMemAlloc\", 12000) is the wrapper too");

	/* The driver's own answers are kept: versioned names, versions newer than the driver, unknown names. */
	void *p = (void *)0x1234;
	IT_RC(gpa("cuMemAlloc", &p, 99000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	IT_CHECK(p == (void *)0x1234, "a version newer than the driver leaves *pfn untouched");
	p = (void *)0x1234;
	IT_RC(gpa("cuMemAlloc_v2", &p, 12000, 0, &st), CUDA_SUCCESS);
	IT_CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "a versioned name is not found");
	IT_RC(gpa("cuNoSuchThing", &p, 12000, 0, &st), CUDA_ERROR_NOT_FOUND);

	/* Per-thread default stream: flags 2 must get the _ptsz wrapper, which calls the real _ptsz function. */
	long (*calls)(const char *) = (long (*)(const char *))dlsym(cuda, "fakecuda_calls");
	PFN_cuMemAllocAsync_v11020 aa = NULL, aa_pt = NULL;
	PFN_cuMemFreeAsync_v11020 fa_pt = NULL;
	IT_RC(gpa("cuMemAllocAsync", (void **)&aa, 11020, 0, &st), CUDA_SUCCESS);
	IT_RC(gpa("cuMemAllocAsync", (void **)&aa_pt, 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
	      CUDA_SUCCESS);
	IT_RC(gpa("cuMemFreeAsync", (void **)&fa_pt, 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
	      CUDA_SUCCESS);
	IT_CHECK(in_vramguard((void *)aa) && in_vramguard((void *)aa_pt) && aa != aa_pt,
		 "legacy and per-thread cuMemAllocAsync get different wrappers");
	long before = calls("cuMemAllocAsync_ptsz"), before_legacy = calls("cuMemAllocAsync");
	IT_RC(aa_pt(&b, 512 * MiB, NULL), CUDA_SUCCESS);
	IT_CHECK(calls("cuMemAllocAsync_ptsz") == before + 1 && calls("cuMemAllocAsync") == before_legacy,
		 "the _ptsz wrapper called the real _ptsz function");
	IT_CHECK(mem_free() == GiB / 2, "_ptsz allocation charged (free %zu)", mem_free());
	CUdeviceptr over;
	IT_RC(aa_pt(&over, GiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(fa_pt(b, NULL), CUDA_SUCCESS);
	IT_CHECK(calls("cuMemFreeAsync_ptsz") >= 1, "the _ptsz free called the real _ptsz function");

	/* Legacy 32-bit cuMemAlloc (cudaVersion 2000) is not wrapped: vramguard says so once (run.sh checks). */
	void *legacy = NULL;
	IT_RC(gpa("cuMemAlloc", &legacy, 2000, 0, &st), CUDA_SUCCESS);
	IT_CHECK(legacy && !in_vramguard(legacy), "GPA at 2000 gives the legacy entry point (unwrapped)");

	IT_RC(mfree(a), CUDA_SUCCESS);
	IT_CHECK(mem_free() == 4 * GiB, "back to zero (free %zu)", mem_free());
	return it_failed;
}
