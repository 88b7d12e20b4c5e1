/* Quota counters. The reserve is a compare-and-swap on `used`, so concurrent allocators can never exceed a limit
 * together; the driver call happens after the reserve and a failure rolls it back. */
#include <errno.h>
#include <stddef.h>

#include "accounting/atomic.h"
#include "accounting/quota.h"
#include "accounting/region.h"

struct vg_region *_Atomic vg_quota_region;

struct vg_counters vg_quota[VG_MAX_DEVICES] = {
#define VG_Q1 { .limit = VG_NO_LIMIT, .soft = VG_NO_LIMIT }
#define VG_Q8 VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1, VG_Q1
	VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8, VG_Q8,
#undef VG_Q8
#undef VG_Q1
};
_Static_assert(VG_MAX_DEVICES == 64, "vg_quota initialiser assumes 64 devices");
_Static_assert(offsetof(struct vg_counters, soft_fired) + sizeof(uint32_t) <= offsetof(struct vg_counters, used) &&
	       offsetof(struct vg_counters, used) == 64, "the soft limit shares the limit's read-mostly line");

static void vg_quota_release_local(int dev, uint64_t bytes);

/* Statistics shards. The first VG_QUOTA_OWNED threads that count something each own a shard and update it with
 * plain loads and stores (one writer; readers only sum); later threads share the last shard with atomic
 * read-modify-writes. A shard is never handed to another thread (a thread's exit does not free it), so a process
 * that churns through threads ends up on the shared one: slower, never wrong. */
#define VG_QUOTA_SHARDS 16
#define VG_QUOTA_OWNED (VG_QUOTA_SHARDS - 1)

struct vg_quota_shard {
	struct {
		_Atomic uint64_t allocs, frees, largest;
		_Atomic uint64_t in_bytes, out_bytes;   /* bytes allocated / freed, ever */
		_Atomic uint64_t credit;        /* small-allocation credit of the owner (below) */
		_Atomic uint64_t releases;      /* vg_quota_release calls, ever (vg_quota_releases) */
		_Atomic uint64_t begun, done;   /* allocations the driver was asked for / answered, ever (vg_quota_inflight) */
	} dev[VG_MAX_DEVICES];
} __attribute__((aligned(64)));

static struct vg_quota_shard vg_quota_shards[VG_QUOTA_SHARDS];
static _Atomic uint32_t vg_quota_shard_next;
static __thread struct vg_quota_shard *vg_quota_shard_tls __attribute__((tls_model("initial-exec")));
#define VG_QUOTA_SHARED_SHARD (&vg_quota_shards[VG_QUOTA_OWNED])

static struct vg_quota_shard *vg_quota_shard_claim(void)
{
	uint32_t i = atomic_fetch_add_explicit(&vg_quota_shard_next, 1, memory_order_relaxed);
	return vg_quota_shard_tls = &vg_quota_shards[i < VG_QUOTA_OWNED ? i : VG_QUOTA_OWNED];
}

static inline struct vg_quota_shard *vg_quota_shard(void)
{
	struct vg_quota_shard *sh = vg_quota_shard_tls;
	return __builtin_expect(sh != NULL, 1) ? sh : vg_quota_shard_claim();
}

/* *p += v: a plain load and store on an owned shard, an atomic add on the shared one. */
static inline void vg_shard_add(const struct vg_quota_shard *sh, _Atomic uint64_t *p, uint64_t v)
{
	if (sh != VG_QUOTA_SHARED_SHARD)
		atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + v, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}

static inline _Atomic uint64_t *vg_used_of(struct vg_counters *q)
{
	_Atomic uint64_t *p = atomic_load_explicit(&q->usedp, memory_order_acquire);
	return __builtin_expect(p == NULL, 1) ? &q->used : p;
}

static inline _Atomic uint64_t *vg_peak_of(struct vg_counters *q)
{
	_Atomic uint64_t *p = atomic_load_explicit(&q->peakp, memory_order_acquire);
	return __builtin_expect(p == NULL, 1) ? &q->peak : p;
}

/* The shared budget the process charges, or NULL. */
static inline struct vg_region *vg_budget_region(void)
{
	return atomic_load_explicit(&vg_quota_region, memory_order_acquire);
}

