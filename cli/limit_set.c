/* `vramguard limit set`: write a new limit into a shared region or a process's slot (cli/limit_set.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/limit_find.h"
#include "cli/limit_set.h"
#include "config/config.h"

/* The spec is checked by the library's own rule (vg_region_spec_check) before anything is written. */
static int limit_spec_check(const char *spec, struct vg_limits *l)
{
	char e[VG_ERR_MAX];
	return vg_region_spec_check(spec, l, e, sizeof(e)) != 0 ? vg_cli_fail(2, "%s", e) : 0;
}

/* What a limit change works with, guarded (vg_region_guarded): what it was asked, and what it allocates (freed by the
 * caller, whether or not the work finished). */
struct limit_change {
	const char *name, *spec;
	int32_t pid;
	int slot;
	const struct vg_limits *l;
	FILE *out;
	struct vg_strbuf over;
};

/* The file changed under the command (its owner truncated it): one line, and what is known of the change. */
static int limit_changed(const struct vg_region *r)
{
	return vg_cli_fail(1, "%s changed while the limit was being set (its owner truncated or replaced it): the "
			   "change may not have been made; see 'vramguard limit show' and run the command again", r->path);
}

/* fn(r, c) under the guard, then r closed and what the change allocated freed, however it ended. */
static int limit_change_run(struct vg_region *r, int (*fn)(struct vg_region *r, void *arg), struct limit_change *c)
{
	int rc = vg_region_guarded(r, fn, c);
	if (rc == -ESTALE)
		rc = limit_changed(r);
	vg_strbuf_free(&c->over);
	vg_region_close(r);
	return rc;
}

static int limit_set_shared_in(struct vg_region *r, void *arg)
{
	struct limit_change *c = arg;
	char err[VG_CLI_WHY_MAX], label[VG_SHARED_PATH_MAX];
	struct vg_region_info before, after;
	vg_region_info_read(r, &before);
	const char *old = before.spec;
	vg_cli_region_label(r, c->name, label, sizeof(label));
	vg_region_reclaim(r);
	if (vg_region_set_limit(r, c->spec, err, sizeof(err)) != 0)
		return vg_cli_fail(1, "shared region '%s': %s", label, err);
	/* What the region stored: a spec with keys only keeps the old bare default in front ("8G" + "0:3G" gives
	 * "8G,0:3G"), for the GPUs registered later. */
	vg_region_info_read(r, &after);
	const char *now = after.spec, *spec = c->spec;
	char kept[VG_REGION_SPEC_MAX + 64] = "";
	size_t nl = strlen(now), sl = strlen(spec);
	if (strcmp(now, spec) != 0 && nl > sl + 1 && now[nl - sl - 1] == ',' && !strcmp(now + nl - sl, spec))
		snprintf(kept, sizeof(kept), " (keys only: GPUs registered later still get %.*s)", (int)(nl - sl - 1),
			 now);
	int members = 0, ndev = 0, named = 0;
	for (uint32_t k = 0; k < r->nslots; k++) {
		struct vg_slot_view v;
		if (vg_slot_read(r, k, &v) && v.alive)
			members++;
	}
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view v;
		if (!vg_dev_read(r, d, &v))
			continue;
		ndev++;
		int said = 0;
		vg_limits_for(c->l, v.ordinal, strncmp(v.uuid, "ordinal:", 8) ? v.uuid : NULL, v.total, NULL, &said);
		named += said;
		uint64_t lim = v.limit, used = v.used;
		if (said && lim != VG_REGION_NONE && used > lim) {       /* GPUs the spec does not name keep theirs */
			char g[64], a[32], b[32];
			vg_strbuf_printf(&c->over, "; %s has %s in use, over the new %s: new allocations there are denied "
					 "until usage drops", vg_dev_label(&v, g, sizeof(g)), vg_format_bytes(used, a, sizeof(a)),
					 vg_format_bytes(lim, b, sizeof(b)));
		}
	}
	char who[96];
	if (members == 0)
		snprintf(who, sizeof(who), "no process is in it now; processes that join get it");
	else
		snprintf(who, sizeof(who), "%d process%s at %s next allocation", members,
			 members == 1 ? " applies it" : "es apply it", members == 1 ? "its" : "their");
	if (!c->out)
		return 0;
	fprintf(c->out, "vramguard: shared region '%s' (%s): limit %s -> %s%s; %s%s", label, r->path,
		old[0] ? old : "none", now[0] ? now : spec, kept, who, c->over.data ? c->over.data : "");
	if (ndev && !named)
		fprintf(c->out, "; it names none of the region's %d GPU%s (see 'vramguard limit show --shared %s'): it "
			"applies to GPUs registered later", ndev, ndev == 1 ? "" : "s", c->name);
	fputc('\n', c->out);
	return 0;
}

