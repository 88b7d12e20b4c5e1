/* Build a report (report/report.h) from the live tables: devices, call sites, the largest live allocations and
 * streams. Runs on the reporter thread or the exiting thread, never in a signal handler; allocates freely. The
 * view is consistent per table shard, not across the process: allocations made while it runs may or may not
 * appear. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "interposer/base.h"
#include "interposer/compute.h"
#include "interposer/device.h"
#include "interposer/devmem.h"
#include "interposer/growth.h"
#include "interposer/snapshot.h"
#include "interposer/tables.h"
#include "interposer/timeline.h"
#include "accounting/clock.h"
#include "accounting/quota.h"
#include "accounting/region.h"
#include "accounting/sites.h"
#include "accounting/table.h"
#include "report/report.h"
#include "report/symbolize.h"

/* Room for one more element in a growable array (doubling from first); false, and *failed set, if memory is
 * short: the report then lists what it has. */
static bool vg_room(void *vp, size_t n, size_t *cap, size_t elem, size_t first, int *failed)
{
	void **v = vp;
	if (*failed)
		return false;
	if (n < *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : first;
	void *nv = realloc(*v, ncap * elem);
	if (!nv) {
		*failed = 1;
		return false;
	}
	*v = nv;
	*cap = ncap;
	return true;
}

/* ---- allocations ---- */

/* Each site's live allocations, counted in the same walk (a free does not touch its site). */
struct vg_site_live {
	uint64_t count, bytes;
};

struct vg_alloc_list {
	struct vg_report_alloc *v;
	size_t n, cap;
	uint64_t live;
	int failed;
	struct vg_site_live *sites;     /* indexed by site id, nsites entries (sites made during the walk: none) */
	uint32_t nsites;
};

static void vg_collect_alloc(const struct vg_alloc *r, void *arg)
{
	struct vg_alloc_list *l = arg;
	l->live++;
	if (r->site && r->site->id < l->nsites) {
		l->sites[r->site->id].count++;
		l->sites[r->site->id].bytes += r->bytes;
	}
	if (!vg_room(&l->v, l->n, &l->cap, sizeof(l->v[0]), 1024, &l->failed))
		return;
	struct vg_report_alloc *a = &l->v[l->n++];
	memset(a, 0, sizeof(*a));
	a->address = r->key;
	a->bytes = r->bytes;
	a->device = r->dev;
	snprintf(a->api, sizeof(a->api), "%s", r->hook < VG_HOOK_COUNT ? vg_hook_names[r->hook] : "?");
	a->site = r->site ? r->site->id : 0;
	a->thread = r->tid;
	a->time_ns = r->time_ns;
}

static int vg_cmp_alloc(const void *a, const void *b)
{
	const struct vg_report_alloc *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : (x->address > y->address) - (x->address < y->address);
}

/* ---- sites ---- */

struct vg_site_list {
	struct vg_site **v;
	size_t n, cap;
	int failed;
};

static void vg_collect_site(struct vg_site *s, void *arg)
{
	struct vg_site_list *l = arg;
	if (!vg_room(&l->v, l->n, &l->cap, sizeof(l->v[0]), 256, &l->failed))
		return;
	l->v[l->n++] = s;
}

static int vg_cmp_site(const void *a, const void *b)
{
	const struct vg_report_site *x = a, *y = b;
	if (x->live_bytes != y->live_bytes)
		return x->live_bytes < y->live_bytes ? 1 : -1;
	if (x->total_bytes != y->total_bytes)
		return x->total_bytes < y->total_bytes ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

/* ---- streams ---- */

/* Live streams are copied out under the table locks, then queried with no lock held (a driver call). */
struct vg_stream_ref {
	uint64_t handle;
	uint32_t site;
};

struct vg_stream_refs {
	struct vg_stream_ref *v;
	size_t n, cap;
	int failed;
};

static void vg_collect_stream(const struct vg_alloc *r, void *arg)
{
	struct vg_stream_refs *l = arg;
	if (!vg_room(&l->v, l->n, &l->cap, sizeof(l->v[0]), 64, &l->failed))
		return;
	l->v[l->n].handle = r->key;
	l->v[l->n++].site = r->site ? r->site->id : 0;
}

/* Group by creation site, querying each stream without blocking. */
static int vg_group_streams(const struct vg_stream_refs *refs, struct vg_report *r)
{
	r->stream_live = calloc(refs->n ? refs->n : 1, sizeof(*r->stream_live));
	if (!r->stream_live)
		return -ENOMEM;
	for (size_t k = 0; k < refs->n; k++) {
		size_t i;
		for (i = 0; i < r->nstream_live; i++)
			if (r->stream_live[i].create_site == refs->v[k].site)
				break;
		if (i == r->nstream_live)
			r->stream_live[r->nstream_live++].create_site = refs->v[k].site;
		r->stream_live[i].count++;
		int st = vg_stream_state((CUstream)(uintptr_t)refs->v[k].handle);
		if (st == 1)
			r->stream_live[i].pending++;
		else if (st == -1)
			r->stream_live[i].capturing++;
	}
	return 0;
}

struct vg_event_scan {
	struct vg_report_stream_event *v;
	size_t n, cap;
	struct vg_site **sites;         /* destroy sites, which may have no allocations of their own */
	int failed;
};

static void vg_collect_event(const struct vg_alloc *r, void *arg)
{
	struct vg_event_scan *l = arg;
	if (!vg_room(&l->v, l->n, &l->cap, sizeof(l->v[0]), 16, &l->failed))
		return;
	struct vg_report_stream_event *e = &l->v[l->n++];
	e->create_site = (uint32_t)(r->key >> 32);
	e->destroy_site = (uint32_t)r->key;
	e->count = r->bytes;
	e->synchronized = (r->flags & VG_ALLOC_SYNCED) != 0;
}

/* A site belongs in the report if it allocated, or a stream event or live stream points at it. */
static bool vg_site_wanted(const struct vg_site *s, const struct vg_report *r)
{
	if (atomic_load(&s->total_allocs) > 0)
		return true;
	for (size_t i = 0; i < r->nstream_events; i++)
		if (r->stream_events[i].create_site == s->id || r->stream_events[i].destroy_site == s->id)
			return true;
	for (size_t i = 0; i < r->nstream_live; i++)
		if (r->stream_live[i].create_site == s->id)
			return true;
	return false;
}

/* ---- modules ---- */

/* Every object the sites' frames name, once, with its load base and build ID (read from its notes in memory: no
 * file is opened), so that `vramguard report --lines` can find its debug information, here or elsewhere. A
 * report has tens of modules: a linear search per frame, and a one-entry cache for runs of frames in one. */
static int vg_collect_modules(struct vg_report *r)
{
	size_t cap = 0, last = SIZE_MAX;
	int failed = 0;
	for (size_t i = 0; i < r->nsites; i++) {
		const struct vg_report_site *s = &r->sites[i];
		for (uint32_t f = 0; s->frames && f < s->nframes; f++) {
			const struct vg_report_frame *fr = &s->frames[f];
			if (!fr->module[0])
				continue;
			if (last < r->nmodules && strcmp(r->modules[last].path, fr->module) == 0)
				continue;
			size_t k;
			for (k = 0; k < r->nmodules; k++)
				if (strcmp(r->modules[k].path, fr->module) == 0)
					break;
			last = k;
			if (k < r->nmodules)
				continue;
			if (!vg_room(&r->modules, r->nmodules, &cap, sizeof(r->modules[0]), 16, &failed))
				return -ENOMEM;
			struct vg_report_module *m = &r->modules[r->nmodules++];
			memset(m, 0, sizeof(*m));
			snprintf(m->path, sizeof(m->path), "%s", fr->module);
			m->base = fr->address - fr->module_offset;
			vg_symbolize_build_id(m->base, fr->address - 1, m->build_id, sizeof(m->build_id));
		}
	}
	return 0;
}

/* ---- the report ---- */

static const char *vg_driver_state(void)
{
	int n = 0;
	if (!vg_real.cuDeviceGetCount)
		return "unknown";
	CUresult rc = vg_real.cuDeviceGetCount(&n);
	return rc == CUDA_SUCCESS ? "alive" : rc == CUDA_ERROR_DEINITIALIZED ? "deinitialized" : "unknown";
}

/* The report's heading: who, where, when, under which settings. */
static void vg_snapshot_header(struct vg_report *r, const char *reason, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->sequence = seq;
	r->pid = (int)getpid();
	r->time_ns = vg_clock_ns(CLOCK_REALTIME);
	vg_proc_cmdline(0, false, r->command, sizeof(r->command));
	if (gethostname(r->hostname, sizeof(r->hostname) - 1) != 0)
		r->hostname[0] = '\0';
	snprintf(r->version, sizeof(r->version), "%s", VG_VERSION);
	snprintf(r->driver, sizeof(r->driver), "%s", vg_driver_state());
	r->backtrace_depth = vg_sites_depth();
	snprintf(r->count, sizeof(r->count), "%s", vg_count_device() ? "device" : "allocations");
	if (vg_cfg.report_format == VG_FORMAT_TEXT)
		snprintf(r->json_hint, sizeof(r->json_hint),
			 "VRAMGUARD_REPORT_FORMAT=json gives every call site and the largest allocations "
			 "(docs/report-format.md)");
}

/* One device's figures: the quota in force (also while the device's size could not be read and nothing is cached),
 * its usage, the device counting parts, and its timeline ending at the report's time. 0, or -ENOMEM (no timeline). */
static int vg_snapshot_device(struct vg_report_device *o, int d, const struct vg_quota_stats *q,
			      const struct vg_device_info *di, uint64_t now_ns)
{
	o->ordinal = d;
	if (di) {
		snprintf(o->uuid, sizeof(o->uuid), "%s", di->uuid);
		o->total_bytes = di->total;
	}
	o->quota_set = q->limit != VG_NO_LIMIT;
	o->quota_bytes = o->quota_set ? q->limit : 0;
	o->soft_set = q->soft != VG_NO_LIMIT;
	o->soft_bytes = o->soft_set ? q->soft : 0;
	if (o->soft_set && di && di->soft_source)
		snprintf(o->soft_source, sizeof(o->soft_source), "%s", di->soft_source);
	o->used_bytes = q->used;
	o->peak_bytes = q->peak;
	o->allocs = q->allocs;
	o->frees = q->frees;
	o->denied_count = q->denied_count;
	o->denied_bytes = q->denied_bytes;
	o->largest_bytes = q->largest;
	o->allocated_bytes = q->allocated;
	if (vg_count_device()) {
		vg_devmem_pool_figures(d, &o->pool_reserved_bytes, &o->pool_live_bytes);
		o->graph_bytes = vg_devmem_graph(d);
		o->driver_bytes = vg_devmem_driver_seen(d);
		uint64_t charged = vg_devmem_driver(d);
		o->driver_headroom_bytes = charged > o->driver_bytes ? charged - o->driver_bytes : 0;
		o->driver_measured = atomic_load(&vg_devmem[d].nvml_status) == 0;
	}
	if (di && atomic_load(&di->driver_limit) != VG_NO_LIMIT) {
		o->driver_limit_set = 1;
		o->driver_limit_bytes = atomic_load(&di->driver_limit);
	}
	struct vg_compute_figures cf;
	if (vg_compute_figures(d, &cf)) {
		o->compute_set = cf.share_pm != 0;
		o->compute_limit_pm = cf.share_pm;
		if (cf.share_pm && cf.source)
			snprintf(o->compute_source, sizeof(o->compute_source), "%s", cf.source);
		o->gpu_time_ns = cf.used_ns;
		o->compute_recent_pm = cf.recent_pm;
		o->compute_recent_s = cf.recent_s;
		o->compute_waits = cf.waits;
		o->compute_waited_ns = cf.waited_ns;
	}
	return vg_timelines_report(d, now_ns, o);
}

/* Devices: every ordinal resolved or used, with its timeline (ending now) if it was used. 0, or -ENOMEM. */
static int vg_snapshot_devices(struct vg_report *r)
{
	int failed = 0;
	r->devices = calloc(VG_MAX_DEVICES, sizeof(*r->devices));
	if (!r->devices)
		return -ENOMEM;
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		struct vg_quota_stats q;
		vg_quota_stats(d, &q);
		const struct vg_device_info *di = vg_device_info_cached(d);
		if (!di && q.allocs == 0 && q.used == 0 && q.denied_count == 0 && q.limit == VG_NO_LIMIT)
			continue;
		if (vg_snapshot_device(&r->devices[r->ndevices++], d, &q, di, r->time_ns) != 0)
			failed = 1;
	}
	return failed ? -ENOMEM : 0;
}

/* The largest live allocations, and each site's live count and bytes (in live[nlive], by site id). 0 or -ENOMEM. */
static int vg_snapshot_allocs(struct vg_report *r, struct vg_site_live *live, uint32_t nlive)
{
	struct vg_alloc_list al = { 0 };
	al.failed = !live;
	al.sites = live;
	al.nsites = nlive;
	vg_table_foreach(&vg_ptrs, vg_collect_alloc, &al);
	vg_table_foreach(&vg_arrays, vg_collect_alloc, &al);
	vg_table_foreach(&vg_vmm, vg_collect_alloc, &al);
	if (al.n)
		qsort(al.v, al.n, sizeof(al.v[0]), vg_cmp_alloc);
	r->allocs_live = al.live;
	r->nallocs = al.n < VG_REPORT_MAX_ALLOCS ? al.n : VG_REPORT_MAX_ALLOCS;
	r->allocs = al.v;
	return al.failed ? -ENOMEM : 0;
}

/* Streams: created and destroyed, destroyed with work queued, and the live ones by creation site. 0 or -ENOMEM. */
static int vg_snapshot_streams(struct vg_report *r)
{
	r->streams_created = atomic_load(&vg_streams_created);
	r->streams_destroyed = atomic_load(&vg_streams_destroyed);
	struct vg_event_scan ev = { 0 };
	vg_table_foreach(&vg_stream_events, vg_collect_event, &ev);
	r->stream_events = ev.v;
	r->nstream_events = ev.n;
	struct vg_stream_refs sl = { 0 };
	vg_table_foreach(&vg_streams, vg_collect_stream, &sl);
	if (vg_group_streams(&sl, r) != 0)
		sl.failed = 1;
	free(sl.v);
	return ev.failed || sl.failed ? -ENOMEM : 0;
}

/* s kept in r's strings, cut at size - 1 bytes; "" where memory is short. */
static const char *vg_snapshot_string(struct vg_report *r, const char *s, size_t size)
{
	const char *kept = s && s[0] ? vg_report_string(r, s, size) : NULL;
	return kept ? kept : "";
}

/* One call site as the report shows it, its frames symbolized with sym (NULL: addresses only), their strings kept
 * in r's. */
static void vg_snapshot_site(struct vg_report *r, struct vg_report_site *o, const struct vg_site *s,
			     const struct vg_site_live *live, uint32_t nlive, struct vg_symbolizer *sym)
{
	o->id = s->id;
	snprintf(o->api, sizeof(o->api), "%s", s->api < VG_HOOK_COUNT ? vg_hook_names[s->api] : "?");
	if (s->id < nlive) {
		o->live_count = live[s->id].count;
		o->live_bytes = live[s->id].bytes;
	}
	o->total_allocs = atomic_load(&s->total_allocs);
	o->total_bytes = atomic_load(&s->total_bytes);
	uint32_t np = s->npy < VG_REPORT_MAX_PYFRAMES ? s->npy : VG_REPORT_MAX_PYFRAMES;
	o->python = np ? calloc(np, sizeof(*o->python)) : NULL;
	for (uint32_t f = 0; o->python && f < np; f++) {
		o->python[f].file = vg_snapshot_string(r, s->py[f].file, VG_REPORT_FRAME_STR);
		o->python[f].function = vg_snapshot_string(r, s->py[f].function, VG_REPORT_PY_FUNCTION_STR);
		o->python[f].line = s->py[f].line;
		o->npython = f + 1;
	}
	uint32_t nf = s->nframes < VG_REPORT_MAX_FRAMES ? s->nframes : VG_REPORT_MAX_FRAMES;
	o->frames = calloc(nf ? nf : 1, sizeof(*o->frames));
	if (!o->frames)
		return;
	o->nframes = nf;
	for (uint32_t f = 0; f < nf; f++) {
		if (sym) {
			vg_symbolize(sym, r, (uint64_t)(uintptr_t)s->frames[f], &o->frames[f]);
		} else {
			o->frames[f].address = (uint64_t)(uintptr_t)s->frames[f];
			o->frames[f].module = o->frames[f].symbol = "";
		}
	}
}

/* Sites, symbolized now: those the report points at (vg_site_wanted), largest live bytes first. 0 or -ENOMEM. */
static int vg_snapshot_sites(struct vg_report *r, const struct vg_site_live *live, uint32_t nlive)
{
	struct vg_site_list sites = { 0 };
	vg_sites_foreach(vg_collect_site, &sites);
	r->sites = calloc(sites.n ? sites.n : 1, sizeof(*r->sites));
	struct vg_symbolizer *sym = vg_symbolizer_new();
	for (size_t i = 0; r->sites && i < sites.n; i++) {
		struct vg_site *s = sites.v[i];
		if (vg_site_wanted(s, r))
			vg_snapshot_site(r, &r->sites[r->nsites++], s, live, nlive, sym);
	}
	if (sym)
		vg_symbolizer_free(sym);
	free(sites.v);
	if (r->nsites)
		qsort(r->sites, r->nsites, sizeof(r->sites[0]), vg_cmp_site);
	return sites.failed ? -ENOMEM : 0;
}

int vg_snapshot(struct vg_report *r, const char *reason, uint64_t seq)
{
	vg_snapshot_header(r, reason, seq);
	int dev_rc = vg_snapshot_devices(r);
	if (dev_rc != 0 && !r->devices)
		return dev_rc;
	uint32_t nlive = vg_sites_count() + 1;
	struct vg_site_live *live = calloc(nlive, sizeof(*live));
	if (!live)
		nlive = 0;
	int failed = dev_rc != 0;
	failed |= vg_snapshot_allocs(r, live, nlive) != 0;
	failed |= vg_snapshot_streams(r) != 0;
	failed |= vg_snapshot_sites(r, live, nlive) != 0;
	free(live);
	failed |= vg_growth_report(r) != 0;
	failed |= vg_collect_modules(r) != 0;
	return failed ? -ENOMEM : 0;
}
