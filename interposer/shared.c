/* The process's place in a region (accounting/region.h): the shared region VRAMGUARD_SHARED names, or else its own
 * control segment; neither in a setuid program (the loader ignores the variables that name them there and turns
 * VRAMGUARD_CONTROL off). Joined at init, left at exit (lifecycle.c); what the region says of the quota in force
 * (`vramguard limit set`, its budget) is device.c's to pick up. A join or a GPU registration that cannot take the
 * region's lock in time (another member stopped inside it) is retried at the next allocation, which is refused until
 * then: the process runs, it is never left outside the budget. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accounting/clock.h"
#include "accounting/quota.h"
#include "accounting/region.h"
#include "interposer/base.h"
#include "interposer/shared.h"
#include "report/log.h"

struct vg_region vg_shared_self;
_Atomic int vg_shared_self_ready;       /* 1 once joined (and never in a forked child) */
/* Retried at the next allocation (or cuMemGetInfo): the join itself (VG_PENDING_JOIN) and the registration of the
 * CUDA ordinals in vg_unbound. Nonzero only on those paths; one load on every allocation. */
#define VG_PENDING_JOIN 1
#define VG_PENDING_BIND 2
#define VG_PENDING_FAILED 4             /* the late join failed for good: refused for the life of the process */
static _Atomic int vg_pending;
static _Atomic uint64_t vg_unbound;
static _Atomic int vg_settling;         /* one thread retries at a time; the others are refused meanwhile */
static _Atomic uint32_t vg_retries;
static uint64_t vg_self_start;
static char vg_self_cmd[VG_REGION_CMD_MAX];
/* NVIDIA_GPU_MEMORY_LIMITS alone made the region's budget (no VRAMGUARD_SHARED_LIMITS): that one setting is the
 * container's budget, so this process's own quota follows the region's when `vramguard limit set --shared` changes
 * it. Cleared by a `limit set --pid` aimed at this process, which gives it a quota of its own. */
static _Atomic bool vg_self_follow;
/* How the quota follows the budget then (device.c's vg_device_follow, given to vg_shared_attach). */
static int (*vg_follow_budget)(const char *budget);
/* The GPUs this process uses, as vg_shared_bind was told at their first use: for a registration retried later. */
static struct {
	char uuid[VG_UUID_MAX];
	uint64_t total;
} vg_known[VG_MAX_DEVICES];
static _Atomic uint64_t vg_known_mask;

/* VRAMGUARD_SHARED as messages quote it: 'name', or an absolute path of up to 511 bytes cut short (vg_quote). */
static char vg_self_label[VG_QUOTE_BUF];

const char *vg_shared_label(void)
{
	return vg_self_label;
}

void vg_shared_leave_at_exit(void)
{
	struct vg_region *r = vg_shared_region();
	if (r && r->owner == getpid())
		vg_region_leave(r);     /* and removes a control segment, or a region nobody is left in */
}

bool vg_shared_follows(void)
{
	return atomic_load(&vg_self_follow);
}

void vg_shared_follow_stop(void)
{
	atomic_store(&vg_self_follow, false);
}

/* How this process makes the shared region VRAMGUARD_SHARED names, if it is the first. */
static struct vg_region_make vg_shared_make(void)
{
	return (struct vg_region_make){ .kind = VG_REGION_SHARED, .mode = vg_cfg.shared_mode, .name = vg_cfg.shared_name,
					.spec = vg_cfg.shared_spec, .nslots = vg_cfg.shared_slots };
}

/* Register CUDA ordinal dev with the region at the next allocation (vg_shared_settle), which is refused until then. */
static void vg_bind_later(int dev)
{
	atomic_fetch_or(&vg_unbound, 1ull << dev);
	atomic_fetch_or(&vg_pending, VG_PENDING_BIND);
}

/* Open (creating it if need be) and take a slot in vg_shared_self. A file removed between our open and our join (its
 * last member left, `vramguard region rm`) is opened again, which makes a new one. On -ETIMEDOUT from the join the
 * file stays open (the join is retried later); on any other failure nothing stays open. */
static int vg_open_join(const char *path, const struct vg_region_make *make, bool *created, char *err, size_t errlen)
{
	int rc = -ESTALE;
	for (int attempt = 0; attempt < 16 && rc == -ESTALE; attempt++) {
		rc = vg_region_open(&vg_shared_self, path, VG_OPEN_JOIN, make->kind, make, created, err, errlen);
		if (rc != 0)
			return rc;
		rc = vg_region_join(&vg_shared_self, getpid(), vg_self_start, vg_self_cmd,
				    make->kind == VG_REGION_SHARED ? make->spec : NULL, err, errlen);
		if (rc != 0 && rc != -ETIMEDOUT)
			vg_region_close(&vg_shared_self);
	}
	return rc;
}

