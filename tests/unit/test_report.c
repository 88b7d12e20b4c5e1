/* Unit tests for report/: the growable buffer, the text and JSON forms of a hand-built report against golden files
 * (UPDATE_GOLDEN=1 or --update-golden rewrites them), JSON validity and schema checked by python3 when present,
 * hostile strings, the empty report, and vg_report_free. Run from the repository root. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "report/report.h"
#include "tests/unit/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

#define GOLDEN_DIR "tests/unit/golden/"
#define WEIRD_MODULE "/opt/we\"ird\\dir\nname/lib\xc3\xa9.so"   /* quote, backslash, newline, U+00E9 */

static int update_golden;
static int have_python;

/* ---- building a report by hand ---- */

/* Holds the strings of the frames built here (a report keeps its own in the same way). */
static struct vg_report names;

static const char *keep(const char *s)
{
	const char *k = vg_report_string(&names, s, VG_REPORT_FRAME_STR);
	CHECK(k != NULL);
	return k ? k : "";
}

static void set_frame(struct vg_report_frame *f, uint64_t address, const char *module, uint64_t module_offset,
		      const char *symbol, uint64_t symbol_offset)
{
	f->address = address;
	f->module = keep(module);
	f->module_offset = module_offset;
	f->symbol = keep(symbol);
	f->symbol_offset = symbol_offset;
}

static struct vg_report_site *add_site(struct vg_report *r, uint32_t id, const char *api, uint64_t live_count,
				       uint64_t live_bytes, uint32_t nframes)
{
	struct vg_report_site *s = &r->sites[r->nsites++];
	s->id = id;
	snprintf(s->api, sizeof(s->api), "%s", api);
	s->live_count = live_count;
	s->live_bytes = live_bytes;
	s->total_allocs = live_count * 3 + 1;
	s->total_bytes = live_bytes * 3 + 4096;
	s->nframes = nframes;
	s->frames = nframes ? unit_xcalloc(nframes, sizeof(*s->frames)) : NULL;
	for (uint32_t i = 0; i < nframes; i++)
		s->frames[i].module = s->frames[i].symbol = "";        /* never NULL */
	return s;
}

/* 16 points over 45 minutes ending at the report: a rise, a plateau near the quota with a burst and two denials,
 * a fall. */
static void add_timeline(struct vg_report_device *d, uint64_t end_ns)
{
	const uint64_t step = 180 * 1000000000ull;      /* 3 min */
	size_t i, n = 16;

	d->timeline_set = 1;
	d->timeline_period_ms = 40000;
	d->timeline_compactions = 2;
	d->ntimeline_points = n;
	d->timeline_points = unit_xcalloc(n, sizeof(*d->timeline_points));
	for (i = 0; i < n; i++) {
		struct vg_report_timeline_point *p = &d->timeline_points[i];
		p->time_ns = end_ns - (n - 1 - i) * step;
		p->used_bytes = i < 8 ? (uint64_t)i * 400 * MiB : i < 12 ? 3 * GiB + 256 * MiB : 1 * GiB;
		p->peak_bytes = i == 9 ? 3 * GiB + 512 * MiB : p->used_bytes;
		p->denied_count = i < 9 ? 0 : i < 11 ? 1 : 2;
		p->denied_bytes = p->denied_count * 3 * GiB;
	}
}

/* The growth of a device (revision 5): site a growing at rate_mib MiB/h over 6 points a minute apart (from 2 minutes
 * before end_ns), site b (0: none) followed and flat. */
static void add_growth(struct vg_report_device *d, uint64_t end_ns, uint32_t a, uint64_t rate_mib, uint32_t b)
{
	const uint64_t min = 60 * 1000000000ull;
	d->growth_set = 1;
	d->growth_window_ms = 600000;
	d->growth_step_ms = 60000;
	d->growth_bytes_per_hour = rate_mib * MiB;
	d->ngrowth_sites = b ? 2 : 1;
	d->growth_sites = unit_xcalloc(d->ngrowth_sites, sizeof(*d->growth_sites));
	for (size_t k = 0; k < d->ngrowth_sites; k++) {
		struct vg_report_growth_site *g = &d->growth_sites[k];
		g->site = k ? b : a;
		g->growing = g->rate_set = k == 0;
		g->bytes_per_hour = k ? 0 : rate_mib * MiB;
		g->growing_since_ns = k ? 0 : end_ns - 5 * min - 3 * 1000000000ull;
		g->npoints = 6;
		g->points = unit_xcalloc(6, sizeof(*g->points));
		for (size_t i = 0; i < 6; i++)
			g->points[i] = (struct vg_report_growth_point){ end_ns - (7 - i) * min,
									(k ? 64 : 100 + 10 * i) * MiB };
	}
}

static void header(struct vg_report *r)
{
	snprintf(r->reason, sizeof(r->reason), "exit");
	r->sequence = 1;
	r->pid = 1234;
	r->time_ns = 1795297803123456789ull;    /* 2026-11-21 21:50:03.123 UTC */
	snprintf(r->command, sizeof(r->command), "python3 train.py --lr 0.1");
	snprintf(r->hostname, sizeof(r->hostname), "gpu-node-7");
	snprintf(r->version, sizeof(r->version), "0.1.0");
	snprintf(r->driver, sizeof(r->driver), "alive");
	r->backtrace_depth = 16;
}

/* Two devices (one unlimited), 12 live sites (so the text says "and 2 more"), a site without frames, frames
 * without symbol or module, a hostile module path, stream sites, stream events and live streams, allocations. */
