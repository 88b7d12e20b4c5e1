/* The text form of a report: a short block for people (stderr, `vramguard report`). Every line but the first
 * starts with two spaces, and no string from the model can start a line of its own. */
#include "report/report.h"
#include "report/allocator.h"
#include "report/srcline.h"
#include "config/config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define VG_TEXT_SYM_COL 48      /* the symbol column of the text form is padded to at most this width */

static const struct vg_report_site *vg_report_find_site(const struct vg_report *r, uint32_t id)
{
	size_t i;
	for (i = 0; r->sites && i < r->nsites; i++)
		if (r->sites[i].id == id)
			return &r->sites[i];
	return NULL;
}

/* "/work/examples/leaky (+0x11a9)" or the raw address */
static void vg_text_frame_where(struct vg_strbuf *b, const struct vg_report_frame *f)
{
	if (f->module[0]) {
		vg_text_str(b, f->module, VG_REPORT_FRAME_STR);
		vg_strbuf_printf(b, " (+0x%" PRIx64 ")", f->module_offset);
	} else {
		vg_strbuf_printf(b, "0x%" PRIx64, f->address);
	}
}

static const char *vg_text_no_site(const struct vg_report *r)
{
	return r->backtrace_depth <= 0 ? "(no call site: VRAMGUARD_BACKTRACE=0)" : "(no call site recorded)";
}

void vg_report_frames_text(struct vg_strbuf *out, const struct vg_report_frame_line *lines, size_t n, size_t indent)
{
	struct vg_strbuf sym[VG_REPORT_TEXT_FRAMES], more[VG_REPORT_TEXT_FRAMES];
	size_t i, col = 0, lw = 0;

	if (n > VG_REPORT_TEXT_FRAMES)
		n = VG_REPORT_TEXT_FRAMES;
	memset(sym, 0, sizeof(sym));
	memset(more, 0, sizeof(more));
	for (i = 0; i < n; i++) {
		size_t w;
		if (lines[i].label && strlen(lines[i].label) > lw)
			lw = strlen(lines[i].label);
		if (!lines[i].frame)
			continue;
		vg_report_frame_text(&sym[i], &more[i], lines[i].r, lines[i].frame);
		if (sym[i].failed)
			out->failed = 1;
		w = sym[i].data ? vg_text_width(sym[i].data, sym[i].len) : 0;
		if (w > col)
			col = w;
	}
	if (col > VG_TEXT_SYM_COL)
		col = VG_TEXT_SYM_COL;
	for (i = 0; i < n; i++) {
		vg_strbuf_spaces(out, indent);
		if (lw)
			vg_text_pad(out, lines[i].label ? lines[i].label : "", lw + 1);
		if (lines[i].frame) {
			const char *text = sym[i].data ? sym[i].data : "";
			vg_text_pad(out, text, col + 2);
			/* A symbol wider than the column still gets two spaces before its module. */
			if (vg_text_width(text, strlen(text)) + 2 > col + 2)
				vg_strbuf_spaces(out, 2);
			vg_text_frame_where(out, lines[i].frame);
		} else {
			vg_strbuf_str(out, vg_text_no_site(lines[i].r));
		}
		vg_strbuf_add(out, "\n", 1);
		vg_report_frame_more(out, &more[i], indent + (lw ? lw + 1 : 0) + 2);
		vg_strbuf_free(&sym[i]);
		vg_strbuf_free(&more[i]);
	}
}

void vg_report_pyframe_text(struct vg_strbuf *out, const struct vg_report_pyframe *f, size_t indent)
{
	vg_strbuf_spaces(out, indent);
	vg_text_str(out, f->file[0] ? f->file : "?", VG_REPORT_FRAME_STR);
	vg_strbuf_printf(out, ":%" PRIu32 " in ", f->line);
	vg_text_str(out, f->function[0] ? f->function : "?", VG_REPORT_PY_FUNCTION_STR);
	vg_strbuf_add(out, "\n", 1);
}

/* "compute share 30% (VRAMGUARD_COMPUTE_LIMIT): used 29.8% over the last 59 s, 12.40 s of GPU time; 210 launches
 * waited 8.70 s" */
