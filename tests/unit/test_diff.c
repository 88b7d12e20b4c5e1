/* Unit tests for cli/diff.c: hand-built pairs of reports (one process: grew, new, shrank, gone, the row cap;
 * two processes whose module paths differ; no change; devices added, renumbered or replaced; streams) against
 * golden files (UPDATE_GOLDEN=1 or --update-golden rewrites them), and vg_report_diff_grew. Run from the repository
 * root. */
#include "cli/diff.h"
#include "tests/unit/unit.h"

#include <errno.h>
#include <stdlib.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define SEC 1000000000ull

#define GOLDEN_DIR "tests/unit/golden/"
#define T0 1795297803123456789ull       /* 2026-11-21 21:50:03.123 UTC */

static int update_golden;

/* ---- building reports by hand ---- */

static void header(struct vg_report *r, int pid, const char *host, uint64_t sequence, uint64_t time_ns)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->reason, sizeof(r->reason), "signal");
	r->sequence = sequence;
	r->pid = pid;
	r->time_ns = time_ns;
	snprintf(r->command, sizeof(r->command), "/work/examples/leaky --serve");
	snprintf(r->hostname, sizeof(r->hostname), "%s", host);
	snprintf(r->version, sizeof(r->version), "0.1.0");
	snprintf(r->driver, sizeof(r->driver), "alive");
	r->backtrace_depth = 16;
	r->sites = unit_xcalloc(64, sizeof(*r->sites));
	r->devices = unit_xcalloc(8, sizeof(*r->devices));
}

static struct vg_report_device *add_device(struct vg_report *r, int ordinal, const char *uuid, uint64_t used,
					   uint64_t allocs, uint64_t frees)
{
	struct vg_report_device *d = &r->devices[r->ndevices++];
	d->ordinal = ordinal;
	snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	d->quota_set = 1;
	d->quota_bytes = 8 * GiB;
	d->total_bytes = 80 * GiB;
	d->used_bytes = used;
	d->peak_bytes = used + 256 * MiB;
	d->allocs = allocs;
	d->frees = frees;
	return d;
}

/* Holds the strings of the frames built here (a report keeps its own in the same way). */
static struct vg_report names;

static const char *keep(const char *s)
{
	const char *k = vg_report_string(&names, s, VG_REPORT_FRAME_STR);
	CHECK(k != NULL);
	return k ? k : "";
}

static void set_frame(struct vg_report_frame *f, const char *module, uint64_t module_offset, const char *symbol,
		      uint64_t symbol_offset)
{
	f->address = 0x555555554000ull + module_offset;
	f->module = keep(module);
	f->module_offset = module_offset;
	f->symbol = keep(symbol);
	f->symbol_offset = symbol_offset;
}

/* A site whose stack is: optionally two frames in libcudart, then fn in the application (at offset off), then
 * its callers in the application and libtorch. `app` is the application's path, `lib` the directory of the
 * libraries: they differ between containers, the offsets do not. */
static struct vg_report_site *add_site(struct vg_report *r, uint32_t id, const char *api, uint64_t live_count,
				       uint64_t live_bytes, const char *app, const char *lib, const char *fn,
				       uint64_t off, int runtime)
{
	struct vg_report_site *s = &r->sites[r->nsites++];
	char path[256];
	uint32_t i = 0;

	s->id = id;
	snprintf(s->api, sizeof(s->api), "%s", api);
	s->live_count = live_count;
	s->live_bytes = live_bytes;
	s->total_allocs = live_count * 2 + 1;
	s->total_bytes = live_bytes * 2 + 4096;
	s->nframes = 6 + (runtime ? 2 : 0);
	s->frames = unit_xcalloc(s->nframes, sizeof(*s->frames));
	snprintf(path, sizeof(path), "%s/libcudart.so.12", lib);
	if (runtime) {
		set_frame(&s->frames[i++], path, 0x4a1f0, "", 0);
		set_frame(&s->frames[i++], path, 0x5b230, "cudaMalloc", 0x80);
	}
	set_frame(&s->frames[i++], app, off, fn, 0x1c);
	set_frame(&s->frames[i++], app, 0x1234, "main_loop", 0x40);
	snprintf(path, sizeof(path), "%s/libtorch_cuda.so", lib);
	set_frame(&s->frames[i++], path, 0x9000 + off, "at::native::layer", 0x10);
	set_frame(&s->frames[i++], app, 0x1300, "main", 0x20);
	set_frame(&s->frames[i++], "", 0, "", 0);
	set_frame(&s->frames[i++], app, 0x1000, "_start", 0x2e);
	r->allocs_live += live_count;
	return s;
}

