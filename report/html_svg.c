/* The SVG charts of the HTML report (report/html_svg.h): the usage timeline and the icicle graph of live bytes. */
#include "report/html_svg.h"
#include "report/html_out.h"
#include "report/flame.h"
#include "config/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- the usage timeline ---- */

#define TL_W 960        /* viewBox */
#define TL_H 260
#define TL_L 82         /* plot area */
#define TL_R 940
#define TL_T 16
#define TL_B 222


static uint64_t vg_svg_time_step_ms(uint64_t span_ms)
{
	static const uint64_t s[] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000,
				      60000, 120000, 300000, 600000, 900000, 1800000, 3600000, 7200000, 10800000,
				      21600000, 43200000, 86400000 };
	size_t i;
	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (span_ms / s[i] <= 8)
			return s[i];
	return 86400000ull * (span_ms / 86400000 / 8 + 1);
}

/* A period in plain units: "500 ms", "10 s", "2.5 min", "3 h". */
static void vg_svg_period(struct vg_strbuf *b, uint64_t ms)
{
	if (ms < 1000)
		vg_strbuf_printf(b, "%" PRIu64 " ms", ms);
	else if (ms < 120000)
		vg_strbuf_printf(b, ms % 1000 ? "%.1f s" : "%.0f s", ms / 1000.0);
	else if (ms < 7200000)
		vg_strbuf_printf(b, ms % 60000 ? "%.1f min" : "%.0f min", ms / 60000.0);
	else
		vg_strbuf_printf(b, ms % 3600000 ? "%.1f h" : "%.0f h", ms / 3600000.0);
}

/* A time since the axis's start: "0", "+500 ms", "+10 s", "+2.5 min", "+3 h". */
static void vg_svg_duration(struct vg_strbuf *b, uint64_t ms)
{
	if (ms == 0) {
		vg_strbuf_str(b, "0");
		return;
	}
	vg_strbuf_str(b, "+");
	vg_svg_period(b, ms);
}

struct vg_svg_scale {
	uint64_t t0, span, top;
	/* the byte axis: every tick in one unit, 1024^unit bytes (B to PiB), every step100 hundredths of it */
	unsigned unit;
	uint64_t step100, nsteps;
};

static const char *const vg_svg_units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };

/* The byte axis up to max (at most 2^60): the unit max reaches, and the smallest step of 1, 2 or 5 times a power of
 * ten of that unit (0.2 GiB, 50 MiB, 1 KiB; whole bytes in B) that reaches max in at most 5 steps. */
static void vg_svg_yaxis(struct vg_svg_scale *s, uint64_t max)
{
	static const uint64_t m[] = { 10, 20, 50 };
	unsigned __int128 unit, need, st;
	uint64_t p;
	size_t i;

	s->unit = 0, s->step100 = 100, s->nsteps = 1, s->top = max;        /* (the loop below always sets them) */
	while (s->unit + 1 < sizeof(vg_svg_units) / sizeof(vg_svg_units[0]) && max >= 1ull << (10 * (s->unit + 1)))
		s->unit++;
	unit = (unsigned __int128)1 << (10 * s->unit);
	for (p = 1; p <= 1000; p *= 10)         /* max is below 1100 units: a step of 500 units reaches it */
		for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
			st = (unsigned __int128)m[i] * p * unit;        /* the step in hundredths of a byte */
			need = ((unsigned __int128)max * 100 + st - 1) / st;
			if ((s->unit == 0 && m[i] * p < 100) || need > 5)
				continue;
			s->step100 = m[i] * p;
			s->nsteps = need ? (uint64_t)need : 1;
			s->top = (uint64_t)((s->nsteps * st + 99) / 100);
			return;
		}
}

/* Tick k of the byte axis: "0 GiB", "0.5 GiB", "1.0 GiB" (as many decimals as the step has). */
static void vg_svg_ytick(struct vg_strbuf *b, const struct vg_svg_scale *s, uint64_t k)
{
	uint64_t h = k * s->step100;
	const char *u = vg_svg_units[s->unit];
	if (!h)
		vg_strbuf_printf(b, "0 %s", u);
	else if (s->step100 % 100 == 0)
		vg_strbuf_printf(b, "%" PRIu64 " %s", h / 100, u);
	else
		vg_strbuf_printf(b, "%" PRIu64 ".%" PRIu64 " %s", h / 100, h % 100 / 10, u);
}

static double vg_svg_x(const struct vg_svg_scale *s, uint64_t t)
{
	if (t < s->t0)
		t = s->t0;
	return TL_L + (double)(t - s->t0) * (TL_R - TL_L) / (double)s->span;
}

