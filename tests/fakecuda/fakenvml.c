/* fakenvml.c - test double of libnvidia-ml.so.1 for vramguard's CPU tests; never installed.
 * See fakenvml.h for the build, the devices, the environment and the test helpers. Types are written here from
 * NVIDIA's documentation (nvml.h of NVML API 13), independently of interposer/nvml/nvml.h, so that a layout mistake on
 * either side shows up as a failing test rather than being shared. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakenvml.h"

#define FN_EXPORT __attribute__((visibility("default")))


_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(sizeof(nvmlGetMemoryLimits_v1_t) == 32, "nvmlGetMemoryLimits_v1_t");

#define MAXDEV 64
#define MiB (1ull << 20)

struct nvmlDevice_st {
	int index;
};
static struct nvmlDevice_st g_dev[MAXDEV];
static int g_ndev, g_base;
static unsigned long long g_total;
static atomic_int g_init;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* ---- calls, for the tests ---- */

#define FN_NAMES(X) \
	X(nvmlInit_v2) X(nvmlInit) X(nvmlShutdown) X(nvmlErrorString) X(nvmlSystemGetDriverVersion) \
	X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetHandleByUUID) X(nvmlDeviceGetUUID) \
	X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2) X(nvmlDeviceGetComputeRunningProcesses) \
	X(nvmlDeviceGetComputeRunningProcesses_v2) X(nvmlDeviceGetComputeRunningProcesses_v3) \
	X(nvmlDeviceGetMemoryLimits_v1)
enum {
#define X(n) FN_##n,
	FN_NAMES(X)
#undef X
	FN_COUNT
};
static const char *const g_names[FN_COUNT] = {
#define X(n) #n,
	FN_NAMES(X)
#undef X
};
static atomic_long g_calls[FN_COUNT];

static unsigned long long parse_size(const char *s, unsigned long long dflt)
{
	if (!s || !*s)
		return dflt;
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (end == s)
		return dflt;
	switch (toupper((unsigned char)*end)) {
	case 'K': v <<= 10; break;
	case 'M': v <<= 20; break;
	case 'G': v <<= 30; break;
	case 'T': v <<= 40; break;
	default: break;
	}
	return v;
}

static void init_once(void)
{
	const char *s = getenv("FAKECUDA_DEVICES");
	int n = 1;
	if (s && *s) {
		long v = strtol(s, NULL, 10);
		n = v < 1 ? 1 : v > 16 ? 16 : (int)v;
	}
	s = getenv("FAKECUDA_UUID_BASE");
	g_base = s && *s ? (int)strtol(s, NULL, 10) : 0;
	if (g_base < 0)
		g_base = 0;
	g_ndev = n + g_base > MAXDEV ? MAXDEV : n + g_base;
	g_total = parse_size(getenv("FAKECUDA_MEM"), 16ull << 30);
	for (int i = 0; i < MAXDEV; i++)
		g_dev[i].index = i;
}

static int enter(int fn, int need_init)
{
	pthread_once(&g_once, init_once);
	atomic_fetch_add(&g_calls[fn], 1);
	return need_init && atomic_load(&g_init) <= 0 ? NVML_ERROR_UNINITIALIZED : NVML_SUCCESS;
}
#define ENTER(fn)                                                                                                     \
	do {                                                                                                          \
		int fn_rc_ = enter(FN_##fn, 1);                                                                       \
		if (fn_rc_ != NVML_SUCCESS)                                                                           \
			return fn_rc_;                                                                                \
	} while (0)

static int dev_index(nvmlDevice_t d)
{
	if (!d || d < &g_dev[0] || d >= &g_dev[g_ndev])
		return -1;
	return d->index;
}

static void uuid_of(int index, char *out, size_t len)
{
	snprintf(out, len, "GPU-%08x-0000-0000-0000-%012x", (unsigned)index, (unsigned)index);
}

/* ---- this process's usage, from the fake libcuda ---- */

static void *cuda_fn(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	if (!f) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			f = dlsym(h, name);
			dlclose(h);
		}
	}
	return f;
}

