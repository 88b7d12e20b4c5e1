/* Sharded hash tables of live allocations, and the store their records come from. Shard = the top bits of a
 * multiplicative hash of the key, so frees of unrelated allocations from many threads rarely meet on one mutex.
 * Inside a shard: open addressing with linear probing over 8-byte slots (32 hash bits and a record index), grown
 * at 70 % load, never shrunk, so a shard that empties and fills again allocates nothing. A probe reads a record
 * only when its hash bits match the key's (so inserting, or growing, touches the slot array alone), which keeps
 * the cost flat as the table outgrows the caches. Every operation is O(1) but remove_if/foreach, which only
 * reports and context teardown use. */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "accounting/lockorder.h"
#include "accounting/table.h"

/* ---- ASan: records never go back to malloc, so the store marks free ones itself (next stays readable) ---- */

#if defined(__SANITIZE_ADDRESS__)
#define VG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VG_ASAN 1
#endif
#endif
#ifdef VG_ASAN
#include <sanitizer/asan_interface.h>
#define VG_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define VG_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define VG_POISON(p, n) ((void)(p), (void)(n))
#define VG_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* A free record: nothing but its next link may be touched until vg_alloc_new hands it out again. */
static inline void vg_park(struct vg_alloc *r)
{
	VG_POISON(r, offsetof(struct vg_alloc, next));
	VG_POISON((char *)r + offsetof(struct vg_alloc, next) + sizeof(r->next),
		  sizeof(*r) - offsetof(struct vg_alloc, next) - sizeof(r->next));
}
_Static_assert(offsetof(struct vg_alloc, next) % 8 == 0, "ASan poisons in 8-byte granules");

/* ---- the record store ---- */

/* Record i lives in slab i / VG_SLAB_RECS. Index 0 is never handed out: it marks an empty slot. A slab pointer is
 * written once, under vg_store_lock, before any of its records leaves the store; whoever holds an index got it
 * through that lock or a shard lock after it, so reading vg_slab needs no lock. */
static struct vg_alloc *vg_slab[VG_MAX_SLABS];
static pthread_mutex_t vg_store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vg_alloc *vg_store_free;         /* given back by threads, linked by next */
static uint32_t vg_store_carved = 1;           /* records below this index have been handed out at least once */
static size_t vg_store_slabs;
_Static_assert((uint64_t)VG_MAX_SLABS * VG_SLAB_RECS <= UINT32_MAX, "record indices are 32 bits");

static inline struct vg_alloc *vg_rec_at(uint32_t idx)
{
	return &vg_slab[idx / VG_SLAB_RECS][idx % VG_SLAB_RECS];
}

/* Per thread: up to VG_REC_CACHE free records, exchanged with the store VG_REC_BATCH at a time (a thread takes the
 * store's lock at most once per 32 records it takes or gives back); returned to the store when the thread exits. */
#define VG_REC_CACHE 64
#define VG_REC_BATCH 32
static __thread struct vg_alloc *vg_rec_cache __attribute__((tls_model("initial-exec")));
static __thread int vg_rec_cached __attribute__((tls_model("initial-exec")));
static __thread int vg_rec_keyed __attribute__((tls_model("initial-exec")));
static pthread_key_t vg_rec_key;
static pthread_once_t vg_rec_once = PTHREAD_ONCE_INIT;

/* Move up to n cached records (all if n < 0) to the store's free list. */
static void vg_cache_spill(int n)
{
	struct vg_alloc *head = vg_rec_cache, *tail = head;
	if (!head)
		return;
	int moved = 1;
	while (tail->next && (n < 0 || moved < n)) {
		tail = tail->next;
		moved++;
	}
	vg_rec_cache = tail->next;
	vg_rec_cached -= moved;
	vg_lock(&vg_store_lock, VG_RANK_RECORDS);
	tail->next = vg_store_free;
	vg_store_free = head;
	vg_unlock(&vg_store_lock, VG_RANK_RECORDS);
}

static void vg_rec_drain(void *unused)
{
	(void)unused;
	vg_cache_spill(-1);
	vg_rec_cached = 0;
	vg_rec_keyed = 0;       /* a later free in another destructor registers again */
}

static void vg_rec_key_init(void)
{
	pthread_key_create(&vg_rec_key, vg_rec_drain);
}

static void vg_rec_register(void)
{
	pthread_once(&vg_rec_once, vg_rec_key_init);
	pthread_setspecific(vg_rec_key, (void *)1);     /* so that vg_rec_drain runs at thread exit */
	vg_rec_keyed = 1;
}

#define VG_SLAB_BYTES (VG_SLAB_RECS * sizeof(struct vg_alloc))

/* Up to VG_REC_BATCH never-used records onto the cache, from the current slab or else a new one, without crossing
 * into the next slab (store lock held). Returns how many. */
