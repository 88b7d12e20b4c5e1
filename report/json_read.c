/* A "vramguard.report/1" document back into a struct vg_report: the schema rows (report/schema.h) walked over the
 * JSON reader (report/json.h). Two passes: the first checks the syntax of the whole document and finds "schema"
 * wherever it is among the top-level keys, the second reads the fields, so a syntax error is reported as such and a
 * document of another schema is refused before any of its fields is judged. */
#include "report/json_read.h"
#include "report/json.h"
#include "report/schema.h"
#include "config/config.h"
#include "config/stat.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the schema's rows over the reader ---- */

static int jr_object(struct vg_jp *p, const struct vg_schema_object *o, void *obj);

/* Rows the reader takes; the others (the schema id, checked by the first pass, and the time, which time_ns holds
 * again) are passed over like unknown keys. */
static int jr_reads(const struct vg_schema_field *f)
{
	return f->type != VG_SCHEMA_SCHEMA_ID && f->type != VG_SCHEMA_TIME;
}

static int jr_nullable_u64(struct vg_jp *p, uint64_t *v, int *set)
{
	int which;

	if (vg_jp_peek(p) == 'n') {
		*set = 0;
		*v = 0;
		return vg_jp_literal(p, &which);
	}
	if (!vg_jp_is_number_start(vg_jp_peek(p)))
		return vg_jp_field(p, "expected an unsigned integer or null");
	*set = 1;
	return vg_jp_uint(p, UINT64_MAX, v);
}

static int jr_nullable_str(struct vg_jp *p, char *dst, size_t size)
{
	int which;

	if (vg_jp_peek(p) == 'n') {
		dst[0] = '\0';
		return vg_jp_literal(p, &which);
	}
	if (vg_jp_peek(p) != '"')
		return vg_jp_field(p, "expected a string or null");
	return vg_jp_str(p, dst, size);
}

/* The reader: the cursor, and the report whose strings a frame's strings go to. Every cursor the rows are read with
 * is a jr_reader's (vg_report_from_json), so jr_istr finds the report from it. */
struct jr_reader {
	struct vg_jp p;
	struct vg_report *report;
};

/* An ISTR row: the string cut as a char array of the row's size would have it, then kept once in the report. */
static int jr_istr(struct vg_jp *p, const char **dst, size_t size)
{
	struct jr_reader *rd = (struct jr_reader *)(void *)p;
	char buf[VG_REPORT_FRAME_STR];

	if (vg_jp_str(p, buf, size < sizeof(buf) ? size : sizeof(buf)) != 0)
		return -1;
	*dst = vg_report_string(rd->report, buf, sizeof(buf));
	return *dst ? 0 : vg_jp_nomem(p);
}

/* Free n elements of an ARRAY row and what they own. */
static void jr_drop(const struct vg_schema_field *f, char *v, size_t n)
{
	size_t j;

	for (j = 0; v && j < n; j++)
		vg_schema_free(f->sub, v + j * f->elem_size);
	free(v);
}

/* An array of objects into an ARRAY row: all the elements the document has (frames even past
 * VG_REPORT_MAX_FRAMES: the renderers take any number). A repeated key's last array wins. */
static int jr_array(struct vg_jp *p, const struct vg_schema_field *f, void *obj)
{
	char *v = NULL;
	size_t n = 0, cap = 0, i = 0, at = p->pathlen, esize = f->elem_size;
	int rc;

	if (vg_jp_peek(p) != '[')
		return vg_jp_field(p, "expected an array");
	if (vg_jp_open(p) != 0)
		return -1;
	while ((rc = vg_jp_element(p, &i)) == 1) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			char *nv = ncap <= SIZE_MAX / esize / 2 ? realloc(v, ncap * esize) : NULL;
			if (!nv) {
				rc = vg_jp_nomem(p);
				break;
			}
			v = nv;
			cap = ncap;
		}
		memset(v + n * esize, 0, esize);
		n++;
		vg_jp_path_push(p, NULL, n - 1, 1);
		rc = jr_object(p, f->sub, v + (n - 1) * esize);
		vg_jp_path_pop(p, at);
		if (rc != 0)
			break;
	}
	if (rc != 0) {
		jr_drop(f, v, n);
		return -1;
	}
	if (f->count_size == sizeof(uint32_t) && n > UINT32_MAX) {
		jr_drop(f, v, n);
		return vg_jp_field(p, "too many %s", f->key);
	}
	jr_drop(f, vg_schema_elems(f, obj), vg_schema_nelems(f, obj));
	vg_schema_set_elems(f, obj, v, n);
	return 0;
}

