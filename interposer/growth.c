/* The process's per-site growth (interposer/growth.h): one struct vg_growth in static memory under its mutex (a leaf
 * of the lock order, docs/LOCKS.md), written by the sampler thread, copied by reports; the two tallies of live bytes
 * by (site, device) are the sampler thread's alone (the one of the previous point says what rose since). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interposer/base.h"
#include "interposer/device.h"
#include "interposer/growth.h"
#include "interposer/reporter_ask.h"
#include "interposer/shared.h"
#include "accounting/clock.h"
#include "accounting/growth.h"
#include "accounting/lockorder.h"
#include "accounting/quota.h"
#include "accounting/sites.h"
#include "accounting/table.h"
#include "report/log.h"
#include "report/report.h"
#include "report/symbolize.h"

static struct vg_growth vg_gr;                  /* window_ns 0: not started (no call site sampled yet) */
static pthread_mutex_t vg_gr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vg_growth_tally vg_gr_now, vg_gr_prev;

static void vg_gr_count(const struct vg_alloc *r, void *arg)
{
	if (r->site)
		vg_growth_tally_add(arg, r->site->id, r->dev, r->bytes);
}

/* The time between points as reports state it: a tenth of the window, or the sampler's period if that is longer. */
static uint64_t vg_gr_step_ms(void)
{
	uint64_t step = vg_gr.step_ns / VG_NS_PER_MS, poll = vg_cfg.device_poll_ms ? vg_cfg.device_poll_ms : 500;
	return step > poll ? step : poll;
}

/* Each device's forecast, from its usage now and its rate at the last point, for the exporter. */
static void vg_gr_publish(void)
{
	for (int d = 0; d < VG_MAX_DEVICES; d++) {
		struct vg_quota_stats q;
		uint64_t s = 0;
		if (!vg_device_info_cached(d) || !vg_quota_stats(d, &q))
			continue;
		bool has = vg_growth_forecast(q.used, q.limit, vg_growth_rate(&vg_gr, d), &s);
		vg_shared_publish_forecast(d, has, s);
	}
}

/* ---- the warning line of a growth report ---- */

struct vg_gr_find {
	uint32_t id;
	struct vg_report_site site;
	struct vg_report_pyframe py;
	char file[VG_REPORT_FRAME_STR], function[VG_REPORT_PY_FUNCTION_STR];   /* py's */
	uint64_t pc[VG_REPORT_TEXT_FRAMES];
};

static void vg_gr_find_site(struct vg_site *s, void *arg)
{
	struct vg_gr_find *f = arg;
	if (s->id != f->id)
		return;
	if (s->npy && s->py) {
		snprintf(f->file, sizeof(f->file), "%s", s->py[0].file ? s->py[0].file : "");
		snprintf(f->function, sizeof(f->function), "%s", s->py[0].function ? s->py[0].function : "");
		f->py.file = f->file;
		f->py.function = f->function;
		f->py.line = s->py[0].line;
		f->site.npython = 1;
	}
	for (uint32_t i = 0; i < s->nframes && i < VG_REPORT_TEXT_FRAMES; i++)
		f->pc[f->site.nframes++] = (uint64_t)(uintptr_t)s->frames[i];
}

/* "site 7 (train.py:42 in step)": its innermost Python frame, else its first frame past the CUDA runtime (the
 * frames are symbolized here, outside the sites' locks). */
static void vg_gr_site_name(struct vg_strbuf *out, uint32_t id)
{
	struct vg_gr_find f;
	struct vg_report_frame frames[VG_REPORT_TEXT_FRAMES];
	memset(&f, 0, sizeof(f));
	f.id = id;
	vg_sites_foreach(vg_gr_find_site, &f);
	f.site.id = id;
	f.site.python = f.site.npython ? &f.py : NULL;
	struct vg_report r = { .nsites = 1, .sites = &f.site }, names = { .nsites = 0 };   /* names: the frames' strings */
	if (!f.site.npython && f.site.nframes) {
		struct vg_symbolizer *sym = vg_symbolizer_new();
		for (uint32_t i = 0; i < f.site.nframes; i++)
			vg_symbolize(sym, &names, f.pc[i], &frames[i]);
		if (sym)
			vg_symbolizer_free(sym);
		f.site.frames = frames;
	} else {
		f.site.nframes = 0;
	}
	vg_report_site_name(out, &r, id);
	vg_report_free(&names);
}

