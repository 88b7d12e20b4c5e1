/* Interned call sites. Capture is DWARF unwinding through libgcc's _Unwind_Backtrace (correct without frame
 * pointers, which PyTorch and the CUDA libraries are built without), driven directly so that vramguard's own
 * frames are skipped on the way and unwinding stops at the configured depth: glibc's backtrace() would unwind
 * frames we then throw away. Each frame costs ~0.2 us; bench/run_capture.sh measures it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <unwind.h>
#include <stdlib.h>
#include <string.h>

static __thread int vg_sites_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) do { (void)(obj); vg_sites_oom = 1; } while (0)
#include "accounting/sites.h"

#define VG_SITE_SHARDS 16
#define VG_OWN_FRAMES_MAX 8     /* vramguard frames above the caller: capture + wrapper + helpers */

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
static int vg_depth_cfg;
static uintptr_t vg_own_lo, vg_own_hi;

/* libgcc_s is loaded by glibc in every process that can unwind; we look it up rather than link it. */
static _Unwind_Reason_Code (*vg_uw_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*vg_uw_getip)(struct _Unwind_Context *);

struct vg_uw_state {
	void **buf;
	int n, max, skipping;
};

static _Unwind_Reason_Code vg_uw_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct vg_uw_state *u = arg;
	uintptr_t ip = (uintptr_t)vg_uw_getip(ctx);
	if (ip == 0)
		return _URC_END_OF_STACK;
	if (u->skipping) {
		if (ip >= vg_own_lo && ip < vg_own_hi)
			return _URC_NO_REASON;
		u->skipping = 0;
	}
	u->buf[u->n++] = (void *)ip;
	return u->n >= u->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* The caller's frames, ours skipped, at most max. */
static int vg_unwind(void **buf, int max)
{
	if (vg_uw_backtrace && vg_uw_getip) {
		struct vg_uw_state u = { buf, 0, max, vg_own_hi > vg_own_lo };
		vg_uw_backtrace(vg_uw_frame, &u);
		return u.n;
	}
	/* Fallback: glibc's backtrace(), then drop our frames. */
	void *tmp[VG_SITE_MAX_FRAMES + VG_OWN_FRAMES_MAX];
	int n = backtrace(tmp, max + VG_OWN_FRAMES_MAX);
	int skip = 0;
	while (skip < n && (uintptr_t)tmp[skip] >= vg_own_lo && (uintptr_t)tmp[skip] < vg_own_hi)
		skip++;
	n -= skip;
	if (n > max)
		n = max;
	memcpy(buf, tmp + skip, (size_t)(n > 0 ? n : 0) * sizeof(void *));
	return n;
}

void vg_sites_configure(int depth, uintptr_t own_lo, uintptr_t own_hi)
{
	if (depth < 0)
		depth = 0;
	if (depth > VG_SITE_MAX_FRAMES)
		depth = VG_SITE_MAX_FRAMES;
	vg_own_lo = own_lo;
	vg_own_hi = own_hi;
	if (depth > 0) {
		/* The first backtrace() loads libgcc's unwinder: do it now, not inside the first allocation. */
		void *warm[2];
		(void)backtrace(warm, 2);
		void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (!gcc)
			gcc = dlopen("libgcc_s.so.1", RTLD_NOW);
		if (gcc) {
			vg_uw_getip = (_Unwind_Ptr (*)(struct _Unwind_Context *))dlsym(gcc, "_Unwind_GetIP");
			vg_uw_backtrace = (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))dlsym(gcc,
												  "_Unwind_Backtrace");
		}
	}
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

struct vg_site *vg_site_capture(int api)
{
	int depth = vg_depth_cfg;
	if (depth <= 0)
		return NULL;
	void *frames[VG_SITE_MAX_FRAMES];
	int n = vg_unwind(frames, depth);
	if (n <= 0)
		return NULL;
	size_t keylen = (size_t)n * sizeof(void *);
	struct vg_site_shard *sh = &vg_site_shards[vg_frames_hash(frames, n) % VG_SITE_SHARDS];
	struct vg_site *s = NULL;
	pthread_mutex_lock(&sh->lock);
	HASH_FIND(hh, sh->head, frames, keylen, s);
	if (!s) {
		s = calloc(1, sizeof(*s) + keylen);
		if (s) {
			memcpy(s->frames, frames, keylen);
			s->nframes = (uint16_t)n;
			s->api = (uint16_t)api;
			s->id = atomic_fetch_add(&vg_site_next_id, 1);
			vg_sites_oom = 0;
			HASH_ADD_KEYPTR(hh, sh->head, s->frames, keylen, s);
			if (vg_sites_oom) {
				free(s);
				s = NULL;
			}
		}
	}
	pthread_mutex_unlock(&sh->lock);
	return s;
}

void vg_site_alloc(struct vg_site *s, uint64_t bytes)
{
	if (!s)
		return;
	atomic_fetch_add_explicit(&s->live_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->live_bytes, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->total_allocs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->total_bytes, bytes, memory_order_relaxed);
}

void vg_site_free(struct vg_site *s, uint64_t bytes)
{
	if (!s)
		return;
	atomic_fetch_sub_explicit(&s->live_count, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&s->live_bytes, bytes, memory_order_relaxed);
}

void vg_sites_foreach(void (*fn)(struct vg_site *s, void *arg), void *arg)
{
	for (int i = 0; i < VG_SITE_SHARDS; i++) {
		struct vg_site *s, *tmp;
		pthread_mutex_lock(&vg_site_shards[i].lock);
		HASH_ITER(hh, vg_site_shards[i].head, s, tmp) {
			fn(s, arg);
		}
		pthread_mutex_unlock(&vg_site_shards[i].lock);
	}
}

uint32_t vg_sites_count(void)
{
	return atomic_load(&vg_site_next_id) - 1;
}

void vg_sites_lock_all(void)
{
	for (int i = 0; i < VG_SITE_SHARDS; i++)
		pthread_mutex_lock(&vg_site_shards[i].lock);
}

void vg_sites_unlock_all(void)
{
	for (int i = VG_SITE_SHARDS - 1; i >= 0; i--)
		pthread_mutex_unlock(&vg_site_shards[i].lock);
}

void vg_sites_reset_child(void)
{
	for (int i = 0; i < VG_SITE_SHARDS; i++) {
		struct vg_site *s, *tmp;
		HASH_ITER(hh, vg_site_shards[i].head, s, tmp) {
			atomic_store(&s->live_count, 0);
			atomic_store(&s->live_bytes, 0);
			atomic_store(&s->total_allocs, 0);
			atomic_store(&s->total_bytes, 0);
		}
		pthread_mutex_init(&vg_site_shards[i].lock, NULL);
	}
}
