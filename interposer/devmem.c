/* Device figures (VRAMGUARD_COUNT=device, the default): the quota counts what the GPU holds for the process, not only
 * the bytes it asked for. Next to the allocations three parts are charged (docs/quota.md, "What the quota counts"):
 *   pools   each stream-ordered pool's reserved memory (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), instead of the logical
 *           size of its allocations: memory the pool keeps after cuMemFreeAsync stays charged, an allocation the pool
 *           serves from what it holds costs nothing, one that makes it grow is charged the growth first;
 *   graphs  the device's graph memory reservation (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
 *   driver  the driver's own memory for the process (context, module images, lazily loaded kernels, local memory,
 *           heaps): NVML's per-process used memory less everything above, measured by a background thread.
 * The hot path reads two of our own counters per stream-ordered allocation; the driver is asked (one attribute query)
 * only when a pool grows; NVML is called only by the sampler thread, every VRAMGUARD_DEVICE_POLL ms, after each
 * module load and once, waited for, when a context is created. Before an allocation is refused, the pools' and
 * graphs' figures are refreshed and unused pool memory is trimmed, so a stale figure never causes a refusal.
 * The same thread samples each device's usage timeline (interposer/timeline.c), under VRAMGUARD_COUNT=allocations
 * too, where it does nothing else. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "interposer/device.h"
#include "interposer/devmem.h"
#include "interposer/growth.h"
#include "interposer/shared.h"
#include "interposer/softlimit.h"
#include "interposer/thread.h"
#include "interposer/timeline.h"
#include "interposer/nvml/nvml.h"
#include "accounting/quota.h"
#include "accounting/clock.h"
#include "accounting/lockorder.h"
#include "accounting/region.h"
#include "report/log.h"

struct vg_pool vg_pools[VG_POOLS_MAX];
static _Atomic uint32_t vg_npools;              /* slots ever used: lookups scan [0, vg_npools) */
static pthread_mutex_t vg_pools_lock = PTHREAD_MUTEX_INITIALIZER;    /* registering, never on the hot path */
/* The device's current pool (what cuMemAllocAsync draws from): cached at first use, changed by cuDeviceSetMemPool. */
static struct vg_pool *_Atomic vg_cur_pool[VG_MAX_DEVICES];

struct vg_devmem vg_devmem[VG_MAX_DEVICES];

/* Bring a part's charge (*charged, on dev's quota) to want, forced: the memory is held already. */
static void vg_charge_to(int dev, _Atomic uint64_t *charged, uint64_t want)
{
	uint64_t c = atomic_load(charged);
	if (want > c)
		vg_quota_force(dev, want - c);
	else if (want < c)
		vg_quota_release(dev, c - want);
	atomic_store(charged, want);
}

/* ---- pools ---- */

static struct vg_pool *vg_pool_find(CUmemoryPool h)
{
	uint32_t n = atomic_load_explicit(&vg_npools, memory_order_acquire);
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load_explicit(&vg_pools[i].handle, memory_order_acquire) == h)
			return &vg_pools[i];
	return NULL;
}

/* Register a pool of dev (idempotent). NULL when the table is full: the pool's allocations are then charged by
 * their logical size, as VRAMGUARD_COUNT=allocations does (said once). */
struct vg_pool *vg_pool_register(CUmemoryPool h, int dev)
{
	if (!h || dev < -1 || dev >= VG_MAX_DEVICES)    /* -1: a host pool, remembered so as not to be taken for one */
		return NULL;
	struct vg_pool *p = vg_pool_find(h);
	if (p)
		return p;
	vg_lock(&vg_pools_lock, VG_RANK_POOLS);
	p = vg_pool_find(h);
	if (!p) {
		uint32_t n = atomic_load(&vg_npools);
		/* A slot of a destroyed pool whose allocations are all gone can be used again. */
		for (uint32_t i = 0; i < n && !p; i++)
			if (!atomic_load(&vg_pools[i].handle) && atomic_load(&vg_pools[i].live) == 0 &&
			    atomic_load(&vg_pools[i].charged) == 0)
				p = &vg_pools[i];
		if (!p && n < VG_POOLS_MAX)
			p = &vg_pools[n];
		if (p) {
			p->dev = dev;
			atomic_store(&p->live, 0);
			atomic_store(&p->charged, 0);
			atomic_store(&p->growing, 0);
			atomic_store_explicit(&p->handle, h, memory_order_release);
			if (p == &vg_pools[n])
				atomic_store_explicit(&vg_npools, n + 1, memory_order_release);
		} else {
			static _Atomic int warned;
			if (!atomic_exchange(&warned, 1))
				vg_log(VG_LOG_WARN, "more than %d stream-ordered pools: allocations from the others are "
				       "counted by their size, not by the pool's reserved memory", VG_POOLS_MAX);
		}
	}
	vg_unlock(&vg_pools_lock, VG_RANK_POOLS);
	return p;
}