static double vg_svg_y(const struct vg_svg_scale *s, uint64_t v)
{
	return TL_B - (double)v * (TL_B - TL_T) / (double)s->top;
}

static void vg_svg_hline(struct vg_strbuf *b, const struct vg_svg_scale *s, uint64_t v, const char *cls,
			 const char *what)
{
	double y = vg_svg_y(s, v);
	vg_strbuf_printf(b, "<g class=\"%s\"><title>%s ", cls, what);
	vg_html_bytes(b, v);
	vg_strbuf_printf(b, "</title><line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
			 "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s ", TL_L, TL_R, y, y, TL_R - 4, y - 4, what);
	vg_html_bytes(b, v);
	vg_strbuf_str(b, "</text></g>\n");
}

/* The scale of a device's timeline: its span, and a top a little above the highest figure drawn (usage, peaks, the
 * quota and the soft limit), a whole number of the byte axis's steps. */
static void vg_svg_scale_of(const struct vg_report_device *d, size_t n, struct vg_svg_scale *s)
{
	const struct vg_report_timeline_point *p = d->timeline_points;
	uint64_t max = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i].peak_bytes > max)
			max = p[i].peak_bytes;
		if (p[i].used_bytes > max)
			max = p[i].used_bytes;
	}
	if (d->quota_set && d->quota_bytes > max)
		max = d->quota_bytes;
	if (d->soft_set && d->soft_bytes > max)
		max = d->soft_bytes;
	if (!max)
		max = 1;
	if (max > (1ull << 60))         /* a hand-made report: keep the arithmetic below from wrapping */
		max = 1ull << 60;
	vg_svg_yaxis(s, max + max / 20);
	s->t0 = p[0].time_ns;
	s->span = p[n - 1].time_ns > s->t0 ? p[n - 1].time_ns - s->t0 : 1000000000ull;
}

/* The grid and ticks of both axes (bytes every step, time since the first point), and what came before since_ns
 * shaded. */
static void vg_svg_axes(struct vg_strbuf *b, const struct vg_svg_scale *s, uint64_t since_ns,
			const char *since_label)
{
	uint64_t k, t, step;
	char clock[16];

	/* y axis: bytes */
	for (k = 0; k <= s->nsteps; k++) {
		double y = TL_B - (double)k * (TL_B - TL_T) / (double)s->nsteps;
		vg_strbuf_printf(b, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
				 "<text class=\"ytick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", TL_L, TL_R, y, y,
				 TL_L - 6, y + 4);
		vg_svg_ytick(b, s, k);
		vg_strbuf_str(b, "</text>\n");
	}
	/* x axis: time since the first point */
	step = vg_svg_time_step_ms(s->span / 1000000);
	for (t = 0; t <= s->span / 1000000; t += step) {       /* at most 9 ticks */
		double x = vg_svg_x(s, s->t0 + t * 1000000);
		vg_strbuf_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
				 "<text class=\"xtick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x, x, TL_T, TL_B + 4,
				 x, TL_B + 16);
		vg_svg_duration(b, t);
		vg_strbuf_str(b, "</text>\n");
	}
	vg_report_clock(s->t0, clock, sizeof(clock));
	vg_strbuf_printf(b, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since %s UTC</text>\n",
			 (TL_L + TL_R) / 2, TL_H - 4, clock);
	if (since_ns > s->t0) {
		double x = vg_svg_x(s, since_ns);
		vg_strbuf_printf(b, "<g class=\"before\"><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>"
				 "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/><text x=\"%.1f\" y=\"%d\">", TL_L, TL_T,
				 x - TL_L, TL_B - TL_T, x, x, TL_T, TL_B, x + 4, TL_T + 12);
		vg_html_esc(b, since_label ? since_label : "", 128);
		vg_strbuf_str(b, "</text></g>\n");
	}
}

