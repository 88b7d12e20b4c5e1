/* The one report emitter: a vg_report snapshot rendered as a short text block for people (stderr) or as the
 * versioned JSON document for tools (docs/report-format.md). Both append to a growable buffer; no stdio streams. */
#define _GNU_SOURCE
#include "report/report.h"
#include "config/config.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define VG_TEXT_FRAMES 8        /* frames per site in the text form (the JSON has them all) */
#define VG_TEXT_SYM_COL 48      /* the symbol column of the text form is padded to at most this width */

/* ---- growable buffer ---- */

void vg_strbuf_free(struct vg_strbuf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}

/* Make room for n more bytes plus the NUL. On failure marks the buffer failed (its content stays as it was). */
static int vg_strbuf_reserve(struct vg_strbuf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->failed)
		return -ENOMEM;
	if (n > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap < 256 ? 256 : b->cap;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			goto fail;
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (!p)
		goto fail;
	b->data = p;
	b->cap = cap;
	return 0;
fail:
	b->failed = 1;
	return -ENOMEM;
}

void vg_strbuf_add(struct vg_strbuf *b, const char *s, size_t n)
{
	if (vg_strbuf_reserve(b, n) != 0)
		return;
	if (n)
		memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void vg_strbuf_printf(struct vg_strbuf *b, const char *fmt, ...)
{
	va_list ap, aq;
	size_t room;
	int n;

	if (b->failed)
		return;
	va_start(ap, fmt);
	va_copy(aq, ap);
	room = b->cap > b->len ? b->cap - b->len : 0;
	n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
	} else if ((size_t)n >= room) {
		if (vg_strbuf_reserve(b, (size_t)n) == 0) {
			vsnprintf(b->data + b->len, b->cap - b->len, fmt, aq);
			b->len += (size_t)n;
		}
	} else {
		b->len += (size_t)n;
	}
	va_end(aq);
	if (b->data)
		b->data[b->len] = '\0';     /* a failed or truncated attempt may have written past len */
}

void vg_strbuf_str(struct vg_strbuf *b, const char *s)
{
	vg_strbuf_add(b, s, strlen(s));
}

void vg_strbuf_spaces(struct vg_strbuf *b, size_t n)
{
	static const char sp[] = "                                                                ";
	while (n > 0) {
		size_t k = n < sizeof(sp) - 1 ? n : sizeof(sp) - 1;
		vg_strbuf_add(b, sp, k);
		n -= k;
	}
}

static int vg_strbuf_result(const struct vg_strbuf *b)
{
	return b->failed ? -ENOMEM : 0;
}

/* ---- shared helpers ---- */

/* UTC time of a CLOCK_REALTIME nanosecond stamp: "2026-11-21T21:50:03.123Z" (iso) or "2026-11-21 21:50:03 UTC". */
static void vg_format_time(uint64_t ns, int iso, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000u);
	unsigned ms = (unsigned)(ns % 1000000000u / 1000000u);
	struct tm tm;

	if (!gmtime_r(&sec, &tm)) {
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = 70;
		tm.tm_mday = 1;
	}
	if (iso)
		snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	else
		snprintf(buf, len, "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static const struct vg_report_site *vg_report_find_site(const struct vg_report *r, uint32_t id)
{
	size_t i;
	for (i = 0; r->sites && i < r->nsites; i++)
		if (r->sites[i].id == id)
			return &r->sites[i];
	return NULL;
}

/* ---- text ---- */

/* A string from the model for a terminal: control characters are escaped so that a hostile module path or
 * command line can never start a line of its own (the block must stay one block on stderr). */
void vg_text_str(struct vg_strbuf *b, const char *s, size_t max)
{
	size_t n = strnlen(s, max), i, run = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != 0x7f)
			continue;
		vg_strbuf_add(b, s + run, i - run);
		if (c == '\n')
			vg_strbuf_add(b, "\\n", 2);
		else if (c == '\t')
			vg_strbuf_add(b, "\\t", 2);
		else
			vg_strbuf_printf(b, "\\x%02x", c);
		run = i + 1;
	}
	vg_strbuf_add(b, s + run, n - run);
}

