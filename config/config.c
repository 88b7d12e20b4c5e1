/* vramguard configuration: the options table and strict parsers for every environment variable.
 * Pure C, no CUDA, no heap, no stdio outside vg_options_write_markdown: messages are built with a tiny appender so
 * the same helpers are safe to call from the interposer's hot paths (vg_format_bytes). */
#include "config/config.h"
#include "accounting/region.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define VG_LIMITS_EXAMPLES "4096, 4G, 50%, 0:4G,1:2G"
/* The single-value NVIDIA names: a list written there is a common slip, so the example names the list variable. */
#define VG_LIMIT_ONE_EXAMPLES "4096, 4G, 50%, unlimited; per device: NVIDIA_GPU_MEMORY_LIMITS=0:4G,1:2G"
#define VG_REQUEST_ONE_EXAMPLES "4096, 4G, 50%; per device: NVIDIA_GPU_MEMORY_REQUESTS=0:4G,1:2G"
#define VG_HAMI_EXAMPLES "4g, 4096m, 0:4g"
#define VG_HAMI_INDEXED_EXAMPLES "4g, 4096m, 50%"
#define VG_TOKEN_MAX 80 /* longest user text quoted in a message (vg_buf_quote) */
#define VG_TOKEN_TAIL 24 /* of which its end */

#define VG_KIB ((uint64_t)1 << 10)
#define VG_MIB ((uint64_t)1 << 20)

/* ---- a bounded string appender (always NUL-terminated, silently truncates) ---- */

struct vg_buf {
	char *p;
	size_t len, cap;
};

static void vg_buf_init(struct vg_buf *b, char *p, size_t cap)
{
	b->p = p;
	b->len = 0;
	b->cap = cap;
	if (cap)
		p[0] = '\0';
}

static void vg_buf_char(struct vg_buf *b, char c)
{
	if (b->cap && b->len + 1 < b->cap) {
		b->p[b->len++] = c;
		b->p[b->len] = '\0';
	}
}

static void vg_buf_str(struct vg_buf *b, const char *s)
{
	while (*s)
		vg_buf_char(b, *s++);
}

static void vg_buf_u64(struct vg_buf *b, uint64_t v);

/* User text, quoted on one line: 'text'. Control bytes become '?'; text longer than VG_TOKEN_MAX keeps its start and
 * its end (where a path has its file name, a value its unit), cut at character boundaries, and says how long it
 * was: 'start...end' (5000 bytes). So a message stays short whatever it is given. */
static void vg_buf_quote(struct vg_buf *b, const char *s, size_t n)
{
	size_t head = n, tail = n, i;

	if (n > VG_TOKEN_MAX) {
		head = VG_TOKEN_MAX - VG_TOKEN_TAIL;
		tail = n - VG_TOKEN_TAIL;
		while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80)
			head--;
		while (tail < n && ((unsigned char)s[tail] & 0xc0) == 0x80)
			tail++;
	}
	vg_buf_char(b, '\'');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i == head) {
			vg_buf_str(b, "...");
			i = tail;
			if (i == n)
				break;
			c = (unsigned char)s[i];
		}
		vg_buf_char(b, (c < 0x20 || c == 0x7f) ? '?' : (char)c);
	}
	vg_buf_char(b, '\'');
	if (head < n) {
		vg_buf_str(b, " (");
		vg_buf_u64(b, (uint64_t)n);
		vg_buf_str(b, " bytes)");
	}
}

const char *vg_quote(const char *s, char *buf, size_t len)
{
	struct vg_buf b;

	vg_buf_init(&b, buf, len);
	if (s)
		vg_buf_quote(&b, s, strlen(s));
	return buf;
}

static void vg_buf_u64(struct vg_buf *b, uint64_t v)
{
	char tmp[21];
	int i = 0;

	do {
		tmp[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i)
		vg_buf_char(b, tmp[--i]);
}

/* ---- small character helpers (locale-independent) ---- */

static int vg_isdigit(char c) { return c >= '0' && c <= '9'; }
static int vg_isalpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int vg_isspace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int vg_isxdigit(char c) { return vg_isdigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static char vg_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

/* Case-insensitive compare of s[0..n) with the NUL-terminated word w. */
static int vg_eq_ci(const char *s, size_t n, const char *w)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!w[i] || vg_lower(s[i]) != vg_lower(w[i]))
			return 0;
	return w[n] == '\0';
}

static int vg_streq_ci(const char *a, const char *b)
{
	while (*a && vg_lower(*a) == vg_lower(*b)) {
		a++;
		b++;
	}
	return vg_lower(*a) == vg_lower(*b);
}

