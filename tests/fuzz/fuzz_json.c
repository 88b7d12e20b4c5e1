/* Fuzz target for report/json.c and report/json_read.c, as `vramguard report` uses them: the input is a JSON
 * document for vg_report_from_json (not NUL-terminated). Properties: a refusal is one line and leaves the report
 * empty; an accepted report renders as text (one block, no control characters) and as JSON, and that JSON is a
 * fixed point: it parses again and renders to the same bytes, text included. */
#include "report/json_read.h"
#include "report/report.h"
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#define VG_FUZZ_NAME "json"

static void check_empty(const struct vg_report *r)
{
	VG_FUZZ_CHECK(!r->devices && !r->sites && !r->allocs && !r->stream_events && !r->stream_live);
	VG_FUZZ_CHECK(!r->ndevices && !r->nsites && !r->nallocs && !r->nstream_events && !r->nstream_live);
	VG_FUZZ_CHECK(!r->strings);
}

static void check_err(const char *err, size_t cap)
{
	size_t n = strnlen(err, cap), i;

	VG_FUZZ_CHECK(n > 0 && n < cap);
	for (i = 0; i < n; i++)
		VG_FUZZ_CHECK((unsigned char)err[i] >= 0x20 && err[i] != 0x7f);
}

static void check_strings(const struct vg_report *r)
{
	size_t i, j;

	VG_FUZZ_CHECK(strnlen(r->reason, sizeof(r->reason)) < sizeof(r->reason));
	VG_FUZZ_CHECK(strnlen(r->command, sizeof(r->command)) < sizeof(r->command));
	VG_FUZZ_CHECK(strnlen(r->hostname, sizeof(r->hostname)) < sizeof(r->hostname));
	VG_FUZZ_CHECK(r->json_hint[0] == '\0');
	VG_FUZZ_CHECK(!r->ndevices || r->devices);
	VG_FUZZ_CHECK(!r->nsites || r->sites);
	for (i = 0; i < r->nsites; i++) {
		VG_FUZZ_CHECK(!r->sites[i].nframes || r->sites[i].frames);
		for (j = 0; j < r->sites[i].nframes; j++) {     /* never NULL, and cut as char arrays cut them */
			const struct vg_report_frame *f = &r->sites[i].frames[j];
			VG_FUZZ_CHECK(f->module && strnlen(f->module, VG_REPORT_FRAME_STR) < VG_REPORT_FRAME_STR);
			VG_FUZZ_CHECK(f->symbol && strnlen(f->symbol, VG_REPORT_FRAME_STR) < VG_REPORT_FRAME_STR);
		}
		for (j = 0; j < r->sites[i].npython; j++) {
			const struct vg_report_pyframe *f = &r->sites[i].python[j];
			VG_FUZZ_CHECK(f->file && strnlen(f->file, VG_REPORT_FRAME_STR) < VG_REPORT_FRAME_STR);
			VG_FUZZ_CHECK(f->function &&
				      strnlen(f->function, VG_REPORT_PY_FUNCTION_STR) < VG_REPORT_PY_FUNCTION_STR);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vg_report r, again;
	struct vg_strbuf text = { 0 }, json = { 0 }, json2 = { 0 }, text2 = { 0 };
	char err[256], *small;
	size_t smalln = 1 + size % 24;
	int rc;

	rc = vg_report_from_json((const char *)data, size, &r, err, sizeof(err));
	VG_FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc != 0) {
		check_err(err, sizeof(err));
		check_empty(&r);
		/* the same refusal into a tiny buffer: cut, never overrun */
		small = malloc(smalln);
		VG_FUZZ_CHECK(small != NULL);
		VG_FUZZ_CHECK(vg_report_from_json((const char *)data, size, &r, small, smalln) == rc);
		VG_FUZZ_CHECK(strnlen(small, smalln) < smalln);
		free(small);
		return 0;
	}
	VG_FUZZ_CHECK(err[0] == '\0');
	check_strings(&r);

	VG_FUZZ_CHECK(vg_report_render_text(&r, &text) == 0);
	vg_fuzz_check_block(text.data, text.len, "vramguard: report (");
	VG_FUZZ_CHECK(vg_report_render_json(&r, &json) == 0);

	/* The round trip: what we write, we read back, and it is a fixed point. */
	rc = vg_report_from_json(json.data, json.len, &again, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "rendered JSON does not parse: %s\n%s", err, json.data);
	VG_FUZZ_CHECK(rc == 0);
	VG_FUZZ_CHECK(again.ndevices == r.ndevices && again.nsites == r.nsites && again.nallocs == r.nallocs);
	VG_FUZZ_CHECK(again.nstream_events == r.nstream_events && again.nstream_live == r.nstream_live);
	VG_FUZZ_CHECK(vg_report_render_json(&again, &json2) == 0);
	if (json2.len != json.len || memcmp(json2.data, json.data, json.len) != 0)
		fprintf(stderr, "JSON changed on a second round trip:\n%s\n----\n%s", json.data, json2.data);
	VG_FUZZ_CHECK(json2.len == json.len && memcmp(json2.data, json.data, json.len) == 0);
	VG_FUZZ_CHECK(vg_report_render_text(&again, &text2) == 0);
	VG_FUZZ_CHECK(text2.len == text.len && memcmp(text2.data, text.data, text.len) == 0);

	vg_strbuf_free(&text);
	vg_strbuf_free(&text2);
	vg_strbuf_free(&json);
	vg_strbuf_free(&json2);
	vg_report_free(&r);
	vg_report_free(&again);
	return 0;
}

#ifdef VG_FUZZ_REPLAY
#include "tests/fuzz/replay.h"
#endif
