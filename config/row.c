/* One row's variable: reading it, the head of its error message, and the loaders of the two types a row describes
 * completely, so that their rows need no code of their own: an enum (its words are the row's values column) and an
 * integer (its bounds are the row's range column). Every other loader builds on these; they call none of them. */
#include "config/options.h"

#include <errno.h>
#include <string.h>

int vg_get_trimmed(const struct vg_option *opt, vg_getenv_fn get, const char **v, const char **t, size_t *n)
{
	*v = get(opt->name);
	if (!*v)
		return 0;
	*t = *v;
	*n = strlen(*v);
	vg_trim(t, n);
	return *n != 0;
}

void vg_err_head(struct vg_buf *b, struct vg_config *cfg, const char *name, const char *v)
{
	vg_buf_init(b, cfg->error, sizeof(cfg->error));
	vg_buf_str(b, "vramguard: error: invalid ");
	vg_buf_str(b, name);
	vg_buf_char(b, ' ');
	vg_buf_quote(b, v, strlen(v));
	vg_buf_str(b, ": ");
}

int vg_enum_index(const char *values, const char *v, size_t vn)
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

int vg_load_enum(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get, int *dst)
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

int vg_load_integer(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const struct vg_option_range *r = &opt->range;
	const char *v, *t;
	size_t n;
	unsigned long value;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_uint_in(t, n, r->min, r->max, &value)) {
		*(unsigned *)(void *)((char *)cfg + r->field) = (unsigned)value;       /* VG_RANGE: an int or unsigned */
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected ");
	if (r->unit) {
		vg_buf_str(&b, r->unit);
		vg_buf_str(&b, ", ");
	}
	vg_buf_str(&b, "an integer from ");
	vg_buf_u64(&b, r->min);
	vg_buf_str(&b, " to ");
	vg_buf_u64(&b, r->max);
	return -EINVAL;
}
