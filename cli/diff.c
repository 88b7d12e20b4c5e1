/* `vramguard diff`: two reports of a service in, "what grew since the last dump?" out, per device and per call site,
 * sorted by bytes for leak hunting. This file writes the text, in the report's style; the comparison it shows is
 * cli/diff_compare.c's. */
#include "cli/diff.h"
#include "cli/diff_compare.h"
#include "cli/diff_growth.h"
#include "config/config.h"
#include "report/srcline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VG_DIFF_FRAMES 4        /* per site: the first frame outside the CUDA runtime and its next callers */
#define VG_DIFF_CELL 128        /* one cell of the device table */
#define VG_DIFF_DEV_COLS 8

static const char *const vg_diff_kind_name[VG_DIFF_NKINDS] = { "grew", "new", "shrank", "gone", "unchanged" };

/* ---- small text helpers (the rest are shared with the report: report/strbuf.h, report/report.h) ---- */

/* "20m38s later", "2h05m earlier", "at the same time" */
static void vg_diff_interval(uint64_t from, uint64_t to, char *buf, size_t len)
{
	uint64_t ns = to >= from ? to - from : from - to, s = ns / 1000000000u;
	const char *dir = to >= from ? "later" : "earlier";

	if (ns == 0)
		snprintf(buf, len, "at the same time");
	else if (s == 0)
		snprintf(buf, len, "%" PRIu64 "ms %s", ns / 1000000u, dir);
	else if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s %s", s, dir);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s %s", s / 60, s % 60, dir);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m %s", s / 3600, s / 60 % 60, dir);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h %s", s / 86400, s / 3600 % 24, dir);
}

/* "+2.25 GiB", "-12.00 MiB", "0 B" */
static const char *vg_diff_bytes(int sign, uint64_t mag, char *buf, size_t len)
{
	char num[32];

	vg_format_bytes(mag, num, sizeof(num));
	snprintf(buf, len, "%s%s", mag == 0 ? "" : sign < 0 ? "-" : "+", num);
	return buf;
}

/* A counter of both reports: "+1203" within one process (the activity between the dumps), "1203 -> 1500" across
 * processes (two lives: a difference would mean nothing). */
static void vg_diff_counter(const struct vg_diff *d, uint64_t a, uint64_t b, char *buf, size_t len)
{
	if (!d->by_id)
		snprintf(buf, len, a == b ? "%" PRIu64 : "%" PRIu64 " -> %" PRIu64, a, b);
	else if (b >= a)
		snprintf(buf, len, "+%" PRIu64, b - a);
	else
		snprintf(buf, len, "-%" PRIu64, a - b);
}

/* ---- frames ---- */

/* The first frames of a site past the CUDA runtime. */
static void vg_diff_site_frames(struct vg_strbuf *out, const struct vg_report *r, const struct vg_report_site *s)
{
	struct vg_report_frame_line lines[VG_DIFF_FRAMES];
	size_t i, n = s->frames ? s->nframes : 0, skip = vg_report_runtime_prefix(s);
	size_t np = s->python ? s->npython : 0;

	for (i = 0; i < np && i < VG_DIFF_FRAMES; i++)       /* Python first, as the text report shows them */
		vg_report_pyframe_text(out, &s->python[i], 6);
	if (n == 0 && np > 0)
		return;
	if (n == 0) {
		lines[0] = (struct vg_report_frame_line){ NULL, NULL, r };
		vg_report_frames_text(out, lines, 1, 6);
		return;
	}
	for (i = 0; skip + i < n && i < VG_DIFF_FRAMES; i++)
		lines[i] = (struct vg_report_frame_line){ NULL, &s->frames[skip + i], r };
	vg_report_frames_text(out, lines, i, 6);
}

/* ---- devices ---- */

static void vg_diff_quota(const struct vg_report_device *dv, char *buf, size_t len)
{
	if (dv->quota_set)
		vg_format_bytes(dv->quota_bytes, buf, len);
	else
		snprintf(buf, len, "unlimited");
}

