/* Device figures (VRAMGUARD_COUNT=device): stream-ordered pools charged by their reserved memory, graph memory, and
 * the driver's own memory for the process measured by a sampler thread. The model is in devmem.c's opening comment. */
#ifndef VG_DEVMEM_H
#define VG_DEVMEM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "interposer/base.h"

#define VG_POOLS_MAX 256
#define VG_DEVMEM_MIN_GAP_MS 50         /* rounds woken by module loads: at most one per 50 ms */
#define VG_DEVMEM_WAIT_S 3              /* the longest a context creation waits for its first measurement */

/* A stream-ordered pool this process allocates from. `charged` is what the quota holds for the pool's reserve;
 * `live` the bytes handed out through our hooks. An allocation with live + size <= charged is served from what is
 * charged already; one past it charges the growth first (vg_pool_grow) and settles with the driver's figure after
 * (vg_pool_grown). Slots are never freed, only reused once a destroyed pool's allocations are all gone. */
struct vg_pool {
	_Atomic(CUmemoryPool) handle;   /* NULL: a free slot (or a destroyed pool) */
	int dev;
	_Atomic uint64_t charged;
	_Atomic uint64_t live;
	_Atomic uint32_t growing;       /* allocations between vg_pool_grow and vg_pool_grown */
	pthread_mutex_t lock;           /* settling: held across one attribute query, never across an allocation */
} __attribute__((aligned(64)));

/* Per device: the graph and driver parts of the quota's figure, and what the sampler saw. */
struct vg_devmem {
	pthread_mutex_t lock;
	_Atomic uint64_t graph;         /* charged for graph memory */
	_Atomic uint64_t driver;        /* charged for the driver's own memory: measured + headroom */
	_Atomic uint64_t driver_seen;   /* the driver's own memory as last measured */
	_Atomic uint64_t driver_first;  /* as first measured, + 1 (0: not yet): the headroom is charged beyond it */
	_Atomic uint64_t nvml_used;     /* NVML's last per-process figure */
	_Atomic uint64_t samples;       /* measurements taken */
	_Atomic uint64_t trims;         /* pools trimmed before a refusal */
	_Atomic int nvml_status;        /* 0 measured, -ESRCH not listed, -ENOSYS no NVML, -EAGAIN none yet */
	_Atomic uint64_t measured_ns;   /* CLOCK_MONOTONIC of the last measurement */
	_Atomic int limit_read;
	_Atomic int first_waited;       /* a thread waited for the first measurement (once per device) */
};

extern struct vg_devmem vg_devmem[VG_MAX_DEVICES];
extern struct vg_pool vg_pools[VG_POOLS_MAX];

/* VRAMGUARD_COUNT=device. Inline: every stream-ordered allocation and every charge asks. */
static inline bool vg_count_device(void)
{
	return vg_cfg.count == VG_COUNT_DEVICE;
}

/* Pools: register one (cuMemPoolCreate, first use; dev -1 for a host pool, whose allocations are then counted by
 * their size), the device's current pool (cuMemAllocAsync), a new current pool (cuDeviceSetMemPool), a destroyed
 * one, and re-read one after the application changed it (trim, threshold). */
struct vg_pool *vg_pool_register(CUmemoryPool h, int dev);
struct vg_pool *vg_pool_current(int dev);
void vg_pool_set_current(int dev, CUmemoryPool h);
void vg_pool_forget(CUmemoryPool h);
void vg_pool_refresh(CUmemoryPool h);
/* After the driver call of an allocation whose growth was charged first (charge.c's vg_pool_grow): settle with the
 * driver's figure; false: the pool grew past the quota (the growth is charged anyway; the caller gives the memory
 * back). */
bool vg_pool_grown(struct vg_pool *p);

/* Re-read the pools and graph memory of dev (cuMemGetInfo, reports, the sampler). */
void vg_devmem_refresh(int dev);
/* Before refusing on dev: refresh and trim the pools' unused memory. True if usage went down (try again). */
bool vg_devmem_reclaim(int dev);
/* The parts of dev's figure: the pools' reserve (and what of it is handed out), graph memory, the driver's own
 * memory (charged, and as last measured). */
void vg_devmem_pool_figures(int dev, uint64_t *reserved, uint64_t *live);
static inline uint64_t vg_devmem_graph(int dev)
{
	return dev >= 0 && dev < VG_MAX_DEVICES ? atomic_load(&vg_devmem[dev].graph) : 0;
}
static inline uint64_t vg_devmem_driver(int dev)
{
	return dev >= 0 && dev < VG_MAX_DEVICES ? atomic_load(&vg_devmem[dev].driver) : 0;
}
static inline uint64_t vg_devmem_driver_seen(int dev)
{
	return dev >= 0 && dev < VG_MAX_DEVICES ? atomic_load(&vg_devmem[dev].driver_seen) : 0;
}
/* Near the limit, a driver figure a round old may miss what the driver took since (lazily loaded kernels): an
 * allocation that would leave less than VG_DEVMEM_SLACK of dev's quota waits (at most VG_DEVMEM_FRESH_WAIT_MS)
 * for a measurement unless the last one is under VG_DEVMEM_FRESH_MS old. Far from the limit: two loads. */
#define VG_DEVMEM_SLACK ((uint64_t)256 << 20)
/* Until the first measurement (a few milliseconds after the context, vg_devmem_context) what the context holds is
 * not charged, and it holds 518-748 MiB on an H100/H200 (CUDA-NOTES.md 11): an allocation that would leave less than
 * this of the quota waits for that measurement (once per device, at most VG_DEVMEM_WAIT_S). */
#define VG_DEVMEM_UNMEASURED ((uint64_t)1 << 30)
#define VG_DEVMEM_FRESH_MS 20
#define VG_DEVMEM_FRESH_WAIT_MS 200
void vg_devmem_fresh(int dev, uint64_t bytes);

/* A context was made: start the sampler, which measures what the driver holds for it. A process under its own
 * quota does not wait (start-up stays fast: what needs the measurement waits for it, vg_devmem_fresh and
 * vg_devmem_settled); a member of a shared region waits for the first measurement once (the region's budget is
 * checked against every member's figure, so its members' contexts must be in it before they allocate). */
void vg_devmem_context(bool shared);
/* Before an answer about free memory (cuMemGetInfo, NVML), which frameworks size themselves by: wait for dev's
 * first measurement if a limit applies and none has arrived (once per device, at most VG_DEVMEM_WAIT_S). */
void vg_devmem_settled(int dev);
/* Wake the sampler (start it the first time); wait: until a full round has run (at most VG_DEVMEM_WAIT_S). */
void vg_devmem_kick(bool wait);
/* Why the driver's own memory is not measured ("" when it is). */
const char *vg_devmem_driver_note(void);
void vg_devmem_init(void);
void vg_devmem_atfork_child(void);

#endif
