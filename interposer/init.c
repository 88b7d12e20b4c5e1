/* Lazy start-up: the real driver table, the process-level init (config, fork handler), the hook prologue (init.h),
 * and the per-device limit resolution (device.h). The constructor does nothing: a process that never touches CUDA
 * never gets here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "interposer/init.h"
#include "interposer/charge.h"
#include "interposer/device.h"
#include "interposer/reporter.h"
#include "interposer/route.h"
#include "interposer/shared.h"
#include "accounting/lockorder.h"
#include "accounting/quota.h"
#include "accounting/region.h"
#include "accounting/sites.h"
#include "report/log.h"

struct vg_real_table vg_real;
struct vg_config vg_cfg;

const char *const vg_hook_names[VG_HOOK_COUNT] = {
#define VG_X_NAME(name, ...) #name,
	VG_HOOKS(VG_X_NAME)
#undef VG_X_NAME
};

const char *const vg_hook_charges[VG_HOOK_COUNT] = {
#define VG_X_CHARGE(name, pfn, policy, charge) charge,
	VG_HOOKS(VG_X_CHARGE)
#undef VG_X_CHARGE
};

/* Exported so that a second copy of the library in the same process can see that it is not the first one. */
VG_EXPORT const int vg_instance_marker = 1;
/* Our own copy's address, whatever the global scope binds vg_instance_marker to. */
extern const int vg_instance_marker_self __attribute__((alias("vg_instance_marker"), visibility("hidden")));

/* 0: not resolved, 1: resolved, -1: libcuda.so.1 could not be loaded */
static _Atomic int vg_real_state;
static pthread_mutex_t vg_real_lock = PTHREAD_MUTEX_INITIALIZER;

bool vg_real_resolve(bool loaded_only)
{
	int st = atomic_load_explicit(&vg_real_state, memory_order_acquire);
	if (VG_LIKELY(st == 1))
		return true;
	if (st == -1 && loaded_only)
		return false;
	void *(*real_dlsym)(void *, const char *) = vg_resolve_real_dlsym();
	if (!real_dlsym)
		return false;
	/* No lock across dlopen: another thread may hold the loader lock and call our dlsym. */
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h && !loaded_only)
		h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		if (!loaded_only)
			atomic_store(&vg_real_state, -1);
		return false;
	}
	struct vg_real_table t;
#define VG_X_RESOLVE(name, pfn, ...) t.name = (pfn)real_dlsym(h, #name);
	VG_HOOKS(VG_X_RESOLVE)
	VG_REALS(VG_X_RESOLVE)
#undef VG_X_RESOLVE
	vg_lock(&vg_real_lock, VG_RANK_REAL);
	if (atomic_load(&vg_real_state) != 1) {
		vg_real = t;
		atomic_store_explicit(&vg_real_state, 1, memory_order_release);
	}
	vg_unlock(&vg_real_lock, VG_RANK_REAL);
	/* h stays open for the life of the process, like the application's own handle. */
	return true;
}

/* ---- process-level init ---- */

static _Atomic int vg_mode_now = VG_MODE_UNINIT;
static pthread_mutex_t vg_init_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int vg_depth __attribute__((tls_model("initial-exec")));

/* A per-process limit sent by `vramguard limit set --pid`: beats the environment for every device it names. */
static struct vg_limits vg_live_limits;
static bool vg_live_limits_set;

/* Device limits, resolved on first use of each device. */
static struct vg_device_info vg_dev[VG_MAX_DEVICES];
static _Atomic int vg_dev_ready[VG_MAX_DEVICES];
static pthread_mutex_t vg_dev_lock = PTHREAD_MUTEX_INITIALIZER;

static void vg_atfork_prepare(void);
static void vg_atfork_parent(void);
static void vg_atfork_child(void);

struct vg_range_arg {
	uintptr_t pc, lo, hi;
};