/* "1.00 GiB -> 3.25 GiB (+2.25 GiB)" or "1.00 GiB" */
static void vg_diff_change(uint64_t a, uint64_t b, int with_delta, char *buf, size_t len)
{
	char sa[32], sb[32], sd[40];

	vg_format_bytes(a, sa, sizeof(sa));
	vg_format_bytes(b, sb, sizeof(sb));
	if (a == b)
		snprintf(buf, len, "%s", sb);
	else if (with_delta)
		snprintf(buf, len, "%s -> %s (%s)", sa, sb, vg_diff_bytes(b > a ? 1 : -1, vg_absdiff(a, b), sd, sizeof(sd)));
	else
		snprintf(buf, len, "%s -> %s", sa, sb);
}

static void vg_diff_device_row(const struct vg_diff *d, const struct vg_diff_dev *p, char (*c)[VG_DIFF_CELL])
{
	const struct vg_report_device *o = p->o, *n = p->n, *any = n ? n : o;
	char qa[32], qb[32], bytes[40];

	snprintf(c[0], VG_DIFF_CELL, "%d", any->ordinal);
	if (o && n) {
		vg_diff_change(o->used_bytes, n->used_bytes, 1, c[1], VG_DIFF_CELL);
		vg_diff_change(o->peak_bytes, n->peak_bytes, 0, c[2], VG_DIFF_CELL);
		vg_diff_quota(o, qa, sizeof(qa));
		vg_diff_quota(n, qb, sizeof(qb));
		if (strcmp(qa, qb) == 0)
			snprintf(c[3], VG_DIFF_CELL, "%s", qb);
		else
			snprintf(c[3], VG_DIFF_CELL, "%s -> %s", qa, qb);
		vg_diff_counter(d, o->allocs, n->allocs, c[4], VG_DIFF_CELL);
		vg_diff_counter(d, o->frees, n->frees, c[5], VG_DIFF_CELL);
		vg_diff_counter(d, o->denied_count, n->denied_count, c[6], VG_DIFF_CELL);
		if (d->by_id && n->denied_bytes > o->denied_bytes) {
			size_t l = strlen(c[6]);
			snprintf(c[6] + l, VG_DIFF_CELL - l, " (%s)",
				 vg_diff_bytes(1, n->denied_bytes - o->denied_bytes, bytes, sizeof(bytes)));
		}
		c[7][0] = '\0';
		return;
	}
	/* A device only one report has: its own values, and which one it is. */
	vg_format_bytes(any->used_bytes, c[1], VG_DIFF_CELL);
	vg_format_bytes(any->peak_bytes, c[2], VG_DIFF_CELL);
	vg_diff_quota(any, c[3], VG_DIFF_CELL);
	if (n && d->by_id) {    /* counted from nothing: the activity since the first report */
		vg_diff_counter(d, 0, n->allocs, c[4], VG_DIFF_CELL);
		vg_diff_counter(d, 0, n->frees, c[5], VG_DIFF_CELL);
		vg_diff_counter(d, 0, n->denied_count, c[6], VG_DIFF_CELL);
	} else {
		snprintf(c[4], VG_DIFF_CELL, "%" PRIu64, any->allocs);
		snprintf(c[5], VG_DIFF_CELL, "%" PRIu64, any->frees);
		snprintf(c[6], VG_DIFF_CELL, "%" PRIu64, any->denied_count);
	}
	snprintf(c[7], VG_DIFF_CELL, "%s", n ? "(new: not in the first report)" : "(gone: not in the second report)");
}

