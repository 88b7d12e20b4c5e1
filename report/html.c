/* The HTML report (report/html.h): the page, its header, the devices, the tables and the streams; the charts are
 * report/html_svg.c's. */
#include "report/html.h"
#include "report/allocator.h"
#include "report/flame.h"
#include "config/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Inline only: the Content-Security-Policy forbids fetching anything. The first script records errors (the test
 * reads them back from the DOM); the last one sorts tables and zooms icicle graphs. The timeline's colours are
 * Okabe and Ito's, told apart with every common colour-vision deficiency: usage blue (#0072b2, peaks a light sky
 * blue), the quota vermillion (#d55e00, dashed), the soft limit orange (#e69f00, dotted), denials reddish purple
 * (#cc79a7); the legend names each. */
static const char vg_html_head[] =
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
	"script-src 'unsafe-inline'; img-src data:\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<script>window.vgErrors=[];function vgErr(m){window.vgErrors.push(String(m));"
	"document.documentElement.setAttribute('data-js-errors',window.vgErrors.join(' | '));}"
	"window.addEventListener('error',function(e){vgErr(e.message||'error');});"
	"window.addEventListener('unhandledrejection',function(e){vgErr(e.reason);});"
	"(function(c){console.error=function(){vgErr(Array.prototype.join.call(arguments,' '));"
	"return c.apply(console,arguments);};})(console.error);</script>\n"
	"<style>\n"
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:0 auto;"
	"max-width:1240px;padding:0 16px 40px;color:#1d1d24;background:#fff}\n"
	"h1{font-size:20px;margin:18px 0 6px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}"
	"h3{font-size:15px;margin:16px 0 6px}\n"
	"dl.hdr{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}dl.hdr dt{color:#666}"
	"dl.hdr dd{margin:0;word-break:break-all}\n"
	"code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:12.5px}\n"
	"table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;"
	"text-align:left;vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;"
	"white-space:nowrap}\n"
	"table.sort th{cursor:pointer;user-select:none}table.sort th[aria-sort=ascending]::after{content:' \\25B2'}"
	"table.sort th[aria-sort=descending]::after{content:' \\25BC'}\n"
	"details summary{cursor:pointer}details ol{margin:4px 0;padding-left:22px}li.py{color:#0b5f7a}\n"
	".note,.legend{color:#555;font-size:13px}.hint{text-decoration:underline dotted #999;cursor:help}"
	".k{display:inline-block;width:14px;height:10px;margin:0 4px 0 10px;"
	"vertical-align:middle}.k.used{background:#0072b2}.k.peak{background:#b9dff5}.k.quota{background:#d55e00}"
	".k.soft{background:#e69f00}.k.denial{background:#cc79a7}.k.py{background:hsl(200,55%,68%)}"
	".k.nat{background:hsl(30,78%,64%)}.k.unres{background:hsl(0,0%,82%)}li.unres{color:#777}\n"
	"svg.timeline{width:100%;max-width:960px;height:auto;font-size:11px}svg text{fill:#333}\n"
	"svg .grid{stroke:#e4e4e4}svg .axisline{stroke:#888}svg .peak{fill:#b9dff5;stroke:none}"
	"svg .used{fill:none;stroke:#0072b2;stroke-width:1.6}\n"
	"svg .quota line{stroke:#d55e00;stroke-dasharray:6 4;stroke-width:1.4}svg .quota text{fill:#a84a00}"
	"svg .soft line{stroke:#e69f00;stroke-dasharray:3 3;stroke-width:1.4}svg .soft text{fill:#8a5f00}\n"
	"svg .denial line{stroke:#cc79a7;stroke-width:1.2}svg .denial path{fill:#cc79a7}"
	"svg .before rect{fill:#f1f1f4}svg .before line{stroke:#555;stroke-dasharray:2 2}\n"
	"svg.icicle{width:100%;height:auto;font:11px ui-monospace,'DejaVu Sans Mono',monospace}"
	"svg.icicle g.fr{cursor:pointer}svg.icicle rect{stroke:#fff;stroke-width:.5}svg.icicle text{fill:#111;"
	"pointer-events:none}svg.icicle g.fr:hover rect{stroke:#000}\n"
	".grew{color:#b71c1c}.shrank{color:#1b5e20}.bad{color:#b71c1c;font-weight:600}\n"
	"</style>\n";

static const char vg_html_script[] =
	"<script>\n(function(){\n"
	"function key(td){var v=td.getAttribute('data-v');return v!==null?parseFloat(v):td.textContent.trim();}\n"
	"document.querySelectorAll('table.sort').forEach(function(t){var hs=t.tHead.rows[0].cells;"
	"Array.prototype.forEach.call(hs,function(th,i){th.addEventListener('click',function(){"
	"var asc=th.getAttribute('aria-sort')==='descending';Array.prototype.forEach.call(hs,function(h){"
	"h.removeAttribute('aria-sort');});th.setAttribute('aria-sort',asc?'ascending':'descending');"
	"var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);rows.sort(function(x,y){var a=key(x.cells[i]),"
	"c=key(y.cells[i]);var r=(typeof a==='number'&&typeof c==='number')?a-c:String(a).localeCompare(String(c));"
	"return asc?r:-r;});rows.forEach(function(r){b.appendChild(r);});});});});\n"
	"document.querySelectorAll('svg.icicle').forEach(function(svg){var W=+svg.getAttribute('data-w'),"
	"gs=svg.querySelectorAll('g.fr'),btn=svg.parentNode.querySelector('button.unzoom');\n"
	"function lay(x0,w0,d0){gs.forEach(function(g){var x=+g.getAttribute('data-x'),w=+g.getAttribute('data-w'),"
	"d=+g.getAttribute('data-d'),r=g.querySelector('rect'),tx=g.querySelector('text'),nx,nw;\n"
	"if(d<d0){if(x<=x0+1e-9&&x+w>=x0+w0-1e-9){nx=0;nw=W;}else{nx=-1;nw=0;}}"
	"else{nx=(x-x0)/w0*W;nw=w/w0*W;if(x<x0-1e-9||x+w>x0+w0+1e-9)nw=0;}\n"
	"g.style.display=nw<.3?'none':'';if(nw<.3)return;r.setAttribute('x',nx.toFixed(2));"
	"r.setAttribute('width',nw.toFixed(2));var name=g.querySelector('title').textContent.split('\\n')[0],"
	"n=Math.floor((nw-6)/6.6);if(!tx){tx=document.createElementNS('http://www.w3.org/2000/svg','text');"
	"tx.setAttribute('y',+r.getAttribute('y')+13);g.appendChild(tx);}tx.setAttribute('x',(nx+3).toFixed(2));"
	"tx.textContent=n<3?'':(name.length<=n?name:name.slice(0,n-2)+'..');});}\n"
	"gs.forEach(function(g){g.addEventListener('click',function(){lay(+g.getAttribute('data-x'),"
	"+g.getAttribute('data-w')||1,+g.getAttribute('data-d'));btn.hidden=false;});});\n"
	"btn.addEventListener('click',function(){lay(0,1,0);btn.hidden=true;});});\n"
	"if(location.hash==='#vg-selftest'){var th=document.querySelector('table.sort th');"
	"if(th){th.click();th.click();var c=document.querySelector('table.sort tbody tr td');"
	"document.documentElement.setAttribute('data-selftest-sort',c?c.getAttribute('data-v'):'');}"
	"var g=document.querySelector('svg.icicle g.fr[data-d=\\'2\\']');if(g){g.dispatchEvent(new MouseEvent('click'));"
	"var n=0;document.querySelectorAll('svg.icicle g.fr').forEach(function(x){if(x.style.display!=='none')n++;});"
	"document.documentElement.setAttribute('data-selftest-zoom',String(n));}\n"
	"var cs=function(q,p){var e=document.querySelector(q);return e?getComputedStyle(e)[p]:'';};"
	"document.documentElement.setAttribute('data-selftest-colors',['quota',cs('svg .quota line','stroke'),"
	"'quota-key',cs('.k.quota','backgroundColor'),'denial',cs('svg .denial path','fill'),'denial-line',"
	"cs('svg .denial line','stroke'),'denial-key',cs('.k.denial','backgroundColor')].join('|'));}\n"
	"document.documentElement.setAttribute('data-js','ran');\n})();\n</script>\n";

void vg_html_begin(struct vg_strbuf *b, const char *title)
{
	vg_strbuf_str(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
	vg_strbuf_str(b, vg_html_head);
	vg_strbuf_str(b, "<title>");
	vg_html_esc(b, title, strlen(title));
	vg_strbuf_str(b, "</title>\n</head>\n<body>\n");
}

void vg_html_end(struct vg_strbuf *b)
{
	vg_strbuf_printf(b, "<p class=\"note\">Written by vramguard %s. Self-contained: nothing is loaded from "
			 "elsewhere; the script only sorts tables and zooms the graph.</p>\n", VG_VERSION);
	vg_strbuf_str(b, vg_html_script);
	vg_strbuf_str(b, "</body>\n</html>\n");
}

/* The driver's state and what the quota counts, in plain words; the report's terms (and what they mean) in the
 * hover text. A value this vramguard does not know is shown as written. */
static void vg_html_plain(struct vg_strbuf *b, const struct vg_report *r)
{
	const char *drv = r->driver[0] ? r->driver : "unknown", *cnt = r->count[0] ? r->count : "allocations";
	const char *d = !strcmp(drv, "alive") ? "working when the report was written"
		: !strcmp(drv, "deinitialized") ? "already shut down by the program (the figures are the last it saw)"
		: !strcmp(drv, "unknown") ? "not known (CUDA not started?)" : NULL;
	const char *c = !strcmp(cnt, "device") ? "all the GPU memory the process holds (its allocations, memory pools, "
		"CUDA graphs and the driver's own memory)"
		: !strcmp(cnt, "allocations") ? "only the memory the process allocated (not pools, graphs or the "
		"driver's own memory)" : NULL;

	vg_strbuf_str(b, "<dt>CUDA driver</dt><dd><span class=\"hint\" title=\"The state of the CUDA driver when the "
		      "report was written (report field driver: ");
	vg_html_esc(b, drv, sizeof(r->driver));
	vg_strbuf_str(b, "). alive: working; deinitialized: the program had shut CUDA down; unknown: never started "
		      "or not known.\">");
	vg_html_esc(b, d ? d : drv, d ? strlen(d) : sizeof(r->driver));
	vg_strbuf_str(b, "</span></dd><dt>the quota counts</dt><dd><span class=\"hint\" title=\"Set by "
		      "VRAMGUARD_COUNT (here ");
	vg_html_esc(b, cnt, sizeof(r->count));
	vg_strbuf_str(b, "). device (the default): the memory nvidia-smi shows for the process; allocations: only the "
		      "bytes it asked for.\">");
	vg_html_esc(b, c ? c : cnt, c ? strlen(c) : sizeof(r->count));
	vg_strbuf_printf(b, "</span></dd><dt>call stacks</dt><dd><span class=\"hint\" title=\"Each allocation's call "
			 "stack is recorded up to this depth (VRAMGUARD_BACKTRACE); deeper frames are cut.\">up to %d "
			 "frames</span></dd>", r->backtrace_depth);
}

void vg_html_header(struct vg_strbuf *b, const struct vg_report *r)
{
	vg_strbuf_str(b, "<dl class=\"hdr\"><dt>command</dt><dd><code class=\"cmd\">");
	vg_html_esc(b, r->command[0] ? r->command : "?", sizeof(r->command));
	vg_strbuf_printf(b, "</code></dd><dt>pid</dt><dd>%d</dd><dt>host</dt><dd>", r->pid);
	vg_html_esc(b, r->hostname, sizeof(r->hostname));
	vg_strbuf_str(b, "</dd><dt>time</dt><dd>");
	vg_html_time(b, r->time_ns);
	vg_strbuf_str(b, "</dd><dt>reason</dt><dd>");
	vg_html_esc(b, r->reason[0] ? r->reason : "?", sizeof(r->reason));
	if (r->sequence > 1)
		vg_strbuf_printf(b, " (report #%" PRIu64 " of the process)", r->sequence);
	vg_strbuf_str(b, "</dd><dt>vramguard</dt><dd>");
	vg_html_esc(b, r->version, sizeof(r->version));
	vg_strbuf_printf(b, " (report revision %u)</dd>", r->schema_revision ? r->schema_revision : 1);
	vg_html_plain(b, r);
	vg_strbuf_str(b, "</dl>\n");
}

static const struct vg_report_site *vg_html_find(const struct vg_report *r, uint32_t id)
{
	size_t i;
	for (i = 0; id && r->sites && i < r->nsites; i++)
		if (r->sites[i].id == id)
			return &r->sites[i];
	return NULL;
}

void vg_html_site_frames(struct vg_strbuf *b, const struct vg_report *r, const struct vg_report_site *s)
{
	struct vg_flame_frame st[VG_FLAME_MAX], top = { NULL, NULL, r };
	size_t n = vg_flame_stack(r, s, st), i, nn = s->frames ? s->nframes : 0;
	struct vg_strbuf t = { 0 };

	if (s->python && s->npython)
		top.py = &s->python[0];
	else if (nn)
		top.native = &s->frames[vg_report_runtime_prefix(s)];
	vg_flame_label(&t, &top);
	vg_strbuf_str(b, "<details><summary class=\"mono\">");
	vg_html_esc(b, t.data ? t.data : "", t.len);
	vg_strbuf_str(b, "</summary><ol class=\"mono\">");
	vg_strbuf_free(&t);
	for (i = n; i-- > 0;) {         /* innermost first, like a traceback read bottom-up */
		t = (struct vg_strbuf){ 0 };
		int unres = vg_flame_label(&t, &st[i]);
		vg_strbuf_str(b, st[i].py ? "<li class=\"py\">" : unres ? "<li class=\"unres\">" : "<li>");
		vg_html_esc(b, t.data ? t.data : "", t.len);
		if (st[i].native && st[i].native->module[0]) {
			vg_strbuf_printf(b, " <span class=\"note\" title=\"");
			vg_html_esc(b, st[i].native->module, VG_REPORT_FRAME_STR);
			vg_strbuf_printf(b, "\">+0x%" PRIx64 "</span>", st[i].native->module_offset);
		}
		vg_strbuf_str(b, "</li>");
		vg_strbuf_free(&t);
	}
	vg_strbuf_str(b, "</ol></details>");
}

static void vg_html_devices(struct vg_strbuf *b, const struct vg_report *r)
{
	size_t i;
	vg_strbuf_str(b, "<h2 id=\"devices\">GPUs</h2>\n");
	if (!r->devices || !r->ndevices) {
		vg_strbuf_str(b, "<p class=\"note\">No GPU used.</p>\n");
		return;
	}
	vg_strbuf_str(b, "<table class=\"devices\"><thead><tr><th>GPU</th><th class=\"n\">used</th><th class=\"n\">peak"
		      "</th><th class=\"n\">quota</th><th class=\"n\">soft limit</th><th class=\"n\">allocations</th>"
		      "<th class=\"n\">frees</th><th class=\"n\">denied</th><th>uuid</th></tr></thead><tbody>\n");
	for (i = 0; i < r->ndevices; i++) {
		const struct vg_report_device *d = &r->devices[i];
		vg_strbuf_printf(b, "<tr><td>%d</td><td class=\"n\">", d->ordinal);
		vg_html_bytes(b, d->used_bytes);
		vg_strbuf_str(b, "</td><td class=\"n\">");
		vg_html_bytes(b, d->peak_bytes);
		vg_strbuf_str(b, "</td><td class=\"n\">");
		if (d->quota_set)
			vg_html_bytes(b, d->quota_bytes);
		else
			vg_strbuf_str(b, "unlimited");
		vg_strbuf_str(b, "</td><td class=\"n\">");
		if (d->soft_set)
			vg_html_bytes(b, d->soft_bytes);
		else
			vg_strbuf_str(b, "none");
		vg_strbuf_printf(b, "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n%s\">%"
				 PRIu64, d->allocs, d->frees, d->denied_count ? " bad" : "", d->denied_count);
		if (d->denied_count) {
			vg_strbuf_str(b, " (");
			vg_html_bytes(b, d->denied_bytes);
			vg_strbuf_str(b, ")");
		}
		vg_strbuf_str(b, "</td><td class=\"mono\">");
		vg_html_esc(b, d->uuid, sizeof(d->uuid));
		vg_strbuf_str(b, "</td></tr>\n");
	}
	vg_strbuf_str(b, "</tbody></table>\n");
	for (i = 0; i < r->ndevices; i++) {
		const struct vg_report_device *d = &r->devices[i];
		vg_strbuf_printf(b, "<h3>GPU %d: usage over time</h3>\n", d->ordinal);
		if (!strcmp(r->count, "device")) {
			vg_strbuf_str(b, "<p class=\"note\">used = allocations ");
			vg_html_bytes(b, d->allocated_bytes);
			vg_strbuf_str(b, ", pools ");
			vg_html_bytes(b, d->pool_reserved_bytes);
			vg_strbuf_str(b, ", graphs ");
			vg_html_bytes(b, d->graph_bytes);
			vg_strbuf_str(b, ", driver ");
			vg_html_bytes(b, d->driver_bytes);
			vg_strbuf_str(b, d->driver_measured ? " (NVML)</p>\n" : " (not measured)</p>\n");
		}
		vg_html_timeline(b, r, d, 0, NULL);
		vg_html_growth(b, r, d);
	}
}

/* A site's allocator and what happened to its allocations (report/allocator.h), two cells, each explained on hover. */
static void vg_html_site_what(struct vg_strbuf *b, const struct vg_report_site *s)
{
	const struct vg_allocator_info *a = vg_allocator_info(vg_allocator_of_site(s));
	uint64_t freed = s->total_allocs - s->live_count;

	if (a->label[0])
		vg_strbuf_printf(b, "<td class=\"alloc\"><span class=\"hint\" title=\"Its frames show %s. %s\">%s</span>"
				 "</td>", a->name, a->caches ? "It keeps memory its users free for reuse instead of giving "
				 "it back to the driver: what it holds is its cache (in use or kept), not a leak by itself."
				 : "Its users' allocations and frees are what vramguard sees: what is still held was not "
				 "freed to the pool.", a->label);
	else
		vg_strbuf_str(b, "<td class=\"alloc\"></td>");
	switch (vg_site_history(s)) {
	case VG_SITE_ONLY_GREW:
		vg_strbuf_printf(b, "<td class=\"history\" data-v=\"0\"><span class=\"hint\" title=\"None of the %" PRIu64
				 " allocations made here was freed.\">only grew</span></td>", s->total_allocs);
		break;
	case VG_SITE_CHURN:
		vg_strbuf_printf(b, "<td class=\"history\" data-v=\"%" PRIu64 "\"><span class=\"hint\" title=\"Freed and "
				 "made again: %" PRIu64 " of the %" PRIu64 " allocations made here were freed, %" PRIu64
				 " are held.\">churn (%" PRIu64 " of %" PRIu64 " freed)</span></td>", freed, freed,
				 s->total_allocs, s->live_count, freed, s->total_allocs);
		break;
	case VG_SITE_ALL_FREED:
		vg_strbuf_printf(b, "<td class=\"history\" data-v=\"%" PRIu64 "\">all freed</td>", freed);
		break;
	case VG_SITE_UNKNOWN:   /* a site of stream calls makes no allocation: nothing to say */
		vg_strbuf_str(b, s->live_count ? "<td class=\"history\" data-v=\"-1\">not known</td>"
					       : "<td class=\"history\" data-v=\"-1\"></td>");
		break;
	}
}

/* The sites' first sentence: what is held (at exit: "held at exit", not "live"), and when all of it is in caching
 * allocators, that it is their cache. */
static void vg_html_sites_summary(struct vg_strbuf *b, const struct vg_report *r, size_t nlive, uint64_t live)
{
	int at_exit = strncmp(r->reason, "exit", sizeof(r->reason)) == 0;
	struct vg_allocator_summary sum;

	vg_strbuf_printf(b, "<p>%s%" PRIu64 " %s%s, ", at_exit ? "Held at exit: " : "", r->allocs_live,
			 at_exit ? "" : "live ", vg_plural(r->allocs_live, "allocation", "allocations"));
	vg_html_bytes(b, live);
	vg_strbuf_printf(b, ", from %zu call %s (%zu sites in all).", nlive, vg_plural(nlive, "site", "sites"), r->nsites);
	vg_allocator_summary(r, &sum);
	if (sum.all)
		vg_strbuf_printf(b, " <span class=\"cached\">All of it is in %s, which %s freed memory for reuse instead "
				 "of giving it back to the driver%s</span>", sum.only != VG_ALLOCATOR_NONE ?
				 vg_allocator_info(sum.only)->name : "caching allocators",
				 sum.only != VG_ALLOCATOR_NONE ? "keeps" : "keep", at_exit ? ": not a leak by itself." : ".");
}

static void vg_html_sites(struct vg_strbuf *b, const struct vg_report *r)
{
	size_t i, nlive = 0, shown = 0;
	uint64_t live = 0;

	for (i = 0; r->sites && i < r->nsites; i++)
		if (r->sites[i].live_count || r->sites[i].live_bytes)
			nlive++, live += r->sites[i].live_bytes;
	vg_strbuf_str(b, "<h2 id=\"sites\">Call sites</h2>\n");
	vg_html_sites_summary(b, r, nlive, live);
	if (r->nsites > VG_HTML_SITES)
		vg_strbuf_printf(b, " The table lists the %d largest; the JSON has every one.", VG_HTML_SITES);
	vg_strbuf_str(b, " Click a heading to sort.</p>\n<table class=\"sort sites\"><thead><tr><th class=\"n\">live bytes</th>"
		      "<th class=\"n\">live</th><th class=\"n\">allocations</th><th class=\"n\">bytes allocated</th>"
		      "<th>api</th><th title=\"The framework allocator the site's frames show, where they show one\">"
		      "allocator</th><th title=\"only grew: none of the site's allocations was freed; churn: some were "
		      "freed (and others made), some are held; all freed: none is held\">freed?</th>"
		      "<th>top frame (click for the stack)</th><th class=\"n\">site</th></tr></thead><tbody>\n");
	for (i = 0; r->sites && i < r->nsites && shown < VG_HTML_SITES; i++, shown++) {
		const struct vg_report_site *s = &r->sites[i];
		vg_strbuf_printf(b, "<tr id=\"site-%" PRIu32 "\"><td class=\"n\" data-v=\"%" PRIu64 "\">", s->id, s->live_bytes);
		vg_html_bytes(b, s->live_bytes);
		vg_strbuf_printf(b, "</td><td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td><td class=\"n\" data-v=\"%"
				 PRIu64 "\">%" PRIu64 "</td><td class=\"n\" data-v=\"%" PRIu64 "\">", s->live_count,
				 s->live_count, s->total_allocs, s->total_allocs, s->total_bytes);
		vg_html_bytes(b, s->total_bytes);
		vg_strbuf_str(b, "</td><td class=\"mono\">");
		vg_html_esc(b, s->api, sizeof(s->api));
		vg_strbuf_str(b, "</td>");
		vg_html_site_what(b, s);
		vg_strbuf_str(b, "<td>");
		vg_html_site_frames(b, r, s);
		vg_strbuf_printf(b, "</td><td class=\"n\" data-v=\"%" PRIu32 "\">%" PRIu32 "</td></tr>\n", s->id, s->id);
	}
	vg_strbuf_str(b, "</tbody></table>\n");
}

static void vg_html_allocs(struct vg_strbuf *b, const struct vg_report *r)
{
	size_t i;
	vg_strbuf_str(b, "<h2 id=\"allocations\">Largest live allocations</h2>\n");
	if (!r->allocs || !r->nallocs) {
		vg_strbuf_str(b, "<p class=\"note\">None listed.</p>\n");
		return;
	}
	vg_strbuf_printf(b, "<p>The %zu largest of %" PRIu64 ".</p>\n<table class=\"sort allocs\"><thead><tr>"
			 "<th class=\"n\">bytes</th><th class=\"n\">GPU</th><th>api</th><th>address</th>"
			 "<th>made at (UTC)</th><th class=\"n\">thread</th><th>call site</th></tr></thead><tbody>\n",
			 r->nallocs, r->allocs_live);
	for (i = 0; i < r->nallocs; i++) {
		const struct vg_report_alloc *a = &r->allocs[i];
		const struct vg_report_site *s = vg_html_find(r, a->site);
		char clock[16];
		vg_strbuf_printf(b, "<tr><td class=\"n\" data-v=\"%" PRIu64 "\">", a->bytes);
		vg_html_bytes(b, a->bytes);
		vg_strbuf_printf(b, "</td><td class=\"n\">%d</td><td class=\"mono\">", a->device);
		vg_html_esc(b, a->api, sizeof(a->api));
		vg_report_clock(a->time_ns, clock, sizeof(clock));
		vg_strbuf_printf(b, "</td><td class=\"mono\">0x%" PRIx64 "</td><td data-v=\"%" PRIu64 "\">%s</td>"
				 "<td class=\"n\">%" PRIu32 "</td><td>", a->address, a->time_ns, clock, a->thread);
		if (s)
			vg_strbuf_printf(b, "<a href=\"#site-%" PRIu32 "\">site %" PRIu32 "</a>", s->id, s->id);
		else
			vg_strbuf_str(b, "none recorded");
		vg_strbuf_str(b, "</td></tr>\n");
	}
	vg_strbuf_str(b, "</tbody></table>\n");
}

static void vg_html_stream_site(struct vg_strbuf *b, const struct vg_report *r, uint32_t id)
{
	const struct vg_report_site *s = vg_html_find(r, id);
	vg_strbuf_str(b, "<td>");
	if (s)
		vg_html_site_frames(b, r, s);
	else
		vg_strbuf_printf(b, "site %" PRIu32 " (not recorded)", id);
	vg_strbuf_str(b, "</td>");
}

void vg_html_streams(struct vg_strbuf *b, const struct vg_report *r)
{
	size_t i, nev = r->stream_events ? r->nstream_events : 0, nlive = r->stream_live ? r->nstream_live : 0;
	uint64_t pending = 0, live = 0;

	if (!r->streams_created && !nev && !nlive)
		return;
	for (i = 0; i < nev; i++)
		pending += r->stream_events[i].count;
	for (i = 0; i < nlive; i++)
		live += r->stream_live[i].count;
	vg_strbuf_printf(b, "<h2 id=\"streams\">Streams</h2>\n<p>%" PRIu64 " created, %" PRIu64 " destroyed, <span class=\"%s\">%"
			 PRIu64 " destroyed with work still queued</span>, %" PRIu64 " live.</p>\n", r->streams_created,
			 r->streams_destroyed, pending ? "bad" : "", pending, live);
	if (nev) {
		vg_strbuf_str(b, "<h3>Destroyed with work queued</h3>\n<table class=\"sort streams-pending\"><thead><tr>"
			      "<th class=\"n\">streams</th><th>created at</th><th>destroyed at</th><th>waited for</th></tr>"
			      "</thead><tbody>\n");
		for (i = 0; i < nev; i++) {
			const struct vg_report_stream_event *e = &r->stream_events[i];
			vg_strbuf_printf(b, "<tr><td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", e->count, e->count);
			vg_html_stream_site(b, r, e->create_site);
			vg_html_stream_site(b, r, e->destroy_site);
			vg_strbuf_printf(b, "<td>%s</td></tr>\n", e->synchronized ? "yes (VRAMGUARD_STREAM_CHECK=sync)" : "no");
		}
		vg_strbuf_str(b, "</tbody></table>\n");
	}
	if (nlive) {
		vg_strbuf_str(b, "<h3>Live streams</h3>\n<table class=\"sort streams-live\"><thead><tr><th class=\"n\">streams"
			      "</th><th class=\"n\">with work queued</th><th class=\"n\">capturing</th><th>created at</th>"
			      "</tr></thead><tbody>\n");
		for (i = 0; i < nlive; i++) {
			const struct vg_report_stream_live *l = &r->stream_live[i];
			vg_strbuf_printf(b, "<tr><td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td><td class=\"n\" data-v=\"%"
					 PRIu64 "\">%" PRIu64 "</td><td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>",
					 l->count, l->count, l->pending, l->pending, l->capturing, l->capturing);
			vg_html_stream_site(b, r, l->create_site);
			vg_strbuf_str(b, "</tr>\n");
		}
		vg_strbuf_str(b, "</tbody></table>\n");
	}
}

int vg_report_render_html(const struct vg_report *r, struct vg_strbuf *out)
{
	struct vg_html_weight *w = calloc(r->nsites ? r->nsites : 1, sizeof(*w));
	char title[96];
	size_t i;
	int rc;

	if (!w)
		return -ENOMEM;
	snprintf(title, sizeof(title), "vramguard report: pid %d (%.*s)", r->pid, (int)sizeof(r->reason), r->reason);
	vg_html_begin(out, title);
	vg_strbuf_str(out, "<h1>");
	vg_html_esc(out, title, sizeof(title));
	vg_strbuf_str(out, "</h1>\n");
	vg_html_header(out, r);
	vg_html_devices(out, r);
	vg_strbuf_str(out, "<h2 id=\"icicle\">Live memory by call stack</h2>\n");
	for (i = 0; r->sites && i < r->nsites; i++)
		w[i] = (struct vg_html_weight){ &r->sites[i], r->sites[i].live_bytes, r->sites[i].live_count, r };
	rc = vg_html_icicle(out, w, r->sites ? r->nsites : 0, "all live memory");
	free(w);
	if (rc)
		return rc;
	vg_html_sites(out, r);
	vg_html_allocs(out, r);
	vg_html_streams(out, r);
	vg_html_end(out);
	return vg_strbuf_result(out);
}
