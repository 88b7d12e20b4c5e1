/* Reports from inside the process (reporter.c: the exit handler, the signal reporter thread; snapshot.c: what a
 * report says) and the soft limit that asks for one (softlimit.c). */
#ifndef VG_REPORTER_H
#define VG_REPORTER_H

#include <stdbool.h>
#include <stdint.h>

/* reporter.c. Start the exit handler and the signal reporter (at first CUDA use), and write one now. */
void vg_reporter_start(void);
void vg_reporter_arm_exit(void);
void vg_report_now(const char *reason);
void vg_reporter_atfork_child(void);
/* The reporter thread runs in this process (reports are on, it started, this is not a forked child). Ask it for a
 * report with the reason the request names: a flag and a byte in a pipe, async-signal-safe, no lock, no
 * allocation; requests of one kind made before it gets to them make one report. The report is never written by the
 * thread that asks; one still pending at exit is written by the exit handler, before the exit report. */
enum vg_ask { VG_ASK_SOFT_LIMIT, VG_ASK_THRESHOLD, VG_ASK_DENIAL };
bool vg_reporter_running(void);
void vg_reporter_ask(enum vg_ask what);

/* softlimit.c. Call vg_soft_limit_check(dev) after every change of dev's usage: a charge that succeeded, a release,
 * a re-measurement of device memory; any thread, any rate. Without a soft limit it is one relaxed load. At an
 * upward crossing (once; again only after usage fell below 90 % of it) it logs one warning and asks the reporter
 * thread for a report with reason "soft-limit"; crossings faster than one per VRAMGUARD_REPORT_INTERVAL (a minute)
 * per device are counted and named in the next warning instead. The reason is "threshold" when the soft limit came
 * from VRAMGUARD_WARN_AT; no report without `threshold` in VRAMGUARD_REPORT_ON. It denies nothing and takes no lock. */
void vg_soft_limit_check(int dev);
/* softlimit.c. Call after an allocation was refused (vg_refuse): with `denial` in VRAMGUARD_REPORT_ON, the first
 * denial of the process asks the reporter thread for a report with reason "denial", then one per
 * VRAMGUARD_REPORT_INTERVAL at most. Relaxed atomics and the coarse clock only. */
void vg_denial_report_check(void);

/* snapshot.c: fill r with the process's state now (tables, quotas, devices, region), for the reporter. */
struct vg_report;
int vg_snapshot(struct vg_report *r, const char *reason, uint64_t seq);

#endif
