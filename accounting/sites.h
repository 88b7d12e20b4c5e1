/* Call sites: the caller's stack at an allocation or stream call, captured by accounting/unwind.c, interned so
 * that identical stacks are stored once, with live/total counters. Symbolized only when a report is written. */
#ifndef VG_SITES_H
#define VG_SITES_H

#include <stdatomic.h>
#include <stdint.h>

#include <uthash.h>

#include "accounting/pyframes.h"

#define VG_SITE_MAX_FRAMES 64
#define VG_SITE_MAX_PYFRAMES 64
#define VG_SITE_PYKEY_WORDS (sizeof(struct vg_pykey) / sizeof(void *))

/* A site is told apart by its key: the native return addresses, then the Python frames as (code, file, offset)
 * keys (accounting/pyframes.h), both in frames[]. The Python frames' text is copied into py[] when the site is
 * first seen, while their code objects are certainly alive. */
struct vg_site {
	uint32_t id;                    /* 1, 2, ... in order of first use; stable for the life of the process */
	uint16_t nframes;
	uint16_t api;                   /* enum vg_hook_id of its first use */
	uint16_t npy;                   /* Python frames resolved in py[] (and keyed after the native frames) */
	uint16_t npykey;                /* Python frames in the key */
	struct vg_pyframe *py;          /* innermost first */
	_Atomic uint64_t total_allocs, total_bytes;     /* live figures come from the tables (reports) */
	UT_hash_handle hh;
	void *frames[];                 /* return addresses, innermost first; then npykey struct vg_pykey */
};

/* Set the depth (0 disables capture; also the Python frames' bound), whether Python frames are captured
 * (VRAMGUARD_PYTHON; info gets the one line saying why not where CPython is present) and the address range of
 * vramguard's own code, whose frames are dropped. */
void vg_sites_configure(int depth, int python, void (*info)(const char *msg), uintptr_t own_lo, uintptr_t own_hi);
int vg_sites_depth(void);

/* Capture the current stack and intern it. NULL when capture is off or memory is short. */
struct vg_site *vg_site_capture(int api);

/* Count an allocation made there (its live figures come from the tables: a free does not touch its site). */
void vg_site_alloc(struct vg_site *s, uint64_t bytes);

/* Visit every site (under the shard locks; fn must not capture). */
void vg_sites_foreach(void (*fn)(struct vg_site *s, void *arg), void *arg);
uint32_t vg_sites_count(void);

/* fork: lock / unlock around fork; in the child keep the sites (they are code locations) but zero the counters. */
void vg_sites_lock_all(void);
void vg_sites_unlock_all(void);
void vg_sites_reset_child(void);

#endif