static void add_stream_live(struct vg_report *r, uint32_t create_site, uint64_t count)
{
	struct vg_report_stream_live *l;
	if (!r->stream_live)
		r->stream_live = unit_xcalloc(8, sizeof(*r->stream_live));
	l = &r->stream_live[r->nstream_live++];
	l->create_site = create_site;
	l->count = count;
}

static void add_stream_event(struct vg_report *r, uint32_t create_site, uint32_t destroy_site, uint64_t count)
{
	struct vg_report_stream_event *e;
	if (!r->stream_events)
		r->stream_events = unit_xcalloc(8, sizeof(*r->stream_events));
	e = &r->stream_events[r->nstream_events++];
	e->create_site = create_site;
	e->destroy_site = destroy_site;
	e->count = count;
}

#define APP "/work/examples/leaky"
#define LIB "/usr/lib/x86_64-linux-gnu"

/* Report #2 and #5 of one service, 20m38s apart: site 3 grew (behind the CUDA runtime), 4 grew a little, 9 is new,
 * 5 shrank, 6 went away, 8 stayed; GPU 0 grew, GPU 1 did not; two more live streams from site 7. */
static void build_service_old(struct vg_report *o)
{
	header(o, 4242, "gpu-node-7", 2, T0);
	add_device(o, 0, "GPU-5e3c9a1b-7f2d-4c6e-9a0b-1d2e3f405162", 1 * GiB, 1203, 1190);
	add_device(o, 1, "GPU-00000000-1111-2222-3333-444455556666", 0, 0, 0);
	add_site(o, 3, "cuMemAlloc_v2", 8, 512 * MiB, APP, LIB, "leak_buffers", 0x11a9, 1);
	add_site(o, 4, "cuMemAllocAsync", 10, 100 * MiB, APP, LIB, "cache_grow", 0x1400, 0);
	add_site(o, 5, "cuMemAlloc_v2", 4, 16 * MiB, APP, LIB, "scratch", 0x1500, 0);
	add_site(o, 6, "cuMemAlloc_v2", 3, 12 * MiB, APP, LIB, "warmup", 0x1600, 0);
	add_site(o, 8, "cuMemAlloc_v2", 2, 64 * MiB, APP, LIB, "weights", 0x1800, 0);
	add_site(o, 7, "cuStreamCreate", 0, 0, APP, LIB, "make_stream", 0x1700, 0);
	add_site(o, 10, "cuStreamDestroy_v2", 0, 0, APP, LIB, "finish", 0x1a00, 0);
	o->streams_created = 130;
	o->streams_destroyed = 2;
	add_stream_live(o, 7, 128);
	add_stream_event(o, 7, 10, 1);
}

/* Revision 2: GPU 0's timeline, a point every 2 minutes from 10 minutes before the first report to the second: a
 * peak of 3.39 GiB 12 minutes after the first report (the lifetime peak, before it, does not count), two
 * denials just after it. */
static void add_timeline(struct vg_report *n, struct vg_report_device *d)
{
	size_t i, np = 17;

	n->schema_revision = 2;
	d->denied_count = 2;
	d->denied_bytes = 2 * GiB;
	d->timeline_set = 1;
	d->timeline_period_ms = 20000;
	d->timeline_compactions = 1;
	d->ntimeline_points = np;
	d->timeline_points = unit_xcalloc(np, sizeof(*d->timeline_points));
	for (i = 0; i < np; i++) {
		struct vg_report_timeline_point *p = &d->timeline_points[i];
		p->time_ns = i + 1 < np ? T0 - 10 * 60 * SEC + i * 120 * SEC : n->time_ns;
		p->used_bytes = i < 11 ? 1 * GiB + i * 200 * MiB : 3 * GiB + 256 * MiB;
		p->peak_bytes = i == 2 ? 3 * GiB + 512 * MiB : i == 11 ? 3 * GiB + 400 * MiB : p->used_bytes;
		p->denied_count = i < 12 ? 0 : 2;
		p->denied_bytes = p->denied_count * GiB;
	}
}

