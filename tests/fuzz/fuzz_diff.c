/* Fuzz target for cli/diff.c, as `vramguard diff OLD NEW` uses it: the input is two JSON documents separated by the
 * first NUL byte (no NUL: the document against itself). Both go through vg_report_from_json; when both parse, the
 * diff (default options, and a small row limit with all sites) must succeed and be one block of text, and
 * vg_report_diff_grew must answer 0 or 1 -- 0 for a report against itself. */
#include "cli/diff.h"
#include "report/json_read.h"
#include "report/report.h"
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#define VG_FUZZ_NAME "diff"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t na = nul ? (size_t)(nul - data) : size;
	const uint8_t *b = nul ? nul + 1 : data;
	size_t nb = nul ? size - na - 1 : size;
	struct vg_report ra, rb;
	struct vg_diff_opts small = { .max_rows = 1 + size % 3, .all = 1 };
	struct vg_strbuf out = { 0 };
	char err[256], *ca, *cb;
	int grew;

	/* exact-size heap copies, so ASan sees a read past either document */
	ca = malloc(na ? na : 1);
	cb = malloc(nb ? nb : 1);
	VG_FUZZ_CHECK(ca && cb);
	memcpy(ca, data, na);
	memcpy(cb, b, nb);
	if (vg_report_from_json(ca, na, &ra, err, sizeof(err)) != 0)
		goto out_a;
	if (vg_report_from_json(cb, nb, &rb, err, sizeof(err)) != 0)
		goto out_b;

	VG_FUZZ_CHECK(vg_report_diff_text(&ra, &rb, NULL, &out) == 0);
	vg_fuzz_check_block(out.data, out.len, "vramguard: diff ");
	vg_strbuf_free(&out);
	VG_FUZZ_CHECK(vg_report_diff_text(&rb, &ra, &small, &out) == 0);
	vg_fuzz_check_block(out.data, out.len, "vramguard: diff ");
	vg_strbuf_free(&out);
	grew = vg_report_diff_grew(&ra, &rb);
	VG_FUZZ_CHECK(grew == 0 || grew == 1);
	grew = vg_report_diff_grew(&ra, &ra);
	VG_FUZZ_CHECK(grew == 0);
	VG_FUZZ_CHECK(vg_report_diff_text(&ra, &ra, &small, &out) == 0);
	vg_fuzz_check_block(out.data, out.len, "vramguard: diff ");
	vg_strbuf_free(&out);

	vg_report_free(&rb);
out_b:
	vg_report_free(&ra);
out_a:
	free(ca);
	free(cb);
	return 0;
}

#ifdef VG_FUZZ_REPLAY
#include "tests/fuzz/replay.h"
#endif