/* After the join: what the member should know about the region it is in. */
static void vg_shared_joined(bool created)
{
	const char *name = vg_shared_label();
	/* Copies: another member may rewrite the budget at any time (region.h). */
	char in_force[VG_REGION_SPEC_MAX], created_with[VG_REGION_SPEC_MAX];
	vg_region_spec_copy(&vg_shared_self, in_force, sizeof(in_force));
	memcpy(created_with, vg_shared_self.h->created_spec, sizeof(created_with));
	created_with[sizeof(created_with) - 1] = '\0';
	bool follow = vg_cfg.shared_spec_source && strcmp(vg_cfg.shared_spec_source, "NVIDIA_GPU_MEMORY_LIMITS") == 0 &&
		      strcmp(created_with, vg_cfg.shared_spec) == 0;
	char qp[VG_QUOTE_BUF];
	vg_quote(vg_shared_self.path, qp, sizeof(qp));
	if (vg_shared_self.fs_note[0])
		vg_log(VG_LOG_WARN, "shared region %s (%s): %s", name, qp, vg_shared_self.fs_note);
	if (created)
		vg_log(VG_LOG_INFO, "created shared region %s (%s), budget '%s', room for %u processes", name, qp,
		       in_force[0] ? in_force : "none", vg_shared_self.nslots);
	else if (vg_shared_self.started_over)
		vg_log(VG_LOG_INFO, "shared region %s (%s): every earlier member had exited; it starts over with this "
		       "process's budget '%s'", name, qp, in_force[0] ? in_force : "none");
	else if (strcmp(in_force, vg_cfg.shared_spec) != 0) {
		int members = vg_region_members(&vg_shared_self);
		bool persistent = vg_shared_self.h->flags & VG_REGION_PERSISTENT;
		char why[160];
		if (strcmp(in_force, created_with) != 0)
			snprintf(why, sizeof(why), "set by `vramguard limit set`; created with '%s'",
				 created_with[0] ? created_with : "none");
		else if (persistent)
			snprintf(why, sizeof(why), "set by `vramguard region create`");
		else
			snprintf(why, sizeof(why), "set by the process that created it, pid %d", (int)vg_shared_self.h->creator_pid);
		if (follow && in_force[0] && vg_follow_budget && vg_follow_budget(in_force) >= 0)
			vg_log(VG_LOG_INFO, "shared region %s has the budget '%s' in force (%s); this process's quota "
			       "follows it, as NVIDIA_GPU_MEMORY_LIMITS made the budget", name, in_force, why);
		else
			vg_log(VG_LOG_WARN, "shared region %s has the budget '%s' in force (%s; %d member%s, this one "
			       "included); this process's %s says '%s': the region's budget applies to the region, this "
			       "process's own quota to itself (a region keeps its budget while it has members; change it "
			       "with `vramguard limit set SPEC --shared %s`)", name, in_force[0] ? in_force : "none", why,
			       members, members == 1 ? "" : "s",
			       vg_cfg.shared_spec_source ? vg_cfg.shared_spec_source : "VRAMGUARD_SHARED_LIMITS",
			       vg_cfg.shared_spec[0] ? vg_cfg.shared_spec : "(unset)", name);
	}
	atomic_store(&vg_self_follow, follow);
	vg_quota_region = &vg_shared_self;
	atomic_store_explicit(&vg_shared_self_ready, 1, memory_order_release);
}

