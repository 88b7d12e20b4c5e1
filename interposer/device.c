/* The quota in force on each device (device.h): resolved on first use from the configuration's device policy and the
 * driver, changed live by `vramguard limit set` and by the driver's own container limit, always through one setter. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "interposer/base.h"
#include "interposer/device.h"
#include "interposer/shared.h"
#include "accounting/lockorder.h"
#include "accounting/quota.h"
#include "accounting/region.h"
#include "config/policy.h"
#include "report/log.h"

/* A per-process limit sent by `vramguard limit set --pid`: beats the environment for every device it names. */
static struct vg_limits vg_live_limits;
static bool vg_live_limits_set;

/* Device limits, resolved on first use of each device. */
struct vg_device_info vg_dev[VG_MAX_DEVICES];
_Atomic int vg_dev_ready[VG_MAX_DEVICES];
static pthread_mutex_t vg_dev_lock = PTHREAD_MUTEX_INITIALIZER;

#define VG_SOURCE_DRIVER "the driver's container limit (NVML)"
#define VG_SOURCE_LIMIT_SET "vramguard limit set"

/* The one place the quota in force changes: the device's figure (reports and messages), the quota counters (the
 * allocation check) and the process's slot in its region (`vramguard top`; nothing before dev is registered there,
 * which vg_shared_bind does with the quota counters' figure). Under vg_dev_lock, but for the stand-in of a device
 * whose size could not be read (vg_device_unsized: the same figures each time). */
static void vg_device_set(int dev, struct vg_device_info *di, uint64_t limit, const char *source)
{
	atomic_store(&di->limit, limit);
	di->source = source;
	vg_quota_set_limit(dev, limit);
	vg_shared_set_quota(dev, limit);
}

/* ---- first use ---- */

/* The device's size is unknown (a transient driver error, trc): enforce what can be enforced without it and cache
 * nothing. Sizing with a total of 1 byte makes a percentage quota deny everything (fail closed) while absolute
 * quotas hold as configured. The figures depend on the configuration only: made once per device, in static memory
 * (not thread-local: a dlopened copy of the library draws its thread-local block from glibc's small static TLS
 * surplus). */
static const struct vg_device_info *vg_device_unsized(int dev, CUresult trc)
{
	static struct vg_device_info unsized[VG_MAX_DEVICES];
	static _Atomic int state[VG_MAX_DEVICES];      /* 0 not made, 1 being made, 2 made */
	static _Atomic int warned;
	int st = 0;
	if (atomic_compare_exchange_strong(&state[dev], &st, 1)) {
		struct vg_device_policy pol;
		vg_config_device_policy(&vg_cfg, dev, NULL, 1, &pol);
		unsized[dev].limit = pol.limit;
		unsized[dev].source = pol.limit_source;
		atomic_store_explicit(&state[dev], 2, memory_order_release);
	}
	while (atomic_load_explicit(&state[dev], memory_order_acquire) != 2)
		sched_yield();
	vg_device_set(dev, &unsized[dev], unsized[dev].limit, unsized[dev].source);
	if (!atomic_exchange(&warned, 1))
		vg_log(VG_LOG_WARN, "cannot read the size of GPU %d (cuDeviceTotalMem_v2 returned %d): a percentage "
		       "quota denies every allocation until it can", dev, (int)trc);
	return &unsized[dev];
}

/* What the configuration says of a device first used now, and what the driver says of it. */
static void vg_device_resolve(int dev, size_t total, struct vg_device_info *info)
{
	memset(info, 0, sizeof(*info));
	info->total = total;
	CUuuid u;
	if (vg_real.cuDeviceGetUuid_v2 && vg_real.cuDeviceGetUuid_v2(&u, (CUdevice)dev) == CUDA_SUCCESS)
		vg_format_uuid(u.bytes, info->uuid, sizeof(info->uuid));
	/* One detector per device: VRAMGUARD_WARN_AT and the request make one soft limit (config/policy.h). Its
	 * percentage is of the quota resolved here, from the variables: `vramguard limit set` later moves the quota,
	 * not this line. */
	struct vg_device_policy pol;
	vg_config_device_policy(&vg_cfg, dev, info->uuid, info->total, &pol);
	info->limit = pol.limit;
	info->source = pol.limit_source;
	info->driver_limit = VG_NO_LIMIT;
	info->soft = pol.soft;
	info->soft_source = pol.soft_source;
	info->soft_reason = pol.soft_reason;
	info->compute_pm = pol.compute_pct * 10;
	info->compute_source = pol.compute_pct ? pol.compute_source : NULL;
}

/* Under vg_dev_lock: the first thread to get here publishes the device, with the limit `vramguard limit set` sent
 * earlier if it names it, registers it with the region and says what applies. */
