/* The diff engine of `vramguard diff`: two reports of a service in, "what grew since the last dump?" out, per device
 * and per call site, sorted by bytes for leak hunting. Pure computation on two vg_report models; text like report.c's. */
#include "cli/diff.h"
#include "config/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VG_DIFF_FRAMES 4        /* per site: the first frame outside the CUDA runtime and its next callers */
#define VG_DIFF_SYM_COL 48      /* the symbol column is padded to at most this width */
#define VG_DIFF_NONE SIZE_MAX   /* "no match" in the match arrays */
#define VG_DIFF_CELL 128        /* one cell of the device table */
#define VG_DIFF_DEV_COLS 8

/* Sections, in the order they are printed. */
enum vg_diff_kind { VG_DIFF_GREW, VG_DIFF_NEW, VG_DIFF_SHRANK, VG_DIFF_GONE, VG_DIFF_SAME, VG_DIFF_NKINDS };

static const char *const vg_diff_kind_name[VG_DIFF_NKINDS] = { "grew", "new", "shrank", "gone", "unchanged" };

struct vg_diff_row {
	enum vg_diff_kind kind;
	const struct vg_report_site *o, *n;     /* o NULL: new; n NULL: gone */
	uint64_t dbytes, dcount;                /* magnitude of the change; its sign comes from kind */
	uint64_t sortbytes;                     /* dbytes, or the live bytes of an unchanged site */
};

struct vg_diff {
	const struct vg_report *o, *n;
	int by_id;                              /* one process: sites matched by id */
	uint32_t depth;                         /* by stack: frames compared (0: all) */
	size_t no, nn;                          /* sites in each report */
	size_t *omatch, *nmatch;                /* index of the matching site in the other report, or VG_DIFF_NONE */
	struct vg_diff_row *rows;               /* sorted by section, then change */
	size_t nrows;
	size_t count[VG_DIFF_NKINDS];
	uint64_t bytes[VG_DIFF_NKINDS];
	size_t first[VG_DIFF_NKINDS];           /* index of the section's first row */
};

/* ---- small text helpers (the rest are shared with the report: report/strbuf.h, report/report.h) ---- */

/* "20m38s later", "2h05m earlier", "at the same time" */
static void vg_diff_interval(uint64_t from, uint64_t to, char *buf, size_t len)
{
	uint64_t ns = to >= from ? to - from : from - to, s = ns / 1000000000u;
	const char *dir = to >= from ? "later" : "earlier";

	if (ns == 0)
		snprintf(buf, len, "at the same time");
	else if (s == 0)
		snprintf(buf, len, "%" PRIu64 "ms %s", ns / 1000000u, dir);
	else if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s %s", s, dir);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s %s", s / 60, s % 60, dir);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m %s", s / 3600, s / 60 % 60, dir);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h %s", s / 86400, s / 3600 % 24, dir);
}

/* "+2.25 GiB", "-12.00 MiB", "0 B" */
static const char *vg_diff_bytes(int sign, uint64_t mag, char *buf, size_t len)
{
	char num[32];

	vg_format_bytes(mag, num, sizeof(num));
	snprintf(buf, len, "%s%s", mag == 0 ? "" : sign < 0 ? "-" : "+", num);
	return buf;
}

/* A counter of both reports: "+1203" within one process (the activity between the dumps), "1203 -> 1500" across
 * processes (two lives: a difference would mean nothing). */
static void vg_diff_counter(const struct vg_diff *d, uint64_t a, uint64_t b, char *buf, size_t len)
{
	if (!d->by_id)
		snprintf(buf, len, a == b ? "%" PRIu64 : "%" PRIu64 " -> %" PRIu64, a, b);
	else if (b >= a)
		snprintf(buf, len, "+%" PRIu64, b - a);
	else
		snprintf(buf, len, "-%" PRIu64, a - b);
}

/* ---- frames ---- */

static const char *vg_no_site(const struct vg_report *r)
{
	return r->backtrace_depth <= 0 ? "(no call site: VRAMGUARD_BACKTRACE=0)" : "(no call site recorded)";
}

struct vg_frame_line {
	const char *label;                      /* "created:", or NULL */
	const struct vg_report_frame *frame;    /* NULL: say why there is none */
	const struct vg_report *r;              /* whose report, for that reason */
};

/* Frames as two aligned columns (symbol, then module and offset), each line indented by 6. */
static void vg_diff_frames(struct vg_strbuf *out, const struct vg_frame_line *lines, size_t n)
{
	struct vg_strbuf sym[VG_DIFF_FRAMES];
	size_t i, col = 0, lw = 0;

	if (n > VG_DIFF_FRAMES)
		n = VG_DIFF_FRAMES;
	memset(sym, 0, sizeof(sym));
	for (i = 0; i < n; i++) {
		const struct vg_report_frame *f = lines[i].frame;
		if (lines[i].label && strlen(lines[i].label) > lw)
			lw = strlen(lines[i].label);
		if (!f)
			continue;
		vg_report_frame_symbol_text(&sym[i], f);
		if (sym[i].failed)
			out->failed = 1;
		else if (vg_text_width(sym[i].data, strlen(sym[i].data)) > col)
			col = vg_text_width(sym[i].data, strlen(sym[i].data));
	}
	if (col > VG_DIFF_SYM_COL)
		col = VG_DIFF_SYM_COL;
	for (i = 0; i < n; i++) {
		const struct vg_report_frame *f = lines[i].frame;
		vg_strbuf_spaces(out, 6);
		if (lw)
			vg_text_pad(out, lines[i].label ? lines[i].label : "", lw + 1);
		if (!f) {
			vg_strbuf_str(out, vg_no_site(lines[i].r));
		} else {
			const char *text = sym[i].data ? sym[i].data : "";
			vg_text_pad(out, text, col + 2);
			if (vg_text_width(text, strlen(text)) > col)       /* wider than the column: still two spaces */
				vg_strbuf_spaces(out, 2);
			if (f->module[0]) {
				vg_text_str(out, f->module, sizeof(f->module));
				vg_strbuf_printf(out, " (+0x%" PRIx64 ")", f->module_offset);
			} else {
				vg_strbuf_printf(out, "0x%" PRIx64, f->address);
			}
		}
		vg_strbuf_add(out, "\n", 1);
		vg_strbuf_free(&sym[i]);
	}
}

