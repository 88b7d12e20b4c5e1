/* Unit tests for the JSON reader (report/json.c) and the report's mapping (report/json_read.c): the golden reports read back and rendered again byte for byte, exact error
 * messages, forward compatibility (unknown and repeated keys, any key order), string decoding, and a fixed-seed
 * mutation loop that must never crash. Run from the repository root. */
#include "report/json_read.h"
#include "report/report.h"
#include "tests/unit/unit.h"

#include <errno.h>
#include <stdlib.h>

#define GOLDEN_DIR "tests/unit/golden/"
#define GOLDEN_HINT "set VRAMGUARD_REPORT_FORMAT=json"      /* what test_report.c's build_full sets */

static char *golden(const char *name, size_t *len)
{
	char path[256];
	char *p;

	snprintf(path, sizeof(path), GOLDEN_DIR "%s", name);
	p = unit_read_file(path, len);
	if (!p) {
		fprintf(stderr, "cannot read %s (run from the repository root)\n", path);
		abort();
	}
	return p;
}

/* s with the first occurrence of from replaced by to (a new string); aborts if from is absent, so a test can never
 * pass by editing nothing. */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	size_t a, b, c;
	char *r;

	if (!at) {
		fprintf(stderr, "test bug: '%s' not found\n", from);
		abort();
	}
	a = (size_t)(at - s);
	b = strlen(to);
	c = strlen(at + strlen(from));
	r = malloc(a + b + c + 1);
	if (!r)
		abort();
	memcpy(r, s, a);
	memcpy(r + a, to, b);
	memcpy(r + a + b, at + strlen(from), c + 1);
	return r;
}

/* Every occurrence replaced. */
static char *replace_all(const char *s, const char *from, const char *to)
{
	char *cur = replace(s, from, to), *next;
	size_t skip = (size_t)(strstr(s, from) - s) + strlen(to);

	while (strstr(cur + skip, from)) {
		size_t at = (size_t)(strstr(cur + skip, from) - cur);
		next = malloc(strlen(cur) + strlen(to) + 1);
		if (!next)
			abort();
		memcpy(next, cur, at);
		strcpy(next + at, to);
		strcat(next, cur + at + strlen(from));
		free(cur);
		cur = next;
		skip = at + strlen(to);
	}
	return cur;
}

static int report_is_zero(const struct vg_report *r)
{
	static const struct vg_report zero;
	return memcmp(r, &zero, sizeof(zero)) == 0;
}

static char *render_json(const struct vg_report *r)
{
	struct vg_strbuf b = { 0 };
	if (vg_report_render_json(r, &b) != 0 || !b.data)
		abort();
	return b.data;
}

/* Parse doc; it must fail with exactly want, leave *out zeroed and write one line. */
#define EXPECT_ERR(doc, len, want) expect_err(__FILE__, __LINE__, doc, len, want)
static void expect_err(const char *file, int line, const char *doc, size_t len, const char *want)
{
	struct vg_report r;
	char err[320];
	int rc;

	memset(&r, 0x5a, sizeof(r));
	strcpy(err, "untouched");
	rc = vg_report_from_json(doc, len, &r, err, sizeof(err));
	if (rc == -EINVAL && strcmp(err, want) == 0 && report_is_zero(&r)) {
		UNIT_PASS_(want);
	} else {
		unit_not_ok_(file, line, "expected -EINVAL \"%s\", got %d \"%s\"%s", want, rc, err,
			     report_is_zero(&r) ? "" : " (report not zeroed)");
	}
	vg_report_free(&r);
}

#define EXPECT_ERR_S(doc, want) EXPECT_ERR(doc, strlen(doc), want)

/* Parse a golden edited by one replacement; must fail with want. */
#define EXPECT_EDIT_ERR(base, from, to, want)                                                                         \
	do {                                                                                                          \
		char *edited_ = replace(base, from, to);                                                              \
		EXPECT_ERR_S(edited_, want);                                                                          \
		free(edited_);                                                                                        \
	} while (0)

/* Parse doc, expect success. */
static int parse_ok(const char *doc, size_t len, struct vg_report *r)
{
	char err[320] = "";
	int rc = vg_report_from_json(doc, len, r, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "unexpected parse failure %d: %s\n", rc, err);
	return rc;
}

/* Text rendering of r compared with a golden text, with r's hint set to what the golden's builder used. */
static void check_text(struct vg_report *r, const char *golden_name, const char *hint)
{
	struct vg_strbuf b = { 0 };
	size_t wlen;
	char *want = golden(golden_name, &wlen);

	snprintf(r->json_hint, sizeof(r->json_hint), "%s", hint);
	CHECK(vg_report_render_text(r, &b) == 0);
	CHECK(b.data && b.len == wlen && memcmp(b.data, want, wlen) == 0);
	if (b.data && (b.len != wlen || memcmp(b.data, want, wlen) != 0))
		fprintf(stderr, "--- text from %s's JSON:\n%s--- end\n", golden_name, b.data);
	r->json_hint[0] = '\0';
	vg_strbuf_free(&b);
	free(want);
}

/* ---- (1) round trips ---- */