static void vg_device_publish(int dev, struct vg_device_info *info)
{
	const char *uuid = info->uuid[0] ? info->uuid : NULL;
	int said = 0;
	if (vg_live_limits_set) {
		uint64_t live = vg_limits_for(&vg_live_limits, dev, uuid, info->total, NULL, &said);
		if (said) {
			info->limit = live;
			info->source = VG_SOURCE_LIMIT_SET;
		}
	}
	info->own_limit = info->limit;
	struct vg_device_info *di = &vg_dev[dev];
	*di = *info;
	vg_device_set(dev, di, info->limit, info->source);
	vg_quota_set_soft(dev, di->soft);       /* `vramguard limit set` changes the quota only */
	vg_shared_bind(dev, uuid, di->total);
	atomic_store_explicit(&vg_dev_ready[dev], 1, memory_order_release);
	char a[32], b[32];
	if (di->limit != VG_NO_LIMIT)
		vg_log(VG_LOG_INFO, "GPU %d (%s): quota %s of %s (%s)", dev, uuid ? uuid : "no uuid",
		       vg_format_bytes(di->limit, a, sizeof(a)), vg_format_bytes(di->total, b, sizeof(b)),
		       di->source ? di->source : "?");
	if (di->soft == VG_NO_LIMIT)
		return;
	if (di->limit != VG_NO_LIMIT && di->soft >= di->limit)
		vg_log(VG_LOG_INFO, "GPU %d: soft limit %s (%s) is not below its quota %s (%s): it never triggers", dev,
		       vg_format_bytes(di->soft, a, sizeof(a)), di->soft_source,
		       vg_format_bytes(di->limit, b, sizeof(b)), di->source ? di->source : "?");
	else
		vg_log(VG_LOG_INFO, "GPU %d: soft limit %s (%s)", dev, vg_format_bytes(di->soft, a, sizeof(a)),
		       di->soft_source);
}

const struct vg_device_info *vg_device_info_resolve(int dev)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES)
		return NULL;
	if (atomic_load_explicit(&vg_dev_ready[dev], memory_order_acquire))
		return &vg_dev[dev];
	/* Driver calls outside any lock; the result is the same whichever thread wins. */
	size_t total = 0;
	CUresult trc = vg_real.cuDeviceTotalMem_v2 ? vg_real.cuDeviceTotalMem_v2(&total, (CUdevice)dev)
						   : CUDA_ERROR_NOT_FOUND;
	if (trc != CUDA_SUCCESS)
		return vg_device_unsized(dev, trc);
	struct vg_device_info info;
	vg_device_resolve(dev, total, &info);
	vg_lock(&vg_dev_lock, VG_RANK_DEV);
	if (!atomic_load(&vg_dev_ready[dev]))
		vg_device_publish(dev, &info);
	vg_unlock(&vg_dev_lock, VG_RANK_DEV);
	return &vg_dev[dev];
}

const struct vg_device_info *vg_device_info_cached(int dev)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES || !atomic_load_explicit(&vg_dev_ready[dev], memory_order_acquire))
		return NULL;
	return &vg_dev[dev];
}

bool vg_device_budget(int dev, uint64_t *avail, uint64_t *budget)
{
	struct vg_region *r = vg_shared_region();
	return r && vg_region_avail(r, dev, avail, budget);
}

/* ---- live changes ---- */

void vg_device_apply_driver_limit(int dev, uint64_t hard)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES || !atomic_load(&vg_dev_ready[dev]))
		return;
	vg_lock(&vg_dev_lock, VG_RANK_DEV);
	struct vg_device_info *di = &vg_dev[dev];
	atomic_store(&di->driver_limit, hard);
	uint64_t prev = atomic_load(&di->limit);
	if (hard < prev)
		vg_device_set(dev, di, hard, VG_SOURCE_DRIVER);
	vg_unlock(&vg_dev_lock, VG_RANK_DEV);
	char a[32], b[32];
	vg_log(VG_LOG_INFO, "GPU %d: the driver enforces a container limit of %s; vramguard's is %s: the tighter applies",
	       dev, vg_format_bytes(hard, a, sizeof(a)),
	       prev == VG_NO_LIMIT ? "unlimited" : vg_format_bytes(prev, b, sizeof(b)));
}

/* Under vg_dev_lock: dev's quota from the limit list l, if it names dev and changes its quota (the driver's own
 * container limit stays the ceiling). True when it changed; *prev_out and *next_out say from what to what. */
static bool vg_device_relimit(int dev, const struct vg_limits *l, uint64_t *prev_out, uint64_t *next_out)
{
	struct vg_device_info *di = &vg_dev[dev];
	int said = 0;
	uint64_t next = vg_limits_for(l, dev, di->uuid[0] ? di->uuid : NULL, di->total, NULL, &said);
	uint64_t prev = atomic_load(&di->limit);
	if (!said || next == prev)
		return false;
	atomic_store(&di->own_limit, next);
	uint64_t drv = atomic_load(&di->driver_limit);
	if (drv < next)
		next = drv;     /* the driver's own container limit stays the ceiling */
	vg_device_set(dev, di, next, next == drv ? VG_SOURCE_DRIVER : VG_SOURCE_LIMIT_SET);
	*prev_out = prev;
	*next_out = next;
	return true;
}