static void build_full(struct vg_report *r)
{
	struct vg_report_site *s;
	uint32_t i;

	memset(r, 0, sizeof(*r));
	header(r);
	snprintf(r->json_hint, sizeof(r->json_hint), "set VRAMGUARD_REPORT_FORMAT=json");

	r->ndevices = 2;
	r->devices = unit_xcalloc(2, sizeof(*r->devices));
	r->devices[0] = (struct vg_report_device){ .ordinal = 0, .quota_set = 1, .quota_bytes = 4 * GiB,
						   .total_bytes = 80 * GiB, .used_bytes = 1 * GiB,
						   .peak_bytes = 3 * GiB + 512 * MiB, .allocs = 1203, .frees = 1190,
						   .denied_count = 2, .denied_bytes = 6 * GiB, .largest_bytes = 512 * MiB };
	snprintf(r->devices[0].uuid, sizeof(r->devices[0].uuid), "GPU-5e3c9a1b-7f2d-4c6e-9a0b-1d2e3f405162");
	r->devices[0].soft_set = 1;
	r->devices[0].soft_bytes = 3 * GiB;
	snprintf(r->devices[0].soft_source, sizeof(r->devices[0].soft_source), "NVIDIA_GPU_MEMORY_REQUEST");
	add_timeline(&r->devices[0], r->time_ns);
	r->devices[1] = (struct vg_report_device){ .ordinal = 1, .total_bytes = 80 * GiB };
	snprintf(r->devices[1].uuid, sizeof(r->devices[1].uuid), "GPU-00000000-1111-2222-3333-444455556666");
	/* Growth (revision 5): on device 0 site 3 grows under the quota, site 9 is followed; on device 1, with no
	 * quota, site 1 grows: no forecast there. */
	add_growth(&r->devices[0], r->time_ns, 3, 600, 9);
	r->devices[0].forecast_set = 1;
	r->devices[0].forecast_s = 18432;       /* 3 GiB left at 600 MiB/h: 5 h 7 min */
	add_growth(&r->devices[1], r->time_ns, 1, 64, 0);

	r->sites = unit_xcalloc(16, sizeof(*r->sites));
	s = add_site(r, 3, "cuMemAlloc_v2", 4, 768 * MiB, 10);   /* more frames than the text shows */
	set_frame(&s->frames[0], 0x5555555551c5ull, "/work/examples/leaky", 0x11c5, "leak_buffers", 0x1c);
	set_frame(&s->frames[1], 0x555555555234ull, "/work/examples/leaky", 0x1234, "main", 0x40);
	for (i = 2; i < 10; i++)
		set_frame(&s->frames[i], 0x7ffff7a00000ull + i * 0x10, "/usr/lib/x86_64-linux-gnu/libtorch_cuda.so",
			  0x2000 + i * 0x10, "at::native::layer", i);
	/* The Python stack of the thread (revision 3), innermost first; a file name that needs escaping. */
	s->npython = 2;
	s->python = unit_xcalloc(2, sizeof(*s->python));
	s->python[0].file = keep("/work/train \"v2\".py");
	s->python[0].line = 123;
	s->python[0].function = keep("Model.train_step");
	s->python[1].file = keep("<string>");
	s->python[1].line = 1;
	s->python[1].function = keep("<module>");
	s->growth_set = 1;
	s->growth_bytes_per_hour = 600 * MiB;
	s = add_site(r, 9, "cuMemAllocAsync", 1, 128 * MiB, 3);
	set_frame(&s->frames[0], 0x7ffff6a01a2bull, "/usr/lib/x.so", 0x1a2b, "", 0);            /* no symbol */
	set_frame(&s->frames[1], 0x7ffff6b00010ull, "", 0, "jit_trampoline", 0x10);            /* no module */
	set_frame(&s->frames[2], 0x7ffff6c00020ull, "", 0, "", 0);                             /* neither */
	s = add_site(r, 1, "cuMemAllocManaged", 2, 64 * MiB, 1);
	set_frame(&s->frames[0], 0x7ffff5000777ull, WEIRD_MODULE, 0x777, "managed_pool_grow", 0x7);
	s->growth_set = 1;
	s->growth_bytes_per_hour = 64 * MiB;
	s = add_site(r, 12, "cuMemAlloc_v2", 1, 4 * MiB, 0);                                 /* no frames */
	for (i = 0; i < 8; i++) {
		char sym[32];
		s = add_site(r, 13 + i, "cuMemAlloc_v2", 1, (uint64_t)(8 - i) * 256 * KiB, 1);
		snprintf(sym, sizeof(sym), "alloc_small_%u", (unsigned)i);
		set_frame(&s->frames[0], 0x555555556000ull + i, "/work/examples/leaky", 0x2000 + i, sym, i);
	}
	s = add_site(r, 5, "cuStreamCreate", 0, 0, 1);
	set_frame(&s->frames[0], 0x555555555100ull, "/work/examples/leaky", 0x1100, "make_stream", 0x12);
	s = add_site(r, 6, "cuStreamDestroy_v2", 0, 0, 1);
	set_frame(&s->frames[0], 0x555555555300ull, "/work/examples/leaky", 0x1300, "finish", 0x33);
	s = add_site(r, 7, "cuStreamCreateWithPriority", 0, 0, 1);
	set_frame(&s->frames[0], 0x555555555400ull, "/work/examples/leaky", 0x1400, "pool_init", 0x8);
	for (i = 0; i < r->nsites; i++)
		r->allocs_live += r->sites[i].live_count;
	/* The objects the frames name (revision 3); one without a build ID. */
	r->nmodules = 2;
	r->modules = unit_xcalloc(2, sizeof(*r->modules));
	snprintf(r->modules[0].path, sizeof(r->modules[0].path), "/work/examples/leaky");
	snprintf(r->modules[0].build_id, sizeof(r->modules[0].build_id), "3f1c0d5e9a8b7c6d5e4f30211a2b3c4d5e6f7a8b");
	r->modules[0].base = 0x555555554000ull;
	snprintf(r->modules[1].path, sizeof(r->modules[1].path), "/usr/lib/x.so");
	r->modules[1].base = 0x7ffff6a00000ull;

	r->nallocs = 3;
	r->allocs = unit_xcalloc(3, sizeof(*r->allocs));
	r->allocs[0] = (struct vg_report_alloc){ .address = 0x7f3a00000000ull, .bytes = 512 * MiB, .device = 0,
						 .site = 3, .thread = 4242, .time_ns = 1795297800000000000ull };
	snprintf(r->allocs[0].api, sizeof(r->allocs[0].api), "cuMemAlloc_v2");
	r->allocs[1] = (struct vg_report_alloc){ .address = 0xffff800000001000ull, .bytes = 128 * MiB, .device = 0,
						 .site = 9, .thread = 4243, .time_ns = 1795297801000000001ull };
	snprintf(r->allocs[1].api, sizeof(r->allocs[1].api), "cuMemAllocAsync");
	r->allocs[2] = (struct vg_report_alloc){ .address = 0x7f3a20000000ull, .bytes = 4 * MiB, .device = 0,
						 .site = 12, .thread = 4242, .time_ns = 1795297802000000000ull };
	snprintf(r->allocs[2].api, sizeof(r->allocs[2].api), "cuMemAlloc_v2");

	r->streams_created = 134;
	r->streams_destroyed = 4;
	r->nstream_events = 3;
	r->stream_events = unit_xcalloc(3, sizeof(*r->stream_events));
	r->stream_events[0] = (struct vg_report_stream_event){ .create_site = 5, .destroy_site = 6, .count = 1 };
	r->stream_events[1] = (struct vg_report_stream_event){ .create_site = 7, .destroy_site = 99, .count = 2,
							       .synchronized = 1 };  /* 99: a site not in the table */
	r->stream_events[2] = (struct vg_report_stream_event){ .create_site = 0, .destroy_site = 6, .count = 1 };
	r->nstream_live = 2;
	r->stream_live = unit_xcalloc(2, sizeof(*r->stream_live));
	r->stream_live[0] = (struct vg_report_stream_live){ .create_site = 7, .count = 128 };
	r->stream_live[1] = (struct vg_report_stream_live){ .create_site = 5, .count = 2, .pending = 1, .capturing = 1 };
}

