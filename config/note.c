/* vg_config.note: variables of one precedence chain (the quota's, the request's, the compute share's) set to values
 * that disagree, and which of them are ignored.
 * The note is worked out once, at load, from the parsed values (config prints nothing; the library logs it). A
 * layer is one variable's values; each CUDA_DEVICE_MEMORY_LIMIT_<i> is a layer of its own (they share cfg->hami
 * with CUDA_DEVICE_MEMORY_LIMIT, told apart by each value's source; CUDA_DEVICE_SM_LIMIT[_<i>] share cfg->sm
 * alike). A lower layer is ignored where a higher one gives a device it names, or a device its default covers,
 * another value. Devices are not known here, so an
 * ordinal and a UUID key never meet; a percentage and a size always differ. */
#include "config/internal.h"

#include <string.h>

struct vg_layer {
	const char *name;               /* the variable; its values have this source */
	const struct vg_limits *ls;     /* where its values are (shared by several layers for HAMi's) */
	const struct vg_limit *one;     /* or its one value (NVIDIA_GPU_MEMORY_LIMIT, _REQUEST) */
};

static int vg_limit_same(const struct vg_limit *a, const struct vg_limit *b)
{
	if (a->kind != b->kind)
		return 0;
	return a->kind == VG_LIMIT_BYTES ? a->bytes == b->bytes : a->kind == VG_LIMIT_PERCENT ? a->ppm == b->ppm : 1;
}

static int vg_key_same(const struct vg_limit_entry *a, const struct vg_limit_entry *b)
{
	return a->ordinal >= 0 ? a->ordinal == b->ordinal : b->ordinal < 0 && vg_streq_ci(a->uuid, b->uuid);
}

static const struct vg_limit *vg_layer_dflt(const struct vg_layer *y)
{
	const struct vg_limit *d = y->one ? y->one : &y->ls->dflt;
	return d->kind != VG_LIMIT_UNSET && d->source && strcmp(d->source, y->name) == 0 ? d : NULL;
}

/* The layer's i-th keyed entry, or NULL when that one belongs to another layer (or there is none). */
static const struct vg_limit_entry *vg_layer_entry(const struct vg_layer *y, int i)
{
	if (y->one || i >= y->ls->n)
		return NULL;
	return y->ls->e[i].limit.source && strcmp(y->ls->e[i].limit.source, y->name) == 0 ? &y->ls->e[i] : NULL;
}

static int vg_layer_set(const struct vg_layer *y)
{
	if (vg_layer_dflt(y))
		return 1;
	for (int i = 0; !y->one && i < y->ls->n; i++)
		if (vg_layer_entry(y, i))
			return 1;
	return 0;
}

/* Does hi give some device lo speaks for another value? */
static int vg_layer_overrides(const struct vg_layer *hi, const struct vg_layer *lo)
{
	const struct vg_limit *hd = vg_layer_dflt(hi), *ld = vg_layer_dflt(lo);
	const int hn = hi->one ? 0 : hi->ls->n, ln = lo->one ? 0 : lo->ls->n;

	if (ld && hd && !vg_limit_same(hd, ld))
		return 1;
	for (int i = 0; ld && i < hn; i++) {
		const struct vg_limit_entry *he = vg_layer_entry(hi, i);
		if (he && !vg_limit_same(&he->limit, ld))
			return 1;
	}
	for (int j = 0; j < ln; j++) {
		const struct vg_limit_entry *le = vg_layer_entry(lo, j), *he = NULL;
		if (!le)
			continue;
		for (int i = 0; !he && i < hn; i++) {
			he = vg_layer_entry(hi, i);
			if (he && !vg_key_same(he, le))
				he = NULL;
		}
		if (he ? !vg_limit_same(&he->limit, &le->limit) : hd && !vg_limit_same(hd, &le->limit))
			return 1;
	}
	return 0;
}

/* One clause per ignored layer: "NAME 'value' is ignored (HIGHER 'value' takes precedence)", or "... is ignored
 * for the devices HIGHER 'value' names (...)" when no higher layer has a default (the lower one still applies to
 * the other devices). */
static void vg_note_chain(struct vg_buf *b, const struct vg_layer *y, int n, vg_getenv_fn get, int *clauses)
{
	for (int j = 1; j < n; j++) {
		int win = -1, full = 0;

		if (!vg_layer_set(&y[j]))
			continue;
		for (int i = 0; i < j; i++) {
			if (!vg_layer_set(&y[i]))
				continue;
			full |= vg_layer_dflt(&y[i]) != NULL;
			if (win < 0 && vg_layer_overrides(&y[i], &y[j]))
				win = i;
		}
		if (win < 0)
			continue;
		const char *lv = get(y[j].name), *hv = get(y[win].name);
		vg_buf_str(b, (*clauses)++ ? "; " : "");
		vg_buf_str(b, y[j].name);
		vg_buf_char(b, ' ');
		vg_buf_quote(b, lv ? lv : "", lv ? strlen(lv) : 0);
		vg_buf_str(b, full ? " is ignored (" : " is ignored for the devices ");
		vg_buf_str(b, y[win].name);
		vg_buf_char(b, ' ');
		vg_buf_quote(b, hv ? hv : "", hv ? strlen(hv) : 0);
		vg_buf_str(b, full ? " takes precedence)" : " names (it takes precedence)");
	}
}

void vg_config_note(struct vg_config *cfg, vg_getenv_fn get)
{
	struct vg_layer limits[3 + VG_MAX_DEVICES], requests[2], compute[2 + VG_MAX_DEVICES];
	struct vg_buf b;
	int n = 0, nc = 0, clauses = 0;

	limits[n++] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_LIMITS", &cfg->limits, NULL };
	limits[n++] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_LIMIT", NULL, &cfg->limit_one };
	for (int i = 0; i < VG_MAX_DEVICES; i++)
		limits[n++] = (struct vg_layer){ vg_hami_names[i], &cfg->hami, NULL };
	limits[n++] = (struct vg_layer){ "CUDA_DEVICE_MEMORY_LIMIT", &cfg->hami, NULL };
	requests[0] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_REQUESTS", &cfg->requests, NULL };
	requests[1] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_REQUEST", NULL, &cfg->request_one };
	compute[nc++] = (struct vg_layer){ "VRAMGUARD_COMPUTE_LIMIT", &cfg->compute, NULL };
	for (int i = 0; i < VG_MAX_DEVICES; i++)
		compute[nc++] = (struct vg_layer){ vg_sm_names[i], &cfg->sm, NULL };
	compute[nc++] = (struct vg_layer){ "CUDA_DEVICE_SM_LIMIT", &cfg->sm, NULL };
	vg_buf_init(&b, cfg->note, sizeof(cfg->note));
	vg_note_chain(&b, limits, n, get, &clauses);
	vg_note_chain(&b, requests, 2, get, &clauses);
	vg_note_chain(&b, compute, nc, get, &clauses);
}