int vg_shared_attach(int (*follow)(const char *budget))
{
	vg_follow_budget = follow;
	char err[VG_ERR_MAX];
	bool created = false;
	if (vg_cfg.shared_path[0] || vg_cfg.control == VG_CONTROL_ON) {
		pid_t pid = getpid();
		vg_self_start = vg_proc_start(pid);     /* who we are: two reads of /proc, only where there is a region */
		vg_proc_cmdline(0, true, vg_self_cmd, sizeof(vg_self_cmd));
	}
	if (vg_cfg.shared_path[0]) {
		/* The user asked for a shared budget: if it cannot be had, fail closed. */
		vg_quote(vg_cfg.shared_name, vg_self_label, sizeof(vg_self_label));
		const struct vg_region_make make = vg_shared_make();
		int rc = vg_open_join(vg_cfg.shared_path, &make, &created, err, sizeof(err));
		if (rc == -ETIMEDOUT || rc == -ESTALE) {
			/* Not joined yet, but not shut out either: the next allocation tries again (and is refused until the
			 * process is in the region's budget). -ESTALE: the file was removed under us every time we tried
			 * (jobs coming and going faster than we could join). */
			atomic_fetch_or(&vg_pending, VG_PENDING_JOIN);
			if (rc == -ETIMEDOUT)
				vg_log(VG_LOG_WARN, "shared region %s: its lock has been held for more than %d s by another "
				       "process (stopped? see `vramguard top`): allocations are refused until this process can "
				       "join it; retried at each allocation", vg_shared_label(), VG_REGION_LOCK_TIMEOUT_MS / VG_MS_PER_SEC);
			else
				vg_log(VG_LOG_WARN, "shared region %s: %s, each of 16 times this process tried to join it: "
				       "allocations are refused until it can; retried at each allocation", vg_shared_label(),
				       err);
			return 0;
		}
		if (rc != 0) {
			vg_log(VG_LOG_ERROR, "shared region %s: %s; every allocation is refused until this is fixed and the "
			       "job restarted (see docs/quota.md, \"Shared regions\")", vg_shared_label(), err);
			return -1;
		}
		vg_shared_joined(created);
		return 0;
	}
	if (vg_cfg.control != VG_CONTROL_ON)
		return 0;
	char path[VG_SHARED_PATH_MAX];
	const struct vg_region_make make = { .kind = VG_REGION_CONTROL, .mode = 0600, .name = "", .spec = "" };
	int rc = vg_region_control_path(vg_cfg.shm_dir, getpid(), vg_self_start, path, sizeof(path));
	if (rc == 0)
		rc = vg_open_join(path, &make, &created, err, sizeof(err));
	/* Taken by a live process of another PID namespace with our PID and start tick (two containers' PID 1 started
	 * in the same tick, sharing VRAMGUARD_SHM_DIR): ours gets the namespace's inode in its name. */
	uint64_t ns = rc == -ENOSPC ? vg_proc_pidns() : 0;
	size_t pl = strlen(path);
	if (ns && (size_t)snprintf(path + pl, sizeof(path) - pl, ".%llu", (unsigned long long)ns) < sizeof(path) - pl)
		rc = vg_open_join(path, &make, &created, err, sizeof(err));
	if (rc == -ETIMEDOUT)
		vg_region_close(&vg_shared_self);
	if (rc != 0) {
		/* Only the command's view of this process is lost: quotas hold as configured. */
		vg_log(VG_LOG_WARN, "no control segment: %s; `vramguard top` and `vramguard limit set --pid` will not see "
		       "this process (VRAMGUARD_CONTROL=off silences this)",
		       rc == -ENAMETOOLONG ? "VRAMGUARD_SHM_DIR is too long" : err);
		return 0;
	}
	char qp[VG_QUOTE_BUF];
	if (vg_shared_self.fs_note[0])
		vg_log(VG_LOG_INFO, "control segment %s: %s", vg_quote(vg_shared_self.path, qp, sizeof(qp)), vg_shared_self.fs_note);
	/* A control segment has no budget: the quota counts in it (vg_quota_place), so vg_quota_region stays NULL. */
	atomic_store_explicit(&vg_shared_self_ready, 1, memory_order_release);
	return 0;
}

/* Register CUDA ordinal dev with region r (for `top`, and so that allocations there are charged to the budget). */
static void vg_bind_one(struct vg_region *r, int dev, const char *uuid, uint64_t total)
{
	/* The quota in force, as device.c last set it (its setter writes the slot once dev is registered). */
	int idx = vg_region_bind(r, dev, uuid, total, atomic_load(&vg_quota[dev].limit));
	_Atomic uint64_t *used, *peak;
	if (idx >= 0 && vg_region_control_counters(r, dev, &used, &peak))
		vg_quota_place(dev, used, peak);        /* one counter for the quota and for `vramguard top` */
	if (idx == -ETIMEDOUT && r->kind == VG_REGION_SHARED && dev >= 0 && dev < VG_MAX_DEVICES)
		vg_bind_later(dev);     /* not in the budget yet */
	else if (idx == -ENOSPC && r->kind == VG_REGION_SHARED)
		vg_log(VG_LOG_WARN, "shared region %s already has %d GPUs: GPU %d is not counted in it (only in this "
		       "process's own quota)", vg_shared_label(), VG_REGION_DEVS, dev);
	else if (idx < 0 && r->kind == VG_REGION_SHARED)
		vg_log(VG_LOG_WARN, "shared region %s: cannot register GPU %d: %s", vg_shared_label(), dev, strerror(-idx));
	else if (idx < 0) {
		char qp[VG_QUOTE_BUF];
		vg_log(VG_LOG_WARN, "control segment %s: cannot register GPU %d: %s (`vramguard top` will not show its "
		       "usage; the quota holds)", vg_quote(r->path, qp, sizeof(qp)), dev, strerror(-idx));
	}
	else if (r->kind == VG_REGION_SHARED) {
		uint64_t lim = atomic_load(&r->h->dev[idx].limit);
		if (lim != VG_REGION_NONE) {
			char a[32];
			vg_log(VG_LOG_INFO, "GPU %d: shared region %s budget %s", dev, vg_shared_label(),
			       vg_format_bytes(lim, a, sizeof(a)));
		}
	}
}