/* The first frames of a site past the CUDA runtime. */
static void vg_diff_site_frames(struct vg_strbuf *out, const struct vg_report *r, const struct vg_report_site *s)
{
	struct vg_frame_line lines[VG_DIFF_FRAMES];
	size_t i, n = s->frames ? s->nframes : 0, skip = vg_report_runtime_prefix(s);

	if (n == 0) {
		lines[0] = (struct vg_frame_line){ NULL, NULL, r };
		vg_diff_frames(out, lines, 1);
		return;
	}
	for (i = 0; skip + i < n && i < VG_DIFF_FRAMES; i++)
		lines[i] = (struct vg_frame_line){ NULL, &s->frames[skip + i], r };
	vg_diff_frames(out, lines, i);
}

/* ---- matching sites ---- */

static const struct vg_report_site *vg_diff_find(const struct vg_report *r, uint32_t id, size_t *index)
{
	size_t i;
	for (i = 0; r->sites && i < r->nsites; i++)
		if (r->sites[i].id == id) {
			if (index)
				*index = i;
			return &r->sites[i];
		}
	return NULL;
}

/* The file name of a frame's module: paths differ between containers and hosts, the object's name does not. */
static const char *vg_diff_basename(const struct vg_report_frame *f, size_t *len)
{
	size_t n = strnlen(f->module, sizeof(f->module)), i = n;
	while (i > 0 && f->module[i - 1] != '/')
		i--;
	*len = n - i;
	return f->module + i;
}

static size_t vg_diff_nframes(const struct vg_diff *d, const struct vg_report_site *s)
{
	size_t n = s->frames ? s->nframes : 0;
	return d->depth && n > d->depth ? d->depth : n;
}

static uint64_t vg_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	while (n--)
		h = (h ^ *c++) * 0x100000001b3ull;
	return h;
}

/* One frame's identity across processes: (module basename, module_offset); a frame without a module (JIT code)
 * has only its symbol. A site without frames is known by its entry point alone. */
static uint64_t vg_diff_stack_hash(const struct vg_diff *d, const struct vg_report_site *s)
{
	uint64_t h = 0xcbf29ce484222325ull, nf = vg_diff_nframes(d, s);
	size_t i, len;

	h = vg_fnv(h, &nf, sizeof(nf));
	if (nf == 0)
		return vg_fnv(h, s->api, strnlen(s->api, sizeof(s->api)));
	for (i = 0; i < nf; i++) {
		const struct vg_report_frame *f = &s->frames[i];
		const char *base = vg_diff_basename(f, &len);
		if (f->module[0]) {
			h = vg_fnv(h, base, len + (len < sizeof(f->module)));   /* with the NUL as a separator */
			h = vg_fnv(h, &f->module_offset, sizeof(f->module_offset));
		} else {
			h = vg_fnv(h, "", 1);
			h = vg_fnv(h, f->symbol, strnlen(f->symbol, sizeof(f->symbol)));
		}
	}
	return h;
}

static bool vg_diff_frame_eq(const struct vg_report_frame *a, const struct vg_report_frame *b)
{
	size_t la, lb;
	const char *ba = vg_diff_basename(a, &la), *bb = vg_diff_basename(b, &lb);

	if (!a->module[0] || !b->module[0])
		return !a->module[0] && !b->module[0] && strncmp(a->symbol, b->symbol, sizeof(a->symbol)) == 0;
	return la == lb && memcmp(ba, bb, la) == 0 && a->module_offset == b->module_offset;
}

static bool vg_diff_stack_eq(const struct vg_diff *d, const struct vg_report_site *a, const struct vg_report_site *b)
{
	size_t i, n = vg_diff_nframes(d, a);

	if (n != vg_diff_nframes(d, b))
		return false;
	if (n == 0)
		return strncmp(a->api, b->api, sizeof(a->api)) == 0;
	for (i = 0; i < n; i++)
		if (!vg_diff_frame_eq(&a->frames[i], &b->frames[i]))
			return false;
	return true;
}

struct vg_diff_key {
	uint64_t key;                           /* the id, or the stack's hash */
	uint32_t id;
	size_t index;
};