/* Columns a string takes on a terminal, roughly: UTF-8 continuation bytes take none. */
size_t vg_text_width(const char *s, size_t n)
{
	size_t i, w = 0;
	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			w++;
	return w;
}

void vg_text_pad(struct vg_strbuf *b, const char *s, size_t width)
{
	size_t w = vg_text_width(s, strlen(s));
	vg_strbuf_str(b, s);
	if (w < width)
		vg_strbuf_spaces(b, width - w);
}

/* "leak_buffers+0x1c" or "??" */
/* C++ names are shown demangled in the text form, without their parameter lists (the module offset beside them
 * tells overloads apart); the JSON keeps the exact mangled name. The demangler is libstdc++'s, used only if the
 * process already has it (every PyTorch, JAX or CuPy process does): vramguard never loads it into a job. */
typedef char *(*vg_demangle_fn)(const char *, char *, size_t *, int *);

static vg_demangle_fn vg_demangler(void)
{
	static vg_demangle_fn fn;
	static int tried;
	if (!tried) {
		fn = (vg_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (!fn) {
			void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
			if (h)
				fn = (vg_demangle_fn)dlsym(h, "__cxa_demangle");
		}
		tried = 1;
	}
	return fn;
}

/* Demangle sym into out without its parameter list; false if it is not a C++ name or cannot be demangled. */
static bool vg_demangle_short(const char *sym, char *out, size_t len)
{
	vg_demangle_fn fn = strncmp(sym, "_Z", 2) == 0 ? vg_demangler() : NULL;
	int status = -1;
	char *d = fn ? fn(sym, NULL, NULL, &status) : NULL;
	if (!d || status != 0) {
		free(d);
		return false;
	}
	/* Cut at the '(' that opens the parameters: the last top-level one, outside template brackets. */
	size_t cut = strlen(d);
	int depth = 0;
	for (size_t i = 0; d[i]; i++) {
		if (d[i] == '<')
			depth++;
		else if (d[i] == '>' && depth > 0)
			depth--;
		else if (d[i] == '(' && depth == 0 && i > 0) {
			cut = i;
			if (strncmp(d + i, "(anonymous namespace)", 21) == 0) {
				cut = strlen(d);
				i += 20;
				continue;
			}
			break;
		}
	}
	d[cut] = '\0';
	snprintf(out, len, "%s", d);
	free(d);
	return true;
}

void vg_report_frame_symbol_text(struct vg_strbuf *b, const struct vg_report_frame *f)
{
	char dm[512];
	if (f->symbol[0] && vg_demangle_short(f->symbol, dm, sizeof(dm))) {
		vg_text_str(b, dm, sizeof(dm));
		vg_strbuf_printf(b, "+0x%" PRIx64, f->symbol_offset);
	} else if (f->symbol[0]) {
		vg_text_str(b, f->symbol, sizeof(f->symbol));
		vg_strbuf_printf(b, "+0x%" PRIx64, f->symbol_offset);
	} else {
		vg_strbuf_add(b, "??", 2);
	}
}

/* "/work/examples/leaky (+0x11a9)" or the raw address */
static void vg_text_frame_where(struct vg_strbuf *b, const struct vg_report_frame *f)
{
	if (f->module[0]) {
		vg_text_str(b, f->module, sizeof(f->module));
		vg_strbuf_printf(b, " (+0x%" PRIx64 ")", f->module_offset);
	} else {
		vg_strbuf_printf(b, "0x%" PRIx64, f->address);
	}
}

/* Frames as two aligned columns, symbol then location; each line is indent + label (labels padded alike).
 * A line without a frame says why there is none. */
struct vg_text_frame_line {
	const char *label;
	const struct vg_report_frame *frame;
};

static const char *vg_text_no_site(const struct vg_report *r)
{
	return r->backtrace_depth <= 0 ? "(no call site: VRAMGUARD_BACKTRACE=0)" : "(no call site recorded)";
}

static void vg_text_frames(const struct vg_report *r, struct vg_strbuf *out, const struct vg_text_frame_line *lines,
			   size_t n, size_t indent)
{
	struct vg_strbuf sym[VG_TEXT_FRAMES];
	size_t i, col = 0, lw = 0;

	if (n > VG_TEXT_FRAMES)
		n = VG_TEXT_FRAMES;
	memset(sym, 0, sizeof(sym));
	for (i = 0; i < n; i++) {
		size_t w;
		if (lines[i].label && strlen(lines[i].label) > lw)
			lw = strlen(lines[i].label);
		if (!lines[i].frame)
			continue;
		vg_report_frame_symbol_text(&sym[i], lines[i].frame);
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
			vg_strbuf_str(out, vg_text_no_site(r));
		}
		vg_strbuf_add(out, "\n", 1);
		vg_strbuf_free(&sym[i]);
	}
}

