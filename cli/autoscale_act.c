/* `vramguard autoscale`: acting on Alertmanager's webhook payload (cli/autoscale_act.h). The payload is read whole
 * before anything is done (autoscale_payload.c): one that is not Alertmanager's, is not UTF-8 text, or has a value
 * of the wrong type, changes nothing. Each firing alert then names a target (pid + region: a process, region alone: a
 * region's budget) and one GPU (cli/autoscale_target.h); its limit is read, raised by the step within the ceiling, at
 * most once per cool-down, and written as `limit set` writes it. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/autoscale_act.h"
#include "cli/autoscale_shrink.h"
#include "cli/scan.h"

static uint64_t as_ceiling(const struct vg_as_policy *p, const struct vg_as_alert *a, const struct vg_as_target *t)
{
	for (int i = 0; i < p->nceil; i++)
		if (p->ceil[i].pid_target ? t->is_pid && p->ceil[i].pid == t->pid
					  : !t->is_pid && !strcmp(p->ceil[i].region, a->region))
			return p->ceil[i].bytes;
	return p->ceiling;
}

static void as_act(const struct vg_as_policy *p, struct vg_as_state *st, const struct vg_as_alert *a)
{
	const char *an = vg_cli_q(a->name);
	if (p->nalerts) {
		int i = 0;
		while (i < p->nalerts && strcmp(p->alerts[i], a->name))
			i++;
		if (i == p->nalerts) {
			vg_as_say(st, -1, "alert %s is not one of --alert's names: nothing changed", an);
			return;
		}
	}
	if (!a->firing && p->shrink_after < 0) {
		vg_as_say(st, -1, "alert %s resolved: nothing changed (limits are not lowered automatically)", an);
		return;
	}
	struct vg_as_target t;
	char why[VG_CLI_WHY_MAX] = "";
	memset(&t, 0, sizeof(t));
	if (!a->firing) {
		/* --shrink-after: a resolved alert starts the timer of a target the receiver raised. */
		if ((!(a->has_pid && a->pid[0]) && !(a->has_region && a->region[0])) ||
		    vg_as_target_of(p, a, &t, why, sizeof(why)) != 0)
			vg_as_say(st, -1, "alert %s resolved: %s: nothing changed", an,
				  why[0] ? why : "it names no vramguard region or process");
		else
			vg_as_resolved(p, st, an, &t);
		return;
	}
	if (!(a->has_pid && a->pid[0]) && !(a->has_region && a->region[0])) {
		vg_as_say(st, VG_AS_REFUSED_UNKNOWN, "alert %s names no vramguard region or process (no 'pid' or 'region' "
		       "label): nothing changed", an);
		return;
	}
	if (vg_as_target_of(p, a, &t, why, sizeof(why)) != 0) {
		vg_as_say(st, VG_AS_REFUSED_UNKNOWN, "alert %s: %s: nothing changed", an, why);
		return;
	}
	vg_as_fired(st, an, t.key);
	char o[32], n[32], c[32];
	uint64_t ceil = as_ceiling(p, a, &t);
	vg_cli_size(t.old, o, sizeof(o));
	if (!ceil) {
		vg_as_say(st, VG_AS_REFUSED_CEILING, "alert %s: %s at %s: no --ceiling covers it: nothing changed", an, t.what,
		       o);
		return;
	}
	vg_cli_size(ceil, c, sizeof(c));
	if (t.old >= ceil) {
		vg_as_say(st, VG_AS_REFUSED_CEILING, "alert %s: %s is at %s, its ceiling is %s: nothing changed", an, t.what,
		       o, c);
		return;
	}
	double now = vg_cli_now();
	struct vg_as_cool *cool = vg_as_cool_get(st, t.key, false);
	if (cool && now - cool->at < p->cooldown) {
		vg_as_say(st, VG_AS_REFUSED_COOLDOWN, "alert %s: %s was raised %.0fs ago, cool-down %.0fs: stays %s", an,
		       t.what, now - cool->at, p->cooldown, o);
		return;
	}
	uint64_t step = p->step_pct ? t.old / 100 * p->step_pct + t.old % 100 * p->step_pct / 100 : p->step_bytes;
	uint64_t nv = t.old > UINT64_MAX - step - VG_AS_MIB ? UINT64_MAX
							     : (t.old + step + VG_AS_MIB - 1) / VG_AS_MIB * VG_AS_MIB;
	if (nv > ceil)
		nv = ceil;
	if (nv <= t.old)                /* a percentage of a small limit: at least 1 MiB more */
		nv = t.old + VG_AS_MIB < ceil ? t.old + VG_AS_MIB : ceil;
	vg_cli_size(nv, n, sizeof(n));
	char spec[VG_REGION_SPEC_MAX];
	const char *region = a->has_region && a->region[0] ? a->region : NULL;
	int rc = vg_as_write(p, &t, region, nv, spec, sizeof(spec), why, sizeof(why));
	if (rc < 0) {
		vg_as_say(st, VG_AS_REFUSED_UNKNOWN, "alert %s: %s: %s", an, t.what, why);
		return;
	}
	cool = vg_as_cool_get(st, t.key, true);
	if (rc) {
		cool->key[0] = '\0';
		cool->at = 0;
		cool->raised = false;
		vg_as_say(st, VG_AS_REFUSED_UNKNOWN, "alert %s: %s: the limit could not be set (see the line above): "
			  "stays %s", an, t.what, o);
		return;
	}
	cool->at = now;
	vg_as_remember(p, cool, &t, region, nv);
	if (p->dry_run) {
		vg_as_say(st, VG_AS_DRY_RUN, "alert %s firing: would raise %s: %s -> %s (step %s, ceiling %s; would set "
			  "%s)", an, t.what, o, n, p->step_text, c, spec);
		return;
	}
	vg_as_say(st, VG_AS_RAISED, "alert %s firing: %s: limit %s -> %s (ceiling %s, next raise after %.0fs; it applies it "
	       "at its next allocation)", an, t.what, o, n, c, p->cooldown);
}

int vg_as_handle(const struct vg_as_policy *p, struct vg_as_state *st, const char *body, size_t len, char *msg,
		 size_t msglen)
{
	struct vg_as_payload pl;
	char err[VG_CLI_WHY_MAX] = "";
	if (!body || vg_as_payload_parse(body, len, &pl, err, sizeof(err)) != 0) {
		if (!body)
			snprintf(err, sizeof(err), "empty body: expected Alertmanager's webhook JSON");
		free(body ? pl.v : NULL);
		vg_as_say(st, VG_AS_REFUSED_PAYLOAD, "payload refused, nothing changed: %s", err);
		snprintf(msg, msglen, "refused: %s\n", err);
		return 400;
	}
	uint64_t before[VG_AS_NRESULTS];
	memcpy(before, st->count, sizeof(before));
	for (size_t i = 0; i < pl.n; i++)
		as_act(p, st, &pl.v[i]);
	free(pl.v);
	size_t at = 0;
	msg[0] = '\0';
	for (int r = 0; r < VG_AS_NRESULTS; r++)
		if (st->count[r] != before[r] && at < msglen)
			at += (size_t)snprintf(msg + at, msglen - at, "%s%s %" PRIu64, at ? ", " : "", vg_as_result_names[r],
					       st->count[r] - before[r]);
	if (at < msglen)
		snprintf(msg + at, msglen - at, "%s\n", at ? "" : "nothing to do");
	return 200;
}