void vg_shared_bind(int dev, const char *uuid, uint64_t total)
{
	if (dev < 0 || dev >= VG_MAX_DEVICES)
		return;
	snprintf(vg_known[dev].uuid, sizeof(vg_known[dev].uuid), "%s", uuid ? uuid : "");
	vg_known[dev].total = total;
	atomic_fetch_or(&vg_known_mask, 1ull << dev);
	struct vg_region *r = vg_shared_region();
	if (r)
		vg_bind_one(r, dev, uuid, total);
	else if (atomic_load(&vg_pending) & VG_PENDING_JOIN)
		vg_bind_later(dev);     /* registered once the join succeeds */
}

void vg_shared_set_quota(int dev, uint64_t limit)
{
	struct vg_region *r = vg_shared_region();
	if (r)
		vg_region_set_quota(r, dev, limit);
}

/* Register the GPUs of mask that are in use (vg_shared_bind told us of them) with r. */
static void vg_shared_bind_known(struct vg_region *r, uint64_t mask)
{
	mask &= atomic_load(&vg_known_mask);
	for (int d = 0; d < VG_MAX_DEVICES; d++)
		if (mask >> d & 1)
			vg_bind_one(r, d, vg_known[d].uuid[0] ? vg_known[d].uuid : NULL, vg_known[d].total);
}

/* The slow side of vg_shared_ready: one thread retries the join and the registrations, each with the lock's usual
 * timeout; the others are refused meanwhile rather than wait in line. */
static int vg_shared_settle(int dev)
{
	int was = 0;
	if (!atomic_compare_exchange_strong(&vg_settling, &was, 1))
		return -EINPROGRESS;
	int rc = 0;
	if (atomic_load(&vg_pending) & VG_PENDING_JOIN) {
		char err[VG_ERR_MAX];
		const struct vg_region_make make = vg_shared_make();
		bool created = false;
		uint32_t n = atomic_fetch_add(&vg_retries, 1) + 1;
		/* The file stayed open after a timeout: join it, or open it again if it was removed meanwhile. */
		rc = vg_shared_self.h ? vg_region_join(&vg_shared_self, getpid(), vg_self_start, vg_self_cmd, make.spec,
						       err, sizeof(err))
				      : -ESTALE;
		if (rc == -ESTALE) {
			vg_region_close(&vg_shared_self);
			rc = vg_open_join(vg_cfg.shared_path, &make, &created, err, sizeof(err));
		}
		if (rc == 0) {
			/* The GPUs in use are registered before the region is published: no allocation is charged to the
			 * process alone in between. One resolved meanwhile gets its vg_unbound bit (vg_shared_bind). */
			vg_shared_bind_known(&vg_shared_self, UINT64_MAX);
			vg_log(VG_LOG_WARN, "shared region %s: joined after %u retr%s (its lock is free again); allocations "
			       "are counted in its budget from now on", vg_shared_label(), n, n == 1 ? "y" : "ies");
			vg_shared_joined(created);
			atomic_fetch_and(&vg_pending, ~VG_PENDING_JOIN);
		} else if (rc != -ETIMEDOUT && rc != -ESTALE) {
			/* Something else went wrong meanwhile (the file was replaced by one we refuse...): say it once; the
			 * process stays outside the budget, refused, as a process that could not join at start would be. */
			atomic_fetch_or(&vg_pending, VG_PENDING_FAILED);
			atomic_fetch_and(&vg_pending, ~VG_PENDING_JOIN);
			vg_log(VG_LOG_ERROR, "shared region %s: %s; every allocation is refused until this is fixed and the "
			       "job restarted", vg_shared_label(), err);
			rc = -EPERM;
		}
	}
	if (rc == 0 && (atomic_load(&vg_pending) & VG_PENDING_BIND)) {
		/* Clear the flag before taking the bits: a bit set meanwhile (vg_bind_later sets the bit, then the flag)
		 * is either taken here or leaves the flag set again. */
		atomic_fetch_and(&vg_pending, ~VG_PENDING_BIND);
		uint64_t mask = atomic_exchange(&vg_unbound, 0);
		vg_shared_bind_known(&vg_shared_self, mask);   /* those that time out again set their bit again */
		if (dev >= 0 && dev < VG_MAX_DEVICES && (atomic_load(&vg_unbound) >> dev & 1))
			rc = -ETIMEDOUT;
	}
	if (rc == -ETIMEDOUT || rc == -ESTALE)
		rc = -EINPROGRESS;
	atomic_store(&vg_settling, 0);
	return rc;
}