static int vg_diff_key_cmp(const void *pa, const void *pb)
{
	const struct vg_diff_key *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static struct vg_diff_key *vg_diff_keys(const struct vg_diff *d, const struct vg_report *r, size_t n)
{
	struct vg_diff_key *k = malloc((n ? n : 1) * sizeof(*k));
	size_t i;

	if (!k)
		return NULL;
	for (i = 0; i < n; i++) {
		const struct vg_report_site *s = &r->sites[i];
		k[i] = (struct vg_diff_key){ d->by_id ? s->id : vg_diff_stack_hash(d, s), s->id, i };
	}
	qsort(k, n, sizeof(*k), vg_diff_key_cmp);
	return k;
}

/* Pair each new site with an old one: same id within one process, same stack across processes. Sites with equal
 * keys on both sides (frameless ones, say) pair up in the order of their ids. */
static int vg_diff_match(struct vg_diff *d)
{
	struct vg_diff_key *ok, *nk;
	size_t i, j;

	d->omatch = malloc((d->no ? d->no : 1) * sizeof(size_t));
	d->nmatch = malloc((d->nn ? d->nn : 1) * sizeof(size_t));
	if (!d->omatch || !d->nmatch)
		return -ENOMEM;
	for (i = 0; i < d->no; i++)
		d->omatch[i] = VG_DIFF_NONE;
	for (i = 0; i < d->nn; i++)
		d->nmatch[i] = VG_DIFF_NONE;
	ok = vg_diff_keys(d, d->o, d->no);
	nk = vg_diff_keys(d, d->n, d->nn);
	if (!ok || !nk) {
		free(ok);
		free(nk);
		return -ENOMEM;
	}
	for (j = 0; j < d->nn; j++) {
		size_t lo = 0, hi = d->no;
		while (lo < hi) {               /* the first old key >= this one */
			size_t mid = lo + (hi - lo) / 2;
			if (ok[mid].key < nk[j].key)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (i = lo; i < d->no && ok[i].key == nk[j].key; i++) {
			size_t oi = ok[i].index, ni = nk[j].index;
			if (d->omatch[oi] != VG_DIFF_NONE)
				continue;
			if (!d->by_id && !vg_diff_stack_eq(d, &d->o->sites[oi], &d->n->sites[ni]))
				continue;
			d->omatch[oi] = ni;
			d->nmatch[ni] = oi;
			break;
		}
	}
	free(ok);
	free(nk);
	return 0;
}

static uint32_t vg_diff_row_id(const struct vg_diff_row *r)
{
	return r->n ? r->n->id : r->o->id;
}

/* Largest change first; ties: the larger change in allocations, then the lower site id. */
static int vg_diff_row_cmp(const void *pa, const void *pb)
{
	const struct vg_diff_row *a = pa, *b = pb;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->sortbytes != b->sortbytes)
		return a->sortbytes > b->sortbytes ? -1 : 1;
	if (a->dcount != b->dcount)
		return a->dcount > b->dcount ? -1 : 1;
	if (vg_diff_row_id(a) != vg_diff_row_id(b))
		return vg_diff_row_id(a) < vg_diff_row_id(b) ? -1 : 1;
	return 0;
}

static uint64_t vg_absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static int vg_diff_rows(struct vg_diff *d)
{
	size_t i, k;

	d->rows = malloc((d->no + d->nn ? d->no + d->nn : 1) * sizeof(*d->rows));
	if (!d->rows)
		return -ENOMEM;
	for (i = 0; i < d->nn; i++) {
		const struct vg_report_site *n = &d->n->sites[i];
		const struct vg_report_site *o = d->nmatch[i] != VG_DIFF_NONE ? &d->o->sites[d->nmatch[i]] : NULL;
		struct vg_diff_row r = { VG_DIFF_SAME, o, n, 0, 0, 0 };

		if (!o) {
			if (n->live_bytes == 0 && n->live_count == 0)
				continue;       /* a stream call's site, or one whose memory is all freed: nothing to say */
			r.kind = VG_DIFF_NEW;
			r.dbytes = n->live_bytes;
			r.dcount = n->live_count;
		} else {
			r.dbytes = vg_absdiff(n->live_bytes, o->live_bytes);
			r.dcount = vg_absdiff(n->live_count, o->live_count);
			if (n->live_bytes > o->live_bytes)
				r.kind = VG_DIFF_GREW;
			else if (n->live_bytes < o->live_bytes)
				r.kind = VG_DIFF_SHRANK;
			else if (n->live_bytes == 0 && n->live_count == 0 && o->live_count == 0)
				continue;
		}
		r.sortbytes = r.kind == VG_DIFF_SAME ? n->live_bytes : r.dbytes;
		d->rows[d->nrows++] = r;
	}
	for (i = 0; i < d->no; i++) {
		const struct vg_report_site *o = &d->o->sites[i];
		if (d->omatch[i] != VG_DIFF_NONE || (o->live_bytes == 0 && o->live_count == 0))
			continue;
		d->rows[d->nrows++] = (struct vg_diff_row){ VG_DIFF_GONE, o, NULL, o->live_bytes, o->live_count,
							    o->live_bytes };
	}
	qsort(d->rows, d->nrows, sizeof(*d->rows), vg_diff_row_cmp);
	for (k = 0; k < VG_DIFF_NKINDS; k++)
		d->first[k] = d->nrows;
	for (i = d->nrows; i-- > 0;) {
		k = d->rows[i].kind;
		d->first[k] = i;
		d->count[k]++;
		d->bytes[k] += d->rows[i].kind == VG_DIFF_SAME ? d->rows[i].n->live_bytes : d->rows[i].dbytes;
	}
	return 0;
}

static bool vg_diff_same_process(const struct vg_report *o, const struct vg_report *n)
{
	return o->pid == n->pid && strncmp(o->hostname, n->hostname, sizeof(o->hostname)) == 0 &&
	       n->sequence > o->sequence;
}

static void vg_diff_fini(struct vg_diff *d)
{
	free(d->omatch);
	free(d->nmatch);
	free(d->rows);
}

static int vg_diff_init(struct vg_diff *d, const struct vg_report *o, const struct vg_report *n)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->o = o;
	d->n = n;
	d->no = o->sites ? o->nsites : 0;
	d->nn = n->sites ? n->nsites : 0;
	d->by_id = vg_diff_same_process(o, n);
	/* Two runs with different VRAMGUARD_BACKTRACE: compare what both recorded. */
	if (!d->by_id && o->backtrace_depth > 0 && n->backtrace_depth > 0 && o->backtrace_depth != n->backtrace_depth)
		d->depth = (uint32_t)(o->backtrace_depth < n->backtrace_depth ? o->backtrace_depth : n->backtrace_depth);
	rc = vg_diff_match(d);
	if (rc == 0)
		rc = vg_diff_rows(d);
	if (rc)
		vg_diff_fini(d);
	return rc;
}

