/* `vramguard autoscale`: acting on Alertmanager's webhook payload (cli/autoscale.h). The payload is read whole
 * before anything is done (autoscale_payload.c): one that is not Alertmanager's, is not UTF-8 text, or has a value
 * of the wrong type, changes nothing. Each firing alert then names a target (pid + region: a process, region alone: a region's
 * budget) and one GPU; its limit is read, raised by the step within the ceiling, at most once per cool-down, and
 * written by `limit set`'s own functions, so that the receiver can do nothing its user could not do by hand. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting/region_scan.h"
#include "cli/autoscale.h"
#include "cli/limit.h"
#include "cli/metrics.h"
#include "config/config.h"

#define AS_MIB ((uint64_t)1 << 20)

const char *const vg_as_result_names[VG_AS_NRESULTS] = {
#define VG_AS_NAME(id, name) name,
	VG_AS_RESULTS(VG_AS_NAME)
#undef VG_AS_NAME
};

const char *vg_as_spec_size(uint64_t v, char *buf, size_t len)
{
	if (v % AS_MIB == 0)
		snprintf(buf, len, "%" PRIu64 "M", v / AS_MIB);
	else
		snprintf(buf, len, "%" PRIu64 "b", v);
	return buf;
}

/* ---- acting on one alert ---- */

void vg_as_say(struct vg_as_state *st, int result, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "vramguard: autoscale: %s: ", result < 0 ? "ignored" : vg_as_result_names[result]);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (result >= 0)
		st->count[result]++;
}

/* The alert's gpu label, or -1 if it has none. */
static int as_gpu(const struct vg_as_alert *a, char *why, size_t len)
{
	if (!a->has_gpu || !a->gpu[0])
		return -1;
	char *end;
	errno = 0;
	long v = strtol(a->gpu, &end, 10);
	if (errno || *end || v < 0 || v > INT_MAX) {
		snprintf(why, len, "label gpu=%s is not a GPU ordinal", vg_cli_q(a->gpu));
		return -2;
	}
	return (int)v;
}

static bool as_uuid_ok(const struct vg_as_alert *a, const char *uuid)
{
	return !a->has_gpu_uuid || !a->gpu_uuid[0] || !strncmp(uuid, "ordinal:", 8) || !strcmp(uuid, a->gpu_uuid);
}

/* One target, one spelling: the exporter's labels are a region's NAME and a PID in decimal, and the ceiling and the
 * cool-down are keyed on them. A path names the same file as the NAME (DIR/vramguard.team, DIR//vramguard.team,
 * DIR/./vramguard.team), "042" or "+42" the same process as "42": each would be a target of its own, with a cool-down
 * (and a ceiling) of its own. So any other spelling is refused. */
bool vg_as_region_name(const char *s)
{
	char path[VG_SHARED_PATH_MAX], err[VG_CLI_WHY_MAX];
	return s[0] != '/' && vg_region_path(".", s, path, sizeof(path), err, sizeof(err)) == 0;
}

static int as_region_label(const struct vg_as_alert *a, char *why, size_t len)
{
	if (vg_as_region_name(a->region))
		return 0;
	snprintf(why, len, "label region=%s is not a region NAME (the exporter's labels are names)", vg_cli_q(a->region));
	return -1;
}

