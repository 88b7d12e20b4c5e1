/* The interposer's shared state: every global that more than one of its files reads, each with the file that owns
 * it (defines it, writes it, resets it in a forked child) and who else may write it. A global not listed here is
 * its file's own. */
#ifndef VG_GLOBALS_H
#define VG_GLOBALS_H

#include <stdatomic.h>
#include <stdint.h>

#include "accounting/table.h"
#include "config/config.h"

/* init.c: loaded once by vg_init (the thread that moves UNINIT -> INITIALIZING) and never written after; every
 * file reads it once vg_init returned ACTIVE or BADCONFIG. */
extern struct vg_config vg_cfg;

/* Declared with their types elsewhere:
 *   vg_real, vg_hook_names, vg_hook_charges (hooks.h): init.c; vg_real is filled once by vg_real_resolve, under
 *     its lock, before anyone is told it is usable; read-only after.
 *   vg_devmem[], vg_pools[] (devmem.h): devmem.c; hook_pool.c, charge.c and snapshot.c go through its functions
 *     and inline readers.
 *   vg_nvml_real (nvml.h): nvml.c fills it once; nvml_hooks.c reads it.
 *   vg_real_dlsym: route.c's own (dlsym.S jumps through it). */

/* charge.c owns the allocation tables (defines them, resets them in a forked child). The hook files insert and
 * remove entries through charge.c's vg_record / vg_commit / vg_retire / vg_free_end (charge.h) and the tables' own
 * locked calls (accounting/table.h); snapshot.c only reads them, for reports. */
extern struct vg_table vg_ptrs;         /* device pointers: cuMemAlloc, pitch, managed, async */
extern struct vg_table vg_arrays;       /* CUarray and CUmipmappedArray handles */
extern struct vg_table vg_vmm;          /* cuMemCreate handles (refs + maps) */
extern struct vg_table vg_maps;         /* cuMemMap mappings by start address */
extern struct vg_table vg_streams;      /* live streams, with their creation sites (hook_stream.c) */
extern struct vg_table vg_stream_events;/* streams destroyed with work queued, by (create, destroy) site */
/* charge.c; counted up by hook_stream.c, read by snapshot.c (and the last by shared.c, for the region slot). */
extern _Atomic uint64_t vg_streams_created, vg_streams_destroyed, vg_streams_destroyed_pending;

#endif