/* ---- devices ---- */

struct vg_diff_dev {
	const struct vg_report_device *o, *n;   /* o NULL: new device; n NULL: gone */
};

static bool vg_diff_uuid_eq(const struct vg_report_device *a, const struct vg_report_device *b)
{
	return a->uuid[0] && b->uuid[0] && strncasecmp(a->uuid, b->uuid, sizeof(a->uuid)) == 0;
}

/* New devices in their order, each with its old twin (same uuid; else same ordinal unless both have different
 * uuids), then the old devices left over. Returns the number of pairs, or -ENOMEM. */
static long vg_diff_devices_match(const struct vg_report *o, const struct vg_report *n, struct vg_diff_dev **pairs)
{
	size_t no = o->devices ? o->ndevices : 0, nn = n->devices ? n->ndevices : 0, i, j, k = 0;
	struct vg_diff_dev *p = malloc((no + nn ? no + nn : 1) * sizeof(*p));
	bool *used = calloc(no ? no : 1, sizeof(*used));

	if (!p || !used) {
		free(p);
		free(used);
		return -ENOMEM;
	}
	for (i = 0; i < nn; i++) {              /* by uuid first, so that no ordinal takes a device a uuid names */
		p[i] = (struct vg_diff_dev){ NULL, &n->devices[i] };
		for (j = 0; j < no && !p[i].o; j++)
			if (!used[j] && vg_diff_uuid_eq(&o->devices[j], p[i].n)) {
				p[i].o = &o->devices[j];
				used[j] = true;
			}
	}
	for (i = 0; i < nn; i++) {              /* then by ordinal, unless both uuids are known (and differ) */
		const struct vg_report_device *nd = p[i].n;
		for (j = 0; j < no && !p[i].o; j++) {
			const struct vg_report_device *od = &o->devices[j];
			if (used[j] || od->ordinal != nd->ordinal || (od->uuid[0] && nd->uuid[0]))
				continue;
			p[i].o = od;
			used[j] = true;
		}
	}
	k = nn;
	for (j = 0; j < no; j++)
		if (!used[j])
			p[k++] = (struct vg_diff_dev){ &o->devices[j], NULL };
	free(used);
	*pairs = p;
	return (long)k;
}

static void vg_diff_quota(const struct vg_report_device *dv, char *buf, size_t len)
{
	if (dv->quota_set)
		vg_format_bytes(dv->quota_bytes, buf, len);
	else
		snprintf(buf, len, "unlimited");
}

/* "1.00 GiB -> 3.25 GiB (+2.25 GiB)" or "1.00 GiB" */
static void vg_diff_change(uint64_t a, uint64_t b, int with_delta, char *buf, size_t len)
{
	char sa[32], sb[32], sd[40];

	vg_format_bytes(a, sa, sizeof(sa));
	vg_format_bytes(b, sb, sizeof(sb));
	if (a == b)
		snprintf(buf, len, "%s", sb);
	else if (with_delta)
		snprintf(buf, len, "%s -> %s (%s)", sa, sb, vg_diff_bytes(b > a ? 1 : -1, vg_absdiff(a, b), sd, sizeof(sd)));
	else
		snprintf(buf, len, "%s -> %s", sa, sb);
}

static void vg_diff_device_row(const struct vg_diff *d, const struct vg_diff_dev *p, char (*c)[VG_DIFF_CELL])
{
	const struct vg_report_device *o = p->o, *n = p->n, *any = n ? n : o;
	char qa[32], qb[32], bytes[40];

	snprintf(c[0], VG_DIFF_CELL, "%d", any->ordinal);
	if (o && n) {
		vg_diff_change(o->used_bytes, n->used_bytes, 1, c[1], VG_DIFF_CELL);
		vg_diff_change(o->peak_bytes, n->peak_bytes, 0, c[2], VG_DIFF_CELL);
		vg_diff_quota(o, qa, sizeof(qa));
		vg_diff_quota(n, qb, sizeof(qb));
		if (strcmp(qa, qb) == 0)
			snprintf(c[3], VG_DIFF_CELL, "%s", qb);
		else
			snprintf(c[3], VG_DIFF_CELL, "%s -> %s", qa, qb);
		vg_diff_counter(d, o->allocs, n->allocs, c[4], VG_DIFF_CELL);
		vg_diff_counter(d, o->frees, n->frees, c[5], VG_DIFF_CELL);
		vg_diff_counter(d, o->denied_count, n->denied_count, c[6], VG_DIFF_CELL);
		if (d->by_id && n->denied_bytes > o->denied_bytes) {
			size_t l = strlen(c[6]);
			snprintf(c[6] + l, VG_DIFF_CELL - l, " (%s)",
				 vg_diff_bytes(1, n->denied_bytes - o->denied_bytes, bytes, sizeof(bytes)));
		}
		c[7][0] = '\0';
		return;
	}
	/* A device only one report has: its own values, and which one it is. */
	vg_format_bytes(any->used_bytes, c[1], VG_DIFF_CELL);
	vg_format_bytes(any->peak_bytes, c[2], VG_DIFF_CELL);
	vg_diff_quota(any, c[3], VG_DIFF_CELL);
	if (n && d->by_id) {    /* counted from nothing: the activity since the first report */
		vg_diff_counter(d, 0, n->allocs, c[4], VG_DIFF_CELL);
		vg_diff_counter(d, 0, n->frees, c[5], VG_DIFF_CELL);
		vg_diff_counter(d, 0, n->denied_count, c[6], VG_DIFF_CELL);
	} else {
		snprintf(c[4], VG_DIFF_CELL, "%" PRIu64, any->allocs);
		snprintf(c[5], VG_DIFF_CELL, "%" PRIu64, any->frees);
		snprintf(c[6], VG_DIFF_CELL, "%" PRIu64, any->denied_count);
	}
	snprintf(c[7], VG_DIFF_CELL, "%s", n ? "(new: not in the first report)" : "(gone: not in the second report)");
}

