/* config/'s own helpers, shared by its files and by nothing else: the bounded appender every message is built with,
 * locale-independent character tests, and the pieces one parser lends another. No heap, no stdio: the library calls
 * these on its hot paths (vg_format_bytes, vg_quote). */
#ifndef VG_CONFIG_INTERNAL_H
#define VG_CONFIG_INTERNAL_H

#include "config/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VG_LIMITS_EXAMPLES "4096, 4G, 50%, 0:4G,1:2G"
/* The single-value NVIDIA names: a list written there is a common slip, so the example names the list variable. */
#define VG_LIMIT_ONE_EXAMPLES "4096, 4G, 50%, unlimited; per device: NVIDIA_GPU_MEMORY_LIMITS=0:4G,1:2G"
#define VG_WARN_AT_EXAMPLES "80%, 3G, 0:80%,1:6G"
#define VG_REQUEST_ONE_EXAMPLES "4096, 4G, 50%; per device: NVIDIA_GPU_MEMORY_REQUESTS=0:4G,1:2G"
#define VG_HAMI_EXAMPLES "4g, 4096m, 0:4g"
#define VG_HAMI_INDEXED_EXAMPLES "4g, 4096m, 50%"

#define VG_KIB ((uint64_t)1 << 10)
#define VG_MIB ((uint64_t)1 << 20)

#define VG_STR_(x) #x
#define VG_STR(x) VG_STR_(x)

/* ---- a bounded string appender (always NUL-terminated, silently truncates) ---- */

struct vg_buf {
	char *p;
	size_t len, cap;
};

static inline void vg_buf_init(struct vg_buf *b, char *p, size_t cap)
{
	b->p = p;
	b->len = 0;
	b->cap = cap;
	if (cap)
		p[0] = '\0';
}

static inline void vg_buf_char(struct vg_buf *b, char c)
{
	if (b->cap && b->len + 1 < b->cap) {
		b->p[b->len++] = c;
		b->p[b->len] = '\0';
	}
}

static inline void vg_buf_str(struct vg_buf *b, const char *s)
{
	while (*s)
		vg_buf_char(b, *s++);
}

/* v in decimal. */
void vg_buf_u64(struct vg_buf *b, uint64_t v);

/* User text s[0..n), quoted on one line as vg_quote does it (config.h). */
void vg_buf_quote(struct vg_buf *b, const char *s, size_t n);

/* ---- small character helpers (locale-independent) ---- */

static inline int vg_isdigit(char c) { return c >= '0' && c <= '9'; }
static inline int vg_isalpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline int vg_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static inline int vg_isxdigit(char c) { return vg_isdigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static inline char vg_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

/* t[0..n) is all decimal digits and its value is within [lo, hi]: *out = the value, true. */
static inline bool vg_uint_in(const char *t, size_t n, unsigned long lo, unsigned long hi, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;
	for (i = 0; i < n && vg_isdigit(t[i]); i++) {
		v = v * 10 + (unsigned long)(t[i] - '0');
		if (v > hi)
			return false;
	}
	if (i < n || n == 0 || v < lo)
		return false;
	*out = v;
	return true;
}

/* Case-insensitive compare of s[0..n) with the NUL-terminated word w. */
static inline int vg_eq_ci(const char *s, size_t n, const char *w)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!w[i] || vg_lower(s[i]) != vg_lower(w[i]))
			return 0;
	return w[n] == '\0';
}

static inline int vg_streq_ci(const char *a, const char *b)
{
	while (*a && vg_lower(*a) == vg_lower(*b)) {
		a++;
		b++;
	}
	return vg_lower(*a) == vg_lower(*b);
}