static void build_service_new(struct vg_report *n)
{
	header(n, 4242, "gpu-node-7", 5, T0 + (20 * 60 + 38) * SEC);
	add_device(n, 0, "GPU-5e3c9a1b-7f2d-4c6e-9a0b-1d2e3f405162", 3 * GiB + 256 * MiB, 2406, 2380);
	add_device(n, 1, "GPU-00000000-1111-2222-3333-444455556666", 0, 0, 0);
	add_site(n, 3, "cuMemAlloc_v2", 40, 2 * GiB + 512 * MiB, APP, LIB, "leak_buffers", 0x11a9, 1);
	add_site(n, 9, "cuMemAllocAsync", 2, 256 * MiB, APP, LIB, "new_pool", 0x1900, 0);
	add_site(n, 4, "cuMemAllocAsync", 11, 350 * MiB, APP, LIB, "cache_grow", 0x1400, 0);
	add_site(n, 8, "cuMemAlloc_v2", 2, 64 * MiB, APP, LIB, "weights", 0x1800, 0);
	add_site(n, 5, "cuMemAlloc_v2", 1, 4 * MiB, APP, LIB, "scratch", 0x1500, 0);
	add_site(n, 7, "cuStreamCreate", 0, 0, APP, LIB, "make_stream", 0x1700, 0);
	add_site(n, 10, "cuStreamDestroy_v2", 0, 0, APP, LIB, "finish", 0x1a00, 0);
	n->streams_created = 134;
	n->streams_destroyed = 4;
	add_stream_live(n, 7, 130);
	add_stream_event(n, 7, 10, 2);
	add_timeline(n, &n->devices[0]);
}

static void build_service(struct vg_report *o, struct vg_report *n)
{
	build_service_old(o);
	build_service_new(n);
}

/* ---- helpers ---- */

static void check_golden(const char *name, const struct vg_strbuf *b)
{
	char path[256];
	snprintf(path, sizeof(path), GOLDEN_DIR "%s", name);
	unit_check_golden(path, b->data, b->len, update_golden);
}

/* One block on stderr: every line starts with "vramguard:" or two spaces, and it ends in \n. */
static int text_block_ok(const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	if (len == 0 || s[len - 1] != '\n' || strncmp(s, "vramguard: ", 11) != 0)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (strncmp(p, "vramguard:", 10) != 0 && strncmp(p, "  ", 2) != 0)
			return 0;
		if (nl > p && nl[-1] == ' ')
			return 0;       /* no trailing blanks */
		p = nl + 1;
	}
	return 1;
}

/* Diff o -> n, compare with the golden file (if named), check the block's shape; the caller frees *b. */
static void diff(const struct vg_report *o, const struct vg_report *n, size_t max_rows, int all, const char *golden,
		 struct vg_strbuf *b)
{
	struct vg_diff_opts opts = { max_rows, all };

	memset(b, 0, sizeof(*b));
	CHECK(vg_report_diff_text(o, n, &opts, b) == 0);
	if (!b->data) {
		UNIT_FAIL_("no output");
		vg_strbuf_add(b, "", 0);
		return;
	}
	CHECK(text_block_ok(b->data, b->len));
	if (golden)
		check_golden(golden, b);
}

/* The position of needle in haystack, for checking the order of lines (SIZE_MAX if absent). */
static size_t pos(const char *haystack, const char *needle)
{
	const char *p = strstr(haystack, needle);
	return p ? (size_t)(p - haystack) : SIZE_MAX;
}

/* ---- tests ---- */

