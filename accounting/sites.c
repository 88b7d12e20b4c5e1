/* Interned call sites. The stack comes from accounting/unwind.c: DWARF CFI unwinding (correct without frame
 * pointers, which PyTorch and the CUDA libraries are built without) that skips vramguard's own frames and stops at
 * the configured depth. On x86-64 it walks with cached frame recipes, ~7 ns a frame once warm (libgcc's
 * _Unwind_Backtrace, the fallback and the only path elsewhere, costs ~0.2 us a frame); bench/run_capture.sh
 * measures it. Interning hashes the frames once for the shard and the uthash bucket. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static __thread int vg_sites_oom __attribute__((tls_model("initial-exec")));
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) do { (void)(obj); vg_sites_oom = 1; } while (0)
#include "accounting/lockorder.h"
#include "accounting/sites.h"
#include "accounting/unwind.h"

#define VG_SITE_SHARDS 16

struct vg_site_shard {
	pthread_mutex_t lock;
	struct vg_site *head;
} __attribute__((aligned(64)));

static struct vg_site_shard vg_site_shards[VG_SITE_SHARDS] = {
#define VG_S1 { PTHREAD_MUTEX_INITIALIZER, NULL }
	VG_S1, VG_S1, VG_S1, VG_S1, VG_S1, VG_S1, VG_S1, VG_S1,
	VG_S1, VG_S1, VG_S1, VG_S1, VG_S1, VG_S1, VG_S1, VG_S1,
#undef VG_S1
};
static _Atomic uint32_t vg_site_next_id = 1;

/* The sites this thread interned last, by hash. Most allocations come from a few call sites (a framework's
 * allocator calls the driver from one place): a hit skips the shard's lock and its table. Sites are never freed. */
#define VG_SITE_MEMO 4
static __thread struct {
	uint64_t hash;
	struct vg_site *site;
} vg_site_memo[VG_SITE_MEMO] __attribute__((tls_model("initial-exec")));
static int vg_depth_cfg;
static uintptr_t vg_own_lo, vg_own_hi;

void vg_sites_configure(int depth, int python, void (*info)(const char *msg), uintptr_t own_lo, uintptr_t own_hi)
{
	if (depth < 0)
		depth = 0;
	if (depth > VG_SITE_MAX_FRAMES)
		depth = VG_SITE_MAX_FRAMES;
	vg_own_lo = own_lo;
	vg_own_hi = own_hi;
	if (depth > 0)
		vg_unwind_init();
	vg_py_configure(python && depth > 0, info);
	vg_depth_cfg = depth;
}

int vg_sites_depth(void)
{
	return vg_depth_cfg;
}

