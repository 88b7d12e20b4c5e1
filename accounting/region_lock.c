/* Regions: the lock, a robust process-shared mutex in the file. A holder that died is repaired by the next one (the
 * totals from the slots); a holder that stopped costs a timeout, never a hang, and then releases stop waiting for a
 * while, kept as debt that the next taker applies. The base of the region's files: it calls none of them. */
#define _GNU_SOURCE
#include <errno.h>

#include "accounting/region_impl.h"
#include "accounting/atomic.h"
#include "accounting/clock.h"
#include "accounting/lockorder.h"

void vg_region_repair(struct vg_region_hdr *h, uint32_t nslots)
{
	/* The last holder died inside a critical section: the totals are whatever the slots say. */
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		uint64_t sum = 0;
		for (uint32_t i = 0; i < nslots; i++)
			if (atomic_load(&h->slot[i].state) == VG_SLOT_ACTIVE)
				sum += atomic_load(&h->slot[i].used[d]);
		atomic_store(&h->dev[d].used, sum);
	}
}

/* Under the lock: take back releases that could not get it earlier. */
static void vg_apply_debt(struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (slot < 0)
		return;
	struct vg_region_slot *s = &r->h->slot[slot];
	bool mine = vg_slot_mine(r, slot);
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		uint64_t b = atomic_load_explicit(&r->debt[d], memory_order_relaxed);
		if (!b)
			continue;
		b = atomic_exchange(&r->debt[d], 0);
		if (!mine)
			continue;       /* evicted: what the slot held was released with it */
		/* Never more than we were charged: the rest of the total is other processes' shares. */
		uint64_t su = atomic_load(&s->used[d]), take = su < b ? su : b;
		atomic_fetch_sub(&s->used[d], take);
		vg_atomic_sub_sat(&r->h->dev[d].used, take);
	}
}

static uint64_t vg_mono_ns(void)
{
	return vg_clock_ns(CLOCK_MONOTONIC);
}

/* After a lock timeout, releases stop waiting for a while (they are kept as debt and applied by the next lock):
 * a stopped member must not cost every cuMemFree of the others two seconds. */
#define VG_REGION_STUCK_NS (5ull * VG_NS_PER_SEC)

/* After pthread_mutex_trylock/timedlock returned rc: repair what a dead holder left, apply the releases kept as
 * debt. 0 with the lock held, or the error. */
static int vg_region_locked(struct vg_region *r, int rc)
{
	if (rc == EOWNERDEAD) {
		vg_region_repair(r->h, r->nslots);
		pthread_mutex_consistent(&r->h->lock);
		rc = 0;
	}
	if (rc != 0) {
		vg_lock_note_drop(VG_RANK_REGION);
		return -rc;
	}
	vg_apply_debt(r);
	return 0;
}

static int vg_region_trylock(struct vg_region *r)
{
	vg_lock_note_take(VG_RANK_REGION, false);
	return vg_region_locked(r, pthread_mutex_trylock(&r->h->lock));
}

/* The lock, waiting at most VG_REGION_LOCK_TIMEOUT_MS (then -ETIMEDOUT, and releases only try it for a while). A
 * free lock is taken without reading the clock. */
int vg_region_lock(struct vg_region *r)
{
	vg_lock_note_take(VG_RANK_REGION, false);
	int rc = pthread_mutex_trylock(&r->h->lock);
	if (rc != EBUSY)
		return vg_region_locked(r, rc);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += VG_REGION_LOCK_TIMEOUT_MS / VG_MS_PER_SEC;
	ts.tv_nsec += (long)(VG_REGION_LOCK_TIMEOUT_MS % VG_MS_PER_SEC) * VG_NS_PER_MS;
	if (ts.tv_nsec >= VG_NS_PER_SEC) {
		ts.tv_sec++;
		ts.tv_nsec -= VG_NS_PER_SEC;
	}
	do
		rc = pthread_mutex_timedlock(&r->h->lock, &ts);
	while (rc == EINTR);
	if (rc == ETIMEDOUT)
		atomic_store(&r->stuck_until_ns, vg_mono_ns() + VG_REGION_STUCK_NS);
	return vg_region_locked(r, rc);
}

/* The lock for a release, which can wait as debt: tried, and waited for only while it is not known stuck. */
int vg_region_lock_unless_stuck(struct vg_region *r)
{
	int rc = vg_region_trylock(r);
	if (rc == -EBUSY && atomic_load_explicit(&r->stuck_until_ns, memory_order_relaxed) <= vg_mono_ns())
		rc = vg_region_lock(r);
	return rc;
}

void vg_region_unlock(struct vg_region *r)
{
	pthread_mutex_unlock(&r->h->lock);
	vg_lock_note_drop(VG_RANK_REGION);
}

/* The lock for a command's change, saying why not in err. */
int vg_region_lock_say(struct vg_region *r, char *err, size_t errlen)
{
	int rc = vg_region_lock(r);
	if (rc)
		vg_err(err, errlen, "%s: cannot take the region's lock: %s", VG_QP(r->path), strerror(-rc));
	return rc;
}

/* The start of `vramguard region`'s operations: r opened for changes (VG_OPEN_ADMIN), its lock taken. */
int vg_admin_lock(struct vg_region *r, char *err, size_t errlen)
{
	if (!r->h || r->access != VG_OPEN_ADMIN) {
		vg_err(err, errlen, "%s is not open for changes", VG_QP(r->path));
		return -EBADF;
	}
	return vg_region_lock_say(r, err, errlen);
}