void vg_quota_place(int dev, _Atomic uint64_t *used, _Atomic uint64_t *peak)
{
	if (!vg_quota_tracked(dev) || !used || !peak)
		return;
	struct vg_counters *q = &vg_quota[dev];
	/* Publish first, then move what the old place holds, so that a charge or release racing with the move lands
	 * in one place or the other and is never lost. */
	atomic_store(used, 0);
	atomic_store(peak, 0);
	atomic_store_explicit(&q->peakp, peak, memory_order_release);
	atomic_store_explicit(&q->usedp, used, memory_order_release);
	atomic_fetch_add(used, atomic_exchange(&q->used, 0));
	vg_atomic_max(peak, atomic_load(&q->peak));
}

/* Small-allocation credit. The quota's counter is one cache line that every allocating thread writes: two threads
 * allocating at once pass it back and forth twice a pair. A thread that owns a shard keeps instead up to
 * 2 x VG_CREDIT_CHUNK of quota charged to the counter but not handed out, and serves allocations and frees of at
 * most VG_CREDIT_SMALL bytes from it, on its own line. The counter therefore includes every credit: the limit is
 * checked against it (so it is never exceeded), it is an upper bound of what is allocated (peak, `vramguard top`),
 * and exact usage is the counter less the credits (vg_quota_used: reports, cuMemGetInfo, messages). Credit is served
 * only while the counter is within the limit (a limit lowered below usage refuses from the next allocation), and
 * every credit is taken back before a refusal, so credit never causes one. Not with a shared budget, whose region
 * is charged allocation by allocation anyway. */
#define VG_CREDIT_SMALL ((uint64_t)256 << 10)
#define VG_CREDIT_CHUNK ((uint64_t)1 << 20)

/* How far the counter can be above exact usage: every owned shard's credit at its most (a release tops it past
 * 2 chunks by at most one small allocation before handing it back). */
#define VG_CREDIT_SLACK ((uint64_t)VG_QUOTA_OWNED * (2 * VG_CREDIT_CHUNK + VG_CREDIT_SMALL))

static uint64_t vg_credit_sum(int dev)
{
	uint64_t n = 0;
	for (int i = 0; i < VG_QUOTA_OWNED; i++)
		n += atomic_load_explicit(&vg_quota_shards[i].dev[dev].credit, memory_order_relaxed);
	return n;
}

/* Take every thread's credit on dev back into the counter's free room. */
static void vg_credit_reclaim(int dev)
{
	uint64_t n = 0;
	for (int i = 0; i < VG_QUOTA_OWNED; i++)
		if (atomic_load_explicit(&vg_quota_shards[i].dev[dev].credit, memory_order_relaxed))
			n += atomic_exchange_explicit(&vg_quota_shards[i].dev[dev].credit, 0, memory_order_relaxed);
	if (n)
		vg_quota_release_local(dev, n);
}

/* This thread's credit on dev, or NULL on the shared shard. */
static inline _Atomic uint64_t *vg_my_credit(int dev)
{
	struct vg_quota_shard *sh = vg_quota_shard();
	return sh != VG_QUOTA_SHARED_SHARD ? &sh->dev[dev].credit : NULL;
}

/* The credit that serves a request of bytes: this thread's (mine), unless the request is large or the process
 * charges a shared budget r. */
static inline _Atomic uint64_t *vg_credit_for(_Atomic uint64_t *mine, uint64_t bytes, const struct vg_region *r)
{
	return bytes > VG_CREDIT_SMALL || r ? NULL : mine;
}

/* The peak: the counter less this thread's own credit (exact for one allocating thread; with several, an upper
 * bound by the others' credits), kept whenever it grows. */
static inline void vg_peak_note(struct vg_counters *q, _Atomic uint64_t *mine, uint64_t counter)
{
	uint64_t c = mine ? atomic_load_explicit(mine, memory_order_relaxed) : 0;
	vg_atomic_max(vg_peak_of(q), counter > c ? counter - c : 0);
}

void vg_quota_set_limit(int dev, uint64_t limit)
{
	if (vg_quota_tracked(dev))
		atomic_store(&vg_quota[dev].limit, limit);
}