static void test_round_trip_full(void)
{
	struct vg_report r;
	size_t len;
	char *doc = golden("report.json", &len), *again;
	int rc;

	memset(&r, 0x5a, sizeof(r));
	rc = parse_ok(doc, len, &r);
	CHECK(rc == 0);
	if (rc != 0)
		goto out;
	CHECK_STR(r.json_hint, "");
	again = render_json(&r);
	CHECK(strlen(again) == len && memcmp(again, doc, len) == 0);
	free(again);
	check_text(&r, "report.txt", GOLDEN_HINT);

	/* the model itself, field by field where the renderings do not show it */
	CHECK_STR(r.reason, "exit");
	CHECK_EQ_U64(r.sequence, 1);
	CHECK_EQ_U64(r.pid, 1234);
	CHECK_EQ_U64(r.time_ns, 1795297803123456789ull);
	CHECK_STR(r.hostname, "gpu-node-7");
	CHECK_STR(r.version, "0.1.0");
	CHECK_STR(r.driver, "alive");
	CHECK_EQ_U64(r.backtrace_depth, 16);
	CHECK_EQ_U64(r.ndevices, 2);
	CHECK(r.devices[0].quota_set == 1 && r.devices[0].quota_bytes == 4294967296ull);
	CHECK(r.devices[1].quota_set == 0 && r.devices[1].quota_bytes == 0);
	CHECK(r.devices[0].soft_set == 1 && r.devices[0].soft_bytes == 3221225472ull);
	CHECK_STR(r.devices[0].soft_source, "NVIDIA_GPU_MEMORY_REQUEST");
	CHECK(r.devices[1].soft_set == 0 && r.devices[1].soft_bytes == 0 && r.devices[1].soft_source[0] == '\0');
	CHECK_STR(r.devices[1].uuid, "GPU-00000000-1111-2222-3333-444455556666");
	CHECK_EQ_U64(r.devices[0].largest_bytes, 536870912);
	CHECK_EQ_U64(r.nsites, 15);
	CHECK(r.sites[0].id == 3 && r.sites[1].id == 9 && r.sites[2].id == 1 && r.sites[14].id == 7);  /* order kept */
	CHECK_EQ_U64(r.sites[0].nframes, 10);
	CHECK_EQ_U64(r.sites[0].frames[1].address, 0x555555555234ull);
	CHECK_EQ_U64(r.sites[0].frames[1].module_offset, 0x1234);
	CHECK_EQ_U64(r.sites[0].frames[1].symbol_offset, 64);
	CHECK_STR(r.sites[2].frames[0].module, "/opt/we\"ird\\dir\nname/lib\xc3\xa9.so");
	CHECK(r.sites[3].nframes == 0 && r.sites[3].frames == NULL);
	CHECK_EQ_U64(r.allocs_live, 16);
	CHECK_EQ_U64(r.nallocs, 3);
	CHECK_EQ_U64(r.allocs[1].address, 0xffff800000001000ull);
	CHECK_EQ_U64(r.allocs[1].time_ns, 1795297801000000001ull);
	CHECK(r.allocs[1].thread == 4243 && r.allocs[1].site == 9 && r.allocs[1].device == 0);
	CHECK_EQ_U64(r.streams_created, 134);
	CHECK(r.nstream_events == 3 && r.stream_events[1].synchronized == 1 && r.stream_events[1].destroy_site == 99);
	CHECK(r.nstream_live == 2 && r.stream_live[1].capturing == 1);
	/* growth (revision 5) */
	CHECK(r.devices[0].forecast_set && r.devices[0].forecast_s == 18432);
	CHECK(!r.devices[1].forecast_set && r.devices[1].forecast_s == 0);
	CHECK(r.devices[0].growth_set && r.devices[0].ngrowth_sites == 2 && r.devices[0].growth_window_ms == 600000);
	CHECK(r.devices[0].growth_sites[0].site == 3 && r.devices[0].growth_sites[0].growing &&
	      r.devices[0].growth_sites[0].rate_set && r.devices[0].growth_sites[0].bytes_per_hour == 629145600);
	CHECK(!r.devices[0].growth_sites[1].growing && !r.devices[0].growth_sites[1].rate_set);
	CHECK(r.devices[0].growth_sites[0].npoints == 6 && r.devices[0].growth_sites[0].points[5].live_bytes == 157286400);
	CHECK(r.sites[0].growth_set && r.sites[0].growth_bytes_per_hour == 629145600);
	CHECK(!r.sites[1].growth_set && r.sites[1].growth_bytes_per_hour == 0);
out:
	vg_report_free(&r);
	free(doc);
}