/* The pid label as the exporter writes it (%d): decimal digits, no sign, space or leading zero. -1 if it is not. */
static long as_pid_label(const char *s)
{
	long v = 0;
	if (s[0] < '1' || s[0] > '9')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (INT_MAX - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

static int as_region_target(const struct vg_as_policy *p, const struct vg_as_alert *a, struct vg_as_target *t, char *why,
			    size_t len)
{
	struct vg_region r;
	int want = as_gpu(a, why, len), n = 0;
	if (want == -2 || as_region_label(a, why, len) != 0)
		return -1;
	if (vg_limit_open_shared(p->dir, a->region, &r, false) != 0) {
		snprintf(why, len, "region %s: not found or not readable here (see the line above)", vg_cli_q(a->region));
		return -1;
	}
	struct vg_dev_view v, got;
	memset(&got, 0, sizeof(got));
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		if (!vg_dev_read(&r, d, &v) || (want >= 0 && v.ordinal != want) || !as_uuid_ok(a, v.uuid))
			continue;
		got = v;
		n++;
	}
	vg_region_close(&r);
	if (n != 1) {
		if (n)
			snprintf(why, len, "region %s has %d GPUs and the alert names none (no gpu label)",
				 vg_cli_q(a->region), n);
		else
			snprintf(why, len, "region %s has no GPU %s%s", vg_cli_q(a->region), want >= 0 ? a->gpu : "at all",
				 a->has_gpu_uuid && a->gpu_uuid[0] ? " with that gpu_uuid" : "");
		return -1;
	}
	t->ord = got.ordinal;
	t->old = got.limit;
	t->used = got.used;
	snprintf(t->what, sizeof(t->what), "region '%s' GPU %d", a->region, t->ord);
	snprintf(t->key, sizeof(t->key), "region %s gpu %d", a->region, t->ord);
	if (t->old == VG_REGION_NONE) {
		snprintf(why, len, "%s has no budget to raise (usage only)", t->what);
		return -1;
	}
	return 0;
}

static int as_pid_target(const struct vg_as_policy *p, const struct vg_as_alert *a, struct vg_as_target *t, char *why,
			 size_t len)
{
	long pid = as_pid_label(a->pid);
	int want = as_gpu(a, why, len);
	if (pid < 0) {
		snprintf(why, len, "label pid=%s is not a process id as the exporter writes it (decimal, no sign or leading "
			 "zero)", vg_cli_q(a->pid));
		return -1;
	}
	if (want == -2 || (a->has_region && a->region[0] && as_region_label(a, why, len) != 0))
		return -1;
	t->is_pid = true;
	t->pid = (int32_t)pid;
	struct vg_region r;
	int slot;
	if (vg_limit_find_pid(p->dir, a->has_region && a->region[0] ? a->region : NULL, t->pid, false, &r, &slot)) {
		snprintf(why, len, "process %ld: not found under vramguard here (see the line above)", pid);
		return -1;
	}
	struct vg_slot_view v;
	int rc = -1;
	if (!vg_slot_read(&r, (uint32_t)slot, &v) || !v.alive || v.start != vg_proc_start(t->pid)) {
		snprintf(why, len, "process %ld exited", pid);
		goto out;
	}
	/* The exporter's command label guards against a PID reused since the alert was evaluated: compared as the
	 * exporter wrote it from the slot (bytes that are not UTF-8 as U+FFFD). */
	struct vg_strbuf label = { 0 };
	vg_metrics_label(&label, v.cmd);
	bool same = label.data && !strcmp(a->command, label.data);
	vg_strbuf_free(&label);
	if (a->has_command && a->command[0] && !same) {
		snprintf(why, len, "process %ld is %s now, the alert named %s (a PID reused?)", pid, vg_cli_q(v.cmd),
			 vg_cli_q(a->command));
		goto out;
	}
	t->pick = -1;
	t->seq = v.limit_seq;
	t->pending = v.pending;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view dv;
		if (!vg_slot_uses(&r, &v, d) || !vg_dev_read(&r, d, &dv))
			continue;
		if ((want < 0 || dv.ordinal == want) && as_uuid_ok(a, dv.uuid)) {
			t->pick = t->pick == -1 ? t->nbound : -2;
			t->used = v.used[d];
		}
		t->bord[t->nbound] = dv.ordinal;
		t->bq[t->nbound++] = v.quota[d];
	}
	snprintf(t->what, sizeof(t->what), "process %ld (%s)", pid, v.cmd);
	if (t->pick < 0) {
		snprintf(why, len, t->pick == -2 ? "%s uses several GPUs and the alert names none (no gpu label)"
						 : "%s does not use GPU %s", t->what, a->gpu);
		goto out;
	}
	t->ord = t->bord[t->pick];
	t->old = t->bq[t->pick];
	snprintf(t->what, sizeof(t->what), "process %ld (%s) GPU %d", pid, v.cmd, t->ord);
	snprintf(t->key, sizeof(t->key), "pid %ld start %" PRIu64 " gpu %d", pid, v.start, t->ord);
	if (t->old == VG_REGION_NONE) {
		snprintf(why, len, "%s has no quota to raise (unlimited)", t->what);
		goto out;
	}
	rc = 0;
out:
	vg_region_close(&r);
	return rc;
}

static uint64_t as_ceiling(const struct vg_as_policy *p, const struct vg_as_alert *a, const struct vg_as_target *t)
{
	for (int i = 0; i < p->nceil; i++)
		if (p->ceil[i].pid_target ? t->is_pid && p->ceil[i].pid == t->pid
					  : !t->is_pid && !strcmp(p->ceil[i].region, a->region))
			return p->ceil[i].bytes;
	return p->ceiling;
}

