/* Soft limits and denials as report triggers: what happens when a device's usage crosses its soft limit (request or
 * VRAMGUARD_WARN_AT), or an allocation is refused. Nothing more is denied; one warning line at a crossing, and a
 * report asked of the reporter thread, because both are seen by an allocating thread that may be inside a driver
 * call (accounting/quota.c detects the crossing; interposer/reporter_ask.c asks, interposer/reporter.c writes). */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "interposer/base.h"
#include "interposer/device.h"
#include "interposer/reporter_ask.h"
#include "interposer/softlimit.h"
#include "accounting/clock.h"
#include "accounting/quota.h"
#include "report/log.h"

/* A job whose every step frees below 90 % of its soft limit and grows past it again would cross once a step: one
 * warning and one report per VRAMGUARD_REPORT_INTERVAL (a minute) per device at most, the crossings in between
 * counted. */
static int64_t vg_report_interval_ns(void)
{
	return (int64_t)vg_cfg.report_interval_s * VG_NS_PER_SEC;
}

static int64_t vg_coarse_now_ns(void)
{
	return (int64_t)vg_clock_ns(CLOCK_MONOTONIC_COARSE) + 1;     /* never 0 */
}

static struct {
	_Atomic int64_t last_ns;        /* of the last warning; 0: none yet */
	_Atomic uint64_t suppressed;    /* crossings since, not reported */
} vg_soft_rate[VG_MAX_DEVICES];

static __attribute__((noinline, cold)) void vg_soft_limit_crossed(int dev)
{
	int64_t now = vg_coarse_now_ns();
	int64_t last = atomic_load(&vg_soft_rate[dev].last_ns);
	if ((last != 0 && now - last < vg_report_interval_ns()) ||
	    !atomic_compare_exchange_strong(&vg_soft_rate[dev].last_ns, &last, now)) {
		atomic_fetch_add(&vg_soft_rate[dev].suppressed, 1);
		return;
	}
	uint64_t more = atomic_exchange(&vg_soft_rate[dev].suppressed, 0);
	const struct vg_device_info *di = vg_device_info_cached(dev);
	const char *reason = di && di->soft_reason ? di->soft_reason : "soft-limit";
	bool threshold = strcmp(reason, "threshold") == 0;
	bool wanted = (vg_cfg.report_on & VG_REPORT_ON_THRESHOLD) != 0;
	bool report = wanted && vg_reporter_running();
	char a[32], b[32], tail[80] = "", why[64];
	if (more)
		snprintf(tail, sizeof(tail), "; %llu more crossing%s since the last message", (unsigned long long)more,
			 more == 1 ? "" : "s");
	snprintf(why, sizeof(why), "a report follows (reason %s)", reason);
	vg_log(VG_LOG_WARN, "GPU %d crossed its %s: %s %s %s%s (%s); nothing is denied; %s%s", dev,
	       threshold ? "warning threshold" : "soft limit", vg_format_bytes(vg_quota_used(dev), a, sizeof(a)),
	       threshold ? "above" : "of", vg_format_bytes(vg_quota_soft(dev), b, sizeof(b)),
	       threshold ? "" : " requested", di && di->soft_source ? di->soft_source : "soft limit",
	       report ? why
	       : vg_cfg.report_dest == VG_REPORT_OFF ? "no report (VRAMGUARD_REPORT=off)"
	       : !wanted ? "no report (VRAMGUARD_REPORT_ON has no threshold)"
			 : "no report (no reporter thread in this process)", tail);
	if (report)     /* after the line: the report comes after it on stderr too */
		vg_reporter_ask(threshold ? VG_ASK_THRESHOLD : VG_ASK_SOFT_LIMIT);
}

void vg_soft_limit_check(int dev)
{
	if (VG_LIKELY(!vg_quota_soft_check(dev)))
		return;
	vg_soft_limit_crossed(dev);
}

/* The first denial of the process asks for a report, then one per VRAMGUARD_REPORT_INTERVAL at most: a burst of
 * refusals (a framework retrying smaller sizes, every rank of a loop) makes one. Lock-free, no allocation: this
 * runs in the refused caller's thread. */
static _Atomic int64_t vg_denial_last_ns;       /* of the last request; 0: none yet */

void vg_denial_report_check(void)
{
	if (!(vg_cfg.report_on & VG_REPORT_ON_DENIAL) || !vg_reporter_running())
		return;
	int64_t now = vg_coarse_now_ns();
	int64_t last = atomic_load_explicit(&vg_denial_last_ns, memory_order_relaxed);
	if (last != 0 && now - last < vg_report_interval_ns())
		return;
	if (atomic_compare_exchange_strong_explicit(&vg_denial_last_ns, &last, now, memory_order_relaxed,
						    memory_order_relaxed))
		vg_reporter_ask(VG_ASK_DENIAL);
}
