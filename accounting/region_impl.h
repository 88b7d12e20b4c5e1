/* Private to accounting/region*.c: the helpers the region's files share (the lock, liveness locks, slot claiming),
 * and the checks on the layout. Nothing outside accounting/ includes this; the API is region.h. */
#ifndef VG_REGION_IMPL_H
#define VG_REGION_IMPL_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "accounting/clock.h"
#include "accounting/region.h"
#include "config/config.h"
#include "config/stat.h"

#define VG_REGION_MAX_FILE ((size_t)32 << 20)

_Static_assert(sizeof(struct vg_region_slot) % 8 == 0, "slot size");
_Static_assert(sizeof(struct vg_region_hdr) + (size_t)VG_REGION_SLOTS_MAX * sizeof(struct vg_region_slot) <=
		       VG_REGION_MAX_FILE, "the largest region fits the size an opener accepts");
_Static_assert(VG_MAX_DEVICES == 64, "devmap covers the tracked ordinals");

/* A path as messages quote it: whole up to 80 bytes, else its start and end with its length (vg_quote), so that a
 * line stays short. The buffer lives until the end of the enclosing block. */
#define VG_QP(p) vg_quote((p), (char[VG_QUOTE_BUF]){ 0 }, VG_QUOTE_BUF)

/* ---- shared by the region's files ---- */

static inline void vg_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void vg_err(char *err, size_t len, const char *fmt, ...)
{
	if (!err || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}


static inline size_t vg_region_size(uint32_t nslots)
{
	return sizeof(struct vg_region_hdr) + (size_t)nslots * sizeof(struct vg_region_slot);
}

/* Our slot, read once. exit() runs vg_region_leave in a destructor while the process's other threads may still
 * allocate and free: leave gives the slot up under the lock, so a charge re-reads it under the lock (and uses that
 * one value) rather than charge a slot that is free again, or index slot[-1]. */
static inline int vg_my_slot(const struct vg_region *r)
{
	return __atomic_load_n(&r->slot, __ATOMIC_ACQUIRE);
}

static inline void vg_set_my_slot(struct vg_region *r, int slot)
{
	__atomic_store_n(&r->slot, slot, __ATOMIC_RELEASE);
}

/* Under the lock: is slot still this process's (not evicted and given to another)? */
static inline bool vg_slot_mine(const struct vg_region *r, int slot)
{
	const struct vg_region_slot *s = &r->h->slot[slot];
	return atomic_load(&s->state) == VG_SLOT_ACTIVE && s->pid == (int32_t)r->member && s->start == r->self_start;
}

/* src into dst[n], cut short at a character boundary (config.h's vg_utf8_cut) when it does not fit. */
static inline void vg_copy_str(char *dst, size_t n, const char *src)
{
	size_t l = src ? strnlen(src, n - 1) : 0;
	if (l == n - 1 && src[l])
		l = vg_utf8_cut(src, l);
	if (l)
		memcpy(dst, src, l);
	dst[l] = '\0';
}

/* region_proc.c: liveness locks and the judgement of a slot's process. */
int vg_live_lock(int fd, uint32_t i, short type);
int vg_live_held(int fd, uint32_t i);
int vg_slot_life_of(const struct vg_region *r, uint32_t i, uint64_t pidns);

/* region_lock.c: the region's lock (repairs what a dead holder left, applies releases kept as debt). */
void vg_region_repair(struct vg_region_hdr *h, uint32_t nslots);
int vg_region_lock(struct vg_region *r);
int vg_region_lock_unless_stuck(struct vg_region *r);
void vg_region_unlock(struct vg_region *r);
int vg_region_lock_say(struct vg_region *r, char *err, size_t errlen);
int vg_admin_lock(struct vg_region *r, char *err, size_t errlen);

/* region_slots.c: slots, under the lock. */
int vg_reclaim_locked(struct vg_region *r);
int vg_claim_locked(struct vg_region *r, pid_t pid, uint64_t start, const char *cmd);
int vg_slot_lock_held(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *after, char *err,
		      size_t errlen);

/* region_charge.c: a GPU's budget in a region spec. */
uint64_t vg_spec_limit(const char *spec, int ordinal, const char *uuid, uint64_t total, int *said);

#endif