int vg_quota_reserve(int dev, uint64_t bytes, uint64_t *used_now)
{
	if (!vg_quota_tracked(dev))
		return 0;
	struct vg_counters *q = &vg_quota[dev];
	uint64_t limit = atomic_load_explicit(&q->limit, memory_order_relaxed);
	_Atomic uint64_t *usedp = vg_used_of(q);
	uint64_t used = atomic_load_explicit(usedp, memory_order_relaxed);
	struct vg_region *r = vg_budget_region();
	_Atomic uint64_t *mine = vg_my_credit(dev), *credit = vg_credit_for(mine, bytes, r);
	if (credit && (limit == VG_NO_LIMIT || used <= limit)) {
		uint64_t have = atomic_load_explicit(credit, memory_order_relaxed);
		if (have >= bytes && atomic_compare_exchange_strong_explicit(credit, &have, have - bytes,
									     memory_order_relaxed, memory_order_relaxed)) {
			/* Already charged to the counter, which is within the limit. The peak: a load unless it grows. */
			uint64_t left = have - bytes;
			vg_atomic_max(vg_peak_of(q), used > left ? used - left : 0);
			return 0;
		}
	}
	/* Charge the counter: with a refill of the credit where it applies and fits, else the bytes alone; before
	 * refusing, take every credit back and look once more. */
	uint64_t refill = credit ? VG_CREDIT_CHUNK : 0;
	bool reclaimed = false;
	for (;;) {
		uint64_t want = bytes + refill;
		if (limit != VG_NO_LIMIT && (want > limit || used > limit - want)) {
			if (refill) {
				refill = 0;
				continue;
			}
			if (!reclaimed) {
				reclaimed = true;
				vg_credit_reclaim(dev);
				used = atomic_load_explicit(usedp, memory_order_relaxed);
				continue;
			}
			if (used_now) {
				uint64_t c = vg_credit_sum(dev);
				*used_now = used > c ? used - c : 0;
			}
			return -ENOSPC;
		}
		if (used > UINT64_MAX - want) {         /* untracked overflow: cannot happen with real sizes */
			if (used_now)
				*used_now = used;
			return -ENOSPC;
		}
		if (atomic_compare_exchange_weak_explicit(usedp, &used, used + want, memory_order_acq_rel,
							  memory_order_relaxed)) {
			if (refill)
				atomic_fetch_add_explicit(credit, refill, memory_order_relaxed);
			used += want;
			break;
		}
	}
	if (r) {
		uint64_t ru = 0, rl = 0;
		int rc = vg_region_reserve(r, dev, bytes, &ru, &rl);
		if (rc != 0) {
			vg_quota_release_local(dev, bytes);
			if (used_now)
				*used_now = ru;
			return rc == -ENOSPC ? -EDQUOT : rc;
		}
	}
	vg_peak_note(q, mine, used);
	return 0;
}

void vg_quota_force(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	uint64_t now = atomic_fetch_add(vg_used_of(&vg_quota[dev]), bytes) + bytes;
	vg_peak_note(&vg_quota[dev], vg_my_credit(dev), now);
	struct vg_region *r = vg_budget_region();
	if (r)
		vg_region_force(r, dev, bytes);
}

void vg_quota_release(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	/* Counted before the usage falls, with a release fence between (no instruction on x86-64): a reader that sees
	 * the fall and then looks at the count (vg_quota_releases, after an acquire fence) sees it too. */
	struct vg_quota_shard *sh = vg_quota_shard();
	vg_shard_add(sh, &sh->dev[dev].releases, 1);
	atomic_thread_fence(memory_order_release);
	struct vg_region *r = vg_budget_region();
	_Atomic uint64_t *credit = vg_credit_for(vg_my_credit(dev), bytes, r);
	if (credit) {
		uint64_t now = atomic_fetch_add_explicit(credit, bytes, memory_order_relaxed) + bytes;
		if (now > 2 * VG_CREDIT_CHUNK) {
			uint64_t n = atomic_exchange_explicit(credit, 0, memory_order_relaxed);
			if (n)
				vg_quota_release_local(dev, n);
		}
		return;
	}
	vg_quota_release_local(dev, bytes);
	if (r)
		vg_region_release(r, dev, bytes);
}

static void vg_quota_release_local(int dev, uint64_t bytes)
{
	vg_atomic_sub_sat(vg_used_of(&vg_quota[dev]), bytes);
}

