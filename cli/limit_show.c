/* `vramguard limit show`: the limits in force, as tables or as one vramguard.limits/1 document (cli/limit_show.h). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/limit_find.h"
#include "cli/limit_show.h"
#include "cli/table.h"
#include "cli/view_json.h"
#include "config/config.h"

/* With --pid: the slot of that process in the one region shown (its recorded PID may be another namespace's, which
 * other slots of the region can share). */
static int limit_only_slot = -1;

static bool limit_row_shown(uint32_t k, const struct vg_slot_view *v, int32_t only_pid)
{
	return !only_pid || (limit_only_slot >= 0 ? k == (uint32_t)limit_only_slot : v->pid == only_pid);
}

/* A shared region's header lines and its GPUs' table. */
static void show_region_head(const struct vg_scan_region *sr, struct vg_strbuf *out)
{
	struct vg_tab t;
	struct vg_region_info info;
	vg_region_info_read(&sr->r, &info);
	const char *created = info.created_spec, *spec = info.spec;
	vg_strbuf_printf(out, "shared region '%s' (%s)%s\n", sr->label, sr->r.path, sr->admin ? "" : " (read-only here)");
	vg_strbuf_printf(out, "  created with  %s\n  in force      %s\n", created[0] ? created : "none",
			 spec[0] ? spec : "none");
	if (info.compute_spec[0])
		vg_strbuf_printf(out, "  compute       %s (divided among the members that want a GPU at the same time)\n",
				 info.compute_spec);
	else
		vg_strbuf_str(out, "  compute       none\n");
	static const char *const head[] = { "INDEX", "UUID", "ORDINAL", "MEMORY", "LIMIT", "USED", "PEAK", "DENIED" };
	vg_tab_init(&t, 8, "llrrrrrr");
	vg_tab_row(&t, head);
	int n = 0;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view v;
		char idx[16], ord[16], mem[32], lim[32], used[32], peak[32], den[24];
		if (!vg_dev_read(&sr->r, d, &v))
			continue;
		snprintf(idx, sizeof(idx), "%d", d);
		snprintf(ord, sizeof(ord), "%d", (int)v.ordinal);
		snprintf(den, sizeof(den), "%llu", (unsigned long long)v.denied);
		const char *row[] = { idx, v.uuid, ord, v.total ? vg_format_bytes(v.total, mem, sizeof(mem)) : "?",
				      vg_cli_size(v.limit, lim, sizeof(lim)), vg_format_bytes(v.used, used, sizeof(used)),
				      vg_format_bytes(v.peak, peak, sizeof(peak)), den };
		vg_tab_row(&t, row);
		n++;
	}
	if (n)
		vg_tab_render(&t, out, "  ");
	else
		vg_strbuf_str(out, "  no GPU registered yet (the budget applies to each GPU as members first use it)\n");
	vg_tab_free(&t);
}

/* Does any process shown have a compute share (published, or asked for)? Then the table has a COMPUTE column. */
static bool show_any_compute(const struct vg_scan_region *sr, int32_t only_pid)
{
	for (uint32_t k = 0; k < sr->r.nslots; k++) {
		struct vg_slot_view v;
		if (vg_slot_read(&sr->r, k, &v) && limit_row_shown(k, &v, only_pid) &&
		    (v.compute_spec[0] || v.compute_published))
			return true;
	}
	return false;
}

/* REQUESTED: what `limit set --pid` asked that the process has not applied yet, memory and compute. */
static void show_requested(const struct vg_slot_view *v, char *req, size_t len, bool *requested)
{
	const char *state = v->alive ? "pending" : "never applied";
	bool mem = v->pending && v->limit_spec[0], cpu = v->compute_pending && v->compute_spec[0];
	if (mem && cpu)
		snprintf(req, len, "%s, --compute %s (%s)", v->limit_spec, v->compute_spec, state);
	else if (mem || cpu)
		snprintf(req, len, "%s%s (%s)", cpu ? "--compute " : "", cpu ? v->compute_spec : v->limit_spec, state);
	else
		snprintf(req, len, "-");
	*requested |= mem || cpu;
}

