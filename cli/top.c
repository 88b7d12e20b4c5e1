/* `vramguard top`: every process under vramguard on this machine, found through the regions in VRAMGUARD_SHM_DIR
 * (the shared regions, and the control segment of every other process), with totals per GPU. Also the region
 * scanning, JSON and table helpers that `vramguard limit` uses (cli/top.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/top.h"
#include "config/config.h"

const char vg_usage_top[] =
	"usage: vramguard top [--once] [--json] [--interval SECONDS] [--shared NAME|PATH]... [--dir DIR]\n"
	"\n"
	"Show every process running under vramguard on this machine: per GPU the memory it has in use, its peak,\n"
	"its quota (the tighter of its own and its shared region's budget), allocations denied, its last report and\n"
	"its shared region; then totals per GPU with the shared regions' budgets. Processes are found through the\n"
	"files in VRAMGUARD_SHM_DIR (default /dev/shm): shared regions, and the control segment of every other\n"
	"process. The view refreshes until q or Ctrl-C; when standard output is not a terminal, a snapshot is\n"
	"printed every interval.\n"
	"  -1, --once               print one snapshot and exit\n"
	"  -j, --json               JSON (schema vramguard.top/1, see docs/report-format.md): one snapshot, or with\n"
	"                           --interval one document per line every interval\n"
	"  -n, --interval SECONDS   time between snapshots (default 1; 0.1 to 86400)\n"
	"  -s, --shared NAME|PATH   also look at this shared region (repeatable; the one VRAMGUARD_SHARED names is\n"
	"                           always included)\n"
	"  -d, --dir DIR            where regions live (default VRAMGUARD_SHM_DIR, else /dev/shm)\n"
	"\n"
	"The share of a process that died without leaving (SIGKILL), in any PID namespace, is reclaimed where the\n"
	"region is writable, its control segment removed, and a region that all its members have left removed\n"
	"(not one made with 'vramguard region create'); elsewhere it is shown as (exited) and left out of the totals.\n"
	"A member of another PID namespace that holds no liveness lock cannot be checked: it is shown as\n"
	"(unverifiable) and counted ('vramguard region evict' frees it). Region files that cannot be opened (another\n"
	"user's; root sees every user's) are counted on one line; a region file that every user can write is shown\n"
	"read-only.\n";

/* ---- small helpers ---- */

static void vg_why(int *count, char *why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void vg_why(int *count, char *why, const char *fmt, ...)
{
	if ((*count)++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, VG_CLI_WHY_MAX, fmt, ap);
		va_end(ap);
	}
}

