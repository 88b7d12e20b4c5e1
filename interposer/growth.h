/* Per-site growth in the process (accounting/growth.h has the model): sampled by the sampler thread's rounds
 * (interposer/devmem.c), copied into reports (interposer/snapshot.c); the forecast published for the exporter, and
 * growth reports asked for (VRAMGUARD_REPORT_ON=growth). Nothing here runs on the allocation path. */
#ifndef VG_INTERPOSER_GROWTH_H
#define VG_INTERPOSER_GROWTH_H

struct vg_report;

/* One round of the sampler thread (holding no lock): a point when one is due (a walk of the allocation tables), the
 * forecasts published every round. */
void vg_growth_sample(void);
/* Give a report (its devices and sites filled in) the growth of each device, the forecasts and each site's rate. 0,
 * or -ENOMEM (then some device has none). Called under vg_report_lock. */
int vg_growth_report(struct vg_report *r);
/* Fork child: no sampler there; what the child allocates starts a new story. */
void vg_growth_atfork_child(void);

#endif