int vg_limit_set_shared(const char *dir, const char *name, const char *spec, const struct vg_limits *l, FILE *out)
{
	struct vg_region r;
	int rc = vg_limit_open_shared(dir, name, &r, true);
	if (rc)
		return rc;
	struct limit_change c = { .name = name, .spec = spec, .l = l, .out = out };
	return limit_change_run(&r, limit_set_shared_in, &c);
}

/* What the process's own quota is now: the last request it applied ("1G", "0:4G,1:2G"), else "4.00 GiB",
 * "unlimited" or "per-GPU limits"; a request it has not applied yet is named after it. */
static void limit_own_now(const struct vg_region *r, const struct vg_slot_view *v, char *buf, size_t len)
{
	uint64_t q = 0;
	bool first = true, mixed = false;
	if (v->limit_spec[0] && !v->pending) {
		snprintf(buf, len, "%s", v->limit_spec);
		return;
	}
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		if (!vg_slot_uses(r, v, d))
			continue;
		if (!first && v->quota[d] != q)
			mixed = true;
		q = v->quota[d];
		first = false;
	}
	char now[32];
	if (mixed)
		snprintf(now, sizeof(now), "per-GPU limits");
	else
		vg_cli_size(first ? VG_REGION_NONE : q, now, sizeof(now));
	if (v->pending && v->limit_spec[0])
		snprintf(buf, len, "%s (%s requested, not applied yet)", now, v->limit_spec);
	else
		snprintf(buf, len, "%s", now);
}

static int limit_set_pid_in(struct vg_region *r, void *arg)
{
	struct limit_change *c = arg;
	int32_t pid = c->pid;
	struct vg_slot_view v;
	char err[VG_CLI_WHY_MAX], old[VG_REGION_SPEC_MAX + 80];
	if (!vg_slot_read(r, (uint32_t)c->slot, &v) || !v.alive || v.start != vg_proc_start(pid))
		return vg_cli_fail(1, "process %d exited (it left %s) before the limit could be set: nothing was changed",
				   (int)pid, r->path);
	limit_own_now(r, &v, old, sizeof(old));
	/* The region checks, under its lock, that the slot still holds this very process (PID and start time). */
	int rc = vg_region_set_slot_limit(r, c->slot, v.pid, v.start, c->spec, err, sizeof(err));
	if (rc == -ESRCH)
		return vg_cli_fail(1, "process %d (%s) exited (it left %s) before the limit could be set: nothing was "
				   "changed", (int)pid, v.cmd, r->path);
	if (rc)
		return vg_cli_fail(1, "process %d: %s", (int)pid, err);
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		if (!vg_slot_uses(r, &v, d) || !v.used[d])
			continue;
		struct vg_dev_view dv;
		vg_dev_read(r, d, &dv);
		int said = 0;
		uint64_t lim = vg_limits_for(c->l, dv.ordinal, strncmp(dv.uuid, "ordinal:", 8) ? dv.uuid : NULL, dv.total,
					     NULL, &said);
		if (said && lim != UINT64_MAX && v.used[d] > lim) {
			char g[64], a[32], b[32];
			vg_strbuf_printf(&c->over, "; it has %s in use on %s, over %s: its new allocations there are denied "
					 "until usage drops", vg_format_bytes(v.used[d], a, sizeof(a)),
					 vg_dev_label(&dv, g, sizeof(g)), vg_format_bytes(lim, b, sizeof(b)));
		}
	}
	char label[sizeof(r->path)], ns[64] = "";
	if (v.pid != pid)       /* a job in a container with a PID namespace of its own */
		snprintf(ns, sizeof(ns), " (PID %d in its own PID namespace)", (int)v.pid);
	const char *over = c->over.data ? c->over.data : "";
	if (c->out && r->kind == VG_REGION_CONTROL)
		fprintf(c->out, "vramguard: process %d%s (%s), control segment %s: limit %s -> %s; it applies it at its "
			"next allocation%s\n", (int)pid, ns, v.cmd, r->path, old, c->spec, over);
	else if (c->out)
		fprintf(c->out, "vramguard: process %d%s (%s) in shared region '%s' (%s): own limit %s -> %s; it applies it "
			"at its next allocation (the region's budget still applies)%s\n", (int)pid, ns, v.cmd,
			vg_cli_region_label(r, r->path, label, sizeof(label)), r->path, old, c->spec, over);
	return 0;
}

