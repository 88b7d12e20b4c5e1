/* Growth in words (revision 5): a device's growing call sites and its forecast for the text form, `vramguard diff`
 * and the library's warning line share these. */
#include "report/report.h"
#include "config/config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define VG_TEXT_GROWING_SHOWN 3         /* growing sites named per device before "and N more" */

void vg_report_duration(uint64_t s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%" PRIu64 " s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 " min %" PRIu64 " s", s / 60, s % 60);
	else if (s < 48 * 3600)
		snprintf(buf, len, "%" PRIu64 " h %" PRIu64 " min", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%" PRIu64 " days %" PRIu64 " h", s / 86400, s / 3600 % 24);
}

void vg_report_site_name(struct vg_strbuf *out, const struct vg_report *r, uint32_t id)
{
	const struct vg_report_site *s = NULL;
	for (size_t i = 0; r->sites && i < r->nsites && !s; i++)
		if (r->sites[i].id == id)
			s = &r->sites[i];
	vg_strbuf_printf(out, "site %" PRIu32, id);
	if (s && s->python && s->npython) {
		const struct vg_report_pyframe *f = &s->python[0];
		vg_strbuf_str(out, " (");
		vg_text_str(out, f->file[0] ? f->file : "?", VG_REPORT_FRAME_STR);
		vg_strbuf_printf(out, ":%" PRIu32 " in ", f->line);
		vg_text_str(out, f->function[0] ? f->function : "?", VG_REPORT_PY_FUNCTION_STR);
		vg_strbuf_str(out, ")");
	} else if (s && s->frames && s->nframes) {
		size_t k = vg_report_runtime_prefix(s);
		vg_strbuf_str(out, " (");
		vg_report_frame_symbol_text(out, &s->frames[k < s->nframes ? k : 0]);
		vg_strbuf_str(out, ")");
	}
}

/* "; at the current rate the quota is reached in 2 h 40 min" (or why there is no forecast) */
static void vg_text_forecast(struct vg_strbuf *out, const struct vg_report_device *d)
{
	char t[48];
	if (!d->quota_set) {
		vg_strbuf_str(out, "; no quota, so no forecast");
	} else if (!d->forecast_set) {
		return;
	} else if (d->forecast_s == 0) {
		vg_strbuf_str(out, "; at the current rate the quota is reached already");
	} else {
		vg_report_duration(d->forecast_s, t, sizeof(t));
		vg_strbuf_printf(out, "; at the current rate the quota is reached in %s", t);
	}
}

/* "+40.00 MiB/h at site 7 (train.py:42 in step)" */
static void vg_text_growing_site(struct vg_strbuf *out, const struct vg_report *r, const struct vg_report_growth_site *g)
{
	char rate[32];
	vg_strbuf_printf(out, "+%s/h at ", vg_format_bytes(g->bytes_per_hour, rate, sizeof(rate)));
	vg_report_site_name(out, r, g->site);
}

void vg_report_growth_text(const struct vg_report *r, const struct vg_report_device *d, struct vg_strbuf *out)
{
	size_t n = d->growth_set && d->growth_sites ? d->ngrowth_sites : 0, growing = 0, shown = 0;
	const struct vg_report_growth_site *one = NULL;
	char rate[32], when[16];
	for (size_t i = 0; i < n; i++)
		if (d->growth_sites[i].growing && d->growth_sites[i].rate_set) {
			growing++;
			one = one ? one : &d->growth_sites[i];
		}
	if (!growing)
		return;
	vg_strbuf_str(out, "       growing: ");
	if (growing == 1)
		vg_text_growing_site(out, r, one);
	else
		vg_strbuf_printf(out, "+%s/h in %zu call sites",
				 vg_format_bytes(d->growth_bytes_per_hour, rate, sizeof(rate)), growing);
	vg_text_forecast(out, d);
	vg_strbuf_str(out, "\n");
	for (size_t i = 0; growing > 1 && i < n; i++) {
		const struct vg_report_growth_site *g = &d->growth_sites[i];
		if (!g->growing || !g->rate_set || shown++ >= VG_TEXT_GROWING_SHOWN)
			continue;
		vg_strbuf_str(out, "         ");
		vg_text_growing_site(out, r, g);
		if (g->growing_since_ns) {
			vg_report_clock(g->growing_since_ns, when, sizeof(when));
			vg_strbuf_printf(out, ", since %s", when);
		}
		vg_strbuf_str(out, "\n");
	}
	if (shown > VG_TEXT_GROWING_SHOWN)
		vg_strbuf_printf(out, "         and %zu more growing\n", shown - VG_TEXT_GROWING_SHOWN);
}
