/* `vramguard top` as text: one row per process and GPU, then the totals per GPU with the budgets, then what could
 * not be seen. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/table.h"
#include "cli/top_text.h"
#include "config/config.h"

static void top_age(uint64_t now_ns, uint64_t then_ns, char *buf, size_t len)
{
	if (!then_ns) {
		snprintf(buf, len, "-");
		return;
	}
	uint64_t s = now_ns > then_ns ? (now_ns - then_ns) / 1000000000u : 0;
	if (s < 120)
		snprintf(buf, len, "%llus ago", (unsigned long long)s);
	else if (s < 7200)
		snprintf(buf, len, "%llum ago", (unsigned long long)(s / 60));
	else if (s < 172800)
		snprintf(buf, len, "%lluh ago", (unsigned long long)(s / 3600));
	else
		snprintf(buf, len, "%llud ago", (unsigned long long)(s / 86400));
}

/* Does some process show compute share figures (docs/compute.md)? Then the table gets a COMPUTE column. */
static bool top_any_compute(const struct vg_top_snap *sn)
{
	for (size_t i = 0; i < sn->scan.n; i++) {
		const struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			if (vg_slot_read(&sr->r, k, &v) && v.compute_published)
				return true;
		}
	}
	return false;
}

/* "30% (used 29.8%)", "none (used 12.0%)", or "-" before the process published anything for the GPU. */
static void top_compute(const struct vg_slot_view *v, int d, char *buf, size_t len)
{
	if (!v->compute_published || (!v->compute_pm[d] && !v->gpu_time_ns[d])) {
		snprintf(buf, len, "-");
		return;
	}
	char lim[16];
	if (v->compute_pm[d])
		snprintf(lim, sizeof(lim), "%u%%", v->compute_pm[d] / 10);
	else
		snprintf(lim, sizeof(lim), "none");
	snprintf(buf, len, "%s (used %u.%u%%)", lim, v->compute_recent_pm[d] / 10, v->compute_recent_pm[d] % 10);
}

/* One row per process and GPU it uses (one with "-" for a process that uses none yet). */
static void top_text_processes(const struct vg_top_snap *sn, const struct vg_top_opts *o, struct vg_strbuf *out)
{
	static const char *const head[] = { "PID", "COMMAND", "GPU", "IN USE", "ALLOCATED", "PEAK", "QUOTA", "DENIED",
					    "LAST REPORT", "REGION", "COMPUTE" };
	bool compute = top_any_compute(sn);
	struct vg_tab t;
	vg_tab_init(&t, compute ? 11 : 10, "lllrrrrrlll");
	vg_tab_row(&t, head);
	int rows = 0;
	for (size_t i = 0; i < sn->scan.n; i++) {
		const struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			if (!vg_slot_read(&sr->r, k, &v))
				continue;
			char pid[16], cmd[VG_REGION_CMD_MAX + 16], gpu[64], used[32], alloc[32], peak[32], quota[32],
				denied[24], age[32], share[48];
			snprintf(pid, sizeof(pid), "%d", (int)v.pid);
			snprintf(cmd, sizeof(cmd), "%s%.32s%s", vg_life_tag(v.life), v.cmd,
				 strlen(v.cmd) > 32 ? "..." : "");
			snprintf(denied, sizeof(denied), "%llu", (unsigned long long)v.denied);
			top_age(sn->now_ns, v.last_report_ns, age, sizeof(age));
			bool any = false;
			for (int d = 0; d < VG_REGION_DEVS; d++) {
				if (!vg_slot_uses(&sr->r, &v, d))
					continue;
				any = true;
				struct vg_dev_view dv;
				vg_dev_read(&sr->r, d, &dv);
				vg_dev_label(&dv, gpu, sizeof(gpu));
				top_compute(&v, d, share, sizeof(share));
				/* Device counting: IN USE is what the GPU holds for it, ALLOCATED what it asked for. */
				const char *row[] = { pid, cmd, gpu, vg_format_bytes(v.used[d], used, sizeof(used)),
						      v.count_mode == 0 ? "-" : vg_format_bytes(v.alloc[d], alloc, sizeof(alloc)),
						      vg_format_bytes(v.peak[d], peak, sizeof(peak)),
						      vg_cli_size(vg_top_effective(sr, &v, d), quota, sizeof(quota)),
						      denied, age, sr->label, share };
				vg_tab_row(&t, row);
				rows++;
			}
			if (!any) {
				const char *row[] = { pid, cmd, "-", "-", "-", "-", "-", denied, age, sr->label, "-" };
				vg_tab_row(&t, row);
				rows++;
			}
		}
	}
	if (rows)
		vg_tab_render(&t, out, "");
	else
		vg_strbuf_printf(out, "no process under vramguard in %s\n", o->dir);
	vg_tab_free(&t);
}

