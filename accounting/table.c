/* Sharded hash tables of live allocations. Shard = the top bits of a multiplicative hash of the key, so frees of
 * unrelated allocations from many threads rarely meet on one mutex. Inside a shard: open addressing with linear
 * probing over record pointers (8 bytes a slot, no per-record handle), grown at 70 % load, never shrunk, so a
 * shard that empties and fills again allocates nothing. Every operation is O(1) but remove_if/foreach, which only
 * reports and context teardown use. */
#include <errno.h>
#include <stdlib.h>

#include "accounting/table.h"

#define VG_TOMBSTONE ((struct vg_alloc *)1)
#define VG_SLOT_LIVE(p) ((p) != NULL && (p) != VG_TOMBSTONE)

static inline uint64_t vg_hash(uint64_t key)
{
	return key * 0x9E3779B97F4A7C15ull;
}

static inline struct vg_shard *vg_shard_of(struct vg_table *t, uint64_t key)
{
	return &t->shard[vg_hash(key) >> 58];
}
_Static_assert(VG_SHARDS == 64, "vg_shard_of takes the top 6 bits");

void vg_table_init(struct vg_table *t)
{
	for (int i = 0; i < VG_SHARDS; i++) {
		pthread_mutex_init(&t->shard[i].lock, NULL);
		t->shard[i].slot = NULL;
		t->shard[i].cap = t->shard[i].count = t->shard[i].used = 0;
	}
}

/* The slot holding key, or the index of the first free slot to put it in (*found = 0). cap > 0. */
static size_t vg_probe(const struct vg_shard *s, uint64_t key, int *found)
{
	size_t mask = s->cap - 1, i = (size_t)(vg_hash(key) >> 20) & mask, tomb = SIZE_MAX;
	for (;;) {
		struct vg_alloc *p = s->slot[i];
		if (p == NULL) {
			*found = 0;
			return tomb != SIZE_MAX ? tomb : i;
		}
		if (p == VG_TOMBSTONE) {
			if (tomb == SIZE_MAX)
				tomb = i;
		} else if (p->key == key) {
			*found = 1;
			return i;
		}
		i = (i + 1) & mask;
	}
}

/* Rehash into ncap slots (dropping tombstones). -ENOMEM leaves the shard as it was. */
static int vg_resize(struct vg_shard *s, size_t ncap)
{
	struct vg_alloc **ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		struct vg_alloc *p = s->slot[i];
		if (!VG_SLOT_LIVE(p))
			continue;
		size_t j = (size_t)(vg_hash(p->key) >> 20) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = p;
	}
	free(s->slot);
	s->slot = ns;
	s->cap = ncap;
	s->used = s->count;
	return 0;
}

int vg_table_insert(struct vg_table *t, struct vg_alloc *rec)
{
	struct vg_shard *s = vg_shard_of(t, rec->key);
	int rc = 0, found = 0;
	pthread_mutex_lock(&s->lock);
	if ((s->used + 1) * 10 > s->cap * 7) {
		/* Mostly tombstones: rehash at the same size; else double. */
		size_t ncap = s->cap == 0 ? 16 : (s->count + 1) * 10 > s->cap * 5 ? s->cap * 2 : s->cap;
		if (vg_resize(s, ncap) != 0) {
			pthread_mutex_unlock(&s->lock);
			return -ENOMEM;
		}
	}
	size_t i = vg_probe(s, rec->key, &found);
	if (found) {
		rc = -EEXIST;
	} else {
		if (s->slot[i] == NULL)
			s->used++;
		s->slot[i] = rec;
		s->count++;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Remove slot i (lock held): a tombstone, or nothing if the next slot is empty (no probe chain runs through). */
static void vg_clear(struct vg_shard *s, size_t i)
{
	if (s->slot[(i + 1) & (s->cap - 1)] == NULL) {
		s->slot[i] = NULL;
		s->used--;
	} else {
		s->slot[i] = VG_TOMBSTONE;
	}
	s->count--;
}

struct vg_alloc *vg_table_remove(struct vg_table *t, uint64_t key)
{
	struct vg_shard *s = vg_shard_of(t, key);
	struct vg_alloc *rec = NULL;
	int found = 0;
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		size_t i = vg_probe(s, key, &found);
		if (found) {
			rec = s->slot[i];
			vg_clear(s, i);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rec;
}

int vg_table_update(struct vg_table *t, uint64_t key, bool (*fn)(struct vg_alloc *rec, void *arg), void *arg,
		    struct vg_alloc **removed)
{
	struct vg_shard *s = vg_shard_of(t, key);
	int rc = -ENOENT, found = 0;
	*removed = NULL;
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		size_t i = vg_probe(s, key, &found);
		if (found) {
			rc = 0;
			struct vg_alloc *rec = s->slot[i];
			if (fn(rec, arg)) {
				vg_clear(s, i);
				*removed = rec;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

struct vg_alloc *vg_table_remove_if(struct vg_table *t, bool (*pred)(const struct vg_alloc *rec, void *arg),
				   void *arg)
{
	struct vg_alloc *list = NULL;
	for (int k = 0; k < VG_SHARDS; k++) {
		struct vg_shard *s = &t->shard[k];
		pthread_mutex_lock(&s->lock);
		for (size_t i = 0; i < s->cap; i++) {
			struct vg_alloc *p = s->slot[i];
			if (VG_SLOT_LIVE(p) && pred(p, arg)) {
				s->slot[i] = VG_TOMBSTONE;     /* never NULL here: later probe chains may pass through */
				s->count--;
				p->next = list;
				list = p;
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
	return list;
}

void vg_table_foreach(struct vg_table *t, void (*fn)(const struct vg_alloc *rec, void *arg), void *arg)
{
	for (int k = 0; k < VG_SHARDS; k++) {
		struct vg_shard *s = &t->shard[k];
		pthread_mutex_lock(&s->lock);
		for (size_t i = 0; i < s->cap; i++)
			if (VG_SLOT_LIVE(s->slot[i]))
				fn(s->slot[i], arg);
		pthread_mutex_unlock(&s->lock);
	}
}

size_t vg_table_count(struct vg_table *t)
{
	size_t n = 0;
	for (int i = 0; i < VG_SHARDS; i++) {
		pthread_mutex_lock(&t->shard[i].lock);
		n += t->shard[i].count;
		pthread_mutex_unlock(&t->shard[i].lock);
	}
	return n;
}

void vg_table_lock_all(struct vg_table *t)
{
	for (int i = 0; i < VG_SHARDS; i++)
		pthread_mutex_lock(&t->shard[i].lock);
}

void vg_table_unlock_all(struct vg_table *t)
{
	for (int i = VG_SHARDS - 1; i >= 0; i--)
		pthread_mutex_unlock(&t->shard[i].lock);
}

void vg_table_reset_child(struct vg_table *t)
{
	for (int k = 0; k < VG_SHARDS; k++) {
		struct vg_shard *s = &t->shard[k];
		for (size_t i = 0; i < s->cap; i++)
			if (VG_SLOT_LIVE(s->slot[i]))
				free(s->slot[i]);
		free(s->slot);
		s->slot = NULL;
		s->cap = s->count = s->used = 0;
		pthread_mutex_init(&s->lock, NULL);
	}
}
