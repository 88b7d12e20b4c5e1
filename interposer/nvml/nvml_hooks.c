/* NVML under the preload: nvmlDeviceGetMemoryInfo[_v2] tell what cuMemGetInfo tells, so that a framework sizing
 * itself with NVML, and nvidia-smi in the container, see the quota rather than the card. Both routes land here: our
 * exports (a program linked against libnvidia-ml gets them first) and dlsym on a handle of NVML (how nvidia-smi and
 * ctypes reach it; interposer/route.c). The view is vg_view below, from the library's one configuration and device
 * policy (config/policy.h).
 *
 * Nothing here loads NVML: the wrappers run only because the application loaded it. A limit keyed by CUDA ordinal
 * ("0:4G") needs the ordinal of an NVML device; a process that has not used that GPU through CUDA (nvidia-smi) asks
 * the driver once, through vg_real (cuInit, cuDeviceGetCount, cuDeviceGetUuid_v2). A single value or a UUID key needs
 * no driver at all. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "accounting/quota.h"
#include "accounting/region.h"
#include "config/policy.h"
#include "interposer/base.h"
#include "interposer/device.h"
#include "interposer/devmem.h"
#include "interposer/shared.h"
#include "interposer/nvml/nvml.h"

/* Each wrapper must have the exact type of its row. */
#define VG_NVML_X_CHECK(name, ret, params)                                                                            \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), vg_nvml_fn_##name), #name " does not match its row");

/* ---- configuration: NVML may be asked before (or without) any CUDA use, so the view reads it itself (once per
 * process, whoever asks first: base.c) ---- */

/* The configuration, or NULL when it is invalid: then nothing is changed here (the CUDA side fails closed and says
 * why). */
static const struct vg_config *vg_view_config(void)
{
	const struct vg_config *cfg = vg_config_read();
	return cfg->valid ? cfg : NULL;
}

static bool vg_view_needs_ordinal(const struct vg_config *cfg)
{
	static _Atomic int memo;        /* 0 unknown, 1 no, 2 yes */
	int m = atomic_load(&memo);
	if (m)
		return m == 2;
	bool need = vg_config_keys_ordinals(cfg);
	atomic_store(&memo, need ? 2 : 1);
	return need;
}

/* ---- GPU UUID -> CUDA ordinal ---- */

/* A device this process already resolved through CUDA: its ordinal, or -1. */
static int vg_cached_ordinal(const char *uuid)
{
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		const struct vg_device_info *di = vg_device_info_cached(d);
		if (di && di->uuid[0] && strcasecmp(di->uuid, uuid) == 0)
			return d;
	}
	return -1;
}

static char vg_driver_uuids[VG_MAX_DEVICES][VG_UUID_MAX];
static int vg_driver_count;
static pthread_once_t vg_driver_once = PTHREAD_ONCE_INIT;

static void vg_driver_scan(void)
{
	int n = 0;
	if (!vg_real_resolve(false) || !vg_real.cuInit || !vg_real.cuDeviceGetCount || !vg_real.cuDeviceGetUuid_v2 ||
	    vg_real.cuInit(0) != CUDA_SUCCESS || vg_real.cuDeviceGetCount(&n) != CUDA_SUCCESS)
		return;
	if (n > VG_MAX_DEVICES)
		n = VG_MAX_DEVICES;
	for (int d = 0; d < n; d++) {
		CUuuid u;
		if (vg_real.cuDeviceGetUuid_v2(&u, (CUdevice)d) == CUDA_SUCCESS)
			vg_format_uuid(u.bytes, vg_driver_uuids[d], sizeof(vg_driver_uuids[d]));
	}
	vg_driver_count = n;
}

/* The CUDA ordinal of uuid as the driver numbers it in this process (CUDA_VISIBLE_DEVICES applies), -1 if it is not
 * visible or there is no driver. The driver is asked once per process. */
static int vg_driver_ordinal(const char *uuid)
{
	pthread_once(&vg_driver_once, vg_driver_scan);
	for (int d = 0; d < vg_driver_count; d++)
		if (vg_driver_uuids[d][0] && strcasecmp(vg_driver_uuids[d], uuid) == 0)
			return d;
	return -1;
}

