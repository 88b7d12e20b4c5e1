/* Regions: limits changed while jobs run (`vramguard limit set`): the region's budget under its lock, and one
 * process's own quota as a request in its slot that the process applies itself. */
#define _GNU_SOURCE
#include <errno.h>

#include "accounting/region_impl.h"

/* ---- live limits ---- */

int vg_region_spec_check(const char *spec, struct vg_limits *l, char *err, size_t errlen)
{
	if (!spec || strlen(spec) >= VG_REGION_SPEC_MAX) {
		vg_err(err, errlen, "limit spec too long (at most %d bytes)", VG_REGION_SPEC_MAX - 1);
		return -EINVAL;
	}
	if (spec[strspn(spec, " \t")] == '\0') {
		/* It would leave the GPUs' budgets as they are but give GPUs registered later none. */
		vg_err(err, errlen, "empty limit (expected e.g. 8G, 0:4G,1:2G, 50%% or unlimited)");
		return -EINVAL;
	}
	char e[VG_ERR_MAX];
	if (vg_parse_limits("limit", spec, (uint64_t)1 << 20, l, e, sizeof(e)) != 0) {
		const char *m = strncmp(e, "vramguard: error: ", 18) == 0 ? e + 18 : e;
		vg_err(err, errlen, "%s", m);
		return -EINVAL;
	}
	return 0;
}

int vg_region_set_limit(struct vg_region *r, const char *spec, char *err, size_t errlen)
{
	struct vg_limits l;
	int rc = vg_region_spec_check(spec, &l, err, errlen);
	if (rc)
		return rc;
	if (!r->h || !r->writable || r->kind != VG_REGION_SHARED) {
		vg_err(err, errlen, "%s is not a shared region opened for writing", VG_QP(r->path));
		return -EBADF;
	}
	if ((rc = vg_region_lock_say(r, err, errlen)) != 0)
		return rc;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_region_dev *v = &r->h->dev[d];
		char uuid[VG_REGION_UUID_MAX];
		vg_copy_str(uuid, sizeof(uuid), v->uuid);      /* bounded: the file may have changed since open */
		if (!uuid[0])
			continue;
		int said;
		uint64_t lim = vg_limits_for(&l, v->ordinal, strncmp(uuid, "ordinal:", 8) ? uuid : NULL, v->total, NULL,
					     &said);
		if (said)
			atomic_store(&v->limit, lim);
	}
	/* A spec with keys only changes those GPUs; GPUs registered later keep the old bare default. */
	char next[VG_REGION_SPEC_MAX], old[VG_REGION_SPEC_MAX];
	vg_copy_str(next, sizeof(next), spec);
	vg_copy_str(old, sizeof(old), r->h->spec);
	if (l.dflt.kind == VG_LIMIT_UNSET) {
		char *save = NULL;
		for (char *tok = strtok_r(old, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			if (*tok && !strchr(tok, ':') && !strchr(tok, '=')) {
				size_t a = strlen(tok), b = strlen(spec);
				if (a + 1 + b < sizeof(next)) {
					memcpy(next, tok, a);
					next[a] = ',';
					memcpy(next + a + 1, spec, b + 1);
				}
				break;
			}
		}
	}
	vg_copy_str(r->h->spec, sizeof(r->h->spec), next);
	atomic_fetch_add(&r->h->limit_seq, 1);
	vg_region_unlock(r);
	return 0;
}

/* One process's request, written into its slot for it to apply (the spec checked by the caller): the slot's lock
 * held for the process named by pid and start, the spec copied into the slot's memory request, or its compute
 * share's, and that one's sequence raised. */
static int vg_slot_request(struct vg_region *r, int slot, pid_t pid, uint64_t start, bool compute, const char *spec,
			   char *err, size_t errlen)
{
	int rc = vg_slot_lock_held(r, slot, pid, start, compute ? "before the compute share could be set" :
				   "before the limit could be set", err, errlen);
	if (rc)
		return rc;
	struct vg_region_slot *s = &r->h->slot[slot];
	vg_copy_str(compute ? s->compute_spec : s->limit_spec, compute ? sizeof(s->compute_spec) : sizeof(s->limit_spec),
		    spec);
	atomic_fetch_add(compute ? &s->compute_seq : &s->limit_seq, 1);
	vg_region_unlock(r);
	return 0;
}

int vg_region_set_slot_limit(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *spec, char *err,
			     size_t errlen)
{
	struct vg_limits l;
	int rc = vg_region_spec_check(spec, &l, err, errlen);
	if (rc)
		return rc;
	return vg_slot_request(r, slot, pid, start, false, spec, err, errlen);
}

bool vg_region_poll(const struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (!r->h || slot < 0)
		return false;
	return atomic_load_explicit(&r->h->slot[slot].limit_seq, memory_order_relaxed) !=
		       atomic_load_explicit(&r->seen_slot_seq, memory_order_relaxed) ||
	       atomic_load_explicit(&r->h->limit_seq, memory_order_relaxed) !=
		       atomic_load_explicit(&r->seen_limit_seq, memory_order_relaxed);
}

bool vg_region_pending_limit(struct vg_region *r, char *spec, size_t len)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0)
		return false;
	struct vg_region_slot *s = &r->h->slot[slot];
	uint32_t seq = atomic_load_explicit(&s->limit_seq, memory_order_acquire);
	uint32_t seen = atomic_load(&r->seen_slot_seq);
	if (seq == seen || len == 0)
		return false;
	if (vg_region_lock(r) != 0)
		return false;           /* try again next time */
	seq = atomic_load(&s->limit_seq);
	bool mine = atomic_compare_exchange_strong(&r->seen_slot_seq, &seen, seq);   /* one thread applies it */
	if (mine) {
		vg_copy_str(spec, len < sizeof(s->limit_spec) ? len : sizeof(s->limit_spec), s->limit_spec);
		atomic_store(&s->applied_seq, seq);
	}
	vg_region_unlock(r);
	return mine && spec[0] != '\0';
}