int vg_device_apply_limit_spec(const char *spec, bool quiet)
{
	struct vg_limits l;
	char err[VG_ERR_MAX];
	/* The command checks a spec with this parser before sending it; one that fails here came from elsewhere (a
	 * newer command's syntax, a hand-edited region). */
	if (vg_parse_limits("limit", spec, (uint64_t)1 << 20, &l, err, sizeof(err)) != 0) {
		vg_log(VG_LOG_WARN, "ignored a limit sent by `vramguard limit set`: %s", err + strlen("vramguard: error: "));
		return -1;
	}
	vg_lock(&vg_dev_lock, VG_RANK_DEV);
	vg_live_limits = l;
	vg_live_limits_set = true;
	int changed = 0;
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		uint64_t prev, next;
		if (!atomic_load(&vg_dev_ready[d]) || !vg_device_relimit(d, &l, &prev, &next))
			continue;
		changed++;
		if (quiet)
			continue;
		char a[32], b[32], c[32];
		uint64_t used = vg_quota_used(d);
		vg_log(VG_LOG_WARN, "GPU %d: quota changed from %s to %s by `vramguard limit set` (%s in use%s)", d,
		       prev == VG_NO_LIMIT ? "unlimited" : vg_format_bytes(prev, a, sizeof(a)),
		       next == VG_NO_LIMIT ? "unlimited" : vg_format_bytes(next, b, sizeof(b)),
		       vg_format_bytes(used, c, sizeof(c)),
		       next != VG_NO_LIMIT && used > next ? "; new allocations are refused until usage drops" : "");
	}
	vg_unlock(&vg_dev_lock, VG_RANK_DEV);
	if (!changed && !quiet)
		vg_log(VG_LOG_INFO, "limit '%s' from `vramguard limit set` recorded (no GPU in use changes)", spec);
	return changed;
}

int vg_device_follow(const char *budget)
{
	return vg_device_apply_limit_spec(budget, true);
}

/* The shared region's budget changed (`vramguard limit set --shared`): say so once, with each GPU's new budget, and
 * follow it when NVIDIA_GPU_MEMORY_LIMITS made it. */
static void vg_device_budget_changed(struct vg_region *r)
{
	char line[400];
	size_t off = 0;
	line[0] = '\0';
	for (int d = 0; d < VG_REGION_DEVS && off < sizeof(line) - 64; d++) {
		if (!r->h->dev[d].uuid[0])
			continue;
		uint64_t lim = atomic_load(&r->h->dev[d].limit);
		char a[32];
		off += (size_t)snprintf(line + off, sizeof(line) - off, "%sGPU %d %s", off ? ", " : "",
					r->h->dev[d].ordinal,
					lim == VG_REGION_NONE ? "unlimited" : vg_format_bytes(lim, a, sizeof(a)));
	}
	char spec[VG_REGION_SPEC_MAX];
	vg_region_spec_copy(r, spec, sizeof(spec));
	bool follows = vg_shared_follows() && spec[0] && vg_device_apply_limit_spec(spec, true) >= 0;
	vg_log(VG_LOG_WARN, "shared region %s: budget changed to '%s' by `vramguard limit set`%s%s%s",
	       vg_shared_label(), spec, line[0] ? ": " : "", line,
	       follows ? "; this process's quota follows it (NVIDIA_GPU_MEMORY_LIMITS made the budget)" : "");
}

/* The region's count of times it took this process back after an eviction, as last said. */
static _Atomic uint32_t vg_rejoined_seen;

void vg_device_poll(bool may_reclaim)
{
	if (VG_UNLIKELY(may_reclaim))
		vg_shared_retry();      /* cuMemGetInfo retries a pending join too */
	struct vg_region *r = vg_shared_region();
	if (!r || (VG_LIKELY(!vg_region_poll(r)) && !may_reclaim &&
		   VG_LIKELY(atomic_load_explicit(&r->rejoined, memory_order_relaxed) ==
			     atomic_load_explicit(&vg_rejoined_seen, memory_order_relaxed))))
		return;
	char spec[VG_REGION_SPEC_MAX];
	if (VG_UNLIKELY(vg_region_pending_limit(r, spec, sizeof(spec)))) {
		vg_device_apply_limit_spec(spec, false);
		vg_shared_follow_stop();        /* a quota of its own now */
	}
	uint32_t rj = atomic_load(&r->rejoined), seen = atomic_load(&vg_rejoined_seen);
	if (VG_UNLIKELY(rj != seen) && atomic_compare_exchange_strong(&vg_rejoined_seen, &seen, rj))
		vg_log(VG_LOG_WARN, "shared region %s: this process was evicted from the region (`vramguard region evict "
		       "--force`) and joined it again: the memory it held before is no longer counted in the budget",
		       vg_shared_label());
	if (VG_UNLIKELY(vg_region_limit_changed(r)))
		vg_device_budget_changed(r);
	if (may_reclaim)
		vg_shared_reclaim(r);
}

/* ---- fork ---- */

void vg_device_atfork_prepare(void)
{
	vg_lock(&vg_dev_lock, VG_RANK_DEV);
}

void vg_device_atfork_parent(void)
{
	vg_unlock(&vg_dev_lock, VG_RANK_DEV);
}

void vg_device_atfork_child(void)
{
	pthread_mutex_init(&vg_dev_lock, NULL);
}