static void vg_trim(const char **s, size_t *n)
{
	while (*n && vg_isspace(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && vg_isspace((*s)[*n - 1]))
		(*n)--;
}

/* ---- sizes ---- */

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
static uint64_t vg_mul_ppm(uint64_t x, uint64_t ppm)
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
static int vg_parse_limit_value(const char *s, size_t n, uint64_t default_unit, struct vg_limit *l, char *err,
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

/* ---- per-device lists ---- */

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

/* The shared list parser. allow_keys = 0 for a variable that takes one value (CUDA_DEVICE_MEMORY_LIMIT_<i>). */
static int vg_parse_limits_ex(const char *var, const char *value, uint64_t default_unit, int allow_keys,
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
				return vg_limits_fail(var, item, n, "missing size after the key", examples, out, err,
						      errlen);
		} else {
			key = NULL;
			val = item;
			vn = n;
		}
		if (vg_parse_limit_value(val, vn, default_unit, &e.limit, why, sizeof(why)))
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

int vg_parse_limits(const char *var, const char *value, uint64_t default_unit, struct vg_limits *out, char *err,
		    size_t errlen)
{
	const char *examples = strncmp(var, "CUDA_DEVICE_MEMORY_LIMIT", 24) == 0 ? VG_HAMI_EXAMPLES
										: VG_LIMITS_EXAMPLES;
	return vg_parse_limits_ex(var, value, default_unit, 1, examples, out, err, errlen);
}

/* ---- the options table ----
 * One X-macro row per variable: the public table (docs, --help) and the loader's handlers come from the same rows,
 * so a variable cannot be documented without being parsed or parsed without being documented. Enum rows are parsed
 * from their own "values" text ("off, error, ..."): the n-th word maps to enum value n. To add a variable: one row
 * here, one vg_load_* function below, and a decision for secure mode.
 * Secure mode (AT_SECURE: setuid/setgid, file capabilities): the environment is a less privileged user's, and
 * anything created on its say-so is created with the program's privileges. A row that names a file, a directory
 * or a file mode is VG_IGNORED(value) there: its own loader reads the safe value instead, so the safe values are
 * parsed like any other and the docs show them. Limits stay VG_READ: they only restrict the process. */
#define VG_READ NULL
#define VG_IGNORED(value) value
#define VG_LOG_VALUES "off, error, warn, info, debug"
#define VG_MANAGED_VALUES "count, ignore"
#define VG_FORMAT_VALUES "text, json"
#define VG_STREAM_VALUES "warn, sync, off"
#define VG_CONTROL_VALUES "on, off"
#define VG_COUNT_VALUES "device, allocations"
#define VG_SIGNAL_WORDS "off, USR1, USR2, HUP, WINCH, PWR, URG, RTMIN+N"
#define VG_REPORT_EXAMPLES "stderr, off, /tmp/vramguard-%p-%n.json"
#define VG_STR_(x) #x
#define VG_STR(x) VG_STR_(x)

#define VG_OPTIONS(X)                                                                                                 \
	X("NVIDIA_GPU_MEMORY_LIMITS", "limits", "unlimited",                                                          \
	  "`SIZE`, `N%`, `unlimited`, or a list `[KEY:]VALUE,...` with KEY an ordinal, `GPU-<uuid>` or `MIG-<uuid>`"  \
	  " (`=` works for `:`); bare number = MiB; units K, M, G, T (binary), B",                                   \
	  "Per-process VRAM quota per device; a value without a key applies to every device. Beats every other"      \
	  " limit variable: NVIDIA_GPU_MEMORY_LIMIT, then CUDA_DEVICE_MEMORY_LIMIT_<i>, then CUDA_DEVICE_MEMORY_LIMIT"  \
	  " (set to values that disagree: one info line names the one ignored)",                                      \
	  VG_READ, vg_load_limits)                                                                                    \
	X("NVIDIA_GPU_MEMORY_LIMIT", "size", "unlimited",                                                             \
	  "one `SIZE`, `N%` or `unlimited`, no device key; bare number = MiB; units as NVIDIA_GPU_MEMORY_LIMITS",     \
	  "Per-process VRAM quota for every device (the name NVIDIA's container toolkit gives one value); used where" \
	  " NVIDIA_GPU_MEMORY_LIMITS says nothing; beats CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_MEMORY_LIMIT",   \
	  VG_READ, vg_load_limit_one)                                                                                 \
	X("CUDA_DEVICE_MEMORY_LIMIT", "limits", "unlimited",                                                          \
	  "as NVIDIA_GPU_MEMORY_LIMITS, but a bare number is in bytes (as in HAMi-core)",                             \
	  "HAMi-core compatible quota for every device; used where NVIDIA_GPU_MEMORY_LIMITS,"                         \
	  " NVIDIA_GPU_MEMORY_LIMIT and CUDA_DEVICE_MEMORY_LIMIT_<i> say nothing",                                     \
	  VG_READ, vg_load_hami)                                                                                      \
	X("CUDA_DEVICE_MEMORY_LIMIT_<i>", "size", "unlimited",                                                        \
	  "one `SIZE`, `N%` or `unlimited`; bare number = bytes; i = 0..63",                                          \
	  "HAMi-core compatible quota for device ordinal i; beats CUDA_DEVICE_MEMORY_LIMIT, loses to"                 \
	  " NVIDIA_GPU_MEMORY_LIMITS and NVIDIA_GPU_MEMORY_LIMIT", VG_READ, vg_load_hami_indexed)                     \
	X("NVIDIA_GPU_MEMORY_REQUESTS", "limits", "(none)",                                                           \
	  "as NVIDIA_GPU_MEMORY_LIMITS; `unlimited` means no soft limit",                                             \
	  "Soft limit per device: usage above it denies nothing, but logs one warning and writes a report (reason"   \
	  " `soft-limit`), once per crossing (again only after usage fell below 90% of it); beats"                    \
	  " NVIDIA_GPU_MEMORY_REQUEST. One above the quota never triggers", VG_READ, vg_load_requests)               \
	X("NVIDIA_GPU_MEMORY_REQUEST", "size", "(none)",                                                              \
	  "as NVIDIA_GPU_MEMORY_LIMIT; `unlimited` means no soft limit",                                              \
	  "Soft limit for every device (see NVIDIA_GPU_MEMORY_REQUESTS); used where NVIDIA_GPU_MEMORY_REQUESTS says"  \
	  " nothing", VG_READ, vg_load_request_one)                                                                   \
	X("VRAMGUARD_COUNT", "enum", "device", VG_COUNT_VALUES,                                                       \
	  "What the quota counts: device = the device memory the process holds (its allocations, what its"           \
	  " stream-ordered pools keep reserved, graph memory, the driver's own memory for the process);"              \
	  " allocations = only the bytes the process asked for", VG_READ, vg_load_count)                             \
	X("VRAMGUARD_DEVICE_POLL", "integer", VG_STR(VG_DEVICE_POLL_DEFAULT),                                         \
	  VG_STR(VG_DEVICE_POLL_MIN) " to " VG_STR(VG_DEVICE_POLL_MAX) " (decimal, milliseconds)",                    \
	  "How often a background thread re-measures the driver's own memory for the process (NVML) when"            \
	  " VRAMGUARD_COUNT=device", VG_READ, vg_load_device_poll)                                                    \
	X("VRAMGUARD_DRIVER_HEADROOM", "size", "192M", "`SIZE` (bare number = MiB; units K, M, G, B), `0` for none", \
	  "When VRAMGUARD_COUNT=device: what the driver's own memory is charged beyond its first measurement, in"      \
	  " advance, so that what the driver takes later (kernels loaded at their first launch, which no call"       \
	  " shows) stays inside the quota; once it grows past that, what is measured is charged", VG_READ,           \
	  vg_load_driver_headroom)                                                                                    \
	X("VRAMGUARD_LOG", "enum", "warn", VG_LOG_VALUES, "Which messages vramguard writes to stderr",                \
	  VG_READ, vg_load_log)                                                                                       \
	X("VRAMGUARD_MANAGED", "enum", "count", VG_MANAGED_VALUES,                                                     \
	  "Whether cuMemAllocManaged allocations count against the quota", VG_READ, vg_load_managed)                  \
	X("VRAMGUARD_BACKTRACE", "integer", VG_STR(VG_BACKTRACE_DEFAULT),                                            \
	  "0 to " VG_STR(VG_BACKTRACE_MAX) " (decimal); 0 disables call-site capture",                              \
	  "Stack frames recorded per call site (allocations, stream creation) for reports",                           \
	  VG_READ, vg_load_backtrace)                                                                                 \
	X("VRAMGUARD_SIGNAL", "signal", "USR1",                                                                       \
	  VG_SIGNAL_WORDS "; `SIG` prefix optional, any case; N from 0 to SIGRTMAX-SIGRTMIN",                        \
	  "Signal that asks a running process for a report; only taken over if it still has its default disposition",\
	  VG_READ, vg_load_signal)                                                                                    \
	X("VRAMGUARD_REPORT", "path", "stderr",                                                                       \
	  "`stderr`, `off`, or a file path template: `%p` pid, `%n` report number, `%r` reason (exit, signal),"     \
	  " `%h` host name, `%%` a literal %; at most 1023 bytes",                                                    \
	  "Where reports go (at exit and on VRAMGUARD_SIGNAL); files are created exclusively, never overwritten,"    \
	  " symlinks not followed", VG_IGNORED("stderr"), vg_load_report)                                             \
	X("VRAMGUARD_REPORT_FORMAT", "enum", "text", VG_FORMAT_VALUES, "Format of reports",                           \
	  VG_READ, vg_load_report_format)                                                                             \
	X("VRAMGUARD_REPORT_MODE", "octal", "0600", "an octal file mode from 0 to 0777, e.g. 0600, 0640, 0644",        \
	  "Permissions of report files (before the umask); reports name the job's code and command line",           \
	  VG_IGNORED(""), vg_load_report_mode)                                                                        \
	X("VRAMGUARD_STREAM_CHECK", "enum", "warn", VG_STREAM_VALUES,                                                 \
	  "A stream destroyed with work still queued: warn (rate-limited, both call sites, listed in the report),"   \
	  " sync (wait for it to finish, and say so) or off", VG_READ, vg_load_stream_check)                          \
	X("VRAMGUARD_SHM_DIR", "path", VG_REGION_DIR, "an absolute directory path, at most 255 bytes",                \
	  "Where named shared regions and control segments live (a memory-backed file system: /dev/shm, or a"        \
	  " Kubernetes `emptyDir: {medium: Memory}`)", VG_IGNORED(""), vg_load_shm_dir)                               \
	X("VRAMGUARD_SHARED", "name", "(none)",                                                                       \
	  "a NAME (`A-Z a-z 0-9 . _ -`, at most 63, not starting with `.` or `proc.`: file"                        \
	  " VRAMGUARD_SHM_DIR/vramguard.NAME) or an absolute PATH",                                                  \
	  "Processes naming the same region share one VRAM budget per GPU, on top of their own quota; the tighter"   \
	  " of the two applies", VG_IGNORED(""), vg_load_shared)                                                      \
	X("VRAMGUARD_SHARED_LIMITS", "limits", "NVIDIA_GPU_MEMORY_LIMITS",                                           \
	  "as NVIDIA_GPU_MEMORY_LIMITS; ordinal keys mean the ordinal of the process that first used the GPU",       \
	  "The shared region's budget per GPU, used when this process creates the region (a region keeps the"       \
	  " budget it was made with; a different value is reported; `vramguard limit set --shared` changes it)",     \
	  VG_IGNORED(""), vg_load_shared_limits)                                                                      \
	X("VRAMGUARD_SHARED_MODE", "octal", "0600", "0600 (this user) or 0660 (this user and the file's group)",     \
	  "Permissions of a shared region this process creates; 0660 also lets it join a region of another user"     \
	  " whose group it is in (made with 0660 too)", VG_IGNORED(""), vg_load_shared_mode)                         \
	X("VRAMGUARD_SHARED_SLOTS", "integer", VG_STR(VG_SHARED_SLOTS_DEFAULT),                                       \
	  "1 to " VG_STR(VG_SHARED_SLOTS_MAX) " (decimal)",                                                           \
	  "Processes a shared region this process creates can hold at once (about 1 KiB of the file each)",      \
	  VG_IGNORED(""), vg_load_shared_slots)                                                                       \
	X("VRAMGUARD_CONTROL", "enum", "on", VG_CONTROL_VALUES,                                                       \
	  "on: a process outside any shared region makes a control segment in VRAMGUARD_SHM_DIR so that"            \
	  " `vramguard top` sees it and `vramguard limit set --pid` reaches it; off: none",                           \
	  VG_IGNORED("off"), vg_load_control)

#define VG_OPTION_ROW(name, type, dflt, values, doc, secure, load) { name, type, dflt, values, doc, secure },
const struct vg_option vg_options[] = { VG_OPTIONS(VG_OPTION_ROW) };
const size_t vg_options_count = sizeof(vg_options) / sizeof(vg_options[0]);

typedef const char *(*vg_getenv_fn)(const char *name);

/* Loaders: read their variable(s), fill cfg, or fill cfg->error and return -EINVAL. */
static int vg_load_limits(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_limits_ex(opt->name, get(opt->name), VG_MIB, 1, VG_LIMITS_EXAMPLES, &cfg->limits, cfg->error,
				  sizeof(cfg->error));
}

/* A single-value NVIDIA variable: the list parser without keys, its one value kept. */
static int vg_load_one(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get, const char *examples,
		       struct vg_limit *out)
{
	struct vg_limits one;

	if (vg_parse_limits_ex(opt->name, get(opt->name), VG_MIB, 0, examples, &one, cfg->error, sizeof(cfg->error)))
		return -EINVAL;
	*out = one.dflt;        /* VG_LIMIT_UNSET when empty */
	return 0;
}

static int vg_load_limit_one(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_one(cfg, opt, get, VG_LIMIT_ONE_EXAMPLES, &cfg->limit_one);
}

static int vg_load_requests(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_limits_ex(opt->name, get(opt->name), VG_MIB, 1, VG_LIMITS_EXAMPLES, &cfg->requests,
				  cfg->error, sizeof(cfg->error));
}

static int vg_load_request_one(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_one(cfg, opt, get, VG_REQUEST_ONE_EXAMPLES, &cfg->request_one);
}

static int vg_load_hami(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_limits_ex(opt->name, get(opt->name), 1, 1, VG_HAMI_EXAMPLES, &cfg->hami, cfg->error,
				  sizeof(cfg->error));
}

/* Stable names for the indexed HAMi variables: a limit's source points at one of these. */
#define VG_HN(i) "CUDA_DEVICE_MEMORY_LIMIT_" #i
#define VG_HN10(t) VG_HN(t##0), VG_HN(t##1), VG_HN(t##2), VG_HN(t##3), VG_HN(t##4), VG_HN(t##5), VG_HN(t##6),       \
		   VG_HN(t##7), VG_HN(t##8), VG_HN(t##9)
static const char *const vg_hami_names[VG_MAX_DEVICES] = {
	VG_HN(0), VG_HN(1), VG_HN(2), VG_HN(3), VG_HN(4), VG_HN(5), VG_HN(6), VG_HN(7), VG_HN(8), VG_HN(9),
	VG_HN10(1), VG_HN10(2), VG_HN10(3), VG_HN10(4), VG_HN10(5),
	VG_HN(60), VG_HN(61), VG_HN(62), VG_HN(63),
};
_Static_assert(VG_MAX_DEVICES == 64, "vg_hami_names lists CUDA_DEVICE_MEMORY_LIMIT_0..63");

static int vg_load_hami_indexed(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	int i, j;

	(void)opt;
	for (i = 0; i < VG_MAX_DEVICES; i++) {
		const char *var = vg_hami_names[i];
		struct vg_limits one;
		const char *v = get(var);

		if (!v)
			continue;
		if (vg_parse_limits_ex(var, v, 1, 0, VG_HAMI_INDEXED_EXAMPLES, &one, cfg->error, sizeof(cfg->error)))
			return -EINVAL;
		if (one.dflt.kind == VG_LIMIT_UNSET)
			continue; /* empty: unset */
		for (j = 0; j < cfg->hami.n; j++) {
			if (cfg->hami.e[j].ordinal == i) {
				struct vg_buf b;
				vg_buf_init(&b, cfg->error, sizeof(cfg->error));
				vg_buf_str(&b, "vramguard: error: invalid ");
				vg_buf_str(&b, var);
				vg_buf_char(&b, ' ');
				vg_buf_quote(&b, v, strlen(v));
				vg_buf_str(&b, ": device ");
				vg_buf_u64(&b, (uint64_t)i);
				vg_buf_str(&b, " is also set in CUDA_DEVICE_MEMORY_LIMIT (expected e.g. "
					       VG_HAMI_INDEXED_EXAMPLES ")");
				return -EINVAL;
			}
		}
		if (cfg->hami.n >= VG_MAX_LIMIT_ENTRIES)
			return -EINVAL; /* unreachable: at most 64 distinct ordinals */
		cfg->hami.e[cfg->hami.n].ordinal = i;
		cfg->hami.e[cfg->hami.n].uuid[0] = '\0';
		cfg->hami.e[cfg->hami.n].limit = one.dflt;
		cfg->hami.n++;
	}
	return 0;
}

/* The index of v among the comma-separated words of values (case-insensitive), or -1. */
static int vg_enum_index(const char *values, const char *v, size_t vn)
{
	const char *p = values;
	int idx = 0;

	for (;;) {
		const char *w = p;
		size_t wn, i;

		while (*p && *p != ',')
			p++;
		wn = (size_t)(p - w);
		vg_trim(&w, &wn);
		if (wn == vn) {
			for (i = 0; i < wn && vg_lower(w[i]) == vg_lower(v[i]); i++)
				;
			if (i == wn)
				return idx;
		}
		if (!*p)
			return -1;
		p++;
		idx++;
	}
}

/* An enum variable: the n-th word of the row's "values" text becomes *dst = n. */
static int vg_load_enum(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get, int *dst)
{
	const char *v = get(opt->name), *t = v;
	size_t n;
	int idx;
	struct vg_buf b;

	if (!v)
		return 0;
	n = strlen(v);
	vg_trim(&t, &n);
	if (n == 0)
		return 0; /* empty: default */
	idx = vg_enum_index(opt->values, t, n);
	if (idx >= 0) {
		*dst = idx;
		return 0;
	}
	vg_buf_init(&b, cfg->error, sizeof(cfg->error));
	vg_buf_str(&b, "vramguard: error: invalid ");
	vg_buf_str(&b, opt->name);
	vg_buf_char(&b, ' ');
	vg_buf_quote(&b, v, strlen(v));
	vg_buf_str(&b, ": expected one of ");
	vg_buf_str(&b, opt->values);
	return -EINVAL;
}

static int vg_load_log(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->log_level);
}

static int vg_load_managed(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->managed);
}

static int vg_load_report_format(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->report_format);
}

