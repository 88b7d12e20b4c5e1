/* `vramguard region create|rm|reset|evict`: an operator's hand on the life of shared regions (accounting/region.h).
 * A region made by a job lives as long as it has members; `create` makes one that outlives them (a budget set up
 * before the jobs start), `rm` removes one, `reset` rebuilds its totals from its live members, and `evict` frees the
 * share of a member that cannot be checked (another PID namespace without a liveness lock) or is known gone. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/limit_find.h"
#include "cli/scan.h"
#include "config/config.h"

struct region_args {
	const char *name, *limit, *pid, *slot_no;
	char dir[VG_CLI_DIR_MAX];
	unsigned mode, slots;
	bool force;
};

/* Options and operands of subcommand sub: operands NAME (and PID when operands is 2), and the options whose short
 * letters are in allowed ("d" and "h" always), said in words by only for the message refusing another. 0, 1 (help
 * printed), or the exit status of a usage error. */
static int region_parse(int argc, char **argv, const char *sub, int operands, const char *allowed, const char *only,
			struct region_args *a)
{
	struct vg_cli_getopt g;
	const char *dir = NULL, *slots = NULL, *mode = NULL, *usage = vg_cli_usage_of("region");
	memset(a, 0, sizeof(*a));
	a->mode = 0600;
	int k;
	/* "-": operands come back in order, options may follow them. */
	vg_cli_getopt_init(&g, "region", NULL, "-");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		char letter = k >= 0 ? g.flags[k].short_name : 0;
		if (letter && strchr("lmnfs", letter) && !strchr(allowed, letter)) {
			fprintf(stderr, "vramguard: error: region %s: takes only %s\n%s", sub, only, usage);
			return 2;
		}
		switch (k) {
		case VG_CLI_OPT_OPERAND:
			if (!a->name)
				a->name = optarg;
			else if (!a->pid && operands > 1)
				a->pid = optarg;
			else
				return vg_cli_usage(usage, "region: unexpected argument %s", vg_cli_q(optarg));
			break;
		case VG_OPT_REGION_LIMIT: a->limit = optarg; break;
		case VG_OPT_REGION_MODE: mode = optarg; break;
		case VG_OPT_REGION_SLOTS: slots = optarg; break;
		case VG_OPT_REGION_FORCE: a->force = true; break;
		case VG_OPT_REGION_SLOT: a->slot_no = optarg; break;
		case VG_OPT_REGION_DIR: dir = optarg; break;
		case VG_CLI_OPT_HELP: fputs(usage, stdout); return 1;
		default: {
			const char *bad = argv[optind - 1];
			if (operands > 1 && a->name && !a->pid && bad[0] == '-' && bad[1] >= '0' && bad[1] <= '9')
				return vg_cli_usage(usage, "region evict: invalid PID %s (expected a process id, as "
						    "'vramguard top' lists it)", vg_cli_q(bad));
			return vg_cli_bad_option(&g, argv);
		}
		}
	}
	if (!a->name || (operands > 1 && !a->pid))
		return vg_cli_usage(usage,
				    operands > 1 ? "region %s: expected NAME|PATH and PID" : "region %s: expected NAME|PATH", sub);
	if (mode) {
		if (!strcmp(mode, "0600") || !strcmp(mode, "600"))
			a->mode = 0600;
		else if (!strcmp(mode, "0660") || !strcmp(mode, "660"))
			a->mode = 0660;
		else
			return vg_cli_usage(usage, "region: invalid --mode %s (expected 0600 or 0660)", vg_cli_q(mode));
	}
	if (slots) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(slots, &end, 10);
		if (errno || *end || !*slots || slots[0] == '-' || v < 1 || v > VG_REGION_SLOTS_MAX)
			return vg_cli_usage(usage, "region: invalid --slots %s (expected 1 to 16384)", vg_cli_q(slots));
		a->slots = (unsigned)v;
	}
	char err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dir, a->dir, sizeof(a->dir), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	return 0;
}

/* NAME or PATH to the file; 0 or the exit status. */
static int region_path(const struct region_args *a, char *path, size_t len)
{
	char err[VG_CLI_WHY_MAX];
	if (vg_region_path(a->dir, a->name, path, len, err, sizeof(err)) != 0)
		return vg_cli_fail(2, "invalid region %s: %s", vg_cli_q(a->name), err);
	return 0;
}

struct region_label {
	const char *name;
	char *buf;
	size_t len;
};

static int region_label_in(struct vg_region *r, void *arg)
{
	struct region_label *l = arg;
	vg_cli_region_label(r, l->name, l->buf, l->len);
	return 0;
}