static void vg_text_compute(struct vg_strbuf *out, const struct vg_report_device *d)
{
	if (d->compute_set)
		vg_strbuf_printf(out, "       compute share %" PRIu64 ".%" PRIu64 "%% (%s):", d->compute_limit_pm / 10,
				 d->compute_limit_pm % 10, d->compute_source[0] ? d->compute_source : "?");
	else
		vg_strbuf_str(out, "       compute share none:");
	if (d->compute_recent_s)
		vg_strbuf_printf(out, " used %" PRIu64 ".%" PRIu64 "%% over the last %" PRIu64 " s,",
				 d->compute_recent_pm / 10, d->compute_recent_pm % 10, d->compute_recent_s);
	vg_strbuf_printf(out, " %" PRIu64 ".%02" PRIu64 " s of GPU time", d->gpu_time_ns / 1000000000,
			 d->gpu_time_ns / 10000000 % 100);
	if (d->compute_waits)
		vg_strbuf_printf(out, "; %" PRIu64 " launches waited %" PRIu64 ".%02" PRIu64 " s", d->compute_waits,
				 d->compute_waited_ns / 1000000000, d->compute_waited_ns / 10000000 % 100);
	vg_strbuf_str(out, "\n");
}

/* Device counting: what `used` is made of, so that a user sees where the memory went. */
static void vg_text_device_parts(const struct vg_report *r, const struct vg_report_device *d, struct vg_strbuf *out)
{
	char a[32], pr[32], pl[32], g[32], dr[32], dh[32], dl[32];
	if (strcmp(r->count, "device") == 0) {
		vg_strbuf_printf(out, "       = allocations %s, pools hold %s (%s handed out), graphs %s, driver %s%s",
				 vg_format_bytes(d->allocated_bytes, a, sizeof(a)),
				 vg_format_bytes(d->pool_reserved_bytes, pr, sizeof(pr)),
				 vg_format_bytes(d->pool_live_bytes, pl, sizeof(pl)), vg_format_bytes(d->graph_bytes, g, sizeof(g)),
				 vg_format_bytes(d->driver_bytes, dr, sizeof(dr)),
				 d->driver_measured ? " (NVML)" : " (not measured: no NVML figure for this process)");
		if (d->driver_headroom_bytes)
			vg_strbuf_printf(out, " + %s headroom for it",
					 vg_format_bytes(d->driver_headroom_bytes, dh, sizeof(dh)));
		vg_strbuf_str(out, "\n");
	}
	if (d->driver_limit_set)
		vg_strbuf_printf(out, "       the driver's own container limit: %s\n",
				 vg_format_bytes(d->driver_limit_bytes, dl, sizeof(dl)));
	if (d->compute_set || d->gpu_time_ns)
		vg_text_compute(out, d);
}

/* "20 s", "500 ms", "4 min", "2 h" */
static void vg_text_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%" PRIu64 " ms", ms);
	else if (ms < 120000)
		snprintf(buf, len, "%" PRIu64 " s", ms / 1000);
	else if (ms < 7200000)
		snprintf(buf, len, "%" PRIu64 " min", ms / 60000);
	else
		snprintf(buf, len, "%" PRIu64 " h", ms / 3600000);
}

/* The sparkline's scale: the quota, else the highest peak. ' ' is nothing, '@' the top. */
static char vg_text_level(uint64_t v, uint64_t scale)
{
	static const char levels[] = " .:-=+*#%@";
	unsigned __int128 x = (unsigned __int128)v * 9 + scale - 1;
	uint64_t l = scale ? (uint64_t)(x / scale) : 0;
	return levels[l > 9 ? 9 : l];
}

/* Two lines per device with a timeline: when, how finely, the peak and the first denial; then the interval peaks
 * as a sparkline of at most VG_TEXT_SPARK columns of equal time, '!' where denials happened. */