/* ---- helpers: files, golden comparison, python ---- */

static void check_golden(const char *name, const struct vg_strbuf *b)
{
	char path[256];
	snprintf(path, sizeof(path), GOLDEN_DIR "%s", name);
	unit_check_golden(path, b->data, b->len, update_golden);
}

/* Feed data to python3 running script (stdin is the document); returns its exit status, or -1. */
static int python_check(const char *script, const char *data, size_t len)
{
	char path[] = "/tmp/vg_test_report_XXXXXX";
	char cmd[128];
	int fd = mkstemp(path), st;
	FILE *p;

	if (fd < 0)
		return -1;
	if (write(fd, script, strlen(script)) != (ssize_t)strlen(script)) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "PYTHONIOENCODING=utf-8 python3 %s", path);
	p = popen(cmd, "w");
	if (!p) {
		unlink(path);
		return -1;
	}
	fwrite(data, 1, len, p);
	st = pclose(p);
	unlink(path);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int python_json_valid(const char *data, size_t len)
{
	FILE *p = popen("PYTHONIOENCODING=utf-8 python3 -c 'import json,sys; json.load(sys.stdin)'", "w");
	int st;
	if (!p)
		return 0;
	fwrite(data, 1, len, p);
	st = pclose(p);
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Every key of schema 1, in order, with its type; quota_bytes null exactly for unlimited devices; addresses
 * hex strings; the hostile module path survives the round trip. The document comes on stdin. */
static const char schema_check_py[] =
	"import json, re, sys\n"
	"d = json.load(sys.stdin)\n"
	"def keys(o, want, what):\n"
	"    got = list(o.keys())\n"
	"    if got != want:\n"
	"        sys.exit('%s keys %r != %r' % (what, got, want))\n"
	"def uint(v, what):\n"
	"    if type(v) is not int or v < 0:\n"
	"        sys.exit('%s is not an unsigned integer: %r' % (what, v))\n"
	"def addr(v, what):\n"
	"    if type(v) is not str or not re.fullmatch('0x[0-9a-f]+', v):\n"
	"        sys.exit('%s is not a hex address string: %r' % (what, v))\n"
	"keys(d, ['schema','schema_revision','reason','sequence','pid','time','time_ns','command','hostname','version','driver',\n"
	"         'backtrace_depth','count','devices','sites','modules','allocations','streams'], 'top')\n"
	"assert d['count'] in ('device', 'allocations'), d['count']\n"
	"assert d['schema'] == 'vramguard.report/1'\n"
	"assert d['schema_revision'] == 5\n"
	"assert re.fullmatch(r'\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z', d['time']), d['time']\n"
	"for k in ('sequence','pid','time_ns','backtrace_depth'): uint(d[k], k)\n"
	"for k in ('reason','command','hostname','version','driver'): assert type(d[k]) is str, k\n"
	"for dev in d['devices']:\n"
	"    keys(dev, ['ordinal','uuid','quota_bytes','soft_limit_bytes','soft_limit_source','total_bytes',\n"
	"               'used_bytes','peak_bytes','allocs','frees','denied_count','denied_bytes','largest_bytes',\n"
	"               'allocated_bytes','pool_reserved_bytes','pool_live_bytes','graph_bytes','driver_bytes',\n"
	"               'driver_headroom_bytes',\n"
	"               'driver_measured','driver_limit_bytes','compute_limit_permille','compute_limit_source',\n"
	"               'gpu_time_ns','compute_recent_permille','compute_recent_seconds','compute_waits',\n"
	"               'compute_waited_ns'] + (['timeline'] if 'timeline' in dev else []) + ['forecast_seconds']\n"
	"               + (['growth'] if 'growth' in dev else []), 'device')\n"
	"    gr = dev.get('growth')\n"
	"    if gr is not None:\n"
	"        keys(gr, ['window_ms','step_ms','bytes_per_hour','sites'], 'growth')\n"
	"        for k in ('window_ms','step_ms','bytes_per_hour'): uint(gr[k], 'growth.' + k)\n"
	"        assert 1 <= len(gr['sites']) <= 16, gr\n"
	"        for g in gr['sites']:\n"
	"            keys(g, ['site','growing','bytes_per_hour','growing_since_ns','points'], 'growth site')\n"
	"            assert type(g['growing']) is bool and (g['bytes_per_hour'] is None) == (not g['growing']), g\n"
	"            assert (g['growing_since_ns'] == 0) == (not g['growing']), g\n"
	"            assert 1 <= len(g['points']) <= 64, g\n"
	"            for pt in g['points']:\n"
	"                keys(pt, ['time_ns','live_bytes'], 'growth point'); uint(pt['time_ns'], 't'); uint(pt['live_bytes'], 'l')\n"
	"    tl = dev.pop('timeline', None)\n"
	"    if tl is not None:\n"
	"        keys(tl, ['period_ms','compactions','points'], 'timeline')\n"
	"        uint(tl['period_ms'], 'period_ms'); uint(tl['compactions'], 'compactions')\n"
	"        assert 1 <= len(tl['points']) <= 129, len(tl['points'])\n"
	"        last = 0\n"
	"        for pt in tl['points']:\n"
	"            keys(pt, ['time_ns','used_bytes','peak_bytes','denied_count','denied_bytes'], 'point')\n"
	"            for k, v in pt.items(): uint(v, 'point.' + k)\n"
	"            assert pt['time_ns'] > last; last = pt['time_ns']\n"
	"    assert (dev['soft_limit_bytes'] is None) == (dev['soft_limit_source'] is None), dev\n"
	"    assert (dev['compute_limit_permille'] is None) == (dev['compute_limit_source'] is None), dev\n"
	"    for k, v in dev.items():\n"
	"        if k in ('uuid', 'soft_limit_source', 'compute_limit_source'): assert v is None or type(v) is str\n"
	"        elif k == 'driver_measured': assert type(v) is bool\n"
	"        elif k == 'growth': pass\n"
	"        elif k not in ('quota_bytes', 'soft_limit_bytes', 'driver_limit_bytes', 'compute_limit_permille',\n"
	"                       'forecast_seconds')"
	" or v is not None:\n"
	"            uint(v, 'device.' + k)\n"
	"for m in d['modules']:\n"
	"    keys(m, ['path','build_id','base'], 'module'); addr(m['base'], 'module.base')\n"
	"    assert re.fullmatch('([0-9a-f]{2})*', m['build_id']), m\n"
	"for s in d['sites']:\n"
	"    keys(s, ['id','api','live_count','live_bytes','total_allocs','total_bytes','frames','python',\n"
	"             'growth_bytes_per_hour'], 'site')\n"
	"    assert s['growth_bytes_per_hour'] is None or type(s['growth_bytes_per_hour']) is int, s\n"
	"    for p in s['python']:\n"
	"        keys(p, ['file','line','function'], 'python frame'); uint(p['line'], 'python.line')\n"
	"        assert type(p['file']) is str and type(p['function']) is str, p\n"
	"    for f in s['frames']:\n"
	"        keys(f, ['address','module','module_offset','symbol','offset'], 'frame')\n"
	"        addr(f['address'], 'address'); addr(f['module_offset'], 'module_offset'); uint(f['offset'], 'offset')\n"
	"a = d['allocations']\n"
	"keys(a, ['live','listed','largest'], 'allocations')\n"
	"assert a['listed'] == len(a['largest'])\n"
	"for x in a['largest']:\n"
	"    keys(x, ['address','bytes','device','api','site','thread','time_ns'], 'allocation')\n"
	"    addr(x['address'], 'allocation.address')\n"
	"st = d['streams']\n"
	"keys(st, ['created','destroyed','destroyed_pending','live'], 'streams')\n"
	"for e in st['destroyed_pending']:\n"
	"    keys(e, ['create_site','destroy_site','count','synchronized'], 'stream event')\n"
	"    assert type(e['synchronized']) is bool\n"
	"for l in st['live']:\n"
	"    keys(l, ['create_site','count','pending','capturing'], 'live streams')\n"
	"if d['devices']:  # the full report: its particular values\n"
	"    devs = {x['ordinal']: x for x in d['devices']}\n"
	"    assert devs[0]['quota_bytes'] == 4294967296, devs[0]\n"
	"    assert devs[1]['quota_bytes'] is None, devs[1]\n"
	"    assert (devs[0]['soft_limit_bytes'], devs[0]['soft_limit_source']) == (3221225472, 'NVIDIA_GPU_MEMORY_REQUEST')\n"
	"    assert devs[1]['soft_limit_bytes'] is None, devs[1]\n"
	"    assert devs[0]['forecast_seconds'] == 18432 and devs[1]['forecast_seconds'] is None, devs\n"
	"    assert devs[0]['growth']['sites'][0]['bytes_per_hour'] == 600 << 20, devs[0]['growth']\n"
	"    assert {s['id']: s['growth_bytes_per_hour'] for s in d['sites']}[3] == 600 << 20\n"
	"    mods = [f['module'] for s in d['sites'] for f in s['frames']]\n"
	"    assert '/opt/we\"ird\\\\dir\\nname/lib\\u00e9.so' in mods, mods\n"
	"    assert a['largest'][1]['address'] == '0xffff800000001000'\n"
	"    assert int(a['largest'][1]['time_ns']) == 1795297801000000001\n";

/* The text form is one block on stderr: every line starts with "vramguard:" or two spaces, and it ends in \n. */
static int text_block_ok(const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	if (len == 0 || s[len - 1] != '\n')
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (strncmp(p, "vramguard:", 10) != 0 && strncmp(p, "  ", 2) != 0)
			return 0;
		p = nl + 1;
	}
	return 1;
}

