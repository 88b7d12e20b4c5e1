/* Regions: slots, the members' lifecycle. Join (reclaiming the dead, starting over when every member is gone),
 * leave, and the operator's removal, cleaning, reset and eviction. */
#define _GNU_SOURCE
#include <errno.h>

#include "accounting/region_impl.h"
#include "accounting/atomic.h"

/* ---- slots ---- */

static void vg_slot_clear(struct vg_region *r, uint32_t i)
{
	struct vg_region_hdr *h = r->h;
	struct vg_region_slot *s = &h->slot[i];
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		uint64_t u = atomic_load(&s->used[d]);
		vg_atomic_sub_sat(&h->dev[d].used, u);
		atomic_store(&s->used[d], 0);
		atomic_store(&s->peak[d], 0);
		atomic_store(&s->quota[d], VG_REGION_NONE);
	}
	atomic_store(&s->denied, 0);
	atomic_store(&s->last_report_ns, 0);
	/* pid and start stay until the next join overwrites them: an opener checks the file without the lock, and an
	 * active slot whose pid reads 0 would make it refuse the region as corrupt. The state says the slot is free. */
	s->cmd[0] = '\0';
	s->limit_spec[0] = '\0';
	s->compute_spec[0] = '\0';
	atomic_store(&s->compute_applied_seq, atomic_load(&s->compute_seq));
	s->live_lock = 0;
	atomic_store(&s->bound, 0);
	atomic_store(&s->applied_seq, atomic_load(&s->limit_seq));
	atomic_store(&s->state, VG_SLOT_FREE);
	atomic_fetch_add(&h->generation, 1);
}

/* Under the lock. */
int vg_reclaim_locked(struct vg_region *r)
{
	uint64_t ns = vg_proc_pidns();
	int n = 0, mine = vg_my_slot(r);
	for (uint32_t i = 0; i < r->nslots; i++) {
		if ((int)i == mine || atomic_load(&r->h->slot[i].state) != VG_SLOT_ACTIVE)
			continue;
		if (vg_slot_life_of(r, i, ns) == VG_LIFE_DEAD) {
			vg_slot_clear(r, i);
			n++;
		}
	}
	if (n)
		atomic_fetch_add(&r->h->reclaimed, (uint64_t)n);
	return n;
}

int vg_region_members(const struct vg_region *r)
{
	if (!r->h)
		return 0;
	uint64_t ns = vg_proc_pidns();
	int n = 0;
	for (uint32_t i = 0; i < r->nslots; i++)
		n += vg_slot_life_of(r, i, ns) != VG_LIFE_DEAD;
	return n;
}

int vg_region_reclaim(struct vg_region *r)
{
	if (!r->h || !r->writable || vg_region_lock(r) != 0)
		return 0;
	int n = vg_reclaim_locked(r);
	vg_region_unlock(r);
	return n;
}

/* Under the lock: active slots (alive or unverifiable; the dead are reclaimed first by the callers). */
static int vg_members_locked(const struct vg_region *r)
{
	int n = 0;
	for (uint32_t i = 0; i < r->nslots; i++)
		n += atomic_load(&r->h->slot[i].state) == VG_SLOT_ACTIVE;
	return n;
}

/* Under the lock: mark the region removed, then unlink its name if the name still is this file (someone may have
 * removed it and made a new one meanwhile: that one is not ours to remove). */
static void vg_remove_locked(struct vg_region *r)
{
	struct stat st;
	atomic_store(&r->h->removed, 1);
	if (vg_lstat(r->path, &st) == 0 && (uint64_t)st.st_dev == r->fdev && (uint64_t)st.st_ino == r->fino)
		unlink(r->path);
}

/* Under the lock: claim a free slot for pid/start and take its liveness lock (a free slot whose byte is still
 * locked belongs to an evicted process that runs on: skipped). The slot's bound bits follow our device map, for a
 * process joining again after an eviction. 0 or -ENOSPC. */
int vg_claim_locked(struct vg_region *r, pid_t pid, uint64_t start, const char *cmd)
{
	int got = -1, lk = -1;
	bool self = pid == getpid();    /* only a process itself can hold its lock (tests join for others) */
	for (uint32_t i = 0; i < r->nslots && got < 0; i++) {
		if (atomic_load(&r->h->slot[i].state) != VG_SLOT_FREE)
			continue;
		lk = self ? vg_live_lock(r->fd, i, F_WRLCK) : vg_live_held(r->fd, i) == 1 ? -EAGAIN : -EPERM;
		if (lk != -EAGAIN)
			got = (int)i;
	}
	if (got < 0)
		return -ENOSPC;
	struct vg_region_slot *s = &r->h->slot[got];
	s->pid = (int32_t)pid;
	s->start = start;
	s->pidns = vg_proc_pidns();
	s->uid = (uint32_t)geteuid();
	s->joined_ns = vg_clock_ns(CLOCK_REALTIME);
	s->live_lock = lk == 0;
	vg_copy_str(s->cmd, sizeof(s->cmd), cmd);
	uint32_t bound = 0;
	for (int d = 0; d < VG_MAX_DEVICES; d++)
		if (r->devmap[d] >= 0)
			bound |= 1u << r->devmap[d];
	atomic_store(&s->bound, bound);
	for (int d = 0; d < VG_REGION_DEVS; d++)
		atomic_store(&s->quota[d], atomic_load(&r->own_quota[d]));
	r->seen_slot_seq = atomic_load(&s->limit_seq);
	r->seen_compute_seq = atomic_load(&s->compute_seq);
	atomic_store(&s->state, VG_SLOT_ACTIVE);
	atomic_fetch_add(&r->h->generation, 1);
	atomic_fetch_add(&r->h->joins, 1);
	r->owner = getpid();
	r->member = pid;
	r->self_start = start;
	vg_set_my_slot(r, got);
	return 0;
}