const char *vg_cli_owner(const char *path, char *buf, size_t len)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		snprintf(buf, len, "an unknown user");
		return buf;
	}
	struct passwd *pw = getpwuid(st.st_uid);
	if (pw && pw->pw_name)
		snprintf(buf, len, "%s (uid %u, mode %04o)", pw->pw_name, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
	else
		snprintf(buf, len, "uid %u (mode %04o)", (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return buf;
}

const char *vg_cli_size(uint64_t v, char *buf, size_t len)
{
	if (v == VG_REGION_NONE) {
		snprintf(buf, len, "unlimited");
		return buf;
	}
	return vg_format_bytes(v, buf, len);
}

const char *vg_cli_field(char *dst, const char *src, size_t n)
{
	/* The whole field, then our own terminator: nothing past it is read however the writer changes it. */
	memcpy(dst, src, n);
	dst[n - 1] = '\0';
	return dst;
}

const char *vg_dev_label(const struct vg_region_dev *d, char *buf, size_t len)
{
	char uuid[VG_REGION_UUID_MAX];
	VG_CLI_FIELD(uuid, d->uuid);
	if (!strncmp(uuid, "ordinal:", 8))
		snprintf(buf, len, "ordinal %s", uuid + 8);
	else if ((!strncmp(uuid, "GPU-", 4) || !strncmp(uuid, "MIG-", 4)) && strlen(uuid) > 12)
		snprintf(buf, len, "%.12s (%d)", uuid, (int)d->ordinal);
	else
		snprintf(buf, len, "%s (%d)", uuid, (int)d->ordinal);
	return buf;
}

int vg_cli_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("vramguard: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

int vg_cli_usage(const char *usage, const char *fmt, ...)
{
	va_list ap;
	fputs("vramguard: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

const char *vg_cli_region_label(const struct vg_region *r, const char *fallback, char *buf, size_t len)
{
	char name[VG_REGION_NAME_MAX];
	VG_CLI_FIELD(name, r->h->name);
	const char *l = name[0] && name[0] != '/' ? name : fallback;
	size_t n = strnlen(l, len - 1);
	memcpy(buf, l, n);
	buf[n] = '\0';
	return buf;
}

const char *vg_cli_q(const char *s)
{
	static char buf[8][VG_QUOTE_BUF];
	static unsigned next;
	return vg_quote(s, buf[next++ % 8], VG_QUOTE_BUF);
}

int vg_cli_bad_option(const char *cmd, char **argv, int c, const char *usage)
{
	char opt[3] = { '-', (char)optopt, '\0' };
	const char *what = optopt && optopt != '?' ? opt : argv[optind - 1];
	if (c == ':')
		fprintf(stderr, "vramguard: error: %s: option %s needs a value\n", cmd, vg_cli_q(argv[optind - 1]));
	else
		fprintf(stderr, "vramguard: error: %s: unknown option %s\n", cmd, vg_cli_q(what));
	fputs(usage, stderr);
	return 2;
}

const char *vg_cli_negative(int argc, char **argv, const char *const *valued)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			return NULL;
		if (a[0] == '-' && a[1] >= '0' && a[1] <= '9')
			return a;
		for (const char *const *v = valued; *v; v++)
			if (!strcmp(a, *v)) {
				i++;            /* its value, whatever it looks like */
				break;
			}
	}
	return NULL;
}

/* VRAMGUARD_SHM_DIR and VRAMGUARD_SHARED are read by the library's own loader (trimmed, checked, defaulted as the
 * jobs read them), so that the command looks where the jobs look; vg_cli_env_dir stands in for VRAMGUARD_SHM_DIR
 * where --dir gave one. */
static const char *vg_cli_env_dir;
static bool vg_cli_env_dir_set;

static const char *vg_cli_getenv(const char *name)
{
	if (strcmp(name, "VRAMGUARD_SHM_DIR") == 0)
		return vg_cli_env_dir_set ? vg_cli_env_dir : getenv(name);
	return strcmp(name, "VRAMGUARD_SHARED") == 0 ? getenv(name) : NULL;
}

/* The library's reading of those two variables; NULL with the message in err if it refuses them. */
static const struct vg_config *vg_cli_env(const char *dir, char *err, size_t errlen)
{
	static struct vg_config cfg;
	vg_cli_env_dir = dir;
	vg_cli_env_dir_set = dir != NULL;
	if (vg_config_load(&cfg, vg_cli_getenv, 0) != 0) {
		const char *e = cfg.error, *head = "vramguard: error: ";
		snprintf(err, errlen, "%s", strncmp(e, head, strlen(head)) == 0 ? e + strlen(head) : e);
		return NULL;
	}
	return &cfg;
}

int vg_cli_dir(const char *opt, char *out, size_t len, char *err, size_t errlen)
{
	const char *what = "--dir", *v = opt;
	if (!v) {
		const struct vg_config *cfg = vg_cli_env(NULL, err, errlen);
		if (!cfg)
			return -EINVAL;
		v = cfg->shm_dir;
		what = "VRAMGUARD_SHM_DIR";
	}
	size_t n = strlen(v);
	while (n > 1 && v[n - 1] == '/')
		n--;
	if (v[0] != '/' || n >= len || n >= VG_CLI_DIR_MAX) {
		snprintf(err, errlen, "invalid %s %s: %s", what, vg_cli_q(v),
			 v[0] != '/' ? "expected an absolute directory path (e.g. /dev/shm)"
				     : "path too long (at most 255 bytes)");
		return -EINVAL;
	}
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* ---- processes ---- */

bool vg_slot_read(const struct vg_region *r, uint32_t i, struct vg_slot_view *v)
{
	struct vg_region_hdr *h = r->h;
	if (!h || i >= r->nslots)
		return false;
	struct vg_region_slot *s = &h->slot[i];
	for (int tries = 0; tries < 5; tries++) {
		uint32_t gen = atomic_load(&h->generation);
		memset(v, 0, sizeof(*v));
		if (atomic_load(&s->state) != VG_SLOT_ACTIVE)
			return false;
		v->pid = s->pid;
		v->start = s->start;
		v->bound = atomic_load(&s->bound);
		VG_CLI_FIELD(v->cmd, s->cmd);
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			v->used[d] = atomic_load(&s->used[d]);
			v->peak[d] = atomic_load(&s->peak[d]);
			v->quota[d] = atomic_load(&s->quota[d]);
			v->alloc[d] = atomic_load(&s->alloc[d]);
			v->driver[d] = atomic_load(&s->driver[d]);
		}
		v->count_mode = atomic_load(&s->count_mode);
		v->denied = atomic_load(&s->denied);
		v->last_report_ns = atomic_load(&s->last_report_ns);
		/* limit_seq before applied_seq: a request applied meanwhile makes applied_seq run ahead of our copy,
		 * never behind it, so a request is never shown pending after the process took it. */
		v->limit_seq = atomic_load(&s->limit_seq);
		VG_CLI_FIELD(v->limit_spec, s->limit_spec);
		v->pending = (int32_t)(v->limit_seq - atomic_load(&s->applied_seq)) > 0;
		if (atomic_load(&h->generation) == gen && atomic_load(&s->state) == VG_SLOT_ACTIVE)
			break;
	}
	/* region.h's judgement, for the process we copied (the slot may hold another one by now). */
	v->life = s->pid == v->pid && s->start == v->start ? vg_region_slot_life(r, (int)i) : VG_LIFE_DEAD;
	v->alive = v->life != VG_LIFE_DEAD;
	return true;
}

const char *vg_life_name(int life)
{
	return life == VG_LIFE_ALIVE ? "alive" : life == VG_LIFE_UNVERIFIABLE ? "unverifiable" : "exited";
}

const char *vg_life_tag(int life)
{
	return life == VG_LIFE_ALIVE ? "" : life == VG_LIFE_UNVERIFIABLE ? "(unverifiable) " : "(exited) ";
}

bool vg_slot_uses(const struct vg_region *r, const struct vg_slot_view *v, int d)
{
	return d >= 0 && d < VG_REGION_DEVS && (v->bound >> d & 1u) && r->h->dev[d].uuid[0];
}

/* ---- finding and opening regions ---- */

static void vg_scan_add(struct vg_scan *s, const char *path, bool named, int flags)
{
	struct stat st;
	char who[160], err[VG_CLI_WHY_MAX];
	if (lstat(path, &st) != 0) {
		int e = errno;
		if (e == ENOENT) {
			if (named)
				vg_why(&s->missing, s->missing_why, "%s does not exist (yet)", path);
		} else if (e == EACCES) {
			vg_why(&s->denied, s->denied_why, "%s: %s", path, strerror(e));
		} else {
			vg_why(&s->bad, s->bad_why, "%s: %s", path, strerror(e));
		}
		return;
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].fdev == (uint64_t)st.st_dev && s->v[i].fino == (uint64_t)st.st_ino)
			return;
	/* Writable where region.h trusts the file (-EPERM: it does not, e.g. every user can write it), else read-only:
	 * reading trusts nothing but the validated layout. */
	struct vg_region r;
	int rc = vg_region_open(&r, path, VG_OPEN_ADMIN, 0, NULL, NULL, err, sizeof(err));
	bool untrusted = rc == -EPERM || rc == -EREMOTE;
	char werr[VG_CLI_WHY_MAX] = "";
	if (untrusted)
		snprintf(werr, sizeof(werr), "%s", err);
	if (rc == -EACCES || rc == -EROFS || untrusted)
		rc = vg_region_open(&r, path, VG_OPEN_READ, 0, NULL, NULL, err, sizeof(err));
	if (rc == 0 && untrusted) {
		if (st.st_mode & 0002)
			vg_why(&s->untrusted, s->untrusted_why, "%s is writable by every user, mode %04o", path,
			       (unsigned)(st.st_mode & 07777));
		else
			vg_why(&s->untrusted, s->untrusted_why, "%s", werr);
	}
	if (rc == -ENOENT) {
		if (named)
			vg_why(&s->missing, s->missing_why, "%s does not exist (yet)", path);
		return;
	}
	if (rc == -EACCES)
		vg_why(&s->denied, s->denied_why, "%s belongs to %s", path, vg_cli_owner(path, who, sizeof(who)));
	else if (rc == -EPERM)
		vg_why(&s->denied, s->denied_why, "%s", err);
	else if (rc)
		vg_why(&s->bad, s->bad_why, "%s", err);
	if (rc)
		return;

	bool control = r.kind == VG_REGION_CONTROL;
	if ((flags & VG_SCAN_CLEAN) && r.writable) {
		/* A control segment whose process is gone (SIGKILL: no destructor ran) is only litter, and so is a region
		 * that every member has left without removing it. One nobody has joined yet is left alone for a while:
		 * its creator is on its way in. */
		bool gone;
		int n = vg_region_clean(&r, 10ull * 1000000000u, &gone);
		if (!control)
			s->reclaimed += n;
		if (gone) {
			if (control)
				s->removed++;
			else
				s->removed_regions++;
			vg_region_close(&r);
			return;
		}
	}

	struct vg_scan_region *nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
	if (!nv) {
		vg_region_close(&r);
		vg_why(&s->bad, s->bad_why, "%s: out of memory", path);
		return;
	}
	s->v = nv;
	struct vg_scan_region *sr = &s->v[s->n++];
	memset(sr, 0, sizeof(*sr));
	sr->r = r;
	sr->control = control;
	sr->fdev = (uint64_t)st.st_dev;
	sr->fino = (uint64_t)st.st_ino;
	if (control) {
		snprintf(sr->label, sizeof(sr->label), "-");
	} else {
		char name[VG_REGION_NAME_MAX];
		VG_CLI_FIELD(name, r.h->name);
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		if (!strncmp(base, VG_REGION_PREFIX, strlen(VG_REGION_PREFIX)))
			base += strlen(VG_REGION_PREFIX);
		snprintf(sr->label, sizeof(sr->label), "%s", name[0] && name[0] != '/' ? name : base);
	}
}

static int vg_scan_cmp(const void *a, const void *b)
{
	const struct vg_scan_region *x = a, *y = b;
	if (x->control != y->control)
		return x->control ? 1 : -1;
	int c = strcmp(x->label, y->label);
	return c ? c : strcmp(x->r.path, y->r.path);
}

int vg_scan_open(struct vg_scan *s, const char *dir, char *const *names, size_t nnames, int flags, char *err,
		 size_t errlen)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	char path[VG_SHARED_PATH_MAX], why[VG_CLI_WHY_MAX];
	for (size_t i = 0; i < nnames; i++) {
		if (vg_region_path(dir, names[i], path, sizeof(path), why, sizeof(why)) != 0) {
			snprintf(err, errlen, "invalid --shared %s: %s", vg_cli_q(names[i]), why);
			return -EINVAL;
		}
		vg_scan_add(s, path, true, flags);
	}
	if (flags & VG_SCAN_DIR) {
		DIR *d = opendir(dir);
		if (!d) {
			s->no_dir = true;
			snprintf(s->dir_why, sizeof(s->dir_why), "cannot read the directory %s: %s", dir, strerror(errno));
		}
		struct dirent *e;
		size_t plen = strlen(VG_REGION_PREFIX);
		while (d && (e = readdir(d))) {
			/* .vramguard.tmp.* (a region being made) does not start with the prefix */
			if (strncmp(e->d_name, VG_REGION_PREFIX, plen) != 0 || !e->d_name[plen])
				continue;
			if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN && e->d_type != DT_LNK)
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
				continue;
			vg_scan_add(s, path, false, flags);
		}
		if (d)
			closedir(d);
	}
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), vg_scan_cmp);
	return 0;
}