/* ---- tests ---- */

static void test_strbuf(void)
{
	struct vg_strbuf b = { 0 };
	char chunk[1000], *big;
	size_t i, ok = 1;

	vg_strbuf_add(&b, "", 0);
	CHECK(!b.failed);
	vg_strbuf_printf(&b, "%s-%d", "a", 42);
	CHECK_STR(b.data, "a-42");
	CHECK_EQ_U64(b.len, 4);
	vg_strbuf_free(&b);
	CHECK(b.data == NULL && b.len == 0 && b.cap == 0);

	/* past 1 MiB by doubling: 2000 appends of 1000 bytes, then one printf bigger than what is left */
	for (i = 0; i < sizeof(chunk); i++)
		chunk[i] = (char)('a' + i % 26);
	for (i = 0; i < 2000; i++)
		vg_strbuf_add(&b, chunk, sizeof(chunk));
	CHECK(!b.failed);
	CHECK_EQ_U64(b.len, 2000000);
	CHECK(b.cap > b.len && (b.cap & (b.cap - 1)) == 0);   /* 256 doubled: a power of two */
	for (i = 0; i < 2000 && ok; i++)
		ok = memcmp(b.data + i * sizeof(chunk), chunk, sizeof(chunk)) == 0;
	CHECK(ok);
	big = malloc(3 * MiB + 1);
	if (!big)
		abort();
	memset(big, 'x', 3 * MiB);
	big[3 * MiB] = '\0';
	vg_strbuf_printf(&b, "[%s]", big);
	CHECK(!b.failed);
	CHECK_EQ_U64(b.len, 2000000 + 3 * MiB + 2);
	CHECK(b.data[2000000] == '[' && b.data[b.len - 1] == ']' && b.data[b.len] == '\0');
	CHECK(b.data[2000000 + 1 + 3 * MiB - 1] == 'x');
	free(big);
	vg_strbuf_free(&b);

	/* a request that cannot be satisfied marks the buffer failed, keeps what it had and drops the rest */
	vg_strbuf_add(&b, "kept", 4);
	vg_strbuf_add(&b, "never read", SIZE_MAX - 10);
	CHECK(b.failed);
	CHECK_EQ_U64(b.len, 4);
	CHECK_STR(b.data, "kept");
	vg_strbuf_add(&b, "more", 4);
	vg_strbuf_printf(&b, "%d", 7);
	CHECK_EQ_U64(b.len, 4);
	{
		struct vg_report r;
		memset(&r, 0, sizeof(r));
		CHECK_EQ_U64(vg_report_render_text(&r, &b), (uint64_t)-ENOMEM);
		CHECK_EQ_U64(vg_report_render_json(&r, &b), (uint64_t)-ENOMEM);
	}
	vg_strbuf_free(&b);
	CHECK(!b.failed && !b.data);
	vg_strbuf_free(&b);
}

