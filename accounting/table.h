/* The allocation tables: live records keyed by device pointer, array handle, VMM handle or mapping address.
 * 64 shards, each an open-addressing hash under one mutex; a lock is never held across a driver call. Records come
 * from a store of slabs and are named in the tables by a 32-bit index. No CUDA here. */
#ifndef VG_TABLE_H
#define VG_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


enum vg_kind {
	VG_KIND_MEM = 0,        /* cuMemAlloc_v2 */
	VG_KIND_PITCH,          /* cuMemAllocPitch_v2 */
	VG_KIND_MANAGED,        /* cuMemAllocManaged */
	VG_KIND_ASYNC,          /* cuMemAllocAsync / FromPoolAsync */
	VG_KIND_ARRAY,          /* cuArrayCreate_v2 / cuArray3DCreate_v2 (estimate) */
	VG_KIND_MIPMAP,         /* cuMipmappedArrayCreate (estimate) */
	VG_KIND_VMM,            /* cuMemCreate handle: refs + maps */
	VG_KIND_MAPPING,        /* cuMemMap: address -> handle (aux), bytes = mapped length; never charged */
	VG_KIND_STREAM,         /* a live stream (key = CUstream), for leak reports; never charged */
	VG_KIND_STREAM_EVENT,   /* streams destroyed with work queued: key = (create site << 32 | destroy site),
				 * bytes = how many times, aux = the destroy site, VG_ALLOC_SYNCED if synchronized first */
};

#define VG_ALLOC_SYNCED 0x1     /* flags, STREAM_EVENT: the stream was synchronized before it was destroyed */
#define VG_ALLOC_POOLED 0x2     /* flags, ASYNC under device counting: the pool's reserve is charged, not bytes */

struct vg_site;

/* One cache line. ctx, aux and refs/maps share a word: each kind uses at most one of them (ctx: MEM..MIPMAP, the
 * only kinds cuCtxDestroy looks at; aux: MAPPING and STREAM_EVENT; refs/maps: VMM). */
struct vg_alloc {
	uint64_t key;
	uint64_t bytes;         /* bytes charged to dev (mappings: length mapped) */
	struct vg_site *site;   /* call site of the allocation, NULL if capture is off */
	uint64_t time_ns;       /* CLOCK_REALTIME when it was made */
	union {
		void *ctx;      /* MEM..MIPMAP: CUcontext it lives in, NULL if not bound to one */
		uint64_t aux;   /* MAPPING: the VMM handle; STREAM_EVENT: the destroy site (struct vg_site *) */
		struct {
			uint32_t refs;  /* VMM: handle references (create = 1, + retain, - release) */
			uint32_t maps;  /* VMM: live mappings */
		};
	};
	struct vg_alloc *next;  /* private list link for batch operations and free lists */
	uint32_t tid;           /* kernel thread id of the caller */
	uint32_t idx;           /* the store's name for this record (table slots hold it); set once, never change */
	int16_t dev;            /* ordinal, -1 for none (tracked ordinals are < VG_MAX_DEVICES = 64) */
	uint8_t hook;           /* enum vg_hook_id that created it (VG_HOOK_COUNT <= 256: checked in charge.c) */
	uint8_t kind;           /* enum vg_kind */
	uint8_t flags;          /* VG_ALLOC_* */
	uint8_t pool;           /* VG_ALLOC_POOLED: the slot of the stream-ordered pool it came from (devmem.h) */
};
_Static_assert(sizeof(struct vg_alloc) == 64, "a record is one cache line");

/* Records: from slabs of VG_SLAB_RECS, never returned to malloc (a fork child reuses its parent's slabs from
 * scratch). A per-thread cache of up to 64 takes and gives back 32 at a time under the store's lock. */
#define VG_SLAB_RECS 4096u
#define VG_MAX_SLABS 65536u     /* 2^28 records, 16 GiB of them */
/* A zeroed record (but for idx), or NULL when memory (or the store's index space) is exhausted. */
struct vg_alloc *vg_alloc_new(void);
void vg_alloc_free(struct vg_alloc *r);    /* NULL is ignored */
size_t vg_alloc_slabs(void);                /* slabs made so far, for tests */
/* fork: the store's lock, taken before fork and released in the parent; in the child every record is free again
 * (the child's tables are reset and no other thread survives) and the slabs are reused. */
void vg_alloc_lock(void);
void vg_alloc_unlock(void);
void vg_alloc_reset_child(void);

#define VG_SHARDS 64

/* A slot is 0 (empty), VG_SLOT_TOMB, or (32 bits of the key's hash << 32 | record index): a probe looks at a
 * record only when the hash bits match, and a rehash never looks at one. */
struct vg_shard {
	_Atomic int lock;               /* 0 free, 1 held, 2 held with waiters (table.c: vg_shard_lock) */
	uint64_t *slot;                 /* capacity a power of two */
	size_t cap, count, used;        /* used = records + tombstones */
} __attribute__((aligned(64)));

struct vg_table {
	struct vg_shard shard[VG_SHARDS];
};

void vg_table_init(struct vg_table *t);
/* Insert rec (from vg_alloc_new; the table owns it afterwards). Returns 0, -EEXIST (key present: rec is not
 * inserted, caller keeps it) or -ENOMEM. */
int vg_table_insert(struct vg_table *t, struct vg_alloc *rec);
/* Start loading the slot where key would go (no lock, no effect but on the cache). */
void vg_table_prefetch(struct vg_table *t, uint64_t key);
/* Remove and return the record for key, or NULL. The caller frees it. */
struct vg_alloc *vg_table_remove(struct vg_table *t, uint64_t key);
/* Call fn(rec, arg) under the shard lock for key. If fn returns true the record is removed and returned in
 * *removed (else *removed = NULL). Returns 0, or -ENOENT when there is no such key (fn not called). */
int vg_table_update(struct vg_table *t, uint64_t key, bool (*fn)(struct vg_alloc *rec, void *arg), void *arg,
		    struct vg_alloc **removed);
/* Remove every record for which pred(rec, arg) is true; returns them as a list linked by ->next. */
struct vg_alloc *vg_table_remove_if(struct vg_table *t, bool (*pred)(const struct vg_alloc *rec, void *arg),
				   void *arg);
/* Call fn on every record, one shard lock at a time (a consistent view per shard, not across shards). */
void vg_table_foreach(struct vg_table *t, void (*fn)(const struct vg_alloc *rec, void *arg), void *arg);
size_t vg_table_count(struct vg_table *t);

/* fork: lock every shard before, unlock in the parent after; in the child, drop every record and re-create the
 * locks (the child's records describe the parent's memory; vg_alloc_reset_child takes the records back). */
void vg_table_lock_all(struct vg_table *t);
void vg_table_unlock_all(struct vg_table *t);
void vg_table_reset_child(struct vg_table *t);

#endif