static int vg_diff_devices(const struct vg_diff *d, struct vg_strbuf *out)
{
	static const char *const head[VG_DIFF_DEV_COLS] = { "GPU", "used", "peak", "quota", "allocs", "frees",
							    "denied", "" };
	struct vg_diff_dev *p;
	char (*cells)[VG_DIFF_CELL];
	size_t w[VG_DIFF_DEV_COLS] = { 0 }, i, j, last = 0;
	long n = vg_diff_devices_match(d->o, d->n, &p);

	if (n < 0)
		return (int)n;
	if (n == 0) {
		free(p);
		vg_strbuf_str(out, "  GPU  none used\n");
		return 0;
	}
	cells = calloc(((size_t)n + 1) * VG_DIFF_DEV_COLS, VG_DIFF_CELL);
	if (!cells) {
		free(p);
		return -ENOMEM;
	}
	for (j = 0; j < VG_DIFF_DEV_COLS; j++)
		snprintf(cells[j], VG_DIFF_CELL, "%s", head[j]);
	for (i = 0; i < (size_t)n; i++)
		vg_diff_device_row(d, &p[i], cells + (i + 1) * VG_DIFF_DEV_COLS);
	for (i = 0; i <= (size_t)n; i++)
		for (j = 0; j < VG_DIFF_DEV_COLS; j++) {
			const char *c = cells[i * VG_DIFF_DEV_COLS + j];
			if (vg_text_width(c, strlen(c)) > w[j])
				w[j] = vg_text_width(c, strlen(c));
			if (c[0] && j > last)
				last = j;
		}
	for (i = 0; i <= (size_t)n; i++) {
		vg_strbuf_str(out, "  ");
		const char *ord = cells[i * VG_DIFF_DEV_COLS];
		vg_strbuf_spaces(out, w[0] - vg_text_width(ord, strlen(ord)));     /* ordinals right-aligned */
		vg_strbuf_str(out, ord);
		for (j = 1; j <= last; j++) {
			const char *c = cells[i * VG_DIFF_DEV_COLS + j];
			size_t k;
			vg_strbuf_str(out, "  ");
			for (k = j + 1; k <= last && !cells[i * VG_DIFF_DEV_COLS + k][0]; k++)
				;
			if (k > last)   /* the row's last cell: no trailing blanks */
				vg_strbuf_str(out, c);
			else
				vg_text_pad(out, c, w[j]);
			if (k > last)
				break;
		}
		vg_strbuf_str(out, "\n");
	}
	/* What the matching did that a reader would not guess. */
	for (i = 0; i < (size_t)n; i++) {
		const struct vg_report_device *o = p[i].o, *nd = p[i].n;
		size_t j2;
		if (o && nd && o->ordinal != nd->ordinal) {
			vg_strbuf_printf(out, "  note: GPU %d was GPU %d in the first report: matched by uuid ", nd->ordinal,
					 o->ordinal);
			vg_text_str(out, nd->uuid, sizeof(nd->uuid));
			vg_strbuf_str(out, "\n");
		}
		for (j2 = 0; nd && !o && j2 < (size_t)n; j2++) {
			const struct vg_report_device *g = p[j2].o;
			if (!p[j2].n && g && g->ordinal == nd->ordinal && g->uuid[0] && nd->uuid[0]) {
				vg_strbuf_printf(out, "  note: GPU %d is a different device in each report (", nd->ordinal);
				vg_text_str(out, g->uuid, sizeof(g->uuid));
				vg_strbuf_str(out, ", then ");
				vg_text_str(out, nd->uuid, sizeof(nd->uuid));
				vg_strbuf_str(out, "): not compared\n");
			}
		}
	}
	free(cells);
	free(p);
	return 0;
}

/* ---- between the reports: the second report's timeline after the first report's time ---- */

/* Per device of both reports: usage then and now, the highest peak in between and when, the denials in between.
 * Within one process the denials are counted from the first report's figures; across processes from the second's
 * own timeline at the first report's time. */