static void test_full_text(void)
{
	struct vg_report r;
	struct vg_strbuf b = { 0 };

	build_full(&r);
	CHECK(vg_report_render_text(&r, &b) == 0);
	if (!b.data)
		return;
	check_golden("report.txt", &b);
	CHECK(text_block_ok(b.data, b.len));
	CHECK_CONTAINS(b.data, "vramguard: report (exit) pid 1234, 2026-11-21 21:50:03 UTC: python3 train.py --lr 0.1\n");
	CHECK_CONTAINS(b.data, "unlimited");
	CHECK_CONTAINS(b.data, "2 (6.00 GiB)\n");
	CHECK_CONTAINS(b.data, "  held at exit: 16 allocations, 973.00 MiB, from 12 call sites (largest first):\n");
	CHECK(strstr(b.data, "outstanding") == NULL);
	CHECK(strstr(b.data, "all of it in") == NULL);  /* plain sites: no word on caching allocators */
	CHECK_CONTAINS(b.data, "    768.00 MiB in 4 allocations via cuMemAlloc_v2 (site 3); churn (freed and made again): "
			       "9 of its 13 allocations were freed\n");
	CHECK_CONTAINS(b.data, "    128.00 MiB in 1 allocation via cuMemAllocAsync (site 9, a stream-ordered pool); churn");
	CHECK_CONTAINS(b.data, "      ... 2 more frames\n");
	CHECK_CONTAINS(b.data, "    and 2 more call sites with 768.00 KiB\n");
	CHECK_CONTAINS(b.data, "(no call site recorded)");
	CHECK_CONTAINS(b.data, "??  ");
	CHECK_CONTAINS(b.data, "/usr/lib/x.so (+0x1a2b)");
	CHECK_CONTAINS(b.data, "0x7ffff6b00010\n");
	CHECK_CONTAINS(b.data, "/opt/we\"ird\\dir\\nname/lib\xc3\xa9.so (+0x777)");  /* the newline escaped */
	CHECK_CONTAINS(b.data, "  streams: 134 created, 4 destroyed, 4 destroyed with work still queued, 130 live\n");
	CHECK_CONTAINS(b.data, "    destroyed with work queued (1x): created at site 5, destroyed at site 6\n");
	CHECK_CONTAINS(b.data, "      created:   make_stream+0x12  /work/examples/leaky (+0x1100)\n");
	CHECK_CONTAINS(b.data, "      destroyed: finish+0x33       /work/examples/leaky (+0x1300)\n");
	CHECK_CONTAINS(b.data, "    128 live streams created at site 7 (0 with work queued)\n");
	CHECK_CONTAINS(b.data, "(1 with work queued, 1 capturing)");
	CHECK_CONTAINS(b.data, "  full report: set VRAMGUARD_REPORT_FORMAT=json\n");
	CHECK(strstr(b.data, "alloc_small_6") == NULL);    /* beyond the 10 sites shown */
	CHECK(strstr(b.data, "cuStreamCreate (site") == NULL);     /* sites with nothing live are not listed */
	vg_strbuf_free(&b);
	vg_report_free(&r);
}

