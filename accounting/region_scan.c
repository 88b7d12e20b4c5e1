/* Reading regions from outside (region_scan.h): copies of the header, devices and slots, and the scan of a
 * directory's region files for the command. Nothing here is on a hot path or in the library. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "accounting/clock.h"
#include "accounting/region_scan.h"
#include "config/config.h"
#include "config/stat.h"

/* A string field of the mapped file, copied into dst of the field's size and terminated: nothing past it is read
 * however the writer changes it. */
#define VG_FIELD(dst, field)                                                                                       \
	((void)sizeof(struct { _Static_assert(sizeof(dst) == sizeof(field), "a buffer of the field's size"); int x; }), \
	 vg_field_copy((dst), (field), sizeof(dst)))

static const char *vg_field_copy(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n - 1] = '\0';
	return dst;
}

void vg_region_info_read(const struct vg_region *r, struct vg_region_info *out)
{
	const struct vg_region_hdr *h = r->h;
	memset(out, 0, sizeof(*out));
	if (!h)
		return;
	VG_FIELD(out->name, h->name);
	VG_FIELD(out->created_spec, h->created_spec);
	VG_FIELD(out->spec, h->spec);
	VG_FIELD(out->compute_spec, h->compute_spec);
	out->persistent = h->flags & VG_REGION_PERSISTENT;
	out->reclaimed = atomic_load(&h->reclaimed);
	out->evicted = atomic_load(&h->evicted);
}

bool vg_dev_read(const struct vg_region *r, int d, struct vg_dev_view *v)
{
	memset(v, 0, sizeof(*v));
	if (!r->h || d < 0 || d >= VG_REGION_DEVS)
		return false;
	const struct vg_region_dev *s = &r->h->dev[d];
	if (!VG_FIELD(v->uuid, s->uuid)[0])
		return false;
	v->ordinal = s->ordinal;
	v->total = s->total;
	v->limit = atomic_load(&s->limit);
	v->used = atomic_load(&s->used);
	v->peak = atomic_load(&s->peak);
	v->denied = atomic_load(&s->denied);
	return true;
}

uint64_t vg_dev_limit(const struct vg_region *r, int d)
{
	if (!r->h || r->kind == VG_REGION_CONTROL || d < 0 || d >= VG_REGION_DEVS || !r->h->dev[d].uuid[0])
		return VG_REGION_NONE;
	return atomic_load(&r->h->dev[d].limit);
}

/* ---- slots ---- */

/* The parts within the whole: alloc[] and driver[] are the member's figures of its sampler's last round, used[] is
 * live, so a free since that round left alloc[] above what is in use (top showed 896 MiB allocated of 736 MiB in
 * use). The driver's part changes only at rounds and what was freed was allocations: they give way first. Memory
 * allocated since the round is in used[] only until the next one (docs/metrics.md, "Published by the process"). */
