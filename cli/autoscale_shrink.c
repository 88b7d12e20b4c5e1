/* `vramguard autoscale --shrink-after`: a limit the receiver raised goes back to what it was before its first raise,
 * DURATION after its alert resolved, unless the alert fires again first (cli/autoscale_shrink.h). Only what the
 * receiver raised, only back to that original, never while the target uses more than it (tried again every
 * cool-down), and never a limit changed since by someone else (`limit set` by hand, a new process with the PID):
 * that is forgotten. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/autoscale_shrink.h"
#include "cli/scan.h"

#define AS_RETRY_MIN 1.0        /* seconds between tries of a deferred lowering, at least (else the cool-down) */

void vg_as_remember(const struct vg_as_policy *p, struct vg_as_cool *c, const struct vg_as_target *t,
		    const char *region, uint64_t nv)
{
	if (!c->raised) {
		c->raised = true;
		c->orig = t->old;
	}
	c->is_pid = t->is_pid;
	c->pid = t->pid;
	c->ord = t->ord;
	snprintf(c->region, sizeof(c->region), "%s", region ? region : "");
	snprintf(c->what, sizeof(c->what), "%s", t->what);
	c->shown = nv;
	/* A dry run changed nothing: what is "ours" is the limit in force. A process's request is one more limit_seq. */
	c->set = p->dry_run ? t->old : nv;
	c->seq = p->dry_run ? t->seq : t->seq + 1;
}

static void as_forget(struct vg_as_cool *c)
{
	c->raised = c->timer = c->deferred = false;
}

void vg_as_resolved(const struct vg_as_policy *p, struct vg_as_state *st, const char *an,
		    const struct vg_as_target *t)
{
	struct vg_as_cool *c = vg_as_cool_get(st, t->key, false);
	char o[32];
	if (!c || !c->raised) {
		vg_as_say(st, -1, "alert %s resolved: %s was not raised by this receiver: nothing changed", an, t->what);
		return;
	}
	vg_cli_size(c->orig, o, sizeof(o));
	double now = vg_cli_now();
	if (c->timer) {
		vg_as_say(st, -1, "alert %s resolved again: %s goes back to %s in %.0fs unless it fires again", an,
			  t->what, o, c->due > now ? c->due - now : 0);
		return;
	}
	c->timer = true;
	c->deferred = false;
	c->resolved = now;
	c->due = now + p->shrink_after;
	vg_as_say(st, -1, "alert %s resolved: %s goes back to %s after %.0fs unless it fires again", an, t->what, o,
		  p->shrink_after);
}

void vg_as_fired(struct vg_as_state *st, const char *an, const char *key)
{
	struct vg_as_cool *c = vg_as_cool_get(st, key, false);
	if (!c || !c->timer)
		return;
	c->timer = c->deferred = false;
	vg_as_say(st, -1, "alert %s fires again: %s is not lowered (the --shrink-after timer is cancelled)", an, c->what);
}

/* One due target: found again, still at what the receiver set, its usage within the original: lowered. */
static void as_due(const struct vg_as_policy *p, struct vg_as_state *st, struct vg_as_cool *c, double now)
{
	struct vg_as_target t;
	char why[VG_CLI_WHY_MAX] = "", o[32], n[32], u[32], spec[VG_REGION_SPEC_MAX];
	double retry = p->cooldown > AS_RETRY_MIN ? p->cooldown : AS_RETRY_MIN;
	vg_cli_size(c->orig, o, sizeof(o));
	if (vg_as_find(p, c, &t, why, sizeof(why)) != 0 || strcmp(t.key, c->key)) {
		vg_as_say(st, -1, "%s: not lowered to %s: %s: forgotten, nothing changed", c->what, o,
			  why[0] ? why : "the process exited and its PID is another process's now");
		as_forget(c);
		return;
	}
	vg_cli_size(t.old, n, sizeof(n));
	/* A process applies a request at its next allocation: ours may still be pending; any other request is not ours. */
	bool ours = t.is_pid ? t.seq == c->seq && (t.pending || t.old == c->set) : t.old == c->set;
	if (!ours) {
		char s[32];
		vg_cli_size(c->set, s, sizeof(s));
		vg_as_say(st, -1, "%s is %s%s now, not the %s this receiver set (changed by 'vramguard limit set'?): "
			  "forgotten, stays %s", c->what, n, t.is_pid && t.seq != c->seq ? " (or asked to change)" : "", s,
			  n);
		as_forget(c);
		return;
	}
	vg_cli_size(c->shown, n, sizeof(n));
	if (t.used > c->orig) {
		c->due = now + retry;
		if (!c->deferred) {
			c->deferred = true;
			vg_cli_size(t.used, u, sizeof(u));
			vg_as_say(st, VG_AS_LOWER_DEFERRED, "%s uses %s, more than the %s it had before the raise: stays "
				  "%s, tried again every %.0fs", c->what, u, o, n, retry);
		}
		return;
	}
	int rc = vg_as_write(p, &t, c->region[0] ? c->region : NULL, c->orig, spec, sizeof(spec), why, sizeof(why));
	if (rc) {
		vg_as_say(st, VG_AS_REFUSED_UNKNOWN, "%s: not lowered to %s: %s: forgotten, stays %s", c->what, o,
			  rc < 0 ? why : "the limit could not be set (see the line above)", n);
		as_forget(c);
		return;
	}
	if (p->dry_run)
		vg_as_say(st, VG_AS_DRY_RUN, "would lower %s: %s -> %s (alert resolved %.0fs ago, --shrink-after %.0fs; "
			  "would set %s)", c->what, n, o, now - c->resolved, p->shrink_after, spec);
	else
		vg_as_say(st, VG_AS_LOWERED, "%s: limit %s -> %s (alert resolved %.0fs ago, --shrink-after %.0fs; it "
			  "applies it at its next allocation)", c->what, n, o, now - c->resolved, p->shrink_after);
	as_forget(c);
}

int vg_as_tick(const struct vg_as_policy *p, struct vg_as_state *st)
{
	double now = vg_cli_now(), next = -1;
	for (int i = 0; i < st->ncool; i++) {
		struct vg_as_cool *c = &st->cool[i];
		if (!c->raised || !c->timer)
			continue;
		if (c->due <= now)
			as_due(p, st, c, now);
		if (c->raised && c->timer && (next < 0 || c->due < next))
			next = c->due;
	}
	if (next < 0)
		return -1;
	double ms = (next - now) * 1000 + 1;
	return ms < 0 ? 0 : ms > 3600e3 ? 3600000 : (int)ms;
}