static int vg_diff_devices(const struct vg_diff *d, struct vg_strbuf *out)
{
	static const char *const head[VG_DIFF_DEV_COLS] = { "GPU", "used", "peak", "quota", "allocs", "frees",
							    "denied", "" };
	struct vg_diff_dev *p;
	char (*cells)[VG_DIFF_CELL];
	size_t w[VG_DIFF_DEV_COLS] = { 0 }, i, j, last = 0;
	long n = vg_diff_devices_match(d->o, d->n, &p);

	if (n < 0)
		return (int)n;
	if (n == 0) {
		free(p);
		vg_strbuf_str(out, "  GPU  none used\n");
		return 0;
	}
	cells = calloc(((size_t)n + 1) * VG_DIFF_DEV_COLS, VG_DIFF_CELL);
	if (!cells) {
		free(p);
		return -ENOMEM;
	}
	for (j = 0; j < VG_DIFF_DEV_COLS; j++)
		snprintf(cells[j], VG_DIFF_CELL, "%s", head[j]);
	for (i = 0; i < (size_t)n; i++)
		vg_diff_device_row(d, &p[i], cells + (i + 1) * VG_DIFF_DEV_COLS);
	for (i = 0; i <= (size_t)n; i++)
		for (j = 0; j < VG_DIFF_DEV_COLS; j++) {
			const char *c = cells[i * VG_DIFF_DEV_COLS + j];
			if (vg_text_width(c, strlen(c)) > w[j])
				w[j] = vg_text_width(c, strlen(c));
			if (c[0] && j > last)
				last = j;
		}
	for (i = 0; i <= (size_t)n; i++) {
		vg_strbuf_str(out, "  ");
		const char *ord = cells[i * VG_DIFF_DEV_COLS];
		vg_strbuf_spaces(out, w[0] - vg_text_width(ord, strlen(ord)));     /* ordinals right-aligned */
		vg_strbuf_str(out, ord);
		for (j = 1; j <= last; j++) {
			const char *c = cells[i * VG_DIFF_DEV_COLS + j];
			size_t k;
			vg_strbuf_str(out, "  ");
			for (k = j + 1; k <= last && !cells[i * VG_DIFF_DEV_COLS + k][0]; k++)
				;
			if (k > last)   /* the row's last cell: no trailing blanks */
				vg_strbuf_str(out, c);
			else
				vg_text_pad(out, c, w[j]);
			if (k > last)
				break;
		}
		vg_strbuf_str(out, "\n");
	}
	/* What the matching did that a reader would not guess. */
	for (i = 0; i < (size_t)n; i++) {
		const struct vg_report_device *o = p[i].o, *nd = p[i].n;
		size_t j2;
		if (o && nd && o->ordinal != nd->ordinal) {
			vg_strbuf_printf(out, "  note: GPU %d was GPU %d in the first report: matched by uuid ", nd->ordinal,
					 o->ordinal);
			vg_text_str(out, nd->uuid, sizeof(nd->uuid));
			vg_strbuf_str(out, "\n");
		}
		for (j2 = 0; nd && !o && j2 < (size_t)n; j2++) {
			const struct vg_report_device *g = p[j2].o;
			if (!p[j2].n && g && g->ordinal == nd->ordinal && g->uuid[0] && nd->uuid[0]) {
				vg_strbuf_printf(out, "  note: GPU %d is a different device in each report (", nd->ordinal);
				vg_text_str(out, g->uuid, sizeof(g->uuid));
				vg_strbuf_str(out, ", then ");
				vg_text_str(out, nd->uuid, sizeof(nd->uuid));
				vg_strbuf_str(out, "): not compared\n");
			}
		}
	}
	free(cells);
	free(p);
	return 0;
}

/* ---- call sites ---- */

/* "site 3 via cuMemAlloc_v2", "site 11 (was site 3) via ..." when the ids differ between processes */
static void vg_diff_site_name(struct vg_strbuf *out, const struct vg_diff_row *r)
{
	const struct vg_report_site *s = r->n ? r->n : r->o;

	vg_strbuf_printf(out, "site %" PRIu32, s->id);
	if (r->n && r->o && r->o->id != r->n->id)
		vg_strbuf_printf(out, " (was site %" PRIu32 ")", r->o->id);
	vg_strbuf_str(out, " via ");
	vg_text_str(out, s->api[0] ? s->api : "?", sizeof(s->api));
}

