/* The JSON form of a report: the versioned document for tools (docs/report-format.md). */
#include "report/report.h"

#include <inttypes.h>
#include <string.h>

static void vg_json_devices(const struct vg_report *r, struct vg_strbuf *b)
{
	size_t i, n = r->devices ? r->ndevices : 0;

	vg_strbuf_str(b, "  \"devices\": [");
	for (i = 0; i < n; i++) {
		const struct vg_report_device *d = &r->devices[i];
		vg_strbuf_str(b, i ? ",\n    {" : "\n    {");
		vg_json_kint(b, "", "ordinal", d->ordinal);
		vg_json_kstr(b, ", ", "uuid", d->uuid, sizeof(d->uuid));
		if (d->quota_set)
			vg_json_ku64(b, ", ", "quota_bytes", d->quota_bytes);
		else
			vg_strbuf_str(b, ", \"quota_bytes\": null");
		if (d->soft_set) {
			vg_json_ku64(b, ", ", "soft_limit_bytes", d->soft_bytes);
			vg_json_kstr(b, ", ", "soft_limit_source", d->soft_source, sizeof(d->soft_source));
		} else {
			vg_strbuf_str(b, ", \"soft_limit_bytes\": null, \"soft_limit_source\": null");
		}
		vg_json_ku64(b, ", ", "total_bytes", d->total_bytes);
		vg_json_ku64(b, ", ", "used_bytes", d->used_bytes);
		vg_json_ku64(b, ", ", "peak_bytes", d->peak_bytes);
		vg_json_ku64(b, ", ", "allocs", d->allocs);
		vg_json_ku64(b, ", ", "frees", d->frees);
		vg_json_ku64(b, ", ", "denied_count", d->denied_count);
		vg_json_ku64(b, ", ", "denied_bytes", d->denied_bytes);
		vg_json_ku64(b, ", ", "largest_bytes", d->largest_bytes);
		vg_json_ku64(b, ", ", "allocated_bytes", d->allocated_bytes);
		vg_json_ku64(b, ", ", "pool_reserved_bytes", d->pool_reserved_bytes);
		vg_json_ku64(b, ", ", "pool_live_bytes", d->pool_live_bytes);
		vg_json_ku64(b, ", ", "graph_bytes", d->graph_bytes);
		vg_json_ku64(b, ", ", "driver_bytes", d->driver_bytes);
		vg_json_ku64(b, ", ", "driver_headroom_bytes", d->driver_headroom_bytes);
		vg_strbuf_str(b, d->driver_measured ? ", \"driver_measured\": true" : ", \"driver_measured\": false");
		if (d->driver_limit_set)
			vg_json_ku64(b, ", ", "driver_limit_bytes", d->driver_limit_bytes);
		else
			vg_strbuf_str(b, ", \"driver_limit_bytes\": null");
		vg_strbuf_str(b, "}");
	}
	vg_strbuf_str(b, n ? "\n  ],\n" : "],\n");
}

static void vg_json_sites(const struct vg_report *r, struct vg_strbuf *b)
{
	size_t i, j, n = r->sites ? r->nsites : 0;

	vg_strbuf_str(b, "  \"sites\": [");
	for (i = 0; i < n; i++) {
		const struct vg_report_site *s = &r->sites[i];
		size_t nf = s->frames ? s->nframes : 0;
		vg_strbuf_str(b, i ? ",\n    {" : "\n    {");
		vg_json_ku64(b, "", "id", s->id);
		vg_json_kstr(b, ", ", "api", s->api, sizeof(s->api));
		vg_json_ku64(b, ", ", "live_count", s->live_count);
		vg_json_ku64(b, ", ", "live_bytes", s->live_bytes);
		vg_json_ku64(b, ", ", "total_allocs", s->total_allocs);
		vg_json_ku64(b, ", ", "total_bytes", s->total_bytes);
		vg_strbuf_str(b, ", \"frames\": [");
		for (j = 0; j < nf; j++) {
			const struct vg_report_frame *f = &s->frames[j];
			vg_strbuf_str(b, j ? ",\n      {" : "\n      {");
			vg_json_kaddr(b, "", "address", f->address);
			vg_json_kstr(b, ", ", "module", f->module, sizeof(f->module));
			vg_json_kaddr(b, ", ", "module_offset", f->module_offset);
			vg_json_kstr(b, ", ", "symbol", f->symbol, sizeof(f->symbol));
			vg_json_ku64(b, ", ", "offset", f->symbol_offset);
			vg_strbuf_str(b, "}");
		}
		vg_strbuf_str(b, nf ? "\n    ]}" : "]}");
	}
	vg_strbuf_str(b, n ? "\n  ],\n" : "],\n");
}