void vg_scan_close(struct vg_scan *s)
{
	for (size_t i = 0; i < s->n; i++)
		vg_region_close(&s->v[i].r);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

void vg_scan_notes(const struct vg_scan *s, struct vg_strbuf *out, const char *prefix)
{
	if (s->no_dir)
		vg_strbuf_printf(out, "%s%s\n", prefix, s->dir_why);
	if (s->denied)
		vg_strbuf_printf(out, "%s%d region file%s could not be opened for lack of permission (%s%s): run as %s "
				 "owner or root to see %s\n", prefix, s->denied, s->denied == 1 ? "" : "s", s->denied_why,
				 s->denied > 1 ? ", ..." : "", s->denied == 1 ? "its" : "their",
				 s->denied == 1 ? "it" : "them");
	if (s->untrusted)
		vg_strbuf_printf(out, "%s%d region file%s shown read-only, not trusted for writing (%s%s): nothing is "
				 "reclaimed and no limit can be set there; remove %s when no process uses %s and let "
				 "vramguard create %s again (VRAMGUARD_SHARED_MODE=0600 or 0660)\n", prefix, s->untrusted,
				 s->untrusted == 1 ? "" : "s", s->untrusted_why, s->untrusted > 1 ? ", ..." : "",
				 s->untrusted == 1 ? "it" : "them", s->untrusted == 1 ? "it" : "them",
				 s->untrusted == 1 ? "it" : "them");
	if (s->bad)
		vg_strbuf_printf(out, "%s%d file%s skipped (%s%s)\n", prefix, s->bad, s->bad == 1 ? "" : "s", s->bad_why,
				 s->bad > 1 ? ", ..." : "");
	if (s->missing)
		vg_strbuf_printf(out, "%sno shared region: %s%s\n", prefix, s->missing_why, s->missing > 1 ? ", ..." : "");
}

/* ---- JSON ---- */

void vg_cj_size(struct vg_strbuf *b, uint64_t v)
{
	if (v == VG_REGION_NONE)
		vg_strbuf_str(b, "null");
	else
		vg_strbuf_printf(b, "%llu", (unsigned long long)v);
}

void vg_cj_dev_open(struct vg_strbuf *b, const char *sep, const struct vg_region *r, int d)
{
	const struct vg_region_dev *v = &r->h->dev[d];
	char uuid[VG_REGION_UUID_MAX];
	vg_strbuf_printf(b, "%s{\"index\": %d, \"uuid\": ", sep, d);
	vg_json_str(b, VG_CLI_FIELD(uuid, v->uuid), sizeof(uuid));
	vg_strbuf_printf(b, ", \"ordinal\": %d", (int)v->ordinal);
}

void vg_cj_request(struct vg_strbuf *b, const struct vg_slot_view *v)
{
	vg_strbuf_str(b, "\"requested_limit\": ");
	if (v->limit_spec[0])
		vg_json_str(b, v->limit_spec, sizeof(v->limit_spec));
	else
		vg_strbuf_str(b, "null");
	vg_strbuf_printf(b, ", \"applied\": %s", v->pending ? "false" : "true");
}

/* A region's name as a JSON value (null for a control segment), then its "path" member. */
static void top_cj_label_path(struct vg_strbuf *b, const struct vg_scan_region *sr)
{
	if (sr->control)
		vg_strbuf_str(b, "null");
	else
		vg_json_str(b, sr->label, sizeof(sr->label));
	vg_strbuf_str(b, ", \"path\": ");
	vg_json_str(b, sr->r.path, sizeof(sr->r.path));
}

void vg_cj_region(struct vg_strbuf *b, const struct vg_scan_region *sr)
{
	struct vg_region_hdr *h = sr->r.h;
	vg_strbuf_printf(b, "\"kind\": \"%s\", \"name\": ", sr->control ? "control" : "shared");
	top_cj_label_path(b, sr);
	char spec[VG_REGION_SPEC_MAX];
	vg_strbuf_str(b, ", \"created_spec\": ");
	vg_json_str(b, VG_CLI_FIELD(spec, h->created_spec), sizeof(spec));
	vg_strbuf_str(b, ", \"spec\": ");
	vg_json_str(b, VG_CLI_FIELD(spec, h->spec), sizeof(spec));
	int members = vg_region_members(&sr->r);
	vg_strbuf_printf(b, ", \"writable\": %s, \"persistent\": %s, \"slots\": %u, \"members\": %d, \"reclaimed\": %llu, "
			 "\"evicted\": %llu, \"devices\": [", sr->r.writable ? "true" : "false",
			 (h->flags & VG_REGION_PERSISTENT) ? "true" : "false", sr->r.nslots, members,
			 (unsigned long long)atomic_load(&h->reclaimed), (unsigned long long)atomic_load(&h->evicted));
	const char *sep = "";
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_region_dev *v = &h->dev[d];
		char uuid[VG_REGION_UUID_MAX];
		if (!VG_CLI_FIELD(uuid, v->uuid)[0])
			continue;
		vg_cj_dev_open(b, sep, &sr->r, d);
		vg_strbuf_printf(b, ", \"total_bytes\": %llu, \"limit_bytes\": ", (unsigned long long)v->total);
		vg_cj_size(b, atomic_load(&v->limit));
		vg_strbuf_printf(b, ", \"used_bytes\": %llu, \"peak_bytes\": %llu, \"denied\": %llu}",
				 (unsigned long long)atomic_load(&v->used), (unsigned long long)atomic_load(&v->peak),
				 (unsigned long long)atomic_load(&v->denied));
		sep = ", ";
	}
	vg_strbuf_str(b, "]");
}