/* Under the lock, with no member left: a region whose members have all exited starts from nothing. A persistent one
 * keeps its budget; any other one that had members takes spec (NULL: keeps its own) as if it were new. */
/* Under the lock: the totals from the active slots alone (in use = their sum, peak = in use, no denials). */
static void vg_totals_rebuild_locked(struct vg_region *r)
{
	vg_region_repair(r->h, r->nslots);
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		atomic_store(&r->h->dev[d].peak, atomic_load(&r->h->dev[d].used));
		atomic_store(&r->h->dev[d].denied, 0);
	}
}

static void vg_start_over_locked(struct vg_region *r, const char *spec)
{
	struct vg_region_hdr *h = r->h;
	vg_totals_rebuild_locked(r);    /* no member: zero */
	if ((h->flags & VG_REGION_PERSISTENT) || atomic_load(&h->joins) == 0 || h->kind != VG_REGION_SHARED)
		return;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		/* The GPUs register again, with limits resolved from the new spec. */
		struct vg_region_dev *v = &h->dev[d];
		memset(v->uuid, 0, sizeof(v->uuid));
		v->ordinal = -1;
		v->total = 0;
		atomic_store(&v->limit, VG_REGION_NONE);
	}
	if (spec) {
		vg_copy_str(h->created_spec, sizeof(h->created_spec), spec);
		vg_copy_str(h->spec, sizeof(h->spec), spec);
	}
	h->created_ns = vg_clock_ns(CLOCK_REALTIME);
	h->creator_pid = (int32_t)getpid();
	h->creator_uid = (uint32_t)geteuid();
	r->started_over = true;
}

int vg_region_join(struct vg_region *r, pid_t pid, uint64_t start, const char *cmd, const char *spec, char *err,
		   size_t errlen)
{
	if (!r->h || !r->writable)
		return -EBADF;
	int rc = vg_region_lock(r);
	if (rc) {
		vg_err(err, errlen, "%s: the region's lock is held by a process that does not let go (stopped?): %s",
		       VG_QP(r->path), strerror(-rc));
		return rc;
	}
	if (atomic_load(&r->h->removed)) {
		vg_region_unlock(r);
		vg_err(err, errlen, "%s was removed while this process was joining it", VG_QP(r->path));
		return -ESTALE;
	}
	vg_reclaim_locked(r);
	/* A slot with our own PID and start time is this process before an exec: its memory went with the old image. */
	uint64_t ns = vg_proc_pidns();
	for (uint32_t i = 0; i < r->nslots; i++) {
		struct vg_region_slot *s = &r->h->slot[i];
		if (atomic_load(&s->state) == VG_SLOT_ACTIVE && s->pid == (int32_t)pid && s->start == start &&
		    (!s->pidns || !ns || s->pidns == ns))
			vg_slot_clear(r, i);
	}
	r->started_over = false;
	if (vg_members_locked(r) == 0)
		vg_start_over_locked(r, spec);
	if (vg_claim_locked(r, pid, start, cmd) != 0) {
		vg_region_unlock(r);
		vg_err(err, errlen, "%s is full: %u processes have joined it and all are alive (a region's process slots "
		       "are set when it is made: `vramguard region create NAME --slots N`, or VRAMGUARD_SHARED_SLOTS for the "
		       "process that creates it)", VG_QP(r->path), r->nslots);
		return -ENOSPC;
	}
	vg_region_unlock(r);
	return 0;
}

void vg_region_leave(struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (!r->h || slot < 0 || r->owner != getpid())
		return;
	if (vg_region_lock(r) == 0) {
		/* Under the lock: no charge of another thread lands in the slot once it is cleared (see vg_my_slot). */
		vg_set_my_slot(r, -1);
		if (vg_slot_mine(r, slot))
			vg_slot_clear(r, (uint32_t)slot);
		vg_live_lock(r->fd, (uint32_t)slot, F_UNLCK);
		bool last = r->kind == VG_REGION_CONTROL;
		if (!last && !(r->h->flags & VG_REGION_PERSISTENT)) {
			vg_reclaim_locked(r);   /* members that died without leaving do not keep it */
			last = vg_members_locked(r) == 0;
		}
		if (last)
			vg_remove_locked(r);
		vg_region_unlock(r);
		return;
	}
	vg_set_my_slot(r, -1);  /* the lock is stuck: the slot is reclaimed once this process is gone */
}