int vg_limit_set_pid(const char *dir, const char *shared, int32_t pid, const char *spec, const struct vg_limits *l,
		     FILE *out)
{
	struct vg_region r;
	struct limit_change c = { .spec = spec, .pid = pid, .l = l, .out = out };
	int rc = vg_limit_find_pid(dir, shared, pid, true, &r, &c.slot);
	if (rc)
		return rc;
	return limit_change_run(&r, limit_set_pid_in, &c);
}

/* ---- compute shares (`limit set --compute`) ---- */

/* What the process's compute share is now, as its slot shows it: the last request it applied, else the share it
 * published on its GPUs ("25%", "per-GPU shares", "none"); a request it has not applied yet is named after it. */
static void limit_compute_now(const struct vg_slot_view *v, char *buf, size_t len)
{
	if (v->compute_spec[0] && !v->compute_pending) {
		snprintf(buf, len, "%s", v->compute_spec);
		return;
	}
	uint32_t pm = 0;
	bool first = true, mixed = false;
	for (int d = 0; v->compute_published && d < VG_REGION_DEVS; d++) {
		if (!(v->bound >> d & 1) && !v->compute_pm[d])
			continue;
		if (!first && v->compute_pm[d] != pm)
			mixed = true;
		pm = v->compute_pm[d];
		first = false;
	}
	char now[32];
	if (mixed)
		snprintf(now, sizeof(now), "per-GPU shares");
	else if (pm)
		snprintf(now, sizeof(now), "%u%%", (pm + 5) / 10);
	else
		snprintf(now, sizeof(now), "none");
	if (v->compute_pending && v->compute_spec[0])
		snprintf(buf, len, "%s (%s requested, not applied yet)", now, v->compute_spec);
	else
		snprintf(buf, len, "%s", now);
}

static int limit_compute_pid_in(struct vg_region *r, void *arg)
{
	struct limit_change *c = arg;
	int32_t pid = c->pid;
	struct vg_slot_view v;
	char err[VG_CLI_WHY_MAX], old[VG_REGION_SPEC_MAX + 80];
	if (!vg_slot_read(r, (uint32_t)c->slot, &v) || !v.alive || v.start != vg_proc_start(pid))
		return vg_cli_fail(1, "process %d exited (it left %s) before the compute share could be set: nothing was "
				   "changed", (int)pid, r->path);
	limit_compute_now(&v, old, sizeof(old));
	int rc = vg_region_set_slot_compute(r, c->slot, v.pid, v.start, c->spec, err, sizeof(err));
	if (rc == -ESRCH)
		return vg_cli_fail(1, "process %d (%s) exited (it left %s) before the compute share could be set: nothing "
				   "was changed", (int)pid, v.cmd, r->path);
	if (rc)
		return vg_cli_fail(1, "process %d: %s", (int)pid, err);
	char ns[64] = "";
	if (v.pid != pid)
		snprintf(ns, sizeof(ns), " (PID %d in its own PID namespace)", (int)v.pid);
	if (c->out)
		fprintf(c->out, "vramguard: process %d%s (%s), %s %s: compute share %s -> %s; it applies it within a "
			"second%s\n", (int)pid, ns, v.cmd, r->kind == VG_REGION_CONTROL ? "control segment" : "shared region",
			r->path, old, c->spec, r->kind == VG_REGION_SHARED ? " (the region's compute share still applies)" : "");
	return 0;
}