/* This process's bytes on NVML device index; false when the process is not a (fake) CUDA process on it. */
static int self_bytes(int index, unsigned long long *bytes)
{
	*bytes = 0;
	int ordinal = index - g_base;
	if (ordinal < 0)
		return 0;
	unsigned long long (*f)(int) = (unsigned long long (*)(int))cuda_fn("fakecuda_process_device_bytes");
	if (!f)
		f = (unsigned long long (*)(int))cuda_fn("fakecuda_used_bytes");
	if (!f)
		return 0;
	*bytes = f(ordinal);
	return 1;
}

static int env_on(const char *name)
{
	const char *s = getenv(name);
	return s && strcmp(s, "1") == 0;
}

/* ---- NVML ---- */

FN_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	enter(FN_nvmlInit_v2, 0);
	atomic_fetch_add(&g_init, 1);
	return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlInit(void)
{
	enter(FN_nvmlInit, 0);
	atomic_fetch_add(&g_init, 1);
	return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	ENTER(nvmlShutdown);
	atomic_fetch_sub(&g_init, 1);
	return NVML_SUCCESS;
}

FN_EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
	enter(FN_nvmlErrorString, 0);
	switch (rc) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
	default: return "Unknown Error";
	}
}

FN_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	ENTER(nvmlSystemGetDriverVersion);
#ifdef FAKENVML_R580
	const char *v = "580.0.fake";
#else
	const char *v = "615.0.fake";