void vg_region_spec_copy(struct vg_region *r, char *spec, size_t len)
{
	if (len == 0)
		return;
	spec[0] = '\0';
	if (!r || !r->h)
		return;
	bool locked = vg_region_lock(r) == 0;
	vg_copy_str(spec, len < sizeof(r->h->spec) ? len : sizeof(r->h->spec), r->h->spec);
	if (locked)
		vg_region_unlock(r);
}

bool vg_region_limit_changed(struct vg_region *r)
{
	if (!r || !r->h)
		return false;
	uint32_t seq = atomic_load_explicit(&r->h->limit_seq, memory_order_acquire);
	uint32_t seen = atomic_load_explicit(&r->seen_limit_seq, memory_order_relaxed);
	return seq != seen && atomic_compare_exchange_strong(&r->seen_limit_seq, &seen, seq);
}

/* ---- live compute shares (`limit set --compute`) ---- */

int vg_region_compute_check(const char *spec, struct vg_limits *l, char *err, size_t errlen)
{
	if (!spec || strlen(spec) >= VG_REGION_SPEC_MAX) {
		vg_err(err, errlen, "compute share too long (at most %d bytes)", VG_REGION_SPEC_MAX - 1);
		return -EINVAL;
	}
	if (spec[strspn(spec, " \t")] == '\0') {
		vg_err(err, errlen, "empty compute share (expected e.g. 50%%, 0:30%%,1:70%%, GPU-<uuid>:40%% or unlimited)");
		return -EINVAL;
	}
	char e[VG_ERR_MAX];
	if (vg_parse_compute("compute share", spec, l, e, sizeof(e)) != 0) {
		const char *m = strncmp(e, "vramguard: error: ", 18) == 0 ? e + 18 : e;
		vg_err(err, errlen, "%s", m);
		return -EINVAL;
	}
	return 0;
}

int vg_region_set_compute(struct vg_region *r, const char *spec, char *err, size_t errlen)
{
	struct vg_limits l;
	int rc = vg_region_compute_check(spec, &l, err, errlen);
	if (rc)
		return rc;
	if (!r->h || !r->writable || r->kind != VG_REGION_SHARED) {
		vg_err(err, errlen, "%s is not a shared region opened for writing", VG_QP(r->path));
		return -EBADF;
	}
	if ((rc = vg_region_lock_say(r, err, errlen)) != 0)
		return rc;
	vg_copy_str(r->h->compute_spec, sizeof(r->h->compute_spec), spec);
	atomic_fetch_add(&r->h->compute_seq, 1);
	vg_region_unlock(r);
	return 0;
}

int vg_region_set_slot_compute(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *spec, char *err,
			       size_t errlen)
{
	struct vg_limits l;
	int rc = vg_region_compute_check(spec, &l, err, errlen);
	if (rc)
		return rc;
	return vg_slot_request(r, slot, pid, start, true, spec, err, errlen);
}

bool vg_region_pending_compute(struct vg_region *r, char *spec, size_t len)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0 || len == 0)
		return false;
	struct vg_region_slot *s = &r->h->slot[slot];
	uint32_t seen = atomic_load(&r->seen_compute_seq);
	if (atomic_load_explicit(&s->compute_seq, memory_order_acquire) == seen)
		return false;
	if (vg_region_lock(r) != 0)
		return false;           /* try again next time */
	uint32_t seq = atomic_load(&s->compute_seq);
	bool mine = vg_slot_mine(r, slot) && atomic_compare_exchange_strong(&r->seen_compute_seq, &seen, seq);
	if (mine) {
		vg_copy_str(spec, len < sizeof(s->compute_spec) ? len : sizeof(s->compute_spec), s->compute_spec);
		atomic_store(&s->compute_applied_seq, seq);
	}
	vg_region_unlock(r);
	return mine && spec[0] != '\0';
}

bool vg_region_compute_changed(struct vg_region *r, char *spec, size_t len)
{
	if (!r || !r->h || r->kind != VG_REGION_SHARED || len == 0)
		return false;
	/* seen_region_compute_seq holds the sequence read + 1: 0 is "never read", so that a region's share set before
	 * we joined is read once too. */
	uint32_t seen = atomic_load(&r->seen_region_compute_seq);
	if (seen && atomic_load_explicit(&r->h->compute_seq, memory_order_acquire) + 1 == seen)
		return false;
	if (vg_region_lock(r) != 0)
		return false;
	uint32_t seq = atomic_load(&r->h->compute_seq);
	vg_copy_str(spec, len < sizeof(r->h->compute_spec) ? len : sizeof(r->h->compute_spec), r->h->compute_spec);
	vg_region_unlock(r);
	atomic_store(&r->seen_region_compute_seq, seq + 1);
	return true;
}

uint32_t vg_region_tag(const struct vg_region *r)
{
	if (!r || !r->h || r->kind != VG_REGION_SHARED)
		return 0;
	/* FNV-1a over the file's identity, taken at open: the same for every member (whatever path or mount namespace
	 * it opened the file through), another for a region made again, and nothing read from the shared memory. */
	uint32_t h = 2166136261u;
	uint64_t v[2] = { r->fdev, r->fino };
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 8; i++)
			h = (h ^ (uint8_t)(v[k] >> (8 * i))) * 16777619u;
	h &= 0x7fffffffu;       /* the activity file's word keeps its top bit for "wants the GPU" */
	return h ? h : 1;
}