static void vg_diff_between_dev(const struct vg_diff *d, const struct vg_report_device *o,
				const struct vg_report_device *n, struct vg_strbuf *out)
{
	struct vg_report_timeline_span sp;
	uint64_t base_c = 0, base_b = 0;
	char a[32], b[32], pk[32], db[32], when[16];
	size_t i;

	vg_strbuf_printf(out, "    GPU %d: ", n->ordinal);
	if (!n->timeline_set || !n->timeline_points || !n->ntimeline_points) {
		vg_strbuf_str(out, "no timeline in the second report (the device was not used)\n");
		return;
	}
	if (d->by_id) {
		base_c = o->denied_count;
		base_b = o->denied_bytes;
	} else {
		for (i = 0; i < n->ntimeline_points && n->timeline_points[i].time_ns <= d->o->time_ns; i++) {
			base_c = n->timeline_points[i].denied_count;
			base_b = n->timeline_points[i].denied_bytes;
		}
	}
	vg_report_timeline_span(n, d->o->time_ns, base_c, base_b, &sp);
	if (!sp.npoints) {
		vg_strbuf_str(out, "the second report's timeline has nothing after the first report\n");
		return;
	}
	vg_report_clock(sp.peak_ns, when, sizeof(when));
	vg_strbuf_printf(out, "used %s -> %s; highest peak %s by %s; ", vg_format_bytes(o->used_bytes, a, sizeof(a)),
			 vg_format_bytes(n->used_bytes, b, sizeof(b)), vg_format_bytes(sp.peak_bytes, pk, sizeof(pk)), when);
	if (!sp.denied_count) {
		vg_strbuf_str(out, "no denials\n");
		return;
	}
	vg_report_clock(sp.first_denial_ns, when, sizeof(when));
	vg_strbuf_printf(out, "%" PRIu64 " %s (%s), the first by %s\n", sp.denied_count,
			 vg_plural(sp.denied_count, "denial", "denials"), vg_format_bytes(sp.denied_bytes, db, sizeof(db)),
			 when);
}

static void vg_diff_between(const struct vg_diff *d, const struct vg_diff_dev *p, long np, struct vg_strbuf *out)
{
	long i, both = 0;

	for (i = 0; i < np; i++)
		both += p[i].o && p[i].n;
	if (!both)
		return;
	if (d->o->time_ns >= d->n->time_ns)     /* nothing between (the header says which is newer) */
		return;
	if (d->n->schema_revision < 2) {
		vg_strbuf_str(out, "  between the reports: the second report has no timeline (report revision 1)\n");
		return;
	}
	vg_strbuf_str(out, "  between the reports (from the second report's timeline):\n");
	for (i = 0; i < np; i++)
		if (p[i].o && p[i].n)
			vg_diff_between_dev(d, p[i].o, p[i].n, out);
}

/* ---- call sites ---- */

/* "site 3 via cuMemAlloc_v2", "site 11 (was site 3) via ..." when the ids differ between processes */
static void vg_diff_site_name(struct vg_strbuf *out, const struct vg_diff_row *r)
{
	const struct vg_report_site *s = r->n ? r->n : r->o;

	vg_strbuf_printf(out, "site %" PRIu32, s->id);
	if (r->n && r->o && r->o->id != r->n->id)
		vg_strbuf_printf(out, " (was site %" PRIu32 ")", r->o->id);
	vg_strbuf_str(out, " via ");
	vg_text_str(out, s->api[0] ? s->api : "?", sizeof(s->api));
}

static void vg_diff_row_text(const struct vg_diff *d, struct vg_strbuf *out, const struct vg_diff_row *r,
			     size_t width)
{
	char lead[48], now[32], was[32];
	const struct vg_report_site *o = r->o, *n = r->n;

	if (r->kind == VG_DIFF_SAME)
		vg_format_bytes(n->live_bytes, lead, sizeof(lead));
	else
		vg_diff_bytes(r->kind == VG_DIFF_SHRANK || r->kind == VG_DIFF_GONE ? -1 : 1, r->dbytes, lead,
			      sizeof(lead));
	vg_strbuf_str(out, "    ");
	vg_text_pad(out, lead, width);
	vg_strbuf_str(out, "  (");
	switch (r->kind) {
	case VG_DIFF_GREW:
	case VG_DIFF_SHRANK:
		vg_strbuf_printf(out, "now %s in %" PRIu64 " %s, was %s in %" PRIu64 ")  ",
				 vg_format_bytes(n->live_bytes, now, sizeof(now)), n->live_count,
				 vg_plural(n->live_count, "allocation", "allocations"),
				 vg_format_bytes(o->live_bytes, was, sizeof(was)), o->live_count);
		break;
	case VG_DIFF_NEW:
	case VG_DIFF_GONE:
		vg_strbuf_printf(out, "in %" PRIu64 " %s)  ", r->dcount, vg_plural(r->dcount, "allocation", "allocations"));
		break;
	default:
		vg_strbuf_printf(out, "in %" PRIu64 " %s", n->live_count,
				 vg_plural(n->live_count, "allocation", "allocations"));
		if (o->live_count != n->live_count)
			vg_strbuf_printf(out, ", was %" PRIu64, o->live_count);
		vg_strbuf_str(out, ")  ");
		break;
	}
	vg_diff_site_name(out, r);
	vg_strbuf_str(out, "\n");
	vg_diff_site_frames(out, n ? d->n : d->o, n ? n : o);
}