int vg_shared_ready(int dev)
{
	int p = atomic_load_explicit(&vg_pending, memory_order_relaxed);
	if (VG_LIKELY(p == 0))
		return 0;
	if (p & VG_PENDING_FAILED)
		return -EPERM;
	if (p == VG_PENDING_BIND && !(dev >= 0 && dev < VG_MAX_DEVICES &&
				      (atomic_load_explicit(&vg_unbound, memory_order_relaxed) >> dev & 1)))
		return 0;               /* another GPU's registration is pending, not this one's */
	return vg_shared_settle(dev);
}

void vg_shared_retry(void)
{
	if (atomic_load_explicit(&vg_pending, memory_order_relaxed) & (VG_PENDING_JOIN | VG_PENDING_BIND))
		vg_shared_settle(-1);
}

void vg_shared_reclaim(struct vg_region *r)
{
	if (r->kind != VG_REGION_SHARED)
		return;
	/* At most once a second: reclaim the shares of processes that died without leaving. */
	uint64_t now = vg_clock_ns(CLOCK_MONOTONIC_COARSE);
	uint64_t last = atomic_load_explicit(&r->last_reclaim_ns, memory_order_relaxed);
	if (now - last >= VG_NS_PER_SEC && atomic_compare_exchange_strong(&r->last_reclaim_ns, &last, now)) {
		int n = vg_region_reclaim(r);
		if (n > 0)
			vg_log(VG_LOG_INFO, "shared region %s: reclaimed the share of %d exited process%s",
			       vg_shared_label(), n, n == 1 ? "" : "es");
	}
}

void vg_shared_note_report(void)
{
	struct vg_region *r = vg_shared_region();
	if (!r)
		return;
	vg_region_note_report(r, vg_clock_ns(CLOCK_REALTIME));
}

void vg_shared_publish(int dev, uint64_t driver)
{
	struct vg_region *r = vg_shared_region();
	struct vg_quota_stats st;
	if (!r || !vg_quota_stats(dev, &st))
		return;
	vg_region_publish(r, dev, 1 + vg_cfg.count, st.allocated, driver, st.soft);
}

void vg_shared_publish_compute(int dev, uint32_t pm, uint32_t recent_pm, uint64_t gpu_ns)
{
	struct vg_region *r = vg_shared_region();
	if (r)
		vg_region_publish_compute(r, dev, pm, recent_pm, gpu_ns);
}

void vg_shared_publish_forecast(int dev, bool has, uint64_t seconds)
{
	struct vg_region *r = vg_shared_region();
	if (r)
		vg_region_publish_forecast(r, dev, has, seconds);
}

void vg_shared_publish_counts(void)
{
	struct vg_region *r = vg_shared_region();
	if (!r)
		return;
	struct vg_region_counts c = { 0 };
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		struct vg_quota_stats st;
		if (!vg_quota_stats(d, &st))
			continue;
		c.allocs += st.allocs;
		c.denied_bytes += st.denied_bytes;
	}
	/* Each shard's lock, briefly: this is the sampler thread, which holds no other lock (docs/LOCKS.md). */
	c.live_allocs = vg_table_count(&vg_ptrs) + vg_table_count(&vg_arrays) + vg_table_count(&vg_vmm);
	c.streams_pending = atomic_load(&vg_streams_destroyed_pending);
	vg_region_publish_counts(r, &c);
}

void vg_shared_atfork_child(void)
{
	/* The child is another process: it neither charges the parent's slot nor leaves it at exit, nor joins for it. */
	atomic_store(&vg_pending, atomic_load(&vg_pending) & VG_PENDING_FAILED);
	atomic_store(&vg_unbound, 0);
	atomic_store(&vg_settling, 0);
	if (atomic_exchange(&vg_shared_self_ready, 0))
		vg_quota_region = NULL;
	/* Our copies of the parent's descriptor and mapping hold its liveness lock's open file description: drop them,
	 * so that the lock dies with the parent (region.c). The quota counters placed in a control segment are
	 * detached right after (vg_quota_reset_usage); nothing runs in between. */
	vg_region_close(&vg_shared_self);
}
