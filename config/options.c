/* The options table as data (vg_options[], expanded from VG_OPTIONS in options.h, and the names of the indexed
 * HAMi variables) and as the Markdown tables of docs/env.md and of the README. */
#include "config/options.h"

#include <stdio.h>

#define VG_OPTION_ROW(name, summary, type, dflt, values, doc, secure, load, range, flag) \
	{ name, summary, type, dflt, values, doc, secure, range, flag },
const struct vg_option vg_options[] = { VG_OPTIONS(VG_OPTION_ROW) };
const size_t vg_options_count = sizeof(vg_options) / sizeof(vg_options[0]);

_Static_assert(sizeof(vg_options) / sizeof(vg_options[0]) <= 64, "vg_config.secure_ignored has one bit per row");

/* Stable names for the indexed HAMi variables: a limit's source points at one of these. */
#define VG_HN(i) "CUDA_DEVICE_MEMORY_LIMIT_" #i
#define VG_HN10(t) VG_HN(t##0), VG_HN(t##1), VG_HN(t##2), VG_HN(t##3), VG_HN(t##4), VG_HN(t##5), VG_HN(t##6),       \
		   VG_HN(t##7), VG_HN(t##8), VG_HN(t##9)
const char *const vg_hami_names[VG_MAX_DEVICES] = {
	VG_HN(0), VG_HN(1), VG_HN(2), VG_HN(3), VG_HN(4), VG_HN(5), VG_HN(6), VG_HN(7), VG_HN(8), VG_HN(9),
	VG_HN10(1), VG_HN10(2), VG_HN10(3), VG_HN10(4), VG_HN10(5),
	VG_HN(60), VG_HN(61), VG_HN(62), VG_HN(63),
};
_Static_assert(VG_MAX_DEVICES == 64, "vg_hami_names lists CUDA_DEVICE_MEMORY_LIMIT_0..63");

/* The enum word lists of options.h must match the C enums the rest of the tree switches on. */
_Static_assert(VG_LOG_OFF == 0 && VG_LOG_ERROR == 1 && VG_LOG_WARN == 2 && VG_LOG_INFO == 3 && VG_LOG_DEBUG == 4,
	       "VG_LOG_VALUES order");
_Static_assert(VG_MANAGED_COUNT == 0 && VG_MANAGED_IGNORE == 1, "VG_MANAGED_VALUES order");
_Static_assert(VG_FORMAT_TEXT == 0 && VG_FORMAT_JSON == 1, "VG_FORMAT_VALUES order");
_Static_assert(VG_STREAM_WARN == 0 && VG_STREAM_SYNC == 1 && VG_STREAM_OFF == 2, "VG_STREAM_VALUES order");
_Static_assert(VG_CONTROL_ON == 0 && VG_CONTROL_OFF == 1, "VG_CONTROL_VALUES order");
_Static_assert(VG_COUNT_DEVICE == 0 && VG_COUNT_ALLOCATIONS == 1, "VG_COUNT_VALUES order");
_Static_assert(VG_DEVICE_POLL_MIN <= VG_DEVICE_POLL_DEFAULT && VG_DEVICE_POLL_DEFAULT <= VG_DEVICE_POLL_MAX,
	       "VG_DEVICE_POLL_DEFAULT range");
_Static_assert(VG_BACKTRACE_DEFAULT >= 0 && VG_BACKTRACE_DEFAULT <= VG_BACKTRACE_MAX, "VG_BACKTRACE_DEFAULT range");

static void vg_md_cell(FILE *f, const char *s)
{
	fputc(' ', f);
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputs(" |", f);
}

void vg_options_write_markdown(FILE *f)
{
	size_t i;

	fputs("| Variable | Type | Default | Values | Description | Secure mode |\n", f);
	fputs("|---|---|---|---|---|---|\n", f);
	for (i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];

		fprintf(f, "| `%s` |", o->name);
		vg_md_cell(f, o->type);
		vg_md_cell(f, o->dflt);
		vg_md_cell(f, o->values);
		vg_md_cell(f, o->doc);
		if (!o->secure)
			fputs(" read |", f);
		else if (!o->secure[0])
			fputs(" ignored |", f);
		else
			fprintf(f, " ignored: `%s` |", o->secure);
		fputc('\n', f);
	}
}

void vg_options_write_summary(FILE *f)
{
	fputs("| Variable | Default | Meaning |\n", f);
	fputs("|---|---|---|\n", f);
	for (size_t i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];

		fprintf(f, "| `%s` |", o->name);
		vg_md_cell(f, o->dflt);
		vg_md_cell(f, o->summary);
		fputc('\n', f);
	}
}