static void vg_diff_section(const struct vg_diff *d, struct vg_strbuf *out, enum vg_diff_kind k, size_t max_rows)
{
	const struct vg_diff_row *rows = d->rows + d->first[k];
	size_t n = d->count[k], shown = n < max_rows ? n : max_rows, i, width = 0;
	int sign = k == VG_DIFF_SHRANK || k == VG_DIFF_GONE ? -1 : 1;
	uint64_t rest = 0;
	char total[48];

	if (n == 0)
		return;
	if (k == VG_DIFF_SAME)
		vg_format_bytes(d->bytes[k], total, sizeof(total));
	else
		vg_diff_bytes(sign, d->bytes[k], total, sizeof(total));
	vg_strbuf_printf(out, "  %s: %zu call %s, %s\n", vg_diff_kind_name[k], n, vg_plural(n, "site", "sites"), total);
	for (i = 0; i < shown; i++) {
		char lead[48];
		if (k == VG_DIFF_SAME)
			vg_format_bytes(rows[i].n->live_bytes, lead, sizeof(lead));
		else
			vg_diff_bytes(sign, rows[i].dbytes, lead, sizeof(lead));
		if (vg_text_width(lead, strlen(lead)) > width)
			width = vg_text_width(lead, strlen(lead));
	}
	for (i = 0; i < shown; i++)
		vg_diff_row_text(d, out, &rows[i], width);
	for (i = shown; i < n; i++)
		rest += k == VG_DIFF_SAME ? rows[i].n->live_bytes : rows[i].dbytes;
	if (n > shown) {
		if (k == VG_DIFF_SAME)
			vg_format_bytes(rest, total, sizeof(total));
		else
			vg_diff_bytes(sign, rest, total, sizeof(total));
		vg_strbuf_printf(out, "    and %zu more (%s)\n", n - shown, total);
	}
}

/* ---- streams ---- */

/* The frame line of a stream's site, from whichever report knows it; "site 7" (or "site 7 of the first report"). */
static void vg_diff_stream_site(const struct vg_diff *d, uint64_t key, struct vg_report_frame_line *line,
				struct vg_strbuf *name)
{
	uint32_t id = (uint32_t)key;
	const struct vg_report *r = key >> 32 ? d->o : d->n;
	const struct vg_report_site *s = id ? vg_diff_find(r, id, NULL) : NULL;

	if (!s && d->by_id && id && (s = vg_diff_find(d->o, id, NULL)) != NULL)
		r = d->o;
	line->r = r;
	line->frame = s && s->frames && s->nframes ? &s->frames[vg_report_runtime_prefix(s)] : NULL;
	if (name)
		vg_strbuf_printf(name, "site %" PRIu32 "%s", id, key >> 32 ? " of the first report" : "");
}

