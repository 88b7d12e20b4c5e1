/* Finding what `vramguard limit` names (cli/limit_find.h): a shared region, opened for reading or for a change; a
 * process, by its start time and its PID here or in its own PID namespace, through its control segment or its slot. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/limit_find.h"
#include "config/config.h"
#include "config/stat.h"

int vg_limit_pid_arg(const char *s, int32_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || !*s || v <= 0 || v > INT_MAX)
		return vg_cli_usage(vg_cli_usage_of("limit"), "limit: invalid --pid %s (expected a process id, a positive number)",
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

int vg_limit_open_shared(const char *dir, const char *name, struct vg_region *r, bool writable)
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

struct limit_slot_find {
	int32_t pid, inner;
	uint64_t start;
};

static int limit_slot_in(struct vg_region *r, void *arg)
{
	const struct limit_slot_find *f = arg;
	int found = -1;
	for (uint32_t k = 0; k < r->nslots; k++) {
		struct vg_slot_view v;
		if (!vg_slot_read(r, k, &v) || !v.alive || v.start != f->start || (v.pid != f->pid && v.pid != f->inner))
			continue;
		if (found >= 0)
			return -2;
		found = (int)k;
	}
	return found;
}

int vg_limit_slot_of(struct vg_region *r, int32_t pid, int32_t inner, uint64_t start)
{
	struct limit_slot_find f = { pid, inner, start };
	int rc = vg_region_guarded(r, limit_slot_in, &f);
	return rc == -ESTALE ? -3 : rc;
}

static int limit_changed_under(int32_t pid, const char *path)
{
	return vg_cli_fail(1, "%s changed while process %d was looked up in it (its owner truncated or replaced it): "
			   "nothing was changed; run the command again", path, (int)pid);
}

static int limit_ambiguous(int32_t pid, const char *cmd, const char *where)
{
	return vg_cli_fail(1, "process %d (%s): two processes of other PID namespaces with its PID there and its start "
			   "time are in %s: which one is meant cannot be told; nothing was changed (change it from inside "
			   "its container: 'vramguard limit set SPEC --pid PID' there)", (int)pid, cmd, where);
}

/* The process a command names: its PID here and in its own PID namespace, its start time, its command line. */
struct limit_who {
	int32_t pid, inner;
	uint64_t start;
	char cmd[VG_REGION_CMD_MAX];
};

/* Its control segment is DIR/vramguard.proc.PID.START, START its start time now (a reused PID has another), PID the
 * one it sees itself: its PID in its container's own PID namespace. 0 with *out open, -1 when it has none (or not
 * this process), else the exit status after saying why. */
static int find_in_control(const char *dir, const struct limit_who *w, bool want_write, struct vg_region *out,
			   int *slot)
{
	char path[VG_SHARED_PATH_MAX], err[VG_CLI_WHY_MAX], who[160];
	if (vg_region_control_path(dir, w->inner, w->start, path, sizeof(path)) != 0)
		return -1;
	int rc = vg_region_open(out, path, want_write ? VG_OPEN_ADMIN : VG_OPEN_READ, VG_REGION_CONTROL, NULL, NULL, err,
				sizeof(err));
	if (rc == -EACCES)
		return vg_cli_fail(1, "permission denied: %s (the control segment of process %d) belongs to %s: run this as "
				   "that user or root", path, (int)w->pid, vg_region_owner(path, who, sizeof(who)));
	if (rc && rc != -ENOENT)
		return vg_cli_fail(1, "%s%s", rc == -EPERM ? "permission denied: " : "", err);
	if (rc)
		return -1;
	if ((*slot = vg_limit_slot_of(out, w->pid, w->inner, w->start)) >= 0)
		return 0;
	vg_region_close(out);
	return *slot == -3 ? limit_changed_under(w->pid, path) : -1;
}

/* The region file the scan found the process in, opened for the change, and the process found again in it (the
 * file may have been replaced since): 0, or the exit status after saying why. */
static int find_reopen(const char *path, const struct limit_who *w, struct vg_region *out, int *slot)
{
	char err[VG_CLI_WHY_MAX], who[160];
	struct stat st;
	int rc = vg_region_open(out, path, VG_OPEN_ADMIN, 0, NULL, NULL, err, sizeof(err));
	if (rc == -EPERM && vg_stat(path, &st) == 0 && (st.st_mode & 0002))
		return vg_cli_fail(1, "permission denied: process %d is in %s, which is writable by every user (mode %04o): "
				   "vramguard does not write such a file; remove it when no process uses it and let vramguard "
				   "create it (VRAMGUARD_SHARED_MODE=0600 or 0660)", (int)w->pid, path,
				   (unsigned)(st.st_mode & 07777));
	if (rc == -EACCES || rc == -EPERM || rc == -EROFS)
		return vg_cli_fail(1, "permission denied: process %d is in %s, which belongs to %s: run this as that user or "
				   "root", (int)w->pid, path, vg_region_owner(path, who, sizeof(who)));
	if (rc)
		return vg_cli_fail(1, "%s", err);
	if ((*slot = vg_limit_slot_of(out, w->pid, w->inner, w->start)) >= 0)
		return 0;
	vg_region_close(out);
	if (*slot == -3)
		return limit_changed_under(w->pid, path);
	if (*slot == -2)
		return limit_ambiguous(w->pid, w->cmd, path);
	return vg_cli_fail(1, "process %d (%s) left %s before the limit could be set: nothing was changed", (int)w->pid,
			   w->cmd, path);
}