/* ---- the view ---- */

/* What this process is told about GPU uuid (CUDA ordinal `ordinal`, -1 unknown; cuda_dev: the ordinal this process
 * uses it under through CUDA, -1 if it does not), whose real size is card_total, under its own quota. */
static bool vg_view(const struct vg_config *cfg, const char *uuid, int ordinal, int cuda_dev, uint64_t card_total,
		    uint64_t quota, uint64_t *total, uint64_t *used)
{
	uint64_t rused = 0, rlim = VG_REGION_NONE;
	bool region = false;
	struct vg_region *r = vg_shared_region();
	if (r && r->kind == VG_REGION_SHARED) {
		region = vg_region_gpu_usage(r, uuid, ordinal, card_total, &rused, &rlim);
	} else if (cfg->shared_path[0]) {
		/* VRAMGUARD_SHARED names a region this process is no member of (nvidia-smi in the job's container):
		 * read it, never create or join it. */
		struct vg_region ro;
		char err[VG_ERR_MAX];
		if (vg_region_open(&ro, cfg->shared_path, VG_OPEN_READ, VG_REGION_SHARED, NULL, NULL, err, sizeof(err)) == 0) {
			region = vg_region_gpu_usage(&ro, uuid, ordinal, card_total, &rused, &rlim);
			vg_region_close(&ro);
		}
	}
	if (quota == VG_NO_LIMIT && !region)
		return false;
	uint64_t t = card_total, u;
	if (quota < t)
		t = quota;
	if (region && rlim < t)
		t = rlim;
	if (region) {
		u = rused;
	} else {
		/* Ours, and that of the other processes whose regions share our directory: in a container, its
		 * processes. */
		uint64_t others = 0;
		if (cuda_dev >= 0)
			vg_devmem_settled(cuda_dev);    /* the context's memory measured once, before the first answer */
		u = cuda_dev >= 0 ? vg_quota_used(cuda_dev) : 0;
		if (uuid && *uuid && vg_region_dir_usage(cfg->shm_dir, uuid, getpid(), &others, NULL) == 0)
			u += others;
	}
	*total = t;
	*used = u < t ? u : t;
	return true;
}

/* ---- the real functions behind the exports ---- */

/* The real function of a row: vg_nvml_real's field at off once NVML is loaded as libnvidia-ml.so.1; otherwise (a
 * program linked against an NVML of another name) the next definition after ours, remembered in *cache. NULL if
 * there is none: NVML is not in the process. */
static void *vg_nvml_lookup(size_t off, const char *name, void *_Atomic *cache, const void *self)
{
	void *f = NULL;
	if (vg_nvml_real_loaded()) {
		memcpy(&f, (const char *)&vg_nvml_real + off, sizeof(f));
		if (f)
			return f;
	}
	f = atomic_load_explicit(cache, memory_order_acquire);
	if (f)
		return f;
	void *(*real_dlsym)(void *, const char *) = vg_resolve_real_dlsym();
	/* Asked from here, RTLD_NEXT is the definition after vramguard's. */
	f = real_dlsym ? real_dlsym(RTLD_NEXT, name) : NULL;
	(void)dlerror();
	if (f == self)
		f = NULL;
	if (f)
		atomic_store_explicit(cache, f, memory_order_release);
	return f;
}

static void *_Atomic vg_nvml_next[VG_NVML_HOOK_COUNT];
static void *_Atomic vg_nvml_next_uuid;