/* Open the existing shared region a names for changes: its file in path, its name in label. 0 or the exit status
 * after saying why. */
static int region_open(const struct region_args *a, char *path, size_t plen, struct vg_region *r, char *label,
		       size_t llen)
{
	char err[VG_CLI_WHY_MAX], who[160];
	int rc = region_path(a, path, plen);
	if (rc)
		return rc;
	rc = vg_region_open(r, path, VG_OPEN_ADMIN, VG_REGION_SHARED, NULL, NULL, err, sizeof(err));
	if (rc == -ENOENT)
		return vg_cli_fail(1, "no shared region %s (%s does not exist)", vg_cli_q(a->name), vg_cli_q(path));
	if (rc == -EACCES)
		return vg_cli_fail(1, "permission denied: %s belongs to %s: run this as that user or root", vg_cli_q(path),
				   vg_region_owner(path, who, sizeof(who)));
	if (rc)
		return vg_cli_fail(1, "%s%s", rc == -EPERM ? "permission denied: " : "", err);
	struct region_label l = { a->name, label, llen };
	if (vg_region_guarded(r, region_label_in, &l) == -ESTALE) {
		vg_region_close(r);
		return vg_cli_fail(1, "shared region %s (%s) was truncated or replaced by its owner while it was opened: "
				   "nothing was done; run the command again", vg_cli_q(a->name), path);
	}
	return 0;
}

/* A command's work on the region it opened for changes, and what it needs: the region's owner may truncate the file
 * under it (accounting/fault.h), which costs the command its work, never its life. */
struct region_work {
	const struct region_args *a;
	const char *path, *label;
	long pid, want;                 /* evict's */
	/* What the work allocates lives here and is freed by the command whether or not the work ended. */
	struct vg_strbuf text;
};

static int region_guarded(struct vg_region *r, const char *label, int (*fn)(struct vg_region *r, void *arg),
			  struct region_work *w)
{
	int rc = vg_region_guarded(r, fn, w);
	vg_strbuf_free(&w->text);
	if (rc == -ESTALE)
		rc = vg_cli_fail(1, "shared region %s (%s) was truncated or replaced by its owner while this command worked "
				 "on it: it may be half done; see 'vramguard limit show --shared %s' and run it again",
				 vg_cli_q(label), r->path, vg_cli_q(label));
	return rc;
}