/* One row's value into obj; a COUNT row's value goes to *count, for jr_object to check. */
static int jr_value(struct vg_jp *p, const struct vg_schema_field *f, void *obj, uint64_t *count)
{
	char *m = (char *)obj + f->off;
	uint64_t v;

	switch (f->type) {
	case VG_SCHEMA_U64:
		return vg_jp_uint(p, UINT64_MAX, (uint64_t *)(void *)m);
	case VG_SCHEMA_U32:
		if (vg_jp_uint(p, UINT32_MAX, &v) != 0)
			return -1;
		*(uint32_t *)(void *)m = (uint32_t)v;
		return 0;
	case VG_SCHEMA_INT:
		return vg_jp_int(p, (int *)(void *)m);
	case VG_SCHEMA_BOOL:
		return vg_jp_bool(p, (int *)(void *)m);
	case VG_SCHEMA_STR:
	case VG_SCHEMA_STRD:
		return vg_jp_str(p, m, f->size);
	case VG_SCHEMA_ISTR:
		return jr_istr(p, (const char **)(void *)m, f->size);
	case VG_SCHEMA_HEX:
		return vg_jp_hex(p, (uint64_t *)(void *)m);
	case VG_SCHEMA_NU64:
		return jr_nullable_u64(p, (uint64_t *)(void *)m, (int *)(void *)((char *)obj + f->flag));
	case VG_SCHEMA_NSTR:
		return jr_nullable_str(p, m, f->size);
	case VG_SCHEMA_ARRAY:
		return jr_array(p, f, obj);
	case VG_SCHEMA_OBJECT:
		return jr_object(p, f->sub, obj);
	case VG_SCHEMA_NOBJECT:
		*(int *)(void *)((char *)obj + f->flag) = 1;
		return jr_object(p, f->sub, obj);
	case VG_SCHEMA_REVISION:
		if (vg_jp_uint(p, UINT32_MAX, &v) != 0)
			return -1;
		*(uint32_t *)(void *)m = (uint32_t)v;
		return 0;
	case VG_SCHEMA_COUNT:
		return vg_jp_uint(p, UINT64_MAX, count);
	case VG_SCHEMA_SCHEMA_ID:
	case VG_SCHEMA_TIME:
		break;
	}
	return vg_jp_skip(p);
}

/* A COUNT row must say how many elements its array has. */
static int jr_check_count(struct vg_jp *p, const struct vg_schema_object *o, const struct vg_schema_field *f,
			  const void *obj, uint64_t count)
{
	size_t k, n = vg_schema_nelems(f, obj), at = p->pathlen;

	if (count == n)
		return 0;
	for (k = 0; k < o->nfields; k++)
		if (o->fields[k].type == VG_SCHEMA_ARRAY && o->fields[k].off == f->off)
			break;
	vg_jp_path_push(p, f->key, 0, 0);
	vg_jp_field(p, "%" PRIu64 " but %s has %zu %s", count, k < o->nfields ? o->fields[k].key : "its array", n,
		    n == 1 ? "entry" : "entries");
	vg_jp_path_pop(p, at);
	return -1;
}

/* The row that reads the member named key, or o->nfields. Keys are unique among the rows, so where the search
 * starts changes nothing but its cost: after the row found last, as the writer writes them in the rows' order. */