static void test_same_process(void)
{
	struct vg_report o, n;
	struct vg_strbuf b;

	build_service(&o, &n);
	diff(&o, &n, 0, 0, "diff_same.txt", &b);
	CHECK_CONTAINS(b.data, "vramguard: diff of pid 4242 on gpu-node-7: report #2 (2026-11-21 21:50:03 UTC) -> "
			       "report #5 (2026-11-21 22:10:41 UTC), 20m38s later\n");
	CHECK(strstr(b.data, "different processes") == NULL);
	CHECK(strstr(b.data, "note:") == NULL);
	CHECK_CONTAINS(b.data, "1.00 GiB -> 3.25 GiB (+2.25 GiB)");
	CHECK_CONTAINS(b.data, "+1203");
	CHECK_CONTAINS(b.data, "  grew: 2 call sites, +2.24 GiB\n");
	CHECK_CONTAINS(b.data, "    +2.00 GiB    (now 2.50 GiB in 40 allocations, was 512.00 MiB in 8)  "
			       "site 3 via cuMemAlloc_v2\n"
			       "      leak_buffers+0x1c       /work/examples/leaky (+0x11a9)\n");
	CHECK(strstr(b.data, "cudaMalloc") == NULL);    /* the runtime's frames are skipped */
	CHECK_CONTAINS(b.data, "  new: 1 call site, +256.00 MiB\n");
	CHECK_CONTAINS(b.data, "    +256.00 MiB  (in 2 allocations)  site 9 via cuMemAllocAsync\n");
	CHECK_CONTAINS(b.data, "  shrank: 1 call site, -12.00 MiB\n");
	CHECK_CONTAINS(b.data, "(now 4.00 MiB in 1 allocation, was 16.00 MiB in 4)  site 5");
	CHECK_CONTAINS(b.data, "  gone: 1 call site, -12.00 MiB\n");
	CHECK(pos(b.data, "  grew:") < pos(b.data, "  new:") && pos(b.data, "  new:") < pos(b.data, "  shrank:") &&
	      pos(b.data, "  shrank:") < pos(b.data, "  gone:") && pos(b.data, "  gone:") < pos(b.data, "  streams:"));
	CHECK(pos(b.data, "site 3 via") < pos(b.data, "site 4 via"));
	CHECK(strstr(b.data, "weights") == NULL);        /* unchanged: only with all */
	CHECK(strstr(b.data, "unchanged") == NULL);
	CHECK_CONTAINS(b.data, "  streams: live 128 -> 130 (+2); created +4, destroyed +2; destroyed with work queued +1\n"
			       "    +2 live streams created at site 7 (now 130)\n"
			       "      make_stream+0x1c  /work/examples/leaky (+0x1700)\n");
	CHECK_CONTAINS(b.data, "    +1 destroyed with work queued: created at site 7, destroyed at site 10\n");
	vg_strbuf_free(&b);

	diff(&o, &n, 0, 1, "diff_same_all.txt", &b);
	CHECK_CONTAINS(b.data, "  unchanged: 1 call site, 64.00 MiB\n"
			       "    64.00 MiB  (in 2 allocations)  site 8 via cuMemAlloc_v2\n");
	vg_strbuf_free(&b);

	CHECK(vg_report_diff_grew(&o, &n) == 1);
	CHECK(vg_report_diff_grew(&n, &o) == 1);        /* backwards, site 5 grew and site 6 is new */
	vg_report_free(&o);
	vg_report_free(&n);
}

/* 25 new sites, 24 grown ones: the row cap per section, with what the hidden rows add up to. */
static void test_row_cap(void)
{
	struct vg_report o, n;
	struct vg_strbuf b;
	uint32_t i;

	header(&o, 77, "gpu-node-1", 1, T0);
	header(&n, 77, "gpu-node-1", 2, T0 + 59 * SEC);
	add_device(&o, 0, "", 0, 0, 0);
	add_device(&n, 0, "", 300 * MiB, 25, 0);
	for (i = 0; i < 25; i++) {
		char fn[32];
		snprintf(fn, sizeof(fn), "layer_%u", (unsigned)i);
		/* equal sizes in pairs: ties go to more allocations, then the lower id */
		add_site(&n, 100 + i, "cuMemAlloc_v2", 1 + i % 2, (uint64_t)(25 - i / 2) * MiB, APP, LIB, fn,
			 0x2000 + i * 0x10, 0);
	}
	diff(&o, &n, 4, 0, "diff_cap.txt", &b);
	CHECK_CONTAINS(b.data, "59s later\n");
	CHECK_CONTAINS(b.data, "  new: 25 call sites, +");
	CHECK_CONTAINS(b.data, "    +25.00 MiB  (in 2 allocations)  site 101 via cuMemAlloc_v2\n");
	CHECK(pos(b.data, "site 101 via") < pos(b.data, "site 100 via"));
	CHECK(pos(b.data, "site 100 via") < pos(b.data, "site 103 via"));
	CHECK(pos(b.data, "site 103 via") < pos(b.data, "site 102 via"));
	CHECK(strstr(b.data, "site 104 via") == NULL);
	CHECK_CONTAINS(b.data, "    and 21 more (+");
	vg_strbuf_free(&b);

	diff(&o, &n, 0, 0, NULL, &b);          /* the default: 20 rows */
	CHECK_CONTAINS(b.data, "    and 5 more (+71.00 MiB)\n");    /* sites 120..124: 15 + 15 + 14 + 14 + 13 MiB */
	vg_strbuf_free(&b);
	vg_report_free(&o);
	vg_report_free(&n);
}