static void show_region_text(const struct vg_scan_region *sr, int32_t only_pid, struct vg_strbuf *out, bool *requested)
{
	struct vg_tab t;
	char g[64];
	if (!sr->control)
		show_region_head(sr, out);
	bool cc = show_any_compute(sr, only_pid);
	static const char *const phead[] = { "PID", "COMMAND", "GPU", "OWN QUOTA", "USED", "PEAK", "REQUESTED", "COMPUTE" };
	vg_tab_init(&t, cc ? 8 : 7, "lllrrrlr");
	vg_tab_row(&t, phead);
	int rows = 0;
	for (uint32_t k = 0; k < sr->r.nslots; k++) {
		struct vg_slot_view v;
		if (!vg_slot_read(&sr->r, k, &v) || !limit_row_shown(k, &v, only_pid))
			continue;
		char pid[16], cmd[VG_REGION_CMD_MAX + 16], q[32], used[32], peak[32], req[2 * VG_REGION_SPEC_MAX + 40];
		char cpu[16];
		snprintf(pid, sizeof(pid), "%d", (int)v.pid);
		snprintf(cmd, sizeof(cmd), "%s%.32s%s", vg_life_tag(v.life), v.cmd, strlen(v.cmd) > 32 ? "..." : "");
		/* Only a request the process has not applied yet: once applied, OWN QUOTA (COMPUTE) shows it. */
		show_requested(&v, req, sizeof(req), requested);
		bool any = false;
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			if (!vg_slot_uses(&sr->r, &v, d))
				continue;
			struct vg_dev_view dv;
			vg_dev_read(&sr->r, d, &dv);
			uint32_t pm = v.compute_published ? v.compute_pm[d] : 0;
			if (pm % 10)
				snprintf(cpu, sizeof(cpu), "%u.%u%%", pm / 10, pm % 10);
			else if (pm)
				snprintf(cpu, sizeof(cpu), "%u%%", pm / 10);
			else
				snprintf(cpu, sizeof(cpu), "-");
			const char *row[] = { pid, cmd, vg_dev_label(&dv, g, sizeof(g)),
					      vg_cli_size(v.quota[d], q, sizeof(q)),
					      vg_format_bytes(v.used[d], used, sizeof(used)),
					      vg_format_bytes(v.peak[d], peak, sizeof(peak)), req, cpu };
			vg_tab_row(&t, row);
			any = true;
			rows++;
		}
		if (!any) {
			const char *row[] = { pid, cmd, "-", "-", "-", "-", req, "-" };
			vg_tab_row(&t, row);
			rows++;
		}
	}
	if (rows)
		vg_tab_render(&t, out, "  ");
	else if (!sr->control)
		vg_strbuf_str(out, "  no process in it now\n");
	vg_tab_free(&t);
}

static void limit_json_process_devices(struct vg_strbuf *b, const struct vg_scan_region *sr,
				       const struct vg_slot_view *p)
{
	const char *esep = "";
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view dev;
		if (!vg_slot_uses(&sr->r, p, d))
			continue;
		vg_dev_read(&sr->r, d, &dev);
		vg_strbuf_str(b, esep);
		VG_CJ_OBJECT(VG_VIEW_LIMITS_PROCESS_DEVICE);
		esep = ", ";
	}
}

static void limit_json_processes(struct vg_strbuf *b, const struct vg_scan_region *sr, int32_t only_pid)
{
	const char *esep = "";
	for (uint32_t k = 0; k < sr->r.nslots; k++) {
		struct vg_slot_view v;
		const struct vg_slot_view *p = &v;
		if (!vg_slot_read(&sr->r, k, &v) || !limit_row_shown(k, &v, only_pid))
			continue;
		vg_strbuf_str(b, esep);
		VG_CJ_OBJECT(VG_VIEW_LIMITS_PROCESS);
		esep = ", ";
	}
}

/* A region in `limit show`: its keys in `top`, then its processes. */
#define LIMIT_REGION_ROWS(X) VG_VIEW_REGION(X) VG_VIEW_LIMITS_REGION(X)

static void limit_json_regions(struct vg_strbuf *b, const struct vg_scan *s, int32_t only_pid)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct vg_scan_region *sr = &s->v[i];
		struct vg_region_info info;
		vg_region_info_read(&sr->r, &info);
		vg_strbuf_str(b, i ? ", " : "");
		VG_CJ_OBJECT(LIMIT_REGION_ROWS);
	}
}

/* The scan as a vramguard.limits/1 document. */
static void limit_json(struct vg_strbuf *b, const struct vg_scan *s, int32_t only_pid)
{
	VG_CJ_OBJECT(VG_VIEW_LIMITS);
	vg_strbuf_str(b, "\n");
}

struct show_args {
	char dir[VG_CLI_DIR_MAX];
	char **names;                   /* --shared, nnames of them (calloc'd: freed by the caller) */
	size_t nnames;
	int32_t pid;                    /* --pid, 0 for none */
	bool json;
};