#define VG_TEXT_SPARK 64
static void vg_text_timeline(const struct vg_report_device *d, struct vg_strbuf *out)
{
	const struct vg_report_timeline_point *p = d->timeline_points;
	size_t n = d->timeline_set && p ? d->ntimeline_points : 0, i, c, ncols;
	struct vg_report_timeline_span sp;
	char t0[48], t1[16], every[24], gap[24], pk[32], scale_s[32], when[16], line[VG_TEXT_SPARK + 1];
	uint64_t peaks[VG_TEXT_SPARK] = { 0 }, scale, span;
	int has[VG_TEXT_SPARK] = { 0 }, denied[VG_TEXT_SPARK] = { 0 };

	if (!n)
		return;
	vg_report_time(p[0].time_ns, 0, t0, sizeof(t0));
	t0[strlen(t0) > 4 ? strlen(t0) - 4 : 0] = '\0';        /* "2026-11-21 21:02:03" */
	vg_report_clock(p[n - 1].time_ns, t1, sizeof(t1));
	vg_text_duration(d->timeline_period_ms, every, sizeof(every));
	vg_text_duration(d->timeline_period_ms / 10, gap, sizeof(gap));
	vg_report_timeline_span(d, 0, 0, 0, &sp);
	vg_report_clock(sp.peak_ns, when, sizeof(when));
	vg_strbuf_printf(out, "       timeline %s - %s UTC, %zu %s (every %s, or %s on change): peak %s by %s", t0, t1, n,
			 vg_plural(n, "point", "points"), every, gap, vg_format_bytes(sp.peak_bytes, pk, sizeof(pk)), when);
	if (sp.first_denial_ns) {
		vg_report_clock(sp.first_denial_ns, when, sizeof(when));
		vg_strbuf_printf(out, ", first denial by %s (%" PRIu64 " %s)", when, sp.denied_count,
				 vg_plural(sp.denied_count, "denial", "denials"));
	}
	vg_strbuf_str(out, "\n");

	ncols = n < VG_TEXT_SPARK ? n : VG_TEXT_SPARK;
	span = p[n - 1].time_ns - p[0].time_ns;
	for (i = 0; i < n; i++) {
		c = span ? (size_t)((unsigned __int128)(p[i].time_ns - p[0].time_ns) * ncols / (span + 1)) : 0;
		if (c >= ncols)
			c = ncols - 1;
		if (!has[c] || p[i].peak_bytes > peaks[c])
			peaks[c] = p[i].peak_bytes;
		has[c] = 1;
		if (p[i].denied_count > (i ? p[i - 1].denied_count : 0))
			denied[c] = 1;
	}
	for (c = ncols; c-- > 0;)       /* a column without a point lies in the interval of the next point's */
		if (!has[c] && c + 1 < ncols)
			peaks[c] = peaks[c + 1];
	scale = d->quota_set && d->quota_bytes ? d->quota_bytes : sp.peak_bytes;
	for (c = 0; c < ncols; c++)
		line[c] = denied[c] ? '!' : vg_text_level(peaks[c], scale);
	line[ncols] = '\0';
	vg_strbuf_printf(out, "       |%s| peaks, full scale %s (%s)%s\n", line,
			 vg_format_bytes(scale, scale_s, sizeof(scale_s)), d->quota_set ? "the quota" : "the highest peak",
			 sp.first_denial_ns ? ", ! denials" : "");
}

/* Where the soft limits came from, one line: "soft limits from NVIDIA_GPU_MEMORY_REQUEST (GPU 0, 1)". */
static void vg_text_soft_sources(const struct vg_report *r, struct vg_strbuf *out)
{
	size_t i, j, k, groups = 0;

	for (i = 0; i < r->ndevices; i++) {
		const struct vg_report_device *d = &r->devices[i];
		if (!d->soft_set)
			continue;
		for (j = 0; j < i; j++)         /* its source was listed with an earlier device */
			if (r->devices[j].soft_set && !strncmp(r->devices[j].soft_source, d->soft_source,
							       sizeof(d->soft_source)))
				break;
		if (j < i)
			continue;
		vg_strbuf_str(out, groups++ ? ", " : "  soft limits from ");
		vg_text_str(out, d->soft_source[0] ? d->soft_source : "?", sizeof(d->soft_source));
		vg_strbuf_str(out, " (GPU ");
		for (k = i, j = 0; k < r->ndevices; k++)
			if (r->devices[k].soft_set && !strncmp(r->devices[k].soft_source, d->soft_source,
							       sizeof(d->soft_source)))
				vg_strbuf_printf(out, "%s%d", j++ ? ", " : "", r->devices[k].ordinal);
		vg_strbuf_str(out, ")");
	}
	if (groups)
		vg_strbuf_add(out, "\n", 1);
}