static size_t jr_row(const struct vg_schema_object *o, const struct vg_jp_out *key, size_t from)
{
	size_t j, k;

	if (key->full || key->nul)
		return o->nfields;
	for (j = 0; j < o->nfields; j++) {
		k = (from + j) % o->nfields;
		if (jr_reads(&o->fields[k]) && strcmp(key->buf, o->fields[k].key) == 0)
			return k;
	}
	return o->nfields;
}

/* The top level's "schema" as the first pass takes it (the last one), when the fields are read first. */
struct jr_schema {
	char buf[64];
	struct vg_jp_out out;
	int found, is_string;
};

static int jr_schema_take(struct vg_jp *p, struct jr_schema *sch)
{
	sch->found = 1;
	sch->is_string = vg_jp_peek(p) == '"';
	if (!sch->is_string)
		return vg_jp_skip(p);
	sch->out = (struct vg_jp_out){ .buf = sch->buf, .cap = sizeof(sch->buf) };
	sch->buf[0] = '\0';
	return vg_jp_string(p, &sch->out);
}

/* One object: its rows' keys are required but for the optional ones, other keys are passed over; a repeated key's
 * last value wins. With sch (the top level), a "schema" member is kept there. */
static int jr_members(struct vg_jp *p, const struct vg_schema_object *o, void *obj, struct jr_schema *sch)
{
	char kbuf[64];
	struct vg_jp_out key = { .buf = kbuf, .cap = sizeof(kbuf) };
	uint64_t seen = 0, counts[VG_SCHEMA_MAX_FIELDS];
	size_t i = 0, k = 0, at = p->pathlen;
	int rc;

	if (vg_jp_peek(p) != '{')
		return vg_jp_field(p, "expected an object");
	if (vg_jp_open(p) != 0)
		return -1;
	while ((rc = vg_jp_member(p, &i, &key)) == 1) {
		const struct vg_schema_field *f = o->fields;
		k = jr_row(o, &key, k + 1 < o->nfields ? k + 1 : 0);
		if (k == o->nfields) {
			if (sch && !key.full && !key.nul && strcmp(kbuf, "schema") == 0 ? jr_schema_take(p, sch) != 0 :
			    vg_jp_skip(p) != 0)
				return -1;
			continue;
		}
		seen |= (uint64_t)1 << k;
		vg_jp_path_push(p, f[k].key, 0, 0);
		rc = jr_value(p, &f[k], obj, &counts[k]);
		vg_jp_path_pop(p, at);
		if (rc != 0)
			return -1;
	}
	if (rc != 0)
		return -1;
	for (k = 0; k < o->nfields; k++)
		if (!(seen & (uint64_t)1 << k) && !o->fields[k].optional && jr_reads(&o->fields[k])) {
			char msg[300];
			vg_jp_path_push(p, o->fields[k].key, 0, 0);
			snprintf(msg, sizeof(msg), "missing required key '%s'", p->path);
			vg_jp_seterr(p, -EINVAL, msg);
			return -1;
		}
	for (k = 0; k < o->nfields; k++)
		if (o->fields[k].type == VG_SCHEMA_COUNT && (seen & (uint64_t)1 << k) &&
		    jr_check_count(p, o, &o->fields[k], obj, counts[k]) != 0)
			return -1;
	return 0;
}

static int jr_object(struct vg_jp *p, const struct vg_schema_object *o, void *obj)
{
	return jr_members(p, o, obj, NULL);
}

/* ---- the two passes ---- */

/* The top level's "schema" as taken: present, a string, the one this vramguard reads; else the error is said. */
static int jr_schema_verdict(struct vg_jp *p, const struct jr_schema *sch)
{
	if (!sch->found) {
		vg_jp_seterr(p, -EINVAL, "missing required key 'schema' (not a vramguard report?)");
		return -1;
	}
	if (!sch->is_string) {
		vg_jp_seterr(p, -EINVAL, "schema: expected a string");
		return -1;
	}
	if (sch->out.full || sch->out.nul || strcmp(sch->buf, VG_REPORT_SCHEMA) != 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "unsupported schema '%s%s' (this vramguard reads " VG_REPORT_SCHEMA ")",
			 sch->buf, sch->out.full ? "..." : "");
		vg_jp_seterr(p, -EINVAL, msg);
		return -1;
	}
	return 0;
}

