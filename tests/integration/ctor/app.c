/* CUDA from constructors: a linked library's (libvgctor.so) and the program's own, both before main. The quota
 * (NVIDIA_GPU_MEMORY_LIMITS=2048) must hold for them as for main. */
#include "tests/integration/itest.h"
#include "tests/fakecuda/fakecuda.h"

extern CUresult vgctor_lib_init, vgctor_lib_keep, vgctor_lib_over;
extern CUdeviceptr vgctor_lib_ptr;
extern size_t vgctor_lib_free;

static CUresult app_keep = -1, app_over = -1;
static CUdeviceptr app_ptr;
static size_t app_free;

__attribute__((constructor(101))) static void app_ctor(void)
{
	CUdeviceptr x;
	size_t t = 0;
	app_keep = cuMemAlloc_v2(&app_ptr, GiB);
	app_over = cuMemAlloc_v2(&x, GiB);                        /* 512 MiB + 1 GiB + 1 GiB > 2 GiB */
	cuMemGetInfo_v2(&app_free, &t);
}

int main(void)
{
	IT_CHECK(vgctor_lib_init == CUDA_SUCCESS && vgctor_lib_keep == CUDA_SUCCESS,
		 "library constructor: cuInit and 512 MiB (%d, %d)", (int)vgctor_lib_init, (int)vgctor_lib_keep);
	IT_CHECK(vgctor_lib_over == CUDA_ERROR_OUT_OF_MEMORY, "library constructor: 2 GiB more denied (%d)",
		 (int)vgctor_lib_over);
	IT_CHECK(vgctor_lib_free == 1536 * MiB, "library constructor: cuMemGetInfo_v2 free = quota - 512 MiB (%zu)",
		 vgctor_lib_free);
	IT_CHECK(app_keep == CUDA_SUCCESS && app_over == CUDA_ERROR_OUT_OF_MEMORY,
		 "program constructor: 1 GiB granted, 1 GiB more denied (%d, %d)", (int)app_keep, (int)app_over);
	IT_CHECK(app_free == 512 * MiB, "program constructor: free = 512 MiB (%zu)", app_free);
	IT_CHECK(fakecuda_peak_bytes(0) == 1536 * MiB, "the driver never held more than what was granted (peak %llu)",
		 fakecuda_peak_bytes(0));
	IT_RC(cuMemFree_v2(app_ptr), CUDA_SUCCESS);
	IT_RC(cuMemFree_v2(vgctor_lib_ptr), CUDA_SUCCESS);
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	IT_CHECK(f == 2 * GiB && t == 2 * GiB, "main: everything returned (free %zu of %zu)", f, t);
	return it_failed;
}