/* The options: -1 to go on, else the exit status (help, or a usage error). */
static int show_parse(int argc, char **argv, struct show_args *a)
{
	struct vg_cli_getopt g;
	const char *dirarg = NULL;
	char err[VG_CLI_WHY_MAX];
	int k;
	a->names = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->names)
		return vg_cli_fail(1, "out of memory");
	vg_cli_getopt_init(&g, "limit", "limit show", "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		switch (k) {
		case VG_OPT_LIMIT_SHARED: a->names[a->nnames++] = optarg; break;
		case VG_OPT_LIMIT_PID:
			if (vg_limit_pid_arg(optarg, &a->pid))
				return 2;
			break;
		case VG_OPT_LIMIT_JSON: a->json = true; break;
		case VG_OPT_LIMIT_DIR: dirarg = optarg; break;
		case VG_CLI_OPT_HELP: return vg_cli_help("limit");
		default: return vg_cli_bad_option(&g, argv);
		}
	}
	if (optind < argc)
		return vg_cli_usage(vg_cli_usage_of("limit"), "limit show: unexpected argument %s", vg_cli_q(argv[optind]));
	if (vg_cli_dir(dirarg, a->dir, sizeof(a->dir), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	return -1;
}

/* What to show, in s: with --pid only the region that holds the process (a->pid becomes the PID its slot
 * records), else the regions named or every one of the directory. -1 to go on, else the exit status (said). */
static int show_scan(struct show_args *a, struct vg_scan *s)
{
	char err[VG_CLI_WHY_MAX];
	int rc;
	if (a->pid) {
		struct vg_region r;
		int slot;
		if (a->nnames > 1)
			return vg_cli_usage(vg_cli_usage_of("limit"), "limit show: --pid takes at most one --shared");
		rc = vg_limit_find_pid(a->dir, a->nnames ? a->names[0] : NULL, a->pid, false, &r, &slot);
		if (rc)
			return rc;
		/* The row is the slot's (limit_only_slot): the PID it records, shown, is the one its process sees (in a
		 * container's own PID namespace, not the PID asked for here). */
		struct vg_slot_view v;
		if (vg_slot_read(&r, (uint32_t)slot, &v))
			a->pid = v.pid;
		limit_only_slot = slot;
		return vg_scan_single(s, a->dir, &r) ? -1 : vg_cli_fail(1, "out of memory");
	}
	if (vg_scan_open(s, a->dir, a->names, a->nnames, (a->nnames ? 0 : VG_SCAN_DIR) | VG_SCAN_CLEAN, err,
			 sizeof(err)) != 0)
		return vg_cli_fail(2, "limit show: %s", err);
	if (a->nnames && s->missing)
		rc = vg_cli_fail(1, "no shared region: %s", s->missing_why);
	else if (s->no_dir)
		rc = vg_cli_fail(1, "%s", s->dir_why);
	else
		return -1;
	vg_scan_close(s);
	return rc;
}

/* The scan as tables: shared regions, then the processes outside them. */
static void show_text(const struct vg_scan *s, const struct show_args *a, struct vg_strbuf *b)
{
	bool requested = false, control_head = false;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].control && !control_head) {
			vg_strbuf_printf(b, "%sprocesses outside shared regions (control segments in %s)\n", i ? "\n" : "",
					 a->dir);
			control_head = true;
		} else if (i && !s->v[i].control) {
			vg_strbuf_str(b, "\n");
		}
		show_region_text(&s->v[i], a->pid, b, &requested);
	}
	if (!s->n)
		vg_strbuf_printf(b, "no shared region or process under vramguard in %s\n", a->dir);
	if (requested)
		vg_strbuf_str(b, "REQUESTED: a 'vramguard limit set --pid' the process has not applied yet; it applies a limit "
				 "at its next allocation (OWN QUOTA shows it then), a compute share within a second (COMPUTE)\n");
	vg_scan_notes(s, b, "note: ");
}

int vg_limit_show(int argc, char **argv)
{
	struct show_args a;
	struct vg_scan s;
	memset(&a, 0, sizeof(a));
	int rc = show_parse(argc, argv, &a);
	if (rc < 0)
		rc = show_scan(&a, &s);
	if (rc >= 0) {
		free(a.names);
		return rc;
	}
	struct vg_strbuf b = { 0 };
	if (a.json)
		limit_json(&b, &s, a.pid);
	else
		show_text(&s, &a, &b);
	rc = b.failed || !b.data || fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0 ? 1 : 0;
	if (a.json && (s.denied || s.bad || s.changed)) {
		struct vg_strbuf n = { 0 };
		vg_scan_notes(&s, &n, "vramguard: note: ");
		if (n.data)
			fputs(n.data, stderr);
		vg_strbuf_free(&n);
	}
	vg_strbuf_free(&b);
	vg_scan_close(&s);
	free(a.names);
	return rc;
}
