/* What a report says (snapshot.c): the process's state now, read from the tables, the devices, the device figures,
 * the timelines and the call sites. The reporter (reporter.c) renders and writes it. */
#ifndef VG_SNAPSHOT_H
#define VG_SNAPSHOT_H

#include <stdint.h>

/* Fill r with the process's state now, for a report with this reason and sequence number. 0, or -ENOMEM: r holds
 * what could be collected (the report says it is incomplete). Allocates; never in a signal handler. */
struct vg_report;
int vg_snapshot(struct vg_report *r, const char *reason, uint64_t seq);

#endif
