/* The interposer's base (base.c), which every file of it includes and which includes nothing of the interposer
 * above it: the real driver table (the only way vramguard calls the driver) and the real dlsym behind it, the
 * configuration every file reads, the modes a call runs under, the device of the current context, and the parts of
 * the hook prologue that need nothing above: vg_hook_leave and vg_hook_inflight. Its opening, vg_hook_enter, starts
 * the library on the first call, so it lives with the start-up in lifecycle.h. */
#ifndef VG_BASE_H
#define VG_BASE_H

#include <stdbool.h>

#include "interposer/globals.h"
#include "interposer/hooks.h"

#define VG_EXPORT __attribute__((visibility("default")))
#define VG_HIDDEN __attribute__((visibility("hidden")))
#define VG_LIKELY(x) __builtin_expect(!!(x), 1)
#define VG_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* For code a sanitizer's runtime calls before it has initialized itself (our dlsym: ASan and TSan look up their
 * interceptors' real functions with dlsym(RTLD_NEXT, ...) from their init); instrumentation there would touch shadow
 * memory that is not mapped yet. A no-op in ordinary builds. */
#define VG_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

/* A real driver function, or CUDA_ERROR_NOT_FOUND when this driver lacks it. */
#define VG_REAL_CALL(name, ...) (vg_real.name ? vg_real.name(__VA_ARGS__) : CUDA_ERROR_NOT_FOUND)

/* What vramguard does with a CUDA process. */
enum vg_mode {
	VG_MODE_UNINIT = 0,
	VG_MODE_INITIALIZING,
	VG_MODE_ACTIVE,         /* config valid: account and enforce */
	VG_MODE_BADCONFIG,      /* config invalid: fail closed (cuInit and allocations return NOT_PERMITTED) */
	VG_MODE_PASSIVE,        /* another copy of vramguard owns this process, or libcuda is missing: pass through */
};

/* Resolve the real driver table. loaded_only: only if libcuda.so.1 is already in the process (dlsym route).
 * Returns true when the table is usable. Never takes a lock across dlopen. */
bool vg_real_resolve(bool loaded_only);

/* The real dlsym, looked up once (dlvsym RTLD_NEXT); NULL if it cannot be found. Our own dlsym (route.c, dlsym.S)
 * forwards to it, and every lookup of ours goes through it, never through our wrappers. */
void *(*vg_resolve_real_dlsym(void))(void *, const char *);

/* Load vg_cfg from the environment, once per process, whoever asks first: the start-up (lifecycle.c), or the NVML
 * view of a process that asks NVML before CUDA (nvml/nvml_hooks.c). Returns &vg_cfg, loaded. */
const struct vg_config *vg_config_read(void);

/* The thread's depth of hook calls: 0 outside vramguard. vg_hook_enter (lifecycle.c) counts it up. */
extern __thread int vg_hook_depth __attribute__((tls_model("initial-exec")));

/* The device of the current context (and the context itself), or -1 if there is none: what an allocation hook
 * charges. Cached per thread. */
int vg_current_device(CUcontext *ctx);

/* The calling thread in relaxed stream-capture mode for a few driver calls of ours (a query made while another
 * thread captures in global mode is then no "unsafe call" that breaks that capture): vg_capture_relax saves the
 * thread's mode in *saved and says whether it swapped; vg_capture_restore(swapped, saved) puts it back. */
bool vg_capture_relax(CUstreamCaptureMode *saved);
void vg_capture_restore(bool swapped, CUstreamCaptureMode *saved);
/* A context may have died: forget every thread's cached context -> device pair. */
void vg_ctx_cache_invalidate(void);

/* Every vg_hook_enter() is paired with vg_hook_leave(). */
void vg_hook_leave(void);
/* The hook is about to reserve for an allocation it asks the driver for on dev, or to have the driver free one
 * before uncharging it: counted as under way (vg_quota_begin) until the hook returns (vg_hook_leave ends it), so that
 * a measurement of the driver's own memory never takes a difference between our figure and the driver's that is
 * only a call in progress for the driver's own memory. */
void vg_hook_inflight(int dev);

/* Fork child: the real table's lock, re-made. */
void vg_base_atfork_child(void);

#endif