/* First pass: the whole document's syntax, one object and nothing after it; the last "schema" at the top level. */
static int jp_check(struct vg_jp *p)
{
	char kbuf[16];
	struct vg_jp_out key = { .buf = kbuf, .cap = sizeof(kbuf) };
	struct jr_schema sch = { .found = 0 };
	int rc;
	size_t i = 0;

	rc = vg_jp_peek(p);
	if (rc < 0)
		return vg_jp_syntax(p, p->pos, "empty document (expected a vramguard report, a JSON object)");
	if (rc != '{')
		return vg_jp_syntax(p, p->pos, "expected '{' (a vramguard report is a JSON object)");
	if (vg_jp_open(p) != 0)
		return -1;
	while ((rc = vg_jp_member(p, &i, &key)) == 1) {
		if (!key.full && !key.nul && strcmp(kbuf, "schema") == 0)
			rc = jr_schema_take(p, &sch);
		else
			rc = vg_jp_skip(p);
		if (rc != 0)
			return -1;
	}
	if (rc != 0)
		return -1;
	if (vg_jp_peek(p) >= 0)
		return vg_jp_syntax(p, p->pos, "unexpected data after the end of the document");
	return jr_schema_verdict(p, &sch);
}

/* A good report in one pass: the fields read first, then what the first pass would have checked (nothing after the
 * object, the schema). Success here is success of the two passes; on any failure the caller runs them from the
 * start, so that the error is theirs: a syntax error before a field's, another schema before either. */
static int jr_one_pass(struct vg_jp *p, struct vg_report *out)
{
	struct jr_schema sch = { .found = 0 };

	if (vg_jp_peek(p) != '{' || jr_members(p, &vg_schema_report, out, &sch) != 0 || vg_jp_peek(p) >= 0)
		return -1;
	return jr_schema_verdict(p, &sch);      /* its error, if any, is said again by the two passes */
}

int vg_report_from_json(const char *text, size_t len, struct vg_report *out, char *err, size_t errlen)
{
	struct jr_reader rd = { .report = out };
	struct vg_jp *p = &rd.p;

	memset(out, 0, sizeof(*out));
	vg_jp_init(p, text, len, err, errlen);
	if (jr_one_pass(p, out) == 0)
		return 0;
	vg_report_free(out);
	memset(out, 0, sizeof(*out));
	vg_jp_init(p, text, len, err, errlen);
	if (jp_check(p) == 0) {
		vg_jp_rewind(p);
		jr_object(p, &vg_schema_report, out);
	}
	if (p->rc) {
		vg_report_free(out);
		memset(out, 0, sizeof(*out));
	}
	return p->rc;
}

/* ---- files ---- */

int vg_report_read_file(const char *path, struct vg_report *out, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0, cap = 0, hint = 65536;
	int fd, e = 0, rc;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		goto fail;
	}
	if (vg_fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size > VG_JSON_MAX_FILE) {
			e = EFBIG;
			goto fail;
		}
		hint = (size_t)st.st_size + 1;  /* +1: the read that sees the end */
	}
	for (;;) {
		ssize_t k;
		if (n == cap) {
			size_t ncap = buf ? cap * 2 : hint;
			char *nb;
			if (ncap > VG_JSON_MAX_FILE + 1)
				ncap = VG_JSON_MAX_FILE + 1;
			if (n >= ncap) {        /* a pipe or a file that grew past the limit */
				e = EFBIG;
				goto fail;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				e = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap = ncap;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			e = errno;
			goto fail;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (n > VG_JSON_MAX_FILE) {
		e = EFBIG;
		goto fail;
	}
	close(fd);
	rc = vg_report_from_json(buf, n, out, err, errlen);
	free(buf);
	return rc;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	if (err && errlen) {
		char q[VG_QUOTE_BUF];
		snprintf(err, errlen, "cannot read %s: %s", vg_quote(path, q, sizeof(q)), strerror(e));
	}
	return -e;
}
