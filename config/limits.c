/* Per-device limit lists ("0:4G,1:2G", "8G,GPU-...:unlimited"; compute.c's "0:30%,1:70%" too) and the resolution
 * of one device's limit or compute share from the parsed configuration: keyed entry, bare default, then the
 * lower-precedence variables. */
#include "config/internal.h"

#include <errno.h>
#include <string.h>

static int vg_limits_fail(const char *var, const char *tok, size_t toklen, const char *reason, const char *examples,
			  struct vg_limits *out, char *err, size_t errlen)
{
	struct vg_buf b;

	memset(out, 0, sizeof(*out));
	vg_buf_init(&b, err, errlen);
	vg_buf_str(&b, "vramguard: error: invalid ");
	vg_buf_str(&b, var);
	vg_buf_char(&b, ' ');
	vg_buf_quote(&b, tok, toklen);
	vg_buf_str(&b, ": ");
	vg_buf_str(&b, reason);
	vg_buf_str(&b, " (expected e.g. ");
	vg_buf_str(&b, examples);
	vg_buf_char(&b, ')');
	return -EINVAL;
}

/* 8-4-4-4-12 hex digits at s[0..n) exactly. */
static int vg_is_uuid_body(const char *s, size_t n)
{
	static const int groups[] = { 8, 4, 4, 4, 12 };
	size_t i = 0;
	int g, k;

	if (n != 36)
		return 0;
	for (g = 0; g < 5; g++) {
		if (g && s[i++] != '-')
			return 0;
		for (k = 0; k < groups[g]; k++)
			if (!vg_isxdigit(s[i++]))
				return 0;
	}
	return 1;
}

/* "GPU-" + 8-4-4-4-12 hex digits, the form nvidia-smi -L and cuDeviceGetUuid print. */
static int vg_is_gpu_uuid(const char *s, size_t n)
{
	return n == 4 + 36 && vg_eq_ci(s, 4, "gpu-") && vg_is_uuid_body(s + 4, 36);
}

/* A MIG instance as nvidia-smi -L names it: "MIG-" + 8-4-4-4-12 hex digits (driver R470 and later), or the older
 * "MIG-GPU-<uuid>/<GPU instance>/<compute instance>" with decimal instance ids. */
static int vg_is_mig_id(const char *s, size_t n)
{
	size_t i, part;

	if (n < 4 || !vg_eq_ci(s, 4, "mig-"))
		return 0;
	s += 4;
	n -= 4;
	if (vg_is_uuid_body(s, n))
		return 1;
	if (n < 40 + 4 || !vg_is_gpu_uuid(s, 40))
		return 0;
	for (i = 40, part = 0; part < 2; part++) {
		size_t start;
		if (i >= n || s[i++] != '/')
			return 0;
		for (start = i; i < n && vg_isdigit(s[i]); i++)
			;
		if (i == start || i - start > 5)
			return 0;
	}
	return i == n;
}

/* Parse a device key into e (ordinal or uuid). Returns NULL or the reason it is invalid. */
static const char *vg_parse_key(const char *k, size_t n, struct vg_limit_entry *e)
{
	size_t i;

	e->ordinal = -1;
	e->uuid[0] = '\0';
	if (n == 0)
		return "missing device key before ':'";
	if (vg_isdigit(k[0])) {
		int v = 0;
		for (i = 0; i < n; i++) {
			if (!vg_isdigit(k[i]))
				return "device ordinal is not a decimal number";
			v = v * 10 + (k[i] - '0');
			if (v >= VG_MAX_DEVICES)
				return "device ordinal out of range (0..63)";
		}
		e->ordinal = v;
		return NULL;
	}
	if (n >= 4 && vg_eq_ci(k, 4, "gpu-")) {
		if (!vg_is_gpu_uuid(k, n))
			return "invalid GPU UUID (want GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)";
	} else if (n >= 4 && vg_eq_ci(k, 4, "mig-")) {
		if (!vg_is_mig_id(k, n))
			return "invalid MIG identifier (want MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx or "
			       "MIG-GPU-<uuid>/<gi>/<ci>, as nvidia-smi -L prints)";
	} else {
		return "unknown device key (want an ordinal, GPU-<uuid> or MIG-<uuid>)";
	}
	memcpy(e->uuid, k, n);
	e->uuid[n] = '\0';
	return NULL;
}

/* The shared list parser: keys, defaults and duplicates here, each value by k->parse. allow_keys = 0 for a
 * variable that takes one value (CUDA_DEVICE_MEMORY_LIMIT_<i>). */
