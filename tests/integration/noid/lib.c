/* A shared library linked without a build ID (-Wl,--build-id=none) that tests/integration/srclines.c calls: its
 * module in a report has build_id "", and `vramguard report --lines` must not guess its lines. */
#include <cuda.h>

CUresult vgnoid_alloc(CUdeviceptr *p);

__attribute__((noinline)) CUresult vgnoid_alloc(CUdeviceptr *p)
{
	CUresult rc = cuMemAlloc_v2(p, 4ull << 20);
	__asm__ volatile("" ::: "memory");      /* not a tail call: this frame stays on the stack */
	return rc;
}