static void vg_diff_streams(const struct vg_diff *d, struct vg_strbuf *out, size_t max_rows)
{
	const struct vg_report *o = d->o, *n = d->n;
	struct vg_diff_streams s;
	size_t i, changed;
	char a[64], b[64];

	if (!o->streams_created && !n->streams_created && !(o->stream_live && o->nstream_live) &&
	    !(n->stream_live && n->nstream_live) && !(o->stream_events && o->nstream_events) &&
	    !(n->stream_events && n->nstream_events))
		return;
	if (vg_diff_streams_init(d, &s) != 0) {
		out->failed = 1;
		return;
	}
	/* One line of totals; then what changed, by site. */
	if (s.olive == s.nlive_total)
		vg_strbuf_printf(out, "  streams: live %" PRIu64 " (no change)", s.nlive_total);
	else
		vg_strbuf_printf(out, "  streams: live %" PRIu64 " -> %" PRIu64 " (%s%" PRIu64 ")", s.olive, s.nlive_total,
				 s.nlive_total > s.olive ? "+" : "-", vg_absdiff(s.olive, s.nlive_total));
	vg_diff_counter(d, o->streams_created, n->streams_created, a, sizeof(a));
	vg_diff_counter(d, o->streams_destroyed, n->streams_destroyed, b, sizeof(b));
	vg_strbuf_printf(out, "; created %s, destroyed %s", a, b);
	vg_diff_counter(d, s.oev, s.nev_total, a, sizeof(a));
	vg_strbuf_printf(out, "; destroyed with work queued %s\n", a);

	for (i = changed = 0; i < s.nlive; i++) {
		struct vg_report_frame_line line = { NULL, NULL, NULL };
		struct vg_strbuf name = { 0 };
		uint64_t delta = vg_absdiff(s.live[i].oc, s.live[i].nc);
		if (delta == 0)
			continue;
		if (changed++ >= max_rows)
			continue;
		vg_diff_stream_site(d, s.live[i].key[0], &line, &name);
		vg_strbuf_printf(out, "    %s%" PRIu64 " live %s created at %s (now %" PRIu64 ")\n",
				 s.live[i].nc > s.live[i].oc ? "+" : "-", delta, vg_plural(delta, "stream", "streams"),
				 name.data ? name.data : "?", s.live[i].nc);
		if (name.failed)
			out->failed = 1;
		vg_strbuf_free(&name);
		vg_report_frames_text(out, &line, 1, 6);
	}
	if (changed > max_rows)
		vg_strbuf_printf(out, "    and %zu more creation sites\n", changed - max_rows);
	for (i = changed = 0; i < s.nev; i++) {
		static const char *const labels[2] = { "created:", "destroyed:" };
		struct vg_report_frame_line lines[2];
		struct vg_strbuf cn = { 0 }, dn = { 0 };
		uint64_t delta = vg_absdiff(s.ev[i].oc, s.ev[i].nc);
		size_t j;
		if (delta == 0)
			continue;
		if (changed++ >= max_rows)
			continue;
		for (j = 0; j < 2; j++)
			lines[j].label = labels[j];
		vg_diff_stream_site(d, s.ev[i].key[0], &lines[0], &cn);
		vg_diff_stream_site(d, s.ev[i].key[1], &lines[1], &dn);
		vg_strbuf_printf(out, "    %s%" PRIu64 " destroyed with work queued: created at %s, destroyed at %s%s\n",
				 s.ev[i].nc > s.ev[i].oc ? "+" : "-", delta, cn.data ? cn.data : "?", dn.data ? dn.data : "?",
				 s.ev[i].synchronized ? " (waited for: VRAMGUARD_STREAM_CHECK=sync)" : "");
		if (cn.failed || dn.failed)
			out->failed = 1;
		vg_strbuf_free(&cn);
		vg_strbuf_free(&dn);
		vg_report_frames_text(out, lines, 2, 6);
	}
	if (changed > max_rows)
		vg_strbuf_printf(out, "    and %zu more create/destroy site pairs\n", changed - max_rows);
	vg_diff_streams_fini(&s);
}

/* ---- the whole ---- */