struct vg_as_cool *vg_as_cool_get(struct vg_as_state *st, const char *key, bool add)
{
	for (int i = 0; i < st->ncool; i++)
		if (!strcmp(st->cool[i].key, key))
			return &st->cool[i];
	if (!add)
		return NULL;
	int k = st->ncool < VG_AS_COOL_MAX ? st->ncool++ : 0;
	for (int i = 0; i < st->ncool; i++)     /* full: forget the oldest */
		if (st->cool[i].at < st->cool[k].at)
			k = i;
	memset(&st->cool[k], 0, sizeof(st->cool[k]));
	snprintf(st->cool[k].key, sizeof(st->cool[k].key), "%s", key);
	return &st->cool[k];
}

/* The spec: the one GPU changed; a process's other GPUs keep their quotas (and GPUs it registers later the smallest
 * of them), a region's other GPUs and later ones keep the region's spec (keys only). */
int vg_as_write(const struct vg_as_policy *p, const struct vg_as_target *t, const char *region, uint64_t nv,
		char *spec, size_t speclen, char *why, size_t len)
{
	char s[32];
	struct vg_strbuf b = { 0 };
	if (t->is_pid && t->nbound > 1) {
		uint64_t min = UINT64_MAX;
		for (int i = 0; i < t->nbound; i++)
			min = t->bq[i] < min ? t->bq[i] : min;
		vg_strbuf_printf(&b, "%s", min == VG_REGION_NONE ? "unlimited" : vg_as_spec_size(min, s, sizeof(s)));
		for (int i = 0; i < t->nbound; i++)
			vg_strbuf_printf(&b, ",%d:%s", t->bord[i], i == t->pick ? vg_as_spec_size(nv, s, sizeof(s))
								   : t->bq[i] == VG_REGION_NONE ? "unlimited"
								   : vg_as_spec_size(t->bq[i], s, sizeof(s)));
	} else if (t->is_pid)
		vg_strbuf_printf(&b, "%s", vg_as_spec_size(nv, s, sizeof(s)));
	else
		vg_strbuf_printf(&b, "%d:%s", t->ord, vg_as_spec_size(nv, s, sizeof(s)));
	snprintf(spec, speclen, "%s", b.data ? b.data : "");
	vg_strbuf_free(&b);
	struct vg_limits l;
	char err[VG_ERR_MAX];
	if (vg_region_spec_check(spec, &l, err, sizeof(err)) != 0) {
		snprintf(why, len, "spec %s refused: %s", vg_cli_q(spec), err);
		return -1;
	}
	if (p->dry_run)
		return 0;
	int rc = t->is_pid ? vg_limit_set_pid(p->dir, region, t->pid, spec, &l, NULL)
			   : vg_limit_set_shared(p->dir, region, spec, &l, NULL);
	return rc ? 1 : 0;
}

int vg_as_find(const struct vg_as_policy *p, const struct vg_as_cool *c, struct vg_as_target *t, char *why,
	       size_t len)
{
	struct vg_as_alert a;
	memset(&a, 0, sizeof(a));
	memset(t, 0, sizeof(*t));
	snprintf(a.region, sizeof(a.region), "%s", c->region);
	a.has_region = true;
	snprintf(a.gpu, sizeof(a.gpu), "%d", c->ord);
	a.has_gpu = true;
	if (c->is_pid) {
		snprintf(a.pid, sizeof(a.pid), "%d", (int)c->pid);
		a.has_pid = true;
		return as_pid_target(p, &a, t, why, len);
	}
	return as_region_target(p, &a, t, why, len);
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
		    (a->has_pid && a->pid[0] ? as_pid_target(p, a, &t, why, sizeof(why))
					     : as_region_target(p, a, &t, why, sizeof(why))) != 0)
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
	if ((a->has_pid && a->pid[0] ? as_pid_target(p, a, &t, why, sizeof(why))
				     : as_region_target(p, a, &t, why, sizeof(why))) != 0) {
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
	uint64_t nv = t.old > UINT64_MAX - step - AS_MIB ? UINT64_MAX : (t.old + step + AS_MIB - 1) / AS_MIB * AS_MIB;
	if (nv > ceil)
		nv = ceil;
	if (nv <= t.old)                /* a percentage of a small limit: at least 1 MiB more */
		nv = t.old + AS_MIB < ceil ? t.old + AS_MIB : ceil;
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
