/* `vramguard autoscale --shrink-after` (cli/autoscale_shrink.c): what the receiver raised, remembered, and lowered back
 * to what it was DURATION after its alert resolved, unless the alert fires again first. */
#ifndef VG_CLI_AUTOSCALE_SHRINK_H
#define VG_CLI_AUTOSCALE_SHRINK_H

#include "cli/autoscale_target.h"

/* After a raise (or dry run) of t from t->old to nv: remember it for --shrink-after. */
void vg_as_remember(const struct vg_as_policy *p, struct vg_as_cool *c, const struct vg_as_target *t,
		    const char *region, uint64_t nv);
/* A resolved alert (an) for the target t: with --shrink-after, start its timer if the receiver raised it. */
void vg_as_resolved(const struct vg_as_policy *p, struct vg_as_state *st, const char *an,
		    const struct vg_as_target *t);
/* A firing alert (an) for the target key: a timer running for it is cancelled. */
void vg_as_fired(struct vg_as_state *st, const char *an, const char *key);

/* The due lowerings (--shrink-after), each one line: the milliseconds until the next is due, -1 for none. */
int vg_as_tick(const struct vg_as_policy *p, struct vg_as_state *st);

#endif