static void test_full_json(void)
{
	struct vg_report r;
	struct vg_strbuf b = { 0 };

	build_full(&r);
	CHECK(vg_report_render_json(&r, &b) == 0);
	if (!b.data)
		return;
	check_golden("report.json", &b);
	CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
	CHECK(strncmp(b.data, "{\n  \"schema\": \"vramguard.report/1\",\n", 36) == 0);
	CHECK_CONTAINS(b.data, "\"quota_bytes\": null");
	CHECK_CONTAINS(b.data, "\"quota_bytes\": 4294967296");
	CHECK_CONTAINS(b.data, "\"time\": \"2026-11-21T21:50:03.123Z\"");
	CHECK_CONTAINS(b.data, "\"time_ns\": 1795297803123456789");
	CHECK_CONTAINS(b.data, "\"module\": \"/opt/we\\\"ird\\\\dir\\nname/lib\xc3\xa9.so\"");
	CHECK_CONTAINS(b.data, "\"address\": \"0xffff800000001000\"");
	CHECK_CONTAINS(b.data, "\"synchronized\": true");
	CHECK(strstr(b.data, "\"json_hint\"") == NULL);
	if (have_python) {
		CHECK(python_json_valid(b.data, b.len));
		CHECK_EQ_U64(python_check(schema_check_py, b.data, b.len), 0);
	}
	vg_strbuf_free(&b);
	vg_report_free(&r);
}

static void test_empty(void)
{
	struct vg_report r;
	struct vg_strbuf t = { 0 }, j = { 0 };

	memset(&r, 0, sizeof(r));
	header(&r);
	CHECK(vg_report_render_text(&r, &t) == 0);
	CHECK(vg_report_render_json(&r, &j) == 0);
	if (!t.data || !j.data)
		return;
	check_golden("report_empty.txt", &t);
	check_golden("report_empty.json", &j);
	CHECK(text_block_ok(t.data, t.len));
	CHECK_CONTAINS(t.data, "  held at exit: none\n");
	CHECK(strstr(t.data, "streams:") == NULL);
	CHECK(strstr(t.data, "full report") == NULL);
	CHECK_CONTAINS(j.data, "\"devices\": [],\n");
	CHECK_CONTAINS(j.data, "\"sites\": [],\n");
	CHECK_CONTAINS(j.data, "\"allocations\": {\"live\": 0, \"listed\": 0, \"largest\": []},\n");
	CHECK_CONTAINS(j.data, "\"destroyed_pending\": [], \"live\": []}\n}\n");
	if (have_python) {
		CHECK(python_json_valid(j.data, j.len));
		CHECK_EQ_U64(python_check(schema_check_py, j.data, j.len), 0);
	}
	vg_strbuf_free(&t);
	vg_strbuf_free(&j);

	/* a report the JSON reader might produce with counts but no arrays: still renders, nothing dereferenced */
	r.ndevices = 3;
	r.nsites = 5;
	r.nallocs = 2;
	r.nstream_events = 1;
	r.nstream_live = 1;
	CHECK(vg_report_render_text(&r, &t) == 0);
	CHECK(vg_report_render_json(&r, &j) == 0);
	CHECK_CONTAINS(j.data, "\"listed\": 0");
	vg_strbuf_free(&t);
	vg_strbuf_free(&j);
}

/* Backtraces off: one site without frames, id 0 everywhere; signal dumps carry their sequence number. */
static void test_backtrace_off(void)
{
	struct vg_report r;
	struct vg_strbuf b = { 0 };

	memset(&r, 0, sizeof(r));
	header(&r);
	snprintf(r.reason, sizeof(r.reason), "signal");
	r.sequence = 2;
	r.backtrace_depth = 0;
	r.sites = unit_xcalloc(1, sizeof(*r.sites));
	add_site(&r, 0, "cuMemAlloc_v2", 1, 1023, 0);
	r.allocs_live = 1;
	r.streams_created = 1;
	r.nstream_live = 1;
	r.stream_live = unit_xcalloc(1, sizeof(*r.stream_live));
	r.stream_live[0].count = 1;
	CHECK(vg_report_render_text(&r, &b) == 0);
	if (!b.data)
		return;
	CHECK(text_block_ok(b.data, b.len));
	CHECK_CONTAINS(b.data, "vramguard: report (signal #2) pid 1234");
	CHECK_CONTAINS(b.data, "outstanding: 1 allocation, 1023 B, from 1 call site (largest first):\n");
	CHECK_CONTAINS(b.data, "    1023 B in 1 allocation via cuMemAlloc_v2 (site 0); churn (freed and made again): 3 of "
			       "its 4 allocations were freed\n      (no call site: VRAMGUARD_BACKTRACE=0)\n");
	CHECK_CONTAINS(b.data, "    1 live stream created at site 0 (0 with work queued)\n"
			       "      created: (no call site: VRAMGUARD_BACKTRACE=0)\n");
	vg_strbuf_free(&b);
	vg_report_free(&r);
}

/* Memory in PyTorch's caching allocator: each site says where it comes from and whether it only grew or churned;
 * when all of it is in caching allocators the headline's next line says so, "not a leak by itself" only at exit;
 * one plain site with live memory takes the line away. */