/* The figures: interval peaks, usage, the quota and soft limit lines. */
static void vg_svg_usage(struct vg_strbuf *b, const struct vg_svg_scale *s, const struct vg_report_device *d,
			 size_t n)
{
	const struct vg_report_timeline_point *p = d->timeline_points;
	size_t i;

	/* the interval peaks as steps: a point's peak covers the interval that ends at it */
	vg_strbuf_printf(b, "<path class=\"peak\" d=\"M%.1f %d", vg_svg_x(s, p[0].time_ns), TL_B);
	for (i = 0; i < n; i++) {
		double y = vg_svg_y(s, p[i].peak_bytes);
		vg_strbuf_printf(b, " L%.1f %.1f L%.1f %.1f", vg_svg_x(s, i ? p[i - 1].time_ns : p[0].time_ns), y,
				 vg_svg_x(s, p[i].time_ns), y);
	}
	vg_strbuf_printf(b, " L%.1f %d Z\"><title>interval peaks</title></path>\n", vg_svg_x(s, p[n - 1].time_ns), TL_B);
	vg_strbuf_str(b, "<polyline class=\"used\" points=\"");
	for (i = 0; i < n; i++)
		vg_strbuf_printf(b, "%s%.1f,%.1f", i ? " " : "", vg_svg_x(s, p[i].time_ns), vg_svg_y(s, p[i].used_bytes));
	vg_strbuf_str(b, "\"><title>used</title></polyline>\n");
	if (d->quota_set)
		vg_svg_hline(b, s, d->quota_bytes, "quota", "quota");
	if (d->soft_set)
		vg_svg_hline(b, s, d->soft_bytes, "soft", "soft limit");
}

/* A mark at each point whose interval saw denials; how many such intervals. */
static size_t vg_svg_denials(struct vg_strbuf *b, const struct vg_svg_scale *s, const struct vg_report_device *d,
			     size_t n)
{
	const struct vg_report_timeline_point *p = d->timeline_points;
	size_t i, ndenials = 0;
	char clock[16];

	for (i = 0; i < n; i++) {
		uint64_t c0 = i ? p[i - 1].denied_count : 0, b0 = i ? p[i - 1].denied_bytes : 0;
		double x = vg_svg_x(s, p[i].time_ns);
		if (p[i].denied_count <= c0)
			continue;
		ndenials++;
		vg_report_clock(p[i].time_ns, clock, sizeof(clock));
		vg_strbuf_printf(b, "<g class=\"denial\" data-denials=\"%" PRIu64 "\"><title>%" PRIu64 " %s (", 
				 p[i].denied_count - c0, p[i].denied_count - c0,
				 vg_plural(p[i].denied_count - c0, "denial", "denials"));
		vg_html_bytes(b, p[i].denied_bytes - b0);
		vg_strbuf_printf(b, " asked) by %s UTC</title><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
				 "<path d=\"M%.1f %d l-6 -10 h12 Z\"/></g>\n", clock, x, x, TL_T, TL_B, x, TL_T + 10);
	}
	return ndenials;
}

/* ---- the growth on the timeline (revision 5): when it started, and where it leads ---- */

/* Okabe and Ito's colours that the timeline uses for nothing else (usage: blue, peaks: light blue, quota: vermillion,
 * soft limit: orange, denials: reddish purple). */
#define TL_GSTART "#000000"     /* black: the growth started */
#define TL_PROJ "#009E73"       /* bluish green: the projection to the quota */
#define TL_PROJ_TEXT "#00734F"  /* its label, darker for contrast on white */
#define TL_QUOTA_LABEL 130      /* room for "quota 1000.00 MiB" at the quota line's right end (vg_svg_hline) */

/* The projection of a device's usage: from the last point (t1, u1) rising to the quota at t_end, the report's time
 * plus its forecast. on = 0 without a forecast, when the quota is reached already, or when the last point is at or
 * above it. */
struct vg_svg_proj {
	int on;
	uint64_t t1, u1, t_end, quota;
};

static void vg_svg_proj_of(const struct vg_report *r, const struct vg_report_device *d, size_t n,
			   struct vg_svg_proj *p)
{
	const struct vg_report_timeline_point *last = &d->timeline_points[n - 1];
	uint64_t from = r && r->time_ns > last->time_ns ? r->time_ns : last->time_ns;
	memset(p, 0, sizeof(*p));
	if (!d->forecast_set || !d->forecast_s || !d->quota_set || !d->growth_set || !d->growth_bytes_per_hour ||
	    last->used_bytes >= d->quota_bytes)
		return;
	p->on = 1;
	p->t1 = last->time_ns;
	p->u1 = last->used_bytes;
	p->quota = d->quota_bytes;
	p->t_end = d->forecast_s > (UINT64_MAX - from) / 1000000000u ? UINT64_MAX : from + d->forecast_s * 1000000000u;
}

/* The time axis made longer to show where the projection reaches the quota, up to twice the observed span. */
static void vg_svg_proj_extend(struct vg_svg_scale *s, const struct vg_svg_proj *p)
{
	uint64_t most = s->span <= UINT64_MAX - s->t0 - s->span ? 2 * s->span : UINT64_MAX - s->t0;   /* no wrap */
	if (!p->on || p->t_end <= s->t0 + s->span)
		return;
	s->span = p->t_end - s->t0 < most ? p->t_end - s->t0 : most;
}