/* ---- tables ---- */

void vg_tab_init(struct vg_tab *t, size_t ncols, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->align = align;
}

void vg_tab_row(struct vg_tab *t, const char *const *cells)
{
	if (t->failed)
		return;
	if ((t->nrows + 1) * t->ncols > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : t->ncols * 16;
		char **nc = realloc(t->cell, cap * sizeof(*nc));
		if (!nc) {
			t->failed = 1;
			return;
		}
		t->cell = nc;
		t->cap = cap;
	}
	for (size_t c = 0; c < t->ncols; c++) {
		struct vg_strbuf b = { 0 };
		vg_text_str(&b, cells[c] ? cells[c] : "", 4096);
		vg_strbuf_add(&b, "", 1);
		if (b.failed || !b.data) {
			vg_strbuf_free(&b);
			t->failed = 1;
			return;
		}
		t->cell[t->nrows * t->ncols + c] = b.data;     /* owned by the table now */
	}
	t->nrows++;
}

void vg_tab_render(const struct vg_tab *t, struct vg_strbuf *out, const char *indent)
{
	size_t w[16] = { 0 };
	if (t->failed) {
		out->failed = 1;
		return;
	}
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols && c < 16; c++) {
			const char *s = t->cell[r * t->ncols + c];
			size_t n = vg_text_width(s, strlen(s));
			if (n > w[c])
				w[c] = n;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		vg_strbuf_str(out, indent);
		for (size_t c = 0; c < t->ncols && c < 16; c++) {
			const char *s = t->cell[r * t->ncols + c];
			size_t n = vg_text_width(s, strlen(s));
			bool last = c + 1 == t->ncols;
			if (t->align[c] == 'r') {
				vg_strbuf_spaces(out, w[c] - n);
				vg_strbuf_str(out, s);
			} else if (last) {
				vg_strbuf_str(out, s);
			} else {
				vg_text_pad(out, s, w[c]);
			}
			if (!last)
				vg_strbuf_str(out, "  ");
		}
		vg_strbuf_str(out, "\n");
	}
}