static int vg_range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct vg_range_arg *a = data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (s < lo)
			lo = s;
		if (s + ph->p_memsz > hi)
			hi = s + ph->p_memsz;
	}
	if (a->pc >= lo && a->pc < hi) {
		a->lo = lo;
		a->hi = hi;
		return 1;
	}
	return 0;
}

/* The address range of vramguard's own code: its frames are dropped from call sites. */
static void vg_own_range(uintptr_t *lo, uintptr_t *hi)
{
	struct vg_range_arg a = { (uintptr_t)&vg_own_range, 0, 0 };
	dl_iterate_phdr(vg_range_cb, &a);
	*lo = a.lo;
	*hi = a.hi;
}

static const char *vg_getenv(const char *name)
{
	return getenv(name);
}

static bool vg_is_first_copy(void)
{
	void *(*real_dlsym)(void *, const char *) = vg_resolve_real_dlsym();
	if (!real_dlsym)
		return true;
	const void *first = real_dlsym(RTLD_DEFAULT, "vg_instance_marker");
	return first == NULL || first == (const void *)&vg_instance_marker_self;
}
/* Python frames' one info line (accounting/pyframes.c: why they are off where CPython is present). */
static void vg_py_info(const char *msg)
{
	vg_log(VG_LOG_INFO, "%s", msg);
}


enum vg_mode vg_init(void)
{
	int mode = atomic_load_explicit(&vg_mode_now, memory_order_acquire);
	if (VG_LIKELY(mode >= VG_MODE_ACTIVE))
		return (enum vg_mode)mode;
	if (!vg_real_resolve(false)) {
		/* No driver: nothing to guard; our exports answer like a machine without CUDA. */
		return VG_MODE_PASSIVE;
	}
	/* Before the lock: both take the loader's lock, which a thread running a library's constructor inside dlopen
	 * holds when it enters here (docs/LOCKS.md). Each racing thread asks; the answers are the same. */
	bool first = vg_is_first_copy();
	uintptr_t lo = 0, hi = 0;
	vg_own_range(&lo, &hi);
	vg_lock(&vg_init_lock, VG_RANK_INIT);
	mode = atomic_load(&vg_mode_now);
	if (mode == VG_MODE_UNINIT) {
		atomic_store(&vg_mode_now, VG_MODE_INITIALIZING);
		/* AT_SECURE (setuid/setgid, file capabilities): the environment is a less privileged user's; the
		 * loader ignores the variables that name files, directories or modes (config/options.h, the options table). */
		vg_config_load(&vg_cfg, vg_getenv, getauxval(AT_SECURE) != 0);
		vg_log_level = vg_cfg.log_level;
		if (!first) {
			mode = VG_MODE_PASSIVE;
			vg_log(VG_LOG_DEBUG, "another copy of vramguard is loaded first in pid %d; this one stays passive",
			       (int)getpid());
		} else {
			vg_wrappers_init();
			char note[VG_ERR_MAX];
			int level = vg_config_secure_note(&vg_cfg, note, sizeof(note));
			if (level != VG_LOG_OFF)
				vg_log(level, "%s", note);
			if (vg_cfg.note[0])     /* variables that disagree: which were ignored */
				vg_log(VG_LOG_INFO, "%s", vg_cfg.note);
			if (!vg_cfg.valid) {
				/* The message is already complete; print it even if VRAMGUARD_LOG=off was what failed. */
				int saved = vg_log_level;
				if (vg_log_level < VG_LOG_ERROR)
					vg_log_level = VG_LOG_ERROR;
				vg_log_plain(VG_LOG_ERROR, "%s", vg_cfg.error + strlen("vramguard: "));
				vg_log_level = saved;
				mode = VG_MODE_BADCONFIG;
			} else {
				mode = vg_shared_attach() == 0 ? VG_MODE_ACTIVE : VG_MODE_BADCONFIG;
				vg_sites_configure(vg_cfg.backtrace_depth, vg_cfg.python == VG_CONTROL_ON, vg_py_info, lo, hi);
				vg_reporter_start();
			}
			static int atfork_done;     /* survives fork: handlers are inherited */
			if (!atfork_done) {
				atfork_done = 1;
				pthread_atfork(vg_atfork_prepare, vg_atfork_parent, vg_atfork_child);
			}
			vg_log(VG_LOG_DEBUG, "active in pid %d (mode %d)", (int)getpid(), mode);
		}
		atomic_store_explicit(&vg_mode_now, mode, memory_order_release);
	}
	vg_unlock(&vg_init_lock, VG_RANK_INIT);
	return (enum vg_mode)mode;
}