/* The dashed line from the last point toward the quota, ending at the quota or at the axis's end, and its label. */
static void vg_svg_proj_draw(struct vg_strbuf *b, const struct vg_svg_scale *s, const struct vg_report_device *d,
			     const struct vg_svg_proj *p)
{
	uint64_t edge = s->t0 + s->span, t = p->t_end <= edge ? p->t_end : edge;
	double v = p->t_end <= edge ? (double)p->quota
		: p->u1 + (double)(p->quota - p->u1) * (double)(edge - p->t1) / (double)(p->t_end - p->t1);
	double x0 = vg_svg_x(s, p->t1), y0 = vg_svg_y(s, p->u1), x1 = vg_svg_x(s, t), y1 = vg_svg_y(s, (uint64_t)v);
	double qy = vg_svg_y(s, p->quota), ly = y1 - 6;
	char when[48];
	/* The label ends at the line's end, just above it (the line only falls to its left); above the quota's own
	 * label, at the right end of the quota line, when it would meet it there. */
	if (x1 - 4 > TL_R - TL_QUOTA_LABEL && y1 - qy < 16)
		ly = qy - 18 < TL_T + 12 ? TL_T + 12 : qy - 18;
	vg_report_duration(d->forecast_s, when, sizeof(when));
	vg_strbuf_printf(b, "<g class=\"proj\" data-forecast-s=\"%" PRIu64 "\" data-reaches=\"%s\"><title>at "
			 "this rate (+", d->forecast_s, p->t_end <= edge ? "quota" : "edge");
	vg_html_bytes(b, d->growth_bytes_per_hour);
	vg_strbuf_printf(b, "/h) the quota is reached in %s</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			 "y2=\"%.1f\" stroke=\"" TL_PROJ "\" stroke-width=\"1.8\" stroke-dasharray=\"8 4\"/>"
			 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"" TL_PROJ_TEXT "\">quota reached in "
			 "%s at this rate</text></g>\n", when, x0, y0, x1, y1, x1 - 4, ly, when);
}

/* A line where the device's growth started: the earliest growing_since of its growing sites, that site and its
 * rate in the hover title. Returns 1 if drawn. */
static int vg_svg_gstart(struct vg_strbuf *b, const struct vg_svg_scale *s, const struct vg_report *r,
			 const struct vg_report_device *d)
{
	const struct vg_report_growth_site *first = NULL;
	size_t growing = 0;
	for (size_t i = 0; d->growth_set && d->growth_sites && i < d->ngrowth_sites; i++) {
		const struct vg_report_growth_site *g = &d->growth_sites[i];
		if (!g->growing || !g->growing_since_ns)
			continue;
		growing++;
		if (!first || g->growing_since_ns < first->growing_since_ns)
			first = g;
	}
	if (!first || first->growing_since_ns > s->t0 + s->span)
		return 0;
	struct vg_strbuf name = { 0 };
	char clock[16];
	double x = vg_svg_x(s, first->growing_since_ns);
	if (r)
		vg_report_site_name(&name, r, first->site);
	vg_report_clock(first->growing_since_ns, clock, sizeof(clock));
	vg_strbuf_printf(b, "<g class=\"gstart\" data-site=\"%" PRIu32 "\"><title>growth started by %s UTC: ",
			 first->site, clock);
	vg_html_esc(b, name.data && !name.failed ? name.data : "", name.len);
	vg_strbuf_str(b, " +");
	vg_html_bytes(b, first->bytes_per_hour);
	vg_strbuf_printf(b, "/h%s", growing > 1 ? " (the first of " : "");
	if (growing > 1)
		vg_strbuf_printf(b, "%zu growing call sites)", growing);
	vg_strbuf_printf(b, "</title><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"" TL_GSTART "\" "
			 "stroke-width=\"1.2\"/><path d=\"M%.1f %d l-5 -7 l5 -7 l5 7 Z\" fill=\"" TL_GSTART "\"/></g>\n",
			 x, x, TL_T, TL_B, x, TL_B);
	vg_strbuf_free(&name);
	return 1;
}

/* The legend's entries for them. */
static void vg_svg_growth_legend(struct vg_strbuf *b, int gstart, const struct vg_svg_proj *p)
{
	if (gstart)
		vg_strbuf_str(b, " <span class=\"k\" style=\"background:" TL_GSTART "\"></span>growth started (black "
			      "line: hover for the call site)");
	if (p->on)
		vg_strbuf_str(b, " <span class=\"k\" style=\"background:" TL_PROJ "\"></span>projection at the growth "
			      "rate (green dashed line)");
}