static int vg_load_stream_check(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->stream_check);
}

static int vg_load_count(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	int v = (int)cfg->count;

	if (vg_load_enum(cfg, opt, get, &v))
		return -EINVAL;
	cfg->count = (enum vg_count)v;
	return 0;
}

/* "vramguard: error: invalid NAME 'value': " -- the common head of a loader's message; the caller appends the rest. */
static void vg_err_head(struct vg_buf *b, struct vg_config *cfg, const char *name, const char *v)
{
	vg_buf_init(b, cfg->error, sizeof(cfg->error));
	vg_buf_str(b, "vramguard: error: invalid ");
	vg_buf_str(b, name);
	vg_buf_char(b, ' ');
	vg_buf_quote(b, v, strlen(v));
	vg_buf_str(b, ": ");
}

/* Read a variable; *t, *n get its trimmed text. Returns 0 when unset, empty or all blank. */
static int vg_get_trimmed(const struct vg_option *opt, vg_getenv_fn get, const char **v, const char **t, size_t *n)
{
	*v = get(opt->name);
	if (!*v)
		return 0;
	*t = *v;
	*n = strlen(*v);
	vg_trim(t, n);
	return *n != 0;
}

static int vg_load_backtrace(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n, i;
	int depth = 0;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	for (i = 0; i < n && vg_isdigit(t[i]); i++) {
		depth = depth * 10 + (t[i] - '0');
		if (depth > VG_BACKTRACE_MAX)
			break;
	}
	if (i == n) {
		cfg->backtrace_depth = depth;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected an integer from 0 to " VG_STR(VG_BACKTRACE_MAX));
	return -EINVAL;
}

static int vg_load_device_poll(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n, i;
	unsigned long ms = 0;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	for (i = 0; i < n && vg_isdigit(t[i]); i++) {
		ms = ms * 10 + (unsigned long)(t[i] - '0');
		if (ms > VG_DEVICE_POLL_MAX)
			break;
	}
	if (i == n && ms >= VG_DEVICE_POLL_MIN) {
		cfg->device_poll_ms = (unsigned)ms;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected milliseconds, an integer from " VG_STR(VG_DEVICE_POLL_MIN) " to "
		       VG_STR(VG_DEVICE_POLL_MAX));
	return -EINVAL;
}

static int vg_load_driver_headroom(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v = get(opt->name);
	cfg->driver_headroom = VG_DRIVER_HEADROOM_DEFAULT;
	if (!v)
		return 0;
	char err[VG_ERR_MAX];
	uint64_t bytes = 0;
	if (strcmp(v, "0") == 0 || vg_parse_size(v, VG_MIB, &bytes, err, sizeof(err)) == 0) {
		cfg->driver_headroom = bytes;
		return 0;
	}
	struct vg_buf b;
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected a size such as 192M, 1G or 0");
	return -EINVAL;
}

static int vg_load_report_mode(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n, i;
	unsigned mode = 0;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	for (i = 0; i < n && t[i] >= '0' && t[i] <= '7' && i < 4; i++)
		mode = mode * 8 + (unsigned)(t[i] - '0');
	if (i == n && n >= 1 && mode <= 0777) {
		cfg->report_mode = mode;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected an octal file mode from 0 to 0777 (e.g. 0600, 0640, 0644)");
	return -EINVAL;
}

/* The report signals by name; the words must match VG_SIGNAL_WORDS (RTMIN+N is handled apart). */
static const struct {
	const char *name;
	int signo;
} vg_signals[] = {
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
	{ "WINCH", SIGWINCH }, { "PWR", SIGPWR }, { "URG", SIGURG },
};

static int vg_load_signal(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n, i;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_eq_ci(t, n, "off")) {
		cfg->signal = 0;
		memcpy(cfg->signal_name, "off", 4);
		return 0;
	}
	if (n > 3 && vg_eq_ci(t, 3, "sig")) {
		t += 3;
		n -= 3;
	}
	for (i = 0; i < sizeof(vg_signals) / sizeof(vg_signals[0]); i++) {
		if (vg_eq_ci(t, n, vg_signals[i].name)) {
			cfg->signal = vg_signals[i].signo;
			vg_buf_init(&b, cfg->signal_name, sizeof(cfg->signal_name));
			vg_buf_str(&b, "SIG");
			vg_buf_str(&b, vg_signals[i].name);
			return 0;
		}
	}
	if (n > 6 && vg_eq_ci(t, 6, "rtmin+")) {
		int max = SIGRTMAX - SIGRTMIN, k = 0; /* glibc decides SIGRTMIN at run time */

		for (i = 6; i < n && vg_isdigit(t[i]); i++) {
			k = k * 10 + (t[i] - '0');
			if (k > max)
				break;
		}
		if (i == n) {
			cfg->signal = SIGRTMIN + k;
			vg_buf_init(&b, cfg->signal_name, sizeof(cfg->signal_name));
			vg_buf_str(&b, "SIGRTMIN+");
			vg_buf_u64(&b, (uint64_t)k);
			return 0;
		}
		for (i = 6; i < n && vg_isdigit(t[i]); i++)
			;
		if (i == n) { /* a number, only too large */
			vg_err_head(&b, cfg, opt->name, v);
			vg_buf_str(&b, "expected RTMIN+N with N from 0 to ");
			vg_buf_u64(&b, (uint64_t)(max < 0 ? 0 : max));
			return -EINVAL;
		}
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected one of " VG_SIGNAL_WORDS);
	return -EINVAL;
}

/* Length of the specifier after a '%' at t[i] as quoted in a message: one byte, or a whole UTF-8 sequence. */
static size_t vg_spec_len(const char *t, size_t i, size_t n)
{
	size_t k = i + 1;

	if ((unsigned char)t[i] >= 0x80)
		while (k < n && k < i + 4 && ((unsigned char)t[k] & 0xc0) == 0x80)
			k++;
	return k - i;
}

/* NULL if the template is valid, else the reason; *bad and *badn get the offending specifier ("%q"). */
static const char *vg_report_template_check(const char *t, size_t n, const char **bad, size_t *badn)
{
	size_t i;

	*bad = NULL;
	*badn = 0;
	for (i = 0; i < n; i++) {
		if (t[i] != '%')
			continue;
		if (i + 1 == n)
			return "lone '%' at the end";
		switch (t[i + 1]) {
		case 'p': case 'n': case 'r': case 'h': case '%':
			i++;
			continue;
		}
		*bad = t + i;
		*badn = 1 + vg_spec_len(t, i + 1, n);
		return "unknown specifier";
	}
	return NULL;
}

/* A path whose last component is empty, "." or "..": it can only name a directory. */
static int vg_names_dir(const char *t, size_t n)
{
	size_t i = n;

	while (i > 0 && t[i - 1] != '/')
		i--;
	return i == n || vg_eq_ci(t + i, n - i, ".") || vg_eq_ci(t + i, n - i, "..");
}

static int vg_load_report(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t, *reason, *bad;
	size_t n, badn;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_eq_ci(t, n, "stderr")) {
		cfg->report_dest = VG_REPORT_STDERR;
		cfg->report_path[0] = '\0';
		return 0;
	}
	if (vg_eq_ci(t, n, "off")) {
		cfg->report_dest = VG_REPORT_OFF;
		cfg->report_path[0] = '\0';
		return 0;
	}
	reason = vg_report_template_check(t, n, &bad, &badn);
	if (!reason && vg_names_dir(t, n))
		reason = "names a directory, not a file";
	if (!reason && n >= sizeof(cfg->report_path))
		reason = "path template too long (at most 1023 bytes)";
	if (!reason) {
		memcpy(cfg->report_path, t, n);
		cfg->report_path[n] = '\0';
		cfg->report_dest = VG_REPORT_PATH;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, reason);
	if (bad) {
		vg_buf_char(&b, ' ');
		vg_buf_quote(&b, bad, badn);
	}
	vg_buf_str(&b, " (expected e.g. " VG_REPORT_EXAMPLES "; specifiers %p %n %r %h %%)");
	return -EINVAL;
}
_Static_assert(VG_REPORT_PATH_MAX == 1024, "the message says at most 1023 bytes");

/* ---- shared region names (declared in accounting/region.h; here so that config needs no region code) ---- */

int vg_region_path(const char *dir, const char *v, char *out, size_t outlen, char *err, size_t errlen)
{
	struct vg_buf e, o;
	size_t n, i;

	vg_buf_init(&e, err, errlen);
	if (!dir || !*dir)
		dir = VG_REGION_DIR;
	if (!v || !*v) {
		vg_buf_str(&e, "empty region name");
		return -EINVAL;
	}
	n = strlen(v);
	if (v[0] == '/') {
		if (n >= outlen || n >= VG_SHARED_PATH_MAX) {
			vg_buf_str(&e, "region path too long (at most 511 bytes)");
			return -EINVAL;
		}
		if (v[n - 1] == '/') {
			vg_buf_str(&e, "region path ");
			vg_buf_quote(&e, v, n);
			vg_buf_str(&e, " names a directory (expected a file in it, e.g. DIR/job)");
			return -EINVAL;
		}
		memcpy(out, v, n + 1);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!(vg_isalpha(v[i]) || vg_isdigit(v[i]) || v[i] == '.' || v[i] == '_' || v[i] == '-'))
			break;
	if (i < n || n >= VG_REGION_NAME_MAX || v[0] == '.' || strncmp(v, "proc.", 5) == 0) {
		vg_buf_str(&e, "a region is a NAME of at most 63 characters from A-Z a-z 0-9 . _ - (not starting with '.' "
			       "or 'proc.') or an absolute path");
		return -EINVAL;
	}
	if (strlen(dir) + 1 + strlen(VG_REGION_PREFIX) + n >= outlen) {
		vg_buf_str(&e, "region path too long");
		return -EINVAL;
	}
	vg_buf_init(&o, out, outlen);
	vg_buf_str(&o, dir);
	vg_buf_str(&o, "/" VG_REGION_PREFIX);
	vg_buf_str(&o, v);
	return 0;
}

/* ---- shared regions ---- */

static int vg_load_shm_dir(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	while (n > 1 && t[n - 1] == '/')
		n--;
	if (t[0] == '/' && n < sizeof(cfg->shm_dir) && !memchr(t, '\0', n)) {
		memcpy(cfg->shm_dir, t, n);
		cfg->shm_dir[n] = '\0';
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, t[0] != '/' ? "expected an absolute directory path (e.g. /dev/shm)"
				   : "path too long (at most 255 bytes)");
	return -EINVAL;
}

static int vg_load_shared(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	struct vg_buf b;
	char name[VG_SHARED_PATH_MAX], why[200];

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (n >= sizeof(name)) {
		vg_err_head(&b, cfg, opt->name, v);
		vg_buf_str(&b, "too long");
		return -EINVAL;
	}
	memcpy(name, t, n);
	name[n] = '\0';
	if (vg_region_path(cfg->shm_dir, name, cfg->shared_path, sizeof(cfg->shared_path), why, sizeof(why)) == 0 &&
	    n < sizeof(cfg->shared_name)) {
		memcpy(cfg->shared_name, name, n + 1);
		return 0;
	}
	cfg->shared_path[0] = '\0';
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, why);
	return -EINVAL;
}