static void vg_diff_row_text(const struct vg_diff *d, struct vg_strbuf *out, const struct vg_diff_row *r,
			     size_t width)
{
	char lead[48], now[32], was[32];
	const struct vg_report_site *o = r->o, *n = r->n;

	if (r->kind == VG_DIFF_SAME)
		vg_format_bytes(n->live_bytes, lead, sizeof(lead));
	else
		vg_diff_bytes(r->kind == VG_DIFF_SHRANK || r->kind == VG_DIFF_GONE ? -1 : 1, r->dbytes, lead,
			      sizeof(lead));
	vg_strbuf_str(out, "    ");
	vg_text_pad(out, lead, width);
	vg_strbuf_str(out, "  (");
	switch (r->kind) {
	case VG_DIFF_GREW:
	case VG_DIFF_SHRANK:
		vg_strbuf_printf(out, "now %s in %" PRIu64 " %s, was %s in %" PRIu64 ")  ",
				 vg_format_bytes(n->live_bytes, now, sizeof(now)), n->live_count,
				 vg_plural(n->live_count, "allocation", "allocations"),
				 vg_format_bytes(o->live_bytes, was, sizeof(was)), o->live_count);
		break;
	case VG_DIFF_NEW:
	case VG_DIFF_GONE:
		vg_strbuf_printf(out, "in %" PRIu64 " %s)  ", r->dcount, vg_plural(r->dcount, "allocation", "allocations"));
		break;
	default:
		vg_strbuf_printf(out, "in %" PRIu64 " %s", n->live_count,
				 vg_plural(n->live_count, "allocation", "allocations"));
		if (o->live_count != n->live_count)
			vg_strbuf_printf(out, ", was %" PRIu64, o->live_count);
		vg_strbuf_str(out, ")  ");
		break;
	}
	vg_diff_site_name(out, r);
	vg_strbuf_str(out, "\n");
	vg_diff_site_frames(out, n ? d->n : d->o, n ? n : o);
}

static void vg_diff_section(const struct vg_diff *d, struct vg_strbuf *out, enum vg_diff_kind k, size_t max_rows)
{
	const struct vg_diff_row *rows = d->rows + d->first[k];
	size_t n = d->count[k], shown = n < max_rows ? n : max_rows, i, width = 0;
	int sign = k == VG_DIFF_SHRANK || k == VG_DIFF_GONE ? -1 : 1;
	uint64_t rest = 0;
	char total[48];

	if (n == 0)
		return;
	if (k == VG_DIFF_SAME)
		vg_format_bytes(d->bytes[k], total, sizeof(total));
	else
		vg_diff_bytes(sign, d->bytes[k], total, sizeof(total));
	vg_strbuf_printf(out, "  %s: %zu call %s, %s\n", vg_diff_kind_name[k], n, vg_plural(n, "site", "sites"), total);
	for (i = 0; i < shown; i++) {
		char lead[48];
		if (k == VG_DIFF_SAME)
			vg_format_bytes(rows[i].n->live_bytes, lead, sizeof(lead));
		else
			vg_diff_bytes(sign, rows[i].dbytes, lead, sizeof(lead));
		if (vg_text_width(lead, strlen(lead)) > width)
			width = vg_text_width(lead, strlen(lead));
	}
	for (i = 0; i < shown; i++)
		vg_diff_row_text(d, out, &rows[i], width);
	for (i = shown; i < n; i++)
		rest += k == VG_DIFF_SAME ? rows[i].n->live_bytes : rows[i].dbytes;
	if (n > shown) {
		if (k == VG_DIFF_SAME)
			vg_format_bytes(rest, total, sizeof(total));
		else
			vg_diff_bytes(sign, rest, total, sizeof(total));
		vg_strbuf_printf(out, "    and %zu more (%s)\n", n - shown, total);
	}
}

/* ---- streams ---- */

/* A stream's site as one key for both reports: the new report's id; an old site no new one matched keeps its old
 * id, marked so it cannot meet a new id. Within one process ids are the same on both sides. */
static uint64_t vg_diff_stream_key(const struct vg_diff *d, uint32_t id, int old)
{
	size_t i;

	if (!old || d->by_id || id == 0)
		return id;
	if (vg_diff_find(d->o, id, &i) && d->omatch[i] != VG_DIFF_NONE)
		return d->n->sites[d->omatch[i]].id;
	return (uint64_t)id | (1ull << 32);
}

struct vg_diff_srow {
	uint64_t key[2];                        /* creation site (and destroy site, for events) */
	uint64_t oc, nc;                        /* streams in each report */
	int synchronized;
};

static int vg_diff_srow_cmp(const void *pa, const void *pb)
{
	const struct vg_diff_srow *a = pa, *b = pb;
	uint64_t da = vg_absdiff(a->oc, a->nc), db = vg_absdiff(b->oc, b->nc);
	if (da != db)
		return da > db ? -1 : 1;
	if (a->key[0] != b->key[0])
		return a->key[0] < b->key[0] ? -1 : 1;
	if (a->key[1] != b->key[1])
		return a->key[1] < b->key[1] ? -1 : 1;
	return 0;
}

static void vg_diff_srow_add(struct vg_diff_srow *rows, size_t *n, uint64_t k0, uint64_t k1, uint64_t count, int old,
			     int synchronized)
{
	size_t i;
	for (i = 0; i < *n; i++)
		if (rows[i].key[0] == k0 && rows[i].key[1] == k1)
			break;
	if (i == *n)
		rows[(*n)++] = (struct vg_diff_srow){ { k0, k1 }, 0, 0, 0 };
	if (old)
		rows[i].oc += count;
	else
		rows[i].nc += count;
	rows[i].synchronized |= synchronized;
}

/* The frame line of a stream's site, from whichever report knows it; "site 7" (or "site 7 of the first report"). */
static void vg_diff_stream_site(const struct vg_diff *d, uint64_t key, struct vg_frame_line *line,
				struct vg_strbuf *name)
{
	uint32_t id = (uint32_t)key;
	const struct vg_report *r = key >> 32 ? d->o : d->n;
	const struct vg_report_site *s = id ? vg_diff_find(r, id, NULL) : NULL;

	if (!s && d->by_id && id && (s = vg_diff_find(d->o, id, NULL)) != NULL)
		r = d->o;
	line->r = r;
	line->frame = s && s->frames && s->nframes ? &s->frames[vg_report_runtime_prefix(s)] : NULL;
	if (name)
		vg_strbuf_printf(name, "site %" PRIu32 "%s", id, key >> 32 ? " of the first report" : "");
}