static void vg_slot_parts_within(struct vg_slot_view *v)
{
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		if (v->driver[d] > v->used[d])
			v->driver[d] = v->used[d];
		if (v->alloc[d] > v->used[d] - v->driver[d])
			v->alloc[d] = v->used[d] - v->driver[d];
	}
}

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
		VG_FIELD(v->cmd, s->cmd);
		/* First (acquire): set, it vouches for the published figures read after it (vg_region_publish). */
		v->count_mode = atomic_load_explicit(&s->count_mode, memory_order_acquire);
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			v->used[d] = atomic_load(&s->used[d]);
			v->peak[d] = atomic_load(&s->peak[d]);
			v->quota[d] = atomic_load(&s->quota[d]);
			v->alloc[d] = atomic_load(&s->alloc[d]);
			v->driver[d] = atomic_load(&s->driver[d]);
			v->soft[d] = atomic_load(&s->soft[d]);
		}
		v->compute_published = atomic_load_explicit(&s->compute_published, memory_order_acquire) == 1;
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			v->compute_pm[d] = atomic_load(&s->compute_pm[d]);
			v->compute_recent_pm[d] = atomic_load(&s->compute_recent_pm[d]);
			v->gpu_time_ns[d] = atomic_load(&s->gpu_time_ns[d]);
		}
		v->forecast_set = 0;
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			uint32_t f = atomic_load(&s->forecast[d]);
			v->forecast_s[d] = f ? f - 1 : 0;
			v->forecast_set |= f ? 1u << d : 0;
		}
		v->allocs = atomic_load(&s->allocs);
		v->denied_bytes = atomic_load(&s->denied_bytes);
		v->live_allocs = atomic_load(&s->live_allocs);
		v->streams_pending = atomic_load(&s->streams_pending);
		v->denied = atomic_load(&s->denied);
		v->last_report_ns = atomic_load(&s->last_report_ns);
		/* limit_seq before applied_seq: a request applied meanwhile makes applied_seq run ahead of our copy,
		 * never behind it, so a request is never shown pending after the process took it. */
		v->limit_seq = atomic_load(&s->limit_seq);
		VG_FIELD(v->limit_spec, s->limit_spec);
		v->pending = (int32_t)(v->limit_seq - atomic_load(&s->applied_seq)) > 0;
		uint32_t cseq = atomic_load(&s->compute_seq);
		VG_FIELD(v->compute_spec, s->compute_spec);
		v->compute_pending = (int32_t)(cseq - atomic_load(&s->compute_applied_seq)) > 0;
		if (atomic_load(&h->generation) == gen && atomic_load(&s->state) == VG_SLOT_ACTIVE)
			break;
	}
	vg_slot_parts_within(v);
	/* region.h's judgement, for the process we copied (the slot may hold another one by now). */
	v->life = s->pid == v->pid && s->start == v->start ? vg_region_slot_life(r, (int)i) : VG_LIFE_DEAD;
	v->alive = v->life != VG_LIFE_DEAD;
	return true;
}

bool vg_slot_uses(const struct vg_region *r, const struct vg_slot_view *v, int d)
{
	return d >= 0 && d < VG_REGION_DEVS && (v->bound >> d & 1u) && r->h->dev[d].uuid[0];
}

const char *vg_region_owner(const char *path, char *buf, size_t len)
{
	struct stat st;
	if (vg_stat(path, &st) != 0) {
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

/* ---- the regions of a directory ---- */

/* Count one more file of a kind; the first one's reason is kept. */
static void vg_why(int *count, char *why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void vg_why(int *count, char *why, const char *fmt, ...)
{
	if ((*count)++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, VG_SCAN_WHY_MAX, fmt, ap);
		va_end(ap);
	}
}

void vg_scan_init(struct vg_scan *s, const char *dir)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
}

/* The label of a region opened from path: a shared region's name (else the file's, without the prefix), "-" for a
 * control segment. */
static void vg_scan_label(struct vg_scan_region *sr, const char *path)
{
	if (sr->control) {
		snprintf(sr->label, sizeof(sr->label), "-");
		return;
	}
	char name[VG_REGION_NAME_MAX];
	VG_FIELD(name, sr->r.h->name);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!strncmp(base, VG_REGION_PREFIX, strlen(VG_REGION_PREFIX)))
		base += strlen(VG_REGION_PREFIX);
	snprintf(sr->label, sizeof(sr->label), "%s", name[0] && name[0] != '/' ? name : base);
}

struct vg_scan_clean {
	int reclaimed;
	bool gone;
};

static int vg_scan_clean_fn(struct vg_region *r, void *arg)
{
	struct vg_scan_clean *c = arg;
	c->reclaimed = vg_region_clean(r, 10ull * VG_NS_PER_SEC, &c->gone);
	return 0;
}

