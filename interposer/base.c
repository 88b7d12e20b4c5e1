/* The base (base.h): the real driver table and the real dlsym it is looked up with, the configuration, and the
 * hook prologue's closing half. Nothing here calls any other file of the interposer. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "interposer/base.h"
#include "accounting/lockorder.h"
#include "accounting/quota.h"

struct vg_real_table vg_real;
_Atomic bool vg_capture_begun;
struct vg_config vg_cfg;

const char *const vg_hook_names[VG_HOOK_COUNT] = {
#define VG_X_NAME(name, ...) #name,
	VG_HOOKS(VG_X_NAME)
#undef VG_X_NAME
};

const char *const vg_hook_charges[VG_HOOK_COUNT] = {
#define VG_X_CHARGE(name, pfn, policy, charge) charge,
	VG_HOOKS(VG_X_CHARGE)
#undef VG_X_CHARGE
};

/* ---- the real dlsym ---- */

/* dlsym.S jumps through it. */
VG_HIDDEN void *(*vg_real_dlsym)(void *, const char *);

VG_HIDDEN VG_NO_SANITIZE void *(*vg_resolve_real_dlsym(void))(void *, const char *)
{
	void *(*f)(void *, const char *) = __atomic_load_n(&vg_real_dlsym, __ATOMIC_ACQUIRE);
	if (VG_LIKELY(f != NULL))
		return f;
	/* dlsym@@GLIBC_2.34 and dlsym@GLIBC_2.2.5 are the same function; older glibc has only the latter. */
	f = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!f)
		f = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (f)
		__atomic_store_n(&vg_real_dlsym, f, __ATOMIC_RELEASE);
	return f;
}

/* ---- the real driver table ---- */

/* 0: not resolved, 1: resolved, -1: libcuda.so.1 could not be loaded */
static _Atomic int vg_real_state;
static pthread_mutex_t vg_real_lock = PTHREAD_MUTEX_INITIALIZER;

bool vg_real_resolve(bool loaded_only)
{
	int st = atomic_load_explicit(&vg_real_state, memory_order_acquire);
	if (VG_LIKELY(st == 1))
		return true;
	if (st == -1 && loaded_only)
		return false;
	void *(*real_dlsym)(void *, const char *) = vg_resolve_real_dlsym();
	if (!real_dlsym)
		return false;
	/* No lock across dlopen: another thread may hold the loader lock and call our dlsym. */
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h && !loaded_only)
		h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		if (!loaded_only)
			atomic_store(&vg_real_state, -1);
		return false;
	}
	struct vg_real_table t;
#define VG_X_RESOLVE(name, pfn, ...) t.name = (pfn)real_dlsym(h, #name);
	VG_HOOKS(VG_X_RESOLVE)
	VG_REALS(VG_X_RESOLVE)
#undef VG_X_RESOLVE
	vg_lock(&vg_real_lock, VG_RANK_REAL);
	if (atomic_load(&vg_real_state) != 1) {
		vg_real = t;
		atomic_store_explicit(&vg_real_state, 1, memory_order_release);
	}
	vg_unlock(&vg_real_lock, VG_RANK_REAL);
	/* h stays open for the life of the process, like the application's own handle. */
	return true;
}

void vg_base_atfork_child(void)
{
	pthread_mutex_init(&vg_real_lock, NULL);
}

/* ---- the device of the current context ---- */

/* The device of a context never changes, so each thread remembers its last (context, device) pair; the cache is
 * dropped whenever a context may have died (a destroyed context's handle can come back for another device). Here,
 * beside the real table it reads: every allocation asks. */
static _Atomic unsigned vg_ctx_gen = 1;
static __thread CUcontext vg_tc_ctx __attribute__((tls_model("initial-exec")));
static __thread int vg_tc_dev __attribute__((tls_model("initial-exec")));
static __thread unsigned vg_tc_gen __attribute__((tls_model("initial-exec")));

void vg_ctx_cache_invalidate(void)
{
	atomic_fetch_add(&vg_ctx_gen, 1);
}

int vg_current_device(CUcontext *ctx)
{
	CUcontext c = NULL;
	CUdevice d = -1;
	if (!vg_real.cuCtxGetCurrent || vg_real.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
		c = NULL;
	if (ctx)
		*ctx = c;
	unsigned gen = atomic_load_explicit(&vg_ctx_gen, memory_order_acquire);
	if (c && c == vg_tc_ctx && gen == vg_tc_gen)
		return vg_tc_dev;
	if (!vg_real.cuCtxGetDevice || vg_real.cuCtxGetDevice(&d) != CUDA_SUCCESS)
		return -1;
	if (c) {
		vg_tc_ctx = c;
		vg_tc_dev = (int)d;
		vg_tc_gen = gen;
	}
	return (int)d;
}

bool vg_capture_relax(CUstreamCaptureMode *saved)
{
	*saved = CU_STREAM_CAPTURE_MODE_RELAXED;
	return vg_real.cuThreadExchangeStreamCaptureMode &&
	       vg_real.cuThreadExchangeStreamCaptureMode(saved) == CUDA_SUCCESS;
}

void vg_capture_restore(bool swapped, CUstreamCaptureMode *saved)
{
	if (swapped)
		vg_real.cuThreadExchangeStreamCaptureMode(saved);
}

/* ---- the configuration ---- */

static pthread_once_t vg_cfg_once = PTHREAD_ONCE_INIT;

static const char *vg_getenv(const char *name)
{
	return getenv(name);
}

static void vg_cfg_load(void)
{
	/* AT_SECURE (setuid/setgid, file capabilities): the environment is a less privileged user's; the loader
	 * ignores the variables that name files, directories or modes (config/options.h, the options table). */
	vg_config_load(&vg_cfg, vg_getenv, getauxval(AT_SECURE) != 0);
}

const struct vg_config *vg_config_read(void)
{
	pthread_once(&vg_cfg_once, vg_cfg_load);
	return &vg_cfg;
}

/* ---- the hook prologue's closing half ---- */

__thread int vg_hook_depth __attribute__((tls_model("initial-exec")));
/* 1 + the device of the allocation this hook asked the driver for, until the hook returns (vg_hook_inflight). */
static __thread int vg_inflight __attribute__((tls_model("initial-exec")));

void vg_hook_inflight(int dev)
{
	if (!vg_inflight) {
		vg_quota_begin(dev);
		vg_inflight = dev + 1;
	}
}

void vg_hook_leave(void)
{
	if (VG_UNLIKELY(vg_inflight) && vg_hook_depth == 1) {
		vg_quota_end(vg_inflight - 1);
		vg_inflight = 0;
	}
	vg_hook_depth--;
}