static int vg_carve(void)
{
	size_t k = vg_store_carved / VG_SLAB_RECS;
	if (k >= VG_MAX_SLABS)
		return 0;
	if (!vg_slab[k]) {
		void *p = NULL;
		if (posix_memalign(&p, 64, VG_SLAB_BYTES) != 0)
			return 0;
		VG_POISON(p, VG_SLAB_BYTES);
		vg_slab[k] = p;
		vg_store_slabs++;
	}
	int n = 0;
	while (n < VG_REC_BATCH && vg_store_carved / VG_SLAB_RECS == k) {
		uint32_t i = vg_store_carved++;
		struct vg_alloc *r = vg_rec_at(i);
		VG_UNPOISON(r, sizeof(*r));
		r->idx = i;
		vg_park(r);
		r->next = vg_rec_cache;
		vg_rec_cache = r;
		n++;
	}
	return n;
}

/* Fill the empty cache: up to VG_REC_BATCH given-back records if there are any, else never-used ones. */
static void vg_cache_fill(void)
{
	if (!vg_rec_keyed)
		vg_rec_register();
	vg_lock(&vg_store_lock, VG_RANK_RECORDS);
	int n = 0;
	while (n < VG_REC_BATCH && vg_store_free) {
		struct vg_alloc *r = vg_store_free;
		vg_store_free = r->next;
		r->next = vg_rec_cache;
		vg_rec_cache = r;
		n++;
	}
	if (n == 0)
		n = vg_carve();
	vg_unlock(&vg_store_lock, VG_RANK_RECORDS);
	vg_rec_cached += n;
}

struct vg_alloc *vg_alloc_new(void)
{
	if (__builtin_expect(!vg_rec_cache, 0)) {
		vg_cache_fill();
		if (!vg_rec_cache)
			return NULL;
	}
	struct vg_alloc *r = vg_rec_cache;
	vg_rec_cache = r->next;
	vg_rec_cached--;
	VG_UNPOISON(r, sizeof(*r));
	uint32_t idx = r->idx;
	memset(r, 0, sizeof(*r));
	r->idx = idx;
	return r;
}

void vg_alloc_free(struct vg_alloc *r)
{
	if (!r)
		return;
	if (__builtin_expect(!vg_rec_keyed, 0))
		vg_rec_register();
	if (vg_rec_cached >= VG_REC_CACHE)
		vg_cache_spill(VG_REC_BATCH);
	vg_park(r);
	r->next = vg_rec_cache;
	vg_rec_cache = r;
	vg_rec_cached++;
}

size_t vg_alloc_slabs(void)
{
	vg_lock(&vg_store_lock, VG_RANK_RECORDS);
	size_t n = vg_store_slabs;
	vg_unlock(&vg_store_lock, VG_RANK_RECORDS);
	return n;
}

void vg_alloc_lock(void)
{
	vg_lock(&vg_store_lock, VG_RANK_RECORDS);
}

void vg_alloc_unlock(void)
{
	vg_unlock(&vg_store_lock, VG_RANK_RECORDS);
}

void vg_alloc_reset_child(void)
{
	pthread_mutex_init(&vg_store_lock, NULL);
	vg_store_free = NULL;
	vg_store_carved = 1;
	vg_rec_cache = NULL;
	vg_rec_cached = 0;
	for (size_t k = 0; k < VG_MAX_SLABS && vg_slab[k]; k++)
		VG_POISON(vg_slab[k], VG_SLAB_BYTES);
}

/* ---- the tables ---- */

#define VG_SLOT_EMPTY 0
#define VG_SLOT_TOMB ((uint64_t)1 << 32)       /* record index 0, which no record has */

static inline bool vg_slot_live(uint64_t v)
{
	return (uint32_t)v != 0;
}

static inline uint64_t vg_hash(uint64_t key)
{
	return key * 0x9E3779B97F4A7C15ull;
}

/* The slot's hash bits: the low ones are the home slot (cap <= 2^32), the others tell most keys apart. */
static inline uint32_t vg_tag(uint64_t key)
{
	return (uint32_t)(vg_hash(key) >> 20);
}

/* A shard's lock: a futex mutex (0 free, 1 held, 2 held with waiters). Uncontended, one compare-and-swap to take it
 * and one exchange to give it back, a fifth of pthread_mutex_lock's instructions on the allocation path; a waiter
 * spins briefly, then sleeps in the kernel. */