void vg_scan_add(struct vg_scan *s, const char *path, bool named, int flags)
{
	struct stat st;
	char who[160], err[VG_SCAN_WHY_MAX];
	if (vg_lstat(path, &st) != 0) {
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
	/* Opened for changes where region.h trusts the file (-EPERM: it does not, e.g. every user can write it), to
	 * clean it; what is kept and shown is a reader's copy of the file (VG_OPEN_READ), which its owner cannot take
	 * away from under us by truncating it. */
	struct vg_region r;
	int rc = (flags & VG_SCAN_READ) ? -EACCES : vg_region_open(&r, path, VG_OPEN_ADMIN, 0, NULL, NULL, err, sizeof(err));
	bool untrusted = rc == -EPERM || rc == -EREMOTE, admin = rc == 0;
	char werr[VG_SCAN_WHY_MAX] = "";
	if (untrusted)
		snprintf(werr, sizeof(werr), "%s", err);
	if (admin && (flags & VG_SCAN_CLEAN)) {
		/* A control segment whose process is gone (SIGKILL: no destructor ran) is only litter, and so is a region
		 * that every member has left without removing it. One nobody has joined yet is left alone for a while:
		 * its creator is on its way in. */
		struct vg_scan_clean c = { 0 };
		if (vg_region_guarded(&r, vg_scan_clean_fn, &c) == -ESTALE) {
			vg_region_close(&r);
			vg_why(&s->changed, s->changed_why, "%s was truncated while it was being cleaned", path);
			return;
		}
		if (r.kind != VG_REGION_CONTROL)
			s->reclaimed += c.reclaimed;
		if (c.gone) {
			if (r.kind == VG_REGION_CONTROL)
				s->removed++;
			else
				s->removed_regions++;
			vg_region_close(&r);
			return;
		}
	}
	if (admin)
		vg_region_close(&r);
	if (admin || rc == -EACCES || rc == -EROFS || untrusted)
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
		vg_why(&s->denied, s->denied_why, "%s belongs to %s", path, vg_region_owner(path, who, sizeof(who)));
	else if (rc == -EPERM)
		vg_why(&s->denied, s->denied_why, "%s", err);
	else if (rc == -ESTALE)
		vg_why(&s->changed, s->changed_why, "%s", err);
	else if (rc)
		vg_why(&s->bad, s->bad_why, "%s", err);
	if (rc)
		return;
	bool control = r.kind == VG_REGION_CONTROL;

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
	sr->admin = admin;
	sr->fdev = (uint64_t)st.st_dev;
	sr->fino = (uint64_t)st.st_ino;
	vg_scan_label(sr, path);
}

void vg_scan_dir(struct vg_scan *s, int flags)
{
	char path[VG_SHARED_PATH_MAX];
	DIR *d = opendir(s->dir);
	if (!d) {
		s->no_dir = true;
		snprintf(s->dir_why, sizeof(s->dir_why), "cannot read the directory %s: %s", s->dir, strerror(errno));
		return;
	}
	struct dirent *e;
	size_t plen = strlen(VG_REGION_PREFIX);
	while ((e = readdir(d))) {
		/* .vramguard.tmp.* (a region being made) does not start with the prefix */
		if (strncmp(e->d_name, VG_REGION_PREFIX, plen) != 0 || !e->d_name[plen])
			continue;
		if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN && e->d_type != DT_LNK)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", s->dir, e->d_name) >= sizeof(path))
			continue;
		vg_scan_add(s, path, false, flags);
	}
	closedir(d);
}

static int vg_scan_cmp(const void *a, const void *b)
{
	const struct vg_scan_region *x = a, *y = b;
	if (x->control != y->control)
		return x->control ? 1 : -1;
	int c = strcmp(x->label, y->label);
	return c ? c : strcmp(x->r.path, y->r.path);
}

void vg_scan_sort(struct vg_scan *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), vg_scan_cmp);
}

void vg_scan_take(struct vg_scan *s, size_t i, struct vg_region *out)
{
	*out = s->v[i].r;
	s->v[i].r.h = NULL;     /* handed over, with its descriptor */
	s->v[i].r.fd = -1;
}

bool vg_scan_single(struct vg_scan *s, const char *dir, struct vg_region *r)
{
	vg_scan_init(s, dir);
	s->v = calloc(1, sizeof(*s->v));
	if (!s->v) {
		vg_region_close(r);
		return false;
	}
	s->n = 1;
	s->v[0].r = *r;
	s->v[0].control = r->kind == VG_REGION_CONTROL;
	s->v[0].admin = r->writable;
	vg_scan_label(&s->v[0], s->v[0].r.path);
	return true;
}

void vg_scan_close(struct vg_scan *s)
{
	for (size_t i = 0; i < s->n; i++)
		vg_region_close(&s->v[i].r);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}