struct vg_pool *vg_pool_current(int dev)
{
	if (!vg_quota_tracked(dev))
		return NULL;
	struct vg_pool *p = atomic_load_explicit(&vg_cur_pool[dev], memory_order_acquire);
	if (VG_LIKELY(p != NULL))
		return p;
	CUmemoryPool h = NULL;
	if (!vg_real.cuDeviceGetMemPool || vg_real.cuDeviceGetMemPool(&h, (CUdevice)dev) != CUDA_SUCCESS || !h)
		return NULL;
	p = vg_pool_register(h, dev);
	if (p)
		atomic_store_explicit(&vg_cur_pool[dev], p, memory_order_release);
	return p;
}

void vg_pool_set_current(int dev, CUmemoryPool h)
{
	if (vg_quota_tracked(dev))
		atomic_store_explicit(&vg_cur_pool[dev], vg_pool_register(h, dev), memory_order_release);
}

/* The pool's reserved memory now, or false if the driver cannot say (a destroyed pool). */
static bool vg_pool_reserved(struct vg_pool *p, uint64_t *out)
{
	CUmemoryPool h = atomic_load(&p->handle);
	cuuint64_t v = 0;
	if (!h || !vg_real.cuMemPoolGetAttribute ||
	    vg_real.cuMemPoolGetAttribute(h, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS)
		return false;
	*out = v;
	return true;
}

/* Bring the pool's charge to what it holds. Growth is charged (refused charges are forced: the memory is held
 * already; returns false then); a shrink is given back only while no allocation of the pool is between its charge
 * and its settle (a figure read before that allocation grew the pool would undercount it). */
static bool vg_pool_settle(struct vg_pool *p, bool check)
{
	uint64_t r;
	bool ok = true;
	vg_lock(&p->lock, VG_RANK_POOL);
	if (!vg_pool_reserved(p, &r)) {
		vg_unlock(&p->lock, VG_RANK_POOL);
		return true;
	}
	uint64_t c = atomic_load(&p->charged);
	if (r > c && check) {
		if (vg_quota_reserve(p->dev, r - c, NULL) != 0) {
			vg_quota_force(p->dev, r - c);
			ok = false;
		}
		atomic_store(&p->charged, r);
	} else if (r > c || atomic_load(&p->growing) == 0) {
		vg_charge_to(p->dev, &p->charged, r);
	}
	vg_unlock(&p->lock, VG_RANK_POOL);
	return ok;
}

void vg_pool_forget(CUmemoryPool h)
{
	struct vg_pool *p = vg_pool_find(h);
	if (!p)
		return;
	vg_lock(&p->lock, VG_RANK_POOL);
	uint64_t c = atomic_exchange(&p->charged, 0);
	if (c)
		vg_quota_release(p->dev, c);
	atomic_store_explicit(&p->handle, NULL, memory_order_release);
	vg_unlock(&p->lock, VG_RANK_POOL);
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		struct vg_pool *cur = p;
		atomic_compare_exchange_strong(&vg_cur_pool[d], &cur, NULL);
	}
}

void vg_pool_refresh(CUmemoryPool h)
{
	struct vg_pool *p = vg_pool_find(h);
	if (p && p->dev >= 0)
		vg_pool_settle(p, false);
}

bool vg_pool_grown(struct vg_pool *p)
{
	atomic_fetch_sub(&p->growing, 1);
	return vg_pool_settle(p, true);
}

/* Memory the pools of dev hold but have not handed out: trimmed before a refusal, and each pool's charge settled. */
static void vg_pools_trim(int dev)
{
	uint32_t n = atomic_load_explicit(&vg_npools, memory_order_acquire);
	for (uint32_t i = 0; i < n; i++) {
		struct vg_pool *p = &vg_pools[i];
		CUmemoryPool h = atomic_load(&p->handle);
		if (!h || p->dev != dev)
			continue;
		if (vg_real.cuMemPoolTrimTo && vg_real.cuMemPoolTrimTo(h, 0) == CUDA_SUCCESS)
			atomic_fetch_add(&vg_devmem[dev].trims, 1);
		vg_pool_settle(p, false);
	}
}

