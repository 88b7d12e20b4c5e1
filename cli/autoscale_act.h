/* `vramguard autoscale` acting on one webhook body (cli/autoscale_act.c): each firing alert raises the limit it names
 * by the step, within the ceiling, at most once per cool-down. */
#ifndef VG_CLI_AUTOSCALE_ACT_H
#define VG_CLI_AUTOSCALE_ACT_H

#include <stddef.h>

#include "cli/autoscale_target.h"

/* Act on one webhook body: every decision logged on stderr (one line each) and counted in st. The HTTP status to
 * answer and a one-line summary for the response's body in msg. */
int vg_as_handle(const struct vg_as_policy *p, struct vg_as_state *st, const char *body, size_t len, char *msg,
		 size_t msglen);
#endif