int vg_region_remove(struct vg_region *r, bool force, int *members, char *err, size_t errlen)
{
	if (members)
		*members = 0;
	int rc = vg_admin_lock(r, err, errlen);
	if (rc)
		return rc;
	vg_reclaim_locked(r);
	int n = vg_members_locked(r);
	if (members)
		*members = n;
	if (n && !force) {
		vg_region_unlock(r);
		vg_err(err, errlen, "%s has %d live member%s", VG_QP(r->path), n, n == 1 ? "" : "s");
		return -EBUSY;
	}
	vg_remove_locked(r);
	vg_region_unlock(r);
	return 0;
}

int vg_region_clean(struct vg_region *r, uint64_t min_age_ns, bool *removed)
{
	*removed = false;
	if (!r->h || r->access != VG_OPEN_ADMIN || vg_region_lock(r) != 0)
		return 0;
	int n = 0;
	if (!atomic_load(&r->h->removed)) {
		n = vg_reclaim_locked(r);
		uint64_t age = vg_clock_ns(CLOCK_REALTIME) - r->h->created_ns;
		if (!(r->h->flags & VG_REGION_PERSISTENT) && vg_members_locked(r) == 0 &&
		    (atomic_load(&r->h->joins) > 0 || age >= min_age_ns)) {
			vg_remove_locked(r);
			*removed = true;
		}
	}
	vg_region_unlock(r);
	return n;
}

int vg_region_reset(struct vg_region *r, char *err, size_t errlen)
{
	int rc = vg_admin_lock(r, err, errlen);
	if (rc)
		return rc;
	vg_reclaim_locked(r);
	vg_totals_rebuild_locked(r);
	vg_region_unlock(r);
	return 0;
}

/* A command's change to slot, which must still hold pid/start (checked under the lock: the process may have left
 * and another taken the slot since the command looked). 0 with the lock held, or -EINVAL (no such slot), -ESRCH
 * ("process PID left PATH" and after), or the lock's error, with err. */
int vg_slot_lock_held(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *after, char *err,
			     size_t errlen)
{
	if (!r->h || !r->writable || slot < 0 || (uint32_t)slot >= r->nslots) {
		vg_err(err, errlen, "no such process slot in %s", VG_QP(r->path));
		return -EINVAL;
	}
	int rc = vg_region_lock_say(r, err, errlen);
	if (rc)
		return rc;
	struct vg_region_slot *s = &r->h->slot[slot];
	if (atomic_load(&s->state) != VG_SLOT_ACTIVE || s->pid != (int32_t)pid || s->start != start) {
		vg_region_unlock(r);
		vg_err(err, errlen, "process %d left %s %s", (int)pid, VG_QP(r->path), after);
		return -ESRCH;
	}
	return 0;
}

int vg_region_evict(struct vg_region *r, int slot, pid_t pid, uint64_t start, bool force,
		    uint64_t freed[VG_REGION_DEVS], char *err, size_t errlen)
{
	memset(freed, 0, VG_REGION_DEVS * sizeof(freed[0]));
	if (r->kind != VG_REGION_SHARED) {
		vg_err(err, errlen, "no such process slot in %s", VG_QP(r->path));
		return -EINVAL;
	}
	if (r->access != VG_OPEN_ADMIN) {
		vg_err(err, errlen, "%s is not open for changes", VG_QP(r->path));
		return -EBADF;
	}
	int rc = vg_slot_lock_held(r, slot, pid, start, "meanwhile", err, errlen);
	if (rc)
		return rc;
	struct vg_region_slot *s = &r->h->slot[slot];
	if (!force && vg_slot_life_of(r, (uint32_t)slot, vg_proc_pidns()) == VG_LIFE_ALIVE) {
		vg_region_unlock(r);
		vg_err(err, errlen, "process %d is alive (it holds its liveness lock)", (int)pid);
		return -EBUSY;
	}
	for (int d = 0; d < VG_REGION_DEVS; d++)
		freed[d] = atomic_load(&s->used[d]);
	vg_slot_clear(r, (uint32_t)slot);
	atomic_fetch_add(&r->h->evicted, 1);
	vg_region_unlock(r);
	return 0;
}

int vg_region_find_pid(struct vg_region *r, pid_t pid)
{
	if (!r->h)
		return -1;
	uint64_t ns = vg_proc_pidns();
	int other = -1;
	for (uint32_t i = 0; i < r->nslots; i++) {
		struct vg_region_slot *s = &r->h->slot[i];
		if (atomic_load(&s->state) != VG_SLOT_ACTIVE || s->pid != (int32_t)pid ||
		    vg_slot_life_of(r, i, ns) == VG_LIFE_DEAD)
			continue;
		if (!s->pidns || !ns || s->pidns == ns)
			return (int)i;
		if (other < 0)
			other = (int)i;
	}
	return other;
}