void vg_tab_free(struct vg_tab *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cell[i]);
	free(t->cell);
	memset(t, 0, sizeof(*t));
}

/* ---- the snapshot ---- */

struct top_opts {
	bool once, json, interval_set;
	double interval;
	char dir[VG_CLI_DIR_MAX];
	char **names;
	size_t nnames;
};

/* One GPU of all the regions, by UUID (a "ordinal:N" key stands for itself). */
struct top_gpu {
	char uuid[VG_REGION_UUID_MAX];
	const struct vg_region_dev *first;      /* for the label and the memory size */
	uint64_t used;
	int procs;
};

struct top_snap {
	struct vg_scan scan;
	struct top_gpu gpu[VG_REGION_DEVS * 4];
	size_t ngpu;
	int nproc, nexited, nunverifiable;
	uint64_t now_ns;
};

static struct top_gpu *top_gpu_for(struct top_snap *sn, const struct vg_region_dev *d)
{
	char uuid[VG_REGION_UUID_MAX];
	VG_CLI_FIELD(uuid, d->uuid);
	for (size_t i = 0; i < sn->ngpu; i++)
		if (!strcmp(sn->gpu[i].uuid, uuid))
			return &sn->gpu[i];
	if (sn->ngpu == sizeof(sn->gpu) / sizeof(sn->gpu[0]))
		return NULL;
	struct top_gpu *g = &sn->gpu[sn->ngpu++];
	memset(g, 0, sizeof(*g));
	memcpy(g->uuid, uuid, sizeof(g->uuid));
	g->first = d;
	return g;
}

/* Is region device d the GPU g (by UUID)? */
static bool top_gpu_is(const struct top_gpu *g, const struct vg_region_dev *d)
{
	char uuid[VG_REGION_UUID_MAX];
	return !strcmp(VG_CLI_FIELD(uuid, d->uuid), g->uuid);
}

/* One region's budget on a GPU. */
struct top_budget {
	const struct vg_scan_region *sr;
	uint64_t limit, used;
};

/* The budgets on GPU g, one per call, in scan order (shared regions with a limit there): start with *at = 0; false
 * when there is no more. */
static bool top_budget_next(const struct top_snap *sn, const struct top_gpu *g, size_t *at, struct top_budget *bu)
{
	for (; *at < sn->scan.n * VG_REGION_DEVS; ++*at) {
		const struct vg_scan_region *sr = &sn->scan.v[*at / VG_REGION_DEVS];
		if (sr->control)
			continue;
		struct vg_region_dev *v = &sr->r.h->dev[*at % VG_REGION_DEVS];
		uint64_t lim = atomic_load(&v->limit);
		if (lim == VG_REGION_NONE || !top_gpu_is(g, v))
			continue;
		++*at;
		bu->sr = sr;
		bu->limit = lim;
		bu->used = atomic_load(&v->used);
		return true;
	}
	return false;
}

static int top_gpu_cmp(const void *a, const void *b)
{
	return strcmp(((const struct top_gpu *)a)->uuid, ((const struct top_gpu *)b)->uuid);
}

/* The quota a process meets on region device d: its own, or the region's budget when that is tighter. */
static uint64_t top_effective(const struct vg_scan_region *sr, const struct vg_slot_view *v, int d)
{
	uint64_t own = v->quota[d];
	uint64_t lim = sr->control ? VG_REGION_NONE : atomic_load(&sr->r.h->dev[d].limit);
	return own < lim ? own : lim;
}

