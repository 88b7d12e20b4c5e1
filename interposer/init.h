/* The process's side of every hook (init.c): the lazy init and its states, the hook prologue that keeps nested
 * calls out, and the real driver table. Every interposer file includes this header. */
#ifndef VG_INIT_H
#define VG_INIT_H

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

/* The process-level lazy init (config, fork handler). Cheap after the first call. Returns the mode. */
enum vg_mode vg_init(void);

/* Hook prologue: returns the mode this call runs under, and marks the thread as inside a hook. A nested hook call
 * (the driver calling an exported name, or our own code) gets VG_MODE_PASSIVE and goes straight to the real
 * function. Every vg_hook_enter() is paired with vg_hook_leave(). */
enum vg_mode vg_hook_enter(void);
void vg_hook_leave(void);
/* The hook is about to reserve for an allocation it asks the driver for on dev, or to have the driver free one
 * before uncharging it: counted as under way (vg_quota_begin) until the hook returns (vg_hook_leave ends it), so that
 * a measurement of the driver's own memory never takes a difference between our figure and the driver's that is
 * only a call in progress for the driver's own memory. */
void vg_hook_inflight(int dev);

#endif