void vg_quota_note_alloc(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	struct vg_quota_shard *sh = vg_quota_shard();
	vg_shard_add(sh, &sh->dev[dev].allocs, 1);
	vg_shard_add(sh, &sh->dev[dev].in_bytes, bytes);
	vg_atomic_max(&sh->dev[dev].largest, bytes);    /* a load unless it grows */
}

void vg_quota_note_free(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	struct vg_quota_shard *sh = vg_quota_shard();
	vg_shard_add(sh, &sh->dev[dev].frees, 1);
	vg_shard_add(sh, &sh->dev[dev].out_bytes, bytes);
}

void vg_quota_note_denied(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	atomic_fetch_add_explicit(&vg_quota[dev].denied_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&vg_quota[dev].denied_bytes, bytes, memory_order_relaxed);
}

uint64_t vg_quota_used(int dev)
{
	if (!vg_quota_tracked(dev))
		return 0;
	/* The counter holds the credits too. A refill adds to the counter, then to a credit; a return takes from a
	 * credit, then from the counter: read across the two halves of one, the counter less the credits is a chunk
	 * low. A counter that did not move while the credits were read says that none was; a few tries, then the
	 * last reading (off by a chunk at most, as before). */
	_Atomic uint64_t *usedp = vg_used_of(&vg_quota[dev]);
	uint64_t used = atomic_load(usedp), c = 0;
	for (int i = 0; i < 4; i++) {
		c = vg_credit_sum(dev);
		uint64_t again = atomic_load(usedp);
		if (again == used)
			break;
		used = again;
	}
	return used > c ? used - c : 0;
}

uint64_t vg_quota_releases(int dev)
{
	if (!vg_quota_tracked(dev))
		return 0;
	atomic_thread_fence(memory_order_acquire);
	uint64_t n = 0;
	for (int i = 0; i < VG_QUOTA_SHARDS; i++)
		n += atomic_load_explicit(&vg_quota_shards[i].dev[dev].releases, memory_order_relaxed);
	return n;
}

void vg_quota_begin(int dev)
{
	if (!vg_quota_tracked(dev))
		return;
	struct vg_quota_shard *sh = vg_quota_shard();
	vg_shard_add(sh, &sh->dev[dev].begun, 1);
	atomic_thread_fence(memory_order_release);      /* before the reserve that follows raises usage */
}

void vg_quota_end(int dev)
{
	if (!vg_quota_tracked(dev))
		return;
	atomic_thread_fence(memory_order_release);      /* after the driver's answer */
	struct vg_quota_shard *sh = vg_quota_shard();
	vg_shard_add(sh, &sh->dev[dev].done, 1);
}