static int top_take(struct top_snap *sn, const struct top_opts *o, char *err, size_t errlen)
{
	memset(sn, 0, sizeof(*sn));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	sn->now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (vg_scan_open(&sn->scan, o->dir, o->names, o->nnames, VG_SCAN_DIR | VG_SCAN_CLEAN, err, errlen) != 0)
		return -EINVAL;
	for (size_t i = 0; i < sn->scan.n; i++) {
		struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			if (!vg_slot_read(&sr->r, k, &v))
				continue;
			if (!v.alive) {
				sn->nexited++;
				continue;
			}
			sn->nproc++;
			if (v.life == VG_LIFE_UNVERIFIABLE && !sr->control)
				sn->nunverifiable++;
			for (int d = 0; d < VG_REGION_DEVS; d++) {
				if (!vg_slot_uses(&sr->r, &v, d))
					continue;
				struct top_gpu *g = top_gpu_for(sn, &sr->r.h->dev[d]);
				if (g) {
					g->used += v.used[d];
					g->procs++;
				}
			}
		}
		/* GPUs with a budget are listed even when nobody uses them now. */
		for (int d = 0; d < VG_REGION_DEVS && !sr->control; d++)
			if (sr->r.h->dev[d].uuid[0] && atomic_load(&sr->r.h->dev[d].limit) != VG_REGION_NONE)
				top_gpu_for(sn, &sr->r.h->dev[d]);
	}
	qsort(sn->gpu, sn->ngpu, sizeof(sn->gpu[0]), top_gpu_cmp);
	return 0;
}

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

static void top_text(struct top_snap *sn, const struct top_opts *o, bool screen, struct vg_strbuf *out)
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
	static const char *const head[] = { "PID", "COMMAND", "GPU", "IN USE", "ALLOCATED", "PEAK", "QUOTA", "DENIED",
					    "LAST REPORT", "REGION" };
	struct vg_tab t;
	vg_tab_init(&t, 10, "lllrrrrrll");
	vg_tab_row(&t, head);
	int rows = 0;
	for (size_t i = 0; i < sn->scan.n; i++) {
		struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			if (!vg_slot_read(&sr->r, k, &v))
				continue;
			char pid[16], cmd[VG_REGION_CMD_MAX + 16], gpu[64], used[32], alloc[32], peak[32], quota[32],
				denied[24], age[32];
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
				vg_dev_label(&sr->r.h->dev[d], gpu, sizeof(gpu));
				/* Device counting: IN USE is what the GPU holds for it, ALLOCATED what it asked for. */
				const char *row[] = { pid, cmd, gpu, vg_format_bytes(v.used[d], used, sizeof(used)),
						      v.count_mode == 0 ? "-" : vg_format_bytes(v.alloc[d], alloc, sizeof(alloc)),
						      vg_format_bytes(v.peak[d], peak, sizeof(peak)),
						      vg_cli_size(top_effective(sr, &v, d), quota, sizeof(quota)),
						      denied, age, sr->label };
				vg_tab_row(&t, row);
				rows++;
			}
			if (!any) {
				const char *row[] = { pid, cmd, "-", "-", "-", "-", "-", denied, age, sr->label };
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

	if (sn->ngpu) {
		static const char *const ghead[] = { "GPU", "MEMORY", "IN USE", "PROCESSES", "BUDGETS" };
		vg_tab_init(&t, 5, "lrrrl");
		vg_tab_row(&t, ghead);
		for (size_t g = 0; g < sn->ngpu; g++) {
			struct top_gpu *G = &sn->gpu[g];
			char label[64], mem[32], used[32], procs[16];
			struct vg_strbuf bud = { 0 };
			struct top_budget bu;
			for (size_t at = 0; top_budget_next(sn, G, &at, &bu);) {
				char a[32], b[32];
				vg_strbuf_printf(&bud, "%s%s %s of %s", bud.len ? ", " : "", bu.sr->label,
						 vg_format_bytes(bu.used, a, sizeof(a)),
						 vg_format_bytes(bu.limit, b, sizeof(b)));
			}
			vg_strbuf_add(&bud, "", 1);
			snprintf(procs, sizeof(procs), "%d", G->procs);
			const char *row[] = { vg_dev_label(G->first, label, sizeof(label)),
					      G->first->total ? vg_format_bytes(G->first->total, mem, sizeof(mem)) : "?",
					      vg_format_bytes(G->used, used, sizeof(used)), procs,
					      bud.data && bud.data[0] ? bud.data : "-" };
			vg_tab_row(&t, row);
			vg_strbuf_free(&bud);
		}
		vg_strbuf_str(out, "\n");
		vg_tab_render(&t, out, "");
		vg_tab_free(&t);
	}
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

static void top_json(struct top_snap *sn, const struct top_opts *o, struct vg_strbuf *b)
{
	vg_strbuf_printf(b, "{\"schema\": \"vramguard.top/1\", \"time_ns\": %llu, \"dir\": ",
			 (unsigned long long)sn->now_ns);
	vg_json_str(b, o->dir, sizeof(o->dir));
	vg_strbuf_str(b, ", \"regions\": [");
	const char *sep = "";
	for (size_t i = 0; i < sn->scan.n; i++) {
		if (sn->scan.v[i].control)
			continue;
		vg_strbuf_printf(b, "%s{", sep);
		vg_cj_region(b, &sn->scan.v[i]);
		vg_strbuf_str(b, "}");
		sep = ", ";
	}
	vg_strbuf_str(b, "], \"processes\": [");
	sep = "";
	for (size_t i = 0; i < sn->scan.n; i++) {
		struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			if (!vg_slot_read(&sr->r, k, &v))
				continue;
			vg_strbuf_printf(b, "%s{\"pid\": %d, \"command\": ", sep, (int)v.pid);
			vg_json_str(b, v.cmd, sizeof(v.cmd));
			vg_strbuf_printf(b, ", \"alive\": %s, \"state\": \"%s\", \"region\": ",
					 v.life == VG_LIFE_ALIVE ? "true" : v.alive ? "null" : "false", vg_life_name(v.life));
			top_cj_label_path(b, sr);
			vg_strbuf_printf(b, ", \"slot\": %u, \"denied\": %llu, \"last_report_ns\": ", k,
					 (unsigned long long)v.denied);
			if (v.last_report_ns)
				vg_strbuf_printf(b, "%llu", (unsigned long long)v.last_report_ns);
			else
				vg_strbuf_str(b, "null");
			vg_strbuf_str(b, ", ");
			vg_cj_request(b, &v);
			vg_strbuf_str(b, ", \"devices\": [");
			const char *dsep = "";
			for (int d = 0; d < VG_REGION_DEVS; d++) {
				if (!vg_slot_uses(&sr->r, &v, d))
					continue;
				vg_cj_dev_open(b, dsep, &sr->r, d);
				vg_strbuf_printf(b, ", \"used_bytes\": %llu, \"allocated_bytes\": %llu, \"driver_bytes\": %llu, "
						 "\"count\": %s, \"peak_bytes\": %llu, \"quota_bytes\": ",
						 (unsigned long long)v.used[d], (unsigned long long)v.alloc[d],
						 (unsigned long long)v.driver[d],
						 v.count_mode == 1 ? "\"device\"" : v.count_mode == 2 ? "\"allocations\"" : "null",
						 (unsigned long long)v.peak[d]);
				vg_cj_size(b, top_effective(sr, &v, d));
				vg_strbuf_str(b, ", \"own_quota_bytes\": ");
				vg_cj_size(b, v.quota[d]);
				vg_strbuf_str(b, ", \"region_limit_bytes\": ");
				vg_cj_size(b, sr->control ? VG_REGION_NONE : atomic_load(&sr->r.h->dev[d].limit));
				vg_strbuf_str(b, "}");
				dsep = ", ";
			}
			vg_strbuf_str(b, "]}");
			sep = ", ";
		}
	}
	vg_strbuf_str(b, "], \"totals\": [");
	sep = "";
	for (size_t g = 0; g < sn->ngpu; g++) {
		struct top_gpu *G = &sn->gpu[g];
		vg_strbuf_printf(b, "%s{\"uuid\": ", sep);
		vg_json_str(b, G->uuid, sizeof(G->uuid));
		vg_strbuf_printf(b, ", \"ordinal\": %d, \"total_bytes\": %llu, \"used_bytes\": %llu, \"processes\": %d, "
				 "\"budgets\": [", (int)G->first->ordinal, (unsigned long long)G->first->total,
				 (unsigned long long)G->used, G->procs);
		const char *bsep = "";
		struct top_budget bu;
		for (size_t at = 0; top_budget_next(sn, G, &at, &bu);) {
			vg_strbuf_printf(b, "%s{\"region\": ", bsep);
			vg_json_str(b, bu.sr->label, sizeof(bu.sr->label));
			vg_strbuf_printf(b, ", \"limit_bytes\": %llu, \"used_bytes\": %llu}",
					 (unsigned long long)bu.limit, (unsigned long long)bu.used);
			bsep = ", ";
		}
		vg_strbuf_str(b, "]}");
		sep = ", ";
	}
	vg_strbuf_printf(b, "], \"exited\": %d, \"unverifiable\": %d, \"unreadable\": %d, \"skipped\": %d, "
			 "\"missing\": %d, \"removed\": %d, \"removed_regions\": %d, \"reclaimed\": %d}\n", sn->nexited,
			 sn->nunverifiable, sn->scan.denied, sn->scan.bad, sn->scan.missing, sn->scan.removed,
			 sn->scan.removed_regions, sn->scan.reclaimed);
}