static void vg_shard_lock_slow(_Atomic int *l)
{
	for (int spin = 0; spin < 64; spin++) {
		int c = 0;
		if (atomic_load_explicit(l, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(l, &c, 1, memory_order_acquire, memory_order_relaxed))
			return;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ volatile("yield");
#endif
	}
	while (atomic_exchange_explicit(l, 2, memory_order_acquire) != 0)
		syscall(SYS_futex, l, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

static inline void vg_shard_take(struct vg_shard *s)
{
	int c = 0;
	if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&s->lock, &c, 1, memory_order_acquire,
								      memory_order_relaxed), 0))
		vg_shard_lock_slow(&s->lock);
}

static inline void vg_shard_lock(struct vg_shard *s)
{
	vg_lock_note_take(VG_RANK_TABLE, false);
	vg_shard_take(s);
}

static inline void vg_shard_unlock(struct vg_shard *s)
{
	if (__builtin_expect(atomic_exchange_explicit(&s->lock, 0, memory_order_release) == 2, 0))
		syscall(SYS_futex, &s->lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	vg_lock_note_drop(VG_RANK_TABLE);
}

static inline struct vg_shard *vg_shard_of(struct vg_table *t, uint64_t key)
{
	return &t->shard[vg_hash(key) >> 58];
}
_Static_assert(VG_SHARDS == 64, "vg_shard_of takes the top 6 bits");

void vg_table_init(struct vg_table *t)
{
	for (int i = 0; i < VG_SHARDS; i++) {
		atomic_init(&t->shard[i].lock, 0);
		t->shard[i].slot = NULL;
		t->shard[i].cap = t->shard[i].count = t->shard[i].used = 0;
	}
}

/* The slot holding key, or the index of the first free slot to put it in (*found = 0). cap > 0. */
static size_t vg_probe(const struct vg_shard *s, uint64_t key, uint32_t tag, int *found)
{
	size_t mask = s->cap - 1, i = tag & mask, tomb = SIZE_MAX;
	for (;;) {
		uint64_t v = s->slot[i];
		if (v == VG_SLOT_EMPTY) {
			*found = 0;
			return tomb != SIZE_MAX ? tomb : i;
		}
		if (v == VG_SLOT_TOMB) {
			if (tomb == SIZE_MAX)
				tomb = i;
		} else if ((uint32_t)(v >> 32) == tag && vg_rec_at((uint32_t)v)->key == key) {
			*found = 1;
			return i;
		}
		i = (i + 1) & mask;
	}
}

/* Rehash into ncap slots (dropping tombstones), from the slots alone. -ENOMEM leaves the shard as it was. */
static int vg_resize(struct vg_shard *s, size_t ncap)
{
	uint64_t *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		uint64_t v = s->slot[i];
		if (!vg_slot_live(v))
			continue;
		size_t j = (size_t)(v >> 32) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = v;
	}
	free(s->slot);
	/* Atomic stores only for vg_table_prefetch, which reads both without the lock. */
	__atomic_store_n(&s->slot, ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cap, ncap, __ATOMIC_RELAXED);
	s->used = s->count;
	return 0;
}

/* The slot array is the one memory a new key touches that is not already in the cache: start loading its line
 * while the caller does other work. Lock-free and racy on purpose: a prefetch of a stale address is harmless. */
void vg_table_prefetch(struct vg_table *t, uint64_t key)
{
	struct vg_shard *s = vg_shard_of(t, key);
	uint64_t *slot = __atomic_load_n(&s->slot, __ATOMIC_RELAXED);
	size_t cap = __atomic_load_n(&s->cap, __ATOMIC_RELAXED);
	if (slot)
		__builtin_prefetch(&slot[vg_tag(key) & (cap - 1)], 1);
}

int vg_table_insert(struct vg_table *t, struct vg_alloc *rec)
{
	if (rec->idx == 0)
		return -EINVAL;         /* not from vg_alloc_new */
	struct vg_shard *s = vg_shard_of(t, rec->key);
	uint32_t tag = vg_tag(rec->key);
	int rc = 0, found = 0;
	vg_shard_lock(s);
	if ((s->used + 1) * 10 > s->cap * 7) {
		/* Mostly tombstones: rehash at the same size; else double. */
		size_t ncap = s->cap == 0 ? 16 : (s->count + 1) * 10 > s->cap * 5 ? s->cap * 2 : s->cap;
		if (vg_resize(s, ncap) != 0) {
			vg_shard_unlock(s);
			return -ENOMEM;
		}
	}
	size_t i = vg_probe(s, rec->key, tag, &found);
	if (found) {
		rc = -EEXIST;
	} else {
		if (s->slot[i] == VG_SLOT_EMPTY)
			s->used++;
		s->slot[i] = (uint64_t)tag << 32 | rec->idx;
		s->count++;
	}
	vg_shard_unlock(s);
	return rc;
}

