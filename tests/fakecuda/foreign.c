/* foreign.c - a stranger's libcuda.so.1 / libnvidia-ml.so.1 (built into build/tests/foreign/), for the suite's env
 * section (tests/sections/env.sh): what a CUDA image puts on LD_LIBRARY_PATH, the real driver's library on a machine
 * whose GPU is not there. It has none of the test double's functions (fakecuda_*), and what it has answers "no
 * device". A check that loads it instead of the double fails, which is how the section proves the suite's
 * environment is its own. Built twice: -DFOREIGN_NVML for libnvidia-ml.so.1. */
#ifdef FOREIGN_NVML
#define NVML_SUCCESS_ 0
#define NVML_ERROR_DRIVER_NOT_LOADED_ 9
int nvmlInit_v2(void);
int nvmlInit_v2(void)
{
	return NVML_ERROR_DRIVER_NOT_LOADED_;
}
int nvmlInit(void);
int nvmlInit(void)
{
	return NVML_ERROR_DRIVER_NOT_LOADED_;
}
#else
#include <cuda.h>

CUresult cuInit(unsigned int flags)
{
	(void)flags;
	return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *version)
{
	*version = 12040;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	*count = 0;
	return CUDA_ERROR_NOT_INITIALIZED;
}
#endif