/* One line when a site has kept growing for a window (a warning when VRAMGUARD_REPORT_ON has growth, else info),
 * then the report asked for. */
static void vg_gr_announce(const struct vg_growth_slot *s, double dev_rate, uint64_t now_ns)
{
	bool want = (vg_cfg.report_on & VG_REPORT_ON_GROWTH) != 0, report = want && vg_reporter_running();
	if (vg_cfg.log_level < (want ? VG_LOG_WARN : VG_LOG_INFO) && !report)
		return;                 /* nobody would read the line: no symbolizing for it */
	struct vg_strbuf name = { 0 };
	struct vg_quota_stats q;
	char rate[32], quota[32], grown[48], when[48], forecast[160];
	uint64_t secs = 0;
	vg_gr_site_name(&name, s->site);
	vg_report_duration((now_ns > s->growing_since_ns ? now_ns - s->growing_since_ns : 0) / VG_NS_PER_SEC, grown,
			   sizeof(grown));
	vg_format_bytes((uint64_t)(s->rate * 3600), rate, sizeof(rate));
	if (!vg_quota_stats(s->dev, &q) || !vg_growth_forecast(q.used, q.limit, dev_rate, &secs)) {
		snprintf(forecast, sizeof(forecast), "GPU %d has no quota, so no forecast", s->dev);
	} else {
		vg_report_duration(secs, when, sizeof(when));
		snprintf(forecast, sizeof(forecast), "at the current rate its quota (%s) is reached %s%s",
			 vg_format_bytes(q.limit, quota, sizeof(quota)), secs ? "in " : "already", secs ? when : "");
	}
	vg_log(want ? VG_LOG_WARN : VG_LOG_INFO, "GPU %d: call %s has kept growing for %s, by %s/h; %s; %s", s->dev,
	       name.data && !name.failed ? name.data : "site ?", grown, rate, forecast,
	       report ? "a report follows (reason growth): free what that site keeps, or raise the quota in time"
	       : vg_cfg.report_dest == VG_REPORT_OFF ? "no report (VRAMGUARD_REPORT=off)"
	       : !want ? "VRAMGUARD_REPORT_ON=growth writes a report naming its frames"
		       : "no report (no reporter thread in this process)");
	vg_strbuf_free(&name);
	if (report)     /* after the line: the report comes after it on stderr too */
		vg_reporter_ask(VG_ASK_GROWTH);
}

/* ---- the sampler's round ---- */

static void vg_gr_point(uint64_t now)
{
	struct vg_growth_cand c[VG_GROWTH_CANDIDATES];
	struct vg_growth_slot fastest;
	vg_growth_tally_clear(&vg_gr_now);
	vg_table_foreach(&vg_ptrs, vg_gr_count, &vg_gr_now);
	vg_table_foreach(&vg_arrays, vg_gr_count, &vg_gr_now);
	vg_table_foreach(&vg_vmm, vg_gr_count, &vg_gr_now);
	if (vg_gr_now.failed)           /* out of memory: a point would say wrong things; the next round tries again */
		return;
	size_t n = vg_growth_candidates(&vg_gr, &vg_gr_now, &vg_gr_prev, c);
	vg_lock(&vg_gr_lock, VG_RANK_GROWTH);
	vg_growth_point(&vg_gr, now, c, n);
	int best = vg_growth_report_due(&vg_gr, now);
	double dev_rate = 0;
	if (best >= 0) {
		fastest = vg_gr.slot[best];
		dev_rate = vg_growth_rate(&vg_gr, fastest.dev);
	}
	vg_unlock(&vg_gr_lock, VG_RANK_GROWTH);
	struct vg_growth_tally t = vg_gr_prev;
	vg_gr_prev = vg_gr_now;
	vg_gr_now = t;
	if (best >= 0)
		vg_gr_announce(&fastest, dev_rate, now);
}

void vg_growth_sample(void)
{
	if (vg_sites_depth() <= 0)      /* no call sites: nothing to follow */
		return;
	uint64_t now = vg_clock_ns(CLOCK_REALTIME);
	if (!vg_gr.window_ns) {
		vg_lock(&vg_gr_lock, VG_RANK_GROWTH);
		vg_growth_init(&vg_gr, (uint64_t)vg_cfg.growth_window_s * VG_NS_PER_SEC);
		vg_unlock(&vg_gr_lock, VG_RANK_GROWTH);
	}
	if (vg_growth_due(&vg_gr, now))
		vg_gr_point(now);
	vg_gr_publish();
}