/* The region's budget stays text (it is stored in the region and resolved per GPU there); parse it here only to
 * refuse a bad one early with the usual message. Without VRAMGUARD_SHARED_LIMITS the budget is the text of
 * NVIDIA_GPU_MEMORY_LIMITS (already checked: it loads first), and only where there is a region to give it to: a
 * process without one keeps any NVIDIA_GPU_MEMORY_LIMITS it could use before, however long. */
static int vg_load_shared_limits(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	static const struct vg_option fallback = { .name = "NVIDIA_GPU_MEMORY_LIMITS" };
	const struct vg_option *from = opt;
	const char *v, *t;
	size_t n;
	struct vg_limits l;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n)) {
		from = &fallback;
		if (!cfg->shared_path[0] || !vg_get_trimmed(from, get, &v, &t, &n))
			return 0;
	}
	if (n >= sizeof(cfg->shared_spec)) {
		vg_err_head(&b, cfg, from->name, v);
		vg_buf_str(&b, "too long for a shared region's budget (at most 255 bytes)");
		return -EINVAL;
	}
	if (from == opt &&
	    vg_parse_limits_ex(opt->name, v, VG_MIB, 1, VG_LIMITS_EXAMPLES, &l, cfg->error, sizeof(cfg->error)))
		return -EINVAL;
	memcpy(cfg->shared_spec, t, n);
	cfg->shared_spec[n] = '\0';
	cfg->shared_spec_source = from->name;
	return 0;
}