static const char *vg_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
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
	}
	if (any_soft)
		vg_text_soft_sources(r, out);
}

bool vg_report_frame_is_runtime(const struct vg_report_frame *f)
{
	const char *mod = strrchr(f->module, '/');
	mod = mod ? mod + 1 : f->module;
	return strncmp(mod, "libcudart", 9) == 0 || strncmp(f->symbol, "libcudart_static_", 17) == 0 ||
	       (strncmp(f->symbol, "cuda", 4) == 0 && f->symbol[4] >= 'A' && f->symbol[4] <= 'Z');
}

size_t vg_report_runtime_prefix(const struct vg_report_site *s)
{
	size_t k = 0, n = s->frames ? s->nframes : 0;
	while (k < n && vg_report_frame_is_runtime(&s->frames[k]))
		k++;
	return k < n ? k : 0;   /* all runtime: show them rather than nothing */
}

static void vg_text_site(const struct vg_report *r, const struct vg_report_site *s, struct vg_strbuf *out)
{
	struct vg_text_frame_line lines[VG_TEXT_FRAMES];
	char bytes[32];
	size_t i, n = s->frames ? s->nframes : 0;
	size_t skip = n ? vg_report_runtime_prefix(s) : 0;

	vg_format_bytes(s->live_bytes, bytes, sizeof(bytes));
	vg_strbuf_printf(out, "    %s in %" PRIu64 " %s via ", bytes, s->live_count,
			 vg_plural(s->live_count, "allocation", "allocations"));
	vg_text_str(out, s->api[0] ? s->api : "?", sizeof(s->api));
	vg_strbuf_printf(out, " (site %" PRIu32 ")\n", s->id);
	if (n == 0) {
		lines[0].label = NULL;
		lines[0].frame = NULL;
		vg_text_frames(r, out, lines, 1, 6);
		return;
	}
	/* The CUDA runtime's own frames say nothing about the application: one line for them, then the caller. */
	if (skip)
		vg_strbuf_printf(out, "      (%zu %s in the CUDA runtime)\n", skip, vg_plural(skip, "frame", "frames"));
	for (i = 0; skip + i < n && i < VG_TEXT_FRAMES; i++) {
		lines[i].label = NULL;
		lines[i].frame = &s->frames[skip + i];
	}
	vg_text_frames(r, out, lines, i, 6);
	if (n - skip > VG_TEXT_FRAMES)
		vg_strbuf_printf(out, "      ... %zu more %s\n", n - skip - VG_TEXT_FRAMES,
				 vg_plural(n - skip - VG_TEXT_FRAMES, "frame", "frames"));
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
		vg_strbuf_str(out, "  outstanding: none\n");
		return;
	}
	if (nlive == 0) {       /* no site table (should not happen): the devices' counters still say how much */
		for (i = 0; r->devices && i < r->ndevices; i++)
			live_bytes += r->devices[i].used_bytes;
	}
	vg_format_bytes(live_bytes, bytes, sizeof(bytes));
	vg_strbuf_printf(out, "  outstanding: %" PRIu64 " %s, %s", r->allocs_live,
			 vg_plural(r->allocs_live, "allocation", "allocations"), bytes);
	if (nlive == 0) {
		vg_strbuf_str(out, "\n");
		return;
	}
	vg_strbuf_printf(out, ", from %zu call %s (largest first):\n", nlive, vg_plural(nlive, "site", "sites"));
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
	struct vg_text_frame_line lines[2];
	size_t i;

	for (i = 0; i < n && i < 2; i++) {
		const struct vg_report_site *s = ids[i] ? vg_report_find_site(r, ids[i]) : NULL;
		lines[i].label = labels[i];
		lines[i].frame = s && s->frames && s->nframes ? &s->frames[vg_report_runtime_prefix(s)] : NULL;
	}
	vg_text_frames(r, out, lines, i, 6);
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

	vg_format_time(r->time_ns, 0, when, sizeof(when));
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

