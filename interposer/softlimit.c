/* Soft limits: what happens when a device's usage crosses its request. Nothing is denied; one warning line, and a
 * report asked of the reporter thread, because the crossing is seen by an allocating thread that may be inside a
 * driver call (accounting/quota.c detects the crossing; interposer/reporter.c writes the report). */
#define _GNU_SOURCE
#include <time.h>

#include "interposer/init.h"
#include "interposer/device.h"
#include "interposer/reporter.h"
#include "accounting/clock.h"
#include "accounting/quota.h"
#include "report/log.h"

/* A job whose every step frees below 90 % of its request and grows past it again would cross once a step: one
 * warning and one report a minute per device at most, the crossings in between counted. */
#define VG_SOFT_INTERVAL_NS ((int64_t)60 * VG_NS_PER_SEC)

static struct {
	_Atomic int64_t last_ns;        /* of the last warning; 0: none yet */
	_Atomic uint64_t suppressed;    /* crossings since, not reported */
} vg_soft_rate[VG_MAX_DEVICES];

static __attribute__((noinline, cold)) void vg_soft_limit_crossed(int dev)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	int64_t now = (int64_t)ts.tv_sec * VG_NS_PER_SEC + ts.tv_nsec + 1;   /* never 0 */
	int64_t last = atomic_load(&vg_soft_rate[dev].last_ns);
	if ((last != 0 && now - last < VG_SOFT_INTERVAL_NS) ||
	    !atomic_compare_exchange_strong(&vg_soft_rate[dev].last_ns, &last, now)) {
		atomic_fetch_add(&vg_soft_rate[dev].suppressed, 1);
		return;
	}
	uint64_t more = atomic_exchange(&vg_soft_rate[dev].suppressed, 0);
	const struct vg_device_info *di = vg_device_info_cached(dev);
	bool report = vg_reporter_running();
	char a[32], b[32], tail[80] = "";
	if (more)
		snprintf(tail, sizeof(tail), "; %llu more crossing%s since the last message", (unsigned long long)more,
			 more == 1 ? "" : "s");
	vg_log(VG_LOG_WARN, "GPU %d crossed its soft limit: %s of %s requested (%s); nothing is denied; %s%s", dev,
	       vg_format_bytes(vg_quota_used(dev), a, sizeof(a)), vg_format_bytes(vg_quota_soft(dev), b, sizeof(b)),
	       di && di->soft_source ? di->soft_source : "soft limit",
	       report ? "a report follows (reason soft-limit)"
	       : vg_cfg.report_dest == VG_REPORT_OFF ? "no report (VRAMGUARD_REPORT=off)"
						     : "no report (no reporter thread in this process)", tail);
	if (report)
		vg_reporter_ask_soft_limit();   /* after the line: the report comes after it on stderr too */
}

void vg_soft_limit_check(int dev)
{
	if (VG_LIKELY(!vg_quota_soft_check(dev)))
		return;
	vg_soft_limit_crossed(dev);
}