static void test_caching_text(void)
{
	struct vg_report r;
	struct vg_strbuf b = { 0 };
	struct vg_report_site *s;

	memset(&r, 0, sizeof(r));
	header(&r);
	r.sites = unit_xcalloc(4, sizeof(*r.sites));
	s = add_site(&r, 7, "cuMemAlloc_v2", 48, 1536 * MiB, 1);
	s->total_allocs = 48;
	s->frames[0].symbol = "_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator11alloc_blockEv";
	s = add_site(&r, 8, "cuMemAlloc_v2", 1, 2 * MiB, 1);
	s->total_allocs = 1;
	s->frames[0].module = "/v/torch/lib/libc10_cuda.so";
	s = add_site(&r, 9, "cuMemAlloc_v2", 12, 12 * MiB, 1);
	s->total_allocs = 4812;
	s->frames[0].module = "/v/torch/lib/libc10_cuda.so";
	r.allocs_live = 61;
	CHECK(vg_report_render_text(&r, &b) == 0);
	CHECK(b.data && text_block_ok(b.data, b.len));
	CHECK_CONTAINS(b.data, "  held at exit: 61 allocations, 1.51 GiB, from 3 call sites (largest first):\n"
			       "    all of it in PyTorch's caching allocator, which keeps freed memory for reuse instead of "
			       "giving it back to the driver: not a leak by itself\n"
			       "    1.50 GiB in 48 allocations via cuMemAlloc_v2 (site 7, PyTorch's caching allocator); "
			       "only grew: none of its 48 allocations was freed\n");
	CHECK_CONTAINS(b.data, "    2.00 MiB in 1 allocation via cuMemAlloc_v2 (site 8, PyTorch's caching allocator); "
			       "only grew: its one allocation was not freed\n");
	CHECK_CONTAINS(b.data, "    12.00 MiB in 12 allocations via cuMemAlloc_v2 (site 9, PyTorch's caching allocator); "
			       "churn (freed and made again): 4800 of its 4812 allocations were freed\n");
	vg_strbuf_free(&b);

	snprintf(r.reason, sizeof(r.reason), "denial");         /* before exit: outstanding, no verdict */
	b = (struct vg_strbuf){ 0 };
	CHECK(vg_report_render_text(&r, &b) == 0);
	CHECK(b.data && strstr(b.data, "held at exit") == NULL && strstr(b.data, "not a leak") == NULL);
	CHECK_CONTAINS(b.data, "  outstanding: 61 allocations, 1.51 GiB, from 3 call sites (largest first):\n"
			       "    all of it in PyTorch's caching allocator, which keeps freed memory for reuse instead of "
			       "giving it back to the driver\n");
	vg_strbuf_free(&b);

	snprintf(r.reason, sizeof(r.reason), "exit");
	s = add_site(&r, 10, "cuMemAlloc_v2", 1, 1 * MiB, 1);  /* a plain site: no longer all of it */
	s->frames[0].symbol = "leak_buffers";
	s->total_allocs = 0;                                    /* no totals: nothing said about its history */
	b = (struct vg_strbuf){ 0 };
	CHECK(vg_report_render_text(&r, &b) == 0);
	CHECK(b.data && strstr(b.data, "all of it") == NULL);
	CHECK_CONTAINS(b.data, "    1.00 MiB in 1 allocation via cuMemAlloc_v2 (site 10)\n");
	vg_strbuf_free(&b);
	vg_report_free(&r);
}

/* A symbol wider than the symbol column (mangled C++) keeps two spaces before its module; leading CUDA runtime
 * frames are folded into one line. */
static void test_long_symbol(void)
{
	struct vg_report r;
	struct vg_strbuf b = { 0 };

	memset(&r, 0, sizeof(r));
	header(&r);
	r.sites = unit_xcalloc(1, sizeof(*r.sites));
	struct vg_report_site *s = add_site(&r, 1, "cuMemAlloc_v2", 1, 4096, 4);
	memmove(&s->frames[2], &s->frames[0], 2 * sizeof(s->frames[0]));
	s->frames[0].symbol = "libcudart_static_0123456789abcdef";
	s->frames[1].symbol = "cudaMalloc";
	struct vg_report_frame *f = &s->frames[2];
	f[0].symbol = "_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator11alloc_blockEv";
	f[0].module = "/work/leaky";
	f[0].symbol_offset = 0x3a;
	f[0].module_offset = 0x1234;
	f[1].symbol = "main";
	f[1].module = "/work/leaky";
	r.allocs_live = 1;
	CHECK(vg_report_render_text(&r, &b) == 0);
	if (!b.data)
		return;
	CHECK_CONTAINS(b.data, "alloc_block+0x3a  /work/leaky (+0x1234)");
	CHECK_CONTAINS(b.data, "(2 frames in the CUDA runtime)\n      ");
	/* With libstdc++ in the process the name is demangled, without its parameters; without it, left mangled. */
	if (dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD))
		CHECK_CONTAINS(b.data, "      c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block+0x3a");
	else
		CHECK_CONTAINS(b.data, "      _ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator11alloc_blockEv+0x3a");
	vg_strbuf_free(&b);
	vg_report_free(&r);
}

