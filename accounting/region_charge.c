/* Regions: charging. The devices a process registers, and its charges against a shared budget under the region's
 * lock (region_lock.c), joining again first if the operator evicted it (region_slots.c). */
#define _GNU_SOURCE
#include <errno.h>

#include "accounting/region_impl.h"
#include "accounting/atomic.h"

/* ---- devices and limits ---- */

uint64_t vg_spec_limit(const char *spec, int ordinal, const char *uuid, uint64_t total, int *said)
{
	struct vg_limits l;
	char e[VG_ERR_MAX];
	*said = 0;
	if (!spec || !*spec)
		return VG_REGION_NONE;
	if (vg_parse_limits("region limit", spec, (uint64_t)1 << 20, &l, e, sizeof(e)) != 0)
		return VG_REGION_NONE;  /* validated before it was stored */
	return vg_limits_for(&l, ordinal, uuid, total, NULL, said);
}

int vg_region_bind(struct vg_region *r, int dev, const char *uuid, uint64_t total, uint64_t own_limit)
{
	int slot = vg_my_slot(r);
	if (!r->h || dev < 0 || dev >= VG_MAX_DEVICES || slot < 0)
		return -EINVAL;
	if (r->devmap[dev] >= 0) {
		vg_region_set_quota(r, dev, own_limit);
		return r->devmap[dev];
	}
	char key[VG_REGION_UUID_MAX];
	if (uuid && *uuid)
		vg_copy_str(key, sizeof(key), uuid);
	else
		snprintf(key, sizeof(key), "ordinal:%d", dev);
	int rc = vg_region_lock(r);
	if (rc)
		return rc;
	struct vg_region_hdr *h = r->h;
	int idx = -1, fr = -1;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		if (h->dev[d].uuid[0] == '\0') {
			if (fr < 0)
				fr = d;
		} else if (strncmp(h->dev[d].uuid, key, sizeof(key)) == 0) {
			idx = d;
			break;
		}
	}
	if (idx < 0 && fr >= 0) {
		idx = fr;
		struct vg_region_dev *v = &h->dev[idx];
		vg_copy_str(v->uuid, sizeof(v->uuid), key);
		v->ordinal = dev;
		v->total = total;
		int said;
		uint64_t lim = h->kind == VG_REGION_SHARED ? vg_spec_limit(h->spec, dev, uuid, total, &said) : VG_REGION_NONE;
		atomic_store(&v->limit, lim);
	}
	vg_region_unlock(r);
	if (idx < 0)
		return -ENOSPC;
	r->devmap[dev] = (int8_t)idx;
	atomic_fetch_or(&r->h->slot[slot].bound, 1u << idx);
	vg_region_set_quota(r, dev, own_limit);
	return idx;
}

void vg_region_set_quota(struct vg_region *r, int dev, uint64_t own_limit)
{
	int slot = vg_my_slot(r);
	if (!r->h || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return;
	atomic_store(&r->own_quota[r->devmap[dev]], own_limit);
	atomic_store(&r->h->slot[slot].quota[r->devmap[dev]], own_limit);
}

void vg_region_publish_counts(struct vg_region *r, const struct vg_region_counts *c)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0)
		return;
	struct vg_region_slot *s = &r->h->slot[slot];
	atomic_store_explicit(&s->allocs, c->allocs, memory_order_relaxed);
	atomic_store_explicit(&s->denied_bytes, c->denied_bytes, memory_order_relaxed);
	atomic_store_explicit(&s->live_allocs, c->live_allocs, memory_order_relaxed);
	atomic_store_explicit(&s->streams_pending, c->streams_pending, memory_order_relaxed);
}

void vg_region_publish_compute(struct vg_region *r, int dev, uint32_t pm, uint32_t recent_pm, uint64_t gpu_ns)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return;
	struct vg_region_slot *s = &r->h->slot[slot];
	int i = r->devmap[dev];
	atomic_store_explicit(&s->compute_pm[i], pm, memory_order_relaxed);
	atomic_store_explicit(&s->compute_recent_pm[i], recent_pm, memory_order_relaxed);
	atomic_store_explicit(&s->gpu_time_ns[i], gpu_ns, memory_order_relaxed);
	atomic_store_explicit(&s->compute_published, 1, memory_order_release);
}