/* The same program in two containers: other pids, hosts, module paths and site ids, same basenames and offsets. */
static void test_processes(void)
{
	struct vg_report o, n;
	struct vg_strbuf b;

	header(&o, 1111, "node-a", 3, T0);
	add_device(&o, 0, "GPU-aaaaaaaa-0000-0000-0000-000000000000", 600 * MiB, 500, 490);
	add_site(&o, 3, "cuMemAlloc_v2", 8, 512 * MiB, APP, LIB, "leak_buffers", 0x11a9, 1);
	add_site(&o, 4, "cuMemAlloc_v2", 2, 64 * MiB, APP, LIB, "weights", 0x1800, 0);
	add_site(&o, 5, "cuMemAlloc_v2", 1, 24 * MiB, APP, LIB, "old_build_only", 0x1500, 0);

	header(&n, 2222, "node-b", 1, T0 + (2 * 3600 + 5 * 60 + 7) * SEC);
	add_device(&n, 0, "GPU-aaaaaaaa-0000-0000-0000-000000000000", 1 * GiB, 400, 380);   /* the same GPU */
	/* other ids, other directories; the runtime elsewhere too */
	add_site(&n, 12, "cuMemAlloc_v2", 2, 64 * MiB, "/opt/app/bin/leaky", "/opt/conda/lib", "weights", 0x1800, 0);
	add_site(&n, 11, "cuMemAlloc_v2", 12, 768 * MiB, "/opt/app/bin/leaky", "/opt/conda/lib", "leak_buffers",
		 0x11a9, 1);
	/* same function name, other offset (another build): not the same site */
	add_site(&n, 13, "cuMemAlloc_v2", 1, 32 * MiB, "/opt/app/bin/leaky", "/opt/conda/lib", "old_build_only",
		 0x1504, 0);

	diff(&o, &n, 0, 1, "diff_procs.txt", &b);
	CHECK_CONTAINS(b.data, "vramguard: diff of pid 1111 on node-a, report #3 (2026-11-21 21:50:03 UTC) -> pid 2222 "
			       "on node-b, report #1 (2026-11-21 23:55:10 UTC), 2h05m later\n"
			       "  different processes: sites matched by call stack\n");
	CHECK_CONTAINS(b.data, "  grew: 1 call site, +256.00 MiB\n"
			       "    +256.00 MiB  (now 768.00 MiB in 12 allocations, was 512.00 MiB in 8)  "
			       "site 11 (was site 3) via cuMemAlloc_v2\n"
			       "      leak_buffers+0x1c       /opt/app/bin/leaky (+0x11a9)\n");
	CHECK_CONTAINS(b.data, "  new: 1 call site, +32.00 MiB\n");
	CHECK_CONTAINS(b.data, "  gone: 1 call site, -24.00 MiB\n");
	CHECK_CONTAINS(b.data, "site 12 (was site 4) via cuMemAlloc_v2\n");       /* unchanged, matched */
	CHECK_CONTAINS(b.data, "500 -> 400");   /* counters of two lives: both values, no difference */
	CHECK_CONTAINS(b.data, "600.00 MiB -> 1.00 GiB (+424.00 MiB)");
	vg_strbuf_free(&b);
	CHECK(vg_report_diff_grew(&o, &n) == 1);

	/* One process, but the later report given first: said, diffed as given, matched by stack. */
	vg_report_free(&n);
	header(&n, 1111, "node-a", 1, T0 - 30 * SEC);
	add_device(&n, 0, "GPU-aaaaaaaa-0000-0000-0000-000000000000", 512 * MiB, 300, 290);
	add_site(&n, 3, "cuMemAlloc_v2", 8, 512 * MiB, APP, LIB, "leak_buffers", 0x11a9, 1);
	diff(&o, &n, 0, 0, NULL, &b);
	CHECK_CONTAINS(b.data, "report #3 (2026-11-21 21:50:03 UTC) -> report #1 (2026-11-21 21:49:33 UTC), 30s earlier\n");
	CHECK_CONTAINS(b.data, "  note: the first report is the newer one");
	CHECK_CONTAINS(b.data, "  different processes (same pid, but the report number does not advance): sites matched "
			       "by call stack\n");
	CHECK_CONTAINS(b.data, "  gone: 2 call sites, -88.00 MiB\n");
	CHECK(strstr(b.data, "site 3 via") == NULL);     /* matched and unchanged */
	vg_strbuf_free(&b);
	CHECK(vg_report_diff_grew(&o, &n) == 0);

	/* Different backtrace depths: compared on the frames both recorded. */
	n.backtrace_depth = 4;
	o.backtrace_depth = 8;
	diff(&o, &n, 0, 0, NULL, &b);
	CHECK_CONTAINS(b.data, "  note: call stacks recorded 8 and 4 frames deep: compared on the first 4\n");
	vg_strbuf_free(&b);
	vg_report_free(&o);
	vg_report_free(&n);
}

