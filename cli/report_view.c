/* `vramguard report --html / --format`: the report as a page or as an export, to a file or stdout. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report_view.h"
#include "report/flame.h"
#include "report/html.h"

int vg_view_format_parse(const char *s, enum vg_view_format *f)
{
	static const struct { const char *name; enum vg_view_format f; } names[] = {
		{ "text", VG_VIEW_TEXT }, { "html", VG_VIEW_HTML }, { "folded", VG_VIEW_FOLDED },
		{ "speedscope", VG_VIEW_SPEEDSCOPE },
	};
	size_t i;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name)) {
			*f = names[i].f;
			return 0;
		}
	return -1;
}

int vg_view_write(const struct vg_strbuf *b, const char *out_path)
{
	if (!out_path || !strcmp(out_path, "-")) {
		if (fwrite(b->data, 1, b->len, stdout) != b->len || fflush(stdout) != 0)
			return 1;
		return 0;
	}
	FILE *f = fopen(out_path, "w");
	if (!f)
		return -vg_cli_fail(1, "cannot write %s: %s", vg_cli_q(out_path), strerror(errno));
	if (fwrite(b->data, 1, b->len, f) != b->len || fflush(f) != 0 || ferror(f)) {
		int e = errno;
		fclose(f);
		return -vg_cli_fail(1, "cannot write %s: %s", vg_cli_q(out_path), strerror(e ? e : EIO));
	}
	if (fclose(f) != 0)
		return -vg_cli_fail(1, "cannot write %s: %s", vg_cli_q(out_path), strerror(errno));
	return 0;
}

int vg_view_report(const struct vg_report *r, const char *in, enum vg_view_format f, const char *out_path)
{
	struct vg_strbuf b = { 0 };
	const char *base = strrchr(in, '/');
	int rc;

	switch (f) {
	case VG_VIEW_HTML: rc = vg_report_render_html(r, &b); break;
	case VG_VIEW_FOLDED: rc = vg_report_render_folded(r, &b); break;
	case VG_VIEW_SPEEDSCOPE: rc = vg_report_render_speedscope(r, base ? base + 1 : in, &b); break;
	default: rc = vg_report_render_text(r, &b); break;
	}
	if (rc || b.failed) {
		vg_strbuf_free(&b);
		return -vg_cli_fail(1, "out of memory");
	}
	rc = vg_view_write(&b, out_path);      /* folded with no live memory: an empty file */
	vg_strbuf_free(&b);
	return rc;
}
