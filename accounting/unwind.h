/* Stack capture for call sites: the calling thread's return addresses, innermost first. On x86-64 a walker with a
 * cache of per-return-address frame recipes read from the DWARF CFI; whatever it cannot describe goes to libgcc's
 * _Unwind_Backtrace, whose answer it always equals. Elsewhere libgcc only. Internal (hidden) to the library. */
#ifndef VG_UNWIND_H
#define VG_UNWIND_H

#include <stdint.h>

/* Load libgcc's unwinder: once, before the first capture, outside any hook (it may dlopen libgcc_s). */
void vg_unwind_init(void);

/* Up to max return addresses of the caller's stack, innermost first, leading frames whose address lies in
 * [skip_lo, skip_hi) left out (vramguard's own). Returns how many. */
int vg_unwind_capture(void **buf, int max, uintptr_t skip_lo, uintptr_t skip_hi);

/* Around the real dlclose (interposer/route.c): code about to be unmapped may be replaced by other code at the same
 * addresses, whose frames the cached recipes would misread. */
void vg_unwind_dlclose_begin(void);
void vg_unwind_dlclose_end(void);
/* In a forked child (a dlclose in flight in another thread never ends there). */
void vg_unwind_atfork_child(void);

/* For tests: the two halves of vg_unwind_capture (the fast one returns -1 where libgcc must answer instead), and
 * counters. */
int vg_unwind_fast(void **buf, int max, uintptr_t skip_lo, uintptr_t skip_hi);
int vg_unwind_libgcc(void **buf, int max, uintptr_t skip_lo, uintptr_t skip_hi);
struct vg_unwind_stats {
	uint64_t fast, fallback;        /* this thread's captures answered by the cached walk / by libgcc */
	uint64_t misses;                /* this thread's recipes read from the CFI */
	uint64_t flushes;               /* times the cache was emptied after a dlclose (process-wide) */
};
void vg_unwind_stats(struct vg_unwind_stats *st);

#endif