/* Remove slot i (lock held): a tombstone, or nothing if the next slot is empty (no probe chain runs through). */
static void vg_clear(struct vg_shard *s, size_t i)
{
	if (s->slot[(i + 1) & (s->cap - 1)] == VG_SLOT_EMPTY) {
		s->slot[i] = VG_SLOT_EMPTY;
		s->used--;
	} else {
		s->slot[i] = VG_SLOT_TOMB;
	}
	s->count--;
}

struct vg_alloc *vg_table_remove(struct vg_table *t, uint64_t key)
{
	struct vg_shard *s = vg_shard_of(t, key);
	struct vg_alloc *rec = NULL;
	int found = 0;
	vg_shard_lock(s);
	if (s->cap) {
		size_t i = vg_probe(s, key, vg_tag(key), &found);
		if (found) {
			rec = vg_rec_at((uint32_t)s->slot[i]);
			vg_clear(s, i);
		}
	}
	vg_shard_unlock(s);
	return rec;
}

int vg_table_update(struct vg_table *t, uint64_t key, bool (*fn)(struct vg_alloc *rec, void *arg), void *arg,
		    struct vg_alloc **removed)
{
	struct vg_shard *s = vg_shard_of(t, key);
	int rc = -ENOENT, found = 0;
	*removed = NULL;
	vg_shard_lock(s);
	if (s->cap) {
		size_t i = vg_probe(s, key, vg_tag(key), &found);
		if (found) {
			rc = 0;
			struct vg_alloc *rec = vg_rec_at((uint32_t)s->slot[i]);
			if (fn(rec, arg)) {
				vg_clear(s, i);
				*removed = rec;
			}
		}
	}
	vg_shard_unlock(s);
	return rc;
}

struct vg_alloc *vg_table_remove_if(struct vg_table *t, bool (*pred)(const struct vg_alloc *rec, void *arg),
				   void *arg)
{
	struct vg_alloc *list = NULL;
	for (int k = 0; k < VG_SHARDS; k++) {
		struct vg_shard *s = &t->shard[k];
		vg_shard_lock(s);
		for (size_t i = 0; i < s->cap; i++) {
			if (!vg_slot_live(s->slot[i]))
				continue;
			struct vg_alloc *p = vg_rec_at((uint32_t)s->slot[i]);
			if (pred(p, arg)) {
				s->slot[i] = VG_SLOT_TOMB;     /* never empty here: later probe chains may pass through */
				s->count--;
				p->next = list;
				list = p;
			}
		}
		vg_shard_unlock(s);
	}
	return list;
}

/* A walk reads records in hash order, each a cache miss: the record VG_WALK_AHEAD slots on is fetched while this
 * one is read (a growth point with 10^6 allocations live holds a shard about half as long: docs/PERFORMANCE.md,
 * "Issue 29: the growth sampler"). */
#define VG_WALK_AHEAD 32

void vg_table_foreach(struct vg_table *t, void (*fn)(const struct vg_alloc *rec, void *arg), void *arg)
{
	for (int k = 0; k < VG_SHARDS; k++) {
		struct vg_shard *s = &t->shard[k];
		vg_shard_lock(s);
		for (size_t i = 0; i < s->cap; i++) {
			if (i + VG_WALK_AHEAD < s->cap && vg_slot_live(s->slot[i + VG_WALK_AHEAD]))
				__builtin_prefetch(vg_rec_at((uint32_t)s->slot[i + VG_WALK_AHEAD]));
			if (vg_slot_live(s->slot[i]))
				fn(vg_rec_at((uint32_t)s->slot[i]), arg);
		}
		vg_shard_unlock(s);
	}
}

size_t vg_table_count(struct vg_table *t)
{
	size_t n = 0;
	for (int i = 0; i < VG_SHARDS; i++) {
		vg_shard_lock(&t->shard[i]);
		n += t->shard[i].count;
		vg_shard_unlock(&t->shard[i]);
	}
	return n;
}

/* Every shard, in index order (fork: every table in turn; docs/LOCKS.md). */
void vg_table_lock_all(struct vg_table *t)
{
	for (int i = 0; i < VG_SHARDS; i++) {
		vg_lock_note_take(VG_RANK_TABLE, true);
		vg_shard_take(&t->shard[i]);
	}
}

void vg_table_unlock_all(struct vg_table *t)
{
	for (int i = VG_SHARDS - 1; i >= 0; i--)
		vg_shard_unlock(&t->shard[i]);
}

/* The records themselves are not freed one by one: vg_alloc_reset_child makes the whole store free again. */
void vg_table_reset_child(struct vg_table *t)
{
	for (int k = 0; k < VG_SHARDS; k++) {
		struct vg_shard *s = &t->shard[k];
		free(s->slot);
		__atomic_store_n(&s->slot, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&s->cap, 0, __ATOMIC_RELAXED);
		s->count = s->used = 0;
		atomic_store(&s->lock, 0);     /* no other thread survives fork */
	}
}
