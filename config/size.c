/* Sizes and percentages: "4096" (in the variable's default unit), "1.5G", "512MiB", "50%", "unlimited". Strict:
 * base 10, known units only, overflow checked, trailing garbage and signs refused, zero refused. */
#include "config/internal.h"

#include <errno.h>
#include <string.h>

static const struct {
	const char *name;
	uint64_t mult;
} vg_units[] = {
	{ "b", 1 },
	{ "k", VG_KIB }, { "kb", VG_KIB }, { "kib", VG_KIB },
	{ "m", VG_MIB }, { "mb", VG_MIB }, { "mib", VG_MIB },
	{ "g", (uint64_t)1 << 30 }, { "gb", (uint64_t)1 << 30 }, { "gib", (uint64_t)1 << 30 },
	{ "t", (uint64_t)1 << 40 }, { "tb", (uint64_t)1 << 40 }, { "tib", (uint64_t)1 << 40 },
};

static int vg_size_fail(char *err, size_t errlen, const char *reason, const char *tok, size_t toklen)
{
	struct vg_buf b;

	vg_buf_init(&b, err, errlen);
	vg_buf_str(&b, reason);
	if (tok) {
		vg_buf_char(&b, ' ');
		vg_buf_quote(&b, tok, toklen);
	}
	return -EINVAL;
}

/* Parse "<digits>[.<1..maxfrac digits>]" at s[0..n). *whole gets the integer part (capped: *big set when it passes
 * cap), *frac the fraction scaled to `scale` (10^maxfrac). Returns the number of bytes consumed, 0 if none. */
static size_t vg_scan_decimal(const char *s, size_t n, uint64_t cap, size_t maxfrac, uint64_t *whole, uint64_t *frac,
			      int *big, int *fracbad)
{
	size_t i = 0, d;

	*whole = 0;
	*frac = 0;
	*big = 0;
	*fracbad = 0;
	while (i < n && vg_isdigit(s[i])) {
		uint64_t digit = (uint64_t)(s[i] - '0');
		if (*whole > (cap - digit) / 10)
			*big = 1;
		else
			*whole = *whole * 10 + digit;
		i++;
	}
	if (i == 0)
		return 0;
	if (i < n && s[i] == '.') {
		size_t start = ++i;
		while (i < n && vg_isdigit(s[i]))
			i++;
		if (i == start || i - start > maxfrac) {
			*fracbad = 1;
			return i;
		}
		for (d = 0; d < maxfrac; d++)
			*frac = *frac * 10 + (d < i - start ? (uint64_t)(s[start + d] - '0') : 0);
	}
	return i;
}

/* floor(x * ppm / 10^6) for ppm <= 10^6 without overflow: split x = q * 10^6 + r, then q * ppm <= x and
 * r * ppm < 10^12. */
uint64_t vg_mul_ppm(uint64_t x, uint64_t ppm)
{
	return x / 1000000u * ppm + x % 1000000u * ppm / 1000000u;
}

/* vg_parse_size on a counted string; the public function and the list parser share it. */
static int vg_parse_size_n(const char *s, size_t n, uint64_t default_unit, uint64_t *out, char *err, size_t errlen)
{
	uint64_t whole, frac, mult = default_unit, v, fbytes;
	int big, fracbad;
	size_t i, j;

	if (n == 0)
		return vg_size_fail(err, errlen, "empty value", NULL, 0);
	if (s[0] == '-' || s[0] == '+')
		return vg_size_fail(err, errlen, "a sign is not allowed", NULL, 0);
	i = vg_scan_decimal(s, n, UINT64_MAX, 6, &whole, &frac, &big, &fracbad);
	if (i == 0)
		return vg_size_fail(err, errlen, "not a number", NULL, 0);
	if (fracbad)
		return vg_size_fail(err, errlen, "not a number (at most 6 digits after '.')", NULL, 0);
	if (i < n) {
		for (j = i; j < n; j++)
			if (!vg_isalpha(s[j]))
				break;
		if (j < n)
			return vg_size_fail(err, errlen,
					    vg_isspace(s[j]) ? "spaces are not allowed" : "not a number", NULL, 0);
		for (j = 0; j < sizeof(vg_units) / sizeof(vg_units[0]); j++)
			if (vg_eq_ci(s + i, n - i, vg_units[j].name))
				break;
		if (j == sizeof(vg_units) / sizeof(vg_units[0]))
			return vg_size_fail(err, errlen, "unknown unit", s + i, n - i);
		mult = vg_units[j].mult;
	}
	if (mult == 0)
		return vg_size_fail(err, errlen, "invalid default unit", NULL, 0);
	if (big || whole > UINT64_MAX / mult)
		return vg_size_fail(err, errlen, "value too large", NULL, 0);
	v = whole * mult;
	fbytes = vg_mul_ppm(mult, frac); /* the fraction, rounded down to whole bytes */
	if (fbytes > UINT64_MAX - v)
		return vg_size_fail(err, errlen, "value too large", NULL, 0);
	v += (uint64_t)fbytes;
	if (v == 0)
		return vg_size_fail(err, errlen, "must be greater than zero", NULL, 0);
	*out = v;
	return 0;
}

int vg_parse_size(const char *s, uint64_t default_unit, uint64_t *out, char *err, size_t errlen)
{
	if (!s)
		return vg_size_fail(err, errlen, "empty value", NULL, 0);
	return vg_parse_size_n(s, strlen(s), default_unit, out, err, errlen);
}

/* "NN%" or "NN.NNNN%" -> parts per million, 0 < pct <= 100. s[0..n) ends with '%'. */
static int vg_parse_percent_n(const char *s, size_t n, uint32_t *ppm, char *err, size_t errlen)
{
	uint64_t whole, frac, v;
	int big, fracbad;
	size_t i;

	n--; /* the '%' */
	if (n && (s[0] == '-' || s[0] == '+'))
		return vg_size_fail(err, errlen, "a sign is not allowed", NULL, 0);
	i = vg_scan_decimal(s, n, 1000, 4, &whole, &frac, &big, &fracbad);
	if (i == 0 || fracbad)
		return vg_size_fail(err, errlen, "not a percentage", NULL, 0);
	if (i < n)
		return vg_size_fail(err, errlen, vg_isspace(s[i]) ? "spaces are not allowed" : "not a percentage",
				    NULL, 0);
	if (big || whole > 100)
		return vg_size_fail(err, errlen, "percentage above 100%", NULL, 0);
	v = whole * 10000 + frac; /* frac is in 1/10000 of a percent, i.e. ppm */
	if (v > 1000000)
		return vg_size_fail(err, errlen, "percentage above 100%", NULL, 0);
	if (v == 0)
		return vg_size_fail(err, errlen, "must be greater than zero", NULL, 0);
	*ppm = (uint32_t)v;
	return 0;
}

/* One limit value: a size, a percentage or "unlimited". */
int vg_parse_limit_value(const char *s, size_t n, uint64_t default_unit, struct vg_limit *l, char *err,
			 size_t errlen)
{
	if (vg_eq_ci(s, n, "unlimited")) {
		l->kind = VG_LIMIT_UNLIMITED;
		return 0;
	}
	if (n && s[n - 1] == '%') {
		if (vg_parse_percent_n(s, n, &l->ppm, err, errlen))
			return -EINVAL;
		l->kind = VG_LIMIT_PERCENT;
		return 0;
	}
	if (vg_parse_size_n(s, n, default_unit, &l->bytes, err, errlen))
		return -EINVAL;
	l->kind = VG_LIMIT_BYTES;
	return 0;
}