/* ---- graphs ---- */

static void vg_graph_settle(int dev)
{
	cuuint64_t v = 0;
	if (!vg_real.cuDeviceGetGraphMemAttribute ||
	    vg_real.cuDeviceGetGraphMemAttribute((CUdevice)dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v) !=
		    CUDA_SUCCESS)
		return;
	struct vg_devmem *dm = &vg_devmem[dev];
	vg_lock(&dm->lock, VG_RANK_DEVMEM);
	vg_charge_to(dev, &dm->graph, v);
	vg_unlock(&dm->lock, VG_RANK_DEVMEM);
}

/* ---- refresh ---- */

void vg_devmem_refresh(int dev)
{
	if (!vg_count_device() || !vg_quota_tracked(dev))
		return;
	uint32_t n = atomic_load_explicit(&vg_npools, memory_order_acquire);
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load(&vg_pools[i].handle) && vg_pools[i].dev == dev)
			vg_pool_settle(&vg_pools[i], false);
	vg_graph_settle(dev);
}

bool vg_devmem_reclaim(int dev)
{
	if (!vg_count_device() || !vg_quota_tracked(dev))
		return false;
	uint64_t before = vg_quota_used(dev);
	vg_pools_trim(dev);     /* settles each pool after its trim: a refresh first would read them twice */
	vg_graph_settle(dev);
	return vg_quota_used(dev) < before;
}

void vg_devmem_pool_figures(int dev, uint64_t *reserved, uint64_t *live)
{
	*reserved = *live = 0;
	uint32_t n = atomic_load_explicit(&vg_npools, memory_order_acquire);
	for (uint32_t i = 0; i < n; i++)
		if (vg_pools[i].dev == dev && atomic_load(&vg_pools[i].handle)) {
			*reserved += atomic_load(&vg_pools[i].charged);
			*live += atomic_load(&vg_pools[i].live);
		}
}

/* ---- the driver's own memory: the sampler thread ---- */

static pthread_mutex_t vg_smp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vg_smp_cond = PTHREAD_COND_INITIALIZER;
static bool vg_smp_started, vg_smp_kicked;
static unsigned vg_smp_urgent;                  /* threads waiting for a round */
static bool vg_smp_stop, vg_smp_in_round;       /* exit: no round may start, or be under way, past atexit */
static uint64_t vg_smp_seq;                     /* rounds completed */
static _Atomic int vg_smp_state;                /* 0 not started, 1 running, -1 could not start */
static char vg_smp_reason[160];                 /* why the driver's memory is not measured, "" if it is */

const char *vg_devmem_driver_note(void)
{
	return vg_smp_reason;
}

/* One device: NVML's figure for this process less what the other parts count. Our usage stays at or above what the
 * driver holds for the process (a reserve before its allocation, a release after its free), except across a release:
 * a free and an allocation racing with the NVML call (one thread freeing while another allocates, or one thread
 * allocating during the call and freeing right after it) leave our figure where it was while NVML saw the
 * allocation, and the difference was taken for the driver's own memory. Seen on the test double: 1 MiB charged to
 * the driver in one report of twenty while a thread allocated and freed 1 MiB, and kept for good when it was the
 * first measurement (the headroom's floor). So a measurement counts only if no release fell between the NVML call
 * and our reading after it (vg_quota_releases): then our figure is at least what NVML counted of ours, and the
 * difference is the driver's. The mirror image, seen under TSan: an allocation reserved but not yet made by the
 * driver is in our figure and not in NVML's, and the driver's part came out short by it (63 of a module's 64 MiB in
 * one report of twenty); so a measurement also counts only if no allocation was under way when it began and none
 * began or ended until our reading (vg_quota_inflight). Busy: up to VG_DRIVER_TRIES tries a round (as many NVML
 * calls as before), 100 us apart, else the last measurement stands (none yet: not measured, this round): a process
 * that allocates or frees without a pause has its driver figure refreshed when it pauses. */