enum vg_mode vg_hook_enter(void)
{
	if (VG_UNLIKELY(vg_depth++ > 0))
		return VG_MODE_PASSIVE;
	return vg_init();
}

/* 1 + the device of the allocation this hook asked the driver for, until the hook returns (vg_hook_inflight). */
static __thread int vg_inflight __attribute__((tls_model("initial-exec")));

void vg_hook_inflight(int dev)
{
	if (!vg_inflight) {
		vg_quota_begin(dev);
		vg_inflight = dev + 1;
	}
}

void vg_hook_leave(void)
{
	if (VG_UNLIKELY(vg_inflight) && vg_depth == 1) {
		vg_quota_end(vg_inflight - 1);
		vg_inflight = 0;
	}
	vg_depth--;
}

/* ---- devices ---- */

static void vg_format_uuid(const CUuuid *u, char *out, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;
	snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

const struct vg_device_info *vg_device_info(int dev)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES)
		return NULL;
	if (VG_LIKELY(atomic_load_explicit(&vg_dev_ready[dev], memory_order_acquire)))
		return &vg_dev[dev];
	/* Driver calls outside any lock; the result is the same whichever thread wins. */
	struct vg_device_info info;
	memset(&info, 0, sizeof(info));
	size_t total = 0;
	CUresult trc = vg_real.cuDeviceTotalMem_v2 ? vg_real.cuDeviceTotalMem_v2(&total, (CUdevice)dev)
						   : CUDA_ERROR_NOT_FOUND;
	if (trc != CUDA_SUCCESS) {
		/* The device's size is unknown (a transient driver error): enforce what can be enforced without it and
		 * cache nothing. Sizing with a total of 1 byte makes a percentage quota deny everything (fail closed)
		 * while absolute quotas hold as configured. The figures depend on the configuration only: made once per
		 * device, in static memory (not thread-local: a dlopened copy of the library draws its thread-local
		 * block from glibc's small static TLS surplus). */
		static struct vg_device_info unsized[VG_MAX_DEVICES];
		static _Atomic int state[VG_MAX_DEVICES];      /* 0 not made, 1 being made, 2 made */
		static _Atomic int warned;
		int st = 0;
		if (atomic_compare_exchange_strong(&state[dev], &st, 1)) {
			const char *src = NULL;
			unsized[dev].limit = vg_config_limit_for(&vg_cfg, dev, NULL, 1, &src);
			unsized[dev].source = src;
			atomic_store_explicit(&state[dev], 2, memory_order_release);
		}
		while (atomic_load_explicit(&state[dev], memory_order_acquire) != 2)
			sched_yield();
		vg_quota_set_limit(dev, unsized[dev].limit);
		if (!atomic_exchange(&warned, 1))
			vg_log(VG_LOG_WARN, "cannot read the size of GPU %d (cuDeviceTotalMem_v2 returned %d): a percentage "
			       "quota denies every allocation until it can", dev, (int)trc);
		return &unsized[dev];
	}
	info.total = total;
	CUuuid u;
	if (vg_real.cuDeviceGetUuid_v2 && vg_real.cuDeviceGetUuid_v2(&u, (CUdevice)dev) == CUDA_SUCCESS)
		vg_format_uuid(&u, info.uuid, sizeof(info.uuid));
	const char *src = NULL;
	info.limit = vg_config_limit_for(&vg_cfg, dev, info.uuid[0] ? info.uuid : NULL, info.total, &src);
	info.source = src;
	info.driver_limit = VG_NO_LIMIT;
	info.soft = vg_config_request_for(&vg_cfg, dev, info.uuid[0] ? info.uuid : NULL, info.total, &src);
	info.soft_source = src;
	info.soft_reason = "soft-limit";
	/* One detector per device: VRAMGUARD_WARN_AT and the request make one soft limit, the lower of the two (a tie
	 * keeps the request's name and reason, as before VRAMGUARD_WARN_AT existed). Its percentage is of the quota
	 * resolved here, from the variables: `vramguard limit set` later moves the quota, not this line. */
	uint64_t warn = vg_config_warn_for(&vg_cfg, dev, info.uuid[0] ? info.uuid : NULL, info.limit, info.total, &src);
	if (warn < info.soft) {
		info.soft = warn;
		info.soft_source = src;
		info.soft_reason = "threshold";
	}
	vg_lock(&vg_dev_lock, VG_RANK_DEV);
	if (!atomic_load(&vg_dev_ready[dev])) {
		int said = 0;
		if (vg_live_limits_set) {
			uint64_t live = vg_limits_for(&vg_live_limits, dev, info.uuid[0] ? info.uuid : NULL, info.total,
						      NULL, &said);
			if (said) {
				info.limit = live;
				info.source = "vramguard limit set";
			}
		}
		info.own_limit = info.limit;
		vg_dev[dev] = info;
		vg_quota_set_limit(dev, info.limit);
		vg_quota_set_soft(dev, info.soft);      /* `vramguard limit set` changes the quota only */
		vg_shared_bind(dev, info.uuid[0] ? info.uuid : NULL, info.total, info.limit);
		atomic_store_explicit(&vg_dev_ready[dev], 1, memory_order_release);
		if (info.limit != VG_NO_LIMIT) {
			char a[32], b[32];
			vg_log(VG_LOG_INFO, "GPU %d (%s): quota %s of %s (%s)", dev, info.uuid[0] ? info.uuid : "no uuid",
			       vg_format_bytes(info.limit, a, sizeof(a)), vg_format_bytes(info.total, b, sizeof(b)),
			       info.source ? info.source : "?");
		}
		if (info.soft != VG_NO_LIMIT) {
			char a[32], b[32];
			if (info.limit != VG_NO_LIMIT && info.soft >= info.limit)
				vg_log(VG_LOG_INFO, "GPU %d: soft limit %s (%s) is not below its quota %s (%s): it never "
				       "triggers", dev, vg_format_bytes(info.soft, a, sizeof(a)), info.soft_source,
				       vg_format_bytes(info.limit, b, sizeof(b)), info.source ? info.source : "?");
			else
				vg_log(VG_LOG_INFO, "GPU %d: soft limit %s (%s)", dev, vg_format_bytes(info.soft, a, sizeof(a)),
				       info.soft_source);
		}
	}
	vg_unlock(&vg_dev_lock, VG_RANK_DEV);
	return &vg_dev[dev];
}