static void vg_text_devices(const struct vg_report *r, struct vg_strbuf *out)
{
	char used[32], peak[32], quota[32], soft[32], denied[32];
	size_t i;
	int any_soft = 0;

	if (!r->devices || r->ndevices == 0) {
		vg_strbuf_str(out, "  GPU  none used\n");
		return;
	}
	for (i = 0; i < r->ndevices; i++)
		any_soft |= r->devices[i].soft_set;
	/* The soft limit column only where some device has one: most reports stay as they were. */
	vg_strbuf_printf(out, "  GPU  %-11s  %-11s  %-11s  ", "used", "peak", "quota");
	if (any_soft)
		vg_strbuf_printf(out, "%-11s  ", "soft limit");
	vg_strbuf_printf(out, "%8s  %8s  %s\n", "allocs", "frees", "denied");
	for (i = 0; i < r->ndevices; i++) {
		const struct vg_report_device *d = &r->devices[i];
		vg_format_bytes(d->used_bytes, used, sizeof(used));
		vg_format_bytes(d->peak_bytes, peak, sizeof(peak));
		if (d->quota_set)
			vg_format_bytes(d->quota_bytes, quota, sizeof(quota));
		else
			snprintf(quota, sizeof(quota), "unlimited");
		vg_strbuf_printf(out, "  %3d  %-11s  %-11s  %-11s  ", d->ordinal, used, peak, quota);
		if (any_soft)
			vg_strbuf_printf(out, "%-11s  ", d->soft_set ? vg_format_bytes(d->soft_bytes, soft, sizeof(soft))
								     : "none");
		vg_strbuf_printf(out, "%8" PRIu64 "  %8" PRIu64 "  %" PRIu64, d->allocs, d->frees, d->denied_count);
		if (d->denied_count)
			vg_strbuf_printf(out, " (%s)", vg_format_bytes(d->denied_bytes, denied, sizeof(denied)));
		vg_strbuf_add(out, "\n", 1);
		vg_text_device_parts(r, d, out);
		vg_text_timeline(d, out);
		vg_report_growth_text(r, d, out);
	}
	if (any_soft)
		vg_text_soft_sources(r, out);
}

/* The end of a site's line: its id and allocator, then whether its allocations only grew or were freed and made
 * again (report/allocator.h has both rules): " (site 7, PyTorch's caching allocator); churn (freed and made
 * again): 4800 of its 4812 allocations were freed". Nothing about the history when the totals cannot say. */
static void vg_text_site_what(const struct vg_report_site *s, struct vg_strbuf *out)
{
	enum vg_allocator a = vg_allocator_of_site(s);
	uint64_t freed = s->total_allocs - s->live_count;

	vg_strbuf_printf(out, " (site %" PRIu32 "%s%s)", s->id, a != VG_ALLOCATOR_NONE ? ", " : "",
			 vg_allocator_info(a)->name);
	switch (vg_site_history(s)) {
	case VG_SITE_ONLY_GREW:
		if (s->live_count == 1)
			vg_strbuf_str(out, "; only grew: its one allocation was not freed");
		else
			vg_strbuf_printf(out, "; only grew: none of its %" PRIu64 " allocations was freed", s->live_count);
		break;
	case VG_SITE_CHURN:
		vg_strbuf_printf(out, "; churn (freed and made again): %" PRIu64 " of its %" PRIu64 " allocations %s freed",
				 freed, s->total_allocs, freed == 1 ? "was" : "were");
		break;
	case VG_SITE_ALL_FREED:
	case VG_SITE_UNKNOWN:
		break;
	}
	vg_strbuf_str(out, "\n");
}

/* The word for what the live allocations are: at exit they are "held at exit" (what the process had not given
 * back when it ended: a leak only if nothing else keeps it, which a caching allocator does), before it
 * "outstanding" (held now). */
static bool vg_text_at_exit(const struct vg_report *r)
{
	return strncmp(r->reason, "exit", sizeof(r->reason)) == 0;
}

static const char *vg_text_held(const struct vg_report *r)
{
	return vg_text_at_exit(r) ? "held at exit" : "outstanding";
}

/* When every live byte is in caching allocators, one line under the headline says so. */
static void vg_text_allocator_note(const struct vg_report *r, struct vg_strbuf *out)
{
	struct vg_allocator_summary sum;

	vg_allocator_summary(r, &sum);
	if (!sum.all)
		return;
	if (sum.only != VG_ALLOCATOR_NONE)
		vg_strbuf_printf(out, "    all of it in %s, which keeps freed memory for reuse instead of giving it "
				 "back to the driver", vg_allocator_info(sum.only)->name);
	else
		vg_strbuf_str(out, "    all of it in caching allocators, which keep freed memory for reuse instead of "
			      "giving it back to the driver");
	vg_strbuf_str(out, vg_text_at_exit(r) ? ": not a leak by itself\n" : "\n");
}

