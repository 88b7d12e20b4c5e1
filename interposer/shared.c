/* The process's place in a region (accounting/region.h): the shared region VRAMGUARD_SHARED names, or else its own
 * control segment. Joined at init, left at exit; limit changes made with `vramguard limit set` are picked up here on
 * the next allocation or cuMemGetInfo and logged once. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accounting/quota.h"
#include "accounting/region.h"
#include "interposer/interposer.h"
#include "report/log.h"

static struct vg_region vg_self;
static _Atomic int vg_self_ready;       /* 1 once joined (and never in a forked child) */
static bool vg_self_unlink;             /* a control segment: remove the file when leaving */
/* NVIDIA_GPU_MEMORY_LIMITS alone made the region's budget (no VRAMGUARD_SHARED_LIMITS): that one setting is the
 * container's budget, so this process's own quota follows the region's when `vramguard limit set --shared` changes
 * it. Cleared by a `limit set --pid` aimed at this process, which gives it a quota of its own. */
static _Atomic bool vg_self_follow;

/* VRAMGUARD_SHARED as messages quote it: 'name', or an absolute path of up to 511 bytes cut short (vg_quote). */
static char vg_self_label[VG_QUOTE_BUF];

const char *vg_shared_label(void)
{
	return vg_self_label;
}

struct vg_region *vg_shared_region(void)
{
	return atomic_load_explicit(&vg_self_ready, memory_order_acquire) ? &vg_self : NULL;
}

static void vg_shared_leave_at_exit(void)
{
	struct vg_region *r = vg_shared_region();
	if (!r || r->owner != getpid())
		return;
	vg_region_leave(r);
	if (vg_self_unlink)
		unlink(r->path);
}

/* Destructors run after atexit handlers, and so after the driver's own teardown has freed our memory. */
__attribute__((destructor)) static void vg_shared_fini(void)
{
	vg_shared_leave_at_exit();
}

/* Open (creating it if need be) and take a slot in vg_self; on failure nothing stays open. */
static int vg_open_join(const char *path, int kind, unsigned mode, const char *name, const char *spec, pid_t pid,
			uint64_t start, const char *cmd, bool *created, char *err, size_t errlen)
{
	int rc = vg_region_open(&vg_self, path, true, true, kind, mode, name, spec, created, err, errlen);
	if (rc == 0 && (rc = vg_region_join(&vg_self, pid, start, cmd, err, errlen)) != 0)
		vg_region_close(&vg_self);
	return rc;
}

int vg_shared_attach(void)
{
	char err[VG_ERR_MAX], cmd[VG_REGION_CMD_MAX];
	pid_t pid = getpid();
	uint64_t start = 0;
	bool created = false;
	if (vg_cfg.shared_path[0] || vg_cfg.control == VG_CONTROL_ON) {
		start = vg_proc_start(pid);     /* who we are, for the slot: two reads of /proc, only where there is one */
		vg_proc_cmdline(0, true, cmd, sizeof(cmd));
	}
	if (vg_cfg.shared_path[0]) {
		/* The user asked for a shared budget: if it cannot be had, fail closed. */
		const char *name = vg_quote(vg_cfg.shared_name, vg_self_label, sizeof(vg_self_label));
		int rc = vg_open_join(vg_cfg.shared_path, VG_REGION_SHARED, vg_cfg.shared_mode, vg_cfg.shared_name,
				      vg_cfg.shared_spec, pid, start, cmd, &created, err, sizeof(err));
		if (rc != 0) {
			vg_log(VG_LOG_ERROR, "shared region %s: %s; every allocation is refused until this is fixed "
			       "(see docs/quota.md, \"Shared regions\")", name, err);
			return -1;
		}
		/* Copies: another member may rewrite the budget at any time (region.h); the creation spec never changes. */
		char in_force[VG_REGION_SPEC_MAX], created_with[VG_REGION_SPEC_MAX];
		vg_region_spec_copy(&vg_self, in_force, sizeof(in_force));
		memcpy(created_with, vg_self.h->created_spec, sizeof(created_with));
		created_with[sizeof(created_with) - 1] = '\0';
		bool follow = vg_cfg.shared_spec_source &&
			      strcmp(vg_cfg.shared_spec_source, "NVIDIA_GPU_MEMORY_LIMITS") == 0 &&
			      strcmp(created_with, vg_cfg.shared_spec) == 0;
		char qp[VG_QUOTE_BUF];
		if (created)
			vg_log(VG_LOG_INFO, "created shared region %s (%s), budget '%s'", name,
			       vg_quote(vg_self.path, qp, sizeof(qp)), in_force[0] ? in_force : "none");
		else if (strcmp(in_force, vg_cfg.shared_spec) != 0) {
			if (follow && in_force[0] && vg_device_apply_limit_spec(in_force, true) >= 0)
				vg_log(VG_LOG_INFO, "shared region %s has the budget '%s' in force (created with '%s', "
				       "changed by `vramguard limit set`); this process's quota follows it, as "
				       "NVIDIA_GPU_MEMORY_LIMITS made the budget", name, in_force, created_with);
			else
				vg_log(VG_LOG_WARN, "shared region %s has the budget '%s' in force (created with '%s'); "
				       "this process's %s says '%s': the region's budget applies to the region, this "
				       "process's own quota to itself (change the region's with `vramguard limit set SPEC "
				       "--shared %s`)", name, in_force[0] ? in_force : "none",
				       created_with[0] ? created_with : "none",
				       vg_cfg.shared_spec_source ? vg_cfg.shared_spec_source : "VRAMGUARD_SHARED_LIMITS",
				       vg_cfg.shared_spec[0] ? vg_cfg.shared_spec : "(unset)", name);
		}
		atomic_store(&vg_self_follow, follow);
		vg_self_unlink = false;
	} else if (vg_cfg.control == VG_CONTROL_ON) {
		char path[VG_SHARED_PATH_MAX];
		int rc = vg_region_control_path(vg_cfg.shm_dir, pid, start, path, sizeof(path));
		if (rc == 0)
			rc = vg_open_join(path, VG_REGION_CONTROL, 0600, "", "", pid, start, cmd, &created, err,
					  sizeof(err));
		if (rc != 0) {
			/* Only the command's view of this process is lost: quotas hold as configured. */
			vg_log(VG_LOG_WARN, "no control segment: %s; `vramguard top` and `vramguard limit set --pid` will "
			       "not see this process (VRAMGUARD_CONTROL=off silences this)",
			       rc == -ENAMETOOLONG ? "VRAMGUARD_SHM_DIR is too long" : err);
			return 0;
		}
		vg_self_unlink = true;
	} else {
		return 0;
	}
	if (vg_self.kind == VG_REGION_SHARED)
		vg_quota_region = &vg_self;     /* a control segment has no budget: the quota counts in it (place) */
	atomic_store_explicit(&vg_self_ready, 1, memory_order_release);
	return 0;
}

