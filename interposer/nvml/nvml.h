/* NVML: the hook list of the entry points we wrap (so that NVML and nvidia-smi agree with CUDA about how much memory
 * there is), the real-function table, and our own read-only NVML access for the sampler. No nvml.h is installed
 * where we build: the few types are declared here from NVIDIA's documentation (NVML API 13, R580-R615), their sizes
 * checked below. Like libcuda, NVML is never linked: only looked up in a process that has loaded it (the wrappers,
 * the dlsym route), or loaded by vg_nvml_load for our own use. */
#ifndef VG_NVML_H
#define VG_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int nvmlReturn_t;                       /* an enum in nvml.h: int-sized */
typedef struct nvmlDevice_st *nvmlDevice_t;     /* opaque handle */

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;                   /* nvmlMemory_v2 */
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

/* nvmlDeviceGetComputeRunningProcesses (the unversioned symbol is the v1 ABI): 16-byte entries. */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* _v2 and _v3 (nvml.h's nvmlProcessInfo_v2_t, also its nvmlProcessInfo_t): 24-byte entries. */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

/* R615 nvmlDeviceGetMemoryLimits_v1: nameSpace [in] is the full sysfs path of a cgroup v2 directory; no version
 * field. No limit: softLimit 0 and hardLimit VG_NVML_MEMORY_LIMIT_MAX. */
typedef struct {
	const char *nameSpace;
	unsigned long long softLimit, hardLimit, currentUsed;
} nvmlGetMemoryLimits_v1_t;

_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 3 x 8 bytes");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40 && offsetof(nvmlMemory_v2_t, total) == 8, "nvmlMemory_v2_t layout");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t is 16 bytes");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t is 24 bytes");
_Static_assert(sizeof(nvmlGetMemoryLimits_v1_t) == 32, "nvmlGetMemoryLimits_v1_t is 4 x 8 bytes");

#define VG_NVML_SUCCESS 0
#define VG_NVML_ERROR_UNINITIALIZED 1
#define VG_NVML_ERROR_INVALID_ARGUMENT 2
#define VG_NVML_ERROR_NOT_SUPPORTED 3
#define VG_NVML_ERROR_NO_PERMISSION 4
#define VG_NVML_ERROR_NOT_FOUND 6
#define VG_NVML_ERROR_INSUFFICIENT_SIZE 7
#define VG_NVML_ERROR_LIBRARY_NOT_FOUND 12
#define VG_NVML_ERROR_FUNCTION_NOT_FOUND 13
/* nvmlMemory_v2: NVML_STRUCT_VERSION(Memory, 2) = sizeof | 2 << 24 = 0x02000028 */
#define VG_NVML_MEMORY_V2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
/* NVML_DEVICE_MEMORY_LIMIT_MAX: "no hard limit" (the largest unsigned long long). */
#define VG_NVML_MEMORY_LIMIT_MAX 0xffffffffffffffffull
/* NVML_VALUE_NOT_AVAILABLE: usedGpuMemory the driver cannot tell. */
#define VG_NVML_VALUE_NOT_AVAILABLE 0xffffffffffffffffull
#define VG_NVML_UUID_MAX 96                     /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */

/* X(exact exported name, return type, parameters) -- wrapped: exported by us, and a dlsym on a handle of NVML that
 * lands on the real one gets ours (interposer/route.c). The export list test reads these rows. */
#define VG_NVML_HOOKS(X) \
	X(nvmlDeviceGetMemoryInfo,    nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t *memory)) \
	X(nvmlDeviceGetMemoryInfo_v2, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_v2_t *memory))

/* X(exact name, return type, parameters) -- called by us, never wrapped. Missing ones (older drivers) stay NULL. */
#define VG_NVML_REALS(X) \
	X(nvmlInit_v2,                             nvmlReturn_t, (void)) \
	X(nvmlErrorString,                         const char *, (nvmlReturn_t result)) \
	X(nvmlDeviceGetUUID,                       nvmlReturn_t, (nvmlDevice_t device, char *uuid, unsigned int length)) \
	X(nvmlDeviceGetHandleByUUID,               nvmlReturn_t, (const char *uuid, nvmlDevice_t *device)) \
	X(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t, \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos)) \
	X(nvmlDeviceGetComputeRunningProcesses_v2, nvmlReturn_t, \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos)) \
	X(nvmlDeviceGetComputeRunningProcesses,    nvmlReturn_t, \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos)) \
	X(nvmlDeviceGetMemoryLimits_v1,            nvmlReturn_t, (nvmlDevice_t device, nvmlGetMemoryLimits_v1_t *limits))

/* vg_nvml_fn_nvmlDeviceGetMemoryInfo, ...: the type of each row. */
#define VG_NVML_X_TYPE(name, ret, params) typedef ret(*vg_nvml_fn_##name) params;
VG_NVML_HOOKS(VG_NVML_X_TYPE)
VG_NVML_REALS(VG_NVML_X_TYPE)
#undef VG_NVML_X_TYPE

/* The wrappers themselves (nvml_hooks.c, exported): declared from the rows, so a wrapper that does not match its
 * row does not compile. */