static void vg_text_site(const struct vg_report *r, const struct vg_report_site *s, struct vg_strbuf *out)
{
	struct vg_report_frame_line lines[VG_REPORT_TEXT_FRAMES];
	char bytes[32];
	size_t i, n = s->frames ? s->nframes : 0;
	size_t skip = n ? vg_report_runtime_prefix(s) : 0;

	vg_format_bytes(s->live_bytes, bytes, sizeof(bytes));
	vg_strbuf_printf(out, "    %s in %" PRIu64 " %s via ", bytes, s->live_count,
			 vg_plural(s->live_count, "allocation", "allocations"));
	vg_text_str(out, s->api[0] ? s->api : "?", sizeof(s->api));
	vg_text_site_what(s, out);
	/* Python frames first (innermost first): what most readers of a framework's leak recognise. */
	size_t np = s->python ? s->npython : 0;
	for (i = 0; i < np && i < VG_REPORT_TEXT_FRAMES; i++)
		vg_report_pyframe_text(out, &s->python[i], 6);
	if (np > VG_REPORT_TEXT_FRAMES)
		vg_strbuf_printf(out, "      ... %zu more Python %s\n", np - VG_REPORT_TEXT_FRAMES,
				 vg_plural(np - VG_REPORT_TEXT_FRAMES, "frame", "frames"));
	if (n == 0 && np > 0)
		return;
	if (n == 0) {
		lines[0] = (struct vg_report_frame_line){ NULL, NULL, r };
		vg_report_frames_text(out, lines, 1, 6);
		return;
	}
	/* The CUDA runtime's own frames say nothing about the application: one line for them, then the caller. */
	if (skip)
		vg_strbuf_printf(out, "      (%zu %s in the CUDA runtime)\n", skip, vg_plural(skip, "frame", "frames"));
	for (i = 0; skip + i < n && i < VG_REPORT_TEXT_FRAMES; i++)
		lines[i] = (struct vg_report_frame_line){ NULL, &s->frames[skip + i], r };
	vg_report_frames_text(out, lines, i, 6);
	if (n - skip > VG_REPORT_TEXT_FRAMES)
		vg_strbuf_printf(out, "      ... %zu more %s\n", n - skip - VG_REPORT_TEXT_FRAMES,
				 vg_plural(n - skip - VG_REPORT_TEXT_FRAMES, "frame", "frames"));
}

static void vg_text_outstanding(const struct vg_report *r, struct vg_strbuf *out)
{
	uint64_t live_bytes = 0, rest_bytes = 0;
	size_t i, nlive = 0, shown = 0;
	char bytes[32];

	for (i = 0; r->sites && i < r->nsites; i++) {
		if (r->sites[i].live_count == 0)
			continue;
		nlive++;
		live_bytes += r->sites[i].live_bytes;
	}
	if (r->allocs_live == 0 && nlive == 0) {
		vg_strbuf_printf(out, "  %s: none\n", vg_text_held(r));
		return;
	}
	if (nlive == 0) {       /* no site table (should not happen): the devices' counters still say how much */
		for (i = 0; r->devices && i < r->ndevices; i++)
			live_bytes += r->devices[i].used_bytes;
	}
	vg_format_bytes(live_bytes, bytes, sizeof(bytes));
	vg_strbuf_printf(out, "  %s: %" PRIu64 " %s, %s", vg_text_held(r), r->allocs_live,
			 vg_plural(r->allocs_live, "allocation", "allocations"), bytes);
	if (nlive == 0) {
		vg_strbuf_str(out, "\n");
		return;
	}
	vg_strbuf_printf(out, ", from %zu call %s (largest first):\n", nlive, vg_plural(nlive, "site", "sites"));
	vg_text_allocator_note(r, out);
	for (i = 0; i < r->nsites; i++) {
		const struct vg_report_site *s = &r->sites[i];
		if (s->live_count == 0)
			continue;
		if (shown < VG_REPORT_TEXT_SITES) {
			vg_text_site(r, s, out);
			shown++;
		} else {
			rest_bytes += s->live_bytes;
		}
	}
	if (nlive > shown)
		vg_strbuf_printf(out, "    and %zu more call %s with %s\n", nlive - shown,
				 vg_plural(nlive - shown, "site", "sites"), vg_format_bytes(rest_bytes, bytes, sizeof(bytes)));
}

/* "created:   make_stream+0x12  /work/examples/leaky (+0x1100)": the first frame of each site outside the CUDA
 * runtime. */