/* ---- the loop ---- */

static volatile sig_atomic_t top_stop, top_winch;

static void top_on_signal(int sig)
{
	if (sig == SIGWINCH)
		top_winch = 1;
	else
		top_stop = sig;
}

static struct termios top_saved;
static bool top_raw, top_screen;

static void top_restore(void)
{
	if (top_screen) {
		fputs("\033[?25h\033[?1049l", stdout);      /* cursor back, leave the alternate screen */
		fflush(stdout);
		top_screen = false;
	}
	if (top_raw) {
		tcsetattr(STDIN_FILENO, TCSANOW, &top_saved);
		top_raw = false;
	}
}

/* Write out, cut to the terminal's width and height on a screen (a long command line must not wrap the table). */
static int top_write(const struct vg_strbuf *b, bool screen)
{
	if (b->failed || !b->data)
		return -1;
	if (!screen)
		return fwrite(b->data, 1, b->len, stdout) == b->len && fflush(stdout) == 0 ? 0 : -1;
	struct winsize ws = { 0 };
	size_t cols = 200, rows = 1000;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col) {
		cols = ws.ws_col;
		rows = ws.ws_row ? ws.ws_row : rows;
	}
	fputs("\033[H\033[2J", stdout);
	size_t line = 0;
	for (const char *p = b->data, *end = b->data + b->len; p < end && line + 1 < rows; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		size_t w = 0, n = 0;
		while (p + n < e) {
			if (((unsigned char)p[n] & 0xc0) != 0x80 && ++w > cols)
				break;
			n++;
		}
		fwrite(p, 1, n, stdout);
		fputc('\n', stdout);
		p = nl ? nl + 1 : end;
	}
	return fflush(stdout) == 0 ? 0 : -1;
}