/* The totals per GPU, with the shared regions' budgets there. */
static void top_text_gpus(const struct vg_top_snap *sn, struct vg_strbuf *out)
{
	struct vg_tab t;
	if (!sn->ngpu)
		return;
	static const char *const ghead[] = { "GPU", "MEMORY", "IN USE", "PROCESSES", "BUDGETS" };
	vg_tab_init(&t, 5, "lrrrl");
	vg_tab_row(&t, ghead);
	for (size_t g = 0; g < sn->ngpu; g++) {
		const struct vg_top_gpu *G = &sn->gpu[g];
		char label[64], mem[32], used[32], procs[16];
		struct vg_strbuf bud = { 0 };
		struct vg_top_budget bu;
		for (size_t at = 0; vg_top_budget_next(sn, G, &at, &bu);) {
			char a[32], b[32];
			vg_strbuf_printf(&bud, "%s%s %s of %s", bud.len ? ", " : "", bu.sr->label,
					 vg_format_bytes(bu.used, a, sizeof(a)),
					 vg_format_bytes(bu.limit, b, sizeof(b)));
		}
		vg_strbuf_add(&bud, "", 1);
		snprintf(procs, sizeof(procs), "%d", G->procs);
		const char *row[] = { vg_dev_label(&G->first, label, sizeof(label)),
				      G->first.total ? vg_format_bytes(G->first.total, mem, sizeof(mem)) : "?",
				      vg_format_bytes(G->used, used, sizeof(used)), procs,
				      bud.data && bud.data[0] ? bud.data : "-" };
		vg_tab_row(&t, row);
		vg_strbuf_free(&bud);
	}
	vg_strbuf_str(out, "\n");
	vg_tab_render(&t, out, "");
	vg_tab_free(&t);
}

void vg_top_text(const struct vg_top_snap *sn, const struct vg_top_opts *o, bool screen, struct vg_strbuf *out)
{
	if (screen) {
		struct timespec ts = { (time_t)(sn->now_ns / 1000000000u), 0 };
		struct tm tm;
		char when[32];
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		vg_strbuf_printf(out, "vramguard top  %s  %s  %d process%s  every %.3g s, q quits\n\n", when, o->dir,
				 sn->nproc, sn->nproc == 1 ? "" : "es", o->interval);
	}
	top_text_processes(sn, o, out);
	top_text_gpus(sn, out);
	if (sn->nexited)
		vg_strbuf_printf(out, "%d exited process%s shown as (exited), not counted: %s region is read-only here; "
				 "the next allocation of a member (or 'vramguard top' as its owner) reclaims %s\n",
				 sn->nexited, sn->nexited == 1 ? "" : "es", sn->nexited == 1 ? "its" : "their",
				 sn->nexited == 1 ? "it" : "them");
	if (sn->nunverifiable)
		vg_strbuf_printf(out, "%d process%s shown as (unverifiable): in another PID namespace and without a liveness "
				 "lock, %s cannot be checked from here and %s counted; if %s gone, free %s share with "
				 "'vramguard region evict NAME PID'\n", sn->nunverifiable, sn->nunverifiable == 1 ? "" : "es",
				 sn->nunverifiable == 1 ? "it" : "they", sn->nunverifiable == 1 ? "is" : "are",
				 sn->nunverifiable == 1 ? "it is" : "they are", sn->nunverifiable == 1 ? "its" : "their");
	vg_scan_notes(&sn->scan, out, "note: ");
}