void vg_device_apply_driver_limit(int dev, uint64_t hard)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES || !atomic_load(&vg_dev_ready[dev]))
		return;
	vg_lock(&vg_dev_lock, VG_RANK_DEV);
	struct vg_device_info *di = &vg_dev[dev];
	atomic_store(&di->driver_limit, hard);
	uint64_t prev = atomic_load(&di->limit);
	if (hard < prev) {
		atomic_store(&di->limit, hard);
		di->source = "the driver's container limit (NVML)";
		vg_quota_set_limit(dev, hard);
	}
	vg_unlock(&vg_dev_lock, VG_RANK_DEV);
	char a[32], b[32];
	vg_log(VG_LOG_INFO, "GPU %d: the driver enforces a container limit of %s; vramguard's is %s: the tighter applies",
	       dev, vg_format_bytes(hard, a, sizeof(a)),
	       prev == VG_NO_LIMIT ? "unlimited" : vg_format_bytes(prev, b, sizeof(b)));
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
		if (!atomic_load(&vg_dev_ready[d]))
			continue;
		struct vg_device_info *di = &vg_dev[d];
		int said = 0;
		uint64_t next = vg_limits_for(&l, d, di->uuid[0] ? di->uuid : NULL, di->total, NULL, &said);
		uint64_t prev = atomic_load(&di->limit);
		if (!said || next == prev)
			continue;
		atomic_store(&di->own_limit, next);
		uint64_t drv = atomic_load(&di->driver_limit);
		if (drv < next)
			next = drv;     /* the driver's own container limit stays the ceiling */
		atomic_store(&di->limit, next);
		di->source = next == drv ? "the driver's container limit (NVML)" : "vramguard limit set";
		vg_quota_set_limit(d, next);
		struct vg_region *r = vg_shared_region();
		if (r)
			vg_region_set_quota(r, d, next);
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