static void test_round_trip_empty(void)
{
	struct vg_report r;
	size_t len;
	char *doc = golden("report_empty.json", &len), *again;

	if (parse_ok(doc, len, &r) == 0) {
		CHECK(r.devices == NULL && r.sites == NULL && r.allocs == NULL && r.stream_events == NULL &&
		      r.stream_live == NULL);
		again = render_json(&r);
		CHECK(strlen(again) == len && memcmp(again, doc, len) == 0);
		free(again);
		check_text(&r, "report_empty.txt", "");
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	free(doc);
}

static void test_read_file(void)
{
	struct vg_report r;
	char err[320];
	size_t len;
	char *doc = golden("report.json", &len), *again;

	CHECK(vg_report_read_file(GOLDEN_DIR "report.json", &r, err, sizeof(err)) == 0);
	again = render_json(&r);
	CHECK(strlen(again) == len && memcmp(again, doc, len) == 0);
	free(again);
	vg_report_free(&r);
	free(doc);

	CHECK_EQ_U64(vg_report_read_file("/nonexistent/vg.json", &r, err, sizeof(err)), (uint64_t)-ENOENT);
	CHECK_STR(err, "cannot read '/nonexistent/vg.json': No such file or directory");
	CHECK(report_is_zero(&r));
	CHECK_EQ_U64(vg_report_read_file(GOLDEN_DIR, &r, err, sizeof(err)), (uint64_t)-EISDIR);
	CHECK_STR(err, "cannot read '" GOLDEN_DIR "': Is a directory");
	CHECK_EQ_U64(vg_report_read_file(GOLDEN_DIR "report.txt", &r, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "line 1, column 1: expected '{' (a vramguard report is a JSON object)");
	CHECK_EQ_U64(vg_report_read_file("/dev/null", &r, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "line 1, column 1: empty document (expected a vramguard report, a JSON object)");
}

/* ---- (2) errors ---- */

static void test_errors_syntax(void)
{
	size_t len;
	char *doc = golden("report.json", &len), *bomb, *p;
	size_t i;

	/* truncated files */
	EXPECT_ERR(doc, 0, "line 1, column 1: empty document (expected a vramguard report, a JSON object)");
	EXPECT_ERR(doc, 1, "line 1, column 2: unexpected end of input");
	EXPECT_ERR(doc, 127, "line 7, column 16: unexpected end of input");                /* inside "time" */
	EXPECT_ERR(doc, len / 2, "line 69, column 74: unexpected end of input");
	EXPECT_ERR(doc, len - 2, "line 138, column 1: unexpected end of input");            /* the last '}' */
	{               /* without its final newline the document is whole */
		struct vg_report r;
		CHECK(parse_ok(doc, len - 1, &r) == 0);
		vg_report_free(&r);
	}
	EXPECT_ERR_S("{\"schema\": \"vramguard.rep", "line 1, column 26: unexpected end of input");
	EXPECT_ERR_S("{\"a\": tr", "line 1, column 9: unexpected end of input");
	EXPECT_ERR_S("{\"a\": -", "line 1, column 8: unexpected end of input");
	EXPECT_ERR_S("{\"a\": \"\\u12", "line 1, column 12: unexpected end of input");

	/* trailing garbage */
	p = malloc(len + 8);
	memcpy(p, doc, len);
	memcpy(p + len, "x", 2);
	EXPECT_ERR(p, len + 1, "line 139, column 1: unexpected data after the end of the document");
	memcpy(p + len, "  {}\n", 6);
	EXPECT_ERR(p, len + 5, "line 139, column 3: unexpected data after the end of the document");
	memcpy(p + len, " \t\r\n", 5);
	{
		struct vg_report r;
		CHECK(parse_ok(p, len + 4, &r) == 0);                   /* trailing whitespace is fine */
		vg_report_free(&r);
	}
	p[len] = '\0';
	EXPECT_ERR(p, len + 1, "line 139, column 1: unexpected data after the end of the document");
	free(p);

	/* depth bombs: not an object at all; then 10000 arrays and 10000 objects inside one */
	bomb = malloc(6 * 10000 + 16);
	memset(bomb, '[', 10000);
	EXPECT_ERR(bomb, 10000, "line 1, column 1: expected '{' (a vramguard report is a JSON object)");
	memcpy(bomb, "{\"a\":", 5);
	memset(bomb + 5, '[', 10000);
	EXPECT_ERR(bomb, 10005, "line 1, column 69: nesting deeper than 64 levels");
	for (i = 0; i < 10000; i++)
		memcpy(bomb + i * 5, "{\"a\":", 5);
	EXPECT_ERR(bomb, 50000, "line 1, column 321: nesting deeper than 64 levels");
	free(bomb);

	/* one of each syntax error */
	EXPECT_ERR_S("[]", "line 1, column 1: expected '{' (a vramguard report is a JSON object)");
	EXPECT_ERR_S("  \n ", "line 2, column 2: empty document (expected a vramguard report, a JSON object)");
	EXPECT_ERR_S("{\"schema\" \"x\"}", "line 1, column 11: expected ':'");
	EXPECT_ERR_S("{\"a\": 1,}", "line 1, column 9: expected a string key");
	EXPECT_ERR_S("{\"a\": 1 \"b\": 2}", "line 1, column 9: expected ',' or '}'");
	EXPECT_ERR_S("{1: 2}", "line 1, column 2: expected a string key or '}'");
	EXPECT_ERR_S("{\"a\": [1,]}", "line 1, column 10: expected a value");
	EXPECT_ERR_S("{\"a\": [1 2]}", "line 1, column 10: expected ',' or ']'");
	EXPECT_ERR_S("{\"a\": 01}", "line 1, column 7: invalid number (leading zero)");
	EXPECT_ERR_S("{\"a\": 1.}", "line 1, column 9: invalid number (expected a digit after '.')");
	EXPECT_ERR_S("{\"a\": 1e+}", "line 1, column 10: invalid number (expected a digit in the exponent)");
	EXPECT_ERR_S("{\"a\": -x}", "line 1, column 8: invalid number");
	EXPECT_ERR_S("{\"a\": +1}", "line 1, column 7: expected a value");
	EXPECT_ERR_S("{\"a\": nul}", "line 1, column 7: expected a value");
	EXPECT_ERR_S("{\"a\": 'x'}", "line 1, column 7: expected a value");
	EXPECT_ERR_S("{\"a\": \"\\x\"}", "line 1, column 8: invalid escape '\\x' in a string");
	EXPECT_ERR_S("{\"a\": \"\\u12g4\"}", "line 1, column 8: invalid \\u escape (expected 4 hex digits)");
	EXPECT_ERR_S("{\"a\": \"tab\there\"}", "line 1, column 11: control character in a string (write it as \\u0009)");
	EXPECT_ERR_S("{\"a\": \"\xff\"}", "line 1, column 8: invalid UTF-8 in a string");
	EXPECT_ERR_S("{\"a\": \"\xc3\xa9\xed\xa0\x80\"}", "line 1, column 9: invalid UTF-8 in a string");  /* surrogate */
	EXPECT_ERR_S("{\"a\": \"\xc0\xaf\"}", "line 1, column 8: invalid UTF-8 in a string");          /* overlong */
	EXPECT_ERR_S("{\"\xc3\xa9\": 1,\n \"\xc3\xa9\": x}", "line 2, column 7: expected a value");  /* columns count chars */
	EXPECT_ERR(NULL, 0, "line 1, column 1: empty document (expected a vramguard report, a JSON object)");
	free(doc);
}

static void test_errors_schema(void)
{
	size_t len;
	char *doc = golden("report.json", &len), *d, *d2;
	struct vg_report r;
	char small[24];

	EXPECT_EDIT_ERR(doc, "vramguard.report/1", "vramguard.report/2",
			"unsupported schema 'vramguard.report/2' (this vramguard reads vramguard.report/1)");
	EXPECT_EDIT_ERR(doc, "vramguard.report/1", "vramguard.report/1 ",
			"unsupported schema 'vramguard.report/1 ' (this vramguard reads vramguard.report/1)");
	EXPECT_EDIT_ERR(doc, "vramguard.report/1", "vramguard.report/1\\u0000",
			"unsupported schema 'vramguard.report/1' (this vramguard reads vramguard.report/1)");
	EXPECT_EDIT_ERR(doc, "vramguard.report/1", "a\\nb",   /* the message stays one line */
			"unsupported schema 'a?b' (this vramguard reads vramguard.report/1)");
	EXPECT_EDIT_ERR(doc, "vramguard.report/1",
			"0123456789012345678901234567890123456789012345678901234567890123456789",
			"unsupported schema '012345678901234567890123456789012345678901234567890123456789012...' "
			"(this vramguard reads vramguard.report/1)");
	EXPECT_EDIT_ERR(doc, "\"vramguard.report/1\"", "1", "schema: expected a string");
	EXPECT_EDIT_ERR(doc, "\"schema\"", "\"Schema\"", "missing required key 'schema' (not a vramguard report?)");
	EXPECT_ERR_S("{}", "missing required key 'schema' (not a vramguard report?)");
	/* the schema is judged before the fields, wherever it is: a version 2 document with other fields */
	EXPECT_ERR_S("{\"devices\": 7, \"schema\": \"vramguard.report/2\"}",
		     "unsupported schema 'vramguard.report/2' (this vramguard reads vramguard.report/1)");
	/* a syntax error anywhere comes before the schema */
	EXPECT_ERR_S("{\"schema\": \"vramguard.report/2\", \"x\": [}",
		     "line 1, column 40: expected a value");

	/* A good report is read in one pass, the others again in two (report/json_read.c): the same verdicts. The last
	 * "schema" is the one judged, a field's error comes after a syntax error later on and after the schema. */
	d = replace(doc, "\"hostname\"", "\"schema\": \"vramguard.report/9\", \"hostname\"");
	EXPECT_ERR_S(d, "unsupported schema 'vramguard.report/9' (this vramguard reads vramguard.report/1)");
	free(d);
	d = replace(doc, "\"schema\": \"vramguard.report/1\"", "\"schema\": 7");
	d2 = replace(d, "\"hostname\"", "\"schema\": \"vramguard.report/1\", \"hostname\"");
	if (parse_ok(d2, strlen(d2), &r) == 0)
		CHECK_EQ_U64(r.nsites, 15);
	else
		CHECK(0);
	vg_report_free(&r);
	free(d);
	free(d2);
	d = replace(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": -1");
	d2 = replace(d, "\"streams\": {", "\"streams\": {,");
	EXPECT_ERR_S(d2, "line 130, column 15: expected a string key or '}'");
	free(d2);
	d2 = replace(d, "vramguard.report/1", "vramguard.report/2");
	EXPECT_ERR_S(d2, "unsupported schema 'vramguard.report/2' (this vramguard reads vramguard.report/1)");
	free(d2);
	EXPECT_ERR_S(d, "devices[0].used_bytes: expected an unsigned integer");
	free(d);

	/* the err buffer: NULL, empty, and too small for the message (cut, still a string) */
	d = replace(doc, "vramguard.report/1", "vramguard.report/2");
	CHECK_EQ_U64(vg_report_from_json(d, strlen(d), &r, NULL, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(vg_report_from_json(d, strlen(d), &r, small, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(vg_report_from_json(d, strlen(d), &r, small, sizeof(small)), (uint64_t)-EINVAL);
	CHECK_STR(small, "unsupported schema 'vra");      /* 23 bytes and the NUL */
	free(d);
	free(doc);
}

static void test_errors_fields(void)
{
	size_t len;
	char *doc = golden("report.json", &len), *d;

	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": -1073741824",
			"devices[0].used_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": \"1073741824\"",
			"devices[0].used_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": 1073741824.0",
			"devices[0].used_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": 1e9",
			"devices[0].used_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": -0",
			"devices[0].used_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": null",
			"devices[0].used_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": 18446744073709551616",
			"devices[0].used_bytes: out of range (at most 18446744073709551615)");
	EXPECT_EDIT_ERR(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": 99999999999999999999999",
			"devices[0].used_bytes: out of range (at most 18446744073709551615)");
	EXPECT_EDIT_ERR(doc, "\"quota_bytes\": 4294967296", "\"quota_bytes\": \"4G\"",
			"devices[0].quota_bytes: expected an unsigned integer or null");
	EXPECT_EDIT_ERR(doc, "\"quota_bytes\": 4294967296", "\"quota_bytes\": -1",
			"devices[0].quota_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"peak_bytes\": 0, \"allocs\"", "\"allocs\"", "missing required key 'devices[1].peak_bytes'");
	EXPECT_EDIT_ERR(doc, "\"compactions\": 2", "\"compactions\": -2",
			"devices[0].timeline.compactions: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"period_ms\": 40000, ", "", "missing required key 'devices[0].timeline.period_ms'");
	EXPECT_EDIT_ERR(doc, "\"symbol\": \"\", \"offset\": 0}\n    ]", "\"symbol\": \"\", \"offset\": -1}\n    ]",
			"sites[1].frames[2].offset: expected an unsigned integer");   /* the path without printf */
	EXPECT_EDIT_ERR(doc, "\"points\": [", "\"points\": 7, \"x\": [", "devices[0].timeline.points: expected an array");
	EXPECT_EDIT_ERR(doc, "\"schema_revision\": 5", "\"schema_revision\": \"3\"",
			"schema_revision: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"soft_limit_bytes\": 3221225472", "\"soft_limit_bytes\": \"3G\"",
			"devices[0].soft_limit_bytes: expected an unsigned integer or null");
	EXPECT_EDIT_ERR(doc, "\"soft_limit_bytes\": 3221225472", "\"soft_limit_bytes\": -3",
			"devices[0].soft_limit_bytes: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"soft_limit_source\": \"NVIDIA_GPU_MEMORY_REQUEST\"", "\"soft_limit_source\": 1",
			"devices[0].soft_limit_source: expected a string or null");
	EXPECT_EDIT_ERR(doc, "\"pid\": 1234", "\"pid\": 2147483648", "pid: out of range (-2147483648 to 2147483647)");
	EXPECT_EDIT_ERR(doc, "\"pid\": 1234", "\"pid\": 12.5", "pid: expected an integer");
	EXPECT_EDIT_ERR(doc, "\"reason\": \"exit\"", "\"reason\": [\"exit\"]", "reason: expected a string");
	EXPECT_EDIT_ERR(doc, "\"devices\": [", "\"devices\": 5, \"devices_v0\": [", "devices: expected an array");
	EXPECT_EDIT_ERR(doc, "{\"ordinal\": 1", "7, {\"ordinal\": 1", "devices[1]: expected an object");
	EXPECT_EDIT_ERR(doc, "{\"id\": 3,", "{\"id\": 4294967296,", "sites[0].id: out of range (at most 4294967295)");
	EXPECT_EDIT_ERR(doc, "\"address\": \"0x555555555234\"", "\"address\": \"555555555234\"",
			"sites[0].frames[1].address: expected a hex string such as \"0x7f3a00000000\"");
	EXPECT_EDIT_ERR(doc, "\"address\": \"0x555555555234\"", "\"address\": \"0x\"",
			"sites[0].frames[1].address: expected a hex string such as \"0x7f3a00000000\"");
	EXPECT_EDIT_ERR(doc, "\"address\": \"0x555555555234\"", "\"address\": \"0x10000000000000000\"",
			"sites[0].frames[1].address: expected a hex string such as \"0x7f3a00000000\"");
	EXPECT_EDIT_ERR(doc, "\"address\": \"0x555555555234\"", "\"address\": 93824992236084",
			"sites[0].frames[1].address: expected a hex string such as \"0x7f3a00000000\"");
	EXPECT_EDIT_ERR(doc, "\"module_offset\": \"0x1234\"", "\"module_offset\": \"0x12 4\"",
			"sites[0].frames[1].module_offset: expected a hex string such as \"0x7f3a00000000\"");
	EXPECT_EDIT_ERR(doc, "\"symbol\": \"main\", \"offset\": 64", "\"symbol\": \"main\"",
			"missing required key 'sites[0].frames[1].offset'");
	EXPECT_EDIT_ERR(doc, "\"listed\": 3", "\"listed\": 2", "allocations.listed: 2 but largest has 3 entries");
	EXPECT_EDIT_ERR(doc, "\"thread\": 4243", "\"thread\": true", "allocations.largest[1].thread: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"synchronized\": true", "\"synchronized\": 1",
			"streams.destroyed_pending[1].synchronized: expected true or false");
	EXPECT_EDIT_ERR(doc, "\"capturing\": 1", "\"capturing\": 1.0", "streams.live[1].capturing: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"line\": 123", "\"line\": \"123\"", "sites[0].python[0].line: expected an unsigned integer");
	EXPECT_EDIT_ERR(doc, "\"function\": \"Model.train_step\"", "\"func\": \"Model.train_step\"",
			"missing required key 'sites[0].python[0].function'");
	EXPECT_EDIT_ERR(doc, "\"base\": \"0x555555554000\"", "\"base\": 93824992231424",
			"modules[0].base: expected a hex string such as \"0x7f3a00000000\"");
	EXPECT_EDIT_ERR(doc, "\"streams\": {", "\"streams\": [", "line 130, column 24: expected ',' or ']'");
	d = replace(doc, "\"streams\": {", "\"streams_v0\": {");
	EXPECT_ERR_S(d, "missing required key 'streams'");
	free(d);
	EXPECT_ERR_S("{\"schema\": \"vramguard.report/1\"}", "missing required key 'reason'");

	/* accepted extremes */
	d = replace(doc, "\"used_bytes\": 1073741824", "\"used_bytes\": 18446744073709551615");
	{
		struct vg_report r;
		char *d2 = replace(d, "\"pid\": 1234", "\"pid\": -2147483648"), *d3;
		d3 = replace(d2, "\"address\": \"0x555555555234\"", "\"address\": \"0xFFFFffffFFFFffff\"");
		if (parse_ok(d3, strlen(d3), &r) == 0) {
			CHECK_EQ_U64(r.devices[0].used_bytes, UINT64_MAX);
			CHECK(r.pid == -2147483647 - 1);
			CHECK_EQ_U64(r.sites[0].frames[1].address, UINT64_MAX);
		} else {
			CHECK(0);
		}
		vg_report_free(&r);
		free(d2);
		free(d3);
	}
	free(d);
	free(doc);
}

/* Reports written before soft limits existed have neither soft_limit key: read as "no soft limit", rendered as
 * before (no soft limit column). A soft-limit report is a report like any other. */
static void test_soft_limit_keys(void)
{
	struct vg_report r;
	struct vg_strbuf b = { 0 };
	size_t len;
	char *doc = golden("report.json", &len);
	char *d1 = replace(doc, "\"soft_limit_bytes\": 3221225472, \"soft_limit_source\": \"NVIDIA_GPU_MEMORY_REQUEST\", ", "");
	char *d2 = replace(d1, "\"soft_limit_bytes\": null, \"soft_limit_source\": null, ", "");
	char *d3 = replace(doc, "\"reason\": \"exit\"", "\"reason\": \"soft-limit\"");

	CHECK(strstr(d2, "soft_limit") == NULL);
	if (parse_ok(d2, strlen(d2), &r) == 0) {
		CHECK(r.devices[0].soft_set == 0 && r.devices[1].soft_set == 0);
		CHECK(vg_report_render_text(&r, &b) == 0 && b.data);
		CHECK(b.data && strstr(b.data, "soft limit") == NULL);
		CHECK(b.data && strstr(b.data, "  GPU  used         peak         quota          allocs") != NULL);
	} else {
		CHECK(0);
	}
	vg_strbuf_free(&b);
	vg_report_free(&r);
	memset(&b, 0, sizeof(b));
	if (parse_ok(d3, strlen(d3), &r) == 0) {
		CHECK_STR(r.reason, "soft-limit");
		CHECK(vg_report_render_text(&r, &b) == 0 && b.data);
		CHECK(b.data && strncmp(b.data, "vramguard: report (soft-limit) pid 1234", 39) == 0);
		CHECK(b.data && strstr(b.data, "\n  soft limits from NVIDIA_GPU_MEMORY_REQUEST (GPU 0)\n") != NULL);
	} else {
		CHECK(0);
	}
	vg_strbuf_free(&b);
	vg_report_free(&r);
	free(d1);
	free(d2);
	free(d3);
	free(doc);
}

/* ---- (3) forward compatibility ---- */

static void test_unknown_keys(void)
{
	struct vg_report r;
	size_t len;
	char *doc = golden("report.json", &len), *a, *b, *again;
	static const char *const edits[][2] = {
		{ "{\"ordinal\"", "{\"x_new\": [1.5e-3, {\"deep\": null}, -7, true, \"s\"], \"ordinal\"" },
		{ "{\"id\"", "{\"x_site\": 2.5E+300, \"id\"" },
		{ "{\"address\"", "{\"x_frame\": {}, \"address\"" },
		{ "\"frames\": []", "\"frames\": [], \"x_after\": []" },
		{ "{\"create_site\"", "{\"x\": false, \"create_site\"" },
		{ "\"allocations\": {", "\"allocations\": {\"x\": -1.0e-2, " },
		{ "\"streams\": {", "\"streams\": {\"graphs\": {\"captured\": 3}, " },
		{ "\"backtrace_depth\": 16,", "\"backtrace_depth\": 16,\n  \"x_top\": {\"a\": [true, false, null]}," },
		{ "\"time\": \"2026-11-21T21:50:03.123Z\",\n", "" },    /* "time" is for people: not needed */
		{ "\"pid\": 1234", "\"pid\": 1, \"pid\": 1234" },         /* repeated: the last wins */
		{ "\n  \"sites\": [", "\n  \"sites\": [{\"id\": 1, \"api\": \"x\", \"live_count\": 0, \"live_bytes\": 0, "
				   "\"total_allocs\": 0, \"total_bytes\": 0, \"frames\": [{\"address\": \"0x1\", \"module\": \"m\", "
				   "\"module_offset\": \"0x1\", \"symbol\": \"s\", \"offset\": 1}]}], \"sites\": [" },
		{ "\"devices\": [", "\"devices\": [{}], \"devices\": [" },     /* last: used on its own below */
	};
	size_t i;

	a = strdup(doc);
	for (i = 0; i + 1 < sizeof(edits) / sizeof(edits[0]); i++) {
		b = replace_all(a, edits[i][0], edits[i][1]);
		free(a);
		a = b;
	}
	b = replace(a, "\n}\n", ",\n  \"zz_last\": {\"n\": 12345678901234567890123}\n}\n");
	free(a);
	a = b;
	if (parse_ok(a, strlen(a), &r) == 0) {
		again = render_json(&r);
		CHECK(strlen(again) == len && memcmp(again, doc, len) == 0);
		free(again);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);

	/* a repeated key is read each time: a bad earlier value is an error even if a later one is good */
	b = replace(a, edits[11][0], edits[11][1]);
	EXPECT_ERR_S(b, "missing required key 'devices[0].ordinal'");
	free(b);
	free(a);
	free(doc);

	/* any key order: the empty report with its keys reversed, schema last, and a byte order mark */
	{
		const char *rev = "\xef\xbb\xbf{\"streams\": {\"live\": [], \"destroyed_pending\": [], \"destroyed\": 0, "
				  "\"created\": 0}, \"allocations\": {\"largest\": [], \"listed\": 0, \"live\": 0}, "
				  "\"sites\": [], \"devices\": [], \"backtrace_depth\": 16, \"driver\": \"alive\", "
				  "\"version\": \"0.1.0\", \"hostname\": \"gpu-node-7\", "
				  "\"command\": \"python3 train.py --lr 0.1\", \"time_ns\": 1795297803123456789, "
				  "\"pid\": 1234, \"sequence\": 1, \"reason\": \"exit\", \"schema\": \"vramguard.report/1\"}";
		char *want = golden("report_empty.json", &len);
		if (parse_ok(rev, strlen(rev), &r) == 0) {
			again = render_json(&r);
			CHECK(strlen(again) == len && memcmp(again, want, len) == 0);
			free(again);
		} else {
			CHECK(0);
		}
		vg_report_free(&r);
		free(want);
	}
}

/* ---- (4) strings ---- */

static void test_strings(void)
{
	struct vg_report r, r2;
	size_t len, i;
	char *doc = golden("report.json", &len), *d, *again, *d2;
	char host[400];

	/* escapes of every kind in a module path: \/ \b \f \r \t, BMP and astral characters, a lone surrogate */
	d = replace(doc, "\"module\": \"/work/examples/leaky\"",
		    "\"module\": \"\\u002fopt\\/caf\\u00e9\\u4E2D\\ud83d\\ude00\\ud800x\\udc00\\b\\f\\r\\t\\\"\\\\.so\"");
	if (parse_ok(d, strlen(d), &r) == 0) {
		CHECK_STR(r.sites[0].frames[0].module,
			  "/opt/caf\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\xef\xbf\xbdx\xef\xbf\xbd\b\f\r\t\"\\.so");
		again = render_json(&r);
		CHECK_CONTAINS(again, "\"module\": \"/opt/caf\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\xef\xbf\xbdx"
				      "\xef\xbf\xbd\\u0008\\u000c\\r\\t\\\"\\\\.so\"");
		if (parse_ok(again, strlen(again), &r2) == 0)
			CHECK_STR(r2.sites[0].frames[0].module, r.sites[0].frames[0].module);
		else
			CHECK(0);
		vg_report_free(&r2);
		free(again);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	free(d);

	/* a string longer than its field: cut to fit with its NUL, never inside a character */
	memset(host, 'a', 300);
	host[300] = '\0';
	d = replace(doc, "gpu-node-7", host);
	if (parse_ok(d, strlen(d), &r) == 0) {
		CHECK_EQ_U64(strlen(r.hostname), sizeof(r.hostname) - 1);
		CHECK(strspn(r.hostname, "a") == sizeof(r.hostname) - 1);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	free(d);
	for (i = 0; i < 2; i++) {
		memset(host, 'a', 254);
		strcpy(host + 254, i ? "\\u00e9tail" : "\xc3\xa9tail");  /* 254 + 2 bytes + NUL is one too many */
		d = replace(doc, "gpu-node-7", host);
		if (parse_ok(d, strlen(d), &r) == 0)
			CHECK_EQ_U64(strlen(r.hostname), 254);
		else
			CHECK(0);
		vg_report_free(&r);
		free(d);
	}
	memset(host, 'a', 253);
	strcpy(host + 253, "\xc3\xa9tail");                          /* 253 + 2 bytes + NUL fits exactly */
	d = replace(doc, "gpu-node-7", host);
	if (parse_ok(d, strlen(d), &r) == 0)
		CHECK(strlen(r.hostname) == 255 && strcmp(r.hostname + 253, "\xc3\xa9") == 0);
	else
		CHECK(0);
	vg_report_free(&r);
	free(d);
	d = replace(doc, "\"reason\": \"exit\"", "\"reason\": \"exit\\u0000hidden\"");
	d2 = replace(d, "\"cuMemAllocAsync\", \"live_count\"", "\"cuMemAllocAsync_with_a_very_long_name_past_48_bytes_x\", \"live_count\"");
	if (parse_ok(d2, strlen(d2), &r) == 0) {
		CHECK_STR(r.reason, "exit");
		CHECK_STR(r.sites[1].api, "cuMemAllocAsync_with_a_very_long_name_past_48_b");
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	free(d);
	free(d2);

	/* runs of plain characters are taken at once (report/json.c): cut where they stop fitting, also after an escape
	 * or a character of several bytes, and a key with a \u0000 in it is still not the key without it */
	static const struct { const char *api, *want; } runs[] = {
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\nbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9" "bbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9" "bbbbb" },
		{ "ab\\u0041cd\\\"ef\\/gh", "abAcd\"ef/gh" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
	};
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char q[96];
		snprintf(q, sizeof(q), "\"%s\", \"live_count\"", runs[i].api);
		d = replace(doc, "\"cuMemAllocAsync\", \"live_count\"", q);
		if (parse_ok(d, strlen(d), &r) == 0)
			CHECK_STR(r.sites[1].api, runs[i].want);
		else
			CHECK(0);
		vg_report_free(&r);
		free(d);
	}
	d = replace(doc, "\"reason\": \"exit\"", "\"reason\": \"exit\", \"reason\\u0000\": \"other\"");
	if (parse_ok(d, strlen(d), &r) == 0)
		CHECK_STR(r.reason, "exit");
	else
		CHECK(0);
	vg_report_free(&r);
	free(d);
	free(doc);
}

/* A frame's strings are kept once in the report's strings (vg_report.strings), cut as a char array of
 * VG_REPORT_FRAME_STR bytes cut them: at a character boundary, at a \u0000. */
static void test_frame_strings(void)
{
	static const struct { const char *module; size_t want; } cuts[] = {
		{ "x\\u0000hidden", 1 }, { "", 0 },
	};
	struct vg_report r;
	size_t len, i, n = 0;
	char *doc = golden("report.json", &len), *d, *d2, mod[400];
	const char *leaky = NULL;

	if (parse_ok(doc, len, &r) == 0) {
		for (i = 0; i < r.nsites; i++)
			for (uint32_t f = 0; f < r.sites[i].nframes; f++) {
				const char *m = r.sites[i].frames[f].module;
				CHECK(m != NULL && r.sites[i].frames[f].symbol != NULL);
				if (m && strcmp(m, "/work/examples/leaky") == 0) {
					CHECK(!leaky || m == leaky);    /* one copy for every frame that names it */
					leaky = m;
					n++;
				}
			}
		CHECK(n > 3 && r.strings != NULL);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	CHECK(r.strings == NULL);
	for (i = 0; i < 3; i++) {       /* 300 bytes, then 254 + a 2-byte character, then 253 + it */
		memset(mod, 'a', 300);
		strcpy(i == 0 ? mod + 300 : mod + 253 + (i == 1), "\xc3\xa9");
		d = replace(doc, "/work/examples/leaky", mod);
		if (parse_ok(d, strlen(d), &r) == 0) {
			CHECK_EQ_U64(strlen(r.sites[0].frames[0].module), i == 0 ? 255 : i == 1 ? 254 : 255);
			CHECK(strspn(r.sites[0].frames[0].module, "a") == (i == 0 ? 255 : 253 + (i == 1)));
		} else {
			CHECK(0);
		}
		vg_report_free(&r);
		free(d);
	}
	memset(mod, 'b', 200);                          /* a Python function is cut at 127 bytes, its file at 255 */
	mod[200] = '\0';
	d = replace(doc, "Model.train_step", mod);
	d2 = replace(d, "/work/train \\\"v2\\\".py", mod);
	if (parse_ok(d2, strlen(d2), &r) == 0) {
		CHECK_EQ_U64(strlen(r.sites[0].python[0].function), VG_REPORT_PY_FUNCTION_STR - 1);
		CHECK_EQ_U64(strlen(r.sites[0].python[0].file), 200);
		CHECK(strncmp(r.sites[0].python[0].file, r.sites[0].python[0].function, 127) == 0);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	free(d);
	free(d2);
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		snprintf(mod, sizeof(mod), "\"symbol\": \"%s\"", cuts[i].module);
		d = replace(doc, "\"symbol\": \"pool_init\"", mod);
		if (parse_ok(d, strlen(d), &r) == 0) {
			const struct vg_report_site *s = &r.sites[r.nsites - 1];
			CHECK_EQ_U64(strlen(s->frames[s->nframes - 1].symbol), cuts[i].want);
		} else {
			CHECK(0);
		}
		vg_report_free(&r);
		free(d);
	}
	free(doc);
}

/* ---- (5) mutations ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void test_mutations(void)
{
	static const char interesting[] = "{}[],:\"\\0123456789-+.eEtfnu \n\x00\xff\xc3\xed";
	struct vg_report r;
	size_t len, n, i, k;
	char *doc = golden("report.json", &len), *work = malloc(len + 64), err[320];
	int ok = 0, rejected = 0, bad = 0, stable = 1;

	for (i = 0; i < 5000; i++) {
		size_t muts = 1 + rng() % 4;
		char *exact;
		int rc;

		memcpy(work, doc, len);
		n = len;
		for (k = 0; k < muts && n > 0; k++) {
			size_t at = rng() % n;
			switch (rng() % 6) {
			case 0:
				work[at] ^= (char)(1u << (rng() % 8));
				break;
			case 1:
				memmove(work + at, work + at + 1, n - at - 1);
				n--;
				break;
			case 2:
				if (n < len + 60) {
					memmove(work + at + 1, work + at, n - at);
					work[at] = interesting[rng() % (sizeof(interesting) - 1)];
					n++;
				}
				break;
			case 3:
				work[at] = interesting[rng() % (sizeof(interesting) - 1)];
				break;
			case 4:
				work[at] = (char)rng();
				break;
			case 5:
				if (rng() % 4 == 0)
					n = at;         /* truncate, now and then */
				break;
			}
		}
		exact = malloc(n ? n : 1);      /* exactly n bytes, no NUL after them: over-reads show under ASan */
		memcpy(exact, work, n);
		memset(&r, 0x5a, sizeof(r));
		err[0] = '\0';
		rc = vg_report_from_json(exact, n, &r, err, sizeof(err));
		if (rc == 0) {
			/* what was read renders, and what it renders reads back to the same rendering */
			struct vg_strbuf t = { 0 };
			struct vg_report r2;
			char *j1 = render_json(&r);
			ok++;
			if (vg_report_render_text(&r, &t) != 0)
				bad++;
			vg_strbuf_free(&t);
			if (vg_report_from_json(j1, strlen(j1), &r2, err, sizeof(err)) == 0) {
				char *j2 = render_json(&r2);
				if (strcmp(j1, j2) != 0)
					stable = 0;
				free(j2);
				vg_report_free(&r2);
			} else {
				stable = 0;
				fprintf(stderr, "mutation %zu: its rendering does not read back: %s\n", i, err);
			}
			free(j1);
		} else if (rc == -EINVAL && err[0] && !strchr(err, '\n') && report_is_zero(&r)) {
			rejected++;
		} else {
			bad++;
			fprintf(stderr, "mutation %zu: rc %d, err \"%s\"\n", i, rc, err);
		}
		vg_report_free(&r);
		free(exact);
	}
	CHECK_EQ_U64(ok + rejected, 5000);
	CHECK_EQ_U64(bad, 0);
	CHECK(stable);
	CHECK(ok > 50 && rejected > 2500);      /* both paths were exercised */
	fprintf(stderr, "mutations: %d read, %d rejected\n", ok, rejected);
	free(work);
	free(doc);
}

/* Revision 2's keys read back; a newer revision reads with its unknown keys passed over; revision 1 (no
 * schema_revision, no timeline) reads as 0 and no timeline. */
static void test_revisions(void)
{
	struct vg_report r;
	size_t len;
	char *doc = golden("report.json", &len), *a, *b;

	if (parse_ok(doc, len, &r) == 0) {
		CHECK_EQ_U64(r.schema_revision, 5);
		CHECK(r.devices[0].timeline_set && r.devices[0].ntimeline_points == 16);
		CHECK_EQ_U64(r.devices[0].timeline_period_ms, 40000);
		CHECK_EQ_U64(r.devices[0].timeline_points[9].peak_bytes, 3758096384u);
		CHECK(!r.devices[1].timeline_set && r.devices[1].timeline_points == NULL);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	a = replace(doc, "\"schema_revision\": 5", "\"schema_revision\": 99");
	b = replace(a, "\"period_ms\": 40000", "\"resolution\": {\"x\": [1, 2]}, \"period_ms\": 40000");
	if (parse_ok(b, strlen(b), &r) == 0) {
		CHECK_EQ_U64(r.schema_revision, 99);
		CHECK_EQ_U64(r.devices[0].timeline_period_ms, 40000);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	free(a);
	free(b);
	a = replace(doc, "  \"schema_revision\": 5,\n", "");
	b = replace(a, "\"timeline\": {\"period_ms\"", "\"zz_timeline\": {\"period_ms\"");
	if (parse_ok(b, strlen(b), &r) == 0) {
		CHECK_EQ_U64(r.schema_revision, 0);
		CHECK(!r.devices[0].timeline_set && r.devices[0].timeline_points == NULL);
	} else {
		CHECK(0);
	}
	vg_report_free(&r);
	free(a);
	free(b);
	free(doc);
}

int main(void)
{
	test_revisions();
	test_soft_limit_keys();
	test_round_trip_full();
	test_round_trip_empty();
	test_read_file();
	test_errors_syntax();
	test_errors_schema();
	test_errors_fields();
	test_unknown_keys();
	test_strings();
	test_frame_strings();
	test_mutations();
	return UNIT_DONE();
}
