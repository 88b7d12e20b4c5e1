/* A shared library that the ctor test program links: its constructor uses CUDA before main, and possibly before
 * vramguard's own constructor has run. What it saw is kept for the program to check. */
#include <stddef.h>

#include <cuda.h>

CUresult vgctor_lib_init = -1, vgctor_lib_keep = -1, vgctor_lib_over = -1;
CUdeviceptr vgctor_lib_ptr;
size_t vgctor_lib_free = 0;

__attribute__((constructor)) static void vgctor_lib_ctor(void)
{
	CUdeviceptr x;
	size_t t = 0;
	vgctor_lib_init = cuInit(0);
	vgctor_lib_keep = cuMemAlloc_v2(&vgctor_lib_ptr, 512ull << 20);
	vgctor_lib_over = cuMemAlloc_v2(&x, 2048ull << 20);        /* 512 MiB + 2 GiB > a 2 GiB quota */
	cuMemGetInfo_v2(&vgctor_lib_free, &t);
}