/* ---- reports ---- */

static uint64_t vg_gr_last_live(int i)
{
	return vg_gr.npoints ? vg_gr.slot[i].live[(vg_gr.npoints - 1) % VG_GROWTH_POINTS] : 0;
}

/* Growing first, fastest first; then by live bytes now. */
static bool vg_gr_before(int a, int b)
{
	const struct vg_growth_slot *x = &vg_gr.slot[a], *y = &vg_gr.slot[b];
	if (x->growing != y->growing)
		return x->growing;
	if (x->rate != y->rate)
		return x->rate > y->rate;
	return vg_gr_last_live(a) > vg_gr_last_live(b);
}

/* One device's followed sites, their series, its rate and its forecast (from the report's own figures). */
static int vg_gr_report_device(struct vg_report_device *o)
{
	int idx[VG_GROWTH_SITES], n = 0;
	for (int i = 0; i < VG_GROWTH_SITES; i++) {
		if (!vg_gr.slot[i].site || vg_gr.slot[i].dev != o->ordinal)
			continue;
		int k = n++;
		for (; k > 0 && vg_gr_before(i, idx[k - 1]); k--)
			idx[k] = idx[k - 1];
		idx[k] = i;
	}
	if (!n)
		return 0;
	o->growth_sites = calloc((size_t)n, sizeof(*o->growth_sites));
	if (!o->growth_sites)
		return -ENOMEM;
	double rate = vg_growth_rate(&vg_gr, o->ordinal);
	o->growth_set = 1;
	o->growth_window_ms = vg_gr.window_ns / VG_NS_PER_MS;
	o->growth_step_ms = vg_gr_step_ms();
	o->growth_bytes_per_hour = (uint64_t)(rate * 3600);
	o->forecast_set = vg_growth_forecast(o->used_bytes, o->quota_set ? o->quota_bytes : 0, rate, &o->forecast_s);
	for (int k = 0; k < n; k++) {
		const struct vg_growth_slot *s = &vg_gr.slot[idx[k]];
		struct vg_report_growth_site *g = &o->growth_sites[o->ngrowth_sites++];
		uint64_t t[VG_GROWTH_POINTS], v[VG_GROWTH_POINTS];
		g->site = s->site;
		g->growing = g->rate_set = s->growing;
		g->bytes_per_hour = (uint64_t)(s->rate * 3600);
		g->growing_since_ns = s->growing ? s->growing_since_ns : 0;
		size_t np = vg_growth_series(&vg_gr, idx[k], t, v);
		g->points = np ? calloc(np, sizeof(*g->points)) : NULL;
		for (size_t i = 0; g->points && i < np; i++)
			g->points[i] = (struct vg_report_growth_point){ t[i], v[i] };
		g->npoints = g->points ? np : 0;
		if (np && !g->points)
			return -ENOMEM;
	}
	return 0;
}

int vg_growth_report(struct vg_report *r)
{
	int failed = 0;
	vg_lock(&vg_gr_lock, VG_RANK_GROWTH);
	for (size_t i = 0; vg_gr.window_ns && r->devices && i < r->ndevices; i++)
		failed |= vg_gr_report_device(&r->devices[i]) != 0;
	for (size_t i = 0; vg_gr.window_ns && r->sites && i < r->nsites; i++) {
		double rate = 0;
		for (int k = 0; k < VG_GROWTH_SITES; k++)
			if (vg_gr.slot[k].site == r->sites[i].id && vg_gr.slot[k].growing)
				rate += vg_gr.slot[k].rate;
		r->sites[i].growth_set = rate > 0;
		r->sites[i].growth_bytes_per_hour = (uint64_t)(rate * 3600);
	}
	vg_unlock(&vg_gr_lock, VG_RANK_GROWTH);
	return failed ? -ENOMEM : 0;
}

void vg_growth_atfork_child(void)
{
	pthread_mutex_init(&vg_gr_lock, NULL);
	if (vg_gr.window_ns)
		memset(&vg_gr, 0, sizeof(vg_gr));
	/* The tallies' memory is the parent's copy: forgotten, not freed (the sampler that owned it is not here). */
	memset(&vg_gr_now, 0, sizeof(vg_gr_now));
	memset(&vg_gr_prev, 0, sizeof(vg_gr_prev));
}