static void vg_diff_streams(const struct vg_diff *d, struct vg_strbuf *out, size_t max_rows)
{
	const struct vg_report *o = d->o, *n = d->n;
	size_t onl = o->stream_live ? o->nstream_live : 0, nnl = n->stream_live ? n->nstream_live : 0;
	size_t one = o->stream_events ? o->nstream_events : 0, nne = n->stream_events ? n->nstream_events : 0;
	struct vg_diff_srow *live, *ev;
	size_t nlive = 0, nev = 0, i, changed;
	uint64_t olive = 0, nlv = 0, oev = 0, nevc = 0;
	char a[64], b[64];

	if (!o->streams_created && !n->streams_created && !onl && !nnl && !one && !nne)
		return;
	live = malloc((onl + nnl ? onl + nnl : 1) * sizeof(*live));
	ev = malloc((one + nne ? one + nne : 1) * sizeof(*ev));
	if (!live || !ev) {
		free(live);
		free(ev);
		out->failed = 1;
		return;
	}
	for (i = 0; i < onl; i++) {
		vg_diff_srow_add(live, &nlive, vg_diff_stream_key(d, o->stream_live[i].create_site, 1), 0,
				 o->stream_live[i].count, 1, 0);
		olive += o->stream_live[i].count;
	}
	for (i = 0; i < nnl; i++) {
		vg_diff_srow_add(live, &nlive, n->stream_live[i].create_site, 0, n->stream_live[i].count, 0, 0);
		nlv += n->stream_live[i].count;
	}
	for (i = 0; i < one; i++) {
		const struct vg_report_stream_event *e = &o->stream_events[i];
		vg_diff_srow_add(ev, &nev, vg_diff_stream_key(d, e->create_site, 1),
				 vg_diff_stream_key(d, e->destroy_site, 1), e->count, 1, 0);
		oev += e->count;
	}
	for (i = 0; i < nne; i++) {
		const struct vg_report_stream_event *e = &n->stream_events[i];
		vg_diff_srow_add(ev, &nev, e->create_site, e->destroy_site, e->count, 0, e->synchronized);
		nevc += e->count;
	}
	qsort(live, nlive, sizeof(*live), vg_diff_srow_cmp);
	qsort(ev, nev, sizeof(*ev), vg_diff_srow_cmp);

	/* One line of totals; then what changed, by site. */
	if (olive == nlv)
		vg_strbuf_printf(out, "  streams: live %" PRIu64 " (no change)", nlv);
	else
		vg_strbuf_printf(out, "  streams: live %" PRIu64 " -> %" PRIu64 " (%s%" PRIu64 ")", olive, nlv,
				 nlv > olive ? "+" : "-", vg_absdiff(olive, nlv));
	vg_diff_counter(d, o->streams_created, n->streams_created, a, sizeof(a));
	vg_diff_counter(d, o->streams_destroyed, n->streams_destroyed, b, sizeof(b));
	vg_strbuf_printf(out, "; created %s, destroyed %s", a, b);
	vg_diff_counter(d, oev, nevc, a, sizeof(a));
	vg_strbuf_printf(out, "; destroyed with work queued %s\n", a);

	for (i = changed = 0; i < nlive; i++) {
		struct vg_frame_line line = { NULL, NULL, NULL };
		struct vg_strbuf name = { 0 };
		uint64_t delta = vg_absdiff(live[i].oc, live[i].nc);
		if (delta == 0)
			continue;
		if (changed++ >= max_rows)
			continue;
		vg_diff_stream_site(d, live[i].key[0], &line, &name);
		vg_strbuf_printf(out, "    %s%" PRIu64 " live %s created at %s (now %" PRIu64 ")\n",
				 live[i].nc > live[i].oc ? "+" : "-", delta, vg_plural(delta, "stream", "streams"),
				 name.data ? name.data : "?", live[i].nc);
		if (name.failed)
			out->failed = 1;
		vg_strbuf_free(&name);
		vg_diff_frames(out, &line, 1);
	}
	if (changed > max_rows)
		vg_strbuf_printf(out, "    and %zu more creation sites\n", changed - max_rows);
	for (i = changed = 0; i < nev; i++) {
		static const char *const labels[2] = { "created:", "destroyed:" };
		struct vg_frame_line lines[2];
		struct vg_strbuf cn = { 0 }, dn = { 0 };
		uint64_t delta = vg_absdiff(ev[i].oc, ev[i].nc);
		size_t j;
		if (delta == 0)
			continue;
		if (changed++ >= max_rows)
			continue;
		for (j = 0; j < 2; j++)
			lines[j].label = labels[j];
		vg_diff_stream_site(d, ev[i].key[0], &lines[0], &cn);
		vg_diff_stream_site(d, ev[i].key[1], &lines[1], &dn);
		vg_strbuf_printf(out, "    %s%" PRIu64 " destroyed with work queued: created at %s, destroyed at %s%s\n",
				 ev[i].nc > ev[i].oc ? "+" : "-", delta, cn.data ? cn.data : "?", dn.data ? dn.data : "?",
				 ev[i].synchronized ? " (waited for: VRAMGUARD_STREAM_CHECK=sync)" : "");
		if (cn.failed || dn.failed)
			out->failed = 1;
		vg_strbuf_free(&cn);
		vg_strbuf_free(&dn);
		vg_diff_frames(out, lines, 2);
	}
	if (changed > max_rows)
		vg_strbuf_printf(out, "    and %zu more create/destroy site pairs\n", changed - max_rows);
	free(live);
	free(ev);
}

/* ---- the whole ---- */