static int region_create(int argc, char **argv)
{
	struct region_args a;
	int rc = region_parse(argc, argv, "create", 1, "lmn", "--limit, --mode, --slots and --dir", &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	const char *spec = a.limit && strcmp(a.limit, "none") ? a.limit : "";
	char err[VG_CLI_WHY_MAX], path[VG_SHARED_PATH_MAX];
	struct vg_limits l;
	if (spec[0] && vg_region_spec_check(spec, &l, err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	if ((rc = region_path(&a, path, sizeof(path))) != 0)
		return rc;
	const char *base = strrchr(a.name, '/') ? strrchr(a.name, '/') + 1 : a.name;
	const struct vg_region_make make = { .kind = VG_REGION_SHARED, .mode = a.mode, .name = a.name[0] == '/' ? base
											       : a.name,
					     .spec = spec, .nslots = a.slots, .flags = VG_REGION_PERSISTENT };
	rc = vg_region_create_new(path, &make, err, sizeof(err));
	if (rc == -EEXIST) {
		struct vg_region r;
		char in_force[VG_REGION_SPEC_MAX] = "?";
		bool persistent = false;
		if (vg_region_open(&r, path, VG_OPEN_READ, VG_REGION_SHARED, NULL, NULL, err, sizeof(err)) == 0) {
			struct vg_region_info info;
			vg_region_info_read(&r, &info);
			memcpy(in_force, info.spec, sizeof(in_force));
			persistent = info.persistent;
			vg_region_close(&r);
		}
		return vg_cli_fail(1, "shared region %s already exists (%s, %s, budget '%s'): change its budget with "
				   "`vramguard limit set SPEC --shared %s`, or remove it first with `vramguard region rm %s`",
				   vg_cli_q(a.name), vg_cli_q(path), persistent ? "persistent" : "made by a job",
				   in_force[0] ? in_force : "none", vg_cli_q(a.name), vg_cli_q(a.name));
	}
	if (rc)
		return vg_cli_fail(1, "shared region %s: %s", vg_cli_q(a.name), err);
	unsigned slots = a.slots ? a.slots : VG_REGION_SLOTS_DEFAULT;
	printf("vramguard: created persistent shared region '%.100s' (%s): budget '%s', room for %u processes, mode "
	       "%04o; it stays until 'vramguard region rm %.100s'\n", a.name, path, spec[0] ? spec : "none", slots,
	       a.mode, a.name);
	return 0;
}

/* The live members of r, as "4242 (python train.py), 4250 (...)": for messages. */
static void region_members(struct vg_region *r, struct vg_strbuf *out)
{
	int n = 0;
	for (uint32_t k = 0; k < r->nslots; k++) {
		struct vg_slot_view v;
		if (!vg_slot_read(r, k, &v) || !v.alive)
			continue;
		if (n++ < 8)
			vg_strbuf_printf(out, "%s%d (%.40s%s)", n > 1 ? ", " : "", (int)v.pid, v.cmd,
					 v.life == VG_LIFE_UNVERIFIABLE ? ", unverifiable" : "");
	}
	if (n > 8)
		vg_strbuf_printf(out, " and %d more", n - 8);
	vg_strbuf_add(out, "", 1);
}

static int region_rm_in(struct vg_region *r, void *arg)
{
	const struct region_work *w = arg;
	const char *path = w->path, *label = w->label;
	char err[VG_CLI_WHY_MAX];
	struct vg_region_info info;
	vg_region_info_read(r, &info);
	const char *spec = info.spec;
	struct vg_strbuf *who = &((struct region_work *)arg)->text;
	region_members(r, who);
	bool persistent = info.persistent;
	int members = 0;
	int rc = vg_region_remove(r, w->a->force, &members, err, sizeof(err));
	if (rc == -EBUSY) {
		rc = vg_cli_fail(1, "shared region %s has %d live member%s: %s; removing it would split the budget (they "
				 "go on counting in the removed file while new jobs make a new one): stop them first, or "
				 "pass --force", vg_cli_q(label), members, members == 1 ? "" : "s", who->data ? who->data : "");
	} else if (rc) {
		rc = vg_cli_fail(1, "shared region %s: %s", vg_cli_q(label), err);
	} else {
		printf("vramguard: removed %sshared region '%s' (%s), budget '%s'%s%s%s\n", persistent ? "persistent " : "",
		       label, path, spec[0] ? spec : "none", members ? "; its members go on in the removed file: " : "",
		       members ? who->data : "", members ? "" : "; it had no member");
	}
	return rc;
}

static int region_rm(int argc, char **argv)
{
	struct region_args a;
	int rc = region_parse(argc, argv, "rm", 1, "f", "--force and --dir", &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	char path[VG_SHARED_PATH_MAX], label[128];
	struct vg_region r;
	if ((rc = region_open(&a, path, sizeof(path), &r, label, sizeof(label))) != 0)
		return rc;
	struct region_work w = { .a = &a, .path = path, .label = label };
	rc = region_guarded(&r, label, region_rm_in, &w);
	vg_region_close(&r);
	return rc;
}

static int region_reset_in(struct vg_region *r, void *arg)
{
	const struct region_work *w = arg;
	const char *path = w->path, *label = w->label;
	char err[VG_CLI_WHY_MAX];
	struct vg_region_info info;
	vg_region_info_read(r, &info);
	uint64_t before[VG_REGION_DEVS], reclaimed = info.reclaimed;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view v;
		vg_dev_read(r, d, &v);
		before[d] = v.used;
	}
	if (vg_region_reset(r, err, sizeof(err)) != 0)
		return vg_cli_fail(1, "shared region %s: %s", vg_cli_q(label), err);
	int members = vg_region_members(r);
	printf("vramguard: reset shared region '%s' (%s): %d member%s", label, path, members, members == 1 ? "" : "s");
	vg_region_info_read(r, &info);
	uint64_t n = info.reclaimed - reclaimed;
	if (n)
		printf(", %llu exited one%s reclaimed", (unsigned long long)n, n == 1 ? "" : "s");
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view v;
		char g[64], x[32], y[32];
		if (!vg_dev_read(r, d, &v))
			continue;
		printf("; %s: in use %s -> %s", vg_dev_label(&v, g, sizeof(g)), vg_format_bytes(before[d], x, sizeof(x)),
		       vg_format_bytes(v.used, y, sizeof(y)));
	}
	printf(" (peaks set to what is in use, denials to 0)\n");
	return 0;
}

static int region_reset(int argc, char **argv)
{
	struct region_args a;
	int rc = region_parse(argc, argv, "reset", 1, "", "--dir", &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	char path[VG_SHARED_PATH_MAX], label[128];
	struct vg_region r;
	if ((rc = region_open(&a, path, sizeof(path), &r, label, sizeof(label))) != 0)
		return rc;
	struct region_work w = { .a = &a, .path = path, .label = label };
	rc = region_guarded(&r, label, region_reset_in, &w);
	vg_region_close(&r);
	return rc;
}

/* The members of r that could be the process evict names: by_start, those with its start time and its PID here or
 * in its own namespace (a live process here, as vg_limit_slot_of finds it), else those that record pid. Their number
 * in *n, listed in list ("slot 3 'python a.py', slot 7 ..."); the slot of the first, -1 if none. */
static int region_evict_fits(struct vg_region *r, int32_t pid, int32_t inner, uint64_t start, bool by_start, int *n,
			     struct vg_strbuf *list)
{
	int first = -1;
	*n = 0;
	for (uint32_t k = 0; k < r->nslots; k++) {
		struct vg_slot_view v;
		if (!vg_slot_read(r, k, &v) || !v.alive ||
		    (by_start ? v.start != start || (v.pid != pid && v.pid != inner) : v.pid != pid))
			continue;
		if (++*n <= 8)
			vg_strbuf_printf(list, "%sslot %u %s", *n > 1 ? ", " : "", k, vg_cli_q(v.cmd));
		if (first < 0)
			first = (int)k;
	}
	if (*n > 8)
		vg_strbuf_printf(list, " and %d more", *n - 8);
	vg_strbuf_add(list, "", 1);
	return first;
}

/* The slot of the member `evict` means by pid, or -1 after saying why. With --slot (want >= 0), that slot, if it is
 * that process's. Else first the live process with that PID here, by its start time and its PID here or in its own
 * PID namespace (as `limit set --pid` finds it); else the member that records that PID (as `top` lists it): one of
 * another PID namespace that cannot be checked, or one known gone. Two that fit (two containers' PID 1) cannot be
 * told apart: refused, nothing evicted, and the message says how to pick one. -2, nothing said, when the file was
 * cut under the search (r is dead). The candidates are listed in list, which the caller frees. */
static int region_evict_slot(struct vg_region *r, const char *label, int32_t pid, long want, int reclaimed,
			     struct vg_strbuf *list)
{
	uint64_t start = vg_proc_start(pid);
	int32_t inner = start ? vg_proc_inner_pid(pid, NULL) : pid;
	struct vg_slot_view v;
	if (want >= 0) {
		if ((uint64_t)want >= r->nslots || !vg_slot_read(r, (uint32_t)want, &v) || !v.alive)
			vg_cli_fail(1, "region evict: slot %ld of shared region %s holds no member: nothing was evicted", want,
				    vg_cli_q(label));
		else if (v.pid != pid && !(start && v.start == start && v.pid == inner))
			vg_cli_fail(1, "region evict: slot %ld of shared region %s is not process %d's (it records PID %d "
				    "%s): nothing was evicted", want, vg_cli_q(label), (int)pid, (int)v.pid, vg_cli_q(v.cmd));
		else
			return (int)want;
		return -1;
	}
	int of = start ? vg_limit_slot_of(r, pid, inner, start) : -1;
	if (of == -3)
		return -2;      /* the file was cut under the search (r is dead now) */
	bool by_start = of != -1;
	int n, slot = region_evict_fits(r, pid, inner, start, by_start, &n, list);
	const char *l = list->data ? list->data : "";
	if (n == 0)
		vg_cli_fail(1, "process %d is not a member of shared region %s%s", (int)pid, vg_cli_q(label),
			    reclaimed ? " (exited members were just reclaimed: it may have been one of them)" : "");
	else if (n > 1 && by_start)
		vg_cli_fail(1, "region evict: %d members of shared region %s have process %d's start time and its PID here "
			    "or in its own PID namespace (%s): which one is meant cannot be told; nothing was evicted (pick "
			    "one with --slot N, the slot 'vramguard top --json' lists)", n, vg_cli_q(label), (int)pid, l);
	else if (n > 1)
		vg_cli_fail(1, "region evict: %d members of shared region %s record PID %d (%s): which one is meant cannot "
			    "be told; nothing was evicted (pick one with --slot N, the slot 'vramguard top --json' lists; a "
			    "live one can be named by its PID on this host)", n, vg_cli_q(label), (int)pid, l);
	return n == 1 ? slot : -1;
}

static int region_evict_in(struct vg_region *r, void *arg)
{
	const struct region_work *w = arg;
	const char *label = w->label;
	long pid = w->pid;
	char err[VG_CLI_WHY_MAX];
	int reclaimed = vg_region_reclaim(r);
	int slot = region_evict_slot(r, label, (int32_t)pid, w->want, reclaimed, &((struct region_work *)arg)->text);
	if (slot == -2)
		return -ESTALE;
	struct vg_slot_view v;
	if (slot < 0 || !vg_slot_read(r, (uint32_t)slot, &v))
		return slot < 0 ? 1 : vg_cli_fail(1, "process %ld left shared region %s meanwhile", pid, vg_cli_q(label));
	uint64_t freed[VG_REGION_DEVS];
	int rc = vg_region_evict(r, slot, v.pid, v.start, w->a->force, freed, err, sizeof(err));
	if (rc == -EBUSY) {
		char x[32];
		uint64_t held = 0;
		for (int d = 0; d < VG_REGION_DEVS; d++)
			held += v.used[d];
		return vg_cli_fail(1, "process %ld (%s) of shared region %s is alive (it holds its liveness lock): "
				   "evicting it would stop counting the %s it holds; pass --force if you know better", pid,
				   vg_cli_q(v.cmd), vg_cli_q(label), vg_format_bytes(held, x, sizeof(x)));
	}
	if (rc)
		return vg_cli_fail(1, "shared region %s: %s", vg_cli_q(label), err);
	char ns[64] = "";
	if (v.pid != pid)       /* named by its PID here: a job in a container with a PID namespace of its own */
		snprintf(ns, sizeof(ns), "PID %d in its own PID namespace; ", (int)v.pid);
	printf("vramguard: evicted process %ld (%s%.40s, %s) from shared region '%s': released", pid, ns, v.cmd,
	       vg_life_name(v.life), label);
	const char *sep = " ";
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_dev_view dv;
		char g[64], x[32];
		if (!freed[d] && !(v.bound >> d & 1))
			continue;
		if (!vg_dev_read(r, d, &dv))
			continue;
		printf("%s%s on %s", sep, vg_format_bytes(freed[d], x, sizeof(x)), vg_dev_label(&dv, g, sizeof(g)));
		sep = ", ";
	}
	printf("%s\n", sep[0] == ' ' ? " nothing (it held no memory)" : "");
	return 0;
}

static int region_evict(int argc, char **argv)
{
	struct region_args a;
	int rc = region_parse(argc, argv, "evict", 2, "fs", "--slot, --force and --dir", &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	char *end;
	errno = 0;
	long pid = strtol(a.pid, &end, 10);
	if (errno || *end || !*a.pid || pid <= 0 || pid > INT_MAX)
		return vg_cli_usage(vg_cli_usage_of("region"), "region evict: invalid PID %s (expected a process id, as "
				    "'vramguard top' lists it)", vg_cli_q(a.pid));
	long want = -1;
	if (a.slot_no) {
		errno = 0;
		want = strtol(a.slot_no, &end, 10);
		if (errno || *end || a.slot_no[0] < '0' || a.slot_no[0] > '9' || want > VG_REGION_SLOTS_MAX)
			return vg_cli_usage(vg_cli_usage_of("region"), "region evict: invalid --slot %s (expected a slot "
					    "number, as 'vramguard top --json' lists it)", vg_cli_q(a.slot_no));
	}
	char path[VG_SHARED_PATH_MAX], label[128];
	struct vg_region r;
	if ((rc = region_open(&a, path, sizeof(path), &r, label, sizeof(label))) != 0)
		return rc;
	struct region_work w = { .a = &a, .path = path, .label = label, .pid = pid, .want = want };
	rc = region_guarded(&r, label, region_evict_in, &w);
	vg_region_close(&r);
	return rc;
}

int vg_cli_region(int argc, char **argv)
{
	if (argc < 2)
		return vg_cli_usage(vg_cli_usage_of("region"), "region: expected 'create', 'rm', 'reset' or 'evict'");
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help"))
		return vg_cli_help("region");
	if (!strcmp(sub, "create"))
		return region_create(argc - 1, argv + 1);
	if (!strcmp(sub, "rm"))
		return region_rm(argc - 1, argv + 1);
	if (!strcmp(sub, "reset"))
		return region_reset(argc - 1, argv + 1);
	if (!strcmp(sub, "evict"))
		return region_evict(argc - 1, argv + 1);
	return vg_cli_usage(vg_cli_usage_of("region"), "region: unknown subcommand %s (expected create, rm, reset or "
			    "evict)", vg_cli_q(sub));
}