void vg_region_publish_forecast(struct vg_region *r, int dev, bool has, uint64_t seconds)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return;
	uint32_t v = !has ? 0 : seconds >= UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)seconds + 1;
	atomic_store_explicit(&r->h->slot[slot].forecast[r->devmap[dev]], v, memory_order_relaxed);
}

void vg_region_publish(struct vg_region *r, int dev, int count_mode, uint64_t alloc, uint64_t driver, uint64_t soft)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return;
	struct vg_region_slot *s = &r->h->slot[slot];
	atomic_store_explicit(&s->alloc[r->devmap[dev]], alloc, memory_order_relaxed);
	atomic_store_explicit(&s->driver[r->devmap[dev]], driver, memory_order_relaxed);
	atomic_store_explicit(&s->soft[r->devmap[dev]], soft, memory_order_relaxed);
	/* Last, released: a reader that loads it first (acquire) and sees it set sees the figures above, and the
	 * process counters published before them. */
	atomic_store_explicit(&s->count_mode, (uint32_t)count_mode, memory_order_release);
}

bool vg_region_control_counters(struct vg_region *r, int dev, _Atomic uint64_t **used, _Atomic uint64_t **peak)
{
	int slot = vg_my_slot(r);
	if (!r->h || r->kind != VG_REGION_CONTROL || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return false;
	*used = &r->h->slot[slot].used[r->devmap[dev]];
	*peak = &r->h->slot[slot].peak[r->devmap[dev]];
	return true;
}

/* Under the lock: our slot was taken from us (`vramguard region evict --force`), and what it held released with
 * it. Give up its liveness byte and join again. Our slot now, or -1 if the region is full. */
static int vg_rejoin_locked(struct vg_region *r, int old)
{
	char cmd[VG_REGION_CMD_MAX];
	vg_live_lock(r->fd, (uint32_t)old, F_UNLCK);
	vg_set_my_slot(r, -1);
	for (int d = 0; d < VG_REGION_DEVS; d++)
		atomic_store(&r->debt[d], 0);
	vg_proc_cmdline(0, true, cmd, sizeof(cmd));
	if (vg_claim_locked(r, r->member, r->self_start, cmd) != 0)
		return -1;
	atomic_fetch_add(&r->rejoined, 1);
	return vg_my_slot(r);
}

/* Under the lock: our slot (joined again if it was taken from us), -1 if we left it (exiting), -EUSERS if it was
 * taken from us and the region is full now. */
static int vg_slot_locked(struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (slot < 0 || vg_slot_mine(r, slot))
		return slot;
	slot = vg_rejoin_locked(r, slot);
	return slot >= 0 ? slot : -EUSERS;
}

/* The totals change under the lock, but vg_region_force adds to them without it when the lock cannot be had:
 * they are changed with read-modify-write operations (vg_atomic_sub_sat, vg_atomic_max) so that no add is lost. */

/* Under the lock; slot read under it too. */
static void vg_charge_locked(struct vg_region *r, int slot, int idx, uint64_t bytes)
{
	struct vg_region_dev *v = &r->h->dev[idx];
	struct vg_region_slot *s = &r->h->slot[slot];
	uint64_t du = atomic_fetch_add(&v->used, bytes) + bytes;   /* an add, not a store: see vg_region_force */
	vg_atomic_max(&v->peak, du);
	uint64_t su = atomic_fetch_add(&s->used[idx], bytes) + bytes;
	vg_atomic_max(&s->peak[idx], su);
}

/* The region device of CUDA ordinal dev, and our slot (read once: *slot), or -1. */
static int vg_region_idx(struct vg_region *r, int dev, int *slot)
{
	if (!r || !r->h || dev < 0 || dev >= VG_MAX_DEVICES || (*slot = vg_my_slot(r)) < 0)
		return -1;
	return r->devmap[dev];
}

/* A control segment has no budget: it only shows this process's usage (no lock; this process is its only writer). */
static void vg_control_charge(struct vg_region *r, int slot, int idx, uint64_t bytes)
{
	struct vg_region_slot *s = &r->h->slot[slot];
	vg_atomic_max(&s->peak[idx], atomic_fetch_add(&s->used[idx], bytes) + bytes);
}

int vg_region_reserve(struct vg_region *r, int dev, uint64_t bytes, uint64_t *used, uint64_t *limit)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0)
		return 0;
	if (r->kind == VG_REGION_CONTROL) {
		vg_control_charge(r, slot, idx, bytes);
		return 0;
	}
	int rc = vg_region_lock(r);
	if (rc)
		return rc;
	if ((slot = vg_slot_locked(r)) < 0) {
		vg_region_unlock(r);
		/* Left the region meanwhile (exiting): nothing to charge. Evicted with the region full: not countable. */
		return slot == -EUSERS ? -EUSERS : 0;
	}
	struct vg_region_dev *v = &r->h->dev[idx];
	for (int pass = 0; pass < 2; pass++) {
		uint64_t lim = atomic_load(&v->limit), u = atomic_load(&v->used);
		if (lim == VG_REGION_NONE || (bytes <= lim && u <= lim - bytes)) {
			vg_charge_locked(r, slot, idx, bytes);
			vg_region_unlock(r);
			return 0;
		}
		if (used)
			*used = u;
		if (limit)
			*limit = lim;
		/* Reclaim before refusing: a dead member's share never causes a refusal. It reads /proc/PID/stat of each
		 * member (about 10 us each; a full region of 128 costs about 1 ms), only on this refusal path. */
		if (pass > 0 || vg_reclaim_locked(r) == 0)
			break;          /* nobody to reclaim: the budget really is spent */
	}
	atomic_fetch_add(&v->denied, 1);
	vg_region_unlock(r);
	return -ENOSPC;
}