void vg_html_timeline(struct vg_strbuf *b, const struct vg_report *r, const struct vg_report_device *d,
		      uint64_t since_ns, const char *since_label)
{
	size_t n = d->timeline_set && d->timeline_points ? d->ntimeline_points : 0, ndenials;
	struct vg_svg_scale s;
	struct vg_svg_proj proj;
	int gstart;

	if (!n) {
		vg_strbuf_str(b, "<p class=\"note\">No usage timeline for this device (a report before revision 2, or "
			      "the device was not used).</p>\n");
		return;
	}
	vg_svg_scale_of(d, n, &s);
	vg_svg_proj_of(r, d, n, &proj);
	vg_svg_proj_extend(&s, &proj);
	vg_strbuf_printf(b, "<svg class=\"timeline\" viewBox=\"0 0 %d %d\" role=\"img\" data-device=\"%d\" "
			 "data-points=\"%zu\"><title>GPU %d usage over time</title>\n", TL_W, TL_H, d->ordinal, n,
			 d->ordinal);
	vg_svg_axes(b, &s, since_ns, since_label);
	vg_svg_usage(b, &s, d, n);
	ndenials = vg_svg_denials(b, &s, d, n);
	gstart = vg_svg_gstart(b, &s, r, d);
	if (proj.on)
		vg_svg_proj_draw(b, &s, d, &proj);
	vg_strbuf_printf(b, "<line class=\"axisline\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
			 "<line class=\"axisline\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>\n</svg>\n",
			 TL_L, TL_R, TL_B, TL_B, TL_L, TL_L, TL_T, TL_B);
	vg_strbuf_str(b, "<p class=\"legend\"><span class=\"k used\"></span>used <span class=\"k peak\"></span>"
		      "highest usage within each interval");
	if (d->quota_set)
		vg_strbuf_str(b, " <span class=\"k quota\"></span>quota (dashed line)");
	if (d->soft_set)
		vg_strbuf_str(b, " <span class=\"k soft\"></span>soft limit (dotted line)");
	if (ndenials)
		vg_strbuf_printf(b, " <span class=\"k denial\"></span>denied allocations (marks: %zu %s)", ndenials,
				 vg_plural(ndenials, "interval", "intervals"));
	vg_svg_growth_legend(b, gstart, &proj);
	vg_strbuf_printf(b, "; <span class=\"hint\" title=\"The usage is recorded at least this often, and sooner when "
			 "it changes much. To cover a run of any length in little memory at most 128 points are kept: "
			 "when full, neighbours merge (keeping the highest peak) and the period doubles (%" PRIu32 " %s "
			 "in this run).\">usage recorded %zu %s, at least every ", d->timeline_compactions,
			 vg_plural(d->timeline_compactions, "time", "times"), n, vg_plural(n, "time", "times"));
	vg_svg_period(b, d->timeline_period_ms);
	vg_strbuf_str(b, "</span></p>\n");
}

/* ---- the growing call sites (revision 5) ---- */

#define GR_SHOWN 8      /* growing sites drawn per device: one colour each */

/* Okabe and Ito's colour-blind-safe palette, black last. */
static const char *const vg_svg_gr_colour[GR_SHOWN] = { "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
							 "#D55E00", "#F0E442", "#000000" };

/* The growing sites of d (at most GR_SHOWN, in the report's order: fastest first) into g; their scale in s: the
 * span of their points and a top above their highest live bytes. Returns how many, 0 when nothing grows. */
static size_t vg_svg_gr_pick(const struct vg_report_device *d, const struct vg_report_growth_site **g,
			     struct vg_svg_scale *s)
{
	size_t n = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0, max = 1;
	for (size_t i = 0; d->growth_set && d->growth_sites && i < d->ngrowth_sites && n < GR_SHOWN; i++) {
		const struct vg_report_growth_site *x = &d->growth_sites[i];
		if (!x->growing || !x->rate_set || !x->points || !x->npoints)
			continue;
		g[n++] = x;
		for (size_t k = 0; k < x->npoints; k++) {
			t0 = x->points[k].time_ns < t0 ? x->points[k].time_ns : t0;
			t1 = x->points[k].time_ns > t1 ? x->points[k].time_ns : t1;
			max = x->points[k].live_bytes > max ? x->points[k].live_bytes : max;
		}
	}
	if (max > (1ull << 60))         /* a hand-made report: keep the arithmetic from wrapping */
		max = 1ull << 60;
	vg_svg_yaxis(s, max + max / 20);
	s->t0 = t0;
	s->span = t1 > t0 ? t1 - t0 : 1000000000ull;
	return n;
}