#define VG_NVML_REAL(name)                                                                                            \
	((vg_nvml_fn_##name)vg_nvml_lookup(offsetof(struct vg_nvml_real_table, name), #name,                          \
					   &vg_nvml_next[VG_NVML_HOOK_##name], (const void *)&name))

/* NVML may call its own exported entry points: only the outermost call is changed. */
static __thread int vg_nvml_depth __attribute__((tls_model("initial-exec")));

/* What to report for an NVML device whose real size is card_total; false: the real answer stands. */
static bool vg_nvml_view(nvmlDevice_t device, uint64_t card_total, uint64_t *total, uint64_t *used)
{
	const struct vg_config *cfg = vg_view_config();
	vg_nvml_fn_nvmlDeviceGetUUID get_uuid = (vg_nvml_fn_nvmlDeviceGetUUID)vg_nvml_lookup(
		offsetof(struct vg_nvml_real_table, nvmlDeviceGetUUID), "nvmlDeviceGetUUID", &vg_nvml_next_uuid, NULL);
	char uuid[VG_NVML_UUID_MAX];
	if (!cfg || !get_uuid || get_uuid(device, uuid, sizeof(uuid)) != VG_NVML_SUCCESS)
		return false;
	uuid[sizeof(uuid) - 1] = '\0';
	int cuda_dev = vg_cached_ordinal(uuid), ordinal = cuda_dev;
	uint64_t quota;
	if (cuda_dev >= 0) {
		quota = atomic_load(&vg_device_info_cached(cuda_dev)->limit);   /* live: `limit set` may change it */
	} else {
		if (vg_view_needs_ordinal(cfg))
			ordinal = vg_driver_ordinal(uuid);
		struct vg_device_policy pol;
		vg_config_device_policy(cfg, ordinal, uuid, card_total, &pol);
		quota = pol.limit;
	}
	return vg_view(cfg, uuid, ordinal, cuda_dev, card_total, quota, total, used);
}

/* ---- the wrappers ---- */

VG_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	vg_nvml_fn_nvmlDeviceGetMemoryInfo real = VG_NVML_REAL(nvmlDeviceGetMemoryInfo);
	if (!real)
		return VG_NVML_ERROR_UNINITIALIZED;     /* NVML is not loaded: nothing was initialised */
	bool outer = vg_nvml_depth++ == 0;
	nvmlReturn_t rc = real(device, memory);
	uint64_t t, u;
	if (outer && rc == VG_NVML_SUCCESS && memory && vg_nvml_view(device, memory->total, &t, &u)) {
		memory->total = t;
		memory->used = u;
		memory->free = t - u;
	}
	vg_nvml_depth--;
	return rc;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	vg_nvml_fn_nvmlDeviceGetMemoryInfo_v2 real = VG_NVML_REAL(nvmlDeviceGetMemoryInfo_v2);
	if (!real)
		return VG_NVML_ERROR_UNINITIALIZED;
	bool outer = vg_nvml_depth++ == 0;
	nvmlReturn_t rc = real(device, memory);
	uint64_t t, u;
	if (outer && rc == VG_NVML_SUCCESS && memory && vg_nvml_view(device, memory->total, &t, &u)) {
		/* The driver's own reservation is part of the card, not of the quota: none of it is reported. The version
		 * field stays as the caller set it. */
		memory->total = t;
		memory->reserved = 0;
		memory->used = u;
		memory->free = t - u;
	}
	vg_nvml_depth--;
	return rc;
}

VG_NVML_HOOKS(VG_NVML_X_CHECK)
#undef VG_NVML_X_CHECK

/* ---- routing (route.c's dlsym calls this for names starting with "nvml") ---- */

struct vg_nvml_route {
	void *wrapper;
	size_t real_off;        /* the row's field in vg_nvml_real */
};

static const struct vg_nvml_route vg_nvml_routes[] = {
#define VG_NVML_X_ROUTE(name, ret, params) { (void *)&name, offsetof(struct vg_nvml_real_table, name) },
	VG_NVML_HOOKS(VG_NVML_X_ROUTE)
#undef VG_NVML_X_ROUTE
};

void *vg_nvml_route_wrapper_for(void *real_fn)
{
	if (!real_fn || !vg_nvml_real_loaded())
		return NULL;
	for (size_t i = 0; i < sizeof(vg_nvml_routes) / sizeof(vg_nvml_routes[0]); i++) {
		void *real;
		memcpy(&real, (const char *)&vg_nvml_real + vg_nvml_routes[i].real_off, sizeof(real));
		if (real && real == real_fn)
			return vg_nvml_routes[i].wrapper;
	}
	return NULL;
}