/* Bytes that are not UTF-8, control characters and a full-length field without its NUL. */
static void test_hostile_strings(void)
{
	struct vg_report r;
	struct vg_report_site *s;
	struct vg_strbuf b = { 0 };

	memset(&r, 0, sizeof(r));
	header(&r);
	memset(r.hostname, 'h', sizeof(r.hostname));      /* no terminating NUL: the renderer must stop at the end */
	snprintf(r.command, sizeof(r.command), "run\x1b[31m\ttab\rcr\x7f");
	r.sites = unit_xcalloc(1, sizeof(*r.sites));
	s = add_site(&r, 1, "cuMemAlloc_v2", 1, 4096, 1);
	set_frame(&s->frames[0], 0x1000, "/lib/\xff\xfe" "bad\xc3" "/\xed\xa0\x80" "x\xf0\x9f\x98\x80.so", 0x10,
		  "sym\x01", 1);
	r.allocs_live = 1;
	CHECK(vg_report_render_json(&r, &b) == 0);
	if (!b.data)
		return;
	CHECK_CONTAINS(b.data, "\"module\": \"/lib/\\ufffd\\ufffdbad\\ufffd/\\ufffd\\ufffd\\ufffdx\xf0\x9f\x98\x80.so\"");
	CHECK_CONTAINS(b.data, "\"symbol\": \"sym\\u0001\"");
	CHECK_CONTAINS(b.data, "\"command\": \"run\\u001b[31m\\ttab\\rcr\\u007f\"");
	CHECK(strstr(b.data, "hhhh\"") != NULL);
	if (have_python)
		CHECK(python_json_valid(b.data, b.len));
	vg_strbuf_free(&b);
	CHECK(vg_report_render_text(&r, &b) == 0);
	CHECK(b.data && text_block_ok(b.data, b.len));
	CHECK_CONTAINS(b.data, "run\\x1b[31m\\ttab\\x0dcr\\x7f\n");
	CHECK_CONTAINS(b.data, "sym\\x01+0x1  ");
	vg_strbuf_free(&b);
	vg_report_free(&r);
}

static void test_free(void)
{
	struct vg_report r;

	vg_report_free(NULL);
	memset(&r, 0, sizeof(r));
	vg_report_free(&r);                 /* all NULL */
	build_full(&r);
	r.nsites = 16;                       /* more slots than filled: unfilled ones have NULL frames */
	vg_report_free(&r);
	CHECK(!r.devices && !r.sites && !r.allocs && !r.stream_events && !r.stream_live);
	CHECK(r.ndevices == 0 && r.nsites == 0 && r.nallocs == 0 && r.nstream_events == 0 && r.nstream_live == 0);
	CHECK_STR(r.command, "python3 train.py --lr 0.1");   /* the scalars are left alone */
	vg_report_free(&r);                 /* twice is harmless */
	CHECK(r.sites == NULL);
}

/* A report's strings: each kept once, cut at VG_REPORT_FRAME_STR - 1 bytes; a pool refuses to pass its bound. */
static void test_strings(void)
{
	struct vg_report r;
	struct vg_strpool *p;
	char big[600];
	const char *a, *b;

	memset(&r, 0, sizeof(r));
	a = vg_report_string(&r, "libtorch_cuda.so", VG_REPORT_FRAME_STR);
	b = vg_report_string(&r, "libtorch_cuda.so", VG_REPORT_FRAME_STR);
	CHECK(a && a == b && r.strings);
	CHECK(vg_report_string(&r, "", VG_REPORT_FRAME_STR) && vg_report_string(&r, "", VG_REPORT_FRAME_STR)[0] == '\0');
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	a = vg_report_string(&r, big, VG_REPORT_FRAME_STR);
	CHECK(a && strlen(a) == VG_REPORT_FRAME_STR - 1);
	a = vg_report_string(&r, big, VG_REPORT_PY_FUNCTION_STR);     /* another cut, another string */
	CHECK(a && strlen(a) == VG_REPORT_PY_FUNCTION_STR - 1);
	vg_report_free(&r);
	CHECK(r.strings == NULL);
	vg_report_free(&r);                 /* twice is harmless */

	p = vg_strpool_new(128);
	CHECK(p != NULL);
	if (!p)
		return;
	for (unsigned i = 0; i < 5000; i++) {  /* the table grows; every string is found again */
		char s[32];
		snprintf(s, sizeof(s), "f%u", i % 20);
		a = vg_strpool_add(p, s, strlen(s));
		CHECK(a && strcmp(a, s) == 0 && vg_strpool_add(p, s, strlen(s)) == a);
	}
	CHECK(vg_strpool_add(p, big, 58) == NULL);      /* 20 strings, 70 bytes with their NULs: 59 more pass 128 */
	CHECK(vg_strpool_add(p, "f3", 2) != NULL);      /* one it has costs nothing */
	a = vg_strpool_add(p, "a\0b", 3);              /* bytes, NULs among them */
	CHECK(a && memcmp(a, "a\0b", 4) == 0 && vg_strpool_add(p, "a", 1) != a);
	CHECK(vg_strpool_add(p, big, 51) != NULL);      /* "a\0b", "a": 76; 76 + 52: exactly full */
	CHECK(vg_strpool_add(p, "", 0) == NULL);
	vg_strpool_free(p);
	vg_strpool_free(NULL);

	p = vg_strpool_new((size_t)1 << 20);
	memset(big, 'y', sizeof(big));
	for (unsigned i = 0; p && i < 300; i++) {      /* longer than a chunk holds, among short ones */
		char s[16];
		snprintf(s, sizeof(s), "s%u", i);
		a = vg_strpool_add(p, s, strlen(s));
		CHECK(a && strcmp(a, s) == 0);
		big[0] = (char)('a' + i % 26);
		big[1] = (char)('a' + i / 26);
		a = vg_strpool_add(p, big, sizeof(big));
		CHECK(a && memcmp(a, big, sizeof(big)) == 0 && a[sizeof(big)] == '\0');
	}
	vg_strpool_free(p);
}

int main(int argc, char **argv)
{
	const char *e = getenv("UPDATE_GOLDEN");
	int i;

	update_golden = e && *e && strcmp(e, "0") != 0;
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--update-golden") == 0)
			update_golden = 1;
	(void)dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);  /* C++ names are demangled when it is present */
	have_python = system("command -v python3 >/dev/null 2>&1") == 0;
	if (!have_python)
		fprintf(stderr, "note: python3 not found; JSON validity checks skipped\n");

	test_strbuf();
	test_full_text();
	test_full_json();
	test_empty();
	test_backtrace_off();
	test_caching_text();
	test_long_symbol();
	test_hostile_strings();
	test_free();
	test_strings();
	vg_report_free(&names);
	return UNIT_DONE();
}