void vg_quota_inflight(int dev, uint64_t *begun, uint64_t *done)
{
	*begun = *done = 0;
	if (!vg_quota_tracked(dev))
		return;
	atomic_thread_fence(memory_order_acquire);
	/* done first: an allocation that begins and ends between the two sums is seen as under way (begun > done),
	 * never as not having happened. */
	for (int i = 0; i < VG_QUOTA_SHARDS; i++)
		*done += atomic_load_explicit(&vg_quota_shards[i].dev[dev].done, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	for (int i = 0; i < VG_QUOTA_SHARDS; i++)
		*begun += atomic_load_explicit(&vg_quota_shards[i].dev[dev].begun, memory_order_relaxed);
}

uint64_t vg_quota_limit(int dev)
{
	return vg_quota_tracked(dev) ? atomic_load(&vg_quota[dev].limit) : VG_NO_LIMIT;
}

/* ---- soft limits ---- */

void vg_quota_set_soft(int dev, uint64_t bytes)
{
	if (!vg_quota_tracked(dev))
		return;
	atomic_store(&vg_quota[dev].soft, bytes);
	atomic_store(&vg_quota[dev].soft_fired, 0);
}

uint64_t vg_quota_soft(int dev)
{
	return vg_quota_tracked(dev) ? atomic_load(&vg_quota[dev].soft) : VG_NO_LIMIT;
}

/* The counter is an upper bound of usage (it holds the credits too): below the line by it, usage is below too, and
 * the exact figure (a load of every shard's credit) is needed only near the line. The state changes by
 * compare-and-swap, so of two threads that see the same crossing one wins, and a re-arm racing with a crossing
 * either happens before it (the crossing is reported) or fails (it was already reported). The first load, of the
 * soft limit itself, is inline in quota.h: without a soft limit a check costs no call. */
int vg_quota_soft_judge(int dev, uint64_t soft)
{
	struct vg_counters *q = &vg_quota[dev];
	/* The state first, with acquire: a counter read after it is no older than the one the crossing thread saw
	 * above the line (it read that before its compare-and-swap). Read the other way round, a counter from before
	 * the crossing could pair with its fired state and re-arm the detector in the middle of the crossing, and
	 * another thread would be told of it again (seen in test_soft_race under TSan). */
	uint32_t fired = atomic_load_explicit(&q->soft_fired, memory_order_acquire);
	uint64_t counter = atomic_load_explicit(vg_used_of(q), memory_order_relaxed);
	if (!fired) {
		if (counter <= soft || vg_quota_used(dev) <= soft)
			return 0;
		return atomic_compare_exchange_strong(&q->soft_fired, &fired, 1) ? 1 : 0;
	}
	uint64_t rearm = soft - soft / 10;     /* 90 %, rounded up */
	if (counter >= rearm && (counter - rearm >= VG_CREDIT_SLACK || vg_quota_used(dev) >= rearm))
		return 0;
	atomic_compare_exchange_strong(&q->soft_fired, &fired, 0);
	return 0;
}

bool vg_quota_stats(int dev, struct vg_quota_stats *out)
{
	*out = (struct vg_quota_stats){ .limit = VG_NO_LIMIT, .soft = VG_NO_LIMIT };
	if (!vg_quota_tracked(dev))
		return false;
	struct vg_counters *q = &vg_quota[dev];
	out->limit = atomic_load(&q->limit);
	out->soft = atomic_load(&q->soft);
	out->used = vg_quota_used(dev);
	out->peak = atomic_load(vg_peak_of(q));
	out->denied_count = atomic_load(&q->denied_count);
	out->denied_bytes = atomic_load(&q->denied_bytes);
	uint64_t in = 0, out_b = 0;
	for (int i = 0; i < VG_QUOTA_SHARDS; i++) {
		const struct vg_quota_shard *sh = &vg_quota_shards[i];
		out->allocs += atomic_load_explicit(&sh->dev[dev].allocs, memory_order_relaxed);
		out->frees += atomic_load_explicit(&sh->dev[dev].frees, memory_order_relaxed);
		in += atomic_load_explicit(&sh->dev[dev].in_bytes, memory_order_relaxed);
		out_b += atomic_load_explicit(&sh->dev[dev].out_bytes, memory_order_relaxed);
		uint64_t l = atomic_load_explicit(&sh->dev[dev].largest, memory_order_relaxed);
		if (l > out->largest)
			out->largest = l;
	}
	out->allocated = in > out_b ? in - out_b : 0;
	return true;
}

void vg_quota_reset_usage(void)
{
	for (int i = 0; i < VG_MAX_DEVICES; i++) {
		struct vg_counters *q = &vg_quota[i];
		atomic_store(&q->usedp, NULL);  /* a fork child must not write its parent's control segment */
		atomic_store(&q->peakp, NULL);
		atomic_store(&q->used, 0);
		atomic_store(&q->peak, 0);
		atomic_store(&q->denied_count, 0);
		atomic_store(&q->denied_bytes, 0);
		atomic_store(&q->soft_fired, 0);
		for (int s = 0; s < VG_QUOTA_SHARDS; s++) {
			atomic_store(&vg_quota_shards[s].dev[i].allocs, 0);
			atomic_store(&vg_quota_shards[s].dev[i].frees, 0);
			atomic_store(&vg_quota_shards[s].dev[i].in_bytes, 0);
			atomic_store(&vg_quota_shards[s].dev[i].out_bytes, 0);
			atomic_store(&vg_quota_shards[s].dev[i].largest, 0);
			atomic_store(&vg_quota_shards[s].dev[i].credit, 0);
			atomic_store(&vg_quota_shards[s].dev[i].releases, 0);
			atomic_store(&vg_quota_shards[s].dev[i].begun, 0);
			atomic_store(&vg_quota_shards[s].dev[i].done, 0);
		}
	}
}
