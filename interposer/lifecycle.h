/* The library's life in a process (lifecycle.c), on top of every other part of the interposer: it starts them at the
 * first hook call, keeps them consistent across fork, and leaves the region at exit. Nothing below calls it; the
 * hooks (cuda/, route.c) enter through it. */
#ifndef VG_LIFECYCLE_H
#define VG_LIFECYCLE_H

#include "interposer/base.h"

/* The process-level lazy init (config, the tables, the region, call sites, the reporter, the fork handlers). Cheap
 * after the first call. Returns the mode. */
enum vg_mode vg_init(void);

/* Hook prologue: returns the mode this call runs under, and marks the thread as inside a hook; the first call of the
 * process starts the library (vg_init). A nested hook call (the driver calling an exported name, or our own code)
 * gets VG_MODE_PASSIVE and goes straight to the real function. Every vg_hook_enter() is paired with
 * vg_hook_leave() (base.h). */
enum vg_mode vg_hook_enter(void);

#endif
