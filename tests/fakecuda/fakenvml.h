/* fakenvml.h - test double of libnvidia-ml.so.1 (NVML) for vramguard's CPU tests; never installed.
 *
 * Build (soname libnvidia-ml.so.1, next to the fake libcuda.so.1, found the same way: LD_LIBRARY_PATH or rpath):
 *   cc -std=gnu11 -O1 -g -Wall -Wextra -fPIC -shared -pthread -Wl,-soname,libnvidia-ml.so.1 \
 *      -o build/tests/libnvidia-ml.so.1 tests/fakecuda/fakenvml.c -ldl
 * The Makefile also links build/tests/libnvidia-ml.so -> libnvidia-ml.so.1 (the name nvidia-smi dlopens) and builds
 * a second variant, build/tests/nvml-r580/libnvidia-ml.so.1, with -DFAKENVML_R580: a driver before R615, which does
 * not have nvmlDeviceGetMemoryLimits_v1 at all (dlsym finds nothing), as on our GPU machine's driver 580. A variant
 * rather than a variable: "the symbol is absent" is what callers must handle, and only a library without it tests
 * that.
 *
 * Implements nvmlInit_v2, nvmlInit, nvmlShutdown, nvmlErrorString, nvmlSystemGetDriverVersion,
 * nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByUUID, nvmlDeviceGetUUID,
 * nvmlDeviceGetMemoryInfo, nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetComputeRunningProcesses (v1, 16-byte entries),
 * _v2 and _v3 (24-byte entries), nvmlDeviceGetMemoryLimits_v1 (not in the R580 variant). Every device function but
 * nvmlErrorString returns NVML_ERROR_UNINITIALIZED (1) before nvmlInit or after the last nvmlShutdown.
 *
 * Devices are the fake libcuda's "physical" GPUs, numbered as NVML numbers them (PCI order, blind to
 * CUDA_VISIBLE_DEVICES): FAKECUDA_DEVICES + FAKECUDA_UUID_BASE of them. NVML index p has the UUID of fake CUDA device
 * p (fakecuda.h: "GPU-%08x-0000-0000-0000-%012x" with p) and is the fake libcuda's CUDA ordinal p - FAKECUDA_UUID_BASE
 * (indices below the base are GPUs this process's CUDA cannot see). Each has FAKECUDA_MEM bytes (default 16G).
 *
 * Memory: the fake has no other processes. A device's usage is this process's (below) plus FAKENVML_RESERVED_MIB
 * (32 MiB) of "system reserved" memory: nvmlDeviceGetMemoryInfo gives total = FAKECUDA_MEM, used = process + reserved,
 * free = total - used; _v2 the same with reserved = 32 MiB (as the real one, used includes reserved). _v2 checks
 * version == nvmlMemory_v2 (NVML_ERROR_ARGUMENT_VERSION_MISMATCH otherwise).
 *
 * This process's usage of a device (its only "running process"): fakecuda_process_device_bytes(ordinal) of the fake
 * libcuda if it has that function, else fakecuda_used_bytes(ordinal); each looked up with dlsym(RTLD_DEFAULT), then
 * on dlopen("libcuda.so.1", RTLD_NOLOAD) (a libcuda dlopened RTLD_LOCAL). If neither exists (no fake libcuda in the
 * process), the usage is 0 and the process is not listed. Otherwise the process lists getpid() with that usage on
 * every device its CUDA can see, after FAKENVML_EXTRA_PROCS other processes.
 *
 * Environment (read at every call, so a test may change it between calls):
 *   FAKENVML_HIDE_SELF=1          this process is not in the process lists (a PID namespace NVML cannot translate:
 *                                 the real driver then lists host PIDs the process cannot match)
 *   FAKENVML_EXTRA_PROCS=N        N other processes (PIDs 4000000 + i, 1 MiB each) listed before this one on every
 *                                 device, so callers meet NVML_ERROR_INSUFFICIENT_SIZE with a small buffer
 *   FAKENVML_PROCS_DELAY_US=N     the process lists take N microseconds before and N after reading this process's
 *                                 usage, as a real driver's call takes time: what they report is N us old when they
 *                                 return (widens the window in which a caller's own figures move meanwhile)
 *   FAKENVML_MEMORY_LIMIT=HARD[,SOFT]
 *                                 nvmlDeviceGetMemoryLimits_v1 reports a driver-enforced container limit (R615):
 *                                 hardLimit HARD, softLimit SOFT (default HARD); sizes as FAKECUDA_MEM (K/M/G/T);
 *                                 HARD "max" is NVML_DEVICE_MEMORY_LIMIT_MAX (no limit set) with softLimit 0.
 *                                 Unset: NVML_ERROR_NOT_SUPPORTED (3), the function exists but this system has no
 *                                 cgroup memory partitions. nameSpace must name an existing directory (the cgroup),
 *                                 else NVML_ERROR_NOT_FOUND (6); NULL: NVML_ERROR_INVALID_ARGUMENT (2).
 *                                 currentUsed is this process's usage. nvmlDeviceGetMemoryInfo* do not follow the
 *                                 limit (the real R615 _v2 does; nothing here needs it yet).
 *
 * Test helpers (exported, not NVML): below.
 */
#ifndef FAKENVML_H
#define FAKENVML_H

#ifdef __cplusplus
extern "C" {
#endif

/* NVML's ABI as the tests see it (the double and the programs that read NVML, tests/integration/nvml_probe.c): its
 * own copy, not the library's (interposer/nvml/nvml.h), so that a layout mistake there cannot hide in both. A unit test
 * of the library's NVML code defines FAKENVML_NO_ABI and gets the library's. */
#ifndef FAKENVML_NO_ABI
typedef enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

typedef struct {
	const char *nameSpace;
	unsigned long long softLimit, hardLimit, currentUsed;
} nvmlGetMemoryLimits_v1_t;
#define NVML_DEVICE_MEMORY_LIMIT_MAX 0xffffffffffffffffull

/* The entry points the double implements (nvmlDeviceGetMemoryLimits_v1 not in its R580 variant). */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
						  nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_v2_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_v2_t *infos);
nvmlReturn_t nvmlDeviceGetMemoryLimits_v1(nvmlDevice_t device, nvmlGetMemoryLimits_v1_t *limits);
#endif

#define FAKENVML_RESERVED_MIB 32ull
#define FAKENVML_EXTRA_PID_BASE 4000000u

/* The nameSpace string of the last nvmlDeviceGetMemoryLimits_v1 call ("" if none), copied. */
const char *fakenvml_last_namespace(void);
/* Calls so far of an exact NVML entry point name (e.g. "nvmlDeviceGetMemoryInfo_v2"); -1 if not implemented. */
long fakenvml_calls(const char *exact_name);
/* Called by the process lists (nvmlDeviceGetComputeRunningProcesses*), in the caller's thread, just before and just
 * after they read this process's usage: a test sets it to make its own threads allocate or free at exactly that
 * point of a measurement, as a driver call that takes time lets them (tests/integration/physical.c, "measure").
 * NULL: none (the default). Not an environment variable: the test's code runs inside the call. */
enum { FAKENVML_HOOK_BEFORE, FAKENVML_HOOK_AFTER };
typedef void (*fakenvml_hook_fn)(int when);
void fakenvml_set_procs_hook(fakenvml_hook_fn fn);

#ifdef __cplusplus
}
#endif
#endif
