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
 * report with reason "soft-limit": a flag and a byte in a pipe, async-signal-safe; requests made before it gets to
 * them make one report. The report is never written by the thread that asks. */
bool vg_reporter_running(void);
void vg_reporter_ask_soft_limit(void);

/* softlimit.c. Call vg_soft_limit_check(dev) after every change of dev's usage: a charge that succeeded, a release,
 * a re-measurement of device memory; any thread, any rate. Without a soft limit it is one relaxed load. At an
 * upward crossing (once; again only after usage fell below 90 % of it) it logs one warning and asks the reporter
 * thread for a report with reason "soft-limit"; crossings faster than one a minute per device are counted and
 * named in the next warning instead. It denies nothing and takes no lock. */
void vg_soft_limit_check(int dev);

/* snapshot.c: fill r with the process's state now (tables, quotas, devices, region), for the reporter. */
struct vg_report;
int vg_snapshot(struct vg_report *r, const char *reason, uint64_t seq);

#endif