static int vg_load_shared_mode(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_eq_ci(t, n, "0600") || vg_eq_ci(t, n, "600")) {
		cfg->shared_mode = 0600;
		return 0;
	}
	if (vg_eq_ci(t, n, "0660") || vg_eq_ci(t, n, "660")) {
		cfg->shared_mode = 0660;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected 0600 (this user only) or 0660 (this user and the file's group)");
	return -EINVAL;
}

static int vg_load_shared_slots(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n, i;
	unsigned long slots = 0;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	for (i = 0; i < n && vg_isdigit(t[i]); i++) {
		slots = slots * 10 + (unsigned long)(t[i] - '0');
		if (slots > VG_SHARED_SLOTS_MAX)
			break;
	}
	if (i == n && slots >= 1) {
		cfg->shared_slots = (unsigned)slots;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected an integer from 1 to " VG_STR(VG_SHARED_SLOTS_MAX));
	return -EINVAL;
}

static int vg_load_control(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->control);
}

_Static_assert(VG_SPEC_MAX == VG_REGION_SPEC_MAX, "a region stores the spec text");
_Static_assert(VG_SHARED_SLOTS_DEFAULT == VG_REGION_SLOTS_DEFAULT && VG_SHARED_SLOTS_MAX == VG_REGION_SLOTS_MAX,
	       "VRAMGUARD_SHARED_SLOTS is a region's slot count");
_Static_assert(VG_SHARED_PATH_MAX <= sizeof(((struct vg_region *)0)->path), "a region handle holds the path");

typedef int (*vg_load_fn)(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
#define VG_OPTION_LOADER(name, type, dflt, values, doc, secure, load) load,
static const vg_load_fn vg_option_loaders[] = { VG_OPTIONS(VG_OPTION_LOADER) };

/* The enum word lists above must match the C enums the rest of the tree switches on. */
_Static_assert(VG_LOG_OFF == 0 && VG_LOG_ERROR == 1 && VG_LOG_WARN == 2 && VG_LOG_INFO == 3 && VG_LOG_DEBUG == 4,
	       "VG_LOG_VALUES order");
_Static_assert(VG_MANAGED_COUNT == 0 && VG_MANAGED_IGNORE == 1, "VG_MANAGED_VALUES order");
_Static_assert(VG_FORMAT_TEXT == 0 && VG_FORMAT_JSON == 1, "VG_FORMAT_VALUES order");
_Static_assert(VG_STREAM_WARN == 0 && VG_STREAM_SYNC == 1 && VG_STREAM_OFF == 2, "VG_STREAM_VALUES order");
_Static_assert(VG_CONTROL_ON == 0 && VG_CONTROL_OFF == 1, "VG_CONTROL_VALUES order");
_Static_assert(VG_COUNT_DEVICE == 0 && VG_COUNT_ALLOCATIONS == 1, "VG_COUNT_VALUES order");
_Static_assert(VG_DEVICE_POLL_MIN <= VG_DEVICE_POLL_DEFAULT && VG_DEVICE_POLL_DEFAULT <= VG_DEVICE_POLL_MAX,
	       "VG_DEVICE_POLL_DEFAULT range");
_Static_assert(VG_BACKTRACE_DEFAULT >= 0 && VG_BACKTRACE_DEFAULT <= VG_BACKTRACE_MAX, "VG_BACKTRACE_DEFAULT range");

static const char *vg_libc_getenv(const char *name)
{
	return getenv(name);
}

/* The environment of a secure-mode process as the rows it ignores see it: each reads its own safe value from the
 * table, and nothing else (a loader that looks at another variable, as VRAMGUARD_SHARED_LIMITS does, finds it
 * unset). */
static const char *vg_secure_getenv(const char *name)
{
	size_t i;

	for (i = 0; i < vg_options_count; i++)
		if (vg_options[i].secure && strcmp(vg_options[i].name, name) == 0)
			return vg_options[i].secure;
	return NULL;
}

_Static_assert(sizeof(vg_options) / sizeof(vg_options[0]) <= 64, "vg_config.secure_ignored has one bit per row");

/* Every field's default; the table's "Default" column says the same in words. In secure mode, the rows it ignores
 * hold their safe values from the start (the table's "Secure mode" column). */
static void vg_config_defaults(struct vg_config *cfg, int secure)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = VG_LOG_WARN;
	cfg->managed = VG_MANAGED_COUNT;
	cfg->backtrace_depth = VG_BACKTRACE_DEFAULT;
	cfg->signal = SIGUSR1;
	memcpy(cfg->signal_name, "SIGUSR1", sizeof("SIGUSR1"));
	cfg->report_dest = VG_REPORT_STDERR;
	cfg->report_format = VG_FORMAT_TEXT;
	cfg->report_mode = 0600;
	cfg->stream_check = VG_STREAM_WARN;
	memcpy(cfg->shm_dir, VG_REGION_DIR, sizeof(VG_REGION_DIR));
	cfg->shared_mode = 0600;
	cfg->shared_slots = VG_SHARED_SLOTS_DEFAULT;
	cfg->control = VG_CONTROL_ON;
	cfg->count = VG_COUNT_DEVICE;
	cfg->device_poll_ms = VG_DEVICE_POLL_DEFAULT;
	cfg->secure = secure != 0;
	for (i = 0; cfg->secure && i < vg_options_count; i++)
		if (vg_options[i].secure) /* valid values (test_config): this cannot fail */
			(void)vg_option_loaders[i](cfg, &vg_options[i], vg_secure_getenv);
}

/* ---- variables of one precedence chain that disagree ----
 * The note is worked out once, at load, from the parsed values (config prints nothing; the library logs it). A
 * layer is one variable's values; each CUDA_DEVICE_MEMORY_LIMIT_<i> is a layer of its own (they share cfg->hami
 * with CUDA_DEVICE_MEMORY_LIMIT, told apart by each value's source). A lower layer is ignored where a higher one
 * gives a device it names, or a device its default covers, another value. Devices are not known here, so an
 * ordinal and a UUID key never meet; a percentage and a size always differ. */

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

static void vg_config_note(struct vg_config *cfg, vg_getenv_fn get)
{
	struct vg_layer limits[3 + VG_MAX_DEVICES], requests[2];
	struct vg_buf b;
	int n = 0, clauses = 0;

	limits[n++] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_LIMITS", &cfg->limits, NULL };
	limits[n++] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_LIMIT", NULL, &cfg->limit_one };
	for (int i = 0; i < VG_MAX_DEVICES; i++)
		limits[n++] = (struct vg_layer){ vg_hami_names[i], &cfg->hami, NULL };
	limits[n++] = (struct vg_layer){ "CUDA_DEVICE_MEMORY_LIMIT", &cfg->hami, NULL };
	requests[0] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_REQUESTS", &cfg->requests, NULL };
	requests[1] = (struct vg_layer){ "NVIDIA_GPU_MEMORY_REQUEST", NULL, &cfg->request_one };
	vg_buf_init(&b, cfg->note, sizeof(cfg->note));
	vg_note_chain(&b, limits, n, get, &clauses);
	vg_note_chain(&b, requests, 2, get, &clauses);
}

int vg_config_load(struct vg_config *cfg, const char *(*getenv_fn)(const char *name), int secure)
{
	size_t i;

	vg_config_defaults(cfg, secure);
	cfg->valid = 1;
	if (!getenv_fn)
		getenv_fn = vg_libc_getenv;
	/* Secure mode: the rows it ignores are not parsed (a value that would be invalid cannot fail the process
	 * either); only whether each was set is kept, for the one line the library prints, before anything can fail. */
	for (i = 0; secure && i < vg_options_count; i++) {
		const char *v, *t;
		size_t n;

		if (vg_options[i].secure && vg_get_trimmed(&vg_options[i], getenv_fn, &v, &t, &n))
			cfg->secure_ignored |= (uint64_t)1 << i;
	}
	/* Variables are read by name, never by walking environ: unknown VRAMGUARD_* names are simply not looked at,
	 * so a newer launcher's variables do not break an older library. */
	for (i = 0; i < vg_options_count; i++) {
		if (secure && vg_options[i].secure)
			continue;
		if (vg_option_loaders[i](cfg, &vg_options[i], getenv_fn)) {
			char msg[VG_ERR_MAX];
			uint64_t ignored = cfg->secure_ignored;

			memcpy(msg, cfg->error, sizeof(msg));
			msg[VG_ERR_MAX - 1] = '\0';
			vg_config_defaults(cfg, secure); /* fail closed: no half-parsed limits */
			cfg->valid = 0;
			memcpy(cfg->error, msg, sizeof(msg));
			cfg->secure_ignored = ignored;
			return -EINVAL;
		}
	}
	vg_config_note(cfg, getenv_fn);
	return 0;
}

int vg_config_secure_note(const struct vg_config *cfg, char *out, size_t len)
{
	struct vg_buf b;
	size_t i, named = 0;

	vg_buf_init(&b, out, len);
	if (!cfg->secure)
		return VG_LOG_OFF;
	vg_buf_str(&b, "this program runs with elevated privileges (setuid/setgid or capabilities): ");
	for (i = 0; i < vg_options_count; i++) {
		if (!(cfg->secure_ignored >> i & 1))
			continue;
		if (named++)
			vg_buf_str(&b, ", ");
		vg_buf_str(&b, vg_options[i].name);
	}
	if (!named) {
		/* Nothing the user asked for was dropped; the one difference to see is that `vramguard top` and
		 * `vramguard limit set --pid` do not reach this process. */
		vg_buf_str(&b, "no control segment");
		return VG_LOG_INFO;
	}
	vg_buf_str(&b, " ignored: no shared region, no control segment, reports go to stderr");
	return VG_LOG_WARN;
}

/* ---- resolving a device's limit ---- */

/* A percentage of a device whose total is unknown (0) cannot be resolved: it is treated as unlimited rather than
 * as a zero quota, because the interposer only passes 0 when cuDeviceTotalMem itself failed, and then every
 * allocation is going to fail in the driver anyway. The source is still reported so logs can say why. */
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

/* ---- report file names ---- */

/* Appends to out[*len..outlen) without ever writing past the end; *len may pass outlen, meaning "did not fit". */
static void vg_path_put(char *out, size_t outlen, size_t *len, const char *s, size_t n, int sanitize)
{
	size_t i;

	for (i = 0; i < n; i++, (*len)++)
		if (*len < outlen)
			out[*len] = (sanitize && s[i] == '/') ? '_' : s[i];
}

int vg_report_path_expand(const char *tmpl, int pid, uint64_t seq, const char *reason, const char *host, char *out,
			  size_t outlen)
{
	const char *bad;
	size_t len = 0, badn, i, n;
	char num[24];

	if (!tmpl || !out)
		return -EINVAL;
	n = strlen(tmpl);
	if (vg_report_template_check(tmpl, n, &bad, &badn))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct vg_buf b;

		if (tmpl[i] != '%') {
			vg_path_put(out, outlen, &len, tmpl + i, 1, 0);
			continue;
		}
		switch (tmpl[++i]) {
		case 'p':
			vg_buf_init(&b, num, sizeof(num));
			if (pid < 0)
				vg_buf_char(&b, '-');
			vg_buf_u64(&b, pid < 0 ? (uint64_t)0 - (uint64_t)(int64_t)pid : (uint64_t)pid);
			vg_path_put(out, outlen, &len, num, b.len, 0);
			break;
		case 'n':
			vg_buf_init(&b, num, sizeof(num));
			vg_buf_u64(&b, seq);
			vg_path_put(out, outlen, &len, num, b.len, 0);
			break;
		case 'r':
			if (reason)
				vg_path_put(out, outlen, &len, reason, strlen(reason), 1);
			break;
		case 'h':
			if (host)
				vg_path_put(out, outlen, &len, host, strlen(host), 1);
			break;
		default: /* '%' */
			vg_path_put(out, outlen, &len, "%", 1, 0);
			break;
		}
	}
	if (len >= outlen)
		return -ENAMETOOLONG;
	out[len] = '\0';
	return 0;
}

