/* Soft limits and denials as report triggers (softlimit.c). They deny nothing: a warning line, and a report asked of
 * the reporter thread (reporter_ask.h). */
#ifndef VG_SOFTLIMIT_H
#define VG_SOFTLIMIT_H

/* Call vg_soft_limit_check(dev) after every change of dev's usage: a charge that succeeded, a release, a
 * re-measurement of device memory; any thread, any rate. Without a soft limit it is one relaxed load. At an upward
 * crossing (once; again only after usage fell below 90 % of it) it logs one warning and asks the reporter thread for
 * a report with reason "soft-limit"; crossings faster than one per VRAMGUARD_REPORT_INTERVAL (a minute) per device
 * are counted and named in the next warning instead. The reason is "threshold" when the soft limit came from
 * VRAMGUARD_WARN_AT; no report without `threshold` in VRAMGUARD_REPORT_ON. It denies nothing and takes no lock. */
void vg_soft_limit_check(int dev);
/* Call after an allocation was refused (vg_refuse): with `denial` in VRAMGUARD_REPORT_ON, the first denial of the
 * process asks the reporter thread for a report with reason "denial", then one per VRAMGUARD_REPORT_INTERVAL at
 * most. Relaxed atomics and the coarse clock only. */
void vg_denial_report_check(void);

#endif
