/* The interposer's shared state: every global that more than one of its files reads, each with the file that owns
 * it (defines it, writes it, resets it in a forked child) and who else may write it. A global not listed here is
 * its file's own. */
#ifndef VG_GLOBALS_H
#define VG_GLOBALS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accounting/table.h"
#include "config/config.h"

/* base.c: loaded once (vg_config_read: by vg_init, or first by the NVML view) and never written after; every file
 * reads it once vg_init returned ACTIVE or BADCONFIG, the NVML view once vg_config_read returned. */
extern struct vg_config vg_cfg __attribute__((visibility("hidden")));  /* hidden: one load less per use */

/* Declared with their types elsewhere:
 *   vg_real, vg_hook_names, vg_hook_charges (hooks.h), vg_hook_depth (base.h): base.c; vg_real is filled once by
 *     vg_real_resolve, under its lock, before anyone is told it is usable; read-only after.
 *   vg_dev[] (device.c, static): the quota in force; only device.c writes it, everyone reads it through
 *     vg_device_info / vg_device_info_cached (device.h).
 *   vg_shared_self, vg_shared_self_ready (shared.h): shared.c; read through vg_shared_region().
 *   vg_devmem[], vg_pools[] (devmem.h): devmem.c; charge.c (a pool's growth and live bytes), cuda/hook_pool.c and
 *     snapshot.c go through its functions and inline readers.
 *   vg_nvml_real (nvml/nvml.h): nvml/nvml.c fills it once; nvml/nvml_hooks.c reads it.
 *   vg_real_dlsym: base.c's (dlsym.S jumps through it). */

/* tables.c owns the allocation tables (defines them, makes them at start-up, resets them in a forked child). The hook
 * files insert and remove entries through charge.c's vg_record / vg_commit / vg_retire / vg_free_end (charge.h) and
 * the tables' own locked calls (accounting/table.h); snapshot.c only reads them, for reports, and shared.c counts
 * them for the process's slot. */
extern struct vg_table vg_ptrs;         /* device pointers: cuMemAlloc, pitch, managed, async */
extern struct vg_table vg_arrays;       /* CUarray and CUmipmappedArray handles */
extern struct vg_table vg_vmm;          /* cuMemCreate handles (refs + maps) */
extern struct vg_table vg_maps;         /* cuMemMap mappings by start address */
extern struct vg_table vg_streams;      /* live streams, with their creation sites (cuda/hook_stream.c) */
extern struct vg_table vg_stream_events;/* streams destroyed with work queued, by (create, destroy) site */
/* tables.c; counted up by cuda/hook_stream.c, read by snapshot.c (and the last by shared.c, for the region slot). */
extern _Atomic uint64_t vg_streams_created, vg_streams_destroyed, vg_streams_destroyed_pending;
/* cuda/hook_stream.c: bumped by every stream creation (a cached handle may now name another stream); read by
 * cuda/hook_pool.c. */
extern _Atomic unsigned vg_stream_gen;
/* base.c: set by cuda/hook_stream.c when the first stream capture begins; read by cuda/hook_pool.c and compute.c
 * (before it, no stream can be capturing: nothing asks). */
extern _Atomic bool vg_capture_begun;

#endif