#define VG_DRIVER_TRIES 5
static void vg_sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void vg_measure_driver(int dev, const char *uuid)
{
	struct vg_devmem *dm = &vg_devmem[dev];
	uint64_t own = 0, u2 = 0;
	int rc = -EAGAIN;
	for (int tries = 0; tries < VG_DRIVER_TRIES; tries++) {
		if (tries)
			vg_sleep_us(100);
		uint64_t r1 = vg_quota_releases(dev), b1, d1, b2, d2;
		vg_quota_inflight(dev, &b1, &d1);
		if (b1 != d1) {
			rc = -EAGAIN;   /* an allocation under way: our usage counts what the driver may not hold yet */
			continue;
		}
		rc = vg_nvml_process_used(uuid, &own);
		u2 = vg_quota_used(dev);
		uint64_t r2 = vg_quota_releases(dev);
		vg_quota_inflight(dev, &b2, &d2);
		if (rc != 0 || (r2 == r1 && b2 == b1 && d2 == d1))
			break;
		rc = -EAGAIN;
	}
	if (rc == -EAGAIN)
		return;         /* busy: keep the last measurement (or have none yet) */
	atomic_store(&dm->nvml_status, rc);
	if (rc != 0)
		return;
	atomic_store(&dm->nvml_used, own);
	vg_lock(&dm->lock, VG_RANK_DEVMEM);
	uint64_t drv = atomic_load(&dm->driver);
	uint64_t others = u2 > drv ? u2 - drv : 0;
	uint64_t seen = own > others ? own - others : 0;
	/* The headroom (VRAMGUARD_DRIVER_HEADROOM) is charged beyond the first measurement until growth uses it up:
	 * kernels loaded at their first launch take memory after the allocations that filled the quota. */
	uint64_t first = atomic_load(&dm->driver_first);   /* first measurement + 1; 0: none yet */
	if (!first) {
		first = seen + 1;
		atomic_store(&dm->driver_first, first);
	}
	first--;
	uint64_t want = seen;
	if (first + vg_cfg.driver_headroom > want)
		want = first + vg_cfg.driver_headroom;
	atomic_store(&dm->driver_seen, seen);
	vg_charge_to(dev, &dm->driver, want);
	atomic_fetch_add(&dm->samples, 1);
	atomic_store(&dm->measured_ns, vg_clock_ns(CLOCK_MONOTONIC));
	vg_unlock(&dm->lock, VG_RANK_DEVMEM);
}

/* R615+ drivers' own container limits: read once per device, the tighter of the two applies. */
static void vg_read_driver_limit(int dev, const char *uuid)
{
	struct vg_devmem *dm = &vg_devmem[dev];
	if (atomic_exchange(&dm->limit_read, 1))
		return;
	uint64_t hard = VG_NO_LIMIT, soft = VG_NO_LIMIT;
	if (vg_nvml_driver_limits(uuid, &hard, &soft) == 0 && hard != VG_NO_LIMIT)
		vg_device_apply_driver_limit(dev, hard);
}

/* A round: under VRAMGUARD_COUNT=device, the pools, graphs and the driver's own memory measured, published and
 * checked against the soft limits; under both modes, each device's usage timeline sampled after that (under
 * allocations nothing else: no NVML is loaded, nothing new is charged). */
static void vg_sample_round(void)
{
	bool device = vg_count_device();
	bool nvml = device && vg_nvml_load();
	if (device && !nvml)
		snprintf(vg_smp_reason, sizeof(vg_smp_reason), "%s", vg_nvml_error());
	if (device)
		vg_shared_publish_counts();
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		const struct vg_device_info *di = vg_device_info_cached(d);
		if (!di)
			continue;
		if (device) {
			vg_devmem_refresh(d);
			if (nvml && di->uuid[0]) {
				vg_read_driver_limit(d, di->uuid);
				vg_measure_driver(d, di->uuid);
			}
			vg_shared_publish(d, vg_devmem_driver(d));
			vg_soft_limit_check(d);
		}
		vg_timelines_sample(d);
	}
	vg_growth_sample();
}

static void vg_deadline(struct timespec *ts, uint64_t from_ns, uint64_t ms)
{
	uint64_t t = from_ns + ms * VG_NS_PER_MS;
	ts->tv_sec = (time_t)(t / VG_NS_PER_SEC);
	ts->tv_nsec = (long)(t % VG_NS_PER_SEC);
}