const struct vg_device_info *vg_device_info_cached(int dev)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES || !atomic_load_explicit(&vg_dev_ready[dev], memory_order_acquire))
		return NULL;
	return &vg_dev[dev];
}

/* The device of a context never changes, so each thread remembers its last (context, device) pair; the cache is
 * dropped whenever a context may have died (a destroyed context's handle can come back for another device). */
static _Atomic unsigned vg_ctx_gen = 1;
static __thread CUcontext vg_tc_ctx __attribute__((tls_model("initial-exec")));
static __thread int vg_tc_dev __attribute__((tls_model("initial-exec")));
static __thread unsigned vg_tc_gen __attribute__((tls_model("initial-exec")));

void vg_ctx_cache_invalidate(void)
{
	atomic_fetch_add(&vg_ctx_gen, 1);
}

int vg_current_device(CUcontext *ctx)
{
	CUcontext c = NULL;
	CUdevice d = -1;
	if (!vg_real.cuCtxGetCurrent || vg_real.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
		c = NULL;
	if (ctx)
		*ctx = c;
	unsigned gen = atomic_load_explicit(&vg_ctx_gen, memory_order_acquire);
	if (c && c == vg_tc_ctx && gen == vg_tc_gen)
		return vg_tc_dev;
	if (!vg_real.cuCtxGetDevice || vg_real.cuCtxGetDevice(&d) != CUDA_SUCCESS)
		return -1;
	if (c) {
		vg_tc_ctx = c;
		vg_tc_dev = (int)d;
		vg_tc_gen = gen;
	}
	return (int)d;
}

/* ---- fork ---- */

static void vg_atfork_prepare(void)
{
	vg_lock(&vg_dev_lock, VG_RANK_DEV);
	vg_wrappers_atfork_prepare();
}

static void vg_atfork_parent(void)
{
	vg_wrappers_atfork_parent();
	vg_unlock(&vg_dev_lock, VG_RANK_DEV);
}

static void vg_atfork_child(void)
{
	/* The child's tables describe the parent's memory; the driver will not serve the child anyway (it returns
	 * CUDA_ERROR_NOT_INITIALIZED), but if it ever does, the child starts from zero. */
	vg_wrappers_atfork_child();
	vg_reporter_atfork_child();
	vg_quota_reset_usage();         /* first: it detaches the counters placed in the control segment... */
	vg_shared_atfork_child();       /* ...which this unmaps */
	pthread_mutex_init(&vg_dev_lock, NULL);
	pthread_mutex_init(&vg_init_lock, NULL);
	pthread_mutex_init(&vg_real_lock, NULL);
	vg_lock_note_forget();
}