static void vg_diff_header(const struct vg_diff *d, struct vg_strbuf *out)
{
	const struct vg_report *o = d->o, *n = d->n;
	char to[40], tn[40], gap[48];
	bool same_host = strncmp(o->hostname, n->hostname, sizeof(o->hostname)) == 0;

	vg_report_time(o->time_ns, 0, to, sizeof(to));
	vg_report_time(n->time_ns, 0, tn, sizeof(tn));
	vg_diff_interval(o->time_ns, n->time_ns, gap, sizeof(gap));
	if (o->pid == n->pid && same_host) {
		vg_strbuf_printf(out, "vramguard: diff of pid %d on ", n->pid);
		vg_text_str(out, n->hostname[0] ? n->hostname : "?", sizeof(n->hostname));
		vg_strbuf_printf(out, ": report #%" PRIu64 " (%s) -> report #%" PRIu64 " (%s), %s\n", o->sequence, to,
				 n->sequence, tn, gap);
	} else {
		vg_strbuf_printf(out, "vramguard: diff of pid %d on ", o->pid);
		vg_text_str(out, o->hostname[0] ? o->hostname : "?", sizeof(o->hostname));
		vg_strbuf_printf(out, ", report #%" PRIu64 " (%s) -> pid %d on ", o->sequence, to, n->pid);
		vg_text_str(out, n->hostname[0] ? n->hostname : "?", sizeof(n->hostname));
		vg_strbuf_printf(out, ", report #%" PRIu64 " (%s), %s\n", n->sequence, tn, gap);
	}
	if (!d->by_id) {
		if (o->pid == n->pid && same_host)
			vg_strbuf_str(out, "  different processes (same pid, but the report number does not advance): sites "
				    "matched by call stack\n");
		else
			vg_strbuf_str(out, "  different processes: sites matched by call stack\n");
	}
	if (d->depth)
		vg_strbuf_printf(out, "  note: call stacks recorded %d and %d frames deep: compared on the first %" PRIu32
				 "\n", o->backtrace_depth, n->backtrace_depth, d->depth);
	if ((o->pid == n->pid && same_host && o->sequence > n->sequence) || o->time_ns > n->time_ns)
		vg_strbuf_str(out, "  note: the first report is the newer one (diffed as given: first -> second)\n");
}

/* Anything different in live memory, by device or by site. */
static bool vg_diff_any_change(const struct vg_diff *d, const struct vg_diff_dev *p, long np)
{
	long i;

	if (d->count[VG_DIFF_GREW] || d->count[VG_DIFF_NEW] || d->count[VG_DIFF_SHRANK] || d->count[VG_DIFF_GONE])
		return true;
	if (d->o->allocs_live != d->n->allocs_live)
		return true;
	for (i = 0; i < np; i++) {
		uint64_t a = p[i].o ? p[i].o->used_bytes : 0, b = p[i].n ? p[i].n->used_bytes : 0;
		if (a != b)
			return true;
	}
	return false;
}

int vg_report_diff_text(const struct vg_report *old, const struct vg_report *new, const struct vg_diff_opts *o,
			struct vg_strbuf *out)
{
	size_t max_rows = o && o->max_rows ? o->max_rows : VG_DIFF_ROWS_DEFAULT;
	struct vg_diff d;
	struct vg_diff_dev *p = NULL;
	long np;
	int rc, k;

	if (out->failed)
		return -ENOMEM;
	rc = vg_diff_init(&d, old, new);
	if (rc)
		return rc;
	vg_diff_header(&d, out);
	rc = vg_diff_devices(&d, out);
	np = rc ? -ENOMEM : vg_diff_devices_match(old, new, &p);
	if (rc || np < 0) {
		vg_diff_fini(&d);
		return -ENOMEM;
	}
	if (!vg_diff_any_change(&d, p, np)) {
		vg_strbuf_str(out, "  no change in live allocations\n");
	} else if (!d.count[VG_DIFF_GREW] && !d.count[VG_DIFF_NEW] && !d.count[VG_DIFF_SHRANK] &&
		   !d.count[VG_DIFF_GONE]) {
		/* The devices moved but no site did: sites were off, or memory changed hands within them. */
		vg_strbuf_printf(out, "  live allocations %" PRIu64 " -> %" PRIu64 ", but no call site changed%s\n",
				 old->allocs_live, new->allocs_live,
				 d.no == 0 && d.nn == 0 && (old->backtrace_depth <= 0 || new->backtrace_depth <= 0)
					 ? " (call sites are off: VRAMGUARD_BACKTRACE=0)"
					 : "");
	}
	for (k = 0; k < VG_DIFF_NKINDS; k++)
		if (k != VG_DIFF_SAME || (o && o->all))
			vg_diff_section(&d, out, (enum vg_diff_kind)k, max_rows);
	vg_diff_streams(&d, out, max_rows);
	free(p);
	vg_diff_fini(&d);
	return out->failed ? -ENOMEM : 0;
}

int vg_report_diff_grew(const struct vg_report *old, const struct vg_report *new)
{
	struct vg_diff d;
	struct vg_diff_dev *p;
	long np, i;
	int grew, rc = vg_diff_init(&d, old, new);

	if (rc)
		return rc;
	grew = d.count[VG_DIFF_GREW] > 0 || d.count[VG_DIFF_NEW] > 0;
	vg_diff_fini(&d);
	if (grew)
		return 1;
	np = vg_diff_devices_match(old, new, &p);
	if (np < 0)
		return -ENOMEM;
	for (i = 0; i < np && !grew; i++)
		grew = p[i].n && p[i].n->used_bytes > (p[i].o ? p[i].o->used_bytes : 0);
	free(p);
	return grew;
}
