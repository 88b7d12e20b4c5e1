/* `vramguard autoscale`'s targets (cli/autoscale_target.h): found from an alert's labels, exactly as the exporter
 * writes them (one target, one spelling), or again from what the receiver remembered of a raise; written by `limit
 * set`'s own functions, so that the receiver can do nothing its user could not do by hand. And the one line per
 * decision. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting/region_scan.h"
#include "cli/autoscale_target.h"
#include "cli/limit_find.h"
#include "cli/limit_set.h"
#include "cli/metrics.h"
#include "config/config.h"

const char *const vg_as_result_names[VG_AS_NRESULTS] = {
#define VG_AS_NAME(id, name) name,
	VG_AS_RESULTS(VG_AS_NAME)
#undef VG_AS_NAME
};

const char *vg_as_spec_size(uint64_t v, char *buf, size_t len)
{
	if (v % VG_AS_MIB == 0)
		snprintf(buf, len, "%" PRIu64 "M", v / VG_AS_MIB);
	else
		snprintf(buf, len, "%" PRIu64 "b", v);
	return buf;
}

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

int vg_as_target_of(const struct vg_as_policy *p, const struct vg_as_alert *a, struct vg_as_target *t, char *why,
		    size_t len)
{
	return a->has_pid && a->pid[0] ? as_pid_target(p, a, t, why, len) : as_region_target(p, a, t, why, len);
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