static void vg_text_stream_sites(const struct vg_report *r, struct vg_strbuf *out, const char *const *labels,
				 const uint32_t *ids, size_t n)
{
	struct vg_report_frame_line lines[2];
	size_t i;

	for (i = 0; i < n && i < 2; i++) {
		const struct vg_report_site *s = ids[i] ? vg_report_find_site(r, ids[i]) : NULL;
		lines[i].label = labels[i];
		lines[i].frame = s && s->frames && s->nframes ? &s->frames[vg_report_runtime_prefix(s)] : NULL;
		lines[i].r = r;
	}
	vg_report_frames_text(out, lines, i, 6);
}

static void vg_text_streams(const struct vg_report *r, struct vg_strbuf *out)
{
	uint64_t pending = 0, live = 0;
	size_t i, nev = r->stream_events ? r->nstream_events : 0, nlive = r->stream_live ? r->nstream_live : 0;

	if (r->streams_created == 0 && nev == 0 && nlive == 0)
		return;
	for (i = 0; i < nev; i++)
		pending += r->stream_events[i].count;
	for (i = 0; i < nlive; i++)
		live += r->stream_live[i].count;
	vg_strbuf_printf(out, "  streams: %" PRIu64 " created, %" PRIu64 " destroyed, %" PRIu64
			 " destroyed with work still queued, %" PRIu64 " live\n",
			 r->streams_created, r->streams_destroyed, pending, live);
	for (i = 0; i < nev && i < VG_REPORT_TEXT_SITES; i++) {
		const struct vg_report_stream_event *e = &r->stream_events[i];
		static const char *const labels[] = { "created:", "destroyed:" };
		uint32_t ids[2] = { e->create_site, e->destroy_site };
		vg_strbuf_printf(out,
				 "    destroyed with work queued (%" PRIu64 "x): created at site %" PRIu32
				 ", destroyed at site %" PRIu32 "%s\n",
				 e->count, e->create_site, e->destroy_site,
				 e->synchronized ? " (waited for: VRAMGUARD_STREAM_CHECK=sync)" : "");
		vg_text_stream_sites(r, out, labels, ids, 2);
	}
	if (nev > VG_REPORT_TEXT_SITES)
		vg_strbuf_printf(out, "    and %zu more create/destroy site pairs\n", nev - VG_REPORT_TEXT_SITES);
	for (i = 0; i < nlive && i < VG_REPORT_TEXT_SITES; i++) {
		const struct vg_report_stream_live *l = &r->stream_live[i];
		static const char *const labels[] = { "created:" };
		vg_strbuf_printf(out, "    %" PRIu64 " live %s created at site %" PRIu32 " (%" PRIu64 " with work queued",
				 l->count, vg_plural(l->count, "stream", "streams"), l->create_site, l->pending);
		if (l->capturing)
			vg_strbuf_printf(out, ", %" PRIu64 " capturing", l->capturing);
		vg_strbuf_str(out, ")\n");
		vg_text_stream_sites(r, out, labels, &l->create_site, 1);
	}
	if (nlive > VG_REPORT_TEXT_SITES)
		vg_strbuf_printf(out, "    and %zu more creation sites\n", nlive - VG_REPORT_TEXT_SITES);
}

int vg_report_render_text(const struct vg_report *r, struct vg_strbuf *out)
{
	char when[96];

	vg_report_time(r->time_ns, 0, when, sizeof(when));
	vg_strbuf_str(out, "vramguard: report (");
	vg_text_str(out, r->reason[0] ? r->reason : "?", sizeof(r->reason));
	if (r->sequence > 1)
		vg_strbuf_printf(out, " #%" PRIu64, r->sequence);
	vg_strbuf_printf(out, ") pid %d, %s", r->pid, when);
	if (strnlen(r->command, sizeof(r->command))) {
		vg_strbuf_str(out, ": ");
		vg_text_str(out, r->command, sizeof(r->command));
	}
	vg_strbuf_add(out, "\n", 1);
	vg_text_devices(r, out);
	vg_text_outstanding(r, out);
	vg_text_streams(r, out);
	if (strnlen(r->json_hint, sizeof(r->json_hint))) {
		vg_strbuf_str(out, "  full report: ");
		vg_text_str(out, r->json_hint, sizeof(r->json_hint));
		vg_strbuf_add(out, "\n", 1);
	}
	return vg_strbuf_result(out);
}
