/* The compute share's configuration: VRAMGUARD_COMPUTE_LIMIT (the memory limits' list syntax, each value a whole
 * percentage of the GPU's time) and HAMi-core's CUDA_DEVICE_SM_LIMIT[_<i>] (bare integers, read as HAMi-core reads
 * the values it documents). limits.c resolves a device's share from what these fill in. */
#include "config/internal.h"

#include <errno.h>
#include <string.h>

/* Stable names for the indexed HAMi variables: a share's source points at one of these. */
#define VG_SN(i) "CUDA_DEVICE_SM_LIMIT_" #i
#define VG_SN10(t) VG_SN(t##0), VG_SN(t##1), VG_SN(t##2), VG_SN(t##3), VG_SN(t##4), VG_SN(t##5), VG_SN(t##6),       \
		   VG_SN(t##7), VG_SN(t##8), VG_SN(t##9)
const char *const vg_sm_names[VG_MAX_DEVICES] = {
	VG_SN(0), VG_SN(1), VG_SN(2), VG_SN(3), VG_SN(4), VG_SN(5), VG_SN(6), VG_SN(7), VG_SN(8), VG_SN(9),
	VG_SN10(1), VG_SN10(2), VG_SN10(3), VG_SN10(4), VG_SN10(5),
	VG_SN(60), VG_SN(61), VG_SN(62), VG_SN(63),
};
_Static_assert(VG_MAX_DEVICES == 64, "vg_sm_names lists CUDA_DEVICE_SM_LIMIT_0..63");
_Static_assert(VG_MAX_LIMIT_ENTRIES >= VG_MAX_DEVICES, "one CUDA_DEVICE_SM_LIMIT_<i> entry per ordinal fits");

static int vg_compute_fail(char *err, size_t errlen, const char *reason)
{
	struct vg_buf b;

	vg_buf_init(&b, err, errlen);
	vg_buf_str(&b, reason);
	return -EINVAL;
}

/* One value of VRAMGUARD_COMPUTE_LIMIT: "N%" with N a whole number from 1 to 100, or "unlimited". 0% is refused
 * rather than read as "no limit" (a share of nothing would stop the job; no limit is "unlimited"), and so is a
 * fraction: the mechanism's accuracy is a few points, a finer figure would promise what it cannot hold. */
static int vg_compute_value(const char *s, size_t n, uint64_t unit, struct vg_limit *l, char *err, size_t errlen)
{
	unsigned v = 0;
	size_t i;

	(void)unit;
	memset(l, 0, sizeof(*l));
	if (vg_eq_ci(s, n, "unlimited")) {
		l->kind = VG_LIMIT_UNLIMITED;
		return 0;
	}
	if (n == 0 || s[n - 1] != '%')
		return vg_compute_fail(err, errlen, "missing '%' (a share is a whole percentage of the GPU's time)");
	for (i = 0; i + 1 < n; i++) {
		if (vg_isspace(s[i]))
			return vg_compute_fail(err, errlen, "spaces are not allowed");
		if (s[i] == '.' || s[i] == ',')
			return vg_compute_fail(err, errlen, "not a whole percentage");
		if (!vg_isdigit(s[i]))
			return vg_compute_fail(err, errlen, "not a percentage");
		if (v <= 100)
			v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (n == 1)
		return vg_compute_fail(err, errlen, "not a percentage");
	if (v > 100)
		return vg_compute_fail(err, errlen, "percentage above 100%");
	if (v == 0)
		return vg_compute_fail(err, errlen, "0% would never let a kernel run (no limit: unlimited)");
	l->kind = VG_LIMIT_PERCENT;
	l->ppm = v * 10000u;
	return 0;
}

int vg_parse_compute(const char *var, const char *value, struct vg_limits *out, char *err, size_t errlen)
{
	static const struct vg_list_kind shares = { vg_compute_value, 0, "missing percentage after the key" };

	return vg_parse_list(var, value, &shares, 1, VG_COMPUTE_EXAMPLES, out, err, errlen);
}

int vg_load_compute(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_compute(opt->name, get(opt->name), &cfg->compute, cfg->error, sizeof(cfg->error));
}

/* A HAMi-core value, t[0..n) of the variable name set to v: plain decimal from 0 to 100 into *pct. HAMi-core reads
 * these with strtoul(base 0) and ignores what follows the number, so "0x32" is 50 there, "062" octal 50, "50%" 50
 * and "-5" or 150 no limit; here each of those is an error, and a leading 0 names why (the same digits would mean
 * another share). */
static int vg_sm_value(struct vg_config *cfg, const char *name, const char *v, const char *t, size_t n, unsigned *pct)
{
	unsigned long value;
	struct vg_buf b;

	if (vg_uint_in(t, n, 0, 100, &value) && (n == 1 || t[0] != '0')) {
		*pct = (unsigned)value;
		return 0;
	}
	vg_err_head(&b, cfg, name, v);
	if (n > 1 && t[0] == '0' && vg_uint_in(t, n, 0, 100, &value))
		vg_buf_str(&b, "a leading 0 (HAMi-core reads the number as octal); expected an integer from 0 to 100");
	else
		vg_buf_str(&b, "expected an integer from 0 to 100 (0 and 100: no limit, as in HAMi-core)");
	return -EINVAL;
}

/* HAMi-core's 0 and 100 both mean no limit (its throttle runs for 1 to 99 only): said, unlimited. */
static void vg_sm_set(struct vg_limit *l, unsigned pct, const char *source)
{
	memset(l, 0, sizeof(*l));
	l->kind = pct == 0 || pct == 100 ? VG_LIMIT_UNLIMITED : VG_LIMIT_PERCENT;
	l->ppm = l->kind == VG_LIMIT_PERCENT ? pct * 10000u : 0;
	l->source = source;
}

int vg_load_sm(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	unsigned pct;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_sm_value(cfg, opt->name, v, t, n, &pct))
		return -EINVAL;
	vg_sm_set(&cfg->sm.dflt, pct, opt->name);
	return 0;
}

/* CUDA_DEVICE_SM_LIMIT_0..63: one entry per ordinal. 0 there is not "no limit" but "not set" (HAMi-core then uses
 * CUDA_DEVICE_SM_LIMIT for the device), so it adds no entry. */
int vg_load_sm_indexed(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	(void)opt;
	for (int i = 0; i < VG_MAX_DEVICES; i++) {
		const char *v = get(vg_sm_names[i]), *t = v;
		size_t n = v ? strlen(v) : 0;
		unsigned pct;

		vg_trim(&t, &n);
		if (n == 0)
			continue; /* unset, empty or blank */
		if (vg_sm_value(cfg, vg_sm_names[i], v, t, n, &pct))
			return -EINVAL;
		if (pct == 0)
			continue;
		cfg->sm.e[cfg->sm.n].ordinal = i;
		cfg->sm.e[cfg->sm.n].uuid[0] = '\0';
		vg_sm_set(&cfg->sm.e[cfg->sm.n].limit, pct, vg_sm_names[i]);
		cfg->sm.n++;                /* at most 64 ordinals: VG_MAX_LIMIT_ENTRIES */
	}
	return 0;
}
