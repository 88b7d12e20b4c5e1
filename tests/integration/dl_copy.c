/* A second copy of vramguard in one process (argv[1]: its path, dlopened late) stays passive: its wrappers pass
 * straight through, so nothing is enforced or counted twice. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <cudaTypedefs.h>

#include "tests/integration/itest.h"

int main(int argc, char **argv)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	void *copy = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
	IT_CHECK(cuda && copy, "dlopen libcuda.so.1 and the second copy");
	if (!cuda || !copy)
		return 1;
	PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(cuda, "cuInit");
	PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)dlsym(cuda, "cuMemAlloc_v2");
	PFN_cuMemGetInfo_v3020 info = (PFN_cuMemGetInfo_v3020)dlsym(cuda, "cuMemGetInfo_v2");
	PFN_cuInit_v2000 init2 = (PFN_cuInit_v2000)dlsym(copy, "cuInit");
	PFN_cuMemAlloc_v3020 alloc2 = (PFN_cuMemAlloc_v3020)dlsym(copy, "cuMemAlloc_v2");
	IT_CHECK(init2 && alloc2 && alloc2 != alloc, "the copy's own wrappers");
	IT_RC(init(0), CUDA_SUCCESS);
	IT_RC(init2(0), CUDA_SUCCESS);
	CUdeviceptr a, b;
	IT_RC(alloc(&a, 3 * GiB), CUDA_SUCCESS);
	IT_RC(alloc2(&b, 2 * GiB), CUDA_SUCCESS);   /* passive: not enforced by the copy */
	size_t f = 0, t = 0;
	info(&f, &t);
	IT_CHECK(f == GiB && t == 4 * GiB, "the first copy's accounting is untouched (free %zu)", f);
	return it_failed;
}