static uint64_t vg_frames_hash(void *const *f, int n)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < n; i++) {
		h ^= (uint64_t)(uintptr_t)f[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

/* A new site for this key, its Python frames resolved now (outside the shard lock: it reads code objects). */
static struct vg_site *vg_site_new(int api, void *const *key, int n, int npy)
{
	size_t keylen = ((size_t)n + (size_t)npy * VG_SITE_PYKEY_WORDS) * sizeof(void *);
	struct vg_site *s = calloc(1, sizeof(*s) + keylen);
	if (!s)
		return NULL;
	memcpy(s->frames, key, keylen);
	s->nframes = (uint16_t)n;
	s->npykey = (uint16_t)npy;
	s->api = (uint16_t)api;
	if (npy > 0) {
		s->py = calloc((size_t)npy, sizeof(*s->py));
		if (s->py)
			s->npy = (uint16_t)vg_py_resolve((const struct vg_pykey *)(s->frames + n), npy, s->py);
	}
	return s;
}

static void vg_site_free(struct vg_site *s)
{
	vg_py_free(s->py, s->npy);
	free(s->py);
	free(s);
}

static __attribute__((noinline)) struct vg_site *vg_site_capture_at(int api, int depth)
{
	void *key[VG_SITE_MAX_FRAMES + VG_SITE_MAX_PYFRAMES * VG_SITE_PYKEY_WORDS];
	int n = vg_unwind_capture(key, depth, vg_own_lo, vg_own_hi);
	if (n < 0)
		n = 0;
	/* The Python frames go right after the native ones (zero cost where the thread has none: one TSS read). */
	int npy = vg_py_capture((struct vg_pykey *)(key + n), depth);
	if (n == 0 && npy == 0)
		return NULL;
	size_t keylen = ((size_t)n + (size_t)npy * VG_SITE_PYKEY_WORDS) * sizeof(void *);
	/* One hash for both: the shard from its top bits, uthash's buckets from its low ones (uthash's own function
	 * would hash the 128-byte key a second time). */
	uint64_t h = vg_frames_hash(key, (int)(keylen / sizeof(void *)));
	unsigned m = (unsigned)(h >> 56) % VG_SITE_MEMO;
	struct vg_site *s = vg_site_memo[m].site;
	if (s && vg_site_memo[m].hash == h && s->nframes == n && s->npykey == npy && memcmp(s->frames, key, keylen) == 0)
		return s;
	unsigned hashv = (unsigned)h;
	struct vg_site_shard *sh = &vg_site_shards[(h >> 60) % VG_SITE_SHARDS];
	s = NULL;
	vg_lock(&sh->lock, VG_RANK_SITES);
	HASH_FIND_BYHASHVALUE(hh, sh->head, key, keylen, hashv, s);
	vg_unlock(&sh->lock, VG_RANK_SITES);
	if (!s) {
		struct vg_site *fresh = vg_site_new(api, key, n, npy);
		if (!fresh)
			return NULL;
		vg_lock(&sh->lock, VG_RANK_SITES);
		HASH_FIND_BYHASHVALUE(hh, sh->head, key, keylen, hashv, s);      /* another thread may have won */
		if (!s) {
			fresh->id = atomic_fetch_add(&vg_site_next_id, 1);
			vg_sites_oom = 0;
			HASH_ADD_KEYPTR_BYHASHVALUE(hh, sh->head, fresh->frames, keylen, hashv, fresh);
			if (!vg_sites_oom) {
				s = fresh;
				fresh = NULL;
			}
		}
		vg_unlock(&sh->lock, VG_RANK_SITES);
		if (fresh)
			vg_site_free(fresh);
		if (!s)
			return NULL;
	}
	vg_site_memo[m].hash = h;
	vg_site_memo[m].site = s;
	return s;
}

struct vg_site *vg_site_capture(int api)
{
	int depth = vg_depth_cfg;
	return depth > 0 ? vg_site_capture_at(api, depth) : NULL;   /* capture off: no frame set up for the walk */
}

void vg_site_alloc(struct vg_site *s, uint64_t bytes)
{
	if (!s)
		return;
	atomic_fetch_add_explicit(&s->total_allocs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->total_bytes, bytes, memory_order_relaxed);
}

void vg_sites_foreach(void (*fn)(struct vg_site *s, void *arg), void *arg)
{
	for (int i = 0; i < VG_SITE_SHARDS; i++) {
		struct vg_site *s, *tmp;
		vg_lock(&vg_site_shards[i].lock, VG_RANK_SITES);
		HASH_ITER(hh, vg_site_shards[i].head, s, tmp) {
			fn(s, arg);
		}
		vg_unlock(&vg_site_shards[i].lock, VG_RANK_SITES);
	}
}

uint32_t vg_sites_count(void)
{
	return atomic_load(&vg_site_next_id) - 1;
}

void vg_sites_lock_all(void)
{
	for (int i = 0; i < VG_SITE_SHARDS; i++)
		vg_lock_nest(&vg_site_shards[i].lock, VG_RANK_SITES);
}

void vg_sites_unlock_all(void)
{
	for (int i = VG_SITE_SHARDS - 1; i >= 0; i--)
		vg_unlock(&vg_site_shards[i].lock, VG_RANK_SITES);
}

void vg_sites_reset_child(void)
{
	for (int i = 0; i < VG_SITE_SHARDS; i++) {
		struct vg_site *s, *tmp;
		HASH_ITER(hh, vg_site_shards[i].head, s, tmp) {
			atomic_store(&s->total_allocs, 0);
			atomic_store(&s->total_bytes, 0);
		}
		pthread_mutex_init(&vg_site_shards[i].lock, NULL);
	}
	vg_unwind_atfork_child();
}