static int limit_compute_shared_in(struct vg_region *r, void *arg)
{
	struct limit_change *c = arg;
	char err[VG_CLI_WHY_MAX], label[VG_SHARED_PATH_MAX];
	struct vg_region_info before;
	vg_region_info_read(r, &before);
	vg_cli_region_label(r, c->name, label, sizeof(label));
	vg_region_reclaim(r);
	if (vg_region_set_compute(r, c->spec, err, sizeof(err)) != 0)
		return vg_cli_fail(1, "shared region '%s': %s", label, err);
	int members = 0;
	for (uint32_t k = 0; k < r->nslots; k++) {
		struct vg_slot_view v;
		if (vg_slot_read(r, k, &v) && v.alive)
			members++;
	}
	char who[96];
	if (members == 0)
		snprintf(who, sizeof(who), "no process is in it now; processes that join get it");
	else
		snprintf(who, sizeof(who), "%d process%s within a second", members,
			 members == 1 ? " applies it" : "es apply it");
	if (c->out)
		fprintf(c->out, "vramguard: shared region '%s' (%s): compute share %s -> %s, divided on each GPU among "
			"the members that use it at the same time; %s\n", label, r->path,
			before.compute_spec[0] ? before.compute_spec : "none", c->spec, who);
	return 0;
}

/* `limit set --compute PCT`: pid's own share, or (no pid) the shared region's. */
static int limit_set_compute(const char *dir, const char *shared, int32_t pid, const char *spec)
{
	struct vg_region r;
	struct limit_change c = { .name = shared, .spec = spec, .pid = pid };
	c.out = stdout;
	int rc = pid ? vg_limit_find_pid(dir, shared, pid, true, &r, &c.slot) : vg_limit_open_shared(dir, shared, &r, true);
	if (rc)
		return rc;
	return limit_change_run(&r, pid ? limit_compute_pid_in : limit_compute_shared_in, &c);
}

/* The compute share is checked by the library's own parser (config/compute.c) before anything is written. */
static int limit_compute_check(const char *spec)
{
	struct vg_limits l;
	char e[VG_ERR_MAX];
	return vg_region_compute_check(spec, &l, e, sizeof(e)) != 0 ? vg_cli_fail(2, "%s", e) : 0;
}

int vg_limit_set(int argc, char **argv)
{
	struct vg_cli_getopt g;
	const char *shared = NULL, *dirarg = NULL, *compute = NULL, *usage = vg_cli_usage_of("limit");
	int32_t pid = 0;
	int k;
	struct vg_limits l;
	vg_cli_getopt_init(&g, "limit", "limit set", "");
	/* "limit set -1G ...": a SPEC that is wrong, not an option getopt does not know. */
	const char *neg = vg_cli_negative(&g, argc, argv);
	if (neg)
		return limit_spec_check(neg, &l) ? 2 : vg_cli_usage(usage, "limit set: unexpected argument %s", vg_cli_q(neg));
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		switch (k) {
		case VG_OPT_LIMIT_SHARED: shared = optarg; break;
		case VG_OPT_LIMIT_PID:
			if (vg_limit_pid_arg(optarg, &pid))
				return 2;
			break;
		case VG_OPT_LIMIT_COMPUTE: compute = optarg; break;
		case VG_OPT_LIMIT_DIR: dirarg = optarg; break;
		case VG_OPT_LIMIT_JSON: return vg_cli_refuse_option(&g, argv);
		case VG_CLI_OPT_HELP: return vg_cli_help("limit");
		default: return vg_cli_bad_option(&g, argv);
		}
	}
	int want = compute ? 0 : 1;     /* SPEC: optional with --compute */
	if (argc - optind > 1 || argc - optind < want)
		return vg_cli_usage(usage, argc - optind ? "limit set: expected one SPEC, got %s too" :
				    "limit set: no SPEC given (or --compute PCT)%s",
				    argc - optind ? vg_cli_q(argv[optind + 1]) : "");
	if (!shared && !pid)
		return vg_cli_usage(usage, "limit set: say what to change: --shared NAME (a shared region's budget%s) or --pid "
				    "PID (one process's %s)", compute ? " or compute share" : "",
				    compute ? "compute share" : "quota");
	const char *spec = argc - optind ? argv[optind] : NULL;
	int rc = spec ? limit_spec_check(spec, &l) : 0;
	if (rc || (compute && (rc = limit_compute_check(compute)) != 0))
		return rc;
	char dir[VG_CLI_DIR_MAX], err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dirarg, dir, sizeof(dir), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	if (spec)
		rc = pid ? vg_limit_set_pid(dir, shared, pid, spec, &l, stdout) : vg_limit_set_shared(dir, shared, spec, &l, stdout);
	if (rc || !compute)
		return rc;
	return limit_set_compute(dir, shared, pid, compute);
}