static void vg_diff_header(const struct vg_diff *d, struct vg_strbuf *out)
{
	const struct vg_report *o = d->o, *n = d->n;
	char to[40], tn[40], gap[48];
	bool same_host = strncmp(o->hostname, n->hostname, sizeof(o->hostname)) == 0;

	vg_report_time(o->time_ns, 0, to, sizeof(to));
	vg_report_time(n->time_ns, 0, tn, sizeof(tn));
	vg_diff_interval(o->time_ns, n->time_ns, gap, sizeof(gap));
	if (o->pid == n->pid && same_host) {
		vg_strbuf_printf(out, "vramguard: diff of pid %d on ", n->pid);
		vg_text_str(out, n->hostname[0] ? n->hostname : "?", sizeof(n->hostname));
		vg_strbuf_printf(out, ": report #%" PRIu64 " (%s) -> report #%" PRIu64 " (%s), %s\n", o->sequence, to,
				 n->sequence, tn, gap);
	} else {
		vg_strbuf_printf(out, "vramguard: diff of pid %d on ", o->pid);
		vg_text_str(out, o->hostname[0] ? o->hostname : "?", sizeof(o->hostname));
		vg_strbuf_printf(out, ", report #%" PRIu64 " (%s) -> pid %d on ", o->sequence, to, n->pid);
		vg_text_str(out, n->hostname[0] ? n->hostname : "?", sizeof(n->hostname));
		vg_strbuf_printf(out, ", report #%" PRIu64 " (%s), %s\n", n->sequence, tn, gap);
	}
	if (!d->by_id) {
		if (o->pid == n->pid && same_host)
			vg_strbuf_str(out, "  different processes (same pid, but the report number does not advance): sites "
				    "matched by call stack\n");
		else
			vg_strbuf_str(out, "  different processes: sites matched by call stack\n");
	}
	if (d->depth)
		vg_strbuf_printf(out, "  note: call stacks recorded %d and %d frames deep: compared on the first %" PRIu32
				 "\n", o->backtrace_depth, n->backtrace_depth, d->depth);
	if ((o->pid == n->pid && same_host && o->sequence > n->sequence) || o->time_ns > n->time_ns)
		vg_strbuf_str(out, "  note: the first report is the newer one (diffed as given: first -> second)\n");
}

int vg_report_diff_text(const struct vg_report *old, const struct vg_report *new, const struct vg_diff_opts *o,
			struct vg_strbuf *out)
{
	size_t max_rows = o && o->max_rows ? o->max_rows : VG_DIFF_ROWS_DEFAULT;
	struct vg_diff d;
	struct vg_diff_dev *p = NULL;
	long np;
	int rc, k;

	if (out->failed)
		return -ENOMEM;
	rc = vg_diff_init(&d, old, new);
	if (rc)
		return rc;
	vg_diff_header(&d, out);
	rc = vg_diff_devices(&d, out);
	np = rc ? -ENOMEM : vg_diff_devices_match(old, new, &p);
	if (rc || np < 0) {
		vg_diff_fini(&d);
		return -ENOMEM;
	}
	vg_diff_between(&d, p, np, out);
	vg_diff_growth(&d, p, np, out);
	if (!vg_diff_any_change(&d, p, np)) {
		vg_strbuf_str(out, "  no change in live allocations\n");
	} else if (!d.count[VG_DIFF_GREW] && !d.count[VG_DIFF_NEW] && !d.count[VG_DIFF_SHRANK] &&
		   !d.count[VG_DIFF_GONE]) {
		/* The devices moved but no site did: sites were off, or memory changed hands within them. */
		vg_strbuf_printf(out, "  live allocations %" PRIu64 " -> %" PRIu64 ", but no call site changed%s\n",
				 old->allocs_live, new->allocs_live,
				 d.no == 0 && d.nn == 0 && (old->backtrace_depth <= 0 || new->backtrace_depth <= 0)
					 ? " (call sites are off: VRAMGUARD_BACKTRACE=0)"
					 : "");
	}
	for (k = 0; k < VG_DIFF_NKINDS; k++)
		if (k != VG_DIFF_SAME || (o && o->all))
			vg_diff_section(&d, out, (enum vg_diff_kind)k, max_rows);
	vg_diff_streams(&d, out, max_rows);
	free(p);
	vg_diff_fini(&d);
	return out->failed ? -ENOMEM : 0;
}

/* ---- the exit status ---- */

int vg_report_diff_grew(const struct vg_report *old, const struct vg_report *new)
{
	struct vg_diff d;
	struct vg_diff_dev *p;
	long np, i;
	int grew, rc = vg_diff_init(&d, old, new);

	if (rc)
		return rc;
	grew = d.count[VG_DIFF_GREW] > 0 || d.count[VG_DIFF_NEW] > 0;
	vg_diff_fini(&d);
	if (grew)
		return 1;
	np = vg_diff_devices_match(old, new, &p);
	if (np < 0)
		return -ENOMEM;
	for (i = 0; i < np && !grew; i++)
		grew = p[i].n && p[i].n->used_bytes > (p[i].o ? p[i].o->used_bytes : 0);
	free(p);
	return grew;
}