/* ---- JSON ---- */

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates, at most U+10FFFF),
 * or 0 if the bytes there are not one. */
static size_t vg_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* A JSON string. Module paths and symbols are bytes from the file system and the ELF tables: whatever is not
 * well-formed UTF-8 becomes U+FFFD, so the document always parses. */
void vg_json_str(struct vg_strbuf *b, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strnlen(str, max), i = 0, run = 0;

	vg_strbuf_add(b, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];
		size_t k;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (k = vg_utf8_seq(s + i, n - i)) != 0) {
			i += k;
			continue;
		}
		vg_strbuf_add(b, str + run, i - run);
		if (c == '"')
			vg_strbuf_add(b, "\\\"", 2);
		else if (c == '\\')
			vg_strbuf_add(b, "\\\\", 2);
		else if (c == '\n')
			vg_strbuf_add(b, "\\n", 2);
		else if (c == '\t')
			vg_strbuf_add(b, "\\t", 2);
		else if (c == '\r')
			vg_strbuf_add(b, "\\r", 2);
		else if (c < 0x80)
			vg_strbuf_printf(b, "\\u%04x", c);
		else
			vg_strbuf_add(b, "\\ufffd", 6);
		i++;
		run = i;
	}
	vg_strbuf_add(b, str + run, n - run);
	vg_strbuf_add(b, "\"", 1);
}

/* "key": "value" with a leading separator; every field of the document goes through these. */
static void vg_json_key(struct vg_strbuf *b, const char *sep, const char *key)
{
	vg_strbuf_printf(b, "%s\"%s\": ", sep, key);
}

static void vg_json_kstr(struct vg_strbuf *b, const char *sep, const char *key, const char *s, size_t max)
{
	vg_json_key(b, sep, key);
	vg_json_str(b, s, max);
}

static void vg_json_ku64(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v)
{
	vg_strbuf_printf(b, "%s\"%s\": %" PRIu64, sep, key, v);
}

static void vg_json_kint(struct vg_strbuf *b, const char *sep, const char *key, int v)
{
	vg_strbuf_printf(b, "%s\"%s\": %d", sep, key, v);
}

/* Addresses are strings: a 64-bit value does not survive a JavaScript number (or jq). */
static void vg_json_kaddr(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v)
{
	vg_strbuf_printf(b, "%s\"%s\": \"0x%" PRIx64 "\"", sep, key, v);
}

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

	vg_format_time(r->time_ns, 1, when, sizeof(when));
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

/* ---- ownership ---- */

void vg_report_free(struct vg_report *r)
{
	size_t i;

	if (!r)
		return;
	if (r->sites)
		for (i = 0; i < r->nsites; i++) {
			free(r->sites[i].frames);
			r->sites[i].frames = NULL;
			r->sites[i].nframes = 0;
		}
	free(r->devices);
	free(r->sites);
	free(r->allocs);
	free(r->stream_events);
	free(r->stream_live);
	r->devices = NULL;
	r->sites = NULL;
	r->allocs = NULL;
	r->stream_events = NULL;
	r->stream_live = NULL;
	r->ndevices = r->nsites = r->nallocs = r->nstream_events = r->nstream_live = 0;
}