static void vg_json_allocations(const struct vg_report *r, struct vg_strbuf *b)
{
	size_t i, n = r->allocs ? r->nallocs : 0;

	vg_strbuf_str(b, "  \"allocations\": {");
	vg_json_ku64(b, "", "live", r->allocs_live);
	vg_json_ku64(b, ", ", "listed", n);
	vg_strbuf_str(b, ", \"largest\": [");
	for (i = 0; i < n; i++) {
		const struct vg_report_alloc *a = &r->allocs[i];
		vg_strbuf_str(b, i ? ",\n    {" : "\n    {");
		vg_json_kaddr(b, "", "address", a->address);
		vg_json_ku64(b, ", ", "bytes", a->bytes);
		vg_json_kint(b, ", ", "device", a->device);
		vg_json_kstr(b, ", ", "api", a->api, sizeof(a->api));
		vg_json_ku64(b, ", ", "site", a->site);
		vg_json_ku64(b, ", ", "thread", a->thread);
		vg_json_ku64(b, ", ", "time_ns", a->time_ns);
		vg_strbuf_str(b, "}");
	}
	vg_strbuf_str(b, n ? "\n  ]},\n" : "]},\n");
}

static void vg_json_streams(const struct vg_report *r, struct vg_strbuf *b)
{
	size_t i, nev = r->stream_events ? r->nstream_events : 0, nlive = r->stream_live ? r->nstream_live : 0;

	vg_strbuf_str(b, "  \"streams\": {");
	vg_json_ku64(b, "", "created", r->streams_created);
	vg_json_ku64(b, ", ", "destroyed", r->streams_destroyed);
	vg_strbuf_str(b, ", \"destroyed_pending\": [");
	for (i = 0; i < nev; i++) {
		const struct vg_report_stream_event *e = &r->stream_events[i];
		vg_strbuf_str(b, i ? ",\n    {" : "\n    {");
		vg_json_ku64(b, "", "create_site", e->create_site);
		vg_json_ku64(b, ", ", "destroy_site", e->destroy_site);
		vg_json_ku64(b, ", ", "count", e->count);
		vg_strbuf_printf(b, ", \"synchronized\": %s}", e->synchronized ? "true" : "false");
	}
	vg_strbuf_str(b, nev ? "\n  ], \"live\": [" : "], \"live\": [");
	for (i = 0; i < nlive; i++) {
		const struct vg_report_stream_live *l = &r->stream_live[i];
		vg_strbuf_str(b, i ? ",\n    {" : "\n    {");
		vg_json_ku64(b, "", "create_site", l->create_site);
		vg_json_ku64(b, ", ", "count", l->count);
		vg_json_ku64(b, ", ", "pending", l->pending);
		vg_json_ku64(b, ", ", "capturing", l->capturing);
		vg_strbuf_str(b, "}");
	}
	vg_strbuf_str(b, nlive ? "\n  ]}\n" : "]}\n");
}

int vg_report_render_json(const struct vg_report *r, struct vg_strbuf *out)
{
	char when[96];

	vg_report_time(r->time_ns, 1, when, sizeof(when));
	vg_strbuf_str(out, "{\n");
	vg_json_kstr(out, "  ", "schema", VG_REPORT_SCHEMA, sizeof(VG_REPORT_SCHEMA));
	vg_json_kstr(out, ",\n  ", "reason", r->reason, sizeof(r->reason));
	vg_json_ku64(out, ",\n  ", "sequence", r->sequence);
	vg_json_kint(out, ",\n  ", "pid", r->pid);
	vg_json_kstr(out, ",\n  ", "time", when, sizeof(when));
	vg_json_ku64(out, ",\n  ", "time_ns", r->time_ns);
	vg_json_kstr(out, ",\n  ", "command", r->command, sizeof(r->command));
	vg_json_kstr(out, ",\n  ", "hostname", r->hostname, sizeof(r->hostname));
	vg_json_kstr(out, ",\n  ", "version", r->version, sizeof(r->version));
	vg_json_kstr(out, ",\n  ", "driver", r->driver, sizeof(r->driver));
	vg_json_kint(out, ",\n  ", "backtrace_depth", r->backtrace_depth);
	vg_json_kstr(out, ",\n  ", "count", r->count[0] ? r->count : "allocations", sizeof(r->count));
	vg_strbuf_str(out, ",\n");
	vg_json_devices(r, out);
	vg_json_sites(r, out);
	vg_json_allocations(r, out);
	vg_json_streams(r, out);
	vg_strbuf_str(out, "}\n");
	return vg_strbuf_result(out);
}
