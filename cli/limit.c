/* `vramguard limit set|show`: change a shared region's budget or one process's own quota while jobs run, and show
 * the limits in force. The command only writes the request into the region (accounting/region.h); each process
 * applies it at its next allocation. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/scan.h"
#include "cli/table.h"
#include "cli/view_json.h"
#include "config/config.h"

const char vg_usage_limit[] =
	"usage: vramguard limit set SPEC (--shared NAME|PATH | --pid PID) [--dir DIR]\n"
	"       vramguard limit show [--shared NAME|PATH]... [--pid PID] [--json] [--dir DIR]\n"
	"\n"
	"Change a limit while jobs run, or show the limits in force. SPEC is written as NVIDIA_GPU_MEMORY_LIMITS:\n"
	"4096 (MiB), 4G, 50%, unlimited, 0:4G,1:2G, GPU-<uuid>:4G.\n"
	"  -s, --shared NAME|PATH   set: the shared region's budget per GPU, for all its processes; a key N: means\n"
	"                           the GPU whose ORDINAL 'limit show' lists as N\n"
	"  -p, --pid PID            set: that process's own quota (found through its control segment or its slot in\n"
	"                           a shared region; with --shared, only there); show: only that process\n"
	"  -j, --json               show: JSON (schema " VG_VIEW_LIMITS_SCHEMA ", see docs/report-format.md)\n"
	"  -d, --dir DIR            where regions live (default VRAMGUARD_SHM_DIR, else /dev/shm)\n"
	"\n"
	"Processes apply a new limit at their next allocation; until then 'limit show' lists it as pending\n"
	"(REQUESTED). A limit below what is in use is accepted: new allocations are denied until usage drops under\n"
	"it. With --shared, a SPEC of keys only (0:4G) changes those GPUs and keeps the region's default for GPUs\n"
	"registered later; members whose budget came from NVIDIA_GPU_MEMORY_LIMITS alone (no VRAMGUARD_SHARED_LIMITS)\n"
	"move their own quota with it. A region may be changed by its owner, its group when the file is\n"
	"group-writable, and root; never when every user can write the file. Exit status 1 if the region or process\n"
	"is not found or may not be changed, 2 for a usage error or an invalid SPEC.\n";

/* The spec is checked by the library's own rule (vg_region_spec_check) before anything is written. */
static int limit_spec_check(const char *spec, struct vg_limits *l)
{
	char e[VG_ERR_MAX];
	return vg_region_spec_check(spec, l, e, sizeof(e)) != 0 ? vg_cli_fail(2, "%s", e) : 0;
}

static int limit_pid_arg(const char *s, int32_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || !*s || v <= 0 || v > INT_MAX)
		return vg_cli_usage(vg_usage_limit, "limit: invalid --pid %s (expected a process id, a positive number)",
				    vg_cli_q(s));
	*pid = (int32_t)v;
	return 0;
}

/* Is libvramguard.so mapped in the process? (-1: cannot tell) */
static int limit_proc_guarded(int32_t pid)
{
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int found = 0;
	while (!found && fgets(buf, sizeof(buf), f))
		found = strstr(buf, "/libvramguard.so") != NULL;
	fclose(f);
	return found;
}