void vg_html_growth(struct vg_strbuf *b, const struct vg_report *r, const struct vg_report_device *d)
{
	const struct vg_report_growth_site *g[GR_SHOWN];
	struct vg_svg_scale s;
	struct vg_strbuf name = { 0 };
	size_t n = vg_svg_gr_pick(d, g, &s);
	if (!n)
		return;
	vg_strbuf_printf(b, "<h3>GPU %d: growing call sites</h3>\n<svg class=\"timeline growth\" viewBox=\"0 0 %d %d\" "
			 "role=\"img\" data-device=\"%d\" data-growing=\"%zu\"><title>GPU %d: live bytes of the "
			 "growing call sites</title>\n", d->ordinal, TL_W, TL_H, d->ordinal, n, d->ordinal);
	vg_svg_axes(b, &s, 0, NULL);
	for (size_t i = 0; i < n; i++) {
		name.len = 0;
		vg_report_site_name(&name, r, g[i]->site);
		vg_strbuf_printf(b, "<polyline class=\"gsite\" data-site=\"%" PRIu32 "\" fill=\"none\" stroke=\"%s\" "
				 "stroke-width=\"1.3\" points=\"", g[i]->site, vg_svg_gr_colour[i]);
		for (size_t k = 0; k < g[i]->npoints; k++)
			vg_strbuf_printf(b, "%s%.1f,%.1f", k ? " " : "", vg_svg_x(&s, g[i]->points[k].time_ns),
					 vg_svg_y(&s, g[i]->points[k].live_bytes > s.top ? s.top : g[i]->points[k].live_bytes));
		vg_strbuf_str(b, "\"><title>");
		vg_html_esc(b, name.data ? name.data : "", name.len);
		vg_strbuf_str(b, ": +");
		vg_html_bytes(b, g[i]->bytes_per_hour);
		vg_strbuf_str(b, "/h</title></polyline>\n");
	}
	vg_strbuf_printf(b, "<line class=\"axisline\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
			 "<line class=\"axisline\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>\n</svg>\n<p class=\"legend "
			 "growth\">", TL_L, TL_R, TL_B, TL_B, TL_L, TL_L, TL_T, TL_B);
	for (size_t i = 0; i < n; i++) {
		name.len = 0;
		vg_report_site_name(&name, r, g[i]->site);
		vg_strbuf_printf(b, "<span class=\"k\" style=\"background:%s\"></span>", vg_svg_gr_colour[i]);
		vg_html_esc(b, name.data ? name.data : "", name.len);
		vg_strbuf_str(b, " +");
		vg_html_bytes(b, g[i]->bytes_per_hour);
		vg_strbuf_str(b, "/h ");
	}
	vg_strbuf_free(&name);
	if (d->forecast_set) {
		char t[48];
		vg_report_duration(d->forecast_s, t, sizeof(t));
		vg_strbuf_printf(b, "&mdash; at the current rate the quota is reached %s%s", d->forecast_s ? "in " : "already",
				 d->forecast_s ? t : "");
	} else if (!d->quota_set) {
		vg_strbuf_str(b, "&mdash; no quota, so no forecast");
	}
	vg_strbuf_str(b, "</p>\n");
}

/* ---- the icicle graph ---- */

#define IC_W 1200
#define IC_ROW 18

struct vg_ic_node {
	size_t label, label_len;        /* in the arena */
	size_t parent, child, next;     /* child / next: first child, next sibling (SIZE_MAX: none) */
	uint64_t bytes, count;
	uint32_t depth;
	int python, unresolved;         /* unresolved: a native frame without a name, drawn grey */
};

struct vg_ic {
	struct vg_ic_node *nodes;
	size_t n, cap;
	struct vg_strbuf arena;
	size_t *slot;                   /* (parent, label) -> node + 1 */
	size_t nslots;
	uint32_t maxdepth;
};