/* Rounds: every VRAMGUARD_DEVICE_POLL ms; sooner when kicked (a module load: at most one round per
 * VG_DEVMEM_MIN_GAP_MS, so a program loading hundreds of modules a second costs one NVML query per gap, not one per
 * load); at once when a thread waits for a measurement (a context creation, an allocation near the limit). */
static void *vg_sampler_main(void *arg)
{
	(void)arg;
	vg_lock(&vg_smp_lock, VG_RANK_SAMPLER);
	for (;;) {
		while (vg_smp_stop)
			pthread_cond_wait(&vg_smp_cond, &vg_smp_lock);
		vg_smp_kicked = false;
		vg_smp_in_round = true;
		vg_unlock(&vg_smp_lock, VG_RANK_SAMPLER);
		vg_sample_round();
		vg_lock(&vg_smp_lock, VG_RANK_SAMPLER);
		vg_smp_in_round = false;
		vg_smp_seq++;
		pthread_cond_broadcast(&vg_smp_cond);
		uint64_t end = vg_clock_ns(CLOCK_MONOTONIC);
		uint64_t poll = vg_cfg.device_poll_ms ? vg_cfg.device_poll_ms : 500;
		struct timespec ts;
		for (;;) {
			if (vg_smp_urgent)
				break;
			uint64_t now = vg_clock_ns(CLOCK_MONOTONIC);
			if (vg_smp_kicked && now >= end + (uint64_t)VG_DEVMEM_MIN_GAP_MS * VG_NS_PER_MS)
				break;
			if (now >= end + poll * VG_NS_PER_MS)
				break;
			vg_deadline(&ts, end, vg_smp_kicked && VG_DEVMEM_MIN_GAP_MS < poll ? VG_DEVMEM_MIN_GAP_MS : poll);
			pthread_cond_timedwait(&vg_smp_cond, &vg_smp_lock, &ts);
		}
	}
	return NULL;
}

/* At exit (atexit runs before any library's destructors): NVML and the driver are about to go; the sampler stops
 * using them. A round under way is waited for (it takes a few milliseconds; at most 500 ms). */
static void vg_sampler_stop(void)
{
	vg_lock(&vg_smp_lock, VG_RANK_SAMPLER);
	vg_smp_stop = true;
	struct timespec ts;
	vg_deadline(&ts, vg_clock_ns(CLOCK_MONOTONIC), 500);
	while (vg_smp_in_round && pthread_cond_timedwait(&vg_smp_cond, &vg_smp_lock, &ts) != ETIMEDOUT)
		;
	vg_unlock(&vg_smp_lock, VG_RANK_SAMPLER);
}

static void vg_sampler_start_locked(void)
{
	if (vg_smp_started)
		return;
	vg_smp_started = true;
	static bool registered;
	if (!registered) {
		registered = true;
		atexit(vg_sampler_stop);
	}
	static pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&vg_smp_cond, &ca);
	int rc = vg_thread_start("vramguard-mem", vg_sampler_main, NULL);
	if (rc != 0) {
		atomic_store(&vg_smp_state, -1);
		snprintf(vg_smp_reason, sizeof(vg_smp_reason), "cannot start the sampler thread: %s", strerror(rc));
		vg_log(VG_LOG_WARN, "%s: %s", vg_count_device() ? "the driver's own memory is not counted" :
		       "the usage timeline is not sampled", vg_smp_reason);
		return;
	}
	atomic_store(&vg_smp_state, 1);
}

static void vg_devmem_kick_for(bool wait, uint64_t wait_ms);

void vg_devmem_kick(bool wait)
{
	vg_devmem_kick_for(wait, (uint64_t)VG_DEVMEM_WAIT_S * VG_MS_PER_SEC);
}

/* Before dev's first measurement (what its context holds is not charged yet): wait for it, once per device, and say
 * true. False once it has arrived, or where it never can (no NVML, the process not listed: nvml_status). */
static bool vg_devmem_first_awaited(struct vg_devmem *dm)
{
	if (atomic_load(&dm->nvml_status) != -EAGAIN || atomic_load(&dm->driver_first))
		return false;
	if (!atomic_exchange(&dm->first_waited, 1))
		vg_devmem_kick(true);
	return true;
}