void vg_region_force(struct vg_region *r, int dev, uint64_t bytes)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0)
		return;
	if (r->kind == VG_REGION_CONTROL) {
		vg_control_charge(r, slot, idx, bytes);
		return;
	}
	if (vg_region_lock(r) == 0) {
		if ((slot = vg_slot_locked(r)) >= 0)
			vg_charge_locked(r, slot, idx, bytes);
		vg_region_unlock(r);
		return;
	}
	/* Could not lock: cancel against pending releases, or charge without the lock on the atomics. */
	uint64_t d = atomic_load(&r->debt[idx]);
	while (d && !atomic_compare_exchange_weak(&r->debt[idx], &d, d >= bytes ? d - bytes : 0))
		;
	if (d < bytes) {
		atomic_fetch_add(&r->h->dev[idx].used, bytes - d);
		if (vg_slot_mine(r, slot))      /* without the lock: at worst the slot's own figure misses it */
			atomic_fetch_add(&r->h->slot[slot].used[idx], bytes - d);
	}
}

void vg_region_release(struct vg_region *r, int dev, uint64_t bytes)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0)
		return;
	if (r->kind == VG_REGION_CONTROL) {
		vg_atomic_sub_sat(&r->h->slot[slot].used[idx], bytes);
		return;
	}
	atomic_fetch_add(&r->debt[idx], bytes);
	/* Taking the lock applies the debt. While the lock is known stuck, a release only tries it. */
	if (vg_region_lock_unless_stuck(r) == 0)
		vg_region_unlock(r);
}

bool vg_region_avail(struct vg_region *r, int dev, uint64_t *avail, uint64_t *limit)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0 || r->kind != VG_REGION_SHARED)
		return false;
	uint64_t lim = atomic_load(&r->h->dev[idx].limit);
	if (lim == VG_REGION_NONE)
		return false;
	uint64_t u = atomic_load(&r->h->dev[idx].used);
	*avail = lim > u ? lim - u : 0;
	*limit = lim;
	return true;
}

void vg_region_note_denied(struct vg_region *r)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (r && r->h && slot >= 0)
		atomic_fetch_add(&r->h->slot[slot].denied, 1);
}

void vg_region_note_report(struct vg_region *r, uint64_t realtime_ns)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (r && r->h && slot >= 0)
		atomic_store(&r->h->slot[slot].last_report_ns, realtime_ns);
}
