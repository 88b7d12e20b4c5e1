/* The report model's own functions: the time stamp both forms print, the queries on frames that the text form,
 * `vramguard diff` and the stream warnings share. Freeing a report's arrays walks the schema's rows: report/schema.c. */
#define _GNU_SOURCE
#include "report/report.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void vg_report_time(uint64_t ns, int iso, char *buf, size_t len)
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

void vg_report_clock(uint64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!gmtime_r(&sec, &tm))
		memset(&tm, 0, sizeof(tm));
	snprintf(buf, len, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void vg_report_timeline_span(const struct vg_report_device *d, uint64_t from_ns, uint64_t base_count,
			     uint64_t base_bytes, struct vg_report_timeline_span *out)
{
	size_t i, n = d->timeline_set && d->timeline_points ? d->ntimeline_points : 0;
	uint64_t prev = base_count;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n; i++) {
		const struct vg_report_timeline_point *p = &d->timeline_points[i];
		if (p->time_ns <= from_ns)
			continue;
		if (!out->npoints++ || p->peak_bytes > out->peak_bytes) {
			out->peak_bytes = p->peak_bytes;
			out->peak_ns = p->time_ns;
		}
		if (p->denied_count > prev && !out->first_denial_ns)
			out->first_denial_ns = p->time_ns;
		prev = p->denied_count > prev ? p->denied_count : prev;
		out->used_bytes = p->used_bytes;
		out->denied_count = p->denied_count > base_count ? p->denied_count - base_count : 0;
		out->denied_bytes = p->denied_bytes > base_bytes ? p->denied_bytes - base_bytes : 0;
	}
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

/* "leak_buffers+0x1c" or "??" */
void vg_report_frame_symbol_text(struct vg_strbuf *b, const struct vg_report_frame *f)
{
	char dm[512];
	if (f->symbol[0] && vg_demangle_short(f->symbol, dm, sizeof(dm))) {
		vg_text_str(b, dm, sizeof(dm));
		vg_strbuf_printf(b, "+0x%" PRIx64, f->symbol_offset);
	} else if (f->symbol[0]) {
		vg_text_str(b, f->symbol, VG_REPORT_FRAME_STR);
		vg_strbuf_printf(b, "+0x%" PRIx64, f->symbol_offset);
	} else {
		vg_strbuf_add(b, "??", 2);
	}
}
