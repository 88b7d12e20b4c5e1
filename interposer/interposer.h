/* Shared by the interposer's files: init states, the real-function table, routing and device lookup. */
#ifndef VG_INTERPOSER_H
#define VG_INTERPOSER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "interposer/hooks.h"
#include "config/config.h"

#define VG_EXPORT __attribute__((visibility("default")))
#define VG_HIDDEN __attribute__((visibility("hidden")))
#define VG_LIKELY(x) __builtin_expect(!!(x), 1)
#define VG_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* For code a sanitizer's runtime calls before it has initialized itself (our dlsym: ASan and TSan look up their
 * interceptors' real functions with dlsym(RTLD_NEXT, ...) from their init); instrumentation there would touch shadow
 * memory that is not mapped yet. A no-op in ordinary builds. */
#define VG_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

/* What vramguard does with a CUDA process. */
enum vg_mode {
	VG_MODE_UNINIT = 0,
	VG_MODE_INITIALIZING,
	VG_MODE_ACTIVE,         /* config valid: account and enforce */
	VG_MODE_BADCONFIG,      /* config invalid: fail closed (cuInit and allocations return NOT_PERMITTED) */
	VG_MODE_PASSIVE,        /* another copy of vramguard owns this process, or libcuda is missing: pass through */
};

extern struct vg_config vg_cfg;

/* Resolve the real driver table. loaded_only: only if libcuda.so.1 is already in the process (dlsym route).
 * Returns true when the table is usable. Never takes a lock across dlopen. */
bool vg_real_resolve(bool loaded_only);

/* The process-level lazy init (config, fork handler). Cheap after the first call. Returns the mode. */
enum vg_mode vg_init(void);

/* Hook prologue: returns the mode this call runs under, and marks the thread as inside a hook. A nested hook call
 * (the driver calling an exported name, or our own code) gets VG_MODE_PASSIVE and goes straight to the real
 * function. Every vg_hook_enter() is paired with vg_hook_leave(). */
enum vg_mode vg_hook_enter(void);
void vg_hook_leave(void);

/* Map a real driver entry point to our wrapper (pointer identity), or NULL if it is not one we wrap. */
void *vg_route_wrapper_for(void *real_fn);

/* Per-device state, resolved lazily on first use (needs the driver: total memory, UUID). */
struct vg_device_info {
	_Atomic uint64_t limit; /* UINT64_MAX: unlimited; `vramguard limit set --pid` may change it at any time */
	uint64_t total;
	const char *_Atomic source;     /* variable the limit came from, or NULL */
	_Atomic uint64_t driver_limit;  /* the driver's own limit for the container (R615+ NVML), VG_NO_LIMIT: none */
	_Atomic uint64_t own_limit;     /* vramguard's own limit, before the driver's is applied */
	uint64_t soft;                  /* soft limit (NVIDIA_GPU_MEMORY_REQUEST[S]), VG_NO_LIMIT when none; set once */
	const char *soft_source;        /* variable it came from, or NULL */
	char uuid[VG_UUID_MAX];
};
/* Returns NULL for an ordinal vramguard does not track (negative or >= VG_MAX_DEVICES). */
const struct vg_device_info *vg_device_info(int dev);
/* The same, but only if already resolved: never calls the driver (reports). */
const struct vg_device_info *vg_device_info_cached(int dev);

/* Reports: start the exit handler and the signal reporter (at first CUDA use), and write one now. */
void vg_reporter_start(void);
void vg_reporter_arm_exit(void);
void vg_report_now(const char *reason);
void vg_reporter_atfork_child(void);
/* The reporter thread runs in this process (reports are on, it started, this is not a forked child). Ask it for a
 * report with reason "soft-limit": a flag and a byte in a pipe, async-signal-safe; requests made before it gets to
 * them make one report. The report is never written by the thread that asks. */
bool vg_reporter_running(void);
void vg_reporter_ask_soft_limit(void);

/* Soft limits (interposer/softlimit.c). Call vg_soft_limit_check(dev) after every change of dev's usage: a charge
 * that succeeded, a release, a re-measurement of device memory; any thread, any rate. Without a soft limit it is
 * one relaxed load. At an upward crossing (once; again only after usage fell below 90 % of it) it logs one warning
 * and asks the reporter thread for a report with reason "soft-limit"; crossings faster than one a minute per
 * device are counted and named in the next warning instead. It denies nothing and takes no lock. */
void vg_soft_limit_check(int dev);
struct vg_report;
int vg_snapshot(struct vg_report *r, const char *reason, uint64_t seq);

/* The device of the current context (and the context itself), or -1 if there is none. */
int vg_current_device(CUcontext *ctx);
/* A context may have died: forget every thread's cached context -> device pair. */
void vg_ctx_cache_invalidate(void);

/* Apply a per-process limit spec sent by `vramguard limit set` (NVIDIA_GPU_MEMORY_LIMITS syntax) to every device
 * now and to devices first used later. quiet = false: logs one line per changed device (the caller logs otherwise).
 * Returns the number of devices whose quota changed, or -1 for a spec that does not parse (logged, ignored). */
int vg_device_apply_limit_spec(const char *spec, bool quiet);

/* The driver enforces a container limit of hard bytes on dev (R615+): the tighter of it and ours applies; both are
 * shown (reports, check, top). */
void vg_device_apply_driver_limit(int dev, uint64_t hard);

/* The process's region (interposer/shared.c): join at init (-1: a shared region was asked for and cannot be had,
 * fail closed), register each device on first use, pick up live limit changes, leave at exit. */
struct vg_region;
int vg_shared_attach(void);
struct vg_region *vg_shared_region(void);
/* VRAMGUARD_SHARED as messages quote it ('name', a long path cut short); "" before vg_shared_attach. */
const char *vg_shared_label(void);
void vg_shared_bind(int dev, const char *uuid, uint64_t total, uint64_t own_limit);
void vg_shared_poll(bool may_reclaim);
/* Before charging dev: 0, or why the allocation must be refused: -EINPROGRESS (the process has not joined its
 * shared region yet, or not registered dev with it, because the region's lock timed out: retried now and at each
 * allocation), -EPERM (joining failed for good). One load when nothing is pending. */
int vg_shared_ready(int dev);
void vg_shared_note_report(void);
/* Write dev's figures that no allocation keeps current (the allocations' logical bytes, the device parts) into the
 * process's slot, for `vramguard top`. The sampler thread calls it every round. */
void vg_shared_publish(int dev);
void vg_shared_atfork_child(void);

/* The wrappers' state (charge.c): set up once by the lazy init; held across fork by the fork handlers. */
VG_HIDDEN void vg_wrappers_init(void);
VG_HIDDEN void vg_wrappers_atfork_prepare(void);
VG_HIDDEN void vg_wrappers_atfork_parent(void);
/* Reset per-process state in a forked child. */
void vg_wrappers_atfork_child(void);

#endif
