/* `vramguard diff`'s growth lines (revision 5 reports): per device, the sites growing in either report with their
 * rates in each and between the two, and the forecast then and now. */
#include "cli/diff_growth.h"
#include "config/config.h"

#include <inttypes.h>
#include <stdio.h>

#define VG_DIFF_GROWING_SHOWN 10        /* growing sites per device before "and N more" */

static const struct vg_report_growth_site *vg_dg_find(const struct vg_report_device *dv, uint32_t site)
{
	for (size_t i = 0; dv && dv->growth_set && dv->growth_sites && i < dv->ngrowth_sites; i++)
		if (dv->growth_sites[i].site == site)
			return &dv->growth_sites[i];
	return NULL;
}

static bool vg_dg_growing(const struct vg_report_growth_site *g)
{
	return g && g->growing && g->rate_set;
}

/* The other report's twin of site `id` of r (by id within one process, else by stack), or NULL. */
static const struct vg_report_site *vg_dg_twin(const struct vg_diff *d, bool in_new, uint32_t id)
{
	size_t i;
	const struct vg_report *r = in_new ? d->n : d->o, *other = in_new ? d->o : d->n;
	if (!vg_diff_find(r, id, &i))
		return NULL;
	size_t j = in_new ? d->nmatch[i] : d->omatch[i];
	return j == VG_DIFF_NONE ? NULL : &other->sites[j];
}

/* "+1.20 GiB/h" or "-3.00 MiB/h": a site's live bytes from one report to the other, per hour. */
static void vg_dg_between(const struct vg_diff *d, const struct vg_report_site *o, const struct vg_report_site *n,
			  struct vg_strbuf *out)
{
	char b[32];
	if (!o || !n || d->n->time_ns <= d->o->time_ns)
		return;
	double h = (double)(d->n->time_ns - d->o->time_ns) / 3.6e12;
	double delta = (double)n->live_bytes - (double)o->live_bytes, rate = delta / h;
	double mag = rate < 0 ? -rate : rate;
	vg_strbuf_printf(out, "; %c%s/h between the reports", rate < 0 ? '-' : '+',
			 vg_format_bytes(mag >= 1.8e19 ? UINT64_MAX : (uint64_t)mag, b, sizeof(b)));
}

/* One site: growing in the new report (in_new: g its entry, og the old report's entry for its twin, if any), or
 * growing only in the old one (og, id the old report's). */
static void vg_dg_site(const struct vg_diff *d, const struct vg_report_growth_site *g,
		       const struct vg_report_growth_site *og, uint32_t id, bool in_new, struct vg_strbuf *out)
{
	char a[32];
	const struct vg_report_site *twin = vg_dg_twin(d, in_new, id), *self = vg_diff_find(in_new ? d->n : d->o, id, NULL);
	vg_strbuf_str(out, "      ");
	vg_report_site_name(out, in_new ? d->n : d->o, id);
	if (!in_new)
		vg_strbuf_printf(out, ": no longer growing (was +%s/h)", vg_format_bytes(og->bytes_per_hour, a, sizeof(a)));
	else {
		vg_strbuf_printf(out, ": +%s/h", vg_format_bytes(g->bytes_per_hour, a, sizeof(a)));
		if (vg_dg_growing(og))
			vg_strbuf_printf(out, " (was +%s/h)", vg_format_bytes(og->bytes_per_hour, a, sizeof(a)));
		else
			vg_strbuf_str(out, twin ? " (not growing in the first report)" : " (not in the first report)");
	}
	if (in_new)
		vg_dg_between(d, twin, self, out);
	else
		vg_dg_between(d, self, twin, out);
	vg_strbuf_str(out, "\n");
}

/* The forecast now, and the first report's. */
static void vg_dg_forecast(const struct vg_report_device *o, const struct vg_report_device *n, struct vg_strbuf *out)
{
	char a[48], b[48];
	vg_strbuf_str(out, "      ");
	if (n->forecast_set) {
		vg_report_duration(n->forecast_s, a, sizeof(a));
		vg_strbuf_printf(out, "at the current rate the quota is reached in %s", a);
	} else {
		vg_strbuf_str(out, n->quota_set ? "no forecast now (nothing grows)" : "no forecast (no quota)");
	}
	if (o && o->forecast_set) {
		vg_report_duration(o->forecast_s, b, sizeof(b));
		vg_strbuf_printf(out, "; the first report said %s", b);
	}
	vg_strbuf_str(out, "\n");
}

static size_t vg_dg_count(const struct vg_report_device *dv)
{
	size_t n = 0;
	for (size_t i = 0; dv && dv->growth_set && dv->growth_sites && i < dv->ngrowth_sites; i++)
		n += vg_dg_growing(&dv->growth_sites[i]);
	return n;
}

static void vg_dg_device(const struct vg_diff *d, const struct vg_report_device *o, const struct vg_report_device *n,
			 struct vg_strbuf *out)
{
	size_t shown = 0, total = 0;
	vg_strbuf_printf(out, "    GPU %d:\n", n->ordinal);
	for (size_t i = 0; n->growth_set && n->growth_sites && i < n->ngrowth_sites; i++) {
		const struct vg_report_growth_site *g = &n->growth_sites[i];
		if (!vg_dg_growing(g))
			continue;
		const struct vg_report_site *twin = vg_dg_twin(d, true, g->site);
		if (total++ < VG_DIFF_GROWING_SHOWN && ++shown)
			vg_dg_site(d, g, twin ? vg_dg_find(o, twin->id) : NULL, g->site, true, out);
	}
	for (size_t i = 0; o && o->growth_set && o->growth_sites && i < o->ngrowth_sites; i++) {
		const struct vg_report_growth_site *og = &o->growth_sites[i];
		if (!vg_dg_growing(og))
			continue;
		const struct vg_report_site *twin = vg_dg_twin(d, false, og->site);
		if (twin && vg_dg_growing(vg_dg_find(n, twin->id)))
			continue;       /* listed above */
		if (total++ < VG_DIFF_GROWING_SHOWN && ++shown)
			vg_dg_site(d, NULL, og, og->site, false, out);
	}
	if (total > shown)
		vg_strbuf_printf(out, "      and %zu more\n", total - shown);
	vg_dg_forecast(o, n, out);
}

void vg_diff_growth(const struct vg_diff *d, const struct vg_diff_dev *p, long np, struct vg_strbuf *out)
{
	long i, any = 0;
	for (i = 0; i < np; i++)
		any += p[i].o && p[i].n && (vg_dg_count(p[i].o) || vg_dg_count(p[i].n));
	if (!any)
		return;
	if (d->o->schema_revision < 5 || d->n->schema_revision < 5) {
		vg_strbuf_printf(out, "  growing call sites: the %s report has no growth data (report revision %" PRIu32
				 ")\n", d->o->schema_revision < 5 ? "first" : "second",
				 d->o->schema_revision < 5 ? (d->o->schema_revision ? d->o->schema_revision : 1)
							   : (d->n->schema_revision ? d->n->schema_revision : 1));
		return;
	}
	vg_strbuf_str(out, "  growing call sites (the second report's rates, the first's, and the change of their live "
		      "bytes between the two):\n");
	for (i = 0; i < np; i++)
		if (p[i].o && p[i].n && (vg_dg_count(p[i].o) || vg_dg_count(p[i].n)))
			vg_dg_device(d, p[i].o, p[i].n, out);
}
