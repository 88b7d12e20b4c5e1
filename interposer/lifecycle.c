/* The library's life in a process (lifecycle.h): lazy start-up at the first hook call, the fork handlers, and leaving
 * the region at exit. It calls every part of the interposer; none of them calls it. The constructor does nothing: a
 * process that never touches CUDA never gets here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "interposer/lifecycle.h"
#include "interposer/charge.h"
#include "interposer/compute.h"
#include "interposer/device.h"
#include "interposer/devmem.h"
#include "interposer/growth.h"
#include "interposer/reporter.h"
#include "interposer/shared.h"
#include "interposer/tables.h"
#include "interposer/timeline.h"
#include "accounting/lockorder.h"
#include "config/policy.h"
#include "accounting/quota.h"
#include "accounting/sites.h"
#include "report/log.h"

/* Exported so that a second copy of the library in the same process can see that it is not the first one. */
VG_EXPORT const int vg_instance_marker = 1;
/* Our own copy's address, whatever the global scope binds vg_instance_marker to. */
extern const int vg_instance_marker_self __attribute__((alias("vg_instance_marker"), visibility("hidden")));

static _Atomic int vg_mode_now = VG_MODE_UNINIT;
static pthread_mutex_t vg_init_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* The first copy of vramguard in the process starts its parts, the configuration loaded: the tables, then (a valid
 * configuration) the region, call sites and the reporter. Returns the mode. */
static enum vg_mode vg_start(uintptr_t lo, uintptr_t hi)
{
	enum vg_mode mode;
	vg_devmem_init();
	vg_tables_init();
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
		mode = vg_shared_attach(vg_device_follow) == 0 ? VG_MODE_ACTIVE : VG_MODE_BADCONFIG;
		vg_sites_configure(vg_cfg.backtrace_depth, vg_cfg.python == VG_CONTROL_ON, vg_py_info, lo, hi);
		vg_reporter_start();
		vg_compute_start(vg_config_compute_any(&vg_cfg));
	}
	static int atfork_done;     /* survives fork: handlers are inherited */
	if (!atfork_done) {
		atfork_done = 1;
		pthread_atfork(vg_atfork_prepare, vg_atfork_parent, vg_atfork_child);
	}
	vg_log(VG_LOG_DEBUG, "active in pid %d (mode %d)", (int)getpid(), mode);
	return mode;
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
		vg_config_read();
		vg_log_level = vg_cfg.log_level;
		if (!first) {
			mode = VG_MODE_PASSIVE;
			vg_log(VG_LOG_DEBUG, "another copy of vramguard is loaded first in pid %d; this one stays passive",
			       (int)getpid());
		} else {
			mode = vg_start(lo, hi);
		}
		atomic_store_explicit(&vg_mode_now, mode, memory_order_release);
	}
	vg_unlock(&vg_init_lock, VG_RANK_INIT);
	return (enum vg_mode)mode;
}

enum vg_mode vg_hook_enter(void)
{
	if (VG_UNLIKELY(vg_hook_depth++ > 0))
		return VG_MODE_PASSIVE;
	int mode = atomic_load_explicit(&vg_mode_now, memory_order_acquire);  /* vg_init's first lines, kept here */
	if (VG_LIKELY(mode >= VG_MODE_ACTIVE))
		return (enum vg_mode)mode;
	return vg_init();
}

/* ---- fork ---- */

static void vg_atfork_prepare(void)
{
	vg_device_atfork_prepare();
	vg_tables_atfork_prepare();
}

static void vg_atfork_parent(void)
{
	vg_tables_atfork_parent();
	vg_device_atfork_parent();
}

static void vg_atfork_child(void)
{
	/* The child's tables describe the parent's memory; the driver will not serve the child anyway (it returns
	 * CUDA_ERROR_NOT_INITIALIZED), but if it ever does, the child starts from zero. */
	vg_devmem_atfork_child();
	vg_timelines_atfork_child();
	vg_growth_atfork_child();
	vg_tables_atfork_child();
	vg_charge_atfork_child();
	vg_compute_atfork_child();
	vg_reporter_atfork_child();
	vg_quota_reset_usage();         /* first: it detaches the counters placed in the control segment... */
	vg_shared_atfork_child();       /* ...which this unmaps */
	vg_device_atfork_child();
	pthread_mutex_init(&vg_init_lock, NULL);
	vg_base_atfork_child();
	vg_lock_note_forget();
}

/* ---- exit ---- */

/* Destructors run after atexit handlers, and so after the driver's own teardown has freed our memory. (The exit
 * report and the sampler's stop are atexit handlers their files register at first use, while the driver lives.) */
__attribute__((destructor)) static void vg_fini(void)
{
	vg_shared_leave_at_exit();
}