#define VG_NVML_X_DECL(name, ret, params) ret name params;
VG_NVML_HOOKS(VG_NVML_X_DECL)
#undef VG_NVML_X_DECL

enum vg_nvml_hook_id {
#define VG_NVML_X_ID(name, ret, params) VG_NVML_HOOK_##name,
	VG_NVML_HOOKS(VG_NVML_X_ID)
#undef VG_NVML_X_ID
	VG_NVML_HOOK_COUNT
};

/* The real NVML functions: the only way vramguard calls NVML. Read it only after vg_nvml_real_loaded() or
 * vg_nvml_load() returned true; it never changes after that. */
struct vg_nvml_real_table {
#define VG_NVML_X_FIELD(name, ret, params) vg_nvml_fn_##name name;
	VG_NVML_HOOKS(VG_NVML_X_FIELD)
	VG_NVML_REALS(VG_NVML_X_FIELD)
#undef VG_NVML_X_FIELD
};
extern struct vg_nvml_real_table vg_nvml_real;

/* The real dlsym (interposer/base.c; declared here too, so that nvml.c builds on its own for its tests): a lookup on a
 * handle never returns our wrappers. */
void *(*vg_resolve_real_dlsym(void))(void *, const char *);

/* Fill vg_nvml_real from libnvidia-ml.so.1 if the process has loaded it (dlopen RTLD_NOLOAD: never loads it, and
 * leaves no dlerror behind). true once the table is filled. Lock-free for its callers: dlsym may run it under the
 * loader's lock. */
bool vg_nvml_real_loaded(void);
/* Map a real NVML entry point to our wrapper (pointer identity), or NULL if it is not one we wrap (nvml_hooks.c). */
void *vg_nvml_route_wrapper_for(void *real_fn);

/* ---- our own NVML access, for the background sampler (never on an allocation path: these take milliseconds) ----
 * Read-only: vramguard never sets anything through NVML. */

/* Load NVML for our own use, once: dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL), the real functions looked up
 * with the real dlsym (never our wrappers), nvmlInit_v2. Thread-safe; tried once per process. false when NVML is
 * missing or does not initialise; vg_nvml_error() then says why. */
bool vg_nvml_load(void);
/* Why vg_nvml_load failed ("" if it did not), e.g. "libnvidia-ml.so.1: cannot open shared object file: No such file
 * or directory" or "nvmlInit_v2 failed: Driver Not Loaded (9)". */
const char *vg_nvml_error(void);
/* This process's device memory on the GPU uuid as the driver counts it (context, modules and workspaces included):
 * its usedGpuMemory in the compute process list (nvmlDeviceGetComputeRunningProcesses_v3, else _v2, else v1),
 * matched by getpid() and by every PID of /proc/self/status NSpid, summed over its entries. Loads NVML
 * (vg_nvml_load) if needed. 0 with *bytes set; -ESRCH: the process is not listed (no context there yet, or a PID
 * namespace NVML cannot translate: it lists host PIDs); -ENODATA: listed, but the driver cannot tell its usage;
 * -ENODEV: no GPU with that UUID; -ENOSYS: no NVML, or none of the three functions; -EOVERFLOW: the list stayed
 * longer than the buffer (NVML_ERROR_INSUFFICIENT_SIZE is answered by asking again with a larger one, at most 6
 * times and 65536 entries); -ENOMEM; -EIO: another NVML error. */
int vg_nvml_process_used(const char *uuid, uint64_t *bytes);
/* The driver-enforced memory limits of R615+ (cgroup dmem, set by the container toolkit's apply-cuda-memory-limits
 * hook) for this process's own cgroup v2 (the "0::" line of /proc/self/cgroup, under the cgroup2 mount of
 * /proc/self/mountinfo, /sys/fs/cgroup if none is listed) on the GPU uuid, from nvmlDeviceGetMemoryLimits_v1.
 * Loads NVML if needed. 0 with *hard (UINT64_MAX = NVML_DEVICE_MEMORY_LIMIT_MAX: no hard limit) and *soft (0: none);
 * NVML_ERROR_NOT_FOUND (no limit recorded for the cgroup) also reads as no limit. -ENOSYS: no NVML, or a driver
 * before R615 without the function (R580 included), or NVML_ERROR_FUNCTION_NOT_FOUND; -EOPNOTSUPP:
 * NVML_ERROR_NOT_SUPPORTED (no cgroup memory partitions here, a MIG handle); -ENOENT: this process has no cgroup v2
 * path; -ENODEV: no GPU with that UUID; -EACCES: NVML_ERROR_NO_PERMISSION; -EIO: another NVML error. On any error
 * *hard = UINT64_MAX and *soft = 0. */
int vg_nvml_driver_limits(const char *uuid, uint64_t *hard, uint64_t *soft);
/* The cgroup v2 directory vg_nvml_driver_limits names, into out. 0, -ENOENT (no "0::" line), -ENAMETOOLONG. */
int vg_nvml_cgroup_path(char *out, size_t len);

#endif
