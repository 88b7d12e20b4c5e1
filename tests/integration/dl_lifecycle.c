/* The dlsym route across the application's own dlopen/dlclose of libcuda.so.1, and a second copy of vramguard
 * dlopened before the first CUDA use. Not linked with libcuda: everything comes through dlopen + dlsym.
 *   dl_lifecycle cycles          5 x (dlopen, look up, allocate, dlclose); one allocation kept across the cycles
 *   dl_lifecycle copy PATH       PATH (a copy of libvramguard.so) dlopened RTLD_GLOBAL first; the first CUDA call
 *                                goes through the copy; the preloaded library still enforces, once; dlclose(copy)
 * The quota is NVIDIA_GPU_MEMORY_LIMITS=4096. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include "tests/integration/itest.h"

struct api {
	PFN_cuInit_v2000 init;
	PFN_cuMemAlloc_v3020 alloc;
	PFN_cuMemFree_v3020 free;
	PFN_cuMemGetInfo_v3020 info;
	PFN_cuGetProcAddress_v12000 gpa;
};

static int lookup(void *h, struct api *a)
{
	a->init = (PFN_cuInit_v2000)dlsym(h, "cuInit");
	a->alloc = (PFN_cuMemAlloc_v3020)dlsym(h, "cuMemAlloc_v2");
	a->free = (PFN_cuMemFree_v3020)dlsym(h, "cuMemFree_v2");
	a->info = (PFN_cuMemGetInfo_v3020)dlsym(h, "cuMemGetInfo_v2");
	a->gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
	return a->init && a->alloc && a->free && a->info && a->gpa;
}

static const char *module_of(void *fn)
{
	Dl_info di;
	if (!fn || !dladdr(fn, &di) || !di.dli_fname)
		return "?";
	const char *s = strrchr(di.dli_fname, '/');
	return s ? s + 1 : di.dli_fname;
}

static size_t mem_free(const struct api *a)
{
	size_t f = 0, t = 0;
	a->info(&f, &t);
	return f;
}

static void t_cycles(void)
{
	CUdeviceptr kept = 0;
	int cycles = 5, good = 0;
	for (int i = 0; i < cycles; i++) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | (i % 2 ? RTLD_GLOBAL : RTLD_LOCAL));
		struct api a;
		if (!h || !lookup(h, &a)) {
			IT_CHECK(0, "cycle %d: dlopen and dlsym (%s)", i, dlerror());
			return;
		}
		int ok = !strcmp(module_of((void *)a.alloc), "libvramguard.so") &&
			 !strcmp(module_of((void *)a.info), "libvramguard.so");
		void *fn = NULL;
		CUdriverProcAddressQueryResult st;
		ok &= a.gpa("cuMemAlloc", &fn, 12000, 0, &st) == CUDA_SUCCESS && fn == (void *)a.alloc;
		ok &= a.init(0) == CUDA_SUCCESS;
		size_t want = 4 * GiB - (kept ? 512 * MiB : 0);
		ok &= mem_free(&a) == want;
		if (!kept)
			ok &= a.alloc(&kept, 512 * MiB) == CUDA_SUCCESS;
		CUdeviceptr p, x;
		ok &= a.alloc(&p, 3 * GiB) == CUDA_SUCCESS;
		ok &= a.alloc(&x, GiB) == CUDA_ERROR_OUT_OF_MEMORY;
		ok &= mem_free(&a) == 512 * MiB;
		ok &= a.free(p) == CUDA_SUCCESS;
		ok &= mem_free(&a) == 3584 * MiB;
		ok &= dlclose(h) == 0;
		good += ok;
		if (!ok)
			printf("# cycle %d failed (alloc in %s)\n", i, module_of((void *)a.alloc));
	}
	IT_CHECK(good == cycles, "%d of %d dlopen/dlclose cycles: wrappers from dlsym and cuGetProcAddress, quota "
		 "enforced, a 512 MiB allocation kept charged across dlclose", good, cycles);
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	struct api a;
	if (h && lookup(h, &a)) {
		IT_RC(a.free(kept), CUDA_SUCCESS);
		IT_CHECK(mem_free(&a) == 4 * GiB, "after the last cycle: everything returned (free %zu)", mem_free(&a));
		dlclose(h);
	}
}

static void t_copy(const char *path)
{
	void *copy = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	IT_CHECK(copy != NULL, "dlopen the copy RTLD_GLOBAL before any CUDA use (%s)", copy ? "" : dlerror());
	if (!copy)
		return;
	struct api c, m;
	IT_CHECK(lookup(copy, &c), "the copy exports the entry points");
	IT_RC(c.init(0), CUDA_SUCCESS);         /* the first CUDA call of the process goes through the copy */
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	IT_CHECK(cuda && lookup(cuda, &m), "dlopen libcuda.so.1 and look up");
	if (!cuda)
		return;
	IT_CHECK(!strcmp(module_of((void *)m.alloc), "libvramguard.so") && m.alloc != c.alloc,
		 "dlsym on libcuda gives the preloaded library's wrapper, not the copy's");
	CUdeviceptr a, b, x;
	IT_RC(m.alloc(&a, 3 * GiB), CUDA_SUCCESS);
	IT_RC(m.alloc(&x, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(c.alloc(&b, 256 * MiB), CUDA_SUCCESS);    /* the copy is passive: a pass-through, not counted again */
	IT_CHECK(mem_free(&m) == GiB, "charged once, by the preloaded library (free %zu)", mem_free(&m));
	IT_RC(c.free(b), CUDA_SUCCESS);
	IT_CHECK(dlclose(copy) == 0, "dlclose the copy");
	IT_RC(m.alloc(&b, 512 * MiB), CUDA_SUCCESS);
	IT_RC(m.alloc(&x, 1 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	IT_RC(m.free(b), CUDA_SUCCESS);
	IT_RC(m.free(a), CUDA_SUCCESS);
	IT_CHECK(mem_free(&m) == 4 * GiB, "after dlclose of the copy: enforced and back to zero (free %zu)", mem_free(&m));
	fflush(stdout);
	pid_t pid = fork();     /* the copy's code is gone: nothing of it may be left in the fork handlers */
	if (pid == 0)
		_exit(0);
	int st = 0;
	waitpid(pid, &st, 0);
	IT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork after dlclose of the copy");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *t = argc > 1 ? argv[1] : "";
	if (!strcmp(t, "cycles"))
		t_cycles();
	else if (!strcmp(t, "copy") && argc > 2)
		t_copy(argv[2]);
	else {
		printf("not ok %d - usage: dl_lifecycle cycles | dl_lifecycle copy PATH\n", ++it_seq);
		return 2;
	}
	return it_failed;
}
