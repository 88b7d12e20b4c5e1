/* Sharded hash tables of live allocations. Shard = a hash of the key, so frees of unrelated allocations from many
 * threads rarely meet on one mutex; every operation is O(1) but remove_if/foreach, which only reports and context
 * teardown use. */
#include <errno.h>
#include <stdlib.h>

/* uthash must never exit() the host program: report a failed insert instead. */
static __thread int vg_table_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) do { (void)(obj); vg_table_oom = 1; } while (0)
#include "accounting/table.h"

static inline struct vg_shard *vg_shard_of(struct vg_table *t, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ull;
	return &t->shard[h >> 58];
}
_Static_assert(VG_SHARDS == 64, "vg_shard_of takes the top 6 bits");

void vg_table_init(struct vg_table *t)
{
	for (int i = 0; i < VG_SHARDS; i++) {
		pthread_mutex_init(&t->shard[i].lock, NULL);
		t->shard[i].head = NULL;
		t->shard[i].count = 0;
	}
}

int vg_table_insert(struct vg_table *t, struct vg_alloc *rec)
{
	struct vg_shard *s = vg_shard_of(t, rec->key);
	struct vg_alloc *old = NULL;
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	HASH_FIND(hh, s->head, &rec->key, sizeof(rec->key), old);
	if (old) {
		rc = -EEXIST;
	} else {
		vg_table_oom = 0;
		HASH_ADD(hh, s->head, key, sizeof(rec->key), rec);
		if (vg_table_oom)
			rc = -ENOMEM;
		else
			s->count++;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

struct vg_alloc *vg_table_remove(struct vg_table *t, uint64_t key)
{
	struct vg_shard *s = vg_shard_of(t, key);
	struct vg_alloc *rec = NULL;
	pthread_mutex_lock(&s->lock);
	HASH_FIND(hh, s->head, &key, sizeof(key), rec);
	if (rec) {
		HASH_DELETE(hh, s->head, rec);
		s->count--;
	}
	pthread_mutex_unlock(&s->lock);
	return rec;
}

int vg_table_update(struct vg_table *t, uint64_t key, bool (*fn)(struct vg_alloc *rec, void *arg), void *arg,
		    struct vg_alloc **removed)
{
	struct vg_shard *s = vg_shard_of(t, key);
	struct vg_alloc *rec = NULL;
	int rc = -ENOENT;
	*removed = NULL;
	pthread_mutex_lock(&s->lock);
	HASH_FIND(hh, s->head, &key, sizeof(key), rec);
	if (rec) {
		rc = 0;
		if (fn(rec, arg)) {
			HASH_DELETE(hh, s->head, rec);
			s->count--;
			*removed = rec;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

struct vg_alloc *vg_table_remove_if(struct vg_table *t, bool (*pred)(const struct vg_alloc *rec, void *arg),
				   void *arg)
{
	struct vg_alloc *list = NULL;
	for (int i = 0; i < VG_SHARDS; i++) {
		struct vg_shard *s = &t->shard[i];
		struct vg_alloc *rec, *tmp;
		pthread_mutex_lock(&s->lock);
		HASH_ITER(hh, s->head, rec, tmp) {
			if (pred(rec, arg)) {
				HASH_DELETE(hh, s->head, rec);
				s->count--;
				rec->next = list;
				list = rec;
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
	return list;
}

void vg_table_foreach(struct vg_table *t, void (*fn)(const struct vg_alloc *rec, void *arg), void *arg)
{
	for (int i = 0; i < VG_SHARDS; i++) {
		struct vg_shard *s = &t->shard[i];
		struct vg_alloc *rec, *tmp;
		pthread_mutex_lock(&s->lock);
		HASH_ITER(hh, s->head, rec, tmp) {
			fn(rec, arg);
		}
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
	for (int i = 0; i < VG_SHARDS; i++) {
		struct vg_shard *s = &t->shard[i];
		struct vg_alloc *rec, *tmp;
		HASH_ITER(hh, s->head, rec, tmp) {
			HASH_DELETE(hh, s->head, rec);
			free(rec);
		}
		s->head = NULL;
		s->count = 0;
		pthread_mutex_init(&s->lock, NULL);
	}
}