void vg_shared_bind(int dev, const char *uuid, uint64_t total, uint64_t own_limit)
{
	struct vg_region *r = vg_shared_region();
	if (!r)
		return;
	int idx = vg_region_bind(r, dev, uuid, total, own_limit);
	_Atomic uint64_t *used, *peak;
	if (idx >= 0 && vg_region_control_counters(r, dev, &used, &peak))
		vg_quota_place(dev, used, peak);        /* one counter for the quota and for `vramguard top` */
	if (idx == -ENOSPC && r->kind == VG_REGION_SHARED)
		vg_log(VG_LOG_WARN, "shared region %s already has %d GPUs: GPU %d is not counted in it (only in this "
		       "process's own quota)", vg_shared_label(), VG_REGION_DEVS, dev);
	else if (idx < 0 && idx != -ENOSPC && r->kind == VG_REGION_SHARED)
		vg_log(VG_LOG_WARN, "shared region %s: cannot register GPU %d: %s", vg_shared_label(), dev, strerror(-idx));
	else if (idx < 0 && idx != -ENOSPC)
		vg_log(VG_LOG_WARN, "control segment %s: cannot register GPU %d: %s (`vramguard top` will not show its "
		       "usage; the quota holds)", r->path, dev, strerror(-idx));
	else if (idx >= 0 && r->kind == VG_REGION_SHARED) {
		uint64_t lim = atomic_load(&r->h->dev[idx].limit);
		if (lim != VG_REGION_NONE) {
			char a[32];
			vg_log(VG_LOG_INFO, "GPU %d: shared region %s budget %s", dev, vg_shared_label(),
			       vg_format_bytes(lim, a, sizeof(a)));
		}
	}
}

/* Called on the allocation path and by cuMemGetInfo: cheap when nothing changed (two loads). */
void vg_shared_poll(bool may_reclaim)
{
	struct vg_region *r = vg_shared_region();
	if (!r || (VG_LIKELY(!vg_region_poll(r)) && !may_reclaim))
		return;
	char spec[VG_REGION_SPEC_MAX];
	if (VG_UNLIKELY(vg_region_pending_limit(r, spec, sizeof(spec)))) {
		vg_device_apply_limit_spec(spec, false);
		atomic_store(&vg_self_follow, false);
	}
	if (VG_UNLIKELY(vg_region_limit_changed(r))) {
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
		char spec2[VG_REGION_SPEC_MAX];
		vg_region_spec_copy(r, spec2, sizeof(spec2));
		bool follows = atomic_load(&vg_self_follow) && spec2[0] && vg_device_apply_limit_spec(spec2, true) >= 0;
		vg_log(VG_LOG_WARN, "shared region %s: budget changed to '%s' by `vramguard limit set`%s%s%s",
		       vg_shared_label(), spec2, line[0] ? ": " : "", line,
		       follows ? "; this process's quota follows it (NVIDIA_GPU_MEMORY_LIMITS made the budget)" : "");
	}
	if (may_reclaim && r->kind == VG_REGION_SHARED) {
		/* At most once a second: reclaim the shares of processes that died without leaving. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		uint64_t last = atomic_load_explicit(&r->last_reclaim_ns, memory_order_relaxed);
		if (now - last >= 1000000000u && atomic_compare_exchange_strong(&r->last_reclaim_ns, &last, now)) {
			int n = vg_region_reclaim(r);
			if (n > 0)
				vg_log(VG_LOG_INFO, "shared region %s: reclaimed the share of %d exited process%s",
				       vg_shared_label(), n, n == 1 ? "" : "es");
		}
	}
}

void vg_shared_note_report(void)
{
	struct vg_region *r = vg_shared_region();
	if (!r)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	vg_region_note_report(r, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

void vg_shared_atfork_child(void)
{
	/* The child is another process: it neither charges the parent's slot nor leaves it at exit. */
	if (atomic_exchange(&vg_self_ready, 0)) {
		vg_quota_region = NULL;
		vg_self.slot = -1;
	}
}
