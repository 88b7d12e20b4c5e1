/* `vramguard diff --html`: the comparison of cli/diff_compare.c as a page (report/html.h's pieces): the devices,
 * each GPU's timeline with the time between the reports marked, an icicle graph of what grew, and a table per
 * section (grew, new, shrank, gone). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/diff_compare.h"
#include "cli/diff_html.h"
#include "report/html.h"

static const char *const vg_dh_title[VG_DIFF_NKINDS] = { "Grew", "New", "Shrank", "Gone", "Unchanged" };
static const char *const vg_dh_id[VG_DIFF_NKINDS] = { "grew", "new", "shrank", "gone", "same" };

static void vg_dh_signed(struct vg_strbuf *b, int neg, uint64_t v)
{
	vg_strbuf_printf(b, "<span class=\"%s\">%s", neg ? "shrank" : v ? "grew" : "", v ? (neg ? "-" : "+") : "");
	vg_html_bytes(b, v);
	vg_strbuf_str(b, "</span>");
}

static void vg_dh_devices(struct vg_strbuf *b, const struct vg_diff *d, const struct vg_diff_dev *p, long np)
{
	long i;
	vg_strbuf_str(b, "<h2 id=\"devices\">GPUs</h2>\n<table class=\"devices\"><thead><tr><th>GPU</th>"
		      "<th class=\"n\">used before</th><th class=\"n\">used after</th><th class=\"n\">change</th>"
		      "<th class=\"n\">peak after</th><th class=\"n\">denied before</th><th class=\"n\">denied after</th>"
		      "</tr></thead><tbody>\n");
	for (i = 0; i < np; i++) {
		const struct vg_report_device *o = p[i].o, *n = p[i].n;
		uint64_t ou = o ? o->used_bytes : 0, nu = n ? n->used_bytes : 0;
		vg_strbuf_printf(b, "<tr><td>%d</td><td class=\"n\">", n ? n->ordinal : o->ordinal);
		vg_html_bytes(b, ou);
		vg_strbuf_str(b, "</td><td class=\"n\">");
		vg_html_bytes(b, nu);
		vg_strbuf_str(b, "</td><td class=\"n\">");
		vg_dh_signed(b, nu < ou, vg_absdiff(nu, ou));
		vg_strbuf_str(b, "</td><td class=\"n\">");
		vg_html_bytes(b, n ? n->peak_bytes : 0);
		vg_strbuf_printf(b, "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td></tr>\n",
				 o ? o->denied_count : 0, n ? n->denied_count : 0);
	}
	vg_strbuf_str(b, "</tbody></table>\n");
	for (i = 0; i < np; i++) {
		const struct vg_report_device *o = p[i].o, *n = p[i].n;
		struct vg_report_timeline_span sp;
		uint64_t base_c = 0, base_b = 0;
		size_t k;
		if (!n)
			continue;
		vg_strbuf_printf(b, "<h3>GPU %d: usage over time, and between the reports</h3>\n", n->ordinal);
		if (d->by_id && o) {
			base_c = o->denied_count;
			base_b = o->denied_bytes;
		} else {
			for (k = 0; n->timeline_points && k < n->ntimeline_points &&
				    n->timeline_points[k].time_ns <= d->o->time_ns; k++) {
				base_c = n->timeline_points[k].denied_count;
				base_b = n->timeline_points[k].denied_bytes;
			}
		}
		vg_report_timeline_span(n, d->o->time_ns, base_c, base_b, &sp);
		if (sp.npoints) {
			char when[16];
			vg_report_clock(sp.peak_ns, when, sizeof(when));
			vg_strbuf_str(b, "<p class=\"between\">Between the reports: highest peak ");
			vg_html_bytes(b, sp.peak_bytes);
			vg_strbuf_printf(b, " by %s UTC; ", when);
			if (sp.denied_count) {
				vg_report_clock(sp.first_denial_ns, when, sizeof(when));
				vg_strbuf_printf(b, "<span class=\"bad\">%" PRIu64 " %s (", sp.denied_count,
						 sp.denied_count == 1 ? "denial" : "denials");
				vg_html_bytes(b, sp.denied_bytes);
				vg_strbuf_printf(b, "), the first by %s UTC</span>.</p>\n", when);
			} else {
				vg_strbuf_str(b, "no denials.</p>\n");
			}
		}
		vg_html_timeline(b, d->n, n, d->o->time_ns, "old report");
	}
}

static void vg_dh_section(struct vg_strbuf *b, const struct vg_diff *d, enum vg_diff_kind k)
{
	size_t i, shown = 0;
	if (!d->count[k])
		return;
	vg_strbuf_printf(b, "<h3 id=\"%s\">%s: %zu call %s, ", vg_dh_id[k], vg_dh_title[k], d->count[k],
			 d->count[k] == 1 ? "site" : "sites");
	vg_dh_signed(b, k == VG_DIFF_SHRANK || k == VG_DIFF_GONE, d->bytes[k]);
	vg_strbuf_printf(b, "</h3>\n<table class=\"sort diff-%s\"><thead><tr><th class=\"n\">change</th>"
			 "<th class=\"n\">allocations</th><th class=\"n\">live before</th><th class=\"n\">live after</th>"
			 "<th>api</th><th>top frame (click for the stack)</th></tr></thead><tbody>\n", vg_dh_id[k]);
	for (i = d->first[k]; i < d->nrows && d->rows[i].kind == k && shown < VG_HTML_SITES; i++, shown++) {
		const struct vg_diff_row *row = &d->rows[i];
		const struct vg_report_site *s = row->n ? row->n : row->o;
		int neg = k == VG_DIFF_SHRANK || k == VG_DIFF_GONE;
		vg_strbuf_printf(b, "<tr><td class=\"n\" data-v=\"%s%" PRIu64 "\">", neg ? "-" : "", row->dbytes);
		vg_dh_signed(b, neg, row->dbytes);
		vg_strbuf_printf(b, "</td><td class=\"n\" data-v=\"%s%" PRIu64 "\">%s%" PRIu64 "</td><td class=\"n\" "
				 "data-v=\"%" PRIu64 "\">", neg ? "-" : "", row->dcount, row->dcount ? (neg ? "-" : "+") : "",
				 row->dcount, row->o ? row->o->live_bytes : 0);
		vg_html_bytes(b, row->o ? row->o->live_bytes : 0);
		vg_strbuf_printf(b, "</td><td class=\"n\" data-v=\"%" PRIu64 "\">", row->n ? row->n->live_bytes : 0);
		vg_html_bytes(b, row->n ? row->n->live_bytes : 0);
		vg_strbuf_str(b, "</td><td class=\"mono\">");
		vg_html_esc(b, s->api, sizeof(s->api));
		vg_strbuf_str(b, "</td><td>");
		vg_html_site_frames(b, row->n ? d->n : d->o, s);
		vg_strbuf_str(b, "</td></tr>\n");
	}
	vg_strbuf_str(b, "</tbody></table>\n");
	if (d->count[k] > shown)
		vg_strbuf_printf(b, "<p class=\"note\">and %zu more (vramguard diff --all shows every row)</p>\n",
				 d->count[k] - shown);
}

int vg_report_diff_html(const struct vg_report *o, const struct vg_report *n, const char *oname, const char *nname,
			struct vg_strbuf *out)
{
	struct vg_diff d;
	struct vg_diff_dev *pairs = NULL;
	struct vg_html_weight *w;
	long np;
	size_t i, nw = 0;
	int rc;

	if (vg_diff_init(&d, o, n))
		return -ENOMEM;
	np = vg_diff_devices_match(o, n, &pairs);
	w = calloc(d.nrows ? d.nrows : 1, sizeof(*w));
	if (np < 0 || !w) {
		free(w);
		free(pairs);
		vg_diff_fini(&d);
		return -ENOMEM;
	}
	vg_html_begin(out, "vramguard diff");
	vg_strbuf_str(out, "<h1>vramguard diff: what changed between two reports</h1>\n<h2>Before: <code>");
	vg_html_esc(out, oname, strlen(oname));
	vg_strbuf_str(out, "</code></h2>\n");
	vg_html_header(out, o);
	vg_strbuf_str(out, "<h2>After: <code>");
	vg_html_esc(out, nname, strlen(nname));
	vg_strbuf_str(out, "</code></h2>\n");
	vg_html_header(out, n);
	vg_strbuf_printf(out, "<p class=\"note\">%s</p>\n", d.by_id ? "One process: call sites matched by id."
			 : "Two processes: call sites matched by call stack (module file name and offset).");
	vg_dh_devices(out, &d, pairs, np);
	vg_strbuf_str(out, "<h2 id=\"icicle\">What grew, by call stack</h2>\n");
	for (i = 0; i < d.nrows; i++)
		if ((d.rows[i].kind == VG_DIFF_GREW || d.rows[i].kind == VG_DIFF_NEW) && d.rows[i].n)
			w[nw++] = (struct vg_html_weight){ d.rows[i].n, d.rows[i].dbytes, d.rows[i].dcount, n };
	rc = vg_html_icicle(out, w, nw, "growth");
	vg_strbuf_str(out, "<h2 id=\"sites\">Call sites</h2>\n");
	for (i = 0; i < VG_DIFF_SAME; i++)
		vg_dh_section(out, &d, (enum vg_diff_kind)i);
	if (!d.count[VG_DIFF_GREW] && !d.count[VG_DIFF_NEW] && !d.count[VG_DIFF_SHRANK] && !d.count[VG_DIFF_GONE])
		vg_strbuf_str(out, "<p>No call site changed.</p>\n");
	vg_html_streams(out, n);
	vg_html_end(out);
	free(w);
	free(pairs);
	vg_diff_fini(&d);
	return rc ? rc : vg_strbuf_result(out);
}