static void test_no_change(void)
{
	struct vg_report o, n;
	struct vg_strbuf b;

	build_service_new(&o);
	build_service_new(&n);
	n.sequence = 6;
	n.time_ns += 1500 * 1000000ull;
	diff(&o, &n, 0, 0, "diff_nochange.txt", &b);
	CHECK_CONTAINS(b.data, "), 1s later\n");
	CHECK_CONTAINS(b.data, "  no change in live allocations\n");
	CHECK_CONTAINS(b.data, "  streams: live 130 (no change); created +0, destroyed +0; destroyed with work queued +0\n");
	CHECK(strstr(b.data, "grew:") == NULL && strstr(b.data, "new:") == NULL);
	vg_strbuf_free(&b);
	CHECK(vg_report_diff_grew(&o, &n) == 0);

	/* an empty process, twice */
	vg_report_free(&o);
	vg_report_free(&n);
	header(&o, 1, "h", 1, T0);
	header(&n, 1, "h", 2, T0);
	diff(&o, &n, 0, 0, NULL, &b);
	CHECK_CONTAINS(b.data, ", at the same time\n  GPU  none used\n  no change in live allocations\n");
	CHECK(strstr(b.data, "streams") == NULL);
	vg_strbuf_free(&b);
	CHECK(vg_report_diff_grew(&o, &n) == 0);

	/* only frees: nothing grew */
	add_device(&o, 0, "", 10 * MiB, 1, 0);
	add_site(&o, 1, "cuMemAlloc_v2", 1, 10 * MiB, APP, LIB, "f", 0x10, 0);
	add_device(&n, 0, "", 0, 1, 1);
	add_site(&n, 1, "cuMemAlloc_v2", 0, 0, APP, LIB, "f", 0x10, 0);
	CHECK(vg_report_diff_grew(&o, &n) == 0);
	CHECK(vg_report_diff_grew(&n, &o) == 1);
	vg_report_free(&o);
	vg_report_free(&n);
}

/* A device the first report did not have, devices renumbered (CUDA_VISIBLE_DEVICES), one without uuid, and
 * backtraces off (only the devices can tell). */
static void test_devices(void)
{
	struct vg_report o, n;
	struct vg_strbuf b;

	header(&o, 5, "gpu-node-2", 1, T0);
	header(&n, 5, "gpu-node-2", 2, T0 + 3 * 86400 * SEC + 4 * 3600 * SEC);
	o.backtrace_depth = n.backtrace_depth = 0;
	add_device(&o, 0, "GPU-aaaa", 1 * GiB, 10, 0);
	add_device(&n, 0, "GPU-aaaa", 1 * GiB, 10, 0);
	add_device(&n, 1, "GPU-bbbb", 512 * MiB, 4, 0)->denied_count = 1;
	o.allocs_live = 10;
	n.allocs_live = 14;
	diff(&o, &n, 0, 0, "diff_device_added.txt", &b);
	CHECK_CONTAINS(b.data, "3d04h later\n");
	CHECK_CONTAINS(b.data, "(new: not in the first report)\n");
	CHECK_CONTAINS(b.data, "  live allocations 10 -> 14, but no call site changed (call sites are off: "
			       "VRAMGUARD_BACKTRACE=0)\n");
	vg_strbuf_free(&b);
	CHECK(vg_report_diff_grew(&o, &n) == 1);        /* a new device holding memory */
	vg_report_free(&o);
	vg_report_free(&n);

	/* renumbered: GPU-bbbb was 1, is 0; matched by uuid. A device without uuid matches by ordinal. */
	header(&o, 5, "gpu-node-2", 1, T0);
	header(&n, 5, "gpu-node-2", 2, T0 + 10 * SEC);
	add_device(&o, 0, "GPU-aaaa", 1 * GiB, 10, 0);
	add_device(&o, 1, "GPU-bbbb", 2 * GiB, 20, 0);
	add_device(&o, 2, "", 0, 0, 0);
	add_device(&n, 0, "GPU-BBBB", 2 * GiB, 20, 0);  /* uuids compare case-insensitively */
	add_device(&n, 1, "GPU-aaaa", 1 * GiB, 10, 0);
	add_device(&n, 2, "GPU-cccc", 0, 0, 0);
	add_device(&o, 3, "GPU-dddd", 0, 0, 0);
	add_device(&n, 3, "GPU-eeee", 0, 0, 0);         /* same ordinal, another GPU */
	diff(&o, &n, 0, 0, "diff_devices_uuid.txt", &b);
	CHECK_CONTAINS(b.data, "  note: GPU 0 was GPU 1 in the first report: matched by uuid GPU-BBBB\n");
	CHECK_CONTAINS(b.data, "  note: GPU 1 was GPU 0 in the first report: matched by uuid GPU-aaaa\n");
	CHECK_CONTAINS(b.data, "  note: GPU 3 is a different device in each report (GPU-dddd, then GPU-eeee): not "
			       "compared\n");
	CHECK_CONTAINS(b.data, "(new: not in the first report)\n");
	CHECK_CONTAINS(b.data, "(gone: not in the second report)\n");
	CHECK_CONTAINS(b.data, "  no change in live allocations\n");
	vg_strbuf_free(&b);
	CHECK(vg_report_diff_grew(&o, &n) == 0);
	vg_report_free(&o);
	vg_report_free(&n);
}