void vg_devmem_fresh(int dev, uint64_t bytes)
{
	if (!vg_count_device() || !vg_quota_tracked(dev) || atomic_load_explicit(&vg_smp_state, memory_order_relaxed) != 1)
		return;
	uint64_t limit = atomic_load_explicit(&vg_quota[dev].limit, memory_order_relaxed);
	if (VG_LIKELY(limit == VG_NO_LIMIT))
		return;
	uint64_t used = vg_quota_counter(dev);
	if (VG_LIKELY(used + bytes + VG_DEVMEM_UNMEASURED <= limit))
		return;
	struct vg_devmem *dm = &vg_devmem[dev];
	if (vg_devmem_first_awaited(dm))
		return;
	if (used + bytes + VG_DEVMEM_SLACK <= limit || atomic_load(&dm->nvml_status) != 0 ||
	    vg_clock_ns(CLOCK_MONOTONIC) - atomic_load(&dm->measured_ns) < (uint64_t)VG_DEVMEM_FRESH_MS * VG_NS_PER_MS)
		return;
	vg_devmem_kick_for(true, VG_DEVMEM_FRESH_WAIT_MS);
}

void vg_devmem_context(bool shared)
{
	static _Atomic int waited;
	vg_devmem_kick(shared && vg_count_device() && !atomic_exchange(&waited, 1));
}

void vg_devmem_settled(int dev)
{
	if (!vg_count_device() || dev < 0 || dev >= VG_MAX_DEVICES ||
	    atomic_load_explicit(&vg_smp_state, memory_order_relaxed) != 1)
		return;
	if (atomic_load_explicit(&vg_quota[dev].limit, memory_order_relaxed) != VG_NO_LIMIT)
		(void)vg_devmem_first_awaited(&vg_devmem[dev]);
}

/* Under VRAMGUARD_COUNT=allocations a kick only starts the sampler (for the timelines): nothing new to measure. */
static void vg_devmem_kick_for(bool wait, uint64_t wait_ms)
{
	vg_lock(&vg_smp_lock, VG_RANK_SAMPLER);
	vg_sampler_start_locked();
	if (!vg_count_device() || atomic_load(&vg_smp_state) != 1 || vg_smp_stop) {
		vg_unlock(&vg_smp_lock, VG_RANK_SAMPLER);
		return;
	}
	/* A round that started before this call may have missed what changed: wait for the one after it. */
	uint64_t target = vg_smp_seq + 2;
	vg_smp_kicked = true;
	pthread_cond_broadcast(&vg_smp_cond);
	if (wait) {
		struct timespec ts;
		vg_deadline(&ts, vg_clock_ns(CLOCK_MONOTONIC), wait_ms);
		vg_smp_urgent++;
		pthread_cond_broadcast(&vg_smp_cond);
		while (vg_smp_seq < target && pthread_cond_timedwait(&vg_smp_cond, &vg_smp_lock, &ts) != ETIMEDOUT)
			;
		vg_smp_urgent--;
	}
	vg_unlock(&vg_smp_lock, VG_RANK_SAMPLER);
}

void vg_devmem_atfork_child(void)
{
	pthread_mutex_init(&vg_smp_lock, NULL);
	pthread_mutex_init(&vg_pools_lock, NULL);
	vg_smp_started = false;
	vg_smp_kicked = false;
	vg_smp_urgent = 0;
	vg_smp_stop = false;
	vg_smp_in_round = false;
	vg_smp_seq = 0;
	atomic_store(&vg_smp_state, 0);
	atomic_store(&vg_npools, 0);
	for (int i = 0; i < VG_POOLS_MAX; i++) {
		atomic_store(&vg_pools[i].handle, NULL);
		pthread_mutex_init(&vg_pools[i].lock, NULL);
	}
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		atomic_store(&vg_cur_pool[d], NULL);
		struct vg_devmem *dm = &vg_devmem[d];
		pthread_mutex_init(&dm->lock, NULL);
		atomic_store(&dm->graph, 0);
		atomic_store(&dm->driver, 0);
		atomic_store(&dm->driver_seen, 0);
		atomic_store(&dm->driver_first, 0);
		atomic_store(&dm->samples, 0);
		atomic_store(&dm->limit_read, 0);
		atomic_store(&dm->first_waited, 0);
	}
}

void vg_devmem_init(void)
{
	for (int i = 0; i < VG_POOLS_MAX; i++)
		pthread_mutex_init(&vg_pools[i].lock, NULL);
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		pthread_mutex_init(&vg_devmem[d].lock, NULL);
		atomic_store(&vg_devmem[d].nvml_status, -EAGAIN);
	}
}