static uint64_t vg_ic_hash(size_t parent, const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ parent * 0x9e3779b97f4a7c15ull;
	while (n--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int vg_ic_rehash(struct vg_ic *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 1024, i, h;
	size_t *slot = calloc(ns, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (i = 1; i < t->n; i++) {
		const struct vg_ic_node *x = &t->nodes[i];
		for (h = vg_ic_hash(x->parent, t->arena.data + x->label, x->label_len) & (ns - 1); slot[h];
		     h = (h + 1) & (ns - 1))
			;
		slot[h] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return 0;
}

/* The child of parent labelled arena[off, off + len), made if new (the label is then kept in the arena). */
static long vg_ic_child(struct vg_ic *t, size_t parent, size_t off, size_t len, int python)
{
	const char *l = t->arena.data + off;
	size_t h;

	if ((t->n + 1) * 2 > t->nslots && vg_ic_rehash(t))
		return -ENOMEM;
	for (h = vg_ic_hash(parent, l, len) & (t->nslots - 1); t->slot[h]; h = (h + 1) & (t->nslots - 1)) {
		const struct vg_ic_node *x = &t->nodes[t->slot[h] - 1];
		if (x->parent == parent && x->label_len == len && !memcmp(t->arena.data + x->label, l, len)) {
			t->arena.len = off;     /* the label is already kept */
			return (long)t->slot[h] - 1;
		}
	}
	if (t->n == t->cap) {
		size_t nc = t->cap * 2;
		struct vg_ic_node *nn = realloc(t->nodes, nc * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		t->cap = nc;
	}
	t->nodes[t->n] = (struct vg_ic_node){ .label = off, .label_len = len, .parent = parent, .child = SIZE_MAX,
					      .next = t->nodes[parent].child, .depth = t->nodes[parent].depth + 1,
					      .python = python };
	t->nodes[parent].child = t->n;
	if (t->nodes[t->n].depth > t->maxdepth)
		t->maxdepth = t->nodes[t->n].depth;
	t->slot[h] = t->n + 1;
	return (long)t->n++;
}

struct vg_ic_kid {
	uint64_t bytes;
	size_t node;
};

static int vg_ic_by_bytes(const void *a, const void *b)
{
	const struct vg_ic_kid *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : x->node > y->node ? 1 : x->node < y->node ? -1 : 0;
}

struct vg_ic_out {
	struct vg_strbuf *b;
	uint64_t total;
	size_t drawn, hidden;
};

/* A frame's fill: Python frames blue-green, native ones orange, those without a name grey, shades from its
 * label. */
static void vg_ic_fill(struct vg_strbuf *b, const struct vg_ic *t, const struct vg_ic_node *x)
{
	uint64_t h = vg_ic_hash(0, t->arena.data + x->label, x->label_len);
	if (x->depth == 0)
		vg_strbuf_str(b, "#b8b8c8");
	else if (x->unresolved)
		vg_strbuf_printf(b, "hsl(0,0%%,%u%%)", 80 + (unsigned)(h >> 8) % 8);
	else if (x->python)
		vg_strbuf_printf(b, "hsl(%u,55%%,%u%%)", 185 + (unsigned)(h % 40), 62 + (unsigned)(h >> 8) % 14);
	else
		vg_strbuf_printf(b, "hsl(%u,78%%,%u%%)", 18 + (unsigned)(h % 30), 60 + (unsigned)(h >> 8) % 12);
}

static void vg_ic_emit(const struct vg_ic *t, struct vg_ic_out *o, size_t i, uint64_t x0)
{
	const struct vg_ic_node *x = &t->nodes[i];
	double fx = (double)x0 / (double)o->total, fw = (double)x->bytes / (double)o->total;
	double px = fx * IC_W, pw = fw * IC_W;
	size_t k, nk = 0, c, chars;
	uint64_t at = x0;

	o->drawn++;
	vg_strbuf_printf(o->b, "<g class=\"fr%s\" data-x=\"%.6f\" data-w=\"%.6f\" data-d=\"%u\"><title>",
			 x->python ? " py" : x->unresolved ? " unres" : "", fx, fw, x->depth);
	vg_html_esc(o->b, t->arena.data + x->label, x->label_len);
	vg_strbuf_str(o->b, "\n");
	vg_html_bytes(o->b, x->bytes);
	vg_strbuf_printf(o->b, " in %" PRIu64 " %s (%.1f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" "
			 "fill=\"", x->count, vg_plural(x->count, "allocation", "allocations"), 100.0 * fw, px,
			 x->depth * IC_ROW, pw, IC_ROW - 1);
	vg_ic_fill(o->b, t, x);
	vg_strbuf_str(o->b, "\"/>");
	chars = pw > 20 ? (size_t)((pw - 6) / 6.6) : 0;
	if (chars >= 3) {
		vg_strbuf_printf(o->b, "<text x=\"%.2f\" y=\"%u\">", px + 3, x->depth * IC_ROW + 13);
		if (chars >= x->label_len) {
			vg_html_esc(o->b, t->arena.data + x->label, x->label_len);
		} else {        /* cut at a character boundary */
			size_t cut = chars - 2;
			while (cut > 0 && ((unsigned char)t->arena.data[x->label + cut] & 0xc0) == 0x80)
				cut--;
			vg_html_esc(o->b, t->arena.data + x->label, cut);
			vg_strbuf_str(o->b, "..");
		}
		vg_strbuf_str(o->b, "</text>");
	}
	vg_strbuf_str(o->b, "</g>\n");
	for (c = x->child; c != SIZE_MAX; c = t->nodes[c].next)
		nk++;
	if (!nk)
		return;
	struct vg_ic_kid *kids = malloc(nk * sizeof(*kids));
	if (!kids) {
		o->b->failed = 1;
		return;
	}
	for (c = x->child, k = 0; c != SIZE_MAX; c = t->nodes[c].next, k++)
		kids[k] = (struct vg_ic_kid){ t->nodes[c].bytes, c };
	qsort(kids, nk, sizeof(*kids), vg_ic_by_bytes);
	for (k = 0; k < nk; k++) {
		if ((unsigned __int128)kids[k].bytes * VG_HTML_ICICLE_MIN >= o->total)
			vg_ic_emit(t, o, kids[k].node, at);
		else
			o->hidden++;
		at += kids[k].bytes;
	}
	free(kids);
}

int vg_html_icicle(struct vg_strbuf *b, const struct vg_html_weight *w, size_t n, const char *root_label)
{
	struct vg_ic t = { 0 };
	struct vg_flame_frame st[VG_FLAME_MAX];
	size_t i, j, k;
	int rc = -ENOMEM;
	uint64_t total = 0;

	for (i = 0; i < n; i++)
		total += w[i].bytes;
	if (!total) {
		vg_strbuf_str(b, "<p class=\"note\">Nothing to draw: no call site holds memory here.</p>\n");
		return vg_strbuf_result(b);
	}
	t.cap = 1024;
	t.nodes = malloc(t.cap * sizeof(*t.nodes));
	if (!t.nodes)
		return -ENOMEM;
	vg_strbuf_str(&t.arena, root_label);
	t.nodes[0] = (struct vg_ic_node){ .label = 0, .label_len = t.arena.len, .parent = SIZE_MAX, .child = SIZE_MAX,
					  .next = SIZE_MAX };
	t.n = 1;
	for (i = 0; i < n; i++) {
		size_t at = 0, ns;
		if (!w[i].bytes)
			continue;
		t.nodes[0].bytes += w[i].bytes;
		t.nodes[0].count += w[i].count;
		ns = vg_flame_stack(w[i].r, w[i].site, st);
		for (j = 0; j < ns; j++) {
			size_t off = t.arena.len;
			long c;
			int unres = vg_flame_label(&t.arena, &st[j]);
			if (t.arena.failed || (c = vg_ic_child(&t, at, off, t.arena.len - off, st[j].py != NULL)) < 0)
				goto out;
			at = (size_t)c;
			t.nodes[at].unresolved = unres;
			t.nodes[at].bytes += w[i].bytes;
			t.nodes[at].count += w[i].count;
		}
	}
	struct vg_ic_out o = { .b = b, .total = total };
	k = (t.maxdepth + 1) * IC_ROW;
	vg_strbuf_printf(b, "<div class=\"icicle-wrap\"><button type=\"button\" class=\"unzoom\" hidden>"
			 "reset zoom</button>\n<svg class=\"icicle\" viewBox=\"0 0 %d %zu\" data-w=\"%d\" role=\"img\">"
			 "<title>", IC_W, k, IC_W);
	vg_html_esc(b, root_label, strlen(root_label));
	vg_strbuf_str(b, " by call site</title>\n");
	vg_ic_emit(&t, &o, 0, 0);
	vg_strbuf_str(b, "</svg></div>\n");
	vg_strbuf_printf(b, "<p class=\"legend\"><span class=\"k py\"></span>Python frames <span class=\"k nat\"></span>"
			 "native frames <span class=\"k unres\"></span>native frames without a name (module+offset); "
			 "root at the top (<span class=\"hint\" title=\"Process and thread start-up frames (_start, "
			 "__libc_start_main, start_thread, clone3...: docs/report-html.md) begin every stack: they are "
			 "folded into the root.\">start-up frames folded into it</span>), width by bytes; %zu frames drawn",
			 o.drawn);
	if (o.hidden)
		vg_strbuf_printf(b, ", %zu narrower than 1/%d of the total left out", o.hidden, VG_HTML_ICICLE_MIN);
	vg_strbuf_str(b, ". Hover for figures; click a frame to zoom (script).</p>\n");
	rc = vg_strbuf_result(b);
out:
	free(t.nodes);
	free(t.slot);
	vg_strbuf_free(&t.arena);
	return rc;
}
