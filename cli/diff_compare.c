/* The comparison behind `vramguard diff` (cli/diff_compare.h): which call site of the new report is which of the
 * old, what each did in between, which device is which, and the streams by site. Pure computation on two vg_report
 * models; cli/diff.c renders the result. */
#include "cli/diff_compare.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- matching sites ---- */

const struct vg_report_site *vg_diff_find(const struct vg_report *r, uint32_t id, size_t *index)
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
	size_t n = strnlen(f->module, VG_REPORT_FRAME_STR), i = n;
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

static size_t vg_diff_npython(const struct vg_diff *d, const struct vg_report_site *s)
{
	size_t n = s->python ? s->npython : 0;
	return d->depth && n > d->depth ? d->depth : n;
}

/* A Python frame's file as its base name (the same script lives under other paths elsewhere). */
static const char *vg_diff_pybase(const struct vg_report_pyframe *f, size_t *len)
{
	size_t n = strnlen(f->file, VG_REPORT_FRAME_STR), i = n;
	while (i > 0 && f->file[i - 1] != '/')
		i--;
	*len = n - i;
	return f->file + i;
}

static bool vg_diff_pyframe_eq(const struct vg_report_pyframe *a, const struct vg_report_pyframe *b)
{
	size_t la, lb;
	const char *ba = vg_diff_pybase(a, &la), *bb = vg_diff_pybase(b, &lb);
	return a->line == b->line && la == lb && memcmp(ba, bb, la) == 0 &&
	       strncmp(a->function, b->function, VG_REPORT_PY_FUNCTION_STR) == 0;
}

/* One frame's identity across processes: (module basename, module_offset); a frame without a module (JIT code)
 * has only its symbol; a Python frame is (file basename, line, function), and both stacks count. A site without
 * frames is known by its entry point alone. */
static uint64_t vg_diff_stack_hash(const struct vg_diff *d, const struct vg_report_site *s)
{
	uint64_t h = 0xcbf29ce484222325ull, nf = vg_diff_nframes(d, s), np = vg_diff_npython(d, s);
	size_t i, len;

	h = vg_fnv(h, &nf, sizeof(nf));
	h = vg_fnv(h, &np, sizeof(np));
	for (i = 0; i < np; i++) {
		const struct vg_report_pyframe *f = &s->python[i];
		const char *base = vg_diff_pybase(f, &len);
		h = vg_fnv(h, &len, sizeof(len));
		h = vg_fnv(h, base, len);
		h = vg_fnv(h, &f->line, sizeof(f->line));
		h = vg_fnv(h, f->function, strnlen(f->function, VG_REPORT_PY_FUNCTION_STR));
	}
	if (nf == 0 && np == 0)
		return vg_fnv(h, s->api, strnlen(s->api, sizeof(s->api)));
	for (i = 0; i < nf; i++) {
		const struct vg_report_frame *f = &s->frames[i];
		const char *base = vg_diff_basename(f, &len);
		if (f->module[0]) {
			h = vg_fnv(h, base, len + (len < VG_REPORT_FRAME_STR));   /* with the NUL as a separator */
			h = vg_fnv(h, &f->module_offset, sizeof(f->module_offset));
		} else {
			h = vg_fnv(h, "", 1);
			h = vg_fnv(h, f->symbol, strnlen(f->symbol, VG_REPORT_FRAME_STR));
		}
	}
	return h;
}

static bool vg_diff_frame_eq(const struct vg_report_frame *a, const struct vg_report_frame *b)
{
	size_t la, lb;
	const char *ba = vg_diff_basename(a, &la), *bb = vg_diff_basename(b, &lb);

	if (!a->module[0] || !b->module[0])
		return !a->module[0] && !b->module[0] && strncmp(a->symbol, b->symbol, VG_REPORT_FRAME_STR) == 0;
	return la == lb && memcmp(ba, bb, la) == 0 && a->module_offset == b->module_offset;
}

static bool vg_diff_stack_eq(const struct vg_diff *d, const struct vg_report_site *a, const struct vg_report_site *b)
{
	size_t i, n = vg_diff_nframes(d, a), np = vg_diff_npython(d, a);

	if (n != vg_diff_nframes(d, b) || np != vg_diff_npython(d, b))
		return false;
	for (i = 0; i < np; i++)
		if (!vg_diff_pyframe_eq(&a->python[i], &b->python[i]))
			return false;
	if (n == 0 && np == 0)
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

/* ---- rows ---- */

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

void vg_diff_fini(struct vg_diff *d)
{
	free(d->omatch);
	free(d->nmatch);
	free(d->rows);
}

int vg_diff_init(struct vg_diff *d, const struct vg_report *o, const struct vg_report *n)
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

static bool vg_diff_uuid_eq(const struct vg_report_device *a, const struct vg_report_device *b)
{
	return a->uuid[0] && b->uuid[0] && strncasecmp(a->uuid, b->uuid, sizeof(a->uuid)) == 0;
}

long vg_diff_devices_match(const struct vg_report *o, const struct vg_report *n, struct vg_diff_dev **pairs)
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

bool vg_diff_any_change(const struct vg_diff *d, const struct vg_diff_dev *p, long np)
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

int vg_diff_streams_init(const struct vg_diff *d, struct vg_diff_streams *s)
{
	const struct vg_report *o = d->o, *n = d->n;
	size_t onl = o->stream_live ? o->nstream_live : 0, nnl = n->stream_live ? n->nstream_live : 0;
	size_t one = o->stream_events ? o->nstream_events : 0, nne = n->stream_events ? n->nstream_events : 0;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->live = malloc((onl + nnl ? onl + nnl : 1) * sizeof(*s->live));
	s->ev = malloc((one + nne ? one + nne : 1) * sizeof(*s->ev));
	if (!s->live || !s->ev) {
		vg_diff_streams_fini(s);
		return -ENOMEM;
	}
	for (i = 0; i < onl; i++) {
		vg_diff_srow_add(s->live, &s->nlive, vg_diff_stream_key(d, o->stream_live[i].create_site, 1), 0,
				 o->stream_live[i].count, 1, 0);
		s->olive += o->stream_live[i].count;
	}
	for (i = 0; i < nnl; i++) {
		vg_diff_srow_add(s->live, &s->nlive, n->stream_live[i].create_site, 0, n->stream_live[i].count, 0, 0);
		s->nlive_total += n->stream_live[i].count;
	}
	for (i = 0; i < one; i++) {
		const struct vg_report_stream_event *e = &o->stream_events[i];
		vg_diff_srow_add(s->ev, &s->nev, vg_diff_stream_key(d, e->create_site, 1),
				 vg_diff_stream_key(d, e->destroy_site, 1), e->count, 1, 0);
		s->oev += e->count;
	}
	for (i = 0; i < nne; i++) {
		const struct vg_report_stream_event *e = &n->stream_events[i];
		vg_diff_srow_add(s->ev, &s->nev, e->create_site, e->destroy_site, e->count, 0, e->synchronized);
		s->nev_total += e->count;
	}
	qsort(s->live, s->nlive, sizeof(*s->live), vg_diff_srow_cmp);
	qsort(s->ev, s->nev, sizeof(*s->ev), vg_diff_srow_cmp);
	return 0;
}

void vg_diff_streams_fini(struct vg_diff_streams *s)
{
	free(s->live);
	free(s->ev);
	s->live = s->ev = NULL;
}
