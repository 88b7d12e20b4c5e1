/* The allocation tables: live records keyed by device pointer, array handle, VMM handle or mapping address.
 * 64 shards, each an open-addressing hash of record pointers under one mutex; a lock is never held across a driver
 * call. No CUDA here. */
#ifndef VG_TABLE_H
#define VG_TABLE_H

#include <pthread.h>
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
				 * bytes = how many times, aux = 1 if synchronized first */
};

struct vg_site;

struct vg_alloc {
	uint64_t key;
	uint64_t bytes;         /* bytes charged to dev (mappings: length mapped) */
	uint64_t aux;           /* mappings: the VMM handle */
	void *ctx;              /* CUcontext it lives in, NULL if not bound to one */
	struct vg_site *site;   /* call site of the allocation, NULL if capture is off */
	uint64_t time_ns;       /* CLOCK_REALTIME when it was made */
	uint32_t tid;           /* kernel thread id of the caller */
	int32_t dev;
	uint16_t hook;          /* enum vg_hook_id that created it */
	uint8_t kind;           /* enum vg_kind */
	uint32_t refs;          /* VMM: handle references (create = 1, + retain, - release) */
	uint32_t maps;          /* VMM: live mappings */
	struct vg_alloc *next;  /* private list link for batch operations and free lists */
};

#define VG_SHARDS 64

struct vg_shard {
	pthread_mutex_t lock;
	struct vg_alloc **slot;         /* NULL, a record, or VG_TOMBSTONE; capacity a power of two */
	size_t cap, count, used;        /* used = records + tombstones */
} __attribute__((aligned(64)));

struct vg_table {
	struct vg_shard shard[VG_SHARDS];
};

void vg_table_init(struct vg_table *t);
/* Insert rec (malloc'd by the caller; the table owns it afterwards). Returns 0, -EEXIST (key present: rec is not
 * inserted, caller keeps it) or -ENOMEM. */
int vg_table_insert(struct vg_table *t, struct vg_alloc *rec);
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
 * locks (the child's records describe the parent's memory). */
void vg_table_lock_all(struct vg_table *t);
void vg_table_unlock_all(struct vg_table *t);
void vg_table_reset_child(struct vg_table *t);

#endif