/* Found nowhere: why, as well as can be told. The exit status, 1. */
static int find_none(const char *dir, const struct limit_who *w, const struct vg_scan *s)
{
	int guarded = limit_proc_guarded(w->pid);
	if (s->no_dir)
		fprintf(stderr, "vramguard: error: %s\n", s->dir_why);
	else if (guarded == 1)
		fprintf(stderr, "vramguard: error: process %d (%s) runs under vramguard but has no control segment or "
			"shared-region slot in %s: it has made no CUDA call yet, or runs with VRAMGUARD_CONTROL=off or "
			"another VRAMGUARD_SHM_DIR (see /proc/%d/environ; 'vramguard limit set --dir DIR')\n", (int)w->pid,
			w->cmd, dir, (int)w->pid);
	else
		fprintf(stderr, "vramguard: error: process %d (%s) is not under vramguard: no control segment or "
			"shared-region slot for it in %s; start it with 'vramguard run -- COMMAND' (or "
			"LD_PRELOAD=/path/to/libvramguard.so COMMAND)\n", (int)w->pid, w->cmd, dir);
	if (s->denied)
		fprintf(stderr, "vramguard: note: %d region file%s in %s could not be opened (%s): the process may be in "
			"%s\n", s->denied, s->denied == 1 ? "" : "s", dir, s->denied_why, s->denied == 1 ? "it" : "one of them");
	return 1;
}

/* A slot in any region of the directory (or a control segment named with its namespace, see interposer/shared.c):
 * exactly one. 0 with *out open, or the exit status after saying why. */
static int find_in_scan(const char *dir, const struct limit_who *w, bool want_write, struct vg_region *out,
			int *slot)
{
	char err[VG_CLI_WHY_MAX], path[VG_SHARED_PATH_MAX];
	struct vg_scan s;
	vg_scan_open(&s, dir, NULL, 0, VG_SCAN_DIR, err, sizeof(err));
	size_t hit = s.n;
	int hk = -1, rc;
	for (size_t i = 0; i < s.n; i++) {
		int k = vg_limit_slot_of(&s.v[i].r, w->pid, w->inner, w->start);
		if (k == -1 || k == -3)        /* -3: never, the scan's are copies */
			continue;
		if (k == -2 || hit < s.n) {
			vg_scan_close(&s);
			return limit_ambiguous(w->pid, w->cmd, dir);
		}
		hit = i;
		hk = k;
	}
	if (hit < s.n && !want_write) {
		vg_scan_take(&s, hit, out);
		*slot = hk;
		rc = 0;
	} else if (hit < s.n) {
		/* The scan holds a reader's copy: the file itself is opened for the change. */
		snprintf(path, sizeof(path), "%s", s.v[hit].r.path);
		vg_scan_close(&s);
		return find_reopen(path, w, out, slot);
	} else {
		rc = find_none(dir, w, &s);
	}
	vg_scan_close(&s);
	return rc;
}

int vg_limit_find_pid(const char *dir, const char *shared, int32_t pid, bool want_write, struct vg_region *out,
		      int *slot)
{
	struct limit_who w = { .pid = pid, .start = vg_proc_start(pid) };
	if (!w.start)
		return vg_cli_fail(1, "no process %d", (int)pid);
	w.inner = vg_proc_inner_pid(pid, NULL);
	vg_proc_cmdline(pid, true, w.cmd, sizeof(w.cmd));
	if (shared) {
		int rc = vg_limit_open_shared(dir, shared, out, want_write);
		if (rc)
			return rc;
		if ((*slot = vg_limit_slot_of(out, pid, w.inner, w.start)) >= 0)
			return 0;
		vg_region_close(out);
		if (*slot == -3)
			return limit_changed_under(pid, out->path);
		if (*slot == -2)
			return limit_ambiguous(pid, w.cmd, vg_cli_q(shared));
		return vg_cli_fail(1, "process %d (%s) is not in shared region %s", (int)pid, w.cmd, vg_cli_q(shared));
	}
	int rc = find_in_control(dir, &w, want_write, out, slot);
	return rc >= 0 ? rc : find_in_scan(dir, &w, want_write, out, slot);
}