/* Open one shared region for writing; on failure print why and return the exit status. */
static int limit_open_shared(const char *dir, const char *name, struct vg_region *r, bool writable)
{
	char path[VG_SHARED_PATH_MAX], err[VG_CLI_WHY_MAX], who[160];
	if (vg_region_path(dir, name, path, sizeof(path), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "invalid --shared %s: %s", vg_cli_q(name), err);
	int rc = vg_region_open(r, path, writable ? VG_OPEN_ADMIN : VG_OPEN_READ, VG_REGION_SHARED, NULL, NULL, err,
				sizeof(err));
	if (rc == -ENOENT)
		return vg_cli_fail(1, "no shared region %s (%s does not exist): the first process started with "
				  "'vramguard run --shared %s' creates it", vg_cli_q(name), vg_cli_q(path), vg_cli_q(name));
	if (rc == -EACCES)
		return vg_cli_fail(1, "permission denied: %s belongs to %s: run this as that user or root", path,
				  vg_region_owner(path, who, sizeof(who)));
	if (rc)
		return vg_cli_fail(1, "%s%s", rc == -EPERM ? "permission denied: " : "", err);
	return 0;
}

static int limit_set_shared(const char *dir, const char *name, const char *spec, const struct vg_limits *l)
{
	struct vg_region r;
	int rc = limit_open_shared(dir, name, &r, true);
	if (rc)
		return rc;
	char err[VG_CLI_WHY_MAX], label[VG_SHARED_PATH_MAX];
	struct vg_region_info before, after;
	vg_region_info_read(&r, &before);
	const char *old = before.spec;
	vg_cli_region_label(&r, name, label, sizeof(label));
	vg_region_reclaim(&r);
	if ((rc = vg_region_set_limit(&r, spec, err, sizeof(err))) != 0) {
		vg_region_close(&r);
		return vg_cli_fail(1, "shared region '%s': %s", label, err);
	}
	/* What the region stored: a spec with keys only keeps the old bare default in front ("8G" + "0:3G" gives
	 * "8G,0:3G"), for the GPUs registered later. */
	vg_region_info_read(&r, &after);
	const char *now = after.spec;
	char kept[VG_REGION_SPEC_MAX + 64] = "";
	size_t nl = strlen(now), sl = strlen(spec);
	if (strcmp(now, spec) != 0 && nl > sl + 1 && now[nl - sl - 1] == ',' && !strcmp(now + nl - sl, spec))
		snprintf(kept, sizeof(kept), " (keys only: GPUs registered later still get %.*s)", (int)(nl - sl - 1),
			 now);
	int members = 0, ndev = 0, named = 0;
	for (uint32_t k = 0; k < r.nslots; k++) {
		struct vg_slot_view v;
		if (vg_slot_read(&r, k, &v) && v.alive)
			members++;
	}
	struct vg_strbuf over = { 0 };
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view v;
		if (!vg_dev_read(&r, d, &v))
			continue;
		ndev++;
		int said = 0;
		vg_limits_for(l, v.ordinal, strncmp(v.uuid, "ordinal:", 8) ? v.uuid : NULL, v.total, NULL, &said);
		named += said;
		uint64_t lim = v.limit, used = v.used;
		if (said && lim != VG_REGION_NONE && used > lim) {       /* GPUs the spec does not name keep theirs */
			char g[64], a[32], b[32];
			vg_strbuf_printf(&over, "; %s has %s in use, over the new %s: new allocations there are denied "
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
	printf("vramguard: shared region '%s' (%s): limit %s -> %s%s; %s%s", label, r.path, old[0] ? old : "none",
	       now[0] ? now : spec, kept, who, over.data ? over.data : "");
	if (ndev && !named)
		printf("; it names none of the region's %d GPU%s (see 'vramguard limit show --shared %s'): it applies to "
		       "GPUs registered later", ndev, ndev == 1 ? "" : "s", name);
	printf("\n");
	vg_strbuf_free(&over);
	vg_region_close(&r);
	return 0;
}

/* The region and slot of a live process: its control segment, or a slot in a shared region (only the one named
 * with --shared if given). 0 with r open (writable if want_write), or the exit status after saying why. */
static int limit_find_pid(const char *dir, const char *shared, int32_t pid, bool want_write, struct vg_region *out,
			  int *slot)
{
	char cmd[VG_REGION_CMD_MAX], err[VG_CLI_WHY_MAX], who[160];
	uint64_t start = vg_proc_start(pid);
	if (!start)
		return vg_cli_fail(1, "no process %d", (int)pid);
	vg_proc_cmdline(pid, true, cmd, sizeof(cmd));
	if (shared) {
		int rc = limit_open_shared(dir, shared, out, want_write);
		if (rc)
			return rc;
		if ((*slot = vg_region_find_pid(out, pid)) >= 0)
			return 0;
		vg_region_close(out);
		return vg_cli_fail(1, "process %d (%s) is not in shared region %s", (int)pid, cmd, vg_cli_q(shared));
	}
	/* Its control segment is DIR/vramguard.proc.PID.START, START its start time now (a reused PID has another). */
	char path[VG_SHARED_PATH_MAX];
	if (vg_region_control_path(dir, pid, start, path, sizeof(path)) == 0) {
		int rc = vg_region_open(out, path, want_write ? VG_OPEN_ADMIN : VG_OPEN_READ, VG_REGION_CONTROL, NULL, NULL,
					err, sizeof(err));
		if (rc == -EACCES)
			return vg_cli_fail(1, "permission denied: %s (the control segment of process %d) belongs to %s: run "
					  "this as that user or root", path, (int)pid, vg_region_owner(path, who, sizeof(who)));
		if (rc && rc != -ENOENT)
			return vg_cli_fail(1, "%s%s", rc == -EPERM ? "permission denied: " : "", err);
		if (rc == 0) {
			if ((*slot = vg_region_find_pid(out, pid)) >= 0)
				return 0;
			vg_region_close(out);
		}
	}
	/* Else a slot in any region of the directory. */
	struct vg_scan s;
	vg_scan_open(&s, dir, NULL, 0, VG_SCAN_DIR, err, sizeof(err));
	for (size_t i = 0; i < s.n; i++) {
		int k = vg_region_find_pid(&s.v[i].r, pid);
		if (k < 0)
			continue;
		if (want_write && !s.v[i].r.writable) {
			struct stat st;
			int code;
			if (stat(s.v[i].r.path, &st) == 0 && (st.st_mode & 0002))
				code = vg_cli_fail(1, "permission denied: process %d is in %s, which is writable by every user "
						  "(mode %04o): vramguard does not write such a file; remove it when no process "
						  "uses it and let vramguard create it (VRAMGUARD_SHARED_MODE=0600 or 0660)",
						  (int)pid, s.v[i].r.path, (unsigned)(st.st_mode & 07777));
			else
				code = vg_cli_fail(1, "permission denied: process %d is in %s, which belongs to %s: run this "
						  "as that user or root", (int)pid, s.v[i].r.path,
						  vg_region_owner(s.v[i].r.path, who, sizeof(who)));
			vg_scan_close(&s);
			return code;
		}
		vg_scan_take(&s, i, out);
		*slot = k;
		vg_scan_close(&s);
		return 0;
	}
	int guarded = limit_proc_guarded(pid);
	if (s.no_dir)
		fprintf(stderr, "vramguard: error: %s\n", s.dir_why);
	else if (guarded == 1)
		fprintf(stderr, "vramguard: error: process %d (%s) runs under vramguard but has no control segment or "
			"shared-region slot in %s: it has made no CUDA call yet, or runs with VRAMGUARD_CONTROL=off or "
			"another VRAMGUARD_SHM_DIR (see /proc/%d/environ; 'vramguard limit set --dir DIR')\n", (int)pid, cmd,
			dir, (int)pid);
	else
		fprintf(stderr, "vramguard: error: process %d (%s) is not under vramguard: no control segment or "
			"shared-region slot for it in %s; start it with 'vramguard run -- COMMAND' (or "
			"LD_PRELOAD=/path/to/libvramguard.so COMMAND)\n", (int)pid, cmd, dir);
	if (s.denied)
		fprintf(stderr, "vramguard: note: %d region file%s in %s could not be opened (%s): the process may be in "
			"%s\n", s.denied, s.denied == 1 ? "" : "s", dir, s.denied_why, s.denied == 1 ? "it" : "one of them");
	vg_scan_close(&s);
	return 1;
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

static int limit_set_pid(const char *dir, const char *shared, int32_t pid, const char *spec, const struct vg_limits *l)
{
	struct vg_region r;
	int slot;
	int rc = limit_find_pid(dir, shared, pid, true, &r, &slot);
	if (rc)
		return rc;
	struct vg_slot_view v;
	char err[VG_CLI_WHY_MAX], old[VG_REGION_SPEC_MAX + 80];
	if (!vg_slot_read(&r, (uint32_t)slot, &v) || v.pid != pid) {
		int code = vg_cli_fail(1, "process %d exited (it left %s) before the limit could be set: nothing was "
				      "changed", (int)pid, r.path);
		vg_region_close(&r);
		return code;
	}
	limit_own_now(&r, &v, old, sizeof(old));
	/* The region checks, under its lock, that the slot still holds this very process (PID and start time). */
	if ((rc = vg_region_set_slot_limit(&r, slot, v.pid, v.start, spec, err, sizeof(err))) != 0) {
		int code = rc == -ESRCH ? vg_cli_fail(1, "process %d (%s) exited (it left %s) before the limit could be "
						     "set: nothing was changed", (int)pid, v.cmd, r.path)
					: vg_cli_fail(1, "process %d: %s", (int)pid, err);
		vg_region_close(&r);
		return code;
	}
	struct vg_strbuf over = { 0 };
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		if (!vg_slot_uses(&r, &v, d) || !v.used[d])
			continue;
		struct vg_dev_view dv;
		vg_dev_read(&r, d, &dv);
		int said = 0;
		uint64_t lim = vg_limits_for(l, dv.ordinal, strncmp(dv.uuid, "ordinal:", 8) ? dv.uuid : NULL, dv.total, NULL,
					     &said);
		if (said && lim != UINT64_MAX && v.used[d] > lim) {
			char g[64], a[32], b[32];
			vg_strbuf_printf(&over, "; it has %s in use on %s, over %s: its new allocations there are denied "
					 "until usage drops", vg_format_bytes(v.used[d], a, sizeof(a)),
					 vg_dev_label(&dv, g, sizeof(g)), vg_format_bytes(lim, b, sizeof(b)));
		}
	}
	char label[sizeof(r.path)];
	if (r.kind == VG_REGION_CONTROL)
		printf("vramguard: process %d (%s), control segment %s: limit %s -> %s; it applies it at its next "
		       "allocation%s\n", (int)v.pid, v.cmd, r.path, old, spec, over.data ? over.data : "");
	else
		printf("vramguard: process %d (%s) in shared region '%s' (%s): own limit %s -> %s; it applies it at its "
		       "next allocation (the region's budget still applies)%s\n", (int)v.pid, v.cmd,
		       vg_cli_region_label(&r, r.path, label, sizeof(label)), r.path, old, spec, over.data ? over.data : "");
	vg_strbuf_free(&over);
	vg_region_close(&r);
	return 0;
}

static int limit_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "shared", required_argument, NULL, 's' }, { "pid", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const valued[] = { "-s", "--shared", "-p", "--pid", "-d", "--dir", NULL };
	const char *shared = NULL, *dirarg = NULL;
	int32_t pid = 0;
	int c;
	struct vg_limits l;
	/* "limit set -1G ...": a SPEC that is wrong, not an option getopt does not know. */
	const char *neg = vg_cli_negative(argc, argv, valued);
	if (neg)
		return limit_spec_check(neg, &l) ? 2
						 : vg_cli_usage(vg_usage_limit, "limit set: unexpected argument %s", vg_cli_q(neg));
	optind = 1;
	while ((c = getopt_long(argc, argv, ":s:p:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': shared = optarg; break;
		case 'p':
			if (limit_pid_arg(optarg, &pid))
				return 2;
			break;
		case 'd': dirarg = optarg; break;
		case 'h': fputs(vg_usage_limit, stdout); return 0;
		default: return vg_cli_bad_option("limit set", argv, c, vg_usage_limit);
		}
	}
	if (argc - optind != 1)
		return vg_cli_usage(vg_usage_limit,
				    argc - optind ? "limit set: expected one SPEC, got %s too" : "limit set: no SPEC given%s",
				    argc - optind ? vg_cli_q(argv[optind + 1]) : "");
	if (!shared && !pid)
		return vg_cli_usage(vg_usage_limit, "limit set: say what to change: --shared NAME (a shared region's budget) "
				    "or --pid PID (one process's quota)");
	const char *spec = argv[optind];
	int rc = limit_spec_check(spec, &l);
	if (rc)
		return rc;
	char dir[VG_CLI_DIR_MAX], err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dirarg, dir, sizeof(dir), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	if (pid)
		return limit_set_pid(dir, shared, pid, spec, &l);
	return limit_set_shared(dir, shared, spec, &l);
}

/* ---- show ---- */

static void show_region_text(const struct vg_scan_region *sr, int32_t only_pid, struct vg_strbuf *out, bool *requested)
{
	struct vg_tab t;
	char g[64];
	if (!sr->control) {
		struct vg_region_info info;
		vg_region_info_read(&sr->r, &info);
		const char *created = info.created_spec, *spec = info.spec;
		vg_strbuf_printf(out, "shared region '%s' (%s)%s\n", sr->label, sr->r.path,
				 sr->r.writable ? "" : " (read-only here)");
		vg_strbuf_printf(out, "  created with  %s\n  in force      %s\n", created[0] ? created : "none",
				 spec[0] ? spec : "none");
		static const char *const head[] = { "INDEX", "UUID", "ORDINAL", "MEMORY", "LIMIT", "USED", "PEAK",
						    "DENIED" };
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
	static const char *const phead[] = { "PID", "COMMAND", "GPU", "OWN QUOTA", "USED", "PEAK", "REQUESTED" };
	vg_tab_init(&t, 7, "lllrrrl");
	vg_tab_row(&t, phead);
	int rows = 0;
	for (uint32_t k = 0; k < sr->r.nslots; k++) {
		struct vg_slot_view v;
		if (!vg_slot_read(&sr->r, k, &v) || (only_pid && v.pid != only_pid))
			continue;
		char pid[16], cmd[VG_REGION_CMD_MAX + 16], q[32], used[32], peak[32], req[VG_REGION_SPEC_MAX + 16];
		snprintf(pid, sizeof(pid), "%d", (int)v.pid);
		snprintf(cmd, sizeof(cmd), "%s%.32s%s", vg_life_tag(v.life), v.cmd, strlen(v.cmd) > 32 ? "..." : "");
		/* Only a request the process has not applied yet: once applied, OWN QUOTA shows it. */
		if (v.pending && v.limit_spec[0]) {
			snprintf(req, sizeof(req), "%s (%s)", v.limit_spec, v.alive ? "pending" : "never applied");
			*requested = true;
		} else {
			snprintf(req, sizeof(req), "-");
		}
		bool any = false;
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			if (!vg_slot_uses(&sr->r, &v, d))
				continue;
			struct vg_dev_view dv;
			vg_dev_read(&sr->r, d, &dv);
			const char *row[] = { pid, cmd, vg_dev_label(&dv, g, sizeof(g)),
					      vg_cli_size(v.quota[d], q, sizeof(q)),
					      vg_format_bytes(v.used[d], used, sizeof(used)),
					      vg_format_bytes(v.peak[d], peak, sizeof(peak)), req };
			vg_tab_row(&t, row);
			any = true;
			rows++;
		}
		if (!any) {
			const char *row[] = { pid, cmd, "-", "-", "-", "-", req };
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
		if (!vg_slot_read(&sr->r, k, &v) || (only_pid && v.pid != only_pid))
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

static int limit_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "shared", required_argument, NULL, 's' }, { "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },         { "dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	const char *dirarg = NULL;
	char **names = calloc((size_t)argc + 1, sizeof(char *));
	size_t nnames = 0;
	int32_t pid = 0;
	bool json = false;
	int c, rc = 0;
	if (!names)
		return vg_cli_fail(1, "out of memory");
	optind = 1;
	while ((c = getopt_long(argc, argv, ":s:p:jd:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': names[nnames++] = optarg; break;
		case 'p':
			if (limit_pid_arg(optarg, &pid)) {
				free(names);
				return 2;
			}
			break;
		case 'j': json = true; break;
		case 'd': dirarg = optarg; break;
		case 'h': fputs(vg_usage_limit, stdout); free(names); return 0;
		default: free(names); return vg_cli_bad_option("limit show", argv, c, vg_usage_limit);
		}
	}
	if (optind < argc) {
		free(names);
		return vg_cli_usage(vg_usage_limit, "limit show: unexpected argument %s", vg_cli_q(argv[optind]));
	}
	char dir[VG_CLI_DIR_MAX], err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dirarg, dir, sizeof(dir), err, sizeof(err)) != 0) {
		free(names);
		return vg_cli_fail(2, "%s", err);
	}
	struct vg_scan s;
	if (pid) {
		/* Only the region that holds the process. */
		struct vg_region r;
		int slot;
		if (nnames > 1) {
			free(names);
			return vg_cli_usage(vg_usage_limit, "limit show: --pid takes at most one --shared");
		}
		if ((rc = limit_find_pid(dir, nnames ? names[0] : NULL, pid, false, &r, &slot)) != 0) {
			free(names);
			return rc;
		}
		if (!vg_scan_single(&s, dir, &r)) {
			free(names);
			return vg_cli_fail(1, "out of memory");
		}
	} else {
		if (vg_scan_open(&s, dir, names, nnames, (nnames ? 0 : VG_SCAN_DIR) | VG_SCAN_CLEAN, err,
				 sizeof(err)) != 0) {
			free(names);
			return vg_cli_fail(2, "limit show: %s", err);
		}
		if (nnames && s.missing) {
			int code = vg_cli_fail(1, "no shared region: %s", s.missing_why);
			vg_scan_close(&s);
			free(names);
			return code;
		}
		if (s.no_dir) {
			int code = vg_cli_fail(1, "%s", s.dir_why);
			vg_scan_close(&s);
			free(names);
			return code;
		}
	}
	struct vg_strbuf b = { 0 };
	if (json) {
		limit_json(&b, &s, pid);
	} else {
		bool requested = false, control_head = false;
		for (size_t i = 0; i < s.n; i++) {
			if (s.v[i].control && !control_head) {
				vg_strbuf_printf(&b, "%sprocesses outside shared regions (control segments in %s)\n", i ? "\n" : "",
						 dir);
				control_head = true;
			} else if (i && !s.v[i].control) {
				vg_strbuf_str(&b, "\n");
			}
			show_region_text(&s.v[i], pid, &b, &requested);
		}
		if (!s.n)
			vg_strbuf_printf(&b, "no shared region or process under vramguard in %s\n", dir);
		if (requested)
			vg_strbuf_str(&b, "REQUESTED: a 'vramguard limit set --pid' the process has not applied yet; it applies "
					  "it at its next allocation (OWN QUOTA shows it then)\n");
		vg_scan_notes(&s, &b, "note: ");
	}
	if (b.failed || !b.data || fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0)
		rc = 1;
	if (json && (s.denied || s.bad)) {
		struct vg_strbuf n = { 0 };
		vg_scan_notes(&s, &n, "vramguard: note: ");
		if (n.data)
			fputs(n.data, stderr);
		vg_strbuf_free(&n);
	}
	vg_strbuf_free(&b);
	vg_scan_close(&s);
	free(names);
	return rc;
}

int vg_cli_limit(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "vramguard: error: limit: expected 'set' or 'show'\n%s", vg_usage_limit);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		fputs(vg_usage_limit, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "set"))
		return limit_set(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show"))
		return limit_show(argc - 1, argv + 1);
	fprintf(stderr, "vramguard: error: limit: unknown subcommand %s (expected 'set' or 'show')\n%s",
		vg_cli_q(argv[1]), vg_usage_limit);
	return 2;
}