/* ---- docs ---- */

static void vg_md_cell(FILE *f, const char *s)
{
	fputc(' ', f);
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputs(" |", f);
}

void vg_options_write_markdown(FILE *f)
{
	size_t i;

	fputs("| Variable | Type | Default | Values | Description | Secure mode |\n", f);
	fputs("|---|---|---|---|---|---|\n", f);
	for (i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];

		fprintf(f, "| `%s` |", o->name);
		vg_md_cell(f, o->type);
		vg_md_cell(f, o->dflt);
		vg_md_cell(f, o->values);
		vg_md_cell(f, o->doc);
		if (!o->secure)
			fputs(" read |", f);
		else if (!o->secure[0])
			fputs(" ignored |", f);
		else
			fprintf(f, " ignored: `%s` |", o->secure);
		fputc('\n', f);
	}
}

/* ---- people-readable sizes ---- */

const char *vg_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const names[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	struct vg_buf b;
	uint64_t unit = VG_KIB, rem;
	int u = 0, d;

	vg_buf_init(&b, buf, len);
	if (bytes < VG_KIB) {
		vg_buf_u64(&b, bytes);
		vg_buf_str(&b, " B");
		return buf;
	}
	while (u < 5 && bytes / unit >= 1024) {
		unit <<= 10;
		u++;
	}
	/* two decimals, rounded down (never overstate a quota); unit <= 2^60 so rem * 10 cannot overflow */
	rem = bytes % unit;
	vg_buf_u64(&b, bytes / unit);
	vg_buf_char(&b, '.');
	for (d = 0; d < 2; d++) {
		vg_buf_char(&b, (char)('0' + rem * 10 / unit));
		rem = rem * 10 % unit;
	}
	vg_buf_char(&b, ' ');
	vg_buf_str(&b, names[u]);
	return buf;
}