static int top_parse(int argc, char **argv, struct top_opts *o)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, '1' },    { "json", no_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, 'n' }, { "shared", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL;
	int c;
	memset(o, 0, sizeof(*o));
	o->interval = 1;
	o->names = calloc((size_t)argc + 1, sizeof(char *));
	if (!o->names) {
		fprintf(stderr, "vramguard: error: out of memory\n");
		return 1;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, ":1jn:s:d:h", opts, NULL)) != -1) {
		switch (c) {
		case '1': o->once = true; break;
		case 'j': o->json = true; break;
		case 'n': {
			char *end;
			errno = 0;
			double v = strtod(optarg, &end);
			if (errno || *end || !*optarg || !(v >= 0.1 && v <= 86400)) {
				fprintf(stderr, "vramguard: error: top: invalid --interval %s (expected seconds from 0.1 to "
					"86400, e.g. 1 or 0.5)\n%s", vg_cli_q(optarg), vg_usage_top);
				return 2;
			}
			o->interval = v;
			o->interval_set = true;
			break;
		}
		case 's': o->names[o->nnames++] = optarg; break;
		case 'd': dir = optarg; break;
		case 'h': fputs(vg_usage_top, stdout); return 0;
		default: return vg_cli_bad_option("top", argv, c, vg_usage_top);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vramguard: error: top: unexpected argument %s\n%s", vg_cli_q(argv[optind]), vg_usage_top);
		return 2;
	}
	char err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dir, o->dir, sizeof(o->dir), err, sizeof(err)) != 0) {
		fprintf(stderr, "vramguard: error: %s\n", err);
		return 2;
	}
	char path[VG_SHARED_PATH_MAX];
	for (size_t i = 0; i < o->nnames; i++)
		if (vg_region_path(o->dir, o->names[i], path, sizeof(path), err, sizeof(err)) != 0) {
			fprintf(stderr, "vramguard: error: top: invalid --shared %s: %s\n", vg_cli_q(o->names[i]), err);
			return 2;
		}
	static char env_name[VG_SHARED_PATH_MAX];      /* VRAMGUARD_SHARED, trimmed and checked as the jobs read it */
	const struct vg_config *cfg = vg_cli_env(o->dir, err, sizeof(err));
	if (!cfg) {
		fprintf(stderr, "vramguard: error: %s\n", err);
		return 2;
	}
	if (cfg->shared_name[0]) {
		snprintf(env_name, sizeof(env_name), "%s", cfg->shared_name);
		o->names[o->nnames++] = env_name;
	}
	return -1;
}

int vg_cli_top(int argc, char **argv)
{
	struct top_opts o;
	int rc = top_parse(argc, argv, &o);
	if (rc >= 0) {
		free(o.names);
		return rc;
	}
	bool once = o.once || (o.json && !o.interval_set);
	bool screen = !once && !o.json && isatty(STDOUT_FILENO);
	bool keys = screen && isatty(STDIN_FILENO);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = top_on_signal;     /* no SA_RESTART: poll returns at once */
	sigemptyset(&sa.sa_mask);
	if (!once) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		if (screen)
			sigaction(SIGWINCH, &sa, NULL);
	}
	if (keys && tcgetattr(STDIN_FILENO, &top_saved) == 0) {
		struct termios raw = top_saved;
		raw.c_lflag &= (tcflag_t)~(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
			top_raw = true;
	}
	if (screen) {
		fputs("\033[?1049h\033[?25l", stdout);      /* alternate screen, no cursor */
		top_screen = true;
	}
	atexit(top_restore);

	rc = 0;
	bool first = true;
	while (!top_stop) {
		struct top_snap *sn = malloc(sizeof(*sn));
		char err[VG_CLI_WHY_MAX];
		if (!sn) {
			top_restore();
			fprintf(stderr, "vramguard: error: out of memory\n");
			rc = 1;
			break;
		}
		if (top_take(sn, &o, err, sizeof(err)) != 0) {
			top_restore();
			fprintf(stderr, "vramguard: error: top: %s\n", err);
			free(sn);
			rc = 2;
			break;
		}
		if (sn->scan.no_dir && (once || first)) {
			top_restore();
			fprintf(stderr, "vramguard: error: %s\n", sn->scan.dir_why);
			vg_scan_close(&sn->scan);
			free(sn);
			rc = 1;
			break;
		}
		struct vg_strbuf b = { 0 };
		if (!o.json && !first && !screen)
			vg_strbuf_str(&b, "\n");
		if (o.json)
			top_json(sn, &o, &b);
		else
			top_text(sn, &o, screen, &b);
		if (o.json && (sn->scan.denied || sn->scan.bad || sn->scan.missing)) {
			struct vg_strbuf n = { 0 };
			vg_scan_notes(&sn->scan, &n, "vramguard: note: ");
			if (n.data)
				fputs(n.data, stderr);
			vg_strbuf_free(&n);
		}
		vg_scan_close(&sn->scan);
		free(sn);
		int wrc = top_write(&b, screen);
		vg_strbuf_free(&b);
		if (wrc != 0) {
			rc = 1;
			break;
		}
		first = false;
		if (once)
			break;
		/* Wait for the interval, a key, or a signal. */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int left = (int)(o.interval * 1000);
		while (!top_stop && !top_winch && left > 0) {
			struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
			int n = poll(keys ? &p : NULL, keys ? 1 : 0, left);
			if (n > 0 && (p.revents & POLLIN)) {
				char k[32];
				ssize_t got = read(STDIN_FILENO, k, sizeof(k));
				if (got <= 0 || memchr(k, 'q', (size_t)got) || memchr(k, 'Q', (size_t)got))
					top_stop = SIGTERM;
				else if (memchr(k, ' ', (size_t)got))
					break;          /* space: refresh now */
			} else if (n > 0) {
				keys = false;           /* stdin closed or in error: stop polling it */
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			left = (int)(o.interval * 1000) - (int)((t1.tv_sec - t0.tv_sec) * 1000 +
								 (t1.tv_nsec - t0.tv_nsec) / 1000000);
		}
		top_winch = 0;
	}
	top_restore();
	free(o.names);
	return rc;
}