/* Streams: live ones from a site that went away, a new creation site, destroyed-with-work pairs, sites unknown. */
static void test_streams(void)
{
	struct vg_report o, n;
	struct vg_strbuf b;

	header(&o, 9, "gpu-node-3", 1, T0);
	header(&n, 9, "gpu-node-3", 2, T0 + 61 * SEC);
	add_site(&o, 7, "cuStreamCreate", 0, 0, APP, LIB, "make_stream", 0x1700, 0);
	add_site(&o, 8, "cuStreamCreateWithPriority", 0, 0, APP, LIB, "pool_init", 0x1800, 0);
	add_site(&n, 7, "cuStreamCreate", 0, 0, APP, LIB, "make_stream", 0x1700, 0);
	add_site(&n, 8, "cuStreamCreateWithPriority", 0, 0, APP, LIB, "pool_init", 0x1800, 0);
	add_site(&n, 11, "cuStreamCreate", 0, 0, APP, LIB, "per_request_stream", 0x1b00, 1);
	add_site(&n, 12, "cuStreamDestroy_v2", 0, 0, APP, LIB, "on_timeout", 0x1c00, 0);
	o.streams_created = 20;
	o.streams_destroyed = 4;
	add_stream_live(&o, 7, 4);
	add_stream_live(&o, 8, 12);
	add_stream_event(&o, 7, 0, 1);
	n.streams_created = 160;
	n.streams_destroyed = 10;
	add_stream_live(&n, 8, 10);
	add_stream_live(&n, 11, 140);
	add_stream_event(&n, 7, 0, 1);
	add_stream_event(&n, 11, 12, 5);
	n.stream_events[1].synchronized = 1;
	diff(&o, &n, 0, 0, "diff_streams.txt", &b);
	CHECK_CONTAINS(b.data, "  no change in live allocations\n");
	CHECK_CONTAINS(b.data, "  streams: live 16 -> 150 (+134); created +140, destroyed +6; destroyed with work "
			       "queued +5\n");
	CHECK_CONTAINS(b.data, "    +140 live streams created at site 11 (now 140)\n"
			       "      per_request_stream+0x1c  /work/examples/leaky (+0x1b00)\n");
	CHECK_CONTAINS(b.data, "    -4 live streams created at site 7 (now 0)\n");
	CHECK_CONTAINS(b.data, "    -2 live streams created at site 8 (now 10)\n");
	CHECK(pos(b.data, "+140 live") < pos(b.data, "-4 live") && pos(b.data, "-4 live") < pos(b.data, "-2 live"));
	CHECK_CONTAINS(b.data, "    +5 destroyed with work queued: created at site 11, destroyed at site 12 (waited for: "
			       "VRAMGUARD_STREAM_CHECK=sync)\n"
			       "      created:   per_request_stream+0x1c  /work/examples/leaky (+0x1b00)\n"
			       "      destroyed: on_timeout+0x1c          /work/examples/leaky (+0x1c00)\n");
	CHECK(strstr(b.data, "destroyed at site 0") == NULL);   /* the (7, 0) pair did not change */
	vg_strbuf_free(&b);

	diff(&o, &n, 1, 0, NULL, &b);
	CHECK_CONTAINS(b.data, "    and 2 more creation sites\n");
	vg_strbuf_free(&b);
	CHECK(vg_report_diff_grew(&o, &n) == 0);        /* streams are not bytes */
	vg_report_free(&o);
	vg_report_free(&n);
}

