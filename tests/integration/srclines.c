/* Call sites with known source lines for `vramguard report --lines` (tests/sections/lines.sh): an allocation in a
 * function that is always inlined into its caller, one in an ordinary function, and one in a library without a
 * build ID (noid/lib.c). Built with -g like every test program; lines.sh finds the expected lines in this file by
 * the markers in the comments, so edit freely. */
#include "tests/integration/itest.h"

CUresult vgnoid_alloc(CUdeviceptr *p);  /* tests/integration/noid/lib.c */

#define NOINLINE __attribute__((noinline))

static CUdeviceptr kept[3];

static inline __attribute__((always_inline)) CUresult inlined_alloc(CUdeviceptr *p)
{
	return cuMemAlloc_v2(p, 16 * MiB);      /* line: inlined_alloc */
}

static NOINLINE CUresult keeps_inlined(void)
{
	CUresult rc = inlined_alloc(&kept[0]);  /* line: keeps_inlined */
	__asm__ volatile("" ::: "memory");      /* keep the calls from being tail calls */
	return rc;
}

static NOINLINE CUresult plain_alloc(void)
{
	CUresult rc = cuMemAlloc_v2(&kept[1], 8 * MiB);        /* line: plain_alloc */
	__asm__ volatile("" ::: "memory");
	return rc;
}

int main(void)
{
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(keeps_inlined(), CUDA_SUCCESS);
	IT_RC(plain_alloc(), CUDA_SUCCESS);
	IT_RC(vgnoid_alloc(&kept[2]), CUDA_SUCCESS);
	return it_failed;
}