static inline void vg_trim(const char **s, size_t *n)
{
	while (*n && vg_isspace(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && vg_isspace((*s)[*n - 1]))
		(*n)--;
}

/* ---- what one part lends another ---- */

/* size.c: floor(x * ppm / 10^6) for ppm <= 10^6, without overflow. */
uint64_t vg_mul_ppm(uint64_t x, uint64_t ppm);
/* size.c: one limit value at s[0..n): a size, a percentage or "unlimited". 0, or -EINVAL with the reason in err. */
int vg_parse_limit_value(const char *s, size_t n, uint64_t default_unit, struct vg_limit *l, char *err,
			 size_t errlen);

/* One value of a list: s[0..n) into *l (its source left to the caller), or -EINVAL with the reason in err. */
typedef int (*vg_value_fn)(const char *s, size_t n, uint64_t unit, struct vg_limit *l, char *err, size_t errlen);
/* What a list's values are: their parser, its unit argument, and the reason for "0:" with nothing after it. */
struct vg_list_kind {
	vg_value_fn parse;
	uint64_t unit;
	const char *missing;            /* "missing size after the key" */
};
/* limits.c: the list parser (keys, one default, duplicates, errors that quote the item) with values of kind k. */
int vg_parse_list(const char *var, const char *value, const struct vg_list_kind *k, int allow_keys,
		  const char *examples, struct vg_limits *out, char *err, size_t errlen);

/* limits.c: the list parser behind vg_parse_limits. allow_keys = 0 for a variable that takes one value
 * (CUDA_DEVICE_MEMORY_LIMIT_<i>, NVIDIA_GPU_MEMORY_LIMIT); examples go into the message. */
int vg_parse_limits_ex(const char *var, const char *value, uint64_t default_unit, int allow_keys,
		       const char *examples, struct vg_limits *out, char *err, size_t errlen);

/* options.c: the names CUDA_DEVICE_MEMORY_LIMIT_0..63, stable (a limit's source points at one of them). */
extern const char *const vg_hami_names[VG_MAX_DEVICES];

typedef const char *(*vg_getenv_fn)(const char *name);
/* A row's loader: reads its variable(s) through get, fills cfg, or fills cfg->error and returns -EINVAL. */
typedef int (*vg_load_fn)(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);

/* row.c: read a row's variable; *t, *n get its trimmed text. Returns 0 when unset, empty or all blank. */
int vg_get_trimmed(const struct vg_option *opt, vg_getenv_fn get, const char **v, const char **t, size_t *n);
/* row.c: "vramguard: error: invalid NAME 'value': " into cfg->error; the caller appends the rest. */
void vg_err_head(struct vg_buf *b, struct vg_config *cfg, const char *name, const char *v);
/* row.c: the index of v[0..vn) among the comma-separated words of values (case-insensitive), or -1. */
int vg_enum_index(const char *values, const char *v, size_t vn);
/* row.c: an enum row: the n-th word of the row's values text becomes *dst = n. */
int vg_load_enum(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get, int *dst);
/* row.c: an integer row, within its range (VG_RANGE), into the vg_config member the range names. */
int vg_load_integer(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);

/* load_files.c: the loaders of the rows that name files, directories and file modes (ignored in secure mode). */
int vg_load_report(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
int vg_load_report_mode(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
int vg_load_shm_dir(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
int vg_load_shared(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
int vg_load_shared_limits(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
int vg_load_shared_mode(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);

/* compute.c: the compute share rows (VRAMGUARD_COMPUTE_LIMIT, CUDA_DEVICE_SM_LIMIT, CUDA_DEVICE_SM_LIMIT_<i>), and
 * the names CUDA_DEVICE_SM_LIMIT_0..63, stable (a share's source points at one of them). */
#define VG_COMPUTE_EXAMPLES "50%, 0:30%,1:70%, GPU-<uuid>:40%, unlimited"
extern const char *const vg_sm_names[VG_MAX_DEVICES];
int vg_load_compute(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
int vg_load_sm(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);
int vg_load_sm_indexed(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get);

/* note.c: cfg->note, from the parsed limits and the variables' text. */
void vg_config_note(struct vg_config *cfg, vg_getenv_fn get);

#endif