/* A report the JSON reader might give: counts without arrays. And a buffer that already failed. */
static void test_robust(void)
{
	struct vg_report o, n;
	struct vg_strbuf b = { 0 };

	memset(&o, 0, sizeof(o));
	memset(&n, 0, sizeof(n));
	o.nsites = n.nsites = 3;
	o.ndevices = n.ndevices = 2;
	o.nstream_live = n.nstream_events = 4;
	n.sequence = 1;
	CHECK(vg_report_diff_text(&o, &n, NULL, &b) == 0);
	CHECK(b.data && text_block_ok(b.data, b.len));
	CHECK(vg_report_diff_grew(&o, &n) == 0);
	vg_strbuf_free(&b);

	vg_strbuf_add(&b, "x", SIZE_MAX - 4);
	CHECK(b.failed);
	CHECK(vg_report_diff_text(&o, &n, NULL, &b) == -ENOMEM);
	vg_strbuf_free(&b);
}

/* Growth (revision 5): a device's followed sites, each growing at bph bytes an hour or not (bph 0). */
static void add_growth(struct vg_report_device *d, uint32_t site, uint64_t bph)
{
	struct vg_report_growth_site *g;
	if (!d->growth_sites)
		d->growth_sites = unit_xcalloc(8, sizeof(*d->growth_sites));
	d->growth_set = 1;
	g = &d->growth_sites[d->ngrowth_sites++];
	g->site = site;
	g->growing = g->rate_set = bph != 0;
	g->bytes_per_hour = bph;
	d->growth_bytes_per_hour += bph;
}

/* Site 3 grows faster, 9 starts growing (new), 5 stops; the forecasts then and now. Without growth in either report
 * nothing is said; with a report older than revision 5, one line. */
static void test_growth(void)
{
	struct vg_report o, n;
	struct vg_strbuf b;

	build_service(&o, &n);
	o.schema_revision = n.schema_revision = 5;
	add_growth(&o.devices[0], 3, 600 * MiB);
	add_growth(&o.devices[0], 5, 100 * MiB);
	o.devices[0].forecast_set = 1;
	o.devices[0].forecast_s = 20000;
	add_growth(&n.devices[0], 3, 6 * GiB);
	add_growth(&n.devices[0], 9, 1 * GiB);
	add_growth(&n.devices[0], 5, 0);
	add_growth(&n.devices[0], 4, 0);
	n.devices[0].forecast_set = 1;
	n.devices[0].forecast_s = 4000;
	diff(&o, &n, 0, 0, NULL, &b);
	CHECK_CONTAINS(b.data, "\n  growing call sites (the second report's rates, the first's, and the change of their "
			       "live bytes between the two):\n    GPU 0:\n");
	/* 2 GiB more in 20m38s: 5.816 GiB an hour (vg_format_bytes keeps two decimals, truncated) */
	CHECK_CONTAINS(b.data, "\n      site 3 (leak_buffers+0x1c): +6.00 GiB/h (was +600.00 MiB/h); +5.81 GiB/h between "
			       "the reports\n");
	CHECK_CONTAINS(b.data, "\n      site 9 (new_pool+0x1c): +1.00 GiB/h (not in the first report)\n");
	/* 12 MiB less in 20m38s */
	CHECK_CONTAINS(b.data, "\n      site 5 (scratch+0x1c): no longer growing (was +100.00 MiB/h); -34.89 MiB/h between "
			       "the reports\n");
	CHECK_CONTAINS(b.data, "\n      at the current rate the quota is reached in 1 h 6 min; the first report said 5 h 33 "
			       "min\n");
	CHECK(strstr(b.data, "site 4 (") == NULL);      /* followed, never growing */
	CHECK(pos(b.data, "growing call sites") < pos(b.data, "  grew: "));
	vg_strbuf_free(&b);
	o.schema_revision = 4;
	diff(&o, &n, 0, 0, NULL, &b);
	CHECK_CONTAINS(b.data, "\n  growing call sites: the first report has no growth data (report revision 4)\n");
	CHECK(strstr(b.data, "site 3 (leak_buffers") == NULL);
	vg_strbuf_free(&b);
	vg_report_free(&o);
	vg_report_free(&n);

	build_service(&o, &n);                          /* revision 2 reports, nothing grows: not a word */
	diff(&o, &n, 0, 0, NULL, &b);
	CHECK(strstr(b.data, "growing call sites") == NULL);
	vg_strbuf_free(&b);
	vg_report_free(&o);
	vg_report_free(&n);
}

int main(int argc, char **argv)
{
	const char *u = getenv("UPDATE_GOLDEN");

	update_golden = (u && *u && strcmp(u, "0") != 0) || (argc > 1 && strcmp(argv[1], "--update-golden") == 0);
	test_same_process();
	test_row_cap();
	test_processes();
	test_no_change();
	test_devices();
	test_streams();
	test_robust();
	test_growth();
	vg_report_free(&names);
	return UNIT_DONE();
}