int vg_parse_list(const char *var, const char *value, const struct vg_list_kind *k, int allow_keys,
		  const char *examples, struct vg_limits *out, char *err, size_t errlen)
{
	char why[VG_ERR_MAX];
	const char *p, *end;
	size_t vlen;
	int have_dflt = 0, j;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	if (!value)
		return 0;
	vlen = strlen(value);
	p = value;
	end = value + vlen;
	{
		const char *t = value;
		size_t tn = vlen;
		vg_trim(&t, &tn);
		if (tn == 0)
			return 0; /* empty or all-whitespace: unset */
	}

	for (;;) {
		const char *item = p, *comma = memchr(p, ',', (size_t)(end - p)), *sep;
		size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);
		struct vg_limit_entry e;
		const char *key, *val;
		size_t kn, vn;

		vg_trim(&item, &n);
		if (n == 0)
			return vg_limits_fail(var, value, vlen, "empty item in list", examples, out, err, errlen);
		memset(&e, 0, sizeof(e));
		for (sep = item; sep < item + n && *sep != ':' && *sep != '='; sep++)
			;
		if (sep < item + n) {
			const char *reason;

			if (!allow_keys)
				return vg_limits_fail(var, item, n, "a device key is not allowed here", examples, out,
						      err, errlen);
			key = item;
			kn = (size_t)(sep - item);
			val = sep + 1;
			vn = (size_t)(item + n - val);
			vg_trim(&key, &kn);
			vg_trim(&val, &vn);
			reason = vg_parse_key(key, kn, &e);
			if (reason)
				return vg_limits_fail(var, item, n, reason, examples, out, err, errlen);
			if (vn == 0)
				return vg_limits_fail(var, item, n, k->missing, examples, out, err, errlen);
		} else {
			key = NULL;
			val = item;
			vn = n;
		}
		if (k->parse(val, vn, k->unit, &e.limit, why, sizeof(why)))
			return vg_limits_fail(var, item, n, why, examples, out, err, errlen);
		e.limit.source = var;

		if (!key) {
			if (have_dflt)
				return vg_limits_fail(var, item, n,
						      allow_keys ? "more than one default (a value without a device key)"
								 : "expected a single value",
						      examples, out, err, errlen);
			have_dflt = 1;
			out->dflt = e.limit;
		} else {
			for (j = 0; j < out->n; j++) {
				const struct vg_limit_entry *o = &out->e[j];
				if ((e.ordinal >= 0 && o->ordinal == e.ordinal) ||
				    (e.ordinal < 0 && o->ordinal < 0 && vg_streq_ci(o->uuid, e.uuid)))
					return vg_limits_fail(var, item, n, "duplicate device key", examples, out, err,
							      errlen);
			}
			if (out->n >= VG_MAX_LIMIT_ENTRIES)
				return vg_limits_fail(var, item, n, "too many entries (at most 64)", examples, out,
						      err, errlen);
			out->e[out->n++] = e;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

int vg_parse_limits_ex(const char *var, const char *value, uint64_t default_unit, int allow_keys,
		       const char *examples, struct vg_limits *out, char *err, size_t errlen)
{
	const struct vg_list_kind sizes = { vg_parse_limit_value, default_unit, "missing size after the key" };

	return vg_parse_list(var, value, &sizes, allow_keys, examples, out, err, errlen);
}

int vg_parse_limits(const char *var, const char *value, uint64_t default_unit, struct vg_limits *out, char *err,
		    size_t errlen)
{
	const char *examples = strncmp(var, "CUDA_DEVICE_MEMORY_LIMIT", 24) == 0 ? VG_HAMI_EXAMPLES
										: VG_LIMITS_EXAMPLES;
	return vg_parse_limits_ex(var, value, default_unit, 1, examples, out, err, errlen);
}
/* ---- resolving a device's limit ---- */

/* A percentage of a device whose total is unknown (0) cannot be resolved: it reads as unlimited rather than as a
 * zero quota. The interposer never passes 0: when cuDeviceTotalMem fails it passes 1, so that a percentage quota
 * denies every allocation (fail closed) while absolute quotas hold. A 0 comes from callers that only show a limit
 * (`vramguard check` when the driver gave no size). The source is still reported so logs can say why. */
static uint64_t vg_limit_resolve(const struct vg_limit *l, uint64_t total, const char **source)
{
	if (source)
		*source = l->source;
	switch (l->kind) {
	case VG_LIMIT_BYTES:
		return l->bytes;
	case VG_LIMIT_PERCENT:
		if (total == 0)
			return UINT64_MAX;
		return vg_mul_ppm(total, l->ppm);
	case VG_LIMIT_UNLIMITED:
	case VG_LIMIT_UNSET:
	default:
		return UINT64_MAX;
	}
}

/* A UUID match beats an ordinal match: the UUID names the physical device whatever CUDA_VISIBLE_DEVICES does. */
static const struct vg_limit *vg_limits_find(const struct vg_limits *ls, int ordinal, const char *uuid)
{
	int i;

	if (uuid && *uuid)
		for (i = 0; i < ls->n; i++)
			if (ls->e[i].ordinal < 0 && vg_streq_ci(ls->e[i].uuid, uuid))
				return &ls->e[i].limit;
	if (ordinal >= 0)
		for (i = 0; i < ls->n; i++)
			if (ls->e[i].ordinal == ordinal)
				return &ls->e[i].limit;
	return NULL;
}

uint64_t vg_limits_for(const struct vg_limits *ls, int ordinal, const char *uuid, uint64_t total, const char **source,
		       int *said)
{
	const struct vg_limit *l = vg_limits_find(ls, ordinal, uuid);

	if (!l && ls->dflt.kind != VG_LIMIT_UNSET)
		l = &ls->dflt;
	if (said)
		*said = l != NULL;
	if (source)
		*source = NULL;
	return l ? vg_limit_resolve(l, total, source) : UINT64_MAX;
}

uint64_t vg_config_limit_for(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t total,
			     const char **source)
{
	const struct vg_limit *l;

	if (source)
		*source = NULL;
	if (!cfg || !cfg->valid)
		return UINT64_MAX; /* callers must check cfg->valid first and refuse to run */
	l = vg_limits_find(&cfg->limits, ordinal, uuid);
	if (!l && cfg->limits.dflt.kind != VG_LIMIT_UNSET)
		l = &cfg->limits.dflt;
	if (!l && cfg->limit_one.kind != VG_LIMIT_UNSET)
		l = &cfg->limit_one;
	if (!l)
		l = vg_limits_find(&cfg->hami, ordinal, uuid);
	if (!l && cfg->hami.dflt.kind != VG_LIMIT_UNSET)
		l = &cfg->hami.dflt;
	if (!l)
		return UINT64_MAX;
	return vg_limit_resolve(l, total, source);
}

uint64_t vg_config_request_for(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t total,
			       const char **source)
{
	const struct vg_limit *l;

	if (source)
		*source = NULL;
	if (!cfg || !cfg->valid)
		return UINT64_MAX;
	l = vg_limits_find(&cfg->requests, ordinal, uuid);
	if (!l && cfg->requests.dflt.kind != VG_LIMIT_UNSET)
		l = &cfg->requests.dflt;
	if (!l && cfg->request_one.kind != VG_LIMIT_UNSET)
		l = &cfg->request_one;
	if (!l)
		return UINT64_MAX;
	return vg_limit_resolve(l, total, source);
}

uint64_t vg_config_warn_for(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t quota, uint64_t total,
			    const char **source)
{
	if (source)
		*source = NULL;
	if (!cfg || !cfg->valid)
		return UINT64_MAX;
	return vg_limits_for(&cfg->warn_at, ordinal, uuid, quota != UINT64_MAX ? quota : total, source, NULL);
}

unsigned vg_config_compute_for(const struct vg_config *cfg, int ordinal, const char *uuid, const char **source)
{
	const struct vg_limit *l;

	if (source)
		*source = NULL;
	if (!cfg || !cfg->valid)
		return 0;
	l = vg_limits_find(&cfg->compute, ordinal, uuid);
	if (!l && cfg->compute.dflt.kind != VG_LIMIT_UNSET)
		l = &cfg->compute.dflt;
	if (!l)
		l = vg_limits_find(&cfg->sm, ordinal, NULL); /* CUDA_DEVICE_SM_LIMIT_<i>: ordinals only */
	if (!l && cfg->sm.dflt.kind != VG_LIMIT_UNSET)
		l = &cfg->sm.dflt;
	if (!l)
		return 0;
	if (source)
		*source = l->source;
	return l->kind == VG_LIMIT_PERCENT ? l->ppm / 10000u : 0; /* VG_LIMIT_UNLIMITED: said, no limit */
}