#endif
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (length < strlen(v) + 1)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(version, v, strlen(v) + 1);
	return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	ENTER(nvmlDeviceGetCount_v2);
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = (unsigned)g_ndev;
	return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	ENTER(nvmlDeviceGetHandleByIndex_v2);
	if (!device || index >= (unsigned)g_ndev)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &g_dev[index];
	return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	ENTER(nvmlDeviceGetHandleByUUID);
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	char u[96];
	for (int i = 0; i < g_ndev; i++) {
		uuid_of(i, u, sizeof(u));
		if (strcmp(u, uuid) == 0) {
			*device = &g_dev[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	ENTER(nvmlDeviceGetUUID);
	int i = dev_index(device);
	if (i < 0 || !uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	char u[96];
	uuid_of(i, u, sizeof(u));
	if (length < strlen(u) + 1)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(uuid, u, strlen(u) + 1);
	return NVML_SUCCESS;
}

static void mem_of(int i, unsigned long long *total, unsigned long long *used)
{
	unsigned long long own;
	self_bytes(i, &own);
	*total = g_total;
	*used = own + FAKENVML_RESERVED_MIB * MiB;
	if (*used > *total)
		*used = *total;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	ENTER(nvmlDeviceGetMemoryInfo);
	int i = dev_index(device);
	if (i < 0 || !memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned long long t, u;
	mem_of(i, &t, &u);
	memory->total = t;
	memory->used = u;
	memory->free = t - u;
	return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	ENTER(nvmlDeviceGetMemoryInfo_v2);
	int i = dev_index(device);
	if (i < 0 || !memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memory->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	unsigned long long t, u;
	mem_of(i, &t, &u);
	memory->total = t;
	memory->reserved = FAKENVML_RESERVED_MIB * MiB;
	memory->used = u;
	memory->free = t - u;
	return NVML_SUCCESS;
}

static fakenvml_hook_fn _Atomic g_procs_hook;

/* The process list of device i: FAKENVML_EXTRA_PROCS others, then this process if it is a CUDA process there and
 * not hidden. Entries of entry_size bytes (16: v1, 24: v2/v3), as NVML fills them: *count in, the number out;
 * too small a buffer gives NVML_ERROR_INSUFFICIENT_SIZE with the number needed. */
static nvmlReturn_t procs(nvmlDevice_t device, unsigned int *count, void *infos, size_t entry_size)
{
	int i = dev_index(device);
	if (i < 0 || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	const char *s = getenv("FAKENVML_EXTRA_PROCS");
	unsigned extra = s && *s ? (unsigned)strtoul(s, NULL, 10) : 0;
	unsigned long long own;
	const char *delay = getenv("FAKENVML_PROCS_DELAY_US");
	useconds_t us = delay && *delay ? (useconds_t)strtoul(delay, NULL, 10) : 0;
	fakenvml_hook_fn hook = atomic_load(&g_procs_hook);
	if (us)
		usleep(us);
	if (hook)
		hook(FAKENVML_HOOK_BEFORE);
	int listed = self_bytes(i, &own) && !env_on("FAKENVML_HIDE_SELF");
	if (hook)
		hook(FAKENVML_HOOK_AFTER);
	if (us)
		usleep(us);
	unsigned n = extra + (listed ? 1 : 0);
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (n && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned k = 0; k < n; k++) {
		unsigned pid = k < extra ? FAKENVML_EXTRA_PID_BASE + k : (unsigned)getpid();
		unsigned long long used = k < extra ? MiB : own;
		char *e = (char *)infos + k * entry_size;
		if (entry_size == sizeof(nvmlProcessInfo_v1_t)) {
			nvmlProcessInfo_v1_t v = { pid, used };
			memcpy(e, &v, sizeof(v));
		} else {
			nvmlProcessInfo_v2_t v = { pid, used, 0xffffffffu, 0xffffffffu };
			memcpy(e, &v, sizeof(v));
		}
	}
	*count = n;
	return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
							    nvmlProcessInfo_v1_t *infos)
{
	ENTER(nvmlDeviceGetComputeRunningProcesses);
	return procs(device, infoCount, infos, sizeof(*infos));
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
							       nvmlProcessInfo_v2_t *infos)
{
	ENTER(nvmlDeviceGetComputeRunningProcesses_v2);
	return procs(device, infoCount, infos, sizeof(*infos));
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
							       nvmlProcessInfo_v2_t *infos)
{
	ENTER(nvmlDeviceGetComputeRunningProcesses_v3);
	return procs(device, infoCount, infos, sizeof(*infos));
}

static char g_last_ns[4096];
static pthread_mutex_t g_ns_lock = PTHREAD_MUTEX_INITIALIZER;

#ifndef FAKENVML_R580
FN_EXPORT nvmlReturn_t nvmlDeviceGetMemoryLimits_v1(nvmlDevice_t device, nvmlGetMemoryLimits_v1_t *limits)
{
	ENTER(nvmlDeviceGetMemoryLimits_v1);
	int i = dev_index(device);
	if (i < 0 || !limits || !limits->nameSpace)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&g_ns_lock);
	snprintf(g_last_ns, sizeof(g_last_ns), "%s", limits->nameSpace);
	pthread_mutex_unlock(&g_ns_lock);
	const char *s = getenv("FAKENVML_MEMORY_LIMIT");
	if (!s || !*s)
		return NVML_ERROR_NOT_SUPPORTED;
	struct stat st;
	if (stat(limits->nameSpace, &st) != 0 || !S_ISDIR(st.st_mode))
		return NVML_ERROR_NOT_FOUND;
	unsigned long long hard, soft;
	if (strncmp(s, "max", 3) == 0) {
		hard = NVML_DEVICE_MEMORY_LIMIT_MAX;
		soft = 0;
	} else {
		hard = parse_size(s, 0);
		const char *comma = strchr(s, ',');
		soft = comma ? parse_size(comma + 1, hard) : hard;
	}
	unsigned long long own;
	self_bytes(i, &own);
	limits->hardLimit = hard;
	limits->softLimit = soft;
	limits->currentUsed = own;
	return NVML_SUCCESS;
}
#endif

/* ---- test helpers ---- */

FN_EXPORT const char *fakenvml_last_namespace(void)
{
	static __thread char copy[sizeof(g_last_ns)];
	pthread_mutex_lock(&g_ns_lock);
	memcpy(copy, g_last_ns, sizeof(copy));
	pthread_mutex_unlock(&g_ns_lock);
	return copy;
}

FN_EXPORT long fakenvml_calls(const char *exact_name)
{
	for (int i = 0; exact_name && i < FN_COUNT; i++)
		if (strcmp(g_names[i], exact_name) == 0)
			return atomic_load(&g_calls[i]);
	return -1;
}

FN_EXPORT void fakenvml_set_procs_hook(fakenvml_hook_fn fn)
{
	atomic_store(&g_procs_hook, fn);
}
